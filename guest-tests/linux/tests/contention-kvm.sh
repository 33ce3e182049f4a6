#!/bin/sh
# contention-kvm: this guest (L2) counts while its host (L1) uses the same
# hardware counters.  L1 (guest-tests/nested/init-l1) answers the requests.
#
# "contend": L1 runs perf stat -a with a pinned group of 6 cycles events,
# as many as its AMD PerfMonV2 PMU has.  The host events behind this
# guest's counters then never get a counter: KVM's own (emulated
# configuration) are pinned task events and go to error state, vpmu's perf
# source opens flexible ones that never run.  Raw or scaled
# (docs/perf-source.md), nothing ran, so:
#
#   loop_1M under full contention: instructions:u = 0 and branches:u = 0
#   loop_1M after L1 ends its group ("release"): 2N+4 and N+1 exactly
#
# "contend-partial": L1 runs perf record -a -e cycles (one flexible event
# on its one CPU) while this guest counts 3 events of loop_100M
# (instructions:u, branches:u, cycles:u).  Under KVM's vPMU those are 3
# pinned host events: 3 + 1 <= 6 counters, nothing is multiplexed, the
# counts are exact.  Under vpmu, KVM's live RDPMC mirrors are 3 pinned
# events as well (docs/kvm.md), L1's cycles takes a fourth counter, and
# vpmu's 3 flexible events rotate on the last 2: each runs about 2/3 of
# the time.  What the guest reads then is vpmu's multiplexing policy
# (vpmu.multiplex= on the command line, set by L1 with the accelerator):
#
#   kvm     exact, 2N+4 and N+1
#   raw     the count as it ran: more than 0, at most 90% of exact
#   scaled  the count scaled by time enabled / running: within 5% of exact
#
# Needs L1 (vpmu.nested=1); otherwise every check is skipped.
# shellcheck source=SCRIPTDIR/../tap-lib.sh
. /vpmu/tap-lib.sh
plan 10

N=1000000
if [ "${VPMU_NESTED:-0}" != 1 ]; then
    r="needs L1 to hold the host's counters (guest-tests/nested, vpmu.nested=1)"
    for d in "L1 holds all its counters" "contended: loop_1M instructions:u = 0" \
            "contended: loop_1M branches:u = 0" "L1 released its counters" \
            "released: loop_1M instructions:u = 2N+4" "released: loop_1M branches:u = N+1" \
            "L1 records cycles" "partial: loop_100M instructions:u" \
            "partial: loop_100M branches:u" "L1 stopped recording"; do
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

# policy COUNT EXACT: COUNT is what VPMU_MULTIPLEX says for EXACT events.
policy() {
    case $VPMU_MULTIPLEX in
    kvm) eq "$1" "$2" ;;
    raw) is_int "$1" && [ "$1" -gt 0 ] && [ $(($1 * 10)) -le $(($2 * 9)) ] ;;
    scaled) is_int "$1" && near "$1" "$2" 5 ;;
    *) false ;;
    esac
}
want() {
    case $VPMU_MULTIPLEX in
    kvm) echo "= $1 (not multiplexed)" ;;
    raw) echo "in 1..90% of $1 (raw)" ;;
    scaled) echo "within 5% of $1 (scaled)" ;;
    *) echo "unknown vpmu.multiplex=$VPMU_MULTIPLEX" ;;
    esac
}
N=100000000
check "L1 records cycles" ask_l1 contend-partial
t0=$(cut -d' ' -f1 /proc/uptime)
pstat p.csv instructions:u,branches:u,cycles:u "$BIN/loop_100M"
t1=$(cut -d' ' -f1 /proc/uptime)
i=$(count p.csv instructions:u)
b=$(count p.csv branches:u)
# cycles:u and the run's length: how the three shared the two counters,
# over how many of L1's rotations (perf_event_mux_interval_ms).
diag "partial loop_100M: instructions:u=$i branches:u=$b" \
     "cycles:u=$(count p.csv cycles:u) in $(awk -v a="$t0" -v b="$t1" \
                                          'BEGIN { print b - a }') s" \
     "($VPMU_MULTIPLEX; ratios $(awk -v i="${i:-0}" -v b="${b:-0}" -v n=$N \
               'BEGIN { printf "%.4f %.4f", i / (2 * n + 4), b / (n + 1) }'))"
check "partial: loop_100M instructions:u $(want 2N+4)" policy "$i" $((2 * N + 4))
check "partial: loop_100M branches:u $(want N+1)" policy "$b" $((N + 1))
check "L1 stopped recording" ask_l1 release

finish
