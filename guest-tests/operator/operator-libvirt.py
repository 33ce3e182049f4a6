#!/usr/bin/env python3
"""An operator's view of a tenant, end to end: libvirt, vpmu-exporter and
Prometheus, all started here, on a TCG domain that runs a workload of
known instruction count.

Usage: operator-libvirt.py QEMU IMAGE EXPORTER

- libvirtd and virtlogd (Debian's), started as guest-tests/libvirt/run.py
  starts them (libvirtfix.py): the user and groups libvirt-daemon-system
  would make, created only if missing, and every file they write,
  removed after;
- a TCG domain, 2 vCPUs, a Skylake model with <pmu state='on'/>, the
  VM's consent through <qemu:commandline> (-global ...pmu-operator=on),
  and isolcpus=1 on the guest kernel's command line; its init runs
  operator-pin (guest-tests/linux/tests): after a pause, pin1_10M moves
  itself to CPU 1 and retires 2N + 6 = 20000006 user instructions there,
  and nothing else runs at CPL 3 on CPU 1;
- vpmu-exporter --events instructions:u,instructions, and Debian's
  Prometheus scraping it every second.

The domain's profile policy is ip (-global ...pmu-operator-profile=ip):
vpmu-profile --domain (the operator's tool, through virsh) writes a 2 s
profile at 100 Hz, QEMU writing the file, and a stack profile is refused
with exit status 1.

Checked: Prometheus' query API gives vCPU 1's instructions:u increase
over the run as exactly 20000006 (max_over_time - min_over_time of the
raw samples: increase() extrapolates), the operator's events counted
from before the workload started, the domain's consent 1, promtool
check metrics clean on a live scrape, and the guest's own checks pass.
Everything started is stopped by pid, and what was set up is undone.
TAP on stdout; 1..0 # SKIP without root, libvirt, prometheus or the
image.
"""
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from libvirtfix import (LibvirtHost, foreign_daemons, virsh,  # noqa: E402
                        wait_for)
from pytap import Tap, free_port, prom_query, prometheus_argv  # noqa: E402

QEMU, IMAGE, EXPORTER = sys.argv[1], sys.argv[2], sys.argv[3]
TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                    "vpmu", "profile", "vpmu-profile")
N = 10000000
WANT = 2 * N + 6                # pin.S: user instructions on CPU 1
DOM = "vpmu-operator"
METRIC = (f'vpmu_guest_instructions_total{{domain="{DOM}",vcpu="1",'
          f'cpl="user"}}')

T = None            # the Tap, made by main()


def ok(cond, desc, diag=""):
    T.ok(cond, desc, diag)


def skip_all(why):
    Tap.skip_all(why)


def domain_xml(d):
    cmdline = ("console=ttyS0 panic=-1 quiet nmi_watchdog=0 isolcpus=1 "
               "vpmu.test=operator-pin vpmu.require_pmu=1 "
               "vpmu.operator_delay=40")
    return f"""<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>{DOM}</name>
  <memory unit='MiB'>512</memory>
  <vcpu>2</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>{d}/vmlinuz</kernel><initrd>{d}/initramfs.cpio.gz</initrd>
    <cmdline>{cmdline}</cmdline>
  </os>
  <features><acpi/><pmu state='on'/></features>
  <cpu mode='custom' match='exact'><model fallback='forbid'>Skylake-Client</model></cpu>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>{d}/qemu-system-x86_64</emulator>
    <serial type='file'><source path='{d}/{DOM}.log'/><target port='0'/></serial>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-global'/>
    <qemu:arg value='Skylake-Client-x86_64-cpu.pmu-operator=on'/>
    <qemu:arg value='-global'/>
    <qemu:arg value='Skylake-Client-x86_64-cpu.pmu-operator-profile=ip'/>
  </qemu:commandline>
</domain>
"""


def console(d):
    try:
        with open(os.path.join(d, DOM + ".log"), errors="replace") as f:
            return f.read().replace("\r", "")
    except FileNotFoundError:
        return ""


def profile(d):
    """vpmu-profile through libvirt, as docs/operators.md shows it: QEMU
    (libvirt's user) writes the file; the policy (ip) allows 100 Hz."""
    out = os.path.join(d, "profiles")
    os.mkdir(out)
    os.chmod(out, 0o777)
    path = os.path.join(out, "vpmu-operator.pb.gz")
    r = subprocess.run([sys.executable, TOOL, "--connect", "qemu:///system",
                        "--domain", DOM, "--seconds", "2", "-o", path],
                       capture_output=True, text=True, timeout=300)
    m = re.match(rf"{re.escape(path)}: (\d+) samples \(0 lost\)$",
                 r.stdout.strip())
    ok(r.returncode == 0 and m and 1 <= int(m.group(1)) <= 2 * 2 * 100 + 2
       and os.path.getsize(path) > 0,
       "vpmu-profile --domain: 2 s at 100 Hz on 2 vCPUs through libvirt, "
       "written by QEMU", r.stdout + r.stderr)
    r = subprocess.run([sys.executable, TOOL, "--connect", "qemu:///system",
                        "--domain", DOM, "--mode", "stack", "--seconds", "2",
                        "-o", path], capture_output=True, text=True,
                       timeout=60)
    ok(r.returncode == 1 and "a stack profile is denied by this VM's policy "
       "(pmu-operator-profile=ip)" in r.stderr,
       "vpmu-profile --domain: the policy's refusal, exit 1",
       r.stdout + r.stderr)


def run(s):
    d = s.dir
    s.users_and_dirs()
    for f in ("vmlinuz", "initramfs.cpio.gz"):
        shutil.copy(os.path.join(IMAGE, f), d)
    shutil.copy(QEMU, d)
    up, _, err = s.start_daemons()
    ok(up, "libvirtd and virtlogd started", err)
    with open(os.path.join(d, "dom.xml"), "w") as f:
        f.write(domain_xml(d))
    r = virsh("create", os.path.join(d, "dom.xml"))
    ok(r.returncode == 0, "virsh create: a TCG domain, 2 vCPUs, pmu on, "
       "pmu-operator=on", r.stdout + r.stderr)
    exp_port, prom_port = free_port(), free_port()
    s.start("exporter", [sys.executable, EXPORTER, "--connect",
                         "qemu:///system", "--events",
                         "instructions:u,instructions", "--listen",
                         f"127.0.0.1:{exp_port}"])
    s.start("prometheus", prometheus_argv(d, prom_port,
                                          f"127.0.0.1:{exp_port}"))
    first = wait_for(lambda: prom_query(prom_port, METRIC), 120)
    early = "OPERATOR-PIN start" in console(d)
    ok(first is not None and not early, "Prometheus has vCPU 1's operator "
       f"instructions:u ({first}) before the workload starts",
       console(d)[-1500:])
    ok(prom_query(prom_port, f'vpmu_operator_consent{{domain="{DOM}"}}') == "1",
       "the domain's consent: 1")
    profile(d)
    ended = wait_for(lambda: "OPERATOR-PIN end" in console(d), 400)
    ok(ended and "OPERATOR-PIN end rc=0" in console(d),
       "the workload ran on CPU 1", console(d)[-1500:])
    time.sleep(4)               # scrapes after the end
    inc = prom_query(prom_port, f"max_over_time({METRIC}[15m]) - "
                          f"min_over_time({METRIC}[15m])")
    last = prom_query(prom_port, METRIC)
    ok(inc == str(WANT), f"Prometheus: vCPU 1's instructions:u increase is "
       f"exactly 2N + 6 = {WANT} ({inc}; last sample {last})")
    v0 = prom_query(prom_port, f'vpmu_guest_instructions_total{{domain="{DOM}",'
                         f'vcpu="0",cpl="all"}}')
    ok(v0 is not None and int(v0) > WANT, f"vCPU 0's instructions, all "
       f"CPLs, count too ({v0})")
    with urllib.request.urlopen(f"http://127.0.0.1:{exp_port}/metrics",
                                timeout=30) as r:
        text = r.read().decode()
    lint = subprocess.run(["promtool", "check", "metrics"], input=text,
                          capture_output=True, text=True)
    ok(lint.returncode == 0 and not (lint.stdout + lint.stderr).strip(),
       "promtool check metrics: clean on a live scrape",
       lint.stdout + lint.stderr)
    done = wait_for(lambda: virsh("domstate", DOM).returncode != 0, 120)
    tap = console(d)
    guest = [x for x in tap.splitlines() if x.startswith(("ok ", "not ok "))]
    ok(done and "VPMU-GUEST-EXIT 0" in tap and guest and
       all(x.startswith("ok ") for x in guest),
       "the guest's own checks pass and it ended", "\n".join(guest))


def main():
    global T
    T = Tap()
    if os.getuid() != 0:
        skip_all("needs root (libvirtd, users)")
    for t in ("libvirtd", "virtlogd", "virsh", "prometheus", "promtool"):
        if not shutil.which(t):
            skip_all(f"{t} not found (scripts/install-deps.sh qemu)")
    if not os.access(QEMU, os.X_OK):
        skip_all(f"no QEMU at {QEMU} (make qemu)")
    if not os.path.exists(os.path.join(IMAGE, "vmlinuz")):
        skip_all(f"no guest image in {IMAGE}")
    if foreign_daemons():
        skip_all("a libvirtd or virtlogd runs already: not this test's")
    s = LibvirtHost("vpmu-operator-", [DOM])
    try:
        with s:
            run(s)
    finally:
        ok(s.stopped(), "everything started is stopped")
    return T.end()


if __name__ == "__main__":
    sys.exit(main())
