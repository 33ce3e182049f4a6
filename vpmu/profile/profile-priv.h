/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu/profile's insides, shared by the collector (profile.c) and the two
 * writers (pprof.c, perfdata.c).
 */
#ifndef VPMU_PROFILE_PRIV_H
#define VPMU_PROFILE_PRIV_H

#include <stdint.h>
#include <stdio.h>

#include <vpmu/profile.h>

/*
 * One sample; its call chain is pcs[first, first + nr) of its vCPU: a
 * kernel sample's nk kernel frames (nk >= 1: its ip) and then the user
 * frames of where its task entered the kernel, or a user sample's user
 * frames (nk = 0).
 */
typedef struct ProfSample {
    uint64_t time_ns;
    uint64_t period;
    uint32_t first;
    uint8_t nr;
    uint8_t nk;
} ProfSample;

typedef struct ProfVcpu {
    ProfSample *samples;
    size_t n, cap;
    uint64_t *pcs;
    size_t npcs, pcs_cap;
    uint64_t lost;
} ProfVcpu;

typedef struct ProfSyms {
    VpmuSymbols *syms;
    int64_t slide;
    bool kernel;
} ProfSyms;

#define PROF_MAX_SYMS 16

struct VpmuProfile {
    char *vm, *event, *unit;
    VpmuProfileMode mode;
    unsigned nr_vcpus;
    unsigned max_samples;
    ProfVcpu *vcpus;
    ProfSyms syms[PROF_MAX_SYMS];
    unsigned nr_syms;
};

/*
 * What the symbol tables name, for the writers' maps: each ELF's
 * executable segments where it is loaded, in the order given (the first
 * is pprof's main binary), then, with a kernel map, the kernel's top
 * 2 GiB (__START_KERNEL_map) as "[guest.kernel.kallsyms]".
 */
typedef void (*ProfMappingFn)(void *ctx, uint64_t start, uint64_t size,
                              uint64_t offset, const char *path, bool kernel);
void vpmu_profile_mappings(const VpmuProfile *prof, ProfMappingFn fn,
                           void *ctx);

/* The name of the function at guest address @pc, or NULL. */
const char *vpmu_profile_symbol(const VpmuProfile *prof, uint64_t pc);

/* Whole file into a malloc'd buffer (at most 1 GiB); 0 or -errno. */
int vpmu_profile_read_file(const char *path, uint8_t **buf, size_t *size);

/* fclose() that reports a failed write; unlinks @path on error. */
int vpmu_profile_close(FILE *f, const char *path, int rc);

#endif /* VPMU_PROFILE_PRIV_H */
