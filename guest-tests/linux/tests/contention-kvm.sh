#!/bin/sh
# contention-kvm: this guest (L2) counts while its host (L1) holds every
# hardware counter.  L1 (guest-tests/nested/init-l1, "contend") runs
# perf stat -a with a pinned group of 6 cycles events, as many as its
# AMD PerfMonV2 PMU has, and answers once that group counts.  The host
# events behind this guest's counters then never get a counter: KVM's own
# (emulated configuration) are pinned task events and go to error state,
# vpmu's perf source (vpmu configuration) opens flexible ones that never run,
# and its multiplexing policy is the raw count (docs/perf-source.md,
# VPMU_PERF_MULTIPLEX_RAW, "as KVM: the guest undercounts"), so:
#
#   loop_1M under full contention: instructions:u = 0 and branches:u = 0
#   loop_1M after L1 ends its group ("release"): 2N+4 and N+1 exactly
#
# Needs L1 (vpmu.nested=1); otherwise every check is skipped.
# shellcheck source=SCRIPTDIR/../tap-lib.sh
. /vpmu/tap-lib.sh
plan 6

N=1000000
if [ "${VPMU_NESTED:-0}" != 1 ]; then
    r="needs L1 to hold the host's counters (guest-tests/nested, vpmu.nested=1)"
    for d in "L1 holds all its counters" "contended: loop_1M instructions:u = 0" \
            "contended: loop_1M branches:u = 0" "L1 released its counters" \
            "released: loop_1M instructions:u = 2N+4" "released: loop_1M branches:u = N+1"; do
        skip "$d" "$r"
    done
    finish
fi


# loop PHASE I B IDESC BDESC: loop_1M under perf stat must count
# instructions:u = I and branches:u = B (IDESC, BDESC: how the checks say it).
loop() {
    pstat c.csv instructions:u,branches:u "$BIN/loop_1M"
    i=$(count c.csv instructions:u)
    b=$(count c.csv branches:u)
    diag "$1_loop_1M: instructions:u=$i branches:u=$b (expected $2 and $3)"
    check "$1: loop_1M instructions:u = $4" eq "$i" "$2"
    check "$1: loop_1M branches:u = $5" eq "$b" "$3"
}

# L1 reads query-vpmu before, while contended and after the release: the
# host counter time vpmu's events lost (source-lost-ns) must grow while L1
# holds the counters (L1 checks; vpmu configuration only).
ask_l1 "query before-contend" || :
check "L1 holds all its counters" ask_l1 contend
loop contended 0 0 0 0
ask_l1 "query contended" || :

check "L1 released its counters" ask_l1 release
loop released $((2 * N + 4)) $((N + 1)) 2N+4 N+1
ask_l1 "query released" || :

finish
