/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Guest runtime of the KVM payloads: entry, IDT, exception and PMI
 * handlers, and the mailbox calls to the harness (proto.h).
 */
#include "guest.h"

#define IDT_ENTRIES     256
#define IDT_GATE_INT32  0x8E00u     /* P=1, DPL=0, 32-bit interrupt gate */
#define VEC_NMI         2
#define VEC_GP          13

volatile uint32_t gp_count;
volatile uint32_t nmi_count;
volatile uint32_t irq_count;
volatile uint64_t nmi_status;
uint32_t nmi_status_msr;

static uint64_t idt[IDT_ENTRIES];
static ProtoMbox mbox;

int payload_main(void);

__asm__(".section .text.start, \"ax\"\n"
        ".globl _start\n"
        "_start:\n"
        "  mov $" "0x80000" ", %esp\n"
        "  call payload_main\n"
        "1: hlt\n"
        "  jmp 1b\n"
        ".text\n");

static inline void outb(uint16_t port, uint8_t v)
{
    __asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
    __asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port) : "memory");
}

void apic_write(uint32_t reg, uint32_t val)
{
    *(volatile uint32_t *)(APIC_BASE_GPA + reg) = val;
}

uint32_t apic_read(uint32_t reg)
{
    return *(volatile uint32_t *)(APIC_BASE_GPA + reg);
}

void guest_puts(const char *s)
{
    while (*s) {
        outb(PROTO_PORT_TEXT, (uint8_t)*s++);
    }
}

void guest_call(ProtoMbox *m)
{
    outl(PROTO_PORT_MBOX, (uint32_t)m);
}

static void copy_str(char *dst, const char *src, unsigned max)
{
    unsigned i = 0;

    for (; src && src[i] && i + 1 < max; i++) {
        dst[i] = src[i];
    }
    dst[i] = 0;
}

static void call(uint32_t cmd, uint32_t arg, const char *name, const char *why)
{
    mbox.cmd = cmd;
    mbox.arg = arg;
    copy_str(mbox.name, name, sizeof(mbox.name));
    copy_str(mbox.why, why, sizeof(mbox.why));
    guest_call(&mbox);
}

void guest_check(const char *name, int pass, uint64_t got, uint64_t expected)
{
    mbox.a = got;
    mbox.b = expected;
    call(PROTO_CHECK, pass != 0, name, 0);
}

void guest_skip(const char *name, const char *why)
{
    call(PROTO_SKIP, 0, name, why);
}

void guest_query(ProtoMbox *out)
{
    call(PROTO_QUERY, 0, 0, 0);
    *out = mbox;
}

void guest_feed(uint32_t event, uint64_t n)
{
    mbox.a = n;
    call(PROTO_FEED, event, 0, 0);
}

void guest_done(void)
{
    call(PROTO_DONE, 0, 0, 0);
}

/*
 * Handlers return without IRET: this host's nested KVM fails to emulate a
 * 32-bit IRET (KVM_INTERNAL_ERROR_EMULATION).  FRAME_RETURN turns the
 * frame [eip][cs][eflags] into [eflags][eip] and does POPF; RET.  The
 * cost: an NMI handler that does not IRET leaves NMIs blocked, so each
 * run can take one NMI (every payload path needs at most one).
 */
#define FRAME_RETURN                                                    \
    "  push %eax\n"                                                    \
    "  mov 4(%esp), %eax\n"                                            \
    "  xchg %eax, 12(%esp)\n"                                          \
    "  mov %eax, 8(%esp)\n"                                            \
    "  pop %eax\n"                                                     \
    "  add $4, %esp\n"                                                 \
    "  popf\n"                                                         \
    "  ret\n"

void gp_stub(void);
void nmi_stub(void);
void pmi_stub(void);
void unexpected_stub(void);
void nmi_c(void);
void pmi_c(void);
void unexpected_c(void);

/* #GP: count it, drop the error code, skip the 2-byte RDMSR/WRMSR/RDPMC. */
__asm__(".text\n"
        "gp_stub:\n"
        "  add $4, %esp\n"
        "  addl $2, (%esp)\n"
        "  incl gp_count\n"
        FRAME_RETURN
        "nmi_stub:\n"
        "  pushal\n"
        "  cld\n"
        "  call nmi_c\n"
        "  popal\n"
        FRAME_RETURN
        "pmi_stub:\n"
        "  pushal\n"
        "  cld\n"
        "  call pmi_c\n"
        "  popal\n"
        FRAME_RETURN
        "unexpected_stub:\n"
        "  cld\n"
        "  call unexpected_c\n");

/* The PMI as NMI: record what the guest's PMI handler would look at. */
void nmi_c(void)
{
    uint64_t v = 0;

    rdmsr_safe(nmi_status_msr, &v);
    nmi_status = v;
    nmi_count++;
}

void pmi_c(void)
{
    irq_count++;
    apic_write(APIC_EOI, 0);
}

void unexpected_c(void)
{
    guest_check("no unexpected exception or interrupt", 0, 0, 0);
    guest_done();
    for (;;) {
        __asm__ volatile("cli; hlt");
    }
}

static void set_gate(unsigned vec, void *handler)
{
    uint32_t h = (uint32_t)handler;

    idt[vec] = (uint64_t)(h & 0xFFFF) | (uint64_t)PROTO_SEL_CODE << 16 |
               (uint64_t)IDT_GATE_INT32 << 32 |
               (uint64_t)(h >> 16) << 48;
}

void guest_init(void)
{
    struct __attribute__((packed)) {
        uint16_t limit;
        uint32_t base;
    } idtr = { sizeof(idt) - 1, (uint32_t)idt };

    for (unsigned i = 0; i < IDT_ENTRIES; i++) {
        set_gate(i, (void *)unexpected_stub);
    }
    set_gate(VEC_NMI, (void *)nmi_stub);
    set_gate(VEC_GP, (void *)gp_stub);
    set_gate(PMI_VECTOR, (void *)pmi_stub);
    __asm__ volatile("lidt %0" : : "m"(idtr));
    /* A software-disabled APIC forces every LVT entry masked. */
    apic_write(APIC_SVR, APIC_SVR_ENABLE | 0xFF);
}
