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
# fetch NAME [VERSION]: print the path of NAME_VERSION_amd64.deb in the cache,
# downloading it first if it is not there.
fetch() {
    local name=$1 ver=${2:-} deb
    if [[ -z $ver ]]; then
        deb=$(cached "$name")
        [[ -n $deb ]] && { printf '%s\n' "$deb"; return 0; }
        ver=$(candidate "$name")
    fi
    [[ -n $ver && $ver != "(none)" ]] || die "no installable version of $name"
    deb=$cache/${name}_${ver//:/%3a}_amd64.deb
    [[ -f $deb ]] || deb=$cache/${name}_${ver//:/%3a}_all.deb
    if [[ ! -f $deb ]]; then
        log "downloading $name $ver"
        if ! (cd "$cache" && "${apt_dl[@]}" "$name=$ver" >&2); then
            [[ ! -e $work/apt-updated ]] || die "cannot download $name=$ver"
            log "download failed; running apt-get update once"
            touch "$work/apt-updated"
            apt-get update -q >&2 || die "apt-get update failed"
            (cd "$cache" && "${apt_dl[@]}" "$name=$ver" >&2) ||
                die "cannot download $name=$ver"
        fi
        deb=$(compgen -G "$cache/${name}_${ver//:/%3a}_*.deb" | head -n1) ||
            die "apt-get download left no .deb for $name"
    fi
    printf '%s\n' "$deb"
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
