#!/usr/bin/env python3
"""tanh1d_fipy.py — FiPy's examples/cahnHilliard/tanh1D.py against pdejit's steady solve of the same
problem, in one run (driven by tanh1d_fipy.sh, which makes bench/.venv-fipy and builds pdejit).

The problem: dt(phi) = div((1 - 6 phi (1 - phi)) grad(phi)) - lap(lap(phi)) on [0, 40], nx cells
(1000: FiPy's), phi = 1/2 and lap(phi) = 0 on the left, phi = 1 and lap(phi) = 0 on the right, from
phi = 1. Its steady state on the half-line is 1 / (1 + exp(-x)); FiPy's example marches 100 steps
dt = min(10, exp(-5 + k/2)) with its default solver (SciPy: LinearLUSolver) and checks that answer
to 1e-4. pdejit solves it as `steady` (Newton, then pseudo-transient continuation, with its default
linear solver). Each side's max error against 1 / (1 + exp(-x)) is reported; pdejit's tolerance is
--pdejit-rtol (the loosest that reaches FiPy's error is what counts).

Times: pdejit, the whole process (user + system, start-up and the PETSc load included; kernels
cached by a first untimed run), and its own solve time (the steady line's: wall seconds); FiPy, the whole process
(a child python: imports, mesh, terms and the loop) and its 100-step loop alone (process_time).
Ratios: whole process against whole process, and FiPy's loop against pdejit's whole process (which
leans towards FiPy). Medians of --rounds (pdejit) and --fipy-rounds.
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pdejit_src(nx, rtol):
    return (f"# bench/tanh1d_fipy.py: FiPy's examples/cahnHilliard/tanh1D.py\nmesh grid(nx = {nx}, Lx = 40)\nfield phi = 1\n"
            "eq dt(phi) = div((1 - 6*phi*(1 - phi))*grad(phi)) - lap(lap(phi))\n"
            "on left: phi = 0.5, lap(phi) = 0\non right: phi = 1, lap(phi) = 0\nsteady\n"
            f"solver rtol = {rtol!r}\n")


def max_error(xs, vals):
    return max(abs(v - 1 / (1 + math.exp(-x))) for x, v in zip(xs, vals))


def run_pdejit(args, nx, rtol, dump):
    d = tempfile.mkdtemp(prefix="pj-tanh-")
    pde, out = os.path.join(d, "tanh.pde"), os.path.join(d, "final.csv")
    with open(pde, "w") as f:
        f.write(pdejit_src(nx, rtol))
    cmd = [args.bin, "run", pde, "--out", "none", "--verbose", "--threads", "1"] + (["--dump", out] if dump else [])
    if args.solver_options:
        cmd += ["--solver-options", args.solver_options]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        sys.exit(f"tanh1d_fipy: {' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    err = None
    if dump:
        with open(out) as f:
            next(f)
            rows = [tuple(float(v) for v in line.split(",")) for line in f]
        err = max_error([r[0] for r in rows], [r[1] for r in rows])
        os.remove(out)
    os.remove(pde)
    os.rmdir(d)
    line = next((l for l in p.stderr.splitlines() if "steady solve:" in l), "")
    m = re.search(r"; (\S+) s in all", line)
    return dict(solve=float(m.group(1)) if m else float("nan"), cpu=(r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), wall=wall, err=err, line=line)


def run_fipy(nx):
    from fipy import CellVariable, Grid1D, NthOrderBoundaryCondition, DiffusionTerm, TransientTerm, DefaultSolver
    from fipy.tools import numerix
    L = 40.
    mesh = Grid1D(dx=L / nx, nx=nx)
    var = CellVariable(name="phase field", mesh=mesh, value=1.)
    bcs = (NthOrderBoundaryCondition(faces=mesh.facesLeft, value=0, order=2),
           NthOrderBoundaryCondition(faces=mesh.facesRight, value=0, order=2))
    var.constrain(1, mesh.facesRight)
    var.constrain(.5, mesh.facesLeft)
    face = var.arithmeticFaceValue
    eq = TransientTerm() == DiffusionTerm(coeff=1.0 * (1 - 6 * face * (1 - face))) - DiffusionTerm(coeff=(1, 1))
    solver = DefaultSolver()
    c0, t0 = time.process_time(), time.perf_counter()
    dexp = -5
    for _ in range(100):
        dt = min(10, numerix.exp(dexp))
        dexp += 0.5
        eq.solve(var=var, boundaryConditions=bcs, solver=solver, dt=dt)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    xs = numerix.array(mesh.cellCenters[0])
    return dict(cpu=cpu, wall=wall, err=max_error(xs, numerix.array(var)))


def fipy_child(nx):
    """FiPy in a child python (this file with --fipy-child): its whole process's CPU, and the loop's."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--fipy-child", "--nx", str(nx)], capture_output=True,
                       text=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        sys.exit(f"tanh1d_fipy: FiPy failed:\n{p.stderr[-2000:]}")
    cpu, err = (float(v) for v in p.stdout.split()[-2:])
    return dict(cpu=cpu, err=err, proc=(r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pdejit", default=os.path.join(ROOT, "build-bench", "pdejit"),
                    help="the pdejit command; several, comma-separated, are run one after another (e.g. a baseline)")
    ap.add_argument("--nx", type=int, default=1000)
    ap.add_argument("--pdejit-rtol", default="1e-6,1e-8,1e-10,1e-12")
    ap.add_argument("--solver-options", default="", help="pdejit's --solver-options")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--fipy-rounds", type=int, default=3)
    ap.add_argument("--skip-fipy", action="store_true")
    ap.add_argument("--fipy-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.fipy_child:
        r = run_fipy(args.nx)
        print(r["cpu"], r["err"])
        return
    print(f"tanh1D, nx = {args.nx}; pdejit `{args.solver_options}`: medians of {args.rounds}; "
          f"FiPy: medians of {args.fipy_rounds}\n")
    print("| solver | max error | CPU s, whole process | solve s | notes |\n|---|---|---|---|---|")
    fipy_proc, fipy_cpu = None, None
    if not args.skip_fipy:
        rs = [fipy_child(args.nx) for _ in range(args.fipy_rounds)]
        fipy_proc, fipy_cpu = statistics.median(r["proc"] for r in rs), statistics.median(r["cpu"] for r in rs)
        print(f"| FiPy (100 steps, DefaultSolver) | {rs[0]['err']:.3g} | {fipy_proc:.3f} | {fipy_cpu:.3f} | "
              "solve: its time-step loop |", flush=True)
    for binary, rtol in [(b, r) for b in args.pdejit.split(",") for r in args.pdejit_rtol.split(",")]:
        args.bin = binary
        first = run_pdejit(args, args.nx, float(rtol), True)  # compiles, caches, and gives the error
        rs = [run_pdejit(args, args.nx, float(rtol), False) for _ in range(args.rounds)]
        cpu = statistics.median(r["cpu"] for r in rs)
        solve = statistics.median(r["solve"] for r in rs)
        ratio = (f"; FiPy / pdejit, whole processes: **{fipy_proc / cpu:.1f}x**, FiPy's loop / pdejit's process: "
                 f"{fipy_cpu / cpu:.1f}x" if fipy_cpu else "")
        print(f"| pdejit steady, rtol {rtol} (`{binary}`) | {first['err']:.3g} | {cpu:.3f} | {solve:.4f} | "
              f"{first['line'].replace('pdejit: ', '')}{ratio} |", flush=True)


if __name__ == "__main__":
    main()
