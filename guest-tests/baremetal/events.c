/*
 * The event catalogue's checks: see events.h.
 */
#include "events.h"
#include "pmu-common.h"

/* IA32_PERFEVTSELx and PERF_CTLx share these (SDM Figure 20-6). */
#define SEL_OS          (1ull << 17)
#define SEL_INT         (1ull << 20)
#define SEL_EN          (1ull << 22)

typedef int (*Block)(uint32_t msr, uint64_t val_on);

static void check_block(const CatalogueCase *c, Block block, uint32_t want,
                        const char *bname, uint32_t evtsel, uint32_t pmc,
                        void (*quiesce)(void))
{
    uint64_t v = 0;
    int vec;

    if (want == NONE) {
        return;
    }
    quiesce();
    vec = block(evtsel, c->code | SEL_OS | SEL_EN);
    rdmsr_safe(pmc, &v);
    tap_check(v == want && !vec, "%s (0x%llx), %s block: %llu (want %u)%s",
              c->name, c->code, bname, v, want, vec ? ", WRMSR faulted" : "");
}

static const char *const site_names[] = {
    [MIX_SITE_NONE] = "elsewhere",
    [MIX_SITE_LOOP] = "call (loop head)",
    [MIX_SITE_CALLEE] = "callee",
    [MIX_SITE_AFTER_CALL] = "jmp after the call",
    [MIX_SITE_TEST] = "test",
    [MIX_SITE_NOP] = "nop (jz not taken)",
    [MIX_SITE_DEC] = "dec (jz taken)",
    [MIX_SITE_END] = "after the loop",
};

/* One PMI, at the site and ECX events.h derives for the case. */
static void check_pmi_site(const CatalogueCase *c, uint32_t evtsel,
                           uint32_t pmc, uint64_t preset,
                           void (*quiesce)(void))
{
    uint32_t ecx = 0;
    int vec, site;

    if (c->pmi_site == MIX_SITE_NONE) {
        return;
    }
    quiesce();
    lvtpc_fixed();
    wrmsr_safe(pmc, preset);
    pmi_reset();
    vec = measure_mix(evtsel, c->code | SEL_OS | SEL_INT | SEL_EN);
    pmi_settle();
    site = pmi_mix_site(&ecx);
    tap_check(pmi_fixed == 1 && site == (int)c->pmi_site &&
              ecx == c->pmi_ecx && !vec,
              "%s (0x%llx), preset -%u, mix block: %u PMI at %s, ECX %u "
              "(want 1 at %s, ECX %u)%s", c->name, c->code, PMI_K, pmi_fixed,
              site_names[site], ecx, site_names[c->pmi_site], c->pmi_ecx,
              vec ? ", WRMSR faulted" : "");
}

void check_catalogue(const CatalogueCase *c, unsigned n, uint32_t evtsel,
                     uint32_t pmc, uint64_t preset, void (*quiesce)(void))
{
    for (unsigned i = 0; i < n; i++) {
        check_block(&c[i], measure_mix, c[i].mix, "mix", evtsel, pmc, quiesce);
        check_block(&c[i], measure_far, c[i].far, "far", evtsel, pmc, quiesce);
        check_block(&c[i], measure_irqs, c[i].irqs, "irq", evtsel, pmc,
                    quiesce);
    }
    for (unsigned i = 0; i < n; i++) {
        check_pmi_site(&c[i], evtsel, pmc, preset, quiesce);
    }
    quiesce();
}
