/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mkprofile DIR: a profile of a made-up guest, written the way a VMM
 * writes one, for the consumer test (test-consumers.py) to read with the
 * real tools.  The guest's "program" is this file's guest_main ->
 * guest_a -> guest_b (their link-time addresses, named from this very
 * ELF); its kernel is a two-symbol System.map slid by KASLR.
 *
 *   vCPU 0: 100 samples in guest_b (main -> a -> b), 30 in guest_a
 *           (main -> a), user mode
 *   vCPU 1: 10 samples in the kernel's do_one, kernel mode
 *
 * at a period of 10007 instructions.  Writes DIR/profile.pb.gz,
 * DIR/perf.data (pid 4242) and DIR/kallsyms (the map at the slide, what
 * perf's --guestkallsyms reads).
 */
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vpmu/profile.h>

#define USTACK 0x7ffc00000000ull
#define SLIDE  0x2e00000ll
static uint64_t stack_words[8];

__attribute__((noinline)) int guest_b(int x);
__attribute__((noinline)) int guest_a(int x);
__attribute__((noinline)) int guest_main(int x);
__attribute__((noinline)) int guest_b(int x) { return x + 1; }
__attribute__((noinline)) int guest_a(int x) { return guest_b(x) * 2; }
__attribute__((noinline)) int guest_main(int x) { return guest_a(x) - 1; }

static uint64_t bias;

static int find_bias(struct dl_phdr_info *info, size_t size, void *data)
{
    bias = info->dlpi_addr;
    return 1;
}

static uint64_t link_addr(int (*fn)(int), unsigned off)
{
    return (uintptr_t)fn - bias + off;
}

static int fake_read(void *opaque, uint64_t va, void *buf, size_t len)
{
    if (va < USTACK || va - USTACK > sizeof(stack_words) - len) {
        return -EFAULT;
    }
    memcpy(buf, (uint8_t *)stack_words + (va - USTACK), len);
    return 0;
}

static int fail(const char *what, int rc)
{
    fprintf(stderr, "mkprofile: %s: %s\n", what, strerror(-rc));
    return 1;
}

int main(int argc, char **argv)
{
    VpmuProfileOpts o = { .vm = "tenant1", .nr_vcpus = 2,
                          .event = "instructions",
                          .mode = VPMU_PROFILE_STACK };
    VpmuProfileRegs r = { .fp = USTACK, .user = true };
    char path[4096], err[256];
    VpmuSymbols *user, *kern;
    VpmuProfile *p;
    FILE *f;
    int rc;

    if (argc != 2) {
        fprintf(stderr, "usage: mkprofile DIR\n");
        return 2;
    }
    dl_iterate_phdr(find_bias, NULL);
    rc = vpmu_profile_new(&o, &p);
    if (rc) {
        return fail("vpmu_profile_new", rc);
    }
    /* b's frame returns into a, a's into main (the last frame). */
    stack_words[0] = USTACK + 16;
    stack_words[1] = link_addr(guest_a, 5);
    stack_words[2] = 0;
    stack_words[3] = link_addr(guest_main, 5);
    for (int i = 0; i < 130; i++) {
        /* The first 100 in b; then 30 in a, whose frame is the top one. */
        r.ip = i < 100 ? link_addr(guest_b, 0) : link_addr(guest_a, 1);
        r.fp = i < 100 ? USTACK : USTACK + 16;
        vpmu_profile_sample(p, 0, &r, 1000000ull * i, 10007, fake_read, NULL);
    }
    r = (VpmuProfileRegs){ .ip = 0xffffffff81000120ull + SLIDE };
    for (int i = 0; i < 10; i++) {
        vpmu_profile_sample(p, 1, &r, 1000000ull * i + 500, 10007, fake_read,
                            NULL);
    }

    snprintf(path, sizeof(path), "%s/System.map", argv[1]);
    f = fopen(path, "w");
    if (!f) {
        return fail(path, -errno);
    }
    fputs("ffffffff81000000 T _stext\nffffffff81000100 t do_one\n"
          "ffffffff81000200 T entry_SYSCALL_64\n", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/kallsyms", argv[1]);
    f = fopen(path, "w");
    if (!f) {
        return fail(path, -errno);
    }
    fprintf(f, "%llx T _stext\n%llx t do_one\n%llx T entry_SYSCALL_64\n",
            0xffffffff81000000ull + SLIDE, 0xffffffff81000100ull + SLIDE,
            0xffffffff81000200ull + SLIDE);
    fclose(f);

    snprintf(path, sizeof(path), "%s/System.map", argv[1]);
    if (vpmu_symbols_load_map(path, &kern, err, sizeof(err)) ||
        vpmu_symbols_load_elf("/proc/self/exe", &user, err, sizeof(err))) {
        fprintf(stderr, "mkprofile: %s\n", err);
        return 1;
    }
    vpmu_profile_add_symbols(p, kern, true, SLIDE);
    vpmu_profile_add_symbols(p, user, false, 0);

    snprintf(path, sizeof(path), "%s/profile.pb.gz", argv[1]);
    rc = vpmu_profile_write_pprof(p, path, 1700000000000000000ull,
                                  130000000ull);
    if (rc) {
        return fail(path, rc);
    }
    snprintf(path, sizeof(path), "%s/perf.data", argv[1]);
    rc = vpmu_profile_write_perf(p, path, 4242);
    if (rc) {
        return fail(path, rc);
    }
    vpmu_profile_free(p);
    return 0;
}
