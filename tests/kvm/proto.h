/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The harness <-> payload protocol, shared by the 64-bit host and the
 * 32-bit guest (fixed-size fields; every u64 is 8-aligned in both ABIs).
 *
 *   out to PROTO_PORT_TEXT (byte): one character of guest text.
 *   out to PROTO_PORT_MBOX (dword): the guest address of a ProtoMbox; the
 *       host serves mbox->cmd and may write results back into it before
 *       the OUT instruction completes.
 */
#ifndef VPMU_TESTS_KVM_PROTO_H
#define VPMU_TESTS_KVM_PROTO_H

#include <stdint.h>

#define PROTO_PORT_TEXT 0xE9
#define PROTO_PORT_MBOX 0xEB

/* Guest physical layout. */
#define PROTO_GDT_GPA       0x500u      /* null, code 0x08, data 0x10 */
#define PROTO_LOAD_GPA      0x10000u    /* payload entry */
#define PROTO_STACK_GPA     0x80000u    /* initial ESP */
#define PROTO_MEM_SIZE      0x200000u   /* 2 MiB of RAM */
#define PROTO_SEL_CODE      0x08
#define PROTO_SEL_DATA      0x10

enum ProtoCmd {
    PROTO_CHECK = 1,    /* arg = pass; a = got, b = expected; name */
    PROTO_SKIP,         /* name, why */
    PROTO_QUERY,        /* -> a..d, see below */
    PROTO_FEED,         /* fake source: arg = VpmuArchEvent, a = count */
    PROTO_CLOCK,        /* arg = slot 0/1: host reads vCPU thread CPU time */
    PROTO_CHECK_CYCLES, /* a = cycles counted between CLOCK 0 and 1; name */
    PROTO_MARK,         /* bench: host takes a timestamp; arg = batch kind */
    PROTO_DONE,         /* the payload has finished */
};

/* PROTO_QUERY results. */
#define PROTO_F_KVM_PMU     (1u << 0)   /* KVM has a vPMU (RDPMC mirrored) */
#define PROTO_F_PERF        (1u << 1)   /* the source is the perf source */
#define PROTO_F_AMD         (1u << 2)   /* the guest PMU is AMD's */
/* a = MSR exits seen by the host; b = PROTO_F_*; c = PMIs: nmi in
 * bits 15:0, fixed in 31:16, masked in 47:32; d = cycles per ms. */
#define PROTO_PMI_NMI(c)    ((uint32_t)((c) & 0xFFFF))
#define PROTO_PMI_FIXED(c)  ((uint32_t)(((c) >> 16) & 0xFFFF))
#define PROTO_PMI_MASKED(c) ((uint32_t)(((c) >> 32) & 0xFFFF))

typedef struct ProtoMbox {
    uint32_t cmd;
    uint32_t arg;
    uint64_t a, b, c, d;
    char name[72];
    char why[72];
} ProtoMbox;

_Static_assert(sizeof(ProtoMbox) == 184, "same layout in guest and host");

#endif /* VPMU_TESTS_KVM_PROTO_H */
