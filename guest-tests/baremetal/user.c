/*
 * CPL 3 for the payloads: a TSS (the stack a trap from CPL 3 lands on),
 * user code and data segments (multiboot.S's GDT), a DPL 3 trap gate that
 * brings the payload back to CPL 0, CR4.PCE for RDPMC at CPL 3, and
 * measure_user(), the user-mode twin of measure_loop() (measure.h).
 */
#include "measure.h"

#define KERNEL_CS       0x08
#define KERNEL_DS       0x10
#define TSS_SEL         0x28
#define TSS_GDT_INDEX   (TSS_SEL / 8)
#define TSS_SIZE        104             /* SDM Vol. 3A Figure 9-2 */
#define CR4_PCE         (1u << 8)       /* RDPMC at any CPL */
#define VEC_USER_RET    0x80            /* measure_user's INT */

_Static_assert(offsetof(UserRead, before) == 8 &&
               offsetof(UserRead, after) == 16, "measure_user's offsets");

extern uint64_t gdt[];                  /* multiboot.S */
/* In measure_user's asm: its CPL 3 code is [user_code, user_return). */
extern const char user_code[], user_return[];

static uint32_t tss[TSS_SIZE / 4] __attribute__((aligned(8)));
static uint8_t kstack[1024] __attribute__((aligned(16)));
/* Used by name in measure_user's asm. */
uint8_t user_stack[1024] __attribute__((aligned(16)));
uint32_t user_ret_esp;

void user_init(void)
{
    static bool done;
    uint32_t base = (uint32_t)tss, off = (uint32_t)user_return, cr4;
    struct __attribute__((packed)) {
        uint16_t limit;
        uint32_t base;
    } idtr;
    uint64_t *idt;

    if (done) {
        return;
    }
    done = true;
    tss[1] = (uint32_t)(kstack + sizeof(kstack));   /* ESP0 */
    tss[2] = KERNEL_DS;                             /* SS0 */
    tss[25] = (uint32_t)TSS_SIZE << 16;     /* I/O map base: none */
    /* 32-bit available TSS (type 9), present, DPL 0, byte granular */
    gdt[TSS_GDT_INDEX] = (TSS_SIZE - 1) | (uint64_t)(base & 0xFFFFFF) << 16 |
                         0x89ull << 40 | (uint64_t)(base >> 24) << 56;
    asm volatile("ltr %w0" : : "r"(TSS_SEL));
    /* 32-bit trap gate (type 0xF: IF stays as it was), present, DPL 3 */
    asm volatile("sidt %0" : "=m"(idtr));
    idt = (uint64_t *)idtr.base;
    idt[VEC_USER_RET] = (off & 0xFFFF) | (KERNEL_CS << 16) |
                        ((uint64_t)0xEF00 << 32) |
                        ((uint64_t)(off & 0xFFFF0000u) << 32);
    asm volatile("mov %%cr4, %0" : "=r"(cr4));
    asm volatile("mov %0, %%cr4" : : "r"(cr4 | CR4_PCE));
}

/*
 * The instruction counts are derived in measure.h (measure_user): keep
 * in step.  ESI points to the UserRead, EDI holds msr_off; IRET to CPL 3
 * would null DS and ES (DPL 0), so the user segments go in first.
 */
int measure_user(uint32_t msr_on, uint64_t val_on, uint32_t msr_off,
                 UserRead *u)
{
    uint32_t a = (uint32_t)val_on, d = (uint32_t)(val_on >> 32), c = msr_on;

    user_init();
    fault_vector = 0;
    asm volatile("10: wrmsr\n"
                 "11: mov %%esp, user_ret_esp\n"
                 "mov %[uds], %%ecx\n"
                 "mov %%ecx, %%ds\n"
                 "mov %%ecx, %%es\n"
                 "push %[uds]\n"
                 "push $user_stack + %c[ssz]\n"
                 "pushf\n"
                 "push %[ucs]\n"
                 "push $2f\n"
                 "iret\n"
                 /* CPL 3 */
                 ".globl user_code\n"
                 "user_code:\n"
                 "2: mov (%%esi), %%ecx\n"
                 "rdpmc\n"
                 "mov %%eax, 8(%%esi)\n"
                 "mov %%edx, 12(%%esi)\n"
                 "mov 4(%%esi), %%ecx\n"
                 "3: dec %%ecx\n"
                 "jnz 3b\n"
                 "mov (%%esi), %%ecx\n"
                 "rdpmc\n"
                 "mov %%eax, 16(%%esi)\n"
                 "mov %%edx, 20(%%esi)\n"
                 "int %[vec]\n"
                 /* CPL 0, on the TSS's stack: back to the payload's */
                 ".globl user_return\n"
                 "user_return:\n"
                 "mov user_ret_esp, %%esp\n"
                 "mov %[kds], %%ecx\n"
                 "mov %%ecx, %%ds\n"
                 "mov %%ecx, %%es\n"
                 "mov %%edi, %%ecx\n"
                 "xor %%eax, %%eax\n"
                 "xor %%edx, %%edx\n"
                 "12: wrmsr\n"
                 "13:\n"
                 EXTABLE("10b", "11b")
                 EXTABLE("12b", "13b")
                 : "+a"(a), "+d"(d), "+c"(c)
                 : "S"(u), "D"(msr_off), [uds] "i"(USER_DS),
                   [ucs] "i"(USER_CS), [kds] "i"(KERNEL_DS),
                   [vec] "i"(VEC_USER_RET), [ssz] "i"(sizeof(user_stack))
                 : "memory", "cc");
    return (int)fault_vector;
}

bool pmi_in_user(void)
{
    return irq_eip >= (uint32_t)user_code && irq_eip < (uint32_t)user_return;
}
