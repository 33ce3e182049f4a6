#!/usr/bin/env bash
# KVM vPMU guest test: boots the payload (a 64 KiB real-mode -bios image
# on guest-tests/runtime's bios16 platform) under the patched QEMU with
# -accel kvm,vpmu=on and prints its TAP, plus
# checks of its own: the payload ran to the end, RDPMC behaves as the host
# KVM allows (QEMU's startup line), QMP query-vpmu reports the KVM vCPU.
#
#   guest-tests/kvm/run.sh    one TAP stream (guest-tests/tap.sh), exit 0;
#                             "1..0 # SKIP <why>" without /dev/kvm, KVM
#                             caps or a QEMU with vpmu=on; the payload
#                             checks Intel or AMD, as the host is
# Environment: QEMU (default build/qemu/qemu-system-x86_64, make qemu),
# VPMU_BUILD (default build/): the payload goes to $VPMU_BUILD/guest-kvm.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../tap.sh
. "$HERE/../tap.sh"
QEMU=${QEMU:-$ROOT/build/qemu/qemu-system-x86_64}
OUT=${VPMU_BUILD:-$ROOT/build}/guest-kvm
# What the payload expects (payload.h's NR_GP, intel.c's NR_FIXED and
# WIDTH; on AMD only pmu-gp-counters applies).
# -arch-capabilities: this host's paravirtual KVM refuses QEMU's write of
# IA32_ARCH_CAPABILITIES (0x10a = 0x69) at vCPU set-up, and QEMU aborts in
# kvm_buf_set_msrs (Debian's own QEMU 7.2 too, without vpmu; 2026-11-24).
CPU="host,pmu=on,pmu-version=2,pmu-gp-counters=4,pmu-fixed-counters=3,pmu-width=48,-arch-capabilities"

skip() {
    tap_skip_all "$@"
}

[ -x "$QEMU" ] || skip "no QEMU at $QEMU (make qemu)"
[ -c /dev/kvm ] && [ -r /dev/kvm ] && [ -w /dev/kvm ] || skip "no usable /dev/kvm"
command -v python3 >/dev/null || skip "python3 (QMP client) not found"

mkdir -p "$OUT"
tap_begin
if ! make -s -C "$HERE" OUT="$OUT" >"$OUT/make.log" 2>&1; then
    tap 1 "build the payload" "$(cat "$OUT/make.log")"
    tap_end
fi

# vpmu-helper= (none): the host's /etc/qemu/vpmu.conf (qemu-system-x86-vpmu
# installs one) may name a helper; the command line overrides it.
QEMU_ARGS=(-L /usr/share/qemu -L /usr/share/seabios -machine pc
           -accel kvm,vpmu=on,vpmu-helper= -cpu "$CPU" -m 16 -nodefaults
           -display none
           -device isa-debug-exit,iobase=0xf4,iosize=4)

# QEMU refuses vpmu=on for reasons of the host or of the build: skip.
check_refusal() {
    local err=$1
    if grep -q "Property 'kvm-accel.vpmu' not found\|built without libvpmu" "$err"; then
        sed 's/^/# /' "$err"
        skip "this QEMU has no -accel kvm,vpmu=on"
    fi
    if grep -q "needs KVM_CAP_X86_USER_SPACE_MSR" "$err"; then
        sed 's/^/# /' "$err"
        skip "the host KVM lacks KVM_CAP_X86_USER_SPACE_MSR / KVM_CAP_X86_MSR_FILTER"
    fi
    if grep -q "has no vPMU model" "$err"; then
        skip "host CPU vendor is neither Intel nor AMD"
    fi
    return 0
}

timeout 120 "$QEMU" "${QEMU_ARGS[@]}" -serial stdio -bios "$OUT/payload.bin" \
    >"$OUT/tap.out" 2>"$OUT/qemu.err" </dev/null
status=$?
check_refusal "$OUT/qemu.err"

if [ -s "$OUT/qemu.err" ]; then
    sed 's/^/# qemu: /' "$OUT/qemu.err"
fi
# The payload skips on a host it cannot check (neither Intel nor AMD).
if grep -q '^# SKIP' "$OUT/tap.out"; then
    skip "$(sed -n 's/^# SKIP: //p' "$OUT/tap.out")"
fi
tap_copy "" "$OUT/tap.out"
fail=$TAP_FAILED
done_line=$(grep -c '^# done: ' "$OUT/tap.out")
# isa-debug-exit: status code * 2 + 1, code 1 after failed checks.
[ "$done_line" = 1 ] && [ "$status" = $(( fail ? 3 : 1 )) ]
tap $? "payload ran to the end (exit status $status, payload failures $fail)"

# RDPMC never exits: KVM answers it, or gives #GP without a vPMU of its
# own, which QEMU must have said at startup, in one line.
novpmu=$(grep -c 'KVM has no vPMU' "$OUT/qemu.err")
if grep -qx '# rdpmc: #GP' "$OUT/tap.out"; then
    [ "$novpmu" = 1 ]
    tap $? "RDPMC took #GP and QEMU said once that the host KVM has no vPMU"
else
    [ "$novpmu" = 0 ] && grep -qx '# rdpmc: value' "$OUT/tap.out"
    tap $? "RDPMC served by KVM and QEMU did not claim the host KVM has no vPMU"
fi
grep -c 'no hardware PMU' "$OUT/qemu.err" | grep -qx '[01]'
tap $? "the no-hardware-PMU notice, if any, is one line"

# QMP query-vpmu on stopped KVM vCPUs (-smp 2): 4 GP + 3 fixed on Intel,
# 4 GP on AMD.
sock="$OUT/qmp.sock"
rm -f "$sock"
timeout 60 "$QEMU" "${QEMU_ARGS[@]}" -smp 2 -S -bios "$OUT/payload.bin" \
    -qmp "unix:$sock,server=on,wait=off" >"$OUT/qmp-qemu.out" 2>&1 </dev/null &
qpid=$!
qmp=$(python3 - "$sock" <<'EOF'
import json, socket, sys, time
path = sys.argv[1]
for _ in range(100):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        break
    except OSError:
        time.sleep(0.1)
else:
    print("no QMP socket"); sys.exit(0)
f = s.makefile("rw")
def cmd(c):
    f.write(json.dumps({"execute": c}) + "\n"); f.flush()
    while True:
        r = json.loads(f.readline())
        if "return" in r or "error" in r:
            return r
json.loads(f.readline())
cmd("qmp_capabilities")
r = cmd("query-vpmu")
cmd("quit")
if "error" in r:
    print("error:", r["error"].get("desc")); sys.exit(0)
cpus = r["return"]
c = cpus[0]["counters"] if cpus else []
print(len(cpus), cpus[0]["vendor"] if cpus else "-",
      sum(1 for x in c if not x["fixed"]), sum(1 for x in c if x["fixed"]))
# The exits and host calls (@kvm): none yet on stopped vCPUs; which
# accesses KVM serves, as "role:rw" with r/w for KVM's reads/writes.
k = cpus[0].get("kvm", {}) if cpus else {}
served = [e["msr"] + ":" + ("r" if e["kvm-reads"] else "") +
          ("w" if e["kvm-writes"] else "") for e in k.get("exits", [])
          if e["kvm-reads"] or e["kvm-writes"]]
used = sum(e["reads"] + e["writes"] for e in k.get("exits", [])) + \
    sum(k.get(x, 0) for x in ("set-msrs", "get-msrs", "get-lapic", "nmi",
                              "signal-msi", "signals"))
with open(path + ".kvm", "w") as out:
    print(k.get("sync", "-"), len(k.get("exits", [])), used,
          ",".join(served) or "none",
          cpus[0].get("source-host-mode", "-") if cpus else "-", file=out)
EOF
)
wait "$qpid" 2>/dev/null
echo "# query-vpmu: $qmp (vCPUs, vendor, GP, fixed)"
want="2 intel 4 3"
grep -q AuthenticAMD /proc/cpuinfo && want="2 amd 4 0"
[ "$qmp" = "$want" ]
tap $? "QMP query-vpmu reports both KVM vCPUs' PMU ($want: vCPUs, vendor, GP, fixed)"
[ "$(grep -c 'KVM has no vPMU' "$OUT/qmp-qemu.out")" = "$novpmu" ]
tap $? "with 2 vCPUs, the startup notices are still one line each"
# query-vpmu's kvm member (patch 0026): vpmu-sync auto, 7 kinds of MSR,
# nothing used before the vCPUs ran; without KVM's vPMU every access
# exits (nothing served by KVM); with one, KVM serves the status where
# its vPMU has the global MSRs (docs/kvm.md, "Who serves which MSR").
kvm=$(cat "$sock.kvm" 2>/dev/null)
echo "# query-vpmu kvm: $kvm (sync, kinds, used, served by KVM, host mode)"
if [ "$novpmu" = 1 ]; then
    [ "$kvm" = "auto 7 0 none perf" ]
    tap $? "query-vpmu kvm: auto, 7 kinds, unused, KVM serves nothing, host mode perf ($kvm)"
else
    case $kvm in
    "auto 7 0 none perf" | "auto 7 0 status:r,status-clear:w perf") true ;;
    *) false ;;
    esac
    tap $? "query-vpmu kvm: auto, 7 kinds, unused, KVM serves the status or nothing ($kvm)"
fi

# pmu-cycles is TCG's: under KVM the host's counters count cycles, and
# QEMU refuses the property with a message naming it.
timeout 60 "$QEMU" "${QEMU_ARGS[@]}" -cpu "$CPU,pmu-cycles=insns" -S \
    -bios "$OUT/payload.bin" >"$OUT/cycles.out" 2>&1 </dev/null
status=$?
err=$(grep -v "warning:" "$OUT/cycles.out" | head -n 1)
[ "$status" = 1 ] && grep -q 'pmu-cycles: only TCG' <<<"$err"
tap $? "-cpu ...,pmu-cycles=insns under KVM: refused, status $status ($err)"
tap_end
