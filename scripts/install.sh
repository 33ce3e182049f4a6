#!/usr/bin/env bash
# make install: libvpmu (shared and static, headers, pkg-config file),
# vpmu-helper with its systemd units and default policy, the docs, and the
# QEMU binary of `make qemu`, under PREFIX into DESTDIR.
#
#   scripts/install.sh PREFIX DESTDIR BUILDDIR
#
# BUILDDIR is a meson build directory of its own (make install: build-install/),
# configured with PREFIX: the tests' build/ is never reconfigured, so a
# `make install` while `make check` runs changes nothing under it.  Only
# what is installed is compiled (a few seconds).
set -euo pipefail

prefix=${1:?usage: install.sh PREFIX DESTDIR BUILDDIR}
destdir=${2-}
build=${3:?usage: install.sh PREFIX DESTDIR BUILDDIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
qemu=$root/build/qemu/qemu-system-x86_64

case $destdir in
''|/*) ;;
*) destdir=$PWD/$destdir ;;
esac
if [ ! -x "$qemu" ]; then
    echo "make install: no $qemu (run make qemu): nothing installed" >&2
    exit 1
fi
case $prefix in
/*) ;;
*) echo "make install: PREFIX must be an absolute path, not '$prefix'" >&2
   exit 1 ;;
esac

if [ ! -f "$build/meson-private/coredata.dat" ]; then
    meson setup "$build" "$root" -Dprefix="$prefix" >"$build.setup.log" 2>&1 ||
        { cat "$build.setup.log" >&2; exit 1; }
    rm -f "$build.setup.log"
fi
cur=$(meson introspect --buildoptions "$build" | python3 -c '
import json, sys
print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
[ "$cur" = "$prefix" ] || meson configure "$build" -Dprefix="$prefix"

# The targets meson would install, as ninja names them (the pkg-config
# file and the units are made when meson configures).
mapfile -t targets < <(meson introspect --targets "$build" | python3 -c '
import json, os, sys
build = os.path.realpath(sys.argv[1])
for t in json.load(sys.stdin):
    if t["installed"]:
        for f in t["filename"]:
            print(os.path.relpath(f, build))' "$build")
ninja -C "$build" "${targets[@]}" >/dev/null
meson install -C "$build" --no-rebuild --destdir "$destdir" >/dev/null
install -D -m 0755 "$qemu" "$destdir$prefix/bin/qemu-system-x86_64"
echo "make install: PREFIX=$prefix installed into ${destdir:-/}"
