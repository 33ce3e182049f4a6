"""TAP and the small helpers the host-side Python tests share (the
Python counterpart of tap.sh): results, skips, a guest's TAP copied in,
the plan, a free port, and Prometheus started and queried the same way
everywhere.

    from pytap import Tap, free_port, prometheus_argv, prom_query
    t = Tap()
    t.ok(cond, "what holds", diag)
    sys.exit(t.end())
"""
import json
import os
import re
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

    _CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
    _RESULT = re.compile(r"(not ok|ok)(\s+[0-9]+)?(\s+-)?\s*(.*)")

    def copy(self, prefix, text):
        """The result lines of another TAP stream @text (a guest's),
        renumbered into this one, @prefix before each description; "#"
        lines pass through (tap.sh's tap_copy).  A directive stays on its
        line; "not ok" without # TODO is a failure.  Control characters
        (a console's escapes) are dropped: meson's JUnit XML refuses
        them."""
        for line in self._CONTROL.sub("", text).split("\n"):
            line = line.removesuffix("\r")
            m = self._RESULT.fullmatch(line)
            if m:
                self.n += 1
                rest = m.group(4)
                if m.group(1) == "not ok" and not re.search(
                        r"#\s*todo", rest, re.IGNORECASE):
                    self.failed += 1
                print(f"{m.group(1)} {self.n} - {prefix}{rest}", flush=True)
            elif line.startswith("#"):
                print(line, flush=True)

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


class Procs:
    """What a test started, stopped by pid when the test ends, also on
    failure: an exception, sys.exit(), SIGTERM or SIGINT (meson's timeout).

        with Procs() as procs:
            qemu = procs.start(argv, stdout=log)   # subprocess.Popen
            ...
    Processes are stopped in the reverse order of their start, each with
    stop_process() (SIGTERM, SIGKILL after @secs)."""

    def __init__(self, secs=20):
        self.secs = secs
        self.started = []
        self._old = {}

    def start(self, argv, **kw):
        p = subprocess.Popen(argv, **kw)
        self.started.append(p)
        return p

    def adopt(self, p):
        """Stop @p (a Popen started elsewhere) with the others."""
        self.started.append(p)
        return p

    def stop(self, p):
        stop_process(p, self.secs)
        if p in self.started:
            self.started.remove(p)

    def stop_all(self):
        while self.started:
            stop_process(self.started.pop(), self.secs)

    def _on_signal(self, signum, _frame):
        self.stop_all()
        sys.exit(128 + signum)

    def __enter__(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._old[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc):
        self.stop_all()
        for sig, old in self._old.items():
            signal.signal(sig, old)
        return False


def read_text(path):
    """@path's text ("" if it cannot be read: a log not written yet)."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


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
