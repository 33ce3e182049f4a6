/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu-helper's per-VM policies and how it knows which VM a client is.
 *
 * A policy file holds "KEY = VALUE" lines, '#' comments and blank lines:
 *
 *   events   = allow 0x3c,0xc0,0xc4   # vpmu_filter_parse() text
 *   counters = 4                      # GP counters the guest may have
 *   pinned   = no                     # host events pinned, or multiplexed
 *   raw      = no                     # guest raw events pass, or not
 *   operator = no                     # the host operator may count this
 *                                     # VM (operator events): the
 *                                     # tenant's consent
 *   operator-profile = deny           # what the host operator's profiles
 *                                     # of this VM may take: deny, ip or
 *                                     # stack (vpmu-profile)
 *
 * Every key is optional (defaults: all events, 4 counters, no, no, no,
 * deny); an
 * unknown key, a repeated one or a bad value is an error naming the line.
 * exclude_host is not a key: the helper always requires it.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helper-server.h"
#include "vpmu-log.h"

#define POLICY_FILE_MAX 4096    /* a longer file is refused */

void helper_policy_clear(HelperPolicy *p)
{
    vpmu_filter_free(p->filter);
    memset(p, 0, sizeof(*p));
}

/* Trim white space at both ends of [*s, *e), in place. */
static void trim(const char **s, const char **e)
{
    while (*s < *e && isspace((unsigned char)**s)) {
        (*s)++;
    }
    while (*e > *s && isspace((unsigned char)(*e)[-1])) {
        (*e)--;
    }
}

static bool word_is(const char *s, size_t n, const char *word)
{
    return n == strlen(word) && strncmp(s, word, n) == 0;
}

static int parse_bool(const char *v, size_t n, bool *out)
{
    if (word_is(v, n, "yes")) {
        *out = true;
    } else if (word_is(v, n, "no")) {
        *out = false;
    } else {
        return -EINVAL;
    }
    return 0;
}

/* One "KEY = VALUE"; @seen: bit per key, for repeats. */
static int parse_line(HelperPolicy *p, const char *s, const char *e,
                      unsigned *seen, char *err, size_t errlen)
{
    static const char *const keys[] = { "events", "counters", "pinned",
                                        "raw", "operator",
                                        "operator-profile" };
    static const unsigned nkeys = sizeof(keys) / sizeof(keys[0]);
    bool *flag[] = { NULL, NULL, &p->pinned, &p->raw, &p->operator_metrics,
                     NULL };
    const char *eq = memchr(s, '=', e - s), *k = s, *ke, *v, *ve = e;
    char buf[sizeof(p->events)];
    unsigned key;

    if (!eq) {
        return vpmu_err(err, errlen, "expected KEY = VALUE");
    }
    ke = eq;
    v = eq + 1;
    trim(&k, &ke);
    trim(&v, &ve);
    for (key = 0; key < nkeys && !word_is(k, ke - k, keys[key]); key++) {
    }
    if (key == nkeys) {
        return vpmu_err(err, errlen, "unknown key '%.*s' (events, counters, "
                        "pinned, raw, operator, operator-profile)",
                        (int)(ke - k), k);
    }
    if (*seen & (1u << key)) {
        return vpmu_err(err, errlen, "'%s' given twice", keys[key]);
    }
    *seen |= 1u << key;
    if (key == 0) {
        if ((size_t)(ve - v) >= sizeof(buf)) {
            return vpmu_err(err, errlen, "events: longer than %zu "
                            "characters", sizeof(buf) - 1);
        }
        memcpy(buf, v, ve - v);
        buf[ve - v] = '\0';
        strcpy(p->events, buf);
        return ve == v ? 0 : vpmu_filter_parse(buf, &p->filter, err, errlen);
    }
    if (key == 1) {
        char *end = buf;
        unsigned long n = 0;

        if ((size_t)(ve - v) < sizeof(buf)) {
            memcpy(buf, v, ve - v);
            buf[ve - v] = '\0';
            errno = 0;
            n = strtoul(buf, &end, 10);
        }
        if (end == buf || *end || errno || n < 1 || n > VPMU_INTEL_MAX_GP) {
            return vpmu_err(err, errlen, "counters: '%.*s' is not 1-%u",
                            (int)(ve - v), v, VPMU_INTEL_MAX_GP);
        }
        p->counters = n;
        return 0;
    }
    if (key == 5) {
        if ((size_t)(ve - v) >= sizeof(buf)) {
            ve = v + sizeof(buf) - 1;
        }
        memcpy(buf, v, ve - v);
        buf[ve - v] = '\0';
        if (vpmu_profile_mode_parse(buf, &p->operator_profile) < 0) {
            return vpmu_err(err, errlen, "operator-profile: '%s' is not "
                            "deny, ip or stack", buf);
        }
        return 0;
    }
    if (parse_bool(v, ve - v, flag[key]) < 0) {
        return vpmu_err(err, errlen, "%s: '%.*s' is not yes or no",
                        keys[key], (int)(ve - v), v);
    }
    return 0;
}

int helper_policy_parse(const char *text, HelperPolicy *out, char *err,
                        size_t errlen)
{
    HelperPolicy p = { .counters = HELPER_POLICY_COUNTERS_DEFAULT };
    unsigned seen = 0, line = 1;
    char why[160];
    int r = 0;

    for (const char *s = text; *s && r == 0; line++) {
        const char *nl = strchr(s, '\n'), *e = nl ? nl : s + strlen(s);
        const char *hash = memchr(s, '#', e - s), *end = hash ? hash : e;

        trim(&s, &end);
        if (end > s) {
            r = parse_line(&p, s, end, &seen, why, sizeof(why));
        }
        s = nl ? nl + 1 : e;
    }
    if (r < 0) {
        helper_policy_clear(&p);
        return vpmu_errorf(err, errlen, r, "line %u: %s", line - 1, why);
    }
    *out = p;
    return 0;
}

/* helper-server.h; policies and /proc files are small, read whole. */
int helper_read_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;
    size_t n = 0;
    ssize_t got = 1;
    char more;

    if (fd < 0) {
        return -errno;
    }
    while (n < len - 1 && (got = read(fd, buf + n, len - 1 - n)) > 0) {
        n += got;
    }
    if (got < 0) {
        r = -errno;
    } else if (n == len - 1 && read(fd, &more, 1) > 0) {
        r = -EFBIG;
    }
    buf[n] = '\0';
    close(fd);
    return r < 0 ? r : (int)n;
}

int helper_policy_load(const char *dir, const char *vm, HelperPolicy *out,
                       char *err, size_t errlen)
{
    char path[PATH_MAX], text[POLICY_FILE_MAX + 1], why[160];
    int r = -ENOENT;

    /* A name with '/' or a leading '.' would leave the directory. */
    if (*vm && !strchr(vm, '/') && vm[0] != '.') {
        snprintf(path, sizeof(path), "%s/%s.conf", dir, vm);
        r = helper_read_file(path, text, sizeof(text));
    }
    if (r == -ENOENT) {
        snprintf(path, sizeof(path), "%s/default.conf", dir);
        r = helper_read_file(path, text, sizeof(text));
    }
    if (r == -ENOENT) {
        return vpmu_errorf(err, errlen, r, "no policy for VM '%s' in %s "
                           "(neither %s.conf nor default.conf)", vm, dir, vm);
    }
    if (r < 0) {
        return vpmu_errorf(err, errlen, r, "%s: %s", path,
                           r == -EFBIG ? "longer than 4096 bytes"
                                       : strerror(-r));
    }
    r = helper_policy_parse(text, out, why, sizeof(why));
    return r < 0 ? vpmu_errorf(err, errlen, r, "%s: %s", path, why) : 0;
}

/* Copy [s, e) to @vm if it is a name; -ENOENT otherwise. */
static int set_name(const char *s, const char *e, char *vm, size_t len)
{
    if (e <= s || (size_t)(e - s) >= len) {
        return -ENOENT;
    }
    memcpy(vm, s, e - s);
    vm[e - s] = '\0';
    return 0;
}

/*
 * libvirt's machine name "qemu-ID-NAME" in a cgroup path: without systemd
 * ".../machine/qemu-ID-NAME.libvirt-qemu", with it
 * ".../machine-qemu\x2dID\x2dNAME.scope" (systemd escapes '-').
 */
static int name_from_cgroup(const char *line, char *vm, size_t len)
{
    static const struct {
        const char *prefix, *dash, *suffix;
    } forms[] = {
        { "/machine/qemu-", "-", ".libvirt-qemu" },
        { "/machine-qemu\\x2d", "\\x2d", ".scope" },
    };

    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        const char *p = strstr(line, forms[i].prefix), *name, *end;

        if (!p) {
            continue;
        }
        p += strlen(forms[i].prefix);
        while (isdigit((unsigned char)*p)) {
            p++;
        }
        if (strncmp(p, forms[i].dash, strlen(forms[i].dash)) != 0) {
            continue;
        }
        name = p + strlen(forms[i].dash);
        end = strstr(name, forms[i].suffix);
        if (end && set_name(name, end, vm, len) == 0) {
            return 0;
        }
    }
    return -ENOENT;
}

/* -name guest=NAME,... or -name NAME,... (QEMU's option syntax). */
static int name_from_cmdline(const char *args, size_t n, char *vm, size_t len)
{
    for (const char *a = args; a < args + n; a += strlen(a) + 1) {
        const char *v = a + strlen(a) + 1, *e;

        if (strcmp(a, "-name") != 0 || v >= args + n) {
            continue;
        }
        if (!strncmp(v, "guest=", 6)) {
            v += 6;
        }
        e = strchr(v, ',');
        return set_name(v, e ? e : v + strlen(v), vm, len);
    }
    return -ENOENT;
}

int helper_vm_identity(const char *proc, pid_t pid, char *vm, size_t len,
                       bool *cgroup)
{
    char path[PATH_MAX], buf[POLICY_FILE_MAX + 1];
    int n;

    *cgroup = false;
    snprintf(path, sizeof(path), "%s/%d/cgroup", proc, (int)pid);
    n = helper_read_file(path, buf, sizeof(buf));
    if (n < 0 && n != -EFBIG) {
        return n;
    }
    for (char *line = buf; line && *line; ) {
        char *nl = strchr(line, '\n');

        if (nl) {
            *nl = '\0';
        }
        if (name_from_cgroup(line, vm, len) == 0) {
            *cgroup = true;
            return 0;
        }
        line = nl ? nl + 1 : NULL;
    }
    snprintf(path, sizeof(path), "%s/%d/cmdline", proc, (int)pid);
    n = helper_read_file(path, buf, sizeof(buf));
    if (n < 0 && n != -EFBIG) {
        return n;
    }
    /* Arguments are NUL-separated; a cut-off last one ends at buf's NUL. */
    return name_from_cmdline(buf, n < 0 ? sizeof(buf) - 1 : (size_t)n, vm,
                             len);
}
