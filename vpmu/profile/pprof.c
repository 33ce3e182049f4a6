/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pprof output: github.com/google/pprof proto/profile.proto, encoded by
 * hand (protobuf wire format: varints, length-delimited fields, packed
 * repeated scalars) and gzipped, as `go tool pprof`, Parca and Pyroscope
 * read it.  Tables are interned: one string, function and location each.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile-priv.h"

/* profile.proto field numbers. */
enum {
    PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3,
    PROFILE_LOCATION = 4,
    PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6, PROFILE_TIME_NANOS = 9,
    PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
    VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
    SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
    LABEL_KEY = 1, LABEL_STR = 2,
    MAPPING_ID = 1, MAPPING_MEMORY_START = 2, MAPPING_MEMORY_LIMIT = 3,
    MAPPING_FILE_OFFSET = 4, MAPPING_FILENAME = 5, MAPPING_HAS_FUNCTIONS = 7,
    LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3,
    LOCATION_LINE = 4,
    LINE_FUNCTION_ID = 1,
    FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3,
};
#define WIRE_VARINT 0
#define WIRE_BYTES  2

typedef struct Buf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} Buf;

static void put(Buf *b, const void *data, size_t len)
{
    if (b->oom || len == 0) {
        return;
    }
    if (b->n + len > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        uint8_t *p;

        while (cap < b->n + len) {
            cap *= 2;
        }
        p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, len);
    b->n += len;
}

static void put_varint(Buf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;

    do {
        tmp[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
        v >>= 7;
    } while (v);
    put(b, tmp, n);
}

static void put_uint(Buf *b, unsigned field, uint64_t v)
{
    if (v) {                    /* proto3: zero is the default, omitted */
        put_varint(b, (uint64_t)field << 3 | WIRE_VARINT);
        put_varint(b, v);
    }
}

static void put_bytes(Buf *b, unsigned field, const void *data, size_t len)
{
    put_varint(b, (uint64_t)field << 3 | WIRE_BYTES);
    put_varint(b, len);
    put(b, data, len);
}

/* @sub as field @field of @b, and @sub emptied for the next message. */
static void put_msg(Buf *b, unsigned field, Buf *sub)
{
    b->oom |= sub->oom;
    put_bytes(b, field, sub->p, sub->n);
    sub->n = 0;
    sub->oom = false;
}

/* --- Interning: an open-addressed hash of 64-bit keys to table ids ---- */

typedef struct Intern {
    uint64_t *keys;
    uint32_t *ids;              /* 0: empty slot; ids start at 1 */
    size_t cap, n;
} Intern;

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    return k ^ (k >> 33);
}

/* The id of @key, or 0 with *@slot where it goes. */
static uint32_t intern_find(const Intern *t, uint64_t key, size_t *slot)
{
    size_t i = mix(key) & (t->cap - 1);

    while (t->ids[i] && t->keys[i] != key) {
        i = (i + 1) & (t->cap - 1);
    }
    *slot = i;
    return t->ids[i];
}

static int intern_init(Intern *t, size_t want)
{
    t->cap = 64;
    while (t->cap < 2 * want) {
        t->cap *= 2;
    }
    t->keys = calloc(t->cap, sizeof(*t->keys));
    t->ids = calloc(t->cap, sizeof(*t->ids));
    return t->keys && t->ids ? 0 : -ENOMEM;
}

static void intern_free(Intern *t)
{
    free(t->keys);
    free(t->ids);
}

/* The most mappings: each ELF's executable segments, and the kernel. */
#define MAX_MAPPINGS (PROF_MAX_SYMS * VPMU_SYMBOLS_MAX_SEGMENTS + 1)

typedef struct Pprof {
    const VpmuProfile *prof;
    Buf out, msg, sub, fns;
    Intern locs, strs_h, fns_h;
    const char **strs;          /* the string table, by id - 1 */
    size_t nstrs;
    uint64_t map_start[MAX_MAPPINGS], map_limit[MAX_MAPPINGS];
    unsigned nmaps;             /* mapping i has id i + 1 */
} Pprof;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;     /* FNV-1a */

    while (*s) {
        h = (h ^ (uint8_t)*s++) * 0x100000001b3ull;
    }
    return h;
}

/* The string table index of @s (0 is ""), added at the first use. */
static uint64_t str_id(Pprof *pp, const char *s)
{
    uint64_t key = hash_str(s);
    size_t i = mix(key) & (pp->strs_h.cap - 1);

    if (!*s) {
        return 0;
    }
    while (pp->strs_h.ids[i]) {
        uint32_t id = pp->strs_h.ids[i];

        if (pp->strs_h.keys[i] == key && !strcmp(pp->strs[id - 1], s)) {
            return id;
        }
        i = (i + 1) & (pp->strs_h.cap - 1);
    }
    pp->strs[pp->nstrs] = s;
    pp->strs_h.keys[i] = key;
    pp->strs_h.ids[i] = (uint32_t)++pp->nstrs;
    return pp->nstrs;
}

/* The function id of @name: a Function message at the first use. */
static uint64_t function_id(Pprof *pp, const char *name)
{
    uint64_t sid = str_id(pp, name);
    size_t slot;
    uint32_t id = intern_find(&pp->fns_h, sid, &slot);

    if (!id) {
        id = (uint32_t)++pp->fns_h.n;
        pp->fns_h.keys[slot] = sid;
        pp->fns_h.ids[slot] = id;
        put_uint(&pp->sub, FUNCTION_ID, id);
        put_uint(&pp->sub, FUNCTION_NAME, sid);
        put_uint(&pp->sub, FUNCTION_SYSTEM_NAME, sid);
        put_msg(&pp->fns, PROFILE_FUNCTION, &pp->sub);
    }
    return id;
}

/*
 * The location id of @pc: a Location message at the first use, with its
 * function when a symbol covers it.  A caller's frame is a return
 * address, named by the call before it (@pc - 1), as perf and pprof do.
 */
static uint64_t location_id(Pprof *pp, uint64_t pc, bool caller)
{
    size_t slot;
    uint32_t id = intern_find(&pp->locs, pc, &slot);
    const char *name;
    Buf line = { 0 };

    if (id) {
        return id;
    }
    id = (uint32_t)++pp->locs.n;
    pp->locs.keys[slot] = pc;
    pp->locs.ids[slot] = id;
    name = vpmu_profile_symbol(pp->prof, caller ? pc - 1 : pc);
    /* Before the Location: function_id() builds its message in sub too. */
    if (name) {
        put_uint(&line, LINE_FUNCTION_ID, function_id(pp, name));
    }
    put_uint(&pp->sub, LOCATION_ID, id);
    for (unsigned i = 0; i < pp->nmaps; i++) {
        if (pc >= pp->map_start[i] && pc < pp->map_limit[i]) {
            put_uint(&pp->sub, LOCATION_MAPPING_ID, i + 1);
            break;
        }
    }
    put_uint(&pp->sub, LOCATION_ADDRESS, pc);
    if (name) {
        put_msg(&pp->sub, LOCATION_LINE, &line);
        free(line.p);
    }
    /* Locations go out ahead of the samples that use them: any order is
     * valid protobuf. */
    put_msg(&pp->out, PROFILE_LOCATION, &pp->sub);
    return id;
}

static void put_label(Pprof *pp, const char *key, const char *val)
{
    Buf l = { 0 };

    put_uint(&l, LABEL_KEY, str_id(pp, key));
    put_uint(&l, LABEL_STR, str_id(pp, val));
    put_msg(&pp->msg, SAMPLE_LABEL, &l);
    free(l.p);
}

static void put_sample(Pprof *pp, unsigned vcpu, const ProfSample *s,
                       const uint64_t *pcs, uint64_t count,
                       const char *vcpu_str)
{
    Buf ids = { 0 }, vals = { 0 };

    /* A return address, but for the sampled ip and a task's entry ip. */
    for (unsigned i = 0; i < s->nr; i++) {
        put_varint(&ids, location_id(pp, pcs[i],
                                     i > 0 && i != s->nk));
    }
    put_varint(&vals, count);
    put_varint(&vals, count * s->period);
    put_bytes(&pp->msg, SAMPLE_LOCATION_ID, ids.p, ids.n);
    put_bytes(&pp->msg, SAMPLE_VALUE, vals.p, vals.n);
    pp->msg.oom |= ids.oom || vals.oom;
    free(ids.p);
    free(vals.p);
    put_label(pp, "vm", pp->prof->vm);
    put_label(pp, "vcpu", vcpu_str);
    put_label(pp, "mode", s->nk ? "kernel" : "user");
    put_msg(&pp->out, PROFILE_SAMPLE, &pp->msg);
}

/* Same stack, mode and period: one sample of count 2 instead of two. */
static bool same(const ProfVcpu *v, const ProfSample *a, const ProfSample *b)
{
    return a->nr == b->nr && a->nk == b->nk && a->period == b->period &&
           !memcmp(&v->pcs[a->first], &v->pcs[b->first],
                   a->nr * sizeof(uint64_t));
}

static void put_samples(Pprof *pp, char (*vcpu_strs)[12])
{
    for (unsigned c = 0; c < pp->prof->nr_vcpus; c++) {
        const ProfVcpu *v = &pp->prof->vcpus[c];

        snprintf(vcpu_strs[c], sizeof(vcpu_strs[c]), "%u", c);
        for (size_t i = 0; i < v->n;) {
            size_t j = i + 1;

            while (j < v->n && same(v, &v->samples[i], &v->samples[j])) {
                j++;
            }
            put_sample(pp, c, &v->samples[i], &v->pcs[v->samples[i].first],
                       j - i, vcpu_strs[c]);
            i = j;
        }
    }
}

static void put_mapping(void *opaque, uint64_t start, uint64_t size,
                        uint64_t offset, const char *file, bool kernel)
{
    Pprof *pp = opaque;

    (void)kernel;               /* its file name says it */

    pp->map_start[pp->nmaps] = start;
    pp->map_limit[pp->nmaps] = start + size;
    put_uint(&pp->sub, MAPPING_ID, ++pp->nmaps);
    put_uint(&pp->sub, MAPPING_MEMORY_START, start);
    put_uint(&pp->sub, MAPPING_MEMORY_LIMIT, start + size);
    put_uint(&pp->sub, MAPPING_FILE_OFFSET, offset);
    put_uint(&pp->sub, MAPPING_FILENAME, str_id(pp, file));
    put_uint(&pp->sub, MAPPING_HAS_FUNCTIONS, 1);
    put_msg(&pp->out, PROFILE_MAPPING, &pp->sub);
}


static void put_value_type(Pprof *pp, unsigned field, const char *type,
                           const char *unit)
{
    put_uint(&pp->sub, VALUE_TYPE_TYPE, str_id(pp, type));
    put_uint(&pp->sub, VALUE_TYPE_UNIT, str_id(pp, unit));
    put_msg(&pp->out, field, &pp->sub);
}

static int encode(Pprof *pp, uint64_t start_ns, uint64_t duration_ns)
{
    const VpmuProfile *p = pp->prof;
    char (*vcpu_strs)[12] = calloc(p->nr_vcpus, sizeof(*vcpu_strs));
    uint64_t period = 0;

    if (!vcpu_strs) {
        return -ENOMEM;
    }
    for (unsigned c = 0; c < p->nr_vcpus && !period; c++) {
        period = p->vcpus[c].n ? p->vcpus[c].samples[0].period : 0;
    }
    put_value_type(pp, PROFILE_SAMPLE_TYPE, "samples", "count");
    put_value_type(pp, PROFILE_SAMPLE_TYPE, p->event, p->unit);
    /* As perf.data's MMAPs; the first ELF is pprof's main binary. */
    vpmu_profile_mappings(pp->prof, put_mapping, pp);
    put_samples(pp, vcpu_strs);
    put(&pp->out, pp->fns.p, pp->fns.n);
    pp->out.oom |= pp->fns.oom;
    for (size_t i = 0; i <= pp->nstrs; i++) {
        const char *s = i ? pp->strs[i - 1] : "";

        put_bytes(&pp->out, PROFILE_STRING_TABLE, s, strlen(s));
    }
    put_uint(&pp->out, PROFILE_TIME_NANOS, start_ns);
    put_uint(&pp->out, PROFILE_DURATION_NANOS, duration_ns);
    put_value_type(pp, PROFILE_PERIOD_TYPE, p->event, p->unit);
    put_uint(&pp->out, PROFILE_PERIOD, period);
    free(vcpu_strs);
    return pp->out.oom ? -ENOMEM : 0;
}

int vpmu_profile_write_pprof(const VpmuProfile *p, const char *path,
                             uint64_t start_ns, uint64_t duration_ns)
{
    VpmuProfileStats st;
    Pprof pp = { .prof = p };
    gzFile gz = NULL;
    size_t want;
    int rc;

    vpmu_profile_stats(p, &st);
    /* Every table is at most one entry per address, plus a few. */
    want = st.frames + p->nr_vcpus + 16 + MAX_MAPPINGS;
    pp.strs = calloc(want, sizeof(*pp.strs));
    rc = intern_init(&pp.locs, want) ?: intern_init(&pp.strs_h, want) ?:
         intern_init(&pp.fns_h, want);
    if (!rc && !pp.strs) {
        rc = -ENOMEM;
    }
    rc = rc ?: encode(&pp, start_ns, duration_ns);
    if (rc) {
        goto out;
    }
    gz = gzopen(path, "wbe");
    if (!gz) {
        rc = errno ? -errno : -ENOMEM;
        goto out;
    }
    for (size_t off = 0, chunk; off < pp.out.n && !rc; off += chunk) {
        chunk = pp.out.n - off < (1u << 30) ? pp.out.n - off : (1u << 30);
        if (gzwrite(gz, pp.out.p + off, (unsigned)chunk) != (int)chunk) {
            rc = -EIO;
        }
    }
    if (gzclose(gz) != Z_OK && !rc) {
        rc = -EIO;
    }
    if (rc) {
        remove(path);
    }
out:
    intern_free(&pp.locs);
    intern_free(&pp.strs_h);
    intern_free(&pp.fns_h);
    free(pp.strs);
    free(pp.out.p);
    free(pp.msg.p);
    free(pp.sub.p);
    free(pp.fns.p);
    return rc;
}
