/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Step scripts for the Check suites: a table of MSR accesses, RDPMCs,
 * fake-source events, retires and checks (PMIs, log lines, counter state
 * and info, stats, fake-source calls), run in order against one PMU.
 * Every step records its source line, and every failure names it.
 */
#ifndef VPMU_TESTS_STEPS_H
#define VPMU_TESTS_STEPS_H

#include <stddef.h>

#include "vectors.h"

typedef enum StepOp {
    S_WR,       /* WRMSR .msr <- .val, expect .ret */
    S_RD,       /* RDMSR .msr, expect .ret and (if 0) .val */
    S_RDPMC,    /* RDPMC ECX = .msr, expect .ret and (if 0) .val */
    S_RUN,      /* fake source: .val events .event at .cpl (.raw for RAW) */
    S_RETIRE,   /* vpmu_pmu_instruction_retired(.cpl, branch = .val) */
    S_RELEASE,  /* vpmu_pmu_release_idle() */
    S_PMIS,     /* PMIs requested so far == .val */
    S_LOGS,     /* log lines so far == .val */
    S_HANDLES,  /* fake open_handles == .val */
    S_STATE,    /* counter .msr (an id) is in state .val */
    S_INFO,     /* counter .msr: uint64_t VpmuCounterInfo field at .off */
    S_STAT,     /* uint64_t VpmuStats field at .off == .val */
    S_FAKE,     /* uint64_t VpmuFakeStats field at .off == .val */
} StepOp;

typedef struct Step {
    int line;
    StepOp op;
    uint32_t msr;
    uint64_t val;
    int ret;
    VpmuArchEvent event;
    uint64_t raw;
    unsigned cpl;
    size_t off;
    const char *name;
} Step;

/* A script and its length, for tables of scripts. */
typedef struct StepTable {
    const Step *s;
    size_t n;
} StepTable;
#define STEPS(t)        { (t), ARRAY_SIZE(t) }

#define W(m, v)         { SRC_LINE, S_WR, .msr = (m), .val = (v) }
#define W_GP(m, v)      { SRC_LINE, S_WR, .msr = (m), .val = (v), .ret = -EINVAL }
#define W_NOENT(m, v)   { SRC_LINE, S_WR, .msr = (m), .val = (v), .ret = -ENOENT }
#define R(m, v)         { SRC_LINE, S_RD, .msr = (m), .val = (v) }
#define RDPMC(ecx, v)   { SRC_LINE, S_RDPMC, .msr = (ecx), .val = (v) }
#define RDPMC_GP(ecx)   { SRC_LINE, S_RDPMC, .msr = (ecx), .ret = -EINVAL }
#define RUN(e, c, n)    { SRC_LINE, S_RUN, .event = VPMU_EVENT_##e, .cpl = (c), \
                          .val = (n) }
#define RUN_RAW(r, c, n) { SRC_LINE, S_RUN, .event = VPMU_EVENT_RAW, .raw = (r), \
                           .cpl = (c), .val = (n) }
#define RETIRE(c, br)   { SRC_LINE, S_RETIRE, .cpl = (c), .val = (br) }
#define RELEASE()       { SRC_LINE, S_RELEASE }
#define PMIS(n)         { SRC_LINE, S_PMIS, .val = (n) }
#define LOGS(n)         { SRC_LINE, S_LOGS, .val = (n) }
#define HANDLES(v)      { SRC_LINE, S_HANDLES, .val = (v) }
#define STATE(id, s)    { SRC_LINE, S_STATE, .msr = (id), .val = VPMU_COUNTER_##s }
#define INFO(id, f, v)  { SRC_LINE, S_INFO, .msr = (id), .val = (v), \
                          .off = offsetof(VpmuCounterInfo, f), .name = #f }
#define STAT(f, v)      { SRC_LINE, S_STAT, .val = (v), \
                          .off = offsetof(VpmuStats, f), .name = #f }
#define FAKE(op, v)     { SRC_LINE, S_FAKE, .val = (v), \
                          .off = offsetof(VpmuFakeStats, calls[VPMU_FAKE_##op]), \
                          .name = "calls[" #op "]" }
#define CLOSES(v)       { SRC_LINE, S_FAKE, .val = (v), \
                          .off = offsetof(VpmuFakeStats, closes), .name = "closes" }

/* What a script drives and checks; the counters are read as it runs. */
typedef struct StepTarget {
    VpmuPmu *pmu;
    VpmuFakeSource *fake;       /* NULL: the PMU is on another source */
    const unsigned *pmis;
    const unsigned *logs;       /* NULL: the PMU has no log callback */
    const char *last_log;
} StepTarget;

static inline uint64_t step_u64_at(const void *base, size_t off)
{
    uint64_t v;

    memcpy(&v, (const char *)base + off, sizeof(v));
    return v;
}

/* S_WR, S_RD, S_RDPMC: the return value, then (if 0) the value read. */
static inline void step_access(const StepTarget *tg, const Step *s)
{
    const char *what = "rdmsr";
    uint64_t got = 0;
    int r;

    if (s->op == S_WR) {
        r = vpmu_pmu_wrmsr(tg->pmu, s->msr, s->val);
        ck_assert_msg(r == s->ret,
                      "line %d: wrmsr 0x%x <- 0x%" PRIx64 ": ret %d want %d",
                      s->line, s->msr, s->val, r, s->ret);
        return;
    }
    if (s->op == S_RD) {
        r = vpmu_pmu_rdmsr(tg->pmu, s->msr, &got);
    } else {
        what = "rdpmc";
        r = vpmu_pmu_rdpmc(tg->pmu, s->msr, &got);
    }
    ck_assert_msg(r == s->ret, "line %d: %s 0x%x: ret %d want %d",
                  s->line, what, s->msr, r, s->ret);
    ck_assert_msg(r != 0 || got == s->val,
                  "line %d: %s 0x%x = 0x%" PRIx64 " want 0x%" PRIx64,
                  s->line, what, s->msr, got, s->val);
}

/* S_RUN, S_RETIRE, S_RELEASE: make something happen. */
static inline void step_drive(const StepTarget *tg, const Step *s)
{
    switch (s->op) {
    case S_RUN:
        ck_assert_msg(tg->fake, "line %d: RUN needs the fake source", s->line);
        vpmu_fake_source_run(tg->fake, s->event, s->raw, s->cpl, s->val);
        break;
    case S_RETIRE:
        vpmu_pmu_instruction_retired(tg->pmu, s->cpl, s->val != 0);
        break;
    default:
        vpmu_pmu_release_idle(tg->pmu);
        break;
    }
}

/* S_PMIS, S_LOGS, S_HANDLES: how many so far. */
static inline void step_count(const StepTarget *tg, const Step *s)
{
    VpmuFakeStats fs;

    switch (s->op) {
    case S_PMIS:
        ck_assert_msg(*tg->pmis == s->val, "line %d: %u PMIs, want %" PRIu64,
                      s->line, *tg->pmis, s->val);
        break;
    case S_LOGS:
        ck_assert_msg(tg->logs, "line %d: LOGS needs a log callback", s->line);
        ck_assert_msg(*tg->logs == s->val,
                      "line %d: %u log lines, want %" PRIu64 " (last: %s)",
                      s->line, *tg->logs, s->val, tg->last_log);
        break;
    default:
        vpmu_fake_source_stats(tg->fake, &fs);
        ck_assert_msg(fs.open_handles == s->val,
                      "line %d: %u fake handles open, want %" PRIu64,
                      s->line, fs.open_handles, s->val);
        break;
    }
}

/* S_STATE, S_INFO: what vpmu_pmu_counter_info() says of counter .msr. */
static inline void step_counter(const StepTarget *tg, const Step *s)
{
    VpmuCounterInfo info;
    uint64_t got;
    int r;

    r = vpmu_pmu_counter_info(tg->pmu, s->msr, &info);
    ck_assert_msg(r == 0, "line %d: counter_info 0x%x: ret %d",
                  s->line, s->msr, r);
    if (s->op == S_STATE) {
        ck_assert_msg(info.state == (VpmuCounterState)s->val,
                      "line %d: counter 0x%x state %d want %d", s->line,
                      s->msr, (int)info.state, (int)s->val);
        return;
    }
    got = step_u64_at(&info, s->off);
    ck_assert_msg(got == s->val,
                  "line %d: counter 0x%x %s = 0x%" PRIx64 " want 0x%" PRIx64,
                  s->line, s->msr, s->name, got, s->val);
}

/* S_STAT, S_FAKE: one uint64_t field of the PMU's or the fake's stats. */
static inline void step_stats(const StepTarget *tg, const Step *s)
{
    VpmuFakeStats fs;
    VpmuStats st;
    uint64_t got;

    if (s->op == S_STAT) {
        vpmu_pmu_stats(tg->pmu, &st);
        got = step_u64_at(&st, s->off);
        ck_assert_msg(got == s->val, "line %d: stats.%s = %" PRIu64
                      " want %" PRIu64, s->line, s->name, got, s->val);
        return;
    }
    vpmu_fake_source_stats(tg->fake, &fs);
    got = step_u64_at(&fs, s->off);
    ck_assert_msg(got == s->val, "line %d: fake %s = %" PRIu64 " want %" PRIu64,
                  s->line, s->name, got, s->val);
}

/* Run @n steps in order against @tg. */
static inline void run_steps_on(const StepTarget *tg, const Step *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i].op) {
        case S_WR:
        case S_RD:
        case S_RDPMC:
            step_access(tg, &s[i]);
            break;
        case S_RUN:
        case S_RETIRE:
        case S_RELEASE:
            step_drive(tg, &s[i]);
            break;
        case S_PMIS:
        case S_LOGS:
        case S_HANDLES:
            step_count(tg, &s[i]);
            break;
        case S_STATE:
        case S_INFO:
            step_counter(tg, &s[i]);
            break;
        case S_STAT:
        case S_FAKE:
            step_stats(tg, &s[i]);
            break;
        }
    }
}

/* Run a script against a TestPmu (no log callback). */
static inline void run_steps(TestPmu *t, const Step *s, size_t n)
{
    const StepTarget tg = { .pmu = t->pmu, .fake = t->fake, .pmis = &t->pmis };

    run_steps_on(&tg, s, n);
}

#endif /* VPMU_TESTS_STEPS_H */
