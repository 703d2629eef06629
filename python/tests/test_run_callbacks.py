# test_run_callbacks.py — what Simulation.run reports while it goes: monitor_history() against the
# monitor.csv the same run writes, on_monitor against the fields at that time, on_progress,
# progress=True (tqdm, or the line without it), exceptions that stop a run, calls a callback may
# and may not make; pdejit.schemes() against `pdejit help run`; order-parameter arrays
# (`field eta[N]`) as a leading member axis.
import csv
import re
import subprocess
import sys
import types

import numpy as np
import pytest

import pdejit
from conftest import BINARY

BLOB = """
mesh grid(nx = 32, ny = 16, Lx = 2, Ly = 1, x0 = -1)
field c = exp(-20*(x^2 + (y - 0.5)^2))
eq dt(c) = 0.01*lap(c)
time dt = 1e-3, until = 0.05
monitor every = 0.01, mass = integral(c), peak = maxval(c)
"""

# u' = -k*u by Euler from 1: u = (1 - k*dt)^n, exactly the products the kernel makes
DECAY = """
mesh grid(nx = 4)
param k = 1
field u = 1
eq dt(u) = -k*u
time dt = 0.125, until = 1
monitor every = 0.25, total = integral(u)
"""


def test_monitor_history_is_monitor_csv(in_tmp):
    sim = pdejit.compile(BLOB, name="blob.pde").simulate()
    sim.run()                                                      # monitor.csv in blob.out
    with open("blob.out/monitor.csv") as f:
        rows = list(csv.reader(f))
    history = sim.monitor_history()
    assert list(history) == rows[0] == ["t", "step", "mass", "peak"]
    assert len(history["t"]) == len(rows) - 1 == 6                 # t = 0, 0.01, ..., 0.05
    for j, name in enumerate(rows[0]):
        column = np.array([float(r[j]) for r in rows[1:]])
        assert np.array_equal(history[name], column), name         # 17 digits: the same doubles
    assert history["step"].dtype == np.int64 and list(history["step"]) == [0, 10, 20, 30, 40, 50]
    sim.run(until=0.07, outputs=False)                             # a second run adds its rows
    assert np.allclose(sim.monitor_history()["t"][6:], [0.05, 0.06, 0.07], rtol=0, atol=1e-15)


def test_on_monitor_sees_the_state_of_its_time(in_tmp):
    sim = pdejit.compile(BLOB, name="blob.pde").simulate()
    h = sim.mesh.h
    seen = []

    def on_monitor(t, values):
        c = sim.fields["c"]
        seen.append((t, sim.t, sim.steps, values, c.sum() * h[0] * h[1], c.max()))
        assert sim.monitors() == values                            # callable from inside

    sim.run(outputs=False, on_monitor=on_monitor)
    assert [s[2] for s in seen] == [0, 10, 20, 30, 40, 50]
    for t, now, steps, values, mass, peak in seen:
        assert t == now and list(values) == ["mass", "peak"]
        assert np.isclose(values["mass"], mass, rtol=1e-13) and values["peak"] == peak
    assert [s[0] for s in seen] == list(sim.monitor_history()["t"])


def test_on_progress_goes_from_start_to_end(in_tmp):
    sim = pdejit.compile(BLOB, name="blob.pde").simulate()
    calls = []
    sim.run(outputs=False, on_progress=lambda t, t_end: calls.append((t, t_end)))
    assert calls[0] == (0.0, 0.05) and calls[-1] == (0.05, 0.05)
    assert all(a[0] <= b[0] for a, b in zip(calls, calls[1:]))


def test_a_callback_may_set_params_and_its_exception_stops_the_run(in_tmp):
    decay = pdejit.compile(DECAY, name="decay.pde")
    sim = decay.simulate()

    def stop_decay(t, values):
        if t == 0.5:
            sim.params["k"] = 0.0                                   # from t = 0.5 on, u stays
    sim.run(outputs=False, on_monitor=stop_decay)
    assert np.array_equal(sim.fields["u"], np.full(4, (1 - 0.125) ** 4))
    assert sim.monitor_history()["total"][-1] == (1 - 0.125) ** 4   # integral over Lx = 1

    class Enough(Exception):
        pass

    def enough(t, values):
        if values["total"] < 0.6:
            raise Enough(t)
    other = decay.simulate()
    with pytest.raises(Enough) as e:
        other.run(outputs=False, on_monitor=enough)
    assert e.value.args[0] == other.t == 0.5 and other.steps == 4   # (7/8)^4 = 0.586 < 0.6, (7/8)^2 = 0.766 not
    other.run(outputs=False)                                       # not left interrupted
    assert other.t == 1.0 and other.steps == 8


def test_stepping_from_a_callback_is_refused(in_tmp):
    sim = pdejit.compile(DECAY, name="decay.pde").simulate()
    for call, what in ((lambda: sim.advance(2.0), "advance()"), (lambda: sim.run(), "run()"),
                       (lambda: sim.redefine("func f(s) = s"), "redefine()"), (sim.close, "close()")):
        def on_monitor(t, values, call=call):
            call()
        with pytest.raises(pdejit.InputError, match=re.escape(what) + " inside a callback of run"):
            sim.run(outputs=False, on_monitor=on_monitor)
    sim.advance(sim.t + 0.125)                                     # usable afterwards


def test_progress_uses_tqdm_when_installed(in_tmp, monkeypatch):
    bars = []

    class FakeTqdm:
        def __init__(self, total, initial, **kw):
            self.total, self.n, self.closed = total, initial, False
            bars.append(self)

        def update(self, d):
            self.n += d

        def close(self):
            self.closed = True
    auto = types.ModuleType("tqdm.auto")
    auto.tqdm = FakeTqdm
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", auto)
    pdejit.compile(BLOB, name="blob.pde").simulate().run(outputs=False, progress=True)
    assert len(bars) == 1 and bars[0].total == 0.05 and bars[0].closed
    assert bars[0].n == pytest.approx(0.05, rel=1e-12)


def test_progress_without_tqdm_is_a_line(in_tmp, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)                 # import tqdm raises ImportError
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    pdejit.compile(BLOB, name="blob.pde").simulate().run(outputs=False, progress=True)
    err = capsys.readouterr().err
    assert "pdejit blob.pde: t = 0.05 of 0.05 (100%)" in err


def test_schemes_are_the_commands():
    text = subprocess.run([BINARY, "help", "run"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"--scheme S\s+time-stepping scheme \(overrides the file\): (.*?) \(", text, re.S)
    listed = tuple(re.sub(r"\s+", " ", m.group(1)).split(", "))
    assert pdejit.schemes() == listed
    assert "imex" in listed and "rk45" in listed
    with pytest.raises(pdejit.ProblemError, match=re.escape("schemes are " + ", ".join(listed))):
        pdejit.compile(DECAY, scheme="rk5")


ARRAY = """
const N = 3
mesh grid(nx = 6, ny = 4)
field eta[N] = 0.1*i
field c = 1
eq dt(eta[i]) = -i*eta[i]
eq dt(c) = 0
time dt = 0.125, until = 0.5
monitor total = integral(sum(j, eta[j]))
"""


@pytest.mark.parametrize("backend", ["interp", "cpu"])
def test_array_fields_have_a_member_axis(in_tmp, backend):
    problem = pdejit.compile(ARRAY, name="arr.pde")
    assert problem.arrays == {"eta": 3} and problem.fields == ("eta1", "eta2", "eta3", "c")
    sim = problem.simulate(backend=backend)
    sim.advance(0.5)
    eta = sim.fields["eta"]
    assert eta.shape == (3, 4, 6) and not eta.flags.writeable
    for k in range(1, 4):                                          # Euler: 0.1*k*(1 - k*dt)^4
        assert np.allclose(eta[k - 1], 0.1 * k * (1 - k * 0.125) ** 4, rtol=1e-14, atol=0)
        assert np.array_equal(sim.fields["eta%d" % k], eta[k - 1])
    assert "eta" in sim.fields and list(sim.fields) == ["eta1", "eta2", "eta3", "c"]
    members = sim.fields.members("eta")
    members[1][:] = 7.0                                            # a member's own array: writes go through
    assert np.array_equal(sim.fields["eta"][1], np.full((4, 6), 7.0))
    with pytest.raises(ValueError):
        sim.fields["eta"][0, 0, 0] = 1.0                           # the stacked copy is read-only
    with pytest.raises(KeyError):
        sim.fields.members("c")
    assert np.isclose(sim.monitors()["total"], sim.fields["eta"].sum() * sim.mesh.h[0] * sim.mesh.h[1])
