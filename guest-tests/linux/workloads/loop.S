/*
 * loop: a user-space loop whose retired instruction and branch counts can be
 * derived by hand.  Built once per iteration count, with -DN=<iterations>
 * (N >= 1): loop_1M, loop_10M, loop_100M.  Static, -nostdlib: the first user
 * instruction the kernel returns to is _start, and SYS_exit ends the task, so
 * nothing else runs at CPL 3 in this process.
 *
 * instructions:u = 2N + 4
 *     mov $N,%ecx        1
 *     dec %ecx           N
 *     jnz 1b             N   (N-1 taken, 1 not taken)
 *     mov $60,%eax       1
 *     xor %edi,%edi      1
 *     syscall            1   (starts at CPL 3, so it counts as user; the
 *                             kernel's exit path never returns)
 *
 * branches:u = N + 1
 *     jnz                N   (taken or not, a Jcc is a retired branch)
 *     syscall            1   (Intel's architectural "branch instructions
 *                             retired", 0xC4/0x00, counts far branches too;
 *                             AMD's "retired branch instructions", 0xC2,
 *                             likewise.  A CPL-changing instruction counts at
 *                             the CPL it starts at.)
 *
 * A counter that excluded far branches would read N.  stat-exact asserts
 * N + 1 and prints the value on a diagnostic line either way.  The page fault
 * on the first fetch of _start is not counted: a faulting instruction does not
 * retire.  (Some real CPUs count it once more; an exact vPMU does not.)
 */
#ifndef N
#error "build with -DN=<iterations>"
#endif

	.text
	.globl	_start
	.type	_start, @function
_start:
	mov	$N, %ecx
1:	dec	%ecx
	jnz	1b
	mov	$60, %eax		/* SYS_exit */
	xor	%edi, %edi
	syscall
	.size	_start, . - _start

	.section .note.GNU-stack, "", @progbits
