/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * KVM's mediated vPMU and vpmu (include/vpmu/host.h, docs/kvm.md
 * "Mediated hosts"): vpmu_host_check(), which reads the module
 * parameters and interprets a refusal of perf_event_open, and what the
 * perf source does with it: one line when it is created, one more if
 * perf starts refusing its events later, and the verdict for
 * vpmu_perf_source_host() (QEMU's query-vpmu).
 *
 * Why a perf_event_open can be refused: with the mediated vPMU, KVM
 * hands the PMU to the guest on every VM entry, so perf cannot keep
 * events of the host that count guests.  perf accounts them
 * (mediated_pmu_account_event(), kernel/events/core.c): while
 * nr_mediated_pmu_vms > 0, every new event of a PMU with
 * PERF_PMU_CAP_MEDIATED_VPMU and exclude_guest = 0 gets -EOPNOTSUPP;
 * while any exists, perf_create_mediated_pmu() gives KVM -EBUSY.
 */
#include "perf-priv.h"

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The first release with KVM's mediated vPMU. */
#define HOST_MEDIATED_SINCE_MAJOR   7
/* A bool parameter reads "Y\n" or "N\n": more is garbage. */
#define HOST_VALUE_MAX              32
/* Characters of a garbled value the reason shows. */
#define HOST_SHOWN_MAX              16
/* A version part above this is garbage, not a release. */
#define HOST_VERSION_PART_MAX       1000
#define HOST_WHY_MAX                160

#define HOST_PARAM          "enable_mediated_pmu"
#define HOST_PARAM_PATH     "%s/sys/module/%s/parameters/" HOST_PARAM
#define HOST_OSRELEASE      "/proc/sys/kernel/osrelease"

/*
 * Where the parameter can be (Linux 7.0 puts it in the vendor modules;
 * kvm's is read too): vendors first, so that the reason names the module
 * an operator reloads.
 */
static const char *const host_modules[] = { "kvm_amd", "kvm_intel", "kvm" };

typedef enum HostParam {
    HOST_PARAM_ABSENT,          /* this module has none (or is not loaded) */
    HOST_PARAM_OFF,
    HOST_PARAM_ON,
    HOST_PARAM_BAD,             /* unreadable or neither Y nor N */
} HostParam;

/* What the parameters said, all of them. */
typedef struct HostScan {
    unsigned on, off, bad;
    const char *on_module, *off_module;
    char bad_why[HOST_WHY_MAX];         /* the first bad one */
} HostScan;

/*
 * One line into @buf.  A reason may be cut short (a long sysroot), which
 * is fine: the compiler's truncation warning is for snprintf() alone.
 */
__attribute__((format(printf, 3, 4)))
static void say(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* At most @len - 1 bytes of @path: the length, -errno, -EFBIG if more. */
static int read_small(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0) {
        return -errno;
    }
    do {
        n = read(fd, buf, len);
    } while (n < 0 && errno == EINTR);
    n = n < 0 ? -errno : n;
    close(fd);
    if (n >= (ssize_t)len) {
        buf[len - 1] = '\0';
        return -EFBIG;
    }
    if (n >= 0) {
        buf[n] = '\0';
    }
    return (int)n;
}

/* A garbled value, printable and short, for the reason. */
static void shown(const char *v, char *out, size_t len)
{
    size_t i;

    for (i = 0; v[i] && i < HOST_SHOWN_MAX && i + 1 < len; i++) {
        out[i] = isprint((unsigned char)v[i]) ? v[i] : '?';
    }
    out[i] = '\0';
}

/* param_get_bool() writes "Y" or "N"; a recorded tree may say 1 or 0. */
static HostParam parse_bool(char *v)
{
    size_t n = strlen(v);

    while (n && isspace((unsigned char)v[n - 1])) {
        v[--n] = '\0';
    }
    if (!strcmp(v, "Y") || !strcmp(v, "y") || !strcmp(v, "1")) {
        return HOST_PARAM_ON;
    }
    if (!strcmp(v, "N") || !strcmp(v, "n") || !strcmp(v, "0")) {
        return HOST_PARAM_OFF;
    }
    return HOST_PARAM_BAD;
}

static HostParam read_param(const char *root, const char *module,
                            char *why, size_t len)
{
    char path[PATH_MAX], v[HOST_VALUE_MAX], show[HOST_SHOWN_MAX + 1];
    HostParam p;
    int r;

    snprintf(path, sizeof(path), HOST_PARAM_PATH, root, module);
    r = read_small(path, v, sizeof(v));
    if (r == -ENOENT || r == -ENOTDIR) {
        return HOST_PARAM_ABSENT;
    }
    if (r < 0 && r != -EFBIG) {
        say(why, len, "%s is unreadable (%s)", path, strerror(-r));
        return HOST_PARAM_BAD;
    }
    p = r == -EFBIG ? HOST_PARAM_BAD : parse_bool(v);
    if (p == HOST_PARAM_BAD) {
        shown(v, show, sizeof(show));
        say(why, len, "%s says '%s'%s, neither Y nor N", path, show,
                 r == -EFBIG || strlen(v) > HOST_SHOWN_MAX ? "..." : "");
    }
    return p;
}

static void scan_params(const char *root, HostScan *s)
{
    char why[HOST_WHY_MAX];

    memset(s, 0, sizeof(*s));
    for (size_t i = 0; i < sizeof(host_modules) / sizeof(*host_modules);
         i++) {
        switch (read_param(root, host_modules[i], why, sizeof(why))) {
        case HOST_PARAM_ON:
            s->on_module = s->on++ ? s->on_module : host_modules[i];
            break;
        case HOST_PARAM_OFF:
            s->off_module = s->off++ ? s->off_module : host_modules[i];
            break;
        case HOST_PARAM_BAD:
            if (!s->bad++) {
                say(s->bad_why, sizeof(s->bad_why), "%s", why);
            }
            break;
        case HOST_PARAM_ABSENT:
            break;
        }
    }
}

/* "7.0.0-rc1-amd64" -> 7, 0; anything else leaves 0.0 (unknown). */
static void read_release(const char *root, VpmuHostCheck *out)
{
    char path[PATH_MAX], v[HOST_VALUE_MAX * 2], *dot;
    unsigned long major, minor;

    snprintf(path, sizeof(path), "%s" HOST_OSRELEASE, root);
    if (read_small(path, v, sizeof(v)) <= 0 || !isdigit((unsigned char)v[0])) {
        return;
    }
    major = strtoul(v, &dot, 10);
    if (*dot != '.' || !isdigit((unsigned char)dot[1])) {
        return;
    }
    minor = strtoul(dot + 1, NULL, 10);
    if (major > HOST_VERSION_PART_MAX || minor > HOST_VERSION_PART_MAX) {
        return;
    }
    out->kernel_major = major;
    out->kernel_minor = minor;
}

/* The refusal perf gives while a mediated VM exists (header comment). */
static bool refusal(const struct perf_event_attr *attr, int err)
{
    return err == -EOPNOTSUPP && attr && !attr->exclude_guest &&
           (attr->type == PERF_TYPE_HARDWARE || attr->type == PERF_TYPE_RAW ||
            attr->type == PERF_TYPE_HW_CACHE);
}

/* From what was read; the rules are vpmu_host_check()'s in host.h. */
static void decide(VpmuHostCheck *out, const HostScan *s, const char *root)
{
    bool since = out->kernel_major >= HOST_MEDIATED_SINCE_MAJOR;
    char none[PATH_MAX + HOST_WHY_MAX], *r = out->reason;
    size_t len = sizeof(out->reason);

    say(none, sizeof(none), "no " HOST_PARAM " parameter under "
        "%s/sys/module (kvm, kvm_amd, kvm_intel)", root);
    if (s->on) {
        out->mode = VPMU_HOST_MODE_MEDIATED;
        say(out->module, sizeof(out->module), "%s", s->on_module);
        say(r, len, "KVM's mediated vPMU is on (%s." HOST_PARAM "=Y)%s: "
            "perf refuses host events that count guests while a VM with it "
            "exists", s->on_module,
            out->refused ? " and perf refused one (EOPNOTSUPP)" : "");
    } else if (out->refused && !s->off && since) {
        out->mode = VPMU_HOST_MODE_MEDIATED;
        say(r, len, "KVM's mediated vPMU is on, it seems: perf refused a "
            "host event that counts guests (EOPNOTSUPP) on Linux %u.%u, and "
            "%s", out->kernel_major, out->kernel_minor,
            s->bad ? s->bad_why : none);
    } else if (s->bad) {
        out->mode = VPMU_HOST_MODE_UNKNOWN;
        say(r, len, "cannot tell whether KVM's mediated vPMU is on: %s",
            s->bad_why);
    } else if (out->refused && !s->off && !out->kernel_major) {
        out->mode = VPMU_HOST_MODE_UNKNOWN;
        say(r, len, "cannot tell whether KVM's mediated vPMU is on: perf "
            "refused a host event that counts guests (EOPNOTSUPP), no "
            HOST_PARAM " parameter under %s/sys/module, and %s"
            HOST_OSRELEASE " names no release", root, root);
    } else if (s->off) {
        out->mode = VPMU_HOST_MODE_PERF;
        say(r, len, "KVM's mediated vPMU is off (%s." HOST_PARAM "=N)",
            s->off_module);
    } else {
        out->mode = VPMU_HOST_MODE_PERF;
        say(r, len, "%s: KVM is not loaded, or its kernel has no mediated "
            "vPMU", none);
    }
}

int vpmu_host_check(const char *sysroot, const struct perf_event_attr *attr,
                    int err, VpmuHostCheck *out)
{
    char root[PATH_MAX];
    size_t n;
    HostScan s;

    if (!out) {
        return -EINVAL;
    }
    memset(out, 0, sizeof(*out));
    /* "/" and "/x/" as "" and "/x": paths are root + "/sys/...". */
    snprintf(root, sizeof(root), "%s", sysroot ? sysroot : "");
    n = strlen(root);
    while (n && root[n - 1] == '/') {
        root[--n] = '\0';
    }
    scan_params(root, &s);
    read_release(root, out);
    out->refused = refusal(attr, err);
    decide(out, &s, root);
    return 0;
}

const char *vpmu_host_mode_name(VpmuHostMode mode)
{
    switch (mode) {
    case VPMU_HOST_MODE_PERF:
        return "perf";
    case VPMU_HOST_MODE_MEDIATED:
        return "mediated";
    default:
        return "unknown";
    }
}

/* --- the perf source ----------------------------------------------------- */

void vpmu_perf_source_host(const VpmuPerfSource *src, VpmuHostCheck *out)
{
    *out = src->host;
}

/* How an operator chooses, for the log lines (docs/kvm.md). */
static const char *choice(const VpmuHostCheck *h, char *buf, size_t len)
{
    snprintf(buf, len, "choose per host: -accel kvm without vpmu=on gives "
             "guests the mediated vPMU; for vpmu, load %s with "
             HOST_PARAM "=0 (docs/kvm.md, \"Mediated hosts\")",
             h->module[0] ? h->module : "kvm_amd or kvm_intel");
    return buf;
}

/*
 * At creation, after the hardware probe (@cycles_err: its cycles event's
 * result).  A mediated host whose probe succeeded (no mediated VM yet:
 * this VM's KVM PMU is off) is said now; one whose probe was refused is
 * said by vpmu_perf_host_log_refused(), with what the guest gets instead.
 */
void vpmu_perf_host_probe(VpmuPerfSource *src, int cycles_err)
{
    VpmuSourceAttr a = {
        .event = VPMU_EVENT_CYCLES, .count_user = true, .count_kernel = true,
        .count_host = true, .count_guest = true, .sample_period = 1ull << 32,
    };
    struct perf_event_attr pa;
    char buf[VPMU_HOST_REASON_MAX];
    int r = vpmu_perf_build_attr(src, &a, &pa);

    vpmu_host_check(src->opts.sysroot, r == 0 ? &pa : NULL, cycles_err,
                    &src->host);
    if (src->host.mode == VPMU_HOST_MODE_MEDIATED && cycles_err == 0) {
        vpmu_logf(&src->log, "vpmu-perf: %s; vpmu's events open for now, "
                  "but a VM with it cannot start while they exist (EBUSY) "
                  "and perf refuses new ones once one runs; %s",
                  src->host.reason, choice(&src->host, buf, sizeof(buf)));
    } else if (src->host.mode == VPMU_HOST_MODE_UNKNOWN) {
        vpmu_logf(&src->log, "vpmu-perf: %s", src->host.reason);
    }
}

bool vpmu_perf_host_log_refused(VpmuPerfSource *src, bool clock)
{
    char buf[VPMU_HOST_REASON_MAX];

    if (src->host.mode != VPMU_HOST_MODE_MEDIATED) {
        return false;
    }
    vpmu_logf(&src->log, "vpmu-perf: %s; %s; %s", src->host.reason,
              clock ? "guest cycles and ref-cycles count the vCPU thread's "
                      "CPU time (task-clock), every other event is "
                      "unavailable"
                    : "every guest event is unavailable",
              choice(&src->host, buf, sizeof(buf)));
    return true;
}

/*
 * A mediated VM started after this source: perf refuses its new events.
 * A guest reprograms its counters at will, so the files are read once per
 * source, not on every refusal.
 */
void vpmu_perf_host_open_failed(VpmuPerfSource *src,
                                const struct perf_event_attr *pa, int err)
{
    char buf[VPMU_HOST_REASON_MAX];
    VpmuHostCheck h;

    if (err != -EOPNOTSUPP || src->host_rechecked ||
        src->host.mode == VPMU_HOST_MODE_MEDIATED) {
        return;
    }
    src->host_rechecked = true;
    vpmu_host_check(src->opts.sysroot, pa, err, &h);
    if (h.mode != VPMU_HOST_MODE_MEDIATED) {
        return;
    }
    src->host = h;
    vpmu_logf(&src->log, "vpmu-perf: %s; the guest counters perf refuses "
              "count nothing; %s", h.reason, choice(&h, buf, sizeof(buf)));
}
