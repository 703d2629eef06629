#!/usr/bin/env python3
"""implicit_fipy.py — implicit solves, pdejit against FiPy, side by side (driven by implicit_fipy.sh).

Two problems, each solved implicitly by both on the same cell-centred grid with the same
discrete operators (5-point Laplacian, zero-flux sides):

  rd  2D Allen-Cahn reaction-diffusion  du/dt = D lap(u) + u - u^3  on [0,1]^2, D = 1e-3,
      dt = 100x the explicit limit h^2/(4D), a fixed number of backward Euler steps; each step's
      nonlinear system solved by Newton (pdejit: PETSc SNES with the exact Jacobian; FiPy: the
      source linearised, u - u^3 ~ (1 - 3 u0^2) u + 2 u0^3, swept until a sweep changes u by
      less than 1e-6: FiPy takes a source that would weaken the diagonal explicitly, so its
      sweeps converge linearly, not as Newton).
  ch  2D Cahn-Hilliard  dc/dt = lap(mu), mu = f'(c) - lap(c), f'(c) = c(1-c)(1-2c) (FiPy's
      examples/cahnHilliard/mesh2DCoupled.py: dx = 0.25, D = a = epsilon = 1), to t = T;
      FiPy: the example's coupled c, mu system, one linearised solve per step, fixed dt;
      pdejit: the single-field fourth-order form dt(c) = lap(f'(c) - lap(c)), bdf2 with adapt.

Accuracy: every result is compared with a reference computed by pdejit (rd: bdf2 with dt/10;
ch: bdf2 with adapt 100x tighter): the max and relative L2 difference of the final field.
Timing: pdejit's solve time (its "N steps to t = T in S s", kernels cached, compile excluded)
and its whole process; FiPy's time in its steps (mesh and terms built before). Medians over
--rounds runs.
"""
import argparse
import math
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

D_RD = 1e-3
SWEEP_TOL = 1e-6  # FiPy's sweeps: stop when a sweep changes u by less than this


def rd_source(n, dt, steps, scheme, pc=None, extra=""):
    solver = f"solver pc = {pc}\n" if pc else ""
    return f"""# Allen-Cahn reaction-diffusion, bench/implicit_fipy.py
mesh grid(nx = {n}, ny = {n}, Lx = 1, Ly = 1)
param D = {D_RD}
field u = 0.8*cos(6*pi*x)*cos(4*pi*y) + 0.2*cos(14*pi*x)
eq dt(u) = D*lap(u) + u - u^3
on all: dn(u) = 0
time dt = {dt!r}, steps = {steps}, scheme = {scheme}{extra}
{solver}"""


def ch_initial_expr(L):
    k = f"pi/{L!r}"
    return (f"0.5 + 0.02*(cos(8*{k}*x)*cos(10*{k}*y) + cos(12*{k}*x)*cos(7*{k}*y)"
            f" + cos(11*{k}*x)*cos(5*{k}*y) + cos(3*{k}*x)*cos(13*{k}*y))")


def ch_initial_np(x, y, L):
    k = math.pi / L
    return 0.5 + 0.02 * (np.cos(8 * k * x) * np.cos(10 * k * y) + np.cos(12 * k * x) * np.cos(7 * k * y)
                         + np.cos(11 * k * x) * np.cos(5 * k * y) + np.cos(3 * k * x) * np.cos(13 * k * y))


def ch_source(n, T, dt, scheme, adapt=None, pc=None):
    L = n * 0.25
    a = f", adapt = {adapt!r}" if adapt else ""
    solver = f"solver pc = {pc}\n" if pc else ""
    return f"""# Cahn-Hilliard (FiPy's mesh2DCoupled parameters), bench/implicit_fipy.py
mesh grid(nx = {n}, ny = {n}, Lx = {L!r}, Ly = {L!r})
param D = 1, a = 1, eps = 1
func dfdc(c) = a^2*c*(1 - c)*(1 - 2*c)
field c = {ch_initial_expr(L)}
eq dt(c) = D*lap(dfdc(c) - eps^2*lap(c))
on all: dn(c) = 0
time dt = {dt!r}, until = {T!r}, scheme = {scheme}{a}
{solver}"""


RUN_RE = re.compile(r"pdejit: (\d+) steps?(?: accepted \(\d+ rejected\))? to t = \S+ in (\S+) s")
SOLVER_RE = re.compile(r"implicit solver: (\d+) steps accepted, (\d+) rejected; (\d+) Newton iterations, (\d+) linear "
                       r"iterations; Jacobian assembly: (\d+) in (\S+) s")


def run_pdejit(args, src, name, options=None):
    """Runs one problem; returns dict(solve, wall, steps, newton, linear, jac_s, field)."""
    d = tempfile.mkdtemp(prefix="pj-fipy-")
    pde = os.path.join(d, name + ".pde")
    dump = os.path.join(d, "final.csv")
    with open(pde, "w") as f:
        f.write(src)
    cmd = [args.pdejit, "run", pde, "--out", "none", "--dump", dump, "--verbose", "--threads", str(args.threads)]
    if options:
        cmd += ["--solver-options", options]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if p.returncode:
        sys.exit(f"implicit_fipy: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}\n{src}")
    r = RUN_RE.search(p.stderr)
    s = SOLVER_RE.search(p.stderr)
    data = np.loadtxt(dump, delimiter=",", skiprows=1)
    for fn in (pde, dump):
        os.remove(fn)
    os.rmdir(d)
    return dict(solve=float(r.group(2)), wall=wall, cpu=cpu, steps=int(s.group(1)), rejected=int(s.group(2)),
                newton=int(s.group(3)), linear=int(s.group(4)), jac_s=float(s.group(6)), field=data[:, -1])


def fipy_rd(n, dt, steps):
    import fipy
    mesh = fipy.Grid2D(nx=n, ny=n, dx=1.0 / n, dy=1.0 / n)
    x, y = mesh.cellCenters
    u = fipy.CellVariable(mesh=mesh, hasOld=True,
                          value=0.8 * np.cos(6 * np.pi * x) * np.cos(4 * np.pi * y) + 0.2 * np.cos(14 * np.pi * x))
    eq = (fipy.TransientTerm() == fipy.DiffusionTerm(coeff=D_RD) + fipy.ImplicitSourceTerm(coeff=1 - 3 * u**2) + 2 * u**3)
    solver = fipy.solvers.DefaultSolver()
    sweeps = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        u.updateOld()
        for k in range(20):
            prev = np.array(u.value)
            eq.sweep(var=u, dt=dt, solver=solver)
            sweeps += 1
            if np.max(np.abs(np.asarray(u.value) - prev)) < SWEEP_TOL:
                break
    sec, cpu = time.perf_counter() - t0, time.process_time() - c0
    return dict(solve=sec, cpu=cpu, steps=steps, newton=sweeps, field=np.array(u.value), solver=type(solver).__name__)


def fipy_ch(n, T, dt):
    import fipy
    L = n * 0.25
    mesh = fipy.Grid2D(nx=n, ny=n, dx=0.25, dy=0.25)
    x, y = mesh.cellCenters
    c = fipy.CellVariable(mesh=mesh, hasOld=True, value=ch_initial_np(np.asarray(x), np.asarray(y), L))
    mu = fipy.CellVariable(mesh=mesh, hasOld=True)
    D = a = epsilon = 1.0
    dfdc = a**2 * c * (1 - c) * (1 - 2 * c)
    d2fdc2 = a**2 * (1 - 6 * c * (1 - c))
    eq1 = fipy.TransientTerm(var=c) == fipy.DiffusionTerm(coeff=D, var=mu)
    eq2 = (fipy.ImplicitSourceTerm(coeff=1.0, var=mu)
           == fipy.ImplicitSourceTerm(coeff=d2fdc2, var=c) - d2fdc2 * c + dfdc - fipy.DiffusionTerm(coeff=epsilon**2, var=c))
    eq = eq1 & eq2
    solver = fipy.solvers.DefaultSolver()
    steps = int(round(T / dt))
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        c.updateOld()
        mu.updateOld()
        eq.solve(dt=dt, solver=solver)
    sec, cpu = time.perf_counter() - t0, time.process_time() - c0
    return dict(solve=sec, cpu=cpu, steps=steps, newton=steps, field=np.array(c.value), solver=type(solver).__name__)


def errors(field, ref):
    d = field - ref
    return float(np.max(np.abs(d))), float(np.linalg.norm(d) / np.linalg.norm(ref))


def med(xs):
    return statistics.median(xs)


def fmt(x):
    return f"{x:.3g}"


def row(name, label, steps, newton, linear, runs, err):
    cpu = med([x["cpu"] for x in runs])
    wall = med([x.get("wall", x["solve"]) for x in runs])
    print(f"| {name} | {label} | {steps} | {newton} | {linear} | {fmt(cpu / int(str(steps).split()[0]))} | {fmt(cpu)} "
          f"| {fmt(wall)} | {err[0]:.2e} | {err[1]:.2e} | {len(runs)} |")
    sys.stdout.flush()
    return cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pdejit", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--fipy-rounds", type=int, default=2, help="FiPy runs per case (1 at 1024^2)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rd-sizes", default="256,1024")
    ap.add_argument("--rd-steps", default="10,2", help="steps per size")
    ap.add_argument("--ch-size", type=int, default=128)
    ap.add_argument("--ch-until", type=float, default=50.0)
    ap.add_argument("--ch-fipy-dt", type=float, default=0.5)
    ap.add_argument("--ch-adapt", type=float, default=1e-4)
    ap.add_argument("--pc", default=None, help="pdejit's preconditioner (solver pc = ...); default: pdejit's default")
    ap.add_argument("--pcs", default="", help="also time pdejit with these preconditioners, e.g. ilu,gamg,hypre,mg")
    ap.add_argument("--skip-fipy", action="store_true")
    a = ap.parse_args()
    print("CPU seconds: user + system of the pdejit process (start-up, cached kernels and solve) and of FiPy's "
          "time steps; wall: pdejit's solve, FiPy's steps. Errors: the final field against the reference.\n")
    print("| problem | solver | steps | Newton (FiPy: sweeps) | Krylov | CPU s/step | CPU s | wall s | max err | rel L2 err | runs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    sys.stdout.flush()
    pcs = [a.pc] + [pc for pc in a.pcs.split(",") if pc]

    sizes = [int(s) for s in a.rd_sizes.split(",") if s]
    nsteps = [int(s) for s in a.rd_steps.split(",")]
    for n, steps in zip(sizes, nsteps):
        h = 1.0 / n
        dt = 100 * h * h / (4 * D_RD)
        ref = run_pdejit(a, rd_source(n, dt / 10, steps * 10, "bdf2", "hypre"), "rd_ref")["field"]
        name = f"Allen-Cahn {n}², dt = {dt:.3g}"
        pj_cpu = None
        for pc in pcs if n <= 512 else pcs[:1]:
            runs = [run_pdejit(a, rd_source(n, dt, steps, "beuler", pc), "rd") for _ in range(a.rounds)]
            r = runs[0]
            cpu = row(name, f"pdejit beuler{', pc = ' + pc if pc else ''}", r["steps"], r["newton"], r["linear"], runs,
                      errors(r["field"], ref))
            pj_cpu = pj_cpu or cpu
        if not a.skip_fipy:
            fr = [fipy_rd(n, dt, steps) for _ in range(a.fipy_rounds if n <= 512 else 1)]
            cpu = row(name, f"FiPy 4.0.3 ({fr[0]['solver']})", steps, fr[0]["newton"], "-", fr, errors(fr[0]["field"], ref))
            print(f"| {name} | **FiPy / pdejit (CPU)** | | | | | **{cpu / pj_cpu:.0f}x** | | | | |")
            sys.stdout.flush()

    if a.ch_size:
        n, T = a.ch_size, a.ch_until
        ref = run_pdejit(a, ch_source(n, T, 0.1, "bdf2", a.ch_adapt / 100, "hypre"), "ch_ref")["field"]
        name = f"Cahn-Hilliard {n}² to t = {T:g}"
        pj_cpu = None
        for pc in pcs:
            runs = [run_pdejit(a, ch_source(n, T, 0.1, "bdf2", a.ch_adapt, pc), "ch") for _ in range(a.rounds)]
            r = runs[0]
            cpu = row(name, f"pdejit bdf2, adapt = {a.ch_adapt:g}{', pc = ' + pc if pc else ''}",
                      f"{r['steps']} ({r['rejected']} rejected)", r["newton"], r["linear"], runs, errors(r["field"], ref))
            pj_cpu = pj_cpu or cpu
        if not a.skip_fipy:
            fr = [fipy_ch(n, T, a.ch_fipy_dt) for _ in range(a.fipy_rounds)]
            cpu = row(name, f"FiPy 4.0.3, coupled c and mu, dt = {a.ch_fipy_dt:g} ({fr[0]['solver']})", fr[0]["steps"],
                      fr[0]["newton"], "-", fr, errors(fr[0]["field"], ref))
            print(f"| {name} | **FiPy / pdejit (CPU)** | | | | | **{cpu / pj_cpu:.0f}x** | | | | |")


if __name__ == "__main__":
    main()
