#!/bin/bash
# Run the guest suite (run-guest.sh) in every configuration that make check
# wants, one guest boot each, one after the other:
#
#   intel         CPU=max,vendor=GenuineIntel,pmu=on SMP=1    all tests
#   intel-smp2    the same with SMP=2                         all tests
#   amd           CPU=EPYC,pmu=on SMP=1                       all tests
#   intel-icount  Intel, SMP=1, ICOUNT=0                      multiplex
#   amd-icount    AMD, SMP=1, ICOUNT=0                        multiplex
#   tools-intel   CPU=Skylake-Client,pmu=on SMP=1             rr, papi
#   tools-intel-smp2  the same with SMP=2                     rr
#   tools-amd     CPU=EPYC,pmu=on SMP=1                       rr, papi
#   tools-amd-smp2    the same with SMP=2                     rr
#   insns-intel   Skylake-Client with pmu-cycles=insns (vpmu.cycles=insns)
#                                                             stat-exact, record, papi
#   insns-amd     EPYC with pmu-cycles=insns                  stat-exact, record, papi
#   load-intel    Intel (pmu-cycles=cputime), only for guest-tests/load  stat-exact, record
#   load-amd      AMD, the same                               stat-exact, record
#
# rr and libpfm4 (PAPI) know neither max's family/model nor qemu64's: the
# tools' configurations use models they do (docs/rr-papi-events.md).
# The icount runs are there for multiplex's 1% checks, which need guest time
# that advances with retired instructions (see tests/multiplex.sh); without
# -icount those checks are skipped.
#
# The insns runs check that a cycle is a retired instruction (docs/tcg.md,
# "Cycles"): exact cycles:u, sampling like instructions, exact
# PAPI_TOT_CYC.
#
# Usage: run-all.sh [CONFIG...]      (default: all but load-*, in that order)
#
# Environment: QEMU, IMAGE, TIMEOUT, REQUIRE_PMU, APPEND as for run-guest.sh;
# KERNEL defaults to vmlinux when the image has it (PVH boot, faster).
# VERBOSE=1 streams the guests' serial output to stderr.  The logs are kept
# in LOGDIR (default IMAGE/run-all/CONFIG.log).
#
# Prints one TAP stream (guest-tests/tap.sh): every configuration's TAP
# lines, renumbered, with "CONFIG: " in front of each description, then a
# line of its own per configuration: the guest reported its exit status
# and it agrees with the lines (0 without a failure, 1 with one).  A guest
# that crashed or timed out fails that line.  Exit status 0 once TAP is out.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../tap.sh
. "$here/../tap.sh"
image=${IMAGE:-$top/build/guest}
logdir=${LOGDIR:-$image/run-all}
intel=max,vendor=GenuineIntel,pmu=on
amd=EPYC,pmu=on
skylake=Skylake-Client,pmu=on

if [[ -z ${KERNEL:-} ]]; then
    if [[ -f $image/vmlinux ]]; then KERNEL=vmlinux; else KERNEL=vmlinuz; fi
fi
export KERNEL IMAGE=$image

# config NAME: "CPU SMP ICOUNT TESTS [APPEND...]" ("-" for no ICOUNT).
config() {
    case $1 in
    intel) echo "$intel 1 - all" ;;
    intel-smp2) echo "$intel 2 - all" ;;
    amd) echo "$amd 1 - all" ;;
    intel-icount) echo "$intel 1 0 multiplex" ;;
    amd-icount) echo "$amd 1 0 multiplex" ;;
    tools-intel) echo "$skylake 1 - rr,papi" ;;
    tools-intel-smp2) echo "$skylake 2 - rr" ;;
    tools-amd) echo "$amd 1 - rr,papi" ;;
    tools-amd-smp2) echo "$amd 2 - rr" ;;
    insns-intel) echo "$skylake,pmu-cycles=insns 1 - stat-exact,record,papi vpmu.cycles=insns" ;;
    insns-amd) echo "$amd,pmu-cycles=insns 1 - stat-exact,record,papi vpmu.cycles=insns" ;;
    load-intel) echo "$intel 1 - stat-exact,record" ;;
    load-amd) echo "$amd 1 - stat-exact,record" ;;
    *) return 1 ;;
    esac
}

configs=("$@")
((${#configs[@]})) || configs=(intel intel-smp2 amd intel-icount amd-icount
                                tools-intel tools-intel-smp2 tools-amd
                                tools-amd-smp2 insns-intel insns-amd)
for c in "${configs[@]}"; do
    config "$c" >/dev/null || { echo "run-all: unknown configuration $c" >&2; exit 2; }
done
mkdir -p "$logdir"

tap_begin
t0=$(date +%s)
for c in "${configs[@]}"; do
    read -r cpu smp icount tests append <<<"$(config "$c")"
    log=$logdir/$c.log
    desc="CPU=$cpu SMP=$smp"
    [[ $icount == - ]] || desc+=" ICOUNT=$icount"
    echo "# run-all: $c ($desc, tests: $tests)"
    env=(CPU="$cpu" SMP="$smp" LOG="$log"
         APPEND="${APPEND:-}${append:+ $append}")
    [[ $icount == - ]] || env+=(ICOUNT="$icount")
    tap_guest "$c" "$log" "$logdir" "every test" \
        env "${env[@]}" "$here/run-guest.sh" "$tests"
done
echo "# run-all: $(($(date +%s) - t0)) s"
tap_end
