#!/bin/sh
# migrate-kvm: guest-side half of the nested suite's live migration
# (guest-tests/nested/init-l1, migrate_l2).  This guest is L2: it prints
# "VPMU-L1 migrate" and at once runs perf stat -e instructions:u,branches:u
# of loop_4G (N = 4e9, about 25 s under L1's KVM); L1 migrates it live to a
# second QEMU meanwhile and answers "migrated" on the destination's console.
# No count may be lost or invented: instructions:u = 2N+4 and
# branches:u = N+1 exactly, as stat-exact's loops.  (L1 checks that the
# migration completed, the destination's vPMU state equals the source's,
# and counter 0 was counting there, i.e. the migration fell inside the loop.)
#
# Needs L1 (vpmu.nested=1); otherwise every check is skipped.
# shellcheck source=SCRIPTDIR/../tap-lib.sh
. /vpmu/tap-lib.sh
plan 3

N=4000000000
w=loop_4G
if [ "${VPMU_NESTED:-0}" != 1 ] || [ ! -x "$BIN/$w" ]; then
    r="needs L1 to migrate this guest (guest-tests/nested, vpmu.nested=1) and $BIN/$w"
    skip "L1 migrated this guest during $w" "$r"
    skip "$w across the migration: instructions:u = 2N+4" "$r"
    skip "$w across the migration: branches:u = N+1" "$r"
    finish
fi

echo "VPMU-L1 migrate"
pstat m.csv instructions:u,branches:u "$BIN/$w"
i=$(count m.csv instructions:u)
b=$(count m.csv branches:u)
# L1 answers once the migration is over (it may have answered already).
# shellcheck disable=SC3045  # busybox ash has read -t
read -t 300 -r ans </dev/console
diag "L1 answered: ${ans:-nothing}"
diag "migrate $w instructions:u=$i (2N+4=$((2 * N + 4))) branches:u=$b (N+1=$((N + 1)))"
check "L1 migrated this guest during $w" [ "$ans" = migrated ]
check "$w across the migration: instructions:u = 2N+4" eq "$i" $((2 * N + 4))
check "$w across the migration: branches:u = N+1" eq "$b" $((N + 1))

finish
