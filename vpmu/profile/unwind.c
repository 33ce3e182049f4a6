/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Call chains from a guest's frame pointers, read-only and bounded.
 *
 * The walk is perf's (arch/x86/events/core.c, perf_callchain_user()): a
 * frame is the pair {caller's RBP, return address} at RBP.  What is read
 * is the guest's, so every value is checked before it is used: the VMM's
 * reader never faults (it returns -EFAULT), and the checks below end the
 * chain at the first value that cannot be a frame, so a guest that uses
 * RBP as a general register (a kernel built without frame pointers) gives
 * a short chain, never a long or a looping one.
 */
#include <errno.h>
#include <string.h>

#include <vpmu/profile.h>

/*
 * The two canonical halves (SDM Vol. 1 3.3.7.1): with 4-level paging user
 * addresses lie below 2^47 and kernel ones from 0xffff800000000000; with
 * 5-level paging (CR4.LA57, 57-bit addresses) below 2^56 and from
 * 0xff00000000000000, where Linux then puts its stacks (vmalloc).
 */
#define USER_TOP          0x0000800000000000ull
#define KERNEL_BOTTOM     0xffff800000000000ull
#define USER_TOP_LA57     0x0100000000000000ull
#define KERNEL_BOTTOM_LA57 0xff00000000000000ull

/*
 * The most one frame may be above the previous one: a user frame within
 * a default 8 MiB stack, a kernel frame within its 16 KiB task stack
 * (THREAD_SIZE with KASAN off) or an IRQ stack; the kernel's own unwinder
 * stops at a stack switch as well.
 */
#define USER_FRAME_SPAN   (8ull << 20)
#define KERNEL_FRAME_SPAN (16ull << 10)

/*
 * x86-64 Linux's task stack: THREAD_SIZE (16 KiB without KASAN), aligned
 * to its size (THREAD_ALIGN, vmalloc'd stacks), with struct pt_regs at
 * its very top (TOP_OF_KERNEL_STACK_PADDING is 0 on x86-64).  pt_regs
 * (arch/x86/include/asm/ptrace.h) is 21 words: r15 r14 r13 r12 bp bx r11
 * r10 r9 r8 ax cx dx si di orig_ax ip cs flags sp ss.
 */
#define TASK_STACK_SIZE   (16ull << 10)
#define PT_REGS_WORDS     21
#define PT_REGS_BP        4
#define PT_REGS_IP        16
#define PT_REGS_CS        17
#define PT_REGS_FLAGS     18
#define PT_REGS_SP        19
#define PT_REGS_SS        20
/* A selector's RPL (SDM Vol. 3A 3.4.2); RFLAGS bit 1 is always 1. */
#define SEL_RPL_MASK      3ull
#define RFLAGS_FIXED      (1ull << 1)

int vpmu_profile_mode_parse(const char *text, VpmuProfileMode *mode)
{
    static const VpmuProfileMode modes[] = {
        VPMU_PROFILE_DENY, VPMU_PROFILE_IP, VPMU_PROFILE_STACK,
    };

    for (size_t i = 0; text && i < sizeof(modes) / sizeof(modes[0]); i++) {
        if (!strcmp(text, vpmu_profile_mode_name(modes[i]))) {
            *mode = modes[i];
            return 0;
        }
    }
    return -EINVAL;
}

const char *vpmu_profile_mode_name(VpmuProfileMode mode)
{
    switch (mode) {
    case VPMU_PROFILE_DENY:
        return "deny";
    case VPMU_PROFILE_IP:
        return "ip";
    case VPMU_PROFILE_STACK:
        return "stack";
    }
    return "?";
}

static bool in_half(uint64_t addr, bool user, bool la57)
{
    if (user) {
        return addr < (la57 ? USER_TOP_LA57 : USER_TOP);
    }
    return addr >= (la57 ? KERNEL_BOTTOM_LA57 : KERNEL_BOTTOM);
}

unsigned vpmu_profile_unwind(const VpmuProfileRegs *regs, VpmuGuestRead read,
                             void *opaque, uint64_t *pcs, unsigned max)
{
    uint64_t span = regs->user ? USER_FRAME_SPAN : KERNEL_FRAME_SPAN;
    uint64_t fp = regs->fp;
    unsigned n = 0;

    if (max > VPMU_PROFILE_MAX_DEPTH) {
        max = VPMU_PROFILE_MAX_DEPTH;
    }
    if (max == 0) {
        return 0;
    }
    pcs[n++] = regs->ip;
    while (n < max && read) {
        uint64_t frame[2];      /* [0] the caller's fp, [1] the return */

        if (fp == 0 || (fp & 7) || !in_half(fp, regs->user, regs->la57) ||
            read(opaque, fp, frame, sizeof(frame)) < 0) {
            break;
        }
        if (frame[1] == 0 || !in_half(frame[1], regs->user, regs->la57)) {
            break;
        }
        pcs[n++] = frame[1];
        /* Strictly up the stack, within one stack: never a loop. */
        if (frame[0] <= fp || frame[0] - fp > span) {
            break;
        }
        fp = frame[0];
    }
    return n;
}

int vpmu_profile_entry_regs(const VpmuProfileRegs *regs, VpmuGuestRead read,
                            void *opaque, VpmuProfileRegs *user)
{
    uint64_t top = (regs->sp & ~(TASK_STACK_SIZE - 1)) + TASK_STACK_SIZE;
    uint64_t pt[PT_REGS_WORDS];

    if (regs->user || !in_half(regs->sp, false, regs->la57) ||
        top < TASK_STACK_SIZE) {
        return -ENOENT;
    }
    if (read(opaque, top - sizeof(pt), pt, sizeof(pt)) < 0) {
        return -EFAULT;
    }
    if ((pt[PT_REGS_CS] & SEL_RPL_MASK) != 3 ||
        (pt[PT_REGS_SS] & SEL_RPL_MASK) != 3 ||
        !(pt[PT_REGS_FLAGS] & RFLAGS_FIXED) ||
        pt[PT_REGS_IP] == 0 || !in_half(pt[PT_REGS_IP], true, regs->la57) ||
        !in_half(pt[PT_REGS_SP], true, regs->la57)) {
        return -ENOENT;
    }
    *user = (VpmuProfileRegs){
        .ip = pt[PT_REGS_IP],
        .fp = pt[PT_REGS_BP],
        .sp = pt[PT_REGS_SP],
        .user = true,
        .la57 = regs->la57,
    };
    return 0;
}
