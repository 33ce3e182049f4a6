#!/usr/bin/env bash
# Is this tree's MSR path slower than REV's?  Builds bench-msr (and
# bench-kvm, where /dev/kvm lets its payload run) at REV in a scratch
# worktree (build/bench-base/), then runs REV's and this tree's
# alternately ROUNDS times, so both see the same machine noise, and
# prints, per operation, each side's median ns/op and their ratio.
#
# Usage: bench/msr-compare.sh REV [ROUNDS]     (ROUNDS default 5)
# Informational, like every benchmark: always exits 0 once both ran.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
rev=${1:?usage: bench/msr-compare.sh REV [ROUNDS]}
rounds=${2:-5}
base=$ROOT/build/bench-base
out=$(mktemp -d)
trap 'rm -rf "$out"; git -C "$ROOT" worktree remove --force "$base/src" 2>/dev/null || true' EXIT

benches=(bench-msr)
if [ -x build/bench/bench-kvm ] && [ -w /dev/kvm ]; then
    benches+=(bench-kvm)
fi
meson compile -C build "${benches[@]/#/bench/}" >/dev/null
rm -rf "$base"
mkdir -p "$base"
git worktree add --detach "$base/src" "$rev" >/dev/null 2>&1
meson setup "$base/build" "$base/src" >/dev/null
meson compile -C "$base/build" "${benches[@]/#/bench/}" >/dev/null

for ((i = 0; i < rounds; i++)); do
    for b in "${benches[@]}"; do
        "$base/build/bench/$b" >>"$out/base.$i" 2>/dev/null
        "build/bench/$b" >>"$out/new.$i" 2>/dev/null
    done
done

# Rows are "operation  ns/op ...": the operation is everything before the
# first number column (bench-kvm's ratio lines end in "x": not rows).
python3 - "$out" "$rounds" "$rev" <<'EOF'
import re, statistics, sys

d, rounds, rev = sys.argv[1], int(sys.argv[2]), sys.argv[3]
row = re.compile(r'^(\S.*?)\s{2,}([0-9.]+)(?:\s|$)')

def table(side):
    ns = {}
    for i in range(rounds):
        for line in open(f'{d}/{side}.{i}'):
            m = row.match(line)
            if m:
                ns.setdefault(m.group(1), []).append(float(m.group(2)))
    return ns

old, new = table('base'), table('new')
print(f'median of {rounds} alternating runs each: {rev} vs this tree')
print(f'{"operation":36} {"base ns":>8} {"new ns":>8} {"new/base":>9}')
for op in old:
    if op in new:
        a, b = statistics.median(old[op]), statistics.median(new[op])
        print(f'{op:36} {a:8.1f} {b:8.1f} {b / a:9.2f}')
EOF
