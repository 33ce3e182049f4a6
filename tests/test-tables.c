/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The vendor table validator (vpmu/core/validate.c), as libpfm4's
 * tests/validate: both vendors' tables are consistent, alone and with the
 * rules and CPUID leaves of every config their checks accept; and the
 * validator fails, with the message that names the fault, on each
 * deliberately broken copy of a table below.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pmu-priv.h"

#include "check-main.h"
#include "vectors.h"

static const VpmuVendor vendors[] = { VPMU_VENDOR_INTEL, VPMU_VENDOR_AMD };

START_TEST(test_tables_valid)
{
    const VpmuArchOps *a = vpmu_arch_for(vendors[_i]);
    char err[256] = "untouched";

    ck_assert_ptr_nonnull(a);
    ck_assert_msg(vpmu_arch_validate(a, err, sizeof(err)) == 0, "%s", err);
    ck_assert_str_eq(err, "");
}
END_TEST

/* The widths tried: 31 and 49 are outside 32-48 (VPMU_MIN/MAX_WIDTH). */
static const unsigned gp_widths[] = { 31, 32, 40, 48, 49 };
static const unsigned fixed_widths[] = { 0, 32, 40, 48 };

/* PDCM / PERF_CAPABILITIES pairs; FW_WRITE without PDCM is refused. */
static const struct { bool pdcm; uint64_t caps; } cap_pairs[] = {
    { false, 0 }, { true, 0 }, { true, VPMU_PERF_CAP_FW_WRITE },
    { false, VPMU_PERF_CAP_FW_WRITE },
};

/* Validate @cfg if the library accepts it; true if it did. */
static bool validate_if_accepted(const VpmuArchOps *a, const VpmuConfig *cfg)
{
    char err[256];

    if (vpmu_config_check(cfg, NULL, 0) < 0) {
        /* A refused config is refused by the validator too. */
        ck_assert_int_eq(vpmu_arch_validate_config(a, cfg, err, sizeof(err)),
                         -EINVAL);
        return false;
    }
    ck_assert_msg(vpmu_arch_validate_config(a, cfg, err, sizeof(err)) == 0,
                  "version/level %u/%d, %u GP (%u bits), %u fixed (%u "
                  "bits), pdcm %d caps %#llx, hg %d: %s",
                  cfg->intel_version, (int)cfg->amd_level, cfg->nr_gp,
                  cfg->gp_width, cfg->nr_fixed, cfg->fixed_width, cfg->pdcm,
                  (unsigned long long)cfg->perf_capabilities,
                  cfg->amd_host_guest, err);
    return true;
}

/* Every config of a grid wider than what the checks accept. */
static unsigned validate_grid(VpmuVendor vendor)
{
    const VpmuArchOps *a = vpmu_arch_for(vendor);
    unsigned accepted = 0;
    VpmuConfig cfg;

    vpmu_config_init(&cfg, vendor);
    for (unsigned lvl = 0; lvl <= 6; lvl++)
    for (unsigned gp = 0; gp <= VPMU_MAX_GP + 1; gp++)
    for (unsigned fx = 0; fx <= VPMU_MAX_FIXED + 1; fx++)
    for (size_t gw = 0; gw < ARRAY_SIZE(gp_widths); gw++)
    for (size_t fw = 0; fw < ARRAY_SIZE(fixed_widths); fw++)
    for (size_t cp = 0; cp < ARRAY_SIZE(cap_pairs); cp++)
    for (unsigned hg = 0; hg <= 1; hg++) {
        cfg.intel_version = vendor == VPMU_VENDOR_INTEL ? lvl : 0;
        cfg.amd_level = vendor == VPMU_VENDOR_AMD ? (VpmuAmdLevel)lvl : 0;
        cfg.nr_gp = gp;
        cfg.nr_fixed = fx;
        cfg.gp_width = gp_widths[gw];
        cfg.fixed_width = fixed_widths[fw];
        cfg.pdcm = cap_pairs[cp].pdcm;
        cfg.perf_capabilities = cap_pairs[cp].caps;
        cfg.amd_host_guest = hg;
        accepted += validate_if_accepted(a, &cfg);
    }
    return accepted;
}

/*
 * Intel: versions 1-5, 0-8 GP counters of 32, 40 or 48 bits, three
 * PDCM/FW_WRITE pairs, no host/guest bits; fixed counters: none (width
 * 0), or 1-max of 32, 40 or 48 bits, max 0 for v1, 3 for v2-v4, 4 for v5.
 *   v1:    9 * 3 * 1 * 3            =   81
 *   v2-4:  9 * 3 * (1 + 3 * 3) * 3  =  810 each, 2430
 *   v5:    9 * 3 * (1 + 4 * 3) * 3  = 1053          -> 3564
 */
START_TEST(test_intel_configs)
{
    ck_assert_uint_eq(validate_grid(VPMU_VENDOR_INTEL), 3564);
}
END_TEST

/*
 * AMD: 48-bit counters, no fixed ones, no Intel fields; K7 has exactly 4
 * counters, PerfCtrExtCore 6, PerfMonV2 1-6; with or without the
 * host/guest bits: (1 + 1 + 6) * 2 = 16.
 */
START_TEST(test_amd_configs)
{
    ck_assert_uint_eq(validate_grid(VPMU_VENDOR_AMD), 16);
}
END_TEST

/* A deliberate fault in a copy of a vendor's tables. */
typedef enum Break {
    BRK_NONE,
    /* tables alone (vpmu_arch_validate) */
    BRK_OVERLAP, BRK_UNSORTED, BRK_EMPTY_RANGE, BRK_LONG_RANGE,
    BRK_ODD_PAIRS, BRK_DUP_EVENT, BRK_WIDE_EVENT, BRK_DUP_ALIAS,
    BRK_DEAD_ALIAS, BRK_EVENT_BITS, BRK_HG_BITS, BRK_RDPMC, BRK_CPUID_FIELD,
    BRK_NO_RULES_HOOK,
    /* with a config's rules and CPUID (vpmu_arch_validate_config) */
    BRK_NO_RULE, BRK_FEW_EVTSEL, BRK_SHORT_RANGE, BRK_SHORT_PAIRS,
    BRK_GLOBAL_EXTRA, BRK_WIDE_COUNTER, BRK_NO_ENABLE, BRK_WRITABLE_RO,
    BRK_NOT_RO, BRK_SEXT_FULL, BRK_FREEZE, BRK_CPUID_GP, BRK_CPUID_CORE,
    BRK_FIXED_EVENT,
} Break;

typedef struct BrokenCase {
    int line;
    VpmuVendor vendor;
    Break brk;
    unsigned version;       /* Intel version; 0: the default config's */
    const char *error;      /* a part of the message; NULL: valid */
} BrokenCase;

/*
 * Hand-made from the tables of intel.c and amd.c: the default configs
 * (Intel v2, 8 GP + 3 fixed, 48 bits, PDCM and FW_WRITE; AMD PerfMonV2,
 * 6 GP) with one fault each.  MSR kinds by number (VpmuMsrKind): 0
 * EVTSEL, 1 PMC, 2 A_PMC, 5 GLOBAL_STATUS, 6 GLOBAL_CTRL, 9 INUSE,
 * 11 DEBUGCTL.
 */
static const BrokenCase broken[] = {
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_NONE, 0, NULL },
    { SRC_LINE, VPMU_VENDOR_AMD, BRK_NONE, 0, NULL },
    /* PERFEVTSEL0-7 moved to 0xc5, inside IA32_PMC0-7 (0xc1+8) */
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_OVERLAP, 0,
      "intel: range 0xc5 overlaps 0xc1+8" },
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_UNSORTED, 0,
      "intel: range 0xc1 is not sorted" },
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_EMPTY_RANGE, 0,
      "intel: range 0x1d9 has 0 MSRs, not 1-64" },
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_LONG_RANGE, 0,
      "intel: range 0x4c1 has 65 MSRs" },
    /* 11 MSRs at 0xc0010200: a PERF_CTL without its PERF_CTR */
    { SRC_LINE, VPMU_VENDOR_AMD, BRK_ODD_PAIRS, 0, "odd CTL/CTR run" },
    /* BR_COND (8) given BRANCHES' (5) encoding, 0xc4/0x00 */
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_DUP_EVENT, 0,
      "intel: events 5 and 8: duplicate encoding 0xc4/0" },
    /* Intel's EventSelect is 8 bits: 0x1c6 does not fit */
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_WIDE_EVENT, 0,
      "intel: event 13 (0x1c6/0) is not encodable in event bits 0xff" },
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_DUP_ALIAS, 0,
      "intel: alias 0x3c/0: duplicate encoding of event 0" },
    /* an alias for REF_CYCLES, which AMD does not have */
    { SRC_LINE, VPMU_VENDOR_AMD, BRK_DEAD_ALIAS, 0,
      "amd: alias 0x3c/0 names no valid event" },
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_EVENT_BITS, 0,
      "intel: event bits 0x1ff are not 7:0" },
    /* GuestOnly at bit 22, which is EN */
    { SRC_LINE, VPMU_VENDOR_AMD, BRK_HG_BITS, 0,
      "amd: GuestOnly/HostOnly bits overlap" },
    /* the fixed-counter bit 30 also reserved */
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_RDPMC, 0,
      "intel: RDPMC reserved 0xffff0000 and fixed 0x40000000" },
    { SRC_LINE, VPMU_VENDOR_AMD, BRK_CPUID_FIELD, 0,
      "amd: CPUID field 2 of leaf 0x80000022 is out of its register" },
    { SRC_LINE, VPMU_VENDOR_AMD, BRK_NO_RULES_HOOK, 0,
      "amd: name, events, check, rules and cpuid are required" },
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_NO_RULE, 0,
      "intel: MSR kind 11 has a range but no rule" },
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_FEW_EVTSEL, 0,
      "intel: MSR kind 0: 7 MSRs, for 8 its ranges reach and 8 GP" },
    /* IA32_PMC0-3 only, for 8 GP counters */
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_SHORT_RANGE, 0,
      "intel: MSR kind 1: 8 MSRs, for 4 its ranges reach" },
    /* 4 PERF_CTL/CTR pairs for 6 counters: K7's 4 MSRs reach no more */
    { SRC_LINE, VPMU_VENDOR_AMD, BRK_SHORT_PAIRS, 0,
      "amd: MSR kind 0: 6 MSRs, for 4 its ranges reach" },
    /* GLOBAL_CTRL bit 8: a ninth GP counter's enable */
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_GLOBAL_EXTRA, 0,
      "intel: MSR kind 6: writable 0x7000001ff is outside 0x7000000ff" },
    /* A_PMCx keeping 49 bits of a 48-bit counter */
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_WIDE_COUNTER, 0,
      "intel: MSR kind 2: writable 0x1ffffffffffff is outside "
      "0xffffffffffff" },
    /* AMD PERF_CTL without EN (bit 22) */
    { SRC_LINE, VPMU_VENDOR_AMD, BRK_NO_ENABLE, 0,
      "amd: MSR kind 0: writable 0xfff97ffff is outside 0x30fffffffff or "
      "lacks 0xf0053ffff" },
    { SRC_LINE, VPMU_VENDOR_AMD, BRK_WRITABLE_RO, 0,
      "amd: MSR kind 5: writable 0x1 is outside 0 or lacks 0" },
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_NOT_RO, 4,
      "intel: MSR kind 9 is read-only, its rule says otherwise" },
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_SEXT_FULL, 0,
      "intel: MSR kind 2: only a legacy PMC takes EAX sign-extended" },
    /* DEBUGCTL without Freeze_PerfMon_On_PMI (bit 12), which v2 uses */
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_FREEZE, 0,
      "intel: a freeze bit is not writable in DEBUGCTL" },
    /* CPUID.0AH:EAX[15:8] one counter too many */
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_CPUID_GP, 0,
      "intel: CPUID 0xa reg 0 bits 8+8 say 9, the config 8" },
    /* PerfCtrExtCore cleared while the F15H MSRs exist */
    { SRC_LINE, VPMU_VENDOR_AMD, BRK_CPUID_CORE, 0,
      "amd: CPUID 0x80000001 reg 2 bits 23+1 say 0, the config 1" },
    { SRC_LINE, VPMU_VENDOR_INTEL, BRK_FIXED_EVENT, 0,
      "intel: fixed counter 2 counts no event of the table" },
};

static const BrokenCase *cur;
static VpmuMsrRange ranges[VPMU_MAX_RANGES];
static VpmuEventCode events[VPMU_EVENT__NAMED];
static VpmuEventAlias aliases[4];
static VpmuArchEvent fixed_events[VPMU_MAX_FIXED];
static VpmuCpuidField cpuid_fields[8];

static void broken_rules(const VpmuConfig *cfg, VpmuRules *out)
{
    vpmu_arch_for(cfg->vendor)->rules(cfg, out);
    switch (cur->brk) {
    case BRK_NO_RULE:
        out->msr[VPMU_MSR_DEBUGCTL].flags = 0;
        break;
    case BRK_FEW_EVTSEL:
        out->msr[VPMU_MSR_EVTSEL].nr--;
        break;
    case BRK_GLOBAL_EXTRA:
        out->msr[VPMU_MSR_GLOBAL_CTRL].writable |= 1ull << 8;
        break;
    case BRK_WIDE_COUNTER:
        out->msr[VPMU_MSR_A_PMC].writable = (1ull << 49) - 1;
        break;
    case BRK_NO_ENABLE:
        out->msr[VPMU_MSR_EVTSEL].writable &= ~(1ull << 22);
        break;
    case BRK_WRITABLE_RO:
        out->msr[VPMU_MSR_GLOBAL_STATUS].writable = 1;
        break;
    case BRK_NOT_RO:
        out->msr[VPMU_MSR_GLOBAL_INUSE].flags &= ~VPMU_MSR_READ_ONLY;
        break;
    case BRK_SEXT_FULL:
        out->msr[VPMU_MSR_A_PMC].flags |= VPMU_MSR_SEXT32;
        break;
    case BRK_FREEZE:
        out->msr[VPMU_MSR_DEBUGCTL].writable &= ~(1ull << 12);
        break;
    default:
        break;
    }
}

static int broken_cpuid(const VpmuConfig *cfg, uint32_t leaf,
                        uint32_t subleaf, uint32_t regs[4])
{
    int r = vpmu_arch_for(cfg->vendor)->cpuid(cfg, leaf, subleaf, regs);

    if (cur->brk == BRK_CPUID_GP && leaf == 0xa) {
        regs[0] += 1u << 8;
    }
    if (cur->brk == BRK_CPUID_CORE && leaf == 0x80000001) {
        regs[2] &= ~(1u << 23);
    }
    return r;
}

/* Break the tables of @ops, a copy of the vendor's. */
static void break_tables(VpmuArchOps *ops)
{
    switch (cur->brk) {
    case BRK_OVERLAP:       ranges[1].base = 0xc5; break;
    case BRK_UNSORTED:      ranges[0] = ranges[1];
                            ranges[1] = vpmu_intel_ops.ranges[0]; break;
    case BRK_EMPTY_RANGE:   ranges[2].count = 0; break;
    case BRK_LONG_RANGE:    ranges[11].count = VPMU_MAX_RANGE_MSRS + 1; break;
    case BRK_ODD_PAIRS:     ranges[6].count = 11; break;
    case BRK_DUP_EVENT:     events[VPMU_EVENT_BR_COND].umask = 0; break;
    case BRK_WIDE_EVENT:    events[VPMU_EVENT_BR_FAR].event = 0x1c6;
                            events[VPMU_EVENT_BR_FAR].umask = 0; break;
    case BRK_DUP_ALIAS:     aliases[0].umask = 0;
                            aliases[0].event = 0x3c; break;
    case BRK_DEAD_ALIAS:    aliases[0] = (VpmuEventAlias){
                                0x3c, 0, VPMU_EVENT_REF_CYCLES };
                            ops->aliases = aliases;
                            ops->nr_aliases = 1; break;
    case BRK_EVENT_BITS:    ops->event_bits = 0x1ff; break;
    case BRK_HG_BITS:       ops->guest_only = 1ull << 22; break;
    case BRK_RDPMC:         ops->rdpmc_reserved |= 1u << 30; break;
    case BRK_CPUID_FIELD:   cpuid_fields[2].shift = 30; break;
    case BRK_NO_RULES_HOOK: ops->rules = NULL; break;
    case BRK_SHORT_RANGE:   ranges[0].count = 4; break;
    case BRK_SHORT_PAIRS:   ranges[6].count = 8; break;
    case BRK_FIXED_EVENT:   fixed_events[2] = VPMU_EVENT_BR_NTAKEN + 100;
                            break;
    default:                break;
    }
}

/* A copy of the vendor's ops whose tables and hooks this file owns. */
static void copy_ops(VpmuVendor vendor, VpmuArchOps *ops)
{
    const VpmuArchOps *a = vpmu_arch_for(vendor);

    *ops = *a;
    memcpy(ranges, a->ranges, a->nr_ranges * sizeof(ranges[0]));
    memcpy(events, a->events, sizeof(events));
    if (a->aliases) {
        memcpy(aliases, a->aliases, a->nr_aliases * sizeof(aliases[0]));
    }
    memcpy(cpuid_fields, a->cpuid_fields,
           a->nr_cpuid_fields * sizeof(cpuid_fields[0]));
    ops->ranges = ranges;
    ops->events = events;
    ops->aliases = a->aliases ? aliases : NULL;
    ops->cpuid_fields = cpuid_fields;
    if (a->fixed_events) {
        memcpy(fixed_events, a->fixed_events, sizeof(fixed_events));
        ops->fixed_events = fixed_events;
    }
    ops->rules = broken_rules;
    ops->cpuid = broken_cpuid;
}

START_TEST(test_broken)
{
    char err[256] = "";
    VpmuArchOps ops;
    VpmuConfig cfg;
    int r;

    cur = &broken[_i];
    ck_assert_uint_ge(ARRAY_SIZE(ranges), vpmu_intel_ops.nr_ranges);
    ck_assert_uint_ge(ARRAY_SIZE(cpuid_fields),
                      vpmu_intel_ops.nr_cpuid_fields);
    copy_ops(cur->vendor, &ops);
    break_tables(&ops);
    vpmu_config_init(&cfg, cur->vendor);
    if (cur->version) {
        cfg.intel_version = cur->version;
    }
    r = vpmu_arch_validate(&ops, err, sizeof(err));
    if (r == 0) {
        r = vpmu_arch_validate_config(&ops, &cfg, err, sizeof(err));
    }
    if (!cur->error) {
        ck_assert_msg(r == 0, "line %d: %s", cur->line, err);
        return;
    }
    ck_assert_msg(r == -EINVAL && strstr(err, cur->error),
                  "line %d: %d \"%s\", expected \"%s\"", cur->line, r, err,
                  cur->error);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tables");
    TCase *tc = tcase_create("validate");

    tcase_add_loop_test(tc, test_tables_valid, 0, (int)ARRAY_SIZE(vendors));
    tcase_add_test(tc, test_intel_configs);
    tcase_add_test(tc, test_amd_configs);
    tcase_add_loop_test(tc, test_broken, 0, (int)ARRAY_SIZE(broken));
    suite_add_tcase(s, tc);
    return run_suite(s);
}
