"""The package's version is the library's (pj_version: CMakeLists.txt's project version) and the
one pyproject.toml gives pip; compile() lists the command's schemes."""
import pathlib
import re

import pytest

import pdejit

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_version_is_the_projects():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    version = re.search(r"project\(pdejit VERSION ([0-9.]+)", cmake).group(1)
    assert pdejit.__version__ == version
    pyproject = (ROOT / "python" / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1) == version


def test_compile_lists_the_schemes():
    text = "mesh grid(nx = 4)\nfield u = x\neq dt(u) = -u\ntime dt = 0.1, steps = 1\n"
    with pytest.raises(pdejit.ProblemError,
                       match="unknown scheme 'rk5'; schemes are euler, rk2, rk3, rk4, rk23, rk45, beuler, cn, bdf2, imex"):
        pdejit.compile(text, scheme="rk5")
    assert pdejit.compile(text, scheme="imex") is not None
