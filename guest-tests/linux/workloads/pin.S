/*
 * pin: move to CPU 1, then a loop whose user instructions there can be
 * derived by hand, for the operator suite (guest-tests/operator): with
 * isolcpus=1 nothing else runs at CPL 3 on CPU 1, so its user
 * instructions grow by exactly this much.  Built with -DN=<iterations>.
 *
 * On CPU 0: sched_setaffinity(0, 8, {CPU 1}); the kernel migrates the
 * task inside the syscall, which returns on CPU 1.  If it fails, exit 1
 * (on CPU 0).  On CPU 1, instructions:u = 2N + 6:
 *     test %rax,%rax     1   (the syscall's result)
 *     jnz  fail          1   (not taken)
 *     mov $N,%ecx        1
 *     dec %ecx           N
 *     jnz 1b             N
 *     mov $60,%eax       1
 *     xor %edi,%edi      1
 *     syscall            1   (SYS_exit, counted at CPL 3)
 */
#ifndef N
#error "build with -DN=<iterations>"
#endif

	.text
	.globl	_start
	.type	_start, @function
_start:
	mov	$203, %eax		/* SYS_sched_setaffinity */
	xor	%edi, %edi		/* this task */
	mov	$8, %esi		/* sizeof(mask) */
	lea	mask(%rip), %rdx
	syscall
	test	%rax, %rax
	jnz	fail
	mov	$N, %ecx
1:	dec	%ecx
	jnz	1b
	mov	$60, %eax		/* SYS_exit */
	xor	%edi, %edi
	syscall
fail:
	mov	$60, %eax
	mov	$1, %edi
	syscall

	.section .rodata
	.balign	8
mask:	.quad	2			/* CPU 1 */
	.section .note.GNU-stack,"",@progbits
