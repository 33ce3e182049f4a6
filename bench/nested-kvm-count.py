#!/usr/bin/env python3
"""What one guest PMI and one guest tick cost under each L2 PMU.

Reads the L1 console log of bench/nested-kvm.sh run with WHAT=count
(build/nested-kvm/l1.out by default) and prints, per configuration:

  - user-space exits per PMI and per tick: PMU MSR exits by kind of MSR
    (query-vpmu's @kvm, vpmu only) and every exit to QEMU by reason (L1's
    kvm_userspace_exit tracepoint, for every PMU alike);
  - PMU MSR accesses KVM served in L1's kernel (kvm_msr tracepoint);
  - vpmu's host calls by kind (query-vpmu's @kvm);
  - the L2 time a PMI and a tick cost;
  - per start-up of "true" and of "perf stat -e instructions true": every
    exit from L2 by SVM exit code (L1's kvm_exit), the exits to QEMU,
    vpmu's host calls and the time.

The L2 (bench/nested-kvm-l2.sh, nk.phase=count) brackets each phase with
"NK mark PHASE.start|end pmi= loc= up= sleep=" lines; L1 snapshots its
tracepoint sums ("NK CFG trace MARK ...") and query-vpmu ("NK CFG qmp MARK
{json}") at each mark.  Per PMI: the "pmi" phase (perf record -c, no
frequency ticks) divided by its PMIs.  Per tick: the "f100" phase
(perf record -F 100, few PMIs) less its PMIs at the per-PMI cost, divided
by its timer ticks.  Time: each phase's L2 time less its plain twin's
("loop", "work"), over the same PMIs or ticks.

Usage: bench/nested-kvm-count.py [L1OUT]
"""
import json
import re
import sys
from collections import defaultdict

EXIT_REASONS = {10: "intr", 29: "rdmsr", 30: "wrmsr"}
ROLES = ("counter", "selector", "global-ctrl", "status", "status-clear",
         "status-set", "other")
CALLS = ("set-msrs", "get-msrs", "get-lapic", "nmi", "signal-msi",
         "perf-open", "perf-ioctl", "perf-read", "signals")
CONFIGS = ("emulated", "vpmustrict", "vpmu", "vpmulinux", "mediated")
# SVM exit codes (APM Vol. 2, Appendix C) of L1's kvm_exit.
SVM_EXITS = {0x60: "intr", 0x61: "nmi", 0x64: "vintr",
             0x65: "cr0-sel-write", 0x6E: "rdtsc", 0x6F: "rdpmc",
             0x72: "cpuid", 0x74: "iret", 0x77: "pause", 0x78: "hlt",
             0x79: "invlpg", 0x7B: "ioio", 0x7C: "msr", 0x81: "vmmcall",
             0x87: "rdtscp", 0x89: "wbinvd", 0x8D: "xsetbv", 0x400: "npf",
             0x401: "avic-ipi", 0x402: "avic-noaccel"}


def svm_exit_name(code):
    """SVM exit code -> name: CRn/DRn reads and writes 0x00-0x3F,
    exceptions 0x40 + vector, the rest by table or in hex."""
    if code < 0x40:
        kind = "cr" if code < 0x20 else "dr"
        return f"{kind}{code & 15}-{'wr' if code & 16 else 'rd'}"
    if code < 0x60:
        return f"exc{code - 0x40}"
    return SVM_EXITS.get(code, hex(code))


def pmu_msr_role(msr):
    """The kind of a PMU MSR (AMD and Intel), or None for other MSRs."""
    if 0xC0010000 <= msr <= 0xC0010007:
        return "selector" if msr < 0xC0010004 else "counter"
    if 0xC0010200 <= msr <= 0xC001020B:
        return "counter" if msr & 1 else "selector"
    amd_global = {0xC0000300: "status", 0xC0000301: "global-ctrl",
                  0xC0000302: "status-clear", 0xC0000303: "status-set"}
    intel = {0x38D: "selector", 0x38E: "status", 0x38F: "global-ctrl",
             0x390: "status-clear", 0x391: "status-set", 0x392: "other",
             0x345: "other"}
    if msr in amd_global:
        return amd_global[msr]
    if msr in intel:
        return intel[msr]
    if 0xC1 <= msr <= 0xC8 or 0x4C1 <= msr <= 0x4C8 or 0x309 <= msr <= 0x30C:
        return "counter"
    if 0x186 <= msr <= 0x18D:
        return "selector"
    return None


def parse_kv(words):
    return dict(w.split("=", 1) for w in words if "=" in w)


def trace_sums(words):
    """'msr=ECX:W:N exit=R:N' words -> {key: count}."""
    sums = defaultdict(int)
    for w in words:
        if w.startswith("msr="):
            ecx, write, n = w[4:].split(":")
            role = pmu_msr_role(int(ecx, 16))   # hist .hex: no 0x
            if role:
                rw = "wr" if int(write) else "rd"
                sums["kvm-" + rw + "-" + role] += int(n)
                sums["kvm-pmu-msr"] += int(n)
        elif w.startswith("kexit="):
            code, n = (int(x) for x in w[6:].split(":"))
            sums["kexit-" + svm_exit_name(code)] += n
            sums["kexit-all"] += n
        elif w.startswith("exit="):
            reason, n = w[5:].split(":")
            name = EXIT_REASONS.get(int(reason), "other")
            sums["exit-" + name] += int(n)
            sums["exit-all"] += int(n)
    return sums


def qmp_sums(reply):
    """query-vpmu's reply -> {key: count} over its vCPUs' @kvm."""
    sums = defaultdict(int)
    for cpu in json.loads(reply).get("return", []):
        kvm = cpu.get("kvm")
        if not kvm:
            continue
        for e in kvm["exits"]:
            sums["vpmu-rd-" + e["msr"]] += e["reads"]
            sums["vpmu-wr-" + e["msr"]] += e["writes"]
            sums["vpmu-exits"] += e["reads"] + e["writes"]
        for c in CALLS:
            sums[c] += kvm[c]
        sums["sync"] = kvm["sync"]
        sums["sync-late"] += kvm["sync-late"]
        # PMIs KVM raised itself (sync=linux); QEMU before them has none.
        sums["pmi-kvm"] += kvm.get("pmi-kvm", 0)
        sums["pmi-kvm-missed"] += kvm.get("pmi-kvm-missed", 0)
    return sums


def load(path):
    marks = defaultdict(dict)      # cfg -> mark -> {pmi, loc, up, sleep}
    snaps = defaultdict(lambda: defaultdict(dict))  # cfg -> mark -> sums
    samples = defaultdict(dict)
    with open(path, errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) < 4 or w[0] != "NK":
                continue
            cfg, tag = w[1], w[2]
            if tag == "mark":
                marks[cfg][w[3]] = {k: float(v) for k, v in
                                    parse_kv(w[4:]).items() if v}
            elif tag == "trace":
                snaps[cfg][w[3]].update(trace_sums(w[4:]))
            elif tag == "qmp":
                reply = line.split(" qmp " + w[3] + " ", 1)[1]
                try:
                    snaps[cfg][w[3]].update(qmp_sums(reply))
                except (ValueError, KeyError) as e:
                    print(f"# {cfg} {w[3]}: query-vpmu reply unreadable: {e}",
                          file=sys.stderr)
            elif tag == "phase":
                kv = parse_kv(w[4:])
                samples[cfg][w[3]] = int(kv.get("samples", 0))
                if "runs" in kv and "median_ns" in kv:
                    marks[cfg][w[3] + ".runs"] = {
                        "runs": float(kv["runs"]),
                        "median_ms": float(kv["median_ns"]) / 1e6}
    return marks, snaps, samples


def phase(marks, snaps, cfg, name):
    """Deltas over a phase: PMIs, ticks, seconds and every sum."""
    a, b = marks[cfg].get(name + ".start"), marks[cfg].get(name + ".end")
    if not a or not b:
        return None
    sa, sb = snaps[cfg].get(name + ".start", {}), snaps[cfg].get(name + ".end", {})
    d = {k: sb.get(k, 0) - sa.get(k, 0) for k in set(sa) | set(sb)
         if k != "sync"}
    d["pmis"] = b["pmi"] - a["pmi"]
    d["ticks"] = b["loc"] - a["loc"]
    d["secs"] = b["up"] - a["up"] - a.get("sleep", 0)
    d["sync"] = sb.get("sync", "")
    return d


def per_event(marks, snaps, cfg):
    """{key: (per PMI, per tick)} and the phases used."""
    pmi, f100 = phase(marks, snaps, cfg, "pmi"), phase(marks, snaps, cfg, "f100")
    loop, work = phase(marks, snaps, cfg, "loop"), phase(marks, snaps, cfg, "work")
    if not pmi or not pmi["pmis"]:
        return None
    out = {}
    keys = set(pmi) | set(f100 or {})
    for k in keys - {"pmis", "ticks", "secs", "sync"}:
        p = pmi.get(k, 0) / pmi["pmis"]
        t = None
        if f100 and f100["ticks"]:
            t = (f100.get(k, 0) - p * f100["pmis"]) / f100["ticks"]
        out[k] = (p, t)
    tp = (pmi["secs"] - loop["secs"]) / pmi["pmis"] if loop else None
    tt = None
    if f100 and work and f100["ticks"] and tp is not None:
        tt = (f100["secs"] - work["secs"] - tp * f100["pmis"]) / f100["ticks"]
    out["time-ms"] = (tp * 1e3 if tp is not None else None,
                      tt * 1e3 if tt is not None else None)
    out["_phases"] = (pmi, f100, loop, work)
    return out


def fmt(v):
    if v is None:
        return "-"
    return f"{v:.2f}" if abs(v) < 100 else f"{v:.0f}"


def median(v):
    v = sorted(v)
    n = len(v)
    return None if not n else (v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2)


def work_table(path):
    """The workload modes (NK CFG work mode=M ns=T [samples=S]): medians in
    s, each against the pmu=off plain run, and vpmu's against emulated's."""
    ns, smp, start = defaultdict(list), defaultdict(list), {}
    with open(path, errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) < 4 or w[0] != "NK":
                continue
            kv = parse_kv(w[3:])
            if w[2] == "work" and kv.get("ns", "0") != "0":
                ns[w[1], kv["mode"]].append(int(kv["ns"]) / 1e9)
                if "samples" in kv:
                    smp[w[1], kv["mode"]].append(int(kv["samples"]))
            elif w[2] == "startup" and "median_ns" in kv:
                start[w[1], kv["what"]] = int(kv["median_ns"]) / 1e6
    if not ns:
        return
    off = median(ns.get(("off", "plain"), [])) or None
    cols = [c for c in CONFIGS if any(k[0] == c for k in ns)]
    modes = []
    for _, m in sorted(ns, key=lambda k: k[1]):
        if m not in modes:
            modes.append(m)
    print()
    print(f"| bench-work, s (median; ratio to pmu=off plain {off or 0:.3f} s;"
          " [ratio to emulated]) | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for m in modes:
        cells = []
        for c in cols:
            v = median(ns.get((c, m), []))
            e = median(ns.get(("emulated", m), []))
            if v is None:
                cells.append("-")
                continue
            cell = f"{v:.3f}" + (f" ({v / off:.2f})" if off else "")
            if e and c != "emulated":
                cell += f" [{v / e:.2f}]"
            if smp.get((c, m)):
                cell += f"; {median(smp[(c, m)]):.0f} samples"
            cells.append(cell)
        print(f"| {m} | " + " | ".join(cells) + " |")
    for what in ("true", "perf-stat"):
        cells = []
        for c in cols:
            v, e = start.get((c, what)), start.get(("emulated", what))
            cells.append("-" if v is None else f"{v:.1f}" +
                         (f" [{v / e:.2f}]" if e and c != "emulated" else ""))
        print(f"| start-up {what}, ms | " + " | ".join(cells) + " |")


def exact_table(path):
    """Counts and samples against their exact values, every configuration:
    loop_N instructions:u 2N+4, branches:u N+1; perf record -c P on
    loop_10M floor(exact / P)."""
    got = {}
    with open(path, errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) < 4 or w[0] != "NK" or w[2] not in ("count", "record"):
                continue
            kv = parse_kv(w[3:])
            if w[2] == "count" and "w" in kv:
                n = int(kv["w"][len("loop_"):-1]) * 10**6
                for ev, want in (("instructions:u", 2 * n + 4),
                                 ("branches:u", n + 1)):
                    got[w[1], kv["w"] + " " + ev] = (kv.get(ev, ""), want)
            elif w[2] == "record" and "ev" in kv:
                x = 20000004 if kv["ev"] == "instructions:u" else 10000001
                got[w[1], f"record {kv['ev']} -c {kv['period']}"] = (
                    kv.get("samples", ""), x // int(kv["period"]))
    if not got:
        return
    cols = [c for c in CONFIGS if any(k[0] == c for k in got)]
    rows = []
    for _, r in got:
        if r not in rows:
            rows.append(r)
    print()
    print("| exact? (value, want) | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for r in rows:
        cells = []
        for c in cols:
            v, want = got.get((c, r), ("", None))
            ok = v.isdigit() and int(v) == want
            cells.append("-" if v == "" else f"{v}" + ("" if ok else f" (want {want})"))
        print(f"| {r} | " + " | ".join(cells) + " |")


def startup_table(marks, snaps, cols):
    """Per start-up run (phases "true" and "pstat"): exits from L2 by SVM
    exit code, exits to QEMU, vpmu's host calls, the median time."""
    res = {}
    for c in cols:
        for ph in ("true", "pstat"):
            d, r = phase(marks, snaps, c, ph), marks[c].get(ph + ".runs")
            if d and r:
                res[c, ph] = ({k: v / r["runs"] for k, v in d.items()
                               if isinstance(v, (int, float))},
                              r["median_ms"])
    if not res:
        return
    cols = [c for c in cols if any(k[0] == c for k in res)]
    keys = sorted({k for v, _ in res.values() for k in v
                   if k.startswith("kexit-") and k != "kexit-all"},
                  key=lambda k: -max(res[x][0].get(k, 0) for x in res))
    rows = [("exits from L2, all (L1 kvm_exit)", "kexit-all")]
    rows += [(f"  {k[6:]}", k) for k in keys]
    rows += [("user-space exits (to QEMU)", "exit-all"),
             ("PMU MSR accesses KVM served", "kvm-pmu-msr")]
    rows += [(f"vpmu host call: {c}", c) for c in CALLS]
    print()
    print("| per start-up run: true / perf stat | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for label, key in rows + [("L2 time (median), ms", None)]:
        cells = []
        for c in cols:
            v = [res.get((c, ph)) for ph in ("true", "pstat")]
            if key is None:
                cells.append(" / ".join("-" if x is None else f"{x[1]:.1f}"
                                        for x in v))
            else:
                cells.append(" / ".join("-" if x is None else
                                        fmt(x[0].get(key, 0)) for x in v))
        if key and key not in ("kexit-all", "exit-all") and \
                all(p in ("0.00", "-") for x in cells for p in x.split(" / ")):
            continue
        print(f"| {label} | " + " | ".join(cells) + " |")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "build/nested-kvm/l1.out"
    exact_table(path)
    work_table(path)
    marks, snaps, samples = load(path)
    cols = [c for c in CONFIGS if c in marks] + \
        sorted(c for c in marks if c not in CONFIGS)
    if not cols:
        return 0
    startup_table(marks, snaps, cols)
    res = {c: per_event(marks, snaps, c) for c in cols}
    rows = [("user-space exits, all (L1 trace)", "exit-all"),
            ("  of them RDMSR", "exit-rdmsr"), ("  of them WRMSR", "exit-wrmsr"),
            ("  of them KVM_EXIT_INTR (signal)", "exit-intr")]
    rows += [(f"  vpmu WRMSR exits: {r}", "vpmu-wr-" + r) for r in ROLES]
    rows += [(f"  vpmu RDMSR exits: {r}", "vpmu-rd-" + r) for r in ROLES]
    rows += [("PMU MSR accesses KVM served (L1 trace)", "kvm-pmu-msr")]
    rows += [(f"  {rw} {r}", f"kvm-{rw}-{r}") for rw in ("rd", "wr")
             for r in ROLES]
    rows += [(f"vpmu host call: {c}", c) for c in CALLS]
    rows += [("vpmu: PMIs KVM raised itself", "pmi-kvm"),
             ("vpmu: ... that vpmu raised (KVM could not)", "pmi-kvm-missed")]
    rows += [("L2 time, ms", "time-ms")]
    print()
    head = "| per PMI / per tick | " + " | ".join(cols) + " |"
    print(head)
    print("|---|" + "---:|" * len(cols))
    for label, key in rows:
        cells = []
        for c in cols:
            r = res[c]
            if r is None or key not in r:
                cells.append("0 / 0" if r is not None and key != "time-ms"
                             else "-")
                continue
            p, t = r[key]
            cells.append(f"{fmt(p)} / {fmt(t)}")
        if all(x in ("0 / 0", "0.00 / 0.00", "-") for x in cells) and \
                key not in ("exit-all", "time-ms", "kvm-pmu-msr"):
            continue
        print(f"| {label} | " + " | ".join(cells) + " |")
    print()
    for c in cols:
        r = res[c]
        if r is None:
            print(f"{c}: no PMIs counted in the pmi phase")
            continue
        pmi, f100, loop, work = r["_phases"]
        print(f"{c}: sync={pmi.get('sync') or '-'}; pmi phase {pmi['pmis']:.0f} "
              f"PMIs, {pmi['secs']:.2f} s (plain {loop['secs'] if loop else 0:.2f} s);"
              f" f100 {f100['pmis'] if f100 else 0:.0f} PMIs, "
              f"{f100['ticks'] if f100 else 0:.0f} ticks, "
              f"{f100['secs'] if f100 else 0:.2f} s (plain "
              f"{work['secs'] if work else 0:.2f} s); samples {dict(samples[c])};"
              f" sync-late {pmi.get('sync-late', 0):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
