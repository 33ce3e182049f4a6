#!/bin/bash
# Build the Linux guest image for the vpmu guest tests, from Debian packages
# only:
#
#   OUT/vmlinuz             the stock bookworm kernel (linux-image-6.1.0-N-amd64)
#   OUT/vmlinux             the same, decompressed (boots faster, via PVH)
#   OUT/initramfs.cpio.gz   busybox-static, perf (linux-perf) with its shared
#                           libraries, coreutils' dynamically linked sleep,
#                           the workloads, the tests and /init
#   OUT/System.map          the kernel's (host profiles name its frames)
#   OUT/calls               workloads/calls.c as in the image (the host
#                           names its frames from it)
#
# Usage: build-image.sh [OUT]     (OUT defaults to build/guest in the repository)
#
# Downloads are cached in ${VPMU_CACHE:-$HOME/.cache/vpmu}/debs; a second run
# downloads nothing.  The kernel and linux-perf are chosen by
# scripts/debpick.py (the same upstream series; the choice is printed, and
# recorded in OUT/packages.txt and in the image as /vpmu/packages.txt, which
# the guest prints at boot).  Overrides: VPMU_PERF_VERSION (the linux-perf
# version; default: apt's candidate), VPMU_KERNEL_PKG (e.g.
# linux-image-6.1.0-56-amd64; default: debpick's choice), VPMU_REFRESH=1
# (ask apt rather than take the cached .debs).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-$here/../../build/guest}
cache=${VPMU_CACHE:-$HOME/.cache/vpmu}/debs
arch=x86_64-linux-gnu

log() { printf 'build-image: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

for tool in apt-get apt-cache dpkg-deb cpio gzip gcc; do
    command -v "$tool" >/dev/null || die "$tool is missing (apt-get install $tool)"
done

mkdir -p "$out" "$cache"
out=$(cd "$out" && pwd)
work=$out/work
rm -rf "$work"
mkdir -p "$work/stage" "$work/root"
stage=$work/stage   # every extracted package
root=$work/root     # the initramfs tree

# candidate, cached, lib_depends, fetch, stage_pkg (and staged[]).
# shellcheck source=debs.sh
. "$here/debs.sh"

# --- kernel and perf: one upstream series ---------------------------------
# scripts/debpick.py chooses them (what must match, and why, is said there):
# first among the cached .debs, asking apt nothing (VPMU_REFRESH=1 skips
# that), else from apt's lists; if apt cannot download its choice (lists
# older than the archive), once more after apt-get update.
pick=(python3 "$here/../../scripts/debpick.py" kernel
      ${VPMU_PERF_VERSION:+--perf "$VPMU_PERF_VERSION"}
      ${VPMU_KERNEL_PKG:+--kernel "$VPMU_KERNEL_PKG"})
command -v python3 >/dev/null || die "python3 is missing (apt-get install python3)"
sel= why=
if [[ ${VPMU_REFRESH:-0} != 1 ]]; then
    sel=$("${pick[@]}" --cached "$cache" 2>"$work/pick.err") || sel=
fi
kdeb= pdeb=
for attempt in 1 2; do
    if [[ -z $sel ]]; then
        sel=$("${pick[@]}" 2>"$work/pick.err") || die "$(sed 's/^debpick: error: //' "$work/pick.err")"
    fi
    why=$(sed -n 's/^debpick: //p' "$work/pick.err")
    read -r kpkg kver perf_ver <<<"$sel"
    if kdeb=$(fetch_try "$kpkg" "$kver") && pdeb=$(fetch_try linux-perf "$perf_ver"); then
        break
    fi
    [[ $attempt == 1 ]] && apt_update_once ||
        die "cannot download $kpkg=$kver or linux-perf=$perf_ver (see apt-cache policy)"
    sel=
done
log "$why"
# Unpacking the kernel package takes a while (the modules); keep the
# vmlinuz next to the .deb.
kcache=${kdeb%.deb}.vmlinuz
if [[ ! -f $kcache ]]; then
    mkdir -p "$work/kernel"
    dpkg-deb --fsys-tarfile "$kdeb" |
        tar -x -C "$work/kernel" --wildcards './boot/vmlinuz-*'
    cp "$(compgen -G "$work/kernel/boot/vmlinuz-*" | head -n1)" "$kcache"
fi
cp "$kcache" "$out/vmlinuz"
# System.map: names the kernel's frames in host profiles (the profile
# suite), kept next to the .deb like the vmlinuz.
mcache=${kdeb%.deb}.System.map
if [[ ! -f $mcache ]]; then
    mkdir -p "$work/kernel"
    dpkg-deb --fsys-tarfile "$kdeb" |
        tar -x -C "$work/kernel" --wildcards './boot/System.map-*'
    cp "$(compgen -G "$work/kernel/boot/System.map-*" | head -n1)" "$mcache"
fi
cp "$mcache" "$out/System.map"
# vmlinux: the same kernel, decompressed from the bzImage's xz payload.
# QEMU boots it through its PVH entry, which skips the kernel decompression
# that takes several seconds under TCG (run-guest.sh: KERNEL=vmlinux).
vcache=${kdeb%.deb}.vmlinux
if [[ ! -f $vcache ]] && command -v xz >/dev/null; then
    off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$kcache" | head -n1 | cut -d: -f1)
    if [[ -n $off ]]; then
        # xz stops at the end of the stream and complains about the rest.
        tail -c +"$((off + 1))" "$kcache" | xz -dc >"$vcache.tmp" 2>/dev/null || true
        if head -c4 "$vcache.tmp" | grep -q ELF; then
            mv "$vcache.tmp" "$vcache"
        fi
        rm -f "$vcache.tmp"
    fi
fi
rm -f "$out/vmlinux"
if [[ -f $vcache ]]; then
    ln "$vcache" "$out/vmlinux" 2>/dev/null || cp "$vcache" "$out/vmlinux"
else
    log "no vmlinux (needs xz and an xz-compressed vmlinuz); vmlinuz only"
fi

stage_pkg linux-perf "$perf_ver"   # pdeb, cached above
# Current bookworm (6.1.192) ships the real binary as /usr/bin/perf; older
# packages had a wrapper there that runs perf_<major.minor>.
perf_bin=$stage/usr/bin/perf_6.1
[[ -f $perf_bin ]] || perf_bin=$stage/usr/bin/perf
head -c4 "$perf_bin" | grep -q ELF || die "no perf ELF binary in linux-perf"

stage_pkg busybox-static
# perf test "PERF_RECORD_* events & perf_sample fields" runs `sleep` and wants
# the MMAP records of the command, libc and the dynamic loader: a dynamically
# linked sleep (coreutils'), not busybox's static one.
stage_pkg coreutils
dyn_sleep=$stage/bin/sleep
[[ -f $dyn_sleep ]] || dyn_sleep=$stage/usr/bin/sleep
head -c4 "$dyn_sleep" | grep -q ELF || die "no sleep binary in coreutils"

# --- perf's shared libraries ---------------------------------------------
# List perf's libraries with the staged dynamic loader against the staged
# tree only.  Seed with libc6 and linux-perf's library Depends; for a soname
# still missing, ask the host's dpkg database which package ships it, or else
# (a host without it) add the next level of library Depends, and try again.
stage_pkg libc6
for p in $(lib_depends "${staged[linux-perf]}"); do stage_pkg "$p"; done
ldso=$stage/lib/$arch/ld-linux-x86-64.so.2
libpath=$stage/lib/$arch:$stage/usr/lib/$arch
stage_libs "$perf_bin"

# --- rr, for the record/replay tests (tests/rr.sh) --------------------------
# Its 64-bit parts only: the binary, the preload/page/audit libraries and
# the exec stub rr finds in ../lib/rr next to itself, and their shared
# libraries (libcapnp, libstdc++, ...).  Not libc6-i386: no 32-bit tracee.
stage_pkg rr
for p in $(lib_depends "${staged[rr]}"); do
    [[ $p == libc6-i386 ]] || stage_pkg "$p"
done
rr_files=(usr/bin/rr usr/lib/rr/librrpreload.so usr/lib/rr/librrpage.so
          usr/lib/rr/librraudit.so usr/lib/rr/rr_exec_stub)
# The dynamically linked ones (librrpage and the exec stub are static).
rr_dyn=(usr/bin/rr usr/lib/rr/librrpreload.so usr/lib/rr/librraudit.so)
for f in "${rr_files[@]}"; do
    [[ -f $stage/$f ]] || die "rr: no $f in the rr package"
done
stage_libs "${rr_dyn[@]/#/$stage/}"

# --- PAPI, for tests/papi.sh ------------------------------------------------
# papi_avail and papi_command_line, libpapi (with libpfm4 and libsde), and
# libpapi-dev's papi.h to build workloads/papi-work.c against.
for p in papi-tools libpapi7.0 libpfm4 libsde1 libpapi-dev; do stage_pkg "$p"; done
papi_files=(usr/bin/papi_avail usr/bin/papi_command_line)
stage_libs "${papi_files[@]/#/$stage/}"
# One upload's versions where the packages pin each other (debs.sh).
settle_exact

# --- the initramfs tree ----------------------------------------------------
mkdir -p "$root"/{bin,dev,etc,proc,sys,tmp,root,usr/bin,lib/$arch,lib64,vpmu/bin,vpmu/tests}
ln -s bin "$root/sbin"
ln -s ../bin "$root/usr/sbin"
chmod 1777 "$root/tmp"

cp "$stage/bin/busybox" "$root/bin/busybox"
for applet in $("$stage/bin/busybox" --list); do
    [[ -e $root/bin/$applet ]] || ln -s busybox "$root/bin/$applet"
done

cp "$perf_bin" "$root/usr/bin/perf"
for f in "${rr_files[@]}" "${papi_files[@]}"; do
    install -D -m 0755 "$stage/$f" "$root/$f"
done
# The shared libraries of perf, rr and PAPI, each once.
list_libs "$perf_bin" "${rr_dyn[@]/#/$stage/}" "${papi_files[@]/#/$stage/}" |
    awk '$1 !~ /^\// && $2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
while read -r so path; do
    cp -L "$path" "$root/lib/$arch/$so"
done
cp -L "$ldso" "$root/lib/$arch/ld-linux-x86-64.so.2"
# coreutils' sleep, in a directory of its own: perf-test.sh puts it first in
# PATH; everything else keeps busybox.  Its libraries (libc) come with perf's.
mkdir -p "$root/vpmu/dynbin"
cp "$dyn_sleep" "$root/vpmu/dynbin/sleep"
list_libs "$dyn_sleep" |
    awk '$1 !~ /^\// && $2 == "=>" { print $1 }' | while read -r so; do
    [[ -e $root/lib/$arch/$so ]] || die "sleep needs $so, which perf does not"
done
ln -s ../lib/$arch/ld-linux-x86-64.so.2 "$root/lib64/ld-linux-x86-64.so.2"
echo "/lib/$arch" >"$root/etc/ld.so.conf"
if command -v ldconfig >/dev/null || [[ -x /sbin/ldconfig ]]; then
    PATH=$PATH:/sbin ldconfig -r "$root" 2>/dev/null || log "warning: ldconfig -r failed"
fi

printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"

# Workloads: static, -nostdlib, assembled with the host toolchain.
wl=$here/workloads
build_wl() {   # build_wl SRC NAME N
    gcc -nostdlib -static -no-pie -Wl,--build-id=none -DN="$3" \
        -o "$root/vpmu/bin/$2" "$wl/$1"
}
build_wl loop.S loop_1M 1000000
build_wl loop.S loop_10M 10000000
build_wl loop.S loop_100M 100000000
build_wl loop.S loop_1000M 1000000000   # stat-exact under L1 (vpmu.l1cycles=1)
build_wl sys.S sys_100k 100000
build_wl until.S until 200000000   # migrate-kvm (nested): 4e8 instructions a chunk
build_wl hot.S hot 5000000
build_wl cpuid.S cpuid_1k 1000   # stat-exact: CPUIDs at CPL 3 (KVM retires them)
build_wl pin.S pin1_10M 10000000   # operator-pin: 2N + 6 user instructions on CPU 1
# cloop: a static glibc program (stat-exact; its start-up runs CPUIDs).
for n in 1 2; do
    gcc -O1 -static -no-pie -Wl,--build-id=none -DN=${n}000000 \
        -o "$root/vpmu/bin/cloop_${n}M" "$wl/cloop.c"
done
# calls: main -> a -> b with frame pointers (the profile suite), also
# next to the image: the host names its frames from the ELF.
gcc -O0 -fno-omit-frame-pointer -static \
    -no-pie -Wl,--build-id=none -DN=1000000 -o "$root/vpmu/bin/calls" \
    "$wl/calls.c"
cp "$root/vpmu/bin/calls" "$out/calls"
# true as SCHED_FIFO, first in PATH for perf test's exit-events test (tests/perf-test.sh)
mkdir -p "$root/vpmu/fifobin"
build_wl fifo-true.S ../fifobin/true 0
# rr-work: C with threads, linked against the image's glibc (the staged
# libc6 is bookworm's, the compiler's too).
gcc -O1 -pthread -o "$root/vpmu/bin/rr-work" "$wl/rr-work.c"
# papi-work: against the staged libpapi (the image has it in /lib).
gcc -O1 -I"$stage/usr/include" -o "$root/vpmu/bin/papi-work" "$wl/papi-work.c" \
    "$stage/usr/lib/$arch/libpapi.so.7.0"
# papi-mmm: PAPI's papi_sr_ins workload in assembly (tests/papi.sh).
gcc -O1 -I"$stage/usr/include" -o "$root/vpmu/bin/papi-mmm" "$wl/papi-mmm.c" \
    "$stage/usr/lib/$arch/libpapi.so.7.0"

install -m 0755 "$here/init" "$root/init"
install -m 0644 "$here/tap-lib.sh" "$root/vpmu/tap-lib.sh"
for t in "$here"/tests/*.sh; do
    install -m 0755 "$t" "$root/vpmu/tests/"
done

# Sanity check on the host: the copied tree runs perf by itself.
if [[ $(id -u) == 0 ]]; then
    chroot "$root" /usr/bin/perf --version >/dev/null ||
        die "perf does not run in the image tree (chroot test)"
fi

# Packages used, for the record.
for deb in "${staged[@]}"; do
    dpkg-deb -f "$deb" Package Version | sed 's/^[^:]*: //' | paste -sd' '
done | sort >"$out/packages.txt"
# The kernel last, as build-l1.sh and kselftest/build.sh read it.
{ echo "# $why"; echo "$kpkg $kver (vmlinuz only)"; } >>"$out/packages.txt"
cp "$out/packages.txt" "$root/vpmu/packages.txt"

(cd "$root" && find . -print0 | LC_ALL=C sort -z |
    cpio --null -o -H newc -R 0:0 --quiet) | gzip -n >"$out/initramfs.cpio.gz"

log "wrote $out/vmlinuz ($(du -h "$out/vmlinuz" | cut -f1)), vmlinux," \
    "$out/initramfs.cpio.gz ($(du -h "$out/initramfs.cpio.gz" | cut -f1)," \
    "$(du -sh "$root" | cut -f1) unpacked)"
