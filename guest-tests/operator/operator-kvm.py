#!/usr/bin/env python3
"""The operator's events of a KVM guest whose host events vpmu-helper opens.

Usage: operator-kvm.py QEMU HELPER OUTDIR

Under KVM the consent is the VM's policy in vpmu-helper (docs/helper.md,
"operator = yes"), and the helper opens the operator's events as the
operator's.  A guest that spins at its reset vector (no payload: a BIOS
image of `jmp $`), one vCPU, QMP; a helper started here with a policy
directory of its own:

  denied   policy without "operator": vpmu-operator-start fails naming
           the policy, QEMU logs the refusal with its requester escaped
           (a newline in it stays "\\n"), the helper is not asked (its
           opens do not move), nothing counts; -cpu ...,pmu-operator=on
           does not overrule the helper's policy
  allowed  "operator = yes": an event the host's perf source does not
           back is refused naming it; "cycles" counts (one open through
           the helper), grows while the guest spins, and runs all the
           time it is enabled (the guest's counters leave it room)
  release  ten stops and starts in a row all succeed: the helper takes
           back each event as the operator's (it allows 8 at once), and
           after a stop nothing counts

Needs root (the helper), /dev/kvm and vpmu-helper: otherwise the whole
test is skipped, with the reason.  QEMU and the helper are started and
stopped here, by pid.  TAP on stdout.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from qmpclient import QMP, QMPError  # noqa: E402  (the suites' one client)
from pytap import Tap  # noqa: E402

REQ = "operator-kvm test\nvpmu: forged line"
REQ_LOGGED = "operator-kvm test\\nvpmu: forged line"
CPU = "host,pmu=on,-arch-capabilities"


class Proc:
    """A child with its stderr in a file; stopped by pid."""

    def __init__(self, argv, log):
        self.log_path = log
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL,
                                  stderr=open(log, "w"))

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def wait_path(path, secs=10):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline and not os.path.exists(path):
        time.sleep(0.05)
    return os.path.exists(path)


class Guest:
    def __init__(self, d, name, cpu, helper_sock):
        self.sock = os.path.join(d, name + ".qmp")
        self.proc = Proc([QEMU, "-name", f"guest={name}", "-machine", "pc",
                          "-m", "16", "-nodefaults", "-display", "none",
                          "-accel", f"kvm,vpmu=on,vpmu-helper={helper_sock}",
                          "-cpu", cpu, "-bios", BIOS,
                          "-qmp", f"unix:{self.sock},server=on,wait=off"],
                         os.path.join(d, name + ".log"))
        self.qmp = QMP(self.sock) if wait_path(self.sock) else None

    def start(self, events):
        try:
            self.qmp.cmd("vpmu-operator-start", {"events": events,
                                                 "requester": REQ})
            return ""
        except QMPError as e:
            return str(e) or "error"

    def vcpu(self):
        return self.qmp.cmd("query-vpmu")[0]

    def stop(self):
        if self.qmp:
            self.qmp.close()
            self.qmp = None
        self.proc.stop()


def ops(info):
    return {e["event"]: e for e in info.get("operator-events", [])}


def test_denied(d, sock):
    g = Guest(d, "denied", CPU, sock)
    try:
        T.ok(g.qmp is not None, "denied: QEMU under KVM with the helper "
             "answers QMP", g.proc.log())
        opens = g.vcpu()["helper"]["opens"]
        err = g.start("cycles")
        want = "denied by this VM's policy (vpmu-helper: operator = no)"
        T.ok(want in err, "policy without 'operator': vpmu-operator-start "
             "is refused, naming the policy", err)
        info = g.vcpu()
        T.ok(info["helper"]["opens"] == opens and "operator-events" not in info,
             f"the helper was not asked (opens {opens} -> "
             f"{info['helper']['opens']}), nothing counts", json.dumps(info))
    finally:
        g.stop()
    log = g.proc.log()
    T.ok(f"operator metrics requested by '{REQ_LOGGED}': denied by this VM's "
         "policy" in log and "\nvpmu: forged line" not in log,
         "the refusal is logged with the requester escaped", log)

    g = Guest(d, "denied", CPU + ",pmu-operator=on", sock)
    try:
        err = g.start("cycles")
        T.ok("vpmu-helper: operator = no" in err, "pmu-operator=on does not "
             "overrule the helper's policy", err)
    finally:
        g.stop()


def test_allowed(d, sock):
    g = Guest(d, "allowed", CPU, sock)
    try:
        events = g.qmp.cmd("query-vpmu")[0]
        err = g.start("instructions")
        T.ok("'instructions' is not counted on this host" in err or err == "",
             "an event the host's source lacks is refused, naming it "
             "(or counted, on a host with a PMU)", err)
        if err == "":
            g.qmp.cmd("vpmu-operator-stop", {"requester": REQ})
        opens = g.vcpu()["helper"]["opens"]
        err = g.start("cycles")
        a = g.vcpu()
        T.ok(err == "" and a["helper"]["opens"] == opens + 1,
             f"operator = yes: 'cycles' starts, one open through the helper "
             f"({opens} -> {a['helper']['opens']})", err + json.dumps(a))
        time.sleep(1.0)
        b = g.vcpu()
        ca, cb = ops(a).get("cycles", {}), ops(b).get("cycles", {})
        T.ok(cb.get("count", 0) > ca.get("count", 0),
             f"cycles grows while the guest spins ({ca.get('count')} -> "
             f"{cb.get('count')})", json.dumps([a, b]))
        T.ok("error" not in cb and cb.get("enabled-ns", 0) >= 10**9 and
             cb.get("running-ns") == cb.get("enabled-ns"),
             f"it ran all the time it was enabled ({cb.get('running-ns')} of "
             f"{cb.get('enabled-ns')} ns)", json.dumps(b))
        good = 0
        for _ in range(10):
            g.qmp.cmd("vpmu-operator-stop", {"requester": REQ})
            good += g.start("cycles") == ""
        T.ok(good == 10, f"ten stops and starts in a row: {good} started "
             "(the helper took each back as the operator's)", g.proc.log())
        g.qmp.cmd("vpmu-operator-stop", {"requester": REQ})
        info = g.vcpu()
        T.ok("operator-events" not in info, "after a stop nothing counts",
             json.dumps(info))
        T.ok(events["helper"]["refusals"] == info["helper"]["refusals"],
             "the helper refused nothing of it", json.dumps(info["helper"]))
    finally:
        g.stop()
    log = g.proc.log()
    T.ok(f"operator events 'cycles' started by '{REQ_LOGGED}'" in log and
         f"operator events stopped by '{REQ_LOGGED}'" in log,
         "starts and stops are logged with the requester", log)


def main():
    global T, QEMU, BIOS
    T = Tap()
    QEMU, helper, out = sys.argv[1], sys.argv[2], sys.argv[3]
    if not os.access(QEMU, os.X_OK):
        Tap.skip_all(f"no QEMU at {QEMU} (make qemu)")
    if not os.access(helper, os.X_OK):
        Tap.skip_all(f"no vpmu-helper at {helper}")
    if os.geteuid() != 0:
        Tap.skip_all("needs root (vpmu-helper)")
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        Tap.skip_all("no usable /dev/kvm")
    os.makedirs(out, exist_ok=True)
    d = tempfile.mkdtemp(prefix="vpmu-opkvm-")
    BIOS = os.path.join(d, "spin.bin")
    # 64 KiB at the top of the first MiB: the reset vector F000:FFF0 holds
    # EB FE, jmp $.
    with open(BIOS, "wb") as f:
        f.write(bytes(0xFFF0) + b"\xeb\xfe" + bytes(14))
    pol = os.path.join(d, "policy")
    os.mkdir(pol)
    with open(os.path.join(pol, "denied.conf"), "w") as f:
        f.write("counters = 2\n")
    with open(os.path.join(pol, "allowed.conf"), "w") as f:
        f.write("counters = 2\noperator = yes\n")
    sock = os.path.join(d, "helper.sock")
    h = Proc([helper, "--socket", sock, "--policy-dir", pol],
             os.path.join(out, "kvm-helper.log"))
    try:
        T.ok(wait_path(sock), "the helper listens", h.log())
        test_denied(d, sock)
        test_allowed(d, sock)
    finally:
        h.stop()
        T.ok(h.p.returncode is not None, "the helper stopped by pid")
        for f in os.listdir(d):
            p = os.path.join(d, f)
            if os.path.isdir(p):
                for g in os.listdir(p):
                    os.unlink(os.path.join(p, g))
                os.rmdir(p)
            else:
                os.unlink(p)
        os.rmdir(d)
    sys.exit(T.end())


if __name__ == "__main__":
    main()
