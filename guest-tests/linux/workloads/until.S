/*
 * until: loops in chunks of N iterations until a file exists, then exits
 * with the number of chunks it ran (k, 1..255) as its status.  migrate-kvm
 * (guest-tests/nested) runs it under perf stat: it first asks L1 for a live
 * migration ("VPMU-L1 migrate" on stdout, written once the counters are on),
 * and the test's shell creates UNTIL_PATH when L1 answers that the
 * migration is over.  So the migration always falls inside the counted run,
 * however long it takes, and the counts stay exact by formula.  Built with
 * -DN=<iterations per chunk>; static, -nostdlib, like loop.S.
 *
 * instructions:u = k(2N + 8) + 9
 *     lea; mov; mov; mov; syscall (write)      5
 *     xor %ebx,%ebx                            1
 *   each chunk:
 *     mov $N,%ecx                              1
 *     dec %ecx; jnz 1b                         2N
 *     inc; mov; lea; xor; syscall (access)     5
 *     test %eax,%eax; jnz chunk                2
 *     mov %ebx,%edi; mov $60,%eax; syscall     3
 *
 * branches:u = k(N + 2) + 2
 *     the write syscall, N x jnz 1b, the access syscall and jnz chunk per
 *     chunk, the exit syscall (syscall counts as a branch: see loop.S).
 *
 * The exit status is k modulo 256: a run of 256 chunks or more (minutes)
 * makes the formula disagree, which the test reports.
 */
#ifndef N
#error "build with -DN=<iterations per chunk>"
#endif

	.text
	.globl	_start
	.type	_start, @function
_start:
	lea	msg(%rip), %rsi
	mov	$1, %edi		/* stdout */
	mov	$msg_len, %edx
	mov	$1, %eax		/* SYS_write */
	syscall
	xor	%ebx, %ebx		/* k = 0 */
chunk:
	mov	$N, %ecx
1:	dec	%ecx
	jnz	1b
	inc	%ebx
	mov	$21, %eax		/* SYS_access(path, F_OK) */
	lea	path(%rip), %rdi
	xor	%esi, %esi
	syscall
	test	%eax, %eax		/* -ENOENT: not yet */
	jnz	chunk
	mov	%ebx, %edi
	mov	$60, %eax		/* SYS_exit */
	syscall
	.size	_start, . - _start

	.section .rodata
msg:	.ascii	"VPMU-L1 migrate\n"
	.set	msg_len, . - msg
path:	.asciz	"/tmp/until.answered"

	.section .note.GNU-stack, "", @progbits
