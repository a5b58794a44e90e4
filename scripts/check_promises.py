#!/usr/bin/env python3
"""The tests as the contract's index: which test files check which promise.

docs/contract.md numbers its promises ("## The promises": "1. **Exactly
once.** ..."). Every test file (tests/unit_*.c, tests/stress_*.c,
bindings/go/*_test.go) says which of them it checks, in one comment line
among its first 40 lines, in this form and no other:

    C:   * Promises: 1, 2, 4
    Go:  // Promises: 1, 2, 4

(numbers in increasing order, or `none` for a file that checks no promise:
a helper, a benchmark, a model of its own). docs/reliability.md holds the
table of each promise and its test files between the lines
`<!-- promises:begin -->` and `<!-- promises:end -->`.

Fails (exit 1, each problem on its own line) when a test file has no such
line, more than one, or a malformed one; when a file cites a promise the
contract does not have; when a promise has no test file; when the table
differs from the one the files give (the expected table is printed).

Usage: scripts/check_promises.py [--write] [ROOT]
  --write  rewrites the table in docs/reliability.md from the files (the
           other checks still run and still fail).
"""
import glob
import os
import re
import sys

HEAD_LINES = 40
LINE_RE = re.compile(r'^\s*(?:\*|//)\s*Promises:(.*)$')
LIST_RE = re.compile(r'^ (none|[1-9][0-9]*(?:, [1-9][0-9]*)*)$')
PROMISE_RE = re.compile(r'^([1-9][0-9]*)\. \*\*(.+?)\*\*')
BEGIN = '<!-- promises:begin -->'
END = '<!-- promises:end -->'
PATTERNS = ('tests/unit_*.c', 'tests/stress_*.c', 'bindings/go/*_test.go')


def contract_promises(root):
    """{number: title} from the contract's "## The promises" section."""
    path = os.path.join(root, 'docs', 'contract.md')
    promises = {}
    inside = False
    with open(path, encoding='utf-8') as f:
        for line in f:
            if line.startswith('## '):
                inside = line.strip() == '## The promises'
                continue
            m = PROMISE_RE.match(line) if inside else None
            if m:
                promises[int(m.group(1))] = m.group(2).rstrip('.')
    return promises


def test_files(root):
    files = []
    for pat in PATTERNS:
        files += glob.glob(os.path.join(root, pat))
    return sorted(os.path.relpath(f, root) for f in files)


def cited(root, rel, problems):
    """The promises rel cites (a list; [] for none), or None if it fails."""
    with open(os.path.join(root, rel), encoding='utf-8') as f:
        head = [next(f, '') for _ in range(HEAD_LINES)]
    found = [(i + 1, m.group(1)) for i, line in enumerate(head)
             for m in [LINE_RE.match(line.rstrip('\n'))] if m]
    if not found:
        problems.append('%s: no "Promises:" line in its first %d lines'
                        % (rel, HEAD_LINES))
        return None
    if len(found) > 1:
        problems.append('%s: %d "Promises:" lines (lines %s); one says it'
                        % (rel, len(found), ', '.join(str(n) for n, _ in found)))
        return None
    n, text = found[0]
    m = LIST_RE.match(text.rstrip())
    if not m:
        problems.append('%s:%d: "Promises:%s" is not "Promises: none" or '
                        '"Promises: 1, 2, ..."' % (rel, n, text))
        return None
    if m.group(1) == 'none':
        return []
    nums = [int(x) for x in m.group(1).split(', ')]
    if nums != sorted(set(nums)):
        problems.append('%s:%d: the promises are not in increasing order, '
                        'each once' % (rel, n))
        return None
    return nums


def table(promises, by_promise, none):
    rows = [BEGIN,
            '| Promise | Test files that check it |',
            '|---|---|']
    for p in sorted(promises):
        files = ', '.join('`%s`' % f for f in by_promise.get(p, []))
        rows.append('| %d. %s | %s |' % (p, promises[p], files or '(none)'))
    rows.append('| (no promise) | %s |' % ', '.join('`%s`' % f for f in none))
    rows.append(END)
    return '\n'.join(rows)


def main(argv):
    write = '--write' in argv
    args = [a for a in argv if a != '--write']
    root = args[0] if args else os.path.join(os.path.dirname(__file__), '..')
    problems = []
    promises = contract_promises(root)
    if not promises:
        problems.append('docs/contract.md: no numbered promise under '
                        '"## The promises"')
    by_promise, none = {}, []
    files = test_files(root)
    for rel in files:
        nums = cited(root, rel, problems)
        if nums is None:
            continue
        if not nums:
            none.append(rel)
        for p in nums:
            if p not in promises:
                problems.append('%s: cites promise %d, which docs/contract.md '
                                'does not have' % (rel, p))
                continue
            by_promise.setdefault(p, []).append(rel)
    for p in sorted(promises):
        if not by_promise.get(p):
            problems.append('promise %d (%s): no test file cites it'
                            % (p, promises[p]))
    want = table(promises, by_promise, none)
    rel_doc = os.path.join('docs', 'reliability.md')
    doc_path = os.path.join(root, rel_doc)
    with open(doc_path, encoding='utf-8') as f:
        doc = f.read()
    b, e = doc.find(BEGIN), doc.find(END)
    if b < 0 or e < b:
        problems.append('%s: no table between %s and %s' % (rel_doc, BEGIN, END))
    else:
        have = doc[b:e + len(END)]
        if write and have != want:
            doc = doc[:b] + want + doc[e + len(END):]
            with open(doc_path, 'w', encoding='utf-8') as f:
                f.write(doc)
            print('check_promises: rewrote the table in %s' % rel_doc)
        elif have != want:
            problems.append('%s: the promise table differs from what the '
                            'test files cite; it should read (or run '
                            'scripts/check_promises.py --write):\n%s'
                            % (rel_doc, want))
    for p in problems:
        print('check_promises: ' + p)
    if problems:
        return 1
    print('check_promises: ok (%d test files, %d promises, each promise '
          'checked by at least one file; %d files check none)'
          % (len(files), len(promises), len(none)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
