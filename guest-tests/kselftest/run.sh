#!/usr/bin/env bash
# The kselftest suite: the kernel's own PMU selftests in vpmu guests.
#
#   intel  TCG, CPU=max,vendor=GenuineIntel,pmu=on   vpmu.test=kselftest
#   amd    TCG, CPU=EPYC,pmu=on                      vpmu.test=kselftest
#   kvm    TCG with SVM, CPU=EPYC-v3,pmu=on,+svm     vpmu.test=kselftest-kvm
#          (an L1 like the nested suite's: its PMU is vpmu's, and KVM's
#          pmu_event_filter_test runs against its KVM)
#
# build.sh builds the selftests (statically, from Debian's linux-source,
# cached in ~/.cache/vpmu/kselftest) and the overlay initramfs that goes
# after the guest image's; each configuration is one run-guest.sh boot of
# OUT/image (or OUT/l1).  The in-guest scripts (kselftest.sh,
# kselftest-kvm.sh) print one TAP line per selftest case.
#
# Prints one TAP stream (guest-tests/tap.sh): each configuration's lines,
# renumbered, "CONFIG: " in front of each description, then one line per
# configuration (the guest reported its exit status and it agrees with the
# lines; a crash or a timeout fails it).  "1..0 # SKIP" without QEMU or
# the guest image.  Exit status 0 once TAP is out.
#
# Usage: run.sh [CONFIG...]      (default: intel amd kvm)
#
# Environment: QEMU, IMAGE (the base guest image, default build/guest),
# KSELFTEST (OUT: images and logs, default build/kselftest), VPMU_CACHE,
# VERBOSE=1 (the guests' serial output on stderr).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../tap.sh
. "$here/../tap.sh"
qemu=${QEMU:-$top/build/qemu/qemu-system-x86_64}
base=${IMAGE:-$top/build/guest}
out=${KSELFTEST:-$top/build/kselftest}

# config NAME: "IMAGE-SUBDIR CPU TESTS LIMIT" (LIMIT: run-guest.sh's
# TIMEOUT, about three times the longest run seen on a busy 2-CPU host:
# 160 s, 125 s, 26 s).
config() {
    case $1 in
    intel) echo "image max,vendor=GenuineIntel,pmu=on kselftest 480" ;;
    amd) echo "image EPYC,pmu=on kselftest 480" ;;
    kvm) echo "l1 EPYC-v3,pmu=on,+svm kselftest-kvm 180" ;;
    *) return 1 ;;
    esac
}
configs=("$@")
((${#configs[@]})) || configs=(intel amd kvm)
for c in "${configs[@]}"; do
    config "$c" >/dev/null || { echo "kselftest: unknown configuration $c" >&2; exit 2; }
done

[[ -x $qemu ]] || tap_skip_all "no QEMU at $qemu (make qemu)"
[[ -f $base/initramfs.cpio.gz ]] ||
    tap_skip_all "no guest image in $base (guest-tests/linux/build-image.sh)"
mkdir -p "$out"

tap_begin
s=$(date +%s)
if ! "$here/build.sh" "$out" >"$out/build.log" 2>&1; then
    sed 's/^/# /' "$out/build.log" | tail -n 20
    tap 1 "build the selftests and the overlay (log: $out/build.log)"
    tap_end
fi
echo "# selftests of $(cat "$out/VERSION") (build.sh: $(($(date +%s) - s)) s;" \
     "$(grep -m1 'selftests of' "$out/build.log" | sed 's/.*: //'))"

t0=$(date +%s)
for c in "${configs[@]}"; do
    read -r sub cpu tests limit <<<"$(config "$c")"
    kernel=vmlinux
    [[ -e $out/$sub/$kernel ]] || kernel=vmlinuz
    log=$out/$c.log
    echo "# kselftest: $c (CPU=$cpu, tests: $tests)"
    env=(QEMU="$qemu" IMAGE="$out/$sub" KERNEL="$kernel" CPU="$cpu" SMP=1
         LOG="$log" TIMEOUT="$limit")
    tap_guest "$c" "$log" "$out" "its selftests" \
        env "${env[@]}" "$top/guest-tests/linux/run-guest.sh" "$tests"
done
echo "# kselftest: $(($(date +%s) - t0)) s"
tap_end
