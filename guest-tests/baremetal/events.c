/*
 * The event catalogue's checks: see events.h.
 */
#include "events.h"
#include "pmu-common.h"

/* IA32_PERFEVTSELx and PERF_CTLx share these (SDM Figure 20-6). */
#define SEL_OS          (1ull << 17)
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

void check_catalogue(const CatalogueCase *c, unsigned n, uint32_t evtsel,
                     uint32_t pmc, void (*quiesce)(void))
{
    for (unsigned i = 0; i < n; i++) {
        check_block(&c[i], measure_mix, c[i].mix, "mix", evtsel, pmc, quiesce);
        check_block(&c[i], measure_far, c[i].far, "far", evtsel, pmc, quiesce);
        check_block(&c[i], measure_irqs, c[i].irqs, "irq", evtsel, pmc,
                    quiesce);
    }
    quiesce();
}
