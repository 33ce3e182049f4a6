#!/bin/sh
# ku-check-test: the nested suite's kernel-and-user comparison (ku_check in
# guest-tests/nested/l1-checks.sh) on hand-made L2 output, as TAP.
#
# The reference ran three sys_100k runs; its kernel part is each count less
# the exact user count (4N+4 = 400,004 instructions, 2N+1 = 200,001
# branches), averaged:
#   instructions 36,800,000 + 36,900,000 + 37,000,000 -> 36,900,000
#   branches     10,900,000 + 11,000,000 + 11,100,000 -> 11,000,000
# at ticks 30, 31, 35 -> 32.0.  5% of it: 1,845,000 and 550,000.
# Usage: ku-check-test.sh L1-CHECKS.SH
# shellcheck shell=sh
set -u
lib=${1:?usage: ku-check-test.sh L1-CHECKS.SH}
# shellcheck source=../../guest-tests/nested/l1-checks.sh
. "$lib"

p=kut$$
trap 'rm -f /tmp/$p-*.out' EXIT
# What init-l1 gives l1-checks.sh; every configuration ran stat-exact.
ok() { echo "ok $*" >>"/tmp/$p-res.out"; }
notok() { echo "notok $*" >>"/tmp/$p-res.out"; }
ran() { [ "$2" = stat-exact ]; }

# l2 CFG "I B T" ...: CFG's output, one ku run line per argument.
l2() {
    c=$1 r=0
    shift
    : >"/tmp/$p-$c.out"
    for run in "$@"; do
        r=$((r + 1))
        # shellcheck disable=SC2086 # "I B T", split on purpose
        set -- $run
        echo "# ku run $r: instructions=$1 branches=$2 ticks=$3 (sys_100k)" >>"/tmp/$p-$c.out"
    done
}

T=0 FAILS=0
# expect NAME EVENT RESULT: ku_check of NAME against ref on EVENT gives
# exactly RESULT ("ok ..." or "notok ...").
expect() {
    T=$((T + 1))
    : >"/tmp/$p-res.out"
    ku_check "$p-$1" "$p-ref" "$2"
    got=$(sed "s/$p-//g" "/tmp/$p-res.out")
    if [ "$got" = "$3" ]; then
        echo "ok $T - $1 $2"
    else
        FAILS=$((FAILS + 1))
        echo "not ok $T - $1 $2"
        echo "#   expected: $3"
        echo "#   got:      $got"
    fi
}
D="(kernel and user), kernel part of sys_100k within 5%"

l2 ref "37200004 11100001 30" "37300004 11200001 31" "37400004 11300001 35"
# The same kernel work at three times the ticks, 66 more of ~3,300
# instructions each: +217,804 (+0.6%).
l2 slow "37517808 11400002 96"
expect slow instructions "ok slow ~ ref: instructions $D (ref 36900000 at 32.0 ticks; slow 37117804 at 96.0, +0.6%)"
expect slow branches "ok slow ~ ref: branches $D (ref 11000000 at 32.0 ticks; slow 11200001 at 96.0, +1.8%)"
# Exactly 5% over: 36,900,000 + 1,845,000 = 38,745,000 (+ 400,004), and
# 11,000,000 + 550,000 = 11,550,000 (+ 200,001).
l2 edge "39145004 11750001 32"
expect edge instructions "ok edge ~ ref: instructions $D (ref 36900000 at 32.0 ticks; edge 38745000 at 32.0, +5.0%)"
expect edge branches "ok edge ~ ref: branches $D (ref 11000000 at 32.0 ticks; edge 11550000 at 32.0, +5.0%)"
# One more: 5% and one instruction (or branch) over.
l2 over "39145005 11750002 32"
expect over instructions "notok over ~ ref: instructions $D (ref 36900000 at 32.0 ticks; over 38745001 at 32.0, +5.0%)"
expect over branches "notok over ~ ref: branches $D (ref 11000000 at 32.0 ticks; over 11550001 at 32.0, +5.0%)"
# The kernel counted twice; not at all (only the user counts).
l2 twice "74200004 22200001 32"
expect twice instructions "notok twice ~ ref: instructions $D (ref 36900000 at 32.0 ticks; twice 73800000 at 32.0, +100.0%)"
l2 none "400004 200001 32" "400004 200001 33"
expect none branches "notok none ~ ref: branches $D (ref 11000000 at 32.0 ticks; none 0 at 32.5, -100.0%)"
# Without the tracepoint (ticks=none) the counts still compare.
l2 noticks "37300004 11200001 none" "37300004 11200001 none"
expect noticks instructions "ok noticks ~ ref: instructions $D (ref 36900000 at 32.0 ticks; noticks 36900000 at none, +0.0%)"
# No ku run lines, or malformed ones (a count perf did not print): no runs.
l2 empty
expect empty instructions "notok empty ~ ref: instructions $D (no runs: ref 36900000 32.0, empty none)"
printf '# ku run 1: instructions=<not counted> branches=11200001 ticks=30 (sys_100k)\n' \
    >"/tmp/$p-bad.out"
expect bad instructions "notok bad ~ ref: instructions $D (no runs: ref 36900000 32.0, bad none)"
expect bad branches "ok bad ~ ref: branches $D (ref 11000000 at 32.0 ticks; bad 11000000 at 30.0, +0.0%)"
# A reference that did not run stat-exact: no check at all.
ran() { false; }
expect twice instructions ""

echo "1..$T"
[ "$FAILS" = 0 ]
