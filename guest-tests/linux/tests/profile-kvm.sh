#!/bin/sh
# profile-kvm: guest side of the nested suite's profile checks
# (guest-tests/nested/init-l1, check_profile in l1-checks.sh).  This guest
# is L2 under vpmu with pmu-operator-profile=stack; L1 holds its QEMU's
# QMP monitor and profiles it from there (vpmu-profile by period on
# instructions:u, with call chains, as perf.data) when asked.
#
# The guest runs calls (workloads/calls.c: main -> a -> b) under its own
# perf stat once before the profile and RUNS times while L1 profiles it:
# every run must count exactly what the first did (linux64 -R: the same
# layout, docs/tcg.md), so the host's profile changes nothing the guest's
# own perf sees, while both use the host's PMU.  L1 checks the profile
# (perf script: the samples, the chains calls_b <- calls_a <- main, the
# count against RUNS runs of calls) with what this guest prints.
#
# Needs L1 (vpmu.nested=1); otherwise every check is skipped.
# shellcheck source=SCRIPTDIR/../tap-lib.sh
. /vpmu/tap-lib.sh
plan 4

RUNS=5
if [ "${VPMU_NESTED:-0}" != 1 ]; then
    for d in "calls counts its user instructions (> 20N)" \
            "L1 started its profile" \
            "$RUNS runs under L1's profile count exactly as before" \
            "L1 stopped its profile"; do
        skip "$d" "needs L1 with QMP on this guest's QEMU (guest-tests/nested, vpmu.nested=1)"
    done
    finish
fi

run_calls() {
    linux64 -R env -i PATH=/bin:/usr/bin \
        perf stat -x, -o c.csv -e instructions:u,branches:u -- "$BIN/calls"
    i=$(count c.csv instructions:u)
    b=$(count c.csv branches:u)
}

run_calls
i0=$i b0=$b
diag "profile: calls alone: instructions:u=$i0 branches:u=$b0 runs=$RUNS"
check "calls counts its user instructions (> 20N)" ge "$i0" 20000000
check "L1 started its profile" ask_l1 profile-start
same=1
r=0
while [ $r -lt "$RUNS" ]; do
    run_calls
    if [ "$i" != "$i0" ] || [ "$b" != "$b0" ]; then
        diag "run $r under the profile: instructions:u=$i branches:u=$b"
        same=0
    fi
    r=$((r + 1))
done
check "$RUNS runs under L1's profile count exactly as before" [ $same = 1 ]
check "L1 stopped its profile" ask_l1 profile-stop
finish
