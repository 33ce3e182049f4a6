#!/usr/bin/env bash
# Migration of a guest whose PMU counters are running: no count may be lost
# or invented.
#
#   migrate.sh [intel|amd]...          (default: both)
#
# The guest (mig-count.elf, see mig-count.c for the derivation) enables
# an instructions counter (GP0), a branches counter (GP1) and, on Intel,
# fixed counter 0, runs n iterations of dec/jnz (a few seconds of TCG),
# disables them and checks GP0 = fixed 0 = 2n + 5, GP1 = n.  The host
# stops or migrates it while it is inside that loop:
#
#   control  no migration
#   file     stop, migrate "exec:cat > FILE", quit; a second QEMU with
#            -incoming "exec:cat FILE" must show the same counters before
#            cont; it runs on a little, is stopped and migrated again to a
#            third QEMU (two hops); the guest must finish exact
#   live     migrate while the guest runs (the source stops itself at
#            completion); the destination (-S) shows the counters the
#            source had, cont, exact
#   savevm   (needs qemu-img) stop, savevm, cont, run on, stop, loadvm:
#            the counters go back to the snapshot's values; cont, exact;
#            then a new QEMU with -loadvm -S: same values, cont, exact
#   overflow GP0 preset to overflow after n events (half way), stopped and
#            migrated before that: it must overflow on the destination,
#            exactly (2n + 5 - n, status bit 0); and again with INT set:
#            exactly one PMI
#   corrupt  the "file" stream with bytes changed inside the cpu/vpmu
#            subsection's blob (bad CRC, magic, format, layout, register
#            values, length) or loaded by a QEMU with another PMU
#            configuration: the destination must refuse (exit status not
#            0, no signal, an error naming vpmu) and the guest must not run
#
# Environment:
#   QEMU       emulator (default build/qemu/qemu-system-x86_64)
#   O          build and log directory (default build/migration); logs go
#              to O/migrate/
#   N          loop iterations (default 0x40000000, ~2.15e9 instructions;
#              raise it if a fast host leaves the loop before the stop)
#   INTEL_CPU  default Skylake-Client,pmu=on
#   AMD_CPU    default EPYC,pmu=on
#   TIMEOUT    per-QEMU timeout in seconds (default 180)
#   QEMU_EXTRA more QEMU arguments for every QEMU, e.g. "-icount shift=0"
#
# Prints one TAP stream (guest-tests/tap.sh); exit status 0 once it is out
# (failures are "not ok" lines), 2 ("Bail out!") without QEMU or payload.
set -u
name=migrate
case ${1:-} in -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
vendors=("$@")
[ ${#vendors[@]} -eq 0 ] && vendors=(intel amd)
for v in "${vendors[@]}"; do
    case $v in intel|amd) ;; *) echo "migrate.sh: unknown vendor '$v'" >&2; exit 2 ;; esac
done

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

tap_begin
echo "# $qemu, n=$N: GP0 and fixed 0 must count $INSNS, GP1 $BRANCHES"

cpu_of() {
    if [ "$1" = intel ]; then echo "${INTEL_CPU:-Skylake-Client,pmu=on}"
    else echo "${AMD_CPU:-EPYC,pmu=on}"; fi
}

# same A B DESC: the two vpmu_summary lines must be equal.
same() {
    [ "$1" = "$2" ]
    tap $? "$3" "before: $1" "after:  $2"
}

# grew OLD NEW DESC: NEW is still inside the loop and counted further.
grew() {
    local why st=0
    why=$(midloop "$2") || st=1
    if [ $st -eq 0 ] && ! [ "$(field ins "$2")" -gt "$(field ins "$1")" ]; then
        st=1 why="did not count on: $1 -> $2"
    fi
    tap $st "$3" "$why"
}

# stop_and_check TAG DESC: stop the guest, which must be inside the loop;
# the vpmu_summary goes to $S.
stop_and_check() {
    local tag=$1 why
    qmp "$tag" stop >/dev/null
    S=$(qmp "$tag" query-vpmu | vpmu_summary)
    why=$(midloop "$S")
    tap $? "$2 ($S)" "$why"
}

# migrate_to TAG FILE DESC: migrate TAG to FILE, wait until completed.
migrate_to() {
    qmp "$1" migrate "{\"uri\": \"exec:cat > '$2'\"}" >/dev/null &&
        qmp "$1" --wait-migrate 120 >/dev/null
    tap $? "$3" "see $logdir/$1.qmp-errors"
}

# quit_ok TAG DESC: quit through QMP; QEMU must exit with status 0.
quit_ok() {
    local rc
    qmp "$1" quit >/dev/null
    qemu_wait "$1" 30; rc=$RC
    [ "$rc" -eq 0 ]
    tap $? "$2 (status $rc)" "$(explain "$rc")"
}

# incoming TAG CPU APPEND FILE [ARGS]: start a destination (the same
# arguments as the source, plus -incoming) and wait for the load.
incoming() {
    local tag=$1 cpu=$2 append=$3 file=$4 st
    shift 4
    qemu_start "$tag" "$cpu" "$append" -incoming "exec:cat '$file'" "$@"
    st=$(qmp "$tag" --wait-status 120)
    case $st in
    *'"paused"'*) return 0 ;;
    *) echo "# $tag: status after load: ${st:-none}"; return 1 ;;
    esac
}

finish() {   # finish TAG DESC: cont, wait, exact counts
    local rc msg
    qmp "$1" cont >/dev/null
    qemu_wait "$1"; rc=$RC
    msg=$(guest_exact "$1" "$rc")
    tap $? "$2" "$msg"
}

abandon() {  # abandon TAG...: kill what is left of a failed scenario
    local tag
    for tag in "$@"; do
        [ -n "${qpid[$tag]:-}" ] && kill "${qpid[$tag]}" 2>/dev/null &&
            qemu_wait "$tag" 10
    done
}

scenario_control() {
    local v=$1 cpu rc msg t0
    cpu=$(cpu_of "$v")
    t0=$(date +%s.%N)
    qemu_start "$v-control" "$cpu" "n=$N"
    qemu_wait "$v-control"; rc=$RC
    msg=$(guest_exact "$v-control" "$rc")
    tap $? "$v control, no migration: exact counts" "$msg"
    echo "# $v control: $(elapsed "$t0") s"
}

scenario_file() {
    local v=$1 cpu s1 s2 s3 s4 t0 f1 f2
    cpu=$(cpu_of "$v")
    t0=$(date +%s.%N)
    f1=$logdir/$v-hop1.mig f2=$logdir/$v-hop2.mig
    qemu_start "$v-src" "$cpu" "n=$N"
    if ! wait_marker "$v-src"; then
        tap 1 "$v file: guest reached the counted loop" "see $logdir/$v-src.*"
        abandon "$v-src"
        return
    fi
    stop_and_check "$v-src" "$v file: source stopped inside the loop"
    s1=$S
    migrate_to "$v-src" "$f1" "$v file: migrate to $(basename "$f1") completed"
    quit_ok "$v-src" "$v file: source quits"

    if ! incoming "$v-hop1" "$cpu" "n=$N" "$f1"; then
        tap 1 "$v file: hop 1 destination loaded the stream" \
            "$(grep -v "TCG doesn't support" "$logdir/$v-hop1.stderr")"
        abandon "$v-hop1"
        return
    fi
    s2=$(qmp "$v-hop1" query-vpmu | vpmu_summary)
    same "$s1" "$s2" "$v file: hop 1 destination has the source's counters before cont"
    qmp "$v-hop1" cont >/dev/null
    sleep 0.5
    stop_and_check "$v-hop1" "$v file: hop 1 counted on, stopped inside the loop"
    s3=$S
    grew "$s2" "$s3" "$v file: hop 1 counted on from the loaded values"
    migrate_to "$v-hop1" "$f2" "$v file: hop 1 migrated to $(basename "$f2")"
    quit_ok "$v-hop1" "$v file: hop 1 quits"

    if ! incoming "$v-hop2" "$cpu" "n=$N" "$f2"; then
        tap 1 "$v file: hop 2 destination loaded the stream"
        abandon "$v-hop2"
        return
    fi
    s4=$(qmp "$v-hop2" query-vpmu | vpmu_summary)
    same "$s3" "$s4" "$v file: hop 2 destination has hop 1's counters before cont"
    finish "$v-hop2" "$v file: after two hops the guest counts exactly (no count lost or invented)"
    echo "# $v file (stop + migrate, two hops): $(elapsed "$t0") s"
}

scenario_live() {
    local v=$1 cpu s1 s2 st t0 f why
    cpu=$(cpu_of "$v")
    t0=$(date +%s.%N)
    f=$logdir/$v-live.mig
    qemu_start "$v-live-src" "$cpu" "n=$N"
    if ! wait_marker "$v-live-src"; then
        tap 1 "$v live: guest reached the counted loop"
        abandon "$v-live-src"
        return
    fi
    migrate_to "$v-live-src" "$f" "$v live: migration of the running guest completed"
    st=$(qmp "$v-live-src" query-status)
    s1=$(qmp "$v-live-src" query-vpmu | vpmu_summary)
    why=$(midloop "$s1")
    [[ $st == *'"postmigrate"'* ]] && [ -z "$why" ]
    tap $? "$v live: source stopped itself inside the loop ($s1)" "$st" "$why"
    quit_ok "$v-live-src" "$v live: source quits"
    if ! incoming "$v-live-dst" "$cpu" "n=$N" "$f" -S; then
        tap 1 "$v live: destination loaded the stream"
        abandon "$v-live-dst"
        return
    fi
    s2=$(qmp "$v-live-dst" query-vpmu | vpmu_summary)
    same "$s1" "$s2" "$v live: destination has the source's final counters"
    finish "$v-live-dst" "$v live: the guest counts exactly after live migration"
    echo "# $v live: $(elapsed "$t0") s"
}

scenario_savevm() {
    local v=$1 cpu img s1 s2 s3 s4 out t0 drive
    cpu=$(cpu_of "$v")
    t0=$(date +%s.%N)
    if ! command -v qemu-img >/dev/null; then
        tap_skip "$v savevm/loadvm" "no qemu-img (apt-get install qemu-utils)"
        return
    fi
    img=$logdir/$v-vmstate.qcow2
    qemu-img create -q -f qcow2 "$img" 16M
    drive=(-drive "if=none,id=vmstate,format=qcow2,file=$img")
    qemu_start "$v-savevm" "$cpu" "n=$N" "${drive[@]}"
    if ! wait_marker "$v-savevm"; then
        tap 1 "$v savevm: guest reached the counted loop"
        abandon "$v-savevm"
        return
    fi
    stop_and_check "$v-savevm" "$v savevm: stopped inside the loop"
    s1=$S
    out=$(qmp "$v-savevm" --hmp "savevm mig1")
    tap $? "$v savevm: savevm mig1" "$out"
    qmp "$v-savevm" cont >/dev/null
    sleep 0.5
    stop_and_check "$v-savevm" "$v savevm: ran on after savevm, stopped in the loop"
    s2=$S
    grew "$s1" "$s2" "$v savevm: counted on after savevm"
    out=$(qmp "$v-savevm" --hmp "loadvm mig1")
    tap $? "$v savevm: loadvm mig1 in the same QEMU" "$out"
    s3=$(qmp "$v-savevm" query-vpmu | vpmu_summary)
    same "$s1" "$s3" "$v savevm: loadvm puts the snapshot's counters back (the counts since are dropped)"
    finish "$v-savevm" "$v savevm: after loadvm the guest counts exactly"

    qemu_start "$v-loadvm" "$cpu" "n=$N" "${drive[@]}" -loadvm mig1 -S
    s4=$(qmp "$v-loadvm" query-vpmu | vpmu_summary)
    same "$s1" "$s4" "$v savevm: a new QEMU with -loadvm has the snapshot's counters"
    finish "$v-loadvm" "$v savevm: after -loadvm the guest counts exactly"
    echo "# $v savevm/loadvm: $(elapsed "$t0") s"
}

# overflow VENDOR [pmi]: GP0 preset K = N events before overflow, so it
# overflows after the migration, on the destination.  Exact: GP0 ends at
# 2N + 5 - K, status bit 0.  pmi: GP0 also has INT; exactly one PMI must
# arrive (counts then include the handler's few instructions).
scenario_overflow() {
    local v=$1 mode=${2:-exact} cpu t0 f k s1 s2 ins br fx calc why='' tag rc msg
    local append
    cpu=$(cpu_of "$v")
    t0=$(date +%s.%N)
    k=$((N))
    append="n=$N preset=$k"
    [ "$mode" = pmi ] && append="$append pmi=1"
    tag=$v-ovf-$mode
    f=$logdir/$tag.mig
    qemu_start "$tag-src" "$cpu" "$append"
    if ! wait_marker "$tag-src"; then
        tap 1 "$tag: guest reached the counted loop"
        abandon "$tag-src"
        return
    fi
    qmp "$tag-src" stop >/dev/null
    s1=$(qmp "$tag-src" query-vpmu | vpmu_summary)
    ins=$(field ins "$s1") br=$(field br "$s1") fx=$(field fx "$s1")
    calc=$((2 * br + 2))
    if ! [ "$br" -gt 0 ] 2>/dev/null || [ $calc -ge "$k" ]; then
        why="stopped at $calc instructions, not inside (0, $k): before the overflow"
    elif [ "$ins" -ne $(((1 << 48) - k + calc)) ]; then
        why="GP0 $ins != 2^48 - $k + $calc"
    elif [ "$fx" != - ] && [ "$fx" -ne $calc ]; then
        why="fixed 0 $fx != $calc"
    fi
    [ -z "$why" ]
    tap $? "$tag: stopped before GP0 overflows, GP0 = 2^48 - $k + 2 * GP1 + 2 ($s1)" "$why"
    migrate_to "$tag-src" "$f" "$tag: migrate to $(basename "$f") completed"
    quit_ok "$tag-src" "$tag: source quits"
    if ! incoming "$tag-dst" "$cpu" "$append" "$f"; then
        tap 1 "$tag: destination loaded the stream"
        abandon "$tag-dst"
        return
    fi
    s2=$(qmp "$tag-dst" query-vpmu | vpmu_summary)
    same "$s1" "$s2" "$tag: destination has the source's counters before cont"
    qmp "$tag-dst" cont >/dev/null
    qemu_wait "$tag-dst"
    rc=$RC
    if [ "$mode" = pmi ]; then
        msg=$(guest_ok "$tag-dst" "$rc") &&
            { grep -q 'ok .* exactly one PMI' "$logdir/$tag-dst.serial" ||
                msg="no PMI check in the guest's output"; }
        [ -z "$msg" ]
        tap $? "$tag: GP0 overflowed on the destination: status bit 0, exactly one PMI" "$msg"
    else
        msg=$(guest_exact "$tag-dst" "$rc" $((INSNS - k)))
        tap $? "$tag: GP0 overflowed on the destination: exactly $((INSNS - k)), status bit 0" "$msg"
    fi
    echo "# $tag: $(elapsed "$t0") s"
}

# corrupt IN OUT KIND: copy the migration stream IN to OUT with the cpu/vpmu
# subsection changed.  The subsection is QEMU_VM_SUBSECTION (0x05), the
# name length and "cpu/vpmu", version_id (u32 BE, 1), then the fields:
# vpmu_blob_len (u32 BE) and the blob (libvpmu state format 1, see
# vpmu/core/state.c: "VPMU", u16 format, u8 vendor, u8 version/level, u8
# nr_gp, nr_fixed, gp_width, fixed_width, u8 flags, 3 zero, u32 payload
# bytes; u64 GLOBAL_CTRL, GLOBAL_STATUS, DEBUGCTL; per counter u64
# control, u64 value; u32 CRC-32).  Kinds ending in "+crc" get a valid CRC
# again, so the check after the CRC is reached.
corrupt() {
    python3 - "$@" <<'EOF'
import struct, sys, zlib
src, dst, kind = sys.argv[1:4]
d = bytearray(open(src, "rb").read())
tag = b"\x05\x08cpu/vpmu\x00\x00\x00\x01"
i = d.find(tag)
if i < 0 or d.find(tag, i + 1) >= 0:
    sys.exit("corrupt: want exactly one cpu/vpmu subsection")
L = i + len(tag)                    # vpmu_blob_len
B = L + 4                           # the blob
n = struct.unpack(">I", d[L:L + 4])[0]
assert d[B:B + 4] == b"VPMU", "no VPMU magic where expected"
GP0_CTL, GP0_VAL = B + 20 + 24, B + 20 + 24 + 8
base = kind.replace("+crc", "")
if base == "crc":
    d[GP0_VAL] ^= 0x01              # GP0's count, CRC left as it was
elif base == "magic":
    d[B] = ord("X")
elif base == "format":
    d[B + 4] = 2                    # format version 2
elif base == "layout":
    d[B + 8] -= 1                   # nr_gp
elif base == "value":
    d[GP0_VAL + 6] |= 0x01          # bit 48: wider than the counter
elif base == "evtsel":
    d[GP0_CTL + 4] |= 0x01          # EVTSEL bit 32: reserved on Intel
elif base == "short":
    struct.pack_into(">I", d, L, n - 1)
elif base == "huge":
    struct.pack_into(">I", d, L, 0x80000000)
else:
    sys.exit("corrupt: unknown kind " + kind)
if kind.endswith("+crc"):
    struct.pack_into("<I", d, B + n - 4, zlib.crc32(bytes(d[B:B + n - 4])))
open(dst, "wb").write(d)
EOF
}

# refused TAG CPU FILE WANT DESC: a destination loading FILE must exit on
# its own, with a status that is neither 0 nor a signal, print an error
# naming vpmu and matching the ERE WANT, and never run the guest.
refused() {
    local tag=$1 cpu=$2 file=$3 want=$4 desc=$5 rc err why='' first
    qemu_start "$tag" "$cpu" "n=$N" -incoming "exec:cat '$file'"
    qemu_wait "$tag" 60; rc=$RC
    err=$(grep -v "TCG doesn't support" "$logdir/$tag.stderr")
    if [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ]; then
        why="QEMU status $rc: $(explain "$rc")"
    elif ! grep -qE '(^|: )vpmu:|cpu/vpmu' <<<"$err"; then
        why="no error naming vpmu"
    elif ! grep -qE -- "$want" <<<"$err"; then
        why="no /$want/ in the error"
    elif [ -s "$logdir/$tag.serial" ]; then
        why="the guest ran: $(tail -1 "$logdir/$tag.serial")"
    fi
    first=$(grep -m1 -E '(^|: )vpmu:|cpu/vpmu' <<<"$err" | sed 's/^[^ :]*: //')
    [ -z "$first" ] && first=$(head -1 <<<"$err" | sed 's/^[^ :]*: //')
    [ -z "$why" ]
    tap $? "$desc: refused ($first)" "$why" "$(head -3 <<<"$err")"
}

scenario_corrupt() {
    local v=$1 cpu good k f other t0 kinds
    cpu=$(cpu_of "$v")
    t0=$(date +%s.%N)
    good=$logdir/$v-hop1.mig
    if [ ! -s "$good" ]; then
        tap 1 "$v corrupt: no stream from the file scenario to corrupt"
        return
    fi
    # kind|error QEMU must print (ERE)|what was changed.  A length that is
    # not the destination's state size is refused by the VMSTATE_VALIDATE
    # before the buffer ("vpmu state size") since commit c331852; older
    # builds get to libvpmu's check (Bad message / Invalid argument).
    local size='vpmu state size'
    kinds=("crc|Bad message|a GP0 count bit flipped, CRC left stale"
           "magic|Bad message|magic VPMU changed to XPMU"
           "format+crc|Protocol not supported|format version 2"
           "layout+crc|Invalid argument|nr_gp one less in the header"
           "value+crc|Invalid argument|GP0 count with bit 48 set, wider than the counter"
           "short|Bad message|$size|vpmu_blob_len one byte short")
    [ "$v" = intel ] &&
        kinds+=("evtsel+crc|Invalid argument|EVTSEL0 with reserved bit 32 set")
    for k in "${kinds[@]}"; do
        local kind=${k%%|*} want=${k#*|}
        local what=${want##*|}
        want=${want%|*}
        local crc=
        [[ $kind == *+crc ]] && crc=", CRC recomputed"
        f=$logdir/$v-bad-${kind%+crc}.mig
        if ! corrupt "$good" "$f" "$kind"; then
            tap 1 "$v corrupt stream ($what): could not make it"
            continue
        fi
        refused "$v-bad-${kind%+crc}" "$cpu" "$f" "$want" \
            "$v corrupt stream ($what$crc)"
    done
    # A blob length of 2 GiB or more: QEMU's vmstate_size() reads the
    # VBUFFER length as int32_t, so without a check before the allocation
    # g_malloc gets ~2^64 bytes and aborts (QEMU built before c331852).
    f=$logdir/$v-bad-huge.mig
    corrupt "$good" "$f" huge &&
        refused "$v-bad-huge" "$cpu" "$f" "$size|vpmu_blob" \
            "$v corrupt stream (vpmu_blob_len 0x80000000)"
    # Good stream, other PMU on the destination.
    refused "$v-to-nopmu" "${cpu%%,*}" "$good" "this CPU has none|$size" \
        "$v stream into ${cpu%%,*} without pmu"
    refused "$v-to-4gp" "$cpu,pmu-gp-counters=4" "$good" \
        "Invalid argument|$size" "$v stream into $cpu,pmu-gp-counters=4"
    if [ "$v" = intel ]; then other=$(cpu_of amd); else other=$(cpu_of intel); fi
    refused "$v-to-other" "$other" "$good" "Invalid argument|$size" \
        "$v stream into $other (other vendor)"
    echo "# $v corrupt streams: $(elapsed "$t0") s"
}

for v in "${vendors[@]}"; do
    echo "# ==== $v: -cpu $(cpu_of "$v")"
    scenario_control "$v"
    scenario_file "$v"
    scenario_live "$v"
    scenario_savevm "$v"
    scenario_overflow "$v" exact
    scenario_overflow "$v" pmi
    scenario_corrupt "$v"
done
tap_done
