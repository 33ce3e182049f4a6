#!/bin/sh
# papi: PAPI 7.0 (Debian's papi-tools and libpapi, libpfm4 4.13) on the
# vPMU: its presets exist, count exactly, and papi_command_line runs.
#
#   papi_avail -a lists PAPI_TOT_INS, PAPI_TOT_CYC, PAPI_BR_INS,
#   PAPI_BR_CN, PAPI_BR_TKN, PAPI_LD_INS and PAPI_SR_INS (Skylake: libpfm4's
#   "skl"); on Zen, PAPI 7.0 defines only TOT_INS, TOT_CYC, BR_INS and
#   BR_TKN (docs/rr-papi-events.md), and those are what is checked.
#   papi-work (workloads/papi-work.c) counts each preset around a loop known
#   by construction, for N = 100000 and 200000 (the least of three runs
#   each, see least() below): the difference is exact
#   (per iteration 6.5 instructions, 2 branches, 2 conditional, 1.5 taken,
#   1 load, 1 store; PAPI's default domain is user mode).  Cycles are
#   counted by time (docs/tcg.md), TB translation and page faults
#   included: only non-zero; with pmu-cycles=insns (vpmu.cycles=insns) a
#   cycle is an instruction and PAPI_TOT_CYC is exact like PAPI_TOT_INS.
#   papi_command_line with the presets: every one counted, and the same
#   counts on a second run (its workload, do_flops and do_misses, is
#   deterministic) but for cycles counted by time.
#   papi-mmm (workloads/papi-mmm.c): PAPI's own papi_sr_ins workload,
#   naive_matrix_multiply() as Debian's gcc 12 -O2 compiles it, in
#   assembly, M x M for M = 64 and 128: the difference is exact
#   (instructions 7M^3 + 16M^2 + 24M, loads 2M^3 + M^2, stores 2M^2, where
#   papi_sr_ins estimates 3M^2: its setup loop stores two doubles per
#   MOVAPS; docs/rr-papi-events.md).
# shellcheck source=SCRIPTDIR/../tap-lib.sh
. /vpmu/tap-lib.sh
plan ''

if [ "$(vendor)" = intel ]; then
    presets="PAPI_TOT_INS PAPI_TOT_CYC PAPI_BR_INS PAPI_BR_CN PAPI_BR_TKN PAPI_LD_INS PAPI_SR_INS"
else
    presets="PAPI_TOT_INS PAPI_TOT_CYC PAPI_BR_INS PAPI_BR_TKN"
fi

papi_avail -a >avail.txt 2>&1
diag "$(grep -m1 -i 'CPU Model\|Vendor string' avail.txt)"
for e in $presets; do
    check "papi_avail -a lists $e" grep -q "^$e " avail.txt
done
grep -q "^PAPI_TOT_INS " avail.txt || diag_file avail.txt 40

both_pos() { is_int "$1" && is_int "$2" && [ "$1" -gt 0 ] && [ "$2" -gt 0 ]; }
# Cycles counted by time (not pmu-cycles=insns): no exact count.
timed=PAPI_TOT_CYC
[ "$(cycles_mode)" = insns ] && timed=none
same_pos() { is_int "$1" && [ "$1" -gt 0 ] && [ "$1" = "$2" ]; }

# want EVENT: what one iteration of papi-work's loop adds, times 2 (N even).
want2() {
    case $1 in
    PAPI_TOT_INS | PAPI_TOT_CYC) echo 13 ;;
    PAPI_BR_INS | PAPI_BR_CN) echo 4 ;;
    PAPI_BR_TKN) echo 3 ;;
    PAPI_LD_INS | PAPI_SR_INS) echo 2 ;;
    esac
}
# least PROG EVENT N: the smallest count of three runs of PROG (papi-work
# or papi-mmm).  PAPI reads a counter through the perf mmap page, in a
# seqlock loop that goes round again when the kernel updated the page
# meanwhile (an interrupt during the read): a few more user-mode
# instructions and branches, on hardware as here.  The loop itself is
# exact; the run without a retry has the least.
least() {
    for _r in 1 2 3; do
        "$BIN/$1" "$2" "$3" | awk '{ print $3 }'
    done | sort -n | head -n 1
}
n1=100000
n2=200000
for e in $presets; do
    c1=$(least papi-work "$e" $n1 2>err1)
    c2=$(least papi-work "$e" $n2 2>err2)
    if ! is_int "$c1" || ! is_int "$c2"; then
        fail "papi-work $e: counted ($(cat err1 err2 | head -n 2))"
        continue
    fi
    d=$((c2 - c1))
    if [ "$e" = "$timed" ]; then
        # Time, translation and page faults included: not monotonic in N.
        diag "$e: N=$n1 $c1, N=$n2 $c2"
        check "papi-work $e: counted" both_pos "$c1" "$c2"
        continue
    fi
    w=$(($(want2 "$e") * (n2 - n1) / 2))
    diag "$e: N=$n1 $c1, N=$n2 $c2, difference $d (want $w)"
    check "papi-work $e: exact over the loop ($w)" eq "$d" "$w"
done

# papi-mmm: what mmm(128) adds to mmm(64).  PAPI's estimate for the
# stores (naive_matrix_multiply_estimated_stores, 3M^2 + 1) differs by
# 3 * (128^2 - 64^2) = 36864.
mmm_want() {
    case $1 in
    PAPI_TOT_INS) echo 13043200 ;;   # 7 * 1835008 + 16 * 12288 + 24 * 64
    PAPI_LD_INS) echo 3682304 ;;     # 2 * 1835008 + 12288
    PAPI_SR_INS) echo 24576 ;;       # 2 * 12288
    esac
}
if [ "$(vendor)" = intel ]; then
    mmm_events="PAPI_TOT_INS PAPI_LD_INS PAPI_SR_INS"
else
    mmm_events=PAPI_TOT_INS
fi
# build-image.sh builds papi-mmm: an image without it is a broken image.
[ -x "$BIN/papi-mmm" ] || { fail "papi-mmm: not in the image (build-image.sh)"; mmm_events=; }
for e in $mmm_events; do
    c1=$(least papi-mmm "$e" 64 2>err1)
    c2=$(least papi-mmm "$e" 128 2>err2)
    if ! is_int "$c1" || ! is_int "$c2"; then
        fail "papi-mmm $e: counted ($(cat err1 err2 | head -n 2))"
        continue
    fi
    w=$(mmm_want "$e")
    diag "papi-mmm $e: M=64 $c1, M=128 $c2, difference $((c2 - c1)) (want $w)"
    check "papi-mmm $e: exact over mmm(128) - mmm(64) ($w)" eq "$((c2 - c1))" "$w"
done

# papi_command_line prints "EVENT : COUNT" lines.
cl() { papi_command_line $presets 2>&1 | sed -n 's/^\(PAPI_[A-Z_]*\)[[:space:]]*:[[:space:]]*\([0-9][0-9]*\).*/\1 \2/p'; }
cl >cl1.txt
cl >cl2.txt
for e in $presets; do
    c1=$(awk -v e="$e" '$1 == e { print $2 }' cl1.txt)
    c2=$(awk -v e="$e" '$1 == e { print $2 }' cl2.txt)
    diag "papi_command_line $e: $c1, $c2"
    if [ "$e" = "$timed" ]; then
        check "papi_command_line $e: counted" both_pos "$c1" 1
    else
        check "papi_command_line $e: counted, the same twice" \
            same_pos "$c1" "$c2"
    fi
done
[ -s cl1.txt ] || papi_command_line $presets 2>&1 | head -n 20 | sed 's/^/#   /'
finish_late
