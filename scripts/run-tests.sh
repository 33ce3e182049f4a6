#!/usr/bin/env bash
# Build vpmu and run its whole test suite three ways; print one summary line.
#
# Usage: scripts/run-tests.sh [plain] [asan] [valgrind] [guest]  (default: all)
#
#   plain     build/       default options; every registered meson test
#   asan      build-asan/  -Db_sanitize=address,undefined; every test
#   valgrind  build/       the Check suites (executables in build/tests/)
#                          under valgrind memcheck, with CK_FORK=no
#   guest     make qemu, the guest image and payloads, then the TAP suites
#             of guest-tests/ (bare-metal payloads, Linux + perf, migration)
#             booted under QEMU TCG with vpmu; each ok/not ok/SKIP line counts
#
# Tests are enumerated with `meson introspect --tests` and run directly,
# with the command, environment, working directory and timeout meson
# would use, so each one's exit status and output can be read:
#
#   - a Check suite prints "NN%: Checks: X, Failures: Y, Errors: Z":
#     X - Y - Z passed, Y + Z failed (summed if it prints several).  If
#     the process still fails when Check saw no failure (sanitizer report,
#     leak, valgrind error, crash after the summary), one more failure;
#   - any other test (the fuzz target, ...) is one test: exit 0 passes;
#   - a test that prints a line starting with "SKIP" and exits 77 is one
#     skipped test;
#   - a run whose build fails counts one failure and runs nothing.
#
# The last line printed is "N passed, N failed" (", N skipped" appended
# when something skipped), summed over all runs.  Exit status 0 only if
# nothing failed.  Logs: build-testlogs/<run>/.  V=1 prints every test's
# output, not only the failing ones'.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
LOGROOT=$ROOT/build-testlogs
VERBOSE=${V:-0}

ASAN_ENV=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
          UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1)
VALGRIND=(valgrind --leak-check=full "--errors-for-leak-kinds=definite,indirect"
          --error-exitcode=1)

total_pass=0
total_fail=0
total_skip=0
# Result of each build directory's build in this invocation: ok / failed.
declare -A built=()

# Counts of the run in progress.
run_pass=0
run_fail=0
run_skip=0

log() {
    printf '%s\n' "$*"
}

# plural N WORD: "1 check", "2 checks".
plural() {
    if [ "$1" -eq 1 ]; then
        printf '%s %s' "$1" "$2"
    else
        printf '%s %ss' "$1" "$2"
    fi
}

# indent FILE...: print files indented, for failure reports.
indent() {
    sed 's/^/        | /' "$@"
}

# show_tail FILE: the end of a log, indented; say where the whole one is.
show_tail() {
    local f=$1 n=${2:-40}

    [ -s "$f" ] || return 0
    if [ "$VERBOSE" = 1 ]; then
        indent "$f"
    else
        tail -n "$n" "$f" | indent
        log "        (full log: ${f#"$ROOT"/})"
    fi
}

# ensure_build DIR LOGDIR [MESON_OPTION...]: configure and compile DIR once.
ensure_build() {
    local dir=$1 logdir=$2 blog
    shift 2

    if [ "${built[$dir]:-}" = ok ]; then
        return 0
    elif [ -n "${built[$dir]:-}" ]; then
        log "  FAIL  build $dir/ (see above)"
        return 1
    fi
    blog=$logdir/build.log
    : >"$blog"
    # Configure once; meson compile reconfigures when a meson.build changes.
    if {
        if [ ! -f "$dir/meson-private/coredata.dat" ]; then
            meson setup "$dir" "$@"
        fi && meson compile -C "$dir"
    } >>"$blog" 2>&1; then
        built[$dir]=ok
        log "  ok    build $dir/"
        return 0
    fi
    built[$dir]=failed
    log "  FAIL  build $dir/ (meson setup/compile)"
    show_tail "$blog" 60
    return 1
}

# list_tests DIR: one NUL-separated record per registered test:
#   name, timeout, workdir, in_tests (1 if the executable is under DIR/tests/),
#   should_fail, number of env entries, KEY=VALUE..., argc, argv...
list_tests() {
    meson introspect --tests "$1" | python3 -c '
import json, os, sys

builddir = os.path.realpath(sys.argv[1])
out = []
for t in json.load(sys.stdin):
    cmd = t["cmd"]
    exe = os.path.realpath(cmd[0])
    in_tests = (os.path.dirname(exe) + os.sep).startswith(
        os.path.join(builddir, "tests") + os.sep)
    env = ["%s=%s" % kv for kv in sorted((t.get("env") or {}).items())]
    out += [t["name"], str(t.get("timeout") or 0),
            t.get("workdir") or builddir, "1" if in_tests else "0",
            "1" if t.get("should_fail") else "0", str(len(env))] + env
    out += [str(len(cmd))] + cmd
sys.stdout.write("".join(f + "\0" for f in out))
' "$1"
}

# run_test RUN NAME TIMEOUT WORKDIR SHOULD_FAIL -- ENV... -- CMD...
# Runs one test (under the run's wrapper) and adds its counts to run_*.
run_test() {
    local run=$1 name=$2 tmo=$3 wdir=$4 should_fail=$5
    shift 6
    local envs=() cmd=() out err rc checks=0 bad=0 nlines=0 extra=""
    local line re skipline

    while [ "$1" != -- ]; do
        envs+=("$1")
        shift
    done
    shift
    cmd=("$@")

    case $run in
    plain)
        envs+=(MALLOC_PERTURB_=165)
        ;;
    asan)
        envs+=("${ASAN_ENV[@]}")
        tmo=$((tmo * 3))
        ;;
    valgrind)
        envs+=(CK_FORK=no)
        cmd=("${VALGRIND[@]}" "${cmd[@]}")
        tmo=$((tmo * 10))
        ;;
    esac
    if [ "$tmo" -gt 0 ]; then
        cmd=(timeout --kill-after=10 "$tmo" "${cmd[@]}")
    fi

    out=$LOGROOT/$run/$name.out
    err=$LOGROOT/$run/$name.err
    rc=0
    (cd "$wdir" && exec env "${envs[@]}" "${cmd[@]}") \
        </dev/null >"$out" 2>"$err" || rc=$?

    re='^[0-9]+%: Checks: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+)'
    skipline=$(grep -h -m1 '^SKIP' "$out" "$err" 2>/dev/null | head -n1 || true)
    while IFS= read -r line; do
        if [[ $line =~ $re ]]; then
            nlines=$((nlines + 1))
            checks=$((checks + BASH_REMATCH[1]))
            bad=$((bad + BASH_REMATCH[2] + BASH_REMATCH[3]))
        fi
    done <"$out"

    if [ "$rc" -eq 77 ] && [ -n "$skipline" ]; then
        run_skip=$((run_skip + 1))
        log "  SKIP  $name: $skipline"
        [ "$VERBOSE" = 1 ] && show_tail "$out" && show_tail "$err"
        return 0
    fi

    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        extra="timed out after ${tmo}s"
    elif [ "$run" = valgrind ] &&
         grep -q 'ERROR SUMMARY: [1-9]' "$err" 2>/dev/null; then
        extra="valgrind reported errors"
    elif [ "$rc" -eq 77 ]; then
        extra="exit status 77 without a SKIP line"
    fi

    if [ "$nlines" -gt 0 ]; then
        # A Check suite: its own counts, plus one if the process failed
        # for a reason Check did not see.
        if [ -z "$extra" ] && [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
            extra="exit status $rc although Check reported no failure"
        fi
        run_pass=$((run_pass + checks - bad))
        run_fail=$((run_fail + bad))
        if [ -n "$extra" ]; then
            run_fail=$((run_fail + 1))
        fi
        if [ "$bad" -eq 0 ] && [ -z "$extra" ]; then
            log "  PASS  $name: $(plural "$checks" check)"
            [ "$VERBOSE" = 1 ] && show_tail "$out" && show_tail "$err"
            return 0
        fi
        log "  FAIL  $name: $((checks - bad)) of $(plural "$checks" check)" \
            "passed${extra:+; $extra}"
    else
        # Any other test counts as one.
        if [ -z "$extra" ] &&
           { { [ "$should_fail" = 0 ] && [ "$rc" -eq 0 ]; } ||
             { [ "$should_fail" = 1 ] && [ "$rc" -ne 0 ]; }; }; then
            run_pass=$((run_pass + 1))
            log "  PASS  $name"
            [ "$VERBOSE" = 1 ] && show_tail "$out" && show_tail "$err"
            return 0
        fi
        run_fail=$((run_fail + 1))
        log "  FAIL  $name: ${extra:-exit status $rc}"
    fi
    show_tail "$out"
    if [ "$run" = valgrind ] && [ "$extra" != "valgrind reported errors" ]; then
        # Valgrind found nothing: its banner and summary are only noise.
        grep -v '^==[0-9]*==' "$err" >"$err.short" || true
        err=$err.short
    fi
    show_tail "$err"
}

# do_run RUN: build, enumerate and run the tests of one configuration.
do_run() {
    local run=$1 dir title opts=() list n=0
    local name tmo wdir in_tests should_fail count i f envs cmd

    case $run in
    plain)
        dir=build
        title="regular build, every registered test"
        ;;
    asan)
        dir=build-asan
        title="ASan+UBSan build, every registered test"
        opts=("-Db_sanitize=address,undefined" -Db_lundef=false)
        ;;
    valgrind)
        dir=build
        title="Check suites of build/ under valgrind (CK_FORK=no)"
        ;;
    *)
        log "run-tests: unknown run '$run' (plain, asan, valgrind)" >&2
        exit 2
        ;;
    esac

    run_pass=0
    run_fail=0
    run_skip=0
    log ""
    log "==> [$run] $dir/: $title"
    rm -rf "${LOGROOT:?}/$run"
    mkdir -p "$LOGROOT/$run"

    if ensure_build "$dir" "$LOGROOT/$run" "${opts[@]}"; then
        list=$LOGROOT/$run/tests.list
        if ! list_tests "$dir" >"$list" 2>"$LOGROOT/$run/introspect.err"; then
            log "  FAIL  meson introspect --tests $dir"
            show_tail "$LOGROOT/$run/introspect.err"
            run_fail=$((run_fail + 1))
        else
            while IFS= read -r -d '' name <&3; do
                IFS= read -r -d '' tmo <&3
                IFS= read -r -d '' wdir <&3
                IFS= read -r -d '' in_tests <&3
                IFS= read -r -d '' should_fail <&3
                envs=()
                IFS= read -r -d '' count <&3
                for ((i = 0; i < count; i++)); do
                    IFS= read -r -d '' f <&3
                    envs+=("$f")
                done
                cmd=()
                IFS= read -r -d '' count <&3
                for ((i = 0; i < count; i++)); do
                    IFS= read -r -d '' f <&3
                    cmd+=("$f")
                done
                if [ "$run" = valgrind ] && [ "$in_tests" != 1 ]; then
                    continue
                fi
                n=$((n + 1))
                run_test "$run" "$name" "$tmo" "$wdir" "$should_fail" \
                    -- "${envs[@]}" -- "${cmd[@]}"
            done 3<"$list"
            if [ "$n" -eq 0 ]; then
                log "  (no tests registered for this run yet)"
            fi
        fi
    else
        run_fail=$((run_fail + 1))
    fi

    log "--- [$run] $run_pass passed, $run_fail failed, $run_skip skipped"
    total_pass=$((total_pass + run_pass))
    total_fail=$((total_fail + run_fail))
    total_skip=$((total_skip + run_skip))
}

# tap_count NAME LOGFILE STATUS: add a TAP suite's lines to the run's counts:
# "ok" passes, "ok ... # SKIP" skips, "not ok" fails; "not ok ... # TODO" is
# a known failure (TAP): listed on the suite's line, neither passed nor
# failed.  A suite that failed without a "not ok" line (crash, timeout, no
# TAP) counts one failure.
tap_count() {
    local name=$1 file=$2 status=$3 p f k todo
    p=$(grep -cE '^ok ' "$file" | tr -d ' ') || true
    k=$(grep -cE '^ok .*# SKIP' "$file" | tr -d ' ') || true
    f=$(grep -E '^not ok ' "$file" | grep -cvE '# *TODO' | tr -d ' ') || true
    todo=$(grep -E '^not ok ' "$file" | grep -cE '# *TODO' | tr -d ' ') || true
    p=$((p - k))
    # A suite that prints only its summary ("N passed, N failed[, N skipped]").
    if [ $((p + f + k)) -eq 0 ]; then
        local line
        line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$file" | tail -n 1) || true
        if [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ skipped)? ]]; then
            p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} k=${BASH_REMATCH[4]:-0}
        fi
    fi
    # 77: the whole suite skipped (it printed "SKIP <reason>"), as meson's.
    if [ "$status" -eq 77 ] && [ "$f" -eq 0 ]; then
        [ "$k" -gt 0 ] || k=1
        grep -m1 '^SKIP' "$file" | indent || true
    elif [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
    fi
    run_pass=$((run_pass + p))
    run_fail=$((run_fail + f))
    run_skip=$((run_skip + k))
    if [ "$f" -gt 0 ]; then
        log "  FAIL  $name: $p passed, $f failed, $k skipped"
        { grep -E '^not ok ' "$file" || tail -n 5 "$file"; } | head -20 | indent
        log "        (full log: $file)"
    else
        log "  PASS  $name: $p passed, $k skipped${todo:+$([ "$todo" -gt 0 ] && echo ", $todo known failure(s) (TODO)")}"
    fi
    if [ "${todo:-0}" -gt 0 ]; then
        grep -E '^not ok .*# *TODO' "$file" | head -5 | indent
    fi
}

# guest_suite NAME CMD...: run a guest test suite that prints TAP.
guest_suite() {
    local name=$1 file=$LOGROOT/guest/$1.tap status=0
    shift
    "$@" >"$file" 2>&1 || status=$?
    if [ "$VERBOSE" = 1 ]; then
        indent <"$file"
    fi
    tap_count "$name" "$file" "$status"
}

# The guest run: build QEMU with the patch series and the guest image,
# then boot guests under TCG with vpmu as their PMU.
do_guest_run() {
    local qemu=$ROOT/build/qemu/qemu-system-x86_64
    run_pass=0
    run_fail=0
    run_skip=0
    mkdir -p "$LOGROOT/guest"
    log "==> [guest] QEMU TCG guests with vpmu (make qemu; guest-tests/)"
    if ! scripts/build-qemu.sh >"$LOGROOT/guest/build-qemu.log" 2>&1; then
        log "  FAIL  make qemu (log: $LOGROOT/guest/build-qemu.log)"
        show_tail "$LOGROOT/guest/build-qemu.log"
        run_fail=1
    elif ! guest-tests/linux/build-image.sh build/guest \
            >"$LOGROOT/guest/build-image.log" 2>&1 ||
         ! make -s -C guest-tests/baremetal O="$ROOT/build/baremetal" \
            >"$LOGROOT/guest/build-baremetal.log" 2>&1; then
        log "  FAIL  guest image or payloads (logs: $LOGROOT/guest/)"
        run_fail=1
    else
        guest_suite baremetal guest-tests/baremetal/run.sh \
            -O "$ROOT/build/baremetal" -q "$qemu"
        for t in guest-tests/linux/run-all.sh guest-tests/migration/*.sh \
                 guest-tests/kvm/run.sh guest-tests/nested/run.sh; do
            if [ -x "$t" ]; then
                guest_suite "$(basename "$(dirname "$t")")-$(basename "$t" .sh)" \
                    env QEMU="$qemu" "$t"
            fi
        done
    fi
    log "--- [guest] $run_pass passed, $run_fail failed, $run_skip skipped"
    total_pass=$((total_pass + run_pass))
    total_fail=$((total_fail + run_fail))
    total_skip=$((total_skip + run_skip))
}

main() {
    local runs=("$@") r tool summary

    if [ "${#runs[@]}" -eq 0 ]; then
        runs=(plain asan valgrind guest)
    fi
    for tool in meson python3 timeout; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            log "run-tests: $tool not found; run 'make deps'" >&2
            exit 2
        fi
    done
    for r in "${runs[@]}"; do
        if [ "$r" = valgrind ] && ! command -v valgrind >/dev/null 2>&1; then
            log "run-tests: valgrind not found; run 'make deps'" >&2
            exit 2
        fi
    done
    mkdir -p "$LOGROOT"

    for r in "${runs[@]}"; do
        if [ "$r" = guest ]; then
            do_guest_run
        else
            do_run "$r"
        fi
    done

    log ""
    summary="$total_pass passed, $total_fail failed"
    if [ "$total_skip" -gt 0 ]; then
        summary+=", $total_skip skipped"
    fi
    log "$summary"
    [ "$total_fail" -eq 0 ]
}

main "$@"
