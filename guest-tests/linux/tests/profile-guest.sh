#!/bin/sh
# profile-guest: the guest side of guest-tests/profile/profile-tcg.py.
# This guest runs calls (workloads/calls.c: main -> a -> b) under its own
# perf stat, once before the host profiles it and RUNS times while it
# does; every run must count exactly what the first did (linux64 -R: the
# same layout, docs/tcg.md), so the host's profile changes nothing the
# guest sees.  The host starts its profiles at "VPMU-PROFILE-READY" and
# checks they ended before "VPMU-PROFILE-DONE".  First the kernel's text
# symbols go to the second serial port, where the host reads them (where
# this kernel runs: its KASLR slide, and the names to check the
# profile's against).
# shellcheck source=SCRIPTDIR/../tap-lib.sh
. /vpmu/tap-lib.sh
plan 3

# vpmu.kallsyms=ttyS1: where the host reads the symbols; vpmu.runs=N.
RUNS=40
ksyms=
for arg in $(cat /proc/cmdline); do
    case $arg in
    vpmu.kallsyms=*) ksyms=/dev/${arg#vpmu.kallsyms=} ;;
    vpmu.runs=*) RUNS=${arg#vpmu.runs=} ;;
    esac
done
run_calls() {
    linux64 -R env -i PATH=/bin:/usr/bin \
        perf stat -x, -o c.csv -e instructions:u,branches:u -- "$BIN/calls"
    i=$(count c.csv instructions:u)
    b=$(count c.csv branches:u)
}

if [ -n "$ksyms" ]; then
    kr=$(cat /proc/sys/kernel/kptr_restrict)
    echo 0 >/proc/sys/kernel/kptr_restrict
    grep ' [tT] ' /proc/kallsyms | grep -v '\[' >"$ksyms"
    echo "$kr" >/proc/sys/kernel/kptr_restrict
    echo "VPMU-KALLSYMS-END" >"$ksyms"
fi
run_calls
i0=$i b0=$b
diag "calls before the profiles: instructions:u=$i0 branches:u=$b0"
check "calls counts its user instructions (> 20N)" ge "$i0" 20000000
echo "VPMU-PROFILE-READY"
same=1
r=0
while [ $r -lt "$RUNS" ]; do
    run_calls
    if [ "$i" != "$i0" ] || [ "$b" != "$b0" ]; then
        diag "run $r: instructions:u=$i branches:u=$b"
        same=0
    fi
    r=$((r + 1))
done
echo "VPMU-PROFILE-DONE"
check "$RUNS runs under the host's profiles count exactly as before" [ $same = 1 ]
# Then system calls from known user code, for a profile of both modes:
# the host starts it at READY (it polls the console every 0.2 s).
echo "VPMU-SYSCALLS-READY"
sleep 2
sys_ok=1
for r in 1 2 3; do
    "$BIN/calls" sys || sys_ok=0
done
echo "VPMU-SYSCALLS-DONE"
sleep 3     # the host stops its profile before this guest powers off
check "calls sys: 3 runs of N / 10 getppid calls exited 0" [ $sys_ok = 1 ]
finish
