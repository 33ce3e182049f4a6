/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The bios16 platform of the runtime (runtime.h): a 64 KiB -bios image
 * in real mode, its C built gcc -m16.
 *
 * The image is mapped at F000:0000; ROM is read-only, so the entry copies
 * all 64 KiB to 1000:0000 and runs there with CS = DS = ES = SS = 0x1000,
 * the flat 64 KiB segment gcc -m16 code assumes.  Every IVT vector goes
 * to a stub that builds runtime.h's struct trap_frame for trap() and
 * copies its IP and FLAGS back into the 16-bit frame before IRET.  Then
 * serial_init(), payload_main(), tap_done(), which exits through
 * isa-debug-exit (com1.c).
 */
#define SEG             0x1000
#define STACK_TOP       0xf000      /* below the copied reset vector */

    .code16
    .section .text.entry, "ax"
    .globl start16
start16:
    cli
    cld
    xorw %si, %si
    xorw %di, %di
    movw $0xf000, %ax
    movw %ax, %ds
    movw $SEG, %ax
    movw %ax, %es
    movw $0x8000, %cx           /* 64 KiB in words */
    rep movsw
    ljmp $SEG, $1f
1:
    movw %cs, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movl $STACK_TOP, %esp
    movw $__bss_start, %di
    movw $__bss_end, %cx
    subw %di, %cx
    xorb %al, %al
    rep stosb
    /* IVT at 0000:0000: vector n -> SEG:trap_stubs16 + 16 * n */
    xorw %ax, %ax
    movw %ax, %fs
    xorw %bx, %bx
    movw $trap_stubs16, %ax
2:  movw %ax, %fs:(%bx)
    movw %cs, %fs:2(%bx)
    addw $16, %ax
    addw $4, %bx
    cmpw $1024, %bx
    jb 2b
    calll serial_init
    calll payload_main
    calll tap_done
3:  hlt
    jmp 3b

/* One 16-byte stub per vector; real mode pushes no error codes. */
    .balign 16
trap_stubs16:
    .set vec, 0
    .rept 256
    .balign 16
    pushl $vec
    jmp trap16_common
    .set vec, vec + 1
    .endr

/*
 * On entry: vector (4), then IP, CS, FLAGS (2 each) as the CPU pushed
 * them.  Below that goes a copy of the registers, then the 32-bit frame:
 * EFLAGS, CS, EIP zero-extended, error 0, vector, the registers again
 * (EAX restored from the copy).
 */
trap16_common:
    pushal                      /* regs(32) vec ip cs flags */
    movzwl 40(%esp), %eax       /* flags */
    pushl %eax
    movzwl 42(%esp), %eax       /* cs */
    pushl %eax
    movzwl 44(%esp), %eax       /* ip */
    pushl %eax
    pushl $0                    /* error */
    movl 48(%esp), %eax         /* the vector */
    pushl %eax
    movl 48(%esp), %eax         /* EAX from the copy (+20, EAX at +28) */
    pushal                      /* struct trap_frame */
    cld
    movl %esp, %eax
    pushl %eax
    calll trap
    addl $4, %esp
    popal
    movw 8(%esp), %ax           /* eip -> IP (the copy at +20) */
    movw %ax, 56(%esp)
    movw 16(%esp), %ax          /* eflags -> FLAGS */
    movw %ax, 60(%esp)
    addl $20, %esp
    popal
    addl $4, %esp               /* the vector */
    iret

    /* File offset size - 16: the reset vector (CS base 0xFFFF0000). */
    .section .reset, "ax"
    .globl reset_vector
reset_vector:
    ljmp $0xf000, $start16

    .section .note.GNU-stack, "", @progbits
