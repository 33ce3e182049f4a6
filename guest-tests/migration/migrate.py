#!/usr/bin/env python3
"""Migration of a guest whose PMU counters are running: no count may be
lost or invented.

  migrate.py [intel|amd]...          (default: both)

The guest (mig-count.elf, see mig-count.c for the derivation) enables an
instructions counter (GP0), a branches counter (GP1) and, on Intel, fixed
counter 0, runs n iterations of dec/jnz (a few seconds of TCG), disables
them and checks GP0 = fixed 0 = 2n + 5, GP1 = n.  The host stops or
migrates it while it is inside that loop:

  control  no migration
  file     stop, migrate "exec:cat > FILE", quit; a second QEMU with
           -incoming "exec:cat FILE" must show the same counters before
           cont; it runs on a little, is stopped and migrated again to a
           third QEMU (two hops); the guest must finish exact
  live     migrate while the guest runs (the source stops itself at
           completion); the destination (-S) shows the counters the
           source had, cont, exact
  savevm   (needs qemu-img) stop, savevm, cont, run on, stop, loadvm:
           the counters go back to the snapshot's values; cont, exact;
           then a new QEMU with -loadvm -S: same values, cont, exact
  overflow GP0 preset to overflow after n events (half way), stopped and
           migrated before that: it must overflow on the destination,
           exactly (2n + 5 - n, status bit 0); and again with INT set:
           exactly one PMI
  corrupt  the "file" stream with bytes changed inside the cpu/vpmu
           subsection's blob (bad CRC, magic, format, layout, register
           values, length) or loaded by a QEMU with another PMU
           configuration: the destination must refuse (exit status not
           0, no signal, an error naming vpmu) and the guest must not run

Environment: QEMU, O (logs in O/migrate/), N (loop iterations, default
0x40000000, ~2.15e9 instructions; raise it if a fast host leaves the loop
before the stop), INTEL_CPU (default Skylake-Client,pmu=on), AMD_CPU
(default EPYC,pmu=on), TIMEOUT, QEMU_EXTRA (miglib.py).

Prints one TAP stream; exit status 0 if every check passed, 1 if one
failed, 2 ("Bail out!") without QEMU or payload.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import zlib

from miglib import Rig, explain, field, as_int, stderr_lines

VENDORS = ("intel", "amd")
rig = None          # the Rig, made by main()


def cpu_of(v):
    if v == "intel":
        return os.environ.get("INTEL_CPU") or "Skylake-Client,pmu=on"
    return os.environ.get("AMD_CPU") or "EPYC,pmu=on"


def same(a, b, desc):
    """The two summaries must be equal."""
    rig.ok(a == b, desc, "before: " + a, "after:  " + b)


def grew(old, new, desc):
    """@new is still inside the loop and counted further than @old."""
    why = rig.midloop(new)
    if not why and not (as_int(field("ins", new)) or 0) > \
            (as_int(field("ins", old)) or 0):
        why = f"did not count on: {old} -> {new}"
    rig.ok(not why, desc, why)


def stop_and_check(tag, desc):
    """Stop the guest, which must be inside the loop: its summary."""
    rig.qmp(tag, "stop")
    s = rig.summary(tag)
    why = rig.midloop(s)
    rig.ok(not why, f"{desc} ({s})", why)
    return s


def migrate_to(tag, path, desc):
    """Migrate TAG to file @path and wait until completed."""
    ok = (rig.qmp(tag, "migrate", {"uri": f"exec:cat > '{path}'"})
          is not None and rig.wait_migrate(tag))
    rig.ok(ok, desc, "see " + rig.log(tag, "qmp-errors"))


def quit_ok(tag, desc):
    """quit through QMP; QEMU must exit with status 0."""
    rig.quit(tag)
    rc = rig.wait(tag, 30)
    rig.ok(rc == 0, f"{desc} (status {rc})", explain(rc))


def incoming(tag, cpu, append, path, *args):
    """Start a destination (the source's arguments plus -incoming) and
    wait for the load: True if it is paused with the state."""
    rig.start(tag, cpu, append, "-incoming", f"exec:cat '{path}'", *args)
    st = rig.wait_status(tag)
    if st == "paused":
        return True
    print(f"# {tag}: status after load: {st}")
    return False


def finish(tag, desc):
    """cont, wait for the guest's end: exact counts."""
    rig.qmp(tag, "cont")
    why = rig.guest_exact(tag, rig.wait(tag))
    rig.ok(not why, desc, why)


def reached_loop(tag, desc, *diags):
    if rig.wait_counting(tag):
        return True
    rig.ok(False, desc, *diags)
    rig.abandon(tag)
    return False


def scenario_control(v):
    t0 = time.monotonic()
    rig.start(f"{v}-control", cpu_of(v), rig.n_arg)
    why = rig.guest_exact(f"{v}-control", rig.wait(f"{v}-control"))
    rig.ok(not why, f"{v} control, no migration: exact counts", why)
    print(f"# {v} control: {rig.elapsed(t0)} s")


def scenario_file(v):
    cpu, t0, app = cpu_of(v), time.monotonic(), rig.n_arg
    f1, f2 = rig.log(f"{v}-hop1", "mig"), rig.log(f"{v}-hop2", "mig")
    src = f"{v}-src"
    rig.start(src, cpu, app)
    if not reached_loop(src, f"{v} file: guest reached the counted loop",
                        "see " + rig.log(src, "*")):
        return
    s1 = stop_and_check(src, f"{v} file: source stopped inside the loop")
    migrate_to(src, f1, f"{v} file: migrate to {os.path.basename(f1)} "
               "completed")
    quit_ok(src, f"{v} file: source quits")

    hop1 = f"{v}-hop1"
    if not incoming(hop1, cpu, app, f1):
        rig.ok(False, f"{v} file: hop 1 destination loaded the stream",
               "\n".join(stderr_lines(rig.log(hop1, "stderr"))))
        rig.abandon(hop1)
        return
    s2 = rig.summary(hop1)
    same(s1, s2, f"{v} file: hop 1 destination has the source's counters "
         "before cont")
    rig.qmp(hop1, "cont")
    time.sleep(0.5)
    s3 = stop_and_check(hop1, f"{v} file: hop 1 counted on, stopped inside "
                        "the loop")
    grew(s2, s3, f"{v} file: hop 1 counted on from the loaded values")
    migrate_to(hop1, f2, f"{v} file: hop 1 migrated to "
               f"{os.path.basename(f2)}")
    quit_ok(hop1, f"{v} file: hop 1 quits")

    hop2 = f"{v}-hop2"
    if not incoming(hop2, cpu, app, f2):
        rig.ok(False, f"{v} file: hop 2 destination loaded the stream")
        rig.abandon(hop2)
        return
    same(s3, rig.summary(hop2), f"{v} file: hop 2 destination has hop 1's "
         "counters before cont")
    finish(hop2, f"{v} file: after two hops the guest counts exactly (no "
           "count lost or invented)")
    print(f"# {v} file (stop + migrate, two hops): {rig.elapsed(t0)} s")


def scenario_live(v):
    cpu, t0, app = cpu_of(v), time.monotonic(), rig.n_arg
    src, dst = f"{v}-live-src", f"{v}-live-dst"
    f = rig.log(f"{v}-live", "mig")
    rig.start(src, cpu, app)
    if not reached_loop(src, f"{v} live: guest reached the counted loop"):
        return
    migrate_to(src, f, f"{v} live: migration of the running guest "
               "completed")
    st = rig.qmp(src, "query-status")
    s1 = rig.summary(src)
    why = rig.midloop(s1)
    status = st.get("status") if st else None
    rig.ok(status == "postmigrate" and not why,
           f"{v} live: source stopped itself inside the loop ({s1})",
           f"status {status}", why)
    quit_ok(src, f"{v} live: source quits")
    if not incoming(dst, cpu, app, f, "-S"):
        rig.ok(False, f"{v} live: destination loaded the stream")
        rig.abandon(dst)
        return
    same(s1, rig.summary(dst), f"{v} live: destination has the source's "
         "final counters")
    finish(dst, f"{v} live: the guest counts exactly after live migration")
    print(f"# {v} live: {rig.elapsed(t0)} s")


def scenario_savevm(v):
    cpu, t0, app = cpu_of(v), time.monotonic(), rig.n_arg
    if not shutil.which("qemu-img"):
        rig.skip(f"{v} savevm/loadvm", "no qemu-img (apt-get install "
                 "qemu-utils)")
        return
    img = rig.log(f"{v}-vmstate", "qcow2")
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", img, "16M"],
                   check=True)
    drive = ["-drive", f"if=none,id=vmstate,format=qcow2,file={img}"]
    tag = f"{v}-savevm"
    rig.start(tag, cpu, app, *drive)
    if not reached_loop(tag, f"{v} savevm: guest reached the counted loop"):
        return
    s1 = stop_and_check(tag, f"{v} savevm: stopped inside the loop")
    ok, out = rig.hmp(tag, "savevm mig1")
    rig.ok(ok, f"{v} savevm: savevm mig1", out)
    rig.qmp(tag, "cont")
    time.sleep(0.5)
    s2 = stop_and_check(tag, f"{v} savevm: ran on after savevm, stopped in "
                        "the loop")
    grew(s1, s2, f"{v} savevm: counted on after savevm")
    ok, out = rig.hmp(tag, "loadvm mig1")
    rig.ok(ok, f"{v} savevm: loadvm mig1 in the same QEMU", out)
    same(s1, rig.summary(tag), f"{v} savevm: loadvm puts the snapshot's "
         "counters back (the counts since are dropped)")
    finish(tag, f"{v} savevm: after loadvm the guest counts exactly")

    tag = f"{v}-loadvm"
    rig.start(tag, cpu, app, *drive, "-loadvm", "mig1", "-S")
    same(s1, rig.summary(tag), f"{v} savevm: a new QEMU with -loadvm has "
         "the snapshot's counters")
    finish(tag, f"{v} savevm: after -loadvm the guest counts exactly")
    print(f"# {v} savevm/loadvm: {rig.elapsed(t0)} s")


def before_overflow(s, k):
    """Why summary @s is not GP0 preset to 2^48 - @k stopped in the loop
    before it overflows ("" if it is)."""
    ins, br, fx = (as_int(field(x, s)) for x in ("ins", "br", "fx"))
    if br is None or br <= 0 or 2 * br + 2 >= k:
        calc = 2 * (br or 0) + 2
        return (f"stopped at {calc} instructions, not inside (0, {k}): "
                "before the overflow")
    calc = 2 * br + 2
    if ins != (1 << 48) - k + calc:
        return f"GP0 {field('ins', s)} != 2^48 - {k} + {calc}"
    if field("fx", s) != "-" and fx != calc:
        return f"fixed 0 {field('fx', s)} != {calc}"
    return ""


def scenario_overflow(v, mode):
    """GP0 preset K = N events before overflow, so it overflows after the
    migration, on the destination.  exact: GP0 ends at 2N + 5 - K, status
    bit 0.  pmi: GP0 also has INT; exactly one PMI must arrive (the counts
    then include the handler's few instructions)."""
    cpu, t0, k = cpu_of(v), time.monotonic(), rig.n
    app = f"{rig.n_arg} preset={k}" + (" pmi=1" if mode == "pmi" else "")
    tag = f"{v}-ovf-{mode}"
    src, dst, f = tag + "-src", tag + "-dst", rig.log(tag, "mig")
    rig.start(src, cpu, app)
    if not reached_loop(src, f"{tag}: guest reached the counted loop"):
        return
    rig.qmp(src, "stop")
    s1 = rig.summary(src)
    why = before_overflow(s1, k)
    rig.ok(not why, f"{tag}: stopped before GP0 overflows, GP0 = 2^48 - {k} "
           f"+ 2 * GP1 + 2 ({s1})", why)
    migrate_to(src, f, f"{tag}: migrate to {os.path.basename(f)} completed")
    quit_ok(src, f"{tag}: source quits")
    if not incoming(dst, cpu, app, f):
        rig.ok(False, f"{tag}: destination loaded the stream")
        rig.abandon(dst)
        return
    same(s1, rig.summary(dst), f"{tag}: destination has the source's "
         "counters before cont")
    rig.qmp(dst, "cont")
    rc = rig.wait(dst)
    if mode == "pmi":
        why = rig.guest_ok(dst, rc)
        if not why and not re.search(r"ok .* exactly one PMI",
                                     rig.serial(dst)):
            why = "no PMI check in the guest's output"
        rig.ok(not why, f"{tag}: GP0 overflowed on the destination: status "
               "bit 0, exactly one PMI", why)
    else:
        want = rig.insns - k
        why = rig.guest_exact(dst, rc, want)
        rig.ok(not why, f"{tag}: GP0 overflowed on the destination: exactly "
               f"{want}, status bit 0", why)
    print(f"# {tag}: {rig.elapsed(t0)} s")


# The cpu/vpmu subsection in a stream: QEMU_VM_SUBSECTION (0x05), the
# name's length and "cpu/vpmu", version_id (u32 BE, 1); then the fields,
# vpmu_blob_len (u32 BE) and the blob: libvpmu's state format 1
# (vpmu/core/state.c): "VPMU", u16 format, u8 vendor, u8 version/level,
# u8 nr_gp, nr_fixed, gp_width, fixed_width, u8 flags, 3 zero, u32
# payload bytes; u64 GLOBAL_CTRL, GLOBAL_STATUS, DEBUGCTL; per counter u64
# control, u64 value; u32 CRC-32.
SUBSECTION = b"\x05\x08cpu/vpmu\x00\x00\x00\x01"
HEADER = 20                     # the blob's header bytes
GLOBALS = 24                    # GLOBAL_CTRL, GLOBAL_STATUS, DEBUGCTL


def corrupt(src, dst, kind):
    """Copy stream @src to @dst with the cpu/vpmu blob changed as @kind
    says; kinds ending in "+crc" get a valid CRC again, so the check after
    the CRC is reached.  Raises ValueError if @src is not as expected."""
    with open(src, "rb") as f:
        d = bytearray(f.read())
    i = d.find(SUBSECTION)
    if i < 0 or d.find(SUBSECTION, i + 1) >= 0:
        raise ValueError("want exactly one cpu/vpmu subsection")
    blen = i + len(SUBSECTION)          # vpmu_blob_len
    b = blen + 4                        # the blob
    n = struct.unpack_from(">I", d, blen)[0]
    if d[b:b + 4] != b"VPMU":
        raise ValueError("no VPMU magic where expected")
    gp0_ctl = b + HEADER + GLOBALS
    gp0_val = gp0_ctl + 8
    base = kind.replace("+crc", "")
    if base == "crc":
        d[gp0_val] ^= 0x01              # GP0's count, CRC left as it was
    elif base == "magic":
        d[b] = ord("X")
    elif base == "format":
        d[b + 4] = 2                    # format version 2
    elif base == "layout":
        d[b + 8] -= 1                   # nr_gp
    elif base == "value":
        d[gp0_val + 6] |= 0x01          # bit 48: wider than the counter
    elif base == "evtsel":
        d[gp0_ctl + 4] |= 0x01          # EVTSEL bit 32: reserved on Intel
    elif base == "short":
        struct.pack_into(">I", d, blen, n - 1)
    elif base == "huge":
        struct.pack_into(">I", d, blen, 0x80000000)
    else:
        raise ValueError("unknown kind " + kind)
    if kind.endswith("+crc"):
        struct.pack_into("<I", d, b + n - 4, zlib.crc32(bytes(d[b:b + n - 4])))
    with open(dst, "wb") as f:
        f.write(d)


NAMES_VPMU = re.compile(r"(^|: )vpmu:|cpu/vpmu", re.M)


def refused(tag, cpu, path, want, desc):
    """A destination loading @path must exit on its own, with a status
    that is neither 0 nor a signal, print an error naming vpmu and
    matching the regular expression @want, and never run the guest."""
    rig.start(tag, cpu, rig.n_arg, "-incoming", f"exec:cat '{path}'")
    rc = rig.wait(tag, 60)
    lines = stderr_lines(rig.log(tag, "stderr"))
    err = "\n".join(lines)
    why = ""
    if rc == 0 or rc >= 124:
        why = f"QEMU status {rc}: {explain(rc)}"
    elif not NAMES_VPMU.search(err):
        why = "no error naming vpmu"
    elif not re.search(want, err, re.M):
        why = f"no /{want}/ in the error"
    elif rig.serial(tag):
        why = "the guest ran: " + rig.serial(tag).splitlines()[-1]
    first = [ln for ln in lines if NAMES_VPMU.search(ln)] + lines[:1] + [""]
    first = re.sub(r"^[^ :]*: ", "", first[0])
    rig.ok(not why, f"{desc}: refused ({first})", why, "\n".join(lines[:3]))


def scenario_corrupt(v):
    cpu, t0 = cpu_of(v), time.monotonic()
    good = rig.log(f"{v}-hop1", "mig")
    if not os.path.isfile(good) or os.path.getsize(good) == 0:
        rig.ok(False, f"{v} corrupt: no stream from the file scenario to "
               "corrupt")
        return
    # (kind, the error QEMU must print, what was changed).  A length that
    # is not the destination's state size is refused by the
    # VMSTATE_VALIDATE before the buffer ("vpmu state size") since commit
    # c331852; older builds get to libvpmu's check (Bad message).
    size = "vpmu state size"
    kinds = [("crc", "Bad message", "a GP0 count bit flipped, CRC left stale"),
             ("magic", "Bad message", "magic VPMU changed to XPMU"),
             ("format+crc", "Protocol not supported", "format version 2"),
             ("layout+crc", "Invalid argument",
              "nr_gp one less in the header"),
             ("value+crc", "Invalid argument",
              "GP0 count with bit 48 set, wider than the counter"),
             ("short", "Bad message|" + size, "vpmu_blob_len one byte short")]
    if v == "intel":
        kinds.append(("evtsel+crc", "Invalid argument",
                      "EVTSEL0 with reserved bit 32 set"))
    for kind, want, what in kinds:
        base = kind.replace("+crc", "")
        crc = ", CRC recomputed" if kind.endswith("+crc") else ""
        f = rig.log(f"{v}-bad-{base}", "mig")
        try:
            corrupt(good, f, kind)
        except (OSError, ValueError) as e:
            rig.ok(False, f"{v} corrupt stream ({what}): could not make it",
                   str(e))
            continue
        refused(f"{v}-bad-{base}", cpu, f, want,
                f"{v} corrupt stream ({what}{crc})")
    # A blob length of 2 GiB or more: QEMU's vmstate_size() reads the
    # VBUFFER length as int32_t, so without a check before the allocation
    # g_malloc gets ~2^64 bytes and aborts (QEMU built before c331852).
    f = rig.log(f"{v}-bad-huge", "mig")
    try:
        corrupt(good, f, "huge")
    except (OSError, ValueError) as e:
        rig.ok(False, f"{v} corrupt stream (vpmu_blob_len 0x80000000): "
               "could not make it", str(e))
    else:
        refused(f"{v}-bad-huge", cpu, f, size + "|vpmu_blob",
                f"{v} corrupt stream (vpmu_blob_len 0x80000000)")
    # The good stream, another PMU on the destination.
    model = cpu.split(",")[0]
    refused(f"{v}-to-nopmu", model, good, "this CPU has none|" + size,
            f"{v} stream into {model} without pmu")
    refused(f"{v}-to-4gp", cpu + ",pmu-gp-counters=4", good,
            "Invalid argument|" + size,
            f"{v} stream into {cpu},pmu-gp-counters=4")
    other = cpu_of("amd" if v == "intel" else "intel")
    refused(f"{v}-to-other", other, good, "Invalid argument|" + size,
            f"{v} stream into {other} (other vendor)")
    print(f"# {v} corrupt streams: {rig.elapsed(t0)} s")


def main(argv):
    global rig
    if argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    vendors = argv[1:] or list(VENDORS)
    for v in vendors:
        if v not in VENDORS:
            print(f"migrate.py: unknown vendor '{v}'", file=sys.stderr)
            return 2
    with Rig("migrate", default_n=0x40000000) as rig:
        print(f"# {rig.qemu}, n={rig.n:#x}: GP0 and fixed 0 must count "
              f"{rig.insns}, GP1 {rig.branches}")
        for v in vendors:
            print(f"# ==== {v}: -cpu {cpu_of(v)}")
            rig.scenario(scenario_control, v)
            rig.scenario(scenario_file, v)
            rig.scenario(scenario_live, v)
            rig.scenario(scenario_savevm, v)
            rig.scenario(scenario_overflow, v, "exact")
            rig.scenario(scenario_overflow, v, "pmi")
            rig.scenario(scenario_corrupt, v)
        rig.done()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
