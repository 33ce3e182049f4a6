#!/bin/sh
# operator-kvm: guest-side half of the nested suite's operator checks
# (guest-tests/nested/init-l1, check_operator in l1-checks.sh).  This
# guest is L2 under vpmu with pmu-operator=on; L1 holds its QEMU's QMP
# monitor and starts the host operator's events there (QEMU 0028) when
# asked.  Each window is a script run under perf stat -a: it asks L1 to
# read query-vpmu, runs a loop, asks again; so perf stat's count covers
# the operator's window, and the loop lies inside it.
#
#   whole    operator instructions:u,branches:u beside perf stat -a's two
#            events: 2 guest counters take 2 of L1's 6 for vpmu and 2
#            for KVM's live PMCs, the operator's 2 fit: they run all the
#            time, over loop_100M
#   turns    operator instructions:u,branches:u,instructions:k,branches:k:
#            4 events on the 2 counters left, in turns, over loop_1000M
#            (its time in seconds printed for L1's bound)
#   stopped  after vpmu-operator-stop, query-vpmu has no operator events
#
# L1 compares the operator's counts with what perf stat printed here.
# Needs L1 (vpmu.nested=1); otherwise every check is skipped.
# shellcheck source=SCRIPTDIR/../tap-lib.sh
. /vpmu/tap-lib.sh
plan 8

if [ "${VPMU_NESTED:-0}" != 1 ]; then
    for d in "L1 started the operator's events (2)" \
            "whole: L1 read query-vpmu around loop_100M" \
            "whole: perf stat -a counted loop_100M's 2N+4 and N+1 at least" \
            "L1 started the operator's events (4)" \
            "turns: L1 read query-vpmu around loop_1000M" \
            "turns: perf stat -a counted loop_1000M's 2N+4 and N+1 at least" \
            "L1 stopped the operator's events" "L1 read query-vpmu after the stop"; do
        skip "$d" "needs L1 with QMP on this guest's QEMU (guest-tests/nested, vpmu.nested=1)"
    done
    finish
fi

# The window: L1 reads query-vpmu as TAG-0, the loop runs, L1 reads TAG-1.
cat >opwin.sh <<'EOF'
#!/bin/sh
echo "VPMU-L1 query op-$1-0"
read -t 120 -r a </dev/console
s=$(cut -d' ' -f1 /proc/uptime)
"$2"
e=$(cut -d' ' -f1 /proc/uptime)
echo "VPMU-L1 query op-$1-1"
read -t 120 -r b </dev/console
echo "$a $b $s $e" >"op-$1.ans"
EOF
chmod +x opwin.sh

# window TAG LOOP N: perf stat -a of the window; the counts for L1.
window() {
    perf stat -a -x, -o "op-$1.csv" -e instructions:u,branches:u -- \
        ./opwin.sh "$1" "$BIN/$2" 2>"op-$1.err" || diag_file "op-$1.err"
    read -r a b s e <"op-$1.ans"
    i=$(count "op-$1.csv" instructions:u)
    br=$(count "op-$1.csv" branches:u)
    diag "operator: $1: perf stat -a instructions:u=$i"
    diag "operator: $1: perf stat -a branches:u=$br"
    diag "operator: $1: $2 ms=$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%d", (e - s) * 1000 }')"
    check "$1: L1 read query-vpmu around $2" [ "$a $b" = "done done" ]
    check "$1: perf stat -a counted $2's 2N+4 and N+1 at least" \
        [ "$(ge "$i" $((2 * $3 + 4)) && ge "$br" $(($3 + 1)) && echo y)" = y ]
}

check "L1 started the operator's events (2)" \
    ask_l1 "operator-start instructions:u,branches:u"
window whole loop_100M 100000000
check "L1 started the operator's events (4)" \
    ask_l1 "operator-start instructions:u,branches:u,instructions:k,branches:k"
window turns loop_1000M 1000000000
check "L1 stopped the operator's events" ask_l1 operator-stop
check "L1 read query-vpmu after the stop" ask_l1 "query op-stopped"
finish
