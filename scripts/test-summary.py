#!/usr/bin/env python3
"""make check's last line, from the logs `meson test` wrote.

Usage: test-summary.py RUN=LOGBASE...

LOGBASE is meson-logs/<name> of one `meson test` run (LOGBASE.json has a
line per test, LOGBASE.junit.xml a testcase per TAP subtest).  What meson
counted is counted here:

  - a TAP test: each subtest passes, fails or skips; "not ok ... # TODO"
    (meson's EXPECTEDFAIL) is neither, and is listed.  If the process
    failed (exit status, timeout, TAP error) without a failing subtest,
    one more failure;
  - any other test, or a TAP test that skipped whole ("1..0 # SKIP why"):
    one, with the reason of a whole skip listed;
  - each failing subtest is named (the first ten of a test);
  - a run without its logs (its build failed): one failure; so is a
    step given without LOGBASE ("make-qemu="), which failed.

Prints a line per run, then "N passed, N failed, N skipped" over all of
them.  Exit status 1 if anything failed.
"""
import json
import re
import sys
import xml.etree.ElementTree as ET

TODO = re.compile(r'^not ok\b.*#\s*TODO\b.*$', re.I | re.M)
PLAN_SKIP = re.compile(r'^1\.\.0\s*#\s*skip\S*\s*(.*)$', re.I | re.M)
GOOD = {'OK', 'EXPECTEDFAIL'}
# meson 1.0 writes a test's output into the JUnit file as it is, and
# control characters (a guest console's escapes) are not XML.
NOT_XML = re.compile(rb'[\x00-\x08\x0b\x0c\x0e-\x1f]')
BAD = {'failure', 'error'}
MAX_NAMED = 10


def count_run(run, base):
    """Passed, failed, skipped of one run; prints what needs a look."""
    if not base:
        print(f'[{run}] FAIL (see above)')
        return 0, 1, 0
    try:
        tests = [json.loads(line) for line in open(base + '.json')]
        with open(base + '.junit.xml', 'rb') as x:
            junit = ET.fromstring(NOT_XML.sub(b'', x.read()))
        suites = {s.get('name'): s for s in junit.iter('testsuite')}
    except (OSError, ValueError, ET.ParseError) as e:
        print(f'[{run}] FAIL: no test log ({e}): meson test did not run')
        return 0, 1, 0
    p = f = k = 0
    for t in tests:
        name, res, out = t['name'], t['result'], t.get('stdout') or ''
        suite = suites.get('vpmu.' + name)
        if suite is None:           # one result: exit-code test, whole skip
            if res in GOOD:
                p += 1
            elif res == 'SKIP':
                k += 1
                why = PLAN_SKIP.search(out) or re.search(r'^SKIP:?\s*(.*)$', out, re.M)
                print(f'[{run}] SKIP {name}: {why.group(1) if why else "(no reason)"}')
            else:
                f += 1
                print(f'[{run}] {res} {name}')
            continue
        cases = [[c.tag for c in case] for case in suite.iter('testcase')]
        names = [case.get('name') for case in suite.iter('testcase')
                 if BAD & {c.tag for c in case}]
        todo = TODO.findall(out)
        bad = len(names)
        k += sum(1 for c in cases if 'skipped' in c)
        p += sum(1 for c in cases if not ({'skipped'} | BAD) & set(c)) - len(todo)
        f += bad
        for line in todo:
            print(f'[{run}] TODO {name}: {line}')
        if res not in GOOD | {'SKIP', 'FAIL'} or (res == 'FAIL' and not bad):
            if not bad:
                f += 1
            print(f'[{run}] {res} {name}' + ('' if bad else ': no failing subtest'))
        elif bad:
            print(f'[{run}] FAIL {name}: {bad} of {len(cases)} subtests')
        # Which ones: CI keeps only this summary, not the logs.
        for n in names[:MAX_NAMED]:
            print(f'[{run}]   not ok {n}')
        if len(names) > MAX_NAMED:
            print(f'[{run}]   ... and {len(names) - MAX_NAMED} more')
    return p, f, k


def main(argv):
    total = [0, 0, 0]
    for arg in argv:
        run, _, base = arg.partition('=')
        p, f, k = count_run(run, base)
        print(f'[{run}] {p} passed, {f} failed, {k} skipped')
        total = [a + b for a, b in zip(total, (p, f, k))]
    print('%d passed, %d failed, %d skipped' % tuple(total))
    return 1 if total[1] else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
