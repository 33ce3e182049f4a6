/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu-helper's insides (docs/helper.md): per-VM policies (policy.c) and
 * one client connection (server.c).  The daemon (vpmu-helper.c) and the
 * tests use them; not part of libvpmu.
 */
#ifndef VPMU_HELPER_SERVER_H
#define VPMU_HELPER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <vpmu/profile.h>

#include <vpmu/filter.h>
#include <vpmu/pmu.h>

#include "helper-proto.h"

/* One VM's policy: a file "KEY = VALUE" per line (docs/helper.md). */
typedef struct HelperPolicy {
    char events[192];           /* "events": vpmu filter text; "" = all */
    VpmuFilter *filter;         /* events parsed; NULL = every event */
    unsigned counters;          /* "counters": GP counters, 1-8 */
    bool pinned;                /* "pinned": yes / no */
    bool raw;                   /* "raw": guest raw events, yes / no */
    bool operator_metrics;      /* "operator": the host operator's events
                                   (tenant consent), yes / no */
    VpmuProfileMode operator_profile;   /* "operator-profile": what host
                                           profiles may take, deny / ip /
                                           stack (tenant consent) */
} HelperPolicy;

#define HELPER_POLICY_COUNTERS_DEFAULT 4

/*
 * Parse a policy; *@out is written only on success.
 * Return: 0; -EINVAL with "line N: ..." in @err; -ENOMEM.
 */
int helper_policy_parse(const char *text, HelperPolicy *out, char *err,
                        size_t errlen);
/* Load DIR/VM.conf, else DIR/default.conf: 0, -ENOENT (neither), or as
 * helper_policy_parse() with the file named in @err. */
int helper_policy_load(const char *dir, const char *vm, HelperPolicy *out,
                       char *err, size_t errlen);
void helper_policy_clear(HelperPolicy *p);
/*
 * At most @len - 1 bytes of a file into @buf, NUL-terminated.
 * Return: the length; -errno; -EFBIG if there is more (@buf holds the
 * start, terminated, all the same).
 */
int helper_read_file(const char *path, char *buf, size_t len);

/*
 * A VM's name from its QEMU process: the libvirt machine cgroup
 * ("machine/qemu-ID-NAME.libvirt-qemu", or systemd's
 * "machine-qemu\x2dID\x2dNAME.scope") if it is in one, else the -name
 * option of its command line.  @cgroup: whether it came from the cgroup.
 * @proc: the proc root ("/proc"; tests give another).
 * Return: 0; -ENOENT if neither names it; -errno reading /proc.
 */
int helper_vm_identity(const char *proc, pid_t pid, char *vm, size_t len,
                       bool *cgroup);

typedef struct HelperServerOpts {
    const char *policy_dir;
    const char *proc;           /* "/proc" */
    /* Where KVM's module parameters are read when perf refuses an event
       (vpmu_host_check()); NULL = "/", tests give a recorded tree. */
    const char *sysroot;
    unsigned rate;              /* OPENs refilled per second, per client */
    unsigned burst;             /* OPENs a client may make at once */
    /* perf_event_open(2) for the helper; NULL = the system call. */
    int (*open)(void *ctx, struct perf_event_attr *attr, pid_t tid);
    void *ctx;
    void (*log)(void *opaque, const char *msg);
    void *opaque;
} HelperServerOpts;

#define HELPER_RATE_DEFAULT     64
#define HELPER_BURST_DEFAULT    128
#define HELPER_MAX_THREADS      64      /* vCPU threads tracked per client */
#define HELPER_LOG_REFUSALS     8       /* refusals logged per client */

/* Whose an event is: an OPEN's or RELEASE's flags say (helper-proto.h). */
typedef enum HelperKind {
    HELPER_KIND_GUEST,
    HELPER_KIND_OPERATOR,       /* VPMU_HELPER_OPEN_OPERATOR */
    HELPER_KIND_PROFILE,        /* VPMU_HELPER_OPEN_PROFILE */
    HELPER_KIND__COUNT,
} HelperKind;

typedef struct HelperThread {
    pid_t tid;
    unsigned held[HELPER_KIND__COUNT];  /* opened and not released */
} HelperThread;

typedef struct HelperStats {
    uint64_t requests, opens, refusals, releases;
    uint64_t operator_opens;    /* of opens, the operator's */
    uint64_t profile_opens;     /* of opens, a profile's */
} HelperStats;

/* One client connection. */
typedef struct HelperConn {
    int fd;
    pid_t pid;                  /* SO_PEERCRED */
    uid_t uid;
    char vm[64];
    bool cgroup;
    bool have_policy;
    HelperPolicy policy;
    char no_policy[160];        /* why not, when !have_policy */
    double tokens;              /* rate limit: OPENs left */
    uint64_t refill_ns;         /* when tokens were last refilled */
    HelperThread threads[HELPER_MAX_THREADS];
    unsigned nr_threads;
    HelperStats stats;
} HelperConn;

/* Take a connected socket: its peer, the peer's VM and policy. */
int helper_conn_init(HelperConn *c, int fd, const HelperServerOpts *o);
/*
 * Serve one message.  Return: 0 to go on; -ECONNRESET when the peer hung
 * up, or another -errno of the socket: close the connection.
 */
int helper_conn_serve(HelperConn *c, const HelperServerOpts *o);
/* Close the socket and free the policy. */
void helper_conn_close(HelperConn *c);

#endif /* VPMU_HELPER_SERVER_H */
