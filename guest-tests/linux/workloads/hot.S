/*
 * hot: the perf record workload.  Almost every instruction retires inside
 * the one function hot_loop, which keeps its symbol (the binary is not
 * stripped), so perf report can attribute samples to it.  Built with
 * -DN=<iterations>.
 *
 * instructions:u = 2N + 6
 *     _start:   call hot_loop                1
 *     hot_loop: mov $N,%ecx                  1
 *               dec %ecx; jnz 1b             2N
 *               ret                          1
 *     _start:   mov $60,%eax; xor; syscall   3
 * of which 2N + 2 are in hot_loop (with N = 5000000: 99.9998%).
 *
 * branches:u = N + 3  (call, N x jnz, ret, syscall; see loop.S)
 */
#ifndef N
#error "build with -DN=<iterations>"
#endif

	.text
	.globl	_start
	.type	_start, @function
_start:
	call	hot_loop
	mov	$60, %eax		/* SYS_exit */
	xor	%edi, %edi
	syscall
	.size	_start, . - _start

	.globl	hot_loop
	.type	hot_loop, @function
hot_loop:
	mov	$N, %ecx
1:	dec	%ecx
	jnz	1b
	ret
	.size	hot_loop, . - hot_loop

	.section .note.GNU-stack, "", @progbits
