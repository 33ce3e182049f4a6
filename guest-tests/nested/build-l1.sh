#!/bin/bash
# Build the L1 image of the nested suite (run.sh): a TCG guest with SVM that
# loads kvm-amd and runs the L2 guest image under its KVM with the project's
# QEMU.  From Debian packages only, plus the project's QEMU binary:
#
#   OUT/vmlinux                 the L1 kernel: the guest image's own kernel
#                               (linux-image-6.1.0-N-amd64; vmlinuz if no vmlinux)
#   OUT/initramfs.cpio.gz       the L1 initramfs:
#     - everything of the guest image's initramfs (busybox-static, perf and its
#       libraries, the workloads, /vpmu/tests, /vpmu/tap-lib.sh), unpacked from
#       L2IMAGE/initramfs.cpio.gz;
#     - /lib/modules/<ver>/kernel/...: irqbypass, kvm, ccp, kvm-amd, from the
#       same linux-image package as the kernel (their "depends=" are checked);
#     - /usr/bin/qemu-system-x86_64 (QEMU, default build/qemu/..., without
#       its debug info) and every
#       shared library it needs, resolved with the staged dynamic loader
#       against .debs (the host's dpkg database only says which package
#       ships a soname, as in build-image.sh; no file comes from the host's
#       /lib);
#     - /usr/share/qemu: bios-256k.bin (seabios), linuxboot_dma.bin,
#       linuxboot.bin, pvh.bin, kvmvapic.bin (qemu-system-data); L2 runs
#       with -vga none -net none, so no VGA BIOS or NIC ROM;
#     - libvirtd, virtlogd, virsh, libvirt's QEMU driver and x86 CPU map
#       (bookworm's libvirt 9.0) and vpmu-helper (VPMU_HELPER, default
#       build/vpmu-helper), with their libraries, for the libvirt
#       configuration of init-l1;
#     - /l2/{vmlinux,initramfs.cpio.gz}: the L2 guest image (vmlinuz if it
#       has no vmlinux);
#     - python3 (bookworm's 3.11, with the part of its standard library the
#       programs below import) and /l1serve.py, /l1checks.py, which init-l1
#       runs, with guest-tests/qmpclient.py and pytap.py;
#     - /init: init-l1.
#
# Usage: build-l1.sh [OUT]        (OUT defaults to build/nested)
#
# Environment: QEMU (the binary to put in L1), L2IMAGE (default build/guest,
# built by guest-tests/linux/build-image.sh if it is missing), VPMU_CACHE
# (the .deb cache is ${VPMU_CACHE:-$HOME/.cache/vpmu}/debs, shared with
# build-image.sh), VPMU_REFRESH=1 (ask apt for newer candidates),
# L1_KERNEL_DEBS (space-separated .deb files with another L1 kernel and its
# modules, e.g. Debian sid's linux-binary-7.* and linux-modules-7.*, which
# bench/nested-kvm.sh fetches; OUT gets its vmlinuz only, and L2 keeps the
# guest image's kernel; default: the guest image's own kernel package).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${1:-$top/build/nested}
l2=${L2IMAGE:-$top/build/guest}
qemu=${QEMU:-$top/build/qemu/qemu-system-x86_64}
cache=${VPMU_CACHE:-$HOME/.cache/vpmu}/debs
arch=x86_64-linux-gnu

log() { printf 'build-l1: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

for tool in apt-get apt-cache dpkg-deb dpkg cpio gzip objcopy; do
    command -v "$tool" >/dev/null || die "$tool is missing (apt-get install $tool)"
done
[[ -x $qemu ]] || die "no QEMU at $qemu (make qemu)"

if [[ ! -f $l2/initramfs.cpio.gz || ! -f $l2/packages.txt ]]; then
    log "no guest image in $l2: running guest-tests/linux/build-image.sh"
    "$top/guest-tests/linux/build-image.sh" "$l2"
fi
l2_kernel=$l2/vmlinux
[[ -f $l2_kernel ]] || l2_kernel=$l2/vmlinuz
[[ -f $l2_kernel ]] || die "no vmlinux or vmlinuz in $l2"

mkdir -p "$out" "$cache"
out=$(cd "$out" && pwd)
work=$out/work
rm -rf "$work"
mkdir -p "$work/stage" "$work/root" "$work/kernel"
stage=$work/stage
root=$work/root

# --- .deb cache: the same conventions as build-image.sh --------------------
# shellcheck source=../linux/debs.sh
. "$here/../linux/debs.sh"

# --- the guest image's tree ---------------------------------------------------
log "unpacking $l2/initramfs.cpio.gz"
(cd "$root" && gzip -dc "$l2/initramfs.cpio.gz" | cpio -id --quiet --no-absolute-filenames)
[[ -x $root/bin/busybox && -x $root/usr/bin/perf ]] ||
    die "$l2/initramfs.cpio.gz has no busybox or perf"
rm -f "$root/init"

# --- kernel modules, from the guest kernel's own package ---------------------
# packages.txt's last line: "linux-image-6.1.0-N-amd64 VERSION (vmlinuz only)".
mods=(virt/lib/irqbypass arch/x86/kvm/kvm drivers/crypto/ccp/ccp arch/x86/kvm/kvm-amd)
pat=()
for m in "${mods[@]}"; do pat+=("./lib/modules/*/kernel/$m.ko" "./lib/modules/*/kernel/$m.ko.xz"); done
if [[ -n ${L1_KERNEL_DEBS:-} ]]; then
    # Another L1 kernel: its image and modules from the given .debs (newer
    # Debian kernels keep both under usr/lib/modules/<ver>/).
    kpkg= kver=
    for kdeb in $L1_KERNEL_DEBS; do
        [[ -f $kdeb ]] || die "L1_KERNEL_DEBS: no such file $kdeb"
        dpkg-deb --fsys-tarfile "$kdeb" | tar -x -C "$work/kernel" --wildcards \
            "${pat[@]}" "${pat[@]/#.\/lib/.\/usr\/lib}" "./boot/vmlinuz-*" \
            "./usr/lib/modules/*/vmlinuz" 2>/dev/null || true
        kpkg+="${kpkg:+,}$(dpkg-deb -f "$kdeb" Package)"
        kver=$(dpkg-deb -f "$kdeb" Version)
    done
    if [[ -d $work/kernel/usr/lib/modules ]]; then
        mkdir -p "$work/kernel/lib/modules"
        cp -r "$work/kernel/usr/lib/modules/." "$work/kernel/lib/modules/"
    fi
    l1_vmlinuz=$(compgen -G "$work/kernel/boot/vmlinuz-*" ||
                 compgen -G "$work/kernel/lib/modules/*/vmlinuz") ||
        die "L1_KERNEL_DEBS: no boot/vmlinuz-* or usr/lib/modules/*/vmlinuz in $L1_KERNEL_DEBS"
    l1_vmlinuz=$(head -n1 <<<"$l1_vmlinuz")
else
    read -r kpkg kver _ < <(grep '^linux-image-' "$l2/packages.txt" | tail -n1)
    [[ -n ${kpkg:-} && -n ${kver:-} ]] || die "no kernel package in $l2/packages.txt"
    kdeb=$(fetch "$kpkg" "$kver")
    dpkg-deb --fsys-tarfile "$kdeb" |
        tar -x -C "$work/kernel" --wildcards "${pat[@]}" 2>/dev/null || true
fi
uname_r=$(basename "$(compgen -G "$work/kernel/lib/modules/*" | head -n1)")
[[ -n $uname_r ]] || die "no lib/modules in ${L1_KERNEL_DEBS:-$kdeb}"
modinfo_field() {   # modinfo_field KO FIELD
    local f=$1
    [[ $f != *.xz ]] || { xz -dc "$f" >"$work/mod.ko"; f=$work/mod.ko; }
    objcopy -O binary --only-section=.modinfo "$f" /dev/stdout | tr '\0' '\n' |
        sed -n "s/^$2=//p"
}
have=" "
for m in "${mods[@]}"; do
    f=$(compgen -G "$work/kernel/lib/modules/$uname_r/kernel/$m.ko*" | head -n1) ||
        die "$kpkg has no $m.ko"
    name=$(basename "$m")
    # Every module it depends on must be loaded before it (the order above).
    for d in $(modinfo_field "$f" depends | tr ',' ' '); do
        [[ $have == *" ${d//_/-} "* || $have == *" ${d//-/_} "* ]] ||
            die "$name.ko depends on $d, which is not loaded before it"
    done
    have+="$name "
    # init-l1 loads $m.ko: a compressed module (newer kernels) unpacked.
    dst=$root/lib/modules/$uname_r/kernel/$m.ko
    mkdir -p "$(dirname "$dst")"
    if [[ $f == *.xz ]]; then
        xz -dc "$f" >"$dst"
    else
        cp "$f" "$dst"
    fi
done
log "modules of $kpkg ($uname_r):$have"

# --- QEMU and its shared libraries ----------------------------------------------
mkdir -p "$root/usr/share/qemu"
qbin=$root/usr/bin/qemu-system-x86_64
# Without its debug info (60 MB of the build's 62): L1 unpacks its initramfs
# under TCG.  The symbols stay.
if command -v strip >/dev/null; then
    strip --strip-debug -o "$qbin" "$qemu"
else
    cp "$qemu" "$qbin"
fi
stage_pkg libc6
ldso=$stage/lib/$arch/ld-linux-x86-64.so.2
libpath=$stage/lib/$arch:$stage/usr/lib/$arch
# add_libs WHAT ELF...: stage the packages of every shared library the ELF
# files need (debs.sh), then copy those libraries into the tree.
add_libs() {
    local what=$1 so path nlib=0
    shift
    stage_libs "$@"
    # The perf libraries already in the tree come from the same cached
    # .debs; a soname that is there is not copied again.
    while read -r so path; do
        if [[ ! -e $root/lib/$arch/$so ]]; then
            cp -L "$path" "$root/lib/$arch/$so"; nlib=$((nlib + 1))
        elif ! cmp -s "$path" "$root/lib/$arch/$so"; then
            die "$so of $what's packages differs from the one perf uses"
        fi
    done < <(list_libs "$@" | awk '$1 !~ /^\// && $2 == "=>" && $3 ~ /^\// { print $1, $3 }' |
             sort -u)
    log "$what: $nlib more libraries"
}
add_libs QEMU "$qbin"
cmp -s "$ldso" "$root/lib/$arch/ld-linux-x86-64.so.2" ||
    die "libc6 of the guest image differs from the staged one"

# --- libvirt and vpmu-helper (init-l1's "libvirt" configuration) ------------
# libvirtd, virtlogd and virsh of bookworm's libvirt 9.0, only the QEMU
# driver and the x86 CPU map; vpmu-helper from the build directory.
for p in libvirt0 libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients; do
    stage_pkg "$p"
done
settle_exact   # libvirt's packages pin libvirt0 exactly (debs.sh)
mkdir -p "$root/usr/sbin" "$root/usr/lib/$arch/libvirt/connection-driver" \
    "$root/usr/share/libvirt/cpu_map"
cp "$stage/usr/sbin/libvirtd" "$stage/usr/sbin/virtlogd" "$root/usr/sbin/"
cp "$stage/usr/bin/virsh" "$root/usr/bin/"
cp "$stage/usr/lib/$arch/libvirt/connection-driver/libvirt_driver_qemu.so" \
    "$root/usr/lib/$arch/libvirt/connection-driver/"
cp "$stage/usr/share/libvirt/cpu_map/index.xml" "$stage"/usr/share/libvirt/cpu_map/x86_* \
    "$root/usr/share/libvirt/cpu_map/"
helper=${VPMU_HELPER:-$top/build/vpmu-helper}
[[ -x $helper ]] || die "no vpmu-helper at $helper (make build)"
cp "$helper" "$root/usr/sbin/vpmu-helper"
add_libs libvirt "$root/usr/sbin/libvirtd" "$root/usr/sbin/virtlogd" \
    "$root/usr/bin/virsh" "$root/usr/sbin/vpmu-helper" \
    "$root/usr/lib/$arch/libvirt/connection-driver/libvirt_driver_qemu.so"
if command -v ldconfig >/dev/null || [[ -x /sbin/ldconfig ]]; then
    PATH=$PATH:/sbin ldconfig -r "$root" 2>/dev/null || log "warning: ldconfig -r failed"
fi

# --- Python for L1's side of the checks (l1serve.py, l1checks.py) -----------
# bookworm's python3.11 and, of its standard library, the modules the two
# programs import (site's included), as the staged interpreter loads them
# in L1's environment (no locale); an extension module only if the tree
# has every library it needs (the others, _ssl, _hashlib, _bz2, _lzma,
# come from guarded imports of urllib and shutil that L1 never uses).
for p in python3.11-minimal libpython3.11-minimal libpython3.11-stdlib; do
    stage_pkg "$p"
done
pylib=usr/lib/python3.11
install -m 0755 "$stage/usr/bin/python3.11" "$root/usr/bin/python3.11"
ln -sf python3.11 "$root/usr/bin/python3"
add_libs Python "$root/usr/bin/python3.11"
install -m 0644 "$here/l1serve.py" "$here/l1checks.py" "$here/../qmpclient.py" \
    "$here/../pytap.py" "$root/"
# py_run HOME ARGS...: the staged python3.11 with its standard library in
# HOME/lib/python3.11 and L1's programs on its path.
py_run() {
    local home=$1
    shift
    env -i PYTHONHOME="$home" PYTHONPATH="$root" PYTHONDONTWRITEBYTECODE=1 \
        "$ldso" --library-path "$root/lib/$arch:$libpath" "$root/usr/bin/python3.11" "$@"
}
py_imports='import sys, l1serve, l1checks
for m in list(sys.modules.values()):
    print(getattr(m, "__file__", None) or "")'
npy=0
while read -r f; do
    [[ $f == "$stage/$pylib/"* ]] || continue
    rel=${f#"$stage/"}
    if [[ $f == *.so ]] && list_libs "$f" | awk '$2 == "=>" { print $1 }' |
            while read -r so; do [[ -e $root/lib/$arch/$so ]] || exit 1; done; then
        :
    elif [[ $f == *.so ]]; then
        log "Python: leaving out $(basename "$f") (its libraries are not in the tree)"
        continue
    fi
    mkdir -p "$root/$(dirname "$rel")"
    cp "$f" "$root/$rel"
    npy=$((npy + 1))
done < <(py_run "$stage/usr" -c "$py_imports"; echo "$stage/$pylib/os.py")
# The pruned library must do: the programs import with it alone.
py_run "$root/usr" -c 'import l1serve, l1checks' ||
    die "L1's Python programs do not import with the pruned standard library"
py_run "$stage/usr" -m compileall -q -s "$root" -p / "$root/$pylib" "$root"/*.py >/dev/null ||
    die "compileall failed"
log "Python: python3.11 and $npy files of its library ($(du -sh "$root/$pylib" | cut -f1))"

# --- firmware ------------------------------------------------------------------
stage_pkg seabios
stage_pkg qemu-system-data
cp "$stage/usr/share/seabios/bios-256k.bin" "$root/usr/share/qemu/"
for f in linuxboot_dma.bin linuxboot.bin pvh.bin kvmvapic.bin; do
    cp "$stage/usr/share/qemu/$f" "$root/usr/share/qemu/"
done

# --- the L2 image and /init -------------------------------------------------------
mkdir -p "$root/l2"
cp "$l2_kernel" "$l2/initramfs.cpio.gz" "$root/l2/"
install -m 0755 "$here/init-l1" "$root/init"

# Sanity check on the host: QEMU runs from the tree.
if [[ $(id -u) == 0 ]]; then
    chroot "$root" /usr/bin/qemu-system-x86_64 --version >"$work/qemu-version" ||
        die "QEMU does not run in the image tree (chroot test)"
    log "$(head -n1 "$work/qemu-version")"
fi

for deb in "${staged[@]}"; do
    dpkg-deb -f "$deb" Package Version | sed 's/^[^:]*: //' | paste -sd' '
done | sort >"$out/packages.txt"
{ echo "$kpkg $kver (modules: ${have# })"; echo "# and the guest image's:"
  cat "$l2/packages.txt"; } >>"$out/packages.txt"

# Which QEMU the image holds (run.sh prints it): the binary's sha256 and
# build/qemu/README's patch series line, if there is one.
{ echo "binary $(sha256sum "$qemu" | cut -c1-16) $(date -u -r "$qemu" '+%F %T')"
  sed -n 's/^with the series qemu-patches\/ (\(sha256 [0-9a-f]\{16\}\).*/series \1/p' \
      "$(dirname "$qemu")/README" 2>/dev/null || true; } >"$out/qemu.txt"

rm -f "$out/vmlinux" "$out/vmlinuz"
if [[ -n ${L1_KERNEL_DEBS:-} ]]; then
    cp "$l1_vmlinuz" "$out/vmlinuz"
else
    if [[ -f $l2/vmlinux ]]; then cp "$l2/vmlinux" "$out/vmlinux"; fi
    cp "$l2/vmlinuz" "$out/vmlinuz"
fi
(cd "$root" && find . -print0 | LC_ALL=C sort -z |
    cpio --null -o -H newc -R 0:0 --quiet) | gzip -n -1 >"$out/initramfs.cpio.gz.tmp"
mv "$out/initramfs.cpio.gz.tmp" "$out/initramfs.cpio.gz"
log "wrote $out/initramfs.cpio.gz ($(du -h "$out/initramfs.cpio.gz" | cut -f1)," \
    "$(du -sh "$root" | cut -f1) unpacked)"
