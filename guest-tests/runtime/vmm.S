/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The vmm platform of the runtime (runtime.h): payloads of tests/kvm's
 * own VMM (vmm.c), which loads the flat image at PROTO_LOAD_GPA and
 * starts it at _start in 32-bit protected mode, paging off, with its
 * GDT (code 0x08, data 0x10, as traps_init() assumes) and no IDT.
 *
 * Handlers return without IRET: this host's nested KVM fails to emulate
 * a 32-bit IRET (KVM_INTERNAL_ERROR_EMULATION).  trap_return turns the
 * frame [eip][cs][eflags] into [eflags][eip] and does POPF; RET.  The
 * cost: an NMI handler that does not IRET leaves NMIs blocked, so each
 * run can take one NMI (every payload path needs at most one).
 */

#define STACK_TOP   0x80000         /* PROTO_STACK_GPA (tests/kvm/proto.h) */

    .section .text.start, "ax"
    .globl _start
_start:
    mov $STACK_TOP, %esp
    cld
    call payload_main
    /* payload_main ends with the harness's PROTO_DONE; stop if not. */
1:  cli
    hlt
    jmp 1b

    .macro trap_return
    push %eax
    mov 4(%esp), %eax           /* eip */
    xchg %eax, 12(%esp)         /* eflags <-> eip */
    mov %eax, 8(%esp)           /* cs slot <- eflags */
    pop %eax
    add $4, %esp                /* [eflags][eip] */
    popf
    ret
    .endm
#include "traps32.S"

    .section .note.GNU-stack, "", @progbits
