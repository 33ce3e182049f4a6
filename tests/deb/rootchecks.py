"""The deb suite's checks in a clean bookworm root (scripts/debroot.py):
install as a user would, purge, upgrade.  @t is run.py's pytap.Tap."""
import email.utils
import glob
import os
import re
import shutil
import subprocess

from debroot import APT_ENV, diff
from debchecks import run

POLICY = "/etc/vpmu-helper/default.conf"
OPERATOR = "/etc/vpmu-helper/web1.conf"
OPERATOR_TEXT = "events = allow 0xc0\ncounters = 2\n"
EDIT = "\n# the operator's edit: one counter fewer\ncounters = 3\n"
SOCKET_LINK = "/etc/systemd/system/sockets.target.wants/vpmu-helper.socket"
V2 = "0.1.0-2"
V2_POLICY_LINE = "# 0.1.0-2: the deb suite's upgrade\n"


def copy_debs(root, debs, sub="debs"):
    """The .deb files into the root's /tmp/@sub; their paths there."""
    d = root.path(f"tmp/{sub}")
    os.makedirs(d, exist_ok=True)
    for p in debs.values():
        shutil.copy(p, d)
    return [f"/tmp/{sub}/{os.path.basename(p)}" for p in debs.values()]


def apt_deps(root, paths, ours):
    """The packages apt would install with @paths, but @ours."""
    r = subprocess.run(["chroot", root.dir, "apt-get", "install", "-s", "-q",
                        *paths], capture_output=True, text=True,
                       env=APT_ENV)
    names = re.findall(r"^Inst (\S+) ", r.stdout, re.M)
    return [n for n in names if n not in ours]


def root_install(t, root, debs):
    """apt install ./*.deb in the clean root, its dependencies first so
    that the purge below can be compared with the state before ours."""
    paths = copy_debs(root, debs)
    deps = apt_deps(root, paths, debs)
    rc = root.apt("install", *deps).returncode if deps else 0
    t.ok(rc == 0, f"clean root: the {len(deps)} packages apt chooses for "
         "ours installed first", open(root.log).read())
    root.before = root.snapshot()
    rc = root.apt("install", *paths).returncode
    t.ok(rc == 0, f"clean root: apt-get install ./*.deb of the {len(debs)} "
         "packages",
         open(root.log).read())
    if rc != 0:
        return False
    group = root.out("getent", "group", "kvm").strip()
    m = re.fullmatch(r"kvm:x:([0-9]+):", group)
    t.ok(m and int(m.group(1)) < 1000,
         f"vpmu-helper's postinst made the system group kvm ({group})")
    link = root.path(SOCKET_LINK)
    t.ok(os.path.islink(link) and
         os.readlink(link) == "/lib/systemd/system/vpmu-helper.socket",
         "vpmu-helper.socket is enabled (sockets.target.wants)",
         os.readlink(link) if os.path.islink(link) else "no link")
    r = subprocess.run(["chroot", root.dir, "/usr/sbin/vpmu-helper",
                        "--help"], capture_output=True, text=True)
    t.ok(r.returncode == 0 and r.stdout.startswith("usage: vpmu-helper"),
         "the installed vpmu-helper runs (--help)", r.stdout + r.stderr)
    r = subprocess.run(["chroot", root.dir, "vpmu-exporter", "--help"],
                       capture_output=True, text=True)
    t.ok(r.returncode == 0 and "usage: vpmu-exporter" in r.stdout,
         "the installed vpmu-exporter runs on the root's python3",
         r.stdout + r.stderr)
    return True


def root_purge(t, root, debs):
    """The operator adds a policy of its own, then apt purge: what is
    left is exactly what policy keeps."""
    etc_group = {p: open(root.path(p)).read().splitlines()
                 for p in ("/etc/group", "/etc/gshadow")}
    with open(root.path(OPERATOR), "w") as f:
        f.write(OPERATOR_TEXT)
    rc = root.apt("purge", *debs).returncode
    t.ok(rc == 0, f"clean root: apt-get purge of the {len(debs)} packages",
         open(root.log).read())
    changed = diff(root.before, root.snapshot())
    want = {"/etc/group", "/etc/gshadow", "/etc/group-", "/etc/gshadow-",
            "/etc/vpmu-helper", OPERATOR}
    t.ok(set(changed) == want,
         "after purge the root is as before the install but for the group "
         "kvm (/etc/group, /etc/gshadow and their backups) and the "
         "operator's own /etc/vpmu-helper/web1.conf",
         "\n".join(f"{p}: {a} -> {b}" for p, (a, b) in changed.items()))
    added = [ln for p in ("/etc/group", "/etc/gshadow")
             for ln in open(root.path(p)).read().splitlines()
             if ln not in etc_group[p]]
    t.ok(not added and all(any(ln.startswith("kvm:") for ln in v)
                           for v in etc_group.values()),
         "the group kvm stays, as policy keeps system groups; nothing else "
         "in /etc/group", str(added))
    t.ok(open(root.path(OPERATOR)).read() == OPERATOR_TEXT and
         not os.path.exists(root.path(POLICY)),
         "purge removed the conffile default.conf and kept the operator's "
         "web1.conf")
    os.unlink(root.path(OPERATOR))


def build_v2(t, work):
    """The next upload, from make deb's source package: version 0.1.0-2,
    its default.conf gained a line."""
    dsc = glob.glob(os.path.join(work, "a/vpmu/vpmu_*.dsc"))[0]
    src = os.path.join(work, "v2", "src")
    log = os.path.join(work, "v2.log")
    os.makedirs(os.path.dirname(src))
    with open(log, "w") as f:
        r = subprocess.run(["dpkg-source", "-x", dsc, src], stdout=f,
                           stderr=subprocess.STDOUT)
    if r.returncode == 0:
        with open(os.path.join(src, "vpmu/helper/default.conf"), "a") as f:
            f.write(V2_POLICY_LINE)
        cl = os.path.join(src, "debian/changelog")
        old = open(cl).read()
        with open(cl, "w") as f:
            f.write(f"vpmu ({V2}) bookworm; urgency=medium\n\n"
                    "  * The deb suite's upgrade: default.conf changed.\n\n"
                    " -- vpmu developers <dev@vpmu.example>  "
                    f"{email.utils.formatdate()}\n\n" + old)
        with open(log, "a") as f:
            r = subprocess.run(["nice", "-n", "10", "dpkg-buildpackage", "-b",
                                "-us", "-uc"], cwd=src, stdout=f,
                               stderr=subprocess.STDOUT,
                               env=dict(os.environ, CCACHE_DISABLE="1",
                                        DEB_BUILD_OPTIONS="nocheck "
                                        "parallel=2"))
    debs = {os.path.basename(p).split("_")[0]: p for p in
            glob.glob(os.path.join(work, "v2", f"*_{V2}_*.deb"))
            if "dbgsym" not in p}
    t.ok(r.returncode == 0 and len(debs) == 5,
         f"a rebuilt {V2} (dpkg-source -x of make deb's .dsc; "
         "default.conf changed)", run(["tail", "-20", log]).stdout)
    return debs if r.returncode == 0 and len(debs) == 5 else None


def root_upgrade(t, root, v1, v2):
    """Install 0.1.0-1, edit the policy, upgrade to 0.1.0-2."""
    paths = copy_debs(root, v1)
    rc = root.apt("install", *paths).returncode
    with open(root.path(POLICY), "a") as f:
        f.write(EDIT)
    edited = open(root.path(POLICY)).read()
    paths = copy_debs(root, v2, "debs2")
    rc = rc or root.apt("install", *paths).returncode
    vers = root.out("dpkg-query", "-W", "-f", "${Version} ", *v2).split()
    t.ok(rc == 0 and vers == [V2] * 5,
         f"clean root: 0.1.0-1 installed, default.conf edited, apt-get "
         f"install ./*.deb of {V2} upgrades all 5 ({' '.join(vers)})",
         open(root.log).read())
    dist = root.path(POLICY + ".dpkg-dist")
    t.ok(open(root.path(POLICY)).read() == edited and
         os.path.exists(dist) and
         open(dist).read().endswith(V2_POLICY_LINE),
         "the operator's edited default.conf is kept; the new one is "
         "default.conf.dpkg-dist")
    t.ok(os.path.islink(root.path(SOCKET_LINK)),
         "vpmu-helper.socket is still enabled after the upgrade")
