#!/usr/bin/env bash
# The guest suites' cycle checks on a loaded host: two CPU-bound processes
# run on the host (one pinned to each of the first two CPUs, QEMU kept to
# the same two) while
#
#   1. the bare-metal payloads run in every pmu-cycles mode
#      (baremetal/run.sh: cputime, tsc under -icount, insns; cycles.h);
#   2. Linux guests run stat-exact and record (linux/run-all.sh
#      load-intel, load-amd: pmu-cycles=cputime; insns-intel, insns-amd,
#      which also run papi), told vpmu.hostload=1;
#   3. spin: a payload started with spin=ROUNDS prints its TSC and the
#      count of each cycles counter (Intel: core cycles on GP0 and fixed
#      1, reference cycles on GP1 0x13c, GP2 0x300 and fixed 2; AMD: two
#      GP counters) after each round of a busy loop; at each line this
#      script reads the vCPU thread's CPU time
#      (/proc/PID/task/TID/schedstat) and the wall clock.  Over the
#      rounds, a counter's cycles / TSC ticks in the guest is the share of
#      wall time the vCPU ran by vpmu's count, CPU time / wall time on the
#      host the same share by the kernel's; under pmu-cycles=cputime they
#      agree within SPIN_TOL for every counter, reference cycles too (they
#      follow the vCPU like core cycles), and the share is below
#      SPIN_LOADED (else the host was not loaded and the check skips).
#      Under pmu-cycles=tsc (-icount off) the guest's share is 1 whatever
#      the host's: descheduled time is counted.
#
#   SPIN_TOL (0.03): the host reads the time a line arrives, which under
#   load can lag the guest's reading by a scheduler wake-up (some ms); 3%
#   of a 1 s span covers 15 ms at each end.
#
# Usage: run.sh [-q QEMU]   Environment: QEMU, IMAGE (the Linux guest
# image, default build/guest), O (where the payloads are built, default
# build/baremetal), LOGDIR (default build/load), PARTS (default
# "baremetal linux spin": which of the three to run).
#
# Prints one TAP stream.  The hogs are stopped by pid on exit.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../tap.sh
. "$here/../tap.sh"
qemu=${QEMU:-$top/build/qemu/qemu-system-x86_64}
while getopts "q:h" opt; do
    case $opt in
    q) qemu=$OPTARG ;;
    *) sed -n '2,38s/^# \{0,1\}//p' "$0"; exit 2 ;;
    esac
done
image=${IMAGE:-$top/build/guest}
bm=${O:-$top/build/baremetal}
logdir=${LOGDIR:-$top/build/load}
SPIN_ROUNDS=5
SPIN_TOL=0.03
SPIN_LOADED=0.9

tap_begin
[ -x "$qemu" ] || tap_skip_all "no QEMU at $qemu (make qemu)"
ncpu=$(nproc)
[ "$ncpu" -ge 2 ] || tap_skip_all "needs 2 host CPUs, have $ncpu"
mkdir -p "$logdir"

hogs=()
stop_hogs() {
    local p
    for p in "${hogs[@]}"; do
        kill "$p" 2>/dev/null
    done
    for p in "${hogs[@]}"; do
        wait "$p" 2>/dev/null
    done
    hogs=()
}
trap stop_hogs EXIT
for c in 0 1; do
    taskset -c "$c" sh -c 'while :; do :; done' &
    hogs+=($!)
done
echo "# hogs: pids ${hogs[*]} on CPUs 0 and 1; QEMU kept to CPUs 0-1"
pin=(taskset -c "0,1")

parts=" ${PARTS:-baremetal linux spin} "
part() { [[ $parts == *" $1 "* ]]; }

# ---- 1. the bare-metal payloads
if ! part baremetal; then
    :
elif [ -f "$bm/pmu-intel.elf" ] && [ -f "$bm/pmu-amd.elf" ]; then
    "${pin[@]}" "$top/guest-tests/baremetal/run.sh" -O "$bm" -q "$qemu" \
        >"$logdir/baremetal.tap" 2>"$logdir/baremetal.err"
    tap_copy "baremetal: " "$logdir/baremetal.tap"
else
    tap 1 "baremetal: payloads missing in $bm (make -C guest-tests/baremetal O=$bm)"
fi

# ---- 2. Linux: stat-exact and record (and papi under insns)
if ! part linux; then
    :
elif [ -f "$image/initramfs.cpio.gz" ]; then
    APPEND=vpmu.hostload=1 IMAGE=$image LOGDIR=$logdir/linux QEMU=$qemu \
        "${pin[@]}" "$top/guest-tests/linux/run-all.sh" load-intel load-amd \
        insns-intel insns-amd >"$logdir/linux.tap" 2>"$logdir/linux.err"
    tap_copy "linux: " "$logdir/linux.tap"
else
    tap 1 "linux: no guest image in $image (guest-tests/linux/build-image.sh)"
fi

# ---- 3. spin: vpmu's cycles against the kernel's CPU time
# vcpu_tid PID: the thread of vCPU 0 ("CPU 0/TCG", with debug-threads=on).
vcpu_tid() {
    local t
    for t in /proc/"$1"/task/*; do
        if [ "$(cat "$t/comm" 2>/dev/null)" = "CPU 0/TCG" ]; then
            echo "${t##*/}"
            return
        fi
    done
}

# spin VENDOR MODE: one payload run; prints "host-share guest-share..."
# (one guest share per counter, named by the log's "# spin counter"
# lines) or nothing.
spin_run() {
    local vendor=$1 mode=$2 cpu elf log tid line tsc all cpu_ns wall
    local first=() last=()
    elf=$bm/pmu-$vendor.elf
    log=$logdir/spin-$vendor-$mode.log
    if [ "$vendor" = intel ]; then cpu=Skylake-Client,pmu=on; else cpu=EPYC,pmu=on; fi
    cpu+=,pmu-cycles=$mode
    coproc SPIN { exec "${pin[@]}" "$qemu" -name spin,debug-threads=on \
        -accel tcg -cpu "$cpu" -m 64 \
        -nodefaults -display none -serial stdio -no-reboot \
        -device isa-debug-exit,iobase=0xf4,iosize=0x04 -kernel "$elf" \
        -append "spin=$SPIN_ROUNDS" 2>"$log.err"; }
    local qpid=$SPIN_PID fd
    # bash unsets SPIN when QEMU exits: read from a copy.
    exec {fd}<&"${SPIN[0]}"
    : >"$log"
    while IFS= read -r -t 60 line <&"$fd"; do
        line=${line%$'\r'}
        case $line in
        "# spin counter "*) echo "$line" >>"$log" ;;
        "# spin "*)
            # The wall clock and the CPU time back to back, with builtins:
            # the vCPU runs on meanwhile, and the thread look-up (forks)
            # once took 48 ms between them, 9% of a 0.55 s span.
            [ -n "${tid:-}" ] || tid=$(vcpu_tid "$qpid")
            wall=${EPOCHREALTIME/./}000
            cpu_ns=
            read -r cpu_ns _ <"/proc/$qpid/task/$tid/schedstat" 2>/dev/null
            read -r _ _ _ tsc _ all <<<"$line"
            echo "$line cpu_ns=${cpu_ns:-?} wall=$wall" >>"$log"
            [[ $cpu_ns =~ ^[0-9]+$ ]] || continue
            [ ${#first[@]} -gt 0 ] || first=("${tsc#tsc=}" "${all#all=}" "$cpu_ns" "$wall")
            last=("${tsc#tsc=}" "${all#all=}" "$cpu_ns" "$wall")
            ;;
        *) echo "$line" >>"$log" ;;
        esac
    done
    exec {fd}<&-
    kill "$qpid" 2>/dev/null
    wait "$qpid" 2>/dev/null
    [ ${#last[@]} -gt 0 ] && [ "${last[0]}" != "${first[0]}" ] || return
    awk -v t0="${first[0]}" -v c0="${first[1]}" -v p0="${first[2]}" \
        -v w0="${first[3]}" -v t1="${last[0]}" -v c1="${last[1]}" \
        -v p1="${last[2]}" -v w1="${last[3]}" \
        -v n="$(grep -c '^# spin counter' "$log")" \
        'BEGIN { split(c0, a, ","); split(c1, b, ",")
                 printf "%.4f", (p1 - p0) / (w1 - w0)
                 for (i = 1; i <= n; i++) printf " %.4f", (b[i] - a[i]) / (t1 - t0)
                 printf "\n" }'
}

runs=("intel cputime" "amd cputime" "intel tsc")
part spin || runs=()
# spin_check NAME G H MODE: one counter's share G against the host's H.
spin_check() {
    local name=$1 g=$2 h=$3 mode=$4
    if awk -v h="$h" -v l=$SPIN_LOADED 'BEGIN { exit !(h >= l) }'; then
        tap_skip "$name: the count follows the host's load" \
            "the vCPU thread got $h of the wall time: the host was not loaded"
    elif [ "$mode" = cputime ]; then
        awk -v g="$g" -v h="$h" -v t=$SPIN_TOL 'BEGIN { d = g - h; exit !(d <= t && -d <= t) }'
        tap $? "$name: cycles / TSC ticks ($g) within $SPIN_TOL of the vCPU thread's CPU time / wall time ($h)"
    else
        awk -v g="$g" -v t=$SPIN_TOL 'BEGIN { exit !(g >= 1 - t && g <= 1 + t) }'
        tap $? "$name: cycles / TSC ticks ($g) within $SPIN_TOL of 1 while the vCPU ran $h of the time (wall-clock cycles)"
    fi
}

for run in "${runs[@]}"; do
    read -r vendor mode <<<"$run"
    name="spin $vendor pmu-cycles=$mode"
    log=$logdir/spin-$vendor-$mode.log
    read -r h gs <<<"$(spin_run "$vendor" "$mode")"
    if [ -z "${gs:-}" ]; then
        tap 1 "$name: the payload printed its rounds (log: $log)"
        continue
    fi
    mapfile -t names < <(sed -n 's/^# spin counter [0-9]*: //p' "$log" | tr -d '\r')
    echo "# $name: host CPU time / wall time $h; guest cycles / TSC ticks $gs"
    i=0
    for g in $gs; do
        spin_check "$name, ${names[i]:-counter $i}" "$g" "$h" "$mode"
        i=$((i + 1))
    done
done

stop_hogs
tap_end
