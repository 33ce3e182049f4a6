/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu_kvm_msr_filter(): the KVM_X86_SET_MSR_FILTER ranges that make
 * exactly one PMU config's MSRs exit to userspace.
 *
 * KVM UAPI (Documentation/virt/kvm/api.rst, KVM_X86_SET_MSR_FILTER):
 *   - at most KVM_MSR_FILTER_MAX_RANGES (16) ranges, each with its own
 *     bitmap of at most KVM_MSR_FILTER_MAX_BITMAP_SIZE (0x600) bytes;
 *   - bit i of a range covers MSR base + i: 1 = allow (KVM handles it),
 *     0 = deny, which exits to userspace with KVM_MSR_EXIT_REASON_FILTER;
 *   - KVM copies BITS_TO_LONGS(nmsrs) * 8 bytes, so every bitmap is
 *     padded to a multiple of 8 bytes here.
 *
 * An allowed bit inside a range behaves exactly like an MSR outside every
 * range, so runs of PMU MSRs are merged into one range whenever the gap
 * fits the bitmap limit and the caller's storage.  Intel's whole PMU
 * (0xC1-0x4C8) is one range; AMD's global MSRs (0xC0000300) and its
 * K7/F15H MSRs (0xC0010000) are 64K MSRs apart, so two.
 */
#include <errno.h>
#include <string.h>

#include <linux/kvm.h>

#include <vpmu/kvm.h>

#include "vpmu-log.h"

/* One bit per MSR, bitmaps padded to u64 words (KVM copies whole longs). */
#define FILTER_WORD_BYTES   8u
#define FILTER_MAX_MSRS     (KVM_MSR_FILTER_MAX_BITMAP_SIZE * 8u)

_Static_assert(VPMU_KVM_FILTER_BITMAP_BYTES == KVM_MSR_FILTER_MAX_BITMAP_SIZE,
               "vpmu's bitmap storage constant must match the KVM UAPI");

/* Enough for any config: Intel has 12 MSR kinds, AMD 7. */
#define MAX_SPANS 32

static size_t bitmap_bytes(uint32_t nmsrs)
{
    return (nmsrs + 8u * FILTER_WORD_BYTES - 1) / (8u * FILTER_WORD_BYTES) *
           FILTER_WORD_BYTES;
}

/* Clear (deny = exit) the bits of @span inside @range's bitmap. */
static void deny_span(struct kvm_msr_filter_range *range,
                      const VpmuMsrSpan *span)
{
    for (uint32_t i = 0; i < span->count; i++) {
        uint32_t bit = span->base + i - range->base;

        range->bitmap[bit / 8] &= (uint8_t)~(1u << (bit % 8));
    }
}

/*
 * Greedy merge of sorted spans: extend the current range while the
 * merged range still fits KVM's bitmap limit and the storage left.
 * Greedy is optimal here: with sorted spans and a per-range size limit,
 * extending a range never forces an extra one later.
 */
static int build_ranges(const VpmuMsrSpan *spans, size_t nspans,
                        uint32_t flags, struct kvm_msr_filter *filter,
                        uint8_t *bitmaps, size_t len, size_t *usedp)
{
    size_t used = *usedp;
    unsigned nr = 0, first;

    /* Ranges already made (the read ranges, before the write ones). */
    while (nr < KVM_MSR_FILTER_MAX_RANGES && filter->ranges[nr].nmsrs) {
        nr++;
    }
    first = nr;
    for (size_t s = 0; s < nspans; s++) {
        struct kvm_msr_filter_range *cur =
            nr > first ? &filter->ranges[nr - 1] : NULL;
        uint64_t end = (uint64_t)spans[s].base + spans[s].count;

        if (cur) {
            uint64_t merged = end - cur->base;
            size_t grow = bitmap_bytes((uint32_t)merged) -
                          bitmap_bytes(cur->nmsrs);

            if (merged <= FILTER_MAX_MSRS && used + grow <= len) {
                memset(bitmaps + used, 0xff, grow);
                used += grow;
                cur->nmsrs = (uint32_t)merged;
                deny_span(cur, &spans[s]);
                continue;
            }
        }
        if (nr == KVM_MSR_FILTER_MAX_RANGES || spans[s].count > FILTER_MAX_MSRS ||
            used + bitmap_bytes(spans[s].count) > len) {
            return -ENOSPC;
        }
        cur = &filter->ranges[nr++];
        cur->flags = flags;
        cur->base = spans[s].base;
        cur->nmsrs = spans[s].count;
        cur->bitmap = bitmaps + used;
        memset(cur->bitmap, 0xff, bitmap_bytes(cur->nmsrs));
        used += bitmap_bytes(cur->nmsrs);
        deny_span(cur, &spans[s]);
    }
    *usedp = used;
    return (int)nr;
}

/* The ranges that trap the MSRs of @roles for the accesses in @flags. */
static int add_ranges(const VpmuConfig *cfg, unsigned roles, uint32_t flags,
                      struct kvm_msr_filter *filter, uint8_t *bitmaps,
                      size_t len, size_t *used)
{
    VpmuMsrSpan spans[MAX_SPANS];
    int nspans = vpmu_config_msr_spans_of(cfg, roles, spans, MAX_SPANS);

    if (nspans < 0) {
        return nspans;
    }
    if (nspans > MAX_SPANS) {
        return -ENOSPC;
    }
    return build_ranges(spans, (size_t)nspans, flags, filter, bitmaps, len,
                        used);
}

/*
 * KVM takes, for each access, the first range that covers the MSR and has
 * that access's flag (kvm_msr_allowed()), so the read and the write
 * ranges may cover the same MSRs with different bitmaps.
 */
int vpmu_kvm_msr_filter_roles(const VpmuConfig *cfg, unsigned rd,
                              unsigned wr, struct kvm_msr_filter *filter,
                              void *bitmaps, size_t len)
{
    size_t used = 0;
    int ret;

    if (!cfg || !filter || (!bitmaps && len)) {
        return -EINVAL;
    }
    memset(filter, 0, sizeof(*filter));
    filter->flags = KVM_MSR_FILTER_DEFAULT_ALLOW;
    if (rd == wr) {
        ret = add_ranges(cfg, VPMU_MSR_ROLES_ALL & ~rd,
                         KVM_MSR_FILTER_READ | KVM_MSR_FILTER_WRITE, filter,
                         bitmaps, len, &used);
    } else {
        ret = add_ranges(cfg, VPMU_MSR_ROLES_ALL & ~rd, KVM_MSR_FILTER_READ,
                         filter, bitmaps, len, &used);
        if (ret >= 0) {
            ret = add_ranges(cfg, VPMU_MSR_ROLES_ALL & ~wr,
                             KVM_MSR_FILTER_WRITE, filter, bitmaps, len,
                             &used);
        }
    }
    if (ret < 0) {
        memset(filter, 0, sizeof(*filter));
    }
    return ret;
}

int vpmu_kvm_msr_filter(const VpmuConfig *cfg, struct kvm_msr_filter *filter,
                        void *bitmaps, size_t len)
{
    return vpmu_kvm_msr_filter_roles(cfg, 0, 0, filter, bitmaps, len);
}

#define ROLE(r) (1u << VPMU_MSR_ROLE_##r)

int vpmu_kvm_roles(const VpmuConfig *cfg, VpmuKvmSync sync,
                   const VpmuKvmCaps *caps, unsigned *rd, unsigned *wr,
                   char *err, size_t errlen)
{
    /* The guest's PMU has the global MSRs (Intel v2+, AMD PerfMonV2). */
    bool global = vpmu_config_msr_spans_of(cfg, ROLE(GLOBAL_CTRL), NULL,
                                           0) > 0;
    bool kvm = caps->pmu && caps->global_msrs;

    *rd = *wr = 0;
    switch (sync) {
    case VPMU_KVM_SYNC_STRICT:
        return 0;
    case VPMU_KVM_SYNC_AUTO:
        if (global && kvm) {
            *rd = ROLE(STATUS);
            *wr = ROLE(STATUS_CLEAR);
        }
        return 0;
    case VPMU_KVM_SYNC_LINUX:
        if (!global || !kvm) {
            return vpmu_errorf(err, errlen, -ENOTSUP, "sync=linux needs the global "
                            "control in the guest's PMU (Intel version 2+, "
                            "AMD PerfMonV2) and in KVM's vPMU (%s)",
                            !global ? "the guest's PMU has none" :
                            !caps->pmu ? "KVM has no vPMU" :
                            "KVM's vPMU has no global MSRs");
        }
        *rd = ROLE(STATUS);
        *wr = ROLE(STATUS_CLEAR) | ROLE(COUNTER) | ROLE(SELECTOR);
        return 0;
    }
    return vpmu_errorf(err, errlen, -EINVAL, "sync: %d is not a VpmuKvmSync",
                       (int)sync);
}
