#!/usr/bin/env python3
"""The file-level call graph of runtime/ and two rules over it.

1. No circle: for each runtime/*.c, the accel__ functions it calls and the
   file that defines them (a static inline function of a header belongs to
   the header's component: foo.h counts as foo.c) give an arrow from the
   caller's file to the definer's; a circle of arrows fails the check,
   printed as a chain of files with one function per arrow.
2. Prefix = file (listed, and failing with --strict-names): a function
   accel__X_* that X.c or X.h exists for is defined in X.c (or X.h).

Definitions are found by a regex over the sources (a line that starts a
function definition), calls by identifier match; a name that only a
function pointer or a macro carries is not an arrow (that is how a lower
layer reaches up: through a hook it was handed).

Usage: scripts/layers.py [--strict-names] [runtime-dir]
"""
import os
import re
import sys

IDENT_RE = re.compile(r'\baccel__\w+\b')


def strip(text):
    """Comments and string literals out, lines kept."""
    out = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    out = re.sub(r'//[^\n]*', '', out)
    out = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', out)
    return out


def definitions(text):
    """accel__ names defined (with a body) in text, and the spans of bodies."""
    names = {}
    lines = text.split('\n')
    depth = 0
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if depth == 0:
            m = re.match(r'^(?!\s)(?!#)(?!typedef)(?!struct\s+\w+\s*\{)'
                         r'[^=;(]*?\b(accel__\w+)\s*\(', line)
            if m:
                # the signature runs until ';' (a declaration) or '{' (a body)
                j = i
                sig = line
                while ';' not in sig and '{' not in sig and j + 1 < n:
                    j += 1
                    sig += '\n' + lines[j]
                brace = sig.find('{')
                semi = sig.find(';')
                if brace >= 0 and (semi < 0 or brace < semi):
                    names.setdefault(m.group(1), i)
        depth += line.count('{') - line.count('}')
        i += 1
    return names


def component(fname):
    base = os.path.basename(fname)
    return base[:-2] if base.endswith(('.c', '.h')) else base


def main(argv):
    strict = '--strict-names' in argv
    args = [a for a in argv if not a.startswith('--')]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                              '..', 'runtime')
    files = sorted(f for f in os.listdir(root) if f.endswith(('.c', '.h')))
    texts = {}
    for f in files:
        with open(os.path.join(root, f), encoding='utf-8') as fh:
            texts[f] = strip(fh.read())
    comps = sorted({component(f) for f in files})
    definer = {}   # function -> component
    defined_in = {}
    for f in files:
        for name in definitions(texts[f]):
            c = component(f)
            if name in definer and definer[name] != c:
                # defined twice (e.g. a fallback); keep the .c one
                if f.endswith('.h'):
                    continue
            definer[name] = c
            defined_in[name] = f
    # arrows: component -> component, with one example function
    edges = {c: {} for c in comps}
    for f in files:
        c = component(f)
        for name in set(IDENT_RE.findall(texts[f])):
            d = definer.get(name)
            if d is None or d == c:
                continue
            # a call (name followed by '('), not only a pointer taken
            if not re.search(r'\b' + re.escape(name) + r'\s*\(', texts[f]):
                continue
            edges[c].setdefault(d, name)
    rc = 0
    cycle = find_cycle(edges)
    if cycle:
        rc = 1
        print('layers: runtime/ files call in a circle:')
        chain = []
        for a, b in zip(cycle, cycle[1:]):
            chain.append('%s -[%s]-> ' % (a, edges[a][b]))
        print('  ' + ''.join(chain) + cycle[-1])
        print('  (all files on some circle: %s)' % ' '.join(sorted(on_circle(edges))))
    else:
        print('layers: no call circle among %d components of runtime/' % len(comps))
    # naming: accel__X_* defined in X.c / X.h where such a file exists
    bad = []
    for name, c in sorted(definer.items()):
        rest = name[len('accel__'):]
        owner = None
        for k in sorted(comps, key=len, reverse=True):
            if rest == k or rest.startswith(k + '_'):
                owner = k
                break
        if owner is not None and owner != c:
            bad.append('  %s is defined in %s, not %s.c' % (name, defined_in[name], owner))
    if bad:
        print('layers: %d functions whose prefix names another file:' % len(bad))
        print('\n'.join(bad))
        if strict:
            rc = 1
    return rc


def on_circle(edges):
    """The nodes that reach themselves."""
    out = set()
    for n in edges:
        seen, todo = set(), list(edges[n])
        while todo:
            m = todo.pop()
            if m == n:
                out.add(n)
                break
            if m in seen or m not in edges:
                continue
            seen.add(m)
            todo.extend(edges[m])
    return out


def find_cycle(edges):
    """One circle of the graph as a list of nodes (first == last), or None."""
    color = {n: 0 for n in edges}
    stack = []

    def visit(n):
        color[n] = 1
        stack.append(n)
        for m in sorted(edges[n]):
            if color.get(m, 0) == 1:
                return stack[stack.index(m):] + [m]
            if color.get(m, 0) == 0:
                r = visit(m)
                if r:
                    return r
        stack.pop()
        color[n] = 2
        return None

    for n in sorted(edges):
        if color[n] == 0:
            r = visit(n)
            if r:
                return r
    return None


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
