"""The deb suite's packages installed on this machine, as a user would
(apt install ./*.deb), and the machine put back afterwards.

    with MachineInstall(debs, log) as m:
        rc = m.install()        # apt-get install ./A.deb ./B.deb ...
        ...                     # use what is installed
        rc = m.purge()          # apt-get purge: ours and what apt added

At the end, also after a failure, SIGTERM or SIGINT (meson's timeout):
every package the install added (ours and the dependencies apt chose) is
purged if it is still there, the group kvm is deleted if vpmu-helper's
postinst made it (policy keeps a system group on purge; the machine did
not have it before the test), and the packages installed are the ones
that were before.  apt waits up to 10 minutes for dpkg's lock, which
make check's scripts/install-deps.sh or another test may hold.
"""
import grp
import os
import signal
import subprocess
import sys

APT = ["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=600"]
ENV = dict(os.environ, DEBIAN_FRONTEND="noninteractive", LC_ALL="C.UTF-8")


def installed():
    """{package: version} of every installed package."""
    r = subprocess.run(["dpkg-query", "-W", "-f",
                        "${Package} ${Version} ${db:Status-Abbrev}\n"],
                       capture_output=True, text=True)
    out = {}
    for line in r.stdout.splitlines():
        w = line.split()
        if len(w) >= 3 and w[2].startswith("ii"):
            out[w[0]] = w[1]
    return out


def has_group(name):
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def deb_name(path):
    return os.path.basename(path).split("_")[0]


class MachineInstall:
    def __init__(self, debs, log):
        self.debs = list(debs)
        self.names = [deb_name(d) for d in self.debs]
        self.log = log
        self.before = {}
        self.added = []             # what the install added, ours first
        self.kvm_before = True
        self._old = {}

    def __enter__(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._old[sig] = signal.signal(sig, self._on_signal)
        self.before = installed()
        self.kvm_before = has_group("kvm")
        return self

    @staticmethod
    def _on_signal(signum, _frame):
        sys.exit(128 + signum)      # __exit__ puts the machine back

    def already(self):
        """Our packages that were installed before the test."""
        return [n for n in self.names if n in self.before]

    def _apt(self, *args):
        with open(self.log, "a") as f:
            f.write("$ apt-get " + " ".join(args) + "\n")
            f.flush()
            return subprocess.run(APT + list(args), stdout=f,
                                  stderr=subprocess.STDOUT, env=ENV,
                                  stdin=subprocess.DEVNULL).returncode

    def install(self):
        rc = self._apt("install", *[os.path.abspath(d) for d in self.debs])
        now = installed()
        extra = sorted(p for p in now if p not in self.before
                       and p not in self.names)
        self.added = [n for n in self.names if n in now] + extra
        return rc

    def purge(self, names=None):
        """apt-get purge @names (default: everything the install added
        that is still installed)."""
        now = installed()
        names = [n for n in (names or self.added) if n in now]
        return self._apt("purge", *names) if names else 0

    def restored(self):
        """(True, "") if the installed packages are those of before,
        else (False, what differs)."""
        now = installed()
        extra = sorted(set(now) - set(self.before))
        gone = sorted(set(self.before) - set(now))
        changed = sorted(p for p in set(now) & set(self.before)
                         if now[p] != self.before[p])
        ok = not (extra or gone or changed)
        return ok, f"added {extra}, removed {gone}, changed {changed}"

    def __exit__(self, *exc):
        for sig in self._old:
            signal.signal(sig, signal.SIG_IGN)
        if self.added:
            self.purge()
        if not self.kvm_before and has_group("kvm"):
            subprocess.run(["groupdel", "kvm"], stderr=subprocess.DEVNULL)
        for sig, old in self._old.items():
            signal.signal(sig, old)
        return False
