/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf_event_attr vpmu's perf source builds for a guest counter under
 * KVM, written out by hand (perf_event_open(2), docs/perf-source.md):
 * disabled, read_format TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING,
 * exclude_hv and exclude_host, exclude_user/kernel from the guest's
 * USR/OS, sample_period the distance to the guest's overflow.
 */
#ifndef VPMU_TESTS_SOURCE_ATTR_H
#define VPMU_TESTS_SOURCE_ATTR_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <linux/perf_event.h>

static inline struct perf_event_attr source_attr(uint32_t type,
                                                 uint64_t config,
                                                 uint64_t period, bool usr,
                                                 bool os)
{
    struct perf_event_attr a;

    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = type;
    a.config = config;
    a.disabled = 1;
    a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED |
                    PERF_FORMAT_TOTAL_TIME_RUNNING;
    a.sample_period = period;
    a.exclude_user = !usr;
    a.exclude_kernel = !os;
    a.exclude_hv = 1;
    a.exclude_host = 1;
    return a;
}

#endif /* VPMU_TESTS_SOURCE_ATTR_H */
