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


# docs/tutorial.md: every block runs, in order, in one temporary folder (and one Python namespace):
#   ```pde NAME    the text is written to the file NAME
#   ```sh          each "$ COMMAND" line runs (bash, the folder's PATH starting with the tested
#                  pdejit's folder, the test's kernel cache); the lines after it are its output
#                  (stdout and stderr), compared line by line with every number read as "#" (times
#                  and rates vary), "..." within a line standing for any text and a line "..." for
#                  any lines; the lines a run prints only when it lasts long (progress, and the
#                  summary after 3 s) are left out unless the block shows one. A command exits 0,
#                  or the status its comment names ("# exit 2").
#   ```sh-gpu      as sh, where a GPU is (`pdejit run --backend cuda` can start): skipped elsewhere
#   ```python      run in the namespace, in the folder
#   ```text        not run: the install commands, and what a reader types in an editor
TUTORIAL = ROOT / "docs" / "tutorial.md"
TUTORIAL_TAGS = {"sh", "sh-gpu", "python", "text"}
NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
TIMED = re.compile(r"^pdejit: (?:t = \S+ of \S+ \(|\d+ steps to t = )")  # progress, a run's summary


def tutorial_blocks():
    lines = TUTORIAL.read_text().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(.*)$", lines[i])
        if m:
            tag, start = m.group(1).strip(), i + 1
            assert tag.split(" ")[0] in TUTORIAL_TAGS | {"pde"}, "%s:%d: fence with tag %r" % (TUTORIAL, start, tag)
            assert tag.split(" ")[0] != "pde" or len(tag.split(" ")) == 2, "%s:%d: ```pde NAME" % (TUTORIAL, start)
            i += 1
            while i < len(lines) and lines[i] != "```":
                i += 1
            assert i < len(lines), "%s:%d: unclosed block" % (TUTORIAL, start)
            out.append((tag, start, lines[start:i]))
        i += 1
    return out


def output_matches(expected, actual, exact=False):
    """expected's lines against actual's, numbers as '#', '...' in a line any text, a line '...'
    any lines. exact: numbers as '#' only in pdejit's own lines ("pdejit: ...": times, rates), the
    others (data) digit for digit."""
    def numbers(line):
        return NUMBER.sub("#", line) if not exact or line.startswith("pdejit: ") else line

    def pattern(line):
        parts = numbers(line).split("...")
        return re.compile(".*".join(re.escape(p) for p in parts) + r"\Z")

    def match(e, a):
        if not e:
            return not a
        if e[0] == "...":
            return any(match(e[1:], a[k:]) for k in range(len(a) + 1))
        return bool(a) and bool(pattern(e[0]).match(numbers(a[0]))) and match(e[1:], a[1:])
    return match(expected, actual)


def gpu_here():
    probe = "mesh grid(nx = 4)\nfield u = 1\neq dt(u) = 0\ntime dt = 1, steps = 1\n"
    with open("gpu_probe.pde", "w") as f:
        f.write(probe)
    return subprocess.run([BINARY, "run", "gpu_probe.pde", "--backend", "cuda", "--out", "none", "--quiet"],
                          capture_output=True).returncode == 0


def run_sh_block(line, lines, env, page=TUTORIAL, exact=False):
    """Runs the commands of a sh block of `page` as one bash script (a command may start a job
    that a later one waits for); checks each one's status and output (output_matches)."""
    commands = []  # (line number, command, expected output lines, expected status)
    for k, text in enumerate(lines):
        if text.startswith("$ "):
            m = re.search(r"# exit (\d+)", text)
            commands.append((line + k, text[2:], [], int(m.group(1)) if m else 0))
        else:
            assert commands, "%s:%d: output before any command" % (page, line + k)
            commands[-1][2].append(text)
    script = "exec 2>&1\n" + "".join("echo '@@%d@@'\n%s\necho \"@@status $?@@\"\n" % (i, c[1])
                                    for i, c in enumerate(commands))
    r = subprocess.run(["bash", "-c", script], stdout=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL)
    outs = re.split(r"@@(\d+)@@\n", r.stdout)[1:]
    assert len(outs) == 2 * len(commands), "%s:%d: the block stopped: %s" % (page, line, r.stdout)
    for i, (at, command, expected, status) in enumerate(commands):
        body = outs[2 * i + 1]
        m = re.search(r"@@status (\d+)@@\n?$", body)
        assert m, "%s:%d: %s: no status" % (page, at, command)
        got = int(m.group(1))
        actual = body[:m.start()].split("\n")
        if actual[-1] == "":
            actual.pop()
        if not any(TIMED.match(e) for e in expected):  # a loaded machine's runs last longer
            actual = [a for a in actual if not TIMED.match(a)]
        assert got == status, "%s:%d: `%s` exited %d, not %d:\n%s" % (page, at, command, got, status,
                                                                     "\n".join(actual))
        assert output_matches(expected, actual, exact), "%s:%d: `%s` printed\n%s\nnot\n%s" % (
            page, at, command, "\n".join(actual), "\n".join(expected))


def test_tutorial_runs(in_tmp, monkeypatch):
    """docs/tutorial.md, in a fresh folder with a kernel cache of its own (the page shows first
    compiles, then hits)."""
    import os
    monkeypatch.setenv("PDEJIT_CACHE_DIR", str(in_tmp / "cache"))
    env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(BINARY)) + os.pathsep + os.environ["PATH"],
               LC_ALL="C")
    blocks = tutorial_blocks()
    assert sum(tag == "sh" for tag, _, _ in blocks) >= 6
    namespace = {"__name__": "docs_tutorial"}
    gpu = []  # [whether a GPU is here], once asked
    for tag, line, lines in blocks:
        kind = tag.split(" ")[0]
        if kind == "pde":
            with open(tag.split(" ")[1], "w") as f:
                f.write("\n".join(lines) + "\n")
        elif kind == "sh-gpu" and not gpu:
            gpu.append(gpu_here())
        if kind == "sh" or (kind == "sh-gpu" and gpu[0]):
            run_sh_block(line, lines, env)
        elif kind == "python":
            exec(compile("\n" * (line - 1) + "\n".join(lines) + "\n", str(TUTORIAL), "exec"), namespace)


def test_readme_example_prints_what_it_shows(in_tmp, monkeypatch):
    """README.md's ten-line example: front.pde as shown, the transcript under it run, its data
    lines digit for digit (pdejit's own lines with any times and rates), and the typo's error as
    shown."""
    import os
    readme = ROOT / "README.md"
    text = readme.read_text()
    front = re.search(r"`front\.pde`:\n\n```\n(.*?)```", text, re.S)
    assert front, "README.md: no front.pde block"
    with open("front.pde", "w") as f:
        f.write(front.group(1))
    transcript = re.search(r"```\n(\$ pdejit run front\.pde .*?)```", text, re.S)
    assert transcript, "README.md: no transcript of front.pde's runs"
    at = text[:transcript.start()].count("\n") + 2
    monkeypatch.setenv("PDEJIT_CACHE_DIR", str(in_tmp / "cache"))  # the first run compiles
    env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(BINARY)) + os.pathsep + os.environ["PATH"],
               LC_ALL="C")
    run_sh_block(at, transcript.group(1).rstrip("\n").split("\n"), env, page=readme, exact=True)
    error = re.search(r"```\n(front\.pde:5:\d+: error: .*?)```", text, re.S)
    assert error, "README.md: no error of the typo"
    typo = re.search(r"a typo in line 5 \(`(\w+)` for `(\w+)`\)", text)
    with open("front.pde", "w") as f:
        f.write(front.group(1).replace(" %s*u" % typo.group(2), " %s*u" % typo.group(1)))
    r = subprocess.run([BINARY, "check", "front.pde"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout + r.stderr == error.group(1)
