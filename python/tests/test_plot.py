# test_plot.py — pictures of a simulation from Python (python/pdejit/plot.py): the PNG a notebook
# shows (Simulation._repr_png_: size, viridis ends, y up, a 3D field's middle plane), pdejit.plot
# with matplotlib (skipped without it), and the ImportError that names matplotlib when it is missing.
import struct
import sys
import zlib

import numpy as np
import pytest

import pdejit
from pdejit.plot import png

VIRIDIS_BOTTOM, VIRIDIS_TOP = (0x44, 0x01, 0x54), (0xfd, 0xe7, 0x25)


def decode(data):
    """(width, height, pixels (h, w, 3)) of an 8-bit RGB PNG whose rows are unfiltered (type 0),
    read chunk by chunk with each CRC checked."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0] == zlib.crc32(kind + body) & 0xffffffff
        if kind == b"IHDR":
            w, h, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour == 2
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    assert len(raw) == h * (1 + 3 * w)
    rows = [raw[r * (1 + 3 * w):(r + 1) * (1 + 3 * w)] for r in range(h)]
    assert all(row[0] == 0 for row in rows)
    return w, h, np.frombuffer(b"".join(row[1:] for row in rows), dtype=np.uint8).reshape(h, w, 3)


def sim_of(text):
    return pdejit.compile(text).simulate(backend="interp")


def test_notebook_png_of_2d_field():
    # u = x on 32 x 16 cells: 8 pixels a cell (256 x 128); the left cells are the map's bottom, the
    # right ones its top, every row alike; v = y: the top row of the image is the top of the map
    sim = sim_of("mesh grid(nx = 32, ny = 16)\nfield u = x\nfield v = y\n")
    w, h, pix = decode(sim._repr_png_())
    assert (w, h) == (256, 128)
    assert tuple(pix[0, 0]) == VIRIDIS_BOTTOM and tuple(pix[h - 1, 0]) == VIRIDIS_BOTTOM
    assert tuple(pix[0, w - 1]) == VIRIDIS_TOP
    assert (pix == pix[0]).all()
    assert (pix[:, :8] == pix[0, 0]).all() and (pix[:, 8] != pix[0, 0]).any()  # a cell is 8 pixels
    w, h, pix = decode(png(sim, "v"))
    assert tuple(pix[0, 0]) == VIRIDIS_TOP and tuple(pix[h - 1, 0]) == VIRIDIS_BOTTOM
    sim.close()
    assert sim._repr_png_() is None


def test_notebook_png_of_3d_field_is_its_middle_plane():
    # u = z on 8 x 4 x 6 cells: the middle z plane (k = 3) is one value, drawn mid-map; u = x's
    # middle plane across x (slice="x") spans y (4 cells across) and z (6 up): constant
    sim = sim_of("mesh grid(nx = 8, ny = 4, nz = 6)\nfield u = z + x\n")
    w, h, pix = decode(png(sim))
    assert (w, h) == (256, 128)
    assert tuple(pix[0, 0]) == VIRIDIS_BOTTOM and tuple(pix[0, w - 1]) == VIRIDIS_TOP
    w, h, pix = decode(png(sim, slice="x"))
    assert (w, h) == (4 * 43, 6 * 43)
    assert tuple(pix[h - 1, 0]) == VIRIDIS_BOTTOM and tuple(pix[0, 0]) == VIRIDIS_TOP
    with pytest.raises(ValueError, match="slice is 'x', 'y' or 'z', not 'w'"):
        png(sim, slice="w")


def test_plot_without_matplotlib_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    sim = sim_of("mesh grid(nx = 4)\nfield u = x\n")
    with pytest.raises(ImportError, match=r"pdejit.plot needs matplotlib: pip install matplotlib"):
        pdejit.plot(sim, "u")


def test_plot_with_matplotlib():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sim = sim_of("mesh grid(nx = 6, ny = 3, Lx = 2)\nfield u = x*y\nfield w = 1\neq dt(u) = 0\ntime dt = 0.5\n")
    sim.advance(1.0)
    ax = pdejit.plot(sim, "u", vmin=0, vmax=2)
    image = ax.images[0]
    assert np.array_equal(image.get_array(), sim.fields["u"])
    assert image.get_extent() == [0, 2, 0, 1] and image.get_clim() == (0, 2)
    assert ax.get_title() == "u  t = 1" and ax.get_xlabel() == "x" and ax.get_ylabel() == "y"
    assert len(ax.figure.axes) == 2  # the colour bar
    with pytest.raises(KeyError, match="no field 'q'; the fields are u, w"):
        pdejit.plot(sim, "q")
    line = pdejit.plot(sim_of("mesh grid(nx = 5)\nfield u = 2*x\n")).lines[0]
    assert np.allclose(line.get_xdata(), (np.arange(5) + 0.5) / 5) and np.allclose(line.get_ydata(), 2 * line.get_xdata())
    plt.close("all")
