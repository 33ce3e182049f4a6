/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Recorded host trees for vpmu_host_check() (include/vpmu/host.h): a
 * scratch directory under /tmp with what a host shows in
 * /sys/module/{kvm,kvm_amd,kvm_intel}/parameters/enable_mediated_pmu and
 * /proc/sys/kernel/osrelease, as the tests of the perf source and of
 * vpmu-helper give it (their sysroot options).
 */
#ifndef VPMU_TESTS_SYSROOT_H
#define VPMU_TESTS_SYSROOT_H

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SYSROOT_TEMPLATE    "/tmp/vpmu-sysroot-XXXXXX"
/* A parameter "file" that is a directory: open() works, read() fails. */
#define SYSROOT_UNREADABLE  "<directory>"

typedef struct SysrootSpec {
    /* enable_mediated_pmu of each module, as the file reads; NULL: the
       module is loaded without one (or not at all: kvm_amd, kvm_intel). */
    const char *kvm, *kvm_amd, *kvm_intel;
    const char *osrelease;      /* NULL: no /proc/sys/kernel/osrelease */
    int no_sys;                 /* no /sys/module at all (a container) */
} SysrootSpec;

/* mkdir -p @path (under the scratch directory). */
static inline void sysroot_mkdirs(const char *path)
{
    char p[512];

    snprintf(p, sizeof(p), "%s", path);
    for (char *s = p + 1; *s; s++) {
        if (*s == '/') {
            *s = '\0';
            ck_assert(mkdir(p, 0755) == 0 || errno == EEXIST);
            *s = '/';
        }
    }
    ck_assert(mkdir(p, 0755) == 0 || errno == EEXIST);
}

static inline void sysroot_put(const char *root, const char *rel,
                               const char *text)
{
    char path[512], dir[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s%s", root, rel);
    snprintf(dir, sizeof(dir), "%s", path);
    *strrchr(dir, '/') = '\0';
    sysroot_mkdirs(dir);
    if (!strcmp(text, SYSROOT_UNREADABLE)) {
        sysroot_mkdirs(path);
        return;
    }
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert(fputs(text, f) >= 0);
    ck_assert_int_eq(fclose(f), 0);
}

static inline void sysroot_param(const char *root, const char *module,
                                 const char *value)
{
    char rel[128];

    snprintf(rel, sizeof(rel), "/sys/module/%s/parameters/%s", module,
             value ? "enable_mediated_pmu" : "enable_pmu");
    /* Without the parameter the module still shows its others. */
    sysroot_put(root, rel, value ? value : "Y\n");
}

/* Make @root (a SYSROOT_TEMPLATE copy) a host as @s says. */
static inline void sysroot_make(char *root, const SysrootSpec *s)
{
    ck_assert_ptr_nonnull(mkdtemp(root));
    if (!s->no_sys) {
        sysroot_param(root, "kvm", s->kvm);
        if (s->kvm_amd) {
            sysroot_param(root, "kvm_amd", s->kvm_amd);
        }
        if (s->kvm_intel) {
            sysroot_param(root, "kvm_intel", s->kvm_intel);
        }
    }
    if (s->osrelease) {
        sysroot_put(root, "/proc/sys/kernel/osrelease", s->osrelease);
    }
}

/* rm -r of the tree, and the template back for the next one. */
static inline void sysroot_remove(char *root)
{
    char cmd[600];

    ck_assert(strncmp(root, "/tmp/vpmu-sysroot-", 18) == 0);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
    strcpy(root, SYSROOT_TEMPLATE);
}

#endif /* VPMU_TESTS_SYSROOT_H */
