"""A real libvirtd for the host-side libvirt tests (libvirt/run.py,
operator/operator-libvirt.py): Debian's libvirtd and virtlogd started by
the test on a host without libvirt-daemon-system, and everything the test
changed put back when it ends, also on an exception, sys.exit(), SIGTERM
or SIGINT (meson's timeout).

    with LibvirtHost("vpmu-libvirt-", domains=["dom"]) as host:
        host.users_and_dirs()
        up, pids, diag = host.start_daemons()
        host.set_sysctl(path, "3")      # put back at the end
        helper = host.start("helper", argv)
        virsh("create", xml)

At the end, in this order: the domains are destroyed (libvirtd does not
stop them when it stops), every process started here is stopped by its pid
(SIGTERM, SIGKILL after 20 s; the daemons run in the foreground, children
of the test), the settings and files changed are put back, every path
libvirtd and virtlogd created in their trees is removed, and the users and
groups made here are deleted.
"""
import grp
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from pytap import Procs

VIRSH = ["virsh", "-q", "-c", "qemu:///system"]
# What libvirtd and virtlogd write (configuration, caches, logs, state):
# every path in these trees that was not there before the test is removed
# after it.
TREES = ["/etc/libvirt", "/var/lib/libvirt", "/var/cache/libvirt",
         "/var/log/libvirt", "/run/libvirt"]
QEMU_LOGS = "/var/log/libvirt/qemu"
VIRTLOGD_SOCK = "/run/libvirt/virtlogd-sock"
# Debian's libvirt-daemon-system makes the user libvirt-qemu with this uid,
# in group kvm (its postinst); QEMU runs as that user.
QEMU_USER = "libvirt-qemu"
QEMU_UID = 64055


def virsh(*args, timeout=300):
    """virsh on qemu:///system; a timeout is exit status 124."""
    try:
        return subprocess.run(VIRSH + list(args), capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(VIRSH + list(args), 124, "",
                                           f"timed out after {timeout} s")


def foreign_daemons():
    """True if a libvirtd or virtlogd runs that the test did not start:
    the test must not take over or stop someone else's."""
    return subprocess.run(["pgrep", "-x", "libvirtd|virtlogd"],
                          capture_output=True).returncode == 0


def wait_for(pred, secs, step=0.5):
    """@pred's first true value within @secs seconds, else None."""
    deadline = time.monotonic() + secs
    while True:
        v = pred()
        if v or time.monotonic() >= deadline:
            return v or None
        time.sleep(step)


def _tree_paths(trees):
    out = set()
    for t in trees:
        for base, dirs, files in os.walk(t):
            out.add(base)
            out.update(os.path.join(base, f) for f in dirs + files)
    return out


class LibvirtHost:
    """The host a libvirt test sets up, and its undoing (see the module's
    comment).  .dir is the test's scratch directory, 0755 so that QEMU as
    libvirt-qemu can read what is put there.  @domains are destroyed at
    the end; what is new in @trees is removed."""

    def __init__(self, prefix, domains=(), trees=TREES):
        self.prefix = prefix
        self.domains = list(domains)
        self.trees = list(trees)
        self.procs = Procs()
        self.popens = []            # every process started, for stopped()
        self.users, self.groups = [], []
        self._undo = []             # callables, run last first
        self._old_signals = {}
        self.dir = None
        self.before = set()

    # -- setting up --------------------------------------------------------

    def __enter__(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._old_signals[sig] = signal.signal(sig, self._on_signal)
        self.before = _tree_paths(self.trees)
        self.dir = tempfile.mkdtemp(prefix=self.prefix)
        os.chmod(self.dir, 0o755)
        return self

    @staticmethod
    def _on_signal(signum, _frame):
        sys.exit(128 + signum)      # __exit__ undoes what was done

    def path(self, name):
        return os.path.join(self.dir, name)

    def users_and_dirs(self):
        """What libvirt-daemon-system's postinst makes, where missing: the
        groups kvm and libvirt, the user libvirt-qemu in group kvm; and
        the directories libvirtd's QEMU driver expects."""
        for g in ("kvm", "libvirt"):
            try:
                grp.getgrnam(g)
            except KeyError:
                subprocess.run(["groupadd", "-r", g], check=True)
                self.groups.append(g)
        try:
            pwd.getpwnam(QEMU_USER)
        except KeyError:
            if subprocess.run(["groupadd", "-r", "-g", str(QEMU_UID),
                               QEMU_USER],
                              capture_output=True).returncode != 0:
                subprocess.run(["groupadd", "-r", QEMU_USER], check=True)
            self.groups.append(QEMU_USER)
            subprocess.run(["useradd", "-r", "-u", str(QEMU_UID), "-g",
                            QEMU_USER, "-G", "kvm", "-d", "/var/lib/libvirt",
                            "-s", "/usr/sbin/nologin", QEMU_USER],
                           check=True, capture_output=True)
            self.users.append(QEMU_USER)
        for d in (QEMU_LOGS, "/var/lib/libvirt/qemu",
                  "/var/cache/libvirt/qemu"):
            os.makedirs(d, exist_ok=True)

    def start(self, name, argv, **kw):
        """@argv started, its stdout and stderr in DIR/@name.log unless
        @kw says otherwise; stopped by pid at the end."""
        if "stdout" not in kw or "stderr" not in kw:
            log = open(self.path(name + ".log"), "w")
            kw.setdefault("stdout", log)
            kw.setdefault("stderr", log)
        p = self.procs.start(argv, stdin=subprocess.DEVNULL, **kw)
        self.popens.append(p)
        return p

    def start_daemons(self):
        """virtlogd, then libvirtd, in the foreground (their pids are
        ours to stop); up once virsh answers, within 20 s.  (up, "pids
        A B", libvirtd's stderr)."""
        err = self.path("libvirtd.err")
        logd = self.start("virtlogd", ["virtlogd", "-p",
                                       self.path("virtlogd.pid")])
        wait_for(lambda: os.path.exists(VIRTLOGD_SOCK) or
                 logd.poll() is not None, 20, 0.1)
        lv = self.start("libvirtd", ["libvirtd", "-p",
                                     self.path("libvirtd.pid")],
                        stdout=open(err, "w"), stderr=subprocess.STDOUT)
        wait_for(lambda: lv.poll() is not None or
                 virsh("version").returncode == 0, 20, 0.2)
        up = (logd.poll() is None and lv.poll() is None and
              virsh("version").returncode == 0)
        with open(err, errors="replace") as f:
            return up, f"pids {logd.pid} {lv.pid}", f.read()

    def set_sysctl(self, path, value):
        """Write @value to /proc/sys file @path; the old value at the end."""
        with open(path) as f:
            old = f.read()
        self._undo.append(lambda: _write(path, old))
        _write(path, value + "\n")

    def set_group_mode(self, path, group, mode):
        """chgrp @group and chmod @mode; the old group and mode at the end."""
        st = os.stat(path)
        self._undo.append(lambda: (os.chown(path, -1, st.st_gid),
                                   os.chmod(path, st.st_mode & 0o7777)))
        os.chown(path, -1, grp.getgrnam(group).gr_gid)
        os.chmod(path, mode)

    def write_file(self, path, text):
        """Write @path, making its missing directories; at the end the old
        file is back (contents, mode, owner, times), or the file and the
        directories made for it are gone."""
        made, d = [], os.path.dirname(path)
        while not os.path.isdir(d):
            made.append(d)
            d = os.path.dirname(d)
        saved = self.path(os.path.basename(path) + ".saved")
        if os.path.lexists(path):
            shutil.copy2(path, saved)
            st = os.stat(path)
            self._undo.append(lambda: (shutil.copy2(saved, path),
                                       os.chown(path, st.st_uid, st.st_gid)))
        else:
            self._undo.append(lambda: _remove(path, made))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _write(path, text)

    # -- undoing -----------------------------------------------------------

    def stopped(self):
        """Every process started here has ended."""
        return all(p.poll() is not None for p in self.popens)

    def __exit__(self, *exc):
        # A second SIGTERM must not cut the undoing short.
        for sig in self._old_signals:
            signal.signal(sig, signal.SIG_IGN)
        for d in self.domains:
            virsh("destroy", d, timeout=60)
        self.procs.stop_all()
        for undo in reversed(self._undo):
            _try(undo)
        for path in sorted(_tree_paths(self.trees) - self.before,
                           reverse=True):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            elif os.path.lexists(path):
                _try(lambda p=path: os.unlink(p))
        for u in self.users:
            subprocess.run(["userdel", u])
        for g in self.groups:
            subprocess.run(["groupdel", g], stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)
        for sig, old in self._old_signals.items():
            signal.signal(sig, old)
        return False


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _remove(path, made_dirs):
    if os.path.lexists(path):
        os.unlink(path)
    for d in made_dirs:             # deepest first
        try:
            os.rmdir(d)
        except OSError:
            pass                    # something else was put there


def _try(undo):
    """One undo step; a failure is reported and the next step still runs."""
    try:
        undo()
    except OSError as e:
        print(f"# undo: {e}", file=sys.stderr)
