#!/usr/bin/env bash
# Install the Debian packages vpmu's build and tests need, if any is missing.
# Cheap when everything is there: one dpkg query per package, no apt call.
#
# Usage: scripts/install-deps.sh          what make build/check/demo need
#        scripts/install-deps.sh qemu     also what make qemu needs
#                                         (scripts/build-qemu.sh)
set -euo pipefail

PACKAGES=(meson ninja-build pkg-config gcc check libsubunit-dev libglib2.0-dev zlib1g-dev
          valgrind)

# QEMU 10.2's build deps (the x86_64-softmmu configuration in build-qemu.sh;
# meson >= 1.5 comes from bookworm-backports, privately, in build-qemu.sh),
# dpkg-dev for apt-get source, git for the source tree, and the firmware
# the self-built binary loads from Debian's paths (--firmwarepath).
QEMU_PACKAGES=(git dpkg-dev libglib2.0-dev libpixman-1-dev ninja-build meson
               flex bison libfdt-dev zlib1g-dev python3-venv pkg-config
               # compiles once for make qemu and make deb's QEMU package
               ccache
               qemu-system-x86 qemu-system-data seabios ipxe-qemu
               # the guest tests: initramfs packing, QMP client, qemu-img
               # (the migration suite's savevm/loadvm needs a qcow2 disk)
               cpio gzip python3 qemu-utils
               # the libvirt suite: the daemon without libvirt-daemon-system
               # (which pulls in systemd); the suite makes its user itself
               libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients
               # the operator suite: promtool and a Prometheus server the
               # test starts itself (the package's own is kept from
               # starting, below)
               prometheus
               # the profile suite: the consumers of vpmu's profiles,
               # go tool pprof (its SVG through graphviz) and perf script
               golang-1.19-go graphviz linux-perf)

case "${1:-}" in
    "") ;;
    qemu)
        for p in "${QEMU_PACKAGES[@]}"; do
            case " ${PACKAGES[*]} " in
                *" $p "*) ;;
                *) PACKAGES+=("$p") ;;
            esac
        done
        ;;
    *)
        echo "usage: $0 [qemu]" >&2
        exit 2
        ;;
esac

if ! command -v dpkg >/dev/null 2>&1; then
    echo "deps: no dpkg here (not Debian?); install these yourself:" \
         "${PACKAGES[*]}" >&2
    exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
    # dpkg -s also succeeds for removed packages that left config files.
    # (Not dpkg -s | grep -q: with pipefail, grep's early exit can kill
    # dpkg with SIGPIPE on a long description, and a package installed
    # counted as missing.)
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
        missing+=("$p")
    fi
done
if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "deps: missing ${missing[*]}; run as root or install sudo" >&2
        exit 1
    fi
    sudo=(sudo)
fi

echo "deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update
# Packages with a daemon (prometheus, libvirt-daemon) start it from their
# postinst where no policy-rc.d says no; without systemd as PID 1 that
# would leave a system Prometheus on :9090.  The tests start what they
# need themselves, so keep every service from starting during this
# install, and put back what was there.
policy=/usr/sbin/policy-rc.d
own_policy=
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# scripts/install-deps.sh: no service starts\nexit 101\n' |
        "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod 755 "$policy"
    own_policy=1
fi
# No recommends: libvirt-daemon's would bring libvirt-daemon-system and
# systemd; everything the project needs is listed above.
rc=0
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y \
    --no-install-recommends "${missing[@]}" || rc=$?
if [ -n "$own_policy" ]; then
    "${sudo[@]}" rm -f "$policy"
fi
exit "$rc"
