#!/bin/bash
# Boot the guest image N times and catch a boot that stalls: a tool for
# rare hangs (not part of make check).  Each boot runs no test
# (vpmu.test=none) and must print VPMU-GUEST-EXIT within LIMIT seconds; a
# boot that does not gets, before it is killed, the monitor's
# `info registers -a` (RIP of every vCPU, the same from boot to boot with
# nokaslr; Debian's kernel has no symbols, they are in its -dbg package)
# and gdb's backtrace of every QEMU thread.
#
# Usage: boot-repeat.sh N [OUTDIR]      (OUTDIR default /tmp/boot-repeat)
#
# Environment: QEMU, IMAGE, CPU, SMP (default 2), APPEND as for
# run-guest.sh; LIMIT seconds a boot (default 90); HOG=1 runs two
# CPU-bound shell loops beside it (a loaded CI runner).
# Prints one line a boot and a summary; exit status 1 if a boot stalled or
# failed.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
n=${1:?usage: boot-repeat.sh N [OUTDIR]}
out=${2:-/tmp/boot-repeat}
qemu=${QEMU:-$top/build/qemu/qemu-system-x86_64}
image=${IMAGE:-$top/build/guest}
limit=${LIMIT:-90}
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "boot-repeat: N=$n: want a count" >&2; exit 2; }
[[ -x $qemu ]] || { echo "boot-repeat: no QEMU at $qemu (make qemu)" >&2; exit 2; }
mkdir -p "$out"

hogs=()
stop_hogs() { [[ ${#hogs[@]} -eq 0 ]] || kill "${hogs[@]}" 2>/dev/null; }
trap stop_hogs EXIT
if [[ ${HOG:-0} == 1 ]]; then
    for _ in 1 2; do
        (while :; do :; done) &
        hogs+=($!)
    done
fi

# monitor SOCKET CMD...: each command's answer (HMP over a unix socket).
monitor() {
    python3 - "$@" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
for c in sys.argv[2:]:
    s.sendall(c.encode() + b"\n")
    time.sleep(1)
s.settimeout(2)
out = b""
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        out += d
except OSError:
    pass
sys.stdout.write(out.decode(errors="replace"))
EOF
}

bad=0
for ((i = 1; i <= n; i++)); do
    log=$out/boot-$i.log mon=$out/monitor.sock
    rm -f "$mon"
    start=$(date +%s.%N)
    "$qemu" -L /usr/share/qemu -L /usr/share/seabios -accel tcg \
        -cpu "${CPU:-Skylake-Client,pmu=on}" -smp "${SMP:-2}" -m 512 \
        -display none -serial stdio -monitor "unix:$mon,server,nowait" \
        -no-reboot -net none -kernel "$image/vmlinuz" \
        -initrd "$image/initramfs.cpio.gz" \
        -append "console=ttyS0 panic=-1 quiet nmi_watchdog=0 nokaslr vpmu.test=none vpmu.require_pmu=1${APPEND:+ $APPEND}" \
        </dev/null >"$log" 2>&1 &
    pid=$!
    for ((t = 0; t < limit; t++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 1
    done
    what=
    if kill -0 "$pid" 2>/dev/null; then
        what="STALL after $limit s"
        monitor "$mon" "info cpus" "info registers -a" >"$out/boot-$i.regs" 2>&1
        gdb -p "$pid" -batch -ex "thread apply all bt" >"$out/boot-$i.bt" 2>&1
        kill -9 "$pid"
    fi
    wait "$pid" 2>/dev/null
    rc=$?
    secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
    if [[ -z $what ]] && grep -aq 'VPMU-GUEST-EXIT 0' "$log"; then
        echo "boot $i: ok, $secs s"
    else
        echo "boot $i: ${what:-no VPMU-GUEST-EXIT 0 (QEMU status $rc)}, $secs s (log: $log)"
        bad=$((bad + 1))
    fi
done
echo "boot-repeat: $((n - bad)) of $n boots ok (CPU=${CPU:-Skylake-Client,pmu=on} SMP=${SMP:-2}${HOG:+ HOG=$HOG})"
[[ $bad -eq 0 ]]
