#!/bin/sh
# perf-test: the entries of perf's own test suite ("perf test") that exercise
# the PMU, one TAP line per test or subtest.  perf's "Skip" becomes a TAP
# SKIP with perf's reason, except for the tests in MUST_RUN, which must not
# skip when a hardware PMU is present (they check RDPMC from user space).
# Failing or skipped tests are rerun with -v and the tail of the output is
# printed on diagnostic lines.
#
# Tests are chosen by name (numbers change between perf versions); a name
# that this perf does not have is reported as skipped.
#
# "PERF_RECORD_* events & perf_sample fields" runs `sleep` and looks for the
# MMAP records of the command, libc and ld.so: a dynamically linked sleep
# (coreutils', /vpmu/dynbin) comes first in PATH, instead of busybox's static
# one.
#
# "Number of exit events of a simple workload" (tests/task-exit.c) has a race
# on a 1-CPU guest: once its workload ("true") has written the EXIT record,
# the event polls POLLHUP, and perf, woken by it, busy-polls (1000 polls at
# most) for the SIGCHLD that the child sends only when it runs again; if
# perf gets the CPU first (the exiting child's time slice ran out) it runs
# out of polls.  With a fast syscall path (EPYC: no PTI) that was about 70%
# of the runs on TCG, and 14 of 15 in a nested L2 (2026-11-27), with a
# software event and without a PMU too.  So the test's "true" is
# /vpmu/fifobin/true (workloads/fifo-true.S), which makes itself SCHED_FIFO
# and so finishes exiting before perf, SCHED_NORMAL, runs again: 15 of 15
# in that L2.  A missing or extra EXIT record still fails it.
# shellcheck source=SCRIPTDIR/../tap-lib.sh
. /vpmu/tap-lib.sh
plan ''

PATH=/vpmu/dynbin:$PATH
export PATH
EXIT_TEST='Number of exit events of a simple workload'
test_path=$PATH   # the current test's PATH (fifobin first for EXIT_TEST)

# VPMU_PERF_WANT (perf-mmap-kvm.sh): a subset of the list below.
WANT=${VPMU_PERF_WANT:-'mmap interface tests
Parse event definition strings
PERF_RECORD_* events & perf_sample fields
Roundtrip evsel->name
Number of exit events of a simple workload
Use a dummy software event to keep tracking
Parse with no sample_id_all bit set
Track with sched_switch
Event times
Read backward ring buffer
Convert perf time to TSC
Sample parsing
x86 Sample parsing
Breakpoint overflow signal handler
Breakpoint overflow sampling'}
MUST_RUN='User space counter reading of instructions
User space counter reading of cycles'

perf test list >list.txt 2>&1
diag "perf test list: $(grep -c . list.txt) entries"

# num NAME: the number of the top-level test called NAME.
num() {
    awk -v n="$1" '{
        line = $0; sub(/^ */, "", line)
        i = index(line, ": ")
        if (i && substr(line, 1, i - 1) ~ /^[0-9]+$/ && substr(line, i + 2) == n)
            print substr(line, 1, i - 1) }' list.txt | head -n1
}

is_must() { echo "$MUST_RUN" | grep -qxF "$1"; }

# result LINE: one "<n>[.<m>]: <name> : <result>" line of perf test -> TAP.
result() {
    id=$(echo "$1" | sed 's/^ *\([0-9.]*\):.*/\1/')
    name=$(echo "$1" | sed 's/^ *[0-9.]*: \(.*[^ ]\) *: .*$/\1/')
    res=$(echo "$1" | sed 's/.*: *\([^:]*\)$/\1/')
    case $res in
    Ok)
        pass "perf test $id: $name" ;;
    Skip*)
        why=$(echo "$res" | sed -n 's/^Skip *(\(.*\))$/\1/p')
        if is_must "$name" && have_pmu; then
            verbose "$id"
            fail "perf test $id: $name (skipped: ${why:-no reason})"
        else
            skip "perf test $id: $name" "${why:-perf test says Skip}"
        fi ;;
    *)
        verbose "$id"
        fail "perf test $id: $name ($res)" ;;
    esac
}

# verbose ID: rerun perf test ID with -v; print the tail on diag lines.
verbose() {
    top=${1%%.*}
    PATH=$test_path timeout 300 perf test -v "$top" </dev/null >v.txt 2>&1
    if [ "$top" != "$1" ]; then
        # Keep the block of the subtest: from its header to the next one.
        awk -v id="$1" '
            $1 == id ":" { on = 1 }
            on && $1 ~ /^[0-9]+\.[0-9]+:$/ && $1 != id ":" { on = 0 }
            on' v.txt >v1.txt
        mv v1.txt v.txt
    fi
    tail -n 12 v.txt | sed 's/^/#   /'
}

IFS_SAVE=$IFS
IFS='
'
for t in $WANT; do
    IFS=$IFS_SAVE
    n=$(num "$t")
    if [ -z "$n" ]; then
        skip "perf test \"$t\"" "not in this perf's test list"
        continue
    fi
    test_path=$PATH
    [ "$t" != "$EXIT_TEST" ] || test_path=/vpmu/fifobin:$PATH
    PATH=$test_path timeout 300 perf test "$n" >out.txt 2>&1
    rc=$?
    [ $rc = 124 ] && diag "perf test $n timed out after 300 s"
    # Lines that end in a result; a test with subtests prints a bare header.
    grep -E '^ *[0-9]+(\.[0-9]+)?: .*: (Ok|Skip.*|FAILED!)$' out.txt >res.txt
    if [ ! -s res.txt ]; then
        diag_file out.txt
        fail "perf test $n: $t (no result, exit $rc)"
        continue
    fi
    while read -r line; do
        result "$line"
    done <res.txt
done
IFS=$IFS_SAVE

finish_late
