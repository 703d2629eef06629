"""vti_pieces.py ONE_DIR MANY_DIR: the parallel VTK snapshots of MANY_DIR (.pvti and their
pieces) hold the same values as the whole-mesh .vti of ONE_DIR, the pieces tile the mesh once,
and snapshots.pvd lists the .pvti files. Exit 1 with the first difference."""
import base64, os, re, struct, sys

def cells(path):
    """(extent, {name: [values]}) of a .vti with one Piece"""
    text = open(path).read()
    ext = [int(v) for v in re.search(r'<Piece Extent="([^"]+)"', text).group(1).split()]
    out = {}
    for name, blob in re.findall(r'<DataArray type="Float64" Name="([^"]+)" format="binary">\s*(\S+)\s*</DataArray>', text):
        head = base64.b64decode(blob[:12])
        nbytes = struct.unpack("<Q", head)[0]
        data = base64.b64decode(blob[12:])
        out[name] = struct.unpack("<%dd" % (nbytes // 8), data[:nbytes])
    return ext, out

one, many = sys.argv[1], sys.argv[2]
whole = sorted(f for f in os.listdir(one) if f.endswith(".vti"))
if not whole:
    sys.exit("no .vti in " + one)
for f in whole:
    ext, ref = cells(os.path.join(one, f))
    nx, ny, nz = (max(ext[2 * a + 1] - ext[2 * a], 1) for a in range(3))
    pvti = open(os.path.join(many, f[:-4] + ".pvti")).read()
    covered = [0] * (nx * ny * nz)
    for pext, src in re.findall(r'<Piece Extent="([^"]+)" Source="([^"]+)"', pvti):
        pext = [int(v) for v in pext.split()]
        e2, vals = cells(os.path.join(many, src))
        if e2 != pext:
            sys.exit("%s: extent %s, the .pvti says %s" % (src, e2, pext))
        px, py, pz = (max(pext[2 * a + 1] - pext[2 * a], 1) for a in range(3))
        for name, v in vals.items():
            for k in range(pz):
                for j in range(py):
                    for i in range(px):
                        g = (pext[0] + i) + nx * ((pext[2] + j) + ny * (pext[4] + k))
                        if v[i + px * (j + py * k)] != ref[name][g]:
                            sys.exit("%s: %s at cell %d differs from %s" % (src, name, g, f))
                        covered[g] += 1
    if set(covered) != {len(ref)}:
        sys.exit("%s: the pieces do not cover every cell once" % f)
pvd = open(os.path.join(many, "snapshots.pvd")).read()
if len(re.findall(r'file="snapshot_\d+\.pvti"', pvd)) != len(whole):
    sys.exit("snapshots.pvd does not list the %d .pvti files" % len(whole))
print("vti_pieces: %d snapshots agree" % len(whole))
