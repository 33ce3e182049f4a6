/*
 * cloop: a loop of N iterations in a static glibc program (gcc -O1
 * -static -DN=<iterations>): cloop_1M, cloop_2M.
 *
 * Not derivable by hand as a whole: glibc's static start-up and exit run
 * some 15,000 instructions at CPL 3 before and after the loop, among them
 * a few dozen CPUIDs (init_cpu_features(), the cache sizes), which KVM
 * retires itself (workloads/cpuid.S).  They are the same from one run to
 * the next for the same binary, environment, CPUID and stack layout;
 * stat-exact runs it with an empty environment and without address-space
 * randomisation (glibc's strlen of a string the kernel put on the stack
 * takes a longer path near a page's end).  The loop is exactly 2N instructions and N
 * branches, so cloop_2M - cloop_1M is 2,000,000 and 1,000,000:
 *     dec  %0        N
 *     jnz  1b        N   (a retired branch, taken or not)
 * guest-tests/nested compares the absolute counts across L2's PMUs (KVM's
 * own vPMU, vpmu): that is where the CPUIDs count or not.
 */
#ifndef N
#error "build with -DN=<iterations>"
#endif

int main(void)
{
    unsigned long n = N;

    __asm__ volatile("1:\tdec %0\n\tjnz 1b" : "+r"(n));
    return 0;
}
