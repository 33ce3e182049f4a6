#!/usr/bin/env python3
"""Pick a workable set of Debian package versions from apt-cache's answers.

Debian's archive moves every week: bookworm-security publishes a new
linux-perf before the signed kernel of the same upload, a kernel update
bumps the ABI in the package name (linux-image-6.1.0-56-amd64 becomes
-57-), sid drops the QEMU source a series was made on.  A build that
demands one exact revision breaks on the next update, so the project's
image builders ask this script, which ranks what apt can download now.

  debpick.py kernel [--perf VER] [--kernel PKG] [--cached DIR]
      One line "KERNEL_PKG KERNEL_VERSION PERF_VERSION" on stdout, the
      reason on stderr.  What must match, and why:
        - the kernel's upstream series (major.minor) must be linux-perf's:
          perf is the tool under test, and the guest tests (perf test's
          list, the events in sysfs, the nested image's kvm modules) are
          written against the 6.1 kernel's perf_event ABI.  Within a series
          perf talks to any kernel (the ABI is backwards compatible both
          ways), so the two need not come from the same Debian upload.
        - preferred, in order: the same Debian version as linux-perf (the
          same upload), the same upstream version, then the newest of the
          series; a signed image over its -unsigned twin (same vmlinuz).
      --perf VER / --kernel PKG pin either (VPMU_PERF_VERSION,
      VPMU_KERNEL_PKG); --cached DIR picks among DIR's .debs only, asking
      apt nothing (exit status 1 if the cache holds no workable pair).
  debpick.py source PACKAGE SERIES [--prefer VER]
      The versions of source PACKAGE in the upstream series SERIES
      ("10.2") that apt-get source can fetch, best first, one per line:
      VER first if listed, then the newest.  The caller tries them in turn
      (an index can list a file the mirror no longer has).
  -o OPTION (any command): passed to apt-cache as -o OPTION, for a
      private apt configuration (build-qemu.sh's deb-src lists).
  --apt-answers DIR (any command): read recorded apt-cache answers instead
      of running apt-cache: DIR/pkgnames (apt-cache pkgnames linux-image-),
      DIR/policy (apt-cache policy of the packages, concatenated), and
      DIR/showsrc-PACKAGE.  The unit test (tests/scripts/debpick-check.py)
      feeds it the archive's states this way.

Exit status: 0 picked, 1 nothing workable (one error line naming the
packages looked at), 2 usage.
"""
import argparse
import functools
import os
import re
import subprocess
import sys

STATUS_FILE = '/var/lib/dpkg/status'
IMAGE_RE = re.compile(r'^linux-image-(\d+\.\d+)\.\d+-\d+-amd64(-unsigned)?$')


# ---------------------------------------------------------------- versions
def _order(c):
    """dpkg's character order: ~ first, then the end, letters, the rest."""
    if c == '~':
        return -1
    if c.isdigit():
        return 0
    if c.isalpha():
        return ord(c)
    return ord(c) + 256


def _cmp_part(a, b):
    """Compare an upstream version or a revision the way dpkg does."""
    i = j = 0
    while i < len(a) or j < len(b):
        diff = 0
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _order(a[i]) if i < len(a) and not a[i].isdigit() else 0
            bc = _order(b[j]) if j < len(b) and not b[j].isdigit() else 0
            if ac != bc:
                return ac - bc
            i += 1
            j += 1
        while i < len(a) and a[i] == '0':
            i += 1
        while j < len(b) and b[j] == '0':
            j += 1
        while i < len(a) and a[i].isdigit() and j < len(b) and b[j].isdigit():
            if not diff:
                diff = ord(a[i]) - ord(b[j])
            i += 1
            j += 1
        if i < len(a) and a[i].isdigit():
            return 1
        if j < len(b) and b[j].isdigit():
            return -1
        if diff:
            return diff
    return 0


def split_version(v):
    """(epoch, upstream, revision) of a Debian version."""
    epoch, _, rest = v.rpartition(':') if ':' in v else ('0', '', v)
    upstream, _, rev = rest.rpartition('-') if '-' in rest else (rest, '', '')
    return int(epoch or 0), upstream, rev


def version_cmp(a, b):
    """<0, 0, >0 as dpkg --compare-versions orders a and b."""
    ea, ua, ra = split_version(a)
    eb, ub, rb = split_version(b)
    if ea != eb:
        return ea - eb
    return _cmp_part(ua, ub) or _cmp_part(ra, rb)


def upstream(v):
    return split_version(v)[1]


def series(v):
    """The upstream major.minor: 6.1 of 6.1.192-3, 10.2 of 1:10.2.2+ds-1."""
    m = re.match(r'(\d+)\.(\d+)', upstream(v))
    return f'{m.group(1)}.{m.group(2)}' if m else upstream(v)


# ---------------------------------------------------------------- apt answers
class Apt:
    """apt-cache, or its recorded answers (--apt-answers DIR)."""

    def __init__(self, answers=None, opts=()):
        self.answers = answers
        self.opts = [a for o in opts for a in ('-o', o)]

    def _read(self, name):
        path = os.path.join(self.answers, name)
        if not os.path.exists(path):
            return ''
        with open(path, encoding='utf-8') as f:
            return f.read()

    def _run(self, *args):
        r = subprocess.run(['apt-cache', *self.opts, *args], capture_output=True, text=True,
                           check=False)
        return r.stdout

    def pkgnames(self, prefix):
        text = self._read('pkgnames') if self.answers else self._run('pkgnames', prefix)
        return sorted({n for n in text.split() if n.startswith(prefix)})

    def policy(self, pkgs):
        """{package: (candidate or None, [downloadable versions])}."""
        if not pkgs:
            return {}
        text = self._read('policy') if self.answers else self._run('policy', *pkgs)
        out = parse_policy(text)
        return {p: out[p] for p in pkgs if p in out}

    def showsrc(self, pkg):
        text = self._read('showsrc-' + pkg) if self.answers else self._run('showsrc', pkg)
        return [m.group(1) for m in re.finditer(r'^Version: *(\S+)', text, re.M)]


def parse_policy(text):
    """apt-cache policy's text -> {package: (candidate, [versions])}.

    A version counts only if an index apt downloads from lists it: one
    that only /var/lib/dpkg/status knows (installed, gone from the
    archive) cannot be fetched.
    """
    out = {}
    pkg = cand = ver = None
    vers = []

    def done():
        if pkg is not None:
            out[pkg] = (cand if cand in vers else None, vers)

    for line in text.splitlines():
        if line and not line.startswith(' ') and line.endswith(':'):
            done()
            pkg, cand, ver, vers = line[:-1], None, None, []
            continue
        m = re.match(r'^ +Candidate: *(\S+)$', line)
        if m:
            cand = m.group(1)
            continue
        # "     VERSION PRIO" or " *** VERSION PRIO" (the installed one),
        # then its sources: "        PRIO URI SUITE ..." or "... status".
        m = re.match(r'^(?: {5}| \*\*\* )(\S+) +-?\d+$', line)
        if m:
            ver = m.group(1)
            continue
        m = re.match(r'^ {8}-?\d+ +(\S+)', line)
        if m and ver and m.group(1) != STATUS_FILE and ver not in vers:
            vers.append(ver)
    done()
    return out


def cached_debs(cache):
    """{package: [versions]} of the NAME_VERSION_ARCH.deb files in cache."""
    out = {}
    try:
        names = os.listdir(cache)
    except OSError:
        return out
    for f in names:
        m = re.match(r'^([^_]+)_([^_]+)_[^_]+\.deb$', f)
        if m:
            out.setdefault(m.group(1), []).append(m.group(2).replace('%3a', ':'))
    return out


# ---------------------------------------------------------------- kernel
class NoPick(Exception):
    pass


def kernel_rank(perf, pkg, ver):
    """Sort key, larger is better: same upload, same upstream, newest, signed."""
    return (ver == perf, upstream(ver) == upstream(perf), VersionKey(ver),
            not pkg.endswith('-unsigned'))


@functools.total_ordering
class VersionKey:
    def __init__(self, v):
        self.v = v

    def __lt__(self, other):
        return version_cmp(self.v, other.v) < 0

    def __eq__(self, other):
        return version_cmp(self.v, other.v) == 0


def pick_kernel(avail, perf_cand=None, perf_pin=None, kernel_pin=None):
    """avail: {package: [versions]} for linux-perf and the kernel images;
    perf_cand: apt's candidate of linux-perf (else its newest version).
    Returns (kernel package, kernel version, perf version, reason)."""
    perf_vers = avail.get('linux-perf', [])
    if perf_pin:
        if perf_pin not in perf_vers:
            raise NoPick(f'linux-perf {perf_pin} (VPMU_PERF_VERSION) cannot be '
                         f'downloaded; available: {", ".join(perf_vers) or "none"}')
        perf = perf_pin
    else:
        perf = perf_cand
        if not perf and perf_vers:
            perf = max(perf_vers, key=VersionKey)
    if not perf:
        raise NoPick('linux-perf has no downloadable version in the apt lists '
                     '(apt-get update?)')
    want = series(perf)
    seen, fits = [], []
    for pkg, vers in sorted(avail.items()):
        if not IMAGE_RE.match(pkg):
            continue
        if kernel_pin and pkg != kernel_pin:
            continue
        for v in vers:
            seen.append(f'{pkg} {v}')
            if series(v) == want:
                fits.append((kernel_rank(perf, pkg, v), pkg, v))
    if not fits:
        looked = '; '.join(seen) if seen else 'none listed'
        what = kernel_pin or 'linux-image-*-amd64(-unsigned)'
        raise NoPick(f'no {what} of the {want} series for linux-perf {perf} '
                     f'(linux-perf and the kernel must be of one upstream '
                     f'series); kernel images looked at: {looked}')
    rank, pkg, ver = max(fits, key=lambda f: f[0])
    if rank[0]:
        why = 'the same Debian upload as linux-perf'
    elif rank[1]:
        why = f'the same upstream version ({upstream(perf)}) as linux-perf'
    else:
        why = f'the newest {want} kernel (none of linux-perf\'s upstream {upstream(perf)})'
    return pkg, ver, perf, why


def avail_from_apt(apt, kernel_pin):
    names = [n for n in apt.pkgnames('linux-image-') if IMAGE_RE.match(n)]
    if kernel_pin:
        names = [kernel_pin]
    pol = apt.policy(['linux-perf'] + names)
    avail = {p: vers for p, (_, vers) in pol.items()}
    return avail, pol.get('linux-perf', (None, []))[0]


def cmd_kernel(args, apt):
    if args.cached:
        avail = {p: v for p, v in cached_debs(args.cached).items()
                 if p == 'linux-perf' or IMAGE_RE.match(p)}
        cand = None
    else:
        avail, cand = avail_from_apt(apt, args.kernel)
    pkg, ver, perf, why = pick_kernel(avail, cand, args.perf, args.kernel)
    src = f'the .deb cache {args.cached}' if args.cached else 'the apt lists'
    print(f'debpick: kernel {pkg} {ver} for linux-perf {perf}: {why} '
          f'(from {src})', file=sys.stderr)
    print(pkg, ver, perf)


# ---------------------------------------------------------------- source
def pick_source(pkg, versions, want, prefer=None):
    fits = sorted({v for v in versions if series(v) == want}, key=VersionKey,
                  reverse=True)
    if not fits:
        raise NoPick(f'no source of {pkg} in the {want} series in the apt lists '
                     f'(listed: {", ".join(versions) or "none"})')
    if prefer in fits:
        fits.remove(prefer)
        fits.insert(0, prefer)
    return fits


def cmd_source(args, apt):
    fits = pick_source(args.package, apt.showsrc(args.package), args.series,
                       args.prefer)
    print('\n'.join(fits))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--apt-answers', metavar='DIR')
    ap.add_argument('-o', dest='apt_opts', action='append', default=[],
                    metavar='OPTION', help='passed to apt-cache (a private list)')
    sub = ap.add_subparsers(dest='cmd', required=True)
    k = sub.add_parser('kernel')
    k.add_argument('--perf')
    k.add_argument('--kernel')
    k.add_argument('--cached', metavar='DIR')
    s = sub.add_parser('source')
    s.add_argument('package')
    s.add_argument('series')
    s.add_argument('--prefer')
    args = ap.parse_args(argv)
    apt = Apt(args.apt_answers, args.apt_opts)
    try:
        if args.cmd == 'kernel':
            cmd_kernel(args, apt)
        else:
            cmd_source(args, apt)
    except NoPick as e:
        print(f'debpick: error: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
