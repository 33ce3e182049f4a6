/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fake VpmuPerfSys of the perf source tests (fake-sys.h). */
#include "fake-sys.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>

static int take_fail(FakeSys *f, FakeSite site)
{
    int err = f->fail[site];

    f->fail[site] = 0;
    return err;
}

FakeFd *fake_sys_fd(FakeSys *f, int fd)
{
    int i = fd - FAKE_FD_BASE;

    if (i < 0 || (unsigned)i >= f->nfds || !f->fds[i].open) {
        f->bad_calls++;
        return NULL;
    }
    return &f->fds[i];
}

FakeFd *fake_sys_last(FakeSys *f)
{
    return f->nfds ? &f->fds[f->nfds - 1] : NULL;
}

static int fake_open(void *ctx, struct perf_event_attr *attr, pid_t pid,
                     int cpu, int group_fd, unsigned long flags)
{
    FakeSys *f = ctx;
    FakeFd *e;
    int err = take_fail(f, FAKE_OPEN);

    f->open_calls++;
    if (f->open_always) {
        return f->open_always;
    }
    if (err) {
        return err;
    }
    if (f->refuse_guest && attr->type != PERF_TYPE_SOFTWARE &&
        !attr->exclude_guest) {
        return f->refuse_guest;
    }
    if (!f->hw && attr->type != PERF_TYPE_SOFTWARE) {
        return -ENOENT;     /* what this machine's kernel answers */
    }
    if (f->nfds == FAKE_MAX_FDS || cpu != -1 || group_fd != -1 ||
        !(flags & PERF_FLAG_FD_CLOEXEC) || attr->size != sizeof(*attr)) {
        return -EINVAL;
    }
    e = &f->fds[f->nfds];
    memset(e, 0, sizeof(*e));
    e->open = true;
    e->open_flags = flags;
    e->attr = *attr;
    e->enabled = !attr->disabled;
    return FAKE_FD_BASE + (int)f->nfds++;
}

static int fake_ioctl(void *ctx, int fd, unsigned long req, unsigned long arg)
{
    FakeSys *f = ctx;
    FakeFd *e = fake_sys_fd(f, fd);
    FakeSite site;
    int err;

    if (!e) {
        return -EBADF;
    }
    switch (req) {
    case PERF_EVENT_IOC_ENABLE: site = FAKE_ENABLE; break;
    case PERF_EVENT_IOC_DISABLE: site = FAKE_DISABLE; break;
    case PERF_EVENT_IOC_PERIOD: site = FAKE_PERIOD; break;
    case PERF_EVENT_IOC_RESET: site = FAKE_RESET; break;
    default: return -ENOTTY;
    }
    err = take_fail(f, site);
    if (err) {
        return err;
    }
    if (site == FAKE_ENABLE || site == FAKE_DISABLE) {
        e->enabled = site == FAKE_ENABLE;
        e->enables += site == FAKE_ENABLE;
        e->disables += site == FAKE_DISABLE;
    } else if (site == FAKE_PERIOD) {
        e->attr.sample_period = *(const uint64_t *)arg;
        e->periods++;
    } else {
        e->value = 0;
        e->resets++;
    }
    return 0;
}

static ssize_t fake_read(void *ctx, int fd, void *buf, size_t len)
{
    FakeSys *f = ctx;
    FakeFd *e = fake_sys_fd(f, fd);
    uint64_t v[3];
    int err = take_fail(f, FAKE_READ);

    if (!e) {
        return -EBADF;
    }
    e->reads++;
    if (err) {
        return err;
    }
    if (e->error_state) {
        return 0;
    }
    if (len < sizeof(v)) {
        return -ENOSPC;
    }
    v[0] = e->value;
    v[1] = e->time_enabled;
    v[2] = e->time_running;
    memcpy(buf, v, sizeof(v));
    return sizeof(v);
}

static int fake_fcntl(void *ctx, int fd, int cmd, unsigned long arg)
{
    FakeSys *f = ctx;
    FakeFd *e = fake_sys_fd(f, fd);
    int err = take_fail(f, FAKE_FCNTL);

    if (!e) {
        return -EBADF;
    }
    if (err) {
        return err;
    }
    if (cmd == F_SETSIG) {
        e->sig = (int)arg;
    } else if (cmd == F_SETOWN_EX) {
        const struct f_owner_ex *o = (const void *)arg;

        e->owner = o->type == F_OWNER_TID ? o->pid : -1;
    } else if (cmd == F_SETFL) {
        e->async = arg & O_ASYNC;
    } else {
        return -EINVAL;
    }
    return 0;
}

static int fake_close(void *ctx, int fd)
{
    FakeSys *f = ctx;
    int i = fd - FAKE_FD_BASE;

    if (i < 0 || (unsigned)i >= f->nfds) {
        f->bad_calls++;
        return -EBADF;
    }
    f->fds[i].closes++;
    if (!f->fds[i].open) {
        f->bad_calls++;
        return -EBADF;
    }
    f->fds[i].open = false;
    return 0;
}

void fake_sys_init(FakeSys *f, bool hw)
{
    memset(f, 0, sizeof(*f));
    f->hw = hw;
    f->run_num = f->run_den = 1;
    f->sys = (VpmuPerfSys) {
        .open = fake_open, .ioctl = fake_ioctl, .read = fake_read,
        .fcntl = fake_fcntl, .close = fake_close, .ctx = f,
    };
}

void fake_sys_run(FakeSys *f, uint32_t type, uint64_t config, uint64_t n)
{
    for (unsigned i = 0; i < f->nfds; i++) {
        FakeFd *e = &f->fds[i];
        uint64_t ran = n * f->run_num / f->run_den;

        if (!e->open || !e->enabled || e->attr.type != type ||
            e->attr.config != config) {
            continue;
        }
        /* One event per time unit; it counts only while it runs. */
        e->value += f->host_mode && e->attr.exclude_host ? 0 : ran;
        e->time_enabled += n;
        e->time_running += ran;
    }
}

unsigned fake_sys_open_fds(const FakeSys *f)
{
    unsigned n = 0;

    for (unsigned i = 0; i < f->nfds; i++) {
        n += f->fds[i].open;
    }
    return n;
}

bool fake_sys_all_closed_once(const FakeSys *f)
{
    for (unsigned i = 0; i < f->nfds; i++) {
        if (f->fds[i].open || f->fds[i].closes != 1) {
            return false;
        }
    }
    return f->bad_calls == 0;
}
