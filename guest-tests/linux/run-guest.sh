#!/bin/bash
# Boot the vpmu guest image (build-image.sh) under QEMU TCG, run the in-guest
# tests, print the guest's serial output, and exit with the guest's status.
#
# Usage: run-guest.sh [TEST[,TEST...] | all]      (default: all)
#
# Environment:
#   QEMU         QEMU binary (default: build/qemu/qemu-system-x86_64 in the
#                repository, else Debian's /usr/bin/qemu-system-x86_64,
#                which has no PMU under TCG)
#   CPU          -cpu model (default max,vendor=GenuineIntel,pmu=on: QEMU's
#                TCG CPU, family 15 model 107, no real Intel model, so Linux
#                takes its generic architectural PMU path; Skylake-Client,pmu=on
#                for the model-specific driver; AMD: EPYC,pmu=on)
#   SMP          number of vCPUs (default 1; the smp test needs 2)
#   IMAGE        directory with vmlinuz and initramfs.cpio.gz (default
#                build/guest in the repository)
#   KERNEL       vmlinuz (default) or vmlinux: the same kernel decompressed,
#                booted through its PVH entry; saves the several seconds
#                TCG takes to decompress vmlinuz
#   TIMEOUT      wall-clock limit in seconds (default 300 per test, 900 for all)
#   REQUIRE_PMU  1 (default): no guest PMU => tests fail; 0: they skip
#   ICOUNT       SHIFT: run with -icount shift=SHIFT,sleep=off, so that guest
#                time advances with retired instructions (2^SHIFT ns each)
#                instead of host time; the multiplex test needs it for its 1%
#                checks.  Adds idle=poll: vpmu's HLT hook reads the clock in
#                the middle of a TB, which -icount aborts on ("Bad icount
#                read").  Also tells the guest (vpmu.icount=SHIFT).
#   APPEND       extra kernel command line
#   LOG          where to keep the serial output (default IMAGE/guest.log)
#   INTERACTIVE  1: keep stdin on the serial console (with APPEND=vpmu.shell=1
#                you get a shell after the tests; Ctrl-A X quits QEMU)
#   QMP          a UNIX socket path: QEMU serves QMP there (for a caller that
#                talks to it while the guest runs; bench/guest-overhead.sh)
#
# Exit status: the guest's (0 all passed, 1 a test failed), 2 if the guest
# died without reporting, 124 on timeout.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)   # the repository
tests=${1:-all}
image=${IMAGE:-$top/build/guest}
smp=${SMP:-1}
cpu=${CPU:-max,vendor=GenuineIntel,pmu=on}
log=${LOG:-$image/guest.log}
if [[ $tests == all ]]; then limit=${TIMEOUT:-900}; else limit=${TIMEOUT:-300}; fi

die() { echo "run-guest: $*" >&2; exit 2; }

if [[ -n ${QEMU:-} ]]; then
    qemu=$QEMU
    [[ -x $qemu ]] || qemu=$(command -v "$qemu") || die "QEMU=$QEMU not found"
elif [[ -x $top/build/qemu/qemu-system-x86_64 ]]; then
    qemu=$top/build/qemu/qemu-system-x86_64
else
    qemu=/usr/bin/qemu-system-x86_64
    [[ -x $qemu ]] || die "no QEMU: build it or apt-get install qemu-system-x86"
    echo "run-guest: build/qemu/qemu-system-x86_64 not found;" \
         "using Debian's $qemu (no PMU under TCG)" >&2
fi
kernel=${KERNEL:-vmlinuz}
for f in "$kernel" initramfs.cpio.gz; do
    [[ -f $image/$f ]] || die "$image/$f missing: run guest-tests/linux/build-image.sh"
done

append="console=ttyS0 panic=-1 quiet nmi_watchdog=0 vpmu.test=$tests"
append+=" vpmu.require_pmu=${REQUIRE_PMU:-1}"
icount=()
if [[ -n ${ICOUNT:-} ]]; then
    [[ $ICOUNT =~ ^[0-9]+$ ]] || die "ICOUNT=$ICOUNT: want a shift (e.g. 0)"
    icount=(-icount "shift=$ICOUNT,sleep=off")
    append+=" idle=poll vpmu.icount=$ICOUNT"
fi
append+="${APPEND:+ $APPEND}"
cmd=("$qemu" -L /usr/share/qemu -L /usr/share/seabios
     -accel tcg "${icount[@]}" -cpu "$cpu" -smp "$smp" -m 512
     -nographic -no-reboot -net none
     -kernel "$image/$kernel" -initrd "$image/initramfs.cpio.gz"
     -append "$append")
[[ -z ${QMP:-} ]] || cmd+=(-qmp "unix:$QMP,server=on,wait=off")
echo "run-guest: ${cmd[*]}" >&2

start=$(date +%s.%N)
[[ ${INTERACTIVE:-0} == 1 ]] || exec </dev/null
timeout --foreground -k 10 "$limit" "${cmd[@]}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

status=$(tr -d '\r' <"$log" |
    sed -n 's/.*VPMU-GUEST-EXIT \([0-9][0-9]*\).*/\1/p' | tail -n1)
if [[ -n $status ]]; then
    echo "run-guest: guest exit status $status after ${secs} s (log: $log)" >&2
    exit "$status"
fi
if [[ $rc == 124 || $rc == 137 ]]; then
    echo "run-guest: timed out after ${limit} s (log: $log)" >&2
    exit 124
fi
echo "run-guest: the guest ended without reporting (QEMU status $rc," \
     "${secs} s; log: $log)" >&2
exit 2
