#!/usr/bin/env python3
"""Host profiles of a TCG guest (vpmu-profile), read by the real tools.

Usage: profile-tcg.py QEMU IMAGE

policy     A VM started paused, no guest: with the default policy
           (pmu-operator-profile unset: deny) vpmu-profile fails, the
           refusal is logged with its requester (escaped: a newline in it
           cannot forge a line) and no event is sent; with "ip", a stack
           profile is refused and an ip one runs: VPMU_PROFILE_START,
           then vpmu-profile-stop ends it, VPMU_PROFILE_STOP and a file.
bad input  With "stack": an unknown event, a duration of 0, a period
           under 1000, a period and a frequency, an event with a
           frequency, a missing System.map, one of another kernel, a file
           that is not ELF, a second profile while one runs: each a clear
           error, no event; the running profile is unaffected.
guest      The image's kernel (vmlinuz, with KASLR) runs profile-guest:
           calls (main -> a -> b, b's loop 9 times a's) under its own perf
           stat, before and while the host takes three profiles; every
           run counts exactly what the first did, and the profiles end
           before the runs do.  The kernel's text symbols come over a
           second serial port.
  pprof    instructions every 10007, stack, with a System.map at the link
           addresses (kallsyms less the true slide: runtime _text less
           vmlinux's first PT_LOAD) and calls as a binary:
           VPMU_PROFILE_START's kernel-slide is the true slide;
           samples + lost = floor(count / 10007); go tool pprof -traces'
           heaviest stack is calls_b <- calls_a <- main (user, vcpu 0);
           calls_b's share of main's subtree is 0.9 within what partial
           runs at the two ends can move it (below); every kernel location
           pprof names has the name the guest's own kallsyms gives it.
  perf     instructions:u every 10007 as perf.data: perf script
           (--guestkallsyms at the runtime addresses) reads all the
           samples, chains calls_b <- calls_a <- main from the ELF.
  clock    100 Hz for 2 s, ip: 1 to 201 samples of cpu-clock, each 10 ms.
  syscalls instructions (both modes) every 10007 as perf.data over three
           runs of "calls sys" (main -> calls_s: N / 10 getppid calls by
           the syscall instruction): kernel samples go on, after their
           kernel frames, into the user code their task entered from
           (pt_regs at the top of its kernel stack): some have
           calls_s <- main as their user part.

calls' share: a whole run of main retires 20N + c user instructions, 18N
in calls_b's loop (N = 1e6, c a dozen), so exactly 18N/P or one more of
its samples fall in calls_b and 2N/P or one more in calls_a.  A run cut
by the profile's start or end moves calls_b's count from 0.9 of main's
by at most 0.1 x 18N/P + 1 (only b's tail) or 0.9 x 2N/P + 1 (only a's
head): |b - 0.9 K| <= 2 x 181 + runs, runs = K / (20N/P) + 2.

QEMU is started and stopped here, by pid.  TAP on stdout; a consumer that
is missing (golang-1.19-go, linux-perf) SKIPs its checks.
"""
import gzip
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from qmpclient import QMP, QMPError  # noqa: E402  (the suites' one client)
from pytap import Tap, stop_process  # noqa: E402

QEMU, IMAGE = sys.argv[1], sys.argv[2]
TOOL = os.path.join(HERE, "..", "..", "vpmu", "profile", "vpmu-profile")
GO = shutil.which("go") or "/usr/lib/go-1.19/bin/go"
PERF = shutil.which("perf")
CPU = "max,vendor=GenuineIntel,pmu=on"
REQ = "profile-tcg test"
N = 1000000
P = 10007

T = None


def ok(cond, desc, diag=""):
    T.ok(cond, desc, diag)


class Vm:
    """A QEMU this test starts and stops (by pid), with QMP."""

    def __init__(self, d, tag, policy, guest=False):
        self.d, self.tag = d, tag
        self.sock = os.path.join(d, tag + ".qmp")
        self.tool_sock = os.path.join(d, tag + ".tool.qmp")
        self.stderr = os.path.join(d, tag + ".err")
        self.console = os.path.join(d, tag + ".console")
        self.ksyms = os.path.join(d, tag + ".kallsyms")
        cpu = CPU + (f",pmu-operator-profile={policy}" if policy else "")
        cmd = [QEMU, "-L", "/usr/share/qemu", "-L", "/usr/share/seabios",
               "-accel", "tcg", "-cpu", cpu, "-m", "512", "-display", "none",
               "-no-reboot", "-net", "none", "-name", f"vpmu-{tag}",
               "-qmp", f"unix:{self.sock},server=on,wait=off",
               "-qmp", f"unix:{self.tool_sock},server=on,wait=off"]
        if guest:
            cmd += ["-kernel", os.path.join(IMAGE, "vmlinuz"),
                    "-initrd", os.path.join(IMAGE, "initramfs.cpio.gz"),
                    "-append", "console=ttyS0 panic=-1 quiet nmi_watchdog=0 "
                    "vpmu.test=profile-guest vpmu.kallsyms=ttyS1 vpmu.runs=100",
                    "-serial", f"file:{self.console}",
                    "-serial", f"file:{self.ksyms}"]
        else:
            cmd += ["-S"]
        with open(self.stderr, "w") as err:
            self.p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                      stdout=err, stderr=err)
        self.qmp = QMP(self.sock)

    def log(self):
        with open(self.stderr, errors="replace") as f:
            return f.read()

    def text(self, path):
        try:
            with open(path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def wait_for(self, path, marker, secs):
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline:
            if marker in self.text(path):
                return True
            if self.p.poll() is not None:
                return marker in self.text(path)
            time.sleep(0.2)
        return False

    def profile(self, **args):
        """vpmu-profile; its error text, or None."""
        args.setdefault("requester", REQ)
        try:
            self.qmp.cmd("vpmu-profile", args)
            return None
        except QMPError as e:
            return str(e)

    def tool(self, *args):
        """vpmu-profile (the operator's tool) on the second QMP socket."""
        p = subprocess.run([sys.executable, TOOL, "--qmp", self.tool_sock] +
                           list(args), capture_output=True, text=True,
                           timeout=300)
        return p.returncode, p.stdout + p.stderr

    def stop(self):
        try:
            self.qmp.close()
        except OSError:
            pass
        stop_process(self.p)


def test_policy(d):
    vm = Vm(d, "deny", None)
    try:
        err = vm.profile(duration=1, format="pprof",
                         file=os.path.join(d, "x.pb.gz"),
                         requester="ops\nforged line")
        time.sleep(0.5)
        ok(err and "denied by this VM's policy (pmu-operator-profile=deny)"
           in err and not vm.qmp.event("VPMU_PROFILE_START", 0.5),
           "default policy: vpmu-profile is denied, no profile starts", err)
        ok("requested by 'ops\\nforged line': profiles are denied" in
           vm.log() and
           "\nforged line" not in vm.log(),
           "the refusal is logged with the requester, escaped", vm.log())
        rc, out = vm.tool("--seconds", "1", "-o", os.path.join(d, "t.pb.gz"))
        ok(rc == 1 and "vpmu-profile: profiles are denied by this VM's "
           "policy (pmu-operator-profile=deny)" in out,
           "vpmu-profile (the tool): the refusal is its exit status 1", out)
    finally:
        vm.stop()

    vm = Vm(d, "ip", "ip")
    try:
        out = os.path.join(d, "ip.pb.gz")
        err = vm.profile(duration=60, mode="stack", format="pprof", file=out)
        ok(err and "a stack profile is denied" in err and
           not vm.qmp.event("VPMU_PROFILE_START", 0.5),
           "policy ip: a stack profile is denied", err)
        err = vm.profile(duration=60, format="pprof", file=out)
        start = vm.qmp.event("VPMU_PROFILE_START", 5)
        ok(err is None and start and start["data"]["mode"] == "ip" and
           start["data"]["requester"] == REQ and
           start["data"]["event"] == "cpu-clock" and
           start["data"]["period"] == 10000000,
           "policy ip: an ip profile starts, VPMU_PROFILE_START says so "
           "(cpu-clock every 10 ms, the default 100 Hz)", f"{err} {start}")
        vm.qmp.cmd("vpmu-profile-stop", {"requester": "ops"})
        stop = vm.qmp.event("VPMU_PROFILE_STOP", 10)
        ok(stop and stop["data"]["file"] == out and
           stop["data"]["samples"] == 0 and "error" not in stop["data"] and
           gzip.open(out).read(2) != b"",
           "vpmu-profile-stop: VPMU_PROFILE_STOP, a paused VM gave 0 "
           "samples, the file is written", f"{stop}")
        tool_out = os.path.join(d, "tool.pb.gz")
        rc, out = vm.tool("--seconds", "1", "-o", tool_out,
                          "--requester", "the tool")
        ok(rc == 0 and out.strip() == f"{tool_out}: 0 samples (0 lost)" and
           os.path.getsize(tool_out) > 0 and
           vm.qmp.event("VPMU_PROFILE_STOP", 5),
           "vpmu-profile (the tool): waits for the end, says what it wrote",
           out)
        log = vm.log()
        ok(f"profile started by '{REQ}'" in log and
           f"profile requested by '{REQ}' stopped by 'ops'" in log,
           "start and stop are logged with their requesters", log)
    finally:
        vm.stop()


def test_bad_input(d):
    vm = Vm(d, "bad", "stack")
    f = os.path.join(d, "bad.pb.gz")
    other = os.path.join(d, "other.map")
    with open(other, "w") as fh:
        fh.write("ffffffff81000000 T _text\nffffffff81c00080 T "
                 "entry_SYSCALL_64\n")
    cases = [
        ("an unknown event", dict(event="nosuch", period=10007),
         "nosuch"),
        ("a duration of 0", dict(duration=0), "duration 0: 1 to 3600"),
        ("a period under 1000", dict(event="instructions", period=10),
         "period 10: at least 1000"),
        ("a period and a frequency", dict(period=10007, frequency=100),
         "not both"),
        ("an event with a frequency", dict(event="cycles", frequency=10),
         "an event needs a period"),
        ("a missing System.map", dict(**{"system-map": "/nonexistent"}),
         "/nonexistent: No such file"),
        ("a System.map of another kernel", dict(**{"system-map": other}),
         "does not match the guest's kernel"),
        ("a binary that is not ELF",
         dict(binaries=[{"path": other}]), "not a 64-bit x86-64 ELF"),
    ]
    try:
        for what, args, want in cases:
            a = dict(duration=5, format="pprof", file=f)
            a.update(args)
            err = vm.profile(**a)
            ok(err and want in err and
               not vm.qmp.event("VPMU_PROFILE_START", 0.2),
               f"bad input, {what}: a clear error, no profile", err)
        err = vm.profile(duration=60, format="pprof", file=f)
        again = vm.profile(duration=60, format="pprof", file=f)
        ok(err is None and again and "a profile is running" in again,
           "a second profile while one runs: refused", f"{err} / {again}")
        vm.qmp.cmd("vpmu-profile-stop", {"requester": REQ})
        stop = vm.qmp.event("VPMU_PROFILE_STOP", 10)
        ok(stop and stop["data"]["file"] == f and vm.qmp.event(
            "VPMU_PROFILE_START", 0.2),
           "the first profile ran on, unaffected, and stopped", f"{stop}")
    finally:
        vm.stop()


def kallsyms(text):
    """The guest's text symbols: sorted [(address, name)]."""
    syms = []
    for line in text.splitlines():
        m = re.match(r"([0-9a-f]{16}) [tT] (\S+)$", line.strip())
        if m:
            syms.append((int(m.group(1), 16), m.group(2)))
    return sorted(syms)


def lookup(syms, addr):
    lo, hi = 0, len(syms)
    while lo < hi:
        mid = (lo + hi) // 2
        if syms[mid][0] <= addr:
            lo = mid + 1
        else:
            hi = mid
    return syms[lo - 1][1] if lo else None


def link_text():
    """vmlinux's link address of _text: its first PT_LOAD's p_vaddr."""
    with open(os.path.join(IMAGE, "vmlinux"), "rb") as f:
        eh = f.read(64)
        phoff, = struct.unpack_from("<Q", eh, 32)
        phentsize, phnum = struct.unpack_from("<HH", eh, 54)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            ptype, _, _, vaddr = struct.unpack("<IIQQ", f.read(24))
            if ptype == 1:
                return vaddr
    return None


def pprof(args, env):
    p = subprocess.run([GO, "tool", "pprof"] + args, capture_output=True,
                       text=True, env=env, timeout=120)
    return p.returncode, p.stdout + p.stderr


def check_pprof(d, path, start, stop, syms):
    env = dict(os.environ, HOME=d, GOCACHE=os.path.join(d, "gocache"))
    if not os.access(GO, os.X_OK):
        for what in ("heaviest stack", "calls_b's share", "kernel names"):
            T.skip(f"pprof: {what}", "no go tool (golang-1.19-go)")
        return
    rc, out = pprof(["-traces", path], env)
    stacks = []
    for block in out.split("-----------+")[1:]:
        labels = dict(re.findall(r"^\s+(\w+):\s+(\S+)$", block, re.M))
        m = re.search(r"^\s+(\d+)\s+(\S+)$", block, re.M)
        if m:
            frames = [m.group(2)] + re.findall(
                r"^\s{13}(\S+)$", block[m.end():], re.M)
            stacks.append((int(m.group(1)), labels, frames))
    stacks.sort(key=lambda s: -s[0])
    top = stacks[0] if stacks else (0, {}, [])
    ok(rc == 0 and top[2][:3] == ["calls_b", "calls_a", "main"] and
       top[1].get("mode") == "user" and top[1].get("vcpu") == "0" and
       top[1].get("vm") == "vpmu-guest",
       "pprof -traces: the heaviest stack is calls_b <- calls_a <- main "
       "(user, vcpu 0, vm vpmu-guest)", out[:2500])

    rc, out = pprof(["-top", "-sample_index=samples", "-nodecount=1000",
                     path], env)
    rows = {m.group(3): (int(m.group(1)), int(m.group(2))) for m in
            re.finditer(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%"
                        r"\s+(\S+)$", out, re.M)}
    b = rows.get("calls_b", (0, 0))[0]
    k = rows.get("main", (0, 0))[1]
    per_run = 20 * N // P
    tol = 2 * (round(0.1 * 18 * N / P) + 1) + k // per_run + 2
    ok(k > 0 and abs(b - 0.9 * k) <= tol,
       f"pprof -top: calls_b {b} of main's {k} samples, 0.9 within {tol}",
       out[:2500])

    rc, out = pprof(["-raw", path], env)
    bad, named = [], 0
    for m in re.finditer(r"^\s*\d+: 0x([0-9a-f]+) M=\d+ (\S+)", out, re.M):
        addr, name = int(m.group(1), 16), m.group(2)
        if addr >= 0xffff800000000000:
            named += 1
            if lookup(syms, addr) != name and lookup(syms, addr - 1) != name:
                bad.append(f"{addr:#x} {name} (kallsyms {lookup(syms, addr)})")
    ok(rc == 0 and named > 0 and not bad,
       f"pprof: all {named} named kernel locations carry the guest's own "
       "kallsyms name", "\n".join(bad[:20]) or out[:2000])


def check_perf(d, path, stop, ksyms_path):
    if not PERF:
        T.skip("perf script: all samples, named chains", "no perf (linux-perf)")
        return
    p = subprocess.run([PERF, "script", "-i", path,
                        f"--guestkallsyms={ksyms_path}"],
                       capture_output=True, text=True, timeout=300)
    heads = re.findall(r" instructions:uhG: ", p.stdout)
    chains = re.findall(r"calls_b\+0x\S+ \(\S+\)\n\s+\S+ calls_a\+0x\S+ "
                        r"\(\S+\)\n\s+\S+ main\+0x", p.stdout)
    ok(p.returncode == 0 and len(heads) == stop["samples"] and chains,
       f"perf script: {len(heads)} samples (VPMU_PROFILE_STOP: "
       f"{stop['samples']}), {len(chains)} chains calls_b <- calls_a <- main",
       p.stdout[:2500] + p.stderr[-1500:])


KERNEL_HALF = 0xffff800000000000
FRAME = re.compile(r"^\s+([0-9a-f]+) (\S+) \(")


def script_samples(text):
    """perf script's samples: each a list of (address, symbol) frames."""
    out = []
    for block in text.split("\n\n"):
        frames = [(int(m.group(1), 16), m.group(2).split("+")[0])
                  for m in map(FRAME.match, block.splitlines()[1:]) if m]
        if frames:
            out.append(frames)
    return out


def check_syscalls(d, vm, binaries, smap, ksyms_path):
    """A profile of both modes over calls' getppid loop: the kernel
    samples go on into the user code that made the call."""
    if not vm.wait_for(vm.console, "VPMU-SYSCALLS-READY", 900):
        T.skip("kernel samples carry their task's user chain",
               "the guest did not reach its system calls")
        return
    f = os.path.join(d, "sys.data")
    err = vm.profile(file=f, duration=120, event="instructions", period=P,
                     format="perf", binaries=binaries,
                     **{"system-map": smap})
    vm.wait_for(vm.console, "VPMU-SYSCALLS-DONE", 300)
    vm.qmp.cmd("vpmu-profile-stop", {"requester": REQ})
    vm.qmp.event("VPMU_PROFILE_START", 5)
    stop = (vm.qmp.event("VPMU_PROFILE_STOP", 30) or {}).get("data")
    what = "kernel samples carry their task's user chain"
    if err or not stop:
        ok(False, what, f"{err} {stop}")
        return
    if not PERF:
        T.skip(what, "no perf (linux-perf)")
        return
    p = subprocess.run([PERF, "script", "-i", f,
                        f"--guestkallsyms={ksyms_path}"],
                       capture_output=True, text=True, timeout=300)
    kern = [s for s in script_samples(p.stdout) if s[0][0] >= KERNEL_HALF]
    tails = [[sym for a, sym in s if a < KERNEL_HALF] for s in kern]
    ordered = all(all(a < KERNEL_HALF for a, _ in s[i:])
                  for s in kern for i in range(len(s))
                  if s[i][0] < KERNEL_HALF)
    calls = sum(1 for t in tails if t[:2] == ["calls_s", "main"])
    ok(p.returncode == 0 and calls > 0 and ordered,
       f"{what}: {calls} of "
       f"{len(kern)} kernel samples go on to calls_s <- main (user frames "
       "after the kernel's)", p.stdout[:2000] + p.stderr[-800:])


def test_guest(d):
    for f in ("vmlinuz", "vmlinux", "initramfs.cpio.gz", "calls"):
        if not os.path.exists(os.path.join(IMAGE, f)):
            T.skip("the guest's profiles", f"{IMAGE}/{f} missing "
                   "(guest-tests/linux/build-image.sh)")
            return
    vm = Vm(d, "guest", "stack", guest=True)
    try:
        run_guest(d, vm)
    finally:
        vm.stop()


def take(vm, d, name, **args):
    args.setdefault("duration", 2)
    err = vm.profile(file=os.path.join(d, name), **args)
    start = vm.qmp.event("VPMU_PROFILE_START", 10)
    stop = vm.qmp.event("VPMU_PROFILE_STOP", args["duration"] + 120)
    done = "VPMU-PROFILE-DONE" in vm.text(vm.console)
    return err, (start or {}).get("data", {}), (stop or {}).get("data"), done


def run_guest(d, vm):
    ready = vm.wait_for(vm.console, "VPMU-PROFILE-READY", 600)
    ok(ready and vm.wait_for(vm.ksyms, "VPMU-KALLSYMS-END", 10),
       "the guest runs calls, its kernel symbols came over ttyS1",
       vm.text(vm.console)[-2000:])
    if not ready:
        return
    syms = kallsyms(vm.text(vm.ksyms))
    text = dict((n, a) for a, n in syms).get("_text")
    base = link_text()
    slide = text - base if text and base else None
    smap = os.path.join(d, "System.map")
    with open(smap, "w") as f:
        for a, n in syms:
            f.write(f"{a - (slide or 0):016x} T {n}\n")
    ksyms_path = os.path.join(d, "kallsyms")
    with open(ksyms_path, "w") as f:
        f.write("".join(f"{a:016x} T {n}\n" for a, n in syms))
    binaries = [{"path": os.path.join(IMAGE, "calls")}]

    err, start, stop, done = take(vm, d, "guest.pb.gz", duration=3,
                                  event="instructions", period=P,
                                  format="pprof", binaries=binaries,
                                  **{"system-map": smap})
    ok(err is None and stop and not done and "error" not in stop,
       "pprof: the profile ran and was written before the guest's runs "
       "ended", f"{err} {start} {stop} done={done}")
    ok(slide is not None and start.get("kernel-slide") == slide,
       f"VPMU_PROFILE_START's kernel-slide {start.get('kernel-slide')} is "
       f"the true slide {slide} (runtime _text {text and hex(text)} less "
       f"vmlinux's {base and hex(base)})", f"{start}")
    if stop:
        ok(stop["samples"] + stop["lost"] == stop["count"] // P and
           stop["count"] > 0,
           f"samples + lost = floor(count / {P}) exactly "
           f"({stop['samples']} + {stop['lost']}, count {stop['count']})",
           f"{stop}")
        check_pprof(d, os.path.join(d, "guest.pb.gz"), start, stop, syms)

    err, start, stop, done = take(vm, d, "guest.data", event="instructions:u",
                                  period=P, format="perf", binaries=binaries,
                                  **{"system-map": smap})
    ok(err is None and stop and not done and "error" not in stop and
       stop["samples"] == stop["count"] // P,
       "perf.data: written before the runs ended, floor(count / P) samples",
       f"{err} {start} {stop} done={done}")
    if stop:
        check_perf(d, os.path.join(d, "guest.data"), stop, ksyms_path)

    # The operator's tool, as docs/operators.md shows it, with the SVG.
    clock, svg = os.path.join(d, "clock.pb.gz"), os.path.join(d, "clock.svg")
    dot = shutil.which("dot") and os.access(GO, os.X_OK)
    rc, out = vm.tool("--seconds", "2", "--frequency", "100", "--mode", "ip",
                      "-o", clock, *(["--svg", svg] if dot else []))
    start = (vm.qmp.event("VPMU_PROFILE_START", 10) or {}).get("data", {})
    stop = (vm.qmp.event("VPMU_PROFILE_STOP", 10) or {}).get("data")
    done = "VPMU-PROFILE-DONE" in vm.text(vm.console)
    ok(rc == 0 and stop and not done and 1 <= stop["samples"] <= 201 and
       start.get("event") == "cpu-clock" and start.get("period") == 10000000,
       f"vpmu-profile, 100 Hz for 2 s: {stop and stop['samples']} samples "
       "of cpu-clock, each 10 ms", f"{out} {start} {stop}")
    if dot:
        with open(svg, errors="replace") as f:
            body = f.read()
        ok("<svg" in body and "Type: cpu" in body,
           "vpmu-profile --svg: go tool pprof drew it (graphviz)", out)
    else:
        T.skip("vpmu-profile --svg", "no graphviz dot or go tool")

    check_syscalls(d, vm, binaries, smap, ksyms_path)
    exited = vm.wait_for(vm.console, "VPMU-GUEST-EXIT", 900)
    con = vm.text(vm.console)
    for m in re.finditer(r"^(not ok|ok) \d+ - (.*)$", con, re.M):
        ok(m.group(1) == "ok", f"guest: {m.group(2).strip()}", con[-2000:])
    ok(exited and "VPMU-GUEST-EXIT 0" in con,
       "the guest ran its checks and exited 0", con[-2000:])


def main():
    global T
    if not os.access(QEMU, os.X_OK):
        Tap.skip_all(f"no QEMU at {QEMU} (make qemu)")
    T = Tap()
    d = tempfile.mkdtemp(prefix="vpmu-profile-")
    try:
        test_policy(d)
        test_bad_input(d)
        test_guest(d)
    finally:
        if os.environ.get("VPMU_KEEP"):
            print(f"# kept {d}")
        else:
            shutil.rmtree(d, ignore_errors=True)
    return T.end()


if __name__ == "__main__":
    sys.exit(main())
