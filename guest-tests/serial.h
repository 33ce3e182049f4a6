/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * COM1 output for the bare payloads (guest-tests/runtime/com1.c, the
 * console of the platforms QEMU boots): port I/O, polled, no interrupts.
 */
#ifndef VPMU_PAYLOAD_SERIAL_H
#define VPMU_PAYLOAD_SERIAL_H

#include <stdint.h>

#define COM1            0x3f8
#define COM_LSR         5               /* line status register */
#define COM_LSR_THRE    0x20            /* transmit holding register empty */

static inline void outb(uint16_t port, uint8_t v)
{
    asm volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
    uint8_t v;

    asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}

static inline void putch(char c)
{
    while (!(inb(COM1 + COM_LSR) & COM_LSR_THRE)) {
        /* wait for the transmitter */
    }
    outb(COM1, (uint8_t)c);
}

static inline void puts_(const char *s)
{
    while (*s) {
        putch(*s++);
    }
}

#endif /* VPMU_PAYLOAD_SERIAL_H */
