/*
 * papi-mmm EVENT M: count PAPI preset EVENT around one call of mmm(M),
 * PAPI's own store test workload written out in assembly, and print
 * "EVENT M COUNT".  tests/papi.sh runs it for two M: the difference is
 * mmm's alone (PAPI's instructions between start and stop cancel).
 *
 * PAPI 7.0's validation test papi_sr_ins (papi-examples) counts
 * PAPI_SR_INS around naive_matrix_multiply() of validation_tests/
 * matrix_multiply.c, 512 x 512 doubles, and compares it with
 * naive_matrix_multiply_estimated_stores(), 3 * 512^2 + 1 = 786,433:
 * one store per a[i][j] and b[i][j] in the setup loop, one per c[i][j].
 * Built as PAPI's Makefile builds it (CFLAGS ... -O2, Debian bookworm's
 * gcc 12.2), the setup loop is vectorised (from gcc 12, -O2 has
 * -ftree-loop-vectorize, with the very-cheap cost model): each MOVAPS
 * stores two doubles, one retired store instruction, so the setup has
 * 512^2 stores, not 2 * 512^2 (docs/rr-papi-events.md).
 * mmm() below is gcc 12.2's code for naive_matrix_multiply() (objdump -d
 * of matrix_multiply.o), with the size a parameter (row bytes in R11,
 * matrix bytes in RBP instead of immediates, C's address reloaded for
 * the sum) and without the printf of its non-quiet path.  Its memory
 * instructions are gcc's, one for one.
 *
 * One call of mmm(M), M a multiple of 4 (M <= 512):
 *   stores  2M^2 + 3:  PUSH x3; MOVAPS x4 per 4 j of the setup (M^2);
 *                      MOVSD c[i][j] (M^2); the caller's CALL adds 1.
 *                      PAPI's estimate: 3M^2 + 1.
 *   loads   2M^3 + M^2 + 7:  MOVDQA x3 (constants); MOVSD a[i][k] and
 *                      MULSD b[k][j] per k (2M^3); ADDSD c[i][j] (M^2);
 *                      POP x3; RET.  PAPI's estimate: 2M^3 + M^2.
 *   instructions  7M^3 + 16M^2 + 24M + 26, and the CALL: prologue 11;
 *                      setup M(10 + 22 M/4); multiply 7 + 9M + 8M^2 +
 *                      7M^3; sum 4 + M(5 + 5M/2); epilogue 4.
 * For M = 512: 524,291 stores (524,292 with the call), where PAPI
 * estimates 786,433.
 */
#include <papi.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXM 512

/* The matrices, M x M each (row stride 8M), 16-byte aligned for MOVAPS. */
double mmm_a[MAXM * MAXM] __attribute__((aligned(16)));
double mmm_b[MAXM * MAXM] __attribute__((aligned(16)));
double mmm_c[MAXM * MAXM] __attribute__((aligned(16)));

double mmm(long m);

asm(".section .rodata\n"
    ".balign 16\n"
    "mmm_0123: .long 0, 1, 2, 3\n"
    "mmm_4: .long 4, 4, 4, 4\n"
    "mmm_5: .long 5, 5, 5, 5\n"
    ".text\n"
    ".globl mmm\n"
    ".type mmm, @function\n"
    "mmm:\n"
    "push %r12\n"                       /* store */
    "push %rbp\n"                       /* store */
    "push %rbx\n"                       /* store */
    "lea 0(,%rdi,8), %r11\n"            /* R11: row bytes, 8M */
    "mov %rdi, %r9\n"
    "movdqa mmm_4(%rip), %xmm5\n"       /* load */
    "movdqa mmm_5(%rip), %xmm4\n"       /* load */
    "movdqa mmm_0123(%rip), %xmm6\n"    /* load */
    "lea mmm_a(%rip), %rdx\n"           /* &a[i][0] */
    "lea mmm_b(%rip), %rcx\n"           /* &b[i][0] */
    "xor %esi, %esi\n"                  /* i */
    /* Setup: a[i][j] = i * j, b[i][j] = i / (j + 5), 4 j an iteration. */
    "1: pxor %xmm2, %xmm2\n"
    "xor %eax, %eax\n"                  /* 8j */
    "movdqa %xmm6, %xmm3\n"             /* j .. j+3 */
    "cvtsi2sd %esi, %xmm2\n"
    "unpcklpd %xmm2, %xmm2\n"           /* i, i */
    "2: movdqa %xmm3, %xmm0\n"
    "paddd %xmm5, %xmm3\n"
    "cvtdq2pd %xmm0, %xmm1\n"
    "mulpd %xmm2, %xmm1\n"
    "movaps %xmm1, (%rdx,%rax,1)\n"     /* store a[i][j], a[i][j+1] */
    "pshufd $0xee, %xmm0, %xmm1\n"
    "paddd %xmm4, %xmm0\n"
    "cvtdq2pd %xmm1, %xmm1\n"
    "mulpd %xmm2, %xmm1\n"
    "cvtdq2pd %xmm0, %xmm7\n"
    "pshufd $0xee, %xmm0, %xmm0\n"
    "cvtdq2pd %xmm0, %xmm0\n"
    "movaps %xmm1, 0x10(%rdx,%rax,1)\n" /* store a[i][j+2], a[i][j+3] */
    "movapd %xmm2, %xmm1\n"
    "divpd %xmm7, %xmm1\n"
    "movaps %xmm1, (%rcx,%rax,1)\n"     /* store b[i][j], b[i][j+1] */
    "movapd %xmm2, %xmm1\n"
    "divpd %xmm0, %xmm1\n"
    "movaps %xmm1, 0x10(%rcx,%rax,1)\n" /* store b[i][j+2], b[i][j+3] */
    "add $0x20, %rax\n"
    "cmp %r11, %rax\n"
    "jne 2b\n"
    "add $1, %esi\n"
    "add %r11, %rdx\n"
    "add %r11, %rcx\n"
    "cmp %r9d, %esi\n"
    "jne 1b\n"
    /* Multiply: c[i][j] = sum over k of a[i][k] * b[k][j], j outermost. */
    "mov %r11, %rbp\n"
    "imul %rdi, %rbp\n"                 /* RBP: matrix bytes, 8M^2 */
    "lea mmm_a(%rip), %r12\n"
    "lea mmm_c(%rip), %rbx\n"           /* &c[0][j] */
    "lea (%rbx,%r11), %r10\n"           /* &c[0][M]: j's end */
    "lea mmm_b(%rip), %rcx\n"
    "add %rbp, %rcx\n"                  /* &b[M][j]: k's end */
    "3: mov %r12, %rdi\n"               /* &a[i][0] */
    "mov %rbx, %rsi\n"                  /* &c[i][j] */
    "lea (%rbx,%rbp), %r9\n"            /* &c[M][j]: i's end */
    "mov %rcx, %r8\n"
    "sub %rbp, %r8\n"                   /* &b[0][j] */
    "4: mov %r8, %rax\n"                /* &b[k][j] */
    "mov %rdi, %rdx\n"                  /* &a[i][k] */
    "pxor %xmm1, %xmm1\n"               /* s */
    "5: movsd (%rdx), %xmm0\n"          /* load a[i][k] */
    "mulsd (%rax), %xmm0\n"             /* load b[k][j] */
    "add %r11, %rax\n"
    "add $8, %rdx\n"
    "addsd %xmm0, %xmm1\n"
    "cmp %rcx, %rax\n"
    "jne 5b\n"
    "movsd %xmm1, (%rsi)\n"             /* store c[i][j] */
    "add %r11, %rsi\n"
    "add %r11, %rdi\n"
    "cmp %r9, %rsi\n"
    "jne 4b\n"
    "add $8, %rbx\n"
    "lea 8(%rax), %rcx\n"
    "cmp %r10, %rbx\n"
    "jne 3b\n"
    /* Sum: s = sum of c[i][j], two j an iteration. */
    "lea mmm_c(%rip), %r8\n"            /* &c[i][0] */
    "lea (%r8,%rbp), %rdx\n"
    "add %r11, %rdx\n"                  /* the end of row M: i's end */
    "pxor %xmm0, %xmm0\n"
    "6: mov %r8, %rax\n"
    "7: addsd (%rax), %xmm0\n"          /* load c[i][j] */
    "add $0x10, %rax\n"
    "addsd -8(%rax), %xmm0\n"           /* load c[i][j+1] */
    "cmp %r10, %rax\n"
    "jne 7b\n"
    "lea (%rax,%r11), %r10\n"           /* the end of row i+1 */
    "add %r11, %r8\n"
    "cmp %r10, %rdx\n"
    "jne 6b\n"
    "pop %rbx\n"                        /* load */
    "pop %rbp\n"                        /* load */
    "pop %r12\n"                        /* load */
    "ret\n"                             /* load */
    ".size mmm, . - mmm\n");

int main(int argc, char **argv)
{
    int set = PAPI_NULL, r;
    long long count = 0;
    double s;
    long m;

    if (argc != 3 || (m = atol(argv[2])) < 4 || m > MAXM || m % 4) {
        fprintf(stderr, "usage: papi-mmm EVENT M (M a multiple of 4, "
                "4 to %d)\n", MAXM);
        return 2;
    }
    r = PAPI_library_init(PAPI_VER_CURRENT);
    if (r != PAPI_VER_CURRENT) {
        fprintf(stderr, "PAPI_library_init: %s\n", PAPI_strerror(r));
        return 1;
    }
    if ((r = PAPI_create_eventset(&set)) != PAPI_OK ||
        (r = PAPI_add_named_event(set, argv[1])) != PAPI_OK ||
        (r = PAPI_start(set)) != PAPI_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], PAPI_strerror(r));
        return 1;
    }
    s = mmm(m);
    if ((r = PAPI_stop(set, &count)) != PAPI_OK) {
        fprintf(stderr, "PAPI_stop: %s\n", PAPI_strerror(r));
        return 1;
    }
    printf("%s %ld %lld (sum %g)\n", argv[1], m, count, s);
    return 0;
}
