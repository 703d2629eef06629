# test_term_faces.py — face Terms (at="faces") against NumPy's evaluation of the same face
# expression on ghost-padded arrays (bit for bit where NumPy does the same operations in the same
# order), boundary faces with zero flux and periodic axes, FiPy's face order, bad arguments, and
# FiPy's own face values where FiPy is installed.
import numpy as np
import pytest

import pdejit

RNG = np.random.default_rng(11)
MODES = {"zero-flux": "edge", "periodic": "wrap"}


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def sides(a, boundary):
    """(L, R) cell values of every x face and every y face of a (ny, nx) array: the array padded
    with one ghost layer per the boundary treatment of each axis (x, y)."""
    p = np.pad(a, ((0, 0), (1, 1)), mode=MODES[boundary[0]])
    p = np.pad(p, ((1, 1), (0, 0)), mode=MODES[boundary[1]])
    ny, nx = a.shape
    return ((p[1:-1, 0:nx + 1], p[1:-1, 1:nx + 2]),
            (p[0:ny + 1, 1:-1], p[1:ny + 2, 1:-1]))


@pytest.mark.parametrize("boundary", [("zero-flux", "zero-flux"), ("periodic", "periodic"),
                                      ("zero-flux", "periodic")])
def test_face_values_equal_numpy(boundary):
    ny, nx, h = 7, 9, (0.1, 0.25)
    u, d, v = RNG.random((ny, nx)), 0.5 + RNG.random((ny, nx)), RNG.random((ny, nx)) - 0.5
    term = pdejit.Term("harm(d)*grad(u) - upwind(u, v)*v + 10*boundary", grid=(nx, ny), spacing=h,
                       fields=["u", "d", "v"], boundary=boundary, at="faces")
    fx, fy = term(u=u, d=d, v=v)
    assert fx.shape == (ny, nx + 1) and fy.shape == (ny + 1, nx)
    assert term.face_shapes == ((ny, nx + 1), (ny + 1, nx))
    for axis, got in enumerate((fx, fy)):
        (ul, ur), (dl, dr), (vl, vr) = (sides(a, boundary)[axis] for a in (u, d, v))
        vf = 0.5 * (vl + vr)
        wall = np.zeros(got.shape)
        if boundary[axis] == "zero-flux":
            edge = (slice(None), [0, -1]) if axis == 0 else ([0, -1], slice(None))
            wall[edge] = 1
        expect = 2 * dl * dr / (dl + dr) * ((ur - ul) * (1 / h[axis])) - np.where(vf > 0, ul, ur) * vf + 10 * wall
        np.testing.assert_allclose(got, expect, rtol=1e-14, atol=1e-14)
        # the normal gradient alone, bit for bit; zero on the zero-flux walls
    gx, gy = pdejit.Term("grad(u)", grid=(nx, ny), spacing=h, fields="u", boundary=boundary, at="faces")(u=u)
    (ul, ur), (bl, br) = sides(u, boundary)
    assert np.array_equal(bits(gx), bits((ur - ul) * (1 / h[0])))
    assert np.array_equal(bits(gy), bits((br - bl) * (1 / h[1])))
    if boundary[0] == "zero-flux":
        assert not gx[:, [0, -1]].any()
    else:
        assert np.array_equal(gx[:, 0], gx[:, -1])


def test_face_average_wall_and_coordinates_1d_3d():
    u = RNG.random(12)
    (f,) = pdejit.Term("u + x", grid=12, spacing=0.5, fields="u", at="faces")(u=u)
    p = np.pad(u, 1, mode="edge")
    np.testing.assert_allclose(f, 0.5 * (p[:-1] + p[1:]) + 0.5 * np.arange(13), rtol=1e-15, atol=1e-15)
    w = RNG.random((3, 4, 5))  # (nz, ny, nx)
    term = pdejit.Term("R(w) - L(w)", grid=(5, 4, 3), fields="w", boundary=("periodic", "zero-flux", "zero-flux"),
                       at="faces")
    fx, fy, fz = term(w=w)
    assert (fx.shape, fy.shape, fz.shape) == ((3, 4, 6), (3, 5, 5), (4, 4, 5))
    px = np.concatenate([w[..., -1:], w, w[..., :1]], axis=2)
    assert np.array_equal(fx, px[..., 1:] - px[..., :-1])
    pz = np.pad(w, ((1, 1), (0, 0), (0, 0)), mode="edge")
    assert np.array_equal(fz, pz[1:] - pz[:-1])
    assert not fy[:, [0, -1], :].any()


def test_div_of_the_face_term_is_the_cell_term():
    ny, nx, h = 10, 12, (0.2, 0.1)
    u = RNG.random((ny, nx))
    flux = "u*grad(u) + (u > 0.5 ? L(u) : R(u))"
    fx, fy = pdejit.Term(flux, grid=(nx, ny), spacing=h, fields="u", at="faces")(u=u)
    div = pdejit.Term("div(%s)" % flux, grid=(nx, ny), spacing=h, fields="u")(u=u)
    np.testing.assert_allclose(div, np.diff(fx, axis=1) / h[0] + np.diff(fy, axis=0) / h[1], rtol=1e-12, atol=1e-10)


def test_fipy_order_and_out():
    ny, nx = 4, 6
    u = RNG.random((ny, nx))
    term = pdejit.Term("grad(u) + u", grid=(nx, ny), fields="u", at="faces")
    fx, fy = term(u=u)
    flat = term(u=u, fipy=True)
    assert flat.shape == (ny * (nx + 1) + (ny + 1) * nx,)
    assert np.array_equal(flat, np.concatenate([fy.ravel(), fx.ravel()]))  # y faces first, as Grid2D
    assert np.array_equal(flat, pdejit.fipy_faces((fx, fy)))
    out = np.empty_like(flat)
    assert term(u=u.ravel(), out=out) is out and np.array_equal(out, flat)
    ax, ay = np.empty((ny, nx + 1)), np.empty((ny + 1, nx))
    got = term(u=u, out=(ax, ay))
    assert got[0] is ax and got[1] is ay and np.array_equal(ax, fx) and np.array_equal(ay, fy)


def test_face_term_bad_arguments_raise():
    with pytest.raises(pdejit.ProblemError) as e:
        pdejit.Term("grad(u) + w", grid=(5, 4), fields="u", at="faces")
    assert str(e.value) == "<term>:1:11: error: undefined name 'w'\n    grad(u) + w\n              ^\n1 error"
    with pytest.raises(pdejit.ProblemError) as e:
        pdejit.Term("grad(u)", grid=(5, 4), fields="u")  # a cell term: grad is a face quantity
    assert str(e.value).startswith("<term>:1:1: error: grad() is a face quantity")
    with pytest.raises(pdejit.InputError, match="at must be"):
        pdejit.Term("u", grid=(5, 4), fields="u", at="edges")
    term = pdejit.Term("grad(u)", grid=(5, 4), fields="u", at="faces")
    a = np.zeros((4, 5))
    with pytest.raises(pdejit.InputError, match="no derivative"):
        term.jacobian("u")
    with pytest.raises(pdejit.InputError, match="out must be"):
        term(u=a, out=np.empty(3))
    with pytest.raises(pdejit.InputError, match="out must be"):
        term(u=a, out=(np.empty((4, 6)), np.empty((4, 5))))
    with pytest.raises(pdejit.InputError, match="out must be"):
        term(u=a, out=(np.empty((4, 6)),))
    with pytest.raises(pdejit.InputError, match="needs the inputs"):
        term(v=a)


def test_against_fipy_face_values():
    fipy = pytest.importorskip("fipy")
    nx, ny, hx, hy = 7, 5, 0.5, 0.25
    mesh = fipy.Grid2D(nx=nx, ny=ny, dx=hx, dy=hy)
    u = RNG.random(nx * ny)
    var = fipy.CellVariable(mesh=mesh, value=u)
    avg = pdejit.Term("u", grid=(nx, ny), spacing=(hx, hy), fields="u", at="faces")(u=u, fipy=True)
    np.testing.assert_allclose(avg, np.asarray(var.arithmeticFaceValue), rtol=1e-15, atol=0)
    # FiPy's face gradient along each face's normal: x faces take its x component, y faces its y
    grad = pdejit.Term("grad(u)", grid=(nx, ny), spacing=(hx, hy), fields="u", at="faces")(u=u, fipy=True)
    g = np.asarray(var.faceGrad)
    n_y = (ny + 1) * nx
    normal = np.concatenate([g[1, :n_y], g[0, n_y:]])
    np.testing.assert_allclose(grad, normal, rtol=1e-12, atol=1e-12)
    # FiPy's PeriodicGrid2D keeps the last face of each periodic axis as an exterior face that
    # carries no flux (its value is its one cell's); every other face matches, and pdejit gives
    # those last faces the value of the first (the same face, wrapped)
    periodic = fipy.PeriodicGrid2D(nx=nx, ny=ny, dx=hx, dy=hy)
    pvar = fipy.CellVariable(mesh=periodic, value=u)
    inner = ~np.asarray(periodic.exteriorFaces)
    assert inner.sum() == nx * ny * 2
    for expr, fipy_value in (("u", np.asarray(pvar.arithmeticFaceValue)),
                             ("grad(u)", np.concatenate([np.asarray(pvar.faceGrad)[1, :n_y],
                                                         np.asarray(pvar.faceGrad)[0, n_y:]]))):
        term = pdejit.Term(expr, grid=(nx, ny), spacing=(hx, hy), fields="u", boundary="periodic", at="faces")
        got = term(u=u, fipy=True)
        np.testing.assert_allclose(got[inner], fipy_value[inner], rtol=1e-12, atol=1e-12)
        fx, fy = term(u=u)
        assert np.array_equal(fx[:, 0], fx[:, -1]) and np.array_equal(fy[0], fy[-1])


def test_against_fipy_face_values_3d_and_1d():
    fipy = pytest.importorskip("fipy")
    nx, ny, nz = 4, 3, 5
    w = RNG.random(nx * ny * nz)
    mesh = fipy.Grid3D(nx=nx, ny=ny, nz=nz, dx=0.5, dy=0.25, dz=2.0)
    var = fipy.CellVariable(mesh=mesh, value=w)
    got = pdejit.Term("w", grid=(nx, ny, nz), spacing=(0.5, 0.25, 2.0), fields="w", at="faces")(w=w, fipy=True)
    np.testing.assert_allclose(got, np.asarray(var.arithmeticFaceValue), rtol=1e-15, atol=0)
    g = np.asarray(var.faceGrad)  # Grid3D: z faces, then y faces, then x faces
    nzf, nyf = nx * ny * (nz + 1), nx * (ny + 1) * nz
    normal = np.concatenate([g[2, :nzf], g[1, nzf:nzf + nyf], g[0, nzf + nyf:]])
    grad = pdejit.Term("grad(w)", grid=(nx, ny, nz), spacing=(0.5, 0.25, 2.0), fields="w", at="faces")(w=w, fipy=True)
    np.testing.assert_allclose(grad, normal, rtol=1e-12, atol=1e-12)
    u = RNG.random(9)
    line = fipy.CellVariable(mesh=fipy.Grid1D(nx=9, dx=0.5), value=u)
    got = pdejit.Term("u", grid=9, spacing=0.5, fields="u", at="faces")(u=u, fipy=True)
    np.testing.assert_allclose(got, np.asarray(line.arithmeticFaceValue), rtol=1e-15, atol=0)
