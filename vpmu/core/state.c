/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Save and restore of the guest-visible PMU state (live migration).
 *
 * Blob, all fields little-endian, format 1:
 *
 *   0  "VPMU" magic             12  flags: PDCM 0, FW_WRITE 1
 *   4  u16 format version       13  3 bytes zero
 *   6  u8 vendor                16  u32 payload bytes
 *   7  u8 Intel version / AMD level
 *   8  u8 nr_gp, 9 u8 nr_fixed, 10 u8 gp_width, 11 u8 fixed_width
 *  20  payload: u64 GLOBAL_CTRL, GLOBAL_STATUS, DEBUGCTL, then per GP
 *      counter u64 EVTSEL, u64 value, then per fixed counter u64 control
 *      nibble, u64 value
 * end  u32 CRC-32 (IEEE) of everything before it
 *
 * Values are the guest-visible ones, so the source on the other side
 * (another host, another kind of source) starts from them.  A blob is
 * checked whole, including every register against the hardware's
 * reserved-bit rules, before the PMU is touched.
 */
#include "pmu-priv.h"

#include <string.h>

#define STATE_MAGIC         "VPMU"
#define STATE_FORMAT        1
#define STATE_HEADER_SIZE   20
#define STATE_GLOBALS       3
#define STATE_CRC_SIZE      4
#define STATE_FLAG_PDCM     BIT_ULL(0)
#define STATE_FLAG_FW_WRITE BIT_ULL(1)

typedef struct StateRegs {
    uint64_t global_ctrl, global_status, debugctl;
    uint64_t ctl[VPMU_MAX_GP + VPMU_MAX_FIXED];
    uint64_t value[VPMU_MAX_GP + VPMU_MAX_FIXED];
} StateRegs;

static uint32_t crc32_ieee(const uint8_t *p, size_t len)
{
    uint32_t crc = ~0u;

    while (len--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
        }
    }
    return ~crc;
}

static void put_le(uint8_t *p, uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++) {
        p[i] = v >> (8 * i);
    }
}

static uint64_t get_le(const uint8_t *p, unsigned bytes)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < bytes; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

static size_t payload_size(unsigned counters)
{
    return 8 * STATE_GLOBALS + 16 * counters;
}

size_t vpmu_pmu_state_size(const VpmuPmu *pmu)
{
    return STATE_HEADER_SIZE + payload_size(pmu->nr_gp + pmu->nr_fixed) +
           STATE_CRC_SIZE;
}

static void header_fill(const VpmuPmu *pmu, uint8_t h[STATE_HEADER_SIZE])
{
    const VpmuConfig *cfg = &pmu->cfg;
    unsigned flags = (cfg->pdcm ? STATE_FLAG_PDCM : 0) |
                     ((cfg->perf_capabilities & VPMU_PERF_CAP_FW_WRITE) ?
                      STATE_FLAG_FW_WRITE : 0);

    memset(h, 0, STATE_HEADER_SIZE);
    memcpy(h, STATE_MAGIC, 4);
    put_le(h + 4, STATE_FORMAT, 2);
    h[6] = cfg->vendor;
    h[7] = cfg->vendor == VPMU_VENDOR_INTEL ? cfg->intel_version
                                            : (unsigned)cfg->amd_level;
    h[8] = cfg->nr_gp;
    h[9] = cfg->nr_fixed;
    h[10] = cfg->gp_width;
    h[11] = cfg->fixed_width;
    h[12] = flags;
    put_le(h + 16, payload_size(pmu->nr_gp + pmu->nr_fixed), 4);
}

int vpmu_pmu_save(VpmuPmu *pmu, void *buf, size_t len, size_t *written)
{
    size_t need = vpmu_pmu_state_size(pmu);
    unsigned n = vpmu_nr_counters(pmu);
    uint8_t *p = buf;

    *written = 0;
    if (len < need) {
        return -ENOSPC;
    }
    vpmu_pmu_sync(pmu);
    header_fill(pmu, p);
    p += STATE_HEADER_SIZE;
    put_le(p, pmu->global_ctrl, 8);
    put_le(p + 8, pmu->global_status, 8);
    put_le(p + 16, pmu->debugctl, 8);
    p += 8 * STATE_GLOBALS;
    for (unsigned i = 0; i < n; i++, p += 16) {
        VpmuCounter *c = vpmu_counter_at(pmu, i);

        put_le(p, c->ctl, 8);
        put_le(p + 8, c->shadow, 8);
    }
    put_le(p, crc32_ieee(buf, need - STATE_CRC_SIZE), 4);
    *written = need;
    return 0;
}

/* Framing: magic, format, length, CRC.  -EBADMSG / -EPROTONOSUPPORT. */
static int state_check_frame(const VpmuPmu *pmu, const uint8_t *p, size_t len)
{
    uint8_t want[STATE_HEADER_SIZE];
    size_t need = vpmu_pmu_state_size(pmu);

    if (len < STATE_HEADER_SIZE + STATE_CRC_SIZE ||
        memcmp(p, STATE_MAGIC, 4) != 0) {
        return -EBADMSG;
    }
    if (get_le(p + 4, 2) != STATE_FORMAT) {
        return -EPROTONOSUPPORT;
    }
    if (get_le(p + 16, 4) != len - STATE_HEADER_SIZE - STATE_CRC_SIZE) {
        return -EBADMSG;
    }
    if (crc32_ieee(p, len - STATE_CRC_SIZE) !=
        get_le(p + len - STATE_CRC_SIZE, 4)) {
        return -EBADMSG;
    }
    /* A sound blob of another vendor or counter layout is foreign. */
    header_fill(pmu, want);
    if (len != need || memcmp(p, want, STATE_HEADER_SIZE) != 0) {
        return -EINVAL;
    }
    return 0;
}

/*
 * A register this configuration lacks must hold its reset value; one it
 * has must be a value a guest write would keep as it is (the vendor's
 * rules: no reserved bit, nothing the write would drop).
 */
static int check_reg(const VpmuPmu *pmu, VpmuMsrKind kind, uint64_t val,
                     uint64_t reset)
{
    uint64_t kept = val;

    if (!pmu->rules.msr[kind].nr) {
        return val == reset ? 0 : -EINVAL;
    }
    if (vpmu_rules_sanitize(&pmu->rules, kind, &kept) < 0 || kept != val) {
        return -EINVAL;
    }
    return 0;
}

static int state_check_regs(const VpmuPmu *pmu, const StateRegs *s)
{
    uint64_t fixed_ctrl = 0;

    /* GLOBAL_STATUS may hold what GLOBAL_OVF_CTRL can clear. */
    if (check_reg(pmu, VPMU_MSR_GLOBAL_CTRL, s->global_ctrl,
                  pmu->nr_gp ? GENMASK_ULL(pmu->nr_gp - 1, 0) : 0) ||
        check_reg(pmu, VPMU_MSR_GLOBAL_OVF_CTRL, s->global_status, 0) ||
        check_reg(pmu, VPMU_MSR_DEBUGCTL, s->debugctl, 0)) {
        return -EINVAL;
    }
    for (unsigned i = 0; i < vpmu_nr_counters(pmu); i++) {
        const VpmuCounter *c = vpmu_counter_at((VpmuPmu *)pmu, i);
        uint64_t kept = s->ctl[i];

        if (s->value[i] & ~c->mask) {
            return -EINVAL;
        }
        if (!c->fixed) {
            if (vpmu_rules_sanitize(&pmu->rules, VPMU_MSR_EVTSEL,
                                    &kept) < 0 ||
                kept != s->ctl[i]) {
                return -EINVAL;
            }
        } else if (s->ctl[i] > VPMU_FIXED_CTRL_FIELD) {
            return -EINVAL;
        } else {
            fixed_ctrl |= s->ctl[i] << (VPMU_FIXED_CTRL_BITS * c->idx);
        }
    }
    if (pmu->nr_fixed &&
        check_reg(pmu, VPMU_MSR_FIXED_CTR_CTRL, fixed_ctrl, 0)) {
        return -EINVAL;
    }
    return 0;
}

int vpmu_pmu_load(VpmuPmu *pmu, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    unsigned n = vpmu_nr_counters(pmu);
    StateRegs s;
    int r;

    r = state_check_frame(pmu, p, len);
    if (r < 0) {
        return r;
    }
    p += STATE_HEADER_SIZE;
    s.global_ctrl = get_le(p, 8);
    s.global_status = get_le(p + 8, 8);
    s.debugctl = get_le(p + 16, 8);
    p += 8 * STATE_GLOBALS;
    for (unsigned i = 0; i < n; i++, p += 16) {
        s.ctl[i] = get_le(p, 8);
        s.value[i] = get_le(p + 8, 8);
    }
    r = state_check_regs(pmu, &s);
    if (r < 0) {
        return r;
    }
    /*
     * Commit.  What the sources counted since the last fold belongs to the
     * state being replaced: drop the handles instead of folding, so no
     * overflow or PMI of the old state can surface now.
     */
    for (unsigned i = 0; i < n; i++) {
        vpmu_counter_close(vpmu_counter_at(pmu, i));
    }
    pmu->global_ctrl = s.global_ctrl;
    pmu->global_status = s.global_status;
    pmu->debugctl = s.debugctl;
    for (unsigned i = 0; i < n; i++) {
        VpmuCounter *c = vpmu_counter_at(pmu, i);
        VpmuCtl dec;

        vpmu_ctl_decode(pmu, c, s.ctl[i], &dec);
        vpmu_counter_load_ctl(c, s.ctl[i], &dec);
        c->shadow = s.value[i];
    }
    vpmu_pmu_reprogram_all(pmu);
    return 0;
}
