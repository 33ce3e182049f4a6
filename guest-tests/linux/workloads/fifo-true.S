/*
 * fifo-true: true(1) that first makes itself SCHED_FIFO, priority 1.
 * perf-test.sh puts it first in PATH for perf's "Number of exit events of
 * a simple workload" on one CPU, whose workload is "true": between the
 * exiting workload's EXIT record (which wakes perf) and its SIGCHLD, perf
 * must not get the CPU, or it spends its 1000 polls before the signal
 * comes (tests/perf-test.sh says more).  A SCHED_FIFO task is not
 * preempted by a SCHED_NORMAL one, so it finishes exiting first.
 * Static, -nostdlib; a failed sched_setscheduler is ignored (it is then
 * the plain true).
 */
	.text
	.globl	_start
	.type	_start, @function
_start:
	xor	%edi, %edi		/* pid 0: this task */
	mov	$1, %esi		/* SCHED_FIFO */
	lea	param(%rip), %rdx
	mov	$144, %eax		/* SYS_sched_setscheduler */
	syscall
	mov	$60, %eax		/* SYS_exit */
	xor	%edi, %edi
	syscall
	.size	_start, . - _start

	.section .rodata
	.align	4
param:
	.long	1			/* struct sched_param: sched_priority */

	.section .note.GNU-stack, "", @progbits
