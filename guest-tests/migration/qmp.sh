#!/usr/bin/env bash
# QMP query-vpmu and the vPMU's -cpu properties, checked from the host.
#
#   qmp.sh
#
# Boots mig-count.elf (see mig-count.c) with -smp 2 and -qmp, waits until
# vCPU 0 is inside its counted loop and checks query-vpmu's JSON
# (vpmu_check.py): one entry per vCPU, the vendor, the counter list (8 GP +
# 3 fixed on Intel, 6 GP on AMD, by default), vCPU 0's programmed counters
# (event, control, state "counting", value > 0, values consistent), the
# others off; values that grow while the guest runs and stay put while it
# is stopped; then the guest must still finish with exact counts.
#
#   counting   Intel and AMD, with GP2 programmed with an event the TCG
#              source cannot back: state "unsupported"
#   catalogue  GP2 counts conditional branches (Skylake 0x01c4, Zen 0xd1):
#              query-vpmu names it "conditional-branches" (docs/events.md),
#              state "counting", the same count as GP1's branches
#   filter     pmu-event-filter=deny 0xc0: GP0 (instructions) "filtered", value
#              0, filtered > 0; the guest reads 0 from it, the other
#              counters exact
#   reset      -S: every counter off and 0 before the guest runs; the
#              layout follows pmu-version / pmu-gp-counters /
#              pmu-fixed-counters
#   pmu=off    -cpu ...,pmu=off and named models without pmu: empty list;
#              -cpu max: a vPMU by default
#   refusals   bad pmu-event-filter strings and bad pmu-* properties (also
#              pmu-cycles=bogus, and pmu-cycles=cputime with -icount): QEMU
#              refuses to start (status not 0, no signal) with a message
#              naming pmu-event-filter / the field
#
# Environment: QEMU, O (logs in O/qmp/), N (loop iterations, default
# 0xF0000000), INTEL_CPU (default Skylake-Client), AMD_CPU (default EPYC)
# -- model names only, the script adds the properties --, TIMEOUT,
# QEMU_EXTRA (more QEMU arguments).
#
# Prints one TAP stream (guest-tests/tap.sh); exit status 0 once it is out
# (failures are "not ok" lines), 2 ("Bail out!") without QEMU or payload.
set -u
name=qmp
case ${1:-} in -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac

# The guest must still be in its counted loop at the stop, about a second
# after it reached it (two queries, QMP and Python start-up each): TCG runs
# mig-count's 2-instruction loop at ~2e9 instructions a second here, and
# migrate.sh's 2.15e9 were done before the stop.
N=${N:-0xF0000000}
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

intel=${INTEL_CPU:-Skylake-Client}
amd=${AMD_CPU:-EPYC}

tap_begin
echo "# $qemu, n=$N"

# check_json FILE ARGS...: vpmu_check.py on FILE; its lines become TAP.
check_json() {
    local file=$1 line st rest desc diag
    shift
    while IFS= read -r line; do
        st=${line%%|*} rest=${line#*|}
        desc=${rest%%|*} diag=${rest#*|}
        tap "$st" "$desc" "$diag"
    done < <(python3 "$here/vpmu_check.py" "$@" <"$file" 2>&1 ||
             echo "1|vpmu_check.py failed on $file|$(head -c 300 "$file")")
}

# query TAG FILE: query-vpmu into FILE; false if QMP failed.
query() {
    qmp "$1" query-vpmu >"$2" && [ -s "$2" ]
}

# json_get FILE EXPR: a value out of a query-vpmu reply (Python, d = reply).
json_get() {
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

# counting VENDOR CPU GP FIXED GP2 [filter]: the programmed-counters run.
counting() {
    local v=$1 cpu=$2 gp=$3 fixed=$4 gp2=$5 mode=${6:-} tag t0 q want0 a b
    local extra=(--gp2-state unsupported) append="n=$N gp2=$gp2"
    t0=$(date +%s.%N)
    tag=$v-${mode:-counting}
    want0=$INSNS
    if [ "$mode" = filter ]; then
        extra+=(--gp0-state filtered)
        append="$append deny_insns=1"
        want0=0
    elif [ "$mode" = catalogue ]; then
        extra=(--gp2-state counting --gp2-event conditional-branches)
    fi
    echo "# ---- $tag: -smp 2 -cpu '$cpu', guest: $append"
    qemu_start "$tag" "$cpu" "$append" -smp 2
    if ! wait_marker "$tag"; then
        tap 1 "$tag: guest reached the counted loop" \
            "$(grep -v "TCG doesn't support" "$logdir/$tag.stderr")"
        qemu_wait "$tag" 1
        return
    fi
    q=$logdir/$tag
    if ! query "$tag" "$q.1.json"; then
        tap 1 "$tag: query-vpmu answers" "$(cat "$logdir/$tag.qmp-errors")"
        qemu_wait "$tag" 1
        return
    fi
    check_json "$q.1.json" --label "$tag" --vendor "$v" --cpus 2 --gp "$gp" \
        --fixed "$fixed" --programmed "${extra[@]}"
    # Live: a later query shows more (fixed 0 on Intel when GP0 is denied).
    local ctr='d[0]["counters"][0]["value"]'
    [ "$mode" = filter ] && ctr='d[0]["counters"][1]["value"]'
    sleep 0.3
    query "$tag" "$q.2.json"
    a=$(json_get "$q.1.json" "$ctr") b=$(json_get "$q.2.json" "$ctr")
    [ "$b" -gt "$a" ] 2>/dev/null
    tap $? "$tag: the counter grows while the guest runs ($a -> $b)"
    if [ "$mode" = filter ]; then
        a=$(json_get "$q.2.json" 'd[0]["counters"][0]["value"]')
        [ "$a" = 0 ]
        tap $? "$tag: the denied counter is still 0 later ($a)"
    fi
    qmp "$tag" stop >/dev/null
    local answered=0
    query "$tag" "$q.3.json" || answered=1
    sleep 0.2
    query "$tag" "$q.4.json" || answered=1
    [ $answered = 0 ] && cmp -s "$q.3.json" "$q.4.json"
    tap $? "$tag: query-vpmu is the same twice while stopped" \
        "$(cat "$logdir/$tag.qmp-errors" 2>/dev/null)"
    local bad
    bad=$(python3 "$here/vpmu_check.py" --vendor "$v" --cpus 2 --gp "$gp" \
          --fixed "$fixed" --programmed "${extra[@]}" <"$q.4.json" 2>&1 |
          grep -v '^0|')
    [ -z "$bad" ]
    tap $? "$tag: the stopped snapshot passes the same checks" "$bad"
    qmp "$tag" cont >/dev/null
    qemu_wait "$tag"
    local msg
    msg=$(guest_exact "$tag" "$RC" "$want0")
    tap $? "$tag: the guest finishes with exact counts (GP0 $want0)" "$msg"
    echo "# $tag: $(elapsed "$t0") s"
}

# prelaunch TAG CPU CHECK-ARGS...: -S, query-vpmu, quit.
prelaunch() {
    local tag=$1 cpu=$2
    shift 2
    qemu_start "$tag" "$cpu" "n=1" -smp 2 -S
    if query "$tag" "$logdir/$tag.json"; then
        check_json "$logdir/$tag.json" --label "$tag (-cpu $cpu, -S)" "$@"
    else
        tap 1 "$tag (-cpu $cpu): query-vpmu answers" \
            "$(cat "$logdir/$tag.qmp-errors" 2>/dev/null)" \
            "$(grep -v "TCG doesn't support" "$logdir/$tag.stderr")"
    fi
    qmp "$tag" quit >/dev/null
    qemu_wait "$tag" 30
}

# refuse TAG CPU DESC PATTERN [QEMU ARGS...]: QEMU must not start: it
# exits by itself, status not 0 and no signal, with an error matching
# PATTERN (ERE).
refuse() {
    local tag=$1 cpu=$2 desc=$3 pat=$4 err why=''
    shift 4
    qemu_start "$tag" "$cpu" "n=1" -S "$@"
    qemu_wait "$tag" 30
    err=$(grep -v "TCG doesn't support" "$logdir/$tag.stderr" |
          sed 's/^[^ :]*: //')
    if [ "$RC" -eq 0 ] || [ "$RC" -ge 124 ]; then
        why="QEMU status $RC: $(explain "$RC")"
    elif ! grep -qE -- "$pat" <<<"$err"; then
        why="no /$pat/ in the error"
    fi
    [ -z "$why" ]
    tap $? "$desc: refused, status $RC ($(head -1 <<<"$err"))" "$why" "$err"
}

counting intel "$intel,pmu=on" 8 3 0x43412e         # GP2: LLC misses
counting amd "$amd,pmu=on" 6 0 0x4300c3             # GP2: branch mispredicts
counting intel "$intel,pmu=on,pmu-event-filter=deny 0xc0" 8 3 0x43412e filter
counting amd "$amd,pmu=on,pmu-event-filter=deny 0xc0" 6 0 0x4300c3 filter
counting intel "$intel,pmu=on" 8 3 0x4301c4 catalogue  # GP2: conditional
counting amd "$amd,pmu=on" 6 0 0x4300d1 catalogue      # branches

echo "# ---- before the guest runs (-S)"
prelaunch intel-reset "$intel,pmu=on" --vendor intel --cpus 2 --gp 8 --fixed 3
prelaunch amd-reset "$amd,pmu=on" --vendor amd --cpus 2 --gp 6
prelaunch intel-v3 "$intel,pmu=on,pmu-version=3" --vendor intel --cpus 2 --gp 8 --fixed 3
prelaunch intel-v1 "$intel,pmu=on,pmu-version=1" --vendor intel --cpus 2 --gp 8 --fixed 0
prelaunch intel-4gp "$intel,pmu=on,pmu-gp-counters=4,pmu-fixed-counters=1" \
    --vendor intel --cpus 2 --gp 4 --fixed 1
prelaunch amd-3gp "$amd,pmu=on,pmu-gp-counters=3" --vendor amd --cpus 2 --gp 3
prelaunch intel-off "$intel,pmu=off" --empty
prelaunch intel-nopmu "$intel" --empty
prelaunch amd-off "$amd,pmu=off" --empty
prelaunch intel-v9-off "$intel,pmu=off,pmu-version=9" --empty
qemu_start max "max" "n=1" -S
query max "$logdir/max.json"
n=$(json_get "$logdir/max.json" 'len(d)' 2>/dev/null)
[ "${n:-0}" -eq 1 ]
tap $? "-cpu max has a vPMU by default (docs/tcg.md): one entry ($(json_get "$logdir/max.json" 'd[0]["vendor"] if d else "none"' 2>/dev/null))"
qmp max quit >/dev/null
qemu_wait max 30

echo "# ---- refusals"
refuse bad-filter-1 "$intel,pmu=on,pmu-event-filter=bogus" "pmu-event-filter=bogus" 'pmu-event-filter'
refuse bad-filter-2 "$intel,pmu=on,pmu-event-filter=deny 0xzz" "pmu-event-filter='deny 0xzz'" 'pmu-event-filter'
refuse bad-filter-3 "$intel,pmu=on,pmu-event-filter=" "pmu-event-filter= (empty)" 'pmu-event-filter'
refuse bad-filter-4 "$intel,pmu=on,pmu-event-filter=deny 0x1c0:0x100" "pmu-event-filter='deny 0x1c0:0x100'" 'pmu-event-filter'
refuse bad-filter-5 "$intel,pmu=on,pmu-event-filter=allow fixed=0xzz" "pmu-event-filter='allow fixed=0xzz'" 'pmu-event-filter'
refuse bad-filter-amd "$amd,pmu=on,pmu-event-filter=maybe 0xc0" "AMD pmu-event-filter='maybe 0xc0'" 'pmu-event-filter'
# libvpmu names its own config fields (intel_version, nr_gp, ...); accept
# those or the property names.
refuse bad-version "$intel,pmu=on,pmu-version=9" "pmu-version=9" 'pmu-version|intel_version'
refuse bad-version-0 "$intel,pmu=on,pmu-version=0" "pmu-version=0" 'pmu-version|intel_version'
refuse bad-gp "$intel,pmu=on,pmu-gp-counters=9" "pmu-gp-counters=9" 'pmu-gp-counters|nr_gp'
refuse bad-gp-amd "$amd,pmu=on,pmu-gp-counters=7" "AMD pmu-gp-counters=7" 'pmu-gp-counters|nr_gp'
refuse bad-fixed "$intel,pmu=on,pmu-fixed-counters=4" "pmu-fixed-counters=4 (version 2)" 'pmu-fixed-counters|nr_fixed'
refuse bad-width "$intel,pmu=on,pmu-width=64" "pmu-width=64" 'pmu-width|gp_width'
refuse bad-width-31 "$intel,pmu=on,pmu-width=31" "pmu-width=31" 'pmu-width|gp_width'
refuse bad-version-256 "$intel,pmu=on,pmu-version=256" "pmu-version=256 (not a uint8)" 'pmu-version'
refuse bad-cycles "$intel,pmu=on,pmu-cycles=bogus" "pmu-cycles=bogus" 'pmu-cycles=bogus: expected cputime, tsc or insns'
refuse bad-cycles-icount "$amd,pmu=on,pmu-cycles=cputime" "pmu-cycles=cputime with -icount" \
    'pmu-cycles=cputime: under -icount' -icount shift=0
# The KVM accelerator's vpmu-rdpmc and vpmu-multiplex: parsed when the
# accelerator object is made, before /dev/kvm is opened, so this needs no KVM.
# refuse_accel PROP VALUE ALLOWED: -accel kvm,vpmu=on,PROP=VALUE is refused
# with "PROP: 'VALUE' is not ALLOWED".
refuse_accel() {
    local err RC why=''
    err=$(timeout 30 "$qemu" "${fw[@]}" -accel "kvm,vpmu=on,$1=$2" \
          -display none -nodefaults -S </dev/null 2>&1 >/dev/null)
    RC=$?
    if [ "$RC" -eq 0 ] || [ "$RC" -ge 124 ]; then
        why="QEMU status $RC"
    elif ! grep -qF "$1: '$2' is not $3" <<<"$err"; then
        why="not the $1 error"
    fi
    [ -z "$why" ]
    tap $? "-accel kvm,$1=$2: refused, status $RC ($(head -1 <<<"$err"))" "$why" "$err"
}
refuse_accel vpmu-rdpmc bogus "'live' or 'snapshot'"
refuse_accel vpmu-multiplex scale "'raw' or 'scaled'"
# vpmu-sync is a QAPI enum (X86VpmuSync): QEMU's own words.
err=$(timeout 30 "$qemu" "${fw[@]}" -accel kvm,vpmu=on,vpmu-sync=bogus \
      -display none -nodefaults -S </dev/null 2>&1 >/dev/null)
RC=$?
[ "$RC" -ne 0 ] && [ "$RC" -lt 124 ] &&
    grep -qF "Parameter 'vpmu-sync' does not accept value 'bogus'" <<<"$err"
tap $? "-accel kvm,vpmu-sync=bogus: refused, status $RC ($(head -1 <<<"$err"))" "" "$err"
# vpmu-sync=linux needs KVM's vPMU with the global MSRs: where KVM has
# none (this cloud VM's /dev/kvm), QEMU says which and does not start;
# where it has them, QEMU starts (paused, killed after 10 s).
if [ -c /dev/kvm ] && [ -w /dev/kvm ]; then
    err=$(timeout 10 "$qemu" "${fw[@]}" -accel kvm,vpmu=on,vpmu-sync=linux \
          -cpu host,pmu=on,-arch-capabilities -display none -nodefaults -S \
          </dev/null 2>&1 >/dev/null)
    RC=$?
    if [ "$RC" -eq 124 ]; then
        [ -z "$err" ]
        tap $? "-accel kvm,vpmu-sync=linux: starts on this KVM (its vPMU has the global MSRs)" "" "$err"
    else
        grep -qE "vpmu-sync=linux: sync=linux needs the global control .*\((KVM has no vPMU|KVM's vPMU has no global MSRs)\)" <<<"$err"
        tap $? "-accel kvm,vpmu-sync=linux: refused, status $RC, with the reason" "" "$err"
    fi
else
    tap_skip "-accel kvm,vpmu-sync=linux: refused or started" "no usable /dev/kvm"
fi

# A filter with several entries.  Inside -cpu they are separated by
# spaces: x86's -cpu parser splits at every comma (strtok), so ",," is no
# escape there (docs/tcg.md claimed it was).  -global does not split its
# value, so commas work there.
started() {     # started TAG DESC: QEMU came up (QMP answers), then quit
    local st
    st=$(qmp "$1" query-status)
    [[ $st == *'"prelaunch"'* ]]
    tap $? "$2" "$(grep -v "TCG doesn't support" "$logdir/$1.stderr")"
    qmp "$1" quit >/dev/null
    qemu_wait "$1" 30
}
qemu_start filter-spaces "$intel,pmu=on,pmu-event-filter=deny 0xc0 0xc4 fixed=0x1" "n=1" -S
started filter-spaces "-cpu ...,pmu-event-filter='deny 0xc0 0xc4 fixed=0x1' (spaces) starts"
qemu_start filter-global "$intel,pmu=on" "n=1" -S \
    -global "$intel-x86_64-cpu.pmu-event-filter=deny 0xc0,0xc4"
started filter-global "-global $intel-x86_64-cpu.pmu-event-filter='deny 0xc0,0xc4' (commas) starts"
qemu_start comma "$intel,pmu=on,pmu-event-filter=deny 0xc0,,0xc4" "n=1" -S
qemu_wait comma 30
grep -q "0xc4" "$logdir/comma.stderr" && [ "$RC" -ne 0 ] && [ "$RC" -lt 124 ]
tap $? "-cpu ...,pmu-event-filter='deny 0xc0,,0xc4': ',,' is no escape in -cpu, refused (status $RC)" \
    "$(grep -v "TCG doesn't support" "$logdir/comma.stderr")"

# The PMU's own CPUID bits are vpmu's to give under TCG: no "TCG doesn't
# support" warning for them with pmu=on (QEMU patch 0006), as before with
# pmu=off.
echo "# ---- CPUID bits the vPMU provides"
for p in on off; do
    qemu_start "epyc3-$p" "EPYC-v3,pmu=$p" "n=1" -S
    qmp "epyc3-$p" quit >/dev/null
    qemu_wait "epyc3-$p" 30
done
! grep -q "perfctr-core" "$logdir/epyc3-on.stderr" &&
    # QEMU 7.2: "CPUID.80000001H:ECX.perfctr-core"; 10.x:
    # "CPUID[eax=80000001h].ECX.perfctr-core [bit 23]".
    grep -Eq "TCG doesn't support requested feature: CPUID(\.80000001H:|\[eax=80000001h\]\.)ECX\.perfctr-core" \
        "$logdir/epyc3-off.stderr"
tap $? "-cpu EPYC-v3,pmu=on: no warning for perfctr-core (pmu=off: TCG's warning)" \
    "$(grep perfctr "$logdir"/epyc3-*.stderr)"

tap_done
