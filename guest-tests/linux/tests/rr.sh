#!/bin/sh
# rr: Debian's rr 5.6 records a program and replays it, on the vPMU.
#
# rr's ticks are retired conditional branches at CPL 3 (Skylake 0x5101c4,
# Zen 0x5100d1), sampled with PERF_EVENT_IOC_PERIOD for its time slices
# and, in replay, to stop where a signal was delivered; its start-up
# checks also open cycles, a second ticks counter in the same group
# (Intel) and SpecLockMapCommit (Zen).  See docs/rr-papi-events.md.
#
#   rr-work 6 2000 (workloads/rr-work.c): two threads, 6 SIGUSR1s,
#   syscalls.  `rr record` exits 0 with the program's output and status;
#   `rr replay -a` (no debugger) exits 0 and prints the same output again;
#   a second recording replays too.  A single-threaded run of busybox's
#   `true` as well.
#
# Replays on the AMD model take longer: rr 5.6 assumes Zen's PMI skid,
# 10000 ticks, stops that far before each asynchronous event (a signal, a
# time slice's end) and walks the rest with breakpoints; on Intel it
# stops 100 ticks before.  With STEPS = 2000 a walk is short (about 1.5 s
# each under TCG; 10 s with rr-work's default 20000), so the run stays
# within a minute or two.
#
# Runs only on CPU models rr knows (run-all.sh's tools-* configurations:
# Skylake-Client, EPYC); elsewhere rr stops at its CPU check, which this
# test reports as a SKIP with rr's words.
# shellcheck source=SCRIPTDIR/../tap-lib.sh
. /vpmu/tap-lib.sh
plan 8

export _RR_TRACE_DIR=/tmp/rr-traces
rm -rf "$_RR_TRACE_DIR"
mkdir -p "$_RR_TRACE_DIR"

v=$(rr --version 2>&1)
diag "$v; $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2-)"

# record NAME CMD...: rr record CMD into trace NAME; output in NAME.rec.
record() {
    _n=$1
    shift
    rr record -n -o "$_RR_TRACE_DIR/$_n" "$@" >"$_n.rec" 2>"$_n.rec.err"
}
# replay NAME: rr replay -a of trace NAME; output in NAME.rep.
replay() {
    rr replay -a "$_RR_TRACE_DIR/$1" >"$1.rep" 2>"$1.rep.err"
}

record true /bin/true
rc=$?
if [ $rc != 0 ] && grep -qE 'CPU type .* unknown|Unknown CPU' true.rec.err; then
    while [ $TAP_N -lt 8 ]; do
        skip "rr" "rr does not know this CPU: $(grep -m1 -E 'unknown|Unknown' true.rec.err)"
    done
    finish
fi
[ $rc = 0 ] || diag_file true.rec.err
check "rr record true: exit 0" [ $rc = 0 ]
replay true
rc=$?
[ $rc = 0 ] || diag_file true.rep.err
check "rr replay -a true: exit 0" [ $rc = 0 ]

for run in 1 2; do
    record work$run "$BIN/rr-work" 6 2000
    rc=$?
    diag_file work$run.rec 5
    [ $rc = 0 ] || diag_file work$run.rec.err
    check "rr record rr-work (run $run): exit 0" [ $rc = 0 ]
    replay work$run
    rc=$?
    [ $rc = 0 ] || diag_file work$run.rep.err
    check "rr replay -a rr-work (run $run): exit 0" [ $rc = 0 ]
done
check "rr-work recorded: 6 signals handled" grep -q '^handled 6 signals$' work1.rec
if cmp -s work1.rec work1.rep; then
    pass "rr replay -a rr-work: the recorded output again"
else
    fail "rr replay -a rr-work: the recorded output again"
    diag "recorded:"
    diag_file work1.rec 5
    diag "replayed:"
    diag_file work1.rep 5
fi
finish
