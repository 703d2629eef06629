# test_term.py — pdejit.Term against NumPy's evaluation of the same expression (bit for bit where
# NumPy does the same operations in the same order; a product that is added is one fused
# multiply-add in pdejit, rounded once, computed here exactly with fractions), both boundary
# treatments, the derivative at the cell, the kernel cache, bad arguments, and memory over 10 000
# calls.
import gc
from fractions import Fraction

import numpy as np
import pytest

import pdejit
from conftest import rss_bytes

RNG = np.random.default_rng(7)


def fields2d(ny=6, nx=9):
    return RNG.random((ny, nx)), RNG.random((ny, nx))


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def fma(a, b, c):
    """a*b + c rounded once, element by element (float(Fraction) rounds correctly)."""
    exact = np.frompyfunc(lambda x, y, z: float(Fraction(x) * Fraction(y) + Fraction(z)), 3, 1)
    return exact(*np.broadcast_arrays(a, b, c)).astype(np.float64)


def test_pointwise_term_equals_numpy_bitwise():
    u, v = fields2d()
    term = pdejit.Term("k*u*(1 - u) + (u > 0.5 ? u/v : -v) + exp(-u)*sin(3*v)", grid=(9, 6), spacing=(0.1, 0.2),
                       fields=["u", "v"], params={"k": 2.5})
    got = term(u=u, v=v)
    expect = fma(np.exp(-u), np.sin(3 * v), fma(2.5 * u, 1 - u, np.where(u > 0.5, u / v, -v)))
    assert got.shape == (6, 9)
    # exp and sin come from libm on both sides; + - * /, fma and the conditional are IEEE exact
    assert np.array_equal(bits(fma(2.5 * u, 1 - u, np.where(u > 0.5, u / v, -v))),
                          bits(pdejit.Term("k*u*(1 - u) + (u > 0.5 ? u/v : -v)", grid=(9, 6), fields=["u", "v"],
                                           params={"k": 2.5})(u=u, v=v)))
    np.testing.assert_allclose(got, expect, rtol=1e-15, atol=0)


def test_offsets_zero_flux_and_periodic_bitwise():
    u, _ = fields2d()
    expr = "u[1, 0] - 2*u + u[-1, 0] + 3*(u[0, 1] - u[0, -1])"
    for boundary, pad in (("zero-flux", lambda a: np.pad(a, 1, mode="edge")),
                          ("periodic", lambda a: np.pad(a, 1, mode="wrap"))):
        p = pad(u)
        expect = fma(3, p[2:, 1:-1] - p[:-2, 1:-1], p[1:-1, 2:] - 2 * u + p[1:-1, :-2])
        got = pdejit.Term(expr, grid=(9, 6), fields=["u"], boundary=boundary)(u=u)
        assert np.array_equal(bits(got), bits(expect)), boundary


@pytest.mark.parametrize("boundary,mode", [("zero-flux", "edge"), ("periodic", "wrap")])
def test_lap_and_div_grad_equal_numpy(boundary, mode):
    u, d = fields2d(20, 30)
    hx, hy = 0.05, 0.1
    p = np.pad(u, 1, mode=mode)
    lap = (p[1:-1, 2:] - 2 * u + p[1:-1, :-2]) / hx ** 2 + (p[2:, 1:-1] - 2 * u + p[:-2, 1:-1]) / hy ** 2
    term = pdejit.Term("lap(u)", grid=(30, 20), spacing=(hx, hy), fields="u", boundary=boundary)
    np.testing.assert_allclose(term(u=u), lap, rtol=1e-13, atol=1e-9)
    dg = pdejit.Term("div(grad(u))", grid=(30, 20), spacing=(hx, hy), fields="u", boundary=boundary)
    np.testing.assert_allclose(dg(u=u), lap, rtol=1e-13, atol=1e-9)
    # a variable coefficient: div(D grad u) with D at faces as the mean of its two cells
    pd = np.pad(d, 1, mode=mode)
    fx = lambda a, b, da, db: (da + db) / 2 * (b - a) / hx
    fy = lambda a, b, da, db: (da + db) / 2 * (b - a) / hy
    div = ((fx(u, p[1:-1, 2:], d, pd[1:-1, 2:]) - fx(p[1:-1, :-2], u, pd[1:-1, :-2], d)) / hx
           + (fy(u, p[2:, 1:-1], d, pd[2:, 1:-1]) - fy(p[:-2, 1:-1], u, pd[:-2, 1:-1], d)) / hy)
    var = pdejit.Term("div(0.5*(L(d) + R(d))*grad(u))", grid=(30, 20), spacing=(hx, hy), fields=["u", "d"],
                      boundary=boundary)
    np.testing.assert_allclose(var(u=u, d=d), div, rtol=1e-12, atol=1e-9)


def test_one_and_three_dimensions():
    u = RNG.random(40)
    got = pdejit.Term("lap(u)", grid=40, spacing=0.5, fields="u", boundary="periodic")(u=u)
    np.testing.assert_allclose(got, (np.roll(u, -1) - 2 * u + np.roll(u, 1)) / 0.25, rtol=1e-13, atol=1e-12)
    w = RNG.random((4, 5, 6))
    t3 = pdejit.Term("w[0, 0, 1] - w", grid=(6, 5, 4), fields="w", boundary=("zero-flux", "zero-flux", "periodic"))
    assert np.array_equal(bits(t3(w=w)), bits(np.roll(w, -1, axis=0) - w))


def test_out_flat_and_noncontiguous_inputs():
    u, v = fields2d()
    term = pdejit.Term("u - 2*v", grid=(9, 6), fields=["u", "v"])
    out = np.empty((6, 9))
    assert term(u=u, v=v, out=out) is out
    assert np.array_equal(out, u - 2 * v)
    flat = term(u=u.ravel(), v=v.ravel())
    assert flat.shape == (54,) and np.array_equal(flat, (u - 2 * v).ravel())
    ut = np.asfortranarray(u)  # converted, same values
    assert np.array_equal(term(u=ut, v=v), u - 2 * v)
    assert np.array_equal(term(u=u.astype(np.float32), v=v), u.astype(np.float32).astype(np.float64) - 2 * v)


def test_params_time_and_definitions():
    u, _ = fields2d()
    term = pdejit.Term("f(u) + k*t", grid=(9, 6), fields=["u"], params={"k": 1.0},
                       definitions="func f(s) = s*(1 - s)")
    assert np.array_equal(term(u=u), u * (1 - u) + 1.0 * 0.0)
    term.set_param("k", 4.0)
    assert term.params == {"k": 4.0}
    assert np.array_equal(term(u=u, t=0.5), u * (1 - u) + 4.0 * 0.5)
    with pytest.raises(KeyError):
        term.set_param("q", 1.0)


def test_jacobian_at_the_cell():
    u, v = fields2d()
    term = pdejit.Term("k*u*u*v + lap(u) + (u > 0.5 ? u : 0)", grid=(9, 6), spacing=(0.5, 0.25), fields=["u", "v"],
                       params={"k": 3.0})
    du = term.jacobian("u")(u=u, v=v)
    np.testing.assert_allclose(du, 6.0 * u * v - 2 / 0.25 - 2 / 0.0625 + (u > 0.5), rtol=1e-14)
    dv = term.jacobian("v")(u=u, v=v)
    np.testing.assert_allclose(dv, 3.0 * u * u, rtol=1e-15)
    # the same derivative as a central difference of the term itself, where it is smooth
    h = 1e-6
    fd = (term(u=u + h, v=v) - term(u=u - h, v=v)) / (2 * h)  # lap of a constant shift is 0
    smooth = np.abs(u - 0.5) > 2 * h
    np.testing.assert_allclose((du + 2 / 0.25 + 2 / 0.0625)[smooth], fd[smooth], rtol=1e-6, atol=1e-6)
    with pytest.raises(KeyError):
        term.jacobian("w")


def test_compiled_once_then_from_cache():
    a = pdejit.Term("u*u*u - 0.125*u + 42.5", grid=(8,), fields="u")
    b = pdejit.Term("u*u*u - 0.125*u + 42.5", grid=(1000,), fields="u")  # the mesh is not in the kernel
    assert b.from_cache
    x = np.linspace(0, 1, 8)
    assert np.array_equal(a(u=x), x * x * x - 0.125 * x + 42.5)


def test_bad_arguments_raise():
    with pytest.raises(pdejit.ProblemError) as e:
        pdejit.Term("lap(u) + w", grid=(5,), fields="u")
    assert str(e.value) == "<term>:1:10: error: undefined name 'w'\n    lap(u) + w\n             ^\n1 error"
    with pytest.raises(pdejit.ProblemError, match="given twice"):
        pdejit.Term("u", grid=(5,), fields=["u", "u"])
    with pytest.raises(pdejit.ProblemError, match="spacing along y"):
        pdejit.Term("u", grid=(5, 5), spacing=(1, -1), fields="u")
    with pytest.raises(pdejit.InputError):
        pdejit.Term("u", grid=(5,), fields="u", boundary="reflecting")
    with pytest.raises(pdejit.InputError):
        pdejit.Term("u", grid=(5, 5, 5, 5), fields="u")
    with pytest.raises(pdejit.InputError):
        pdejit.Term("u", grid=(5, 5), spacing=(1, 1, 1), fields="u")
    with pytest.raises(TypeError):
        pdejit.Term(3, grid=(5,), fields="u")
    with pytest.raises(TypeError):
        pdejit.Term("u", grid=(5,), fields="u", params={"k": "x"})
    term = pdejit.Term("u + v", grid=(4, 3), fields=["u", "v"])
    a = np.zeros((3, 4))
    with pytest.raises(pdejit.InputError, match="needs the inputs u, v"):
        term(u=a)
    with pytest.raises(pdejit.InputError, match="unknown: w"):
        term(u=a, v=a, w=a)
    with pytest.raises(pdejit.InputError, match="shape"):
        term(u=np.zeros((4, 3)), v=a)
    with pytest.raises(pdejit.InputError, match="out must be"):
        term(u=a, v=a, out=np.zeros((3, 4), dtype=np.float32))
    with pytest.raises(pdejit.InputError, match="out must be"):
        term(u=a, v=a, out=np.zeros((3, 8))[:, ::2])
    with pytest.raises(ValueError):
        term(u=np.array([["a"] * 4] * 3), v=a)


def test_ten_thousand_calls_leave_memory_flat():
    u, v = fields2d(32, 32)
    term = pdejit.Term("u*v - lap(u)", grid=(32, 32), fields=["u", "v"])
    d = term.jacobian("u")
    out = np.empty((32, 32))
    for _ in range(500):
        term(u=u, v=v)
        d(u=u, v=v, out=out)
    gc.collect()
    before = rss_bytes()
    for i in range(10000):
        term(u=u, v=v)
        if i % 10 == 0:
            d(u=u, v=v, out=out)
    for i in range(200):  # terms made and dropped
        pdejit.Term("u*v - lap(u)", grid=(32, 32), fields=["u", "v"])(u=u, v=v)
    gc.collect()
    grown = rss_bytes() - before
    assert grown < 4 << 20, "resident memory grew by %d bytes" % grown


def test_threads_share_a_term_safely_and_huge_grids_raise():
    import threading
    u, v = fields2d(64, 64)
    term = pdejit.Term("u*v + lap(u)", grid=(64, 64), fields=["u", "v"])
    expect = term(u=u, v=v)
    bad = []

    def work(scale):
        for _ in range(200):
            r = term(u=u * scale, v=v)
            if not np.array_equal(r, pdejit.Term.__call__(term, u=u * scale, v=v)):
                bad.append(scale)

    threads = [threading.Thread(target=work, args=(s,)) for s in (1.0, 2.0, 3.0)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not bad and np.array_equal(term(u=u, v=v), expect)
    with pytest.raises(pdejit.Error):
        pdejit.Term("u", grid=(10 ** 6, 10 ** 6, 10 ** 6), fields="u")
    with pytest.raises(pdejit.ProblemError, match="at least one cell"):
        pdejit.Term("u", grid=(0,), fields="u")


@pytest.mark.parametrize("shape", [(20, 48), (3, 257), (200,)])
def test_in_place_kernels_equal_the_copying_path_bitwise(shape, monkeypatch):
    # 1D and 2D terms (rows of 32 cells or more) read halo-0 inputs and write out in place
    # (runtime/term.c); PDEJIT_TERM_COPY=1 at compile time keeps the copies: the two agree bit for bit
    u, v = RNG.random(shape), RNG.random(shape)
    grid = tuple(reversed(shape))
    expr = ("u[1, 0] - 2*u[0, -1] + (v > 0.5 ? v*u : -v)" if len(shape) == 2 else
            "u[1] - 2*u[-1] + (v > 0.5 ? v*u : -v)")
    fast = pdejit.Term(expr, grid=grid, fields=["u", "v"], boundary="periodic")
    monkeypatch.setenv("PDEJIT_TERM_COPY", "1")
    slow = pdejit.Term(expr, grid=grid, fields=["u", "v"], boundary="periodic")
    expect = slow(u=u, v=v)
    assert np.array_equal(bits(fast(u=u, v=v)), bits(expect))
    if len(shape) == 2:
        p = np.pad(u, 1, mode="wrap")
        assert np.array_equal(bits(expect), bits(p[1:-1, 2:] - 2 * p[:-2, 1:-1] + np.where(v > 0.5, v * u, -v)))
    vv = v.copy()
    assert fast(u=u, v=vv, out=vv) is vv and np.array_equal(bits(vv), bits(expect))  # out is an input read in place
    uu = u.copy()
    assert np.array_equal(bits(fast(u=uu, v=v, out=uu)), bits(expect))  # out is an input read through a copy
    # the derivative reads the sim's own copies, ghosts included, also after in-place calls
    monkeypatch.delenv("PDEJIT_TERM_COPY")
    jf = pdejit.Term("u*(u[1] - 2*u + u[-1])" if len(shape) == 1 else "u*lap(u) + v", grid=grid, fields=["u", "v"])
    jf(u=u, v=v)
    monkeypatch.setenv("PDEJIT_TERM_COPY", "1")
    js = pdejit.Term("u*(u[1] - 2*u + u[-1])" if len(shape) == 1 else "u*lap(u) + v", grid=grid, fields=["u", "v"])
    assert np.array_equal(bits(jf.jacobian("u")(u=u, v=v)), bits(js.jacobian("u")(u=u, v=v)))
    assert np.array_equal(bits(jf(u=u, v=v)), bits(js(u=u, v=v)))


def test_gpu_arrays_mixed_with_host_arrays_or_without_a_gpu(monkeypatch):
    # GPU arrays (anything with __cuda_array_interface__ and no __array_interface__) run on the
    # GPU (test_term_device.py); mixed with host arrays they raise TypeError naming each side,
    # without touching their memory (this fake has no valid address)
    class OnDevice:
        __cuda_array_interface__ = {"shape": (3, 4), "typestr": "<f8", "data": (4096, False), "version": 3}

    term = pdejit.Term("u + v", grid=(4, 3), fields=["u", "v"])
    a = np.zeros((3, 4))
    with pytest.raises(TypeError, match="input v is in GPU memory .* but input u is not"):
        term(u=a, v=OnDevice())
    with pytest.raises(TypeError, match="out is in GPU memory .* but input u, input v are not"):
        term(u=a, v=a, out=OnDevice())
    with pytest.raises(TypeError, match="input u, input v are in GPU memory .* but out is not"):
        term(u=OnDevice(), v=OnDevice(), out=a)
    faces = pdejit.Term("grad(u)", grid=(4, 3), fields="u", at="faces")
    with pytest.raises(TypeError, match="out for axis x, out for axis y are in GPU memory .* but input u is not"):
        faces(u=a, out=(OnDevice(), OnDevice()))
    # every array on the GPU, but no CUDA driver: UnavailableError saying why
    monkeypatch.setenv("PDEJIT_LIBCUDA", "/nonexistent/libcuda.so.1")
    with pytest.raises(pdejit.UnavailableError, match="on the GPU: .*no CUDA device: /nonexistent/libcuda.so.1 not found"):
        term(u=OnDevice(), v=OnDevice())
    assert not term.on_device
    assert np.array_equal(term(u=a + 1, v=a), a + 1)  # the CPU term is unaffected
