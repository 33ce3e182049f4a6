# shellcheck shell=bash disable=SC2001  # sed on multi-line diagnostics
# tap.sh: the one TAP stream a guest suite's host script prints for meson
# (protocol 'tap').  Sourced by baremetal/run.sh, linux/run-all.sh,
# kvm/run.sh and nested/run.sh (bash; the Python suites use pytap.py).
# The guests' own TAP comes from linux/tap-lib.sh (busybox, in the image)
# and the payloads.
#
#   tap_begin                 the version line; call first
#   tap STATUS DESC [DIAG...] "ok" if STATUS is 0, else "not ok" with the
#                             DIAGs under it as diagnostics
#   tap_skip DESC WHY         an "ok ... # SKIP WHY" line
#   tap_copy PREFIX FILE      the result lines of another TAP stream,
#                             renumbered into this one, PREFIX before each
#                             description; "# " lines pass through
#   tap_guest C LOG DIR WHAT CMD...
#                             run CMD, a run-guest.sh call whose serial log
#                             is LOG; copy the guest's TAP as "C: " lines;
#                             then one line "C: the guest ran WHAT"
#   tap_end                   the plan, exit 0
#   tap_skip_all WHY          nothing can run here: "1..0 # SKIP WHY", exit 0
#
# The scripts exit 0 once they have printed TAP, failures included: a
# failure is a "not ok" line, and meson calls any other exit status an
# error of the whole script.  A guest that crashed or timed out is a
# "not ok" line of the script's own.

TAP_N=0
TAP_FAILED=0

tap_begin() {
    echo "TAP version 13"
}

tap() {
    local st=$1 desc=$2 d
    shift 2
    TAP_N=$((TAP_N + 1))
    if [ "$st" -eq 0 ]; then
        echo "ok $TAP_N - $desc"
        return 0
    fi
    echo "not ok $TAP_N - $desc"
    TAP_FAILED=$((TAP_FAILED + 1))
    for d in "$@"; do
        [ -n "$d" ] && sed 's/^/#   /' <<<"$d"
    done
    return 0
}

tap_skip() {
    TAP_N=$((TAP_N + 1))
    echo "ok $TAP_N - $1 # SKIP $2"
}

# The directives (# SKIP, # TODO) stay on the copied lines, so meson
# counts a known failure as one; "not ok" without # TODO is a failure.
# Control characters (a guest console's escape sequences) are dropped:
# they are not allowed in the XML of meson's JUnit log.
tap_copy() {
    local prefix=$1 file=$2 line ok rest
    while IFS= read -r line; do
        line=${line%$'\r'}
        if [[ $line =~ ^(not ok|ok)([[:space:]]+[0-9]+)?([[:space:]]+-)?[[:space:]]*(.*)$ ]]; then
            ok=${BASH_REMATCH[1]} rest=${BASH_REMATCH[4]}
            TAP_N=$((TAP_N + 1))
            if [ "$ok" = "not ok" ] && ! [[ $rest =~ \#[[:space:]]*[Tt][Oo][Dd][Oo] ]]; then
                TAP_FAILED=$((TAP_FAILED + 1))
            fi
            echo "$ok $TAP_N - $prefix$rest"
        elif [[ $line == '#'* ]]; then
            echo "$line"
        fi
    done < <(tr -d '\000-\010\013\014\016-\037' <"$file")
}

# tap_guest C LOG DIR WHAT CMD...: CMD's stdout and stderr go to DIR/C.err
# (to stderr with VERBOSE=1: stdout is the TAP stream); the guest's TAP
# lines and "# " diagnostics, CRs of the console removed, to DIR/C.tap and
# into this stream.  The last line is ok if the guest exited 0 with no
# failure, or 1 with one (that failure has its own line): else it died,
# timed out (124) or disagrees with its own TAP.
tap_guest() {
    local c=$1 log=$2 dir=$3 what=$4 s rc secs failed why
    shift 4
    s=$(date +%s)
    if [[ ${VERBOSE:-0} == 1 ]]; then
        "$@" >&2
    else
        "$@" >/dev/null 2>"$dir/$c.err"
    fi
    rc=$?
    secs=$(($(date +%s) - s))
    failed=$TAP_FAILED
    tr -d '\r' <"$log" 2>/dev/null | grep -E '^((not )?ok [0-9]+|# )' >"$dir/$c.tap"
    tap_copy "$c: " "$dir/$c.tap"
    failed=$((TAP_FAILED - failed))
    case $rc in
    0) why="guest exit status 0" ;;
    1) why="guest exit status 1" ;;
    124) why="timed out" ;;
    *) why="the guest did not report an exit status (run-guest.sh status $rc)" ;;
    esac
    { [[ $rc == 0 && $failed == 0 ]] || [[ $rc == 1 && $failed != 0 ]]; }
    tap $? "$c: the guest ran $what ($why, ${secs} s; log: $log)" \
        "$(tail -n 5 "$dir/$c.err" 2>/dev/null)"
}

tap_end() {
    echo "1..$TAP_N"
    exit 0
}

tap_skip_all() {
    echo "1..0 # SKIP $*"
    exit 0
}
