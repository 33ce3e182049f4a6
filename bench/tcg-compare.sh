#!/usr/bin/env bash
# Is this tree's libvpmu slower in a TCG guest than REV's?  Links `make
# qemu`'s QEMU a second time, with libvpmu built at REV (QEMU's own code,
# the patches and the headers it was compiled with stay this tree's: only
# the archive differs), then runs bench/guest-overhead.sh with each binary
# in turn, ROUNDS times one round each, the order swapped every time, and
# prints per configuration each side's median and minimum host CPU time of
# QEMU over the workload, and new/old three ways (median, minimum, paired:
# the median of the per-round ratios).
#
# Usage: bench/tcg-compare.sh REV [ROUNDS]     (ROUNDS default 4)
# Environment: CONFIGS (default "a b c"), REPS (default 3), OUT (default a
# new /tmp/vpmu-tcg-compare.XXXXXX, kept).  REV must keep the TCG entry
# points this tree's QEMU calls (the link fails otherwise).
# Informational, like every benchmark: exits 0 once every boot ran.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
rev=${1:?usage: bench/tcg-compare.sh REV [ROUNDS]}
rounds=${2:-4}
configs=${CONFIGS:-a b c}
reps=${REPS:-3}
out=${OUT:-$(mktemp -d /tmp/vpmu-tcg-compare.XXXXXX)}
CACHE=${VPMU_CACHE:-$HOME/.cache/vpmu}
lib=$CACHE/libvpmu-prefix/lib/libvpmu.a
base=$out/base

make -s qemu >/dev/null
# build/qemu/README names the QEMU build directory (scripts/build-qemu.sh).
qbuild=$(sed -n 's|^ *\(/.*/build\)$|\1|p' build/qemu/README | head -n 1)
[ -x "$qbuild/qemu-system-x86_64" ] || { echo "tcg-compare: no QEMU build in '$qbuild'" >&2; exit 1; }
mkdir -p "$out"
cp build/qemu/qemu-system-x86_64 "$out/qemu-new"

git worktree add --detach "$base/src" "$rev" >/dev/null 2>&1
meson setup "$base/build" "$base/src" -Ddefault_library=static \
    -Db_staticpic=true >/dev/null
meson compile -C "$base/build" vpmu:static_library >/dev/null

# Relink with REV's archive in the prefix, then put this tree's back and
# relink again; the prefix is build-qemu.sh's, so hold its lock.
exec 8>"$CACHE/.build-qemu.lock"
flock 8
cp -p "$lib" "$out/libvpmu.a.new"
restore() {
    cp -p "$out/libvpmu.a.new" "$lib" && touch "$lib" &&
        ninja -C "$qbuild" qemu-system-x86_64 >/dev/null
    git -C "$ROOT" worktree remove --force "$base/src" 2>/dev/null || true
}
trap restore EXIT
cp "$base/build/libvpmu.a" "$lib"
touch "$lib"
ninja -C "$qbuild" qemu-system-x86_64 >/dev/null
cp "$qbuild/qemu-system-x86_64" "$out/qemu-old"
restore
trap - EXIT
flock -u 8
cmp -s "$qbuild/qemu-system-x86_64" "$out/qemu-new" ||
    echo "tcg-compare: note: the relinked build differs from build/qemu's copy" >&2

for ((i = 1; i <= rounds; i++)); do
    order="old new"
    ((i % 2)) || order="new old"
    for side in $order; do
        echo "tcg-compare: round $i $side" >&2
        OUT=$out/$side.$i QEMU=$out/qemu-$side CONFIGS=$configs ROUNDS=1 \
            REPS=$reps bench/guest-overhead.sh >"$out/$side.$i.log" 2>&1
    done
done

python3 - "$out" "$rounds" "$rev" "$configs" <<'EOF'
import re, statistics as st, sys
out, rounds, rev, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split()
# guest-overhead's per-boot line: "round R C (...): g/h g/h ... s guest/host"
pat = re.compile(r"guest-overhead: round \d+ (\w) \(.*\): (.*) s guest/host")
t = {}
for side in ("old", "new"):
    for i in range(1, rounds + 1):
        for line in open(f"{out}/{side}.{i}.log"):
            m = pat.match(line)
            if m:
                t.setdefault((side, m.group(1), i), []).extend(
                    float(x.split("/")[1]) for x in m.group(2).split())
print(f"tcg-compare: libvpmu {rev} (old) vs this tree (new), {rounds} rounds;"
      " host CPU time of QEMU over the workload, s")
print(f"{'cfg':4} {'old med':>8} {'old min':>8} {'new med':>8} {'new min':>8}"
      f" {'new/old med':>11} {'min':>6} {'paired':>7}")
for c in configs:
    o = [x for i in range(1, rounds + 1) for x in t.get(("old", c, i), [])]
    n = [x for i in range(1, rounds + 1) for x in t.get(("new", c, i), [])]
    if not o or not n:
        print(f"{c:4} (missing runs)")
        continue
    pr = [st.median(t[("new", c, i)]) / st.median(t[("old", c, i)])
          for i in range(1, rounds + 1)
          if ("new", c, i) in t and ("old", c, i) in t]
    print(f"{c:4} {st.median(o):8.3f} {min(o):8.3f} {st.median(n):8.3f} {min(n):8.3f}"
          f" {st.median(n) / st.median(o):11.3f} {min(n) / min(o):6.3f}"
          f" {st.median(pr):7.3f}")
print(f"logs: {out}")
EOF
