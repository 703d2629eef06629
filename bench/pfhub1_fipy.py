"""pfhub1_fipy.py — PFHub benchmark 1a with FiPy, the algorithm of FiPy's published upload
(usnistgov/FiPy-spinodal-decomposition-benchmark, periodic/cahn-hilliard.py, the run behind
PFHub's fipy_1a_travis record): a periodic 200 x 200 grid of unit cells, the Cahn-Hilliard
equation as dc/dt = div(M f0''(c) grad c) - div(M kappa grad lap c), backward Euler with three
sweeps a step, the step accepted when the last sweep's residual is below 1/10 of the first's,
then grown by 1.1 (at most --dt-max), else shrunk by 0.8 and redone. Prints `t,energy` rows
(the free energy F = sum over cells of f0(c) + kappa/2 |grad c|^2, FiPy's cell-centred gradient)
at every --every of simulated time (the first accepted step at or after each multiple) and at
the end. FiPy's own solver here is SciPy's LinearLUSolver (the published run used PySparse's).
Usage: python pfhub1_fipy.py [--n 200] [--until 52.746625481564735] [--every 1] [--dt-max 1]
"""
import argparse
import sys
import time

import fipy as fp
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=200)
ap.add_argument("--until", type=float, default=52.746625481564735)
ap.add_argument("--every", type=float, default=1.0)
ap.add_argument("--dt-max", type=float, default=1.0)
a = ap.parse_args()

mesh = fp.PeriodicGrid2D(nx=a.n, ny=a.n, dx=1.0, dy=1.0)
ca, cb, kappa, M, c0, eps, rho = 0.3, 0.7, 2.0, 5.0, 0.5, 0.01, 5.0
c = fp.CellVariable(mesh=mesh, name="c", hasOld=True)
x, y = np.array(mesh.x), np.array(mesh.y)
c[:] = c0 + eps * (np.cos(0.105 * x) * np.cos(0.11 * y) + (np.cos(0.13 * x) * np.cos(0.087 * y))**2
                   + np.cos(0.025 * x - 0.15 * y) * np.cos(0.07 * x - 0.02 * y))


def energy():
    f0 = rho * (c - ca)**2 * (cb - c)**2
    return float(np.sum(np.array(f0 + 0.5 * kappa * c.grad.mag**2)))


d2f = 2 * rho * ((ca - c)**2 + 4 * (ca - c) * (cb - c) + (cb - c)**2)
eq = fp.TransientTerm() == fp.DiffusionTerm(M * d2f) - fp.DiffusionTerm((M, kappa))
solver = fp.LinearLUSolver()
t, dt, nxt = 0.0, 0.01, a.every
c.updateOld()
print("t,energy")
print("%.17g,%.17g" % (t, energy()))
sys.stdout.flush()
t0 = time.time()
steps = 0
while t < a.until - 1e-12:
    dt = min(dt, a.until - t)
    res0 = eq.sweep(c, dt=dt, solver=solver)
    for _ in range(2):
        res = eq.sweep(c, dt=dt, solver=solver)
    if res < res0 * 0.1:
        t += dt
        steps += 1
        c.updateOld()
        dt = min(dt * 1.1, a.dt_max)
        if t >= nxt - 1e-12 or t >= a.until - 1e-12:
            print("%.17g,%.17g" % (t, energy()))
            sys.stdout.flush()
            while nxt <= t + 1e-12:
                nxt += a.every
    else:
        dt *= 0.8
        c[:] = c.old
print("# %d steps in %.1f s" % (steps, time.time() - t0), file=sys.stderr)
