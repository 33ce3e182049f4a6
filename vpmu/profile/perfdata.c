/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * perf.data output: the file format of tools/perf/util/header.c
 * (tools/perf/Documentation/perf.data-file-format.txt), the smallest that
 * perf report and perf script read: a header, one attribute, and the data
 * section's PERF_RECORD_COMM and PERF_RECORD_SAMPLE records.  Samples are
 * the guest's, marked as `perf kvm record` marks them:
 * PERF_RECORD_MISC_GUEST_KERNEL / _GUEST_USER.  Their call chains mark
 * the kernel's and the user's frames with PERF_CONTEXT_KERNEL / _USER:
 * Debian's perf 6.1 drops chains with the _GUEST_ markers ("invalid
 * callchain context") and resolves these in the guest machine as well.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>

#include "profile-priv.h"

#define PERF_MAGIC2   0x32454c4946524550ull  /* "PERFILE2" */
#define FEATURE_WORDS 4                      /* HEADER_FEAT_BITS, 256 */

struct file_section {
    uint64_t offset, size;
};

struct file_header {
    uint64_t magic, size, attr_size;
    struct file_section attrs, data, event_types;
    uint64_t adds_features[FEATURE_WORDS];
};

struct file_attr {
    struct perf_event_attr attr;
    struct file_section ids;
};

#define SAMPLE_TYPE (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
                     PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | \
                     PERF_SAMPLE_CALLCHAIN)

/*
 * perf's names for what the profile's event is (with :u or :k, the
 * exclude bit perf shows as its modifier); raw otherwise.
 */
static void set_event(struct perf_event_attr *a, const char *event)
{
    size_t len = strcspn(event, ":");

    static const struct {
        const char *name;
        uint32_t type;
        uint64_t config;
    } known[] = {
        { "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
        { "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
        { "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
        { "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
    };

    a->type = PERF_TYPE_RAW;
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (strlen(known[i].name) == len &&
            !strncmp(event, known[i].name, len)) {
            a->type = known[i].type;
            a->config = known[i].config;
        }
    }
    a->exclude_kernel = !strcmp(event + len, ":u");
    a->exclude_user = !strcmp(event + len, ":k");
}

/*
 * The guest's "process": perf finds a guest sample's machine by its pid,
 * and a record's machine by its cpumode and sample_id (sample_id_all):
 * TID, TIME, CPU, as in a sample.
 */
static size_t put_comm(FILE *f, uint32_t pid, const char *comm)
{
    char name[16] = { 0 };       /* TASK_COMM_LEN, NUL included */
    uint64_t ids = (uint64_t)pid << 32 | pid, id_all[3] = { ids, 0, 0 };
    struct perf_event_header h = {
        .type = PERF_RECORD_COMM, .misc = PERF_RECORD_MISC_GUEST_USER,
        .size = sizeof(h) + sizeof(ids) + sizeof(name) + sizeof(id_all),
    };

    memcpy(name, comm, strnlen(comm, sizeof(name) - 1));
    fwrite(&h, sizeof(h), 1, f);
    fwrite(&ids, sizeof(ids), 1, f);
    fwrite(name, sizeof(name), 1, f);
    fwrite(id_all, sizeof(id_all), 1, f);
    return h.size;
}

/*
 * A PERF_RECORD_MMAP in the guest's machine: its kernel (the name perf
 * gives the default guest's kernel map, which --guestkallsyms fills) or
 * one of the operator's ELF files (perf reads its symbols there).
 */
static size_t put_mmap(FILE *f, uint32_t pid, bool kernel, uint64_t start,
                       uint64_t len, uint64_t pgoff, const char *name)
{
    size_t nlen = (strlen(name) + 8) & ~(size_t)7;  /* NUL, 8-aligned */
    uint64_t ids = (uint64_t)pid << 32 | pid, id_all[3] = { ids, 0, 0 };
    uint64_t body[3] = { start, len, pgoff };
    char pad[8] = { 0 };
    struct perf_event_header h = {
        .type = PERF_RECORD_MMAP,
        .misc = kernel ? PERF_RECORD_MISC_GUEST_KERNEL
                       : PERF_RECORD_MISC_GUEST_USER,
        .size = (uint16_t)(sizeof(h) + sizeof(ids) + sizeof(body) + nlen +
                           sizeof(id_all)),
    };

    fwrite(&h, sizeof(h), 1, f);
    fwrite(&ids, sizeof(ids), 1, f);
    fwrite(body, sizeof(body), 1, f);
    fwrite(name, strlen(name), 1, f);
    fwrite(pad, nlen - strlen(name), 1, f);
    fwrite(id_all, sizeof(id_all), 1, f);
    return h.size;
}

typedef struct MmapCtx {
    FILE *f;
    uint32_t pid;
    size_t size;
} MmapCtx;

static void mmap_one(void *opaque, uint64_t start, uint64_t size,
                     uint64_t offset, const char *path, bool kernel)
{
    MmapCtx *m = opaque;

    m->size += put_mmap(m->f, m->pid, kernel, start, size, offset, path);
}

/* The maps perf needs to name what the profile's symbol tables name. */
static size_t put_mmaps(FILE *f, const VpmuProfile *p, uint32_t pid)
{
    MmapCtx m = { f, pid, 0 };

    vpmu_profile_mappings(p, mmap_one, &m);
    return m.size;
}

/* One sample: its record is built whole, then written. */
static size_t put_sample(FILE *f, uint32_t pid, unsigned cpu,
                         const ProfSample *s, const uint64_t *pcs)
{
    uint64_t rec[9 + VPMU_PROFILE_MAX_DEPTH];
    unsigned nk = s->nk;
    struct perf_event_header *h = (void *)rec;
    size_t n = 1;

    h->type = PERF_RECORD_SAMPLE;
    h->misc = nk ? PERF_RECORD_MISC_GUEST_KERNEL : PERF_RECORD_MISC_GUEST_USER;
    rec[n++] = pcs[0];                                  /* IP */
    rec[n++] = (uint64_t)pid << 32 | pid;               /* TID: tid, pid */
    rec[n++] = s->time_ns;                              /* TIME */
    rec[n++] = cpu;                                     /* CPU, reserved */
    rec[n++] = s->period;                               /* PERIOD */
    /* CALLCHAIN: the kernel's frames, then the user's, each marked. */
    rec[n++] = s->nr + !!nk + (s->nr > nk);
    if (nk) {
        rec[n++] = PERF_CONTEXT_KERNEL;
        memcpy(&rec[n], pcs, nk * sizeof(*pcs));
        n += nk;
    }
    if (s->nr > nk) {
        rec[n++] = PERF_CONTEXT_USER;
        memcpy(&rec[n], pcs + nk, (s->nr - nk) * sizeof(*pcs));
        n += s->nr - nk;
    }
    h->size = (uint16_t)(n * sizeof(*rec));
    fwrite(rec, sizeof(*rec), n, f);
    return n * sizeof(*rec);
}

int vpmu_profile_write_perf(const VpmuProfile *p, const char *path,
                            uint32_t pid)
{
    struct file_header fh = {
        .magic = PERF_MAGIC2, .size = sizeof(fh),
        .attr_size = sizeof(struct file_attr),
        .attrs = { sizeof(fh), sizeof(struct file_attr) },
        .data = { sizeof(fh) + sizeof(struct file_attr), 0 },
    };
    struct file_attr fa = { .attr = {
        .size = sizeof(struct perf_event_attr), .sample_type = SAMPLE_TYPE,
        .exclude_host = 1, .disabled = 1, .sample_id_all = 1,
    } };
    char comm[32];
    FILE *f = fopen(path, "wbe");

    if (!f) {
        return -errno;
    }
    set_event(&fa.attr, p->event);
    for (unsigned c = 0; c < p->nr_vcpus && !fa.attr.sample_period; c++) {
        fa.attr.sample_period = p->vcpus[c].n ? p->vcpus[c].samples[0].period
                                              : 0;
    }
    fseek(f, (long)fh.data.offset, SEEK_SET);
    snprintf(comm, sizeof(comm), "%s", p->vm[0] ? p->vm : "guest");
    fh.data.size = put_comm(f, pid, comm);
    fh.data.size += put_mmaps(f, p, pid);
    for (unsigned c = 0; c < p->nr_vcpus; c++) {
        const ProfVcpu *v = &p->vcpus[c];

        for (size_t i = 0; i < v->n; i++) {
            fh.data.size += put_sample(f, pid, c, &v->samples[i],
                                       &v->pcs[v->samples[i].first]);
        }
    }
    /* The header last: perf takes a file with data.size 0 as unfinished. */
    rewind(f);
    fwrite(&fh, sizeof(fh), 1, f);
    fwrite(&fa, sizeof(fa), 1, f);
    return vpmu_profile_close(f, path, 0);
}
