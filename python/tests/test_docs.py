# test_docs.py — every ```python block of docs/python.md runs, in order and in one namespace, from
# a temporary folder (SAMPLES names the samples folder); ```python-fipy blocks run too when FiPy
# is installed, ```python-cupy blocks where CuPy and a GPU are. Blocks tagged sh or text are not run; any other tag, a bare fence or an unclosed
# block fails, so no example can hide from the test.
import re

import pytest

from conftest import ROOT, SAMPLES

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
