/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The logging and error-detail facility of every libvpmu component. */
#include "vpmu-log.h"

#include <stdio.h>

/*
 * A line may say what is wrong, why, and what the operator can do about
 * it (the perf source on a host with KVM's mediated vPMU: about 400).
 */
#define VPMU_LOG_LINE_MAX   512

void vpmu_logger_init(VpmuLogger *l, void (*fn)(void *opaque, const char *msg),
                      void *opaque)
{
    l->fn = fn;
    l->opaque = opaque;
    l->logged = 0;
}

static void vlogf(VpmuLogger *l, const char *fmt, va_list ap)
{
    /* One line: the user's callback gets it whole, truncated if long. */
    char msg[VPMU_LOG_LINE_MAX];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    l->fn(l->opaque, msg);
}

void vpmu_logf(VpmuLogger *l, const char *fmt, ...)
{
    va_list ap;

    if (!l->fn) {
        return;
    }
    va_start(ap, fmt);
    vlogf(l, fmt, ap);
    va_end(ap);
}

void vpmu_logf_once(VpmuLogger *l, unsigned kind, const char *fmt, ...)
{
    uint32_t bit = 1u << (kind % VPMU_LOG_KINDS);
    va_list ap;

    if (!l->fn || (l->logged & bit)) {
        return;
    }
    l->logged |= bit;
    va_start(ap, fmt);
    vlogf(l, fmt, ap);
    va_end(ap);
}

int vpmu_errorf(char *err, size_t errlen, int ret, const char *fmt, ...)
{
    va_list ap;

    if (err && errlen) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return ret;
}
