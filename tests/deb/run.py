#!/usr/bin/env python3
"""The deb suite: vpmu's Debian packages built by `make deb`, checked, and
installed as a user would.

  - scripts/make-deb.sh builds the source packages vpmu (on this host) and
    qemu-vpmu (in a clean bookworm chroot, through make qemu's ccache;
    tests/deb/qemuchecks.py); lintian leaves no error or warning; every
    package ships exactly what tests/deb/contents lists; libvpmu0's
    symbols file lists exactly what libvpmu.so.0 exports; the conffiles
    are the policy, vpmu.conf and the AppArmor rules; the QEMU package's
    version carries Debian's qemu version and it depends on Debian's
    firmware packages;
  - a second build of vpmu from the same commit, in another directory,
    gives the same packages, byte for byte (else the files that differ);
  - in a clean bookworm root made by debootstrap (scripts/debroot.py):
    `apt install ./*.deb`, vpmu-helper's group and socket, the QEMU
    starting a pc machine with only the firmware it depends on; `apt
    purge` leaves exactly what policy keeps (the group, the operator's
    own policy file); an upgrade to a rebuilt 0.1.0-2 whose default.conf
    changed keeps the operator's edited default.conf;
  - on this machine (tests/deb/machine.py): `apt install ./*.deb` beside
    Debian's qemu-system-x86 (dpkg --verify: untouched), `systemd-analyze
    verify` of the units, the installed vpmu-helper serving with the
    installed default.conf, examples/demo.c built with the installed
    libvpmu-dev and run on the installed libvpmu0, the libvirt suite on
    the installed QEMU, vpmu.conf and helper (guest-tests/libvirt/run.py
    --packages); then `apt purge` and the machine as it was.

Usage: run.py BUILD IMAGE (the meson build directory, for helper-open;
the guest image, for the libvirt suite).  TAP on stdout; 1..0 # SKIP
without root or dpkg; the root's checks are SKIP lines without
debootstrap or a mirror.
"""
import filecmp
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "guest-tests"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from pytap import Tap, read_text as read  # noqa: E402
from debroot import DebRoot, Unavailable  # noqa: E402
from machine import MachineInstall  # noqa: E402
import debchecks  # noqa: E402
from debchecks import make_deb, tail  # noqa: E402
import qemuchecks  # noqa: E402
import rootchecks  # noqa: E402

T = None            # the Tap, made by main()
VPMU = ["libvpmu0", "libvpmu-dev", "vpmu-helper", "vpmu-tools", "vpmu-doc"]


def debs_of(d, names):
    """{package: path} of the non-debug .deb files in @d named @names."""
    out = {}
    for path in glob.glob(os.path.join(d, "*.deb")):
        name = os.path.basename(path).split("_")[0]
        if name in names:
            out[name] = path
    return out


def build_vpmu(work):
    """make deb (vpmu): the packages, or None."""
    out = os.path.join(work, "a")
    log = os.path.join(work, "make-deb-a.log")
    rc = make_deb(out, log, "vpmu")
    T.ok(rc == 0, "make deb: the source package vpmu builds "
         "(dpkg-buildpackage, its unit and example suites)", tail(read(log)))
    lint = read(os.path.join(out, "vpmu", "lintian.log"))
    bad = [ln for ln in lint.splitlines() if re.match(r"[EW]: ", ln)]
    infos = len([ln for ln in lint.splitlines() if ln.startswith("I: ")])
    T.ok(rc == 0 and not bad and "lintian" in read(log),
         "lintian: no error and no warning left (each one overridden "
         f"with its reason; {infos} info tags)", lint or read(log))
    debs = debs_of(os.path.join(out, "vpmu"), VPMU)
    if rc != 0 or sorted(debs) != sorted(VPMU):
        T.ok(False, f"the packages {', '.join(VPMU)} are built",
             f"built: {sorted(debs)}")
        return None
    return debs


def reproducible(work):
    """A second build from the same commit, elsewhere: the same bytes."""
    out = os.path.join(work, "b")
    log = os.path.join(work, "make-deb-b.log")
    rc = make_deb(out, log, "--no-lintian", "vpmu",
                  env={"DEB_BUILD_OPTIONS": "nocheck parallel=2"})
    if rc != 0:
        T.ok(False, "a second build from the same commit", tail(read(log)))
        return
    a = sorted(glob.glob(os.path.join(work, "a/vpmu/*.deb")))
    names = [os.path.basename(p) for p in a]
    same = [n for n in names if filecmp.cmp(
        os.path.join(work, "a/vpmu", n), os.path.join(out, "vpmu", n),
        shallow=False)]
    why = "\n".join(debchecks.deb_differences(
        os.path.join(work, "a/vpmu", n), os.path.join(out, "vpmu", n))
        for n in names if n not in same)
    T.ok(len(same) == len(names) and names,
         f"reproducible: a second build in another directory gives the "
         f"same {len(same)} of {len(names)} .deb files, byte for byte",
         why)


def in_root(work, debs):
    """Install, purge and upgrade in a clean bookworm root; the QEMU
    package runs there with only what it depends on."""
    log = os.path.join(work, "root.log")
    try:
        base = DebRoot.base(log)
    except Unavailable as e:
        T.skip("a clean bookworm root: install, purge, upgrade", str(e))
        return
    with DebRoot(base, work) as root:
        if not rootchecks.root_install(T, root, debs):
            return
        if qemuchecks.PKG in debs:
            qemuchecks.in_root(T, root)
        rootchecks.root_purge(T, root, debs)
        v2 = rootchecks.build_v2(T, work)
        if v2:
            rootchecks.root_upgrade(T, root, debs, v2)


def on_machine(work, build, image, debs):
    log = os.path.join(work, "machine.log")
    qemu = qemuchecks.PKG in debs
    debian_qemu, verified = qemuchecks.verify_debian_qemu()
    with MachineInstall(debs.values(), log) as m:
        if m.already():
            T.skip("on this machine: install, use, purge",
                   f"{', '.join(m.already())} already installed here: not "
                   "this test's to remove")
            return
        rc = m.install()
        T.ok(rc == 0, "on this machine: apt-get install ./*.deb "
             f"({len(m.added)} packages: {' '.join(m.added)})",
             tail(read(log)))
        if rc == 0:
            files = debchecks.files_of(debs)
            debchecks.verify_units(T)
            debchecks.helper_serves(T, work, build)
            debchecks.demo_builds(T, work)
            if qemu:
                qemuchecks.debian_qemu_intact(T, debian_qemu, verified)
                qemuchecks.libvirt(T, build, image)
        else:
            files = []
        rc = m.purge()
        T.ok(rc == 0, "apt-get purge of what the install added",
             tail(read(log)))
        left = [f for f in files if os.path.lexists(f)
                and not os.path.isdir(f)]
        T.ok(not left, f"none of the {len(files)} files the packages "
             "installed is left", "\n".join(left))
        if not m.kvm_before:
            T.ok(os.system("getent group kvm >/dev/null") == 0,
                 "the group kvm that vpmu-helper's postinst made stays "
                 "after purge (the test deletes it next)")
    ok, why = m.restored()
    T.ok(ok, "the machine's packages are those of before the test", why)
    if qemu:
        qemuchecks.debian_qemu_intact(T, debian_qemu, verified)


def main():
    global T
    if len(sys.argv) != 3:
        print("usage: run.py BUILD IMAGE", file=sys.stderr)
        return 2
    builddir, image = (os.path.abspath(a) for a in sys.argv[1:])
    # chroot, groupdel and dpkg's helpers are in the sbin directories.
    os.environ["PATH"] += ":/usr/sbin:/sbin"
    T = Tap()
    if os.getuid() != 0:
        Tap.skip_all("needs root (apt-get build-dep, chroot, dpkg on this "
                     "machine)")
    for tool in ("dpkg", "apt-get", "git"):
        if not shutil.which(tool):
            Tap.skip_all(f"{tool} not found (not Debian?)")
    work = tempfile.mkdtemp(prefix="vpmu-deb-")
    os.chmod(work, 0o755)
    try:
        debs = build_vpmu(work)
        if debs:
            debs.update(qemuchecks.build(T, work))
            debchecks.contents(T, debs)
            debchecks.symbols(T, debs["libvpmu0"])
            debchecks.conffiles(T, debs)
            if qemuchecks.PKG in debs:
                qemuchecks.control(T, debs[qemuchecks.PKG])
            reproducible(work)
            in_root(work, debs)
            on_machine(work, builddir, image, debs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return T.end()


if __name__ == "__main__":
    sys.exit(main())
