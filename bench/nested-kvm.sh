#!/usr/bin/env bash
# nested-kvm.sh: KVM's emulated vPMU, KVM's mediated vPMU and vpmu, side by
# side, on the same L1 and the same L2 workload, in ONE L1 boot.
#
#   host --TCG--> L1: build/qemu/qemu-system-x86_64 -accel tcg
#                     -cpu EPYC-v3,pmu=on,+svm -m 3072; kernel: Debian sid's
#                     (7.x, fetched with a private apt configuration), kvm-amd
#        --KVM--> L2 under each PMU (bench/nested-kvm-l1 runs them in turn):
#          off       -accel kvm         -cpu host,pmu=off  (baseline)
#          emulated  -accel kvm         -cpu host,pmu=on   (KVM's emulated vPMU)
#          vpmu      -accel kvm,vpmu=on -cpu host,pmu=on   (vpmu's KVM front end)
#          mediated  -accel kvm         -cpu host,pmu=on   after reloading
#                    kvm-amd with enable_mediated_pmu=1 (NMI watchdog off)
#
# L2 is the guest image of guest-tests/linux plus bench/nested-kvm-l2.sh
# (counts, perf record samples, perf stat start-up, bench-work under perf)
# and, booted separately, bench/nested-kvm-msr.c, a -bios payload timing
# PMU MSR accesses with RDTSC.  Printed, as ratios within this run:
#   - instructions:u / branches:u of loop_1M/10M/100M against 2N+4 / N+1;
#   - perf record -c P samples against floor(exact count / P);
#   - TSC ticks per PMU MSR access (and per CPUID, the bare exit), each
#     against the emulated vPMU's (target: vpmu <= 2x emulated);
#   - perf stat -e instructions true: median wall time, against emulated;
#   - bench-work under perf stat (6 events) and perf record -F 1000 -e
#     cycles, against the plain run under pmu=off (target: vpmu no worse
#     than emulated).
# Without a sid kernel, or if mediated mode does not load, the mediated
# column is "n/a: <reason>" (the kernel's words) and the rest runs.
#
# Usage: bench/nested-kvm.sh          (run by hand, like guest-overhead.sh;
#                                     30-40 min on the 2-core machine)
#        bench/nested-kvm.sh --summary [L1OUT]
#                                     the table again, from a run's
#                                     $OUT/l1.out (default) without a boot
# Environment:
#   QEMU        default build/qemu/qemu-system-x86_64 (runs L1, and L2 in L1)
#   IMAGE       the L2 guest image (default build/guest; built if missing)
#   OUT         images, logs, summary (default build/nested-kvm)
#   L1_KERNEL   sid (default: Debian sid's linux-image-amd64 and the
#               linux-binary/linux-modules it depends on, in
#               ${VPMU_CACHE:-$HOME/.cache/vpmu}/debs; the private apt
#               lists in .../sidapt) or guest (the guest image's 6.1: no
#               mediated vPMU)
#   RUNS        L1's configurations, in order (default off,emulated,vpmu,mediated,off:
#               the pmu=off baseline before and after, its runs pooled;
#               also vpmuop: vpmu with the operator's instructions,
#               cycles and branches counting (vpmu-operator-start),
#               vpmuprof100 and vpmuprof1000: vpmu, its whole boot
#               profiled with call chains at 100 or 1000 Hz (vpmu-profile),
#               vpmusnap: -accel kvm,vpmu=on,vpmu-rdpmc=snapshot,
#               vpmustrict and vpmulinux: vpmu-sync=strict / linux)
#   REPS        bench-work runs per mode and configuration (default 5)
#   ROUNDS      bench-work's argument (default 20)
#   STARTUP     runs of each start-up command (default 9)
#   RECORDS     more bench-work modes, rec-F-E,...: perf record -F F with
#               E = 1 (cycles) or 6 events (e.g. rec-1000-1,rec-4000-6)
#   TIMEOUT     L1's limit in seconds (default 3600); L2TIMEOUT each L2's (900)
#   L1CPU       L1's -cpu (default EPYC-v3,pmu=on,+svm)
#   WHAT        which L2 boots per configuration: linux,msr (default both;
#               plain: linux with only "true" and plain bench-work, the
#               guest not using its PMU: e.g. RUNS=off,vpmu,vpmuop,vpmuop,
#               vpmu WHAT=plain REPS=9 for the operator's events' cost;
#               msr alone takes a few minutes); count: the counting phases
#               (exits, host calls and time per PMI and per tick,
#               bench/nested-kvm-count.py)
#   OPEVENTS    vpmuop's operator events (default instructions,cycles,
#               branches; "cycles" alone is what L1's TCG counts by time,
#               with no charge on translated blocks: the KVM path's own
#               cost without the rig's emulation of L1's counting)
#   PROFILE     configurations whose L2 boots L1 profiles with
#               perf record -a -g (default none; "# profile CFG| " lines)
# Every L1 boot holds /tmp/vpmu-l1.lock (flock): one L1 at a time.
# Exit status: 0 if L1 ran every configuration it could (a mediated n/a
# included), 1 otherwise.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QEMU=${QEMU:-$top/build/qemu/qemu-system-x86_64}
IMAGE=${IMAGE:-$top/build/guest}
OUT=${OUT:-$top/build/nested-kvm}
L1_KERNEL=${L1_KERNEL:-sid}
RUNS=${RUNS:-off,emulated,vpmu,mediated,off}
REPS=${REPS:-5}
ROUNDS=${ROUNDS:-20}
STARTUP=${STARTUP:-9}
RECORDS=${RECORDS:-}
LIMIT=${TIMEOUT:-3600}
L2LIMIT=${L2TIMEOUT:-900}
L1CPU=${L1CPU:-EPYC-v3,pmu=on,+svm}
WHAT=${WHAT:-linux,msr}
PROFILE=${PROFILE:-}
OPEVENTS=${OPEVENTS:-instructions,cycles,branches}
cache=${VPMU_CACHE:-$HOME/.cache/vpmu}

log() { echo "nested-kvm: $*" >&2; }
die() { log "error: $*"; exit 1; }

for tool in gcc ld objcopy cpio gzip flock timeout apt-get dpkg-deb; do
    command -v "$tool" >/dev/null || die "$tool is missing"
done
[[ -x $QEMU ]] || die "no QEMU at $QEMU (make qemu)"
QEMU=$(cd "$(dirname "$QEMU")" && pwd)/$(basename "$QEMU")
mkdir -p "$OUT" "$cache/debs"
OUT=$(cd "$OUT" && pwd)
started=$(date -u '+%Y-%m-%d %H:%M UTC')

# --- the table -----------------------------------------------------------------
# NK CFG count w=W instructions:u=I branches:u=B
# NK CFG record ev=E w=loop_10M period=P samples=S
# NK CFG startup what=W median_ns=M ...
# NK CFG work mode=M rep=I ns=T ...
# NKMSR CFG op=O rep=R iters=N tsc=T
# NK CFG n/a: REASON
summary() {
    awk -v mna="${mediated_na:-}" '
    function kv(k,   i, a) {
        for (i = 3; i <= NF; i++) { split($i, a, "="); if (a[1] == k) return substr($i, length(k) + 2) }
        return ""
    }
    function median(list,   n, v, i, j, t) {
        n = split(list, v, " ")
        if (!n) return ""
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    function cell(c, v, ref, digits,   r) {
        if (na[c] != "") return "n/a"
        if (v == "") return "-"
        if (ref == "" || ref + 0 == 0) return sprintf("%." digits "f", v)
        return sprintf("%." digits "f (%.3f)", v, v / ref)
    }
    function row(label, key, refkey, digits, target,   c, s, k) {
        s = "| " label
        for (k = 1; k <= ncol; k++) { c = col[k]; s = s " | " cell(c, val[c, key], refkey == "" ? "" : val[refkey == "self" ? c : "emulated", refkey == "self" ? key "_ref" : key], digits) }
        print s " | " target " |"
    }
    /^NK-L1-EXIT/ { l1exit = $2 }
    /^NK l1 / { l1[++nl1] = substr($0, 7) }
    # A configuration whose L2 ran out of time keeps what it printed.
    /^NK [a-z0-9]+ incomplete: / || (/^NK [a-z0-9]+ n\/a: / && /did not finish/) {
        c = $2; sub(/^NK [a-z0-9]+ [a-z\/]+: /, ""); inc[c] = inc[c] (inc[c] != "" ? "; " : "") $0; next }
    /^NK [a-z0-9]+ n\/a: / { c = $2; sub(/^NK [a-z0-9]+ n\/a: /, ""); na[c] = na[c] (na[c] != "" ? "; " : "") $0 }
    /^NK [a-z0-9]+ count / { c = $2; w = kv("w"); n = w; sub(/^loop_/, "", n); sub(/M$/, "", n); n *= 1000000
        val[c, w "_i"] = kv("instructions:u"); val[c, w "_i_ref"] = 2 * n + 4
        val[c, w "_b"] = kv("branches:u"); val[c, w "_b_ref"] = n + 1; seen[c] = 1 }
    /^NK [a-z0-9]+ record / { c = $2; e = kv("ev"); p = kv("period"); s = kv("samples")
        x = (e == "instructions:u") ? 20000004 : 10000001
        val[c, e "_s"] = (s ~ /^[0-9]+$/) ? s : ""; val[c, e "_s_ref"] = int(x / p) }
    /^NK [a-z0-9]+ startup / { c = $2; val[c, "st_" kv("what")] = kv("median_ns") / 1e6 }
    /^NK [a-z0-9]+ work / { c = $2; m = kv("mode"); t = kv("ns"); if (t > 0) work[c, m] = work[c, m] " " t
        if (m == "record") smp[c] = smp[c] " " kv("samples")
        if (m == "record100") smp100[c] = smp100[c] " " kv("samples")
        if (m == "stat") run[c] = kv("running") }
    /^NKMSR [a-z0-9]+ op=/ { c = $2; o = kv("op"); n = kv("iters"); if (n > 0) msr[c, o] = msr[c, o] " " kv("tsc") / n }
    /^NKMSR [a-z0-9]+ done/ { gp[$2] = kv("gp") }
    END {
        col[1] = "emulated"; col[2] = "mediated"; col[3] = "vpmu"; ncol = 3
        # vpmusnap (vpmu-rdpmc=snapshot) gets a column when it ran.
        for (k in msr) { split(k, kk, SUBSEP); if (kk[1] == "vpmusnap") snap = 1 }
        if (snap || seen["vpmusnap"]) { col[4] = "vpmusnap"; ncol = 4 }
        # vpmuop (operator events counting beside vpmu) likewise.
        for (k in work) { split(k, kk, SUBSEP); if (kk[1] == "vpmuop") op = 1 }
        if (op) col[++ncol] = "vpmuop"
        # vpmuprofF (a host profile at F Hz beside vpmu) likewise.
        for (k in work) { split(k, kk, SUBSEP); if (kk[1] ~ /^vpmuprof/) pf[kk[1]] = 1 }
        if (pf["vpmuprof100"]) col[++ncol] = "vpmuprof100"
        if (pf["vpmuprof1000"]) col[++ncol] = "vpmuprof1000"
        if (na["mediated"] == "" && !seen["mediated"] && mna != "") na["mediated"] = mna
        for (i = 1; i <= nl1; i++) print "L1: " l1[i]
        print "L1 exit: " (l1exit == "" ? "none (timed out or crashed)" : l1exit)
        for (k = 1; k <= ncol; k++) if (na[col[k]] != "") print col[k] ": n/a: " na[col[k]]
        if (na["off"] != "") print "off: n/a: " na["off"]
        for (c in inc) print c ": incomplete: " inc[c] " (its medians are of the runs it finished)"
        print ""
        s = "| "; d = "|---"
        for (k = 1; k <= ncol; k++) { s = s " | " col[k]; d = d "|---:" }
        print s " | target |"; print d "|---|"
        print "| **counts** (value, ratio to exact) | | | | |"
        row("loop_1M instructions:u (exact 2,000,004)", "loop_1M_i", "self", 0, "1.000")
        row("loop_1M branches:u (exact 1,000,001)", "loop_1M_b", "self", 0, "1.000")
        row("loop_10M instructions:u (exact 20,000,004)", "loop_10M_i", "self", 0, "1.000")
        row("loop_10M branches:u (exact 10,000,001)", "loop_10M_b", "self", 0, "1.000")
        row("loop_100M instructions:u (exact 200,000,004)", "loop_100M_i", "self", 0, "1.000")
        row("loop_100M branches:u (exact 100,000,001)", "loop_100M_b", "self", 0, "1.000")
        print "| **perf record -c P, loop_10M** (samples, ratio to floor(exact/P)) | | | | |"
        row("instructions:u -c 10007 (floor 1998)", "instructions:u_s", "self", 0, "1.000")
        row("branches:u -c 5003 (floor 1998)", "branches:u_s", "self", 0, "1.000")
        for (k = 1; k <= ncol; k++) for (o = 1; o <= 6; o++) {
            c = col[k]; split("cpuid rdmsr-ctr wrmsr-ctr wrmsr-ctl rdmsr-ctl wrmsr-gctl", ops, " ")
            val[c, "msr_" ops[o]] = median(msr[c, ops[o]])
        }
        print "| **one L2 access, TSC ticks** (median of 7 x 1000; ratio to emulated) | | | | |"
        row("CPUID (the bare exit)", "msr_cpuid", "emulated", 0, "-")
        row("RDMSR PERF_CTR0", "msr_rdmsr-ctr", "emulated", 0, "vpmu <= 2x")
        row("WRMSR PERF_CTR0", "msr_wrmsr-ctr", "emulated", 0, "vpmu <= 2x")
        row("WRMSR PERF_CTL0 (on/off)", "msr_wrmsr-ctl", "emulated", 0, "vpmu <= 2x")
        row("RDMSR PERF_CTL0", "msr_rdmsr-ctl", "emulated", 0, "vpmu <= 2x")
        row("WRMSR PerfCntrGlobalCtl (on/off; PerfMonV2 only)", "msr_wrmsr-gctl", "emulated", 0, "-")
        print "| **start-up, ms** (median of the runs; ratio to emulated) | | | | |"
        row("true", "st_true", "emulated", 1, "-")
        row("perf stat -e instructions true", "st_perf-stat", "emulated", 1, "-")
        off = median(work["off", "plain"])
        for (k = 1; k <= ncol; k++) {
            c = col[k]
            for (m = 1; m <= 4; m++) {
                split("plain stat record record100", ms, " ")
                v = median(work[c, ms[m]])
                val[c, "w_" ms[m]] = (v != "" && off > 0) ? v / 1e9 : ""
                val[c, "w_" ms[m] "_ref"] = off / 1e9
            }
        }
        printf "| **bench-work, s** (median; ratio to pmu=off plain: %.3f s) | | | | |\n", off / 1e9
        row("plain, pmu=on", "w_plain", "self", 3, "-")
        row("perf stat, 6 events", "w_stat", "self", 3, "vpmu <= emulated")
        row("perf record -F 1000 -e cycles", "w_record", "self", 3, "vpmu <= emulated")
        row("perf record -F 100 -e cycles", "w_record100", "self", 3, "-")
        print ""
        for (k = 1; k <= ncol; k++) {
            c = col[k]
            if (smp[c] != "") printf "%s: perf record samples per run:%s (-F 100:%s); perf stat running%%: %s; MSR payload #GPs: %s\n", c, smp[c], smp100[c], run[c], gp[c]
        }
        printf "pmu=off plain runs (ns):%s\n", work["off", "plain"]
        # The verdicts.
        print ""
        for (o = 2; o <= 4; o++) {
            e = val["emulated", "msr_" ops[o]]; v = val["vpmu", "msr_" ops[o]]
            if (e > 0 && v != "") printf "target %s: vpmu/emulated = %.2f (<= 2): %s\n", ops[o], v / e, v / e <= 2 ? "met" : "MISSED"
        }
        split("stat record", ws, " ")
        for (m = 1; m <= 2; m++) {
            e = val["emulated", "w_" ws[m]]; v = val["vpmu", "w_" ws[m]]
            if (e > 0 && v > 0 && off > 0) printf "target %s overhead: vpmu %.3f vs emulated %.3f (ratio to pmu=off): %s\n", ws[m], v * 1e9 / off, e * 1e9 / off, v <= e ? "met" : "MISSED"
        }
        # The operator: vpmuop against vpmu, median over median, each mode.
        split("plain stat record", ws, " ")
        for (m = 1; m <= 3; m++) {
            v = val["vpmu", "w_" ws[m]]; o = val["vpmuop", "w_" ws[m]]
            if (v > 0 && o > 0) printf "target operator %s: vpmuop/vpmu = %.3f (<= 1.01): %s\n", ws[m], o / v, o / v <= 1.01 ? "met" : "MISSED"
        }
        # A host profile: the slowdown of the guest, vpmuprofF against vpmu.
        split("100 1000", fs, " ")
        for (f = 1; f <= 2; f++) for (m = 1; m <= 3; m++) {
            v = median(work["vpmu", ws[m]]); o = median(work["vpmuprof" fs[f], ws[m]])
            if (v > 0 && o > 0) printf "profile %s Hz %s: vpmuprof%s/vpmu = %.3f (medians %.3f / %.3f s)\n", fs[f], ws[m], fs[f], o / v, o / 1e9, v / 1e9
        }
    }' "$1"
}
# The counting phases (WHAT=count): per PMI and per tick, in Python.
count_summary() {
    if grep -q '^NK [a-z]* mark ' "$1"; then
        echo
        python3 "$top/bench/nested-kvm-count.py" "$1"
    fi
}
if [[ ${1:-} == --summary ]]; then
    summary "${2:-$OUT/l1.out}"
    count_summary "${2:-$OUT/l1.out}"
    exit 0
fi

# --- L1's kernel: Debian sid's (scripts/sid-kernel.sh) ------------------------
mediated_na=
kdebs=
fetch_sid() {
    kdebs=$("$top/scripts/sid-kernel.sh" "$OUT/sid-apt.log" 2>"$OUT/sid-kernel.err")
    local rc=$?
    sed 's/^sid-kernel: /nested-kvm: L1 kernel: /' "$OUT/sid-kernel.err" >&2
    why=$(tail -n1 "$OUT/sid-kernel.err" | sed 's/^sid-kernel: //')
    return $rc
}
case $L1_KERNEL in
sid)
    why=
    if ! fetch_sid; then
        mediated_na="sid kernel not fetched: $why"
        log "$mediated_na; L1 runs the guest image's kernel"
        kdebs=
    fi
    ;;
guest) mediated_na="L1 runs the guest image's kernel (L1_KERNEL=guest)" ;;
*) die "L1_KERNEL=$L1_KERNEL: sid or guest" ;;
esac

# --- images --------------------------------------------------------------------
if [[ ! -f $IMAGE/initramfs.cpio.gz ]]; then
    log "building the guest image: guest-tests/linux/build-image.sh $IMAGE"
    "$top/guest-tests/linux/build-image.sh" "$IMAGE" >"$OUT/build-image.log" 2>&1 ||
        die "build-image.sh failed (log: $OUT/build-image.log)"
fi
log "building the L1 image in $OUT/l1 (guest-tests/nested/build-l1.sh)"
QEMU=$QEMU L2IMAGE=$IMAGE L1_KERNEL_DEBS=$kdebs \
    "$top/guest-tests/nested/build-l1.sh" "$OUT/l1" >"$OUT/build-l1.log" 2>&1 ||
    { tail -n 5 "$OUT/build-l1.log" >&2; die "build-l1.sh failed (log: $OUT/build-l1.log)"; }

# The bench's segments: for L2 (bench-work, the timer, the in-guest
# script) and for L1 (/init, the payload, L2's segment).
b=$OUT/build
rm -rf "$b"
mkdir -p "$b/l2/vpmu/bin" "$b/l2/vpmu/tests" "$b/l1/nk"
gcc -O2 -static -Wall -o "$b/l2/vpmu/bin/bench-work" "$top/guest-tests/linux/workloads/bench-work.c" ||
    die "bench-work does not build"
gcc -O2 -static -Wall -o "$b/l2/vpmu/bin/nested-kvm-time" "$top/bench/nested-kvm-time.c" ||
    die "nested-kvm-time does not build"
install -m 0755 "$top/bench/nested-kvm-l2.sh" "$b/l2/vpmu/tests/nested-kvm.sh"
# The MSR payload: guest-tests/runtime's bios16 platform, as guest-tests/kvm.
rt=$top/guest-tests/runtime
pcflags=(-m16 -march=i686 -ffreestanding -fno-pic -fno-pie -fno-stack-protector
         -fno-asynchronous-unwind-tables -Os -Wall -Wextra -Werror -std=gnu11
         -mgeneral-regs-only)
gcc -m16 -c -o "$b/bios16.o" "$rt/bios16.S" &&
    gcc "${pcflags[@]}" -c -o "$b/runtime.o" "$rt/runtime.c" &&
    gcc "${pcflags[@]}" -c -o "$b/com1.o" "$rt/com1.c" &&
    gcc "${pcflags[@]}" -c -o "$b/msr.o" "$top/bench/nested-kvm-msr.c" &&
    ld -m elf_i386 -nostdlib -static --no-warn-rwx-segments -T "$rt/bios16.ld" \
        -o "$b/payload.elf" "$b/bios16.o" "$b/runtime.o" "$b/com1.o" "$b/msr.o" &&
    objcopy -O binary "$b/payload.elf" "$b/l1/nk/payload.bin" &&
    truncate -s 65536 "$b/l1/nk/payload.bin" || die "the MSR payload does not build"
mkcpio() { (cd "$1" && find . -print0 | LC_ALL=C sort -z |
            cpio --null -o -H newc -R 0:0 --quiet) | gzip -n; }
mkcpio "$b/l2" >"$b/l1/nk/l2-overlay.cpio.gz"
install -m 0755 "$top/bench/nested-kvm-l1" "$b/l1/init"
install -m 0755 "$top/guest-tests/nested/mediated-check.sh" "$b/l1/nk/mediated-check.sh"
mkcpio "$b/l1" >"$b/l1-overlay.cpio.gz"
# Linux unpacks concatenated archives in turn: the later /init wins.
cat "$OUT/l1/initramfs.cpio.gz" "$b/l1-overlay.cpio.gz" >"$OUT/initramfs.cpio.gz"
kernel=$OUT/l1/vmlinux
[[ -f $kernel ]] || kernel=$OUT/l1/vmlinuz

# --- L1 --------------------------------------------------------------------------
append="console=ttyS0 panic=-1 quiet nmi_watchdog=0 nk.runs=$RUNS nk.timeout=$L2LIMIT"
append+=" nk.l2=nk.reps=$REPS:nk.rounds=$ROUNDS:nk.startup=$STARTUP"
[[ -n $RECORDS ]] && append+=":nk.records=$RECORDS"
append+=" nk.what=$WHAT nk.profile=$PROFILE nk.opevents=$OPEVENTS"
cmd=("$QEMU" -L /usr/share/qemu -L /usr/share/seabios -accel tcg -cpu "$L1CPU" -m 3072
     -nographic -no-reboot -net none
     -kernel "$kernel" -initrd "$OUT/initramfs.cpio.gz" -append "$append")
log "L1: ${cmd[*]}"
log "waiting for /tmp/vpmu-l1.lock (one L1 at a time), then up to $LIMIT s"
s=$(date +%s)
flock /tmp/vpmu-l1.lock timeout -k 10 "$LIMIT" "${cmd[@]}" </dev/null >"$OUT/l1.log" 2>&1
rc=$?
secs=$(($(date +%s) - s))
tr -d '\r' <"$OUT/l1.log" >"$OUT/l1.out"
log "L1 exited with status $rc after $secs s (lock wait included); log: $OUT/l1.log"
load=$(cut -d' ' -f1-3 /proc/loadavg)

{
    echo "nested-kvm: $started; L1 $secs s; host $(nproc) CPUs, load $load (at the end)"
    echo "QEMU $QEMU ($(date -u -r "$QEMU" '+%F %T')); L1 -cpu $L1CPU; REPS=$REPS ROUNDS=$ROUNDS STARTUP=$STARTUP"
    summary "$OUT/l1.out"
    count_summary "$OUT/l1.out"
    echo "log: $OUT/l1.log"
} | tee "$OUT/summary.txt"
grep -q '^NK-L1-EXIT 0' "$OUT/l1.out"
