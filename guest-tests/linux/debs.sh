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
