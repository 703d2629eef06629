# test_term_device.py — Terms on GPU arrays (__cuda_array_interface__), end to end through the
# package: the C term on the cuda back end (pj_term_options.on_device).
#
# Without a GPU: the GPU back end's host emulation (tests/gpu_emu/: a stand-in NVRTC compiles the
# generated CUDA C as C++, a stand-in libcuda.so.1 whose "device" memory is host memory runs it;
# PDEJIT_NVRTC and PDEJIT_LIBCUDA point the library at them, as in tests/test_gpu.c). FakeDeviceArray
# holds memory the stand-in driver allocated and exposes it as __cuda_array_interface__, the way
# CuPy does. The emulated term must give the NumPy term's bits exactly (the same IEEE operations in
# the same order, no contraction, the host's libm on both sides). Skipped, saying why, where the
# stand-ins cannot be built (no cc / c++).
#
# With CuPy and a device (bench/gpu-check.sh runs this file there): the same on cupy arrays, to
# 1e-12 (the device's libm); skipped here, saying so.
import ctypes
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import pdejit

ROOT = pathlib.Path(__file__).resolve().parents[2]
EMU_SRC = ROOT / "tests" / "gpu_emu"


@pytest.fixture(scope="session")
def emu_dir(tmp_path_factory):
    if not (shutil.which("cc") and shutil.which("c++")):
        pytest.skip("no host emulation of the GPU: no C and C++ compiler")
    d = tmp_path_factory.mktemp("gpu-emu")
    for src, lib in (("nvrtc.c", "libnvrtc.so.99"), ("cuda.c", "libcuda.so.1")):
        r = subprocess.run(["cc", "-std=gnu11", "-O1", "-shared", "-fPIC", "-w", "-o", str(d / lib),
                            str(EMU_SRC / src), "-ldl"], capture_output=True, text=True)
        if r.returncode:
            pytest.skip("no host emulation of the GPU: the stand-in %s does not build: %s" % (lib, r.stderr[:300]))
    return d


class Emu:
    """The stand-in driver, loaded by path (the same library the pdejit library opens)."""

    def __init__(self, d):
        self.cu = ctypes.CDLL(str(d / "libcuda.so.1"))
        self.cu.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_size_t]
        self.cu.cuMemFree_v2.argtypes = [ctypes.c_ulonglong]
        self.cu.cuMemcpyHtoD_v2.argtypes = [ctypes.c_ulonglong, ctypes.c_void_p, ctypes.c_size_t]
        self.cu.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong, ctypes.c_size_t]
        self.cu.cuMemGetInfo_v2.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]

    def free_bytes(self):
        f, t = ctypes.c_size_t(), ctypes.c_size_t()
        assert self.cu.cuMemGetInfo_v2(ctypes.byref(f), ctypes.byref(t)) == 0
        return f.value

    def get(self, x):
        """A GPU array's values (anything with __cuda_array_interface__ of float64) as NumPy."""
        cai = x.__cuda_array_interface__
        out = np.empty(cai["shape"], dtype=np.dtype(cai["typestr"]))
        assert self.cu.cuMemcpyDtoH_v2(out.ctypes.data, cai["data"][0], out.nbytes) == 0
        return out


@pytest.fixture
def emu(emu_dir, monkeypatch):
    monkeypatch.setenv("PDEJIT_NVRTC", str(emu_dir / "libnvrtc.so.99"))
    monkeypatch.setenv("PDEJIT_LIBCUDA", str(emu_dir / "libcuda.so.1"))
    monkeypatch.setenv("PJ_EMU_DIR", str(emu_dir))
    return Emu(emu_dir)


class FakeDeviceArray:
    """A float64 array in the stand-in driver's memory, exposed as CuPy exposes its arrays."""

    def __init__(self, emu, a, typestr="<f8", strides=None, read_only=False, version=3):
        a = np.ascontiguousarray(a, dtype=np.dtype(typestr))
        self._emu, self.shape = emu, a.shape
        p = ctypes.c_ulonglong()
        assert emu.cu.cuMemAlloc_v2(ctypes.byref(p), max(a.nbytes, 8)) == 0
        self.ptr = p.value
        assert emu.cu.cuMemcpyHtoD_v2(self.ptr, a.ctypes.data, a.nbytes) == 0
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": typestr, "data": (self.ptr, read_only),
                                         "version": version, "strides": strides, "stream": None}

    def get(self):
        return self._emu.get(self)

    def __del__(self):
        self._emu.cu.cuMemFree_v2(self.ptr)


def bits(a):
    return np.ascontiguousarray(a).view(np.uint64)


def fields(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.05, 0.95, shape), rng.uniform(0.05, 0.95, shape)


CELL_CASES = [
    # lap and a conditional, zero-flux walls
    ("D*lap(u) + (u > 0.5 ? k*u*(1 - u) : -u*v)", (23, 17), "zero-flux"),
    # neighbour offsets, coordinates and t; periodic along x
    ("u[1, 0] - 2*u[-1, 1] + v[0, -1]*x + y*t", (40, 9), ("periodic", "zero-flux")),
    # 1D, halo 2, periodic, libm
    ("lap(u) + u[2]*u[-2] + exp(-v*v)", (50,), "periodic"),
    # 3D
    ("div(D*grad(u))*v + u[0, 0, 1]", (7, 6, 5), ("zero-flux", "periodic", "zero-flux")),
]


@pytest.mark.parametrize("expr,grid,boundary", CELL_CASES)
def test_cell_term_on_device_arrays_equals_the_numpy_term(emu, expr, grid, boundary):
    params = {"D": 0.7, "k": 3.0}
    term = pdejit.Term(expr, grid=grid, spacing=[0.1, 0.25, 0.5][:len(grid)], fields=["u", "v"],
                       params={k: v for k, v in params.items() if k in expr}, boundary=boundary)
    u, v = fields(term.shape, len(expr))
    expect = term(u=u, v=v, t=0.75)
    du, dv = FakeDeviceArray(emu, u), FakeDeviceArray(emu, v)
    r = term(u=du, v=dv, t=0.75)  # a new GPU array: without CuPy, a pdejit.DeviceBuffer
    assert term.on_device
    assert isinstance(r, pdejit.DeviceBuffer) and r.shape == term.shape
    assert r.__cuda_array_interface__["typestr"] == "<f8"
    assert np.array_equal(bits(emu.get(r)), bits(expect))
    out = FakeDeviceArray(emu, np.full(term.shape, np.nan))
    assert term(u=du, v=dv, out=out, t=0.75) is out
    assert np.array_equal(bits(out.get()), bits(expect))
    # flat arrays
    flat = term(u=FakeDeviceArray(emu, u.ravel()), v=FakeDeviceArray(emu, v.ravel()), t=0.75)
    assert flat.shape == (term.cells,) and np.array_equal(bits(emu.get(flat)), bits(expect.ravel()))
    # a param changed: the GPU term sees it too
    if "D" in expr:
        term.set_param("D", 1.9)
        assert np.array_equal(bits(emu.get(term(u=du, v=dv))), bits(term(u=u, v=v)))
    # the derivative at the cell by each input (derive.c's kernel, on the GPU)
    for f in ("u", "v"):
        jac = term.jacobian(f)
        assert np.array_equal(bits(emu.get(jac(u=du, v=dv, t=0.75))), bits(jac(u=u, v=v, t=0.75)))
    # out is an input
    expect = term(u=u, v=v)
    assert term(u=du, v=dv, out=du) is du and np.array_equal(bits(du.get()), bits(expect))


@pytest.mark.parametrize("grid,boundary", [((12, 7), ("zero-flux", "periodic")), ((6, 5, 4), "zero-flux"),
                                           ((17,), "periodic")])
def test_face_term_on_device_arrays_equals_the_numpy_term(emu, grid, boundary):
    term = pdejit.Term("harm(v)*grad(u) + (u > 0.5 ? L(v) : R(v)) + 10*boundary", grid=grid, fields=["u", "v"],
                       boundary=boundary, at="faces", spacing=0.2)
    u, v = fields(term.shape, 3)
    expect = term(u=u, v=v)
    du, dv = FakeDeviceArray(emu, u), FakeDeviceArray(emu, v)
    got = term(u=du, v=dv)
    assert isinstance(got, tuple) and len(got) == term.dim
    for g, e in zip(got, expect):
        assert g.shape == e.shape and np.array_equal(bits(emu.get(g)), bits(e))
    outs = tuple(FakeDeviceArray(emu, np.full(s, np.nan)) for s in term.face_shapes)
    assert term(u=du, v=dv, out=outs) is outs
    for g, e in zip(outs, expect):
        assert np.array_equal(bits(g.get()), bits(e))
    flat = term(u=du, v=dv, fipy=True)  # FiPy's face order, one array
    assert np.array_equal(bits(emu.get(flat)), bits(term(u=u, v=v, fipy=True)))
    one = FakeDeviceArray(emu, np.full(flat.shape, np.nan))
    term(u=du, v=dv, out=one)
    assert np.array_equal(bits(one.get()), bits(pdejit.fipy_faces(expect)))


def test_device_arguments_are_checked(emu):
    term = pdejit.Term("u*v + lap(u)", grid=(8, 6), fields=["u", "v"])
    u, v = fields(term.shape, 1)
    du, dv = FakeDeviceArray(emu, u), FakeDeviceArray(emu, v)
    with pytest.raises(TypeError, match=r"input v has typestr '<f4', the inputs '<f8': pass every array in one"):
        term(u=du, v=FakeDeviceArray(emu, v, typestr="<f4"))
    with pytest.raises(TypeError, match=r"input u has typestr '<i4': .*float64 \('<f8'\) or float32"):
        term(u=FakeDeviceArray(emu, u, typestr="<i4"), v=dv)
    with pytest.raises(TypeError, match=r"out has typestr '<f4', the inputs '<f8'"):
        term(u=du, v=dv, out=FakeDeviceArray(emu, u, typestr="<f4"))
    with pytest.raises(pdejit.InputError, match="input u has shape \\(6, 7\\)"):
        term(u=FakeDeviceArray(emu, np.zeros((6, 7))), v=dv)
    with pytest.raises(pdejit.InputError, match="not C-contiguous"):
        term(u=FakeDeviceArray(emu, u, strides=(8, 48)), v=dv)
    assert np.array_equal(emu.get(term(u=FakeDeviceArray(emu, u, strides=(64, 8)), v=dv)), term(u=u, v=v))
    with pytest.raises(pdejit.InputError, match="out is read-only"):
        term(u=du, v=dv, out=FakeDeviceArray(emu, u, read_only=True))
    assert np.array_equal(emu.get(term(u=FakeDeviceArray(emu, u, read_only=True), v=dv)), term(u=u, v=v))
    with pytest.raises(TypeError, match="version 4"):
        term(u=FakeDeviceArray(emu, u, version=4), v=dv)
    with pytest.raises(TypeError, match="input u is in GPU memory .* but input v is not"):
        term(u=du, v=v)
    with pytest.raises(pdejit.InputError, match="needs the inputs u, v"):
        term(u=du)

    class NoAddress:
        __cuda_array_interface__ = {"shape": (6, 8), "typestr": "<f8", "data": (0, False), "version": 3}
    with pytest.raises(pdejit.InputError, match="no device address"):
        term(u=NoAddress(), v=dv)

    class Wild:  # an address the driver never gave out: the driver's error, no crash
        __cuda_array_interface__ = {"shape": (6, 8), "typestr": "<f8", "data": (u.ctypes.data, False), "version": 3}
    with pytest.raises(pdejit.RunError, match="on the device: cuMemcpy"):
        term(u=Wild(), v=dv)
    with pytest.raises(TypeError, match="out is in GPU memory .* but input u, input v are not"):
        term.jacobian("u")(u=u, v=v, out=du)


@pytest.mark.parametrize("expr,grid,boundary", CELL_CASES)
def test_float32_device_arrays_compute_in_float(emu, expr, grid, boundary):
    # float32 arrays: the term's float kernels (a second GPU term), against the float64 NumPy term
    # on the same values to 2e-5 of the largest value (lap's 1/h^2 amplifies the float rounding)
    term = pdejit.Term(expr, grid=grid, spacing=[0.1, 0.25, 0.5][:len(grid)], fields=["u", "v"],
                       params={k: 0.7 for k in ("D", "k") if k in expr}, boundary=boundary)
    u, v = (x.astype(np.float32) for x in fields(term.shape, 4))
    expect = term(u=u.astype(np.float64), v=v.astype(np.float64), t=0.5)
    r = term(u=FakeDeviceArray(emu, u, "<f4"), v=FakeDeviceArray(emu, v, "<f4"), t=0.5)
    assert r.__cuda_array_interface__["typestr"] == "<f4" and r.shape == term.shape
    got = emu.get(r)
    assert got.dtype == np.float32
    worst = np.max(np.abs(got - expect)) / max(1.0, np.max(np.abs(expect)))
    assert 0 < worst <= 2e-5  # float arithmetic indeed, and close
    jac = term.jacobian("v")(u=FakeDeviceArray(emu, u, "<f4"), v=FakeDeviceArray(emu, v, "<f4"), t=0.5)
    np.testing.assert_allclose(emu.get(jac), term.jacobian("v")(u=u.astype(np.float64), v=v.astype(np.float64),
                                                                t=0.5), rtol=2e-5, atol=2e-5)


def test_device_jacobian_is_the_derivative(emu):
    # against the analytic derivative: d(u*v + lap(u))/du at the cell = v - 2/h^2 per axis
    term = pdejit.Term("u*v + lap(u) + u^3", grid=(8, 6), spacing=(0.5, 0.25), fields=["u", "v"])
    u, v = fields(term.shape, 9)
    got = emu.get(term.jacobian("u")(u=FakeDeviceArray(emu, u), v=FakeDeviceArray(emu, v)))
    np.testing.assert_allclose(got, v - 2/0.25 - 2/0.0625 + 3*u**2, rtol=1e-14, atol=1e-13)
    assert np.array_equal(emu.get(term.jacobian("v")(u=FakeDeviceArray(emu, u), v=FakeDeviceArray(emu, v))), u)


def test_device_calls_leave_device_memory_flat(emu):
    term = pdejit.Term("u*(1 - u) + lap(u)", grid=(16, 16), fields="u")
    du = FakeDeviceArray(emu, fields(term.shape, 2)[0])
    term(u=du)
    before = emu.free_bytes()
    for _ in range(300):
        r = term(u=du)
    del r
    assert emu.free_bytes() == before
    del term  # the term's own buffers go with it
    assert emu.free_bytes() > before


def test_cupy_on_a_gpu():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed: the GPU test runs where it is")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("CuPy finds no GPU")
    except cupy.cuda.runtime.CUDARuntimeError as e:
        pytest.skip("CuPy finds no GPU: %s" % e)
    for expr, grid, boundary in CELL_CASES:
        term = pdejit.Term(expr, grid=grid, fields=["u", "v"], params={k: 0.5 for k in ("D", "k") if k in expr},
                           boundary=boundary)
        u, v = fields(term.shape, 5)
        r = term(u=cupy.asarray(u), v=cupy.asarray(v), t=0.5)
        assert isinstance(r, cupy.ndarray) and r.shape == term.shape
        np.testing.assert_allclose(cupy.asnumpy(r), term(u=u, v=v, t=0.5), rtol=1e-12, atol=1e-12)
        r32 = term(u=cupy.asarray(u, dtype=cupy.float32), v=cupy.asarray(v, dtype=cupy.float32), t=0.5)
        assert r32.dtype == cupy.float32
        e32 = term(u=u.astype(np.float32).astype(np.float64), v=v.astype(np.float32).astype(np.float64), t=0.5)
        assert np.max(np.abs(cupy.asnumpy(r32) - e32)) <= 2e-5 * max(1.0, np.max(np.abs(e32)))
        np.testing.assert_allclose(cupy.asnumpy(term.jacobian("u")(u=cupy.asarray(u), v=cupy.asarray(v))),
                                   term.jacobian("u")(u=u, v=v), rtol=1e-12, atol=1e-12)
    faces = pdejit.Term("harm(v)*grad(u)", grid=(64, 48), fields=["u", "v"], at="faces")
    u, v = fields(faces.shape, 6)
    for g, e in zip(faces(u=cupy.asarray(u), v=cupy.asarray(v)), faces(u=u, v=v)):
        np.testing.assert_allclose(cupy.asnumpy(g), e, rtol=1e-12, atol=1e-12)
