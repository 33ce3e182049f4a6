#!/usr/bin/env python3
"""vpmu the way operators run VMs: a real libvirtd (Debian bookworm's 9.0),
the installed QEMU (make install into a scratch DESTDIR; no -L), QEMU as
user libvirt-qemu with no capabilities, perf_event_paranoid 3:

  - a TCG domain, <features><pmu state='on'/> and a Skylake model, no
    <qemu:commandline>: the guest's perf stat counts exactly (stat-exact's
    TAP, copied in), and its console says the guest ended;
  - virsh qemu-monitor-command DOM query-vpmu answers for it;
  - two KVM domains, host-passthrough with pmu on, vpmu chosen by
    /etc/qemu/vpmu.conf and their events opened by vpmu-helper (started
    here, as root), boot guest-tests/kvm's real-mode payload as their ROM:
    vpmu-kvm's cycles count (task-clock through the helper) and query-vpmu
    shows the helper's policy for it, known by its libvirt cgroup;
    vpmu-deny's policy denies cycles: its counter stays at 0, and
    query-vpmu shows the filtered programmings and the helper's refusals;
  - a client in vpmu-deny's cgroup, as libvirt-qemu, is refused an fd for
    a vCPU thread of vpmu-kvm.

Usage: run.py [--packages] BUILD IMAGE  (the meson build directory, for
helper-open; the guest image).  With --packages (the deb suite, after it
installed make deb's packages here): the emulator qemu-system-x86-vpmu
installed, /usr/bin/qemu-system-x86_64-vpmu, and its /etc/qemu/vpmu.conf
as shipped; vpmu-helper.socket's helper (started by systemd where it runs
the system, else by the test as the units say) with the domains' policies
in /etc/vpmu-helper; no make install.  Set up here and undone at the end,
also when a check fails or the test is stopped (libvirtfix.LibvirtHost):
the users, groups and directories libvirt-daemon-system would create
(only those that were missing), what libvirtd and virtlogd write there,
/dev/kvm's group and mode, kernel.perf_event_paranoid, /etc/qemu/vpmu.conf
(or the policies in /etc/vpmu-helper); libvirtd, virtlogd and the helper
are started here and stopped by pid.  TAP on stdout;
1..0 # SKIP without root, libvirtd or the guest image; the KVM domains are
one SKIP line without /dev/kvm.
"""
import json
import os
import pwd
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from libvirtfix import (QEMU_LOGS, QEMU_USER, LibvirtHost,  # noqa: E402
                        foreign_daemons, virsh, wait_for)
from pytap import Tap, read_text as read  # noqa: E402

SYSCTL = "/proc/sys/kernel/perf_event_paranoid"
CONF = "/etc/qemu/vpmu.conf"
DOMAINS = ["vpmu-tcg", "vpmu-kvm", "vpmu-deny"]
UNITS = "/lib/systemd/system"
PACKAGED_QEMU = "/usr/bin/qemu-system-x86_64-vpmu"
# An allow list closes the fixed counters unless its fixed bitmap opens
# them (KVM's semantics): fixed=0x7 lets intel.c's FIXED_CTR1 count.
POLICIES = {"vpmu-kvm": "events = allow 0x3c, 0x76, 0xc0, fixed=0x7\n"
                        "counters = 3\n",
            "vpmu-deny": "events = deny 0x3c, 0x76\ncounters = 3\n"}
T = None            # the Tap, made by main()
PACKAGES = False    # --packages


def domain_xml(host, kind, name, mib, boot, cpu):
    """A domain with <pmu state='on'/>, booted as @boot says (in <os>),
    its console in DIR/NAME.log."""
    return f"""<domain type='{kind}'>
  <name>{name}</name>
  <memory unit='MiB'>{mib}</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    {boot}
  </os>
  <features><acpi/><pmu state='on'/></features>
  {cpu}
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>{host.qemu}</emulator>
    <serial type='file'><source path='{host.path(name + ".log")}'/><target port='0'/></serial>
  </devices>
</domain>
"""


def create(host, name, xml, desc):
    path = host.path(name + ".xml")
    with open(path, "w") as f:
        f.write(xml)
    r = virsh("create", path)
    T.ok(r.returncode == 0, desc, r.stdout + r.stderr)


def vpmu_query(dom):
    """query-vpmu's first vCPU through virsh, as "vendor GP fixed
    helper.vm helper.by-cgroup helper.counters helper.connects
    helper.refusals helper.failures filtered counter0.filtered
    source-last-error helper.opens helper.last-error" ("-" where absent),
    "none" without a vCPU, or what went wrong."""
    r = virsh("qemu-monitor-command", dom, '{"execute":"query-vpmu"}')
    try:
        ret = json.loads(r.stdout).get("return") or []
    except ValueError:
        return f"virsh exit {r.returncode}: {r.stdout}{r.stderr}".strip()
    if not ret:
        return "none"
    c, h = ret[0], ret[0].get("helper", {})
    gp = sum(1 for x in c["counters"] if not x["fixed"])
    words = [c["vendor"], gp, len(c["counters"]) - gp,
             *(h.get(k, "-") for k in ("vm", "by-cgroup", "counters",
                                       "connects", "refusals", "failures")),
             c["filtered"], c["counters"][0]["filtered"],
             c.get("source-last-error", "-"), h.get("opens", "-"),
             h.get("last-error", "-")]
    return " ".join(str(w) for w in words)


def tail(text, n=5):
    return "\n".join(text.splitlines()[-n:])


def install(host):
    """The installed QEMU and helper: make install into DIR/inst, or the
    installed packages'."""
    host.helper_log = lambda: read(host.path("helper.log"))
    if PACKAGES:
        host.qemu, host.helper = PACKAGED_QEMU, "/usr/sbin/vpmu-helper"
        T.ok(os.access(host.qemu, os.X_OK) and
             os.access(host.helper, os.X_OK),
             f"the installed packages' {host.qemu} and {host.helper}")
        return
    with open(host.path("install.log"), "w") as log:
        r = subprocess.run(["make", "-s", "-C", ROOT, "install",
                            f"DESTDIR={host.path('inst')}",
                            "PREFIX=/usr/local",
                            f"INSTALL_BUILD={host.path('build')}"],
                           stdout=log, stderr=subprocess.STDOUT)
    T.ok(r.returncode == 0, "make install DESTDIR=... PREFIX=/usr/local",
         tail(read(host.path("install.log"))))
    host.qemu = host.path("inst/usr/local/bin/qemu-system-x86_64")
    host.helper = host.path("inst/usr/local/sbin/vpmu-helper")


def tcg(host, image):
    """stat-exact in a Skylake guest, no PMU-specific XML but pmu='on'."""
    for f in ("vmlinuz", "initramfs.cpio.gz"):
        shutil.copy(os.path.join(image, f), host.dir)
    cmdline = ("console=ttyS0 panic=-1 quiet nmi_watchdog=0 "
               "vpmu.test=stat-exact vpmu.require_pmu=1")
    boot = (f"<kernel>{host.path('vmlinuz')}</kernel>"
            f"<initrd>{host.path('initramfs.cpio.gz')}</initrd>"
            f"<cmdline>{cmdline}</cmdline>")
    cpu = ("<cpu mode='custom' match='exact'><model fallback='forbid'>"
           "Skylake-Client</model></cpu>")
    create(host, "vpmu-tcg", domain_xml(host, "qemu", "vpmu-tcg", 512, boot,
                                        cpu),
           "virsh create: a TCG domain with <pmu state='on'/>")
    out = vpmu_query("vpmu-tcg")
    T.ok(out == "intel 8 3 - - - - - - 0 0 - - -",
         "virsh qemu-monitor-command query-vpmu: the guest's Intel PMU, "
         f"8 GP + 3 fixed ({out})")
    wait_for(lambda: virsh("domstate", "vpmu-tcg").returncode != 0, 300)
    log = read(host.path("vpmu-tcg.log")).replace("\r", "")
    T.copy("tcg: ", log)
    T.ok("VPMU-GUEST-EXIT 0" in log,
         "the TCG guest ended with exit status 0", tail(log))


def build_payloads(host):
    """guest-tests/kvm's payload for each policy's PMU: 3 GP counters,
    cycles allowed (vpmu-kvm) or denied (vpmu-deny)."""
    for name, denied in (("kvm", "0"), ("deny", "1")):
        out = host.path("payload-" + name)
        os.makedirs(out, exist_ok=True)
        r = subprocess.run(["make", "-s", "-C",
                            os.path.join(ROOT, "guest-tests", "kvm"),
                            f"OUT={out}", "NR_GP=3",
                            f"CYCLES_DENIED={denied}"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            T.ok(False, "build the payloads", r.stdout + r.stderr)
            return False
    return True


def unit_value(unit, key):
    """The value of @key in an installed unit file (None if absent)."""
    m = re.search(rf"^{key}=(.*)$", read(os.path.join(UNITS, unit)), re.M)
    return m.group(1).strip() if m else None


def start_packaged_helper(host):
    """vpmu-helper as the packages run it: policies for the domains in its
    policy directory (put back at the end), the socket of
    vpmu-helper.socket, vpmu.conf as shipped.  systemd starts the helper
    where it runs the system (its log is the journal's); else the test,
    with the socket unit's path and group and the service's command."""
    argv = unit_value("vpmu-helper.service", "ExecStart").split()
    policy = argv[argv.index("--policy-dir") + 1]
    for dom, text in POLICIES.items():
        host.write_file(os.path.join(policy, dom + ".conf"), text)
    sock = unit_value("vpmu-helper.socket", "ListenSequentialPacket")
    conf = read(CONF)
    T.ok(re.search(r"^kvm = on$", conf, re.M) and
         re.search(rf"^helper = {re.escape(sock)}$", conf, re.M),
         f"the shipped {CONF}: kvm = on, helper = {sock}", conf)
    if os.path.isdir("/run/systemd/system"):
        host.helper_log = lambda: subprocess.run(
            ["journalctl", "-q", "-u", "vpmu-helper", "-o", "cat"],
            capture_output=True, text=True).stdout
    else:
        host.start("helper", argv + [
            "--socket", sock, "--socket-group",
            unit_value("vpmu-helper.socket", "SocketGroup")])
        wait_for(lambda: os.path.exists(sock), 5, 0.1)
    return sock


def start_helper(host):
    """The installed helper with a policy per domain, and vpmu.conf
    pointing QEMU at it."""
    if PACKAGES:
        host.sock = start_packaged_helper(host)
        return host.sock
    policy = host.path("policy")
    os.makedirs(policy)
    for dom, text in POLICIES.items():
        with open(os.path.join(policy, dom + ".conf"), "w") as f:
            f.write(text)
    sock = host.sock = host.path("helper.sock")
    try:
        host.start("helper", [host.helper, "--socket", sock,
                              "--socket-group", "kvm", "--policy-dir",
                              policy])
    except OSError as e:        # the checks that need it fail, with this
        with open(host.path("helper.log"), "a") as f:
            f.write(f"cannot start {host.helper}: {e}\n")
    host.write_file(CONF, f"[vpmu]\nkvm = on\nhelper = {sock}\n")
    wait_for(lambda: os.path.exists(sock), 5, 0.1)
    return sock


def run_payload(host, name):
    """Start domain @name (its payload as the ROM), wait for the payload's
    last line (it then halts), copy its TAP."""
    boot = (f"<loader type='rom' readonly='yes'>"
            f"{host.path('payload-' + name.removeprefix('vpmu-'))}"
            f"/payload.bin</loader>")
    cpu = ("<cpu mode='host-passthrough'><feature policy='disable' "
           "name='arch-capabilities'/></cpu>")
    create(host, name, domain_xml(host, "kvm", name, 16, boot, cpu),
           f"virsh create: KVM domain {name}, vpmu from vpmu.conf")
    log = host.path(name + ".log")
    done = re.compile(r"^# done: ", re.M)
    wait_for(lambda: done.search(read(log)), 120, 0.2)
    text = read(log)
    T.copy(f"{name}: ", text)
    T.ok(done.search(text), f"{name}: the payload ran to the end",
         tail(text))


def qemu_pid(dom):
    """The pid of @dom's QEMU, from libvirt's pid file."""
    try:
        return int(read(f"/run/libvirt/qemu/{dom}.pid").strip())
    except ValueError:
        return None


def uid_of(pid):
    m = re.search(r"^Uid:\s+(\d+)", read(f"/proc/{pid}/status"), re.M)
    return int(m.group(1)) if m else None


def check_kvm_query(host, vendor, fixed):
    """The perf source probes the host once per vCPU: hardware cycles, and
    without a hardware PMU the task clock (docs/perf-source.md).  Here the
    hardware probe fails (ENOENT, a refusal the helper passes on), the
    task clock opens (1), and counter 0 opens its event once, which then
    serves every programming of cycles (2); on Intel, FIXED_CTR1 opens one
    of its own (intel.c's test_fixed: 3).  With a hardware PMU every
    generic event is probed: nothing refused, and more than 2 opens."""
    out = vpmu_query("vpmu-kvm")
    opens = 3 if vendor == "intel" else 2
    head = f"{vendor} 3 {fixed} vpmu-kvm True 3 1 "
    if "no hardware PMU on this host" in read(QEMU_LOGS + "/vpmu-kvm.log"):
        good = out == (head + f"1 0 0 0 - {opens} perf_event_open: "
                       "No such file or directory")
    else:
        m = re.fullmatch(re.escape(head + "0 0 0 0 - ") + r"([0-9]+) -", out)
        good = bool(m) and int(m.group(1)) > 2
    T.ok(good, "query-vpmu: the helper knew vpmu-kvm by its libvirt cgroup, "
         "gave its policy (3 GP counters, one connect) and opened its cycles "
         f"({out})", host.helper_log())


def check_deny_query(vendor, fixed):
    """The policy of vpmu-deny denies cycles: the payload checks that its
    counter 0 never counts, and every programming of counter 0 with
    cycles was filtered, on counter 0: lib.c's test_counting, test_pmi
    and test_rdpmc enable PERF_CTL0 / PERFEVTSEL0 with cycles (3); on AMD
    amd.c's test_global_ctl writes PERF_CTL0 = EN | cycles under a clear
    GLOBAL_CTL bit 0 (nothing programmed) and then sets the bit: a 4th.
    The round trips of amd.c's and intel.c's test_msrs leave the enable
    bit clear, and intel.c has no such GLOBAL_CTRL test: 3 on Intel.  The helper refused the probe of cycles
    by the policy, which says nothing about the host's PMU, so the source
    probed the 6 other generic events: without a hardware PMU the kernel
    refused each (ENOENT), then the task-clock probe was refused by the
    policy too: 8 refusals, nothing opened.  With a hardware PMU, the
    other events open (the guest keeps them)."""
    out = vpmu_query("vpmu-deny")
    cycles = "0x3c" if vendor == "intel" else "0x76"
    denied = f"event {cycles} denied by the policy of VM 'vpmu-deny'"
    head = f"{vendor} 3 {fixed} vpmu-deny True 3 1 "
    n = 3 if vendor == "intel" else 4
    log = read(QEMU_LOGS + "/vpmu-deny.log")
    if ("no hardware PMU on this host" in log or
            "perf_event_open is unavailable here" in log):
        good = out == head + f"8 0 {n} {n} - 0 {denied}"
    else:
        m = re.match(re.escape(head) + rf"[0-9]+ 0 {n} {n} - ([0-9]+) ", out)
        good = bool(m) and int(m.group(1)) > 0
    T.ok(good, f"query-vpmu: vpmu-deny's denied cycles were filtered {n} "
         f"times on counter 0, and the helper refused them ({out})")


def cgroup_procs(pid):
    """cgroup.procs of @pid's cgroup, in the unified hierarchy if it is
    mounted, else in the v1 cpu controller's; None if neither."""
    lines = read(f"/proc/{pid}/cgroup").splitlines()
    for line in lines:
        if line.startswith("0::/"):
            rel = line[len("0::"):]
            if rel != "/" and os.path.isdir("/sys/fs/cgroup" + rel):
                return f"/sys/fs/cgroup{rel}/cgroup.procs"
            break
    for line in lines:
        m = re.fullmatch(r"[0-9]*:cpu:(.*)", line)
        if m:
            return f"/sys/fs/cgroup/cpu{m.group(1)}/cgroup.procs"
    return None


def vcpu_thread(pid):
    """The thread of @pid's QEMU running vCPU 0 under KVM."""
    task = f"/proc/{pid}/task"
    try:
        tids = sorted(os.listdir(task), key=int)
    except OSError:
        return None
    return next((t for t in tids
                 if read(f"{task}/{t}/comm") == "CPU 0/KVM\n"), None)


def check_cross_domain(host, build, qpid_kvm, qpid_deny):
    """A second domain cannot get fds for the first's threads: a client
    that runs as libvirt-qemu in vpmu-deny's cgroup (the helper takes it
    for that domain) asks for the vCPU thread of vpmu-kvm's QEMU."""
    vcpu = vcpu_thread(qpid_kvm)
    procs = cgroup_procs(qpid_deny)

    def join_cgroup():
        with open(procs, "w") as f:
            f.write(str(os.getpid()))
    argv = ["setpriv", f"--reuid={QEMU_USER}", f"--regid={QEMU_USER}",
            "--init-groups", "--inh-caps=-all", "--bounding-set=-all", "--",
            os.path.join(build, "tests", "helper", "helper-open"),
            host.sock, str(vcpu)]
    try:
        r = subprocess.run(argv, preexec_fn=join_cgroup, capture_output=True,
                           text=True, timeout=60)
        out = (r.stdout + r.stderr).strip()
    except (OSError, subprocess.SubprocessError) as e:
        out = f"cannot run helper-open in cgroup {procs}: {e}"
    m = re.fullmatch(rf"refused -1 thread {vcpu} is not one of process "
                     r"([0-9]+)", out)
    helper_log = host.helper_log()
    T.ok(m and f"(VM 'vpmu-deny'): thread {vcpu} is not one of process "
         f"{m.group(1)}" in helper_log,
         "a client in vpmu-deny's cgroup, as libvirt-qemu, cannot get an fd "
         f"for vpmu-kvm's vCPU thread {vcpu} ({out})", tail(helper_log, 3))


def kvm(host, build):
    """vpmu from /etc/qemu/vpmu.conf, events from the helper: two domains
    boot guest-tests/kvm's real-mode payload from <loader type='rom'>,
    built for the PMU their policy gives: vpmu-kvm may count cycles
    (task-clock, opened by the helper), vpmu-deny's policy denies them.
    Both have 3 counters."""
    if not build_payloads(host):
        return
    start_helper(host)
    with open("/proc/cpuinfo") as f:
        vendor = "intel" if "GenuineIntel" in f.read() else "amd"
    fixed = 3 if vendor == "intel" else 0
    run_payload(host, "vpmu-kvm")
    qpid_kvm = qemu_pid("vpmu-kvm")
    uid = uid_of(qpid_kvm)
    T.ok(uid == pwd.getpwnam(QEMU_USER).pw_uid,
         f"its QEMU runs as libvirt-qemu (uid {uid})")
    check_kvm_query(host, vendor, fixed)
    run_payload(host, "vpmu-deny")
    qpid_deny = qemu_pid("vpmu-deny")
    check_deny_query(vendor, fixed)
    check_cross_domain(host, build, qpid_kvm, qpid_deny)


def run(host, build, image):
    host.users_and_dirs()
    # Debian's /dev/kvm is 0660 group kvm; root-only makes libvirt
    # re-probe the emulator on every call (~45 s a domain).
    if os.path.exists("/dev/kvm"):
        host.set_group_mode("/dev/kvm", "kvm", 0o660)
    host.set_sysctl(SYSCTL, "3")
    install(host)
    up, pids, err = host.start_daemons()
    T.ok(up, f"libvirtd and virtlogd started ({pids})", err)
    tcg(host, image)
    if not os.path.exists("/dev/kvm"):
        T.skip("KVM domains vpmu-kvm and vpmu-deny: vpmu from vpmu.conf, "
               "events from vpmu-helper, its policy and cgroup checks",
               "no /dev/kvm on this host")
        return
    kvm(host, build)


def main():
    global T, PACKAGES
    args = sys.argv[1:]
    if args[:1] == ["--packages"]:
        PACKAGES, args = True, args[1:]
    if len(args) != 2:
        print("usage: run.py [--packages] BUILD IMAGE (the meson build "
              "directory, the guest image)", file=sys.stderr)
        return 2
    build, image = args
    T = Tap()
    if os.getuid() != 0:
        Tap.skip_all("needs root (libvirtd, users, sysctl)")
    for t in ("libvirtd", "virtlogd", "virsh"):
        if not shutil.which(t):
            Tap.skip_all(f"{t} not found (scripts/install-deps.sh libvirt)")
    if not all(os.path.isfile(os.path.join(image, f))
               for f in ("vmlinuz", "initramfs.cpio.gz")):
        Tap.skip_all(f"no guest image in {image}")
    if PACKAGES and not os.access(PACKAGED_QEMU, os.X_OK):
        Tap.skip_all(f"no {PACKAGED_QEMU} (qemu-system-x86-vpmu)")
    if not PACKAGES and not os.access(
            os.path.join(ROOT, "build/qemu/qemu-system-x86_64"), os.X_OK):
        Tap.skip_all("no QEMU (make qemu)")
    if foreign_daemons():
        Tap.skip_all("a libvirtd or virtlogd runs already: not this test's")
    with LibvirtHost("vpmu-libvirt-", DOMAINS) as host:
        run(host, build, image)
    return T.end()


if __name__ == "__main__":
    sys.exit(main())
