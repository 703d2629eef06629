"""plot.py — pictures of a simulation's fields: pdejit.plot(sim, "u") draws one with matplotlib
(an optional dependency), and png(sim) makes the PNG a notebook shows for a Simulation
(Simulation._repr_png_), with NumPy and zlib only: the same colour map (viridis, the stops of
runtime/picture.c), scaling (at least 256 pixels on the long side), y up, and the middle z plane of
a 3D field as the frames `pdejit run` writes."""
import struct
import zlib

import numpy as np

__all__ = ["plot", "png"]

# matplotlib's _viridis_data at 10 evenly spaced stops (runtime/picture.c)
_VIRIDIS = np.array([[0x44, 0x01, 0x54], [0x48, 0x28, 0x78], [0x3e, 0x49, 0x89], [0x31, 0x68, 0x8e],
                     [0x26, 0x82, 0x8e], [0x1f, 0x9e, 0x89], [0x35, 0xb7, 0x79], [0x6e, 0xce, 0x58],
                     [0xb5, 0xde, 0x2b], [0xfd, 0xe7, 0x25]], dtype=float)
_AXES = {"x": 0, "y": 1, "z": 2}


def _host(sim, name):
    """Field `name` of sim as a NumPy array on the host (a copy of a GPU field, through CuPy)."""
    if name not in sim.problem.fields:
        raise KeyError("no field %r; the fields are %s" % (name, ", ".join(sim.problem.fields)))
    a = sim.fields[name]
    if isinstance(a, np.ndarray):
        return np.array(a)
    try:
        import cupy
    except ImportError:
        raise TypeError("field %r is on the GPU: plotting it needs CuPy to copy it to the host "
                        "(pip install cupy), or a simulation on the cpu back end" % name) from None
    return cupy.asnumpy(cupy.asarray(a))


def _plane(sim, values, slice):
    """The 2D plane drawn of a field (NumPy order, rows up the vertical axis) and the names of its
    horizontal and vertical axes: 2D whole, 3D the middle plane across `slice` ("x", "y", "z")."""
    dim = sim.problem.dim
    if dim < 3:
        if slice is not None:
            raise ValueError("slice needs a 3D field; this one is %dD" % dim)
        return values, "x", "y"
    axis = _AXES.get(slice if slice is not None else "z")
    if axis is None:
        raise ValueError("slice is 'x', 'y' or 'z', not %r" % (slice,))
    mid = values.shape[2 - axis] // 2
    if axis == 2:
        return values[mid, :, :], "x", "y"
    if axis == 1:
        return values[:, mid, :], "x", "z"
    return values[:, :, mid], "y", "z"


def plot(sim, field=None, ax=None, cmap="viridis", vmin=None, vmax=None, slice=None, colorbar=True):
    """Draws field `field` (default: the first) of sim with matplotlib and returns the Axes: a 1D
    field as a line over the cell centres, a 2D one as an image over the domain (y up; each cell
    between its real faces on a mesh with listed or stretched widths, axes named r, z on a radial
    mesh) with a colour bar, a 3D one as its middle plane across `slice` ("z" by default). vmin, vmax: a fixed colour
    range (so that pictures of a series compare). Raises ImportError when matplotlib is missing."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("pdejit.plot needs matplotlib: pip install matplotlib") from None
    name = field if field is not None else sim.problem.fields[0]
    values = _host(sim, name)
    mesh = sim.mesh
    if ax is None:
        ax = plt.figure().add_subplot()
    title = "%s  t = %.6g" % (name, sim.t)
    if sim.problem.dim == 1:
        if slice is not None:
            raise ValueError("slice needs a 3D field; this one is 1D")
        ax.plot(np.asarray(getattr(mesh, mesh.axes[0])), values)
        ax.set_xlabel(mesh.axes[0])
        ax.set_ylabel(name)
        if vmin is not None or vmax is not None:
            ax.set_ylim(vmin, vmax)
        ax.set_title(title)
        return ax
    plane, across, up = _plane(sim, values, slice)
    a, b = _AXES[across], _AXES[up]
    if mesh.uniform[a] and mesh.uniform[b]:
        extent = (mesh.origin[a], mesh.origin[a] + mesh.length[a], mesh.origin[b], mesh.origin[b] + mesh.length[b])
        image = ax.imshow(plane, origin="lower", extent=extent, cmap=cmap, vmin=vmin, vmax=vmax,
                          interpolation="nearest", aspect="equal")
    else:  # listed or stretched widths: each cell drawn between its real faces
        image = ax.pcolormesh(mesh.faces(a), mesh.faces(b), plane, cmap=cmap, vmin=vmin, vmax=vmax)
        ax.set_aspect("equal")
    ax.set_xlabel(mesh.axes[a])
    ax.set_ylabel(mesh.axes[b])
    if sim.problem.dim == 3:
        cut = "xyz".replace(across, "").replace(up, "")
        k = values.shape[2 - _AXES[cut]] // 2
        f = mesh.faces(_AXES[cut])
        title += "  %s = %.4g" % (cut, (f[k] + f[k + 1]) / 2)
    ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label=name)
    return ax


def _colours(s):
    """viridis at s in [0, 1] (NaN: grey) as uint8 RGB, interpolated linearly between the stops."""
    s = np.asarray(s, dtype=float)
    bad = ~np.isfinite(s)
    x = np.clip(np.where(bad, 0, s), 0, 1) * (len(_VIRIDIS) - 1)
    i = np.minimum(x.astype(int), len(_VIRIDIS) - 2)
    w = (x - i)[..., None]
    rgb = np.rint(_VIRIDIS[i] * (1 - w) + _VIRIDIS[i + 1] * w).astype(np.uint8)
    rgb[bad] = 128
    return rgb


def _encode(rgb):
    """An 8-bit RGB PNG of rgb (rows top down, shape (h, w, 3), uint8)."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[r].tobytes() for r in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def png(sim, field=None, slice=None):
    """The PNG bytes of field `field` (default: the first) of sim: its cells (a 3D field's middle
    plane across `slice`, "z" by default) coloured with viridis on the field's min..max (NaN grey),
    each cell a square of the integer size that makes the longer side at least 256 pixels, y up;
    a 1D field as a band of columns 1/6 as high as long."""
    name = field if field is not None else sim.problem.fields[0]
    values = _host(sim, name)
    if sim.problem.dim == 1:
        plane = values[None, :]
    else:
        plane = _plane(sim, values, slice)[0]
    finite = plane[np.isfinite(plane)]
    lo, hi = (finite.min(), finite.max()) if finite.size else (0.0, 0.0)
    s = (plane - lo) / (hi - lo) if hi > lo else np.where(np.isfinite(plane), 0.5, np.nan)
    rgb = _colours(s)[::-1]  # the top row of the image is the top row of cells
    scale = max(1, -(-256 // max(plane.shape)))
    rgb = np.repeat(rgb, scale, axis=1)
    rgb = np.repeat(rgb, max(1, rgb.shape[1] // 6) if sim.problem.dim == 1 else scale, axis=0)
    return _encode(np.ascontiguousarray(rgb))


plot.png = png  # pdejit.plot is the function (pdejit/__init__.py): pdejit.plot.png reaches png
