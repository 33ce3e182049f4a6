/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The 32-bit trap stubs of the runtime, included by the protected-mode
 * platforms (multiboot.S, vmm.S), which define the trap_return macro
 * first: every vector funnels into trap() in runtime.c.
 */

#define IDT_SEL_CODE    0x08    /* multiboot.S's GDT and the harness's */
#define IDT_GATE_INT32  0x8E00  /* P, DPL 0, 32-bit interrupt gate */

/*
 * traps_init(): an IDT whose vector n is a 32-bit interrupt gate to
 * trap_stubs + 16 * n (SDM Vol. 3A, "IDT Descriptors"): the offset's low
 * half and the selector in the low dword, its high half and the type in
 * the high one.  user.c finds the IDT with SIDT and adds a DPL 3 gate.
 */
    .text
    .globl traps_init
traps_init:
    push %ebx
    mov $trap_stubs, %eax
    xor %ecx, %ecx
1:  mov %eax, %ebx
    and $0xFFFF, %ebx
    or $(IDT_SEL_CODE << 16), %ebx
    mov %ebx, idt(, %ecx, 8)
    mov %eax, %ebx
    and $0xFFFF0000, %ebx
    or $IDT_GATE_INT32, %ebx
    mov %ebx, idt + 4(, %ecx, 8)
    add $16, %eax
    inc %ecx
    cmp $256, %ecx
    jb 1b
    lidt idt_desc
    pop %ebx
    ret

/*
 * One 16-byte stub per vector, so the IDT entry of vector n is
 * trap_stubs + 16 * n (traps_init).  Vectors whose exception
 * pushes an error code (8, 10-14, 17, 21, 29, 30) do not push the dummy
 * 0, so every frame has the same layout (struct trap_frame in runtime.h).
 * The largest stub, pushl $0 (2) + pushl $imm32 (5) + jmp rel32 (5),
 * fits in 16 bytes.
 */
    .balign 16
    .globl trap_stubs
trap_stubs:
    .set vec, 0
    .rept 256
    .balign 16
    .if (vec == 8) || ((vec >= 10) && (vec <= 14)) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30)
    .else
    pushl $0
    .endif
    pushl $vec
    jmp trap_common
    .set vec, vec + 1
    .endr

/*
 * Save the general registers, call trap(frame), restore, drop vector and
 * error code, return as the includer's trap_return macro says.  trap()
 * may rewrite frame->eip to resume after a faulting instruction.
 */
trap_common:
    pusha
    cld
    push %esp
    call trap
    add $4, %esp
    popa
    add $8, %esp
    trap_return


    .data
    .balign 8
idt_desc:
    .word 256 * 8 - 1
    .long idt

    .section .bss
    .balign 8
idt:
    .skip 256 * 8
    .text
