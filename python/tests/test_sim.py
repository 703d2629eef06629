# test_sim.py — problems and simulations from Python: metadata, params, zero-copy field views that
# write through, advance() with the GIL released, hot swap, run() with outputs, and errors that
# raise (never crash).
import gc
import re
import subprocess
import os
import threading
import time

import numpy as np
import pytest

import pdejit
from conftest import BINARY, SAMPLES, rss_bytes

DIFFUSION_1D = """mesh grid(nx = 8, Lx = 8)
param D = 1, twice = 2*D
field u = 0
eq dt(u) = D*lap(u)
periodic x
time dt = 0.25, until = 1
"""


def test_problem_metadata():
    p = pdejit.compile(SAMPLES / "gray_scott.pde")
    assert p.dim == 2 and p.shape == (128, 128) and p.cells == 128 * 128
    assert p.fields == ("u", "v")
    assert p.params == {"Du": 2e-5, "Dv": 1e-5, "F": 0.035, "k": 0.065}
    assert p.dt == 1 and p.until == 2000 and p.steps is None and p.has_output
    assert p.length == (2.5, 2.5)
    p3 = pdejit.compile(SAMPLES / "heat3d.pde")
    assert p3.shape == (24, 24, 24)
    q = pdejit.compile("mesh grid(nx = 5, ny = 3, nz = 2)\nfield a, b\n")
    assert q.shape == (2, 3, 5) and q.fields == ("a", "b") and q.dt is None and not q.has_output


def test_compile_from_path_and_text_agree():
    path = SAMPLES / "heat1d.pde"
    a = pdejit.compile(str(path))
    b = pdejit.compile(path.read_text(), name="heat1d.pde")
    assert a.fields == b.fields and a.params == b.params and a.name == str(path)


def test_problem_error_has_diagnostic_and_caret():
    with pytest.raises(pdejit.ProblemError) as e:
        pdejit.compile("mesh grid(nx = 4)\nfield u = 1\neq dt(u) = lap(w)\n", name="bad.pde")
    assert str(e.value) == ("bad.pde:3:16: error: undefined name 'w'\n"
                            "    eq dt(u) = lap(w)\n"
                            "                   ^\n"
                            "1 error")
    assert isinstance(e.value, ValueError) and e.value.status == 2


def test_params_get_set_and_dependents():
    sim = pdejit.compile(DIFFUSION_1D).simulate()
    assert dict(sim.params) == {"D": 1.0, "twice": 2.0}
    sim.params["D"] = 3
    assert sim.params["D"] == 3.0 and sim.params["twice"] == 6.0  # re-evaluated by the library
    with pytest.raises(KeyError):
        sim.params["nope"] = 1.0
    with pytest.raises(KeyError):
        sim.params["nope"]
    with pytest.raises(TypeError):
        sim.params["D"] = "fast"


@pytest.mark.parametrize("backend", ["interp", "cpu"])
def test_view_writes_through_and_next_step_sees_it(backend):
    sim = pdejit.compile(DIFFUSION_1D).simulate(backend=backend)
    u = sim.fields["u"]
    assert u.shape == (8,) and u.dtype == np.float64 and not u.flags.owndata
    assert (u == 0).all()
    u[3] = 1.0  # a delta, written into the simulation's buffer
    sim.advance(0.25)
    assert sim.t == 0.25 and sim.steps == 1
    # one Euler step of u_t = u_xx (h = 1, dt = 1/4): exact in binary
    expect = np.zeros(8)
    expect[2:5] = [0.25, 0.5, 0.25]
    assert sim.fields["u"].tolist() == expect.tolist()


LOGISTIC_RK45 = """mesh grid(nx = 8, Lx = 1)
field u = 0.1 + 0.8*x
eq dt(u) = u*(1 - u)
time dt = 1, until = 2, scheme = rk45, adapt = 1e-7
"""


@pytest.mark.parametrize("backend", ["interp", "cpu"])
def test_advance_adaptive_rk45(backend):
    # adapt with rk45: advance() lands on each t_end exactly, sim.steps counts the accepted steps
    # the controller took (many, not one per advance), and the state is the exact solution's to
    # within a few TOL
    sim = pdejit.compile(LOGISTIC_RK45).simulate(backend=backend)
    x = (np.arange(8) + 0.5) / 8
    u0 = 0.1 + 0.8 * x
    steps = [0]
    for t_end in (0.5, 1.25, 2.0):
        sim.advance(t_end)
        assert sim.t == t_end
        steps.append(sim.steps)
        exact = u0 * np.exp(t_end) / (1 - u0 + u0 * np.exp(t_end))
        assert np.max(np.abs(sim.fields["u"] - exact)) < 1e-6
    # several steps per advance (the file's dt = 1 would cover each in one): 2, 3, 3 here
    assert all(b - a >= 2 for a, b in zip(steps, steps[1:])) and steps[-1] >= 7
    assert sim.rejected >= 0
    assert pdejit.compile(DIFFUSION_1D).simulate(backend=backend).rejected is None


def test_views_2d_3d_and_single_precision():
    sim = pdejit.compile("mesh grid(nx = 5, ny = 3, nz = 2)\nfield a = x + 10*y + 100*z\n").simulate(backend="interp")
    a = sim.fields["a"]
    assert a.shape == (2, 3, 5)
    h = 1.0 / np.array([5, 3, 2])  # unit lengths by default
    z, y, x = np.meshgrid((np.arange(2) + 0.5) * h[2], (np.arange(3) + 0.5) * h[1], (np.arange(5) + 0.5) * h[0],
                          indexing="ij")
    np.testing.assert_allclose(a, x + 10 * y + 100 * z, rtol=1e-15)
    s = pdejit.compile(SAMPLES / "gray_scott.pde").simulate(precision="single", threads=1)
    v = s.fields["v"]
    assert v.dtype == np.float32 and v.shape == (128, 128)
    assert v.strides[1] == 4 and v.strides[0] >= 128 * 4


def test_view_keeps_simulation_alive():
    sim = pdejit.compile(DIFFUSION_1D).simulate()
    u = sim.fields["u"]
    u[:] = 7.0
    del sim
    gc.collect()
    assert u.sum() == 56.0  # the buffers live as long as the array


def test_advance_releases_the_gil():
    sim = pdejit.compile(SAMPLES / "heat3d.pde").simulate(backend="interp", threads=1)
    done = threading.Event()

    def stepping():
        sim.advance(0.01)  # 50 steps of the interpreter on 24^3 cells: a few hundred ms
        done.set()

    th = threading.Thread(target=stepping)
    t0 = time.perf_counter()
    th.start()
    spins = 0
    while not done.is_set():
        spins += 1
    th.join()
    elapsed = time.perf_counter() - t0
    assert sim.steps == 50
    # with the GIL held through the C call this thread could not run at all while it stepped (the
    # spins are the evidence; the elapsed time alone is machine-dependent: 0.048 s on a quiet one)
    assert spins > 10000, (elapsed, spins)


def test_redefine_hot_swap():
    text = ("mesh grid(nx = 4)\nfunc r(s) = s\nfield u = 1\neq dt(u) = r(u)\ntime dt = 0.5\n")
    sim = pdejit.compile(text).simulate()
    sim.advance(0.5)
    assert sim.fields["u"].tolist() == [1.5] * 4
    sim.redefine("func r(s) = 2*s")
    sim.advance(1.0)
    assert sim.fields["u"].tolist() == [3.0] * 4  # 1.5 + 0.5 * 2 * 1.5
    with pytest.raises(pdejit.ProblemError) as e:
        sim.redefine("func r(s) = 2*q")
    assert str(e.value).startswith("<redefine>:1:")
    assert "undefined name 'q'" in str(e.value) and "^" in str(e.value)
    sim.advance(1.5)  # runs on with the previous definition
    assert sim.fields["u"].tolist() == [6.0] * 4


def test_run_with_outputs(in_tmp):
    sim = pdejit.compile(SAMPLES / "robin.pde").simulate()
    res = sim.run(out_dir="snaps")
    assert res.t == 3.0 and res.steps == 30000 and res.snapshots == 4  # t = 0, 1, 2, 3
    assert sorted(os.listdir("snaps"))[:2] == ["snapshot_000000.csv", "snapshot_000001.csv"]
    x = (np.arange(50) + 0.5) / 50
    np.testing.assert_allclose(sim.fields["u"], 1 - 2 * x / 3, atol=2e-3)  # the steady line
    quiet = pdejit.compile(SAMPLES / "robin.pde").simulate().run(outputs=False, steps=10)
    assert quiet.snapshots == 0 and quiet.steps == 10
    default = pdejit.compile(SAMPLES / "robin.pde").simulate().run(steps=1)
    assert default.snapshots == 2 and os.path.isdir("robin.out")


def test_bad_arguments_raise():
    p = pdejit.compile(DIFFUSION_1D)
    with pytest.raises(pdejit.InputError, match="unknown back end 'gpu'"):
        p.simulate(backend="gpu")
    with pytest.raises(pdejit.InputError):
        p.simulate(precision="half")
    with pytest.raises(pdejit.InputError):
        p.simulate(threads=-1)
    with pytest.raises(TypeError):
        p.simulate(backend=3)
    sim = p.simulate()
    with pytest.raises(KeyError):
        sim.fields["w"]
    with pytest.raises(pdejit.InputError):
        sim.advance(float("nan"))
    with pytest.raises(pdejit.InputError):
        sim.advance(1.0, dt=-1)
    sim.advance(1.0)
    with pytest.raises(pdejit.InputError):
        sim.advance(0.5)  # the past
    with pytest.raises(TypeError):
        sim.advance("soon")
    with pytest.raises(TypeError):
        pdejit.compile(42)
    with pytest.raises(FileNotFoundError):
        pdejit.compile("no_such_file.pde")
    with pytest.raises(pdejit.ProblemError):
        pdejit.compile("mesh grid(nx = 4)\nfield u\n", scheme="rk9")
    nodt = pdejit.compile("mesh grid(nx = 4)\nfield u\n").simulate()
    with pytest.raises(pdejit.InputError, match="no dt"):
        nodt.advance(1.0)
    with pytest.raises(pdejit.InputError, match="no time step"):
        nodt.run()
    with pytest.raises(TypeError):
        sim.redefine(None)


def test_blow_up_raises_run_error():
    sim = pdejit.compile("mesh grid(nx = 4)\nfield u = 1\neq dt(u) = u*u*1e300\ntime dt = 1\n").simulate()
    with pytest.raises(pdejit.RunError, match="u"):
        sim.advance(10.0)


def test_cuda_unavailable_says_why():
    p = pdejit.compile(DIFFUSION_1D)
    try:
        p.simulate(backend="cuda")
    except pdejit.UnavailableError as e:
        assert "cuda" in str(e)
        return
    pytest.skip("a GPU is here: the cuda back end is available")


def test_cuda_fields_on_the_device():
    p = pdejit.compile(DIFFUSION_1D)
    try:
        sim = p.simulate(backend="cuda")
    except pdejit.UnavailableError as e:
        pytest.skip("no GPU: %s" % e)
    u = sim.fields["u"]  # a GPU is here: a device array without a copy
    iface = u.__cuda_array_interface__
    assert iface["shape"] == (8,) and iface["typestr"] == "<f8" and iface["data"][0] != 0


def test_interrupt_from_another_thread():
    sim = pdejit.compile(SAMPLES / "heat3d.pde").simulate(backend="interp", threads=1)
    returned = threading.Event()

    def interrupt_once_stepping():  # no clock: once advance has taken a step
        while sim.steps == 0 and not returned.is_set():
            time.sleep(0.001)
        sim.interrupt()
    th = threading.Thread(target=interrupt_once_stepping)
    th.start()
    try:
        with pytest.raises(pdejit.Interrupted):
            sim.advance(1e6 * 0.0002)
    finally:
        returned.set()
        th.join()
    assert 0 < sim.steps < 1e6


def test_thousand_swaps_leave_memory_flat():
    text = "mesh grid(nx = 64)\nfunc r(s) = s\nfield u = 1\neq dt(u) = -r(u)\ntime dt = 0.01\n"
    sim = pdejit.compile(text).simulate()
    defs = ["func r(s) = 2*s", "func r(s) = s/2"]
    for i in range(100):  # warm: both kernels compiled and cached
        sim.redefine(defs[i % 2])
    gc.collect()
    before = rss_bytes()
    for i in range(1000):
        sim.redefine(defs[i % 2])
        if i % 100 == 0:
            sim.advance(sim.t + 0.01)
    gc.collect()
    grown = rss_bytes() - before
    assert grown < 4 << 20, "resident memory grew by %d bytes over 1000 swaps" % grown


def test_redefine_while_advancing_on_another_thread():
    text = ("mesh grid(nx = 20000)\nfunc r(s) = 0\nfield u = 1\neq dt(u) = r(u) + 1e-3*lap(u)\n"
            "time dt = 0.001\n")
    sim = pdejit.compile(text).simulate(backend="interp", threads=1)
    th = threading.Thread(target=sim.advance, args=(0.5,))  # 500 interpreted steps
    th.start()
    while sim.steps < 5 and th.is_alive():
        time.sleep(0.001)
    sim.redefine("func r(s) = 1")  # taken between two steps while the other thread steps
    th.join()
    u = sim.fields["u"]
    assert sim.t == 0.5
    # u grew by 1 per unit time from the swap on: 1 + (0.5 - t_swap), the swap after step 5
    assert 1.0 < u[0] <= 1.495 and np.all(u == u[0]), u[0]


CTRL_C = r"""
import os, signal, sys, threading, time
import pdejit
sim = pdejit.compile(sys.argv[1]).simulate(backend="interp", threads=1)
# Python as a terminal starts it: a job started in the background (nohup ... &) inherits SIGINT
# ignored, and then Python, rightly, leaves Ctrl-C alone (the test hung there)
signal.signal(signal.SIGINT, signal.default_int_handler)
def ctrl_c_while_stepping():  # once advance has taken steps: the C handler is in place
    while sim.steps == 0:
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=ctrl_c_while_stepping, daemon=True).start()
try:
    sim.advance(1e5)
    print("finished")
except KeyboardInterrupt as e:
    steps = sim.steps
    sim.advance(sim.t + 0.001)  # still usable; Python's handler is back
    print("interrupted", steps > 0, sim.steps == steps + 5, signal.getsignal(signal.SIGINT) is signal.default_int_handler)
"""


def test_ctrl_c_stops_advance_at_a_step_boundary():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", CTRL_C, str(SAMPLES / "heat3d.pde")], capture_output=True, text=True,
                       timeout=60)
    assert r.stdout.strip() == "interrupted True True True", r.stdout + r.stderr


def test_a_missing_capability_is_not_a_missing_device():
    # an implicit scheme on the cuda back end: refused for what the back end lacks, on any machine
    p = pdejit.compile(DIFFUSION_1D, scheme="beuler")
    with pytest.raises(pdejit.UnsupportedError,
                       match=r"the cuda back end cannot solve implicit schemes or steady problems yet \(beuler\)"):
        p.simulate(backend="cuda")


def test_info_says_how_the_steps_ran():
    sim = pdejit.compile(DIFFUSION_1D).simulate(threads=1)
    sim.advance(1.0)
    assert sim.info["stepping"] == "one step a sweep; 1 thread"
    sim = pdejit.compile(DIFFUSION_1D, scheme="beuler").simulate(threads=1)
    sim.advance(0.5)
    assert sim.info["stepping"] is None  # the implicit solver's own report says how it stepped


def test_new_run_spellings_refuse_bad_arguments(tmp_path):
    problem = pdejit.compile(DIFFUSION_1D)
    for seed in (-1, 2**64, 1.5, True, "3"):
        with pytest.raises(pdejit.InputError, match="seed must be an int from 0 to 2\\*\\*64 - 1"):
            problem.simulate(backend="interp", seed=seed)
    with pytest.raises(TypeError, match="solver_options must be a str"):
        problem.simulate(backend="interp", solver_options=["-ksp_type", "cg"])
    with pytest.raises(TypeError, match="consts must be a mapping"):
        pdejit.compile(DIFFUSION_1D, consts=[("N", 3)])
    with pytest.raises(pdejit.ProblemError, match="D: not a const"):
        pdejit.compile(DIFFUSION_1D, consts={"D": 3})          # a param, not a const
    sim = problem.simulate(backend="interp")
    with pytest.raises(pdejit.InputError, match="checkpoint_every must be > 0"):
        sim.run(checkpoint_every=0)
    with pytest.raises(pdejit.InputError):
        sim.resume(str(tmp_path / "missing.pjc"))
    (tmp_path / "bad.csv").write_text("x,w\n0.5,1\n")
    with pytest.raises(pdejit.InputError):
        sim.init_from_csv(str(tmp_path / "bad.csv"))
    assert sim.t == 0 and sim.steps == 0


ADAPTIVE_1D = """mesh grid(nx = 100, Lx = 1)
field u = sin(pi*x)
eq dt(u) = lap(u) - u^3
on all: u = 0
time dt = 1e-4, until = 0.4, scheme = bdf2, adapt = 1e-5
"""


def test_adaptive_steps_are_the_schemes(in_tmp):
    # sim.steps counts the steps the error controller accepted (advance() of an adaptive problem
    # left it at 1), the counts `pdejit run` reports for the same problem
    with open("ad.pde", "w") as f:
        f.write(ADAPTIVE_1D)
    out = subprocess.run([BINARY, "run", "ad.pde", "--verbose", "--out", "none"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    m = re.search(r"^pdejit: (\d+) steps accepted \((\d+) rejected\) to t = 0\.4 in ", out.stderr, re.M)
    assert m, out.stderr
    accepted, rejected = int(m.group(1)), int(m.group(2))
    sim = pdejit.Simulation(pdejit.compile(ADAPTIVE_1D))
    sim.advance(0.4)
    st = sim.solver_stats()
    assert accepted > 1
    assert sim.steps == accepted and st.steps == accepted and st.rejected == rejected
    assert st.adaptive and not st.steady and st.last_dt > 0 and st.unused_options == ()
    assert pdejit.Simulation(pdejit.compile(DIFFUSION_1D)).solver_stats() is None  # explicit: no solver


STEADY_FRONT = """mesh grid(nx = 200, Lx = 1)
param eps = 0.02
field u = 0
eq dt(u) = eps^2*lap(u) + u - u^3
on left: u = -1
on right: u = 1
steady
solver rtol = 1e-12
"""


def test_steady_continuation_counts_are_the_commands(in_tmp):
    # Newton from u = 0 fails on this front; pseudo-transient continuation finishes it. The counts
    # Python gives are the ones the command's steady line prints.
    with open("front.pde", "w") as f:
        f.write(STEADY_FRONT)
    out = subprocess.run([BINARY, "run", "front.pde", "--verbose", "--out", "none"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    m = re.search(r"^pdejit: steady solve: (\d+) Newton iterations, (\d+) linear iterations, final residual "
                  r"norm \S+ \(Newton from the initial fields failed after (\d+); pseudo-transient continuation: "
                  r"(\d+) pseudo-time steps, (\d+) Newton iterations\)", out.stderr, re.M)
    assert m, out.stderr
    newton, linear, failed, pseudo_steps, pseudo_newton = (int(g) for g in m.groups())
    sim = pdejit.Simulation(pdejit.compile(STEADY_FRONT))
    sim.run(outputs=False)
    st = sim.solver_stats()
    assert st.steady and st.steps == 1
    assert (st.newton, st.linear, st.pseudo_steps, st.pseudo_newton) == (newton, linear, pseudo_steps, pseudo_newton)
    assert pseudo_steps > 0 and failed + pseudo_newton == newton


def test_unused_solver_options_warn_or_raise(in_tmp):
    heat = ADAPTIVE_1D.replace(", adapt = 1e-5", "").replace("until = 0.4", "steps = 2")
    sim = pdejit.Simulation(pdejit.compile(heat), solver_options="-ksp_typo cg")
    with pytest.warns(UserWarning, match=r"^PETSc option that no solver used: -ksp_typo \(misspelt"):
        sim.run(outputs=False)
    assert sim.solver_stats().unused_options == ("-ksp_typo",)
    sim = pdejit.Simulation(pdejit.compile(heat), solver_options="-ksp_typo cg")
    with pytest.raises(pdejit.InputError, match=r"^PETSc option that no solver used: -ksp_typo$"):
        sim.run(outputs=False, strict_options=True)
    sim = pdejit.Simulation(pdejit.compile(heat), solver_options="-ksp_type gmres")
    sim.run(outputs=False, strict_options=True)  # used: nothing said


def test_array_members_by_name():
    # field eta[N]: the members are the fields eta1 ... etaN (docs/language.md, Order-parameter arrays),
    # the same values as the problem written field by field
    array = pdejit.compile("""mesh grid(nx = 6, ny = 2)
const N = 3
field eta[N] = 0.1*i + 0.01*x
eq dt(eta[i]) = -eta[i]*sum(j, eta[j]) + 0.1*lap(eta[i])
time dt = 0.01, until = 0.1
""")
    by_hand = pdejit.compile("""mesh grid(nx = 6, ny = 2)
field eta1 = 0.1*1 + 0.01*x, eta2 = 0.1*2 + 0.01*x, eta3 = 0.1*3 + 0.01*x
eq dt(eta1) = -eta1*(eta1 + eta2 + eta3) + 0.1*lap(eta1)
eq dt(eta2) = -eta2*(eta1 + eta2 + eta3) + 0.1*lap(eta2)
eq dt(eta3) = -eta3*(eta1 + eta2 + eta3) + 0.1*lap(eta3)
time dt = 0.01, until = 0.1
""")
    assert array.fields == ("eta1", "eta2", "eta3")
    a, b = array.simulate(), by_hand.simulate()
    assert list(a.fields) == ["eta1", "eta2", "eta3"]
    a.advance(0.1)
    b.advance(0.1)
    for name in array.fields:
        assert np.array_equal(a.fields[name], b.fields[name])
    assert a.fields["eta2"].shape == (2, 6) and 0.15 < a.fields["eta2"].min() < 0.2
    assert np.array_equal(a.fields["eta"], np.stack([b.fields[name] for name in by_hand.fields]))  # (N, ny, nx)
    assert array.arrays == {"eta": 3} and by_hand.arrays == {}
    with pytest.raises(KeyError):
        b.fields["eta"]                                                   # no array there


# issue 26 item 1: reprs, close() and with, cell coordinates, monitors

def test_reprs_are_informative_one_liners():
    p = pdejit.compile(DIFFUSION_1D, name="diff.pde")
    assert repr(p) == "<pdejit.Problem diff.pde: 1D mesh (8,), fields u, params D, twice>"
    assert repr(p.mesh) == "<pdejit.Mesh grid(nx=8, Lx=8, x0=0)>"
    sim = p.simulate(backend="interp")
    assert repr(sim) == ("<pdejit.Simulation of diff.pde on interp (double): mesh (8,), fields u, "
                         "t=0 after 0 steps>")
    sim.advance(0.5)
    assert repr(sim).endswith("t=0.5 after 2 steps>")
    assert repr(sim.fields) == "<pdejit fields u of diff.pde: (8,) float64 on interp>"
    assert repr(sim.params) == "{'D': 1.0, 'twice': 2.0}"
    q = pdejit.compile("mesh grid(nx = 5, ny = 3, Ly = 0.5, y0 = -1)\nfield a, b\n", name="q.pde")
    assert repr(q.mesh) == "<pdejit.Mesh grid(nx=5, ny=3, Lx=1, Ly=0.5, x0=0, y0=-1)>"
    assert repr(q.simulate(precision="single").fields) == "<pdejit fields a, b of q.pde: (3, 5) float32 on cpu>"
    term = pdejit.Term("lap(u)", grid=(4, 3), spacing=(1, 1))
    assert repr(term) == "<pdejit.Term 'lap(u)' on 4x3 cells, inputs u>"
    assert repr(term.jacobian("u")) == "<pdejit.Derivative d/du of 'lap(u)' on 4x3 cells>"
    # a GPU field's wrapper (made here over no memory: its repr reads nothing)
    assert repr(pdejit.DeviceArray(sim, 0, (3, 5), (40, 8), np.float32)) == "<pdejit.DeviceArray (3, 5) float32 on the GPU>"
    for r in (repr(p), repr(sim), repr(sim.fields), repr(p.mesh), repr(term)):
        assert "\n" not in r and " at 0x" not in r


def test_run_result_repr_names_its_numbers():
    sim = pdejit.compile(DIFFUSION_1D, name="diff.pde").simulate(backend="interp")
    r = sim.run(outputs=False)
    assert repr(r) == "RunResult(steps=4, t=1.0, seconds=%r, snapshots=0)" % r.seconds


def test_close_frees_and_a_closed_simulation_raises():
    sim = pdejit.compile(DIFFUSION_1D, name="diff.pde").simulate()
    assert not sim.closed
    sim.close()
    assert sim.closed
    sim.close()  # twice: nothing
    message = "this Simulation of diff.pde is closed (close() or the end of its with block)"
    for use in (lambda: sim.t, lambda: sim.steps, lambda: sim.advance(1.0), lambda: sim.run(),
                lambda: sim.fields["u"], lambda: sim.params["D"], lambda: sim.params.__setitem__("D", 2),
                lambda: sim.redefine("func f(s) = s"), lambda: sim.monitors(), lambda: sim.solver_stats(),
                lambda: sim.info, lambda: sim.interrupt(), lambda: sim.resume("x.pjc"), lambda: sim.__enter__()):
        with pytest.raises(pdejit.InputError) as e:
            use()
        assert str(e.value) == message
    assert repr(sim) == "<pdejit.Simulation of diff.pde on cpu (double): mesh (8,), fields u, closed>"
    assert repr(sim.fields) == "<pdejit fields u of diff.pde: (8,) float64, closed>"
    assert repr(sim.params) == "<pdejit params of a closed Simulation>"
    assert sim.mesh.shape == (8,)  # the problem's: still there


def test_with_closes_and_arrays_taken_before_stay_valid():
    problem = pdejit.compile(DIFFUSION_1D.replace("field u = 0", "field u = x"))
    with problem.simulate() as sim:
        sim.advance(0.5)
        u = sim.fields["u"]
        expected = u.copy()
    assert sim.closed
    gc.collect()
    assert np.array_equal(u, expected)  # the array keeps its buffer until it goes
    u[0] = 7.0
    assert u[0] == 7.0
    with pytest.raises(RuntimeError):
        with problem.simulate() as other:
            raise RuntimeError("inside")
    assert other.closed


def malloc_in_use():
    """Bytes malloc has handed out and not had back (glibc's mallinfo2: all arenas, mmap'd blocks
    included), whatever it returns to the system: RSS cannot tell once MPI (loaded with PETSc for
    an implicit scheme) has told malloc never to trim or mmap."""
    import ctypes

    class Info(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in
                    "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallinfo2"):
        pytest.skip("no mallinfo2 (glibc < 2.33)")
    libc.mallinfo2.restype = Info
    info = libc.mallinfo2()
    return info.uordblks + info.hblkhd


def test_close_gives_the_memory_back():
    problem = pdejit.compile("mesh grid(nx = 1000, ny = 1000)\nfield u = 1\n")
    sims = [problem.simulate(backend="interp") for _ in range(4)]  # 4 fields of 8 MB
    gc.collect()
    before = malloc_in_use()
    for s in sims:
        s.close()
    gc.collect()
    freed = before - malloc_in_use()
    assert freed > 30 << 20, "close() freed %d bytes of 32 MB" % freed
    with problem.simulate(backend="interp") as sim:
        u = sim.fields["u"]
    gc.collect()
    before = malloc_in_use()
    del u  # the last array on the closed simulation: its buffers go with it
    gc.collect()
    assert before - malloc_in_use() > 7 << 20


def test_cell_centres_follow_the_mesh_formula():
    text = "mesh grid(nx = 5, ny = 3, nz = 2, Lx = 2, Ly = 0.6, Lz = 4, x0 = -1, z0 = 10)\nfield u = x, v = y, w = z\n"
    sim = pdejit.compile(text).simulate(backend="interp")
    m = sim.mesh
    assert m is sim.problem.mesh
    assert m.shape == (2, 3, 5) == sim.fields["u"].shape and m.n == (5, 3, 2) and m.dim == 3
    assert m.length == (2, 0.6, 4) and m.origin == (-1, 0, 10) and m.h == (2 / 5, 0.6 / 3, 4 / 2)
    for k in range(2):
        for j in range(3):
            for i in range(5):
                assert m.x[k, j, i] == -1 + (i + 0.5) * (2 / 5)
                assert m.y[k, j, i] == 0 + (j + 0.5) * (0.6 / 3)
                assert m.z[k, j, i] == 10 + (k + 0.5) * (4 / 2)
    # the same centres as the kernels evaluate for `x`, `y`, `z`
    for name, c in (("u", m.x), ("v", m.y), ("w", m.z)):
        assert c.shape == sim.fields[name].shape and c.dtype == np.float64
        np.testing.assert_allclose(sim.fields[name], c, rtol=0, atol=1e-15)
    assert not m.x.flags.writeable
    with pytest.raises(ValueError):
        m.x[0, 0, 0] = 1


def test_cell_centres_in_1d_and_2d_and_missing_axes():
    m1 = pdejit.compile("mesh grid(nx = 4, Lx = 2)\nfield u\n").simulate().mesh
    assert np.array_equal(m1.x, [0.25, 0.75, 1.25, 1.75]) and m1.h == (0.5,)
    with pytest.raises(AttributeError) as e:
        m1.y
    assert str(e.value) == "a 1D mesh has no y axis"
    p2 = pdejit.compile("mesh grid(nx = 4, ny = 2, y0 = 1)\nfield u = x + 10*y\n")
    sim = p2.simulate(backend="interp")
    m2 = sim.mesh
    assert m2.x.shape == m2.y.shape == (2, 4)
    assert np.array_equal(m2.x[0], [0.125, 0.375, 0.625, 0.875]) and np.array_equal(m2.x[1], m2.x[0])
    assert np.array_equal(m2.y[:, 0], [1.25, 1.75]) and np.array_equal(m2.y[:, 3], m2.y[:, 0])
    np.testing.assert_allclose(sim.fields["u"], m2.x + 10 * m2.y, rtol=1e-15)
    assert not hasattr(m2, "z")


MONITORED = """mesh grid(nx = 10, Lx = 2)
field u = x
eq dt(u) = -u
time dt = 0.1, until = 0.5
monitor every = 0.1, total = integral(u), top = maxval(u), low = minval(u), avg = mean(u)
"""


def test_monitors_now_and_as_the_run_writes_them(in_tmp):
    p = pdejit.compile(MONITORED, name="mon.pde")
    assert p.monitors == ("total", "top", "low", "avg")
    sim = p.simulate(backend="interp")
    x = sim.mesh.x
    got = sim.monitors()
    assert list(got) == ["total", "top", "low", "avg"]
    assert got["total"] == pytest.approx(np.sum(x) * 0.2, rel=1e-14)   # integral: the sum times the cell volume
    assert got["top"] == x.max() and got["low"] == x.min()
    assert got["avg"] == pytest.approx(np.mean(x), rel=1e-14)
    sim.advance(0.3)
    u = sim.fields["u"]
    assert sim.monitors()["top"] == u.max() and sim.monitors()["total"] == pytest.approx(u.sum() * 0.2, rel=1e-14)
    # the numbers `pdejit run` writes to monitor.csv at the same time
    with open("mon.pde", "w") as f:
        f.write(MONITORED)
    subprocess.run([BINARY, "run", "mon.pde", "--quiet", "--out", "mon.out"], check=True)
    rows = [line.split(",") for line in open("mon.out/monitor.csv").read().split("\n")[1:] if line]
    at = [r for r in rows if abs(float(r[0]) - 0.3) < 1e-9]
    assert at, rows
    mine = sim.monitors()
    for name, text in zip(("total", "top", "low", "avg"), at[0][-4:]):
        assert mine[name] == pytest.approx(float(text), rel=1e-12)
    assert pdejit.compile(DIFFUSION_1D).simulate().monitors() == {}
