#!/usr/bin/env bash
# make install, as a Debian package would call it: PREFIX=/usr into a
# scratch DESTDIR (and its own scratch build directory, INSTALL_BUILD),
# then what was installed, used from there:
#
#   - exactly the files Debian's layout wants, no more, no fewer;
#   - the systemd units name the installed helper, policy directory and
#     docs; the socket is 0660 for group kvm;
#   - libvpmu.pc describes /usr, and examples/demo.c, compiled with
#     `pkg-config --cflags --libs libvpmu` against the installed headers
#     and library, runs on the installed libvpmu.so.0 and its exact checks
#     pass;
#   - the installed QEMU has Debian's firmware directories built in and
#     starts a pc machine without -L;
#   - the installed vpmu-helper serves with the installed default policy
#     (root only: it opens a perf event for the client).
#
# Usage: run.sh           (TAP on stdout; 1..0 # SKIP without QEMU)
# Environment: QEMU (the binary make qemu built), VPMU_BUILD (for
# tests/helper/helper-open).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=../../guest-tests/tap.sh
. "$ROOT/guest-tests/tap.sh"
BUILD=${VPMU_BUILD:-$ROOT/build}

tap_begin
[ -x "$ROOT/build/qemu/qemu-system-x86_64" ] ||
    tap_skip_all "no QEMU (make qemu): make install needs it"
for t in cc pkg-config python3; do
    command -v "$t" >/dev/null || tap_skip_all "$t not found"
done

dir=$(mktemp -d /tmp/vpmu-install-XXXXXX)
hpid=
cleanup() {
    [ -n "$hpid" ] && kill "$hpid" 2>/dev/null && wait "$hpid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
d=$dir/dest
multiarch=$(cc -print-multiarch)
lib=usr/lib/$multiarch

make -s -C "$ROOT" install PREFIX=/usr DESTDIR="$d" INSTALL_BUILD="$dir/build" \
    >"$dir/install.log" 2>&1
tap $? "make install PREFIX=/usr DESTDIR=... runs" "$(tail -20 "$dir/install.log")"

# Where Debian puts such files: binaries in /usr/bin and /usr/sbin, the
# library under the multiarch libdir, units in /usr/lib/systemd/system,
# configuration in /etc, docs in /usr/share/doc/PACKAGE.
cat >"$dir/want" <<EOF
etc/vpmu-helper/default.conf
usr/bin/qemu-system-x86_64
usr/bin/vpmu-exporter
usr/bin/vpmu-profile
usr/include/vpmu/export.h
usr/include/vpmu/filter.h
usr/include/vpmu/helper.h
usr/include/vpmu/host.h
usr/include/vpmu/kvm.h
usr/include/vpmu/operator.h
usr/include/vpmu/perf.h
usr/include/vpmu/pmu.h
usr/include/vpmu/profile.h
usr/include/vpmu/ringbuf.h
usr/include/vpmu/source.h
usr/include/vpmu/vpmu.h
usr/lib/systemd/system/vpmu-exporter.service
usr/lib/systemd/system/vpmu-helper.service
usr/lib/systemd/system/vpmu-helper.socket
$lib/libvpmu.a
$lib/libvpmu.so
$lib/libvpmu.so.0
$lib/libvpmu.so.0.1.0
$lib/pkgconfig/libvpmu.pc
usr/sbin/vpmu-helper
usr/share/doc/vpmu/README.md
usr/share/doc/vpmu/api.md
usr/share/doc/vpmu/architecture.md
usr/share/doc/vpmu/deploy.md
usr/share/doc/vpmu/helper.md
usr/share/doc/vpmu/kvm.md
usr/share/doc/vpmu/msrs.md
usr/share/doc/vpmu/operators.md
usr/share/doc/vpmu/perf-source.md
usr/share/doc/vpmu/qemu-kvm.md
usr/share/doc/vpmu/qemu.md
usr/share/doc/vpmu/tcg.md
usr/share/vpmu/prometheus/vpmu-rules.yml
usr/share/vpmu/qmpclient.py
EOF
(cd "$d" && find . ! -type d | sed 's|^\./||' | LC_ALL=C sort) >"$dir/got"
LC_ALL=C sort -o "$dir/want" "$dir/want"
diff "$dir/want" "$dir/got" >"$dir/diff"
tap $? "the installed files are Debian's layout, exactly ($(wc -l <"$dir/got") files)" "$(cat "$dir/diff")"

# vpmu-profile finds the QMP client where it is installed: a socket that
# is not there is its error 1, an import failure would be a traceback.
out=$(python3 "$d/usr/bin/vpmu-profile" --qmp "$dir/no.sock" -o "$dir/p.pb.gz" 2>&1)
[ $? = 1 ] && case $out in "vpmu-profile: $dir/no.sock: "*) true ;; *) false ;; esac
tap $? "vpmu-profile runs from /usr/bin with /usr/share/vpmu/qmpclient.py" "$out"

svc=$d/usr/lib/systemd/system/vpmu-helper.service
sock=$d/usr/lib/systemd/system/vpmu-helper.socket
grep -qx 'ExecStart=/usr/sbin/vpmu-helper --policy-dir /etc/vpmu-helper' "$svc" &&
    grep -qx 'Documentation=file:/usr/share/doc/vpmu/helper.md' "$svc"
tap $? "vpmu-helper.service runs /usr/sbin/vpmu-helper with /etc/vpmu-helper" "$(grep -E '^(ExecStart|Documentation)=' "$svc")"
[ "$(grep -E '^(ListenSequentialPacket|SocketGroup|SocketMode)=' "$sock" | tr '\n' ' ')" = \
  "ListenSequentialPacket=/run/vpmu-helper.sock SocketGroup=kvm SocketMode=0660 " ]
tap $? "vpmu-helper.socket: /run/vpmu-helper.sock, group kvm, 0660" "$(cat "$sock")"
exp=$d/usr/lib/systemd/system/vpmu-exporter.service
grep -qx 'ExecStart=/usr/bin/vpmu-exporter --connect qemu:///system --listen 127.0.0.1:9477' "$exp" &&
    grep -qx 'Documentation=file:/usr/share/doc/vpmu/operators.md' "$exp" &&
    grep -qx 'DynamicUser=yes' "$exp" && [ -x "$d/usr/bin/vpmu-exporter" ]
tap $? "vpmu-exporter.service: /usr/bin/vpmu-exporter, unprivileged, loopback" "$(grep -E '^(ExecStart|Documentation|DynamicUser)=' "$exp")"

# The library as a user builds against it: pkg-config with the DESTDIR as
# sysroot, the installed headers, the installed shared library at run time.
# libvpmu.pc requires zlib (privately: vpmu/profile gzips), whose .pc is
# the system's; its -I/usr/include is the sysroot's too, the same as
# libvpmu's.
export PKG_CONFIG_SYSROOT_DIR=$d
export PKG_CONFIG_LIBDIR=$d/$lib/pkgconfig:/usr/lib/$multiarch/pkgconfig:/usr/share/pkgconfig
flags=$(pkg-config --cflags --libs libvpmu | xargs)
grep -qx 'prefix=/usr' "$d/$lib/pkgconfig/libvpmu.pc" &&
    [ "$flags" = "-I$d/usr/include -L$d/$lib -lvpmu" ]
tap $? "libvpmu.pc: prefix /usr, the installed headers and library ($flags)"
# shellcheck disable=SC2086
cc -std=c11 -o "$dir/demo" "$ROOT/examples/demo.c" $flags >"$dir/cc.log" 2>&1
tap $? "examples/demo.c builds with pkg-config's flags" "$(cat "$dir/cc.log")"
ldd=$(LD_LIBRARY_PATH=$d/$lib ldd "$dir/demo" | awk '$1 == "libvpmu.so.0" { print $3 }')
[ "$ldd" = "$d/$lib/libvpmu.so.0" ]
tap $? "it links the installed libvpmu.so.0 ($ldd)"
LD_LIBRARY_PATH=$d/$lib "$dir/demo" >"$dir/demo.out" 2>&1
tap $? "and its exact checks pass on it" "$(tail -10 "$dir/demo.out")"

# QEMU: -L help lists the data directories it searches.
qemu=$d/usr/bin/qemu-system-x86_64
"$qemu" -L help >"$dir/L" 2>&1
for fw in /usr/share/qemu /usr/share/seabios /usr/lib/ipxe/qemu; do
    grep -qx "$fw" "$dir/L" || { echo "# missing: $fw"; false; } || break
done
tap $? "the installed QEMU searches Debian's firmware directories" "$(cat "$dir/L")"
echo quit | timeout 30 "$qemu" -machine pc -accel tcg -nodefaults \
    -display none -monitor stdio -S >"$dir/qemu.out" 2>&1
tap $? "it starts a pc machine without -L (the BIOS is found)" "$(cat "$dir/qemu.out")"

# The helper with the installed default policy: the client gets the perf
# source's task-clock event and counts its 50 ms.
if [ "$(id -u)" != 0 ]; then
    tap_skip "the installed vpmu-helper serves the default policy" "needs root (the helper opens a perf event for its client)"
    tap_end
fi
"$d/usr/sbin/vpmu-helper" --socket "$dir/helper.sock" \
    --policy-dir "$d/etc/vpmu-helper" 2>"$dir/helper.log" &
hpid=$!
for _ in $(seq 50); do
    [ -S "$dir/helper.sock" ] && break
    sleep 0.1
done
out=$("$BUILD/tests/helper/helper-open" "$dir/helper.sock" 2>&1)
[[ $out =~ ^ok\ ([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -ge 50000000 ]
tap $? "the installed vpmu-helper serves with the installed default.conf ($out)" "$(cat "$dir/helper.log")"
kill "$hpid" && wait "$hpid"
tap $? "the helper stopped by pid"
hpid=
tap_end
