#!/bin/sh
# migrate-kvm: guest-side half of the nested suite's live migration
# (guest-tests/nested/init-l1, migrate_l2).  This guest is L2.  It runs
# perf stat -e instructions:u,branches:u of "until" (workloads/until.S),
# which prints "VPMU-L1 migrate" once its counters are on and then loops in
# chunks of N iterations (about 1 s each under L1's KVM) until
# /tmp/until.answered exists.  L1 migrates the guest live to a second QEMU
# and answers "migrated" on the destination's console; a reader started
# before the run writes the answer to that file.  So the migration falls
# inside the counted run however long it takes.  No count may be lost or
# invented: with k chunks (until's exit status), instructions:u =
# k(2N+8)+9 and branches:u = k(N+2)+2 exactly.  (L1 checks that the
# migration completed, the destination's vPMU state equals the source's, and
# counter 0 was counting there.)
#
# Needs L1 (vpmu.nested=1); otherwise every check is skipped.
# shellcheck source=SCRIPTDIR/../tap-lib.sh
. /vpmu/tap-lib.sh
plan 3

N=200000000
w=until
if [ "${VPMU_NESTED:-0}" != 1 ] || [ ! -x "$BIN/$w" ]; then
    r="needs L1 to migrate this guest (guest-tests/nested, vpmu.nested=1) and $BIN/$w"
    skip "L1 migrated this guest during $w" "$r"
    skip "$w across the migration: instructions:u = k(2N+8)+9" "$r"
    skip "$w across the migration: branches:u = k(N+2)+2" "$r"
    finish
fi

# The answer may come at any time after "VPMU-L1 migrate"; until polls for
# the file, which appears whole (mv) with L1's answer in it.
rm -f /tmp/until.answered /tmp/until.tmp
# shellcheck disable=SC3045  # busybox ash has read -t
{ read -t 300 -r a </dev/console; echo "${a:-nothing}" >/tmp/until.tmp
  mv /tmp/until.tmp /tmp/until.answered; } &
reader=$!
pstat m.csv instructions:u,branches:u "$BIN/$w"
k=$?
wait "$reader"
ans=$(cat /tmp/until.answered 2>/dev/null)
i=$(count m.csv instructions:u)
b=$(count m.csv branches:u)
diag "L1 answered: ${ans:-nothing}; $w ran k=$k chunks of N=$N"
diag "migrate $w instructions:u=$i (k(2N+8)+9=$((k * (2 * N + 8) + 9))) branches:u=$b (k(N+2)+2=$((k * (N + 2) + 2)))"
check "L1 migrated this guest during $w" [ "$ans" = migrated ]
check "$w across the migration: instructions:u = k(2N+8)+9" eq "$i" $((k * (2 * N + 8) + 9))
check "$w across the migration: branches:u = k(N+2)+2" eq "$b" $((k * (N + 2) + 2))

finish
