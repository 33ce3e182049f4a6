# The .deb cache of the guest images (sourced by linux/build-image.sh and
# nested/build-l1.sh): the caller defines log, die, cache, work and stage.
# shellcheck shell=bash

candidate() {
    apt-cache policy "$1" | awk '/Candidate:/ { print $2 }'
}

# cached NAME: the newest NAME_*.deb in the cache, unless VPMU_REFRESH=1.
cached() {
    [[ ${VPMU_REFRESH:-0} == 1 ]] && return 0
    compgen -G "$cache/${1}_*.deb" | sort -V | tail -n1 || true
}

# The library packages (lib*, zlib1g) a .deb depends on directly.
lib_depends() {
    dpkg-deb -f "$1" Pre-Depends Depends | sed 's/^[^:]*: //' | tr ',' '\n' |
        sed 's/|.*//; s/(.*)//; s/:any//; s/ //g' | grep -E '^(lib|zlib)' || true
}

# As root, apt downloads as _apt, which cannot write to a cache in $HOME.
apt_dl=(apt-get download -q)
[[ $(id -u) != 0 ]] || apt_dl+=(-o APT::Sandbox::User=root)

# apt_update_once: refresh the system's apt lists, once per build (status 1
# if this build did so already).  Lists that are days old name versions
# the archive has dropped since (bookworm-security keeps one of each).
apt_update_once() {
    [[ ! -e $work/apt-updated ]] || return 1
    log "apt's lists may be stale: running apt-get update once"
    touch "$work/apt-updated"
    apt-get update -q >&2 || die "apt-get update failed"
}

# fetch_try NAME [VERSION]: print the path of NAME_VERSION_*.deb in the
# cache, downloading it first if it is not there; status 1 if apt cannot.
# Without VERSION: the newest cached NAME (cached), else apt's candidate,
# asked again after an apt-get update.
fetch_try() {
    local name=$1 ver=${2:-} deb
    if [[ -z $ver ]]; then
        deb=$(cached "$name")
        [[ -n $deb ]] && { printf '%s\n' "$deb"; return 0; }
        ver=$(candidate "$name")
    fi
    deb=$(compgen -G "$cache/${name}_${ver//:/%3a}_*.deb" | head -n1 || true)
    [[ -z $deb ]] || { printf '%s\n' "$deb"; return 0; }
    if [[ -n $ver && $ver != "(none)" ]]; then
        log "downloading $name $ver"
        (cd "$cache" && "${apt_dl[@]}" "$name=$ver" >&2) || ver=
    else
        ver=
    fi
    if [[ -z $ver ]]; then
        # A pinned version is the caller's to choose again (debpick.py).
        [[ -z ${2:-} ]] && apt_update_once || return 1
        ver=$(candidate "$name")
        [[ -n $ver && $ver != "(none)" ]] || return 1
        log "downloading $name $ver"
        (cd "$cache" && "${apt_dl[@]}" "$name=$ver" >&2) || return 1
    fi
    deb=$(compgen -G "$cache/${name}_${ver//:/%3a}_*.deb" | head -n1) || return 1
    printf '%s\n' "$deb"
}

# fetch NAME [VERSION]: fetch_try, or stop the build naming the package.
fetch() {
    fetch_try "$@" || die "cannot download $1${2:+=$2} (apt-cache policy $1)"
}

declare -A staged=()
stage_pkg() {   # stage_pkg NAME [VERSION]
    local deb
    [[ -n ${staged[$1]:-} ]] && return 0
    deb=$(fetch "$@")
    dpkg-deb -x "$deb" "$stage"
    staged[$1]=$deb
}

# list_libs ELF...: the shared libraries each ELF file needs, as the staged
# loader resolves them.  The caller stages libc6 and sets ldso and libpath.
list_libs() {
    local f
    for f in "$@"; do "$ldso" --library-path "$libpath" --list "$f"; done
}

# stage_libs ELF...: stage the package of every shared library the ELF
# files need, until the staged loader finds them all in the stage (not
# found, or found outside it: the loader falls back to the host's default
# directories).  The host's dpkg database only names the package of a
# missing soname; no file comes from the host's /lib.
stage_libs() {
    local rounds=0 missing progress so pkg p d
    while :; do
        missing=$(list_libs "$@" | awk -v st="$stage/" '$1 !~ /^\// && $2 == "=>" &&
            ($3 == "not" || index($3, st) != 1) { print $1 }' | sort -u)
        [[ -z $missing ]] && return 0
        ((++rounds <= 8)) || die "unresolved: $missing"
        progress=0
        for so in $missing; do
            pkg=$(dpkg -S "/lib/$arch/$so" "/usr/lib/$arch/$so" 2>/dev/null |
                  grep -v '^diversion' | head -n1 | cut -d: -f1 || true)
            if [[ -n $pkg && -z ${staged[$pkg]:-} ]]; then
                log "$so: package $pkg (from the host's dpkg database)"
                stage_pkg "$pkg"; progress=1
            fi
        done
        if ((!progress)); then
            for p in "${!staged[@]}"; do
                for d in $(lib_depends "${staged[$p]}"); do
                    [[ -n ${staged[$d]:-} ]] || { stage_pkg "$d"; progress=1; }
                done
            done
        fi
        ((progress)) || die "cannot find a package for: $missing"
    done
}

# exact_depends DEB: "NAME VERSION" for each "NAME (= VERSION)" it depends on.
exact_depends() {
    dpkg-deb -f "$1" Pre-Depends Depends | sed 's/^[^:]*: //' | tr ',' '\n' |
        sed -n 's/^ *\([^ |(]*\)\(:any\)\{0,1\} *(= *\([^)]*\)).*/\1 \3/p'
}

# settle_exact: the newest cached .deb of each package is not always one
# upload's (a package added to the set later comes at apt's candidate), and
# packages of one source pin each other exactly (libvirt-daemon on
# "libvirt0 (= V)", libpapi-dev on libpapi7.0).  Where a staged package's
# exact Depends names another staged one at another version, the older of
# the two is staged again at the newer's version.
settle_exact() {
    local round p name ver have older newer deb changed
    for round in 1 2 3 4; do
        changed=0
        for p in "${!staged[@]}"; do
            while read -r name ver; do
                [[ -n ${staged[$name]:-} ]] || continue
                have=$(dpkg-deb -f "${staged[$name]}" Version)
                [[ $have != "$ver" ]] || continue
                if dpkg --compare-versions "$have" lt "$ver"; then
                    older=$name newer=$ver
                else
                    older=$p newer=$have
                fi
                log "$p wants $name (= $ver), $name $have is staged: $older $newer instead"
                deb=$(fetch "$older" "$newer")
                dpkg-deb -x "$deb" "$stage"
                staged[$older]=$deb
                changed=1
                # p's own Depends are read again next round.
                [[ $older != "$p" ]] || break
            done < <(exact_depends "${staged[$p]}")
        done
        ((changed)) || return 0
    done
    die "the staged packages' exact Depends do not settle: $(for p in "${!staged[@]}"; do
        printf '%s ' "$p=$(dpkg-deb -f "${staged[$p]}" Version)"; done)"
}
