"""What migrate.py and qmp.py share: the payload, QEMU by pid, QMP, and
the checks on the guest's counts.

    with Rig("migrate", default_n=0x40000000) as rig:
        rig.start("tag", "Skylake-Client,pmu=on", rig.n_arg)
        rig.qmp("tag", "stop")
        ...
        rig.done()                # the summary, the plan, sys.exit

Rig() builds mig-count.elf into $O (guest-tests/migration/Makefile), or
prints "Bail out!" and exits 2 without QEMU or payload; then prints the
TAP version line.  Every QEMU it starts is a pytap.Procs child, stopped by
pid when the test ends, also on an exception or SIGTERM.

Environment: QEMU (default build/qemu/qemu-system-x86_64), O (default
build/migration; logs in O/NAME/), N (loop iterations), TIMEOUT (per-QEMU
seconds, default 180), QEMU_EXTRA (more arguments for every QEMU,
word-split).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.dirname(HERE))
from qmpclient import QMP, QMPError  # noqa: E402  (the suites' one client)
from pytap import Procs, Tap  # noqa: E402

# QEMU prints this for every feature of a named model TCG lacks: noise in
# the errors the tests look at.
TCG_WARNING = "TCG doesn't support"
TIMED_OUT = 124         # our wait's status for a QEMU it had to stop


def stderr_lines(path, strip_prog=False):
    """@path's lines without TCG's feature warnings; @strip_prog drops
    the "qemu-system-x86_64: " before each."""
    try:
        with open(path, errors="replace") as f:
            lines = [ln.rstrip("\n") for ln in f if TCG_WARNING not in ln]
    except OSError:
        return []
    if strip_prog:
        lines = [re.sub(r"^[^ :]*: ", "", ln) for ln in lines]
    return lines


def explain(rc):
    """What a QEMU exit status means (isa-debug-exit: code * 2 + 1)."""
    return {0: "exit 0 (quit, or no isa-debug-exit)",
            1: "guest passed (debug-exit 0), or QEMU error exit",
            3: "guest checks failed",
            5: "guest bail out",
            TIMED_OUT: "timeout"}.get(
                rc, "killed by signal %d" % (rc - 128) if rc > 128
                else "status %d" % rc)


def summary(reply):
    """query-vpmu's reply -> "ins=V br=V fx=V st=S,S,S" for vCPU 0's GP0
    (instructions), GP1 (branches) and fixed 0 (Intel; "-" on AMD), S
    each counter's state/event/control; "" for no usable reply."""
    try:
        c = [x for x in reply if x["cpu-index"] == 0][0]["counters"]
        gp = [x for x in c if not x["fixed"]]
        sel = gp[:2] + [x for x in c if x["fixed"]][:1]
        v = [str(x["value"]) for x in sel] + ["-"] * (3 - len(sel))
        st = ",".join("%s/%s/%#x" % (x["state"], x["event"], x["control"])
                      for x in sel)
    except (TypeError, KeyError, IndexError):
        return ""
    return "ins=%s br=%s fx=%s st=%s" % (v[0], v[1], v[2], st)


def field(key, s):
    """A value out of a summary() line ("" if it has none)."""
    for w in s.split():
        k, _, v = w.partition("=")
        if k == key:
            return v
    return ""


def as_int(s):
    try:
        return int(s)
    except ValueError:
        return None


class Rig:
    def __init__(self, name, default_n):
        self.name = name
        qemu = os.environ.get("QEMU") or os.path.join(
            REPO, "build/qemu/qemu-system-x86_64")
        self.qemu = shutil.which(qemu)
        if not self.qemu:
            print(f"Bail out! {name}: no QEMU at '{qemu}' (set QEMU=)")
            sys.exit(2)
        self.outdir = os.path.abspath(os.environ.get("O") or
                                      os.path.join(REPO, "build/migration"))
        try:
            self.n = int(os.environ.get("N") or str(default_n), 0)
            self.timeout = float(os.environ.get("TIMEOUT") or 180)
        except ValueError as e:
            print(f"Bail out! {name}: N or TIMEOUT is not a number: {e}")
            sys.exit(2)
        self.extra = shlex.split(os.environ.get("QEMU_EXTRA", ""))
        self.n_arg = f"n={self.n:#x}"      # mig-count.elf's command line
        self.insns = 2 * self.n + 5         # mig-count.c: 2n + 5
        self.branches = self.n              # n branches
        self._build()
        self.elf = os.path.join(self.outdir, "mig-count.elf")
        self.logdir = os.path.join(self.outdir, name)
        shutil.rmtree(self.logdir, ignore_errors=True)
        os.makedirs(self.logdir)
        self.fw = [a for d in ("/usr/share/qemu", "/usr/share/seabios")
                   if os.path.isdir(d) for a in ("-L", d)]
        self.procs = Procs()
        self.p = {}             # tag -> the Popen of a QEMU still running
        self.conn = {}          # tag -> its QMP connection
        self.sockdir = None
        self.t_start = time.monotonic()
        self.tap = Tap()

    def _build(self):
        os.makedirs(self.outdir, exist_ok=True)
        log = os.path.join(self.outdir, self.name + ".make.log")
        with open(log, "w") as f:
            rc = subprocess.call(
                ["make", "-s", "-C", HERE, "O=" + self.outdir],
                stdout=f, stderr=subprocess.STDOUT)
        if rc:
            with open(log) as f:
                for ln in f:
                    print("# " + ln.rstrip("\n"))
            print(f"Bail out! {self.name}: building the payload failed")
            sys.exit(2)

    def __enter__(self):
        self.procs.__enter__()
        # UNIX socket paths are limited to 108 bytes: keep them short.
        self.sockdir = tempfile.mkdtemp(prefix=f"vpmu-{self.name}.",
                                        dir="/tmp")
        return self

    def __exit__(self, *exc):
        for q in self.conn.values():
            q.close()
        self.procs.__exit__(*exc)
        shutil.rmtree(self.sockdir, ignore_errors=True)
        return False

    # ---- TAP ---------------------------------------------------------

    def ok(self, cond, desc, *diags):
        self.tap.ok(cond, desc, "\n".join(str(d) for d in diags if d))

    def skip(self, desc, why):
        self.tap.skip(desc, why)

    def scenario(self, fn, *args):
        """Run fn(*args), one scenario; if it raises (a bug, or QEMU
        answering what no check expected), a "not ok" line with the
        traceback, its QEMUs stopped, and on to the next one."""
        try:
            fn(*args)
        except Exception:               # noqa: BLE001  (reported as TAP)
            self.ok(False, "%s(%s) ran to its end" % (
                fn.__name__, ", ".join(repr(a) for a in args)),
                traceback.format_exc())
            self.abandon(*list(self.p))

    def elapsed(self, t0):
        return "%.1f" % (time.monotonic() - t0)

    def done(self):
        """The summary as a diagnostic, the plan; exit 1 on a failure."""
        t = self.tap
        print(f"# logs in {self.logdir}; {self.elapsed(self.t_start)} s")
        print(f"# {self.name}: {t.n - t.failed} passed, {t.failed} failed")
        sys.exit(t.end())

    # ---- QEMU --------------------------------------------------------

    def log(self, tag, ext):
        return os.path.join(self.logdir, f"{tag}.{ext}")

    def sock(self, tag):
        return os.path.join(self.sockdir, tag + ".sock")

    def start(self, tag, cpu, append, *args):
        """mig-count.elf in QEMU TAG in the background, QMP on a socket
        of its own, the serial port in TAG.serial; QEMU_EXTRA before
        @args."""
        if os.path.exists(self.sock(tag)):
            os.unlink(self.sock(tag))
        argv = [self.qemu] + self.fw + [
            "-accel", "tcg", "-cpu", cpu, "-m", "64", "-nodefaults",
            "-display", "none", "-no-reboot",
            "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
            "-kernel", self.elf, "-append", append,
            "-serial", "file:" + self.log(tag, "serial"),
            "-qmp", f"unix:{self.sock(tag)},server=on,wait=off",
        ] + self.extra + list(args)
        self.run_bg(tag, argv)

    def run_bg(self, tag, argv):
        """@argv as TAG in the background (a Procs child, waited for with
        wait()), its command line and output in TAG.*."""
        with open(self.log(tag, "cmd"), "w") as f:
            f.write(shlex.join(argv) + "\n")
        with open(self.log(tag, "stdout"), "w") as out, \
                open(self.log(tag, "stderr"), "w") as err:
            self.p[tag] = self.procs.start(argv, stdin=subprocess.DEVNULL,
                                           stdout=out, stderr=err)

    def wait(self, tag, secs=None):
        """Wait for QEMU TAG to exit: its status, 128 + N for signal N,
        TIMED_OUT if it had to be stopped (by pid) after @secs."""
        p = self.p.pop(tag)
        q = self.conn.pop(tag, None)
        if q:
            q.close()
        try:
            rc = p.wait(self.timeout if secs is None else secs)
        except subprocess.TimeoutExpired:
            self.procs.stop(p)
            return TIMED_OUT
        self.procs.stop(p)          # forget it: it has exited
        return 128 - rc if rc < 0 else rc

    def running(self, tag):
        return tag in self.p and self.p[tag].poll() is None

    def abandon(self, *tags):
        """Stop what is left of a failed scenario."""
        for tag in tags:
            if tag in self.p:
                self.wait(tag, 0)

    def wait_marker(self, tag, secs=60):
        """Wait for the guest's "# counting" line."""
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline and self.running(tag):
            try:
                with open(self.log(tag, "serial"), errors="replace") as f:
                    if re.search(r"^# counting", f.read(), re.M):
                        return True
            except OSError:
                pass
            time.sleep(0.02)
        return False

    def wait_counting(self, tag, secs=60):
        """Wait until the guest is in its counted loop: its "# counting"
        line, printed just before the WRMSR that enables the counters,
        then a counter of vCPU 0 no longer off in query-vpmu (the WRMSR
        has run)."""
        if not self.wait_marker(tag, secs):
            return False
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline and self.running(tag):
            r = self.qmp(tag, "query-vpmu")
            try:
                if any(c["state"] != "off" for c in r[0]["counters"]):
                    return True
            except (TypeError, KeyError, IndexError):
                pass
            time.sleep(0.01)
        return False

    # ---- QMP ---------------------------------------------------------

    def _qmp_error(self, tag, what, e):
        with open(self.log(tag, "qmp-errors"), "a") as f:
            f.write(f"qmp: {what}: {e}\n")

    def qmp(self, tag, cmd, args=None):
        """Run @cmd on TAG's QMP socket: its return value, or None (the
        error appended to TAG.qmp-errors).  quit answers None too if QEMU
        closed first; that is no error."""
        try:
            if tag not in self.conn:
                self.conn[tag] = QMP(self.sock(tag))
            return self.conn[tag].cmd(cmd, args)
        except (OSError, EOFError, QMPError, ValueError) as e:
            q = self.conn.pop(tag, None)
            if q:
                q.close()
            if not (cmd == "quit" and isinstance(e, EOFError)):
                self._qmp_error(tag, cmd, e)
            return None

    def qmp_errors(self, tag):
        try:
            with open(self.log(tag, "qmp-errors")) as f:
                return f.read()
        except OSError:
            return ""

    def hmp(self, tag, line):
        """(ok, output) of HMP @line: HMP reports errors as text."""
        out = self.qmp(tag, "human-monitor-command", {"command-line": line})
        if out is None:
            return False, self.qmp_errors(tag)
        return not out.strip(), out

    def quit(self, tag):
        self.qmp(tag, "quit")
        q = self.conn.pop(tag, None)
        if q:
            q.close()

    def wait_migrate(self, tag, secs=120):
        """Poll query-migrate until "completed" (True), or "failed",
        "cancelled" or @secs (False, the reason in TAG.qmp-errors)."""
        deadline = time.monotonic() + secs
        while time.monotonic() < deadline:
            r = self.qmp(tag, "query-migrate")
            if r is None:
                return False
            st = r.get("status", "none")
            if st == "completed":
                return True
            if st in ("failed", "cancelled"):
                self._qmp_error(tag, "query-migrate", "migration " + st)
                return False
            time.sleep(0.05)
        self._qmp_error(tag, "query-migrate", "not completed in time")
        return False

    def wait_status(self, tag, secs=120):
        """Poll query-status until it is no longer "inmigrate": the
        status ("none" if QMP failed)."""
        deadline = time.monotonic() + secs
        while True:
            r = self.qmp(tag, "query-status")
            if r is None:
                return "none"
            if r["status"] != "inmigrate" or time.monotonic() > deadline:
                return r["status"]
            time.sleep(0.05)

    def summary(self, tag):
        return summary(self.qmp(tag, "query-vpmu"))

    # ---- the guest's counts ------------------------------------------

    def midloop(self, s):
        """Why summary @s is not inside the counted loop ("" if it is):
        0 < ins < 2n + 5, ins = 2 * br + 2 (the enabling WRMSR and the
        MOV, then br dec/jnz pairs: TB boundaries in the loop fall after
        a JNZ), fixed 0 = ins."""
        ins, br, fx = (field(k, s) for k in ("ins", "br", "fx"))
        i, b = as_int(ins), as_int(br)
        if i is None or not 0 < i < self.insns:
            return (f"instructions {ins} not inside (0, {self.insns}): "
                    "stopped outside the loop (N too small for this host?)")
        if b is None or i != 2 * b + 2:
            return f"instructions {ins} != 2 * branches {br} + 2"
        if fx != "-" and fx != ins:
            return f"fixed 0 {fx} != GP0 {ins}"
        return ""

    def serial(self, tag):
        try:
            with open(self.log(tag, "serial"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def guest_ok(self, tag, rc):
        """Why QEMU TAG did not exit through isa-debug-exit with 0 and
        every guest check passed ("" if it did)."""
        if rc != 1:
            return f"QEMU status {rc}: {explain(rc)}"
        log = self.serial(tag)
        bad = re.findall(r"^not ok.*$", log, re.M)
        if bad:
            return "\n".join(bad)
        if not re.search(r"^# 0 of [0-9]* checks failed", log, re.M):
            return ("no '0 of N checks failed' in "
                    + self.log(tag, "serial"))
        return ""

    def guest_exact(self, tag, rc, want_gp0=None):
        """guest_ok, and the guest printed the exact counts: GP0 =
        @want_gp0 (default 2n + 5), GP1 = n."""
        w = self.insns if want_gp0 is None else want_gp0
        why = self.guest_ok(tag, rc)
        if why:
            return why
        log, path = self.serial(tag), self.log(tag, "serial")
        if not re.search(rf"GP0 instructions = {w}.* \(got {w}\)$", log, re.M):
            return f"no exact GP0 count ({w}) in {path}"
        b = self.branches
        if not re.search(rf"GP1 branches = {b} \(got {b}\)$", log, re.M):
            return f"no exact GP1 count in {path}"
        return ""

