#!/usr/bin/env python3
"""TAP checks of scripts/debpick.py, which picks Debian package versions.

Usage: debpick-check.py PATH/TO/debpick.py

Each case records what apt-cache would answer in one state of the archive
(pkgnames, policy, showsrc) in a temporary directory, runs the script on
it with --apt-answers and compares its choice, exit status and error line
with the choice derived by hand from that state.
"""
import os
import subprocess
import sys
import tempfile

SCRIPT = sys.argv[1]
SEC = 'http://deb.debian.org/debian-security bookworm-security/main amd64 Packages'
MAIN = 'http://deb.debian.org/debian bookworm/main amd64 Packages'
STATUS = '/var/lib/dpkg/status'


def policy(pkg, versions, candidate=None, installed=None):
    """apt-cache policy's stanza; versions: [(version, [sources])]."""
    lines = [f'{pkg}:', f'  Installed: {installed or "(none)"}',
             f'  Candidate: {candidate or versions[0][0]}', '  Version table:']
    for ver, srcs in versions:
        mark = ' *** ' if ver == installed else '     '
        prio = 100 if srcs == [STATUS] else 500
        lines.append(f'{mark}{ver} {prio}')
        for s in srcs:
            lines.append(f'        {100 if s == STATUS else 500} {s}')
    return '\n'.join(lines) + '\n'


def image(abi, ver, src=SEC, unsigned=False):
    name = f'linux-image-{abi}-amd64' + ('-unsigned' if unsigned else '')
    return name, policy(name, [(ver, [src])])


PERF_SKEW = policy('linux-perf', [('6.1.192-3', [SEC]), ('6.1.187-1', [STATUS]),
                                  ('6.1.176-1', [MAIN])],
                   candidate='6.1.192-3', installed='6.1.187-1')


def run(state, *args):
    """state: {file: text}; returns (status, stdout, stderr)."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in state.items():
            with open(os.path.join(tmp, name), 'w', encoding='utf-8') as f:
                f.write(text)
        r = subprocess.run([sys.executable, SCRIPT, '--apt-answers', tmp, *args],
                           capture_output=True, text=True, check=False)
        return r.returncode, r.stdout.strip(), r.stderr.strip()


def kernel_state(perf, *images, extra_names=()):
    names = [n for n, _ in images] + list(extra_names)
    return {'pkgnames': '\n'.join(names + ['linux-image-amd64',
                                           'linux-image-6.1.0-56-cloud-amd64']),
            'policy': perf + ''.join(p for _, p in images)}


results = []


def check(name, got, want):
    ok = got == want
    results.append(ok)
    print(f'{"ok" if ok else "not ok"} {len(results)} - {name}')
    if not ok:
        print(f'#   got:  {got!r}\n#   want: {want!r}')


def check_kernel(name, state, want, *args):
    rc, out, err = run(state, 'kernel', *args)
    check(name, (rc, out), (0, want))
    if rc:
        print(f'#   stderr: {err}')


def check_error(name, state, args, words):
    rc, out, err = run(state, *args)
    lines = err.splitlines()
    check(name + ': exit 1, nothing on stdout', (rc, out), (1, ''))
    check(name + ': one error line naming ' + ', '.join(words),
          (len(lines), all(w in err for w in words), lines[:1] and
           lines[0].startswith('debpick: error: ')), (1, True, True))


# Today's skew (the issue): linux-perf 6.1.192-3 in bookworm-security, the
# signed kernel of that upload not yet published; its 6.1.192-2 is, and an
# older ABI's 6.1.192-1 unsigned.  Same upstream, newest revision, signed.
SKEW = kernel_state(PERF_SKEW, image('6.1.0-56', '6.1.192-2'),
                    image('6.1.0-56', '6.1.192-2', unsigned=True),
                    image('6.1.0-55', '6.1.192-1', unsigned=True),
                    image('6.1.0-50', '6.1.176-1', MAIN))
check_kernel('skew: perf 6.1.192-3, signed kernel 6.1.192-2', SKEW,
             'linux-image-6.1.0-56-amd64 6.1.192-2 6.1.192-3')
# The unsigned image of perf's own upload, under a new ABI name: taken
# over the signed one of an older revision (the same upload is the best).
SKEW_U = kernel_state(PERF_SKEW, image('6.1.0-56', '6.1.192-2'),
                      image('6.1.0-57', '6.1.192-3', unsigned=True),
                      image('6.1.0-50', '6.1.176-1', MAIN))
check_kernel('skew: the unsigned image of perf\'s upload wins', SKEW_U,
             'linux-image-6.1.0-57-amd64-unsigned 6.1.192-3 6.1.192-3')
# A newer kernel than perf: perf's upstream version first ...
NEWER = kernel_state(PERF_SKEW, image('6.1.0-58', '6.1.195-1'),
                     image('6.1.0-56', '6.1.192-2'))
check_kernel('newer kernel than perf: perf\'s upstream 6.1.192 taken', NEWER,
             'linux-image-6.1.0-56-amd64 6.1.192-2 6.1.192-3')
# ... and without it the newest of the series, not the oldest.
NEWER_ONLY = kernel_state(PERF_SKEW, image('6.1.0-58', '6.1.195-1'),
                          image('6.1.0-50', '6.1.176-1', MAIN))
check_kernel('only newer kernels: the newest of the 6.1 series', NEWER_ONLY,
             'linux-image-6.1.0-58-amd64 6.1.195-1 6.1.192-3')
# linux-perf only in -security (the installed 6.1.187-1 is in no index).
PERF_SEC = policy('linux-perf', [('6.1.192-3', [SEC]), ('6.1.187-1', [STATUS])],
                  candidate='6.1.192-3', installed='6.1.187-1')
SEC_ONLY = kernel_state(PERF_SEC, image('6.1.0-56', '6.1.192-3'),
                        image('6.1.0-50', '6.1.176-1', MAIN))
check_kernel('perf only in -security: its kernel from -security', SEC_ONLY,
             'linux-image-6.1.0-56-amd64 6.1.192-3 6.1.192-3')
# A candidate that only dpkg's status knows (installed, gone from the
# archive) cannot be downloaded: the newest listed version instead.
PERF_GONE = policy('linux-perf', [('6.1.199-1', [STATUS]), ('6.1.192-3', [SEC])],
                   candidate='6.1.199-1', installed='6.1.199-1')
check_kernel('perf candidate only installed: newest downloadable perf',
             kernel_state(PERF_GONE, image('6.1.0-56', '6.1.192-3')),
             'linux-image-6.1.0-56-amd64 6.1.192-3 6.1.192-3')
# An ABI bump: 6.1.195-1 is in linux-image-6.1.0-57-amd64, not -56-.
PERF_BUMP = policy('linux-perf', [('6.1.195-1', [SEC]), ('6.1.176-1', [MAIN])])
BUMP = kernel_state(PERF_BUMP, image('6.1.0-56', '6.1.192-2'),
                    image('6.1.0-57', '6.1.195-1'), image('6.1.0-50', '6.1.176-1', MAIN))
check_kernel('ABI bump: the package name follows the version', BUMP,
             'linux-image-6.1.0-57-amd64 6.1.195-1 6.1.195-1')
# Pins (VPMU_PERF_VERSION, VPMU_KERNEL_PKG).
check_kernel('--perf 6.1.176-1: the kernel of that upload', BUMP,
             'linux-image-6.1.0-50-amd64 6.1.176-1 6.1.176-1', '--perf', '6.1.176-1')
check_kernel('--kernel pins the package', BUMP,
             'linux-image-6.1.0-56-amd64 6.1.192-2 6.1.195-1',
             '--kernel', 'linux-image-6.1.0-56-amd64')
check_error('--perf of a version no index has', BUMP,
            ['kernel', '--perf', '6.1.187-1'], ['linux-perf 6.1.187-1', '6.1.195-1'])
# Nothing workable: only a 6.12 kernel for a 6.1 perf.
NONE = kernel_state(PERF_SKEW, ('linux-image-6.12.0-1-amd64',
                                policy('linux-image-6.12.0-1-amd64',
                                       [('6.12.5-1', [MAIN])])))
check_error('no kernel of perf\'s series', NONE, ['kernel'],
            ['linux-perf 6.1.192-3', '6.1 series', 'linux-image-6.12.0-1-amd64 6.12.5-1'])
check_error('no linux-perf at all',
            kernel_state('', image('6.1.0-56', '6.1.192-2')), ['kernel'], ['linux-perf'])


# The .deb cache (--cached DIR): no apt; a pair of one series, else exit 1.
def cached(names):
    with tempfile.TemporaryDirectory() as tmp:
        for n in names:
            open(os.path.join(tmp, n), 'w').close()
        r = subprocess.run([sys.executable, SCRIPT, 'kernel', '--cached', tmp],
                           capture_output=True, text=True, check=False)
        return r.returncode, r.stdout.strip()


check('cached: perf 6.1.192-3 and kernel 6.1.192-2 in the cache',
      cached(['linux-perf_6.1.192-3_amd64.deb', 'linux-image-6.1.0-56-amd64_6.1.192-2_amd64.deb',
              'linux-image-6.1.0-50-amd64_6.1.176-1_amd64.deb', 'busybox-static_1%3a1.35.0-4+b3_amd64.deb']),
      (0, 'linux-image-6.1.0-56-amd64 6.1.192-2 6.1.192-3'))
check('cached: no kernel in the cache: exit 1',
      cached(['linux-perf_6.1.192-3_amd64.deb']), (1, ''))


# QEMU's source (build-qemu.sh): the series' version first, else the
# newest of the 10.2 series; never another series.
def showsrc(*versions):
    return {'showsrc-qemu': ''.join(f'Package: qemu\nVersion: {v}\n\n' for v in versions)}


def check_source(name, versions, want):
    rc, out, _ = run(showsrc(*versions), 'source', 'qemu', '10.2', '--prefer', '1:10.2.2+ds-1')
    check(name, (rc, out.split('\n')), (0, want))


check_source('source: the series\' version listed: first',
             ['1:10.2.2+ds-1', '1:11.1.2+ds-3', '1:10.2.3+ds-1', '1:10.0.13+ds-0+deb13u1'],
             ['1:10.2.2+ds-1', '1:10.2.3+ds-1'])
check_source('source: gone: the newest 10.2, then the older',
             ['1:11.1.3+ds-1', '1:10.2.2+ds-2', '1:10.2.10+ds-1', '1:10.2.3+ds-1'],
             ['1:10.2.10+ds-1', '1:10.2.3+ds-1', '1:10.2.2+ds-2'])
check_error('source: no 10.2 at all', showsrc('1:11.1.3+ds-1', '1:10.0.13+ds-0+deb13u1'),
            ['source', 'qemu', '10.2'], ['qemu', '10.2 series', '1:11.1.3+ds-1'])

print(f'1..{len(results)}')
sys.exit(0 if all(results) else 1)
