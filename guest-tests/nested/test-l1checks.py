#!/usr/bin/env python3
"""The nested suite's checks in L1 (guest-tests/nested/l1checks.py) on
hand-made input, as TAP: the kernel-and-user comparison (ku_check) on L2
output, and the checks of what L1 saw (query-vpmu replies, its perf's
output) on files written here, each once as it should be and once with
the fault it is there to catch.

ku_check:
The reference ran three sys_100k runs; its kernel part is each count less
the exact user count (4N+4 = 400,004 instructions, 2N+1 = 200,001
branches), averaged:
  instructions 36,800,000 + 36,900,000 + 37,000,000 -> 36,900,000
  branches     10,900,000 + 11,000,000 + 11,100,000 -> 11,000,000
at ticks 30, 31, 35 -> 32.0.  5% of it: 1,845,000 and 550,000.
"""
import contextlib
import io
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import l1checks  # noqa: E402
import l1serve  # noqa: E402
from l1checks import ku_check  # noqa: E402
from pytap import Tap  # noqa: E402

D = "(kernel and user), kernel part of sys_100k within 5%"


def l2(*runs):
    """L2's output: one ku run line per "I B T" argument."""
    return "".join("# ku run %d: instructions=%s branches=%s ticks=%s"
                   " (sys_100k)\n" % ((r,) + tuple(run.split()))
                   for r, run in enumerate(runs, 1))


REF = l2("37200004 11100001 30", "37300004 11200001 31",
         "37400004 11300001 35")


def main():
    t = Tap()

    def expect(name, out, event, want, ref_tests="stat-exact"):
        """ku_check of @name (L2 output @out) against REF on @event gives
        exactly @want: (ok, description), or None (no check)."""
        got = ku_check(name, "ref", event, out, REF, ref_tests)
        t.ok(got == want, "%s %s" % (name, event),
             "expected: %r\ngot:      %r" % (want, got))

    # The same kernel work at three times the ticks, 66 more of ~3,300
    # instructions each: +217,804 (+0.6%).
    slow = l2("37517808 11400002 96")
    expect("slow", slow, "instructions", (True, "slow ~ ref: instructions %s"
           " (ref 36900000 at 32.0 ticks; slow 37117804 at 96.0, +0.6%%)" % D))
    expect("slow", slow, "branches", (True, "slow ~ ref: branches %s"
           " (ref 11000000 at 32.0 ticks; slow 11200001 at 96.0, +1.8%%)" % D))
    # Exactly 5% over: 36,900,000 + 1,845,000 = 38,745,000 (+ 400,004), and
    # 11,000,000 + 550,000 = 11,550,000 (+ 200,001).
    edge = l2("39145004 11750001 32")
    expect("edge", edge, "instructions", (True, "edge ~ ref: instructions %s"
           " (ref 36900000 at 32.0 ticks; edge 38745000 at 32.0, +5.0%%)" % D))
    expect("edge", edge, "branches", (True, "edge ~ ref: branches %s"
           " (ref 11000000 at 32.0 ticks; edge 11550000 at 32.0, +5.0%%)" % D))
    # One more: 5% and one instruction (or branch) over.
    over = l2("39145005 11750002 32")
    expect("over", over, "instructions", (False, "over ~ ref: instructions %s"
           " (ref 36900000 at 32.0 ticks; over 38745001 at 32.0, +5.0%%)" % D))
    expect("over", over, "branches", (False, "over ~ ref: branches %s"
           " (ref 11000000 at 32.0 ticks; over 11550001 at 32.0, +5.0%%)" % D))
    # The kernel counted twice; not at all (only the user counts).
    twice = l2("74200004 22200001 32")
    expect("twice", twice, "instructions", (False, "twice ~ ref: instructions"
           " %s (ref 36900000 at 32.0 ticks; twice 73800000 at 32.0,"
           " +100.0%%)" % D))
    none = l2("400004 200001 32", "400004 200001 33")
    expect("none", none, "branches", (False, "none ~ ref: branches %s"
           " (ref 11000000 at 32.0 ticks; none 0 at 32.5, -100.0%%)" % D))
    # Without the tracepoint (ticks=none) the counts still compare.
    noticks = l2("37300004 11200001 none", "37300004 11200001 none")
    expect("noticks", noticks, "instructions", (True, "noticks ~ ref:"
           " instructions %s (ref 36900000 at 32.0 ticks; noticks 36900000"
           " at none, +0.0%%)" % D))
    # No ku run lines, or malformed ones (a count perf did not print): no
    # runs.
    expect("empty", "", "instructions", (False, "empty ~ ref: instructions"
           " %s (no runs: ref 36900000 32.0, empty none)" % D))
    bad = ("# ku run 1: instructions=<not counted> branches=11200001"
           " ticks=30 (sys_100k)\n")
    expect("bad", bad, "instructions", (False, "bad ~ ref: instructions %s"
           " (no runs: ref 36900000 32.0, bad none)" % D))
    expect("bad", bad, "branches", (True, "bad ~ ref: branches %s"
           " (ref 11000000 at 32.0 ticks; bad 11000000 at 30.0, +0.0%%)" % D))
    # A reference that did not run stat-exact: no check at all.
    expect("twice", twice, "instructions", None, ref_tests="record-kvm")
    l1_checks(t)
    requests_checks(t)
    return t.end()


def requests_checks(t):
    """l1serve.requests_in: L2's requests in its console log, whole lines
    only (a serial console's log grows a few bytes at a time)."""
    log = ("boot\r\nVPMU-L1 guest-cycles-start\r\n# x VPMU-L1 no\n"
           "VPMU-L1 guest-cycles-stop 1 11463372439\n")
    want = ["guest-cycles-start", "guest-cycles-stop 1 11463372439"]
    got = l1serve.requests_in(log)
    t.ok(got == want, "requests_in: two requests, \\r\\n or \\n, not one"
         " inside a line", got)
    # The same log cut in the middle of the second request, and before any
    # newline at all: the whole ones only.
    got = l1serve.requests_in(log[:log.index(" 1146")])
    t.ok(got == want[:1], "requests_in: a request still being written is not"
         " one yet", got)
    got = l1serve.requests_in("VPMU-L1 query before")
    t.ok(got == [], "requests_in: no newline, no request", got)


class Results:
    """What a check reported: (ok, description) in order."""

    def __init__(self):
        self.res = []

    def ok(self, cond, desc, diag=""):
        self.res.append((bool(cond), desc))


def run_check(check, d, files, cfg="vpmu"):
    """@check on @files (suffix -> text or a reply object) of @cfg in
    directory @d; the list of its results' ok values."""
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    for suffix, body in files.items():
        with open(os.path.join(d, cfg + suffix), "w") as f:
            f.write(body if isinstance(body, str) else json.dumps(body))
    r = Results()
    with contextlib.redirect_stdout(io.StringIO()):
        check(r, l1checks.Run(cfg, d))
    return [ok for ok, _ in r.res]


def vcpu(counters, **kw):
    v = {"cpu-index": 0, "vendor": "amd", "overflows": 0, "pmis": 0,
         "filtered": 0, "unsupported": 0, "source-errors": 0,
         "counters": counters}
    v.update(kw)
    return {"return": [v]}


def ctr(i, event="none", state="off", control=0, value=0, overflows=0):
    return {"fixed": False, "index": i, "event": event, "control": control,
            "value": value, "state": state, "overflows": overflows,
            "pmis": overflows, "filtered": 0}


def l1_checks(t):
    # check_qmp: counter 0 EN|INT|USR|0xC0 = 0x5100C0 = 5308608 at
    # 2^47 + 1 + 56276, perf stat's C = 69339; perf record's 999 overflows
    # and PMIs between 10 and 1009.
    c0 = ctr(0, "instructions", "counting", 0x5100C0, 2**47 + 1 + 56276)
    qmp = {
        ".q.counting.json": vcpu([c0] + [ctr(i) for i in range(1, 6)]),
        ".q.before-record.json": vcpu([], overflows=10, pmis=10),
        ".q.after-record.json": vcpu([], overflows=1009, pmis=1009),
        ".q.bad.json": {"error": {"class": "GenericError", "desc": "x"}},
        ".q.bad-status.json": {"return": {"status": "running"}},
        ".out": "# qmp: perf stat -a instructions:u=69339\n"
                "# qmp: perf record samples=999\n"}
    with tempfile.TemporaryDirectory() as d:
        got = run_check(l1checks.check_qmp, d, qmp)
        t.ok(got == [True] * 8, "check_qmp: 8 checks pass on a good run",
             got)
        # 5 counters, HostOnly (bit 41) set, counter 5 missing, the count 0
        # since the start, a source error, one overflow too many, no error
        # for the bad argument, QEMU paused.
        bad = dict(qmp)
        bad[".q.counting.json"] = vcpu(
            [ctr(0, "instructions", "counting", 0x5100C0 | 1 << 41,
                 2**47 + 1)] + [ctr(i) for i in range(1, 5)],
            **{"source-errors": 1})
        bad[".q.after-record.json"] = vcpu([], overflows=1010, pmis=1009)
        bad[".q.bad.json"] = {"return": []}
        bad[".q.bad-status.json"] = {"return": {"status": "paused"}}
        got = run_check(l1checks.check_qmp, d, bad)
        t.ok(got == [False] * 8, "check_qmp: each of the 8 fails on its"
             " fault", got)
        # check_contention: 6 intervals of 6 events, all 100% running.
        line = "%d.2,1000,,cycles,200000000,%s,,\n"
        csv = "".join(line % (i, "100.00") for i in range(6) for _ in range(6))
        got = run_check(l1checks.check_contention, d,
                        {".contend.csv": csv}, cfg="emulated")
        t.ok(got == [True], "check_contention: 36 lines at 100% pass", got)
        got = run_check(l1checks.check_contention, d, {
            ".contend.csv": csv.replace("100.00", "99.50", 1)},
            cfg="emulated")
        t.ok(got == [False], "check_contention: one line at 99.50% fails",
             got)
        got = run_check(l1checks.check_contention, d, {
            ".contend.csv": "".join(line % (0, "100.00") for _ in range(5))},
            cfg="emulated")
        t.ok(got == [False], "check_contention: 5 lines are too few", got)
        # vpmu: source-lost-ns and multiplexed reads must both grow.
        lost = {".contend.csv": csv,
                ".q.before-contend.json": vcpu([], **{
                    "source-lost-ns": 5, "source-multiplexed-reads": 1}),
                ".q.contended.json": vcpu([], **{
                    "source-lost-ns": 21900000,
                    "source-multiplexed-reads": 25})}
        got = run_check(l1checks.check_contention, d, lost)
        t.ok(got == [True, True], "check_contention: vpmu's lost time grew",
             got)
        lost[".q.contended.json"] = vcpu([], **{
            "source-lost-ns": 5, "source-multiplexed-reads": 25})
        got = run_check(l1checks.check_contention, d, lost)
        t.ok(got == [True, False],
             "check_contention: vpmu's lost time did not grow", got)
        # check_migration: the statistics differ (they do not migrate),
        # the guest state does not; then counter 0's value does.
        src = vcpu([ctr(0, "instructions", "counting", 0x5100C0, 12345, 7)],
                   overflows=7, pmis=7)
        dst = vcpu([ctr(0, "instructions", "counting", 0x5100C0, 12345, 0)])
        mig = {".mig.status": "completed\n", ".mig.secs": "6\n",
               ".q.mig-src.json": src, ".q.mig-dst.json": dst}
        got = run_check(l1checks.check_migration, d, mig)
        t.ok(got == [True] * 3, "check_migration: statistics aside, the"
             " same state", got)
        mig[".q.mig-dst.json"] = vcpu([ctr(0, "instructions", "off",
                                           0x5100C0, 12346)])
        mig[".mig.status"] = "failed\n"
        got = run_check(l1checks.check_migration, d, mig)
        t.ok(got == [False, False, True], "check_migration: failed, and a"
             " value differs (off is a state counter 0 may be in)", got)
    # script_stacks: three samples, two under calls_b <- calls_a <- main
    # (symbols with offsets), one with an empty chain.
    script = (
        "calls 100 1.0: 100003 instructions:u: 4011a0 calls_b+0x10 (calls)\n"
        "\t 4011a0 calls_b+0x10 (/vpmu/bin/calls)\n"
        "\t 401200 calls_a+0x8 (/vpmu/bin/calls)\n"
        "\t 401300 main+0x20 (/vpmu/bin/calls)\n"
        "\t 401400 __libc_start_main+0x80 (/vpmu/bin/calls)\n"
        "\n"
        "calls 100 1.1: 100003 instructions:u: 4011a4 calls_b+0x14 (calls)\n"
        "\t 4011a4 calls_b+0x14 (/vpmu/bin/calls)\n"
        "\t 401200 calls_a+0x8 (/vpmu/bin/calls)\n"
        "\t 401300 main+0x20 (/vpmu/bin/calls)\n"
        "\n"
        "calls 100 1.2: 100003 instructions:u: 401300 main+0x20 (calls)\n"
        "\n")
    got = l1checks.script_stacks(script)
    t.ok(got == (3, 2, 2, 2, "calls_b <- calls_a <- main"),
         "script_stacks: 3 samples, 2 at calls_b <- calls_a <- main", got)


if __name__ == "__main__":
    sys.exit(main())
