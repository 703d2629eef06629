# test_docs.py — every ```python block of docs/python.md runs, in order and in one namespace, from
# a temporary folder (SAMPLES names the samples folder); ```python-fipy blocks run too when FiPy
# is installed, ```python-cupy blocks where CuPy and a GPU are. Blocks tagged sh or text are not run; any other tag, a bare fence or an unclosed
# block fails, so no example can hide from the test.
import inspect
import re
import subprocess

import pytest

import pdejit
from conftest import BINARY, ROOT, SAMPLES

DOC = ROOT / "docs" / "python.md"
RUN_TAGS = {"python", "python-fipy"}
KNOWN_TAGS = RUN_TAGS | {"python-cupy", "sh", "text"}


def blocks():
    lines = DOC.read_text().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(.*)$", lines[i])
        if m:
            tag, start = m.group(1).strip(), i + 1
            assert tag in KNOWN_TAGS, "%s:%d: fence with tag %r" % (DOC, i + 1, tag)
            i += 1
            while i < len(lines) and lines[i] != "```":
                i += 1
            assert i < len(lines), "%s:%d: unclosed block" % (DOC, start)
            out.append((tag, start, "\n".join(lines[start:i]) + "\n"))
        i += 1
    return out


def run_blocks(tags):
    namespace = {"SAMPLES": SAMPLES, "__name__": "docs_python"}
    for tag, line, code in blocks():
        if tag in tags:
            # compiled with the page's name and line numbers, so a failure points at the page
            exec(compile("\n" * (line - 1) + code, str(DOC), "exec"), namespace)


def test_doc_examples_run(in_tmp):
    assert sum(tag == "python" for tag, _, _ in blocks()) >= 5
    run_blocks({"python"})


def test_doc_fipy_examples_run(in_tmp):
    pytest.importorskip("fipy")
    assert any(tag == "python-fipy" for tag, _, _ in blocks())
    run_blocks(RUN_TAGS)  # in page order: the FiPy blocks use names the others define


def test_doc_cupy_examples_run(in_tmp):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed: the GPU examples run where it is")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("CuPy finds no GPU")
    except cupy.cuda.runtime.CUDARuntimeError as e:
        pytest.skip("CuPy finds no GPU: %s" % e)
    assert any(tag == "python-cupy" for tag, _, _ in blocks())
    run_blocks({"python", "python-cupy"})


def run_options_table():
    """The rows of the table of `pdejit run`'s options in docs/python.md: {option: python cell}."""
    text = DOC.read_text()
    start = text.index("| `pdejit run` | Python |")
    rows = {}
    for line in text[start:].split("\n")[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        for option in re.findall(r"(?:^|, )`?(-[-a-z]+)", cells[0]):
            rows[option] = cells[1]
    return rows


def test_every_run_option_has_its_python_spelling():
    """Every option `pdejit help run` lists is a row of the table, and the table names no other;
    every `f(keyword=` a row names is a keyword of that function, every `sim.name(` a method; a row
    without a Python spelling says "command only:" and why."""
    help_text = subprocess.run([BINARY, "help", "run"], capture_output=True, text=True, check=True).stdout
    options = set()
    for line in help_text.split("options:\n", 1)[1].split("\n"):
        m = re.match(r"^  (?:(-[a-z]), )?(--[a-z-]+)", line)
        if m:
            options.update(o for o in m.groups() if o)
    rows = run_options_table()
    assert len(options) > 20
    assert set(rows) == options, "in the help, not the table: %s; in the table, not the help: %s" % (
        sorted(options - set(rows)), sorted(set(rows) - options))
    functions = {"compile": pdejit.compile, "simulate": pdejit.Problem.simulate, "run": pdejit.Simulation.run,
                 "advance": pdejit.Simulation.advance}
    sim = pdejit.compile("mesh grid(nx = 4)\nfield u = 1\n").simulate(backend="interp")
    for option, python in rows.items():
        if python.startswith("command only:"):
            assert len(python) > 40, "%s: say why it is the command's only" % option
            continue
        spelled = False
        for function, args in re.findall(r"(\w+)\(([^()]*)\)", python):
            for keyword in re.findall(r"(\w+)=", args):
                assert keyword in inspect.signature(functions[function]).parameters, "%s: %s() takes no %s" % (
                    option, function, keyword)
                spelled = True
        for method in re.findall(r"\bsim\.(\w+)", python):
            assert hasattr(sim, method), "%s: a Simulation has no %s" % (option, method)
            spelled = True
        spelled = spelled or "help(pdejit.Simulation.run)" in python
        assert spelled, "%s: the row names no Python spelling: %s" % (option, python)
