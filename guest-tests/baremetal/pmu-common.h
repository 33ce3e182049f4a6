/*
 * Vendor-neutral pieces of the PMU checks: MSR probes that explain a
 * mismatch in TAP diagnostics, exact-count and PMI expectations.  The
 * measured block itself (measure_block, BLOCK_INSNS) is in measure.h.
 */
#ifndef BAREMETAL_PMU_COMMON_H
#define BAREMETAL_PMU_COMMON_H

#include "measure.h"

/* Preset for overflow tests: the counter wraps after PRESET_N events. */
#define PRESET_N        100u

/*
 * Instructions a PMI handler may add to a counter that overflowed with
 * INT set (it counts at CPL 0 too): stub + trap_common + trap() is well
 * under 100 instructions; the bound only has to tell "kept counting from
 * 0" apart from "stopped" or "did not wrap".
 */
#define PMI_SLACK       500u

/* "no fault", "#GP", "#UD" or "vector N" */
const char *vec_name(int vec);

/*
 * Probes: return true if the CPU behaved as wanted, and print a "# "
 * diagnostic line if not.  want_vec is 0 (no fault) or VEC_GP.
 */
bool probe_rd(uint32_t msr, int want_vec);
bool probe_rd_val(uint32_t msr, uint64_t want);
bool probe_wr(uint32_t msr, uint64_t val, int want_vec);
/* Existence: an MSR that exists reads without fault and accepts a write
 * of its current value; one that does not exist faults on both. */
bool probe_exists(uint32_t msr, bool exists);
bool probe_rdpmc(uint32_t ecx, int want_vec, uint64_t want);

/* One TAP line for an exact count, with the fault (if any) in the diag. */
bool expect_count(uint64_t got, uint64_t want, int vec, const char *what);

/* LVTPC programming: fixed vector VEC_PMI or NMI, unmasked. */
void lvtpc_fixed(void);
void lvtpc_nmi(void);
bool lvtpc_masked(void);

/* PMIs seen since pmi_reset(), after pmi_settle(): check NMI and fixed. */
bool expect_pmis(uint32_t want_nmis, uint32_t want_fixed, const char *what);

#endif
