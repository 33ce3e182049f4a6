#!/usr/bin/env bash
# The nested suite: a real Linux guest under KVM, one level down.
#
#   host --TCG--> L1: our QEMU, -accel tcg -cpu "$L1CPU" -m 3072,
#                     the stock Debian kernel, kvm-amd  (PMU: vpmu under TCG)
#        --KVM--> L2: the same QEMU inside L1, -accel kvm -cpu host,pmu=on
#                     (L1 KVM's emulated vPMU) or -accel kvm,vpmu=on (vpmu's
#                     KVM front end), the guest image of guest-tests/linux
#
# L1's /init (init-l1) runs each L2 configuration, re-emits L2's TAP with the
# configuration in front of each description, and compares the exact counts
# across configurations.  This script builds (or reuses, by mtime) the guest
# image and the L1 image, boots L1 under a timeout, prints L1's TAP and a
# check of its own, and the plan.  The host needs no KVM.
#
#   guest-tests/nested/run.sh    one TAP stream (guest-tests/tap.sh), exit 0;
#                                "1..0 # SKIP <reason>": no QEMU, no SVM in
#                                L1, kvm-amd did not load
# Environment:
#   QEMU      default build/qemu/qemu-system-x86_64 (make qemu); the same
#             binary runs L1 and, copied into L1's image, L2
#   RUNS      L1's nested.runs= (default
#             "emulated:stat-exact,record-kvm,multiplex,perf-test,contention-kvm;vpmu:stat-exact,record-kvm,multiplex,qmp-kvm,contention-kvm,migrate-kvm,perf-mmap-kvm;vpmuscaled:contention-kvm;operator:operator-kvm,profile-kvm;libvirt:stat-exact,record-kvm")
#   TIMEOUT   L1's wall-clock limit in seconds (default: L2TIMEOUT for each
#             configuration in RUNS, plus 120 for L1's boot and its own
#             checks).  It guards against an L1 that hangs outside an L2;
#             each L2 has its own limit, so a slow machine on which every
#             L2 finishes in time must not fail here.
#   L2TIMEOUT each L2's limit inside L1 (default 240: the longer list, vpmu's, takes 60-120 s)
#   L1CPU     L1's -cpu (default EPYC-v3,pmu=on,+svm; without +svm the suite
#             skips: a check of the skip path)
#   L1_KERNEL stable (default: the guest image's Debian kernel, 6.1) or sid:
#             Debian sid's current kernel (scripts/sid-kernel.sh), whose KVM
#             emulates PerfMonV2, as vpmulinux needs; the suite skips with
#             the reason when sid's cannot be fetched
#   NESTED    the L1 image and logs (default build/nested)
#   IMAGE     the L2 guest image (default build/guest)
#   VERBOSE=1 streams L1's serial output to stderr
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
QEMU=${QEMU:-$ROOT/build/qemu/qemu-system-x86_64}
OUT=${NESTED:-$ROOT/build/nested}
IMAGE=${IMAGE:-$ROOT/build/guest}
RUNS=${RUNS:-emulated:stat-exact,record-kvm,multiplex,perf-test,contention-kvm;vpmu:stat-exact,record-kvm,multiplex,qmp-kvm,contention-kvm,migrate-kvm,perf-mmap-kvm;vpmuscaled:contention-kvm;operator:operator-kvm,profile-kvm;libvirt:stat-exact,record-kvm}
L2LIMIT=${L2TIMEOUT:-240}
ncfg=$(printf '%s\n' "$RUNS" | tr ';' '\n' | grep -c .)
LIMIT=${TIMEOUT:-$((ncfg * L2LIMIT + 120))}
L1CPU=${L1CPU:-EPYC-v3,pmu=on,+svm}
LOG=$OUT/l1.log
# shellcheck source-path=SCRIPTDIR source=../tap.sh
. "$HERE/../tap.sh"

skip() {
    tap_skip_all "$@"
}
# stale TARGET FILE...: TARGET is missing or some FILE is newer than it.
stale() {
    local t=$1 f
    shift
    [ -e "$t" ] || return 0
    for f in "$@"; do
        [ ! "$f" -nt "$t" ] || return 0
    done
    return 1
}

[ -x "$QEMU" ] || skip "no QEMU at $QEMU (make qemu)"
QEMU=$(cd "$(dirname "$QEMU")" && pwd)/$(basename "$QEMU")
mkdir -p "$OUT"
case ${L1_KERNEL:-stable} in
stable) L1_KERNEL_DEBS= ;;
sid)
    # build-l1.sh takes L1's kernel and modules from these .debs.
    L1_KERNEL_DEBS=$("$ROOT/scripts/sid-kernel.sh" "$OUT/sid-apt.log" \
                     2>"$OUT/sid-kernel.err") ||
        skip "Debian sid's kernel not fetched: $(tail -n1 "$OUT/sid-kernel.err" | sed 's/^sid-kernel: //')"
    ;;
*) skip "L1_KERNEL=$L1_KERNEL: stable or sid" ;;
esac
export L1_KERNEL_DEBS

# --- images ----------------------------------------------------------------------
tap_begin
build_fail() {   # build_fail WHAT LOG
    sed 's/^/# /' "$2" | tail -n 20
    tap 1 "$1 (log: $2)"
    tap_end
}
linux=$ROOT/guest-tests/linux
if stale "$IMAGE/initramfs.cpio.gz" "$linux/build-image.sh" "$linux/init" \
        "$linux/tap-lib.sh" "$linux"/tests/*.sh "$linux"/workloads/*; then
    echo "# building the guest image: guest-tests/linux/build-image.sh $IMAGE"
    "$linux/build-image.sh" "$IMAGE" >"$OUT/build-image.log" 2>&1 ||
        build_fail "build the guest image" "$OUT/build-image.log"
fi
# shellcheck disable=SC2086 # L1_KERNEL_DEBS: a list of files
if stale "$OUT/initramfs.cpio.gz" "$QEMU" "$HERE/build-l1.sh" "$HERE/init-l1" "$HERE"/l1*.py \
        "$HERE/../qmpclient.py" "$HERE/../pytap.py" \
        "$IMAGE/initramfs.cpio.gz" "$IMAGE/vmlinuz" "$ROOT/build/vpmu-helper" \
        $L1_KERNEL_DEBS; then
    echo "# building the L1 image: guest-tests/nested/build-l1.sh $OUT"
    s=$(date +%s)
    QEMU=$QEMU L2IMAGE=$IMAGE "$HERE/build-l1.sh" "$OUT" >"$OUT/build-l1.log" 2>&1 ||
        build_fail "build the L1 image" "$OUT/build-l1.log"
    echo "# L1 image built in $(($(date +%s) - s)) s"
fi
echo "# L1 image: $(paste -sd' ' "$OUT/qemu.txt" 2>/dev/null) (QEMU in it)"
kernel=$OUT/vmlinux
[ -f "$kernel" ] || kernel=$OUT/vmlinuz

# --- L1 ----------------------------------------------------------------------------
append="console=ttyS0 panic=-1 quiet nmi_watchdog=0"
append+=" nested.runs=$RUNS nested.timeout=$L2LIMIT"
cmd=("$QEMU" -L /usr/share/qemu -L /usr/share/seabios
     -accel tcg -cpu "$L1CPU" -m 3072
     -nographic -no-reboot -net none
     -kernel "$kernel" -initrd "$OUT/initramfs.cpio.gz" -append "$append")
echo "# L1: ${cmd[*]}"
s=$(date +%s)
if [ "${VERBOSE:-0}" = 1 ]; then
    timeout -k 10 "$LIMIT" "${cmd[@]}" </dev/null 2>&1 | tee "$LOG" >&2
    rc=${PIPESTATUS[0]}
else
    timeout -k 10 "$LIMIT" "${cmd[@]}" </dev/null >"$LOG" 2>&1
    rc=$?
fi
secs=$(($(date +%s) - s))
tr -d '\r' <"$LOG" >"$OUT/l1.out"

status=$(sed -n 's/.*VPMU-L1-EXIT \([0-9][0-9]*\).*/\1/p' "$OUT/l1.out" | tail -n1)
if [ "$status" = 77 ]; then
    # What L1 printed (the kernel's words among it), then its reason.
    grep -E '^# ' "$OUT/l1.out"
    skip "$(sed -n 's/^SKIP //p' "$OUT/l1.out" | head -n1)"
fi
# L1's TAP and diagnostics (L1 numbers them; L2's lines are there
# renumbered, and L2's other output as "# CFG| ..."), in this stream.
grep -E '^(# |(not )?ok [0-9]+)' "$OUT/l1.out" >"$OUT/l1.tap"
tap_copy "" "$OUT/l1.tap"
n=$TAP_N
plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$OUT/l1.out" | tail -n1)

if [ -n "$status" ]; then
    # Status 1 is a failed check of L1's, already counted above: L1 still
    # ran to its end.  What this checks is that it got there, plan and all.
    { [ "$status" = 0 ] || [ "$status" = 1 ]; } && [ "$plan" = "$n" ]
    tap $? "L1 ran every configuration (VPMU-L1-EXIT $status, plan 1..${plan:-?} for $n lines, $secs s)"
elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    tail -n 20 "$OUT/l1.out" | sed 's/^/# L1| /'
    tap 1 "L1 ran every configuration (timed out after $LIMIT s; log: $LOG)"
else
    tail -n 20 "$OUT/l1.out" | sed 's/^/# L1| /'
    tap 1 "L1 ran every configuration (no VPMU-L1-EXIT, QEMU status $rc, $secs s; log: $LOG)"
fi
echo "# L1: $secs s (log: $LOG)"
tap_end
