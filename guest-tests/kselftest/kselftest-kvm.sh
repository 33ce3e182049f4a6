#!/bin/sh
# kselftest-kvm: KVM's PMU event filter selftest
# (tools/testing/selftests/kvm/x86_64/pmu_event_filter_test, the 6.1 one,
# built statically by guest-tests/kselftest/build.sh) against this guest's
# own KVM.  The guest is the kselftest suite's L1: a TCG guest with SVM
# whose PMU is vpmu's (EPYC-v3, family 0x17 model 1: Zen 1, which the test
# knows); it loads kvm-amd from /lib/modules (the overlay modules.cpio.gz).
# Busybox sh, run by the guest image's /init (vpmu.test=kselftest-kvm).
#
# The selftest's guest code programs K7 counter 0 with "retired branch
# instructions" (0xC2, OS mode), runs "loop ." 42 times and reports the
# counter's delta; the host side runs it with no filter, with deny and
# allow lists that contain the event or not, and checks the count is
# non-zero where the event is allowed and zero where it is denied.
# Then KVM_CAP_PMU_CAPABILITY's DISABLE must hide the PMU.  It prints
# "<case>: Branch instructions retired = N (expected 42)" when an allowed
# count is not 42 (and passes if it is not 0).
#
# Lines: kvm-amd loaded (a skip of the rest if L1 has no SVM or an insmod
# fails, as in the nested suite); the selftest exited 0 (4, kselftest's
# skip, is a SKIP with its reason); every allowed count was exactly 42:
# L1's KVM counts the guest's branches through host perf events on L1's
# PMU, vpmu under TCG, which counts exactly (no "expected" line).
# shellcheck source=SCRIPTDIR/../linux/tap-lib.sh
. /vpmu/tap-lib.sh

T=/vpmu/kselftest/kvm/pmu_event_filter_test
plan 3
diag "selftest of $(cat /vpmu/kselftest/VERSION 2>/dev/null || echo '?'), kernel $(uname -r)"
diag "cpu flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' |
    grep -xE 'svm|npt|nrip_save|perfctr_core|perfmon_v2' | paste -sd' ')"

# skip_rest WHY: the selftest cannot run here.
skip_rest() {
    skip "kvm-amd loaded, /dev/kvm present" "$1"
    skip "pmu_event_filter_test" "$1"
    skip "pmu_event_filter_test: every allowed count exactly 42" "$1"
    finish
}
grep -qw svm /proc/cpuinfo || skip_rest "no SVM in this guest's CPU flags"
moddir=/lib/modules/$(uname -r)/kernel
for m in virt/lib/irqbypass arch/x86/kvm/kvm drivers/crypto/ccp/ccp arch/x86/kvm/kvm-amd; do
    if ! insmod "$moddir/$m.ko" >/tmp/insmod.err 2>&1; then
        diag_file /tmp/insmod.err 5
        dmesg | grep -iE 'kvm|svm|ccp' | tail -n 5 | sed 's/^/# dmesg: /'
        skip_rest "insmod ${m##*/}.ko failed: $(head -n1 /tmp/insmod.err)"
    fi
done
if [ -c /dev/kvm ]; then
    pass "kvm-amd loaded, /dev/kvm present"
else
    fail "kvm-amd loaded, /dev/kvm present"
fi
diag "kvm: enable_pmu=$(cat /sys/module/kvm/parameters/enable_pmu 2>/dev/null)" \
     "nested=$(cat /sys/module/kvm_amd/parameters/nested 2>/dev/null)" \
     "npt=$(cat /sys/module/kvm_amd/parameters/npt 2>/dev/null)"

t0=$(cut -d' ' -f1 /proc/uptime)
timeout 300 "$T" >/tmp/pef.out 2>&1
rc=$?
secs=$(awk -v t0="$t0" '{ printf "%.1f", $1 - t0 }' /proc/uptime)
diag_file /tmp/pef.out 40
case $rc in
0) pass "pmu_event_filter_test (exit 0, $secs s)" ;;
4) skip "pmu_event_filter_test" \
       "the selftest skipped: $(grep -m1 -i 'skip\|require' /tmp/pef.out)" ;;
*) fail "pmu_event_filter_test (exit $rc, $secs s)" ;;
esac
# "test_x: Branch instructions retired = N (expected 42)": an allowed
# count that is not 42.  Only meaningful if the cases ran.
inexact=$(grep -c 'Branch instructions retired = .*(expected 42)' /tmp/pef.out)
if [ "$rc" != 0 ]; then
    skip "pmu_event_filter_test: every allowed count exactly 42" "the selftest did not pass"
elif [ "$inexact" = 0 ]; then
    pass "pmu_event_filter_test: every allowed count exactly 42"
else
    fail "pmu_event_filter_test: every allowed count exactly 42 ($inexact not)"
fi
finish
