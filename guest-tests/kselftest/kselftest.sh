#!/bin/sh
# kselftest: the kernel's perf_events selftests (tools/testing/selftests/
# perf_events of Debian's linux-source, built statically by
# guest-tests/kselftest/build.sh into /vpmu/kselftest/perf_events), one
# TAP line per selftest case.  Busybox sh, run by the guest image's /init
# (vpmu.test=kselftest).
#
# Each program is a kselftest_harness.h program: its own TAP ("ok N
# fixture.variant.test", "ok N # SKIP reason"), "#  RUN  name ..." before
# each case.  Its cases become lines here ("perf_events/mmap:
# perf_mmap.rb"); a skip keeps the selftest's reason and gets the case's
# name from its RUN line.  One more line per program: it ran to its end,
# every case of its plan reported, and its exit status agrees with them
# (0 all passed, 1 a case failed, 4 all skipped; a timeout or a crash
# fails it).  The selftests' own "# " lines pass through as diagnostics.
#
#   remove_on_exec    instructions:u, sample_period 1000, sigtrap and
#                     remove_on_exec on fork/exec: PMIs through vpmu
#   sigtrap_threads   breakpoint events (debug registers, not the PMU) with
#                     sigtrap across threads
#   mmap              the ring buffer mmap of the first PMU that opens;
#                     its aux variant needs an AUX-area PMU (Intel PT),
#                     which no TCG CPU has (the selftest skips it)
# shellcheck source=SCRIPTDIR/../linux/tap-lib.sh
. /vpmu/tap-lib.sh

KS=/vpmu/kselftest
# Each program's limit.  The selftests' settings file says 120 s (on
# hardware); under TCG on a busy 2-CPU host mmap took 90 s (its three aux
# cases run into the harness's 30 s timeout, below), sigtrap_threads 45 s.
LIMIT=300

plan ''
diag "selftests of $(cat $KS/VERSION 2>/dev/null || echo '?'), kernel $(uname -r)"

# cases OUT: the selftest's result lines in OUT as "STATUS<TAB>NAME<TAB>REASON"
# (STATUS pass, fail, skip or setupskip), and "plan<TAB>N".  setupskip: the
# case failed after its fixture's setup had said SKIP ("#      SKIP
# reason" between its RUN and its result).  6.1's kselftest_harness.h
# does not stop there: SKIP() in FIXTURE_SETUP returns with the case still
# marked passing, and the harness runs the test body on the fixture the
# setup left unset, which fails (mmap's aux variant without an AUX-area
# PMU: its first assertion fails and the case times out after 30 s, with
# Debian's QEMU and no PMU at all as well).  Later harnesses end the case at the setup's SKIP.
cases() {
    awk '
        /^# +RUN +/ { name = $3; why = ""; next }
        /^# +SKIP +/ { why = $0; sub(/^# +SKIP +/, "", why); next }
        /^1\.\.[0-9]+/ { sub(/^1\.\./, ""); print "plan\t" $1; next }
        /^(not )?ok [0-9]+/ {
            no = ($1 == "not"); sub(/^(not )?ok [0-9]+ */, "")
            if ($0 ~ /^# *SKIP/) {
                sub(/^# *SKIP */, ""); print "skip\t" name "\t" $0
            } else if (no && why != "") {
                sub(/^- */, ""); print "setupskip\t" $0 "\t" why
            } else {
                sub(/^- */, ""); print (no ? "fail" : "pass") "\t" $0 "\t"
            }
            why = ""
        }' "$1"
}

for prog in "$KS"/perf_events/*; do
    { [ -x "$prog" ] && [ -f "$prog" ]; } || continue
    t=perf_events/${prog##*/}
    out=/tmp/ks.${prog##*/}.out
    t0=$(cut -d' ' -f1 /proc/uptime)
    timeout "$LIMIT" "$prog" >"$out" 2>&1
    rc=$?
    secs=$(awk -v t0="$t0" '{ printf "%.1f", $1 - t0 }' /proc/uptime)
    grep '^#' "$out"
    n=0 nfail=0 nskip=0 nset=0 want=
    tab=$(printf '\t')
    cases "$out" >/tmp/ks.cases
    while IFS=$tab read -r st name why; do
        case $st in
        plan) want=$name; continue ;;
        pass) pass "$t: $name" ;;
        fail) fail "$t: $name"; nfail=$((nfail + 1)) ;;
        skip) skip "$t: $name" "$why"; nskip=$((nskip + 1)) ;;
        setupskip)
            skip "$t: $name" "its setup skipped it ($why); 6.1's harness ran the test body anyway, which failed"
            nset=$((nset + 1)) ;;
        esac
        n=$((n + 1))
    done </tmp/ks.cases
    desc="$t: ran to its end, $n of ${want:-?} cases reported (exit $rc, $secs s)"
    if [ "$n" != "${want:-x}" ]; then
        fail "$desc"
        # What it printed last: the case that crashed or hung.
        tail -n 10 "$out" | sed 's/^/#   /'
    elif { [ "$rc" = 0 ] && [ "$nfail" = 0 ]; } ||
            { [ "$rc" = 1 ] && [ $((nfail + nset)) != 0 ]; } ||
            { [ "$rc" = 4 ] && [ "$nskip" = "$n" ]; }; then
        pass "$desc"
    else
        fail "$desc"
    fi
done
[ "$TAP_N" -gt 0 ] || fail "selftests in $KS/perf_events"
finish_late
