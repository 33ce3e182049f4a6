/*
 * cpuid: N CPUIDs at CPL 3, whose retired instruction and branch counts
 * can be derived by hand.  Built with -DN=<iterations> (N >= 1): cpuid_1k.
 * Static, -nostdlib, like loop.S: _start is the first user instruction,
 * SYS_exit the last.
 *
 * Under KVM, CPUID always exits and KVM retires it itself
 * (kvm_emulate_cpuid(), then kvm_skip_emulated_instruction()): it never
 * retires in guest mode, so a host event with exclude_host misses it, and
 * it never reaches userspace either.  KVM's own vPMU counts it on its PMCs
 * (kvm_pmu_trigger_event()); vpmu takes it from them (docs/kvm.md, issue
 * 24: a static glibc program runs a few dozen CPUIDs before main(), and
 * vpmu's instructions:u were that many short of KVM's vPMU).  Under TCG
 * it is an instruction like any other.
 *
 * instructions:u = 4N + 4
 *     mov $N,%esi        1
 *     xor %eax,%eax      N   (leaf 0)
 *     cpuid              N
 *     dec %esi           N
 *     jnz 1b             N   (N-1 taken, 1 not taken)
 *     mov $60,%eax       1
 *     xor %edi,%edi      1
 *     syscall            1
 *
 * branches:u = N + 1
 *     jnz                N
 *     syscall            1   (a far branch, as in loop.S)
 *
 * CPUID is not a branch.
 */
#ifndef N
#error "build with -DN=<iterations>"
#endif

	.text
	.globl	_start
	.type	_start, @function
_start:
	mov	$N, %esi
1:	xor	%eax, %eax
	cpuid
	dec	%esi
	jnz	1b
	mov	$60, %eax		/* SYS_exit */
	xor	%edi, %edi
	syscall
	.size	_start, . - _start

	.section .note.GNU-stack, "", @progbits
