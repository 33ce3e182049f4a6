/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu/profile: the frame-pointer walk over a fake guest memory, the
 * tenant policy's names, and the collector's bounds.  Every chain is
 * built by hand, so each expected address list is exact.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include <vpmu/profile.h>

#include "check-main.h"

/* A guest stack: 64 words at USTACK (user) or KSTACK (kernel). */
#define USTACK 0x7ffc00000000ull
#define KSTACK 0xffffc90000010000ull
#define WORDS  256

static uint64_t mem[WORDS];
static uint64_t mem_base;
static unsigned reads;

static int fake_read(void *opaque, uint64_t va, void *buf, size_t len)
{
    reads++;
    if (va < mem_base || va - mem_base > sizeof(mem) - len) {
        return -EFAULT;
    }
    memcpy(buf, (uint8_t *)mem + (va - mem_base), len);
    return 0;
}

static uint64_t at(unsigned word)
{
    return mem_base + 8ull * word;
}

/* Frame at word @w: caller's fp @next, return address @ret. */
static void frame(unsigned w, uint64_t next, uint64_t ret)
{
    mem[w] = next;
    mem[w + 1] = ret;
}

static void setup(void)
{
    memset(mem, 0, sizeof(mem));
    mem_base = USTACK;
    reads = 0;
}

/* main -> a -> b, sampled in b: b's ip, a's and main's return addresses. */
START_TEST(test_user_chain)
{
    VpmuProfileRegs r = { .ip = 0x401a10, .fp = at(0), .user = true };
    uint64_t pcs[8];
    unsigned n;

    frame(0, at(4), 0x401b22);          /* b's frame: back into a */
    frame(4, at(10), 0x401c33);         /* a's frame: back into main */
    frame(10, 0, 0x401d44);             /* main's: into __libc_start_main */
    n = vpmu_profile_unwind(&r, fake_read, NULL, pcs, 8);
    ck_assert_uint_eq(n, 4);
    ck_assert_uint_eq(pcs[0], 0x401a10);
    ck_assert_uint_eq(pcs[1], 0x401b22);
    ck_assert_uint_eq(pcs[2], 0x401c33);
    ck_assert_uint_eq(pcs[3], 0x401d44);
    ck_assert_uint_eq(reads, 3);
}
END_TEST

START_TEST(test_kernel_chain)
{
    VpmuProfileRegs r = { .ip = 0xffffffff81234567ull, .user = false };
    uint64_t pcs[8];
    unsigned n;

    mem_base = KSTACK;
    r.fp = at(2);
    frame(2, at(8), 0xffffffff81000100ull);
    frame(8, at(20), 0xffffffff81000200ull);
    frame(20, at(2), 0xffffffff81000300ull);  /* points back down: ends */
    n = vpmu_profile_unwind(&r, fake_read, NULL, pcs, 8);
    ck_assert_uint_eq(n, 4);
    ck_assert_uint_eq(pcs[3], 0xffffffff81000300ull);
    ck_assert_uint_eq(reads, 3);
}
END_TEST

/* Each bad value ends the chain where it is, with what came before. */
static const struct bad_case {
    const char *what;
    uint64_t fp0;               /* the sampled fp (word offsets below) */
    uint64_t next, ret;         /* the first frame's words */
    unsigned want;              /* addresses in the chain */
} bad_cases[] = {
    { "fp 0", 0, 0, 0, 1 },
    { "fp misaligned", USTACK + 4, 0, 0, 1 },
    { "fp in the kernel half", 0xffff888000000000ull, 0, 0, 1 },
    { "fp unmapped", USTACK + 8 * WORDS, 0, 0, 1 },
    { "return address 0", USTACK, USTACK + 64, 0, 1 },
    { "return address in the kernel half", USTACK, USTACK + 64,
      0xffffffff81000000ull, 1 },
    { "next fp equal (a loop)", USTACK, USTACK, 0x401000, 2 },
    { "next fp below", USTACK + 64, USTACK, 0x401000, 2 },
    { "next fp beyond a stack", USTACK, USTACK + (8ull << 20) + 8,
      0x401000, 2 },
};

START_TEST(test_bad_frames)
{
    const struct bad_case *c = &bad_cases[_i];
    VpmuProfileRegs r = { .ip = 0x400000, .fp = c->fp0, .user = true };
    uint64_t pcs[8];
    unsigned n;

    if (c->fp0 >= USTACK && c->fp0 < USTACK + 8 * WORDS && !(c->fp0 & 7)) {
        frame((unsigned)((c->fp0 - USTACK) / 8), c->next, c->ret);
    }
    n = vpmu_profile_unwind(&r, fake_read, NULL, pcs, 8);
    ck_assert_msg(n == c->want, "%s: %u addresses, want %u", c->what, n,
                  c->want);
    ck_assert_uint_eq(pcs[0], 0x400000);
    if (n == 2) {
        ck_assert_uint_eq(pcs[1], c->ret);
    }
}
END_TEST

/* A chain deeper than the room: @max addresses, @max - 1 reads. */
START_TEST(test_depth_bound)
{
    VpmuProfileRegs r = { .ip = 0x400000, .fp = at(0), .user = true };
    uint64_t pcs[VPMU_PROFILE_MAX_DEPTH + 8];
    unsigned n;

    for (unsigned w = 0; w + 3 < WORDS; w += 2) {
        frame(w, at(w + 2), 0x400000 + w);
    }
    n = vpmu_profile_unwind(&r, fake_read, NULL, pcs, 10);
    ck_assert_uint_eq(n, 10);
    ck_assert_uint_eq(reads, 9);
    ck_assert_uint_eq(pcs[9], 0x400000 + 16);
    reads = 0;
    n = vpmu_profile_unwind(&r, fake_read, NULL, pcs,
                            VPMU_PROFILE_MAX_DEPTH + 8);
    ck_assert_uint_eq(n, VPMU_PROFILE_MAX_DEPTH);
    ck_assert_uint_eq(reads, VPMU_PROFILE_MAX_DEPTH - 1);
    ck_assert_uint_eq(vpmu_profile_unwind(&r, fake_read, NULL, pcs, 0), 0);
    /* No reader (mode ip): the sampled address alone. */
    ck_assert_uint_eq(vpmu_profile_unwind(&r, NULL, NULL, pcs, 8), 1);
}
END_TEST

START_TEST(test_modes)
{
    VpmuProfileMode m = VPMU_PROFILE_STACK;

    ck_assert_int_eq(vpmu_profile_mode_parse("deny", &m), 0);
    ck_assert_int_eq(m, VPMU_PROFILE_DENY);
    ck_assert_int_eq(vpmu_profile_mode_parse("ip", &m), 0);
    ck_assert_int_eq(m, VPMU_PROFILE_IP);
    ck_assert_int_eq(vpmu_profile_mode_parse("stack", &m), 0);
    ck_assert_int_eq(m, VPMU_PROFILE_STACK);
    ck_assert_int_eq(vpmu_profile_mode_parse("Stack", &m), -EINVAL);
    ck_assert_int_eq(vpmu_profile_mode_parse("", &m), -EINVAL);
    ck_assert_int_eq(vpmu_profile_mode_parse(NULL, &m), -EINVAL);
    ck_assert_int_eq(m, VPMU_PROFILE_STACK);
    ck_assert_str_eq(vpmu_profile_mode_name(VPMU_PROFILE_IP), "ip");
}
END_TEST

START_TEST(test_collector_bounds)
{
    VpmuProfileOpts o = { .vm = "t", .nr_vcpus = 2, .event = "instructions",
                          .mode = VPMU_PROFILE_STACK, .max_samples = 3 };
    VpmuProfileRegs r = { .ip = 0x401a10, .fp = at(0), .user = true };
    VpmuProfileStats st;
    VpmuProfile *p;

    frame(0, 0, 0x401b22);
    ck_assert_int_eq(vpmu_profile_new(&o, &p), 0);
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(vpmu_profile_sample(p, 1, &r, i, 100, fake_read, NULL),
                         i < 3 ? 0 : -ENOSPC);
    }
    ck_assert_int_eq(vpmu_profile_sample(p, 2, &r, 0, 100, fake_read, NULL),
                     -EINVAL);
    vpmu_profile_stats(p, &st);
    ck_assert_uint_eq(st.samples, 3);
    ck_assert_uint_eq(st.lost, 2);
    ck_assert_uint_eq(st.frames, 6);
    vpmu_profile_free(p);

    /* Mode ip: no walk, whatever the reader. */
    o.mode = VPMU_PROFILE_IP;
    ck_assert_int_eq(vpmu_profile_new(&o, &p), 0);
    reads = 0;
    ck_assert_int_eq(vpmu_profile_sample(p, 0, &r, 0, 100, fake_read, NULL), 0);
    ck_assert_uint_eq(reads, 0);
    vpmu_profile_stats(p, &st);
    ck_assert_uint_eq(st.frames, 1);
    vpmu_profile_free(p);

    o.mode = VPMU_PROFILE_DENY;
    ck_assert_int_eq(vpmu_profile_new(&o, &p), -EINVAL);
    ck_assert_ptr_null(p);
    o.mode = VPMU_PROFILE_IP;
    o.nr_vcpus = 0;
    ck_assert_int_eq(vpmu_profile_new(&o, &p), -EINVAL);
    o.nr_vcpus = 1;
    o.event = "";
    ck_assert_int_eq(vpmu_profile_new(&o, &p), -EINVAL);
}
END_TEST

/*
 * 5-level paging: Linux's stacks lie in the wider kernel half, below
 * 0xffff800000000000; only with la57 are they walked.
 */
START_TEST(test_la57)
{
    VpmuProfileRegs r = { .ip = 0xffffffff81234567ull, .user = false };
    uint64_t pcs[8];

    mem_base = 0xff53d792005e3000ull;
    r.fp = at(2);
    frame(2, at(8), 0xffffffff81000100ull);
    frame(8, 0, 0xffffffff81000200ull);
    ck_assert_uint_eq(vpmu_profile_unwind(&r, fake_read, NULL, pcs, 8), 1);
    ck_assert_uint_eq(reads, 0);
    r.la57 = true;
    ck_assert_uint_eq(vpmu_profile_unwind(&r, fake_read, NULL, pcs, 8), 3);
    ck_assert_uint_eq(pcs[2], 0xffffffff81000200ull);
    /* A user address of the 57-bit half: a frame only with la57. */
    r = (VpmuProfileRegs){ .ip = 0x401000, .user = true, .la57 = true };
    mem_base = 0x00ff000000000000ull;
    r.fp = at(0);
    frame(0, 0, 0x401b22);
    ck_assert_uint_eq(vpmu_profile_unwind(&r, fake_read, NULL, pcs, 8), 2);
    r.la57 = false;
    ck_assert_uint_eq(vpmu_profile_unwind(&r, fake_read, NULL, pcs, 8), 1);
}
END_TEST

/*
 * A kernel sample's task stack (16 KiB at KSTACK) with the pt_regs of a
 * syscall from user code at its top, beside the user stack at USTACK.
 */
#define KWORDS (16384 / 8)
#define PT(i)  (KWORDS - 21 + (i))      /* pt_regs word i */

static uint64_t kmem[KWORDS];

static int two_read(void *opaque, uint64_t va, void *buf, size_t len)
{
    if (va >= KSTACK && va - KSTACK <= sizeof(kmem) - len) {
        reads++;
        memcpy(buf, (uint8_t *)kmem + (va - KSTACK), len);
        return 0;
    }
    return fake_read(opaque, va, buf, len);
}

static void syscall_regs(void)
{
    memset(kmem, 0, sizeof(kmem));
    kmem[PT(4)] = at(0);                /* bp: the user's frame */
    kmem[PT(16)] = 0x401a10;            /* ip: after the syscall */
    kmem[PT(17)] = 0x33;                /* cs: __USER_CS */
    kmem[PT(18)] = 0x246;               /* flags: IF ZF PF, bit 1 */
    kmem[PT(19)] = at(0) - 8;           /* sp */
    kmem[PT(20)] = 0x2b;                /* ss: __USER_DS */
    frame(0, at(4), 0x401b22);          /* the user's frames, as above */
    frame(4, 0, 0x401c33);
}

START_TEST(test_entry_regs)
{
    VpmuProfileRegs k = { .ip = 0xffffffff81234567ull,
                          .sp = KSTACK + 0x3e58 }, u;

    syscall_regs();
    ck_assert_int_eq(vpmu_profile_entry_regs(&k, two_read, NULL, &u), 0);
    ck_assert(u.user);
    ck_assert_uint_eq(u.ip, 0x401a10);
    ck_assert_uint_eq(u.fp, at(0));
    ck_assert_uint_eq(u.sp, at(0) - 8);
    /* Anywhere in the 16 KiB: the same top. */
    k.sp = KSTACK + 8;
    ck_assert_int_eq(vpmu_profile_entry_regs(&k, two_read, NULL, &u), 0);
    ck_assert_uint_eq(u.ip, 0x401a10);
    /* Not a user entry's frame: each field checked. */
    kmem[PT(17)] = 0x10;                /* __KERNEL_CS: a kernel thread */
    ck_assert_int_eq(vpmu_profile_entry_regs(&k, two_read, NULL, &u),
                     -ENOENT);
    kmem[PT(17)] = 0x33;
    kmem[PT(20)] = 0x18;
    ck_assert_int_eq(vpmu_profile_entry_regs(&k, two_read, NULL, &u),
                     -ENOENT);
    kmem[PT(20)] = 0x2b;
    kmem[PT(18)] = 0;
    ck_assert_int_eq(vpmu_profile_entry_regs(&k, two_read, NULL, &u),
                     -ENOENT);
    kmem[PT(18)] = 0x246;
    kmem[PT(16)] = 0xffffffff81000000ull;
    ck_assert_int_eq(vpmu_profile_entry_regs(&k, two_read, NULL, &u),
                     -ENOENT);
    kmem[PT(16)] = 0x401a10;
    kmem[PT(19)] = 0xffffc90000000000ull;
    ck_assert_int_eq(vpmu_profile_entry_regs(&k, two_read, NULL, &u),
                     -ENOENT);
    kmem[PT(19)] = at(0) - 8;
    /* A user sample has none; a stack that cannot be read faults. */
    u = k;
    u.user = true;
    ck_assert_int_eq(vpmu_profile_entry_regs(&u, two_read, NULL, &u),
                     -ENOENT);
    k.sp = KSTACK + 0x10000;
    ck_assert_int_eq(vpmu_profile_entry_regs(&k, two_read, NULL, &u),
                     -EFAULT);
    k.sp = 0x7ffc00001000ull;           /* not a kernel stack */
    ck_assert_int_eq(vpmu_profile_entry_regs(&k, two_read, NULL, &u),
                     -ENOENT);
}
END_TEST

/*
 * The collector: a kernel sample's chain is its kernel frames, then the
 * user frames of its task's entry (ip, then the return addresses); in
 * mode ip, the sampled ip alone.
 */
START_TEST(test_kernel_then_user)
{
    VpmuProfileOpts o = { .vm = "t", .nr_vcpus = 1, .event = "cycles",
                          .mode = VPMU_PROFILE_STACK };
    VpmuProfileRegs k = { .ip = 0xffffffff81234567ull,
                          .fp = KSTACK + 0x3e00, .sp = KSTACK + 0x3df0 };
    VpmuProfileStats st;
    VpmuProfile *p;

    syscall_regs();
    kmem[0x3e00 / 8] = KSTACK + 0x3e40;                 /* one frame up */
    kmem[0x3e00 / 8 + 1] = 0xffffffff81000100ull;
    kmem[0x3e40 / 8] = 0;                               /* the last */
    kmem[0x3e40 / 8 + 1] = 0xffffffff81000200ull;
    ck_assert_int_eq(vpmu_profile_new(&o, &p), 0);
    ck_assert_int_eq(vpmu_profile_sample(p, 0, &k, 0, 100, two_read, NULL),
                     0);
    vpmu_profile_stats(p, &st);
    /* 3 kernel (ip + 2 returns) and 3 user (ip + 2 returns). */
    ck_assert_uint_eq(st.frames, 6);
    vpmu_profile_free(p);
    o.mode = VPMU_PROFILE_IP;
    ck_assert_int_eq(vpmu_profile_new(&o, &p), 0);
    ck_assert_int_eq(vpmu_profile_sample(p, 0, &k, 0, 100, two_read, NULL),
                     0);
    vpmu_profile_stats(p, &st);
    ck_assert_uint_eq(st.frames, 1);
    vpmu_profile_free(p);
}
END_TEST

static Suite *profile_suite(void)
{
    Suite *s = suite_create("profile-unwind");
    TCase *tc = tcase_create("unwind");

    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_user_chain);
    tcase_add_test(tc, test_kernel_chain);
    tcase_add_loop_test(tc, test_bad_frames, 0,
                        sizeof(bad_cases) / sizeof(bad_cases[0]));
    tcase_add_test(tc, test_depth_bound);
    tcase_add_test(tc, test_modes);
    tcase_add_test(tc, test_collector_bounds);
    tcase_add_test(tc, test_la57);
    tcase_add_test(tc, test_entry_regs);
    tcase_add_test(tc, test_kernel_then_user);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(profile_suite());
}
