#!/bin/sh
# bench-overhead: the in-guest half of bench/guest-overhead.sh.  Not a test
# of the suite (not in /init's "all"); the bench adds the workload
# /vpmu/bin/bench-work to the image and selects this script with
# vpmu.test=bench-overhead.
#
# Kernel command line:
#   vpmu.bench=plain|stat|record|alt   how to run the workload (default plain)
#     plain   bench-work ROUNDS
#     stat    perf stat -e instructions,branches,cycles,ref-cycles,
#             instructions:u,branches:u -- bench-work ROUNDS
#             (every event must be counted; the % running is reported)
#     record  perf record -F 1000 -e EVENT -- bench-work ROUNDS
#             (perf record's sample count is reported)
#     alt     plain and stat in turn, each rep one of each (plain first in
#             odd reps, stat first in even ones): both sides of the ratio
#             in one QEMU, seconds apart, so that the host's slow spells
#             fall on both
#     palt    plain runs in turn with and without a host profile, as alt:
#             before a profiled run "BENCH-PROFILE on" goes to the console
#             and the guest waits a second for the host to start its
#             profile; after it "BENCH-PROFILE off" (the host stops it)
#   vpmu.bench_event=E     the event of record (default cycles)
#   vpmu.bench_events=E,E  the events of stat (default the six above)
#   vpmu.bench_reps=N      runs per boot (default 3)
#   vpmu.bench_rounds=R    the workload's argument (default 40)
#
# bench-work writes "BENCH-MARK start" and "BENCH-MARK end" to the console
# around its timed loop (BENCH_MARK=/dev/console), for the host to sample
# QEMU's CPU time.  For each run it then prints one line for the host:
#   BENCH mode=M rep=I ns=T checksum=C [samples=S]
# where T is the workload's own CLOCK_MONOTONIC time around its rounds
# (bench-work.c), and TAP lines for the checks (alt: two lines per rep).
# shellcheck source=SCRIPTDIR/../tap-lib.sh
. /vpmu/tap-lib.sh

mode=plain reps=3 rounds=40 event=cycles
read -r cmdline </proc/cmdline
for arg in $cmdline; do
    case $arg in
    vpmu.bench=*) mode=${arg#vpmu.bench=} ;;
    vpmu.bench_reps=*) reps=${arg#vpmu.bench_reps=} ;;
    vpmu.bench_rounds=*) rounds=${arg#vpmu.bench_rounds=} ;;
    vpmu.bench_event=*) event=${arg#vpmu.bench_event=} ;;
    vpmu.bench_events=*) EVENTS=${arg#vpmu.bench_events=} ;;
    esac
done
export BENCH_MARK=/dev/console
: "${EVENTS:=instructions,branches,cycles,ref-cycles,instructions:u,branches:u}"

# The total of an arch interrupt line of /proc/interrupts (NMI, PMI).
irqs() {
    awk -v k="$1:" '$1 == k { n = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i; print n }' \
        /proc/interrupts
}

plan ''
diag "mode=$mode reps=$reps rounds=$rounds event=$event" \
    "clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
[ -x "$BIN/bench-work" ] || { fail "$BIN/bench-work missing"; finish_late; }

# run_once MODE REP: one run of the workload as MODE says, its checks and
# its BENCH line.
run_once() {
    m=$1 i=$2 extra=
    rm -f w.out s.csv rec.data rec.err
    case $m in
    plain)
        "$BIN/bench-work" "$rounds" >w.out
        rc=$?
        ;;
    profiled)
        echo "BENCH-PROFILE on" >/dev/console
        sleep 1
        "$BIN/bench-work" "$rounds" >w.out
        rc=$?
        echo "BENCH-PROFILE off" >/dev/console
        sleep 1
        ;;
    stat)
        perf stat -x, -o s.csv -e "$EVENTS" -- "$BIN/bench-work" "$rounds" >w.out
        rc=$?
        # CSV: value,unit,event,run time,% running,...  A value that is not
        # a number is <not supported> or <not counted>.
        bad=$(awk -F, -v want="$EVENTS" '
            BEGIN { n = split(want, w, ","); for (k = 1; k <= n; k++) need[w[k]] = 1 }
            /^#/ || NF < 3 { next }
            { seen[$3] = 1; if ($1 !~ /^[0-9]+$/) printf "%s=%s ", $3, $1 }
            END { for (e in need) if (!(e in seen)) printf "%s=missing ", e }' s.csv)
        part=$(awk -F, '!/^#/ && NF >= 5 && $1 ~ /^[0-9]+$/ && $5 + 0 < 100 {
            printf "%s:%s%% ", $3, $5 }' s.csv)
        counts=$(awk -F, '!/^#/ && NF >= 3 { printf "%s=%s ", $3, $1 }' s.csv)
        diag "rep $i: $counts"
        [ -z "$part" ] || diag "rep $i: multiplexed (running < 100%): $part"
        check "rep $i: perf stat counts every event${bad:+ (not: $bad)}" \
            [ -z "$bad" ]
        ;;
    record)
        n0=$(irqs NMI) p0=$(irqs PMI)
        perf record -F 1000 -e "$event" -o rec.data -- "$BIN/bench-work" "$rounds" \
            >w.out 2>rec.err
        rc=$?
        s=$(sed -n 's/.*(\([0-9]*\) samples).*/\1/p' rec.err | tail -n1)
        # Interrupts per sample: 1 NMI and 1 PMI each when every PMI is
        # one sample (perf record's own set-up and tear-down add a few).
        extra=" samples=${s:-0} nmi=$(($(irqs NMI) - n0)) pmi=$(($(irqs PMI) - p0))"
        check "rep $i: perf record -e $event wrote samples (${s:-0})" [ "${s:-0}" -gt 0 ]
        [ "${s:-0}" -gt 0 ] || diag_file rec.err 5
        ;;
    *)
        fail "unknown vpmu.bench=$m"
        finish_late
        ;;
    esac
    line=$(grep '^bench-work:' w.out)
    ns=$(echo "$line" | sed -n 's/.*elapsed_ns=\([0-9]*\).*/\1/p')
    sum=$(echo "$line" | sed -n 's/.*checksum=\(0x[0-9a-f]*\).*/\1/p')
    ran=0
    [ "$rc" = 0 ] && [ -n "$ns" ] && ran=1
    check "rep $i: bench-work ran ($m, exit $rc)" [ $ran = 1 ]
    echo "BENCH mode=$m rep=$i ns=${ns:-0} checksum=${sum:-none}$extra"
}

i=0
while [ $i -lt "$reps" ]; do
    i=$((i + 1))
    other=stat
    [ "$mode" != palt ] || other=profiled
    if [ "$mode" != alt ] && [ "$mode" != palt ]; then
        run_once "$mode" $i
    elif [ $((i % 2)) = 1 ]; then
        run_once plain $i
        run_once $other $i
    else
        run_once $other $i
        run_once plain $i
    fi
done
finish_late
