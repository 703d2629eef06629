# test_examples.py — python/examples/allen_cahn_fipy.py: the FiPy solve with a pdejit.Term source
# agrees with the pure FiPy/NumPy one to 1e-12 (skipped where FiPy is not installed).
import importlib.util

import numpy as np
import pytest

from conftest import ROOT

pytest.importorskip("fipy")


def load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "python" / "examples" / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_allen_cahn_fipy_term_equals_numpy_source():
    ac = load("allen_cahn_fipy")
    a = ac.solve("pdejit", nx=32, ny=24, steps=30)
    b = ac.solve("numpy", nx=32, ny=24, steps=30)
    assert np.abs(a - b).max() <= 1e-12
    # the solve did something: the random start separated into phases near +-1
    assert np.abs(a).max() > 0.9 and np.abs(a - a.mean()).max() > 0.5
