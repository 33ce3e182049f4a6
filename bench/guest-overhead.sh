#!/bin/bash
# guest-overhead.sh: what the vPMU costs a Linux guest under QEMU TCG.
#
# Boots the guest image (guest-tests/linux) once per configuration and
# round, and runs a CPU-bound compiled C workload (bench-work, from
# guest-tests/linux/workloads/bench-work.c: sort, hash table, LZ77, CRC-32)
# REPS times per boot:
#
#   a  -cpu max,vendor=GenuineIntel,pmu=off   plain
#   b  -cpu max,vendor=GenuineIntel,pmu=on    perf stat -e instructions,branches,
#                                             cycles,ref-cycles,instructions:u,
#                                             branches:u (six events, all counted)
#   c  -cpu max,vendor=GenuineIntel,pmu=on    perf record -F 1000 -e cycles
#   d  -cpu max,vendor=GenuineIntel,pmu=on    plain (the cost of the counting
#                                             ops alone, without perf)
#   e  -cpu max,vendor=GenuineIntel,pmu=on    perf record -F 1000 -e instructions
#                                             (overflow through the TB-entry
#                                             budget instead of the cycle timer)
#   f  -cpu max,vendor=GenuineIntel,pmu=on    perf stat -e instructions,r20c4,
#                                             r02c4,r08c4,r40c4 (taken branches,
#                                             near calls and returns, far
#                                             branches: the HF_VPMU_BR charges)
#   g  -cpu max,vendor=GenuineIntel,pmu=on    perf stat -e instructions,r81d0,
#                                             r82d0 (loads and stores: the
#                                             HF_VPMU_MEM charge; docs/events.md)
#   j  -cpu max,vendor=GenuineIntel,pmu=on    perf stat -e instructions,r01c4
#                                             (conditional branches, rr's ticks:
#                                             the HF_VPMU_COND charge)
#   k  -cpu max,vendor=GenuineIntel,pmu=on,   plain, with the host operator's
#          pmu-operator=on                    events counting (vpmu-operator-start
#                                             instructions,cycles,branches at
#                                             boot, through QMP): what operator
#                                             metrics cost the guest (k/d)
#   p  -cpu max,vendor=GenuineIntel,pmu=on,   plain, with a host profile of the
#          pmu-operator-profile=stack         guest at 100 Hz with call chains
#                                             (vpmu-profile at boot, through QMP,
#                                             for longer than the boot): what a
#                                             continuous profiler's rate costs
#                                             the guest (p/d)
#   q  as p, at 1000 Hz                       (q/d)
#   r  as p, but the profile runs only during every other run of one boot
#          (vpmu.bench=palt: the guest asks with "BENCH-PROFILE on/off" on
#          its console, the host starts and stops a 100 Hz stack profile
#          through QMP): r is its profiled runs, s its plain ones, r/s
#          the cost with the host's slow spells on both sides
#   u  as r at 1000 Hz, or U_HZ (v its plain runs): at the most, 10000 Hz,
#          what one sample costs shows above the host's noise
#   h  -cpu max,vendor=GenuineIntel,pmu=on    b's perf stat and d's plain run in
#                                             turn in one boot (vpmu.bench=alt):
#                                             h is its perf stat runs, i its
#                                             plain runs.  h/i is b/d with both
#                                             sides in one QEMU seconds apart,
#                                             so that the host's slow spells
#                                             (runs of the same boot here have
#                                             taken 1.5 and 2.3 s) fall on both
#
# The configurations alternate within each round, and the order rotates
# from round to round, so that drift in the host's load falls on all of them.
#
# Two times per run, both around the workload's timed loop only (no boot,
# no exec, no perf set-up or tear-down; PMIs, perf record's reader and
# ticks are in):
#   guest   the workload's own CLOCK_MONOTONIC (bench-work.c).  Without icount
#           the guest's clocks follow the host's, so this is host wall time,
#           and on a loaded host it includes the time QEMU waited for a CPU.
#   host    the CPU time of all of QEMU's threads (/proc/PID/task/*/schedstat),
#           sampled when the serial console shows the workload's
#           "BENCH-MARK start" and "BENCH-MARK end" lines.  What the run
#           would take on an idle host; much less sensitive to other jobs.
# The run-queue wait of QEMU's threads over the same interval is reported
# as a measure of the contention.
#
# For each time it prints the median, minimum and maximum per
# configuration and the ratios b/a, c/a, e/a and d/a against the targets
# (perf stat: 1.02, perf record: 1.10; d/a against 1.02, as b cannot be
# cheaper than d), and b/d, c/d, e/d (perf's own share).  Each ratio is given
# three ways: of the medians (the one judged ok/over), of the minimums, and
# "paired": the median over the rounds of the ratio of the two
# configurations' medians within the round (boots a minute or two apart, so
# slow drift in the load cancels).  Exit status 0 if every boot ran and
# reported (whatever the ratios), 1 otherwise.
#
# The image is build/guest as made by guest-tests/linux/build-image.sh; this
# script appends a second initramfs segment with the workload and the
# in-guest script (guest-tests/linux/tests/bench-overhead.sh) to a copy of
# it.  build/guest itself is not changed.  The guests are booted by a copy of
# guest-tests/linux/run-guest.sh, without -icount (guest time = host time).
#
# Environment:
#   QEMU          the patched qemu-system-x86_64 (default: build/qemu/ in the
#                 repository); copied once, so a rebuild during the run does
#                 not mix binaries
#   IMAGE         directory with vmlinux/vmlinuz and initramfs.cpio.gz
#                 (default build/guest)
#   KERNEL        vmlinux (default, if present: PVH boot) or vmlinuz
#   CONFIGS       the configurations to run (default "a b c d e"; "a" must be
#                 among them; ratios with a missing side are left out)
#   ROUNDS        rounds of the boots (default 5)
#   REPS          workload runs per boot (default 5)
#   WORK_ROUNDS   bench-work's argument (default 40: 1.15e9 guest
#                 instructions, about 2.1 s under TCG on the development
#                 machine when it is quiet)
#   OUT           where to keep logs and results (default: a new
#                 /tmp/vpmu-guest-overhead.XXXXXX, kept and printed)
#   TIMEOUT       per boot, in seconds (default 900)
#   GUEST_APPEND  more guest kernel arguments, for every configuration
#   CPU_BASE      the -cpu model and options before pmu=on/off, for every
#                 configuration (default max,vendor=GenuineIntel; EPYC for
#                 the AMD model, whose guest kernel needs no PTI)
#   PARALLEL=1    boot the configurations of a round at the same time, one
#                 QEMU per host CPU (use with two configurations on a
#                 two-CPU host, e.g. CONFIGS="a d"): load from elsewhere
#                 then falls on both sides of each ratio alike
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${ROUNDS:-5}
reps=${REPS:-5}
work=${WORK_ROUNDS:-40}
image=${IMAGE:-$top/build/guest}
limit=${TIMEOUT:-900}

die() { echo "guest-overhead: $*" >&2; exit 1; }
log() { echo "guest-overhead: $*" >&2; }

for tool in gcc cpio gzip awk sort pgrep; do
    command -v "$tool" >/dev/null || die "$tool is missing"
done
if [[ -n ${QEMU:-} ]]; then
    qemu_src=$QEMU
    [[ -x $qemu_src ]] || qemu_src=$(command -v "$qemu_src") || die "QEMU=$QEMU not found"
else
    qemu_src=$top/build/qemu/qemu-system-x86_64
    [[ -x $qemu_src ]] || die "no patched QEMU: set QEMU= or run make qemu"
fi
kernel=${KERNEL:-}
if [[ -z $kernel ]]; then
    if [[ -f $image/vmlinux ]]; then kernel=vmlinux; else kernel=vmlinuz; fi
fi
for f in "$kernel" initramfs.cpio.gz; do
    [[ -f $image/$f ]] || die "$image/$f missing: run guest-tests/linux/build-image.sh"
done
[[ -r /proc/self/schedstat ]] || die "no /proc/PID/schedstat on this host"
read -r -a cfgs <<<"${CONFIGS:-a b c d e}"
for c in "${cfgs[@]}"; do
    [[ $c == [a-hjkpqru] ]] || die "CONFIGS: unknown configuration '$c' (a-h, j, k, p-r, u)"
done
[[ " ${cfgs[*]} " == *" a "* ]] || die "CONFIGS must include a (the pmu=off baseline)"

out=${OUT:-$(mktemp -d /tmp/vpmu-guest-overhead.XXXXXX)}
mkdir -p "$out/logs" "$out/image" "$out/overlay/vpmu/bin" "$out/overlay/vpmu/tests"
out=$(cd "$out" && pwd)
# The copies of QEMU and the kernel are large; the logs stay.
cleanup() { rm -rf "$out/image" "$out/overlay" "$out"/qemu-*; }
trap cleanup EXIT

# --- the image: a copy of IMAGE plus a segment with the workload ------------
cp "$qemu_src" "$out/qemu-system-x86_64"
qemu=$out/qemu-system-x86_64
# run-guest.sh too: bash reads a script as it runs, so an edit in the tree
# during the bench would break the boots after it.  (Its repository-relative
# defaults are not used: QEMU, IMAGE and LOG are always given.)
install -m 0755 "$top/guest-tests/linux/run-guest.sh" "$out/run-guest.sh"
cp "$image/$kernel" "$out/image/$kernel"
gcc -O2 -static -Wall -o "$out/overlay/vpmu/bin/bench-work" \
    "$top/guest-tests/linux/workloads/bench-work.c"
install -m 0755 "$top/guest-tests/linux/tests/bench-overhead.sh" "$out/overlay/vpmu/tests/"
# Linux unpacks concatenated (separately compressed) cpio archives in turn;
# the later one adds to, and overwrites, the earlier.
(cd "$out/overlay" && find . -print0 | LC_ALL=C sort -z |
    cpio --null -o -H newc -R 0:0 --quiet) | gzip -n >"$out/overlay.cpio.gz"
cat "$image/initramfs.cpio.gz" "$out/overlay.cpio.gz" >"$out/image/initramfs.cpio.gz"

# --- the configurations ------------------------------------------------------
base=${CPU_BASE:-max,vendor=GenuineIntel}
declare -A cpu=([a]="$base,pmu=off" [b]="$base,pmu=on" [c]="$base,pmu=on"
                [d]="$base,pmu=on" [e]="$base,pmu=on" [f]="$base,pmu=on"
                [g]="$base,pmu=on" [h]="$base,pmu=on" [j]="$base,pmu=on"
                [k]="$base,pmu=on,pmu-operator=on"
                [p]="$base,pmu=on,pmu-operator-profile=stack"
                [q]="$base,pmu=on,pmu-operator-profile=stack"
                [r]="$base,pmu=on,pmu-operator-profile=stack"
                [u]="$base,pmu=on,pmu-operator-profile=stack")
declare -A mode=([a]=plain [b]=stat [c]=record [d]=plain [e]=record [f]=stat
                 [g]=stat [h]=alt [j]=stat [k]=plain [p]=plain [q]=plain
                 [r]=palt [u]=palt)
# The profile rate of the in-boot alternations.
declare -A palt_hz=([r]=100 [u]=${U_HZ:-1000})
declare -A extra=([c]=" vpmu.bench_event=cycles" [e]=" vpmu.bench_event=instructions"
                  [f]=" vpmu.bench_events=instructions,r20c4,r02c4,r08c4,r40c4"
                  [g]=" vpmu.bench_events=instructions,r81d0,r82d0"
                  [j]=" vpmu.bench_events=instructions,r01c4")
declare -A label=(
    [a]="pmu=off, plain"
    [b]="pmu=on, perf stat (6 events)"
    [c]="pmu=on, perf record -F 1000 cycles"
    [d]="pmu=on, plain"
    [e]="pmu=on, perf record -F 1000 insns"
    [f]="pmu=on, perf stat branch kinds"
    [g]="pmu=on, perf stat loads, stores"
    [j]="pmu=on, perf stat cond. branches"
    [k]="pmu=on, plain, operator events"
    [p]="pmu=on, plain, profiled at 100 Hz"
    [q]="pmu=on, plain, profiled at 1000 Hz"
    [r]="pmu=on, profiled at 100 Hz [alt]"
    [s]="pmu=on, plain [alt, r's boots]"
    [u]="pmu=on, profiled at ${U_HZ:-1000} Hz [alt]"
    [v]="pmu=on, plain [alt, u's boots]"
    [h]="pmu=on, perf stat (6 events) [alt]"
    [i]="pmu=on, plain [alt, h's boots]")
ncfg=${#cfgs[@]}
# What the tables show: the configurations, and i with h.
shown=("${cfgs[@]}")
[[ " ${cfgs[*]} " != *" h "* ]] || shown+=(i)
[[ " ${cfgs[*]} " != *" r "* ]] || shown+=(s)
[[ " ${cfgs[*]} " != *" u "* ]] || shown+=(v)

# One copy of QEMU per configuration, so that concurrent boots (PARALLEL=1)
# can tell their processes apart.
for c in "${cfgs[@]}"; do
    ln "$qemu" "$out/qemu-$c" 2>/dev/null || cp "$qemu" "$out/qemu-$c"
done

# --- host CPU time of our QEMU -----------------------------------------------
# qemu_pid PATH: the QEMU started from that copy (unique to this run).
qemu_pid() { pgrep -n -f -- "^$1 " || true; }
# qemu_snap PID: the CPU and run-queue wait times of each of the process's
# threads, into the arrays snap_run and snap_wait (by thread id), without
# forking (it runs while the workload's start marker is fresh).
declare -A snap_run snap_wait
qemu_snap() {
    local f run wait tid
    snap_run=() snap_wait=()
    for f in /proc/"$1"/task/*/schedstat; do
        read -r run wait _ 2>/dev/null <"$f" || continue
        tid=${f%/schedstat} tid=${tid##*/}
        snap_run[$tid]=$run snap_wait[$tid]=$wait
    done
}
# watch_marks MARKS QEMU: copy the serial output (stdin) to stdout without the
# CRs; at each BENCH-MARK pair, append "CPU-ns WAIT-ns" of QEMU over the
# pair to MARKS: the sum over the threads alive at the end of what each
# ran since the start (0 for a thread started since).  A sum over the
# threads at each end would go back, even below 0, when a thread that ran
# before the start (QEMU's worker threads come and go) exits in between;
# this way only what such a thread ran within the pair is missed (the
# vCPU thread, which runs the workload, lives through it).
# Reads straight from run-guest.sh's tee: anything in between (tr, sed)
# would buffer the lines until QEMU exits.
watch_marks() {
    local line pid='' tid c w
    local -A run0 wait0
    while IFS= read -r line; do
        line=${line%$'\r'}
        printf '%s\n' "$line"
        [[ -n $pid ]] || pid=$(qemu_pid "$2")
        case $line in
        *'BENCH-PROFILE on'*)
            python3 "$top/guest-tests/qmpclient.py" "$3" vpmu-profile \
                '{"duration": 3600, "frequency": '"$4"', "mode": "stack",
                  "format": "pprof", "file": "'"$1.pb.gz"'",
                  "requester": "guest-overhead"}' >>"$1.qmp" 2>&1 ;;
        *'BENCH-PROFILE off'*)
            python3 "$top/guest-tests/qmpclient.py" "$3" vpmu-profile-stop \
                '{"requester": "guest-overhead"}' >>"$1.qmp" 2>&1 ;;
        *'BENCH-MARK start'*)
            qemu_snap "$pid"
            run0=() wait0=()
            for tid in "${!snap_run[@]}"; do
                run0[$tid]=${snap_run[$tid]} wait0[$tid]=${snap_wait[$tid]}
            done ;;
        *'BENCH-MARK end'*)
            qemu_snap "$pid"
            c=0 w=0
            for tid in "${!snap_run[@]}"; do
                c=$((c + snap_run[$tid] - ${run0[$tid]:-0}))
                w=$((w + snap_wait[$tid] - ${wait0[$tid]:-0}))
            done
            echo "$c $w" >>"$1" ;;
        esac
    done
}

# --- the runs --------------------------------------------------------------------
# results: cfg round rep guest-ns checksum samples load1 host-cpu-ns host-wait-ns
res=$out/results.txt
: >"$res"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
log "QEMU $qemu_src, image $image ($kernel), $rounds rounds x $ncfg boots x $reps runs" \
    "of bench-work $work; logs in $out"
log "host: $(nproc) CPUs, load average $load_start"

run_one() {   # run_one CFG ROUND
    local c=$1 r=$2 lg=$out/logs/$1-$2.log load rc n want=$reps
    [[ $c != [hru] ]] || want=$((2 * reps))
    load=$(cut -d' ' -f1 /proc/loadavg)
    : >"$lg.marks"
    local qmp= cmd= args=
    case $c in
    k)  cmd=vpmu-operator-start
        args='{"events": "instructions,cycles,branches", "requester": "guest-overhead"}' ;;
    p|q) cmd=vpmu-profile
        args='{"duration": 3600, "frequency": '$([[ $c == p ]] && echo 100 || echo 1000)',
               "mode": "stack", "format": "pprof", "file": "'$out/logs/$c-$r.pb.gz'",
               "requester": "guest-overhead"}' ;;
    esac
    [[ -z ${palt_hz[$c]:-} ]] || qmp=$out/qmp-$c-$r.sock
    if [[ -n $cmd ]]; then
        # The operator's events or profile, started through QMP as soon
        # as QEMU serves it (the guest is still booting then).
        qmp=$out/qmp-$c-$r.sock
        (for _ in $(seq 600); do
            [[ -S $qmp ]] && break
            sleep 0.05
        done
        python3 "$top/guest-tests/qmpclient.py" "$qmp" "$cmd" "$args" \
            >"$lg.qmp" 2>&1) &
    fi
    set +e
    QMP=$qmp QEMU=$out/qemu-$c IMAGE=$out/image KERNEL=$kernel CPU=${cpu[$c]} SMP=1 \
        TIMEOUT=$limit LOG=$lg ICOUNT='' INTERACTIVE=0 \
        APPEND="vpmu.bench=${mode[$c]} vpmu.bench_reps=$reps vpmu.bench_rounds=$work${extra[$c]:-}${GUEST_APPEND:+ $GUEST_APPEND}" \
        "$out/run-guest.sh" bench-overhead 2>"$lg.err" |
        watch_marks "$lg.marks" "$out/qemu-$c" "$qmp" "${palt_hz[$c]:-}" >"$lg.run"
    rc=${PIPESTATUS[0]}
    set -e
    # BENCH lines in order, joined with the marks of the same run; h's
    # plain runs are i's.
    n=$(awk -v c="$c" -v r="$r" -v l="$load" -v marks="$lg.marks" '
        /^BENCH / {
            ns = ""; sum = ""; s = "-"; cc = c
            for (k = 2; k <= NF; k++) {
                split($k, kv, "=")
                if (kv[1] == "mode" && c == "h" && kv[2] == "plain") cc = "i"
                if (kv[1] == "mode" && c == "r" && kv[2] == "plain") cc = "s"
                if (kv[1] == "mode" && c == "u" && kv[2] == "plain") cc = "v"
                if (kv[1] == "rep") rep = kv[2]
                if (kv[1] == "ns") ns = kv[2]
                if (kv[1] == "checksum") sum = kv[2]
                if (kv[1] == "samples") s = kv[2]
            }
            if ((getline m < marks) <= 0) m = "0 0"
            if (ns > 0) { print cc, r, rep, ns, sum, s, l, m; n++ }
        }
        END { print n + 0 > "/dev/stderr" }' "$lg.run" 2>&1 >>"$res")
    if [[ $rc != 0 || $n != "$want" ]]; then
        grep -E '^(not ok|# )' "$lg.run" | tail -n 15 >&2 || true
        die "round $r, $c (${label[$c]}): guest status $rc, $n of $want runs reported" \
            "(log: $lg.run)"
    fi
    log "round $r $c (${label[$c]}): $(awk -v c="$c" -v r="$r" \
        '($1 == c || (c == "h" && $1 == "i") || (c == "r" && $1 == "s") ||
          (c == "u" && $1 == "v")) && $2 == r {
            printf "%s%.3f/%.3f ", c ~ /^[hru]$/ ? $1 ":" : "", $4 / 1e9, $8 / 1e9 }' "$res")s" \
        "guest/host (load $load)"
}

for ((r = 1; r <= rounds; r++)); do
    if [[ ${PARALLEL:-0} == 1 ]]; then
        pids=()
        for ((k = 0; k < ncfg; k++)); do
            run_one "${cfgs[(r - 1 + k) % ncfg]}" "$r" &
            pids+=($!)
        done
        for p in "${pids[@]}"; do
            wait "$p" || die "round $r: a boot failed (see above)"
        done
        continue
    fi
    for ((k = 0; k < ncfg; k++)); do
        run_one "${cfgs[(r - 1 + k) % ncfg]}" "$r"
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

nsums=$(awk '{ print $5 }' "$res" | sort -u | wc -l)
[[ $nsums == 1 ]] || die "the workload's checksum differs between runs (see $res)"
if awk '$8 <= 0 { bad = 1 } END { exit !bad }' "$res"; then
    log "warning: some runs have no host CPU time (markers not seen); they are" \
        "left out of the host CPU time table; see $out/logs/*.marks"
fi

# --- the summary -------------------------------------------------------------------
# stats CFG COL: n median min max of column COL (ns), in seconds, over the
# runs that have it (a host CPU time the markers missed is 0 or less).
stats() {
    awk -v c="$1" -v k="$2" '$1 == c && $k > 0 { print $k / 1e9 }' "$res" | sort -g |
        awk '{ v[NR] = $1 } END {
            m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%d %.4f %.4f %.4f\n", NR, m, v[1], v[NR] }'
}
# awk functions for paired() and table()'s back-to-back h/i: sortv(a, n)
# sorts a[1..n]; median(a, n) sorts and returns the median.
AWK_MEDIAN='
        function sortv(a, n,   i, j, t) {
            for (i = 2; i <= n; i++)
                for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
                    t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
                }
        }
        function median(a, n) {
            sortv(a, n)
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }'
# paired NUM DEN COL: per round, the median of each side's runs; then the
# median over the rounds of their ratio.
paired() {
    awk -v x="$1" -v y="$2" -v col="$3" "$AWK_MEDIAN"'
        function rmed(c, r,   i, a) {
            for (i = 1; i <= k[c, r]; i++) a[i] = v[c, r, i]
            return median(a, k[c, r])
        }
        ($1 == x || $1 == y) && $col > 0 { v[$1, $2, ++k[$1, $2]] = $col; if ($2 > nr) nr = $2 }
        END {
            for (r = 1; r <= nr; r++)
                if (k[x, r] && k[y, r] && rmed(y, r) > 0) q[++m] = rmed(x, r) / rmed(y, r)
            printf "%.4f", m ? median(q, m) : 0
        }' "$res"
}
# table COL TITLE: the per-configuration table and the ratios for column COL.
table() {
    local col=$1 c n m lo hi
    local -A med mn
    printf '\n%s\n%-3s %-34s %3s %9s %9s %9s\n' "$2" cfg configuration n \
        'median s' 'min s' 'max s'
    for c in "${shown[@]}"; do
        read -r n m lo hi < <(stats "$c" "$col")
        med[$c]=$m mn[$c]=$lo
        printf '%-3s %-34s %3d %9.3f %9.3f %9.3f\n' "$c" "${label[$c]}" "$n" "$m" "$lo" "$hi"
    done
    printf '%-5s %-34s %8s %8s %8s %7s\n' ratio '' median min paired target
    ratio() {   # ratio NUM DEN DESC [TARGET]
        [[ -n ${med[$1]:-} && -n ${med[$2]:-} ]] || return 0
        awk -v a="${med[$1]}" -v b="${med[$2]}" -v x="${mn[$1]}" -v y="${mn[$2]}" \
            -v p="$(paired "$1" "$2" "$col")" -v d="$3" -v t="${4:-}" -v name="$1/$2" '
            BEGIN {
                r = b > 0 ? a / b : 0; rm = y > 0 ? x / y : 0
                if (t == "") printf "%-5s %-34s %8.4f %8.4f %8.4f %7s\n", name, d, r, rm, p, "-"
                else printf "%-5s %-34s %8.4f %8.4f %8.4f %7.2f %s\n", name, d, r, rm, p, t,
                    r <= t ? "ok" : "over"
            }'
    }
    ratio b a "perf stat (6 events) / pmu=off" 1.02
    ratio c a "perf record cycles / pmu=off" 1.10
    ratio e a "perf record insns / pmu=off" 1.10
    ratio d a "pmu=on plain / pmu=off" 1.02
    ratio f a "perf stat branch kinds / pmu=off"
    ratio g a "perf stat loads, stores / pmu=off"
    ratio j a "perf stat cond. branches / pmu=off"
    ratio b d "perf stat / pmu=on plain"
    ratio k d "operator events / pmu=on plain" 1.01
    ratio k a "operator events / pmu=off"
    ratio p d "profiled at 100 Hz / pmu=on plain" 1.01
    ratio q d "profiled at 1000 Hz / pmu=on plain"
    ratio h i "perf stat / plain, in one boot" 1.02
    ratio r s "profiled 100 Hz / plain, in one boot" 1.01
    ratio u v "profiled ${U_HZ:-1000} Hz / plain, in one boot"
    ratio h a "perf stat (h) / pmu=off"
    ratio i a "pmu=on plain (i) / pmu=off"
    ratio f b "branch kinds / perf stat (6 events)"
    ratio g b "loads, stores / perf stat (6 events)"
    ratio c d "perf record cycles / pmu=on plain"
    ratio e d "perf record insns / pmu=on plain"
    # An alternation's two runs of one rep ran back to back in one boot:
    # their ratio has the least of the host's noise in it.
    for pair in h:i r:s u:v; do
        [[ -n ${med[${pair%:*}]:-} ]] || continue
        awk -v col="$col" -v a="${pair%:*}" -v b="${pair#*:}" "$AWK_MEDIAN"'
            ($1 == a || $1 == b) && $col > 0 { v[$1, $2, $3] = $col }
            END {
                for (k in v) {
                    split(k, f, SUBSEP)
                    if (f[1] == a && v[b, f[2], f[3]] > 0) q[++n] = v[k] / v[b, f[2], f[3]]
                }
                if (n) printf "%s/%s of each rep (back to back): median %.4f over %d reps, quartiles %.4f %.4f\n",
                    a, b, median(q, n), n, q[int((n + 3) / 4)], q[int((3 * n + 3) / 4)]
            }' "$res"
    done
}
{
    echo "guest-overhead: $started, $rounds rounds x $ncfg configurations x $reps runs," \
         "bench-work $work, QEMU $qemu_src, $kernel"
    echo "host: $(nproc) CPUs, load average at start $load_start, at end $load_end;" \
         "1-min load at the boots: $(awk '{ print $7 }' "$res" | sort -g |
         awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo "-" hi }')"
    awk '{ w += $9; t += $4 } END { if (t > 0)
        printf "QEMU waited for a host CPU %.0f%% of the workload time (run-queue wait / guest time)\n",
            100 * w / t }' "$res"
    for c in c e; do
        [[ " ${cfgs[*]} " == *" $c "* ]] || continue
        awk -v c="$c" -v l="${label[$c]}" '$1 == c { s += $6; t += $4 / 1e9; n++ } END {
            if (t > 0) printf "%s: %.0f samples per run, %.0f per second of workload\n",
                l, s / n, s / t }' "$res"
    done
    table 4 "guest time (the workload's CLOCK_MONOTONIC; host wall time)"
    table 8 "host CPU time of QEMU over the same interval"
    echo
    echo "ok/over: the ratio of the medians against the target.  min and paired"
    echo "are the same comparison less exposed to the host's load."
    echo "results: $res; logs: $out/logs"
} | tee "$out/summary.txt"
