"""A clean Debian bookworm root, for make deb's QEMU package build
(scripts/make-deb-qemu.py) and the deb suite (tests/deb), and what
changed in it.

    base = DebRoot.base(log)       # debootstrap --variant=minbase, cached
    with DebRoot(base, workdir) as root:
        root.apt("install", "/tmp/debs/x.deb")
        before = root.snapshot()
        ...
        changed = diff(before, root.snapshot())

The base root is made once by debootstrap into the cache (VPMU_CACHE,
default ~/.cache/vpmu, under deb/) as a tar file with its apt lists, and
made again when it is older than 30 days; each DebRoot is a new copy of it,
removed at the end.  Packages apt downloads are kept in the cache
(deb/archives) and put back into each new root, so a second run downloads
only what changed.  Nothing is mounted: dpkg and apt run in the root with
chroot(8), no service starts (no init runs there, and policy-rc.d says
no), and the root's /etc/resolv.conf is the host's, for apt.
"""
import fcntl
import glob
import hashlib
import os
import shutil
import stat
import subprocess
import time

CACHE = os.path.join(os.environ.get("VPMU_CACHE") or
                     os.path.expanduser("~/.cache/vpmu"), "deb")
SUITE = "bookworm"
MAX_AGE = 30 * 86400
APT_ENV = {"DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C.UTF-8",
           "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
# apt's and dpkg's own bookkeeping, logs and caches, and the pseudo file
# systems: not compared by snapshot().
UNCOMPARED = ("proc", "sys", "dev", "run", "tmp", "var/lib/dpkg",
              "var/lib/apt", "var/cache", "var/log")


class Unavailable(Exception):
    """The root cannot be made here (the reason is the message)."""


def mirror():
    """The Debian mirror this host's apt uses (deb.debian.org if none)."""
    for path in glob.glob("/etc/apt/sources.list.d/*.sources"):
        with open(path) as f:
            for line in f:
                if line.startswith("URIs:"):
                    for uri in line.split()[1:]:
                        if uri.rstrip("/").endswith("/debian"):
                            return uri
    try:
        with open("/etc/apt/sources.list") as f:
            for line in f:
                w = line.split()
                if len(w) >= 3 and w[0] == "deb" and w[1].endswith("/debian"):
                    return w[1]
    except OSError:
        pass
    return "http://deb.debian.org/debian"


def _run(argv, log, **kw):
    """Run @argv, its output appended to @log; the CompletedProcess."""
    with open(log, "a") as f:
        f.write("$ " + " ".join(argv) + "\n")
        f.flush()
        return subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, **kw)


class DebRoot:
    def __init__(self, base, workdir, name="root"):
        self.base = base
        self.dir = os.path.join(workdir, name)
        self.log = os.path.join(workdir, name + ".log")

    # -- the cached base --------------------------------------------------

    @staticmethod
    def base(log):
        """The cached base root's tar file, made (or made again) here;
        Unavailable if debootstrap or the mirror is missing."""
        os.makedirs(CACHE, exist_ok=True)
        tar = os.path.join(CACHE, f"{SUITE}-minbase.tar")
        with open(os.path.join(CACHE, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if os.path.exists(tar) and \
                    time.time() - os.path.getmtime(tar) < MAX_AGE:
                return tar
            if not shutil.which("debootstrap"):
                _run(["apt-get", "install", "-y", "-q",
                      "-o", "DPkg::Lock::Timeout=600", "debootstrap"], log,
                     env=dict(os.environ, **APT_ENV))
            if not shutil.which("debootstrap"):
                raise Unavailable("debootstrap not found, and apt-get could "
                                  f"not install it (log: {log})")
            tmp = os.path.join(CACHE, "bootstrap.tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            r = _run(["nice", "-n", "19", "debootstrap", "--variant=minbase",
                      SUITE, tmp, mirror()], log)
            if r.returncode != 0:
                shutil.rmtree(tmp, ignore_errors=True)
                raise Unavailable(f"debootstrap {SUITE} failed (no network "
                                  f"or mirror? log: {log})")
            _setup_root(tmp, log)
            r = _run(["tar", "-C", tmp, "-cf", tar + ".tmp", "."], log)
            shutil.rmtree(tmp, ignore_errors=True)
            if r.returncode != 0:
                raise Unavailable(f"tar of the base root failed (log: {log})")
            os.replace(tar + ".tmp", tar)
            return tar

    # -- one root ---------------------------------------------------------

    def __enter__(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        subprocess.run(["tar", "-C", self.dir, "-xf", self.base], check=True)
        shutil.copy("/etc/resolv.conf", os.path.join(self.dir, "etc"))
        archives = os.path.join(CACHE, "archives")
        os.makedirs(archives, exist_ok=True)
        for deb in glob.glob(os.path.join(archives, "*.deb")):
            _link(deb, self.path("var/cache/apt/archives"))
        return self

    def __exit__(self, *exc):
        self.keep_downloads()
        shutil.rmtree(self.dir, ignore_errors=True)
        return False

    def path(self, rel):
        return os.path.join(self.dir, rel.lstrip("/"))

    def run(self, *argv, env=None):
        """@argv in the root (chroot), output into the log."""
        e = dict(APT_ENV)
        e.update(env or {})
        return _run(["chroot", self.dir] + list(argv), self.log, env=e)

    def apt(self, *args):
        """apt-get -y ARGS in the root; conffiles: dpkg's defaults, else
        the installed (edited) one, as unattended upgrades do."""
        return self.run("apt-get", "-y", "-q",
                        "-o", "Dpkg::Options::=--force-confdef",
                        "-o", "Dpkg::Options::=--force-confold", *args)

    def out(self, *argv):
        """@argv's standard output in the root ("" if it failed)."""
        r = subprocess.run(["chroot", self.dir] + list(argv),
                           capture_output=True, text=True, env=APT_ENV)
        return r.stdout if r.returncode == 0 else ""

    def keep_downloads(self):
        """The packages apt downloaded here, into the cache."""
        archives = os.path.join(CACHE, "archives")
        for deb in glob.glob(self.path("var/cache/apt/archives/*.deb")):
            if not os.path.exists(os.path.join(archives,
                                               os.path.basename(deb))):
                _link(deb, archives)

    def snapshot(self):
        """Every path of the root but UNCOMPARED: type, mode, owner and
        content (a file's sha256, a link's target), not times."""
        snap = {}
        skip = {os.path.join(self.dir, d) for d in UNCOMPARED}
        for base, dirs, files in os.walk(self.dir):
            dirs[:] = [d for d in dirs
                       if os.path.join(base, d) not in skip]
            for name in dirs + files:
                p = os.path.join(base, name)
                snap["/" + os.path.relpath(p, self.dir)] = _describe(p)
        return snap


def diff(before, after):
    """{path: (before, after)} for every path added, removed or changed
    (None where absent)."""
    return {p: (before.get(p), after.get(p))
            for p in sorted(set(before) | set(after))
            if before.get(p) != after.get(p)}


def _describe(p):
    st = os.lstat(p)
    kind = stat.S_IFMT(st.st_mode)
    what = f"{stat.filemode(st.st_mode)} {st.st_uid}:{st.st_gid}"
    if kind == stat.S_IFLNK:
        return f"{what} -> {os.readlink(p)}"
    if kind == stat.S_IFREG:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return f"{what} {h.hexdigest()[:16]}"
    return what


def _link(src, dstdir):
    dst = os.path.join(dstdir, os.path.basename(src))
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _setup_root(root, log):
    """What every root gets: no services start (policy-rc.d), apt keeps
    what it downloads, the apt lists are fresh."""
    rc = os.path.join(root, "usr/sbin/policy-rc.d")
    with open(rc, "w") as f:
        f.write("#!/bin/sh\n# the vpmu deb suite's root: no service "
                "starts\nexit 101\n")
    os.chmod(rc, 0o755)
    with open(os.path.join(root, "etc/apt/apt.conf.d/90vpmu-keep"),
              "w") as f:
        f.write('Binary::apt::APT::Keep-Downloaded-Packages "true";\n'
                'APT::Keep-Downloaded-Packages "true";\n')
    shutil.copy("/etc/resolv.conf", os.path.join(root, "etc"))
    if _run(["chroot", root, "apt-get", "update", "-q"], log,
            env=APT_ENV).returncode != 0:
        raise Unavailable(f"apt-get update in the new root failed "
                          f"(log: {log})")
