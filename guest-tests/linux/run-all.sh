#!/bin/bash
# Run the guest suite (run-guest.sh) in every configuration that make check
# wants, one guest boot each, one after the other:
#
#   intel         CPU=max,vendor=GenuineIntel,pmu=on SMP=1    all tests
#   intel-smp2    the same with SMP=2                         all tests
#   amd           CPU=EPYC,pmu=on SMP=1                       all tests
#   intel-icount  Intel, SMP=1, ICOUNT=0                      multiplex
#   amd-icount    AMD, SMP=1, ICOUNT=0                        multiplex
#
# The icount runs are there for multiplex's 1% checks, which need guest time
# that advances with retired instructions (see tests/multiplex.sh); without
# -icount those checks are skipped.
#
# Usage: run-all.sh [CONFIG...]      (default: all five, in that order)
#
# Environment: QEMU, IMAGE, TIMEOUT, REQUIRE_PMU as for run-guest.sh;
# KERNEL defaults to vmlinux when the image has it (PVH boot, faster).
# VERBOSE=1 streams the guests' serial output.  The logs are kept in
# LOGDIR (default IMAGE/run-all/CONFIG.log).
#
# The last line is "guest-linux: N passed, N failed, N skipped", counted over
# the TAP lines of all runs ("ok", "not ok", "# SKIP"); a run whose guest
# does not report an exit status of 0 without any "not ok" counts as one more
# failure.  Exit status: 0 if nothing failed, 1 otherwise.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
image=${IMAGE:-$top/build/guest}
logdir=${LOGDIR:-$image/run-all}
intel=max,vendor=GenuineIntel,pmu=on
amd=EPYC,pmu=on

if [[ -z ${KERNEL:-} ]]; then
    if [[ -f $image/vmlinux ]]; then KERNEL=vmlinux; else KERNEL=vmlinuz; fi
fi
export KERNEL IMAGE=$image

# config NAME: "CPU SMP ICOUNT TESTS" ("-" for no ICOUNT).
config() {
    case $1 in
    intel) echo "$intel 1 - all" ;;
    intel-smp2) echo "$intel 2 - all" ;;
    amd) echo "$amd 1 - all" ;;
    intel-icount) echo "$intel 1 0 multiplex" ;;
    amd-icount) echo "$amd 1 0 multiplex" ;;
    *) return 1 ;;
    esac
}

configs=("$@")
((${#configs[@]})) || configs=(intel intel-smp2 amd intel-icount amd-icount)
for c in "${configs[@]}"; do
    config "$c" >/dev/null || { echo "run-all: unknown configuration $c" >&2; exit 2; }
done
mkdir -p "$logdir"

total_pass=0 total_fail=0 total_skip=0
failed_runs=()
t0=$(date +%s)
for c in "${configs[@]}"; do
    read -r cpu smp icount tests <<<"$(config "$c")"
    log=$logdir/$c.log
    desc="CPU=$cpu SMP=$smp"
    [[ $icount == - ]] || desc+=" ICOUNT=$icount"
    echo "run-all: $c ($desc, tests: $tests)"
    env=(CPU="$cpu" SMP="$smp" LOG="$log")
    [[ $icount == - ]] || env+=(ICOUNT="$icount")
    s=$(date +%s)
    if [[ ${VERBOSE:-0} == 1 ]]; then
        env "${env[@]}" "$here/run-guest.sh" "$tests"
    else
        env "${env[@]}" "$here/run-guest.sh" "$tests" >/dev/null 2>&1
    fi
    rc=$?
    secs=$(($(date +%s) - s))
    # TAP lines of the serial log (CRs from the console removed).
    tr -d '\r' <"$log" 2>/dev/null | grep -E '^(not )?ok [0-9]+' >"$logdir/$c.tap"
    read -r p f k <<<"$(awk '
        /# *SKIP/ { k++; next }
        /^not ok/ && !/# *TODO/ { f++; next }
        { p++ }
        END { print p + 0, f + 0, k + 0 }' "$logdir/$c.tap")"
    extra=""
    if [[ $rc != 0 && $f == 0 ]]; then
        f=1
        extra=" (run-guest.sh exit status $rc: the guest did not report a pass)"
    fi
    echo "run-all: $c: $p passed, $f failed, $k skipped, ${secs} s$extra (log: $log)"
    if ((f)); then
        failed_runs+=("$c")
        grep -E '^not ok' "$logdir/$c.tap" | grep -vE '# *(SKIP|TODO)' |
            sed "s/^/run-all: $c: /"
    fi
    total_pass=$((total_pass + p)) total_fail=$((total_fail + f))
    total_skip=$((total_skip + k))
done
echo "run-all: $(($(date +%s) - t0)) s${failed_runs[*]:+; failed: ${failed_runs[*]}}"
echo "guest-linux: $total_pass passed, $total_fail failed, $total_skip skipped"
((total_fail == 0))
