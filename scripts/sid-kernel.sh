#!/usr/bin/env bash
# sid-kernel.sh: Debian sid's current kernel as .debs, for an L1 whose KVM
# is newer than bookworm's 6.1 (PerfMonV2 emulation since 6.4, the mediated
# vPMU since 7.0): bench/nested-kvm.sh and the nested suite's sid run.
#
#   scripts/sid-kernel.sh LOGFILE
#
# Prints the .deb files (linux-image-<ver>, and the linux-binary-<ver> and
# linux-modules-<ver> it depends on, all of one version) on stdout, space-
# separated, downloaded into ${VPMU_CACHE:-~/.cache/vpmu}/debs if missing.
# apt runs with a private configuration: the system's sources with the
# suite changed to sid (security and -updates suites left out), lists and
# cache under .../sidapt; /etc/apt is not touched.  The lists are updated
# at most once a day.  Whatever version sid has today is taken (its
# archive moves every week); the log says which.
# Exit 1 with the reason as the last line on stderr when sid cannot be
# reached or its packages do not fit together (the caller skips).
set -uo pipefail

LOG=${1:?usage: scripts/sid-kernel.sh LOGFILE}
cache=${VPMU_CACHE:-$HOME/.cache/vpmu}
a=$cache/sidapt
fail() { echo "sid-kernel: $*" >&2; exit 1; }
log() { echo "sid-kernel: $*" >&2; }

mkdir -p "$a/sources" "$a/lists/partial" "$a/cache/archives/partial" "$cache/debs"
: >"$LOG"
rm -f "$a/sources/"*
if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    # deb822: keep the stanzas of the main archive, Suites: sid.
    awk 'BEGIN { RS = ""; ORS = "\n\n" }
         !/Suites:[^\n]*-security/ { sub(/Suites:[^\n]*/, "Suites: sid"); print }' \
        /etc/apt/sources.list.d/debian.sources >"$a/sources/sid.sources"
fi
if [[ -f /etc/apt/sources.list ]]; then
    awk '$1 == "deb" && $0 !~ /security/ { $3 = "sid"; print }' /etc/apt/sources.list |
        sort -u >"$a/sources/sid.list"
fi
[[ -s $a/sources/sid.sources || -s $a/sources/sid.list ]] ||
    fail "no Debian sources in /etc/apt to derive sid's from"
opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$a/sources"
      -o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a/cache")
apt=(apt-get "${opts[@]}" -q)
[[ $(id -u) != 0 ]] || apt+=(-o APT::Sandbox::User=root)
if [[ -z $(find "$a/lists" -maxdepth 1 -name '*_sid_InRelease' -mtime -1 2>/dev/null) ]]; then
    "${apt[@]}" update >>"$LOG" 2>&1 ||
        fail "apt-get update (sid): $(grep -E '^(E|W):' "$LOG" | head -n1)"
fi
ac=(apt-cache "${opts[@]}")
img=$("${ac[@]}" depends linux-image-amd64 2>/dev/null |
      sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -n1)
[[ -n $img ]] || fail "sid has no linux-image-amd64 -> linux-image-<ver> dependency"
ver=$("${ac[@]}" policy "$img" | awk '/Candidate:/ { print $2 }')
# Newer Debian kernels split the image package: linux-binary-* (vmlinuz)
# and linux-modules-* (modules), of the image's own version (its Depends
# say "= VER"): kvm-amd.ko loads only into the build it was made with.
# When sid has moved on for one of them, this fails with the package named.
deps=$("${ac[@]}" depends "$img" 2>/dev/null |
       sed -n 's/^ *Depends: \(linux-\(binary\|modules\)-[^ ]*\)$/\1/p' | sort -u)
kdebs=
for d in $img $deps; do
    deb=$(compgen -G "$cache/debs/${d}_${ver//:/%3a}_*.deb" | head -n1)
    if [[ -z $deb ]]; then
        log "downloading $d $ver (sid)"
        (cd "$cache/debs" && "${apt[@]}" download "$d=$ver") >>"$LOG" 2>&1 ||
            fail "apt-get download $d=$ver: $(grep -E '^E:' "$LOG" | tail -n1)"
        deb=$(compgen -G "$cache/debs/${d}_${ver//:/%3a}_*.deb" | head -n1)
    fi
    [[ -n $deb ]] || fail "no .deb of $d after apt-get download"
    kdebs+="${kdebs:+ }$deb"
done
log "$img $ver (sid): $(for d in $kdebs; do basename "$d"; done | paste -sd' ')"
echo "$kdebs"
