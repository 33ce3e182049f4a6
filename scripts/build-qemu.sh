#!/usr/bin/env bash
# Build qemu-system-x86_64 from Debian's QEMU 10.2 source (sid's, built on
# bookworm) plus the patch series in qemu-patches/, linked against this
# tree's libvpmu.
# What `make qemu` runs; docs/qemu.md explains it.
#
#   1. libvpmu: static, PIC, installed into the cache's libvpmu-prefix
#      (pkg-config: libvpmu), which QEMU's cached build links.
#   2. The Debian source (VPMU_QEMU_VERSION), fetched with apt-get source
#      into the cache (system apt lists untouched), kept, unpacked once into
#      a git repository tagged debian-pristine.
#   3. qemu-patches/*.patch applied with git am --3way when the series changed
#      (sha256 recorded in applied-series); only files whose content changes
#      are rewritten, so ninja rebuilds only what the change touches.
#   4. configure once, with packaging/qemu-vpmu/debian/vpmu-configure (the
#      configuration of make deb's QEMU package, in the same place: the
#      source tree's b/qemu), then ninja qemu-system-x86_64, through ccache
#      (VPMU_CACHE/ccache) where it is installed: make deb's package build
#      reuses what is compiled here.
#   5. The binary is linked to build/qemu/qemu-system-x86_64.
#
# Environment:
#   VPMU_CACHE          cache root (default ~/.cache/vpmu)
#   VPMU_QEMU_VERSION   Debian source version to build (default: one of
#                       QEMU 10.2, which the series is for: 1:10.2.2+ds-1,
#                       which it was made on, if cached or still served by
#                       bookworm's or sid's sources, else the newest 10.2
#                       they serve; section 2 below)
#   VPMU_QEMU_PATCHES   the series to apply (default qemu-patches/)
#   VPMU_QEMU_DISCARD=1 let a series change discard uncommitted edits in the
#                       cache's src tree (otherwise the script refuses)
#   VPMU_NO_DEPS=1      do not run scripts/install-deps.sh qemu
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
CACHE=${VPMU_CACHE:-$HOME/.cache/vpmu}
PATCHDIR=${VPMU_QEMU_PATCHES:-$ROOT/qemu-patches}
LIBBUILD=$ROOT/build/qemu-lib
# Outside the clone, like the QEMU build that links it: QEMU's configured
# build remembers this path, and every clone (CI's fresh one too) must hand
# it the libvpmu of its own tree.
PREFIX=$CACHE/libvpmu-prefix
OUT=$ROOT/build/qemu

# Fixed identity and date for the commits the script makes, so the same
# source and series always give the same commit ids.
GIT_ID=(-c user.name="vpmu build-qemu" -c user.email="vpmu-build@localhost"
        -c gc.auto=0 -c advice.detachedHead=false)
FIXED_DATE="2000-01-01T00:00:00+0000"

# QEMU's configuration: the one of make deb's package (prefix /usr,
# Debian's firmware directories, /etc/qemu, the features named one by
# one, dpkg-buildflags' flags), shared so that both compile the same.
CONFIGURE=$ROOT/packaging/qemu-vpmu/debian/vpmu-configure

log() {
    printf 'qemu: %s\n' "$*"
}

die() {
    printf 'qemu: error: %s\n' "$*" >&2
    exit 1
}

# elapsed START: "42s" or "3m05s" since START (a $SECONDS value).
elapsed() {
    local s=$((SECONDS - $1))
    if [ "$s" -ge 60 ]; then
        printf '%dm%02ds' $((s / 60)) $((s % 60))
    else
        printf '%ds' "$s"
    fi
}

# show_fail LOG: the end of a failed step's log, and where the whole one is.
show_fail() {
    tail -n 40 "$1" | sed 's/^/    | /' >&2
    printf 'qemu: full log: %s\n' "$1" >&2
}

# private_meson VERSION: a venv (on the system's python3 and its packages)
# whose meson is bookworm-backports' (>= VERSION), under the cache; prints
# its directory.
private_meson() {
    local venv=$CACHE/meson-venv deb apt
    if "$venv/bin/python3" -c "import sys, mesonbuild.coredata as c
sys.exit(tuple(map(int, c.version.split('.')[:2])) < tuple(map(int, '$1'.split('.')[:2])))" \
            2>/dev/null; then
        printf '%s\n' "$venv"
        return
    fi
    log "meson >= $1: bookworm-backports' meson into $venv" >&2
    mkdir -p "$CACHE/backports/sources" "$CACHE/backports/lists/partial" \
        "$CACHE/backports/cache/archives/partial" "$CACHE/backports/dl"
    printf 'deb http://deb.debian.org/debian bookworm-backports main\n' \
        >"$CACHE/backports/sources/backports.list"
    apt=(apt-get -o Dir::Etc::SourceList=/dev/null
         -o "Dir::Etc::SourceParts=$CACHE/backports/sources"
         -o "Dir::State::Lists=$CACHE/backports/lists"
         -o "Dir::Cache=$CACHE/backports/cache" -o APT::Sandbox::User=root)
    { "${apt[@]}" update &&
      (cd "$CACHE/backports/dl" && rm -f meson_*.deb && "${apt[@]}" download meson); } \
        >"$CACHE/backports/fetch.log" 2>&1 ||
        { show_fail "$CACHE/backports/fetch.log"; die "fetching meson from bookworm-backports failed"; }
    deb=$(compgen -G "$CACHE/backports/dl/meson_*.deb" | head -n1)
    rm -rf "$venv" "$CACHE/backports/meson"
    dpkg-deb -x "$deb" "$CACHE/backports/meson"
    /usr/bin/python3 -m venv --system-site-packages "$venv" >&2 ||
        die "python3 -m venv failed (package python3-venv)"
    cp -r "$CACHE/backports/meson/usr/lib/python3/dist-packages/." \
        "$("$venv/bin/python3" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/"
    printf '%s\n' "$venv"
}

# ---------------------------------------------------------------- deps
if [ "${VPMU_NO_DEPS:-0}" != 1 ]; then
    scripts/install-deps.sh qemu
fi
for tool in git meson ninja pkg-config apt-get dpkg-source flock ld objcopy ar readelf; do
    command -v "$tool" >/dev/null 2>&1 ||
        die "$tool not found (scripts/install-deps.sh qemu installs it)"
done

# ---------------------------------------------------------------- 1. libvpmu
# One run at a time per cache: two would rewrite libvpmu-prefix under each
# other (a test's guest-build beside a hand-run make qemu).  The second
# waits.
mkdir -p "$CACHE"
exec 8>"$CACHE/.build-qemu.lock"
if ! flock -n 8; then
    log "another build-qemu.sh is running on $CACHE: waiting for it"
    flock 8
fi
t=$SECONDS
log "libvpmu: static PIC library into ${PREFIX#"$ROOT"/}"
mkdir -p "$ROOT/build"
if [ ! -f "$LIBBUILD/meson-private/coredata.dat" ]; then
    # --libdir=lib: the same path everywhere (Debian's default would be
    # lib/x86_64-linux-gnu).  both_libraries() ignores default_library, so
    # the shared library is removed from the prefix below.
    meson setup "$LIBBUILD" --prefix="$PREFIX" --libdir=lib \
        -Ddefault_library=static -Db_staticpic=true >"$ROOT/build/qemu-lib.log" 2>&1 ||
        { show_fail "$ROOT/build/qemu-lib.log"; die "meson setup of libvpmu failed"; }
elif ! meson configure "$LIBBUILD" -Dprefix="$PREFIX" >"$ROOT/build/qemu-lib.log" 2>&1; then
    # An older tree installed elsewhere: point it at this prefix.
    show_fail "$ROOT/build/qemu-lib.log"
    die "meson configure of libvpmu failed"
fi
# Only the library (tests, fuzz and examples are not needed here; all of it
# if meson.build no longer has those targets), then install without
# rebuilding, and only the library's files (--tags devel: the archive,
# headers, libvpmu.pc): vpmu-helper, its units and the docs are installed
# too (make install), and were not built here.
if ! { meson compile -C "$LIBBUILD" vpmu:static_library vpmu:shared_library ||
       meson compile -C "$LIBBUILD"; } >"$ROOT/build/qemu-lib.log" 2>&1 ||
   ! meson install -C "$LIBBUILD" --no-rebuild --tags devel \
        >>"$ROOT/build/qemu-lib.log" 2>&1; then
    show_fail "$ROOT/build/qemu-lib.log"
    die "building libvpmu failed"
fi
# With no libvpmu.so in the prefix, -lvpmu from pkg-config links the .a and
# the QEMU binary does not depend on the repository at run time.
rm -f "$PREFIX"/lib/libvpmu.so*
# Give the archive the encapsulation the .so has through its version script:
# one relocatable object whose hidden symbols (everything but the VPMU_API
# functions) are made local, so QEMU code can neither collide with nor
# interpose on libvpmu's internal vpmu_* functions.  Its mtime is the
# compiled archive's, for the relink check below.
LIBA=$PREFIX/lib/libvpmu.a
tmp=$(mktemp -d)
ld -r --whole-archive -o "$tmp/libvpmu.o" "$LIBBUILD/libvpmu.a"
objcopy --localize-hidden "$tmp/libvpmu.o"
rm -f "$LIBA"
ar rcD "$LIBA" "$tmp/libvpmu.o"
rm -rf "$tmp"
touch -r "$LIBBUILD/libvpmu.a" "$LIBA"
if readelf -sW "$LIBA" | awk '$5 == "GLOBAL" && $6 != "DEFAULT" && $7 != "UND" { bad = 1 }
                              END { exit !bad }'; then
    die "libvpmu.a still has global non-default-visibility symbols"
fi
if [ ! -f "$LIBA" ] || [ ! -f "$PREFIX/lib/pkgconfig/libvpmu.pc" ]; then
    die "libvpmu.a or libvpmu.pc missing under $PREFIX/lib"
fi
export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
log "libvpmu: $(pkg-config --modversion libvpmu), $(elapsed "$t")"

# ---------------------------------------------------------------- 2. source
# The QEMU the series is for: 10.2, whose source Debian serves in sid.  The
# series was made on SERIES_VERSION; another Debian revision or 10.2.x
# release is taken when sid no longer has it (Debian's archive moves; git
# am --3way says so clearly if the series does not apply to it).  Order:
# VPMU_QEMU_VERSION if set; else a source already in the cache
# (SERIES_VERSION first, then the newest 10.2), asking apt nothing; else
# what sid's deb-src index lists (scripts/debpick.py source: SERIES_VERSION
# first, then the newest 10.2), each tried in turn, since an index can list
# files the mirror no longer has.  The firmware stays the installed
# qemu-system-data's (bookworm's).
SERIES=10.2
SERIES_VERSION=1:10.2.2+ds-1
APTDIR=$CACHE/srcapt
APT_OPTS=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$APTDIR/sources"
          -o "Dir::State::Lists=$APTDIR/lists" -o "Dir::Cache=$APTDIR/cache")
APT=(apt-get "${APT_OPTS[@]}" -o APT::Sandbox::User=root)

# key VERSION: the cache directory's name (no epoch: 10.2.2+ds-1).
key() { printf '%s\n' "${1#*:}"; }

# cached_versions: the 10.2 sources in the cache, SERIES_VERSION first,
# then the newest.
cached_versions() {
    local d v all=()
    for d in "$CACHE"/qemu/*/dl/qemu_*.dsc; do
        [ -f "$d" ] || continue
        v=$(sed -n 's/^Version: *//p' "$d" | head -n1)
        case ${v#*:} in "$SERIES".*) all+=("$v") ;; esac
    done
    [ ${#all[@]} -gt 0 ] || return 0
    printf '%s\n' "${all[@]}" | grep -Fx -- "$SERIES_VERSION" || true
    printf '%s\n' "${all[@]}" | grep -Fvx -- "$SERIES_VERSION" | sort -rV || true
}

# fetch_source VERSION: apt-get source --download-only into its cache
# directory; status 1 (log kept) if apt cannot.
fetch_source() {
    local qdir=$CACHE/qemu/$(key "$1")
    mkdir -p "$qdir/dl"
    (cd "$qdir/dl" && "${APT[@]}" source --download-only "qemu=$1") >>"$qdir/fetch.log" 2>&1 &&
        [ -f "$qdir/dl/qemu_$(key "$1").dsc" ]
}

VERSION=${VPMU_QEMU_VERSION:-}
[ -n "$VERSION" ] || VERSION=$(cached_versions | head -n1)
if [ -z "$VERSION" ] || [ ! -f "$CACHE/qemu/$(key "$VERSION")/dl/qemu_$(key "$VERSION").dsc" ]; then
    t=$SECONDS
    log "fetching a Debian source of qemu $SERIES (apt-get source, private lists in $APTDIR)"
    mkdir -p "$APTDIR/sources" "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial"
    rm -f "$APTDIR/sources/"*
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
            >"$APTDIR/sources/src.sources"
    fi
    if [ -f /etc/apt/sources.list ]; then
        sed -n 's/^deb \(.*\)$/deb-src \1/p' /etc/apt/sources.list >"$APTDIR/sources/src.list"
    fi
    # A newer QEMU than the release's comes from sid's sources.
    printf 'deb-src http://deb.debian.org/debian sid main\n' >"$APTDIR/sources/sid.list"
    "${APT[@]}" update >"$CACHE/srcapt.log" 2>&1 ||
        { show_fail "$CACHE/srcapt.log"; die "apt-get update (deb-src) failed"; }
    if [ -n "${VPMU_QEMU_VERSION:-}" ]; then
        versions=$VPMU_QEMU_VERSION
    else
        versions=$(python3 scripts/debpick.py "${APT_OPTS[@]}" source qemu "$SERIES" \
                   --prefer "$SERIES_VERSION" 2>&1) || die "${versions#debpick: error: }"
    fi
    VERSION=
    for v in $versions; do
        if fetch_source "$v"; then VERSION=$v; break; fi
        log "apt-get source qemu=$v failed (log: $CACHE/qemu/$(key "$v")/fetch.log)"
    done
    [ -n "$VERSION" ] || die "no Debian source of qemu $SERIES could be fetched (tried: $(echo $versions))"
    log "fetched qemu $VERSION, $(elapsed "$t")"
fi
[ "$VERSION" = "$SERIES_VERSION" ] ||
    log "note: qemu $VERSION, not $SERIES_VERSION that the series was made on"
KEY=$(key "$VERSION")
QDIR=$CACHE/qemu/$KEY
SRC=$QDIR/src
# In the source tree, where debian/rules of make deb's package builds too
# (b/qemu: the same relative paths, so the same compile commands); git
# ignores it (.git/info/exclude).  QDIR/build links to it.
BUILD=$SRC/b/qemu
DL=$QDIR/dl
STATE=$QDIR/applied-series
DSC=$DL/qemu_${KEY}.dsc
mkdir -p "$QDIR"

# One run at a time per QEMU version (src, build and applied-series).
exec 9>"$QDIR/.lock"
flock -n 9 || die "another build-qemu.sh is using $QDIR"

if ! git -C "$SRC" rev-parse -q --verify 'refs/tags/debian-pristine^{commit}' >/dev/null 2>&1; then
    t=$SECONDS
    log "unpacking $(basename "$DSC") (dpkg-source -x applies Debian's patches) into a git repository"
    rm -rf "$SRC" "$QDIR/src.tmp" "$STATE" "$QDIR/build"
    dpkg-source -x --no-copy "$DSC" "$QDIR/src.tmp" >"$QDIR/unpack.log" 2>&1 ||
        { show_fail "$QDIR/unpack.log"; die "dpkg-source -x failed"; }
    (
        cd "$QDIR/src.tmp"
        git init -q -b debian
        # -f: QEMU's .gitignore matches files of the Debian tree
        # (debian/patches/*.patch, ...); the pristine commit has them all.
        git add -A -f
        GIT_AUTHOR_DATE=$FIXED_DATE GIT_COMMITTER_DATE=$FIXED_DATE \
            git "${GIT_ID[@]}" commit -q -m "Debian qemu $VERSION, as unpacked by dpkg-source -x"
        git tag debian-pristine
        printf '/b/\n' >>.git/info/exclude
    ) >>"$QDIR/unpack.log" 2>&1 || { show_fail "$QDIR/unpack.log"; die "git import failed"; }
    mv "$QDIR/src.tmp" "$SRC"
    log "src ready, $(elapsed "$t")"
fi

# ---------------------------------------------------------------- 3. series
PATCHES=()
if [ -d "$PATCHDIR" ]; then
    mapfile -t PATCHES < <(find "$PATCHDIR" -maxdepth 1 -type f -name '*.patch' | LC_ALL=C sort)
fi
# Name and content of every patch, in order (an empty series hashes the
# empty input).
SERIES=$(for p in "${PATCHES[@]}"; do printf '%s\n' "${p##*/}"; cat "$p"; done |
         sha256sum | cut -d' ' -f1)
OLD_SERIES=$(sed -n 's/^series //p' "$STATE" 2>/dev/null || true)
OLD_HEAD=$(sed -n 's/^head //p' "$STATE" 2>/dev/null || true)

if [ "$SERIES" = "$OLD_SERIES" ]; then
    log "series unchanged (${#PATCHES[@]} patches, sha256 ${SERIES:0:12})"
    if [ "$(git -C "$SRC" rev-parse HEAD)" != "$OLD_HEAD" ] ||
       [ -n "$(git -C "$SRC" status --porcelain)" ]; then
        log "note: $SRC has commits or edits that are not in qemu-patches/; building them as they are"
    fi
else
    t=$SECONDS
    log "applying ${#PATCHES[@]} patches from ${PATCHDIR#"$ROOT"/}/ (series sha256 ${SERIES:0:12})"
    dirty=$(git -C "$SRC" status --porcelain)
    if [ -n "$dirty" ] && [ "${VPMU_QEMU_DISCARD:-0}" != 1 ]; then
        printf '%s\n' "$dirty" | head -n 20 | sed 's/^/    /' >&2
        die "$SRC has uncommitted changes (above) and the series changed;" \
            "commit them and git format-patch them into qemu-patches/," \
            "or rerun with VPMU_QEMU_DISCARD=1 to drop them"
    fi
    # Apply in a scratch worktree from debian-pristine, then check the result
    # out in src: git rewrites only the files whose content differs from
    # what src has now, so their mtimes alone change and ninja recompiles
    # only what the series change touches.  src is untouched if a patch
    # fails.
    WT=$QDIR/series-worktree
    git -C "$SRC" worktree remove --force "$WT" >/dev/null 2>&1 || true
    rm -rf "$WT"
    git -C "$SRC" worktree prune
    git -C "$SRC" worktree add -q --detach "$WT" debian-pristine
    for p in "${PATCHES[@]}"; do
        if ! GIT_COMMITTER_DATE=$FIXED_DATE git -C "$WT" "${GIT_ID[@]}" am -q --3way \
                --resolvemsg="qemu: git am failed; aborting it" "$p"; then
            git -C "$WT" am --abort >/dev/null 2>&1 || true
            git -C "$SRC" worktree remove --force "$WT" >/dev/null 2>&1 || rm -rf "$WT"
            git -C "$SRC" worktree prune
            die "patch qemu-patches/${p##*/} does not apply (git am --3way, on" \
                "debian-pristine plus the patches before it); src and build are unchanged." \
                "To fix it: cd $SRC && git checkout -b fix debian-pristine &&" \
                "git am --3way $PATCHDIR/*.patch, resolve, git am --continue," \
                "then export the series again (docs/qemu.md)"
        fi
    done
    NEW_HEAD=$(git -C "$WT" rev-parse HEAD)
    git -C "$SRC" worktree remove --force "$WT"
    CUR=$(git -C "$SRC" rev-parse HEAD)
    if [ "$CUR" != "$OLD_HEAD" ] && [ "$CUR" != "$(git -C "$SRC" rev-parse debian-pristine)" ] &&
       [ "$(git -C "$SRC" rev-parse "$CUR^{tree}")" != "$(git -C "$SRC" rev-parse "$NEW_HEAD^{tree}")" ]; then
        git -C "$SRC" branch -f previous-head "$CUR"
        log "note: src's HEAD had commits not in the new series; kept as branch previous-head"
    fi
    git -C "$SRC" checkout -q -f -B series "$NEW_HEAD"
    git -C "$SRC" clean -fdq
    {
        printf 'series %s\n' "$SERIES"
        printf 'head %s\n' "$NEW_HEAD"
        for p in "${PATCHES[@]}"; do printf 'patch %s\n' "${p##*/}"; done
    } >"$STATE"
    log "src at $(git -C "$SRC" log -1 --format='%h %s' | cut -c1-70), $(elapsed "$t")"
fi

# ---------------------------------------------------------------- 4. build
# The build directory moved from QDIR/build into src/b/qemu: a tree of the
# old layout is removed (it is rebuilt there once), QDIR/build is a link.
grep -qx '/b/' "$SRC/.git/info/exclude" 2>/dev/null ||
    printf '/b/\n' >>"$SRC/.git/info/exclude"
if [ -d "$QDIR/build" ] && [ ! -L "$QDIR/build" ]; then
    log "the build directory is now src/b/qemu (make deb's layout): removing $QDIR/build"
    rm -rf "$QDIR/build"
fi
ln -sfn src/b/qemu "$QDIR/build"
EXTRA=()
# QEMU 10 needs meson >= 1.5, bookworm has 1.0: bookworm-backports' meson,
# unpacked into the cache and put in a venv of its own that configure uses
# (--python), never installed over the system's.
need=$(sed -n "1s/.*meson_version: *'>=\([0-9.]*\)'.*/\1/p" "$SRC/meson.build")
have=$(meson --version)
if [ -n "$need" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n1)" != "$need" ]; then
    EXTRA+=(--python="$(private_meson "$need")/bin/python3")
fi
if grep -q libvpmu "$SRC/meson_options.txt"; then
    grep -q -- '--enable-libvpmu' "$SRC/scripts/meson-buildoptions.sh" ||
        die "the series adds option libvpmu to meson_options.txt but not to" \
            "scripts/meson-buildoptions.sh (regenerate it: make update-buildoptions)"
fi
# Through ccache where it is installed, with a cache of its own that make
# deb's package build reads: the compile commands are the same, but for
# the absolute paths into the source tree (QEMU's -iquote), which ccache
# hashes relative to it (CCACHE_BASEDIR), as the package build does.
# ccache also hashes the locale variables (the compiler's messages), so
# they are fixed here as in debian/rules.  It does not hash the
# -ffile-prefix-map values: its namespace is the configuration's hash, so
# that a changed map cannot be served objects made with the old one.
# (make-deb-qemu.py's ccache_namespace() gives the package build the same.)
CONF_HASH=$(sha256sum <"$CONFIGURE" | cut -c1-16)
if [ -x /usr/lib/ccache/cc ]; then
    export PATH=/usr/lib/ccache:$PATH CCACHE_DIR=$CACHE/ccache CCACHE_BASEDIR=$SRC
    export CCACHE_NAMESPACE=vpmu-$CONF_HASH
fi
export LC_ALL=C.UTF-8
unset LANG LC_CTYPE LC_MESSAGES
mkdir -p "$BUILD"
# Reconfigure when the configuration, dpkg's flags or the libvpmu it links
# (its prefix) change.
FLAGS_KEY="$CONF_HASH ${EXTRA[*]} libvpmu-prefix=$PREFIX
$(cd "$SRC" && DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get CFLAGS)"
if [ ! -f "$BUILD/build.ninja" ] ||
   [ "$(cat "$BUILD/.vpmu-configure-flags" 2>/dev/null)" != "$FLAGS_KEY" ]; then
    t=$SECONDS
    log "configure: ${CONFIGURE#"$ROOT"/} ${EXTRA[*]}"
    rm -f "$BUILD/.vpmu-configure-flags"
    (cd "$BUILD" && "$CONFIGURE" "$SRC" "${EXTRA[@]}") >"$QDIR/configure.log" 2>&1 ||
        { show_fail "$QDIR/configure.log"; die "QEMU configure failed"; }
    printf '%s\n' "$FLAGS_KEY" >"$BUILD/.vpmu-configure-flags"
    log "configured, $(elapsed "$t")"
fi

BIN=$BUILD/qemu-system-x86_64
# ninja does not know about libraries found by pkg-config: relink by hand.
if [ -f "$BIN" ] && [ "$LIBA" -nt "$BIN" ]; then
    log "libvpmu.a is newer than the binary: relinking"
    rm -f "$BIN"
fi
if [ ! -f "$BIN" ] && [ ! -f "$BUILD/.ninja_log" ]; then
    log "first build of qemu-system-x86_64: about 17 minutes on 2 cores"
else
    log "building qemu-system-x86_64 (incremental)"
fi
t=$SECONDS
# Progress: every line for small builds, else one line per 10%; warnings,
# errors and failed commands always.  The full output is in build.log.
if ! ninja -C "$BUILD" qemu-system-x86_64 2>&1 | tee "$QDIR/build.log" | awk '
    /^\[[0-9]+\/[0-9]+\] / {
        fail = 0
        split(substr($1, 2), a, "/"); n = a[1] + 0; total = a[2] + 0
        pct = int(100 * n / total)
        if (total <= 40 || n == total || int(pct / 10) > last) {
            printf "    %3d%% %s\n", pct, $0
            last = int(pct / 10)
        }
        fflush(); next
    }
    /^FAILED: / { fail = 1 }
    fail || /warning:|error:|^ninja: / { print "    " $0; fflush() }'; then
    printf 'qemu: full log: %s\n' "$QDIR/build.log" >&2
    die "ninja failed"
fi
log "built in $(elapsed "$t")"

# ---------------------------------------------------------------- 5. result
mkdir -p "$OUT"
rm -f "$OUT/qemu-system-x86_64"
ln "$BIN" "$OUT/qemu-system-x86_64" 2>/dev/null || cp -p "$BIN" "$OUT/qemu-system-x86_64"
cat >"$OUT/README" <<EOF
qemu-system-x86_64 here is a link to (or copy of) the binary built by
\`make qemu\` (scripts/build-qemu.sh, docs/qemu.md) in

    $BUILD

from the Debian qemu $VERSION source in

    $SRC        (git; tag debian-pristine, branch series)

with the series ${PATCHDIR#"$ROOT"/}/ (sha256 $SERIES):
$(for p in "${PATCHES[@]}"; do printf '    %s\n' "${p##*/}"; done)
Firmware comes from the qemu-system-x86 package:

    build/qemu/qemu-system-x86_64 -L /usr/share/qemu -L /usr/share/seabios -net none ...
EOF
log "binary: ${OUT#"$ROOT"/}/qemu-system-x86_64"
"$OUT/qemu-system-x86_64" --version | head -n 1 | sed 's/^/qemu: /'
