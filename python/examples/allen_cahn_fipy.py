"""allen_cahn_fipy.py — a FiPy Allen-Cahn solve whose source term and its linearisation come from
a pdejit.Term, against the same solve with NumPy's.

    d(phi)/dt = eps^2 lap(phi) + s(phi),   s(phi) = phi - phi^3   (zero flux at the walls)

Each step linearises s about the previous values phi0 (FiPy's usual treatment of a stiff
source): s(phi) ~ s(phi0) + s'(phi0) (phi - phi0), with s'(phi0) as the coefficient of an
ImplicitSourceTerm and s(phi0) - s'(phi0) phi0 as an explicit source. With source="pdejit",
s and s' come from pdejit.Term("phi - phi^3").jacobian("phi"); with source="numpy" from NumPy.
The linear systems are solved directly (LU), so the two agree to rounding.

    python allen_cahn_fipy.py          # both, and their largest difference
"""
import sys

import numpy as np

import fipy
import pdejit


def solve(source="pdejit", nx=64, ny=64, h=0.5, eps2=1.0, dt=0.5, steps=40, seed=1):
    mesh = fipy.Grid2D(nx=nx, ny=ny, dx=h, dy=h)
    rng = np.random.default_rng(seed)
    phi = fipy.CellVariable(mesh=mesh, value=0.2 * (2 * rng.random(nx * ny) - 1), hasOld=True)
    if source == "pdejit":
        # FiPy's Grid2D numbers cells x fastest, as pdejit does: phi.value is a flat input
        s = pdejit.Term("phi - phi^3", grid=(nx, ny), spacing=(h, h), fields="phi")
        ds = s.jacobian("phi")
        values = lambda v: (s(phi=v), ds(phi=v))
    elif source == "numpy":
        values = lambda v: (v - v ** 3, 1 - 3 * v ** 2)
    else:
        raise ValueError("source is 'pdejit' or 'numpy'")
    solver = fipy.LinearLUSolver()
    coeff = fipy.CellVariable(mesh=mesh, value=0.0)
    rest = fipy.CellVariable(mesh=mesh, value=0.0)
    eq = (fipy.TransientTerm() == fipy.DiffusionTerm(coeff=eps2) + fipy.ImplicitSourceTerm(coeff=coeff) + rest)
    for _ in range(steps):
        phi.updateOld()
        old = np.array(phi.value)
        sv, dsv = values(old)
        coeff.setValue(dsv)
        rest.setValue(sv - dsv * old)
        eq.solve(var=phi, dt=dt, solver=solver)
    return np.array(phi.value).reshape(ny, nx)


if __name__ == "__main__":
    a, b = solve("pdejit"), solve("numpy")
    print("phi in [%.4f, %.4f]; largest difference pdejit vs NumPy source: %.3g" % (a.min(), a.max(),
                                                                                     np.abs(a - b).max()))
    sys.exit(0 if np.abs(a - b).max() <= 1e-12 else 1)
