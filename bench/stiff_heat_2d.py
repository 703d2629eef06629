#!/usr/bin/env python3
"""stiff_heat_2d.py — implicit (bdf2, cn with adapt) against explicit rk4 at its stability limit,
to the same accuracy, on a stiff 2D diffusion problem; PETSc/MPI start-up; the Cahn-Hilliard
sample at full size. Driven by stiff_heat_2d.sh (which builds pdejit); standard library only.

heat  du/dt = lap(u) on [0,1]^2 with n^2 cells, u = 0 at t = 0, u = 1 on the left wall, the other
      walls insulated, to t = T. Exact solution (independent of y):
        u = 1 - sum_k 2/m_k sin(m_k x) exp(-m_k^2 t),  m_k = (2k+1) pi / 2.
      rk4 runs at its stability limit (the dt pdejit's own check states, times 0.999: about
      0.35 h^2). Each implicit variant of --variants (SCHEME or SCHEME:SOLVER OPTIONS, separated
      by ';') runs with adapt = TOL for TOL in --tols, loosest first, until the max error over
      the cells is within --slack of rk4's (rk4's error is the spatial one); that TOL is then
      timed, and its error is the one reported. --temporal adds the time stepping's own share of
      each error: max |u - u_ref| over the cells, u_ref the same cells stepped by bdf of order 4
      to a local tolerance of 1e-10 (the spatial error is then the same in both and cancels).
      --compare PDEJIT: each chosen implicit run (its TOL chosen by --pdejit) timed by that build too,
      the two builds' rounds interleaved, with its own error.
      --stops T1,T2,...: each implicit variant's chosen run again, stopped at those times (its
      steps up to there are the same): where its steps and CPU go.
start-up  a tiny implicit problem (8 cells, one step) against the same explicit one: the cost of
      loading PETSc and MPI_Init, with pdejit's default (Open MPI's ess_singleton_isolated) and
      with OMPI_MCA_ess_singleton_isolated=0 (Open MPI's own default: MPI_Init starts orted).
ch    samples/implicit/cahn_hilliard_fipy.pde (FiPy's examples/cahnHilliard/mesh2D.py) at
      --ch-sizes, to t = 1000: steps, iterations, times, when it separates, the free energy.
Times: wall and CPU (user + system) of the whole pdejit process, and pdejit's own solve time
(kernels cached: a first untimed run compiles them); medians of --rounds runs.
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

RUN_RE = re.compile(r"pdejit: (\d+) steps?(?: accepted \(\d+ rejected\))? to t = \S+ in (\S+) s")
SOLVER_RE = re.compile(r"implicit solver: (\d+) steps accepted, (\d+) rejected; (\d+) Newton iterations, (\d+) linear "
                       r"iterations")
LIMIT_RE = re.compile(r"explicit stability limit \(about (\S+)\)")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def heat_src(n, T, scheme, dt, adapt=None):
    a = f", adapt = {adapt!r}" if adapt else ""
    return (f"# bench/stiff_heat_2d.py\nmesh grid(nx = {n}, ny = {n}, Lx = 1, Ly = 1)\nfield u = 0\n"
            f"eq dt(u) = lap(u)\non left: u = 1\ntime dt = {dt!r}, until = {T!r}, scheme = {scheme}{a}\n")


def run(args, src, extra=(), env_extra=None, dump=True):
    """Runs pdejit on src; returns dict(wall, cpu, solve, steps, linear, rc, err, rows)."""
    d = tempfile.mkdtemp(prefix="pj-stiff-")
    pde, out = os.path.join(d, "p.pde"), os.path.join(d, "final.csv")
    with open(pde, "w") as f:
        f.write(src)
    cmd = [args.pdejit, "run", pde, "--out", "none", "--verbose", "--threads", str(args.threads)]
    if dump:
        cmd += ["--dump", out]
    cmd += list(extra)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", **(env_extra or {}))
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = dict(wall=wall, cpu=(r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), rc=p.returncode,
               err=p.stderr, rows=None)
    m = RUN_RE.search(p.stderr)
    res["solve"] = float(m.group(2)) if m else float("nan")
    s = SOLVER_RE.search(p.stderr)
    res["steps"] = int(s.group(1)) if s else (int(m.group(1)) if m else 0)
    res["newton"] = int(s.group(3)) if s else 0
    res["linear"] = int(s.group(4)) if s else 0
    if dump and p.returncode == 0:
        with open(out) as f:
            next(f)
            res["rows"] = [tuple(float(v) for v in line.split(",")) for line in f]
        os.remove(out)
    os.remove(pde)
    os.rmdir(d)
    return res


def exact_heat(x, t):
    s = 0.0
    for k in range(400):
        m = (2 * k + 1) * math.pi / 2
        s += 2 / m * math.sin(m * x) * math.exp(-m * m * t)
    return 1 - s


def max_error(rows, T):
    cache, worst = {}, 0.0
    for x, _y, u in rows:
        if x not in cache:
            cache[x] = exact_heat(x, T)
        worst = max(worst, abs(u - cache[x]))
    return worst


def medians(rs):
    """The rounds' median times, and the first round's counts."""
    med = {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu", "solve")}
    med.update(steps=rs[0]["steps"], newton=rs[0]["newton"], linear=rs[0]["linear"])
    return med


def timed(args, src, extra=(), env_extra=None):
    run(args, src, extra, env_extra, dump=False)  # compile and cache the kernels
    return medians([run(args, src, extra, env_extra, dump=False) for _ in range(args.rounds)])


def timed_pair(args, other, src, extra=()):
    """timed() of src by two builds, their rounds interleaved."""
    run(args, src, extra, dump=False)
    run(other, src, extra, dump=False)
    rs, os_ = [], []
    for _ in range(args.rounds):
        rs.append(run(args, src, extra, dump=False))
        os_.append(run(other, src, extra, dump=False))
    return medians(rs), medians(os_)


def heat(args, n, T):
    probe = run(args, heat_src(n, T, "rk4", 1.0), dump=False)
    m = LIMIT_RE.search(probe["err"])
    if not m:
        sys.exit(f"stiff_heat_2d: no stability limit in:\n{probe['err']}")
    dt_rk4 = float(m.group(1)) * 0.999
    rk = run(args, heat_src(n, T, "rk4", dt_rk4))
    if rk["rc"]:
        sys.exit(f"stiff_heat_2d: rk4 failed:\n{rk['err'][-2000:]}")
    e_rk = max_error(rk["rows"], T)
    ref = None
    if args.temporal:
        r = run(args, heat_src(n, T, "bdf2", 1e-6, 1e-9), ("--solver-options", "-ts_bdf_order 4 -ts_rtol 1e-10 -ts_atol 1e-13"))
        if r["rc"]:
            sys.exit(f"stiff_heat_2d: the reference run failed:\n{r['err'][-2000:]}")
        ref = {(x, y): u for x, y, u in r["rows"]}

    def temporal(rows):
        return f" (time stepping {max(abs(u - ref[(x, y)]) for x, y, u in rows):.2g})" if ref else ""
    lines = [f"### {n}² cells, T = {T:g} (rk4 dt = {dt_rk4:.3g}, {math.ceil(T / dt_rk4)} steps)", "",
             "| scheme | TOL | steps | Newton | linear its | max error | wall s | CPU s | solve s |",
             "|---|---|---|---|---|---|---|---|---|"]
    t = timed(args, heat_src(n, T, "rk4", dt_rk4))
    lines.append(f"| rk4 (explicit, at its limit) | | {t['steps']} | | | {e_rk:.3g}{temporal(rk['rows'])} | {t['wall']:.2f} | {t['cpu']:.2f} | {t['solve']:.2f} |")
    base_cpu = t["cpu"]
    for variant in args.variants.split(";"):
        scheme, _, opts = variant.partition(":")
        extra = ("--solver-options", opts) if opts else ()
        label = f"{scheme} + adapt" + (f" `{opts}`" if opts else "")
        chosen, tried = None, []
        for tol in args.tols:
            r = run(args, heat_src(n, T, scheme, 1e-6, tol), extra)
            if r["rc"]:
                tried.append(f"{tol:g}: failed")
                continue
            e = max_error(r["rows"], T)
            tried.append(f"{tol:g}: {e:.3g}")
            if e <= args.slack * e_rk:
                chosen = (tol, f"{e:.3g}{temporal(r['rows'])}")
                break
        if not chosen:
            lines.append(f"| {label} | | | | | none within {args.slack:g}x of rk4 ({'; '.join(tried)}) | | | |")
            continue
        tol, e = chosen
        if args.compare:  # the same run by another build, the rounds interleaved: the load falls on both alike
            other = argparse.Namespace(**dict(vars(args), pdejit=args.compare))
            r = run(other, heat_src(n, T, scheme, 1e-6, tol), extra)
            e2 = f"{max_error(r['rows'], T):.3g}{temporal(r['rows'])}" if r["rows"] else "failed"
            t, t2 = timed_pair(args, other, heat_src(n, T, scheme, 1e-6, tol), extra)
            lines.append(f"| {label}, {args.compare} | {tol:g} | {t2['steps']} | {t2['newton']} | {t2['linear']} | {e2} | "
                         f"{t2['wall']:.2f} | {t2['cpu']:.2f} | {t2['solve']:.2f} |")
            lines.append(f"| (CPU {t2['cpu'] / base_cpu:.2f}x rk4's) | | | | | | | | |")
        else:
            t = timed(args, heat_src(n, T, scheme, 1e-6, tol), extra)
        lines.append(f"| {label} | {tol:g} | {t['steps']} | {t['newton']} | {t['linear']} | {e} | "
                     f"{t['wall']:.2f} | {t['cpu']:.2f} | {t['solve']:.2f} |")
        lines.append(f"| (errors by TOL: {'; '.join(tried)}; CPU {t['cpu'] / base_cpu:.2f}x rk4's) | | | | | | | | |")
        for stop in [s for s in args.stops if s < T]:  # the same steps, the run cut short at stop
            u = timed(args, heat_src(n, stop, scheme, 1e-6, tol), extra)
            lines.append(f"| (the same, stopped at t = {stop:g}) | | {u['steps']} | {u['newton']} | {u['linear']} | | "
                         f"{u['wall']:.2f} | {u['cpu']:.2f} | {u['solve']:.2f} |")
    return lines


def startup(args):
    tiny_i = "mesh grid(nx = 8)\nfield u = sin(pi*x)\neq dt(u) = lap(u)\non all: u = 0\ntime dt = 0.001, steps = 1, scheme = beuler\n"
    tiny_e = tiny_i.replace("beuler", "euler").replace("dt = 0.001", "dt = 0.001")
    cases = [("explicit (no PETSc)", tiny_e, None), ("implicit, pdejit's default (isolated singleton)", tiny_i, None),
             ("implicit, OMPI_MCA_ess_singleton_isolated=0 (orted)", tiny_i, {"OMPI_MCA_ess_singleton_isolated": "0"})]
    for _, src, env in cases:
        run(args, src, env_extra=env, dump=False)
    samples = {c[0]: [] for c in cases}
    for _ in range(args.startup_rounds):  # interleaved: the machine's load falls on all alike
        for name, src, env in cases:
            r = run(args, src, env_extra=env, dump=False)
            samples[name].append((r["wall"], r["cpu"]))
    lines = ["| run | wall s (median) | wall s (min) | CPU s (median) |", "|---|---|---|---|"]
    for name, _, _ in cases:
        w = [s[0] for s in samples[name]]
        c = [s[1] for s in samples[name]]
        lines.append(f"| {name} | {statistics.median(w):.3f} | {min(w):.3f} | {statistics.median(c):.3f} |")
    return lines


def ch(args, n):
    with open(os.path.join(ROOT, "samples/implicit/cahn_hilliard_fipy.pde")) as f:
        src = f.read()
    src = src.replace("nx = 100, ny = 100, Lx = 25, Ly = 25", f"nx = {n}, ny = {n}, Lx = {n * 0.25!r}, Ly = {n * 0.25!r}")
    d = tempfile.mkdtemp(prefix="pj-ch-")
    pde = os.path.join(d, "ch.pde")
    with open(pde, "w") as f:
        f.write(src)
    cmd = [args.pdejit, "run", pde, "--out", os.path.join(d, "out"), "--verbose", "--threads", str(args.threads)]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    subprocess.run(cmd, capture_output=True, text=True, env=env)  # compile
    walls, cpus = [], []
    for _ in range(args.ch_rounds):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        walls.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
        if p.returncode:
            sys.exit(f"stiff_heat_2d: {' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    s = SOLVER_RE.search(p.stderr)
    with open(os.path.join(d, "out", "monitor.csv")) as f:
        next(f)
        mon = [tuple(float(v) for v in line.split(",")) for line in f]
    sep = next((r[0] for r in mon if r[0] > 10 and r[2] > 0.7 and r[3] < 0.3), float("nan"))  # FiPy: elapsed > 10
    rise = max(b[5] - a[5] for a, b in zip(mon, mon[1:]))
    drift = max(abs(r[4] - mon[0][4]) for r in mon)
    subprocess.run(["rm", "-rf", d])
    return (f"| {n}² | {s.group(1)} ({s.group(2)} rejected) | {s.group(3)} | {s.group(4)} | {sep:g} | "
            f"{mon[-1][2]:.3f} / {mon[-1][3]:.3f} | {mon[0][5]:.4g} → {mon[-1][5]:.4g} (largest rise {rise:.1g}) | "
            f"{drift:.1g} | {statistics.median(walls):.2f} | {statistics.median(cpus):.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pdejit", default=os.path.join(ROOT, "build-bench", "pdejit"))
    ap.add_argument("--sizes", default="256")
    ap.add_argument("--times", default="0.01,0.1")
    ap.add_argument("--tols", default="1e-4,1e-5,1e-6")
    ap.add_argument("--variants", default="bdf2;bdf2:-ts_bdf_order 4;cn",
                    help="implicit variants, ';'-separated: SCHEME or SCHEME:SOLVER OPTIONS")
    ap.add_argument("--slack", type=float, default=1.25, help="implicit error may be this many times rk4's")
    ap.add_argument("--temporal", action="store_true", help="also the time stepping's share of each error")
    ap.add_argument("--stops", default="", help="also time each chosen implicit run stopped at these times")
    ap.add_argument("--compare", default="", help="another pdejit: each chosen implicit run timed by both, interleaved")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--startup-rounds", type=int, default=9)
    ap.add_argument("--ch-sizes", default="100")
    ap.add_argument("--ch-rounds", type=int, default=3)
    ap.add_argument("--only", default="heat,startup,ch")
    args = ap.parse_args()
    args.tols = [float(v) for v in args.tols.split(",")]
    args.stops = [float(v) for v in args.stops.split(",")] if args.stops else []
    only = args.only.split(",")
    print(f"pdejit {args.pdejit}, {args.threads} thread(s), medians of {args.rounds} (start-up: {args.startup_rounds})\n")
    if "heat" in only:
        print("## Stiff 2D heat: implicit + adapt against rk4 at its stability limit\n")
        for n in [int(v) for v in args.sizes.split(",")]:
            for T in [float(v) for v in args.times.split(",")]:
                print("\n".join(heat(args, n, T)) + "\n", flush=True)
    if "startup" in only:
        print("## Start-up: a tiny problem, one step\n")
        print("\n".join(startup(args)) + "\n", flush=True)
    if "ch" in only:
        print("## Cahn-Hilliard, FiPy's mesh2D (samples/implicit/cahn_hilliard_fipy.pde) to t = 1000\n")
        print("| cells | bdf2 steps | Newton | linear its | separated by t | max / min at 1000 | free energy | mean drift | wall s | CPU s |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for n in [int(v) for v in args.ch_sizes.split(",")]:
            print(ch(args, n), flush=True)


if __name__ == "__main__":
    main()
