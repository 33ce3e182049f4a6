#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The real consumers of vpmu's profiles read what libvpmu writes.

mkprofile (tests/profile/mkprofile.c) writes a made-up guest's profile:
vCPU 0 has 100 samples in guest_b (guest_main -> guest_a -> guest_b) and
30 in guest_a (guest_main -> guest_a), user mode; vCPU 1 has 10 in the
kernel's do_one; every sample stands for 10007 instructions.  The
expectations below follow from that by hand:

  go tool pprof -top -sample_index=samples: guest_b flat 100 cum 100,
    guest_a 30 / 130, do_one 10 / 10, guest_main 0 / 130 (of 140);
  go tool pprof -traces: three stacks with their labels (vm, vcpu, mode)
    and 100 x 10007, 30 x 10007, 10 x 10007 instructions;
  -tagfocus=mode=kernel: do_one alone;
  perf script --guestkallsyms: 140 instructions:G samples, the user
    chains named from mkprofile's ELF, do_one+0x20 in the guest kernel;
  perf kvm --guest report: the samples marked [u] (guest user) and [g]
    (guest kernel), 71.43% / 21.43% / 7.14%.

A consumer that is not installed SKIPs (golang-1.19-go, linux-perf).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

GO = shutil.which("go") or "/usr/lib/go-1.19/bin/go"
PERF = shutil.which("perf")
n = 0
failed = 0


def ok(cond, desc, diag=""):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok") + f" {n} - {desc}")
    if not cond:
        failed += 1
        for line in str(diag).splitlines()[-30:]:
            print(f"# {line}")


def skip(desc, why):
    global n
    n += 1
    print(f"ok {n} - {desc} # SKIP {why}")


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


def top_rows(out):
    """pprof -top's rows: {name: (flat, cum)}."""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(\S+)$",
                     line)
        if m:
            rows[m.group(3)] = (int(m.group(1)), int(m.group(2)))
    return rows


def traces(out):
    """pprof -traces' stacks: [(labels, value, [frames])]."""
    result = []
    for block in out.split("-----------+" + "-" * 55):
        labels, value, frames = {}, None, []
        for line in block.splitlines():
            m = re.match(r"\s*(\w+):\s+(\S+)$", line)
            v = re.match(r"\s*(\d+)\s+(\S+)$", line)
            if m and value is None:
                labels[m.group(1)] = m.group(2)
            elif v and value is None:
                value, frames = int(v.group(1)), [v.group(2)]
            elif value is not None and line.strip():
                frames.append(line.strip())
        if value is not None:
            result.append((labels, value, frames))
    return result


def check_pprof(d):
    prof = os.path.join(d, "profile.pb.gz")
    if not os.access(GO, os.X_OK):
        for desc in ("pprof -top", "pprof -traces", "pprof -tagfocus"):
            skip(desc, "no go tool (Debian's golang-1.19-go)")
        return
    env = dict(os.environ, HOME=d, GOCACHE=os.path.join(d, "gocache"))
    rc, out, err = run([GO, "tool", "pprof", "-top", "-sample_index=samples",
                        prof], env)
    want = {"guest_b": (100, 100), "guest_a": (30, 130),
            "do_one": (10, 10), "guest_main": (0, 130)}
    got = top_rows(out)
    ok(rc == 0 and got == want and "Total samples = 140" in out,
       f"pprof -top: flat/cum per function {want}", out + err)

    rc, out, err = run([GO, "tool", "pprof", "-traces", prof], env)
    want = [({"vm": "tenant1", "mode": "user", "vcpu": "0"}, 100 * 10007,
             ["guest_b", "guest_a", "guest_main"]),
            ({"vm": "tenant1", "mode": "user", "vcpu": "0"}, 30 * 10007,
             ["guest_a", "guest_main"]),
            ({"vm": "tenant1", "mode": "kernel", "vcpu": "1"}, 10 * 10007,
             ["do_one"])]
    got = traces(out)
    ok(rc == 0 and sorted(got, key=lambda t: -t[1]) == want,
       "pprof -traces: main -> a -> b with its labels and instruction counts",
       out + err)

    rc, out, err = run([GO, "tool", "pprof", "-top", "-sample_index=samples",
                        "-tagfocus=mode=kernel", prof], env)
    ok(rc == 0 and top_rows(out) == {"do_one": (10, 10)},
       "pprof -tagfocus=mode=kernel: do_one alone", out + err)


def check_perf(d):
    data = os.path.join(d, "perf.data")
    ksyms = os.path.join(d, "kallsyms")
    if not PERF:
        for desc in ("perf script", "perf kvm --guest report"):
            skip(desc, "no perf (Debian's linux-perf)")
        return
    rc, out, err = run([PERF, "script", "-i", data, f"--guestkallsyms={ksyms}"])
    heads = [l for l in out.splitlines() if "instructions:G:" in l]
    chain_b = re.findall(r"guest_b\+0x0 .*\n\s+\S+ guest_a\+0x5 .*\n"
                         r"\s+\S+ guest_main\+0x5", out)
    kern = re.findall(r"ffffffff83e00120 do_one\+0x20 \(\[guest.kernel", out)
    ok(rc == 0 and len(heads) == 140 and
       all(l.startswith("tenant1  4242 ") for l in heads),
       "perf script: 140 samples of instructions:G, comm tenant1, pid 4242",
       out[:3000] + err)
    ok(len(chain_b) == 100 and len(kern) == 10,
       "perf script: 100 chains b <- a <- main named from the ELF, "
       "10 do_one+0x20 in the guest kernel", out[:3000] + err)

    rc, out, err = run([PERF, "kvm", "--guest", f"--guestkallsyms={ksyms}",
                        "report", "-i", data, "--stdio", "--sort", "sym",
                        "-g", "none", "--no-children"])
    rows = re.findall(r"^\s+([\d.]+)%\s+\[(\w)\]\s+(\S+)", out, re.M)
    ok(rc == 0 and sorted(rows) == sorted([("71.43", "u", "guest_b"),
                                           ("21.43", "u", "guest_a"),
                                           ("7.14", "g", "do_one")]),
       "perf kvm --guest report: guest_b [u] 71.43%, guest_a [u] 21.43%, "
       "do_one [g] 7.14%", out + err)


def main():
    mkprofile = sys.argv[1]
    print("TAP version 13")
    with tempfile.TemporaryDirectory(prefix="vpmu-prof-") as d:
        rc, out, err = run([mkprofile, d])
        ok(rc == 0, "mkprofile writes profile.pb.gz and perf.data", err)
        if rc == 0:
            check_pprof(d)
            check_perf(d)
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
