"""The deb suite's checks of the built packages and of what they install
on this machine (tests/deb/run.py runs them; @t is its pytap.Tap)."""
import glob
import os
import re
import shutil
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
QEMU_CONFFILES = ["/etc/apparmor.d/abstractions/libvirt-qemu.d/"
                  "qemu-system-x86-vpmu", "/etc/qemu/vpmu.conf"]
UNITS = ["/lib/systemd/system/vpmu-helper.socket",
         "/lib/systemd/system/vpmu-helper.service",
         "/lib/systemd/system/vpmu-exporter.service"]


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def tail(text, n=20):
    return "\n".join(str(text).splitlines()[-n:])


def make_deb(out, log, *args, env=None):
    """scripts/make-deb.sh --out @out @args, its output in @log; its exit
    status."""
    e = dict(os.environ)
    e.update(env or {})
    with open(log, "w") as f:
        return subprocess.run([os.path.join(ROOT, "scripts/make-deb.sh"),
                               "--out", out, *args], stdout=f,
                              stderr=subprocess.STDOUT, env=e).returncode


def listing(deb):
    """A .deb's files but directories, as tests/deb/contents writes them
    ("MODE /PATH" or "MODE /PATH -> TARGET"), sorted by path."""
    tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb],
                           stdout=subprocess.PIPE)
    r = run(["tar", "-tv"], stdin=tar.stdout)
    tar.wait()
    out = []
    for line in r.stdout.splitlines():
        w = line.split()
        if w[0].startswith("d"):
            continue
        path = "/" + w[5].removeprefix("./")
        out.append(f"{w[0]} {path}" + (f" -> {w[7]}" if w[0][0] == "l"
                                        else ""))
    return sorted(out, key=lambda s: s.split()[1])


def expected_contents():
    """{package: [line, ...]} from tests/deb/contents."""
    want = {}
    with open(os.path.join(HERE, "contents")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                pkg, rest = line.rstrip("\n").split(" ", 1)
                want.setdefault(pkg, []).append(rest)
    return want


def contents(t, debs):
    """Each package ships exactly tests/deb/contents' lines for it."""
    want = expected_contents()
    for name, deb in sorted(debs.items()):
        got = listing(deb)
        exp = sorted(want.get(name, []), key=lambda s: s.split()[1])
        extra = [g for g in got if g not in exp]
        missing = [e for e in exp if e not in got]
        t.ok(got == exp, f"{name} ships exactly the {len(exp)} files "
             "tests/deb/contents lists",
             "\n".join([f"not listed: {x}" for x in extra] +
                       [f"missing: {x}" for x in missing]))


def control_file(deb, name):
    """The text of control-area file @name of @deb ("" if none)."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["dpkg-deb", "-e", deb, d], check=True)
        p = os.path.join(d, name)
        if not os.path.exists(p):
            return ""
        with open(p) as f:
            return f.read()


def exported(deb):
    """The dynamic symbols libvpmu.so.0 of @deb defines, as NAME@VERSION."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["dpkg-deb", "-x", deb, d], check=True)
        so = glob.glob(os.path.join(d, "usr/lib/*/libvpmu.so.0"))[0]
        r = run(["readelf", "--dyn-syms", "-W", so])
    syms = set()
    for line in r.stdout.splitlines():
        w = line.split()
        if len(w) >= 8 and w[6] != "UND" and w[4] == "GLOBAL":
            # readelf: NAME@@VERSION, and the version node as VERSION;
            # dpkg-gensymbols: NAME@VERSION and VERSION@VERSION.
            name = w[7].replace("@@", "@")
            syms.add(name if "@" in name else f"{name}@{name}")
    return syms


def symbols(t, deb):
    """libvpmu0's symbols file: every exported symbol, nothing else, each
    since 0.1.0; the map (vpmu/libvpmu.map) and the file move together."""
    text = control_file(deb, "symbols")
    listed = set(re.findall(r"^ (\S+) 0\.1\.0$", text, re.M))
    have = exported(deb)
    extra, missing = sorted(listed - have), sorted(have - listed)
    t.ok(text.startswith("libvpmu.so.0 libvpmu0 #MINVER#\n") and listed
         and listed == have,
         f"libvpmu0's symbols file lists exactly the {len(have)} symbols "
         "libvpmu.so.0 exports (debian/libvpmu0.symbols)",
         "\n".join([f"exported, not in debian/libvpmu0.symbols (add it "
                    f"with this upstream version): {s}" for s in missing] +
                   [f"in the symbols file, not exported: {s}"
                    for s in extra]))


def conffiles(t, debs):
    """vpmu-helper's default policy is its one conffile; the QEMU
    package's are vpmu.conf and its AppArmor rules; no other package has
    one."""
    got = {n: control_file(d, "conffiles").split() for n, d in debs.items()}
    want = {n: [] for n in debs}
    want["vpmu-helper"] = ["/etc/vpmu-helper/default.conf"]
    if "qemu-system-x86-vpmu" in debs:
        want["qemu-system-x86-vpmu"] = QEMU_CONFFILES
    t.ok(got == want, "conffiles: /etc/vpmu-helper/default.conf "
         "(vpmu-helper)" + (", /etc/qemu/vpmu.conf and libvirt-qemu.d's "
                            "AppArmor rules (qemu-system-x86-vpmu)"
                            if len(want) > 5 else "") + ", none elsewhere",
         str(got))


def deb_differences(a, b):
    """What differs between two builds of one .deb: diffoscope's report
    where it is installed, else the members whose md5sums differ."""
    name = os.path.basename(a)
    if shutil.which("diffoscope"):
        r = run(["diffoscope", "--text", "-", a, b])
        return f"{name}:\n{r.stdout[-3000:]}"
    out = [f"{name}:"]
    for part in ("control", "md5sums"):
        x, y = control_file(a, part), control_file(b, part)
        if x != y:
            la, lb = set(x.splitlines()), set(y.splitlines())
            out += [f"  {part}: {ln}" for ln in sorted(la ^ lb)]
    if listing(a) != listing(b):
        out.append("  the file lists differ")
    return "\n".join(out)


def files_of(names):
    """Every path dpkg lists for the installed packages @names, but
    directories (which other packages share)."""
    r = run(["dpkg", "-L"] + list(names))
    return sorted(p for p in r.stdout.splitlines()
                  if p.startswith("/") and not os.path.isdir(p))


def verify_units(t):
    """systemd-analyze verify of the installed units."""
    if not shutil.which("systemd-analyze"):
        t.skip("systemd-analyze verify of the installed units",
               "systemd-analyze not found")
        return
    r = run(["systemd-analyze", "verify", "--man=no"] + UNITS,
            env=dict(os.environ, SYSTEMD_LOG_COLOR="0"))
    t.ok(r.returncode == 0 and not r.stderr.strip(),
         "systemd-analyze verify: vpmu-helper.socket, vpmu-helper.service, "
         "vpmu-exporter.service, as installed", r.stdout + r.stderr)


def helper_serves(t, work, build):
    """The installed helper, run as the installed unit runs it, with the
    installed default.conf: the client's task-clock event counts its
    50 ms (tests/helper/helper-open)."""
    sock = os.path.join(work, "helper.sock")
    log = open(os.path.join(work, "helper.log"), "w")
    p = subprocess.Popen(["/usr/sbin/vpmu-helper", "--socket", sock,
                          "--policy-dir", "/etc/vpmu-helper"],
                         stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    try:
        for _ in range(50):
            if os.path.exists(sock):
                break
            time.sleep(0.1)
        r = run([os.path.join(build, "tests/helper/helper-open"), sock])
        out = (r.stdout + r.stderr).strip()
        m = re.fullmatch(r"ok ([0-9]+)", out)
        t.ok(m and int(m.group(1)) >= 50000000,
             "the installed /usr/sbin/vpmu-helper serves with the installed "
             f"/etc/vpmu-helper/default.conf ({out})",
             open(log.name).read())
    finally:
        p.terminate()
        p.wait(20)
        log.close()


def demo_builds(t, work):
    """examples/demo.c with pkg-config's flags for the installed
    libvpmu-dev, run on the installed libvpmu.so.0."""
    flags = run(["pkg-config", "--cflags", "--libs", "libvpmu"]).stdout.split()
    exe = os.path.join(work, "demo")
    r = run(["cc", "-std=c11", "-o", exe,
             os.path.join(ROOT, "examples/demo.c")] + flags)
    t.ok(r.returncode == 0 and flags == ["-lvpmu"],
         "examples/demo.c builds with `pkg-config --cflags --libs libvpmu` "
         f"of the installed libvpmu-dev ({' '.join(flags)})",
         r.stdout + r.stderr)
    if r.returncode != 0:
        return
    ldd = run(["ldd", exe]).stdout
    m = re.search(r"libvpmu\.so\.0 => (\S+)", ldd)
    lib = os.path.realpath(m.group(1)) if m else None
    r = run([exe])
    t.ok(r.returncode == 0 and lib and
         lib.endswith("/x86_64-linux-gnu/libvpmu.so.0.1.0"),
         f"and runs its exact checks on the installed libvpmu0 ({lib})",
         ldd + r.stdout + r.stderr)
