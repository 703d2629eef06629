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
