#!/bin/sh
# qmp-kvm: guest-side half of the nested suite's query-vpmu checks
# (guest-tests/nested/init-l1, check_qmp).  This guest is L2; L1 holds its
# QEMU's QMP monitor.  The test prints "VPMU-L1 <request>" and waits for L1's
# one-line answer on the console ("done" once L1 has its reply); L1 checks
# the replies against values derived by hand and prints those TAP lines.
#
#   query counting:  while perf stat -a -e instructions:u counts (a CPU-wide
#                    event stays on its counter while this guest idles);
#                    the count perf stat prints is the upper bound of the
#                    counter's progress L1 saw
#   query before-record, perf record -e instructions:u -c 10007 of hot,
#   query after-record: the vCPU's overflows and PMIs between the two
#   query-bad:       query-vpmu with an unknown argument
#
# Needs L1 (vpmu.nested=1); otherwise every check is skipped.
# shellcheck source=SCRIPTDIR/../tap-lib.sh
. /vpmu/tap-lib.sh
plan 5

if [ "${VPMU_NESTED:-0}" != 1 ]; then
    for d in "L1 answered query counting" "perf stat -a instructions:u counted" \
            "L1 answered query before-record and after-record" \
            "perf record -e instructions:u -c 10007: floor((2N+6) / 10007) = 999 samples" \
            "L1 answered query-bad"; do
        skip "$d" "needs L1 with QMP on this guest's QEMU (guest-tests/nested, vpmu.nested=1)"
    done
    finish
fi


# shellcheck disable=SC2016  # expanded by that sh
perf stat -a -x, -o q.csv -e instructions:u -- sh -c '
    echo "VPMU-L1 query counting"
    read -t 120 -r a </dev/console
    echo "$a" >q.ans' 2>pstat.err
c=$(count q.csv instructions:u)
diag "qmp: perf stat -a instructions:u=$c"
check "L1 answered query counting" [ "$(cat q.ans 2>/dev/null)" = "done" ]
check "perf stat -a instructions:u counted" ge "$c" 1 || diag_file pstat.err

a1=0
ask_l1 "query before-record" && a1=1
rm -f q.data
perf record -q -o q.data -e instructions:u -c 10007 -- "$BIN/hot" >rec.log 2>&1 ||
    diag_file rec.log
n=$(perf report -i q.data -D 2>/dev/null | grep -c 'PERF_RECORD_SAMPLE')
diag "qmp: perf record samples=$n"
ask_l1 "query after-record" || a1=0
check "L1 answered query before-record and after-record" [ $a1 = 1 ]
check "perf record -e instructions:u -c 10007: floor((2N+6) / 10007) = 999 samples" \
    [ "$n" = 999 ]
check "L1 answered query-bad" ask_l1 query-bad

finish
