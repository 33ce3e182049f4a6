/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The multiboot platform's C side (runtime.h): its command line and
 * kmain(), which multiboot.S calls: the runtime set up and self-tested,
 * then payload_main(), then the TAP plan.
 *
 * Everything is polled and single-threaded: the only interrupts are the
 * PMIs the tests provoke (NMI or VEC_PMI), the self-test's IPIs on the
 * same two paths and its one instruction breakpoint (#DB), and APIC
 * spurious interrupts; the 8259 PICs are masked so the PIT cannot fire
 * into exception vectors.
 */
#include "runtime.h"

#define MB_BOOT_MAGIC   0x2BADB002u
#define MB_INFO_CMDLINE (1u << 2)

static char cmdline[256];

void cmdline_init(uint32_t magic, uint32_t mbi)
{
    const uint32_t *info = (const uint32_t *)mbi;

    if (magic != MB_BOOT_MAGIC || !(info[0] & MB_INFO_CMDLINE)) {
        return;
    }
    const char *s = (const char *)info[4];
    size_t n = 0;
    while (s[n] && n < sizeof(cmdline) - 1) {
        cmdline[n] = s[n];
        n++;
    }
    cmdline[n] = 0;
}

static bool parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    unsigned base = 10;

    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }
    if (!*s || *s == ' ') {
        return false;
    }
    for (; *s && *s != ' '; s++) {
        unsigned d;
        if (*s >= '0' && *s <= '9') {
            d = *s - '0';
        } else if (base == 16 && (*s | 0x20) >= 'a' && (*s | 0x20) <= 'f') {
            d = (*s | 0x20) - 'a' + 10;
        } else {
            return false;
        }
        v = base == 16 ? v << 4 | d : v * 10 + d;
    }
    *out = v;
    return true;
}

/* "key=value" among space-separated words; QEMU puts the kernel path first. */
uint64_t cmdline_u64(const char *key, uint64_t dflt)
{
    for (const char *w = cmdline; *w; ) {
        const char *k = key, *p = w;
        while (*k && *p == *k) {
            k++;
            p++;
        }
        uint64_t v;
        if (!*k && *p == '=' && parse_u64(p + 1, &v)) {
            return v;
        }
        while (*w && *w != ' ') {
            w++;
        }
        while (*w == ' ') {
            w++;
        }
    }
    return dflt;
}

/* ---- entry -------------------------------------------------------------- */

void kmain(uint32_t magic, uint32_t mbi);

void kmain(uint32_t magic, uint32_t mbi)
{
    serial_init();
    cmdline_init(magic, mbi);
    traps_init();
    outb(0x21, 0xFF);           /* mask both 8259s: the PIT would */
    outb(0xA1, 0xFF);           /* otherwise fire into vector 8 */
    apic_init();
    asm volatile("sti");        /* fixed-vector PMIs need IF = 1 */
    putstr("TAP version 13\n");
    tap_diag("cmdline: %s", cmdline);
    runtime_selftest();
    rf_selftest();
    payload_main();
    tap_done();
}
