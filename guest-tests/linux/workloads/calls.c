/*
 * calls: main -> a -> b, with b's loop hot; the profile suite's program of
 * known call structure (gcc -O0 -fno-omit-frame-pointer -static -no-pie
 * -DN=<iterations>: -O0, so that the leaf calls_b has its frame too, which
 * gcc 12 leaves out at -O1 even with -mno-omit-leaf-frame-pointer).  a loops N times, then calls b, which loops 9N
 * times: of what main's subtree retires, b's own share is 18N / (20N + c),
 * c the dozen call, return and frame instructions, so 0.9 for large N:
 *     dec  %0        a: N, b: 9N
 *     jnz  1b        a: N, b: 9N
 * Frame pointers: each function's frame is [saved rbp, return address],
 * what a host profile walks.
 *
 * "calls sys": main -> calls_s instead, N / 10 getppid system calls made
 * with the syscall instruction itself (no libc frame between): a kernel
 * sample there has calls_s <- main as its task's user part.
 */
#ifndef N
#error "build with -DN=<iterations>"
#endif

__attribute__((noinline)) void calls_b(unsigned long n);
__attribute__((noinline)) void calls_a(unsigned long n);
__attribute__((noinline)) void calls_s(unsigned long n);

__attribute__((noinline)) void calls_b(unsigned long n)
{
    __asm__ volatile("1:\tdec %0\n\tjnz 1b" : "+r"(n));
}

__attribute__((noinline)) void calls_a(unsigned long n)
{
    unsigned long m = n;

    __asm__ volatile("1:\tdec %0\n\tjnz 1b" : "+r"(m));
    calls_b(9 * n);
}

/* SYSCALL clobbers RCX and R11 (SDM Vol. 2B); 110 is x86-64's getppid. */
__attribute__((noinline)) void calls_s(unsigned long n)
{
    unsigned long r;

    __asm__ volatile("1:\tmov $110, %%eax\n\tsyscall\n\tdec %0\n\tjnz 1b"
                     : "+r"(n), "=&a"(r) : : "rcx", "r11", "memory");
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 1) {
        calls_s(N / 10);
    } else {
        calls_a(N);
    }
    return 0;
}
