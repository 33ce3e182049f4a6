/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu event filter: which guest events may reach the counting source.
 *
 * Semantics are KVM's KVM_SET_PMU_EVENT_FILTER (Documentation/virt/kvm/
 * api.rst), so operators can carry their policies over:
 *
 *  - action ALLOW or DENY, a list of entries, a fixed-counter bitmap;
 *  - plain entries match event select + unit mask exactly, in the guest's
 *    EVTSEL layout: bits [7:0] event, [15:8] umask, [35:32] AMD event
 *    select [11:8];
 *  - masked entries (KVM_PMU_EVENT_FLAG_MASKED_EVENTS) are encoded as
 *    KVM_PMU_ENCODE_MASKED_ENTRY: event select bits [7:0] and [35:32],
 *    umask match [15:8], exclude bit 55, umask mask [63:56]; an entry hits
 *    an event with the same event select when (umask & mask) == match;
 *  - a GP event is allowed when (it hits an include entry and no exclude
 *    entry) == (action == ALLOW);
 *  - fixed counter i: with ALLOW it is allowed only if bitmap bit i is set;
 *    with DENY it is denied if bit i is set.
 *
 * A filter is plain or masked, chosen at creation, like KVM's flags.
 * A denied counter gets no source and counts nothing; the guest sees no
 * fault.  The PMU counts how often the guest asked for a denied event.
 */
#ifndef VPMU_FILTER_H
#define VPMU_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vpmu/export.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct VpmuFilter VpmuFilter;

typedef enum VpmuFilterAction {
    VPMU_FILTER_ALLOW = 0,      /* KVM_PMU_EVENT_ALLOW */
    VPMU_FILTER_DENY = 1,       /* KVM_PMU_EVENT_DENY */
} VpmuFilterAction;

/* KVM_PMU_EVENT_FLAG_MASKED_EVENTS */
#define VPMU_FILTER_MASKED (1u << 0)

/* KVM_PMU_EVENT_FILTER_MAX_EVENTS: more entries give -E2BIG. */
#define VPMU_FILTER_MAX_EVENTS 300

/* Plain entry: EVTSEL[7:0] event select, [15:8] unit mask, [35:32] AMD. */
#define VPMU_FILTER_EVENT_MASK     0x0000000f0000ffffull
/* Masked entry fields (KVM_PMU_MASKED_ENTRY_*). */
#define VPMU_MASKED_EVENT_SELECT   0x0000000f000000ffull
#define VPMU_MASKED_UMASK_MATCH    0x000000000000ff00ull
#define VPMU_MASKED_EXCLUDE        (1ull << 55)
#define VPMU_MASKED_UMASK_MASK     0xff00000000000000ull

/* KVM_PMU_ENCODE_MASKED_ENTRY(event_select, mask, match, exclude) */
#define VPMU_ENCODE_MASKED_ENTRY(event_select, mask, match, exclude)      \
    (((uint64_t)(event_select) & 0xffull) |                             \
     (((uint64_t)(event_select) & 0xf00ull) << 24) |                    \
     (((uint64_t)(mask) & 0xffull) << 56) |                             \
     (((uint64_t)(match) & 0xffull) << 8) |                             \
     ((uint64_t)!!(exclude) << 55))

/**
 * vpmu_filter_new() - create an empty filter.
 * @action: VPMU_FILTER_ALLOW or VPMU_FILTER_DENY.
 * @flags: 0 for plain entries, or VPMU_FILTER_MASKED.
 * @out: receives the filter.
 *
 * An empty ALLOW filter denies everything, an empty DENY filter allows
 * everything (fixed counters follow the bitmap, initially 0).
 *
 * Return: 0; -EINVAL for an unknown action or flag; -ENOMEM.
 */
VPMU_API int vpmu_filter_new(VpmuFilterAction action, unsigned flags,
                             VpmuFilter **out);

/** vpmu_filter_free() - free; NULL is a no-op. */
VPMU_API void vpmu_filter_free(VpmuFilter *f);

/**
 * vpmu_filter_add() - add one entry.
 * @entry: plain (VPMU_FILTER_EVENT_MASK layout) or masked
 *         (VPMU_ENCODE_MASKED_ENTRY) encoding, as the filter's flags say.
 *
 * Return: 0; -EINVAL if @entry has bits outside its layout (the filter is
 * unchanged); -E2BIG past VPMU_FILTER_MAX_EVENTS entries.
 */
VPMU_API int vpmu_filter_add(VpmuFilter *f, uint64_t entry);

/** vpmu_filter_set_fixed_bitmap() - bit i governs fixed counter i. */
VPMU_API void vpmu_filter_set_fixed_bitmap(VpmuFilter *f, uint32_t bitmap);

/**
 * vpmu_filter_allows_event() - may a GP counter count @eventsel?
 * @eventsel: the guest's EVTSEL value; only the event select and unit mask
 *            fields are looked at.
 */
VPMU_API bool vpmu_filter_allows_event(const VpmuFilter *f, uint64_t eventsel);

/** vpmu_filter_allows_fixed() - may fixed counter @idx count? */
VPMU_API bool vpmu_filter_allows_fixed(const VpmuFilter *f, unsigned idx);

/**
 * vpmu_filter_parse() - build a filter from an operator's text.
 * @text: "allow" or "deny", then optional items separated by commas or
 *        spaces: "0xC0" or "0xC0:0x01" (event[:umask]) for plain entries;
 *        "masked" once (before any entry) to switch to masked entries,
 *        then "EVENT:MASK:MATCH" or "EVENT:MASK:MATCH:exclude";
 *        "fixed=0x3" for the fixed-counter bitmap.
 *        A plain "0xC0" means umask 0x00 exactly; "masked 0xC0:0:0"
 *        matches every umask of event 0xC0.
 *        Example: "deny 0x2e:0x4f,0x2e:0x41 fixed=0x0".
 * @out: receives the filter.
 * @err, @errlen: a message naming the bad item, on failure.
 *
 * Return: 0; -EINVAL with @err filled; -E2BIG; -ENOMEM.
 */
VPMU_API int vpmu_filter_parse(const char *text, VpmuFilter **out,
                               char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* VPMU_FILTER_H */
