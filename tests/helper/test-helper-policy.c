/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vpmu-helper's policies and VM identity (vpmu/helper/policy.c): every
 * key and default, each kind of bad input with the message it gets, the
 * file lookup (VM.conf, then default.conf), and the VM's name from a
 * libvirt cgroup (with and without systemd) or from -name, read from a
 * made-up /proc.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helper-server.h"
#include "helper-test.h"

START_TEST(test_defaults)
{
    HelperPolicy p;
    char err[160] = "";

    ck_assert_int_eq(helper_policy_parse("# nothing but a comment\n\n", &p,
                                         err, sizeof(err)), 0);
    ck_assert_str_eq(p.events, "");
    ck_assert_ptr_null(p.filter);
    ck_assert_uint_eq(p.counters, 4);
    /* No consent unless the file says so. */
    ck_assert(!p.pinned && !p.raw && !p.operator_metrics);
    ck_assert_int_eq(p.operator_profile, VPMU_PROFILE_DENY);
    helper_policy_clear(&p);
}
END_TEST

START_TEST(test_every_key)
{
    HelperPolicy p;
    char err[160] = "";

    ck_assert_int_eq(helper_policy_parse(
        "events = allow 0x3c, 0xc0   # cycles, instructions\n"
        "  counters=6\n"
        "pinned = yes\n"
        "raw = no\n"
        "operator = yes\n"
        "operator-profile = stack", &p, err, sizeof(err)), 0);
    ck_assert_str_eq(p.events, "allow 0x3c, 0xc0");
    ck_assert_ptr_nonnull(p.filter);
    /* Intel cycles 0x3c and instructions 0xc0 pass; branches 0xc4 not. */
    ck_assert(vpmu_filter_allows_event(p.filter, 0x3c));
    ck_assert(vpmu_filter_allows_event(p.filter, 0xc0));
    ck_assert(!vpmu_filter_allows_event(p.filter, 0xc4));
    ck_assert_uint_eq(p.counters, 6);
    ck_assert(p.pinned && !p.raw && p.operator_metrics);
    ck_assert_int_eq(p.operator_profile, VPMU_PROFILE_STACK);
    helper_policy_clear(&p);
    ck_assert_int_eq(helper_policy_parse("operator-profile = ip", &p, err,
                                         sizeof(err)), 0);
    ck_assert_int_eq(p.operator_profile, VPMU_PROFILE_IP);
    helper_policy_clear(&p);
}
END_TEST

/* Bad input: refused with the line and what is wrong; *out untouched. */
static const struct {
    const char *text, *err;
} bad[] = {
    { "colour = blue", "line 1: unknown key 'colour' (events, counters, "
      "pinned, raw, operator, operator-profile)" },
    { "operator-profile = yes", "line 1: operator-profile: 'yes' is not "
      "deny, ip or stack" },
    { "operator-profile = ip\noperator-profile = ip",
      "line 2: 'operator-profile' given twice" },
    { "operator = maybe", "line 1: operator: 'maybe' is not yes or no" },
    { "operator = yes\noperator = no", "line 2: 'operator' given twice" },
    { "counters = 4\ncounters = 5", "line 2: 'counters' given twice" },
    { "counters = 9", "line 1: counters: '9' is not 1-8" },
    { "counters = 0", "line 1: counters: '0' is not 1-8" },
    { "counters = 4x", "line 1: counters: '4x' is not 1-8" },
    { "counters =", "line 1: counters: '' is not 1-8" },
    { "pinned = maybe", "line 1: pinned: 'maybe' is not yes or no" },
    { "\n\nraw", "line 3: expected KEY = VALUE" },
    { "events = permit 0x3c", "line 1: bad filter action 'permit' "
      "(expected allow or deny)" },
    { "events = allow 0x3c:zz", "line 1: bad filter entry '0x3c:zz' "
      "(expected EVENT[:UMASK])" },
};

START_TEST(test_bad)
{
    HelperPolicy p = { .counters = 77 };
    char err[160] = "";

    ck_assert_int_eq(helper_policy_parse(bad[_i].text, &p, err, sizeof(err)),
                     -EINVAL);
    ck_assert_str_eq(err, bad[_i].err);
    ck_assert_uint_eq(p.counters, 77);
}
END_TEST

START_TEST(test_events_too_long)
{
    char text[300] = "events = allow ";
    HelperPolicy p;
    char err[160] = "";

    while (strlen(text) < sizeof(text) - 6) {
        strcat(text, "0x3c,");
    }
    ck_assert_int_eq(helper_policy_parse(text, &p, err, sizeof(err)),
                     -EINVAL);
    ck_assert_str_eq(err, "line 1: events: longer than 191 characters");
}
END_TEST

START_TEST(test_load)
{
    char dir[] = "/tmp/vpmu-policy-XXXXXX", err[400] = "", want[400];
    HelperPolicy p;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(helper_policy_load(dir, "web1", &p, err, sizeof(err)),
                     -ENOENT);
    snprintf(want, sizeof(want), "no policy for VM 'web1' in %s (neither "
             "web1.conf nor default.conf)", dir);
    ck_assert_str_eq(err, want);
    write_file(dir, "default.conf", "counters = 2\n");
    write_file(dir, "web1.conf", "counters = 3\n");
    ck_assert_int_eq(helper_policy_load(dir, "web1", &p, err, sizeof(err)),
                     0);
    ck_assert_uint_eq(p.counters, 3);
    helper_policy_clear(&p);
    ck_assert_int_eq(helper_policy_load(dir, "db", &p, err, sizeof(err)), 0);
    ck_assert_uint_eq(p.counters, 2);
    helper_policy_clear(&p);
    /* A name that would leave the directory gets the default. */
    ck_assert_int_eq(helper_policy_load(dir, "../etc/x", &p, err,
                                        sizeof(err)), 0);
    ck_assert_uint_eq(p.counters, 2);
    helper_policy_clear(&p);
    write_file(dir, "bad.conf", "raw = 1\n");
    ck_assert_int_eq(helper_policy_load(dir, "bad", &p, err, sizeof(err)),
                     -EINVAL);
    snprintf(want, sizeof(want), "%s/bad.conf: line 1: raw: '1' is not yes "
             "or no", dir);
    ck_assert_str_eq(err, want);
    remove_tree(dir);
}
END_TEST

/* The default policy make install puts in /etc/vpmu-helper. */
START_TEST(test_shipped_default)
{
    HelperPolicy p;
    char err[400] = "";

    ck_assert_int_eq(helper_policy_load(HELPER_SRCDIR, "any-vm", &p, err,
                                        sizeof(err)), 0);
    ck_assert_uint_eq(p.counters, 4);
    ck_assert(!p.pinned && !p.raw && !p.operator_metrics);
    /* The architectural events of both vendors, nothing else. */
    ck_assert(vpmu_filter_allows_event(p.filter, 0x3c));     /* cycles */
    ck_assert(vpmu_filter_allows_event(p.filter, 0x76));     /* AMD cycles */
    ck_assert(vpmu_filter_allows_event(p.filter, 0x13c));    /* ref-cycles */
    ck_assert(vpmu_filter_allows_event(p.filter, 0x4f2e));   /* LLC refs */
    ck_assert(!vpmu_filter_allows_event(p.filter, 0x1c4));   /* umask 1 */
    ck_assert(!vpmu_filter_allows_event(p.filter, 0xd1));    /* AMD Zen */
    helper_policy_clear(&p);
}
END_TEST

/* /proc/PID/{cgroup,cmdline} of a made-up process, and its name. */
#define CMD(s) s, sizeof(s) - 1
static const struct {
    const char *cgroup;
    const char *cmdline;        /* NUL-separated arguments */
    size_t cmdline_len;
    const char *vm;             /* NULL: no name */
    bool by_cgroup;
} ids[] = {
    /* libvirt without systemd (cgroup v1 controllers). */
    { "4:memory:/machine/qemu-12-web-1.libvirt-qemu/emulator\n",
      CMD("qemu\0-name\0guest=liar\0"), "web-1", true },
    /* libvirt with systemd: '-' escaped as \x2d. */
    { "0::/machine.slice/machine-qemu\\x2d3\\x2ddb.scope/libvirt/vcpu0\n",
      CMD(""), "db", true },
    /* No libvirt cgroup: -name guest=NAME,debug-threads=on. */
    { "0::/user.slice\n", CMD("qemu\0-name\0guest=demo,debug-threads=on\0"),
      "demo", false },
    /* -name NAME. */
    { "0::/\n", CMD("qemu\0-m\0512\0-name\0plain\0"), "plain", false },
    /* Nothing names it. */
    { "0::/\n", CMD("qemu\0-m\0512\0"), NULL, false },
    /* -name as the last argument, with no value. */
    { "0::/\n", CMD("qemu\0-name\0"), NULL, false },
};

START_TEST(test_identity)
{
    char root[] = "/tmp/vpmu-proc-XXXXXX", sub[64], vm[64] = "";
    bool cg = !ids[_i].by_cgroup;

    ck_assert_ptr_nonnull(mkdtemp(root));
    snprintf(sub, sizeof(sub), "%s/4242", root);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    write_file(sub, "cgroup", ids[_i].cgroup);
    write_bytes(sub, "cmdline", ids[_i].cmdline, ids[_i].cmdline_len);
    if (ids[_i].vm) {
        ck_assert_int_eq(helper_vm_identity(root, 4242, vm, sizeof(vm), &cg),
                         0);
        ck_assert_str_eq(vm, ids[_i].vm);
        ck_assert(cg == ids[_i].by_cgroup);
    } else {
        ck_assert_int_eq(helper_vm_identity(root, 4242, vm, sizeof(vm), &cg),
                         -ENOENT);
    }
    ck_assert_int_eq(helper_vm_identity(root, 4343, vm, sizeof(vm), &cg),
                     -ENOENT);
    remove_tree(root);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("helper-policy");
    TCase *tc = tcase_create("policy");

    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_every_key);
    tcase_add_loop_test(tc, test_bad, 0, (int)(sizeof(bad) / sizeof(bad[0])));
    tcase_add_test(tc, test_events_too_long);
    tcase_add_test(tc, test_load);
    tcase_add_test(tc, test_shipped_default);
    tcase_add_loop_test(tc, test_identity, 0,
                        (int)(sizeof(ids) / sizeof(ids[0])));
    suite_add_tcase(s, tc);
    return run_suite(s);
}
