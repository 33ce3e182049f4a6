#!/bin/sh
# record: perf record with a fixed period gets one sample per period, and the
# samples land in the function that retires the instructions.
#
#   hot (workloads/hot.S, N = 5000000): instructions:u = 2N + 6 and
#   branches:u = N + 3, exactly (perf stat).
#   perf record -e instructions:u -c P: the number of samples is within 1 of
#   floor((2N + 6) / P); no throttling or lost records; perf report --stdio
#   puts >= 99% of the samples in hot_loop.  The same for branches:u.
#   With VPMU_RECORD_USER=1 (record-kvm.sh) the 99% are of the user-mode
#   samples ("[.]"), and the kernel's share is printed, not checked.
#
#   Cycle overflows come from a timer, not from instruction counts: in one
#   perf record of loop_100M, cycles/period=2500000/ next to
#   task-clock/period=1000000/
#   (one sample per ms of task time) must give cycles samples * 2500000 /
#   (task-clock samples * 1 ms) within 15% below and 5% above the TSC rate
#   (the guest's PMI handler stops the cycles counter but not task-clock:
#   5-10% under TCG).  A cycle timer that fires late loses samples: a
#   truncated TSC-to-ns ratio once gave 0.56 of the rate.  Skipped under
#   nested KVM (vpmu.nested=1): L2's task time includes the exits L1 serves.
#   With the host under load (vpmu.hostload=1, guest-tests/load) the task
#   time also includes what the host gave other processes, and the vCPU's
#   cycles (pmu-cycles=cputime) do not: the rate is then only at most 5%
#   over the TSC rate.
#
#   With pmu-cycles=insns (vpmu.cycles=insns) cycle overflows come from
#   instruction counts: cycles:u is recorded like instructions:u, with the
#   same four checks, instead of the rate.
# shellcheck source=SCRIPTDIR/../tap-lib.sh
. /vpmu/tap-lib.sh
if [ "$(cycles_mode)" = insns ]; then plan 14; else plan 12; fi

N=5000000
I=$((2 * N + 6))
B=$((N + 3))
PI=10007     # about 1000 samples
PB=5003

pstat s.csv instructions:u,branches:u "$BIN/hot"
i=$(count s.csv instructions:u)
b=$(count s.csv branches:u)
diag "hot: instructions:u=$i (2N+6=$I) branches:u=$b (N+3=$B)"
check "hot instructions:u = 2N+6" eq "$i" $I
check "hot branches:u = N+3" eq "$b" $B

# rec EVENT PERIOD EXPECTED: record hot, check the samples.
rec() {
    ev=$1 p=$2 expect=$(($3 / $2))
    rm -f rec.data
    if ! perf record -q -o rec.data -e "$ev" -c "$p" -- "$BIN/hot" >rec.log 2>&1 ||
            [ ! -s rec.data ]; then
        diag_file rec.log
        fail "perf record -e $ev -c $p"
        fail "$ev: samples = floor(count / period) +- 1"
        fail "$ev: no throttled or lost samples"
        fail "$ev: >= 99% of $scope in hot_loop"
        return
    fi
    pass "perf record -e $ev -c $p"

    perf report -i rec.data -D 2>/dev/null >dump.txt
    n=$(grep -c 'PERF_RECORD_SAMPLE' dump.txt)
    thr=$(grep -c -E 'PERF_RECORD_(THROTTLE|LOST)' dump.txt)
    per=$(sed -n 's/.*PERF_RECORD_SAMPLE.* period: \([0-9]*\).*/\1/p' dump.txt |
        sort -u | tr '\n' ' ')
    diag "$ev: $n samples, expected $expect (count / $p); periods seen: $per"
    ok1=0
    ge "$n" $((expect - 1)) && lt "$n" $((expect + 2)) && ok1=1
    check "$ev: samples = floor(count / period) +- 1" [ $ok1 = 1 ]
    diag "$ev: $thr THROTTLE/LOST records"
    check "$ev: no throttled or lost samples" [ "$thr" = 0 ]

    perf report -i rec.data --stdio --sort sym 2>/dev/null >rep.txt
    grep -v '^#' rep.txt | grep . | head -n 5 | sed 's/^/# report: /'
    # Percentages of all samples: hot_loop, user mode, kernel.
    read -r h u k <<EOF
$(awk '!/^#/ && NF >= 3 { sub("%", "", $1)
        if ($2 == "[.]") u += $1; else if ($2 == "[k]") k += $1
        if ($NF == "hot_loop") h += $1 }
    END { printf "%.2f %.2f %.2f", h, u, k }' rep.txt)
EOF
    pct=$h
    if [ "${VPMU_RECORD_USER:-0}" = 1 ]; then
        pct=$(awk -v h="$h" -v u="$u" 'BEGIN { if (u > 0) printf "%.2f", 100 * h / u }')
        diag "$ev: hot_loop $h%, user mode $u%, kernel $k% of the samples"
    fi
    check "$ev: >= 99% of $scope in hot_loop (${pct:-0}%)" \
        fge "$pct" 99
}

scope=samples
[ "${VPMU_RECORD_USER:-0}" = 1 ] && scope="the user-mode samples"


rec instructions:u $PI $I
rec branches:u $PB $B
if [ "$(cycles_mode)" = insns ]; then
    rec cycles:u $PI $I
    finish
fi

PC=2500000
# within X LO HI: numbers, LO <= X <= HI.
within() { fge "$1" "$2" && fge "$3" "$1"; }
rm -f cyc.data
if perf record -q -o cyc.data -e cycles/period=$PC/ -e task-clock/period=1000000/ \
        -- "$BIN/loop_100M" >rec.log 2>&1 && [ -s cyc.data ]; then
    pass "perf record -e cycles/period=$PC/ -e task-clock/period=1000000/"
    perf report -i cyc.data -D 2>/dev/null >dump.txt
    sed -n 's/.*PERF_RECORD_SAMPLE.* period: \([0-9]*\).*/\1/p' dump.txt >per.txt
    nc=$(grep -c "^$PC\$" per.txt)
    nt=$(grep -c '^1000000$' per.txt)
    mhz=$(tsc_mhz)
    rate=$(awk -v c="$nc" -v t="$nt" -v p=$PC \
        'BEGIN { if (t > 0) printf "%.1f", c * p / (t * 1000) }')
    diag "cycles: $nc samples, task-clock: $nt ms: ${rate:-?} MHz, TSC ${mhz:-?} MHz"
    lo=$(awk -v m="${mhz:-0}" 'BEGIN { printf "%.1f", m * 0.85 }')
    hi=$(awk -v m="${mhz:-0}" 'BEGIN { printf "%.1f", m * 1.05 }')
    if [ "${VPMU_NESTED:-0}" = 1 ]; then
        skip "cycles samples * period / task time within -15%..+5% of the TSC rate" \
            "nested KVM (vpmu.nested=1): task time includes the exits L1 serves, the guest's cycles do not"
    elif host_loaded; then
        check "cycles samples * period / task time at most 5% over the TSC rate (host under load)" \
            fge "$hi" "${rate:-x}"
    else
        check "cycles samples * period / task time within -15%..+5% of the TSC rate" \
            within "${rate:-x}" "$lo" "$hi"
    fi
else
    diag_file rec.log
    fail "perf record -e cycles/period=$PC/ -e task-clock/period=1000000/"
    fail "cycles samples * period / task time within -15%..+5% of the TSC rate"
fi

finish
