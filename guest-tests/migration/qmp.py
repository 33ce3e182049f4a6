#!/usr/bin/env python3
"""QMP query-vpmu and the vPMU's -cpu and -accel properties, checked
from the host.

  qmp.py

Boots mig-count.elf (see mig-count.c) with -smp 2 and -qmp, waits until
vCPU 0 is inside its counted loop and checks query-vpmu's reply
(check_reply): one entry per vCPU, the vendor, the counter list (8 GP + 3
fixed on Intel, 6 GP on AMD, by default), vCPU 0's programmed counters
(event, control, state "counting", value > 0, values consistent), the
others off; values that grow while the guest runs and stay put while it
is stopped; then the guest must still finish with exact counts.

  counting   Intel and AMD, with GP2 programmed with an event the TCG
             source cannot back: state "unsupported"
  catalogue  GP2 counts conditional branches (Skylake 0x01c4, Zen 0xd1):
             query-vpmu names it "conditional-branches" (docs/events.md),
             state "counting", the same count as GP1's branches
  filter     pmu-event-filter=deny 0xc0: GP0 (instructions) "filtered",
             value 0, filtered > 0; the guest reads 0 from it, the other
             counters exact
  reset      -S: every counter off and 0 before the guest runs; the
             layout follows pmu-version / pmu-gp-counters /
             pmu-fixed-counters
  pmu=off    -cpu ...,pmu=off and named models without pmu: empty list;
             -cpu max: a vPMU by default
  refusals   bad pmu-event-filter strings and bad pmu-* properties (also
             pmu-cycles=bogus, and pmu-cycles=cputime with -icount), bad
             -accel kvm vpmu-* values: QEMU refuses to start (status not
             0, no signal) with a message naming the property / the field
  filters    several entries: with spaces inside -cpu, with commas in
             -global; ",," inside -cpu is refused
  CPUID      pmu=on gives no TCG warning for perfctr-core

Environment: QEMU, O (logs in O/qmp/), N (loop iterations, default
0xF0000000), INTEL_CPU (default Skylake-Client), AMD_CPU (default EPYC) --
model names only, the script adds the properties --, TIMEOUT, QEMU_EXTRA
(miglib.py).

Prints one TAP stream; exit status 0 if every check passed, 1 if one
failed, 2 ("Bail out!") without QEMU or payload.
"""
import json
import os
import re
import stat
import sys
import time

from miglib import Rig, explain, stderr_lines

EN_OS_USR = 0x430000            # EVTSEL EN | OS | USR
rig = None          # the Rig, made by main()


def show(c):
    return json.dumps(c, sort_keys=True)


def is_off(c):
    return c["state"] == "off" and c["value"] == 0


def check_layout(d, vendor, cpus, gp, fixed, check):
    """One entry per vCPU, @vendor, @gp GP then @fixed fixed counters in
    index order on each: False if the rest cannot be checked."""
    idx = [x.get("cpu-index") for x in d]
    if not check(idx == list(range(cpus)),
                 "one entry per vCPU, cpu-index 0..%d" % (cpus - 1),
                 "cpu-index list %s" % idx):
        return False
    vendors = [x["vendor"] for x in d]
    check(all(v == vendor for v in vendors), "vendor %s on every vCPU"
          % vendor, "vendors %s" % vendors)
    want = [(False, i) for i in range(gp)] + [(True, i) for i in range(fixed)]
    for x in d:
        got = [(c["fixed"], c["index"]) for c in x["counters"]]
        if got != want:
            return check(False, "counters: %d GP then %d fixed, in order"
                         % (gp, fixed),
                         "cpu %d has %s" % (x["cpu-index"], got))
    return check(True, "counters: %d GP then %d fixed, in order, on every "
                 "vCPU" % (gp, fixed))


def check_reset(d, check):
    """Before the guest runs: every counter off, every total 0."""
    bad = [(x["cpu-index"], show(c)) for x in d for c in x["counters"]
           if not is_off(c)]
    check(not bad, "every counter off with value 0", str(bad[:2]))
    tot = [(x["cpu-index"], x["overflows"], x["pmis"], x["filtered"],
            x["unsupported"], x["source-errors"]) for x in d]
    check(all(t[1:] == (0, 0, 0, 0, 0) for t in tot),
          "overflows, pmis, filtered, unsupported, source-errors all 0",
          str(tot))


def check_gp2(gp, g1, gp2_state, gp2_event, check):
    """GP2 as @gp2_state says: "counting" is the event catalogue's
    @gp2_event enabled with GP1 by the same global write (every branch of
    the loop is its JNZ, a conditional branch), another state has value
    0.  The counters after GP2."""
    if not gp2_state:
        return gp[2:]
    g2 = gp[2]
    if gp2_state == "counting":
        check(g2["event"] == gp2_event and g2["state"] == "counting"
              and g2["value"] == g1["value"] > 0,
              "cpu 0 GP2: %s, state counting, value = GP1 (%d)"
              % (gp2_event, g1["value"]), show(g2))
    else:
        check(g2["state"] == gp2_state and g2["value"] == 0,
              "cpu 0 GP2: state %s, value 0" % gp2_state, show(g2))
    return gp[3:]


def check_programmed(d, vendor, fixed, gp0_state, gp2_state, gp2_event,
                     check):
    """vCPU 0 inside mig-count's counted loop: GP0 instructions (EVTSEL
    EN|OS|USR|0xC0) in @gp0_state, GP1 branches (0xC4 Intel, 0xC2 AMD),
    fixed 0 (Intel, FIXED_CTR_CTRL nibble 0x3), GP2 as check_gp2() says,
    every other counter, and every counter of the other vCPUs, off."""
    cpu0 = d[0]
    gp = [x for x in cpu0["counters"] if not x["fixed"]]
    fx = [x for x in cpu0["counters"] if x["fixed"]]
    br_evt = 0xC4 if vendor == "intel" else 0xC2
    filtered = gp0_state == "filtered"
    g0, g1 = gp[0], gp[1]
    ok = (g0["event"] == "instructions" and g0["control"] == EN_OS_USR | 0xC0
          and g0["state"] == gp0_state and g0["overflows"] == 0)
    if filtered:
        ok = ok and g0["value"] == 0 and g0["filtered"] > 0
        what = "state filtered, value 0, filtered > 0"
    else:
        ok = ok and g0["value"] > 0 and g0["filtered"] == 0
        what = "state counting, value > 0"
    check(ok, "cpu 0 GP0: instructions, control 0x%x, %s"
          % (EN_OS_USR | 0xC0, what), show(g0))
    check(g1["event"] == "branches" and g1["control"] == EN_OS_USR | br_evt
          and g1["state"] == "counting" and g1["value"] > 0,
          "cpu 0 GP1: branches, control 0x%x, state counting, value > 0"
          % (EN_OS_USR | br_evt), show(g1))
    # The query runs on the vCPU thread between TBs: the values are one
    # consistent snapshot, even while the guest runs.  In the loop the
    # instructions are the enabling WRMSR, the MOV and 2 per branch.
    ins = 2 * g1["value"] + 2
    if fixed:
        check(fx[0]["event"] == "instructions" and fx[0]["control"] == 0x3
              and fx[0]["state"] == "counting" and fx[0]["value"] == ins,
              "cpu 0 fixed 0: instructions, control 0x3, state counting, "
              "value = 2 * GP1 + 2", show(fx[0]))
    if not filtered:
        check(g0["value"] == ins, "cpu 0 GP0 = 2 * GP1 + 2 (%d, %d)"
              % (g0["value"], g1["value"]), show(g0) + " " + show(g1))
    rest = check_gp2(gp, g1, gp2_state, gp2_event, check) + fx[1:]
    bad = [show(x) for x in rest if not is_off(x)]
    check(not bad, "cpu 0: the %d other counters are off with value 0"
          % len(rest), str(bad[:2]))
    want_u = gp2_state == "unsupported"
    t = cpu0
    check(t["overflows"] == 0 and t["pmis"] == 0 and t["source-errors"] == 0
          and (t["filtered"] > 0) == filtered
          and (t["unsupported"] > 0) == want_u,
          "cpu 0 totals: no overflow, PMI or source error; filtered %s; "
          "unsupported %s" % ("> 0" if filtered else "0",
                              "> 0" if want_u else "0"),
          json.dumps({k: v for k, v in t.items() if k != "counters"}))
    for x in d[1:]:
        bad = [show(c) for c in x["counters"] if not is_off(c)]
        check(not bad and x["filtered"] == 0 and x["unsupported"] == 0,
              "cpu %d: every counter off with value 0 (the AP never ran)"
              % x["cpu-index"], str(bad[:2]))


def check_reply(d, label, empty=False, vendor=None, cpus=1, gp=0, fixed=0,
                programmed=False, gp0_state="counting", gp2_state=None,
                gp2_event=None):
    """The checks of query-vpmu reply @d: a list of (ok, description,
    diagnostic), each description after "@label: "."""
    out = []

    def check(ok, desc, diag=""):
        out.append((bool(ok), f"{label}: {desc}", "" if ok else diag))
        return ok

    try:
        if empty:
            check(d == [], "query-vpmu returns an empty list",
                  json.dumps(d)[:300])
        elif check_layout(d, vendor, cpus, gp, fixed, check):
            if programmed:
                check_programmed(d, vendor, fixed, gp0_state, gp2_state,
                                 gp2_event, check)
            else:
                check_reset(d, check)
    except (TypeError, KeyError, IndexError, AttributeError) as e:
        check(False, "query-vpmu's reply has the expected shape",
              f"{e!r}: {json.dumps(d)[:300]}")
    return out


def emit(results):
    for ok, desc, diag in results:
        rig.ok(ok, desc, diag)


def query(tag, name):
    """query-vpmu, kept in TAG.NAME.json: the reply, None if QMP failed."""
    d = rig.qmp(tag, "query-vpmu")
    with open(rig.log(tag, name + ".json"), "w") as f:
        f.write(json.dumps(d) + "\n")
    return d


def value(d, i):
    """vCPU 0's counter @i, None without a reply."""
    try:
        return d[0]["counters"][i]["value"]
    except (TypeError, KeyError, IndexError):
        return None


def counting(v, cpu, gp, fixed, gp2, mode=None):
    """The programmed-counters run: mode None, "filter" or "catalogue"."""
    t0, tag = time.monotonic(), f"{v}-{mode or 'counting'}"
    want0, append = rig.insns, f"{rig.n_arg} gp2={gp2}"
    kw = dict(vendor=v, cpus=2, gp=gp, fixed=fixed, programmed=True,
              gp2_state="unsupported")
    if mode == "filter":
        kw["gp0_state"] = "filtered"
        append += " deny_insns=1"
        want0 = 0
    elif mode == "catalogue":
        kw.update(gp2_state="counting", gp2_event="conditional-branches")
    print(f"# ---- {tag}: -smp 2 -cpu '{cpu}', guest: {append}")
    rig.start(tag, cpu, append, "-smp", "2")
    if not rig.wait_counting(tag):
        rig.ok(False, f"{tag}: guest reached the counted loop",
               "\n".join(stderr_lines(rig.log(tag, "stderr"))))
        rig.wait(tag, 1)
        return
    d1 = query(tag, "1")
    if d1 is None:
        rig.ok(False, f"{tag}: query-vpmu answers", rig.qmp_errors(tag))
        rig.wait(tag, 1)
        return
    emit(check_reply(d1, tag, **kw))
    # Live: a later query shows more (fixed 0 on Intel when GP0 is denied).
    ctr = 1 if mode == "filter" else 0
    time.sleep(0.3)
    d2 = query(tag, "2")
    a, b = value(d1, ctr), value(d2, ctr)
    rig.ok(a is not None and b is not None and b > a,
           f"{tag}: the counter grows while the guest runs ({a} -> {b})")
    if mode == "filter":
        a = value(d2, 0)
        rig.ok(a == 0, f"{tag}: the denied counter is still 0 later ({a})")
    rig.qmp(tag, "stop")
    d3 = query(tag, "3")
    time.sleep(0.2)
    d4 = query(tag, "4")
    rig.ok(d3 is not None and d3 == d4,
           f"{tag}: query-vpmu is the same twice while stopped",
           rig.qmp_errors(tag))
    bad = [f"{desc}: {diag}" for ok, desc, diag in check_reply(d4, tag, **kw)
           if not ok]
    rig.ok(not bad, f"{tag}: the stopped snapshot passes the same checks",
           "\n".join(bad))
    rig.qmp(tag, "cont")
    why = rig.guest_exact(tag, rig.wait(tag), want0)
    rig.ok(not why, f"{tag}: the guest finishes with exact counts (GP0 "
           f"{want0})", why)
    print(f"# {tag}: {rig.elapsed(t0)} s")


def prelaunch(tag, cpu, **kw):
    """-S, query-vpmu, its checks, quit."""
    rig.start(tag, cpu, "n=1", "-smp", "2", "-S")
    d = query(tag, "reply")
    if d is not None:
        emit(check_reply(d, f"{tag} (-cpu {cpu}, -S)", **kw))
    else:
        rig.ok(False, f"{tag} (-cpu {cpu}): query-vpmu answers",
               rig.qmp_errors(tag),
               "\n".join(stderr_lines(rig.log(tag, "stderr"))))
    rig.quit(tag)
    rig.wait(tag, 30)


def refuse(tag, cpu, desc, pat, *args):
    """QEMU must not start: it exits by itself, status not 0 and no
    signal, with an error matching the regular expression @pat."""
    rig.start(tag, cpu, "n=1", "-S", *args)
    rc = rig.wait(tag, 30)
    err = stderr_lines(rig.log(tag, "stderr"), strip_prog=True)
    why = ""
    if rc == 0 or rc >= 124:
        why = f"QEMU status {rc}: {explain(rc)}"
    elif not re.search(pat, "\n".join(err), re.M):
        why = f"no /{pat}/ in the error"
    first = (err + [""])[0]
    rig.ok(not why, f"{desc}: refused, status {rc} ({first})", why,
           "\n".join(err))


def refusals():
    print("# ---- refusals")
    ip, ap = INTEL + ",pmu=on", AMD + ",pmu=on"
    flt = "pmu-event-filter"
    for tag, cpu, desc in (
            ("bad-filter-1", ip + ",pmu-event-filter=bogus",
             "pmu-event-filter=bogus"),
            ("bad-filter-2", ip + ",pmu-event-filter=deny 0xzz",
             "pmu-event-filter='deny 0xzz'"),
            ("bad-filter-3", ip + ",pmu-event-filter=",
             "pmu-event-filter= (empty)"),
            ("bad-filter-4", ip + ",pmu-event-filter=deny 0x1c0:0x100",
             "pmu-event-filter='deny 0x1c0:0x100'"),
            ("bad-filter-5", ip + ",pmu-event-filter=allow fixed=0xzz",
             "pmu-event-filter='allow fixed=0xzz'"),
            ("bad-filter-amd", ap + ",pmu-event-filter=maybe 0xc0",
             "AMD pmu-event-filter='maybe 0xc0'")):
        refuse(tag, cpu, desc, flt)
    # libvpmu names its own config fields (intel_version, nr_gp, ...);
    # accept those or the property names.
    for tag, cpu, desc, pat in (
            ("bad-version", ip + ",pmu-version=9", "pmu-version=9",
             "pmu-version|intel_version"),
            ("bad-version-0", ip + ",pmu-version=0", "pmu-version=0",
             "pmu-version|intel_version"),
            ("bad-gp", ip + ",pmu-gp-counters=9", "pmu-gp-counters=9",
             "pmu-gp-counters|nr_gp"),
            ("bad-gp-amd", ap + ",pmu-gp-counters=7", "AMD pmu-gp-counters=7",
             "pmu-gp-counters|nr_gp"),
            ("bad-fixed", ip + ",pmu-fixed-counters=4",
             "pmu-fixed-counters=4 (version 2)",
             "pmu-fixed-counters|nr_fixed"),
            ("bad-width", ip + ",pmu-width=64", "pmu-width=64",
             "pmu-width|gp_width"),
            ("bad-width-31", ip + ",pmu-width=31", "pmu-width=31",
             "pmu-width|gp_width"),
            ("bad-version-256", ip + ",pmu-version=256",
             "pmu-version=256 (not a uint8)", "pmu-version"),
            # A QAPI enum (X86VpmuCycles): QEMU's own words.
            ("bad-cycles", ip + ",pmu-cycles=bogus", "pmu-cycles=bogus",
             "Parameter 'pmu-cycles' does not accept value 'bogus'")):
        refuse(tag, cpu, desc, pat)
    refuse("bad-cycles-icount", ap + ",pmu-cycles=cputime",
           "pmu-cycles=cputime with -icount", "pmu-cycles=cputime: under "
           "-icount", "-icount", "shift=0")


def accel(tag, prop, secs, *args):
    """QEMU with -accel kvm,vpmu=on,@prop and no guest, stopped after
    @secs: (status, its stderr without the line of our own stop)."""
    # vpmu-helper= (none): a host's /etc/qemu/vpmu.conf may name one.
    argv = [rig.qemu] + rig.fw + ["-accel",
                                  "kvm,vpmu=on,vpmu-helper=," + prop,
                                  "-display", "none", "-nodefaults", "-S"]
    rig.run_bg(tag, argv + list(args))
    rc = rig.wait(tag, secs)
    err = [ln for ln in stderr_lines(rig.log(tag, "stderr"))
           if "terminating on signal" not in ln]
    return rc, "\n".join(err)


def refuse_accel(prop, val):
    """The KVM accelerator's vpmu-rdpmc, vpmu-multiplex and vpmu-sync,
    QAPI enums (X86VpmuRdpmc, X86VpmuMultiplex, X86VpmuSync): parsed
    when the accelerator object is made, before /dev/kvm is opened, so
    this needs no KVM.  Refused in QEMU's own words."""
    rc, err = accel(f"accel-{prop}", f"{prop}={val}", 30)
    why = ""
    if rc == 0 or rc >= 124:
        why = f"QEMU status {rc}"
    elif f"Parameter '{prop}' does not accept value '{val}'" not in err:
        why = f"not the {prop} error"
    rig.ok(not why, f"-accel kvm,{prop}={val}: refused, status {rc} "
           f"({(err.splitlines() + [''])[0]})", why, err)


def accel_checks():
    refuse_accel("vpmu-rdpmc", "bogus")
    refuse_accel("vpmu-multiplex", "scale")
    refuse_accel("vpmu-sync", "bogus")
    # vpmu-sync=linux needs KVM's vPMU with the global MSRs: where KVM has
    # none (a cloud VM's nested /dev/kvm), QEMU says which and does not
    # start; where it has them, QEMU starts (paused, stopped after 10 s).
    try:
        kvm = (stat.S_ISCHR(os.stat("/dev/kvm").st_mode)
               and os.access("/dev/kvm", os.W_OK))
    except OSError:
        kvm = False
    if not kvm:
        rig.skip("-accel kvm,vpmu-sync=linux: refused or started",
                 "no usable /dev/kvm")
        return
    rc, err = accel("accel-sync-linux", "vpmu-sync=linux", 10,
                    "-cpu", "host,pmu=on,-arch-capabilities")
    if rc == 124:
        rig.ok(not err, "-accel kvm,vpmu-sync=linux: starts on this KVM "
               "(its vPMU has the global MSRs)", err)
    else:
        rig.ok(re.search(r"vpmu-sync=linux: sync=linux needs the global "
                         r"control .*\((KVM has no vPMU|KVM's vPMU has no "
                         r"global MSRs)\)", err),
               f"-accel kvm,vpmu-sync=linux: refused, status {rc}, with "
               "the reason", err)


def started(tag, desc):
    """QEMU TAG came up (QMP answers, prelaunch), then quit."""
    st = rig.qmp(tag, "query-status")
    rig.ok(st is not None and st.get("status") == "prelaunch", desc,
           "\n".join(stderr_lines(rig.log(tag, "stderr"))))
    rig.quit(tag)
    rig.wait(tag, 30)


def filter_lists():
    """A filter with several entries.  Inside -cpu they are separated by
    spaces: x86's -cpu parser splits at every comma (strtok), so ",," is
    no escape there (docs/tcg.md claimed it was).  -global does not split
    its value, so commas work there."""
    ip = INTEL + ",pmu=on"
    rig.start("filter-spaces", ip + ",pmu-event-filter=deny 0xc0 0xc4 "
              "fixed=0x1", "n=1", "-S")
    started("filter-spaces", "-cpu ...,pmu-event-filter='deny 0xc0 0xc4 "
            "fixed=0x1' (spaces) starts")
    glob = f"{INTEL}-x86_64-cpu.pmu-event-filter=deny 0xc0,0xc4"
    rig.start("filter-global", ip, "n=1", "-S", "-global", glob)
    started("filter-global", f"-global {INTEL}-x86_64-cpu.pmu-event-filter="
            "'deny 0xc0,0xc4' (commas) starts")
    rig.start("comma", ip + ",pmu-event-filter=deny 0xc0,,0xc4", "n=1", "-S")
    rc = rig.wait("comma", 30)
    err = "\n".join(stderr_lines(rig.log("comma", "stderr")))
    rig.ok("0xc4" in err and rc != 0 and rc < 124,
           "-cpu ...,pmu-event-filter='deny 0xc0,,0xc4': ',,' is no escape "
           f"in -cpu, refused (status {rc})", err)


def cpuid_warnings():
    """The PMU's own CPUID bits are vpmu's to give under TCG: no "TCG
    doesn't support" warning for them with pmu=on (QEMU patch 0006), as
    before with pmu=off."""
    print("# ---- CPUID bits the vPMU provides")
    err = {}
    for p in ("on", "off"):
        tag = f"epyc3-{p}"
        rig.start(tag, f"EPYC-v3,pmu={p}", "n=1", "-S")
        rig.quit(tag)
        rig.wait(tag, 30)
        with open(rig.log(tag, "stderr"), errors="replace") as f:
            err[p] = f.read()
    # QEMU 7.2: "CPUID.80000001H:ECX.perfctr-core"; 10.x:
    # "CPUID[eax=80000001h].ECX.perfctr-core [bit 23]".
    warned = re.search(r"TCG doesn't support requested feature: CPUID"
                       r"(\.80000001H:|\[eax=80000001h\]\.)ECX\.perfctr-core",
                       err["off"])
    rig.ok("perfctr-core" not in err["on"] and warned,
           "-cpu EPYC-v3,pmu=on: no warning for perfctr-core (pmu=off: "
           "TCG's warning)",
           "\n".join(f"{p}: {ln}" for p in err for ln in err[p].splitlines()
                     if "perfctr" in ln))


def prelaunches():
    print("# ---- before the guest runs (-S)")
    ip, ap = INTEL + ",pmu=on", AMD + ",pmu=on"
    intel = dict(vendor="intel", cpus=2)
    amd = dict(vendor="amd", cpus=2)
    prelaunch("intel-reset", ip, gp=8, fixed=3, **intel)
    prelaunch("amd-reset", ap, gp=6, **amd)
    prelaunch("intel-v3", ip + ",pmu-version=3", gp=8, fixed=3, **intel)
    prelaunch("intel-v1", ip + ",pmu-version=1", gp=8, fixed=0, **intel)
    prelaunch("intel-4gp", ip + ",pmu-gp-counters=4,pmu-fixed-counters=1",
              gp=4, fixed=1, **intel)
    prelaunch("amd-3gp", ap + ",pmu-gp-counters=3", gp=3, **amd)
    prelaunch("intel-off", INTEL + ",pmu=off", empty=True)
    prelaunch("intel-nopmu", INTEL, empty=True)
    prelaunch("amd-off", AMD + ",pmu=off", empty=True)
    prelaunch("intel-v9-off", INTEL + ",pmu=off,pmu-version=9", empty=True)
    rig.start("max", "max", "n=1", "-S")
    d = query("max", "reply")
    vendor = d[0].get("vendor") if d else "none"
    rig.ok(isinstance(d, list) and len(d) == 1, "-cpu max has a vPMU by "
           f"default (docs/tcg.md): one entry ({vendor})", json.dumps(d))
    rig.quit("max")
    rig.wait("max", 30)


INTEL = os.environ.get("INTEL_CPU") or "Skylake-Client"
AMD = os.environ.get("AMD_CPU") or "EPYC"


def main(argv):
    global rig
    if argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    # The guest must still be in its counted loop at the stop, about a
    # second after it reached it: TCG runs mig-count's 2-instruction loop
    # at ~2e9 instructions a second here.
    with Rig("qmp", default_n=0xF0000000) as rig:
        print(f"# {rig.qemu}, n={rig.n:#x}")
        ip, ap = INTEL + ",pmu=on", AMD + ",pmu=on"
        for args in (("intel", ip, 8, 3, "0x43412e"),   # GP2: LLC misses
                     ("amd", ap, 6, 0, "0x4300c3"),  # GP2: branch mispredicts
                     ("intel", ip + ",pmu-event-filter=deny 0xc0", 8, 3,
                      "0x43412e", "filter"),
                     ("amd", ap + ",pmu-event-filter=deny 0xc0", 6, 0,
                      "0x4300c3", "filter"),
                     # GP2: conditional branches
                     ("intel", ip, 8, 3, "0x4301c4", "catalogue"),
                     ("amd", ap, 6, 0, "0x4300d1", "catalogue")):
            rig.scenario(counting, *args)
        for fn in (prelaunches, refusals, accel_checks, filter_lists,
                   cpuid_warnings):
            rig.scenario(fn)
        rig.done()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
