/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The multiboot platform of the runtime (runtime.h): multiboot v1
 * header, our own flat GDT (CPL 0 and CPL 3 segments, a TSS slot), a
 * stack, and traps32.S's stubs, returning with IRET.
 *
 * QEMU's multiboot loader (-kernel) enters _start in 32-bit protected mode,
 * paging off, interrupts off, EAX = 0x2BADB002 and EBX = the multiboot
 * information structure.  Its GDT lives in option-ROM memory we do not
 * own, so we load ours before touching segment registers.
 */

#define MB_MAGIC    0x1BADB002
#define MB_FLAGS    0x00000000      /* ELF image: no a.out kludge, no memory map */

#define KERNEL_CS   0x08
#define KERNEL_DS   0x10

    .section .multiboot, "a"
    .balign 4
    .long MB_MAGIC
    .long MB_FLAGS
    .long -(MB_MAGIC + MB_FLAGS)

    .text
    .globl _start
_start:
    cli
    lgdt gdt_desc
    ljmp $KERNEL_CS, $1f
1:  mov $KERNEL_DS, %ecx
    mov %ecx, %ds
    mov %ecx, %es
    mov %ecx, %fs
    mov %ecx, %gs
    mov %ecx, %ss
    mov $stack_top, %esp
    cld
    push %ebx                   /* multiboot info */
    push %eax                   /* multiboot magic */
    call kmain
    /* kmain exits through isa-debug-exit; if that device is missing, stop. */
2:  cli
    hlt
    jmp 2b

/* IRET also ends NMI blocking after the NMI handler, so the next PMI in
 * NMI mode can be delivered. */
    .macro trap_return
    iret
    .endm
#include "traps32.S"

    /* Writable: user.c fills in the TSS descriptor. */
    .data
    .balign 8
    .globl gdt
gdt:
    .quad 0                     /* null */
    .quad 0x00CF9A000000FFFF    /* 0x08: code, base 0, limit 4 GiB, DPL 0 */
    .quad 0x00CF92000000FFFF    /* 0x10: data, base 0, limit 4 GiB, DPL 0 */
    .quad 0x00CFFA000000FFFF    /* 0x18: code, base 0, limit 4 GiB, DPL 3 */
    .quad 0x00CFF2000000FFFF    /* 0x20: data, base 0, limit 4 GiB, DPL 3 */
    .quad 0                     /* 0x28: the TSS (user.c) */
gdt_end:
gdt_desc:
    .word gdt_end - gdt - 1
    .long gdt

    .section .bss
    .balign 16
stack:
    .skip 16384
stack_top:
