/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu-helper: opens host perf events for an unprivileged QEMU, after the
 * manner of qemu-pr-helper and qemu-vmsr-helper (docs/helper.md).
 *
 *   vpmu-helper [--socket PATH [--socket-group GROUP]] [--policy-dir DIR]
 *               [--rate N] [--burst N] [--max-clients N] [--verbose]
 *
 * Without --socket it takes the one socket systemd passes (LISTEN_FDS).
 * Run as root, it keeps only CAP_PERFMON, and CAP_SYS_ADMIN where
 * kernel.perf_event_paranoid is above 2 (Debian's "3" asks for it).
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <linux/capability.h>

#include <vpmu/host.h>

#include "helper-server.h"

#define SD_LISTEN_FDS_START 3   /* sd_listen_fds(3) */
#define MAX_CLIENTS_DEFAULT 64
#define POLICY_DIR_DEFAULT  "/etc/vpmu-helper"

static volatile sig_atomic_t quit;

static void on_signal(int sig)
{
    quit = sig;
}

/*
 * The server logs only refusals and protocol errors, at most 8 and one
 * more line per client: always, because they are what the operator of a
 * VM whose events do not count needs to see.
 */
static void log_stderr(void *opaque, const char *msg)
{
    (void)opaque;
    fprintf(stderr, "%s\n", msg);
}

static int paranoid_level(void)
{
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
    int level = 2;

    if (f) {
        if (fscanf(f, "%d", &level) != 1) {
            level = 2;
        }
        fclose(f);
    }
    return level;
}

/*
 * Keep CAP_PERFMON (events of other users' threads), and CAP_SYS_ADMIN
 * where Debian's paranoid level 3 checks for it instead; drop every other
 * capability from the bounding, effective, permitted and inheritable sets.
 */
static int drop_caps(bool verbose)
{
    struct __user_cap_header_struct hdr = {
        .version = _LINUX_CAPABILITY_VERSION_3,
    };
    struct __user_cap_data_struct data[2] = { { 0 } };
    uint64_t keep = 1ull << CAP_PERFMON;

    if (geteuid() != 0) {
        return 0;               /* nothing to drop; perf decides */
    }
    if (paranoid_level() > 2) {
        keep |= 1ull << CAP_SYS_ADMIN;
    }
    for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++) {
        if (!(keep & (1ull << cap)) &&
            prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
            return -errno;
        }
    }
    data[0].effective = data[0].permitted = (uint32_t)keep;
    data[1].effective = data[1].permitted = (uint32_t)(keep >> 32);
    if (syscall(SYS_capset, &hdr, data) < 0) {
        return -errno;
    }
    if (verbose) {
        fprintf(stderr, "vpmu-helper: capabilities: CAP_PERFMON%s\n",
                (keep >> CAP_SYS_ADMIN) & 1 ? ", CAP_SYS_ADMIN" : "");
    }
    return 0;
}

/*
 * Where KVM's mediated vPMU is on, perf refuses every event this helper
 * opens while a VM with it exists (docs/kvm.md, "Mediated hosts"): said
 * once at start, whatever --verbose says, and in each such refusal.
 */
static void log_host_mode(void)
{
    VpmuHostCheck h;

    vpmu_host_check(NULL, NULL, 0, &h);
    if (h.mode != VPMU_HOST_MODE_PERF) {
        fprintf(stderr, "vpmu-helper: %s\n", h.reason);
    }
}

/* The socket systemd passed, or -1 if it passed none. */
static int activated_socket(void)
{
    const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");

    if (!pid || !fds || strtol(pid, NULL, 10) != getpid() ||
        strcmp(fds, "1") != 0) {
        return -1;
    }
    return SD_LISTEN_FDS_START;
}

static int listen_on(const char *path, const char *group)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    mode_t mode = 0600;
    int fd;

    if (strlen(path) >= sizeof(sa.sun_path)) {
        fprintf(stderr, "vpmu-helper: socket path too long: %s\n", path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    unlink(path);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(fd, 16) < 0) {
        fprintf(stderr, "vpmu-helper: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (group) {
        struct group *g = getgrnam(group);

        if (!g || chown(path, (uid_t)-1, g->gr_gid) < 0) {
            fprintf(stderr, "vpmu-helper: group %s: %s\n", group,
                    g ? strerror(errno) : "no such group");
            return -1;
        }
        mode = 0660;
    }
    if (chmod(path, mode) < 0) {
        fprintf(stderr, "vpmu-helper: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return fd;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: vpmu-helper [--socket PATH [--socket-group GROUP]] "
            "[--policy-dir DIR]\n"
            "                   [--rate N] [--burst N] [--max-clients N] "
            "[--verbose]\n"
            "Without --socket, the socket comes from systemd (LISTEN_FDS)."
            "\n");
}

typedef struct Args {
    const char *socket, *group;
    unsigned max_clients;
    bool verbose;
    HelperServerOpts o;
} Args;

static unsigned number(const char *s, const char *what)
{
    char *end;
    unsigned long n = strtoul(s, &end, 10);

    if (!*s || *end || n < 1 || n > 1000000) {
        fprintf(stderr, "vpmu-helper: %s: '%s' is not 1-1000000\n", what, s);
        exit(2);
    }
    return n;
}

static void parse_args(int argc, char **argv, Args *a)
{
    static const struct option opts[] = {
        { "socket", required_argument, NULL, 's' },
        { "socket-group", required_argument, NULL, 'g' },
        { "policy-dir", required_argument, NULL, 'p' },
        { "rate", required_argument, NULL, 'r' },
        { "burst", required_argument, NULL, 'b' },
        { "max-clients", required_argument, NULL, 'm' },
        { "verbose", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    int c;

    while ((c = getopt_long(argc, argv, "s:g:p:r:b:m:vh", opts, NULL)) != -1) {
        switch (c) {
        case 's': a->socket = optarg; break;
        case 'g': a->group = optarg; break;
        case 'p': a->o.policy_dir = optarg; break;
        case 'r': a->o.rate = number(optarg, "--rate"); break;
        case 'b': a->o.burst = number(optarg, "--burst"); break;
        case 'm': a->max_clients = number(optarg, "--max-clients"); break;
        case 'v': a->verbose = true; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind != argc) {
        usage(stderr);
        exit(2);
    }
}

/* Accept one client, or refuse it when there are max_clients already. */
static void accept_client(int lfd, HelperConn *conns, unsigned *n,
                          const Args *a)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

    if (fd < 0) {
        return;
    }
    if (*n == a->max_clients) {
        if (a->verbose) {
            fprintf(stderr, "vpmu-helper: %u clients already: one more "
                    "refused\n", *n);
        }
        close(fd);
        return;
    }
    if (helper_conn_init(&conns[*n], fd, &a->o) < 0) {
        close(fd);
        return;
    }
    (*n)++;
}

static int serve(int lfd, const Args *a)
{
    HelperConn *conns = calloc(a->max_clients, sizeof(*conns));
    struct pollfd *pfd = calloc(a->max_clients + 1, sizeof(*pfd));
    unsigned n = 0;

    if (!conns || !pfd) {
        free(conns);
        free(pfd);
        return 1;
    }
    while (!quit) {
        pfd[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
        for (unsigned i = 0; i < n; i++) {
            pfd[i + 1] = (struct pollfd){ .fd = conns[i].fd,
                                          .events = POLLIN };
        }
        if (poll(pfd, n + 1, -1) < 0) {
            continue;           /* EINTR: a signal, maybe quit */
        }
        /* Backwards, so that a closed client can take the last's slot. */
        for (unsigned i = n; i-- > 0; ) {
            if (pfd[i + 1].revents &&
                helper_conn_serve(&conns[i], &a->o) < 0) {
                helper_conn_close(&conns[i]);
                conns[i] = conns[--n];
            }
        }
        if (pfd[0].revents & POLLIN) {
            accept_client(lfd, conns, &n, a);
        }
    }
    while (n > 0) {
        helper_conn_close(&conns[--n]);
    }
    free(conns);
    free(pfd);
    return 0;
}

int main(int argc, char **argv)
{
    Args a = {
        .max_clients = MAX_CLIENTS_DEFAULT,
        .o = { .policy_dir = POLICY_DIR_DEFAULT, .proc = "/proc",
               .rate = HELPER_RATE_DEFAULT, .burst = HELPER_BURST_DEFAULT,
               .log = log_stderr },
    };
    struct sigaction sa = { .sa_handler = on_signal };
    int lfd, r;

    parse_args(argc, argv, &a);
    lfd = a.socket ? listen_on(a.socket, a.group) : activated_socket();
    if (lfd < 0) {
        if (!a.socket) {
            fprintf(stderr, "vpmu-helper: no --socket and no socket from "
                    "systemd (LISTEN_FDS)\n");
        }
        return 1;
    }
    r = drop_caps(a.verbose);
    if (r < 0) {
        fprintf(stderr, "vpmu-helper: dropping capabilities: %s\n",
                strerror(-r));
        return 1;
    }
    log_host_mode();
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (a.verbose) {
        fprintf(stderr, "vpmu-helper: serving %s, policies in %s\n",
                a.socket ? a.socket : "the systemd socket", a.o.policy_dir);
    }
    r = serve(lfd, &a);
    close(lfd);
    if (a.socket) {
        unlink(a.socket);
    }
    return r;
}
