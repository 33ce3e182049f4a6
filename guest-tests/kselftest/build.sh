#!/bin/bash
# Build what the kselftest suite (run.sh) boots: the kernel's own PMU
# selftests, built statically on the host from Debian's linux-source
# package, in an overlay initramfs that goes after the guest image's
# (Linux unpacks concatenated cpio.gz archives as one initramfs).
#
#   CACHE/linux-source-V_*_all.deb   the source (apt's candidate, cached)
#   CACHE/VERSION/bin/               the binaries, built once per version:
#       perf_events/{remove_on_exec,sigtrap_threads,mmap,watermark_signal}
#                                    (those the source has; 6.1 has no
#                                    watermark_signal)
#       kvm/pmu_event_filter_test    tools/testing/selftests/kvm/x86_64/
#   OUT/overlay.cpio.gz              /vpmu/kselftest/{perf_events,kvm}/...,
#                                    /vpmu/kselftest/VERSION, the in-guest
#                                    tests /vpmu/tests/kselftest.sh and
#                                    kselftest-kvm.sh
#   OUT/modules.cpio.gz              irqbypass, kvm, ccp, kvm-amd of the
#                                    guest kernel's own package (L1 only)
#   OUT/image/                       a guest image for run-guest.sh (TCG
#                                    guests): the guest image's kernel,
#                                    initramfs = base + overlay
#   OUT/l1/                          the same + modules.cpio.gz (the L1 that
#                                    runs pmu_event_filter_test under its KVM)
#   OUT/VERSION                      "linux-source-6.1 6.1.N-M": what was built
#
# Usage: build.sh [OUT]             (OUT defaults to build/kselftest)
#
# Environment: IMAGE (the guest image, default build/guest; built by
# guest-tests/linux/build-image.sh), VPMU_CACHE (CACHE is
# ${VPMU_CACHE:-$HOME/.cache/vpmu}/kselftest), VPMU_KSELFTEST_SRC (the
# source package, default linux-source-6.1: the guest kernel's series, and
# the 6.1 pmu_event_filter_test), VPMU_REFRESH=1 (ask apt for a newer
# candidate; otherwise the newest cached .deb is used without asking apt).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${1:-$top/build/kselftest}
base=${IMAGE:-$top/build/guest}
vcache=${VPMU_CACHE:-$HOME/.cache/vpmu}
cache=$vcache/kselftest
srcpkg=${VPMU_KSELFTEST_SRC:-linux-source-6.1}

log() { printf 'kselftest-build: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

for tool in apt-get apt-cache dpkg-deb cpio gzip make gcc xz readelf strip; do
    command -v "$tool" >/dev/null || die "$tool is missing"
done
for f in vmlinuz initramfs.cpio.gz packages.txt; do
    [[ -f $base/$f ]] || die "$base/$f missing: run guest-tests/linux/build-image.sh"
done
mkdir -p "$out" "$cache"
out=$(cd "$out" && pwd)
base=$(cd "$base" && pwd)    # OUT/image links to its kernel

# --- the source package ----------------------------------------------------------
# apt_get ARGS...: apt-get in the cache directory.
apt_get() { (cd "$cache" && apt-get -q "$@") >&2; }
# newest_deb PKG: the newest cached .deb of PKG, by Debian version order.
newest_deb() {
    local f v best="" bv=""
    for f in "$cache/$1"_*.deb; do
        [[ -f $f ]] || continue
        v=$(dpkg-deb -f "$f" Version)
        if [[ -z $bv ]] || dpkg --compare-versions "$v" gt "$bv"; then
            best=$f bv=$v
        fi
    done
    echo "$best"
}
# fetch_candidate PKG: download apt's candidate of PKG unless it is cached.
# An index can name a file the mirror no longer has: then apt-get update,
# and the candidate is asked again.
fetch_candidate() {
    local try cand have
    for try in 1 2; do
        [[ $try == 1 ]] || apt-get -q update >&2 || true
        cand=$(apt-cache policy "$1" | sed -n 's/^ *Candidate: *//p')
        [[ -n $cand && $cand != '(none)' ]] || continue
        log "apt's candidate: $1 $cand"
        have=$(newest_deb "$1")
        [[ -n $have && $(dpkg-deb -f "$have" Version) == "$cand" ]] && return 0
        apt_get download "$1=$cand" && return 0
    done
    return 1
}
deb=$(newest_deb "$srcpkg")
if [[ -z $deb || ${VPMU_REFRESH:-0} == 1 ]]; then
    fetch_candidate "$srcpkg" || [[ -n $deb ]] ||
        die "apt-get download $srcpkg failed (no candidate, or not on the mirror)"
    deb=$(newest_deb "$srcpkg")
fi
[[ -n $deb ]] || die "no $srcpkg .deb in $cache"
ver=$(dpkg-deb -f "$deb" Version)
log "source: $srcpkg $ver ($deb)"
# Older versions of the source and their selftests go (140 MB each).
for f in "$cache/$srcpkg"_*.deb "$cache/$srcpkg"-*/; do
    [[ -e $f && $f != "$deb" && ${f%/} != "$cache/$srcpkg-$ver" ]] || continue
    log "removing the older $f"
    rm -rf "$f"
done

# --- the selftests, built once per source version --------------------------------
bin=$cache/$srcpkg-$ver/bin
if [[ ! -f $bin/.done ]]; then
    work=$cache/$srcpkg-$ver/work
    rm -rf "$work" "$bin"
    mkdir -p "$work" "$bin/perf_events" "$bin/kvm"
    log "unpacking the tools, headers and x86 trees of $srcpkg $ver"
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work" --wildcards './usr/src/linux-source-*.tar.xz'
    tarball=$(compgen -G "$work/usr/src/linux-source-*.tar.xz" | head -n1) ||
        die "$deb has no usr/src/linux-source-*.tar.xz"
    top_dir=$(basename "$tarball" .tar.xz)
    # make headers needs the top Makefile, Kbuild, scripts/, include/ and
    # the architecture's tree; the selftests need tools/.
    tar -xJf "$tarball" -C "$work" --wildcards "$top_dir/Makefile" "$top_dir/Kbuild" \
        "$top_dir/Kconfig" "$top_dir/usr/*" "$top_dir/scripts/*" "$top_dir/include/*" \
        "$top_dir/arch/x86/*" "$top_dir/tools/*"
    rm -f "$tarball"
    src=$work/$top_dir
    log "make headers ($src/usr/include)"
    make -s -C "$src" headers >&2
    # kselftest's lib.mk adds its flags to CFLAGS and LDFLAGS from the
    # environment (on make's command line they would replace them).
    st=$src/tools/testing/selftests
    log "perf_events: $(sed -n 's/^TEST_GEN_PROGS *:*= *//p' "$st/perf_events/Makefile")"
    CFLAGS=-static LDFLAGS=-static make -C "$st/perf_events" OUTPUT="$bin/perf_events" >&2
    CFLAGS=-static LDFLAGS=-static make -C "$st/kvm" OUTPUT="$work/kvm" \
        "$work/kvm/x86_64/pmu_event_filter_test" >&2
    cp "$work/kvm/x86_64/pmu_event_filter_test" "$bin/kvm/"
    cp "$st/perf_events/settings" "$bin/perf_events/" 2>/dev/null || true
    for f in "$bin"/perf_events/* "$bin/kvm/pmu_event_filter_test"; do
        [[ $f == */settings ]] && continue
        # The guest has no libc of its own for them: no program interpreter.
        ! readelf -l "$f" | grep -q INTERP || die "$f is not statically linked"
        strip --strip-debug "$f"
    done
    echo "$srcpkg $ver" >"$bin/.done"
    rm -rf "$work"
fi
echo "$srcpkg $ver" >"$out/VERSION"
log "selftests of $srcpkg $ver: $(cd "$bin" && find . -type f ! -name .done ! -name settings |
    sort | sed 's|^\./||' | paste -sd' ')"

# --- the overlay -----------------------------------------------------------------
root=$out/overlay
rm -rf "$root"
mkdir -p "$root/vpmu/kselftest" "$root/vpmu/tests"
cp -r "$bin/perf_events" "$bin/kvm" "$root/vpmu/kselftest/"
echo "$srcpkg $ver" >"$root/vpmu/kselftest/VERSION"
install -m 0755 "$here/kselftest.sh" "$here/kselftest-kvm.sh" "$root/vpmu/tests/"
# pack DIR OUT: DIR as a gzip'd newc cpio, root-owned, in a stable order.
pack() {
    (cd "$1" && find . -print0 | LC_ALL=C sort -z |
        cpio --null -o -H newc -R 0:0 --quiet) | gzip -n -1 >"$2.tmp"
    mv "$2.tmp" "$2"
}
pack "$root" "$out/overlay.cpio.gz"

# --- kvm-amd and its dependencies, for L1 ---------------------------------------
# From the guest kernel's own package (packages.txt's linux-image line), in
# build-image.sh's .deb cache if it is there, else fetched into ours.
read -r kpkg kver _ < <(grep '^linux-image-' "$base/packages.txt" | tail -n1)
[[ -n ${kpkg:-} && -n ${kver:-} ]] || die "no linux-image package in $base/packages.txt"
kdeb=$(compgen -G "$vcache/debs/${kpkg}_${kver//:/%3a}_*.deb" | head -n1) ||
    kdeb=$(compgen -G "$cache/${kpkg}_${kver//:/%3a}_*.deb" | head -n1) ||
    { apt_get download "$kpkg=$kver" ||
          { apt-get -q update >&2 && apt_get download "$kpkg=$kver"; } ||
          die "apt-get download $kpkg=$kver failed"
      kdeb=$(compgen -G "$cache/${kpkg}_${kver//:/%3a}_*.deb" | head -n1); }
mroot=$out/modules
rm -rf "$mroot"
mkdir -p "$mroot"
mods=(virt/lib/irqbypass arch/x86/kvm/kvm drivers/crypto/ccp/ccp arch/x86/kvm/kvm-amd)
pat=()
for m in "${mods[@]}"; do pat+=("./lib/modules/*/kernel/$m.ko" "./lib/modules/*/kernel/$m.ko.xz"); done
dpkg-deb --fsys-tarfile "$kdeb" | tar -x -C "$mroot" --wildcards "${pat[@]}" 2>/dev/null || true
for m in "${mods[@]}"; do
    f=$(compgen -G "$mroot/lib/modules/*/kernel/$m.ko*" | head -n1) || die "$kdeb has no $m.ko"
    [[ $f != *.xz ]] || xz -d "$f"   # busybox insmod takes plain .ko files
done
pack "$mroot" "$out/modules.cpio.gz"
log "modules of $kpkg $kver: ${mods[*]##*/}"

# --- the images run-guest.sh boots ------------------------------------------------
for d in image l1; do
    mkdir -p "$out/$d"
    for k in vmlinux vmlinuz; do
        rm -f "$out/$d/$k"
        [[ ! -f $base/$k ]] || ln -s "$base/$k" "$out/$d/$k"
    done
done
cat "$base/initramfs.cpio.gz" "$out/overlay.cpio.gz" >"$out/image/initramfs.cpio.gz"
cat "$base/initramfs.cpio.gz" "$out/overlay.cpio.gz" "$out/modules.cpio.gz" \
    >"$out/l1/initramfs.cpio.gz"
log "wrote $out/image and $out/l1 ($(du -h "$out/overlay.cpio.gz" | cut -f1) overlay," \
    "$(du -h "$out/modules.cpio.gz" | cut -f1) modules)"
