#!/usr/bin/env python3
"""TAP checks of vpmu-exporter on recorded query-vpmu replies.

Usage: test-exporter.py PATH/TO/vpmu-exporter PATH/TO/fake-virsh

The exporter asks virsh; here a stand-in (fake-virsh) answers from files
that hold query-vpmu replies of the shapes QEMU gives (TCG, KVM with the
helper, KVM on a mediated host) and the ways a scrape goes wrong (not
JSON, a QEMU without vpmu, a domain that stops or vanishes mid-scrape,
libvirt down).  Expected samples are derived by hand from those replies.
Debian's promtool lints the output, and Debian's prometheus, started
here, scrapes the exporter over HTTP; both SKIP when not installed.
Everything started is stopped by pid.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "guest-tests"))
from pytap import Tap, free_port, prom_query, prometheus_argv  # noqa: E402

EXPORTER, FAKE_VIRSH = sys.argv[1], sys.argv[2]
UA = "11111111-1111-4111-8111-111111111111"
UB = "22222222-2222-4222-8222-222222222222"
UC = "33333333-3333-4333-8333-333333333333"


def counter(idx, state, fixed=False, event="cycles"):
    return {"fixed": fixed, "index": idx, "event": event, "control": 0,
            "value": 0, "state": state, "overflows": 0, "pmis": 0,
            "filtered": 0}


def vcpu(idx, counters, pmis=0, overflows=0, filtered=0, unsupported=0,
         errors=0, **more):
    d = {"cpu-index": idx, "vendor": "intel", "counters": counters,
         "overflows": overflows, "pmis": pmis, "filtered": filtered,
         "unsupported": unsupported, "source-errors": errors}
    d.update(more)
    return d


HELPER = {"path": "/run/vpmu-helper.sock", "vm": "kvm1", "by-cgroup": True,
          "counters": 6, "events": "", "opens": 6, "refusals": 2,
          "failures": 0, "connects": 1}
DOMAINS = {
    # TCG, Intel, two vCPUs: no host mode, no helper
    "tcg1": (UA, {"return": [
        vcpu(0, [counter(0, "counting"), counter(1, "off"),
                 counter(0, "counting", fixed=True)],
             pmis=7, overflows=9, filtered=3, unsupported=1),
        vcpu(1, [counter(0, "off"), counter(1, "filtered")])]}),
    # KVM with the helper, multiplexed
    "kvm1": (UB, {"return": [
        vcpu(0, [counter(0, "counting"), counter(1, "counting")], pmis=4,
             overflows=4, **{"source-multiplexed-reads": 5,
                             "source-lost-ns": 1500000000,
                             "helper": HELPER, "kvm": {"sync": "auto"},
                             "source-host-mode": "perf",
                             "source-host-reason": "KVM's mediated vPMU is off"})]}),
    # KVM on a host whose mediated vPMU leaves vpmu nothing to count
    "med": (UC, {"return": [
        vcpu(0, [counter(0, "off")], **{"kvm": {"sync": "auto"},
                                        "source-host-mode": "mediated"})]}),
}
BAD = {
    "notjson": "this is not json\n",
    "novpmu": json.dumps({"error": {"class": "CommandNotFound",
                                    "desc": "The command query-vpmu has not been found"}}),
    "noindex": json.dumps({"return": [{"vendor": "intel"}]}),
    "stopped": None,    # a uuid, then no reply: stopped during the scrape
    "gone": False,      # listed, then no uuid: gone before its uuid
}

L_A0 = f'domain="tcg1",uuid="{UA}",vcpu="0"'
L_A1 = f'domain="tcg1",uuid="{UA}",vcpu="1"'
L_B0 = f'domain="kvm1",uuid="{UB}",vcpu="0"'
L_C0 = f'domain="med",uuid="{UC}",vcpu="0"'
WANT = [
    "vpmu_exporter_libvirt_up 1",
    f'vpmu_domain_up{{domain="tcg1",uuid="{UA}"}} 1',
    f'vpmu_domain_up{{domain="kvm1",uuid="{UB}"}} 1',
    f'vpmu_domain_up{{domain="med",uuid="{UC}"}} 1',
    f"vpmu_guest_pmis_total{{{L_A0}}} 7",
    f"vpmu_guest_overflows_total{{{L_A0}}} 9",
    f"vpmu_guest_filter_denials_total{{{L_A0}}} 3",
    f"vpmu_guest_unsupported_total{{{L_A0}}} 1",
    f"vpmu_guest_counters_in_use{{{L_A0}}} 2",
    f"vpmu_guest_counters_in_use{{{L_A1}}} 0",
    f"vpmu_guest_pmis_total{{{L_A1}}} 0",
    f'vpmu_host_mode{{domain="tcg1",uuid="{UA}",mode="tcg"}} 1',
    f"vpmu_guest_counters_in_use{{{L_B0}}} 2",
    f"vpmu_source_multiplexed_reads_total{{{L_B0}}} 5",
    f"vpmu_source_lost_seconds_total{{{L_B0}}} 1.5",
    f"vpmu_helper_opens_total{{{L_B0}}} 6",
    f"vpmu_helper_refusals_total{{{L_B0}}} 2",
    f'vpmu_host_mode{{domain="kvm1",uuid="{UB}",mode="perf"}} 1',
    f'vpmu_host_mode{{domain="med",uuid="{UC}",mode="mediated"}} 1',
    f"vpmu_guest_counters_in_use{{{L_C0}}} 0",
] + [f'vpmu_domain_up{{domain="{d}",uuid="{d}-uuid"}} 0'
     for d in ("notjson", "novpmu", "noindex", "stopped")]

started = []        # (name, Popen) of what this test started
T = None            # the Tap, made by main()


def ok(cond, desc, diag=""):
    T.ok(cond, desc, diag)


def skip(desc, why):
    T.skip(desc, why)


def fixture(d, domains=True):
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    if not domains:
        return
    names = list(DOMAINS) + list(BAD)
    with open(os.path.join(d, "list"), "w") as f:
        f.write("\n".join(names) + "\n\n")     # virsh ends with a blank line
    for name, (uuid, reply) in DOMAINS.items():
        with open(os.path.join(d, name + ".uuid"), "w") as f:
            f.write(uuid + "\n")
        with open(os.path.join(d, name + ".reply"), "w") as f:
            f.write(json.dumps(reply) + "\n")
    for name, reply in BAD.items():
        if reply is False:
            continue
        with open(os.path.join(d, name + ".uuid"), "w") as f:
            f.write(f"{name}-uuid\n")
        if reply is not None:
            with open(os.path.join(d, name + ".reply"), "w") as f:
                f.write(reply)


def run(args, env):
    return subprocess.run([sys.executable, EXPORTER] + args, env=env,
                          capture_output=True, text=True, timeout=60)


def http_get(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, "", ""


def wait_http(url, secs):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        try:
            return http_get(url)
        except OSError:
            time.sleep(0.2)
    return None


def stop(name, p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    started.remove((name, p))


def test_once(env):
    r = run(["--once"], env)
    ok(r.returncode == 0, "--once exits 0 with failing domains", r.stderr)
    lines = r.stdout.splitlines()
    missing = [w for w in WANT if w not in lines]
    ok(not missing, "every sample derived from the replies is there",
       "\n".join(missing))
    ok(not any('"gone"' in x for x in lines),
       "a domain gone before its uuid has no sample")
    up = [x for x in lines if x.startswith("vpmu_domain_up{")]
    ok(len(up) == 7, "one vpmu_domain_up per domain with a uuid", "\n".join(up))
    errs = r.stderr.splitlines()
    ok(sorted(e.split(":")[1].strip() for e in errs) ==
       ["noindex", "notjson", "novpmu", "stopped"] and
       any("query-vpmu has not been found" in e for e in errs) and
       any("not JSON" in e for e in errs),
       "one stderr line per failed domain, with its reason", r.stderr)
    types = [x for x in lines if x.startswith("# TYPE ")]
    ok(len(types) == len(set(types)), "each family's TYPE once")
    return r.stdout


OP_EVENTS = "instructions:u,cycles"
# tcg1 after vpmu-operator-start: what query-vpmu adds per vCPU
OP_REPLY = {"return": [
    vcpu(0, [counter(0, "off")], **{"operator-events": [
        {"event": "instructions:u", "count": 2000004,
         "enabled-ns": 3000000000, "running-ns": 3000000000},
        {"event": "cycles", "count": 6500000, "enabled-ns": 2000000000,
         "running-ns": 500000000}]}),
    vcpu(1, [counter(0, "off")], **{"operator-events": [
        {"event": "instructions:u", "count": 0, "enabled-ns": 3000000000,
         "running-ns": 3000000000},
        {"event": "cycles", "count": 0, "enabled-ns": 2000000000,
         "running-ns": 0, "error": "No such file or directory"}]})]}
DENY = {"error": {"class": "GenericError", "desc": "operator metrics are "
                  "denied by this VM's policy (vpmu-helper: operator = no)"}}
# med after vpmu-operator-start: KVM's mediated vPMU, perf refuses them
MED_OP = {"return": [
    vcpu(0, [counter(0, "off")], **{
        "kvm": {"sync": "auto"}, "source-host-mode": "mediated",
        "source-host-reason": "kvm_amd enable_mediated_pmu=Y",
        "operator-events": [
            {"event": "instructions:u", "count": 0, "enabled-ns": 1000000000,
             "running-ns": 0, "error": "Operation not supported"},
            {"event": "cycles", "count": 0, "enabled-ns": 1000000000,
             "running-ns": 0, "error": "Operation not supported"}]})]}
OP_WANT = [
    f'vpmu_guest_instructions_total{{{L_A0},cpl="user"}} 2000004',
    f'vpmu_guest_cycles_total{{{L_A0},cpl="all"}} 6500000',
    f'vpmu_guest_instructions_total{{{L_A1},cpl="user"}} 0',
    f'vpmu_guest_event_enabled_seconds_total{{{L_A0},event="instructions:u"}} 3',
    f'vpmu_guest_event_running_seconds_total{{{L_A0},event="cycles"}} 0.5',
    f'vpmu_guest_event_enabled_seconds_total{{{L_A0},event="cycles"}} 2',
    f'vpmu_guest_event_running_seconds_total{{{L_A1},event="cycles"}} 0',
    f'vpmu_guest_event_up{{{L_A0},event="cycles"}} 1',
    f'vpmu_guest_event_up{{{L_A1},event="cycles"}} 0',
    f'vpmu_operator_consent{{domain="tcg1",uuid="{UA}"}} 1',
    f'vpmu_operator_consent{{domain="kvm1",uuid="{UB}"}} 0',
    f'vpmu_operator_consent{{domain="med",uuid="{UC}"}} 1',
    f'vpmu_guest_event_up{{{L_C0},event="instructions:u"}} 0',
    f'vpmu_guest_event_up{{{L_C0},event="cycles"}} 0',
]


def calls(d):
    with open(os.path.join(d, "calls")) as f:
        return f.read().splitlines()


def test_operator(d, env):
    """--events: started where allowed, refusals remembered, rendered."""
    with open(os.path.join(d, "tcg1.reply-op"), "w") as f:
        json.dump(OP_REPLY, f)
    with open(os.path.join(d, "kvm1.start"), "w") as f:
        json.dump(DENY, f)
    with open(os.path.join(d, "med.reply-op"), "w") as f:
        json.dump(MED_OP, f)
    # flaky: the start succeeds, its query-vpmu then answers nonsense: the
    # domain is down for the scrape, not a refusal
    with open(os.path.join(d, "list"), "a") as f:
        f.write("flaky\n")
    with open(os.path.join(d, "flaky.uuid"), "w") as f:
        f.write("flaky-uuid\n")
    with open(os.path.join(d, "flaky.reply"), "w") as f:
        json.dump({"return": [vcpu(0, [counter(0, "off")])]}, f)
    with open(os.path.join(d, "flaky.reply-op"), "w") as f:
        f.write("not json\n")
    open(os.path.join(d, "calls"), "w").close()
    port = free_port()
    p = subprocess.Popen([sys.executable, EXPORTER, "--events", OP_EVENTS,
                          "--listen", f"127.0.0.1:{port}"], env=env,
                         stderr=subprocess.PIPE, text=True)
    started.append(("exporter", p))
    first = wait_http(f"http://127.0.0.1:{port}/metrics", 20)
    second = wait_http(f"http://127.0.0.1:{port}/metrics", 5)
    stop("exporter", p)
    err = p.stderr.read()
    lines = first[2].splitlines() if first else []
    missing = [w for w in OP_WANT if w not in lines]
    ok(first is not None and not missing, "--events: the operator's counts "
       "and times, and each domain's consent", "\n".join(missing))
    ok('vpmu_domain_up{domain="flaky",uuid="flaky-uuid"} 0' in lines and
       not any(x.startswith('vpmu_operator_consent{domain="flaky"')
               for x in lines),
       "a domain whose query fails after the start: down, not a refusal",
       "\n".join(x for x in lines if "flaky" in x))
    starts = [c for c in calls(d) if "vpmu-operator-start" in c]
    ok(len(starts) == 4 and all(f'"events": "{OP_EVENTS}"' in c and
                                '"requester": "vpmu-exporter (user ' in c
                                for c in starts),
       "started once per domain over two scrapes, with the events and "
       "who asks (refusals are not asked again)", "\n".join(starts))
    ok("kvm1: operator events 'instructions:u,cycles': vpmu-operator-start: "
       "operator metrics are denied by this VM's policy (vpmu-helper: "
       "operator = no)" in err and err.count(": operator events '") == 1,
       "one stderr line for the refusal, with QEMU's reason; a mediated "
       "host's events start, refused by perf each (vpmu_guest_event_up 0)",
       err)
    ok(second is not None and second[2] == first[2],
       "the second scrape renders the same", "")
    os.unlink(os.path.join(d, "kvm1.start"))


def test_promtool(text):
    if not shutil.which("promtool"):
        skip("promtool check metrics is clean", "promtool not installed "
             "(Debian package prometheus)")
        return
    r = subprocess.run(["promtool", "check", "metrics"], input=text,
                       capture_output=True, text=True, timeout=60)
    ok(r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(),
       "promtool check metrics is clean", r.stdout + r.stderr)


def test_rules():
    """The shipped rules: promtool's check, and its unit test of them on
    hand-derived series (vpmu-rules-test.yml: IPC per VM, scaled by time
    enabled / running, and the alert when a VM's IPC drops)."""
    rules = os.path.join(os.path.dirname(os.path.abspath(EXPORTER)),
                         "vpmu-rules.yml")
    unit = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "vpmu-rules-test.yml")
    if not shutil.which("promtool"):
        for what in ("promtool check rules", "promtool test rules"):
            skip(f"{what}: vpmu-rules.yml", "promtool not installed "
                 "(Debian package prometheus)")
        return
    for args, desc in ((["check", "rules", rules], "promtool check rules"),
                       (["test", "rules", unit], "promtool test rules")):
        r = subprocess.run(["promtool"] + args, capture_output=True,
                           text=True, timeout=60)
        ok(r.returncode == 0 and "SUCCESS" in r.stdout,
           f"{desc}: vpmu-rules.yml", r.stdout + r.stderr)


def test_libvirt_down(d, env):
    fixture(d, domains=False)
    r = run(["--once"], env)
    ok(r.returncode == 0 and r.stdout.splitlines()[-1] ==
       "vpmu_exporter_libvirt_up 0" and "failed to connect" in r.stderr,
       "libvirt down: vpmu_exporter_libvirt_up 0 and the reason",
       r.stdout + r.stderr)
    fixture(d)


def test_textfile(tmp, env, text):
    path = os.path.join(tmp, "vpmu.prom")
    r = run(["--textfile", path], env)
    with open(path) as f:
        got = f.read()
    left = [f for f in os.listdir(tmp) if f.startswith(".vpmu-exporter.")]
    ok(r.returncode == 0 and got == text and not left,
       "--textfile writes the scrape, no temporary left", r.stderr)
    r = run(["--textfile", os.path.join(tmp, "no", "such", "dir", "x.prom")],
            env)
    ok(r.returncode == 1 and "No such file or directory" in r.stderr and
       "Traceback" not in r.stderr, "--textfile into a missing directory: "
       "a clear error", r.stderr)


def test_listen_errors(env):
    r = run(["--listen", "nonsense"], env)
    ok(r.returncode == 2 and "want HOST:PORT" in r.stderr,
       "--listen without a port: usage error", r.stderr)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run(["--listen", f"127.0.0.1:{port}"], env)
    ok(r.returncode == 1 and "Address already in use" in r.stderr and
       "Traceback" not in r.stderr, "--listen on a port in use: a clear error",
       r.stderr)


def test_http(env, text):
    port = free_port()
    p = subprocess.Popen([sys.executable, EXPORTER, "--listen",
                          f"127.0.0.1:{port}"], env=env,
                         stderr=subprocess.DEVNULL)
    started.append(("exporter", p))
    got = wait_http(f"http://127.0.0.1:{port}/metrics", 20)
    ok(got is not None and got[0] == 200 and "version=0.0.4" in got[1] and
       got[2] == text, "GET /metrics serves the scrape",
       got[2] if got else "no answer")
    got = wait_http(f"http://127.0.0.1:{port}/", 5)
    ok(got is not None and got[0] == 404, "GET / is 404")
    return port, p


def test_prometheus(tmp, exp_port):
    if not shutil.which("prometheus"):
        skip("prometheus scrapes the exporter", "prometheus not installed "
             "(Debian package prometheus)")
        return
    port = free_port()
    log = open(os.path.join(tmp, "prometheus.log"), "w")
    p = subprocess.Popen(prometheus_argv(tmp, port, f"127.0.0.1:{exp_port}"),
                         stdout=log, stderr=log)
    started.append(("prometheus", p))
    want = {f'vpmu_guest_pmis_total{{domain="tcg1",vcpu="0"}}': "7",
            f'vpmu_source_lost_seconds_total{{domain="kvm1"}}': "1.5",
            'vpmu_host_mode{domain="med",mode="mediated"}': "1",
            'vpmu_domain_up{domain="stopped"}': "0",
            'up{job="vpmu"}': "1"}
    got = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and p.poll() is None:
        got = {q: prom_query(port, q) for q in want}
        if got == want:
            break
        time.sleep(1)
    ok(got == want, "prometheus scraped the exporter: its query API "
       "returns the replies' values", json.dumps(got))
    stop("prometheus", p)
    log.close()


def main():
    global T
    T = Tap()
    tmp = tempfile.mkdtemp(prefix="vpmu-exporter-test.")
    d = os.path.join(tmp, "virsh")
    os.mkdir(d)
    bindir = os.path.join(tmp, "bin")
    os.mkdir(bindir)
    os.symlink(os.path.abspath(FAKE_VIRSH), os.path.join(bindir, "virsh"))
    env = dict(os.environ, FAKE_VIRSH_DIR=d,
               PATH=bindir + os.pathsep + os.environ["PATH"])
    env.pop("LIBVIRT_DEFAULT_URI", None)
    try:
        fixture(d)
        text = test_once(env)
        test_promtool(text)
        test_rules()
        test_libvirt_down(d, env)
        test_textfile(tmp, env, text)
        test_listen_errors(env)
        port, exp = test_http(env, text)
        test_prometheus(tmp, port)
        stop("exporter", exp)
        test_operator(d, env)
        op = run(["--once"], env)
        test_promtool(op.stdout)
        ok(not started, "everything started is stopped")
    finally:
        for name, p in list(started):
            stop(name, p)
        shutil.rmtree(tmp, ignore_errors=True)
    return T.end()


if __name__ == "__main__":
    sys.exit(main())
