#!/bin/sh
# mediated-check.sh: in L1 (busybox sh), does vpmu say what KVM's mediated
# vPMU does to it?  (docs/kvm.md, "Mediated hosts"; issue 25 item 4.)
#
#   mediated-check.sh EXPECT
#
# EXPECT is what L1's kvm-amd was loaded with:
#   mediated   enable_mediated_pmu=1 (bench/nested-kvm-l1's mediated_on):
#              perf refuses vpmu's host events once this L2's first vCPU
#              has made the VM mediated, so vpmu must say so;
#   perf       the default (=0): nothing to say, the events open.
#
# One L2, -accel kvm,vpmu=on -cpu host,pmu=on, paused (-S): vpmu's perf
# source is made with the vCPU, before the guest runs, so no guest image
# is needed.  Its QMP monitor is a pipe chardev (busybox nc has no Unix
# sockets), as in guest-tests/nested/init-l1.  Checks:
#   1. QEMU starts and answers QMP (KVM_CREATE_VCPU made the VM mediated:
#      no EBUSY, L1 has no system-wide perf event that counts guests);
#   2. its stderr: mediated: exactly one line (QEMU prints each libvpmu
#      text once) naming kvm_amd.enable_mediated_pmu=Y and the choice;
#      perf: no line about the mediated vPMU;
#   3. query-vpmu: "source-host-mode" is EXPECT, and mediated's
#      "source-host-reason" names the parameter.  These two members are
#      what the QEMU patch for vpmu_perf_source_host() is to add; with a
#      QEMU without them the check says "not ok ... (no such member)".
#
# Prints "NK mediated-check ok|not ok N - what" per check, then
# "NK mediated-check done: P of N"; "NK mediated-check n/a: why" if L1
# cannot run it.  Exit status: 0 all ok, 1 a check failed, 77 n/a.
# bench/nested-kvm.sh would install it as /nk/mediated-check.sh and
# bench/nested-kvm-l1 run it before and after mediated_on.
set -u

expect=${1:-}
case $expect in
mediated | perf) ;;
*) echo "usage: mediated-check.sh mediated|perf" >&2; exit 2 ;;
esac
qemu=${QEMU:-qemu-system-x86_64}
fw=${QEMU_FW:--L /usr/share/qemu}  # elsewhere: also -L /usr/share/seabios
t=/tmp/mediated-check
n=0 fails=0

say() { echo "NK mediated-check $*"; }
check() {                       # check STATUS WHAT [DETAIL]
    n=$((n + 1))
    if [ "$1" = 0 ]; then
        say "ok $n - $2"
    else
        fails=$((fails + 1))
        say "not ok $n - $2"
        [ -n "${3:-}" ] && echo "$3" | sed 's/^/# mediated-check| /'
    fi
}

[ -c /dev/kvm ] || { say "n/a: no /dev/kvm"; exit 77; }
command -v "$qemu" >/dev/null || { say "n/a: no $qemu"; exit 77; }
param=$(cat /sys/module/kvm_amd/parameters/enable_mediated_pmu 2>/dev/null ||
        cat /sys/module/kvm/parameters/enable_mediated_pmu 2>/dev/null)
echo "# mediated-check: expect $expect, kvm_amd enable_mediated_pmu=${param:-missing}, Linux $(uname -r)"

# qmp JSON: send it, wait up to 60 s for its "return" or "error" line
# (events are skipped) into $QMP; 1 if none came.
qmp() {
    echo "$1" >&3
    # shellcheck disable=SC3045  # busybox ash has read -t
    while read -t 60 -r QMP <&4; do
        case $QMP in *'"return"'* | *'"error"'*) return 0 ;; esac
    done
    QMP=
    return 1
}

rm -f $t.qmp.in $t.qmp.out
mkfifo $t.qmp.in $t.qmp.out
exec 3<>$t.qmp.in 4<>$t.qmp.out
# shellcheck disable=SC2086  # $fw: options
timeout -k 10 120 "$qemu" $fw -accel kvm,vpmu=on \
    -cpu host,pmu=on -m 16 -nodefaults -display none -S \
    -chardev pipe,id=qmp,path=$t.qmp -mon chardev=qmp,mode=control \
    </dev/null >$t.out 2>$t.err &
pid=$!

# 1. QEMU is up: its greeting, then capabilities.
qmp '{"execute":"qmp_capabilities"}'
r=$?
check $r "QEMU -accel kvm,vpmu=on starts and answers QMP" \
    "$(tail -n 5 $t.err; dmesg | grep -i 'mediated' | tail -n 3)"
if [ $r != 0 ]; then
    kill "$pid" 2>/dev/null
    wait "$pid"
    say "done: 0 of 1"
    exit 1
fi

# 2. The start line, once.
lines=$(grep -c "KVM's mediated vPMU is on" $t.err)
if [ "$expect" = mediated ]; then
    grep "KVM's mediated vPMU is on (kvm_amd.enable_mediated_pmu=Y)" $t.err |
        grep -q "choose per host: -accel kvm without vpmu=on"
    r=$?
    [ "$lines" = 1 ] || r=1
    check $r "stderr: one line names kvm_amd.enable_mediated_pmu=Y and the choice ($lines)" \
        "$(cat $t.err)"
else
    check "$lines" "stderr: no line about the mediated vPMU" "$(cat $t.err)"
fi

# 3. query-vpmu: the mode and the reason of CPU 0.
qmp '{"execute":"query-vpmu"}'
echo "# mediated-check: query-vpmu: $(echo "$QMP" | cut -c1-300)"
case $QMP in
*"\"source-host-mode\": \"$expect\""*) r=0 ;;
*'"source-host-mode"'*) r=1 ;;
*) r=2 ;;
esac
what="query-vpmu: source-host-mode is $expect"
[ $r = 2 ] && what="$what (no such member)"
check $((r != 0)) "$what"
if [ "$expect" = mediated ]; then
    case $QMP in
    *'"source-host-reason": "KVM'"'"'s mediated vPMU is on (kvm_amd.enable_mediated_pmu=Y)'*) r=0 ;;
    *) r=1 ;;
    esac
    check $r "query-vpmu: source-host-reason names kvm_amd.enable_mediated_pmu=Y"
fi

qmp '{"execute":"quit"}'
wait "$pid"
exec 3>&- 4<&-
say "done: $((n - fails)) of $n"
[ "$fails" = 0 ]
