"""One L2 of the nested suite, run and served by L1 (init-l1 calls it once
per configuration):

  l1serve.py CFG     start L2's QEMU (the arguments in $L2_ARGS, shell
                     words) under busybox timeout with what is left of
                     $L2_TIMEOUT s since $T0, serve its requests until it
                     exits; exit with QEMU's status
  l1serve.py CFG --libvirt NAME PID
                     serve libvirt domain NAME, whose QEMU is PID, until it
                     powers off; exit 0, or 124 if its time ran out

A test that needs L1 prints "VPMU-L1 <request>" on L2's console and waits
for L1's one-line answer on it (qmp-kvm.sh, contention-kvm.sh,
migrate-kvm.sh, operator-kvm.sh, profile-kvm.sh, stat-exact.sh): query
NAME, query-bad, operator-start EVENTS, operator-stop, profile-start,
profile-stop, migrate, contend, contend-partial, release,
guest-cycles-start, guest-cycles-stop RUN CYCLES.  L1 holds L2's QMP
monitor (a Unix socket, guest-tests/qmpclient.py; for libvirt, virsh
qemu-monitor-command) and its serial input (a FIFO), and keeps what it saw
in /tmp for l1checks.py (its docstring lists the files).  Every process
it starts is stopped by pid when it ends, also on failure (pytap.Procs).
"""
import json
import os
import re
import select
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from l1checks import PROFILE_PERIOD  # noqa: E402
from pytap import Procs, read_text as read  # noqa: E402
from qmpclient import QMP, QMPError  # noqa: E402

MIGRATE_URI = "tcp:127.0.0.1:4444"
# max-bandwidth of the live migration, bytes/s: 4 GiB/s, on loopback.
MIGRATE_BANDWIDTH = 4 << 30


def say(s):
    print("# " + s, flush=True)


def now():
    return time.monotonic()


def wait_for(secs, cond):
    """Test @cond once a second until it holds, at most @secs times."""
    for _ in range(secs):
        if cond():
            return True
        time.sleep(1)
    return cond()


def requests_in(text):
    """L2's requests in console output @text, in order.  Whole lines only:
    the log may end in the middle of a request still being written
    ("guest-cycles-stop 1" of "guest-cycles-stop 1 11463372439"), which
    would be answered as unknown and never read again."""
    out = []
    for line in text[:text.rfind("\n") + 1].splitlines():
        line = line.rstrip("\r")
        if line.startswith("VPMU-L1 "):
            out.append(line[len("VPMU-L1 "):])
    return out


def mkfifo(path):
    if os.path.lexists(path):
        os.unlink(path)
    os.mkfifo(path)


def fifo_write(path, text):
    """Write to a FIFO opened read-write: never blocks without a reader."""
    fd = os.open(path, os.O_RDWR)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def fifo_readline(path, secs):
    """A line from a FIFO, waiting up to @secs; "" if none came."""
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    try:
        buf = b""
        end = now() + secs
        while b"\n" not in buf and now() < end:
            if select.select([fd], [], [], max(0.0, end - now()))[0]:
                buf += os.read(fd, 256)
        return buf.decode(errors="replace").split("\n")[0]
    finally:
        os.close(fd)


class Monitor:
    """L2's QMP monitor: its socket through qmpclient, events appended to
    /tmp/CFG.events as they come."""

    def __init__(self, cfg, path, timeout=60):
        self.cfg = cfg
        self.q = QMP(path, connect_timeout=timeout)

    def execute(self, name, args=None):
        """The reply: {"return": ...}, {"error": ...}, or None if QEMU
        did not answer."""
        try:
            resp = {"return": self.q.cmd(name, args)}
        except QMPError as e:
            resp = {"error": json.loads(str(e))}
        except (OSError, EOFError, ValueError):
            resp = None
        self.flush_events()
        return resp

    def hmp(self, line):
        r = self.execute("human-monitor-command", {"command-line": line})
        return r["return"] if r and "return" in r else ""

    def flush_events(self):
        if self.q.events:
            with open("/tmp/%s.events" % self.cfg, "a") as f:
                for ev in self.q.events:
                    f.write(json.dumps(ev) + "\n")
            self.q.events.clear()

    def close(self):
        self.q.close()


class Virsh:
    """The libvirt domain's monitor: libvirt holds QMP, virsh asks."""

    def __init__(self, name):
        self.name = name

    def virsh(self, *args):
        p = subprocess.run(["virsh", "-q", "-c", "qemu:///system"] +
                           list(args), capture_output=True, text=True)
        return p.returncode, p.stdout

    def execute(self, name, args=None):
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        rc, out = self.virsh("qemu-monitor-command", self.name,
                             json.dumps(msg))
        try:
            return json.loads(out) if rc == 0 else None
        except ValueError:
            return None

    def hmp(self, line):
        return self.virsh("qemu-monitor-command", self.name, "--hmp",
                          line)[1]

    def close(self):
        pass


class L2:
    """One configuration's L2: its QEMU (a child, or the libvirt
    domain's), monitor, serial input and logs; the requests it made."""

    def __init__(self, cfg, procs):
        self.cfg, self.procs = cfg, procs
        self.t0 = int(os.environ.get("T0", "0")) or int(time.time())
        self.limit = int(os.environ.get("L2_TIMEOUT", "300"))
        self.logs = ["/tmp/%s.log" % cfg]
        self.done = 0           # requests answered
        self.cperf = self.gperf = None
        self.rc = 0

    def tmp(self, suffix):
        return "/tmp/%s%s" % (self.cfg, suffix)

    # --- QEMU --------------------------------------------------------------
    def start_qemu(self, name, extra=""):
        """QEMU with $L2_ARGS, its serial input the FIFO /tmp/NAME.in, its
        QMP /tmp/NAME.qmp, its output /tmp/NAME.log, under busybox timeout
        (which execs it: the pid is QEMU's) with what is left of L2's
        limit: a migration destination gets no second full limit."""
        left = max(10, self.limit - (int(time.time()) - self.t0))
        for f in ("/tmp/%s.qmp" % name, "/tmp/%s.in" % name):
            if os.path.lexists(f):
                os.unlink(f)
        mkfifo("/tmp/%s.in" % name)
        fd = os.open("/tmp/%s.in" % name, os.O_RDWR)
        with open("/tmp/%s.log" % name, "wb") as log:
            p = self.procs.start(
                ["sh", "-c", "exec timeout -k 10 %d qemu-system-x86_64 %s"
                 " -qmp unix:/tmp/%s.qmp,server=on,wait=off %s"
                 % (left, os.environ["L2_ARGS"], name, extra)],
                stdin=fd, stdout=log, stderr=subprocess.STDOUT)
        return p, fd

    def alive(self):
        if self.qemu is not None:
            return self.qemu.poll() is None
        try:
            os.kill(self.pid, 0)
            return True
        except OSError:
            return False

    def answer(self, word):
        os.write(self.serial, (word + "\n").encode())

    def save(self, suffix, resp):
        """A reply into /tmp/CFG<suffix>, its first 300 characters shown."""
        with open(self.tmp(suffix), "w") as f:
            f.write(json.dumps(resp) + "\n" if resp is not None else "")
        say("%s: %s: %s" % (self.cfg, suffix[1:-5], json.dumps(resp)[:300]))

    def command(self, suffix, name, args=None):
        """Run a command whose reply is checked; answer done or error."""
        r = self.mon.execute(name, args)
        self.save(suffix, r)
        self.answer("done" if r and "return" in r else "error")

    # --- requests ----------------------------------------------------------
    def requests(self):
        out = []
        for log in self.logs:
            out += requests_in(read(log))
        return out

    def serve(self, idle=None):
        """Answer L2's requests until its QEMU exits."""
        idle_n, dumped = 0, False
        while self.alive():
            reqs = self.requests()
            if len(reqs) <= self.done:
                time.sleep(1)
                if idle:
                    idle()
                idle_n += 1
                if (not dumped and idle_n % 5 == 0 and
                        time.time() - self.t0 >= self.limit - 20):
                    self.stall_dump()
                    dumped = True
                continue
            req = reqs[self.done]
            self.done += 1
            say("%s: L2 asks: %s" % (self.cfg, req))
            self.handle(req)

    def handle(self, req):
        word, _, arg = req.partition(" ")
        if word == "query" and arg:
            r = self.mon.execute("query-vpmu")
            if r is None:
                self.answer("no-reply")
            else:
                self.save(".q.%s.json" % arg, r)
                self.answer("done")
        elif word == "operator-start" and arg:
            # The host operator's events (QEMU 0028; L2 runs with
            # pmu-operator=on).
            self.command(".op-start.%d.json" % self.done,
                         "vpmu-operator-start",
                         {"events": arg, "requester": "nested L1"})
        elif req == "operator-stop":
            self.command(".op-stop.json", "vpmu-operator-stop",
                         {"requester": "nested L1"})
        elif req == "profile-start":
            # The host's profile of L2 (QEMU 0031; L2 runs with
            # pmu-operator-profile=stack): instructions:u every
            # PROFILE_PERIOD, call chains, calls' symbols from L1's copy.
            self.command(".prof-start.json", "vpmu-profile", {
                "duration": 600, "event": "instructions:u",
                "period": PROFILE_PERIOD, "mode": "stack", "format": "perf",
                "file": self.tmp(".profile.data"),
                "binaries": [{"path": "/vpmu/bin/calls"}],
                "requester": "nested L1"})
        elif req == "profile-stop":
            # The file is written before the reply, VPMU_PROFILE_STOP sent.
            self.command(".prof-stop.json", "vpmu-profile-stop",
                         {"requester": "nested L1"})
        elif req == "query-bad":
            self.save(".q.bad.json",
                      self.mon.execute("query-vpmu", {"bogus": 1}))
            self.save(".q.bad-status.json", self.mon.execute("query-status"))
            self.answer("done")
        elif req == "migrate":
            self.migrate()
        elif req == "contend":
            self.contend()
        elif req == "contend-partial":
            self.contend_partial()
        elif req == "release":
            # Its workload reads the FIFO: one line ends it.
            fifo_write(self.tmp(".cfifo"), "x\n")
            rc = self.cperf.wait() if self.cperf else "none"
            say("%s: L1's perf exited (%s)" % (self.cfg, rc))
            self.answer("done")
        elif req == "guest-cycles-start":
            self.gc_start()
        elif word == "guest-cycles-stop" and len(arg.split()) == 2:
            self.gc_stop(*arg.split())
        else:
            self.answer("unknown-request")

    # --- contention --------------------------------------------------------
    def contend(self):
        """All 6 of L1's counters, pinned, until "release"; the workload
        waits on a FIFO.  The answer comes once an interval counted."""
        csv = self.tmp(".contend.csv")
        if os.path.exists(csv):
            os.unlink(csv)
        mkfifo(self.tmp(".cfifo"))
        with open(self.tmp(".contend.err"), "wb") as err:
            self.cperf = self.procs.start(
                ["perf", "stat", "-a", "-I", "200", "-x,", "-o", csv, "-e",
                 "{cycles,cycles,cycles,cycles,cycles,cycles}:D", "--",
                 "cat", self.tmp(".cfifo")], stdout=err, stderr=err)
        if wait_for(60, lambda: ",cycles" in read(csv)):
            self.answer("done")
        else:
            for line in read(self.tmp(".contend.err")).splitlines():
                say("%s: perf stat: %s" % (self.cfg, line))
            self.answer("no-contention")

    def contend_partial(self):
        """One flexible cycles event on L1's one CPU (contention-kvm.sh says
        what that leaves L2), until "release".  perf record has enabled it
        by the time its workload runs and says "ready"."""
        ready = self.tmp(".pready")
        if os.path.exists(ready):
            os.unlink(ready)
        mkfifo(self.tmp(".cfifo"))
        with open(self.tmp(".prec.err"), "wb") as err:
            self.cperf = self.procs.start(
                ["perf", "record", "-a", "-e", "cycles", "-F", "100", "-o",
                 self.tmp(".prec.data"), "--", "sh", "-c",
                 "echo >%s; exec cat %s" % (ready, self.tmp(".cfifo"))],
                stdout=err, stderr=err)
        if wait_for(60, lambda: os.path.exists(ready)):
            mux = read("/sys/bus/event_source/devices/cpu/"
                       "perf_event_mux_interval_ms").strip()
            say("%s: L1's perf_event_mux_interval_ms: %s" % (self.cfg, mux))
            self.answer("done")
        else:
            for line in read(self.tmp(".prec.err")).splitlines():
                say("%s: perf record: %s" % (self.cfg, line))
            self.answer("no-contention")

    # --- L1's count of L2's guest-mode cycles ------------------------------
    # Over one of stat-exact's three cycle runs (loop_1000M): the reference
    # L2's cycles are checked against (init-l1's gc_ratio).  L1's PMU is
    # vpmu's under TCG, and a GuestOnly (cycles:G) event on L2's QEMU
    # counts the time its vCPU spends in SVM guest mode, whatever L1 does
    # meanwhile.  L2's own count covers part of that window (its perf
    # stat's), so it cannot be larger; and since both are guest-mode time
    # of the same L2, L0's speed (which varies by a third from one L2 VM to
    # the next, docs/qemu.md) cancels out of their ratio.  perf starts with
    # the event disabled; "enable" on its control FIFO opens the window and
    # is acknowledged before L1 answers.
    def gc_start(self):
        for f in ("/tmp/gc.csv", "/tmp/gc.err"):
            if os.path.exists(f):
                os.unlink(f)
        mkfifo("/tmp/gc.ctl")
        mkfifo("/tmp/gc.ack")
        with open("/tmp/gc.err", "wb") as err:
            self.gperf = self.procs.start(
                ["perf", "stat", "-e", "cycles:G", "-x,", "-D", "-1",
                 "--control", "fifo:/tmp/gc.ctl,/tmp/gc.ack", "-p",
                 str(self.qpid()), "-o", "/tmp/gc.csv"], stderr=err)
        # A command written before perf opens its FIFO is lost with the
        # last writer's close: wait for perf's "Events disabled" (-D -1).
        wait_for(60, lambda: self.gperf.poll() is not None or
                 "Events disabled" in read("/tmp/gc.err") + read("/tmp/gc.csv"))
        fifo_write("/tmp/gc.ctl", "enable\n")
        if fifo_readline("/tmp/gc.ack", 60) == "ack":
            self.answer("done")
        else:
            for line in read("/tmp/gc.err").splitlines():
                say("%s: perf stat cycles:G: %s" % (self.cfg, line))
            self.procs.stop(self.gperf)
            self.gperf = None
            self.answer("no-guest-cycles")

    def gc_stop(self, run, l2cycles):
        """Close the window; "RUN L2_CYCLES L1_CYCLES" into /tmp/CFG.gc."""
        g = None
        if self.gperf:
            fifo_write("/tmp/gc.ctl", "disable\n")
            fifo_readline("/tmp/gc.ack", 60)
            self.gperf.send_signal(2)       # SIGINT: perf prints its count
            self.gperf.wait(60)
            self.procs.stop(self.gperf)
            for line in read("/tmp/gc.csv").splitlines():
                f = line.split(",")
                if len(f) > 2 and f[2].startswith("cycles"):
                    g = f[0]
                    break
        self.gperf = None
        say("%s: stat-exact run %s: L2 cycles %s, L1's count of L2's"
            " guest-mode cycles %s" % (self.cfg, run, l2cycles, g or "none"))
        with open(self.tmp(".gc"), "a") as f:
            f.write("%s %s %s\n" % (run, l2cycles, g or "none"))
        self.answer("done")

    # --- a live migration to a second QEMU in L1 ---------------------------
    def migrate(self):
        """A destination QEMU (the same arguments, -incoming -S); the source
        migrates live; the destination's query-vpmu, before it runs, must
        be the source's after the migration (l1checks.check_migration).
        The destination becomes the current L2 (QEMU, monitor, serial
        input, log)."""
        cfg, m0 = self.cfg, now()
        dst, dfd = self.start_qemu(cfg + ".dst", "-incoming %s -S" % MIGRATE_URI)
        try:
            dmon = Monitor(cfg, "/tmp/%s.dst.qmp" % cfg)
        except (OSError, EOFError, QMPError):
            say("%s: the migration destination's QMP does not answer" % cfg)
            self.answer("no-destination")
            self.procs.stop(dst)
            os.close(dfd)
            return
        src = self.mon
        src.execute("migrate-set-parameters",
                    {"max-bandwidth": MIGRATE_BANDWIDTH})
        say("%s: migrate: %s" % (cfg, json.dumps(
            src.execute("migrate", {"uri": MIGRATE_URI}))))
        st, r = "", None
        while now() - m0 < 180:
            r = src.execute("query-migrate")
            st = ((r or {}).get("return") or {}).get("status", "")
            if st in ("completed", "failed", "cancelled"):
                break
            time.sleep(1)
        say("%s: query-migrate: %s" % (cfg, json.dumps(r)[:400]))
        with open(self.tmp(".mig.status"), "w") as f:
            f.write(st + "\n")
        if st != "completed":
            self.answer("not-migrated")
            dmon.close()
            self.procs.stop(dst)
            os.close(dfd)
            return
        self.save(".q.mig-src.json", src.execute("query-vpmu"))
        # The destination has loaded the state when it leaves "inmigrate".
        while now() - m0 < 200:
            r = dmon.execute("query-status")
            if "inmigrate" not in json.dumps(r):
                break
            time.sleep(1)
        say("%s: destination: %s" % (cfg, json.dumps(r)))
        self.save(".q.mig-dst.json", dmon.execute("query-vpmu"))
        dmon.execute("cont")
        secs = int(now() - m0)
        with open(self.tmp(".mig.secs"), "w") as f:
            f.write("%d\n" % secs)
        src.execute("quit")
        src.close()
        rc = self.qemu.wait()
        say("%s: migrated in %d s; the source exited (%d)" % (cfg, secs, rc))
        os.close(self.serial)
        self.qemu, self.serial, self.mon = dst, dfd, dmon
        self.logs.append("/tmp/%s.dst.log" % cfg)
        self.answer("migrated")

    # --- a stall: L2 20 s from its limit ------------------------------------
    def stall_dump(self):
        """Where L2's vCPU is and what its QEMU's threads wait on in L1,
        for the log; nothing is checked.  Then L2's own view, on its console
        (L2 boots with sysrq_always_enabled): SysRq 9 (console log level 9,
        so that the rest is printed under "quiet"), l (the running CPU's
        backtrace) and w (the blocked tasks)."""
        cfg, hmp = self.cfg, self.mon.hmp
        say("%s: %d s, near L2's limit (%d s): its state"
            % (cfg, time.time() - self.t0, self.limit))
        # The general registers, up to EFER (not the FPU's and vector ones).
        for line in hmp("info registers").split("FCW=")[0].splitlines():
            say("%s: info registers: %s" % (cfg, line))
        for line in hmp("info lapic").splitlines():
            say("%s: info lapic: %s" % (cfg, line))
        for k in range(1, 6):
            time.sleep(1)
            m = re.search(r"RIP=[0-9a-f]* RFL=[0-9a-f]*.*",
                          hmp("info registers"))
            say("%s: RIP sample %d: %s" % (cfg, k, m.group(0) if m else ""))
        for k in "9lw":
            hmp("sendkey alt-sysrq-" + k)
            time.sleep(1)
        task = "/proc/%d/task" % self.qpid()
        for tid in sorted(os.listdir(task) if os.path.isdir(task) else []):
            stat = read("%s/%s/stat" % (task, tid)).split(" ")[1:3]
            say("%s: L1 thread %s %s wchan %s" % (
                cfg, tid, " ".join(stat), read("%s/%s/wchan" % (task, tid))))
            for line in read("%s/%s/stack" % (task, tid)).splitlines()[:8]:
                say("%s:   %s" % (cfg, line))

    def qpid(self):
        return self.qemu.pid if self.qemu is not None else self.pid

    def finish(self):
        """An L2 that ended while L1 contended (no "release"): stop L1's
        perf."""
        for p in (self.cperf, self.gperf):
            if p is not None and p.poll() is None:
                say("%s: L2 ended while L1's perf ran; stopping it (%d)"
                    % (self.cfg, p.pid))
                self.procs.stop(p)


def run(cfg, procs):
    l2 = L2(cfg, procs)
    l2.qemu, l2.serial = l2.start_qemu(cfg)
    try:
        l2.mon = Monitor(cfg, "/tmp/%s.qmp" % cfg)
    except (OSError, EOFError, QMPError) as e:
        say("%s: L2's QMP does not answer (%s)" % (cfg, e))
        l2.mon = None
    if l2.mon:
        l2.serve()
    rc = l2.qemu.wait()
    l2.finish()
    return 128 - rc if rc < 0 else rc


def run_libvirt(cfg, name, pid, procs):
    """Serve the domain; every 5 s the last answer of query-vpmu into
    /tmp/CFG.q.last.json (the helper's "opens"), and the domain destroyed
    once its time is up (status 124, as timeout's)."""
    l2 = L2(cfg, procs)
    l2.qemu, l2.pid = None, pid
    l2.serial = os.open(l2.tmp(".pipe.in"), os.O_RDWR)
    l2.mon = Virsh(name)
    l2.save(".q.helper.json", l2.mon.execute("query-vpmu"))
    ticks = [0]

    def poll():
        ticks[0] += 1
        if time.time() - l2.t0 >= l2.limit:
            l2.rc = 124
            l2.mon.virsh("destroy", name)
        elif ticks[0] % 5 == 0:
            r = l2.mon.execute("query-vpmu")
            if r and "return" in r:
                with open(l2.tmp(".q.last.json"), "w") as f:
                    f.write(json.dumps(r) + "\n")
    l2.serve(poll)
    l2.finish()
    return l2.rc


def main(argv):
    with Procs() as procs:
        if len(argv) == 2:
            return run(argv[1], procs)
        if len(argv) == 5 and argv[2] == "--libvirt":
            return run_libvirt(argv[1], argv[3], int(argv[4]), procs)
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
