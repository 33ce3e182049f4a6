#!/usr/bin/env python3
"""Check a query-vpmu reply (JSON on stdin) for qmp.sh.

  vpmu_check.py --empty
  vpmu_check.py --vendor intel --cpus 2 --gp 8 --fixed 3 [--programmed]
                [--gp0-state counting|filtered] [--gp2-state STATE]
                [--gp2-event NAME]

Prints one line per check: "0|description" (pass) or
"1|description|diagnostic" (fail); qmp.sh turns them into TAP.

--programmed: vCPU 0 runs mig-count.elf inside its counted loop: GP0
instructions (EVTSEL EN|OS|USR|0xC0), GP1 branches (0xC4 Intel, 0xC2
AMD), fixed 0 (Intel, FIXED_CTR_CTRL nibble 0x3), GP2 as --gp2-state
says (if given: "counting" means the conditional branches of the event
catalogue, named --gp2-event, with the same count as GP1); every other
counter, and every counter of the other vCPUs, off.  Without it every counter of every vCPU must be off and 0.
"""
import argparse
import json
import sys

EN_OS_USR = 0x430000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--empty", action="store_true")
    ap.add_argument("--vendor")
    ap.add_argument("--cpus", type=int, default=1)
    ap.add_argument("--gp", type=int)
    ap.add_argument("--fixed", type=int, default=0)
    ap.add_argument("--programmed", action="store_true")
    ap.add_argument("--gp0-state", default="counting")
    ap.add_argument("--gp2-state")
    ap.add_argument("--gp2-event")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    d = json.load(sys.stdin)
    lab = a.label + ": " if a.label else ""
    out = []

    def check(ok, desc, diag=""):
        out.append("%d|%s%s|%s" % (0 if ok else 1, lab, desc,
                                   "" if ok else diag))
        return ok

    if a.empty:
        check(d == [], "query-vpmu returns an empty list", json.dumps(d)[:300])
        print("\n".join(out))
        return
    idx = [x.get("cpu-index") for x in d]
    if not check(idx == list(range(a.cpus)),
                 "one entry per vCPU, cpu-index 0..%d" % (a.cpus - 1),
                 "cpu-index list %s" % idx):
        print("\n".join(out))
        return
    vendors = [x["vendor"] for x in d]
    check(all(v == a.vendor for v in vendors), "vendor %s on every vCPU" % a.vendor,
          "vendors %s" % vendors)
    want = [(False, i) for i in range(a.gp)] + [(True, i) for i in range(a.fixed)]
    lay_ok = True
    for x in d:
        got = [(c["fixed"], c["index"]) for c in x["counters"]]
        if got != want:
            lay_ok = check(False, "counters: %d GP then %d fixed, in order"
                           % (a.gp, a.fixed),
                           "cpu %d has %s" % (x["cpu-index"], got))
            break
    if lay_ok:
        check(True, "counters: %d GP then %d fixed, in order, on every vCPU"
              % (a.gp, a.fixed))
    else:
        print("\n".join(out))
        return

    def show(c):
        return json.dumps(c, sort_keys=True)

    def is_off(c):
        return c["state"] == "off" and c["value"] == 0

    if not a.programmed:
        bad = [(x["cpu-index"], show(c)) for x in d for c in x["counters"]
               if not is_off(c)]
        check(not bad, "every counter off with value 0", str(bad[:2]))
        tot = [(x["cpu-index"], x["overflows"], x["pmis"], x["filtered"],
                x["unsupported"], x["source-errors"]) for x in d]
        check(all(t[1:] == (0, 0, 0, 0, 0) for t in tot),
              "overflows, pmis, filtered, unsupported, source-errors all 0",
              str(tot))
        print("\n".join(out))
        return

    cpu0 = d[0]
    c = cpu0["counters"]
    gp = [x for x in c if not x["fixed"]]
    fx = [x for x in c if x["fixed"]]
    br_evt = 0xC4 if a.vendor == "intel" else 0xC2
    filtered = a.gp0_state == "filtered"
    g0, g1 = gp[0], gp[1]
    ok = (g0["event"] == "instructions" and g0["control"] == EN_OS_USR | 0xC0
          and g0["state"] == a.gp0_state and g0["overflows"] == 0)
    if filtered:
        ok = ok and g0["value"] == 0 and g0["filtered"] > 0
        desc = ("cpu 0 GP0: instructions, control 0x%x, state filtered, "
                "value 0, filtered > 0" % (EN_OS_USR | 0xC0))
    else:
        ok = ok and g0["value"] > 0 and g0["filtered"] == 0
        desc = ("cpu 0 GP0: instructions, control 0x%x, state counting, "
                "value > 0" % (EN_OS_USR | 0xC0))
    check(ok, desc, show(g0))
    check(g1["event"] == "branches" and g1["control"] == EN_OS_USR | br_evt
          and g1["state"] == "counting" and g1["value"] > 0,
          "cpu 0 GP1: branches, control 0x%x, state counting, value > 0"
          % (EN_OS_USR | br_evt), show(g1))
    # The query runs on the vCPU thread between TBs: the values are one
    # consistent snapshot, even while the guest runs.  In the loop the
    # instructions are the enabling WRMSR, the MOV and 2 per branch.
    ins = 2 * g1["value"] + 2
    if a.fixed:
        f0 = fx[0]
        check(f0["event"] == "instructions" and f0["control"] == 0x3
              and f0["state"] == "counting" and f0["value"] == ins,
              "cpu 0 fixed 0: instructions, control 0x3, state counting, "
              "value = 2 * GP1 + 2", show(f0))
    if not filtered:
        check(g0["value"] == ins, "cpu 0 GP0 = 2 * GP1 + 2 (%d, %d)"
              % (g0["value"], g1["value"]), show(g0) + " " + show(g1))
    rest = gp[2:] + fx[1:]
    if a.gp2_state == "counting":
        # A catalogue event, enabled with GP1 by the same global write:
        # every branch of the loop is its JNZ, a conditional branch.
        g2 = gp[2]
        check(g2["event"] == a.gp2_event and g2["state"] == "counting"
              and g2["value"] == g1["value"] > 0,
              "cpu 0 GP2: %s, state counting, value = GP1 (%d)"
              % (a.gp2_event, g1["value"]), show(g2))
        rest = gp[3:] + fx[1:]
    elif a.gp2_state:
        g2 = gp[2]
        check(g2["state"] == a.gp2_state and g2["value"] == 0,
              "cpu 0 GP2: state %s, value 0" % a.gp2_state, show(g2))
        rest = gp[3:] + fx[1:]
    bad = [show(x) for x in rest if not is_off(x)]
    check(not bad, "cpu 0: the %d other counters are off with value 0"
          % len(rest), str(bad[:2]))
    want_f = 1 if filtered else 0
    want_u = 1 if a.gp2_state == "unsupported" else 0
    t = cpu0
    check(t["overflows"] == 0 and t["pmis"] == 0 and t["source-errors"] == 0
          and (t["filtered"] > 0) == bool(want_f)
          and (t["unsupported"] > 0) == bool(want_u),
          "cpu 0 totals: no overflow, PMI or source error; filtered %s; "
          "unsupported %s" % ("> 0" if want_f else "0",
                              "> 0" if want_u else "0"),
          json.dumps({k: v for k, v in t.items() if k != "counters"}))
    for x in d[1:]:
        bad = [show(c) for c in x["counters"] if not is_off(c)]
        check(not bad and x["filtered"] == 0 and x["unsupported"] == 0,
              "cpu %d: every counter off with value 0 (the AP never ran)"
              % x["cpu-index"], str(bad[:2]))
    print("\n".join(out))


if __name__ == "__main__":
    main()
