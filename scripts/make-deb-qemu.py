#!/usr/bin/env python3
"""make deb's QEMU package: the source package qemu-vpmu, assembled from
Debian's qemu source (make qemu fetched it into the cache) and this
repository's packaging (packaging/qemu-vpmu/debian, as in the work tree)
and series (HEAD's qemu-patches/), built in a clean bookworm chroot.

    scripts/make-deb-qemu.py --out DIR --vpmu-debs DIR [--no-ccache]

QEMU 10.2 needs meson >= 1.5, which bookworm has in bookworm-backports
only: the chroot (scripts/debroot.py's root) gets it from there, as a
backport's build would, and libvpmu0 and libvpmu-dev from --vpmu-debs;
then apt-get build-dep and dpkg-buildpackage, as root in the chroot, from
the .dsc made here.  Nothing is downloaded by the build itself.

The chroot's compiler goes through ccache, with a copy (hard links) of
the cache make qemu fills (VPMU_CACHE/ccache): debian/vpmu-configure is
make qemu's configuration too, so the compilations are the same commands
and only what make qemu did not compile is compiled; what is new goes
back into the cache.  --no-ccache compiles everything.

Writes DIR/qemu/: the source package (.dsc, orig, .debian.tar.xz), the
.deb files, .buildinfo and .changes, and build.log.  Prints one line per
step; exit status 1, with the log's end, if a step fails.
"""
import argparse
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from debroot import (CACHE as DEB_CACHE, DebRoot, Unavailable,  # noqa: E402
                     mirror)

PACKAGING = os.path.join(ROOT, "packaging/qemu-vpmu/debian")
CACHE = os.path.dirname(DEB_CACHE)
BACKPORTS = "bookworm-backports"
NOT_SHIPPED = {"copyright.vpmu"}        # assembled into debian/copyright


class Failed(Exception):
    pass


def say(msg):
    print(f"deb: {msg}", flush=True)


def run(argv, log, **kw):
    with open(log, "a") as f:
        f.write("$ " + " ".join(argv) + "\n")
        f.flush()
        r = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, **kw)
    if r.returncode != 0:
        raise Failed(f"{' '.join(argv[:3])} ... failed (exit "
                     f"{r.returncode})")


def versions():
    """(package version, upstream, Debian's qemu version it is made of,
    vpmu version), from the packaging's changelog."""
    v = subprocess.run(["dpkg-parsechangelog", "-l",
                        os.path.join(PACKAGING, "changelog"), "-S",
                        "Version"], capture_output=True, text=True,
                       check=True).stdout.strip()
    m = re.fullmatch(r"(([^:-]+)-([^-+]+)\+vpmu([0-9.]+))-[0-9]+", v)
    if not m:
        raise Failed(f"packaging/qemu-vpmu's version {v} is not "
                     "QEMU-REVISION+vpmuVERSION-N")
    return v, m.group(1), f"1:{m.group(2)}-{m.group(3)}", m.group(4)


def series_of_head():
    """[(name, bytes)] of HEAD's qemu-patches/*.patch, in name order: the
    commit's series, like the vpmu package's orig tarball (uncommitted
    patches are make qemu's to try, and said here)."""
    names = subprocess.run(["git", "-C", ROOT, "ls-tree", "--name-only",
                            "HEAD", "qemu-patches/"], capture_output=True,
                           text=True, check=True).stdout.split()
    names = sorted(n for n in names if n.endswith(".patch"))
    if subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--",
                       "qemu-patches"], capture_output=True,
                      text=True).stdout.strip():
        say("note: qemu-patches/ has uncommitted changes: HEAD's series "
            "is packaged")
    return [(os.path.basename(n),
             subprocess.run(["git", "-C", ROOT, "show", f"HEAD:{n}"],
                            capture_output=True, check=True).stdout)
            for n in names]


def assemble(out, log, up, qemu_version):
    """The source tree qemu-vpmu-UP in @out, from Debian's source in the
    cache and this repository; the .dsc built from it.  Its orig tarball
    is Debian's, the same bytes under qemu-vpmu's name."""
    key = qemu_version.split(":", 1)[1]
    dl = os.path.join(CACHE, "qemu", key, "dl")
    orig = os.path.join(dl, f"qemu_{key.rsplit('-', 1)[0]}.orig.tar.xz")
    debtar = os.path.join(dl, f"qemu_{key}.debian.tar.xz")
    if not (os.path.exists(orig) and os.path.exists(debtar)):
        raise Failed(f"no Debian qemu {qemu_version} source in {dl}: run "
                     f"VPMU_QEMU_VERSION={qemu_version} make qemu first")
    tree = os.path.join(out, f"qemu-vpmu-{up}")
    mine = os.path.join(out, f"qemu-vpmu_{up}.orig.tar.xz")
    if os.stat(orig).st_dev == os.stat(out).st_dev:
        os.link(orig, mine)
    else:
        shutil.copy(orig, mine)
    os.makedirs(tree)
    run(["tar", "-xf", mine, "-C", tree, "--strip-components=1"], log)
    deb = os.path.join(out, "debian-of-qemu")
    os.makedirs(deb)
    run(["tar", "-xf", debtar, "-C", deb], log)
    shutil.copytree(PACKAGING, os.path.join(tree, "debian"),
                    ignore=lambda d, names: [n for n in names
                                             if n in NOT_SHIPPED])
    patches = os.path.join(tree, "debian/patches")
    shutil.copytree(os.path.join(deb, "debian/patches"), patches)
    os.makedirs(os.path.join(patches, "vpmu"))
    ours = series_of_head()
    with open(os.path.join(patches, "series"), "a") as series:
        for name, text in ours:
            with open(os.path.join(patches, "vpmu", name), "wb") as f:
                f.write(text)
            series.write(f"vpmu/{name}\n")
    with open(os.path.join(tree, "debian/copyright"), "w") as f:
        f.write(open(os.path.join(deb, "debian/copyright")).read())
        f.write(open(os.path.join(PACKAGING, "copyright.vpmu")).read())
    shutil.rmtree(deb)
    run(["dpkg-source", "-b", os.path.basename(tree)], log, cwd=out)
    return tree, len(ours)


def prepare_root(root, vpmu_debs, tree, dsc):
    """bookworm-backports' meson, our libvpmu0 and libvpmu-dev, dpkg-dev
    and ccache, the source unpacked in /build and its build
    dependencies."""
    with open(root.path("etc/apt/sources.list.d/backports.list"), "w") as f:
        f.write(f"deb {mirror()} {BACKPORTS} main\n")
    debs = [p for p in glob.glob(os.path.join(vpmu_debs, "*.deb"))
            if os.path.basename(p).split("_")[0] in ("libvpmu0",
                                                     "libvpmu-dev")]
    if len(debs) != 2:
        raise Failed(f"no libvpmu0 and libvpmu-dev .deb in {vpmu_debs}")
    os.makedirs(root.path("tmp/debs"))
    for p in debs:
        shutil.copy(p, root.path("tmp/debs"))
    steps = [["apt-get", "update", "-q"],
             ["apt-get", "install", "-y", "-q", "--no-install-recommends",
              "-t", BACKPORTS, "meson"],
             ["apt-get", "install", "-y", "-q", "--no-install-recommends",
              "dpkg-dev", "ccache"] +
             [f"/tmp/debs/{os.path.basename(p)}" for p in debs]]
    for argv in steps:
        if root.run(*argv).returncode != 0:
            raise Failed(f"chroot: {' '.join(argv[:3])} failed "
                         f"(log: {root.log})")
    os.makedirs(root.path("build"))
    for f in glob.glob(dsc[:-4] + "*") + glob.glob(
            os.path.join(os.path.dirname(dsc), "*.orig.tar.xz")):
        shutil.copy(f, root.path("build"))
    src = f"/build/{os.path.basename(tree)}"
    for argv in (["dpkg-source", "-x", f"/build/{os.path.basename(dsc)}",
                  src],
                 ["apt-get", "build-dep", "-y", "-q",
                  "--no-install-recommends", src]):
        if root.run(*argv).returncode != 0:
            raise Failed(f"chroot: {' '.join(argv[:2])} failed "
                         f"(log: {root.log})")
    return src


def link_tree(src, dst):
    """Hard links in @dst of every file of @src that @dst lacks."""
    n = 0
    for base, _dirs, files in os.walk(src):
        rel = os.path.relpath(base, src)
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for name in files:
            target = os.path.join(dst, rel, name)
            if not os.path.exists(target):
                os.link(os.path.join(base, name), target)
                n += 1
    return n


def ccache_namespace():
    """make qemu's: vpmu- and the configuration's sha256, 16 digits (ccache
    does not hash -ffile-prefix-map values; a changed configuration must
    not be served objects of the old one)."""
    with open(os.path.join(PACKAGING, "vpmu-configure"), "rb") as f:
        return "vpmu-" + hashlib.sha256(f.read()).hexdigest()[:16]


def ccache_stats(root):
    """(hits, misses) of the chroot's ccache since it was zeroed."""
    out = root.out("env", "CCACHE_DIR=/ccache", "ccache", "--print-stats")
    s = dict(line.split("\t", 1) for line in out.splitlines()
             if "\t" in line)
    hits = int(s.get("direct_cache_hit", 0)) + \
        int(s.get("preprocessed_cache_hit", 0))
    return hits, int(s.get("cache_miss", 0))


def build(root, src, use_ccache, log):
    """dpkg-buildpackage -b in the chroot, through ccache if asked."""
    env = {"DEB_BUILD_OPTIONS": os.environ.get("DEB_BUILD_OPTIONS",
                                               "parallel=2"),
           "HOME": "/root"}
    host_ccache = os.path.join(CACHE, "ccache")
    if use_ccache:
        os.makedirs(root.path("ccache"))
        if os.path.isdir(host_ccache):
            link_tree(host_ccache, root.path("ccache"))
        root.run("env", "CCACHE_DIR=/ccache", "ccache", "--zero-stats")
        env.update(CCACHE_DIR="/ccache", CCACHE_BASEDIR=src,
                   CCACHE_NAMESPACE=ccache_namespace(),
                   PATH="/usr/lib/ccache:/usr/sbin:/usr/bin:/sbin:/bin")
    else:
        env["CCACHE_DISABLE"] = "1"
    t = time.monotonic()
    r = root.run("sh", "-c", f"cd {src} && nice -n 10 dpkg-buildpackage -b "
                 "-us -uc", env=env)
    secs = time.monotonic() - t
    with open(log, "a") as f:
        f.write(open(root.log).read())
    if r.returncode != 0:
        raise Failed(f"dpkg-buildpackage in the chroot failed (log: {log})")
    stats = ""
    if use_ccache:
        hits, misses = ccache_stats(root)
        new = link_tree(root.path("ccache"), host_ccache)
        stats = (f", ccache {hits} hits, {misses} compiled "
                 f"({new} files kept)")
    return secs, stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--vpmu-debs", required=True)
    ap.add_argument("--no-ccache", action="store_true")
    a = ap.parse_args()
    if os.getuid() != 0:
        print("deb: error: the QEMU package is built in a bookworm chroot: "
              "run make deb as root (sudo make deb)", file=sys.stderr)
        return 1
    out = os.path.join(os.path.abspath(a.out), "qemu")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    log = os.path.join(out, "build.log")
    try:
        version, up, qemu_version, vpmu = versions()
        say(f"qemu-vpmu {version}: Debian's qemu {qemu_version} and vpmu "
            f"{vpmu}'s series")
        tree, n = assemble(out, log, up, qemu_version)
        dsc = os.path.join(out, f"qemu-vpmu_{version}.dsc")
        say(f"source package: {os.path.basename(dsc)} ({n} vpmu patches "
            "after Debian's)")
        base = DebRoot.base(os.path.join(out, "root.log"))
        with DebRoot(base, out, "chroot") as root:
            t = time.monotonic()
            src = prepare_root(root, os.path.abspath(a.vpmu_debs), tree,
                               dsc)
            say(f"chroot: bookworm, {BACKPORTS}' meson, libvpmu-dev, build "
                f"dependencies, {time.monotonic() - t:.0f}s")
            secs, stats = build(root, src, not a.no_ccache, log)
            for f in glob.glob(root.path("build/*.*deb")) + glob.glob(
                    root.path("build/*.buildinfo")) + glob.glob(
                    root.path("build/*.changes")):
                shutil.copy(f, out)
        say(f"qemu-vpmu {version} built in the chroot, {secs:.0f}s{stats}: "
            + " ".join(sorted(os.path.basename(p) for p in
                              glob.glob(os.path.join(out, "*.deb")))))
    except (Failed, Unavailable, OSError, subprocess.CalledProcessError) as e:
        if os.path.exists(log):
            sys.stderr.write("".join(open(log).readlines()[-40:]))
        print(f"deb: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
