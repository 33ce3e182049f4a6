#!/bin/bash
# tb-charge: what each form of the vPMU's TB-entry charge costs a chain of
# synthetic translation blocks on this host (docs/performance.md).
#
#   bench/tb-charge/run.sh [ITERATIONS [REPS]]   (default 3000000 7)
#
# gen-tbs.py writes a ring of 16 TBs shaped like TCG's x86 output (the
# exit-request check, 16 env-memory instructions, a jump to the next) once
# per charge form: none; V0 (qemu-patches up to 0020: movabs of the 41-bit
# addend, a taken branch over the budget call); V2 (0021/0022: a 32-bit
# addend, the call out of line); mem (add to memory and jns); add1 (the
# add to memory alone, no budget test); add2 (two adds to memory, no
# test); reg (the count in a host register); spread (V2's charge to
# another word in each TB).  Prints ns per TB, best of REPS, and the ratio to none.  Informative
# only: exits 0.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && python3 "$here/gen-tbs.py")
gcc -O2 -Wa,--noexecstack "$here/tb-charge.c" "$tmp/tb.S" -o "$tmp/tb-charge"
"$tmp/tb-charge" "${1:-3000000}" "${2:-7}"
