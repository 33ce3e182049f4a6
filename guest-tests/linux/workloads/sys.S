/*
 * sys: N getppid system calls from a user-space loop, for a kernel-and-user
 * count whose kernel share is the kernel's own deterministic work (N system
 * call paths) rather than the timer interrupts that fall into the run, whose
 * number follows the host's speed.  Built with -DN=<calls> (N >= 1):
 * sys_100k.  Static, -nostdlib, like loop.S: nothing else runs at CPL 3 in
 * this process.
 *
 * instructions:u = 4N + 4
 *     mov $N,%ebx        1
 *     mov $110,%eax      N   (SYS_getppid)
 *     syscall            N   (starts at CPL 3: a user instruction)
 *     dec %ebx           N   (SYSCALL clobbers %rcx and %r11 only)
 *     jnz 1b             N
 *     mov $60,%eax       1
 *     xor %edi,%edi      1
 *     syscall            1   (SYS_exit never returns)
 *
 * branches:u = 2N + 1
 *     syscall            N + 1   (a far branch, counted at the CPL it starts
 *                                 at, as in loop.S)
 *     jnz                N
 *
 * SYSRET and IRET back to user mode start at CPL 0: kernel branches.
 */
#ifndef N
#error "build with -DN=<calls>"
#endif

	.text
	.globl	_start
	.type	_start, @function
_start:
	mov	$N, %ebx
1:	mov	$110, %eax		/* SYS_getppid */
	syscall
	dec	%ebx
	jnz	1b
	mov	$60, %eax		/* SYS_exit */
	xor	%edi, %edi
	syscall
	.size	_start, . - _start

	.section .note.GNU-stack, "", @progbits
