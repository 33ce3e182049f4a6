#!/usr/bin/env bash
# Boot the bare-metal PMU payloads under QEMU TCG and print their TAP.
#
#   run.sh [-q QEMU] [-O DIR] [-t SECONDS] [intel|amd]...
#
#   -q QEMU   emulator (default: $QEMU, else <repo>/build/qemu/qemu-system-x86_64
#             if it exists, else qemu-system-x86_64 from PATH)
#   -O DIR    where pmu-intel.elf / pmu-amd.elf are (default: $O, else this
#             directory); TAP logs are written there too
#   -t SECS   per-run timeout (default 60)
#
# Environment:
#   INTEL_CPU     -cpu for pmu-intel.elf (default Skylake-Client,pmu=on)
#   AMD_CPU       -cpu for pmu-amd.elf   (default EPYC,pmu=on)
#   INTEL_APPEND  expected PMU for the payload's CPUID checks, passed as the
#   AMD_APPEND    multiboot command line, e.g. "version=4 gp=4" or "gp=6"
#                 (defaults: vpmu_config_init(); see intel-msr.c, amd-msr.c)
#   QEMU_EXTRA    more QEMU arguments
#
# Every payload runs three times: without -icount, with -icount shift=0,
# and with pmu-cycles=insns (cycles are retired instructions: the payload
# gets insn_cycles=1): the exact counts must hold in all, and each run's
# cycles checks hold what its mode promises (cycles.h).  Prints one TAP stream: each run's lines,
# renumbered, with "pmu-VENDOR MODE: " in front, then a line of its own per
# run: the payload ran to the end (isa-debug-exit with code 0, QEMU status
# 0 * 2 + 1 = 1, or 1 after failed checks) and printed its whole plan.
# Exit status 0 once TAP is out (failures are "not ok" lines), 2 on a
# usage error or without QEMU.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../tap.sh
. "$here/../tap.sh"
outdir=${O:-$here}
timeout_s=60
qemu=${QEMU:-}

while getopts "q:O:t:h" opt; do
    case $opt in
    q) qemu=$OPTARG ;;
    O) outdir=$OPTARG ;;
    t) timeout_s=$OPTARG ;;
    *) sed -n '2,26s/^# \{0,1\}//p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
vendors=("$@")
[ ${#vendors[@]} -eq 0 ] && vendors=(intel amd)

if [ -z "$qemu" ]; then
    if [ -x "$repo/build/qemu/qemu-system-x86_64" ]; then
        qemu=$repo/build/qemu/qemu-system-x86_64
    else
        qemu="qemu-system-x86_64"
    fi
fi
if ! command -v "$qemu" >/dev/null 2>&1; then
    echo "run.sh: no QEMU at '$qemu' (apt-get install qemu-system-x86)" >&2
    exit 2
fi

# A self-built QEMU does not know where Debian keeps the firmware.
fw=()
for d in /usr/share/qemu /usr/share/seabios; do
    [ -d "$d" ] && fw+=(-L "$d")
done

# What a QEMU exit status means (isa-debug-exit: status = code * 2 + 1).
explain() {
    case $1 in
    1) echo "pass" ;;
    3) echo "checks failed" ;;
    5) echo "bail out: unexpected exception" ;;
    124) echo "timeout after ${timeout_s}s" ;;
    0) echo "no isa-debug-exit: triple fault or reset (-no-reboot)" ;;
    *) echo "QEMU failed (status $1)" ;;
    esac
}

# run_one VENDOR MODE: boot one payload, print its TAP lines and one of
# this script's own.
run_one() {
    local vendor=$1 mode=$2 cpu append elf log status failed plan lines ok=1
    local icount=() name="pmu-$1 $2"
    if [ "$vendor" = intel ]; then
        cpu=${INTEL_CPU:-Skylake-Client,pmu=on}
        append=${INTEL_APPEND:-}
    else
        cpu=${AMD_CPU:-EPYC,pmu=on}
        append=${AMD_APPEND:-}
    fi
    [ "$mode" = icount ] && icount=(-icount shift=0)
    if [ "$mode" = insns ]; then
        cpu=$cpu,pmu-cycles=insns
        append="$append insn_cycles=1"
    fi
    elf=$outdir/pmu-$vendor.elf
    log=$outdir/pmu-$vendor.$mode
    if [ ! -f "$elf" ]; then
        tap 1 "$name: $elf missing (make -C $here O=$outdir)"
        return
    fi
    echo "# ---- pmu-$vendor, -cpu $cpu, ${icount[*]:-no -icount}"
    # shellcheck disable=SC2086  # QEMU_EXTRA is a word list on purpose
    timeout "$timeout_s" "$qemu" "${fw[@]}" -accel tcg -cpu "$cpu" \
        "${icount[@]}" -m 64 -nodefaults -display none -serial stdio \
        -no-reboot -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
        -kernel "$elf" -append "$append" ${QEMU_EXTRA:-} \
        >"$log.tap" 2>"$log.stderr" </dev/null
    status=$?
    failed=$TAP_FAILED
    tap_copy "$name: " "$log.tap"
    failed=$((TAP_FAILED - failed))
    if [ $status -ne 1 ]; then
        grep -v "TCG doesn't support requested feature" "$log.stderr" | \
            sed 's/^/# qemu: /'
    fi
    plan=$(tr -d '\r' <"$log.tap" | sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' | tail -n1)
    lines=$(tr -d '\r' <"$log.tap" | grep -cE '^(not )?ok ')
    # Status 3 (checks failed) is right only with failed lines to show.
    { [ $status -eq 1 ] && [ $failed -eq 0 ]; } ||
        { [ $status -eq 3 ] && [ $failed -gt 0 ]; } || ok=0
    [ $ok = 1 ] && [ "$plan" = "$lines" ]
    tap $? "$name: ran to the end, plan 1..${plan:-?} for $lines lines ($(explain $status))"
}

for v in "${vendors[@]}"; do
    case $v in
    intel|amd) ;;
    *) echo "run.sh: unknown payload '$v' (intel, amd)" >&2; exit 2 ;;
    esac
done
tap_begin
echo "# $qemu"
for v in "${vendors[@]}"; do
    for mode in tcg icount insns; do
        run_one "$v" "$mode"
    done
done
tap_end
