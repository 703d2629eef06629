# conftest.py — where the tests find the pdejit command and the samples, and a kernel cache of
# their own. PDEJIT_BINARY (the command; default: ../../build/pdejit) is what `pdejit run
# --dump` comparisons run.
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
BINARY = os.environ.get("PDEJIT_BINARY", str(ROOT / "build" / "pdejit"))


def pytest_configure(config):
    os.environ.setdefault("PDEJIT_CACHE_DIR", str(ROOT / "build" / "tests" / "cache-python"))


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
