/*
 * The payloads' self-test, run before any PMU check: the harness (traps,
 * both PMI paths) and the CPU behaviour the checks and Linux's perf tests
 * rely on.
 */
#include "runtime.h"

#define APIC_ID         0x020
#define APIC_ICR_LO     0x300
#define APIC_ICR_HI     0x310
#define ICR_SELF        (1u << 18)  /* destination shorthand 01b */

/* SDM Vol. 3B, "Debug Registers": DR7.L0 enables DR0 locally; R/W0 and
 * LEN0 (bits 16-19) = 0 make it an instruction breakpoint. */
#define DR7_L0          (1u << 0)

/* Recoverable #UD and #GP, and both PMI paths driven by an IPI to self:
 * proves the harness before any PMU check depends on it. */
void runtime_selftest(void)
{
    uint32_t sel = 0x30;        /* one past multiboot.S's GDT: #GP(0x30) */

    fault_vector = 0;
    asm volatile("1: ud2\n2:\n" EXTABLE("1b", "2b") ::: "memory");
    tap_check(fault_vector == VEC_UD, "runtime: #UD recovered (%s)",
              fault_vector == VEC_UD ? "UD2" : "no fault");
    fault_vector = 0;
    asm volatile("1: mov %0, %%ds\n2:\n" EXTABLE("1b", "2b")
                 : : "r"(sel) : "memory");
    tap_check(fault_vector == VEC_GP, "runtime: #GP recovered (bad selector)");

    pmi_reset();
    apic_write(APIC_ICR_HI, 0);
    apic_write(APIC_ICR_LO, ICR_SELF | VEC_PMI);
    pmi_settle();
    tap_check(pmi_fixed == 1 && pmi_nmis == 0,
              "runtime: self-IPI to vector 0x%x taken once (%u)", VEC_PMI,
              pmi_fixed);
    apic_write(APIC_ICR_HI, apic_read(APIC_ID) & 0xFF000000u);
    apic_write(APIC_ICR_LO, APIC_LVT_NMI);  /* NMI, physical, to own ID */
    pmi_settle();
    tap_check(pmi_nmis == 1, "runtime: NMI IPI to self taken once (%u)",
              pmi_nmis);
    tap_check(!(irq_eflags & EFLAGS_RF), "runtime: the NMI pushed RF = 0"
              " (EFLAGS 0x%x)", irq_eflags);
    pmi_reset();
}

extern const char rf_bp[];

/*
 * An interrupt taken at an instruction with an instruction breakpoint:
 * the interrupt comes first, pushes RF as it is (0; only faults push
 * RF = 1), and the breakpoint fires after IRET (SDM Vol. 3A, "Priority
 * Among Concurrent Exceptions and Interrupts" and "Resume Flag (RF)").
 * Linux's perf test "Breakpoint overflow sampling" loses a breakpoint
 * otherwise.  The self-IPI is pending under CLI; STI delays it by one
 * instruction, so it arrives at rf_bp.
 */
void rf_selftest(void)
{
    pmi_reset();
    irq_eip = irq_eflags = db_hits = db_eip = 0;
    asm volatile("cli\n"
                 "mov %0, %%dr0\n"
                 "mov %1, %%dr7\n"
                 : : "r"(rf_bp), "r"(DR7_L0) : "memory");
    apic_write(APIC_ICR_HI, 0);
    apic_write(APIC_ICR_LO, ICR_SELF | VEC_PMI);
    asm volatile("sti\n"
                 "nop\n"
                 ".globl rf_bp\n"
                 "rf_bp: nop\n"
                 "mov %0, %%dr7\n"
                 : : "r"(0) : "memory");
    tap_check(pmi_fixed == 1 && irq_eip == (uint32_t)rf_bp &&
              !(irq_eflags & EFLAGS_RF), "runtime: an interrupt at a"
              " breakpoint pushed RF = 0 (%u taken, EIP 0x%x, EFLAGS 0x%x)",
              pmi_fixed, irq_eip, irq_eflags);
    tap_check(db_hits == 1 && db_eip == (uint32_t)rf_bp, "runtime: the"
              " breakpoint fired once after IRET (%u, EIP 0x%x)", db_hits,
              db_eip);
    pmi_reset();
}
