/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The KVM payloads' side of the harness protocol (proto.h), and the vmm
 * platform's console and exit (guest-tests/runtime/runtime.h, vmm.S):
 * guest text to PROTO_PORT_TEXT, checks and the end through the mailbox.
 */
#include "guest.h"

static ProtoMbox mbox;

static inline void outl(uint16_t port, uint32_t v)
{
    __asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port) : "memory");
}

void console_putc(char c)
{
    outb(PROTO_PORT_TEXT, (uint8_t)c);
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

/* Only a bail-out (runtime.c's trap()) ends a payload this way. */
void platform_exit(uint32_t code)
{
    if (code) {
        guest_check("no unexpected exception or interrupt", 0, code, 0);
    }
    guest_done();
    for (;;) {
        __asm__ volatile("cli; hlt");
    }
}

void guest_init(void)
{
    traps_init();
    /* A software-disabled APIC forces every LVT entry masked. */
    apic_write(APIC_SVR, APIC_SVR_ENABLE | VEC_SPURIOUS);
}
