#!/usr/bin/env python3
"""TAP checks of scripts/test-summary.py, make check's last lines.

Usage: test-summary-check.py PATH/TO/test-summary.py

Each case writes the two logs a `meson test` run leaves (LOGBASE.json, a
line per test; LOGBASE.junit.xml, a testcase per TAP subtest) into a
temporary directory, runs the script on them and compares its output and
exit status with what was derived by hand from the logs.
"""
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = sys.argv[1]


def junit(suites):
    """suites: {test: [(name, tag or None)]} -> a JUnit document."""
    out = ['<testsuites>']
    for test, cases in suites.items():
        out.append(f'<testsuite name="vpmu.{test}">')
        for name, tag in cases:
            inner = f'<{tag}/>' if tag else ''
            out.append(f'<testcase name="{name}">{inner}</testcase>')
        out.append('</testsuite>')
    out.append('</testsuites>')
    return '\n'.join(out)


def run(tmp, runs):
    """runs: [(run, tests, suites)] or (run, None) for a run without logs."""
    args = []
    for i, (name, tests, suites) in enumerate(runs):
        base = os.path.join(tmp, f'log{i}')
        if tests is not None:
            with open(base + '.json', 'w') as f:
                f.write(''.join(json.dumps(t) + '\n' for t in tests))
            with open(base + '.junit.xml', 'w') as f:
                f.write(junit(suites))
        args.append(f'{name}={base}')
    p = subprocess.run([sys.executable, SCRIPT] + args,
                       capture_output=True, text=True)
    return p.returncode, p.stdout.splitlines()


CASES = []


class Prefix(str):
    """An expected line of which only the start is known."""


def matches(want, got):
    return got.startswith(want) if isinstance(want, Prefix) else got == want


def case(desc, runs, status, lines):
    CASES.append((desc, runs, status, lines))


# A failing, a TODO and a passing subtest: the failure named, the TODO
# listed and neither passed nor failed.
case('a failing subtest is named, a TODO listed, not counted',
     [('plain',
       [{'name': 'nested', 'result': 'FAIL',
         'stdout': 'ok 1 - a\nnot ok 2 - b\nnot ok 3 - c # TODO slow\n1..3\n'}],
       {'nested': [('1 a', None), ('2 b', 'failure'), ('3 c', None)]})],
     1,
     ['[plain] TODO nested: not ok 3 - c # TODO slow',
      '[plain] FAIL nested: 1 of 3 subtests',
      '[plain]   not ok 2 b',
      '[plain] 1 passed, 1 failed, 0 skipped',
      '1 passed, 1 failed, 0 skipped'])

# Twelve failures: ten named, the rest counted.
many = [(f'{i} t{i}', 'failure') for i in range(1, 13)]
case('at most ten failing subtests named per test',
     [('asan', [{'name': 'm', 'result': 'FAIL', 'stdout': ''}], {'m': many})],
     1,
     ['[asan] FAIL m: 12 of 12 subtests']
     + [f'[asan]   not ok {i} t{i}' for i in range(1, 11)]
     + ['[asan]   ... and 2 more',
        '[asan] 0 passed, 12 failed, 0 skipped',
        '0 passed, 12 failed, 0 skipped'])

# A whole skip with its reason, an exit-code test that passed, a TAP test
# whose subtests passed and skipped.
case('whole skip with reason; exit-code pass; subtest skips',
     [('plain',
       [{'name': 'kvm', 'result': 'SKIP', 'stdout': '1..0 # SKIP no /dev/kvm\n'},
        {'name': 'unit-x', 'result': 'OK', 'stdout': ''},
        {'name': 'linux', 'result': 'OK', 'stdout': 'ok 1\nok 2 # SKIP n\n'}],
       {'linux': [('1', None), ('2', 'skipped')]})],
     0,
     ['[plain] SKIP kvm: no /dev/kvm',
      '[plain] 2 passed, 0 failed, 2 skipped',
      '2 passed, 0 failed, 2 skipped'])

# A TAP test that died without a failing subtest (a timeout): one failure.
case('a timeout without a failing subtest is one failure',
     [('plain', [{'name': 'qmp', 'result': 'TIMEOUT', 'stdout': 'ok 1\n'}],
       {'qmp': [('1', None)]})],
     1,
     ['[plain] TIMEOUT qmp: no failing subtest',
      '[plain] 1 passed, 1 failed, 0 skipped',
      '1 passed, 1 failed, 0 skipped'])

# A run whose logs are missing (its build failed), beside a good one.
case('a run without logs fails; the totals add up over runs',
     [('plain', [{'name': 'u', 'result': 'OK', 'stdout': ''}], {}),
      ('valgrind', None, None)],
     1,
     ['[plain] 1 passed, 0 failed, 0 skipped',
      Prefix('[valgrind] FAIL: no test log ('),   # then the file's error
      '[valgrind] 0 passed, 1 failed, 0 skipped',
      '1 passed, 1 failed, 0 skipped'])

print(f'1..{len(CASES)}')
with tempfile.TemporaryDirectory() as tmp:
    for n, (desc, runs, status, want) in enumerate(CASES, 1):
        got_status, got = run(tmp, runs)
        ok = got_status == status and len(got) == len(want) and all(
            matches(w, g) for w, g in zip(want, got))
        print(f'{"ok" if ok else "not ok"} {n} - {desc}')
        if not ok:
            print(f'# exit {got_status}, want {status}')
            for line in got:
                print(f'#   got: {line}')
            for line in want:
                print(f'#  want: {line}')
