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
 * x86-64 with 4-level paging: user addresses below 2^47, kernel ones
 * from 0xffff800000000000 (SDM Vol. 1 3.3.7.1, canonical addressing).
 * With 5-level paging the halves are wider; a chain in the extra range
 * stops early, never wrongly.
 */
#define USER_TOP          0x0000800000000000ull
#define KERNEL_BOTTOM     0xffff800000000000ull

/*
 * The most one frame may be above the previous one: a user frame within
 * a default 8 MiB stack, a kernel frame within its 16 KiB task stack
 * (THREAD_SIZE with KASAN off) or an IRQ stack; the kernel's own unwinder
 * stops at a stack switch as well.
 */
#define USER_FRAME_SPAN   (8ull << 20)
#define KERNEL_FRAME_SPAN (16ull << 10)

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

static bool in_half(uint64_t addr, bool user)
{
    return user ? addr < USER_TOP : addr >= KERNEL_BOTTOM;
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

        if (fp == 0 || (fp & 7) || !in_half(fp, regs->user) ||
            read(opaque, fp, frame, sizeof(frame)) < 0) {
            break;
        }
        if (frame[1] == 0 || !in_half(frame[1], regs->user)) {
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
