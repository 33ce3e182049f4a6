/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The vpmu-helper wire protocol, version 1 (docs/helper.md), shared by the
 * client (client.c, in libvpmu) and the helper (server.c).  Not installed.
 *
 * A Unix SOCK_SEQPACKET socket: one message per request and per reply,
 * so a short or long one is seen whole (MSG_TRUNC) and refused.  Native
 * byte order and layout: both ends run on one host.  Every message starts
 * with VpmuHelperHdr; the reply to a request has its type and seq.
 *
 *   HELLO    client -> helper: nothing more.  Reply: VpmuHelperHello (the
 *            VM the helper took the peer for and its policy).
 *   OPEN     client -> helper: VpmuHelperOpen (a thread of the peer and a
 *            perf_event_attr the perf source builds; flags say whether it
 *            is the guest's counter or the host operator's event).  Reply:
 *            status, and on success the event's fd in SCM_RIGHTS.
 *   RELEASE  client -> helper: VpmuHelperOpen with the attr zeroed and the
 *            flags of the open: the client closed one event it opened for
 *            that thread.
 *
 * A refusal is a reply with status -errno and a one-line message; the
 * connection stays open.  A message the helper cannot parse (bad magic,
 * version, type or size) is refused the same way.
 */
#ifndef VPMU_HELPER_PROTO_H
#define VPMU_HELPER_PROTO_H

#include <stdint.h>

#include <linux/perf_event.h>

#define VPMU_HELPER_MAGIC       0x484d5056u     /* "VPMH" little-endian */
#define VPMU_HELPER_VERSION     1
#define VPMU_HELPER_MSG_MAX     512             /* longest message, bytes */

typedef enum VpmuHelperType {
    VPMU_HELPER_HELLO = 1,
    VPMU_HELPER_OPEN = 2,
    VPMU_HELPER_RELEASE = 3,
} VpmuHelperType;

typedef struct VpmuHelperHdr {
    uint32_t magic;
    uint16_t version;
    uint16_t type;              /* VpmuHelperType */
    uint32_t size;              /* of the whole message */
    uint32_t seq;               /* the client's; a reply echoes it */
} VpmuHelperHdr;

typedef struct VpmuHelperOpen {
    VpmuHelperHdr hdr;
    int32_t tid;                /* a thread of the peer process */
    uint32_t flags;             /* VPMU_HELPER_OPEN_* */
    struct perf_event_attr attr;
} VpmuHelperOpen;

/*
 * The host operator's event (include/vpmu/operator.h), not a guest
 * counter: allowed only by a policy with "operator = yes", a named event
 * with exclude_host, at most VPMU_OPERATOR_MAX_EVENTS per thread beside
 * the guest's, and not subject to the guest's event filter.
 */
#define VPMU_HELPER_OPEN_OPERATOR   (1u << 0)
/*
 * A host profile's sampling event (include/vpmu/profile.h): allowed only
 * by a policy whose operator-profile is ip or stack, a named event with
 * exclude_host, never pinned, at most one per thread.  Never with
 * VPMU_HELPER_OPEN_OPERATOR.
 */
#define VPMU_HELPER_OPEN_PROFILE    (1u << 1)
#define VPMU_HELPER_OPEN_FLAGS      (VPMU_HELPER_OPEN_OPERATOR | \
                                     VPMU_HELPER_OPEN_PROFILE)

/* Every reply: the status and, when it is a refusal, why. */
typedef struct VpmuHelperReply {
    VpmuHelperHdr hdr;
    int32_t status;             /* 0 or -errno */
    uint32_t reserved;
    char message[160];          /* NUL-terminated, "" on success */
} VpmuHelperReply;

/* The reply to HELLO: a VpmuHelperReply, then the peer's VM and policy. */
typedef struct VpmuHelperHello {
    VpmuHelperReply r;
    char vm[64];                /* the VM's name ("" if none was found) */
    char events[192];           /* allowed events, vpmu filter syntax */
    uint32_t counters;          /* GP counters the guest may have */
    uint32_t flags;             /* VPMU_HELPER_POLICY_* */
} VpmuHelperHello;

#define VPMU_HELPER_POLICY_PINNED   (1u << 0)   /* pinned host events */
#define VPMU_HELPER_POLICY_RAW      (1u << 1)   /* guest raw events */
#define VPMU_HELPER_POLICY_CGROUP   (1u << 2)   /* VM known by its cgroup */
#define VPMU_HELPER_POLICY_OPERATOR (1u << 3)   /* operator events allowed */
/* Host profiles: 0 deny, 1 ip, 2 stack (VpmuProfileMode), in bits 4-5. */
#define VPMU_HELPER_POLICY_PROFILE_SHIFT 4
#define VPMU_HELPER_POLICY_PROFILE_MASK  (3u << VPMU_HELPER_POLICY_PROFILE_SHIFT)

_Static_assert(sizeof(VpmuHelperOpen) <= VPMU_HELPER_MSG_MAX &&
               sizeof(VpmuHelperHello) <= VPMU_HELPER_MSG_MAX,
               "every message fits the receive buffer");

#endif /* VPMU_HELPER_PROTO_H */
