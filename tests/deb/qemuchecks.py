"""The deb suite's checks of qemu-system-x86-vpmu, make deb's QEMU package
(tests/deb/run.py runs them; @t is its pytap.Tap)."""
import glob
import os
import re
import subprocess
import time

from debchecks import ROOT, control_file, make_deb, run, tail

PKG = "qemu-system-x86-vpmu"
QEMU = "/usr/bin/qemu-system-x86_64-vpmu"
FIRMWARE = ["/usr/share/qemu", "/usr/share/seabios", "/usr/lib/ipxe/qemu"]
DEBIAN_QEMU = ["qemu-system-x86", "qemu-system-common", "qemu-system-data"]
CHANGELOG = os.path.join(ROOT, "packaging/qemu-vpmu/debian/changelog")


def build(t, work):
    """make deb (qemu), with the vpmu packages built before in WORK/a: the
    package, or {}."""
    out = os.path.join(work, "a")
    log = os.path.join(work, "make-deb-qemu.log")
    start = time.monotonic()
    # lintian on the source package of QEMU's ~10000 files takes minutes:
    # the binary package here, both in make deb.
    rc = make_deb(out, log, "qemu", env={"VPMU_DEB_LINT_QEMU_SOURCE": "0"})
    secs = time.monotonic() - start
    text = open(log).read()
    m = re.search(r"ccache ([0-9]+) hits, ([0-9]+) compiled", text)
    t.ok(rc == 0, "make deb: the source package qemu-vpmu builds in a clean "
         f"bookworm chroot ({secs:.0f} s"
         + (f", ccache {m.group(1)} hits, {m.group(2)} compiled)" if m
            else ")"), tail(text))
    lint = open(os.path.join(out, "qemu", "lintian.log")).read() \
        if os.path.exists(os.path.join(out, "qemu", "lintian.log")) else ""
    bad = [ln for ln in lint.splitlines() if re.match(r"[EW]: ", ln)]
    t.ok(rc == 0 and not bad, f"lintian on {PKG}: no error and no warning "
         "left", lint or tail(text))
    debs = glob.glob(os.path.join(out, "qemu", f"{PKG}_*.deb"))
    return {PKG: debs[0]} if rc == 0 and len(debs) == 1 else {}


def control(t, deb):
    """The version carries Debian's qemu version and vpmu's; the firmware
    packages, libvpmu0 and vpmu-helper are dependencies."""
    text = control_file(deb, "control")
    want = subprocess.run(["dpkg-parsechangelog", "-l", CHANGELOG, "-S",
                           "Version"], capture_output=True,
                          text=True).stdout.strip()
    ver = re.search(r"^Version: (.*)$", text, re.M).group(1)
    t.ok(ver == want and re.fullmatch(r"10\.2\.[0-9]+\+ds-[0-9]+\+vpmu"
                                      r"[0-9.]+-[0-9]+", ver),
         f"{PKG}'s version {ver}: Debian's qemu version, vpmu's, then the "
         "packaging's revision")
    deps = re.search(r"^Depends: (.*)$", text, re.M).group(1)
    need = ["seabios", "ipxe-qemu", "qemu-system-data",
            "vpmu-helper (>= 0.1.0)", "libvpmu0 (>= 0.1.0)"]
    names = [d.strip() for d in deps.split(",")]
    t.ok(all(n in names for n in need),
         "it depends on Debian's firmware packages (seabios, ipxe-qemu, "
         "qemu-system-data), libvpmu0 (>= 0.1.0) and vpmu-helper",
         deps)


def in_root(t, root):
    """In the clean root, with only what the package depends on: the
    binary searches Debian's firmware directories and starts a pc
    machine without -L (the BIOS is found)."""
    r = subprocess.run(["chroot", root.dir, QEMU, "-L", "help"],
                       capture_output=True, text=True)
    dirs = r.stdout.split()
    t.ok(all(d in dirs for d in FIRMWARE),
         "clean root: qemu-system-x86_64-vpmu searches Debian's firmware "
         "directories", r.stdout + r.stderr)
    r = subprocess.run(["chroot", root.dir, QEMU, "-machine", "pc", "-accel",
                        "tcg", "-nodefaults", "-display", "none", "-monitor",
                        "stdio", "-S"], input="quit\n", capture_output=True,
                       text=True, timeout=60)
    t.ok(r.returncode == 0, "and starts a pc machine without -L, its "
         "firmware from the packages it depends on", r.stdout + r.stderr)


def verify_debian_qemu():
    """dpkg --verify of Debian's QEMU packages that are installed: ""
    when none of their files changed."""
    have = [p for p in DEBIAN_QEMU if subprocess.run(
        ["dpkg-query", "-W", "-f", "${Status}", p], capture_output=True,
        text=True).stdout == "install ok installed"]
    r = run(["dpkg", "--verify"] + have) if have else None
    return have, (r.stdout + r.stderr) if r else ""


def debian_qemu_intact(t, have, before):
    have2, after = verify_debian_qemu()
    t.ok(have and have2 == have and after == before == "",
         f"Debian's {', '.join(have) or 'qemu-system-x86'} beside it: "
         "installed, and dpkg --verify finds none of their files changed",
         before + after if have else "qemu-system-x86 is not installed "
         "here (make check installs it)")


def libvirt(t, build, image):
    """The libvirt suite (guest-tests/libvirt/run.py) on the installed
    packages: their emulator, vpmu.conf and vpmu-helper, XML only."""
    r = subprocess.run(["python3",
                        os.path.join(ROOT, "guest-tests/libvirt/run.py"),
                        "--packages", build, image], capture_output=True,
                       text=True, timeout=900)
    m = re.search(r"^1\.\.0 # SKIP (.*)$", r.stdout, re.M)
    if m:
        t.skip("the libvirt suite on the installed packages", m.group(1))
        return
    t.copy("libvirt: ", r.stdout)
    t.ok(r.returncode == 0, "the libvirt suite on the installed packages "
         "passed (guest-tests/libvirt/run.py --packages)", r.stderr)
