/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu/profile: symbol tables (System.map, ELF) with their bad inputs,
 * and the two writers read back field by field: perf.data's header and
 * records, pprof's protobuf after gunzip.
 */
#include <check.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <linux/perf_event.h>

#include <vpmu/profile.h>

#include "check-main.h"

static char dir[] = "/tmp/vpmu-profile-XXXXXX";
static char err[256];

static const char *path_in(const char *name)
{
    static char buf[4][128];
    static int i;

    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
    return buf[i];
}

static void write_file(const char *name, const void *data, size_t len)
{
    FILE *f = fopen(path_in(name), "w");

    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

static const char map_text[] =
    "ffffffff81000000 T _stext\n"
    "ffffffff81000100 t do_one\n"
    "ffffffff81000180 D not_text\n"
    "ffffffff81000200 T entry_SYSCALL_64\n"
    "ffffffff81000300 W weak_fn\n"
    "ffffffffa0000000 t mod_fn\t[ext4]\n";

START_TEST(test_map)
{
    VpmuSymbols *s;
    int64_t slide = 0;

    write_file("System.map", map_text, sizeof(map_text) - 1);
    ck_assert_int_eq(vpmu_symbols_load_map(path_in("System.map"), &s, err,
                                           sizeof(err)), 0);
    ck_assert_ptr_null(vpmu_symbols_lookup(s, 0xffffffff80ffffffull));
    ck_assert_str_eq(vpmu_symbols_lookup(s, 0xffffffff81000000ull), "_stext");
    ck_assert_str_eq(vpmu_symbols_lookup(s, 0xffffffff810001ffull), "do_one");
    ck_assert_str_eq(vpmu_symbols_lookup(s, 0xffffffff81000200ull),
                     "entry_SYSCALL_64");
    ck_assert_str_eq(vpmu_symbols_lookup(s, 0xffffffff81000301ull), "weak_fn");
    ck_assert_str_eq(vpmu_symbols_lookup(s, 0xffffffffa0000010ull), "mod_fn");
    /* KASLR: LSTAR at entry_SYSCALL_64 + 0x2e00000 (23 x 2 MiB). */
    ck_assert_int_eq(vpmu_symbols_slide(s, "entry_SYSCALL_64",
                                        0xffffffff83e00200ull, &slide), 0);
    ck_assert_int_eq(slide, 0x2e00000);
    ck_assert_int_eq(vpmu_symbols_slide(s, "entry_SYSCALL_64",
                                        0xffffffff83e00300ull, &slide),
                     -EINVAL);
    ck_assert_int_eq(vpmu_symbols_slide(s, "no_such", 0, &slide), -ENOENT);
    ck_assert_int_eq(slide, 0x2e00000);
    vpmu_symbols_free(s);
}
END_TEST

static const struct bad_map {
    const char *text, *err;
} bad_maps[] = {
    { "ffffffff81000000 T\n", "System.map:1: not" },
    { "ffffffff81000000 T _stext\nzzz T x\n", "System.map:2: not" },
    { "ffffffff81000000 TT x\n", "System.map:1: not" },
    { "ffffffff81000000 D data_only\n", "no function symbols" },
    { "", "no function symbols" },
};

START_TEST(test_bad_map)
{
    VpmuSymbols *s = (void *)1;

    write_file("System.map", bad_maps[_i].text, strlen(bad_maps[_i].text));
    ck_assert_int_eq(vpmu_symbols_load_map(path_in("System.map"), &s, err,
                                           sizeof(err)), -EINVAL);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(err, bad_maps[_i].err), "error \"%s\"", err);
    ck_assert_int_eq(vpmu_symbols_load_map(path_in("none"), &s, err,
                                           sizeof(err)), -ENOENT);
}
END_TEST

/* This test program's own ELF: its functions at their link addresses. */
static uint64_t self_bias;

static int find_bias(struct dl_phdr_info *info, size_t size, void *data)
{
    self_bias = info->dlpi_addr;        /* the first entry: the program */
    return 1;
}

__attribute__((noinline)) int profile_test_marker(int x);
__attribute__((noinline)) int profile_test_marker(int x)
{
    return x * 3 + 1;
}

START_TEST(test_elf)
{
    VpmuSymbols *s;
    uint64_t link = (uintptr_t)&profile_test_marker;

    dl_iterate_phdr(find_bias, NULL);
    link -= self_bias;
    ck_assert_int_eq(vpmu_symbols_load_elf("/proc/self/exe", &s, err,
                                           sizeof(err)), 0);
    ck_assert_str_eq(vpmu_symbols_lookup(s, link), "profile_test_marker");
    ck_assert_str_eq(vpmu_symbols_lookup(s, link + 1), "profile_test_marker");
    vpmu_symbols_free(s);
}
END_TEST

START_TEST(test_bad_elf)
{
    VpmuSymbols *s = (void *)1;
    uint8_t *img;
    size_t size;
    FILE *f = fopen("/proc/self/exe", "r");

    img = malloc(8 << 20);
    size = fread(img, 1, 8 << 20, f);
    fclose(f);
    write_file("text", "hello\n", 6);
    ck_assert_int_eq(vpmu_symbols_load_elf(path_in("text"), &s, err,
                                           sizeof(err)), -EINVAL);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(err, "not a 64-bit x86-64 ELF"), "%s", err);
    /* The header alone: its section headers are past the end. */
    write_file("short", img, 64);
    ck_assert_int_eq(vpmu_symbols_load_elf(path_in("short"), &s, err,
                                           sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, "section headers outside"), "%s", err);
    /* Everything but the last byte: still outside. */
    write_file("cut", img, size - 1);
    ck_assert_int_eq(vpmu_symbols_load_elf(path_in("cut"), &s, err,
                                           sizeof(err)), -EINVAL);
    ck_assert_int_eq(vpmu_symbols_load_elf(dir, &s, err, sizeof(err)),
                     -EINVAL);
    free(img);
}
END_TEST

/* --- Writers ------------------------------------------------------------ */

/* Guest user stack: b -> a -> main, at USTACK. */
#define USTACK 0x7ffc00000000ull
static uint64_t stack_words[8];

static int fake_read(void *opaque, uint64_t va, void *buf, size_t len)
{
    if (va < USTACK || va - USTACK > sizeof(stack_words) - len) {
        return -EFAULT;
    }
    memcpy(buf, (uint8_t *)stack_words + (va - USTACK), len);
    return 0;
}

/*
 * vCPU 0: three user samples in b (main -> a -> b), the first two with
 * the same stack (one pprof sample of count 2); vCPU 1: one kernel
 * sample in do_one, named through the map at a slide of 0x2e00000.
 */
static VpmuProfile *make_profile(void)
{
    VpmuProfileOpts o = { .vm = "tenant1", .nr_vcpus = 2,
                          .event = "instructions",
                          .mode = VPMU_PROFILE_STACK };
    VpmuProfileRegs u = { .ip = 0x401010, .fp = USTACK, .user = true };
    VpmuProfileRegs k = { .ip = 0xffffffff83e00120ull, .user = false };
    VpmuProfile *p;
    VpmuSymbols *syms;

    stack_words[0] = USTACK + 16;       /* b's frame */
    stack_words[1] = 0x401105;          /* into a */
    stack_words[2] = 0;                 /* a's frame: the last */
    stack_words[3] = 0x401207;          /* into main */
    ck_assert_int_eq(vpmu_profile_new(&o, &p), 0);
    ck_assert_int_eq(vpmu_profile_sample(p, 0, &u, 1000, 10007, fake_read,
                                         NULL), 0);
    ck_assert_int_eq(vpmu_profile_sample(p, 0, &u, 2000, 10007, fake_read,
                                         NULL), 0);
    u.ip = 0x401020;
    ck_assert_int_eq(vpmu_profile_sample(p, 0, &u, 3000, 10007, fake_read,
                                         NULL), 0);
    ck_assert_int_eq(vpmu_profile_sample(p, 1, &k, 1500, 10007, fake_read,
                                         NULL), 0);
    write_file("System.map", map_text, sizeof(map_text) - 1);
    ck_assert_int_eq(vpmu_symbols_load_map(path_in("System.map"), &syms, err,
                                           sizeof(err)), 0);
    ck_assert_int_eq(vpmu_profile_add_symbols(p, syms, true, 0x2e00000), 0);
    return p;
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    uint8_t *buf = malloc(1 << 20);

    ck_assert_ptr_nonnull(f);
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

START_TEST(test_perf_data)
{
    VpmuProfile *p = make_profile();
    const uint64_t want_ip[] = { 0x401010, 0x401010, 0x401020,
                                 0xffffffff83e00120ull };
    const unsigned want_cpu[] = { 0, 0, 0, 1 };
    const uint64_t want_time[] = { 1000, 2000, 3000, 1500 };
    uint64_t *w, off, end;
    size_t len;
    uint8_t *buf;
    unsigned n = 0;

    ck_assert_int_eq(vpmu_profile_write_perf(p, path_in("perf.data"), 4242), 0);
    vpmu_profile_free(p);
    buf = slurp(path_in("perf.data"), &len);
    w = (uint64_t *)buf;
    ck_assert_uint_eq(w[0], 0x32454c4946524550ull);     /* PERFILE2 */
    ck_assert_uint_eq(w[1], 104);
    ck_assert_uint_eq(w[2], sizeof(struct perf_event_attr) + 16);
    ck_assert_uint_eq(w[3], 104);                       /* attrs */
    off = w[5];                                         /* data */
    end = off + w[6];
    ck_assert_uint_eq(end, len);
    for (; off < end; n++) {
        struct perf_event_header *h = (void *)(buf + off);
        uint64_t *r = (uint64_t *)(h + 1);

        if (n == 0) {
            ck_assert_uint_eq(h->type, PERF_RECORD_COMM);
            ck_assert_uint_eq(h->misc, PERF_RECORD_MISC_GUEST_USER);
            ck_assert_str_eq((char *)&r[1], "tenant1");
        } else if (n == 1) {
            /* The kernel's map, for perf's --guestkallsyms. */
            ck_assert_uint_eq(h->type, PERF_RECORD_MMAP);
            ck_assert_uint_eq(h->misc, PERF_RECORD_MISC_GUEST_KERNEL);
            ck_assert_uint_eq(r[1], 0xffffffff80000000ull);
            ck_assert_str_eq((char *)&r[4], "[guest.kernel.kallsyms]");
        } else {
            unsigned i = n - 2;
            bool user = i < 3;

            ck_assert_uint_eq(h->type, PERF_RECORD_SAMPLE);
            ck_assert_uint_eq(h->misc, user ? PERF_RECORD_MISC_GUEST_USER
                                            : PERF_RECORD_MISC_GUEST_KERNEL);
            ck_assert_uint_eq(r[0], want_ip[i]);
            ck_assert_uint_eq(r[1], 4242ull << 32 | 4242);
            ck_assert_uint_eq(r[2], want_time[i]);
            ck_assert_uint_eq(r[3], want_cpu[i]);
            ck_assert_uint_eq(r[4], 10007);
            ck_assert_uint_eq(r[5], user ? 4 : 2);      /* marker + pcs */
            ck_assert_uint_eq(r[6], user ? PERF_CONTEXT_USER
                                         : PERF_CONTEXT_KERNEL);
            ck_assert_uint_eq(r[7], want_ip[i]);
            if (user) {
                ck_assert_uint_eq(r[8], 0x401105);
                ck_assert_uint_eq(r[9], 0x401207);
            }
            ck_assert_uint_eq(h->size, 8 + 8 * (user ? 10 : 8));
        }
        off += h->size;
    }
    ck_assert_uint_eq(n, 6);
    free(buf);
}
END_TEST

/*
 * A kernel sample of a task in a syscall: its chain marks the kernel's
 * frame (the ip; its rbp is no frame) and then, with PERF_CONTEXT_USER,
 * the user's: the entry ip from pt_regs at the top of the 16 KiB task
 * stack, and the user frames from its rbp.
 */
#define KTOP 0xffffc90000014000ull
static uint64_t pt_regs[21];

static int entry_read(void *opaque, uint64_t va, void *buf, size_t len)
{
    if (va >= KTOP - sizeof(pt_regs) && va + len <= KTOP) {
        memcpy(buf, (uint8_t *)pt_regs + (va - (KTOP - sizeof(pt_regs))),
               len);
        return 0;
    }
    return fake_read(opaque, va, buf, len);
}

START_TEST(test_perf_data_entry)
{
    VpmuProfileOpts o = { .vm = "tenant1", .nr_vcpus = 1,
                          .event = "cycles", .mode = VPMU_PROFILE_STACK };
    VpmuProfileRegs k = { .ip = 0xffffffff83e00120ull, .fp = 1,
                          .sp = KTOP - 0x400 };
    VpmuProfile *p;
    struct perf_event_header *h;
    uint64_t *w, *r, off;
    size_t len;
    uint8_t *buf;

    stack_words[0] = USTACK + 16;
    stack_words[1] = 0x401105;
    stack_words[2] = 0;
    stack_words[3] = 0x401207;
    memset(pt_regs, 0, sizeof(pt_regs));
    pt_regs[4] = USTACK;                /* bp */
    pt_regs[16] = 0x401030;             /* ip */
    pt_regs[17] = 0x33;                 /* cs */
    pt_regs[18] = 0x202;                /* flags */
    pt_regs[19] = USTACK - 8;           /* sp */
    pt_regs[20] = 0x2b;                 /* ss */
    ck_assert_int_eq(vpmu_profile_new(&o, &p), 0);
    ck_assert_int_eq(vpmu_profile_sample(p, 0, &k, 10, 1000, entry_read,
                                         NULL), 0);
    ck_assert_int_eq(vpmu_profile_write_perf(p, path_in("entry.data"), 7), 0);
    vpmu_profile_free(p);
    buf = slurp(path_in("entry.data"), &len);
    w = (uint64_t *)buf;
    off = w[5];
    /* The COMM record, then the sample (no map: no MMAP). */
    h = (void *)(buf + off);
    ck_assert_uint_eq(h->type, PERF_RECORD_COMM);
    off += h->size;
    h = (void *)(buf + off);
    r = (uint64_t *)(h + 1);
    ck_assert_uint_eq(h->type, PERF_RECORD_SAMPLE);
    ck_assert_uint_eq(h->misc, PERF_RECORD_MISC_GUEST_KERNEL);
    ck_assert_uint_eq(r[0], 0xffffffff83e00120ull);
    ck_assert_uint_eq(r[5], 6);         /* 2 markers, 1 + 3 pcs */
    ck_assert_uint_eq(r[6], PERF_CONTEXT_KERNEL);
    ck_assert_uint_eq(r[7], 0xffffffff83e00120ull);
    ck_assert_uint_eq(r[8], PERF_CONTEXT_USER);
    ck_assert_uint_eq(r[9], 0x401030);
    ck_assert_uint_eq(r[10], 0x401105);
    ck_assert_uint_eq(r[11], 0x401207);
    ck_assert_uint_eq(h->size, 8 + 8 * 12);
    ck_assert_uint_eq(off + h->size, len);
    free(buf);
}
END_TEST

/* protobuf: the next field of [*pos, end); false at the end. */
static bool pb_next(const uint8_t *b, size_t *pos, size_t end, unsigned *field,
                    uint64_t *val, size_t *sub, size_t *sublen)
{
    uint64_t key = 0, v = 0;
    unsigned shift = 0;

    if (*pos >= end) {
        return false;
    }
    do {
        key |= (uint64_t)(b[*pos] & 0x7f) << shift;
        shift += 7;
    } while (b[(*pos)++] & 0x80);
    shift = 0;
    do {
        v |= (uint64_t)(b[*pos] & 0x7f) << shift;
        shift += 7;
    } while (b[(*pos)++] & 0x80);
    *field = (unsigned)(key >> 3);
    ck_assert_msg((key & 7) == 0 || (key & 7) == 2, "wire type %u",
                  (unsigned)(key & 7));
    *val = v;
    if ((key & 7) == 2) {
        *sub = *pos;
        *sublen = v;
        *pos += v;
    }
    return true;
}

START_TEST(test_pprof)
{
    VpmuProfile *p = make_profile();
    gzFile gz;
    uint8_t *buf = malloc(1 << 20);
    char strs[32][32];
    unsigned nstr = 0, nsamples = 0, nlocs = 0, nfns = 0, field;
    unsigned nmaps = 0, mapped = 0;
    uint64_t v, counts = 0, addr = 0, map_id;
    size_t len, pos = 0, sub, sublen;

    ck_assert_int_eq(vpmu_profile_write_pprof(p, path_in("p.pb.gz"), 5, 7), 0);
    vpmu_profile_free(p);
    gz = gzopen(path_in("p.pb.gz"), "rb");
    ck_assert_ptr_nonnull(gz);
    len = (size_t)gzread(gz, buf, 1 << 20);
    gzclose(gz);
    while (pb_next(buf, &pos, len, &field, &v, &sub, &sublen)) {
        size_t q = sub, qe = sub + sublen, s2, l2;
        unsigned f2;
        uint64_t v2;

        switch (field) {
        case 2:                 /* Sample: its value[0] is the count */
            nsamples++;
            while (pb_next(buf, &q, qe, &f2, &v2, &s2, &l2)) {
                if (f2 == 2) {
                    counts += buf[s2];
                }
            }
            break;
        case 3:                 /* Mapping: the kernel's, id 1 */
            nmaps++;
            while (pb_next(buf, &q, qe, &f2, &v2, &s2, &l2)) {
                ck_assert_uint_eq(v2, f2 == 1 ? 1 :
                                      f2 == 2 ? 0xffffffff80000000ull :
                                      f2 == 3 ? 0xffffffffffffffffull :
                                      f2 == 5 ? 4 : f2 == 7 ? 1 : 0);
            }
            break;
        case 4:                 /* Location: the kernel's is in mapping 1 */
            nlocs++;
            map_id = 0;
            while (pb_next(buf, &q, qe, &f2, &v2, &s2, &l2)) {
                addr = f2 == 3 ? v2 : addr;
                map_id = f2 == 2 ? v2 : map_id;
            }
            ck_assert_uint_eq(map_id, addr >= 0xffffffff80000000ull);
            mapped += map_id != 0;
            break;
        case 5:
            nfns++;
            break;
        case 6:
            ck_assert_uint_lt(nstr, 32);
            snprintf(strs[nstr++], sizeof(strs[0]), "%.*s", (int)sublen,
                     (char *)buf + sub);
            break;
        case 9:
            ck_assert_uint_eq(v, 5);
            break;
        case 10:
            ck_assert_uint_eq(v, 7);
            break;
        case 12:
            ck_assert_uint_eq(v, 10007);
            break;
        }
    }
    /* vCPU 0: {b@0x401010 x2}, {b@0x401020}; vCPU 1: {do_one}. */
    ck_assert_uint_eq(nsamples, 3);
    ck_assert_uint_eq(counts, 4);
    /* 0x401010, 0x401105, 0x401207, 0x401020, 0xffffffff83e00120. */
    ck_assert_uint_eq(nlocs, 5);
    ck_assert_uint_eq(nfns, 1);                         /* do_one */
    ck_assert_uint_eq(nmaps, 1);
    ck_assert_uint_eq(mapped, 1);
    ck_assert_str_eq(strs[0], "");
    {
        static const char *want[] = { "samples", "count", "instructions",
                                      "[guest.kernel.kallsyms]",
                                      "vm", "tenant1", "vcpu", "0", "mode",
                                      "user", "do_one", "1", "kernel" };
        ck_assert_uint_eq(nstr, 1 + sizeof(want) / sizeof(want[0]));
        for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
            ck_assert_str_eq(strs[i + 1], want[i]);
        }
    }
    free(buf);
}
END_TEST

START_TEST(test_write_errors)
{
    VpmuProfile *p = make_profile();

    ck_assert_int_eq(vpmu_profile_write_perf(p, path_in("no/such/dir"), 1),
                     -ENOENT);
    ck_assert_int_lt(vpmu_profile_write_pprof(p, path_in("no/such/dir"), 0, 0),
                     0);
    ck_assert_int_eq(access(path_in("no"), F_OK), -1);
    vpmu_profile_free(p);
}
END_TEST

static void setup(void)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    strcpy(dir, "/tmp/vpmu-profile-XXXXXX");
}

Suite *output_suite(void);

Suite *output_suite(void)
{
    Suite *s = suite_create("profile-output");
    TCase *tc = tcase_create("symbols");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_map);
    tcase_add_loop_test(tc, test_bad_map, 0,
                        sizeof(bad_maps) / sizeof(bad_maps[0]));
    tcase_add_test(tc, test_elf);
    tcase_add_test(tc, test_bad_elf);
    suite_add_tcase(s, tc);
    tc = tcase_create("writers");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_perf_data);
    tcase_add_test(tc, test_perf_data_entry);
    tcase_add_test(tc, test_pprof);
    tcase_add_test(tc, test_write_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(output_suite());
}
