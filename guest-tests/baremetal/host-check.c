/*
 * host-check: run the payloads' check code on the host, against libvpmu
 * and its fake counting source, without QEMU.
 *
 *   host-check intel|amd [key=value ...]     (the payload's cmdline keys)
 *
 * It replaces the runtime (../runtime) and measure.c: RDMSR/WRMSR/RDPMC/
 * CPUID go to vpmu_pmu_*() the way the QEMU front end hands them over (-EINVAL -> #GP, -ENOENT -> the
 * MSR is not the PMU's: reads 0, writes ignored, as stock QEMU TCG does),
 * measure_block() feeds the fake source the block's instructions and
 * branches one at a time, and PMIs go through a model of LVTPC (masked
 * on delivery, a handler of HANDLER_INSNS instructions at CPL 0).
 * Cycles are counted as instructions (VpmuConfig.insn_cycles, QEMU's
 * pmu-cycles=insns): the fake source has no clock.
 *
 * So it checks that every hand-derived expectation in the payloads agrees
 * with the library (and the library with docs/msrs.md) before a guest
 * ever boots; a mismatch here is a bug in one of the two.  It does not
 * check the QEMU front end: that is what run.sh is for.
 */
#include "measure.h"
#include "events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vpmu/vpmu.h>

/* A PMI handler's instructions; the payload's is about this long. */
#define HANDLER_INSNS   40

volatile uint32_t pmi_nmis, pmi_fixed, fault_vector;

static VpmuPmu *pmu;
static VpmuFakeSource *fake;
static bool pmi_pending, vendor_amd;
/*
 * In the catalogue's blocks PMIs wait for the end of a translation block,
 * as under TCG (events.h): where that leaves the block, and where the
 * last PMI found it.
 */
static bool tb_ends_only;
static int next_site, pmi_site;
static uint32_t next_ecx, pmi_ecx;
static uint32_t lvtpc = APIC_LVT_MASKED | VEC_PMI;
/* The CPL the payload runs at (0, or 3 inside measure_user()); at a PMI. */
static unsigned cur_cpl, pmi_cpl;
static unsigned tap_count, tap_failed;
static char **keys;
static int nkeys;

static void retire(VpmuArchEvent event, uint64_t n);

static void on_pmi(void *opaque)
{
    (void)opaque;
    pmi_pending = true;         /* delivered after the vpmu call returns */
}

/* The local APIC's part: drop if LVTPC is masked, else deliver and mask. */
static void deliver_pmi(void)
{
    if (!pmi_pending) {
        return;
    }
    pmi_pending = false;
    if (lvtpc & APIC_LVT_MASKED) {
        return;
    }
    if ((lvtpc & 0x700) == APIC_LVT_NMI) {
        pmi_nmis++;
    } else {
        pmi_fixed++;
    }
    lvtpc |= APIC_LVT_MASKED;
    pmi_cpl = cur_cpl;
    pmi_site = next_site;
    pmi_ecx = next_ecx;
    retire(VPMU_EVENT_INSTRUCTIONS, HANDLER_INSNS);
}

/* One event at CPL 0; an instruction is a cycle too. */
static void run1(VpmuArchEvent event)
{
    vpmu_fake_source_run(fake, event, 0, cur_cpl, 1);
    if (event == VPMU_EVENT_INSTRUCTIONS) {
        vpmu_fake_source_run(fake, VPMU_EVENT_CYCLES, 0, cur_cpl, 1);
        vpmu_fake_source_run(fake, VPMU_EVENT_REF_CYCLES, 0, cur_cpl, 1);
    }
}

/*
 * Retire n events at the current CPL, one at a time, with PMIs in between (but in
 * a catalogue block: see tb_end()).
 */
static void retire(VpmuArchEvent event, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        run1(event);
        if (!tb_ends_only) {
            deliver_pmi();
        }
    }
}

/* A translation block ended; the next one starts at @site with @ecx. */
static void tb_end(int site, uint32_t ecx)
{
    next_site = site;
    next_ecx = ecx;
    deliver_pmi();
}

int pmi_mix_site(uint32_t *ecx)
{
    *ecx = pmi_ecx;
    return pmi_site;
}

static int to_vector(int ret)
{
    return ret == -EINVAL ? VEC_GP : 0;
}

void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
    memset(r, 0, 4 * sizeof(r[0]));
    if (leaf == 0) {            /* a max leaf QEMU models have, vendor */
        r[0] = 0xD;
        r[1] = vendor_amd ? 0x68747541u : 0x756E6547u;
        r[3] = vendor_amd ? 0x69746E65u : 0x49656E69u;
        r[2] = vendor_amd ? 0x444D4163u : 0x6C65746Eu;
    } else if (leaf == 0x80000000u) {
        r[0] = 0x8000001Eu;     /* EPYC's xlevel; vpmu raises it */
    }
    vpmu_pmu_cpuid(pmu, leaf, sub, r);
}

int rdmsr_safe(uint32_t msr, uint64_t *val)
{
    int ret = vpmu_pmu_rdmsr(pmu, msr, val);

    if (ret) {
        *val = 0;
    }
    deliver_pmi();
    return (int)(fault_vector = to_vector(ret));
}

int wrmsr_safe(uint32_t msr, uint64_t val)
{
    int ret = vpmu_pmu_wrmsr(pmu, msr, val);

    deliver_pmi();
    return (int)(fault_vector = to_vector(ret));
}

int rdpmc_safe(uint32_t ecx, uint64_t *val)
{
    int ret = vpmu_pmu_rdpmc(pmu, ecx, val);

    if (ret) {
        *val = 0;
    }
    return (int)(fault_vector = to_vector(ret));
}

uint64_t rdmsr(uint32_t msr)
{
    uint64_t v;

    rdmsr_safe(msr, &v);
    return v;
}

void wrmsr(uint32_t msr, uint64_t val)
{
    wrmsr_safe(msr, val);
}

/* The block of measure.c, instruction by instruction (measure.h). */
int measure_loop(uint32_t msr_on, uint64_t val_on, uint32_t msr_off,
                 uint32_t n)
{
    int vec = wrmsr_safe(msr_on, val_on);       /* counts itself */

    retire(VPMU_EVENT_INSTRUCTIONS, 1);         /* mov %esi, %ecx */
    for (unsigned i = 0; i < n; i++) {
        retire(VPMU_EVENT_INSTRUCTIONS, 1);     /* dec */
        run1(VPMU_EVENT_INSTRUCTIONS);
        retire(VPMU_EVENT_BRANCHES, 1);         /* jnz */
    }
    retire(VPMU_EVENT_INSTRUCTIONS, 3);         /* mov, xor, xor */
    int vec2 = wrmsr_safe(msr_off, 0);
    return vec ? vec : vec2;
}

bool pmi_in_user(void)
{
    return pmi_cpl == 3;
}

/* user.c's block, instruction by instruction (measure.h). */
int measure_user(uint32_t msr_on, uint64_t val_on, uint32_t msr_off,
                 UserRead *u)
{
    int vec = wrmsr_safe(msr_on, val_on);       /* counts itself */

    retire(VPMU_EVENT_INSTRUCTIONS, 10);        /* to the IRET */
    cur_cpl = 3;
    retire(VPMU_EVENT_INSTRUCTIONS, 1);         /* mov */
    rdpmc_safe(u->pmc, &u->before);             /* before it retires */
    retire(VPMU_EVENT_INSTRUCTIONS, 4);         /* rdpmc, mov x 3 */
    for (unsigned i = 0; i < u->n; i++) {
        retire(VPMU_EVENT_INSTRUCTIONS, 1);     /* dec */
        run1(VPMU_EVENT_INSTRUCTIONS);
        retire(VPMU_EVENT_BRANCHES, 1);         /* jnz */
    }
    retire(VPMU_EVENT_INSTRUCTIONS, 1);         /* mov */
    rdpmc_safe(u->pmc, &u->after);
    retire(VPMU_EVENT_INSTRUCTIONS, 4);         /* rdpmc, mov, mov, int */
    cur_cpl = 0;
    retire(VPMU_EVENT_INSTRUCTIONS, 7);         /* to the WRMSR */
    int vec2 = wrmsr_safe(msr_off, 0);
    return vec ? vec : vec2;
}

int measure_block(uint32_t msr_on, uint64_t val_on, uint32_t msr_off)
{
    return measure_loop(msr_on, val_on, msr_off, LOOP_N);
}

/*
 * The catalogue's blocks, as the fake source sees them: what each retires
 * in order (events.h).  The instructions and branches follow the blocks
 * instruction by instruction; the model-specific events are fed at the
 * instruction that retires them.
 */
static void mix_round(unsigned ecx)
{
    bool even = !(ecx & 1);

    retire(VPMU_EVENT_INSTRUCTIONS, 1);                 /* call */
    retire(VPMU_EVENT_BRANCHES, 1);
    retire(VPMU_EVENT_BR_TAKEN, 1);
    retire(VPMU_EVENT_BR_CALL, 1);
    retire(VPMU_EVENT_STORES, 1);
    tb_end(MIX_SITE_CALLEE, ecx);
    retire(VPMU_EVENT_INSTRUCTIONS, 3);                 /* mov, mov, add */
    retire(VPMU_EVENT_LOADS, 2);
    retire(VPMU_EVENT_STORES, 2);
    retire(VPMU_EVENT_INSTRUCTIONS, 1);                 /* ret */
    retire(VPMU_EVENT_BRANCHES, 1);
    retire(VPMU_EVENT_BR_TAKEN, 1);
    retire(VPMU_EVENT_BR_RET, 1);
    retire(VPMU_EVENT_LOADS, 1);
    tb_end(MIX_SITE_AFTER_CALL, ecx);
    retire(VPMU_EVENT_INSTRUCTIONS, 1);                 /* jmp */
    retire(VPMU_EVENT_BRANCHES, 1);
    retire(VPMU_EVENT_BR_TAKEN, 1);
    tb_end(MIX_SITE_TEST, ecx);
    retire(VPMU_EVENT_INSTRUCTIONS, 2);                 /* test, jz */
    retire(VPMU_EVENT_BRANCHES, 1);
    retire(VPMU_EVENT_BR_COND, 1);
    retire(even ? VPMU_EVENT_BR_TAKEN : VPMU_EVENT_BR_NTAKEN, 1);
    tb_end(even ? MIX_SITE_DEC : MIX_SITE_NOP, ecx);
    retire(VPMU_EVENT_INSTRUCTIONS, even ? 0 : 1);      /* nop */
}

/* dec; jnz, taken but the last time (@ecx: before the dec) */
static void retire_dec_jnz(uint32_t ecx)
{
    retire(VPMU_EVENT_INSTRUCTIONS, 2);
    retire(VPMU_EVENT_BRANCHES, 1);
    retire(VPMU_EVENT_BR_COND, 1);
    retire(ecx == 1 ? VPMU_EVENT_BR_NTAKEN : VPMU_EVENT_BR_TAKEN, 1);
    tb_end(ecx == 1 ? MIX_SITE_END : MIX_SITE_LOOP, ecx - 1);
}

/*
 * A block as the catalogue's asm has it: the counted WRMSR, MOV $N, N
 * rounds of @round (ECX from N down) each ending with DEC/JNZ, 3
 * instructions and the WRMSR that disables.
 */
static int fed_block(uint32_t msr, uint64_t val_on, unsigned n,
                     void (*round)(unsigned ecx))
{
    int vec = wrmsr_safe(msr, val_on);

    tb_ends_only = true;
    retire(VPMU_EVENT_INSTRUCTIONS, 1);                 /* mov $N, %ecx */
    for (unsigned ecx = n; ecx; ecx--) {
        round(ecx);
        retire_dec_jnz(ecx);
    }
    retire(VPMU_EVENT_INSTRUCTIONS, 3);
    tb_ends_only = false;
    next_site = MIX_SITE_NONE;
    int vec2 = wrmsr_safe(msr, 0);
    return vec ? vec : vec2;
}

/* LRET: a far branch, taken on AMD (ExRetBrnTkn counts far transfers). */
static void far_round(unsigned ecx)
{
    retire(VPMU_EVENT_INSTRUCTIONS, 3);                 /* push, push, lret */
    retire(VPMU_EVENT_BRANCHES, 1);
    retire(VPMU_EVENT_BR_FAR, 1);
    retire(VPMU_EVENT_BR_TAKEN, vendor_amd ? 1 : 0);
    tb_end(MIX_SITE_NONE, ecx);
}

int measure_mix(uint32_t msr, uint64_t val_on)
{
    return fed_block(msr, val_on, MIX_N, mix_round);
}

int measure_far(uint32_t msr, uint64_t val_on)
{
    return fed_block(msr, val_on, FAR_N, far_round);
}

/* Only the interrupts themselves: the handler's events are not checked. */
int measure_irqs(uint32_t msr, uint64_t val_on)
{
    int vec = wrmsr_safe(msr, val_on);

    retire(VPMU_EVENT_HW_INTERRUPTS, IRQ_N);
    return vec ? vec : wrmsr_safe(msr, 0);
}

uint32_t apic_read(uint32_t off)
{
    return off == APIC_LVTPC ? lvtpc : 0;
}

void apic_write(uint32_t off, uint32_t val)
{
    if (off == APIC_LVTPC) {
        lvtpc = val;
    }
}

void pmi_reset(void)
{
    pmi_nmis = 0;
    pmi_fixed = 0;
}

void pmi_settle(void)
{
    deliver_pmi();
}

uint64_t cmdline_u64(const char *key, uint64_t dflt)
{
    size_t n = strlen(key);

    if (!strcmp(key, "insn_cycles")) {
        return 1;               /* the fake source's cycles: see the top */
    }
    for (int i = 0; i < nkeys; i++) {
        if (!strncmp(keys[i], key, n) && keys[i][n] == '=') {
            return strtoull(keys[i] + n + 1, NULL, 0);
        }
    }
    return dflt;
}

int vprintf_lite(const char *fmt, va_list ap)
{
    return vprintf(fmt, ap);
}

void tap_diag(const char *fmt, ...)
{
    va_list ap;

    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

bool tap_check(bool ok, const char *fmt, ...)
{
    va_list ap;

    tap_count++;
    tap_failed += !ok;
    printf("%s %u - ", ok ? "ok" : "not ok", tap_count);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    return ok;
}

void tap_skip(const char *why, const char *fmt, ...)
{
    va_list ap;

    tap_count++;
    printf("ok %u - ", tap_count);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf(" # SKIP %s\n", why);
}

/* The vpmu configuration the cmdline keys describe (as QEMU would make). */
static void config_from_keys(VpmuConfig *cfg)
{
    vpmu_config_init(cfg, vendor_amd ? VPMU_VENDOR_AMD : VPMU_VENDOR_INTEL);
    /* The fake source backs the catalogue, as the TCG source does. */
    cfg->events |= VPMU_EVENTS_MODEL;
    cfg->insn_cycles = true;
    cfg->nr_gp = cmdline_u64("gp", cfg->nr_gp);
    if (vendor_amd) {
        cfg->amd_level = cmdline_u64("level", cfg->amd_level);
        return;
    }
    cfg->intel_version = cmdline_u64("version", cfg->intel_version);
    cfg->nr_fixed = cmdline_u64("fixed", cfg->nr_fixed);
    cfg->gp_width = cmdline_u64("width", cfg->gp_width);
    cfg->fixed_width = cmdline_u64("fwidth", cfg->fixed_width);
    cfg->pdcm = cmdline_u64("pdcm", cfg->pdcm);
    cfg->perf_capabilities = cmdline_u64("caps", cfg->perf_capabilities);
}

int main(int argc, char **argv)
{
    VpmuPmuOpts opts = { 0 };
    VpmuConfig cfg;
    char err[160];

    if (argc < 2 || (strcmp(argv[1], "intel") && strcmp(argv[1], "amd"))) {
        fprintf(stderr, "usage: %s intel|amd [key=value ...]\n", argv[0]);
        return 2;
    }
    vendor_amd = !strcmp(argv[1], "amd");
    keys = argv + 2;
    nkeys = argc - 2;
    config_from_keys(&cfg);
    if (vpmu_fake_source_new(&fake)) {
        return 2;
    }
    opts.source_ops = vpmu_fake_source_ops();
    opts.source = fake;
    opts.pmi = on_pmi;
    if (vpmu_pmu_new(&cfg, &opts, &pmu, err, sizeof(err))) {
        fprintf(stderr, "host-check: bad configuration: %s\n", err);
        return 2;
    }
    printf("TAP version 13\n");
    payload_main();
    printf("1..%u\n", tap_count);
    tap_diag("%u of %u checks failed", tap_failed, tap_count);
    vpmu_pmu_free(pmu);
    vpmu_fake_source_free(fake);
    return tap_failed != 0;
}
