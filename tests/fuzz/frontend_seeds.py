#!/usr/bin/env python3
"""frontend_seeds.py SOURCE_DIR OUT_DIR — writes the seed corpus of fuzz_frontend.

Seeds (one problem text per file, named by the SHA-1 of its bytes, so reruns add nothing new):
  - every samples/*.pde;
  - every ```pde and ```pde-error block of docs/language.md;
  - every C string literal of tests/*.c (adjacent literals joined, as the compiler joins them)
    that names a statement of the language (mesh, field, eq, ...);
  - every sample followed by a redefinition (fuzz_frontend.c: the lines after "#redefine"):
    each of its eqs with the right-hand side doubled.
"""
import hashlib
import pathlib
import re
import sys

STATEMENT = re.compile(r"\b(mesh|field|eq|param|const|func|flux|boundary|periodic|time|output)\b")
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
BETWEEN_LITERALS = re.compile(r"^(\s|//[^\n]*\n|/\*.*?\*/)*$", re.S)
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'", "a": "\a",
           "b": "\b", "f": "\f", "v": "\v", "?": "?"}


def unescape(body):
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 == len(body):
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        if e == "x":
            m = re.match(r"[0-9a-fA-F]+", body[i + 2:])
            out.append(chr(int(m.group(0), 16) & 0xFF) if m else "x")
            i += 2 + (len(m.group(0)) if m else 0)
        else:
            out.append(ESCAPES.get(e, e))
            i += 2
    return "".join(out)


def c_strings(text):
    """The C source's string literals, adjacent ones joined."""
    joined, end = None, None
    for m in LITERAL.finditer(text):
        # skip character literals such as '"' by requiring the quote not to follow a single quote
        if m.start() > 0 and text[m.start() - 1] == "'":
            continue
        piece = unescape(m.group(1))
        if joined is not None and BETWEEN_LITERALS.match(text[end:m.start()]):
            joined += piece
        else:
            if joined is not None:
                yield joined
            joined = piece
        end = m.end()
    if joined is not None:
        yield joined


def doc_blocks(text):
    for m in re.finditer(r"^```(pde|pde-error)[^\n]*\n(.*?)^```", text, re.S | re.M):
        yield m.group(2)


def redefinitions(sample):
    """The sample, then "#redefine" and its eqs with their right-hand sides doubled."""
    eqs = [m.groups() for m in re.finditer(r"^(eq\s+[^=\n]*=)([^\n]*)$", sample, re.M)]
    if not eqs:
        return
    base = sample if sample.endswith("\n") else sample + "\n"
    yield base + "#redefine\n" + "".join(f"{lhs} 2*({rhs.strip()})\n" for lhs, rhs in eqs)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: frontend_seeds.py SOURCE_DIR OUT_DIR")
    src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    samples = [p.read_text() for p in sorted(src.glob("samples/*.pde"))]
    seeds = [s.encode() for s in samples]
    seeds += [r.encode() for s in samples for r in redefinitions(s)]
    seeds += [b.encode() for b in doc_blocks((src / "docs/language.md").read_text())]
    for test in sorted(src.glob("tests/*.c")):
        seeds += [s.encode("latin-1") for s in c_strings(test.read_text(errors="replace")) if STATEMENT.search(s)]
    names = set()
    for seed in seeds:
        name = hashlib.sha1(seed).hexdigest()
        names.add(name)
        (out / name).write_bytes(seed)
    print(f"frontend_seeds.py: {len(names)} seeds in {out}")


if __name__ == "__main__":
    main()
