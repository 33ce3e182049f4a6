#!/bin/sh
# smp: with two vCPUs each has its own PMU, and system-wide and per-CPU perf
# sessions see the right one.  Skipped with one CPU (run with SMP=2).
#
#   perf stat -a -A -e instructions while loop_10M runs pinned on each CPU:
#     both CPUs count at least the loop's 2N + 4 instructions.
#   perf stat -C 0 / -C 1 -e instructions:u with loop_10M pinned to CPU 0:
#     CPU 0 counts at least 2N + 4, CPU 1 less than a tenth of that.
#   The same with the loop on CPU 1 (the other way round).
#   perf record -a -C 1 -e instructions -c P with loop_10M pinned to CPU 1:
#     at least floor((2N + 4) / P) samples, all of them on CPU 1.
# shellcheck source=SCRIPTDIR/../tap-lib.sh
. /vpmu/tap-lib.sh
plan 8

N=10000000
I=$((2 * N + 4))
P=20011
L=$BIN/loop_10M
ncpu=$(nproc)
diag "$ncpu CPUs online"

if [ "$ncpu" -lt 2 ]; then
    i=0
    while [ $i -lt 8 ]; do
        i=$((i + 1))
        skip "smp check $i" "needs 2 CPUs (SMP=2), have $ncpu"
    done
    finish
fi

# cpu_count FILE EVENT CPU: the count of EVENT on CPU in perf stat -A -x,
# output ("CPU0,123,,instructions,...").
cpu_count() {
    awk -F, -v ev="$2" -v cpu="CPU$3" '$1 == cpu && $4 == ev { print $2 }' "$1"
}

perf stat -a -A -x, -o a.csv -e instructions -- \
    sh -c "taskset -c 0 $L & taskset -c 1 $L; wait"
c0=$(cpu_count a.csv instructions 0)
c1=$(cpu_count a.csv instructions 1)
diag "perf stat -a -A: CPU0 instructions=$c0 CPU1 instructions=$c1 (each >= $I)"
is_int "$c0" || diag_file a.csv
check "-a: CPU 0 counted its loop" ge "$c0" $I
check "-a: CPU 1 counted its loop" ge "$c1" $I

# percpu RUNCPU: loop on RUNCPU, count instructions:u on CPU 0 and on CPU 1
# in two sessions.
percpu() {
    for c in 0 1; do
        perf stat -C $c -x, -o c$c.csv -e instructions:u -- taskset -c "$1" "$L"
    done
    u0=$(count c0.csv instructions:u)
    u1=$(count c1.csv instructions:u)
    diag "loop on CPU $1: -C 0 instructions:u=$u0, -C 1 instructions:u=$u1"
    if [ "$1" = 0 ]; then on=$u0 off=$u1; else on=$u1 off=$u0; fi
    check "-C $1 sees the loop on CPU $1 (>= 2N+4)" \
        ge "$on" $I
    check "-C $((1 - $1)) does not see it (< (2N+4)/10)" \
        lt "$off" $((I / 10))
}
percpu 0
percpu 1

rm -f rec.data
perf record -q -a -C 1 -o rec.data -e instructions -c $P -- taskset -c 1 "$L" \
    >rec.log 2>&1
perf script -i rec.data -F cpu 2>/dev/null | tr -d ' []' | sort | uniq -c >cpus.txt
sed 's/^/# samples per CPU: /' cpus.txt
n=$(awk '{ s += $1 } END { print s + 0 }' cpus.txt)
n1=$(awk '$2 + 0 == 1 { print $1 }' cpus.txt)
[ -s rec.data ] || diag_file rec.log
diag "perf record -a -C 1: $n samples, ${n1:-0} on CPU 1 (expect >= $((I / P)))"
check "record -a -C 1: >= floor((2N+4)/P) samples" \
    ge "$n" $((I / P))
all1=0
ge "$n" 1 && [ "${n1:-0}" = "$n" ] && all1=1
check "record -a -C 1: every sample on CPU 1" [ $all1 = 1 ]

finish
