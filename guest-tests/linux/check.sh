#!/usr/bin/env bash
# The Linux guest tests `make check` runs: the exact-count and sampling
# tests on the Intel and AMD models.  Prints the guests' TAP and a final
# "guest-linux: N passed, N failed" line; exit 0 only if all passed.
#
# Environment: QEMU (default build/qemu/qemu-system-x86_64), IMAGE.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

configs=(
    "intel|max,vendor=GenuineIntel,pmu=on|stat-exact,record"
    "amd|EPYC,pmu=on|record"
)
status=0
tap=$(mktemp)
trap 'rm -f "$tap"' EXIT
for c in "${configs[@]}"; do
    IFS='|' read -r name cpu tests <<<"$c"
    echo "# ==== $name: -cpu $cpu: $tests"
    if ! CPU=$cpu LOG="build/guest/check-$name.log" \
         guest-tests/linux/run-guest.sh "$tests" >"$tap" 2>&1; then
        status=1
    fi
    # Only the tests' TAP lines; the kernel log stays in the LOG file.
    grep -E '^(ok|not ok|#|TAP|1\.\.)' "$tap" || true
done
# awk, not grep -c: grep exits 1 when nothing matches (no failures).
pass=$(awk '/^ok /' build/guest/check-*.log | wc -l)
fail=$(awk '/^not ok /' build/guest/check-*.log | wc -l)
echo "guest-linux: $pass passed, $fail failed"
exit "$status"
