/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the vpmu-helper tests share: files in scratch directories. */
#ifndef VPMU_TESTS_HELPER_TEST_H
#define VPMU_TESTS_HELPER_TEST_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-main.h"

static inline void write_bytes(const char *dir, const char *name,
                               const void *data, size_t len)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

static inline void write_file(const char *dir, const char *name,
                              const char *text)
{
    write_bytes(dir, name, text, strlen(text));
}

/* rm -r of a scratch directory the test made under /tmp. */
static inline void remove_tree(const char *dir)
{
    char cmd[300];

    ck_assert(strncmp(dir, "/tmp/vpmu-", 10) == 0);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

#endif /* VPMU_TESTS_HELPER_TEST_H */
