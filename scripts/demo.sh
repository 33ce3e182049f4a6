#!/usr/bin/env bash
# make demo: a Debian Linux guest under QEMU TCG runs the stock Debian perf
# with vpmu as its PMU, and we print what the guest printed.  Builds what is
# missing first (QEMU with qemu-patches/, the guest image).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() {
    printf '\n==> %s\n' "$*"
}

step "QEMU 10.2 + qemu-patches/, linked with libvpmu (make qemu)"
if [ ! -x build/qemu/qemu-system-x86_64 ]; then
    echo "    first build: about 17 minutes on 2 cores; later runs take seconds"
fi
scripts/build-qemu.sh 2>&1 | sed 's/^/    /'

step "guest image: Debian kernel, busybox and linux-perf (build/guest)"
if [ ! -f build/guest/initramfs.cpio.gz ]; then
    echo "    first build: downloads about 60 MB of Debian packages"
fi
guest-tests/linux/build-image.sh build/guest 2>&1 | tail -n 3 | sed 's/^/    /'

cpu=${CPU:-max,vendor=GenuineIntel,pmu=on}
step "booting the guest under TCG with -cpu $cpu"
echo "    (the guest prints below; about half a minute)"
echo
CPU=$cpu guest-tests/linux/run-guest.sh demo
