#!/bin/sh
# L1-side checks of the nested suite, sourced by init-l1 (L1's /init): what
# L1 saw of an L2 through QMP (query-vpmu replies saved by serve_l2), its
# own perf during contention, and L2's kernel-and-user counts across
# configurations.  Uses init-l1's ok/notok, ran and $cfg;
# tests/scripts/ku-check-test.sh runs ku_check on hand-made L2 output.
# shellcheck shell=sh disable=SC2154  # cfg is init-l1's

# --- what L1 saw through QMP ------------------------------------------------------
# qv FILE: a query-vpmu reply of one vCPU as KEY=VALUE lines (without its
# "kvm" member, exits and host calls, which no check here reads):
# cpu-index,
# vendor, the vCPU's totals (overflows, pmis, filtered, unsupported,
# source-errors), cI.KEY for counter I (fixed, index, event, control, value,
# state, overflows, pmis, filtered; the qapi schema of patch 0011), sorted,
# and ncounters.  QMP prints an object's members in no fixed order: a
# counter is an object one level below the vCPU's.
qv() {
    awk '{
        s = $0; d = 0; c = -1; tok = ""
        for (i = 1; i <= length(s); i++) {
            ch = substr(s, i, 1)
            if (skip) {
                if (ch == "{" || ch == "[") sd++
                else if (ch == "}" || ch == "]") sd--
                if (sd == 0) { skip = 0; tok = "" }
                continue
            }
            if (ch !~ /[][{},]/) { tok = tok ch; continue }
            if (ch == "{" && tok ~ /"kvm": *$/) { skip = 1; sd = 1; tok = ""; continue }
            if (tok ~ /^ *"[a-z-]+": *[^ ]/) {
                key = tok; sub(/^ *"/, "", key); sub(/".*/, "", key)
                val = tok; sub(/^ *"[a-z-]+": */, "", val); gsub(/"/, "", val)
                if (d == 3) print "c" c "." key "=" val
                else if (d == 2) print key "=" val
            }
            tok = ""
            if (ch == "{" && ++d == 3) c++
            if (ch == "}") d--
        }
        print "ncounters=" c + 1 }' "$1" | sort
}
# qguest FILE: qv FILE without the statistics (totals, and overflows, pmis,
# filtered of each counter): the state the guest sees, which migrates.
qguest() { qv "$1" | grep -vE '^(c[0-9]+\.)?(overflows|pmis|filtered|unsupported|source-errors|source-multiplexed-reads|source-lost-ns)='; }
# qget FILE KEY: one value of qv FILE.
qget() { qv "$1" | sed -n "s/^$2=//p" | head -n1; }
# l2diag CFG PATTERN: the first value L2 printed as "# PATTERN<value>".
l2diag() { sed -n "s/^# $2\([0-9][0-9]*\).*/\1/p" "/tmp/$1.out" | head -n1; }
# tcheck DESC COND...: ok if COND succeeds.
tcheck() { _d=$1; shift; if "$@"; then ok "$_d"; else notok "$_d"; fi; }
# has STRING SUBSTRING
has() { case $1 in *"$2"*) return 0 ;; esac; return 1; }
# same_q FILE FILE: two non-empty query-vpmu replies with the same guest
# state (qguest).
same_q() { [ -s "$1" ] && [ -s "$2" ] && [ "$(qguest "$1")" = "$(qguest "$2")" ]; }

# check_qmp: qmp-kvm.sh's requests (guest-tests/linux/tests/qmp-kvm.sh),
# against values derived by hand:
#   counting: L2 runs perf stat -a -e instructions:u and waits on its
#     console.  A CPU-wide event stays on its counter while L2 idles: one
#     vCPU, vendor amd, 6 counters (AMD PerfMonV2's, none fixed); counter 0
#     "instructions", counting, control 0x5100C0 = EventSelect 0xC0 | USR
#     (bit 16) | INT (bit 20: Linux sets it on every event) | EN (bit 22).
#     No HostOnly (bit 41): perf's ":u" sets exclude_guest, which Linux's
#     amd_core_hw_config turns into HostOnly, but the kernel masks that bit
#     out of every PERF_CTL write (perf_ctr_virt_mask) until kvm-amd turns
#     SVM on, and L2 has no kvm-amd.  Counters 1-5 off.  Linux
#     starts a counting event at 2^48 - max_period (2^47 - 1) = 2^47 + 1
#     and reloads it with what is left of that period after each context
#     switch, so value - (2^47 + 1) is the event's count so far: at least 1
#     (perf and sh ran user code after the enable), at most the count perf
#     stat printed at the end (C).
#   before-record, after-record: perf record -e instructions:u -c 10007 of
#     hot (2N+6 = 10000006 user instructions): floor(10000006 / 10007) =
#     999 overflows and 999 PMIs between the two queries, nothing else in
#     L2 samples.
#   bad: query-vpmu with an unknown argument is an error, and query-status
#     after it says running.
check_qmp() {
    q=/tmp/$cfg.q.counting.json
    qv "$q" | paste -sd' ' | cut -c1-600 | sed "s/^/# $cfg: query-vpmu (counting): /"
    nv=$(grep -o '"cpu-index"' "$q" | wc -l)
    tcheck "$cfg: query-vpmu: one vCPU, cpu-index 0, amd, 6 counters, none fixed" \
        [ "$nv/$(qget "$q" cpu-index)/$(qget "$q" vendor)/$(qget "$q" ncounters)/$(qv "$q" | grep -c '^c[0-9]*\.fixed=false$')" = 1/0/amd/6/6 ]
    ctl=$(qget "$q" c0.control)
    hctl=$(printf '0x%x' "${ctl:-0}" 2>/dev/null)
    tcheck "$cfg: query-vpmu: counter 0 instructions, counting, control 0x5100c0 ($hctl)" \
        [ "$(qget "$q" c0.event)/$(qget "$q" c0.state)/$ctl" = instructions/counting/$((0x5100C0)) ]
    off=$(qv "$q" | grep -c '^c[1-5]\.state=off$')
    tcheck "$cfg: query-vpmu: counters 1-5 off ($off of 5)" [ "$off" = 5 ]
    v=$(qget "$q" c0.value)
    C=$(l2diag "$cfg" 'qmp: perf stat -a instructions:u=')
    # 2^47 + 1 written out: busybox's awk here has no "^" (no math support).
    d=$(awk -v v="${v:-0}" 'BEGIN { printf "%.0f", v - 140737488355329 }')
    tcheck "$cfg: query-vpmu: counter 0 value - (2^47 + 1) in 1..C, the count perf stat -a printed ($d, C = ${C:-none})" \
        awk -v d="$d" -v c="${C:-x}" 'BEGIN { exit !(c ~ /^[0-9]+$/ && d >= 1 && d <= c + 0) }'
    tcheck "$cfg: query-vpmu: source-errors 0, filtered 0 ($(qget "$q" source-errors), $(qget "$q" filtered))" \
        [ "$(qget "$q" source-errors)/$(qget "$q" filtered)" = 0/0 ]
    a=/tmp/$cfg.q.before-record.json b=/tmp/$cfg.q.after-record.json
    do_=$(($(qget "$b" overflows) - $(qget "$a" overflows)))
    dp=$(($(qget "$b" pmis) - $(qget "$a" pmis)))
    ns=$(l2diag "$cfg" 'qmp: perf record samples=')
    tcheck "$cfg: query-vpmu: perf record -c 10007 of hot: overflows +999, pmis +999 (+$do_, +$dp; $ns samples)" \
        [ "$do_/$dp" = 999/999 ]
    bad=$(cat "/tmp/$cfg.q.bad.json" 2>/dev/null)
    tcheck "$cfg: query-vpmu with an unknown argument: a QMP error ($(echo "$bad" | cut -c1-120))" \
        has "$bad" '"error"'
    st=$(cat "/tmp/$cfg.q.bad-status.json" 2>/dev/null)
    tcheck "$cfg: QEMU runs on after it (query-status: running)" \
        has "$st" '"status": "running"'
}

# check_migration: migrate-kvm.sh asked for a live migration while it ran
# perf stat -e instructions:u,branches:u of until, which loops until L1's
# answer; L2 itself checks the exact counts on the destination.  Here: the migration
# completed, the destination's query-vpmu before it ran is the source's
# after the migration (every counter, value and total), and counter 0 was
# counting instructions there (the migration fell inside the loop).  The
# statistics (overflows, pmis, filtered, unsupported, source-errors) are
# QEMU's, not the guest's: they do not migrate, and are left out.
check_migration() {
    mst=$(cat "/tmp/$cfg.mig.status")
    tcheck "$cfg: live migration to a second QEMU in L1 completed (${mst:-no status}, $(cat "/tmp/$cfg.mig.secs" 2>/dev/null || echo ?) s)" \
        [ "$mst" = completed ]
    s=/tmp/$cfg.q.mig-src.json d=/tmp/$cfg.q.mig-dst.json
    tcheck "$cfg: migration: the destination's query-vpmu = the source's (counters' events, controls, values, states; counter 0 $(qget "$s" c0.value) = $(qget "$d" c0.value))" \
        same_q "$s" "$d"
    [ -s "$d" ] || [ -s "$s" ] || d=/dev/null
    # That the migration fell inside the counted run is by construction
    # (until loops until L1's answer; L2 checks the answer came).  At the
    # instant of the snapshot the task may be switched out, and Linux then
    # has the counter's enable bit clear: off or counting, both are fine.
    tcheck "$cfg: migration: counter 0 held perf stat's instructions event ($(qget "$d" c0.event)/$(qget "$d" c0.state), value $(qget "$d" c0.value))" \
        in_loop "$(qget "$d" c0.event)" "$(qget "$d" c0.state)"
}

# check_contention: contention-kvm.sh had L1 hold all of its counters
# (L2 checks its counts: 0 while contended, exact after).  Here: L1's
# pinned group did hold them, every interval of every event 100% running.
check_contention() {
    f=/tmp/$cfg.contend.csv
    n=$(awk -F, '$4 ~ /^cycles/' "$f" | wc -l)
    m=$(awk -F, '$4 ~ /^cycles/ && $6 == "100.00"' "$f" | wc -l)
    awk -F, '$4 ~ /^cycles/ { printf "%s%s:%s", (k++ ? " " : ""), $2, $6 } END { print "" }' "$f" |
        cut -c1-300 | sed "s/^/# $cfg: L1's pinned cycles (count:%running): /"
    tcheck "$cfg: contention: L1's pinned group of 6 cycles events ran 100% of every interval ($m of $n)" \
        all_ran "$n" "$m"
    case $cfg in vpmu*) ;; *) return 0 ;; esac
    # vpmu's host events (flexible) got no counter while L1's pinned group
    # held them all: enabled, not running.  query-vpmu shows it as
    # source-lost-ns (patch 0014).  After the release it may still grow a
    # little: the source reads an event's times lazily, so what was lost
    # between its last read and its disable is added at its next read,
    # which can come after the release (2026-11-24: +27 us after 21.9 ms).
    # That the released run lost nothing is L2's exact 2N+4 / N+1.
    b=/tmp/$cfg.q.before-contend.json c=/tmp/$cfg.q.contended.json
    r=/tmp/$cfg.q.released.json
    lb=$(qget "$b" source-lost-ns) lc=$(qget "$c" source-lost-ns)
    lr=$(qget "$r" source-lost-ns)
    mb=$(qget "$b" source-multiplexed-reads) mc=$(qget "$c" source-multiplexed-reads)
    tcheck "$cfg: contention: query-vpmu's source-lost-ns grew while L1 held the counters (${lb:-none} -> ${lc:-none} ns; multiplexed reads ${mb:-none} -> ${mc:-none}; after the release ${lr:-none})" \
        grew "$lb" "$lc" "$mb" "$mc"
}
in_loop() { [ "$1" = instructions ] && { [ "$2" = counting ] || [ "$2" = off ]; }; }
# grew LOST0 LOST1 READS0 READS1: integers, both grew.
grew() {
    is_num "$1" && is_num "$2" && is_num "$3" && is_num "$4" &&
        [ "$2" -gt "$1" ] && [ "$4" -gt "$3" ]
}
is_num() { case $1 in '' | *[!0-9]*) return 1 ;; esac; }
# all_ran N M: at least 6 interval lines, and all M of them at 100%.
all_ran() { [ "$1" -ge 6 ] && [ "$2" = "$1" ]; }

# --- across configurations: kernel and user counts -------------------------------
# stat-exact's "ku run" lines (in /tmp/CFG.out, L2's output): instructions
# and branches of sys_100k, three runs, each with the timer interrupts that
# fell into it.  They are not exact: the kernel's share is N getppid paths
# plus a fixed part (exec, page faults, exit) and a part per timer
# interrupt, and the interrupts follow the run's length, so the host's
# speed.  The N calls are nearly all of it (EPYC L2: 36.8M instructions,
# 10.9M branches; a timer interrupt ~3,300 instructions, a run 31-48 of
# them), so both PMUs, counting the same guest instructions, must give the
# same mean kernel part (count minus the exact user count) within 5% of
# the first configuration's.  A PMU that counts the kernel twice or not at
# all fails it; a slow spell of the host does not, up to ~540 more timer
# interrupts a run.  (A short loop's kernel part would be mostly
# interrupts, and other kernel work than the ticks comes with a slow
# spell: no function of the ticks predicts it.)
KU_PCT=5
# ku_mean CFG EVENT: "K T": the mean kernel part of the runs and their mean
# ticks ("none" without the tracepoint's counts); fails without a run.  N
# comes from the workload's name (sys_100k: N = 100 * 1000).
ku_mean() {
    sed -n "s/^# ku run [0-9]*: .*$2=\([0-9][0-9]*\) .*ticks=\([0-9a-z]*\) (sys_\([0-9][0-9]*\)k)\r*$/\1 \2 \3/p" \
        "/tmp/$1.out" |
    awk -v ev="$2" '{
            n = $3 * 1000
            k = $1 - (ev == "instructions" ? 4 * n + 4 : 2 * n + 1)
            runs++; sk += k
            if ($2 ~ /^[0-9]+$/) { tn++; st += $2 }
        } END {
            if (!runs) exit 1
            if (tn) printf "%.0f %.1f\n", sk / runs, st / tn
            else printf "%.0f none\n", sk / runs
        }'
}
# pct_of W V: W against V as a signed percentage ("+1.2%"), empty without
# W.  within_pct W V P: V > 0 and |W - V| <= V * P / 100.  within10 W V:
# W is given and within 10% of V.
pct_of() {
    awk -v w="$1" -v v="$2" 'BEGIN { if (w != "" && v > 0) printf "%+.1f%%", 100 * (w - v) / v }'
}
within_pct() {
    awk -v w="$1" -v v="$2" -v p="$3" \
        'BEGIN { d = w - v; if (d < 0) d = -d; exit !(v > 0 && 100 * d <= v * p) }'
}
within10() { [ -n "$1" ] && within_pct "$1" "$2" 10; }
# ku_check CFG REF EVENT: the comparison, if REF ran stat-exact (RUNS may
# name other tests only).
ku_check() {
    ran "$2" stat-exact || return 0
    kv_=$(ku_mean "$2" "$3") kw_=$(ku_mean "$1" "$3")
    d="$1 ~ $2: $3 (kernel and user), kernel part of sys_100k within $KU_PCT%"
    if [ -z "$kv_" ] || [ -z "$kw_" ]; then
        notok "$d (no runs: $2 ${kv_:-none}, $1 ${kw_:-none})"
        return
    fi
    # shellcheck disable=SC2086 # "K T", split on purpose
    set -- "$1" "$2" $kv_ $kw_
    tcheck "$d ($2 $3 at $4 ticks; $1 $5 at $6, $(pct_of "$5" "$3"))" \
        within_pct "$5" "$3" "$KU_PCT"
}
