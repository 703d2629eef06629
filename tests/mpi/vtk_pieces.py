"""vtk_pieces.py ONE_DIR MANY_DIR: the parallel VTK snapshots of MANY_DIR (.pvti or .pvtr and
their pieces) hold the same values as the whole-mesh .vti or .vtr of ONE_DIR, the pieces tile the
mesh once, a .vtr piece's coordinates are the whole mesh's faces over its extent (the same
numbers, compared as written), and snapshots.pvd lists the parallel files. Exit 1 with the first
difference. Parsed, not compared as text: the pieces' headers differ from the whole file's."""
import base64, os, re, struct, sys

def read(path):
    """(extent, {name: values}, [x, y, z] coordinate strings or None) of a .vti/.vtr with one Piece"""
    text = open(path).read()
    ext = [int(v) for v in re.search(r'<Piece Extent="([^"]+)"', text).group(1).split()]
    out = {}
    for name, blob in re.findall(r'<DataArray type="Float64" Name="([^"]+)" format="binary">\s*(\S+)\s*</DataArray>', text):
        head = base64.b64decode(blob[:12])
        nbytes = struct.unpack("<Q", head)[0]
        data = base64.b64decode(blob[12:])
        out[name] = struct.unpack("<%dd" % (nbytes // 8), data[:nbytes])
    coords = None
    block = re.search(r"<Coordinates>(.*)</Coordinates>", text, re.S)
    if block:
        coords = [re.search(r'Name="%s" format="ascii">([^<]*)</DataArray>' % a, block.group(1)).group(1).split()
                  for a in "xyz"]
    return ext, out, coords

one, many = sys.argv[1], sys.argv[2]
whole = sorted(f for f in os.listdir(one) if f.endswith((".vti", ".vtr")))
if not whole:
    sys.exit("no .vti or .vtr in " + one)
for f in whole:
    ext, ref, refc = read(os.path.join(one, f))
    nx, ny, nz = (max(ext[2 * a + 1] - ext[2 * a], 1) for a in range(3))
    par = open(os.path.join(many, f[:-4] + ".p" + f[-3:])).read()
    if (refc is None) != ("<PCoordinates>" not in par):
        sys.exit("%s: the parallel file's kind is not the whole file's" % f)
    covered = [0] * (nx * ny * nz)
    for pext, src in re.findall(r'<Piece Extent="([^"]+)" Source="([^"]+)"', par):
        pext = [int(v) for v in pext.split()]
        if not src.endswith(f[-4:]):
            sys.exit("%s: a piece of %s is not a %s" % (src, f, f[-4:]))
        e2, vals, coords = read(os.path.join(many, src))
        if e2 != pext:
            sys.exit("%s: extent %s, the parallel file says %s" % (src, e2, pext))
        for a in range(3) if refc else ():
            if coords[a] != refc[a][pext[2 * a]:pext[2 * a + 1] + 1]:
                sys.exit("%s: coordinates %s %s, the whole mesh's faces %s" % (src, "xyz"[a], coords[a],
                         refc[a][pext[2 * a]:pext[2 * a + 1] + 1]))
        px, py, pz = (max(pext[2 * a + 1] - pext[2 * a], 1) for a in range(3))
        if set(vals) != set(ref):
            sys.exit("%s: fields %s, the whole file has %s" % (src, sorted(vals), sorted(ref)))
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
kind = whole[0][-3:]
if len(re.findall(r'file="snapshot_\d+\.p%s"' % kind, pvd)) != len(whole):
    sys.exit("snapshots.pvd does not list the %d .p%s files" % (len(whole), kind))
print("vtk_pieces: %d snapshots agree" % len(whole))
