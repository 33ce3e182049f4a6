#!/usr/bin/env bash
# Install the Debian packages vpmu's build and tests need, if any is missing.
# Cheap when everything is there: one dpkg query per package, no apt call.
set -euo pipefail

PACKAGES=(meson ninja-build pkg-config gcc check libsubunit-dev libglib2.0-dev
          valgrind)

if ! command -v dpkg >/dev/null 2>&1; then
    echo "deps: no dpkg here (not Debian?); install these yourself:" \
         "${PACKAGES[*]}" >&2
    exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
    # dpkg -s also succeeds for removed packages that left config files.
    if ! dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed$'; then
        missing+=("$p")
    fi
done
if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "deps: missing ${missing[*]}; run as root or install sudo" >&2
        exit 1
    fi
    sudo=(sudo)
fi

echo "deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
