/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The console and exit of the platforms QEMU boots (multiboot.S,
 * bios16.S): COM1, polled (../serial.h), and isa-debug-exit at port 0xF4,
 * where QEMU exits with status code * 2 + 1 (run.sh's explain()).
 */
#include "runtime.h"

#define DEBUG_EXIT_PORT 0xF4

void serial_init(void)
{
    outb(COM1 + 1, 0x00);       /* no interrupts: we poll */
    outb(COM1 + 3, 0x80);       /* DLAB */
    outb(COM1 + 0, 0x01);       /* 115200 baud */
    outb(COM1 + 1, 0x00);
    outb(COM1 + 3, 0x03);       /* 8N1 */
    outb(COM1 + 2, 0xC7);       /* FIFO on, cleared */
}

void console_putc(char c)
{
    putch(c);
}

void platform_exit(uint32_t code)
{
    asm volatile("outl %0, %1" : : "a"(code), "Nd"((uint16_t)DEBUG_EXIT_PORT));
    /* No isa-debug-exit device: stop here rather than run off. */
    for (;;) {
        asm volatile("cli; hlt");
    }
}
