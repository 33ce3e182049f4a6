/*
 * Real-mode entry of the KVM vPMU test payload (a 64 KiB -bios image).
 *
 * The image is mapped at F000:0000; ROM is read-only, so the entry copies
 * all 64 KiB to 1000:0000 and runs there with CS = DS = ES = SS = 0x1000,
 * the flat 64 KiB segment gcc -m16 code assumes.  IVT vectors 2 (NMI) and
 * 13 (#GP) count into nmi_count and gp_count; #GP also skips the faulting
 * 2-byte instruction (WRMSR 0F 30, RDMSR 0F 32, RDPMC 0F 33), as real mode
 * pushes no error code.  main() returns the number of failures, written to
 * isa-debug-exit (iobase 0xf4): QEMU exits with status (n << 1) | 1.
 */
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
    movw $0x1000, %ax
    movw %ax, %es
    movw $0x8000, %cx           /* 64 KiB in words */
    rep movsw
    ljmp $0x1000, $1f
1:
    movw %cs, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movl $0xf000, %esp          /* below the copied reset vector */
    movw $__bss_start, %di
    movw $__bss_end, %cx
    subw %di, %cx
    xorb %al, %al
    rep stosb
    xorw %ax, %ax
    movw %ax, %fs
    movw $nmi_handler, %fs:(2 * 4)
    movw %cs, %fs:(2 * 4 + 2)
    movw $gp_handler, %fs:(13 * 4)
    movw %cs, %fs:(13 * 4 + 2)
    calll main
    movw $0xf4, %dx
    outl %eax, %dx
2:
    hlt
    jmp 2b

gp_handler:
    pushw %bp
    movw %sp, %bp
    addw $2, 2(%bp)             /* the saved IP: past the 2-byte insn */
    incl %cs:gp_count
    popw %bp
    iret

nmi_handler:
    incl %cs:nmi_count
    iret

    /* File offset size - 16: the reset vector (CS base 0xFFFF0000). */
    .section .reset, "ax"
    .globl reset_vector
reset_vector:
    ljmp $0xf000, $start16

    .section .note.GNU-stack, "", @progbits
