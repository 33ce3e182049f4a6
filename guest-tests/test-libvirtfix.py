#!/usr/bin/env python3
"""TAP checks of what the libvirt tests rely on, without libvirt:
pytap's Tap.copy (a guest's TAP renumbered into the host's) and
libvirtfix.LibvirtHost putting the host back, after an exception and
after SIGTERM, on files in a scratch directory (its trees too: the real
/var/lib/libvirt and friends are never touched here).

Usage: test-libvirtfix.py
"""
import contextlib
import grp
import io
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from libvirtfix import LibvirtHost  # noqa: E402
from pytap import Tap  # noqa: E402

T = None            # the Tap, made by main() (not in --child)


def check_copy():
    """Each result line renumbered after the host's own, the prefix
    before its description, directives kept; "#" lines pass, other lines
    and control characters are dropped; one failure: "not ok" without
    # TODO."""
    inner_out = io.StringIO()
    with contextlib.redirect_stdout(inner_out):
        inner = Tap()
        inner.ok(True, "own")
        inner.copy("g: ", "junk\r\nok 1 - a\r\nnot ok 2 - b # TODO later\n"
                   "not ok 3 c\n# hi\x1b[0m\nok 9 - d # SKIP why\nok")
    want = ["TAP version 13", "ok 1 - own", "ok 2 - g: a",
            "not ok 3 - g: b # TODO later", "not ok 4 - g: c", "# hi[0m",
            "ok 5 - g: d # SKIP why", "ok 6 - g: "]
    got = inner_out.getvalue().splitlines()
    T.ok(got == want, "Tap.copy: renumbered, prefixed, directives kept, "
         "'#' lines passed, the rest dropped", "\n".join(got))
    T.ok((inner.n, inner.failed) == (6, 1),
         "Tap.copy: 6 results, 1 failure (the TODO is none)",
         f"n {inner.n} failed {inner.failed}")


def other_group(gid):
    return next((g for g in grp.getgrall() if g.gr_gid != gid), None)


def scene(d):
    """Files as a host has them before a test: a config, a sysctl-like
    file, a device-like file, and a tree with one old entry."""
    os.makedirs(os.path.join(d, "tree", "old"))
    for name, text, mode in (("conf", "old conf\n", 0o640),
                             ("sysctl", "2\n", 0o644),
                             ("dev", "", 0o600)):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        os.utime(path, (1000, 1000))


def state(d):
    """What the checks compare: contents, modes, groups, times, and the
    paths under @d."""
    out = {}
    for base, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(base, n)
            st = os.lstat(p)
            text = ""
            if os.path.isfile(p):
                with open(p) as f:
                    text = f.read()
            # Times only of the file put back by copy (a sysctl is
            # written back, a directory is listed into).
            out[os.path.relpath(p, d)] = (text, st.st_mode, st.st_gid,
                                          st.st_mtime if n == "conf" else 0)
    return out


def change(host, d):
    """What run.py changes, on the scene: returns the process started."""
    host.write_file(os.path.join(d, "conf"), "new conf\n")
    host.write_file(os.path.join(d, "made", "deeper", "vpmu.conf"), "x\n")
    host.set_sysctl(os.path.join(d, "sysctl"), "3")
    if os.getuid() == 0:
        g = other_group(os.stat(os.path.join(d, "dev")).st_gid)
        host.set_group_mode(os.path.join(d, "dev"), g.gr_name, 0o660)
    os.makedirs(os.path.join(d, "tree", "new", "sub"))
    with open(os.path.join(d, "tree", "new", "sub", "log"), "w") as f:
        f.write("daemon's\n")
    return host.start("sleep", ["sleep", "1000"])


def check_exception(d):
    scene(d)
    before = state(d)
    host = LibvirtHost(os.path.join(d, "scratch-"), trees=[d + "/tree"])
    changed = None
    try:
        with host:
            p = change(host, d)
            changed = state(d) != before and p.poll() is None
            raise RuntimeError("a check blew up")
    except RuntimeError:
        pass
    T.ok(changed, "the fixture changed the files and started a process")
    after = state(d)
    T.ok(after == before, "after an exception: files, modes, groups, "
         "times and tree as before; the scratch directory gone",
         f"before {before}\nafter  {after}")
    T.ok(p.poll() is not None and host.stopped(),
         f"after an exception: the process it started (pid {p.pid}) is "
         "stopped")


def child(d):
    """The SIGTERM case's child: change the scene, report, wait."""
    with LibvirtHost(os.path.join(d, "scratch-"),
                     trees=[d + "/tree"]) as host:
        p = change(host, d)
        print(p.pid, flush=True)
        time.sleep(120)
    return 0


def check_sigterm(d):
    scene(d)
    before = state(d)
    c = subprocess.Popen([sys.executable, __file__, "--child", d],
                         stdout=subprocess.PIPE, text=True)
    pid = int(c.stdout.readline() or 0)
    changed = state(d) != before
    c.send_signal(signal.SIGTERM)
    try:
        rc = c.wait(60)
    except subprocess.TimeoutExpired:
        c.kill()
        rc = c.wait()
    T.ok(changed and rc == 128 + signal.SIGTERM,
         f"SIGTERM mid-test: exit status 143 ({rc})")
    after = state(d)
    T.ok(after == before, "after SIGTERM: files, modes, groups, times and "
         "tree as before", f"before {before}\nafter  {after}")
    T.ok(pid > 0 and not os.path.exists(f"/proc/{pid}"),
         f"after SIGTERM: the process it started (pid {pid}) is stopped")


def check_usage():
    r = subprocess.run([sys.executable, os.path.join(HERE, "libvirt",
                                                     "run.py"), "x"],
                       capture_output=True, text=True)
    T.ok(r.returncode == 2 and r.stdout == "" and
         r.stderr.startswith("usage: run.py [--packages] BUILD IMAGE"),
         "libvirt/run.py with one argument: usage on stderr, exit 2",
         r.stdout + r.stderr)


def main():
    global T
    if sys.argv[1:2] == ["--child"]:
        return child(sys.argv[2])
    T = Tap()
    check_copy()
    with tempfile.TemporaryDirectory() as d:
        check_exception(os.path.join(d, "a"))
        check_sigterm(os.path.join(d, "b"))
    check_usage()
    return T.end()


if __name__ == "__main__":
    sys.exit(main())
