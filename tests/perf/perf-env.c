/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared set-up of the perf source tests (perf-env.h). */
#include "perf-env.h"

#include <signal.h>

Env env;

static void env_log(void *opaque, const char *msg)
{
    env.logs++;
    snprintf(env.log, sizeof(env.log), "%s", msg);
}

static void env_pmi(void *opaque)
{
    env.pmis++;
}

void env_up(int host, const VpmuPerfSourceOpts *opts)
{
    VpmuPerfSourceOpts o = { 0 };
    VpmuPmuOpts po = { 0 };
    VpmuConfig cfg;
    char err[128];

    memset(&env, 0, sizeof(env));
    fake_sys_init(&env.fs, host == HOST_HW || host == HOST_MEDIATED);
    if (host == HOST_NO_PERF) {
        env.fs.open_always = -EACCES;
    }
    if (host == HOST_MEDIATED) {
        env.fs.refuse_guest = -EOPNOTSUPP;
    }
    if (opts) {
        o = *opts;
    }
    if (!o.sysroot) {
        o.sysroot = ENV_NO_SYSROOT;
    }
    o.sys = &env.fs.sys;
    o.log = env_log;
    ck_assert_int_eq(vpmu_perf_source_new(&o, &env.src), 0);
    vpmu_config_init(&cfg, VPMU_VENDOR_INTEL);
    cfg.events = vpmu_perf_source_events(env.src);
    cfg.raw_events = vpmu_perf_source_raw_events(env.src);
    po.source_ops = vpmu_perf_source_ops();
    po.source = env.src;
    po.pmi = env_pmi;
    ck_assert_int_eq(vpmu_pmu_new(&cfg, &po, &env.pmu, err, sizeof(err)), 0);
}

void env_down(void)
{
    vpmu_pmu_free(env.pmu);
    vpmu_perf_source_free(env.src);
    env.pmu = NULL;
    env.src = NULL;
    ck_assert_msg(fake_sys_all_closed_once(&env.fs),
                  "an fd was leaked, closed twice or misused");
}

void wr(uint32_t msr, uint64_t val)
{
    ck_assert_int_eq(vpmu_pmu_wrmsr(env.pmu, msr, val), 0);
}

uint64_t rd(uint32_t msr)
{
    uint64_t v = 0;

    ck_assert_int_eq(vpmu_pmu_rdmsr(env.pmu, msr, &v), 0);
    return v;
}

VpmuCounterState state_of(uint32_t id)
{
    VpmuCounterInfo info;

    ck_assert_int_eq(vpmu_pmu_counter_info(env.pmu, id, &info), 0);
    return info.state;
}

VpmuPerfStats perf_stats(void)
{
    VpmuPerfStats s;

    vpmu_perf_source_stats(env.src, &s);
    return s;
}

VpmuStats pmu_stats(void)
{
    VpmuStats s;

    vpmu_pmu_stats(env.pmu, &s);
    return s;
}
