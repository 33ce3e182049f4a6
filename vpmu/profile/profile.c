/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The profile collector: per-vCPU sample buffers, filled on the vCPU
 * threads with no lock (each vCPU has its own), read by the writers once
 * sampling is over.  Memory is bounded by max_samples per vCPU: past it
 * a sample is counted as lost, as perf counts PERF_RECORD_LOST.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile-priv.h"

#define DEFAULT_MAX_SAMPLES (1u << 20)
#define MAX_FILE            (1ull << 30)

int vpmu_profile_new(const VpmuProfileOpts *opts, VpmuProfile **out)
{
    VpmuProfile *p;

    *out = NULL;
    if (!opts->nr_vcpus || !opts->event || !opts->event[0] ||
        (opts->mode != VPMU_PROFILE_IP && opts->mode != VPMU_PROFILE_STACK)) {
        return -EINVAL;
    }
    p = calloc(1, sizeof(*p));
    if (!p) {
        return -ENOMEM;
    }
    p->vm = strdup(opts->vm ? opts->vm : "");
    p->event = strdup(opts->event);
    p->unit = strdup(opts->unit ? opts->unit : "count");
    p->vcpus = calloc(opts->nr_vcpus, sizeof(*p->vcpus));
    if (!p->vm || !p->event || !p->unit || !p->vcpus) {
        vpmu_profile_free(p);
        return -ENOMEM;
    }
    p->mode = opts->mode;
    p->nr_vcpus = opts->nr_vcpus;
    p->max_samples = opts->max_samples ? opts->max_samples
                                       : DEFAULT_MAX_SAMPLES;
    *out = p;
    return 0;
}

void vpmu_profile_free(VpmuProfile *p)
{
    if (!p) {
        return;
    }
    for (unsigned i = 0; p->vcpus && i < p->nr_vcpus; i++) {
        free(p->vcpus[i].samples);
        free(p->vcpus[i].pcs);
    }
    for (unsigned i = 0; i < p->nr_syms; i++) {
        vpmu_symbols_free(p->syms[i].syms);
    }
    free(p->vcpus);
    free(p->vm);
    free(p->event);
    free(p->unit);
    free(p);
}

int vpmu_profile_add_symbols(VpmuProfile *p, VpmuSymbols *syms, bool kernel,
                             int64_t slide)
{
    if (!syms || p->nr_syms == PROF_MAX_SYMS) {
        vpmu_symbols_free(syms);
        return -EINVAL;
    }
    p->syms[p->nr_syms++] = (ProfSyms){ syms, slide, kernel };
    return 0;
}

const char *vpmu_profile_symbol(const VpmuProfile *p, uint64_t pc)
{
    bool kernel = pc >= 0xffff800000000000ull;

    for (unsigned i = 0; i < p->nr_syms; i++) {
        const char *name;

        if (p->syms[i].kernel != kernel) {
            continue;
        }
        name = vpmu_symbols_lookup(p->syms[i].syms,
                                   pc - (uint64_t)p->syms[i].slide);
        if (name) {
            return name;
        }
    }
    return NULL;
}

void vpmu_profile_mappings(const VpmuProfile *p, ProfMappingFn fn, void *ctx)
{
    bool kernel = false;

    for (unsigned i = 0; i < p->nr_syms; i++) {
        const VpmuSymbolsSegment *segs;
        const char *path;
        unsigned n;

        kernel |= p->syms[i].kernel;
        path = vpmu_symbols_segments(p->syms[i].syms, &segs, &n);
        for (unsigned j = 0; path && !p->syms[i].kernel && j < n; j++) {
            fn(ctx, segs[j].vaddr + p->syms[i].slide, segs[j].memsz,
               segs[j].offset, path, false);
        }
    }
    if (kernel) {
        fn(ctx, 0xffffffff80000000ull, 0x7fffffffull, 0,
           "[guest.kernel.kallsyms]", true);
    }
}

/* Room for one more sample of @nr addresses; false if there is none. */
static bool reserve(ProfVcpu *v, unsigned nr, unsigned max)
{
    if (v->n >= max) {
        return false;
    }
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 256;
        ProfSample *s = realloc(v->samples, cap * sizeof(*s));

        if (!s) {
            return false;
        }
        v->samples = s;
        v->cap = cap;
    }
    if (v->npcs + nr > v->pcs_cap) {
        size_t cap = v->pcs_cap ? 2 * v->pcs_cap : 1024;
        uint64_t *pcs;

        while (cap < v->npcs + nr) {
            cap *= 2;
        }
        pcs = realloc(v->pcs, cap * sizeof(*pcs));
        if (!pcs) {
            return false;
        }
        v->pcs = pcs;
        v->pcs_cap = cap;
    }
    return true;
}

int vpmu_profile_sample(VpmuProfile *p, unsigned vcpu,
                        const VpmuProfileRegs *regs, uint64_t time_ns,
                        uint64_t period, VpmuGuestRead read, void *opaque)
{
    uint64_t pcs[VPMU_PROFILE_MAX_DEPTH];
    bool stack = p->mode == VPMU_PROFILE_STACK && read;
    VpmuProfileRegs entry;
    unsigned nr, nk;
    ProfVcpu *v;

    if (vcpu >= p->nr_vcpus) {
        return -EINVAL;
    }
    v = &p->vcpus[vcpu];
    nr = vpmu_profile_unwind(regs, stack ? read : NULL, opaque, pcs,
                             VPMU_PROFILE_MAX_DEPTH);
    nk = regs->user ? 0 : nr;
    /* A kernel sample goes on into the user code its task came from. */
    if (stack && !regs->user && nr < VPMU_PROFILE_MAX_DEPTH &&
        vpmu_profile_entry_regs(regs, read, opaque, &entry) == 0) {
        nr += vpmu_profile_unwind(&entry, read, opaque, &pcs[nr],
                                  VPMU_PROFILE_MAX_DEPTH - nr);
    }
    if (!reserve(v, nr, p->max_samples)) {
        v->lost++;
        return -ENOSPC;
    }
    memcpy(&v->pcs[v->npcs], pcs, nr * sizeof(*pcs));
    v->samples[v->n++] = (ProfSample){
        .time_ns = time_ns, .period = period, .first = (uint32_t)v->npcs,
        .nr = (uint8_t)nr, .nk = (uint8_t)nk,
    };
    v->npcs += nr;
    return 0;
}

void vpmu_profile_stats(const VpmuProfile *p, VpmuProfileStats *st)
{
    memset(st, 0, sizeof(*st));
    for (unsigned i = 0; i < p->nr_vcpus; i++) {
        st->samples += p->vcpus[i].n;
        st->lost += p->vcpus[i].lost;
        st->frames += p->vcpus[i].npcs;
    }
}

int vpmu_profile_read_file(const char *path, uint8_t **buf, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    size_t done = 0;
    int rc = 0;

    *buf = NULL;
    if (fd < 0) {
        return -errno;
    }
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        goto out;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_FILE) {
        rc = S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
        goto out;
    }
    *buf = malloc(st.st_size ? st.st_size : 1);
    if (!*buf) {
        rc = -ENOMEM;
        goto out;
    }
    while (done < (size_t)st.st_size) {
        ssize_t r = read(fd, *buf + done, st.st_size - done);

        if (r <= 0) {
            rc = r < 0 ? -errno : -EIO;
            goto out;
        }
        done += r;
    }
    *size = done;
out:
    close(fd);
    if (rc) {
        free(*buf);
        *buf = NULL;
    }
    return rc;
}

int vpmu_profile_close(FILE *f, const char *path, int rc)
{
    if (ferror(f) && !rc) {
        rc = -EIO;
    }
    if (fclose(f) && !rc) {
        rc = -errno;
    }
    if (rc) {
        unlink(path);
    }
    return rc;
}
