#!/usr/bin/env bash
# make deb: Debian packages of vpmu, built with dpkg-buildpackage.
#
#   scripts/make-deb.sh [--out DIR] [--no-lintian] [vpmu] [qemu]
#
#   vpmu  source package vpmu (debian/): libvpmu0, libvpmu-dev,
#         vpmu-helper, vpmu-tools, vpmu-doc; built on this host (bookworm).
#   qemu  source package qemu-vpmu (packaging/qemu-vpmu/):
#         qemu-system-x86-vpmu, built in a clean bookworm chroot
#         (scripts/make-deb-qemu.py), with the vpmu packages of DIR/vpmu;
#         make qemu runs first: it fetches Debian's qemu source the
#         changelog names and fills the ccache the package build reads.
#   (default: both)
#
# The orig tarball of vpmu is HEAD's tree (git archive), debian/ the work
# tree's; dpkg-buildpackage exports the changelog's date as
# SOURCE_DATE_EPOCH, so one commit gives the same packages.  Each source
# package is built in DIR/NAME/ (default build-deb/ in this checkout:
# gitignored); the .deb, .dsc and .changes files end up there, and
# lintian checks the .changes: its errors and warnings fail the build
# (each one left is overridden in debian/*lintian-overrides, with its
# reason).  Missing build dependencies are installed with apt-get
# build-dep (root or sudo), as scripts/install-deps.sh does for make check.
#
# Environment: DEB_BUILD_OPTIONS (default parallel=2), VPMU_DEB_NICE (the
# niceness of the build, default 10), VPMU_DEB_CCACHE=0 (the QEMU package
# compiles everything), VPMU_DEB_LINT_QEMU_SOURCE=0 (lintian checks the
# QEMU package but not its source package, whose ~10000 files of QEMU take
# it minutes: the deb suite's budget), VPMU_CACHE (make qemu's cache,
# ~/.cache/vpmu).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$ROOT/build-deb
LINTIAN=1
WHAT=()
while [ $# -gt 0 ]; do
    case $1 in
    --out) OUT=$(realpath -m "$2"); shift 2 ;;
    --no-lintian) LINTIAN=0; shift ;;
    vpmu | qemu) WHAT+=("$1"); shift ;;
    *) echo "usage: $0 [--out DIR] [--no-lintian] [vpmu] [qemu]" >&2; exit 2 ;;
    esac
done
[ ${#WHAT[@]} -gt 0 ] || WHAT=(vpmu qemu)
cd "$ROOT"
export DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-parallel=2}
# meson prefixes the compiler with ccache where it is installed; a package
# build compiles everything itself (and shows whether it is reproducible).
export CCACHE_DISABLE=1
NICE=(nice -n "${VPMU_DEB_NICE:-10}")

log() { printf 'deb: %s\n' "$*"; }
die() { printf 'deb: error: %s\n' "$*" >&2; exit 1; }

# elapsed START: seconds since START (a $SECONDS value), as "42s".
elapsed() { printf '%ds' $((SECONDS - $1)); }

# show_fail LOG: the end of a failed step's log, and where the whole one is.
show_fail() {
    tail -n 40 "$1" | sed 's/^/    | /' >&2
    printf 'deb: full log: %s\n' "$1" >&2
}

as_root() {
    if [ "$(id -u)" = 0 ]; then
        "$@"
    elif command -v sudo >/dev/null; then
        sudo "$@"
    else
        die "not root and no sudo: cannot run $*"
    fi
}

# tools: what every package build needs on this host, installed if missing.
tools() {
    local p missing=()
    for p in dpkg-dev debhelper lintian fakeroot xz-utils git; do
        [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return
    log "installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y \
        --no-install-recommends "${missing[@]}" >"$OUT/apt.log" 2>&1 ||
        { show_fail "$OUT/apt.log"; die "apt-get install failed"; }
}

# build_deps TREE: apt-get build-dep for an unpacked source TREE if
# dpkg-checkbuilddeps finds something missing.
build_deps() {
    (cd "$1" && dpkg-checkbuilddeps) >/dev/null 2>&1 && return
    log "installing the build dependencies of $(basename "$1")"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get build-dep -y \
        --no-install-recommends "$1" >"$OUT/apt.log" 2>&1 ||
        { show_fail "$OUT/apt.log"; die "apt-get build-dep failed"; }
}

# orig_vpmu DIR UPSTREAM: DIR/vpmu_UPSTREAM.orig.tar.xz, HEAD's files but
# debian/ (git archive: every mtime the commit's time, so one commit gives
# one tarball).  Uncommitted changes are not in it; the packaging (debian/)
# is taken from the work tree, so that it can be tried before it is
# committed.
orig_vpmu() {
    local dir=$1 up=$2
    if [ -n "$(git status --porcelain --untracked-files=no -- . ':!debian')" ]; then
        log "note: the work tree has uncommitted changes: HEAD ($(git rev-parse --short HEAD)) is packaged"
    fi
    git archive --format=tar --prefix="vpmu-$up/" HEAD -- . ':!debian' |
        xz -6 -T1 >"$dir/vpmu_$up.orig.tar.xz"
}

# lint LOG FILE...: lintian on .changes and .dsc files; its errors and
# warnings fail.
lint() {
    [ "$LINTIAN" = 1 ] || return 0
    local t=$SECONDS rc=0 log=$1
    shift
    lintian --fail-on error,warning --display-info "$@" 2>&1 |
        grep -v '^running with root privileges' >"$log" || true
    grep -q '^[EW]: ' "$log" && rc=1
    if [ -s "$log" ]; then
        sed 's/^/    lintian: /' "$log"
    fi
    [ "$rc" = 0 ] || die "lintian failed on $(basename "$1") (log: $log)"
    log "lintian: no errors, no warnings ($(grep -c '^I:' "$log" || true) info tags), $(elapsed "$t")"
}

build_vpmu() {
    local t=$SECONDS version up dir tree mver
    version=$(dpkg-parsechangelog -l debian/changelog -S Version)
    up=${version%-*}
    mver=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" meson.build | head -n1)
    [ "$up" = "$mver" ] ||
        die "debian/changelog's upstream version $up is not meson.build's $mver: add a changelog entry"
    dir=$OUT/vpmu
    tree=$dir/vpmu-$up
    rm -rf "$dir"
    mkdir -p "$dir"
    orig_vpmu "$dir" "$up"
    tar -xf "$dir/vpmu_$up.orig.tar.xz" -C "$dir"
    cp -r debian "$tree/debian"
    build_deps "$tree"
    log "vpmu $version: dpkg-buildpackage in ${dir#"$ROOT"/}"
    (cd "$tree" && "${NICE[@]}" dpkg-buildpackage -us -uc) >"$dir/build.log" 2>&1 ||
        { show_fail "$dir/build.log"; die "dpkg-buildpackage of vpmu failed"; }
    log "vpmu $version built, $(elapsed "$t"): $(cd "$dir" && echo *.deb)"
    lint "$dir/lintian.log" "$dir/vpmu_${version}_$(dpkg --print-architecture).changes"
}

build_qemu() {
    local t=$SECONDS version qver dir args=()
    compgen -G "$OUT/vpmu/libvpmu-dev_*.deb" >/dev/null ||
        die "no vpmu packages in $OUT/vpmu: make deb builds them first (scripts/make-deb.sh vpmu qemu)"
    version=$(dpkg-parsechangelog -l packaging/qemu-vpmu/debian/changelog -S Version)
    # Debian's qemu that version is made of: 10.2.2+ds-1+vpmu... is
    # 1:10.2.2+ds-1.
    qver=1:${version%%+vpmu*}
    log "make qemu (VPMU_QEMU_VERSION=$qver): Debian's source, the ccache"
    VPMU_QEMU_VERSION=$qver "$ROOT/scripts/build-qemu.sh" >"$OUT/make-qemu.log" 2>&1 ||
        { show_fail "$OUT/make-qemu.log"; die "make qemu failed"; }
    [ "${VPMU_DEB_CCACHE:-1}" = 1 ] || args+=(--no-ccache)
    "${NICE[@]}" "$ROOT/scripts/make-deb-qemu.py" --out "$OUT" \
        --vpmu-debs "$OUT/vpmu" "${args[@]}" || die "the QEMU package failed"
    dir=$OUT/qemu
    log "qemu-vpmu $version: $(elapsed "$t") in all"
    args=("$dir/qemu-vpmu_${version}_$(dpkg --print-architecture).changes")
    [ "${VPMU_DEB_LINT_QEMU_SOURCE:-1}" = 0 ] || args+=("$dir/qemu-vpmu_${version}.dsc")
    lint "$dir/lintian.log" "${args[@]}"
}

mkdir -p "$OUT"
tools
for w in "${WHAT[@]}"; do
    case $w in
    vpmu) build_vpmu ;;
    qemu) build_qemu ;;
    esac
done
