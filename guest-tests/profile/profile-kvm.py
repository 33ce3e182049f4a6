#!/usr/bin/env python3
"""Host profiles of a guest under this host's KVM (vpmu-profile).

Usage: profile-kvm.py QEMU HELPER

A guest that spins at its reset vector (a 64 KiB BIOS whose last
paragraph is `jmp $`: CS base 0xffff0000, IP 0xfff0, real mode, so
CPL 0), one vCPU, -accel kvm,vpmu=on, pmu-operator-profile=ip:

  by period   the profile's own host event (cycles every 10^7): one
              sample per overflow signal, so 1 to floor(count / 10^7) of
              them (VPMU_PROFILE_STOP's count), and perf script reads
              every one as cycles:G at 0xfffffff0, each 10^7.  On a host
              without a hardware PMU (no /sys/bus/event_source/devices/
              cpu) the task clock backs cycles, as it does the guest's,
              and instructions is refused with the reason, no profile
              starting; with one, instructions runs as cycles does
  by time     100 Hz for 2 s as perf.data: VPMU_PROFILE_STOP's samples
              are 1 to 201 (the tick is guest time; a 2 s window holds
              at most 200 ticks and one at its start), and perf script
              reads every one as cpu-clock:G at 0xfffffff0, each 10 ms
  a stack profile is refused (the policy says ip)

Then with a vpmu-helper started here, whose policy is the consent where
it serves the VM (-cpu ...,pmu-operator-profile=stack cannot overrule
it): a VM whose policy has no operator-profile is refused any profile,
one with "operator-profile = ip" a stack profile, and its ip profiles
run, by time and by period (the helper opens the profile's event).

QEMU and the helper are started and stopped here, by pid.  TAP on stdout; 1..0 # SKIP
without /dev/kvm or root.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from qmpclient import QMP, QMPError  # noqa: E402  (the suites' one client)
from pytap import Tap, stop_process  # noqa: E402

QEMU, HELPER = sys.argv[1], sys.argv[2]
PERF = shutil.which("perf")
REQ = "profile-kvm test"


def profile(q, **args):
    args.setdefault("requester", REQ)
    try:
        q.cmd("vpmu-profile", args)
        return None
    except QMPError as e:
        return str(e)


def host_pmu():
    """Whether perf has this host's hardware PMU (hybrid: cpu_core)."""
    devs = "/sys/bus/event_source/devices"
    return any(os.path.isdir(os.path.join(devs, n))
               for n in ("cpu", "cpu_core"))


def script_check(t, f, n, event, period, what):
    """perf script reads @n samples of @event, each @period, at the spin."""
    if not PERF:
        t.skip(f"{what}: perf script, every sample at the reset vector",
               "no perf (linux-perf)")
        return
    p = subprocess.run([PERF, "script", "-i", f, "--guestkallsyms=/dev/null",
                        "-F", "period,event,ip"], capture_output=True,
                       text=True, timeout=120)
    rows = re.findall(r"^\s*(\d+)\s+" + re.escape(event) +
                      r":G:\s*\n\s+([0-9a-f]+)", p.stdout, re.M)
    t.ok(p.returncode == 0 and len(rows) == n and
         all(r == (str(period), "fffffff0") for r in rows),
         f"{what}: perf script reads {len(rows)} samples, each {event}:G, "
         f"{period}, at 0xfffffff0", p.stdout[:1500] + p.stderr[-800:])


def period_checks(t, d, q):
    f = os.path.join(d, "period.data")
    P = 10 ** 7
    if not host_pmu():
        err = profile(q, duration=2, event="instructions", period=P,
                      format="perf", file=f)
        t.ok(err and "the profile's event: 'instructions' is not counted "
             "on this host" in err and
             not q.event("VPMU_PROFILE_START", 0.5),
             "by period, instructions without a host PMU: refused with "
             "the reason, no profile starts", err)
    events = ("cycles",) if not host_pmu() else ("cycles", "instructions")
    for ev in events:
        err = profile(q, duration=2, event=ev, period=P, format="perf",
                      file=f)
        start = q.event("VPMU_PROFILE_START", 5)
        stop = q.event("VPMU_PROFILE_STOP", 30)
        n = stop and stop["data"]["samples"]
        most = stop and stop["data"]["count"] // P
        t.ok(err is None and start and start["data"]["event"] == ev and
             stop and 1 <= n <= most and "error" not in stop["data"],
             f"by period, {ev} every {P}: {n} samples (1 to floor(count "
             f"/ period) = {most})", f"{err} {start} {stop}")
        if stop:
            script_check(t, f, n, ev, P, f"by period, {ev}")
        else:
            t.skip(f"by period, {ev}: perf script", "no profile")


def checks(t, d, q):
    f = os.path.join(d, "kvm.data")
    period_checks(t, d, q)
    err = profile(q, duration=2, mode="stack", format="perf", file=f)
    t.ok(err and "a stack profile is denied" in err,
         "a stack profile: refused (policy ip)", err)
    err = profile(q, duration=2, frequency=100, format="perf", file=f)
    start = q.event("VPMU_PROFILE_START", 5)
    stop = q.event("VPMU_PROFILE_STOP", 30)
    n = stop and stop["data"]["samples"]
    t.ok(err is None and start and stop and 1 <= n <= 201 and
         "error" not in stop["data"],
         f"100 Hz for 2 s: {n} samples (1 to 201)", f"{err} {start} {stop}")
    if stop:
        script_check(t, f, n, "cpu-clock", 10000000, "100 Hz")
    else:
        t.skip("100 Hz: perf script", "no profile")


def qemu(d, name, cpu, bios, extra=",vpmu-helper="):
    """QEMU under KVM with vpmu, no helper unless @extra names one (a
    host's /etc/qemu/vpmu.conf may name one: the command line wins)."""
    sock = os.path.join(d, name + ".qmp")
    with open(os.path.join(d, name + ".err"), "w") as err:
        p = subprocess.Popen([QEMU, "-name", f"guest={name}",
                              "-accel", "kvm,vpmu=on" + extra, "-cpu", cpu,
                              "-bios", bios, "-m", "64", "-display", "none",
                              "-no-reboot", "-net", "none",
                              "-qmp", f"unix:{sock},server=on,wait=off"],
                             stdin=subprocess.DEVNULL, stdout=err, stderr=err)
    return p, sock


def helper_checks(t, d, bios):
    pol = os.path.join(d, "policy")
    os.mkdir(pol)
    with open(os.path.join(pol, "deny.conf"), "w") as f:
        f.write("counters = 2\n")
    with open(os.path.join(pol, "ip.conf"), "w") as f:
        f.write("counters = 2\noperator-profile = ip\n")
    hsock = os.path.join(d, "helper.sock")
    with open(os.path.join(d, "helper.err"), "w") as err:
        h = subprocess.Popen([HELPER, "--socket", hsock, "--policy-dir", pol],
                             stdin=subprocess.DEVNULL, stdout=err, stderr=err)
    cpu = "host,pmu=on,pmu-operator-profile=stack"
    try:
        for _ in range(200):
            if os.path.exists(hsock):
                break
            time.sleep(0.05)
        f = os.path.join(d, "h.data")
        for name, args, want in (
                ("deny", {}, "profiles are denied by this VM's policy "
                 "(vpmu-helper: operator-profile=deny)"),
                ("ip", {"mode": "stack"}, "a stack profile is denied by "
                 "this VM's policy (vpmu-helper: operator-profile=ip)")):
            p, sock = qemu(d, name, cpu, bios, f",vpmu-helper={hsock}")
            try:
                q = QMP(sock)
                err = profile(q, duration=1, format="perf", file=f, **args)
                t.ok(err and want in err,
                     f"helper policy {name}: -cpu's stack does not overrule "
                     "it, refused", err)
                if name == "ip":
                    err = profile(q, duration=1, format="perf", file=f)
                    stop_ev = q.event("VPMU_PROFILE_STOP", 20)
                    t.ok(err is None and stop_ev and
                         stop_ev["data"]["samples"] >= 1,
                         "helper policy ip: an ip profile runs",
                         f"{err} {stop_ev}")
                    # By period: the helper opens the profile's event.
                    err = profile(q, duration=1, event="cycles",
                                  period=10 ** 7, format="perf", file=f)
                    stop_ev = q.event("VPMU_PROFILE_STOP", 20)
                    t.ok(err is None and stop_ev and
                         1 <= stop_ev["data"]["samples"] <=
                         stop_ev["data"]["count"] // 10 ** 7,
                         "helper policy ip: a profile by period runs on "
                         "the event the helper opened", f"{err} {stop_ev}")
                q.close()
            finally:
                stop_process(p)
    finally:
        stop_process(h)


def main():
    if not os.path.exists("/dev/kvm") or os.geteuid() != 0:
        Tap.skip_all("needs /dev/kvm and root")
    if not os.access(QEMU, os.X_OK):
        Tap.skip_all(f"no QEMU at {QEMU} (make qemu)")
    if not os.access(HELPER, os.X_OK):
        Tap.skip_all(f"no vpmu-helper at {HELPER}")
    t = Tap()
    d = tempfile.mkdtemp(prefix="vpmu-profile-kvm-")
    bios = os.path.join(d, "spin.bin")
    img = bytearray(b"\xf4" * 65536)
    img[0xfff0:0xfff2] = b"\xeb\xfe"        # jmp $ at the reset vector
    with open(bios, "wb") as f:
        f.write(img)
    sock = os.path.join(d, "qmp.sock")
    with open(os.path.join(d, "qemu.err"), "w") as err:
        p = subprocess.Popen([QEMU, "-accel", "kvm,vpmu=on,vpmu-helper=",
                              "-cpu",
                              "host,pmu=on,pmu-operator-profile=ip",
                              "-bios", bios, "-m", "64", "-display", "none",
                              "-no-reboot", "-net", "none",
                              "-qmp", f"unix:{sock},server=on,wait=off"],
                             stdin=subprocess.DEVNULL, stdout=err, stderr=err)
    try:
        q = QMP(sock)
        checks(t, d, q)
        q.close()
        stop_process(p)
        helper_checks(t, d, bios)
    finally:
        stop_process(p)
        shutil.rmtree(d, ignore_errors=True)
    return t.end()


if __name__ == "__main__":
    sys.exit(main())
