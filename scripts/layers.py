#!/usr/bin/env python3
"""The file-level graph of runtime/ (calls and #includes) and two rules over it.

1. No circle: for each runtime/*.c and *.h, the accel__ functions it calls
   and the file that defines them (a static inline function of a header
   belongs to the header's component: foo.h counts as foo.c) give an arrow
   from the caller's component to the definer's; each `#include "bar.h"`
   of a runtime header gives an arrow to bar's component. A circle of call
   arrows fails the check, printed as a chain of files with one function
   per arrow; an #include that closes a circle (a file including the
   header of a component that calls or includes its way back to it: an
   upward include) fails it too, printed with the way back. A header
   without a .c of its name (foo_types.h, ring.h) is a component of its
   own, as low as what it includes and calls: the structures that lower
   files read live in such headers, apart from their owner's functions.
2. Prefix = file (listed, and failing with --strict-names): a function
   accel__X_* that X.c or X.h exists for is defined in X.c (or X.h).

Definitions are found by a regex over the sources (a line that starts a
function definition), calls by identifier match inside function bodies and
macros (a prototype is no call); a name that only a function pointer
carries is not an arrow (that is how a lower layer reaches up: through a
hook it was handed).

Usage: scripts/layers.py [--strict-names] [--edges] [runtime-dir]
  --edges  also prints every arrow: caller -> callee (one function, or the
           #include)
"""
import os
import re
import sys

IDENT_RE = re.compile(r'\baccel__\w+\b')
INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def strip_comments(text):
    """Comments out, lines kept."""
    out = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    return re.sub(r'//[^\n]*', '', out)


def strip(text):
    """Comments and string literals out, lines kept."""
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', strip_comments(text))


def code_only(text):
    """What can call: function bodies (text inside braces) and preprocessor
    lines (macros); the rest at file scope (prototypes, typedefs) blanked."""
    out = []
    depth = 0
    macro = False  # inside a preprocessor line and its continuations
    for line in text.split('\n'):
        if depth == 0 and (macro or line.lstrip().startswith('#')):
            out.append(line)
            macro = line.rstrip().endswith('\\')
            continue
        if depth == 0 and re.match(r'\s*extern\s*""\s*\{', line):
            out.append('')  # extern "C" { opens no body (its } stays at 0)
            continue
        kept = []
        for ch in line:
            if ch == '{':
                depth += 1
            elif ch == '}':
                depth = max(depth - 1, 0)
            kept.append(ch if depth > 0 or ch in '{}' else ' ')
        out.append(''.join(kept))
    return '\n'.join(out)


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
    show_edges = '--edges' in argv
    args = [a for a in argv if not a.startswith('--')]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                              '..', 'runtime')
    files = sorted(f for f in os.listdir(root) if f.endswith(('.c', '.h')))
    texts = {}
    includes = {}  # file -> runtime headers it includes
    for f in files:
        with open(os.path.join(root, f), encoding='utf-8') as fh:
            raw = fh.read()
        includes[f] = [h for h in INCLUDE_RE.findall(strip_comments(raw)) if h in files]
        texts[f] = strip(raw)
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
    # call arrows: component -> component, with one example function
    edges = {c: {} for c in comps}
    for f in files:
        c = component(f)
        code = code_only(texts[f])
        for name in sorted(set(IDENT_RE.findall(code))):
            d = definer.get(name)
            if d is None or d == c:
                continue
            # a call (name followed by '('), not only a pointer taken
            if not re.search(r'\b' + re.escape(name) + r'\s*\(', code):
                continue
            edges[c].setdefault(d, name)
    # include arrows: component -> component, with one example #include
    incl = {c: {} for c in comps}
    for f in files:
        c = component(f)
        for h in includes[f]:
            d = component(h)
            if d != c:
                incl[c].setdefault(d, '%s includes %s' % (f, h))
    if show_edges:
        for c in comps:
            for d in sorted(set(edges[c]) | set(incl[c])):
                how = []
                if d in edges[c]:
                    how.append(edges[c][d])
                if d in incl[c]:
                    how.append('#include')
                print('  %s -> %s (%s)' % (c, d, ', '.join(how)))
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
        # calls and includes together: an include that closes a circle
        both = {c: dict(edges[c]) for c in comps}
        for c in comps:
            for d, how in incl[c].items():
                both[c].setdefault(d, '#include')
        # Each #include that closes a circle, with the way back. Shown
        # first (and alone, if any): those whose way back is calls only, an
        # include against the call order; the others close a circle only
        # through another include.
        up, against = [], []
        for f in files:
            c = component(f)
            for h in includes[f]:
                d = component(h)
                if d == c:
                    continue
                back = find_path(both, d, c)
                if not back:
                    continue
                by_calls = find_path(edges, d, c)
                back = by_calls or back
                way = ''.join('%s -[%s]-> ' % (a, both[a][b] if not by_calls
                                               else edges[a][b])
                              for a, b in zip(back, back[1:]))
                line = ('  %s includes %s, whose %s reaches back: %s%s'
                        % (f, h, d, way, back[-1]))
                (against if by_calls else up).append(line)
        if against or up:
            rc = 1
            shown = against or up
            print('layers: %d #include%s up (into a component that calls%s'
                  ' its way back):' % (len(shown), ' goes' if len(shown) == 1 else 's go',
                                      '' if against else ' or includes'))
            print('\n'.join(shown))
        else:
            print('layers: no circle of calls and #includes among %d components'
                  ' of runtime/' % len(comps))
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


def find_path(edges, src, dst):
    """The shortest chain of arrows from src to dst (a list of nodes), or None."""
    prev = {src: None}
    todo = [src]
    while todo:
        nxt = []
        for n in todo:
            for m in sorted(edges.get(n, ())):
                if m in prev:
                    continue
                prev[m] = n
                if m == dst:
                    path = [m]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return path[::-1]
                nxt.append(m)
        todo = nxt
    return None


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
