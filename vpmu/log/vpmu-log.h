/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libvpmu's one logging facility, shared by its components (not
 * installed).  Every component logs through a VpmuLogger made from the
 * callback its user gave (opts.log, may be NULL: then nothing is logged).
 *
 * The rate limit is one: a message kind that a guest can trigger again and
 * again (a failing source, a denied event, an undeliverable PMI) is logged
 * the first time per logger only (vpmu_logf_once); the statistics count
 * every occurrence.  Set-up messages are logged as they come (vpmu_logf).
 *
 * Error details reach a caller one way: a function that can fail on bad
 * input returns -errno and, given a buffer (char *err, size_t errlen),
 * fills it with one line naming the bad item (vpmu_errorf).
 */
#ifndef VPMU_LOG_H
#define VPMU_LOG_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define VPMU_LOG_KINDS  32      /* once-kinds per logger: bits of .logged */

typedef struct VpmuLogger {
    void (*fn)(void *opaque, const char *msg);
    void *opaque;
    uint32_t logged;            /* bit k: kind k was logged */
} VpmuLogger;

/* A logger on @fn (may be NULL) with nothing logged yet. */
void vpmu_logger_init(VpmuLogger *l, void (*fn)(void *opaque, const char *msg),
                      void *opaque);

/* Log one message (set-up and configuration events). */
void vpmu_logf(VpmuLogger *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Log the first message of @kind (< VPMU_LOG_KINDS) only. */
void vpmu_logf_once(VpmuLogger *l, unsigned kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fill @err (if any) from @fmt; returns @ret, for "return vpmu_errorf(...)". */
int vpmu_errorf(char *err, size_t errlen, int ret, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The common case: bad input, -EINVAL. */
#define vpmu_err(err, errlen, ...) \
    vpmu_errorf((err), (errlen), -EINVAL, __VA_ARGS__)

#endif /* VPMU_LOG_H */
