"""fipy_meshes.py — FiPy side by side with pdejit on FiPy's examples on cylindrical and spherical
meshes (samples/fipy/*.pde): each example set up as FiPy's example file sets it up and solved by
FiPy, the matching sample solved by pdejit (`pdejit run SAMPLE --dump`), the two fields compared
cell by cell, and each against the exact solution, at FiPy's doctest tolerance (atol = 1e-3).
Run by tests/fipy_meshes_test.sh with a Python that imports FiPy and SciPy.
Usage: python fipy_meshes.py PDEJIT SAMPLES_DIR WORK_DIR
Exit status 0 when every example agrees, 1 otherwise, 77 when FiPy or SciPy does not import."""
import os
import subprocess
import sys

try:
    import numpy as np
    from fipy import (CellVariable, CylindricalGrid1D, CylindricalGrid2D, DiffusionTerm,
                      ExponentialConvectionTerm, SphericalGrid1D)
    from scipy.special import expi
except ImportError as exc:  # the shell script checks first; this is the second line of defence
    print(f"SKIPPED: {exc}")
    sys.exit(77)

ATOL = 1e-3  # the doctest's: var.allclose(analyticalArray, atol=1e-3)
diffCoeff = 1.
r0, r1, nr = 1., 2., 100
Rratio = (r1 / r0)**(1 / float(nr))
dr_nonuniform = r0 * (Rratio - 1) * Rratio**np.arange(nr)


def fipy_solve(mesh, convCoeff):
    """The lines every example shares: phi = 0 inside, 1 outside, solved steady."""
    var = CellVariable(mesh=mesh, name="variable")
    var.constrain(0., mesh.facesLeft)
    var.constrain(1., mesh.facesRight)
    eq = DiffusionTerm(coeff=diffCoeff) + ExponentialConvectionTerm(coeff=convCoeff)
    eq.solve(var=var)
    return np.array(mesh.cellCenters[0]), np.array(var.value)


def exact_cylindrical(r, U=10.):
    return np.exp(U / diffCoeff * (r1 - r)) * (expi(U * r0 / diffCoeff) - expi(U * r / diffCoeff)) \
        / (expi(U * r0 / diffCoeff) - expi(U * r1 / diffCoeff))


def exact_spherical(r, U=10.):
    """r^2 (D phi' + U phi) = const: phi = c (k Ei(k r) e^(-k r) - 1/r) + a e^(-k r), k = U/D."""
    k = U / diffCoeff
    g = lambda s: k * expi(k * s) * np.exp(-k * s) - 1 / s
    c, a = np.linalg.solve([[g(r0), np.exp(-k * r0)], [g(r1), np.exp(-k * r1)]], [0., 1.])
    return c * g(r) + a * np.exp(-k * r)


EXAMPLES = [  # (sample, FiPy's mesh and coefficient as its example file writes them, exact solution)
    ("cylindrical_mesh_1d", lambda: (CylindricalGrid1D(dr=(r1 - r0) / nr, nr=nr) + ((r0,),), (10.,)),
     exact_cylindrical),
    ("cylindrical_mesh_1d_nonuniform", lambda: (CylindricalGrid1D(dr=dr_nonuniform) + ((r0,),), ((10.,),)),
     exact_cylindrical),
    ("cylindrical_mesh_2d", lambda: (CylindricalGrid2D(dr=(r1 - r0) / nr, dz=1., nr=nr, nz=1) + ((r0,),),
                                     ((10.,), (0.,))), exact_cylindrical),
    ("cylindrical_mesh_2d_nonuniform", lambda: (CylindricalGrid2D(dr=dr_nonuniform, dz=1., nz=1) + ((r0,), (0.,)),
                                                ((10.,), (0.,))), exact_cylindrical),
    ("spherical_mesh_1d", lambda: (SphericalGrid1D(dr=(r1 - r0) / nr, nr=nr) + ((r0,),), (10.,)),
     exact_spherical),
]


# LeakSanitizer's own stop-the-world tracer can crash at a sanitized process's exit on a busy
# machine ("Tracer caught signal 11 ... LeakSanitizer has encountered a fatal error", a known
# flake: github.com/google/sanitizers/issues/1353); that signature alone is run once more, so a
# real leak report or any other failure still fails the test.
LSAN_TRACER_CRASH = "LeakSanitizer has encountered a fatal error"


def pdejit_solve(pdejit, sample, work):
    dump = os.path.join(work, sample + ".csv")
    cmd = [pdejit, "run", sample_path(sample), "-q", "--dump", dump]
    run = subprocess.run(cmd, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0 and LSAN_TRACER_CRASH in run.stderr and "Tracer caught signal" in run.stderr:
        print(f"{sample}: LeakSanitizer's tracer crashed at exit; run again", file=sys.stderr)
        run = subprocess.run(cmd, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(run.stderr)
    run.check_returncode()
    data = np.loadtxt(dump, delimiter=",", skiprows=1, ndmin=2)
    return data[:, 0], data[:, -1]


def main():
    global sample_path
    pdejit, samples, work = sys.argv[1:4]
    sample_path = lambda name: os.path.join(samples, name + ".pde")
    bad = 0
    for name, setup, exact in EXAMPLES:
        mesh, convCoeff = setup()
        rf, phif = fipy_solve(mesh, convCoeff)
        rp, phip = pdejit_solve(pdejit, name, work)
        if rf.shape != rp.shape or not np.allclose(rf, rp, rtol=0, atol=1e-12):
            print(f"{name}: the cell centres differ (FiPy {rf.shape}, pdejit {rp.shape})")
            bad = 1
            continue
        ex = exact(rf)
        d_side, d_fipy, d_pdejit = (float(np.max(np.abs(a - b))) for a, b in
                                    ((phif, phip), (phif, ex), (phip, ex)))
        ok = d_side <= ATOL and d_pdejit <= ATOL
        print(f"{name}: max |FiPy - pdejit| = {d_side:.3e}, |FiPy - exact| = {d_fipy:.3e}, "
              f"|pdejit - exact| = {d_pdejit:.3e} ({'ok' if ok else 'FAILED'}, atol {ATOL:g})")
        bad |= not ok
    return bad


if __name__ == "__main__":
    sys.exit(main())
