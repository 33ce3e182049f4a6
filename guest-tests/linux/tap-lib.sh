# shellcheck shell=dash
# tap-lib.sh: TAP output and perf helpers for the guest tests.  Sourced by
# /vpmu/tests/*.sh (busybox sh).  A test prints "TAP version 13" and a plan,
# one "ok"/"not ok" line per check, "# " diagnostic lines with what it
# measured, and exits non-zero if any check failed.

# shellcheck disable=SC2034  # used by the tests
BIN=/vpmu/bin
TAP_N=0
TAP_FAIL=0
: "${VPMU_REQUIRE_PMU:=1}"

plan() {
    echo "TAP version 13"
    [ -n "$1" ] && echo "1..$1"
    [ -z "${NO_PMU:-}" ] || diag "$NO_PMU"
}
diag() { echo "# $*"; }
pass() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $*"; }
fail() {
    TAP_N=$((TAP_N + 1)) TAP_FAIL=$((TAP_FAIL + 1))
    echo "not ok $TAP_N - $*"
}
skip() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N - $1 # SKIP $2"; }
# check DESC CMD...: ok if CMD succeeds.
check() { _d=$1; shift; if "$@"; then pass "$_d"; else fail "$_d"; fi; }
# finish: exit non-zero if a check failed.  finish_late: the same, after
# printing the plan (for tests that start with "plan ''").
finish() { exit $((TAP_FAIL > 0)); }
finish_late() { echo "1..$TAP_N"; finish; }

# Print FILE on diagnostic lines, at most N (default 20) lines of it.
diag_file() { head -n "${2:-20}" "$1" | sed 's/^/#   /'; }

# cmdline_arg NAME: the value of NAME=VALUE on the kernel command line.
cmdline_arg() {
    tr ' ' '\n' </proc/cmdline | sed -n "s/^$1=//p" | tail -n1
}

have_pmu() { [ -d /sys/bus/event_source/devices/cpu ]; }

# cycles_mode: what a cycle is, QEMU's pmu-cycles as run-guest.sh's caller
# tells the guest (vpmu.cycles=): cputime (the default), tsc or insns.
cycles_mode() {
    _m=$(cmdline_arg vpmu.cycles)
    echo "${_m:-cputime}"
}

# host_loaded: the host runs other CPU-bound work (guest-tests/load).
host_loaded() { [ "$(cmdline_arg vpmu.hostload)" = 1 ]; }

# Without a hardware PMU every check that needs one fails; with
# vpmu.require_pmu=0 it is reported as skipped instead.
if ! have_pmu; then
    NO_PMU="no hardware PMU: $(dmesg | grep -m1 -E 'software events only|no PMU' |
        sed 's/^\[[^]]*\] //')"
    if [ "$VPMU_REQUIRE_PMU" = 0 ]; then
        fail() { skip "$*" "no hardware PMU"; }
    fi
fi

# vendor: intel, amd or other.
vendor() {
    case $(grep -m1 '^vendor_id' /proc/cpuinfo) in
    *GenuineIntel*) echo intel ;;
    *AuthenticAMD* | *HygonGenuine*) echo amd ;;
    *) echo other ;;
    esac
}

# pmu_info KEY: a line of the kernel's PMU summary ("generic registers",
# "fixed-purpose events", "version"); empty if absent.
pmu_info() {
    dmesg | sed -n "s/.*\.\.\. $1: *\([0-9a-fx]*\).*/\1/p" | head -n1
}

# tsc_mhz: the TSC frequency the kernel calibrated, in MHz.
tsc_mhz() {
    _m=$(dmesg | sed -n 's/.*tsc: .* \([0-9][0-9]*\.[0-9]*\) MHz.*/\1/p' | tail -n1)
    [ -n "$_m" ] || _m=$(sed -n 's/^cpu MHz[^:]*: *//p' /proc/cpuinfo | head -n1)
    echo "$_m"
}

# pstat OUT EVENTS CMD...: perf stat -x, (CSV) of CMD into OUT; perf's
# error messages become diagnostics.
pstat() {
    _o=$1 _e=$2
    shift 2
    perf stat -x, -o "$_o" -e "$_e" -- "$@" 2>pstat.err
    _rc=$?
    [ ! -s pstat.err ] || diag_file pstat.err 5
    return $_rc
}

# count FILE EVENT [N]: the N-th (default first) count of EVENT in a
# perf stat -x, file: an integer, or "<not supported>" / "<not counted>".
count() {
    awk -F, -v ev="$2" -v n="${3:-1}" '$3 == ev && ++i == n { print $1 }' "$1"
}

is_int() { case $1 in '' | *[!0-9]*) return 1 ;; esac; }

# near A B PCT: A and B are numbers and |A - B| <= PCT percent of B (B > 0).
near() {
    awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN {
        if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 <= 0) exit 1
        d = a - b; if (d < 0) d = -d
        exit !(d <= b * p / 100) }'
}

# eq A B: A and B are the same integer.
eq() { is_int "$1" && [ "$1" = "$2" ]; }

# ge A B / lt A B: A is an integer and A >= B / A < B.
ge() { is_int "$1" && [ "$1" -ge "$2" ]; }
lt() { is_int "$1" && [ "$1" -lt "$2" ]; }

# fge A B: A and B are numbers (floats allowed) and A >= B.
fge() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        exit !(a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && a + 0 >= b + 0) }'
}

# ask_l1 REQUEST: under the nested suite, print "VPMU-L1 REQUEST" for L1
# (guest-tests/nested/init-l1) and wait, at most 120 s, for its one-line
# answer on the console; true if it is "done".
ask_l1() {
    echo "VPMU-L1 $1"
    # shellcheck disable=SC3045  # busybox ash has read -t
    read -t 120 -r _ans </dev/console
    diag "L1 answered $1: ${_ans:-nothing}"
    [ "$_ans" = "done" ]
}
