#!/usr/bin/env bash
# make check: `meson test` over the build setups, then one summary line.
#
# Usage: scripts/check.sh [plain] [asan] [valgrind] [guest]  (default: all)
#
#   plain     build/       every test but the guest suites
#   guest     build/       the guest suites (guest-tests/meson.build);
#                          with plain, one `meson test` of everything
#   valgrind  build/       tests/ (Check suites, kvm-harness) under
#                          valgrind: meson test --setup valgrind
#   asan      build-asan/  -Db_sanitize=address,undefined, every test but
#                          the guest suites: meson test --setup asan
#
# A build directory is configured once, never again here (meson
# reconfigures by itself when a meson.build changes); `meson test` builds
# what its tests need.  The last line, "N passed, N failed, N skipped", is
# scripts/test-summary.py's count over all runs; exit status 1 if anything
# failed.  V=1: every test's output (meson test --verbose).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(plain asan valgrind guest)
has() { [[ " ${runs[*]} " == *" $1 "* ]]; }

for r in "${runs[@]}"; do
    case $r in
    plain | asan | valgrind | guest) ;;
    *) echo "check: unknown run '$r' (plain, asan, valgrind, guest)" >&2; exit 2 ;;
    esac
done
for tool in meson ninja python3 $(has valgrind && echo valgrind); do
    command -v "$tool" >/dev/null ||
        { echo "check: $tool not found; run 'make deps'" >&2; exit 2; }
done

summary=()
verbose=()
[ "${V:-0}" != 1 ] || verbose=(--verbose)

# setup DIR [OPTION...]: configure DIR unless it already is.  A failure
# counts (its meson test fails too: the summary line still comes).
setup() {
    local dir=$1
    shift
    [ -f "$dir/meson-private/coredata.dat" ] || meson setup "$dir" "$@" ||
        summary+=("meson-setup-$dir=")
}

# mtest RUN DIR [MESON TEST ARGS...]: one `meson test`; its logs are
# DIR/meson-logs/check-RUN*, removed first so a run that did not get to
# write them (a failed build) counts as failed, not as its last results.
mtest() {
    local run=$1 dir=$2 setup=""
    shift 2
    [[ " $* " == *" --setup "* ]] && setup=-$run
    rm -f "$dir/meson-logs/check-$run"*
    echo "==> [$run] meson test -C $dir $*"
    meson test -C "$dir" --print-errorlogs "${verbose[@]}" \
        --logbase "check-$run" "$@" || true
    summary+=("$run=$dir/meson-logs/check-$run$setup")
}

if has plain || has guest || has valgrind; then
    setup build
fi
if has guest; then
    # QEMU's first build takes ~17 minutes: here its progress shows.  The
    # guest-build test runs it again, then it only checks what is built.
    echo "==> make qemu"
    VPMU_NO_DEPS=1 scripts/build-qemu.sh || summary+=("make-qemu=")
fi
if has plain && has guest; then
    mtest plain build
elif has plain; then
    mtest plain build --no-suite guest
elif has guest; then
    mtest guest build --suite guest
fi
if has valgrind; then
    mtest valgrind build --setup valgrind
fi
if has asan; then
    setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
    mtest asan build-asan --setup asan
fi

echo
exec python3 scripts/test-summary.py "${summary[@]}"
