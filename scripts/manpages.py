#!/usr/bin/env python3
"""Man pages for the public C API, generated from the headers' comments.

Reads include/accel/*.h and writes one section-3 page per public function
(every accel_* function the headers declare: ACCEL_API prototypes and
static inline helpers) and the overview page accel(7). A function's page
is made of the comment above its declaration (or the comment on the same
line): NAME from its first sentence, SYNOPSIS with the #include and the
prototype, DESCRIPTION from the comment and the structures the prototype
takes, RETURN VALUE from its "Returns ..." sentence, SEE ALSO the
functions it names and those under the same section banner of the
header. Declarations written one under the other share the comment above
the first when it names them (accel_blocking_end: "_end"); #define lines
between a comment and its declaration (a flag the function takes) go to
the SYNOPSIS. accel(7) holds the headers' own comments, the function list
and the status codes (ACCEL_STATUS_MAP); a page that names one of its
parts in quotes ("Ops that block") says it is in accel(7).

The pages cannot drift from the headers: they are made from them at
build time (CMake target manpages), and --check fails on a function with
no comment (tests/check_manpages.sh runs it in ctest).

Usage: manpages.py [--out DIR] [--gzip] [--check] HEADER...
  --out DIR  write DIR/man3/<function>.3 and DIR/man7/accel.7
  --gzip     also write <page>.gz beside each page (what is installed)
  --check    report every public function without a comment; exit 1 if any
"""
import argparse
import gzip
import os
import re
import sys
import time

# ---------------------------------------------------------------- parsing


class Item:
    """One piece of a header: 'blank', 'comment', 'pp' (a preprocessor
    line with its continuations), or 'code' (a statement up to its ';',
    or an inline function up to its closing brace)."""

    def __init__(self, kind, text, line, trailing=None):
        self.kind = kind
        self.text = text
        self.line = line          # 1-based first line
        self.trailing = trailing  # a comment after the code on its line
        self.func = None          # for a declaration: the function's name


def strip_comments(s):
    return re.sub(r"/\*.*?\*/", " ", s, flags=re.S)


def read_items(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    items = []
    i = 0
    n = len(lines)

    def take_until_comment_end(j, acc):
        # extend acc with lines until the last /* opened in it is closed
        while acc.count("/*") > acc.count("*/") and j < n:
            acc += "\n" + lines[j]
            j += 1
        return j, acc

    while i < n:
        line = lines[i]
        s = line.strip()
        if not s:
            items.append(Item("blank", "", i + 1))
            i += 1
        elif s.startswith("/*"):
            j, text = take_until_comment_end(i + 1, line)
            items.append(Item("comment", text, i + 1))
            i = j
        elif s.startswith("#"):
            text = line
            j = i + 1
            while text.rstrip().endswith("\\") and j < n:
                text += "\n" + lines[j]
                j += 1
            j, text = take_until_comment_end(j, text)
            items.append(Item("pp", text, i + 1))
            i = j
        elif s in ("}", "extern \"C\" {"):
            items.append(Item("other", s, i + 1))
            i += 1
        else:
            text = line
            j = i + 1
            while True:
                j, text = take_until_comment_end(j, text)
                code = strip_comments(text).strip()
                depth = code.count("{") - code.count("}")
                if depth == 0 and (code.endswith(";") or
                                   (code.endswith("}") and "{" in code)):
                    break
                if j >= n:
                    break
                text += "\n" + lines[j]
                j += 1
            it = Item("code", text, i + 1)
            last = text.split("\n")[-1]
            m = re.search(r"[;}]\s*(/\*.*\*/)\s*$", last)
            if m:
                it.trailing = m.group(1)
            code = " ".join(strip_comments(text).split())
            m = re.match(r"(?:ACCEL_API\s+|static\s+inline\s+)?"
                         r"(?!typedef\b|struct\b|enum\b)[\w\s\*]*?\b"
                         r"(accel_\w+)\s*\(", code)
            if m:
                it.func = m.group(1)
            items.append(it)
            i = j
    return items


def comment_lines(text):
    """The lines of a /* */ comment without its markers and the ' * '
    margin; the common indentation removed."""
    body = text.strip()
    body = re.sub(r"^/\*+", "", body)
    body = re.sub(r"\*+/$", "", body)
    out = []
    for ln in body.split("\n"):
        ln = re.sub(r"^\s*\* ?", "", ln) if re.match(r"^\s*\*", ln) else ln
        out.append(ln.rstrip())
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    if not out:
        return out
    # the first line follows "/*" directly: its own indentation is 0
    first = out[0].lstrip()
    rest = [ln for ln in out[1:] if ln.strip()]
    # continuation lines of a comment begun after code: drop their margin
    if rest and all(not re.match(r"^\s*\*", ln) for ln in text.split("\n")[1:]):
        ind = min(len(ln) - len(ln.lstrip()) for ln in rest)
        out = [first] + [ln[ind:] for ln in out[1:]]
    else:
        out[0] = first
    return out


class Func:
    def __init__(self, name, header, proto, doc, line, section):
        self.name = name
        self.header = header    # "accel/accel.h"
        self.proto = proto      # the declaration as one C line
        self.doc = doc          # comment text or None
        self.line = line
        self.section = section  # the header's "---- name" banner, if any
        self.group = [name]     # functions sharing the comment
        self.ret = None         # return type


def proto_lines(it):
    """The declaration as the header writes it, without ACCEL_API and
    comments, its continuation lines moved left by as much."""
    if not it.text.lstrip().startswith("ACCEL_API "):
        return [proto_of(it)]
    lines = strip_comments(it.text).rstrip().split("\n")
    cut = len("ACCEL_API ")
    out = [lines[0].strip()[cut:].rstrip()]
    for ln in lines[1:]:
        n = len(ln) - len(ln.lstrip())
        out.append(ln[min(n, cut):].rstrip())
    return out


def proto_of(it):
    code = " ".join(strip_comments(it.text).split())
    code = re.sub(r"^ACCEL_API\s+", "", code)
    if code.startswith("static inline"):
        code = code[: code.index("{")].strip() + ";"
    code = re.sub(r"\(\s+", "(", code)
    code = re.sub(r"\s+\)", ")", code)
    return code


def find_doc(items, k, macros):
    """The comment documenting the declaration items[k], or None; the
    #define lines between it and the declaration go to macros. A
    declaration right under another one shares its comment only if the
    comment names it (accel_blocking_end, "_end"): a function added
    under a documented one without a comment of its own has none."""
    it = items[k]
    if it.trailing:
        return it.trailing
    cands = []
    grouped = False
    j = k - 1
    while j >= 0:
        p = items[j]
        if p.kind == "comment":
            after = items[j + 1]
            if after.kind == "code" and after.func:
                if grouped and not names(p.text, it.func):
                    return None
                return p.text
            if after.kind == "pp":
                cands.append(p.text)
                j -= 1
                continue
            break
        if p.kind == "code" and p.func and not p.trailing:
            grouped = True
            j -= 1
            continue
        if p.kind == "pp":
            if p.text.lstrip().startswith("#define"):
                macros.insert(0, " ".join(strip_comments(p.text).split()))
            j -= 1
            continue
        break
    doc = cands[-1] if cands else None
    if doc and grouped and not names(doc, it.func):
        return None
    return doc


def names(comment, func):
    """Whether comment names func, in full or by its last part ("_end")."""
    last = func.rsplit("_", 1)[-1]
    return bool(re.search(r"\b%s\b" % func, comment)
                or re.search(r"(?<![\w])_%s\b" % last, comment))


def parse_header(path):
    items = read_items(path)
    header = "accel/" + os.path.basename(path)
    funcs = []
    section = None
    for k, it in enumerate(items):
        if it.kind == "comment":
            m = re.match(r"/\*\s*-{3,}\s*(.*?)\s*\*/$", it.text.strip())
            if m:
                section = m.group(1)
        if it.kind != "code" or not it.func:
            continue
        macros = []
        f = Func(it.func, header, proto_of(it), find_doc(items, k, macros),
                 it.line, section)
        f.macros = macros
        f.proto_lines = proto_lines(it)
        m = re.match(r"(?:static inline\s+)?(.*?)\s*\b" + f.name + r"\s*\(",
                     f.proto)
        f.ret = m.group(1).strip() if m else "int"
        funcs.append(f)
    # declarations sharing one comment form a group (accel_blocking_begin
    # and _end); each keeps its own page, naming the others.
    by_doc = {}
    for f in funcs:
        if f.doc:
            by_doc.setdefault(f.doc, []).append(f)
    for group in by_doc.values():
        names = [g.name for g in group]
        for g in group:
            g.group = names
    return items, funcs


def parse_types(items_by_header):
    """typedef'd structs and function types, with the comment above each:
    name -> (header, verbatim text)."""
    types = {}
    for header, items in items_by_header:
        for k, it in enumerate(items):
            if it.kind != "code" or it.func:
                continue
            code = " ".join(strip_comments(it.text).split())
            m = (re.match(r"typedef struct (accel_\w+) \{.*\} (accel_\w+);$", code)
                 or re.match(r"typedef [\w\s\*]*\(\*(accel_\w+)\)\(.*\);$", code))
            if not m:
                continue
            name = m.group(m.lastindex)
            text = it.text
            if k > 0 and items[k - 1].kind == "comment":
                text = items[k - 1].text + "\n" + text
            types[name] = (header, text)
    return types


def parse_statuses(path):
    """ACCEL_STATUS_MAP's rows: (name, value, message)."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    return [(n, int(v), msg) for n, v, msg in
            re.findall(r'X\((\w+),\s*(-?\d+),\s*"([^"]*)"\)', src)]


# ---------------------------------------------------------------- roff


def esc(s):
    s = s.replace("\\", "\\e")
    return s


def inline(s):
    """Running text: `x` in italics, escapes; the caller starts lines."""
    s = esc(s)
    s = re.sub(r"`([^`]+)`", r"\\fI\1\\fP", s)
    return s


def line_safe(s):
    """A text line that roff must not take as a request."""
    s = s.lstrip()
    if s.startswith((".", "'")):
        s = "\\&" + s
    return s


def prose(lines):
    """Comment lines -> roff: paragraphs, '- ' bullets, 'ACCEL_X:' tags,
    indented blocks verbatim."""
    out = []
    mode = None  # None, 'para', 'item', 'verb'
    for ln in lines:
        if not ln.strip():
            if mode == "verb":
                out.append(".fi")
                out.append(".in")
            mode = None
            continue
        ind = len(ln) - len(ln.lstrip())
        text = ln.strip()
        bullet = re.match(r"^- (.*)", text) if ind == 0 else None
        tag = re.match(r"^(ACCEL_[A-Z_]+):\s+(.*)", text) if ind == 0 else None
        if ind > 0 and mode == "item":
            out.append(line_safe(inline(text)))
            continue
        if ind > 0:
            if mode != "verb":
                out.append(".PP")
                out.append(".in +4n")
                out.append(".nf")
                mode = "verb"
            out.append("\\&" + esc(ln.rstrip()[min(ind, 2):]))
            continue
        if mode == "verb":
            out.append(".fi")
            out.append(".in")
            mode = None
        if bullet:
            out.append(".IP \\(bu 2")
            out.append(line_safe(inline(bullet.group(1))))
            mode = "item"
        elif tag:
            out.append(".TP")
            out.append(".B " + tag.group(1))
            out.append(line_safe(inline(tag.group(2))))
            mode = "item"
        else:
            if mode != "para":
                out.append(".PP")
                mode = "para"
            out.append(line_safe(inline(text)))
    if mode == "verb":
        out.append(".fi")
        out.append(".in")
    return out


def sentences(text):
    """Splits running text at '. ' (outside parentheses) before a capital
    letter or an ACCEL_ name."""
    out, cur, depth = [], "", 0
    i = 0
    while i < len(text):
        c = text[i]
        cur += c
        if c == "(":
            depth += 1
        elif c == ")":
            depth = max(0, depth - 1)
        elif c == "." and depth == 0 and re.match(r" [A-Za-z0-9`]",
                                                   text[i + 1:i + 3]) \
                and not re.search(r"\b(e\.g|i\.e)$", cur[:-1]):
            out.append(cur.strip())
            cur = ""
        i += 1
    if cur.strip():
        out.append(cur.strip())
    return out


def drop_asides(s):
    """s without its parenthesised asides (a '(' after a space, up to its
    match); call parentheses such as min(a, b) stay."""
    out, depth, skip = "", 0, 0
    for i, c in enumerate(s):
        if skip:
            skip += {"(": 1, ")": -1}.get(c, 0)
            continue
        if c == "(" and i and s[i - 1] == " ":
            skip = 1
            out = out.rstrip()
            continue
        out += c
    return out


def short_description(doc_lines):
    first = " ".join(" ".join(doc_lines).split())
    s = sentences(first)[0] if first else ""
    s = drop_asides(s).rstrip(".")
    for sep in (": ", "; "):
        if sep in s:
            s = s.split(sep)[0]
    while len(s) > 90 and ", " in s:
        s = s.rsplit(", ", 1)[0]
    if re.match(r"[A-Z][a-z]*\b(?!_)", s):
        s = s[0].lower() + s[1:]
    return s


RETURNS = re.compile(r"^Returns (ACCEL_|as |fn's |the submit's )")


def split_returns(doc_lines):
    """(description lines, return-value text or None): the sentence that
    begins "Returns ACCEL_..." or "Returns as ..." moves to RETURN VALUE
    when it stands in a plain paragraph."""
    # work on plain paragraphs only (no bullets, tags or code)
    paras, cur = [], []
    for ln in doc_lines:
        if not ln.strip():
            if cur:
                paras.append(cur)
            paras.append([""])
            cur = []
        else:
            cur.append(ln)
    if cur:
        paras.append(cur)
    ret = []
    desc = []
    for p in paras:
        structured = any(re.match(r"^(- |ACCEL_[A-Z_]+:|\s)", ln) for ln in p)
        if p == [""] or structured:
            desc.extend(p)
            continue
        keep = []
        for sen in sentences(" ".join(" ".join(p).split())):
            if RETURNS.match(sen):
                ret.append(sen)
            else:
                keep.append(sen)
        if keep:
            desc.append(" ".join(keep))
    while desc and not desc[-1].strip():
        desc.pop()
    return desc, (" ".join(ret) if ret else None)


def title_header(name, section, date, title):
    return [
        '.\\" Generated by scripts/manpages.py from the headers: do not edit.',
        '.TH %s %s %s "accel %s" "%s"' % (name.upper(), section, date,
                                        VERSION, title),
        # identifiers are long: no hyphenation, ragged right
        ".nh",
        ".ad l",
    ]


def types_used(proto, types, seen=None):
    out = []
    seen = set() if seen is None else seen
    for name in re.findall(r"\b(accel_\w+)\b", proto):
        if name in types and name not in seen:
            seen.add(name)
            out.append(name)
            # the types a structure's fields use (accel_op's fn and done)
            out.extend(types_used(types[name][1], types, seen))
    return out


# Parts of accel(7) that function comments name in quotes ("Ops that
# block"): a page says where they are.
OVERVIEW_PARTS = ("Ops that block", "Growing structs", "Thread-safety",
                  "fork()")


def point_to_overview(lines):
    pat = "|".join(re.escape(p) for p in OVERVIEW_PARTS)
    return [re.sub(r'"(%s)"( above| at the top| in accel\.h)?' % pat,
                   r'"\1" in accel(7)', ln) for ln in lines]


def function_page(f, funcs, types):
    by_name = {g.name: g for g in funcs}
    doc = point_to_overview(comment_lines(f.doc)) if f.doc else []
    desc, ret = split_returns(doc)
    out = title_header(f.name, "3", DATE, "accel Programmer's Manual")
    out += [".SH NAME", "%s \\- %s" % (", ".join(f.group),
                                        inline(short_description(doc)))]
    out += [".SH SYNOPSIS", ".nf", ".B #include <%s>" % f.header, ".PP"]
    macros = []
    for name in f.group:
        macros += [m for m in by_name[name].macros if m not in macros]
    for m in macros:
        out.append(".B \"%s\"" % esc(m).replace('"', '\\(dq'))
    if macros:
        out.append(".PP")
    for name in f.group:
        for ln in by_name[name].proto_lines:
            out.append(".B \"%s\"" % esc(ln).replace('"', '\\(dq'))
    out += [".fi", ".PP", "Link with \\fI\\-laccel\\fP "
            "(\\fIpkg\\-config \\-\\-libs accel\\fP)."]
    out += [".SH DESCRIPTION"]
    out += prose(desc) if desc else [".PP", "Undocumented."]
    used = []
    for name in f.group:
        for t in types_used(by_name[name].proto, types):
            if t not in used:
                used.append(t)
    if used:
        out += [".SS Types", ".PP",
                "As declared in \\fI<%s>\\fP:" % types[used[0]][0], ".PP",
                ".in +4n", ".nf"]
        order = sorted(used, key=lambda t: list(types).index(t))
        for k, t in enumerate(order):
            if k:
                out.append("")
            out += ["\\&" + esc(ln) for ln in types[t][1].split("\n")]
        out += [".fi", ".in"]
    if ret:
        out += [".SH RETURN VALUE", ".PP", line_safe(inline(ret))]
    if f.ret == "int" and re.search(r"\bACCEL_E[A-Z]+\b", f.doc or ""):
        if not ret:
            out += [".SH RETURN VALUE", ".PP",
                    "ACCEL_OK (0) or a negative ACCEL_E* status: DESCRIPTION "
                    "says which, and when."]
        out += [".PP", "accel_strerror(3) gives a status's message; "
                "accel(7) lists them all."]
    named = []
    for m in re.findall(r"\b(accel_\w+)\b", f.doc or ""):
        if m in by_name and m not in f.group and m not in named:
            named.append(m)
    # then the functions under the same section banner of the header
    for g in funcs:
        if (g.header == f.header and g.section == f.section and g.section
                and g.name not in f.group and g.name not in named):
            named.append(g.name)
    see = ["%s(3)" % m for m in named] + ["accel(7)"]
    out += [".SH SEE ALSO", ",\n".join(".BR %s (%s)" % tuple(
        s[:-1].split("(")) for s in see)]
    return "\n".join(out) + "\n"


def overview_page(headers, funcs, statuses, items_by_header):
    out = title_header("accel", "7", DATE, "accel Programmer's Manual")
    out += [".SH NAME",
            "accel \\- lock-free concurrent runtime for multi-tenant nodes"]
    out += [".SH SYNOPSIS", ".nf"]
    for h in headers:
        out.append(".B #include <accel/%s>" % os.path.basename(h))
    out += [".fi", ".PP", "Link with \\fI\\-laccel\\fP "
            "(\\fIpkg\\-config \\-\\-cflags \\-\\-libs accel\\fP, or "
            "CMake's \\fIfind_package(accel)\\fP and \\fIaccel::accel\\fP)."]
    for header, items in items_by_header:
        # the file's own comment, then the stand-alone comments (a blank
        # line on both sides) under their section banners
        first = next((it for it in items if it.kind != "blank"), None)
        out += [".SH DESCRIPTION" if header == "accel/accel.h"
                else '.SH "<%s>"' % header]
        if first is not None and first.kind == "comment":
            out += prose(comment_lines(first.text))
        section = None
        for k, it in enumerate(items):
            if it is first or it.kind != "comment":
                continue
            m = re.match(r"/\*\s*-{3,}\s*(.*?)\s*\*/$", it.text.strip())
            if m:
                section = m.group(1)
                continue
            before = items[k - 1].kind if k else "blank"
            after = items[k + 1].kind if k + 1 < len(items) else "blank"
            lines = comment_lines(it.text)
            if before != "blank" or after != "blank" or len(lines) < 3:
                continue
            # a short first sentence is the title ("Ops that block.")
            sens = sentences(" ".join(lines[0].split()))
            head = drop_asides(sens[0]).rstrip(".") if sens else ""
            if len(sens) > 1 and len(head.split()) <= 5:
                rest = lines[0].strip()[len(sens[0]):].strip()
                lines = ([rest] if rest else []) + lines[1:]
            else:
                head = (section or "Notes").capitalize()
            out.append('.SS "%s"' % head)
            out += prose(lines)
    out += [".SH FUNCTIONS"]
    for h in headers:
        hname = "accel/" + os.path.basename(h)
        out += [".SS \"<%s>\"" % hname]
        for f in funcs:
            if f.header == hname:
                out += [".TP", ".BR %s (3)" % f.name,
                        inline(short_description(comment_lines(f.doc)))
                        if f.doc else "(undocumented)"]
    out += [".SH STATUS CODES", ".PP",
            "Every function that can fail returns one of these "
            "(accel_strerror(3) gives the message):"]
    for name, value, msg in statuses:
        out += [".TP", ".BR ACCEL_%s \" (%d)\"" % (name, value),
                inline(msg)]
    out += [".SH SEE ALSO",
            ",\n".join(".BR %s (3)" % f.name for f in funcs)]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- main

VERSION = "0"
DATE = '""'


def main():
    global VERSION, DATE
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("headers", nargs="+")
    a = ap.parse_args()
    headers = sorted(a.headers,
                     key=lambda h: (os.path.basename(h) != "accel.h", h))
    items_by_header, funcs = [], []
    for h in headers:
        items, fs = parse_header(h)
        items_by_header.append(("accel/" + os.path.basename(h), items))
        funcs += fs
    main_h = next(h for h in headers if os.path.basename(h) == "accel.h")
    with open(main_h, encoding="utf-8") as f:
        m = re.search(r'#define ACCEL_VERSION_STRING "([^"]+)"', f.read())
        VERSION = m.group(1) if m else VERSION
    # a fixed date keeps the build reproducible (SOURCE_DATE_EPOCH wins)
    if os.environ.get("SOURCE_DATE_EPOCH"):
        DATE = time.strftime('"%Y-%m-%d"', time.gmtime(
            int(os.environ["SOURCE_DATE_EPOCH"])))
    missing = [f for f in funcs if not f.doc]
    names = [f.name for f in funcs]
    dups = sorted({n for n in names if names.count(n) > 1})
    if a.check:
        for f in missing:
            print("%s:%d: %s has no comment: write what it does, its "
                  "arguments and its returns above the declaration"
                  % (f.header, f.line, f.name))
        for n in dups:
            print("%s is declared twice" % n)
        if missing or dups or not funcs:
            if not funcs:
                print("no accel_* function found in %s" % " ".join(headers))
            return 1
        print("manpages: %d public functions, each with a comment"
              % len(funcs))
    if a.out:
        statuses = parse_statuses(main_h)
        types = parse_types(items_by_header)
        pages = {}
        for f in funcs:
            pages["man3/%s.3" % f.name] = function_page(f, funcs, types)
        pages["man7/accel.7"] = overview_page(headers, funcs, statuses,
                                              items_by_header)
        for rel, text in pages.items():
            path = os.path.join(a.out, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            data = text.encode("utf-8")
            with open(path, "wb") as f:
                f.write(data)
            if a.gzip:
                with open(path + ".gz", "wb") as f:
                    f.write(gzip.compress(data, 9, mtime=0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
