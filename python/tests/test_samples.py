# test_samples.py — every sample through Python equals `pdejit run FILE --dump` bit for bit: the
# fields read through zero-copy views after Simulation.run(), and the dump Python writes.
import csv
import subprocess

import numpy as np
import pytest

import pdejit
from conftest import BINARY, SAMPLES

SAMPLE_FILES = sorted(SAMPLES.glob("*.pde"))


def read_dump(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    header, values = rows[0], np.array([[float(v) for v in r] for r in rows[1:]])
    return {name: values[:, i] for i, name in enumerate(header)}


def test_there_are_samples():
    assert len(SAMPLE_FILES) >= 7


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_sample_equals_command_dump(path, in_tmp):
    subprocess.run([BINARY, "run", str(path), "--out", "none", "--dump", "cli.csv", "--quiet"], check=True)
    cli = read_dump("cli.csv")

    problem = pdejit.compile(path)
    sim = problem.simulate(backend="cpu")
    result = sim.run(outputs=False, dump="py.csv")
    assert result.t == sim.t and result.steps == sim.steps > 0
    assert result.snapshots == 0
    with open("cli.csv", "rb") as a, open("py.csv", "rb") as b:
        assert a.read() == b.read()
    for name in problem.fields:
        view = sim.fields[name]
        assert view.shape == problem.shape
        # x fastest in the dump, as np.ravel of a (nz, ny, nx) array
        got = np.ascontiguousarray(view).ravel()
        assert got.view(np.uint64).tolist() == cli[name].view(np.uint64).tolist(), name


NOISY = """mesh grid(nx = 32, ny = 16, Lx = 32, Ly = 16)
param D = 0.1
field u = randn(), v = rand()
eq dt(u) = D*lap(u) + 0.1*randn()
eq dt(v) = D*lap(v) - v
time dt = 0.01, steps = 10
"""


@pytest.mark.parametrize("args,python", [
    (["--seed", "7"], {"simulate": {"seed": 7}}),
    (["--seed", "18446744073709551615"], {"simulate": {"seed": 2**64 - 1}}),
    (["--set", "N=24"], {"compile": {"consts": {"N": 24}}}),
    (["--scheme", "rk3", "--dt", "0.005", "--steps", "7"], {"compile": {"scheme": "rk3"},
                                                             "run": {"dt": 0.005, "steps": 7}}),
    (["--until", "0.05", "--check-every", "3", "--precision", "single", "--fast-math"],
     {"simulate": {"precision": "single", "fast_math": True}, "run": {"until": 0.05, "check_every": 3}}),
], ids=["seed", "seed-max", "const", "scheme-dt-steps", "until-single-fast-math"])
def test_run_options_equal_their_python_spelling(args, python, in_tmp):
    """`pdejit run --OPTION` and its Python spelling (docs/python.md's table) give the same dump."""
    with open("noisy.pde", "w") as f:
        f.write("const N = 16\n" + NOISY.replace("32", "2*N"))
    subprocess.run([BINARY, "run", "noisy.pde", "--out", "none", "--dump", "cli.csv", "--quiet"] + args, check=True)
    problem = pdejit.compile("noisy.pde", **python.get("compile", {}))
    problem.simulate(**python.get("simulate", {})).run(outputs=False, dump="py.csv", **python.get("run", {}))
    with open("cli.csv", "rb") as a, open("py.csv", "rb") as b:
        assert a.read() == b.read()


def test_solver_options_and_no_stability_check_as_the_command(in_tmp):
    """simulate(solver_options=...) passes PETSc options as --solver-options does (the same dump);
    run(no_stability_check=True) runs the dt the stability check refuses, as the command does."""
    heat = SAMPLES / "implicit" / "stiff_heat.pde"
    options = "-ksp_type cg -pc_type jacobi -ksp_rtol 1e-12"
    subprocess.run([BINARY, "run", str(heat), "--out", "none", "--dump", "cli.csv", "--quiet", "--solver-options",
                    options], check=True)
    pdejit.compile(heat).simulate(solver_options=options).run(outputs=False, dump="py.csv")
    with open("cli.csv", "rb") as a, open("py.csv", "rb") as b:
        assert a.read() == b.read()
    with pytest.raises(pdejit.InputError, match="stability limit"):
        pdejit.compile(heat, scheme="rk4").simulate().run(outputs=False)
    subprocess.run([BINARY, "run", str(heat), "--scheme", "rk4", "--steps", "2", "--out", "none", "--dump", "cli.csv",
                    "--quiet", "--no-stability-check"], check=True)
    pdejit.compile(heat, scheme="rk4").simulate().run(outputs=False, steps=2, dump="py.csv", no_stability_check=True)
    with open("cli.csv", "rb") as a, open("py.csv", "rb") as b:
        assert a.read() == b.read()
