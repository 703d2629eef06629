# test_mesh.py — a problem's mesh from Python on meshes beyond the uniform grid: the coordinates
# by name (x, y, z; r, z on radial meshes) are the cell centres `pdejit run --dump` writes, to the
# bit; faces() are the .vtr's coordinates; a field set to `x` in the file holds them; pdejit.plot
# draws each cell between its real faces (where matplotlib is installed).
import re
import subprocess

import numpy as np
import pytest

import pdejit
from conftest import BINARY

MESHES = {  # the mesh, u's initial value, the coordinates, whether each axis has equal widths
    "stretched": ("mesh grid(nx = 9, x = stretch(1.25), dy = [0.1, 0.3, 0.2, 0.4], x0 = -1)", "x + 3*y", "xy",
                  (False, False)),
    "stretched3d": ("mesh grid(nx = 3, ny = 4, nz = 5, z = stretch(0.8), Lz = 2)", "x + y + z", "xyz", (True, True, False)),
    "cylindrical": ("mesh cylindrical(nr = 6, nz = 4, Lr = 1, Lz = 2, r0 = 0.5)", "r + 3*z", "rz", (True, True)),
    "spherical": ("mesh spherical(nr = 7, Lr = 2)", "r", "r", (True,)),
    "cylindrical_stretched": ("mesh cylindrical(nr = 6, nz = 3, Lr = 1, r0 = 0.2, r = stretch(1.3), dz = [0.5, 1, 0.25])",
                              "r + 3*z", "rz", (False, False)),
    "uniform": ("mesh grid(nx = 5, ny = 3, Lx = 2, x0 = 0.1)", "x + 3*y", "xy", (True, True)),
}


def dump_columns(path):
    """{column name: values} of a --dump CSV (x fastest, as a field's flat order)."""
    with open(path) as f:
        names = f.readline().strip().split(",")
        rows = np.array([[float(v) for v in line.split(",")] for line in f])
    return {n: rows[:, i] for i, n in enumerate(names)}


@pytest.mark.parametrize("kind", sorted(MESHES))
def test_coordinates_are_the_dumps_centres(kind, in_tmp):
    mesh, expr, axes, uniform = MESHES[kind]
    text = "%s\nfield u = %s\neq dt(u) = 0\ntime dt = 1, steps = 1\n" % (mesh, expr)
    (in_tmp / "m.pde").write_text(text)
    subprocess.run([BINARY, "run", "m.pde", "-q", "--dump", "m.csv"], check=True)
    cols = dump_columns(in_tmp / "m.csv")
    m = pdejit.compile(text).mesh
    assert m.geometry == {"cylindrical": "cylindrical", "spherical": "spherical"}.get(kind.split("_")[0], "grid")
    assert m.axes == tuple(axes) and m.uniform == uniform
    for a, name in enumerate(m.axes):
        got = np.asarray(getattr(m, name)).ravel()
        assert np.array_equal(got, cols[name]), name  # to the bit
        f = m.faces(a)
        assert len(f) == m.n[a] + 1 and np.all(np.diff(f) > 0)
        assert f[0] == pytest.approx(m.origin[a], abs=1e-15) and f[-1] == pytest.approx(m.origin[a] + m.length[a], rel=1e-14)
        line = np.unique(cols[name])
        assert np.all((f[:-1] < line) & (line < f[1:]))
    for other in {"x", "y", "z", "r"} - set(m.axes):
        with pytest.raises(AttributeError):
            getattr(m, other)
    sim = pdejit.compile(text).simulate()
    assert np.allclose(np.asarray(sim.fields["u"]).ravel(), cols["u"], rtol=0, atol=1e-15)


def test_stretched_widths():
    m = pdejit.compile(MESHES["stretched3d"][0] + "\nfield u\n").mesh
    w = np.diff(m.faces("z"))
    assert np.allclose(w[1:] / w[:-1], 0.8, rtol=1e-12)


def test_vtr_coordinates_are_the_faces(in_tmp):
    mesh, expr = MESHES["stretched"][:2]
    text = "%s\nfield u = %s\neq dt(u) = 0\ntime dt = 1, steps = 1\noutput every = 1, format = vtk\n" % (mesh, expr)
    (in_tmp / "v.pde").write_text(text)
    subprocess.run([BINARY, "run", "v.pde", "-q", "--out", "v"], check=True)
    vtr = (in_tmp / "v" / "snapshot_000000.vtr").read_text()
    m = pdejit.compile(text).mesh
    for a, c in enumerate("xy"):
        written = re.search(r'Name="%s" format="ascii">([^<]*)<' % c, vtr).group(1).split()
        assert np.array_equal(np.array([float(v) for v in written]), m.faces(a))


def test_plot_draws_the_real_faces():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    mesh, expr = MESHES["cylindrical"][:2]
    sim = pdejit.compile("%s\nfield u = %s\n" % (mesh, expr)).simulate()
    ax = pdejit.plot(sim, "u")
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("r", "z")
    mesh, expr = MESHES["stretched"][:2]
    sim = pdejit.compile("%s\nfield u = %s\n" % (mesh, expr)).simulate()
    ax = pdejit.plot(sim, "u")
    quad = ax.collections[0]
    corners = quad.get_coordinates()  # (ny + 1, nx + 1, 2): the faces
    assert np.array_equal(corners[0, :, 0], sim.mesh.faces(0)) and np.array_equal(corners[:, 0, 1], sim.mesh.faces(1))
