#!/usr/bin/env python3
"""The operator's events of a TCG guest, through QMP, against the guest's own.

Usage: operator-tcg.py QEMU OUTDIR

Boots the migration suite's payload (guest-tests/migration/mig-count.c:
an instructions counter and a branches counter around one long loop at
CPL 0, exact counts checked by the guest at the end) under TCG, and:

  policy   with pmu-operator off (the default) vpmu-operator-start fails,
           the refusal is logged with its requester, and nothing counts;
           with it on, an unknown event fails naming it and nothing counts
  exact    vpmu-operator-start "instructions,branches,instructions:u"
           while the loop runs; between two stops of the VM the operator's
           instructions and branches grow by exactly what the guest's own
           counters grew (both count every instruction of the vCPU, the
           loop's), instructions:u by 0 (the loop is CPL 0); while the VM
           is stopped nothing moves; start and stop are logged
  guest    the guest's own counts stay exact (its checks pass) with the
           operator's events counting beside them, and it exits 0

QEMU is started and stopped here, by pid.  TAP on stdout.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from qmpclient import QMP, QMPError  # noqa: E402  (the suites' one client)
from pytap import Tap  # noqa: E402

QEMU, OUT = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
N = 0xF0000000              # loop iterations: seconds of TCG, never done
CPU = "Skylake-Client,pmu=on"
REQ = "operator-tcg test"

T = None            # the Tap, made by main()


def ok(cond, desc, diag=""):
    T.ok(cond, desc, diag)


class Guest:
    """mig-count.elf in a QEMU of its own, with QMP; stopped by pid."""

    def __init__(self, tag, cpu, append):
        self.tag = tag
        self.sock = os.path.join(SOCKDIR, tag + ".sock")
        self.serial = os.path.join(OUT, tag + ".serial")
        self.stderr = os.path.join(OUT, tag + ".stderr")
        fw = [a for d in ("/usr/share/qemu", "/usr/share/seabios")
              if os.path.isdir(d) for a in ("-L", d)]
        self.p = subprocess.Popen(
            [QEMU] + fw + ["-accel", "tcg", "-cpu", cpu, "-m", "64",
                           "-nodefaults", "-display", "none", "-no-reboot",
                           "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
                           "-kernel", ELF, "-append", append,
                           "-serial", "file:" + self.serial,
                           "-qmp", f"unix:{self.sock},server=on,wait=off"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(self.stderr, "w"))
        self.qmp = None

    def connect(self):
        self.qmp = QMP(self.sock)     # negotiates the capabilities

    def wait_serial(self, marker, secs=120):
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline and self.p.poll() is None:
            try:
                with open(self.serial, errors="replace") as f:
                    if marker in f.read():
                        return True
            except FileNotFoundError:
                pass
            time.sleep(0.05)
        return False

    def log(self):
        with open(self.stderr, errors="replace") as f:
            return f.read()

    def wait(self, secs):
        try:
            return self.p.wait(timeout=secs)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        if self.qmp:
            self.qmp.close()
            self.qmp = None
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            if self.wait(20) is None:
                self.p.kill()
                self.p.wait()


def counters(info):
    """The guest's GP0 (instructions) and GP1 (branches) values."""
    gp = {c["index"]: c["value"] for c in info["counters"] if not c["fixed"]}
    return gp[0], gp[1]


def operator(info):
    return {e["event"]: e for e in info.get("operator-events", [])}


def test_policy():
    g = Guest("denied", CPU, f"n={N}")
    try:
        g.connect()
        try:
            g.qmp.cmd("vpmu-operator-start", {"events": "instructions",
                                              "requester": REQ})
            err = ""
        except QMPError as e:
            err = str(e)
        ok("denied by this VM's policy (pmu-operator=off)" in err,
           "pmu-operator off: vpmu-operator-start is refused", err)
        info = g.qmp.cmd("query-vpmu")
        ok(all("operator-events" not in c for c in info),
           "pmu-operator off: no operator event counts", json.dumps(info))
    finally:
        g.stop()
    ok(re.search(r"operator metrics requested by 'operator-tcg test': "
                 r"denied by this VM's policy", g.log()) is not None,
       "the refusal is logged with its requester", g.log())

    g = Guest("badevent", CPU + ",pmu-operator=on", f"n={N}")
    try:
        g.connect()
        for events, want in (("instructions,cache-misses",
                              "unknown event 'cache-misses'"),
                             ("cycles:x", "the modifier is :u or :k"),
                             ("", "the list is empty")):
            try:
                g.qmp.cmd("vpmu-operator-start", {"events": events,
                                                  "requester": REQ})
                err = ""
            except QMPError as e:
                err = str(e)
            info = g.qmp.cmd("query-vpmu")
            ok(want in err and all("operator-events" not in c for c in info),
               f"bad events '{events}': a clear error, nothing counts", err)
    finally:
        g.stop()


def snapshot(g):
    """Stop the VM, read query-vpmu twice (nothing may move), go on."""
    g.qmp.cmd("stop")
    a = g.qmp.cmd("query-vpmu")[0]
    time.sleep(0.3)
    b = g.qmp.cmd("query-vpmu")[0]
    g.qmp.cmd("cont")
    return a, b


def test_exact():
    g = Guest("exact", CPU + ",pmu-operator=on", f"n={N}")
    try:
        g.connect()
        ok(g.wait_serial("# counting"), "the guest's loop is counting")
        time.sleep(0.5)
        g.qmp.cmd("vpmu-operator-start",
                  {"events": "instructions,branches,instructions:u",
                   "requester": REQ})
        time.sleep(0.5)
        a1, a2 = snapshot(g)
        time.sleep(1.0)
        b1, b2 = snapshot(g)
        ok(operator(a1) == operator(a2) and counters(a1) == counters(a2),
           "while stopped nothing moves", json.dumps([a1, a2]))
        gi = counters(b1)[0] - counters(a1)[0]
        gb = counters(b1)[1] - counters(a1)[1]
        oa, ob = operator(a1), operator(b1)
        oi = ob["instructions"]["count"] - oa["instructions"]["count"]
        obr = ob["branches"]["count"] - oa["branches"]["count"]
        ou = ob["instructions:u"]["count"] - oa["instructions:u"]["count"]
        ok(gi > 10**6 and oi == gi, f"operator instructions grew exactly "
           f"as the guest's counter: {oi} == {gi}")
        ok(gb > 10**5 and obr == gb, f"operator branches grew exactly as "
           f"the guest's counter: {obr} == {gb}")
        ok(ou == 0 and ob["instructions:u"]["count"] == 0,
           "operator instructions:u: 0 (the loop runs at CPL 0)")
        ok(all(e["enabled-ns"] == e["running-ns"] > 0 and "error" not in e
               for e in ob.values()),
           "TCG: each event ran all the time it was enabled",
           json.dumps(list(ob.values())))
        g.qmp.cmd("vpmu-operator-stop", {"requester": REQ})
        info = g.qmp.cmd("query-vpmu")
        ok(all("operator-events" not in c for c in info),
           "vpmu-operator-stop: no operator events left")
        g.qmp.close()
        g.qmp = None
        # The guest stops its counters and checks them when the loop ends.
        rc = g.wait(300)
        with open(g.serial, errors="replace") as f:
            serial = f.read()
        bad = [x for x in serial.splitlines() if x.startswith("not ok")]
        ok(rc == 1 and not bad and re.search(r"^ok .*", serial, re.M),
           f"the guest's own counts stay exact (its checks pass; QEMU "
           f"status {rc}: isa-debug-exit 0)", "\n".join(bad) or serial[-800:])
    finally:
        g.stop()
    log = g.log()
    ok("operator events 'instructions,branches,instructions:u' started by "
       "'operator-tcg test'" in log and
       "operator events stopped by 'operator-tcg test'" in log,
       "start and stop are logged with the requester", log)


def main():
    global ELF, SOCKDIR, T
    T = Tap()
    if not os.access(QEMU, os.X_OK):
        Tap.skip_all(f"no QEMU at {QEMU} (make qemu)")
    os.makedirs(OUT, exist_ok=True)
    mig = os.path.join(REPO, "guest-tests", "migration")
    r = subprocess.run(["make", "-s", "-C", mig, "O=" + OUT],
                       capture_output=True, text=True)
    ELF = os.path.join(OUT, "mig-count.elf")
    if r.returncode != 0 or not os.path.exists(ELF):
        print("Bail out! building mig-count.elf failed: " +
              (r.stderr.strip().splitlines() or ["?"])[-1])
        return 2
    SOCKDIR = tempfile.mkdtemp(prefix="vpmu-op.")
    try:
        test_policy()
        test_exact()
    finally:
        shutil.rmtree(SOCKDIR, ignore_errors=True)
    return T.end()


if __name__ == "__main__":
    sys.exit(main())
