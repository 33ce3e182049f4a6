#!/usr/bin/env bash
# vpmu the way operators run VMs: a real libvirtd (Debian bookworm's 9.0),
# the installed QEMU (make install into a scratch DESTDIR; no -L), QEMU
# as user libvirt-qemu with no capabilities, perf_event_paranoid 3:
#
#   - a TCG domain, <features><pmu state='on'/> and a Skylake model, no
#     <qemu:commandline>: the guest's perf stat counts exactly
#     (stat-exact's TAP, copied in), and its console says the guest ended;
#   - virsh qemu-monitor-command DOM query-vpmu answers for it;
#   - two KVM domains, host-passthrough with pmu on, vpmu chosen by
#     /etc/qemu/vpmu.conf and their events opened by vpmu-helper (started
#     here, as root), boot guest-tests/kvm's real-mode payload as their
#     ROM: vpmu-kvm's cycles count (task-clock through the helper) and
#     query-vpmu shows the helper's policy for it, known by its libvirt
#     cgroup; vpmu-deny's policy denies cycles: its counter stays at 0,
#     and query-vpmu shows the filtered programmings and the helper's
#     refusals;
#   - a client in vpmu-deny's cgroup, as libvirt-qemu, is refused an fd
#     for a vCPU thread of vpmu-kvm.
#
# Set up here and undone at the end, also when a check fails: the user,
# groups and directories libvirt-daemon-system would create (only those
# that were missing), what libvirtd and virtlogd write there, /dev/kvm's
# group and mode, kernel.perf_event_paranoid, /etc/qemu/vpmu.conf;
# libvirtd, virtlogd and the helper are started here and stopped by pid.
#
# Environment: VPMU_BUILD (meson build directory), IMAGE (the guest image).
# TAP on stdout; 1..0 # SKIP without root, libvirtd or the guest image;
# the KVM domains are one SKIP line without /dev/kvm.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=../tap.sh
. "$HERE/../tap.sh"
BUILD=${VPMU_BUILD:-$ROOT/build}
IMAGE=${IMAGE:-$BUILD/guest}
SYSCTL=/proc/sys/kernel/perf_event_paranoid
CONF=/etc/qemu/vpmu.conf
VIRSH=(virsh -q -c qemu:///system)

tap_begin
[ "$(id -u)" = 0 ] || tap_skip_all "needs root (libvirtd, users, sysctl)"
for t in libvirtd virtlogd virsh; do
    command -v "$t" >/dev/null ||
        tap_skip_all "$t not found (scripts/install-deps.sh libvirt)"
done
[ -f "$IMAGE/vmlinuz" ] && [ -f "$IMAGE/initramfs.cpio.gz" ] ||
    tap_skip_all "no guest image in $IMAGE"
[ -x "$ROOT/build/qemu/qemu-system-x86_64" ] ||
    tap_skip_all "no QEMU (make qemu)"
if pgrep -x libvirtd >/dev/null || pgrep -x virtlogd >/dev/null; then
    tap_skip_all "a libvirtd or virtlogd runs already: not this test's"
fi

dir=$(mktemp -d /tmp/vpmu-libvirt-XXXXXX)
chmod 0755 "$dir"
made_users=()
made_groups=()
old_paranoid=$(cat "$SYSCTL")
old_kvm=$(stat -c '%g %a' /dev/kvm 2>/dev/null)
had_etc_qemu=0
[ -d /etc/qemu ] && had_etc_qemu=1
[ -e "$CONF" ] && cp -p "$CONF" "$dir/vpmu.conf.saved"
pids=()
# What libvirtd and virtlogd write (caches, logs, state): every path in
# these trees that was not there before the run is removed after it.
TREES=(/etc/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt
       /run/libvirt)
find "${TREES[@]}" 2>/dev/null | sort >"$dir/before.list"

cleanup() {
    local p
    for p in vpmu-tcg vpmu-kvm vpmu-deny; do
        "${VIRSH[@]}" destroy "$p" >/dev/null 2>&1
    done
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null
    done
    for p in "${pids[@]}"; do
        while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
    done
    echo "$old_paranoid" >"$SYSCTL"
    if [ -n "$old_kvm" ]; then
        chgrp "${old_kvm% *}" /dev/kvm
        chmod "${old_kvm#* }" /dev/kvm
    fi
    if [ -e "$dir/vpmu.conf.saved" ]; then
        cp -p "$dir/vpmu.conf.saved" "$CONF"
    else
        rm -f "$CONF"
        [ "$had_etc_qemu" = 1 ] || rmdir /etc/qemu 2>/dev/null
    fi
    find "${TREES[@]}" 2>/dev/null | sort | comm -13 "$dir/before.list" - |
        sort -r | while IFS= read -r p; do rm -rf "$p"; done
    for p in "${made_users[@]}"; do userdel "$p"; done
    for p in "${made_groups[@]}"; do groupdel "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT

# What libvirt-daemon-system's postinst makes: groups kvm and libvirt, the
# user libvirt-qemu (uid 64055) in group kvm (docs: qemu-libvirt notes).
for g in kvm libvirt; do
    getent group "$g" >/dev/null || { groupadd -r "$g" && made_groups+=("$g"); }
done
if ! id libvirt-qemu >/dev/null 2>&1; then
    groupadd -r -g 64055 libvirt-qemu 2>/dev/null || groupadd -r libvirt-qemu
    useradd -r -u 64055 -g libvirt-qemu -G kvm -d /var/lib/libvirt \
        -s /usr/sbin/nologin libvirt-qemu 2>/dev/null
    made_users+=(libvirt-qemu)
    made_groups+=(libvirt-qemu)
fi
mkdir -p /var/log/libvirt/qemu /var/lib/libvirt/qemu /var/cache/libvirt/qemu
# Debian's /dev/kvm is 0660 group kvm; root-only makes libvirt re-probe
# the emulator on every call (~45 s a domain).
[ ! -c /dev/kvm ] || { chgrp kvm /dev/kvm && chmod 0660 /dev/kvm; }
echo 3 >"$SYSCTL"

# The installed QEMU and helper.
make -s -C "$ROOT" install DESTDIR="$dir/inst" PREFIX=/usr/local \
    INSTALL_BUILD="$dir/build" >"$dir/install.log" 2>&1
tap $? "make install DESTDIR=... PREFIX=/usr/local" "$(tail -5 "$dir/install.log")"
qemu=$dir/inst/usr/local/bin/qemu-system-x86_64
helper=$dir/inst/usr/local/sbin/vpmu-helper
cp "$IMAGE/vmlinuz" "$IMAGE/initramfs.cpio.gz" "$dir/"

virtlogd -d -p "$dir/virtlogd.pid" && pids+=("$(cat "$dir/virtlogd.pid")")
libvirtd -d -p "$dir/libvirtd.pid" 2>"$dir/libvirtd.err" &&
    pids+=("$(cat "$dir/libvirtd.pid")")
for _ in $(seq 100); do
    "${VIRSH[@]}" version >/dev/null 2>&1 && break
    sleep 0.2
done
"${VIRSH[@]}" version >/dev/null 2>&1
tap $? "libvirtd and virtlogd started (pids ${pids[*]})" "$(cat "$dir/libvirtd.err")"

# domain TYPE NAME MIB BOOT-XML CPU-XML: a domain with <pmu state='on'/>,
# booted as BOOT-XML says (in <os>), its console in DIR/NAME.log.
domain() {
    cat <<EOF
<domain type='$1'>
  <name>$2</name>
  <memory unit='MiB'>$3</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    $4
  </os>
  <features><acpi/><pmu state='on'/></features>
  $5
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>$qemu</emulator>
    <serial type='file'><source path='$dir/$2.log'/><target port='0'/></serial>
  </devices>
</domain>
EOF
}

# vpmu_query DOM: query-vpmu's first vCPU through virsh, as "vendor GP
# fixed helper.vm helper.by-cgroup helper.counters helper.connects
# helper.refusals helper.failures filtered counter0.filtered
# source-last-error helper.opens helper.last-error" ("-" where absent).
vpmu_query() {
    "${VIRSH[@]}" qemu-monitor-command "$1" '{"execute":"query-vpmu"}' |
        python3 -c '
import json, sys
r = json.load(sys.stdin).get("return") or []
if not r:
    print("none"); sys.exit(0)
c, h = r[0], r[0].get("helper", {})
print(c["vendor"], sum(1 for x in c["counters"] if not x["fixed"]),
      sum(1 for x in c["counters"] if x["fixed"]),
      *(h.get(k, "-") for k in ("vm", "by-cgroup", "counters", "connects",
                                  "refusals", "failures")),
      c["filtered"], c["counters"][0]["filtered"],
      c.get("source-last-error", "-"), h.get("opens", "-"),
      h.get("last-error", "-"))' 2>&1
}

# TCG: stat-exact in a Skylake guest, no PMU-specific XML but pmu='on'.
cmdline="console=ttyS0 panic=-1 quiet nmi_watchdog=0 vpmu.test=stat-exact vpmu.require_pmu=1"
domain qemu vpmu-tcg 512 \
    "<kernel>$dir/vmlinuz</kernel><initrd>$dir/initramfs.cpio.gz</initrd><cmdline>$cmdline</cmdline>" \
    "<cpu mode='custom' match='exact'><model fallback='forbid'>Skylake-Client</model></cpu>" \
    >"$dir/tcg.xml"
"${VIRSH[@]}" create "$dir/tcg.xml" >"$dir/create.out" 2>&1
tap $? "virsh create: a TCG domain with <pmu state='on'/>" "$(cat "$dir/create.out")"
out=$(vpmu_query vpmu-tcg)
[ "$out" = "intel 8 3 - - - - - - 0 0 - - -" ]
tap $? "virsh qemu-monitor-command query-vpmu: the guest's Intel PMU, 8 GP + 3 fixed ($out)"
for _ in $(seq 600); do
    "${VIRSH[@]}" domstate vpmu-tcg >/dev/null 2>&1 || break
    sleep 0.5
done
tr -d '\r' <"$dir/vpmu-tcg.log" >"$dir/tcg.tap"
tap_copy "tcg: " "$dir/tcg.tap"
grep -q 'VPMU-GUEST-EXIT 0' "$dir/tcg.tap"
tap $? "the TCG guest ended with exit status 0" "$(tail -5 "$dir/tcg.tap")"

# KVM: vpmu from /etc/qemu/vpmu.conf, events from the helper.  Two
# domains boot guest-tests/kvm's real-mode payload from <loader
# type='rom'>, built for the PMU their policy gives: vpmu-kvm may count
# cycles (task-clock, opened by the helper), vpmu-deny's policy denies
# them.  Both have 3 counters.  A host without /dev/kvm runs none of it.
if [ ! -c /dev/kvm ]; then
    tap_skip "KVM domains vpmu-kvm and vpmu-deny: vpmu from vpmu.conf, events from vpmu-helper, its policy and cgroup checks" \
        "no /dev/kvm on this host"
    tap_end
fi
for p in kvm:0 deny:1; do
    mkdir -p "$dir/payload-${p%:*}"
    make -s -C "$ROOT/guest-tests/kvm" OUT="$dir/payload-${p%:*}" NR_GP=3 \
        CYCLES_DENIED="${p#*:}" >"$dir/make.log" 2>&1 ||
        { tap 1 "build the payloads" "$(cat "$dir/make.log")"; tap_end; }
done
mkdir -p "$dir/policy" /etc/qemu
# An allow list closes the fixed counters unless its fixed bitmap opens
# them (KVM's semantics): fixed=0x7 lets intel.c's FIXED_CTR1 count.
printf 'events = allow 0x3c, 0x76, 0xc0, fixed=0x7\ncounters = 3\n' \
    >"$dir/policy/vpmu-kvm.conf"
printf 'events = deny 0x3c, 0x76\ncounters = 3\n' \
    >"$dir/policy/vpmu-deny.conf"
"$helper" --socket "$dir/helper.sock" --socket-group kvm \
    --policy-dir "$dir/policy" 2>"$dir/helper.log" &
pids+=("$!")
printf '[vpmu]\nkvm = on\nhelper = %s\n' "$dir/helper.sock" >"$CONF"
for _ in $(seq 50); do
    [ -S "$dir/helper.sock" ] && break
    sleep 0.1
done

# run_payload NAME: start the domain (the payload of NAME as its ROM), wait for the payload's last line
# (it then halts), copy its TAP.
run_payload() {
    domain kvm "$1" 16 \
        "<loader type='rom' readonly='yes'>$dir/payload-${1#vpmu-}/payload.bin</loader>" \
        "<cpu mode='host-passthrough'><feature policy='disable' name='arch-capabilities'/></cpu>" \
        >"$dir/$1.xml"
    "${VIRSH[@]}" create "$dir/$1.xml" >"$dir/create.out" 2>&1
    tap $? "virsh create: KVM domain $1, vpmu from vpmu.conf" "$(cat "$dir/create.out")"
    for _ in $(seq 600); do
        grep -q '^# done: ' "$dir/$1.log" 2>/dev/null && break
        sleep 0.2
    done
    tap_copy "$1: " "$dir/$1.log"
    grep -q '^# done: ' "$dir/$1.log"
    tap $? "$1: the payload ran to the end" "$(tail -5 "$dir/$1.log")"
}

vendor=$(grep -q GenuineIntel /proc/cpuinfo && echo intel || echo amd)
fixed=$([ "$vendor" = intel ] && echo 3 || echo 0)
run_payload vpmu-kvm
qpid_kvm=$(pgrep -f 'guest=vpmu-kvm' | head -1)
uid=$(awk '/^Uid:/ { print $2 }' "/proc/$qpid_kvm/status" 2>/dev/null)
[ "$uid" = "$(id -u libvirt-qemu)" ]
tap $? "its QEMU runs as libvirt-qemu (uid $uid)"
# The perf source probes the host once per vCPU: hardware cycles, and
# without a hardware PMU the task clock (docs/perf-source.md).  Here the
# hardware probe fails (ENOENT, a refusal the helper passes on), the task
# clock opens (1), and counter 0 opens its event once, which then serves
# every programming of cycles (2); on Intel, FIXED_CTR1 opens one of its
# own (intel.c's test_fixed: 3).  With a hardware PMU every generic event
# is probed: nothing refused, and more than 2 opens.
out=$(vpmu_query vpmu-kvm)
opens=$([ "$vendor" = intel ] && echo 3 || echo 2)
if grep -q 'no hardware PMU on this host' /var/log/libvirt/qemu/vpmu-kvm.log; then
    [ "$out" = "$vendor 3 $fixed vpmu-kvm True 3 1 1 0 0 0 - $opens perf_event_open: No such file or directory" ]
else
    [[ $out =~ ^"$vendor 3 $fixed vpmu-kvm True 3 1 0 0 0 0 - "([0-9]+)" -"$ ]] &&
        [ "${BASH_REMATCH[1]}" -gt 2 ]
fi
tap $? "query-vpmu: the helper knew vpmu-kvm by its libvirt cgroup, gave its policy (3 GP counters, one connect) and opened its cycles ($out)" "$(cat "$dir/helper.log")"

# The policy of vpmu-deny denies cycles: the payload checks that its
# counter 0 never counts, and the 3 enabling writes of PERF_CTL0 /
# PERFEVTSEL0 with cycles (lib.c's test_counting, test_pmi, test_rdpmc;
# amd.c's and intel.c's round trips leave the enable bit clear) were each
# filtered, on counter 0.  The helper
# refused the probe of cycles by the policy, which says nothing about the
# host's PMU, so the source probed the 6 other generic events: without a
# hardware PMU the kernel refused each (ENOENT), then the task-clock probe
# was refused by the policy too: 8 refusals, nothing opened.  With a
# hardware PMU, the other events open (the guest keeps them).
run_payload vpmu-deny
qpid_deny=$(pgrep -f 'guest=vpmu-deny' | head -1)
out=$(vpmu_query vpmu-deny)
cycles=$([ "$vendor" = intel ] && echo 0x3c || echo 0x76)
denied="event $cycles denied by the policy of VM 'vpmu-deny'"
if grep -q 'no hardware PMU on this host' /var/log/libvirt/qemu/vpmu-deny.log ||
   grep -q 'perf_event_open is unavailable here' /var/log/libvirt/qemu/vpmu-deny.log; then
    [ "$out" = "$vendor 3 $fixed vpmu-deny True 3 1 8 0 3 3 - 0 $denied" ]
else
    [[ $out =~ ^"$vendor 3 $fixed vpmu-deny True 3 1 "[0-9]+" 0 3 3 - "([0-9]+)" " ]] &&
        [ "${BASH_REMATCH[1]}" -gt 0 ]
fi
tap $? "query-vpmu: vpmu-deny's denied cycles were filtered 3 times on counter 0, and the helper refused them ($out)"

# A second domain cannot get fds for the first's threads: a client that
# runs as libvirt-qemu in vpmu-deny's cgroup (the helper takes it for
# that domain) asks for the vCPU thread of vpmu-kvm's QEMU.
# cgroup_procs PID: cgroup.procs of PID's cgroup, in the unified
# hierarchy if it is mounted, else in the v1 cpu controller's.
cgroup_procs() {
    local line
    line=$(grep -m1 '^0::/' "/proc/$1/cgroup")
    [ -d "/sys/fs/cgroup${line#0::}" ] && [ -n "${line#0::/}" ] &&
        { echo "/sys/fs/cgroup${line#0::}/cgroup.procs"; return; }
    line=$(grep -m1 '^[0-9]*:cpu:' "/proc/$1/cgroup") &&
        echo "/sys/fs/cgroup/cpu${line#*:cpu:}/cgroup.procs"
}
vcpu=$(grep -lx 'CPU 0/KVM' /proc/"$qpid_kvm"/task/*/comm | head -1 | cut -d/ -f5)
procs=$(cgroup_procs "$qpid_deny")
out=$(sh -c 'echo $$ >"$1" && exec setpriv --reuid=libvirt-qemu \
        --regid=libvirt-qemu --init-groups --inh-caps=-all \
        --bounding-set=-all -- "$2" "$3" "$4"' \
      sh "$procs" "$BUILD/tests/helper/helper-open" "$dir/helper.sock" "$vcpu" 2>&1)
[[ $out =~ ^refused\ -1\ thread\ $vcpu\ is\ not\ one\ of\ process\ ([0-9]+)$ ]] &&
    grep -q "(VM 'vpmu-deny'): thread $vcpu is not one of process ${BASH_REMATCH[1]}" "$dir/helper.log"
tap $? "a client in vpmu-deny's cgroup, as libvirt-qemu, cannot get an fd for vpmu-kvm's vCPU thread $vcpu ($out)" "$(tail -3 "$dir/helper.log")"
for d in vpmu-kvm vpmu-deny; do
    "${VIRSH[@]}" destroy "$d" >/dev/null 2>&1
done
tap_end
