"""TAP and the small helpers the host-side Python tests share (the
Python counterpart of tap.sh): results, skips, the plan, a free port,
and Prometheus started and queried the same way everywhere.

    from pytap import Tap, free_port, prometheus_argv, prom_query
    t = Tap()
    t.ok(cond, "what holds", diag)
    sys.exit(t.end())
"""
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.parse
import urllib.request


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0
        print("TAP version 13", flush=True)

    def ok(self, cond, desc, diag=""):
        """One result; on failure the last 20 lines of @diag before it."""
        self.n += 1
        if not cond:
            self.failed += 1
            for line in str(diag).splitlines()[-20:]:
                print(f"# {line}")
        print(f"{'ok' if cond else 'not ok'} {self.n} - {desc}", flush=True)

    def skip(self, desc, why):
        self.n += 1
        print(f"ok {self.n} - {desc} # SKIP {why}", flush=True)

    @staticmethod
    def skip_all(why):
        print(f"1..0 # SKIP {why}", flush=True)
        sys.exit(0)

    def end(self):
        """The plan; the exit status (1 if a result failed)."""
        print(f"1..{self.n}", flush=True)
        return 1 if self.failed else 0


def stop_process(p, secs=20):
    """Stop child @p by its pid: SIGTERM, SIGKILL after @secs."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(secs)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prometheus_argv(d, port, target):
    """Debian's prometheus scraping @target every second, its
    configuration and database in @d, its API on 127.0.0.1:@port."""
    cfg = os.path.join(d, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "scrape_configs:\n  - job_name: vpmu\n    static_configs:\n"
                f"      - targets: ['{target}']\n")
    return ["prometheus", f"--config.file={cfg}",
            f"--storage.tsdb.path={os.path.join(d, 'tsdb')}",
            f"--web.listen-address=127.0.0.1:{port}"]


def prom_query(port, q):
    """The value of instant query @q if it has exactly one result."""
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode(
        {"query": q})
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            res = json.load(r)["data"]["result"]
    except (OSError, ValueError, KeyError):
        return None
    return res[0]["value"][1] if len(res) == 1 else None
