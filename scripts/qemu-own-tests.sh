#!/usr/bin/env bash
# QEMU's own tests that cover what the patch series touches (issue 12 item
# 4: x86 CPU models, migration, the accelerators, QAPI), run in the build
# directory of `make qemu` (scripts/build-qemu.sh), so on the series as it
# is applied there.  Not part of make check: it builds ~15 test programs
# (a few minutes) and migration-test alone runs for ~15 minutes.
#
#   scripts/qemu-own-tests.sh [TEST...]   default: the list below
#
# Prints meson's summary and each test's result line; the full log is in
# the QEMU build directory's meson-logs/testlog.txt.  docs/qemu.md keeps
# the results of the last run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
CACHE=${VPMU_CACHE:-$HOME/.cache/vpmu}
STATE=$(ls -d "$CACHE"/qemu/*/applied-series 2>/dev/null | head -n1 || true)
if [ -z "$STATE" ]; then
    echo "qemu-own-tests: no QEMU build in $CACHE/qemu: run make qemu first" >&2
    exit 2
fi
QDIR=$(dirname "$STATE")
BUILD=$QDIR/build
MESON=$BUILD/pyvenv/bin/meson
[ -x "$MESON" ] || MESON=meson

# The programs (ninja targets) and the meson tests that run them.
TARGETS=(tests/qtest/{qom-test,device-introspect-test,test-hmp,qmp-cmd-test}
         tests/qtest/{numa-test,test-x86-cpuid-compat,rtc-test,cpu-plug-test}
         tests/qtest/{machine-none-test,qmp-test,migration-test}
         tests/unit/{test-qapi-util,test-qmp-cmds})
TESTS=(qtest-x86_64/{qom-test,device-introspect-test,test-hmp,qmp-cmd-test}
       qtest-x86_64/{numa-test,test-x86-cpuid-compat,rtc-test,cpu-plug-test}
       qtest-x86_64/{machine-none-test,qmp-test,migration-test}
       test-qapi-util test-qmp-cmds "QAPI schema regression tests"
       "QAPI firmware.json regression test" "QAPI vhost-user.json regression test")
[ $# -eq 0 ] || TESTS=("$@")

echo "qemu-own-tests: $(sed -n 's/^head //p' "$STATE") in $BUILD"
# Run from its build directory, QEMU looks for firmware under qemu-bundle/
# plus each --firmwarepath directory (build-qemu.sh: Debian's seabios,
# ipxe-qemu and qemu-system-data), where nothing is: link them there.
fwpath=$(sed -n 's/.*--firmwarepath=\([^ ]*\).*/\1/p' "$BUILD/.vpmu-configure-flags")
IFS=: read -r -a fwdirs <<<"$fwpath"
for d in "${fwdirs[@]}"; do
    [ -e "$BUILD/qemu-bundle$d" ] || {
        mkdir -p "$(dirname "$BUILD/qemu-bundle$d")"
        ln -s "$d" "$BUILD/qemu-bundle$d"
    }
done
ninja -C "$BUILD" "${TARGETS[@]}" | tail -n 1
# -t 3: migration-test's paths take 50-90 s each on 2 cores, beyond
# meson's default timeouts for it.
cd "$BUILD"
rc=0
"$MESON" test --no-rebuild -t 3 "${TESTS[@]}" >"$BUILD/qemu-own-tests.out" 2>&1 || rc=$?
grep -E '^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout|Expected Fail|Unexpected Pass):' \
    "$BUILD/qemu-own-tests.out" || cat "$BUILD/qemu-own-tests.out"
exit $rc
