#!/usr/bin/env bash
# What the guest suites boot, built in BUILDDIR: meson's guest-build test
# (guest-tests/meson.build), which runs before every guest suite.  One TAP
# line per piece; a failure shows the end of its log.
#
#   guest-tests/prereqs.sh BUILDDIR
#
#   QEMU      scripts/build-qemu.sh (make qemu): libvpmu into the cache's
#             prefix, QEMU relinked or rebuilt in ~/.cache/vpmu, the binary
#             in the source tree's build/qemu/
#   image     guest-tests/linux/build-image.sh BUILDDIR/guest
#   payloads  make -C guest-tests/baremetal O=BUILDDIR/baremetal
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=tap.sh
. "$here/tap.sh"
[ $# -eq 1 ] || { echo "usage: $0 BUILDDIR" >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 2

# step DESC LOG CMD...: run CMD, its output into LOG, one TAP line.
step() {
    local desc=$1 log=$2
    shift 2
    "$@" >"$log" 2>&1
    tap $? "$desc (log: $log)" "$(tail -n 30 "$log")"
}

tap_begin
# The packages are there: make check installs them first.
step "make qemu" "$build/build-qemu.log" \
    env VPMU_NO_DEPS=1 "$here/../scripts/build-qemu.sh"
step "the Linux guest image" "$build/build-image.log" \
    "$here/linux/build-image.sh" "$build/guest"
step "the bare-metal payloads" "$build/build-baremetal.log" \
    make -s -C "$here/baremetal" O="$build/baremetal"
tap_end
