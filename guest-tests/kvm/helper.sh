#!/usr/bin/env bash
# QEMU under KVM with vpmu's host events from vpmu-helper, and the host's
# defaults in /etc/qemu/vpmu.conf (docs/qemu-kvm.md, docs/helper.md).
# Each QEMU starts stopped (-S) with one vCPU, which connects to the
# helper when it is created; QMP query-vpmu then says what it got:
#
#   - -accel kvm,vpmu=on,vpmu-helper=SOCK: the vCPU has the VM's policy
#     (the policy file of -name guest=NAME): its counters, its events,
#     the VM's name and how the helper knew it, one connect;
#   - a helper that is not there: QEMU does not start, and says why;
#   - no policy for the VM (and no default): QEMU does not start, and
#     says why;
#   - vpmu.conf with kvm = on and the helper: a plain -accel kvm gets
#     the same PMU; vpmu=off on the command line wins; a bad value and a
#     malformed file stop QEMU with the file and key named;
#   - the helper stopped and restarted while a guest runs (the KVM payload
#     built with RESTART=1): the counter programmed while it is down
#     counts nothing and query-vpmu says why, the guest goes on; after the
#     restart the next programming connects again and counts.
#
# The helper and vpmu.conf are this script's: it starts the helper as
# root and stops it by pid, and restores /etc/qemu as it found it.
#
# Environment: QEMU (the patched binary), VPMU_BUILD (the meson build
# directory with vpmu-helper).  TAP on stdout; 1..0 # SKIP without
# /dev/kvm, root or the helper.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=../tap.sh
. "$HERE/../tap.sh"
QEMU=${QEMU:-$ROOT/build/qemu/qemu-system-x86_64}
BUILD=${VPMU_BUILD:-$ROOT/build}
HELPER=$BUILD/vpmu-helper
CONF=/etc/qemu/vpmu.conf
QMPC=$HERE/../qmpclient.py
CPU=host,pmu=on,-arch-capabilities

tap_begin
[ -x "$QEMU" ] || tap_skip_all "no QEMU at $QEMU (make qemu)"
[ -x "$HELPER" ] || tap_skip_all "no vpmu-helper at $HELPER"
[ "$(id -u)" = 0 ] || tap_skip_all "needs root (the helper, $CONF)"
[ -c /dev/kvm ] && [ -w /dev/kvm ] || tap_skip_all "no usable /dev/kvm"
command -v python3 >/dev/null || tap_skip_all "python3 (QMP client) not found"

dir=$(mktemp -d /tmp/vpmu-kvm-helper-XXXXXX)
mkdir "$dir/policy"
hpid=
had_etc_qemu=0
[ -d /etc/qemu ] && had_etc_qemu=1
[ -e "$CONF" ] && cp -p "$CONF" "$dir/vpmu.conf.saved"

cleanup() {
    [ -n "$hpid" ] && kill "$hpid" 2>/dev/null && wait "$hpid" 2>/dev/null
    if [ -e "$dir/vpmu.conf.saved" ]; then
        cp -p "$dir/vpmu.conf.saved" "$CONF"
    else
        rm -f "$CONF"
        [ "$had_etc_qemu" = 1 ] || rmdir /etc/qemu 2>/dev/null
    fi
    rm -rf "$dir"
}
trap cleanup EXIT

# query NAME QEMU-ARGS...: start QEMU stopped, print query-vpmu's first
# vCPU as "vendor GP helper.vm helper.by-cgroup helper.counters
# helper.events helper.connects" (or "none" / the QMP client's error).
query() {
    local name=$1 sock=$dir/qmp.sock out
    shift
    rm -f "$sock"
    timeout 60 "$QEMU" -name "guest=$name" -machine pc -m 16 -nodefaults \
        -display none -S -qmp "unix:$sock,server=on,wait=off" "$@" \
        >"$dir/qemu.out" 2>&1 </dev/null &
    local qpid=$!
    out=$(python3 "$QMPC" "$sock" query-vpmu 2>&1)
    python3 "$QMPC" "$sock" quit >/dev/null 2>&1
    wait "$qpid" 2>/dev/null
    python3 -c '
import json, sys
try:
    cpus = json.loads(sys.argv[1])
except ValueError:
    print(sys.argv[1]); sys.exit(0)
if not cpus:
    print("none"); sys.exit(0)
c = cpus[0]
h = c.get("helper", {})
print(c["vendor"], sum(1 for x in c["counters"] if not x["fixed"]),
      h.get("vm", "-"), h.get("by-cgroup", "-"), h.get("counters", "-"),
      repr(h.get("events", "-")), h.get("connects", "-"))' "$out"
}

# refused QEMU-ARGS...: QEMU must not start; its first error line.
refused() {
    timeout 60 "$QEMU" -machine pc -m 16 -nodefaults -display none -S \
        "$@" 2>&1 </dev/null | grep -m1 'qemu-system-x86_64:' 
}

vendor=$(grep -q GenuineIntel /proc/cpuinfo && echo intel || echo amd)
printf 'events = allow 0x3c, 0x76, 0xc0\ncounters = 3\n' \
    >"$dir/policy/kvmtest.conf"
"$HELPER" --socket "$dir/helper.sock" --policy-dir "$dir/policy" \
    2>"$dir/helper.log" &
hpid=$!
for _ in $(seq 50); do
    [ -S "$dir/helper.sock" ] && break
    sleep 0.1
done

out=$(query kvmtest -accel "kvm,vpmu=on,vpmu-helper=$dir/helper.sock" \
      -cpu "$CPU")
[ "$out" = "$vendor 3 kvmtest False 3 'allow 0x3c, 0x76, 0xc0' 1" ]
tap $? "vpmu-helper: the vCPU has VM kvmtest's policy: 3 GP counters, its events, known by -name, one connect ($out)" "$(cat "$dir/qemu.out")"

msg=$(refused -accel "kvm,vpmu=on,vpmu-helper=$dir/none.sock" -cpu "$CPU")
[ "$msg" = "qemu-system-x86_64: vpmu-helper $dir/none.sock: No such file or directory" ]
tap $? "no helper at the socket: QEMU does not start, and says why ($msg)"

msg=$(refused -name guest=stranger \
      -accel "kvm,vpmu=on,vpmu-helper=$dir/helper.sock" -cpu "$CPU")
want="qemu-system-x86_64: vpmu-helper $dir/helper.sock refused: no policy for VM 'stranger' in $dir/policy (neither stranger.conf nor default.conf)"
[ "$msg" = "$want" ]
tap $? "no policy for the VM: QEMU does not start, and says why" "$msg"

mkdir -p /etc/qemu
printf '[vpmu]\nkvm = on\nhelper = %s\n' "$dir/helper.sock" >"$CONF"
out=$(query kvmtest -accel kvm -cpu "$CPU")
[ "$out" = "$vendor 3 kvmtest False 3 'allow 0x3c, 0x76, 0xc0' 1" ]
tap $? "vpmu.conf kvm = on, helper: plain -accel kvm gets the same PMU ($out)"
out=$(query kvmtest -accel kvm,vpmu=off -cpu "$CPU")
[ "$out" = none ]
tap $? "vpmu.conf: vpmu=off on the command line wins ($out)"
# An empty vpmu-helper= is "no helper" and wins over the file's (a socket
# that is not there): the tests that mean no helper say so this way.  The
# PMU is the one vpmu=on gives without any file (its GP count is the
# CPU model's).
rm -f "$CONF"
ref=$(query kvmtest -accel kvm,vpmu=on -cpu "$CPU")
printf '[vpmu]\nkvm = on\nhelper = %s\n' "$dir/none.sock" >"$CONF"
out=$(query kvmtest -accel kvm,vpmu-helper= -cpu "$CPU")
[ "$out" = "$ref" ] && [ "${ref#"$vendor "[0-9]* }" = "- - - '-' -" ]
tap $? "vpmu.conf names a missing helper: vpmu-helper= on the command line wins, no helper ($out; without the file: $ref)" "$(cat "$dir/qemu.out")"
printf '[vpmu]\nkvm = maybe\n' >"$CONF"
msg=$(refused -accel kvm -cpu "$CPU")
[ "$msg" = "qemu-system-x86_64: -accel kvm: $CONF: [vpmu] kvm: 'maybe' is not 'off' or 'on'" ]
tap $? "vpmu.conf kvm = maybe: QEMU stops, naming file and key ($msg)"
printf '[vpmu]\nkvm = on\nsync = lazy\n' >"$CONF"
msg=$(refused -accel kvm -cpu "$CPU")
[ "$msg" = "qemu-system-x86_64: -accel kvm: $CONF: [vpmu] sync: 'lazy' is not 'auto', 'strict' or 'linux'" ]
tap $? "vpmu.conf sync = lazy: QEMU stops, naming file and key ($msg)"
printf 'kvm = on\n' >"$CONF"
msg=$(refused -accel kvm -cpu "$CPU")
[ "$msg" = "qemu-system-x86_64: -accel kvm: $CONF: Key file does not start with a group" ]
tap $? "vpmu.conf without [vpmu]: QEMU stops, naming the file ($msg)"

# The helper goes away and comes back while a guest runs: the payload
# built with RESTART=1 waits on COM1 (-serial pipe:, two FIFOs held here)
# before each of its two countings.  Down, the first open fails: one
# failure (the old connection is dead, the new one finds no socket),
# counter 0 counts nothing, the guest goes on, query-vpmu says why.  Back,
# the next programming connects again and counts.
rm -f "$CONF"
mkdir -p "$dir/restart"
make -s -C "$HERE" OUT="$dir/restart" RESTART=1 >"$dir/make.log" 2>&1
tap $? "build the payload with RESTART=1" "$(cat "$dir/make.log")"
mkfifo "$dir/com.in" "$dir/com.out"
exec 5<>"$dir/com.out" 6<>"$dir/com.in"
timeout 120 "$QEMU" -name guest=kvmtest -machine pc -m 16 -nodefaults \
    -display none -accel "kvm,vpmu=on,vpmu-helper=$dir/helper.sock" \
    -cpu "$CPU" -bios "$dir/restart/payload.bin" -serial "pipe:$dir/com" \
    -qmp "unix:$dir/qmp-r.sock,server=on,wait=off" >"$dir/qemu-r.out" 2>&1 &
qpid=$!
# upto PATTERN: COM1's lines into restart.tap until one matches (60 s).
upto() {
    local line
    while IFS= read -r -t 60 line <&5; do
        line=${line%$'\r'}
        echo "$line" >>"$dir/restart.tap"
        [[ $line =~ $1 ]] && return 0
    done
    return 1
}
# helper_view: query-vpmu's helper part, "connects failures opens
# last-error".
helper_view() {
    python3 "$QMPC" "$dir/qmp-r.sock" query-vpmu 2>&1 | python3 -c '
import json, sys
try:
    h = json.load(sys.stdin)[0]["helper"]
except (ValueError, LookupError, TypeError):
    print("no reply"); sys.exit(0)
print(h["connects"], h["failures"], h["opens"], h.get("last-error", "-"))'
}
upto '^# host: stop the helper'
kill "$hpid" && wait "$hpid"
hpid=
printf g >&6
upto '^# host: start the helper'
down=$(helper_view)
"$HELPER" --socket "$dir/helper.sock" --policy-dir "$dir/policy" \
    2>>"$dir/helper.log" &
hpid=$!
for _ in $(seq 50); do
    [ -S "$dir/helper.sock" ] && break
    sleep 0.1
done
printf g >&6
upto '^# done: '
back=$(helper_view)
python3 "$QMPC" "$dir/qmp-r.sock" quit >/dev/null 2>&1
wait "$qpid"
exec 5<&- 6>&-
tap_copy "restart: " "$dir/restart.tap"
grep -q '^# done: ' "$dir/restart.tap"
tap $? "restart: the payload ran to the end" "$(cat "$dir/qemu-r.out")"
# Before the restart: one connect (the vCPU's hello), the probe's opens
# (1 here: the task clock; a hardware PMU's generic events elsewhere),
# one failure.  After it: a second connect and exactly one more open,
# counter 0's.
read -r c0 f0 o0 why0 <<<"$down"
read -r c1 f1 o1 _ <<<"$back"
[ "$c0 $f0" = "1 1" ] &&
    [ "$why0" = "vpmu-helper $dir/helper.sock: No such file or directory" ]
tap $? "helper down: query-vpmu shows the failed open and why ($down)"
[ "$c1 $f1" = "2 1" ] && [ "$o1" = $((o0 + 1)) ]
tap $? "helper restarted: picked up again, a second connect and one more open ($back)"

kill "$hpid" && wait "$hpid"
tap $? "the helper stopped by pid"
hpid=
tap_end
