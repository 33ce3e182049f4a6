# shellcheck shell=bash disable=SC2154,SC2001  # name: set by the caller
# Shared by migrate.sh and qmp.sh (sourced; bash).  Sets up:
#   qemu, elf, logdir, sockdir, N, INSNS, BRANCHES, TIMEOUT
#   tap / tap_skip / tap_done       TAP output (../tap.sh), the plan
#   qemu_start / qemu_wait          QEMU in the background, by PID
#   wait_marker, qmp, vpmu_summary  guest and QMP helpers
# The caller sets `name` (the summary line's prefix) first.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
qemu=${QEMU:-$repo/build/qemu/qemu-system-x86_64}
outdir=${O:-$repo/build/migration}
N=${N:-0x40000000}
TIMEOUT=${TIMEOUT:-180}
INSNS=$((2 * N + 5))        # mig-count.c: 2n + 5 instructions
BRANCHES=$((N))             #              n branches

if ! command -v "$qemu" >/dev/null 2>&1; then
    echo "Bail out! $name: no QEMU at '$qemu' (set QEMU=)"
    exit 2
fi
qemu=$(command -v "$qemu")
mkdir -p "$outdir"
if ! make -s -C "$here" O="$outdir" >"$outdir/$name.make.log" 2>&1; then
    sed 's/^/# /' "$outdir/$name.make.log"
    echo "Bail out! $name: building the payload failed"
    exit 2
fi
elf=$outdir/mig-count.elf
logdir=$outdir/$name
rm -rf "$logdir"
mkdir -p "$logdir"
# UNIX socket paths are limited to 108 bytes: keep them short.
sockdir=$(mktemp -d "/tmp/vpmu-$name.XXXXXX")

fw=()
for d in /usr/share/qemu /usr/share/seabios; do
    [ -d "$d" ] && fw+=(-L "$d")
done

# ---- TAP ------------------------------------------------------------------

# tap, tap_skip, tap_begin, tap_end: guest-tests/tap.sh.
# shellcheck source-path=SCRIPTDIR source=../tap.sh
. "$here/../tap.sh"
t_start=$(date +%s.%N)

elapsed() {
    echo "$(date +%s.%N) $1" | awk '{ printf "%.1f", $1 - $2 }'
}

# tap_done: the summary as a diagnostic, the plan, exit 0.
tap_done() {
    echo "# logs in $logdir; $(elapsed "$t_start") s"
    echo "# $name: $((TAP_N - TAP_FAILED)) passed, $TAP_FAILED failed"
    tap_end
}

# ---- QEMU -----------------------------------------------------------------

declare -A qpid=()

cleanup() {
    local k
    for k in "${!qpid[@]}"; do
        kill "${qpid[$k]}" 2>/dev/null
    done
    rm -rf "$sockdir"
}
trap cleanup EXIT

# qemu_start TAG CPU APPEND [QEMU ARGS...]: boot mig-count.elf in the
# background with a QMP socket ($sockdir/TAG.sock) and the serial port in
# $logdir/TAG.serial.  $QEMU_EXTRA (word-split) goes before the ARGS.
qemu_start() {
    local tag=$1 cpu=$2 append=$3
    shift 3
    rm -f "$sockdir/$tag.sock"
    # shellcheck disable=SC2086  # QEMU_EXTRA is a word list on purpose
    "$qemu" "${fw[@]}" -accel tcg -cpu "$cpu" -m 64 -nodefaults \
        -display none -no-reboot \
        -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
        -kernel "$elf" -append "$append" \
        -serial "file:$logdir/$tag.serial" \
        -qmp "unix:$sockdir/$tag.sock,server=on,wait=off" ${QEMU_EXTRA:-} "$@" \
        </dev/null >"$logdir/$tag.stdout" 2>"$logdir/$tag.stderr" &
    qpid[$tag]=$!
    echo "$qemu ${fw[*]} -accel tcg -cpu '$cpu' ... -append '$append' ${QEMU_EXTRA:-} $*" \
        >"$logdir/$tag.cmd"
}

# qemu_wait TAG [SECS]: wait for QEMU TAG to exit; its status goes to $RC
# (124 if it had to be killed after SECS).  Not in a subshell: only this
# shell can reap its background jobs.  stderr is dropped: bash reports a
# job killed by a signal there; the status says it already.
qemu_wait() {
    qemu_wait_ "$@" 2>/dev/null
}
qemu_wait_() {
    local tag=$1 secs=${2:-$TIMEOUT} pid=${qpid[$1]} end
    end=$(($(date +%s) + secs))
    RC=
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$(date +%s)" -ge "$end" ]; then
            kill "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
            RC=124
            break
        fi
        sleep 0.05
    done
    if [ -z "$RC" ]; then
        wait "$pid" 2>/dev/null
        RC=$?
    fi
    unset "qpid[$tag]"
    :       # the job notice comes out at the next command: here
}

# What a QEMU exit status means (isa-debug-exit: status = code * 2 + 1).
explain() {
    case $1 in
    0) echo "exit 0 (quit, or no isa-debug-exit)" ;;
    1) echo "guest passed (debug-exit 0), or QEMU error exit" ;;
    3) echo "guest checks failed" ;;
    5) echo "guest bail out" ;;
    124) echo "timeout" ;;
    *) [ "$1" -gt 128 ] && echo "killed by signal $(($1 - 128))" ||
           echo "status $1" ;;
    esac
}

# wait_marker TAG [SECS]: wait for the guest's "# counting" line.
wait_marker() {
    local tag=$1 secs=${2:-60} end
    end=$(($(date +%s) + secs))
    until grep -q '^# counting' "$logdir/$tag.serial" 2>/dev/null; do
        kill -0 "${qpid[$tag]}" 2>/dev/null || return 1
        [ "$(date +%s)" -ge "$end" ] && return 1
        sleep 0.02
    done
}

# qmp TAG ARGS...: qmpclient.py on TAG's socket (stdout: the return value).
qmp() {
    local tag=$1
    shift
    python3 "$here/../qmpclient.py" "$sockdir/$tag.sock" "$@" \
        2>>"$logdir/$tag.qmp-errors"
}

# vpmu_summary: query-vpmu JSON on stdin -> "ins=V br=V fx=V st=S,S,S"
# for vCPU 0's GP0 (instructions), GP1 (branches) and fixed 0 (Intel; "-"
# on AMD), where S is each counter's state/event/control.
vpmu_summary() {
    python3 -c '
import json, sys
d = json.load(sys.stdin)
c = [x for x in d if x["cpu-index"] == 0][0]["counters"]
gp = [x for x in c if not x["fixed"]]
fx = [x for x in c if x["fixed"]][:1]
sel = gp[:2] + fx
v = [str(x["value"]) for x in sel] + ["-"] * (3 - len(sel))
st = ",".join("%s/%s/%#x" % (x["state"], x["event"], x["control"]) for x in sel)
print("ins=%s br=%s fx=%s st=%s" % (v[0], v[1], v[2], st))'
}

# field KEY "SUMMARY": a value out of a vpmu_summary line.
field() {
    local w
    for w in $2; do
        [ "${w%%=*}" = "$1" ] && echo "${w#*=}" && return
    done
}

# midloop SUMMARY: the counters are running (or frozen) inside the
# counted loop: 0 < ins < INSNS, ins = 2 * br + 2 (the enabling WRMSR and
# the MOV, then br complete dec/jnz pairs: TB boundaries in the loop fall
# after a JNZ), fixed 0 = ins.  Prints why not, returns 1.
midloop() {
    local s=$1 ins br fx
    ins=$(field ins "$s") br=$(field br "$s") fx=$(field fx "$s")
    if ! [ "$ins" -gt 0 ] 2>/dev/null || [ "$ins" -ge "$INSNS" ]; then
        echo "instructions $ins not inside (0, $INSNS): stopped outside the loop (N too small for this host?)"
        return 1
    fi
    if [ "$ins" -ne $((2 * br + 2)) ]; then
        echo "instructions $ins != 2 * branches $br + 2"
        return 1
    fi
    if [ "$fx" != "-" ] && [ "$fx" != "$ins" ]; then
        echo "fixed 0 $fx != GP0 $ins"
        return 1
    fi
}

# guest_ok TAG RC: QEMU exited through isa-debug-exit with 0 and every
# guest check passed.
guest_ok() {
    local log=$logdir/$1.serial
    [ "$2" -eq 1 ] || { echo "QEMU status $2: $(explain "$2")"; return 1; }
    grep -q '^not ok' "$log" && { grep '^not ok' "$log"; return 1; }
    grep -q '^# 0 of [0-9]* checks failed' "$log" ||
        { echo "no '0 of N checks failed' in $log"; return 1; }
}

# guest_exact TAG RC [GP0]: guest_ok, and the guest printed the exact
# counts: GP0 = GP0 (default 2N+5), GP1 = N.
guest_exact() {
    local log=$logdir/$1.serial want_gp0=${3:-$INSNS}
    guest_ok "$1" "$2" || return 1
    grep -q "GP0 instructions = $want_gp0.* (got $want_gp0)\$" "$log" ||
        { echo "no exact GP0 count ($want_gp0) in $log"; return 1; }
    grep -q "GP1 branches = $BRANCHES (got $BRANCHES)\$" "$log" ||
        { echo "no exact GP1 count in $log"; return 1; }
}
