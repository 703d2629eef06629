#!/usr/bin/env python3
"""peers.py — the Python code generators pdejit is compared with, on the benchmark's problems
(bench/run.sh --peers runs it in bench/.venv-peers; harness.py interleaves it with ref_rd and
pj_bench).

Problems (the same as bench/ref_rd.c and bench/pj_bench.c, one ghost layer, x fastest, a serial
periodic halo copy before every step, the update into a second array, a swap):

    rd      u' = u + dt*(D*lap(u) + k*u*(1-u))  on an N x N periodic square, D = 10/N^2
    heat3d  u' = u + dt*D*lap(u)                on a periodic NX x NY x NZ box, spacing h = 1/NX
                                                on every axis, D = 10*h^2 (D*dt/h^2 = 0.1)

with dt = 0.01, k = 0.01, and u0 = 0.5 + 0.25*sin(2 pi x)*cos(2 pi y) (2D) or
0.5 + 0.25*sin(2 pi x)*cos(2 pi y)*cos(2 pi z/Lz) (3D, Lz = NZ*h) at the cell centres.

    python peers.py IMPL rd N THREADS STEPS_PER_REP REPS
    python peers.py IMPL heat3d NX NY NZ THREADS STEPS_PER_REP REPS

IMPL: numba (@njit(parallel=True), prange over the outermost axis), pystencils (2.x: C from
sympy, gcc -O3 -march=native -ffast-math -fopenmp, its AVX-512 vectoriser), devito (4.x:
OpenMP, its default optimisation level 'advanced', spatial blocking included). Each prints one
line as ref_rd and pj_bench do: seconds per step for each rep after one warm-up rep (compiles
happen before it; Devito's, in its first call, inside it), the median, the field's sum and the step count:

    IMPL n=SIZE threads=T variant=PROBLEM sec_per_step=S1,... median=M checksum=C steps=K compile_s=X

pystencils is called once per step, the halo copied by NumPy before each call, as a user with
periodic sides would. Devito takes a rep's steps in one call (one call costs milliseconds of
Python): its grid includes the ghost layer, the update runs on `grid.interior` and the periodic
copies are equations after it. A 2D rep stops early after REP_BUDGET_S (Devito's: never). `sumsq`: the sum of the squares
of the interior cells (the 3D heat step conserves the sum; the squares decay step by step).
"""
import math
import sys
import time

import numpy as np

DT = 0.01
K = 0.01
REP_BUDGET_S = 0.5


def init(shape, h):
    """u0 at the cell centres, with one ghost layer; shape = (nz, ny, nx) or (ny, nx)."""
    u = np.zeros(tuple(s + 2 for s in shape))
    nx = shape[-1]
    x = (np.arange(nx) + 0.5) * h
    y = (np.arange(shape[-2]) + 0.5) * h
    if len(shape) == 2:
        u[1:-1, 1:-1] = 0.5 + 0.25 * (np.sin(2 * np.pi * x)[None, :] * np.cos(2 * np.pi * y)[:, None])
    else:
        lz = shape[0] * h
        z = (np.arange(shape[0]) + 0.5) * h
        u[1:-1, 1:-1, 1:-1] = 0.5 + 0.25 * (np.sin(2 * np.pi * x)[None, None, :] *
                                            np.cos(2 * np.pi * y)[None, :, None] *
                                            np.cos(2 * np.pi * z / lz)[:, None, None])
    return u, np.zeros_like(u)


def halo(u):
    """The periodic halo copy, axis by axis (the later axes include the earlier ghosts: corners)."""
    for ax in range(u.ndim):
        lo = [slice(None)] * u.ndim
        hi = [slice(None)] * u.ndim
        lo[ax], hi[ax] = 0, -2
        u[tuple(lo)] = u[tuple(hi)]
        lo[ax], hi[ax] = -1, 1
        u[tuple(lo)] = u[tuple(hi)]


# ---- Numba ----
def numba_steps(problem):
    import numba

    from rd_py import make_numba_step  # the 2D step, as the main table runs it

    rd = make_numba_step()[0]

    @numba.njit(parallel=True, fastmath=False, cache=False)
    def heat3d(u, v, ih2, d):
        nz, ny, nx = u.shape[0] - 2, u.shape[1] - 2, u.shape[2] - 2
        for k in range(1, nz + 1):
            for j in range(1, ny + 1):
                u[k, j, 0] = u[k, j, nx]
                u[k, j, nx + 1] = u[k, j, 1]
        for k in range(1, nz + 1):
            for i in range(0, nx + 2):
                u[k, 0, i] = u[k, ny, i]
                u[k, ny + 1, i] = u[k, 1, i]
        for j in range(0, ny + 2):
            for i in range(0, nx + 2):
                u[0, j, i] = u[nz, j, i]
                u[nz + 1, j, i] = u[1, j, i]
        for k in numba.prange(1, nz + 1):
            for j in range(1, ny + 1):
                for i in range(1, nx + 1):
                    c = u[k, j, i]
                    lap = ((u[k, j, i + 1] + u[k, j, i - 1] - 2.0 * c) * ih2 +
                           (u[k, j + 1, i] + u[k, j - 1, i] - 2.0 * c) * ih2 +
                           (u[k + 1, j, i] + u[k - 1, j, i] - 2.0 * c) * ih2)
                    v[k, j, i] = c + DT * (d * lap)

    return numba, {"rd": rd, "heat3d": heat3d}[problem]


def make_numba(problem, shape, threads, ih2, d):
    numba, fn = numba_steps(problem)
    numba.set_num_threads(threads)
    a, b = init((4,) * len(shape), 0.25)
    fn(a, b, 1.0, 1.0)  # compile
    return (lambda u, v: fn(u, v, ih2, d)), numba.get_num_threads()


# ---- pystencils ----
def make_pystencils(problem, shape, threads, ih2, d, probe):
    import pystencils as ps
    from pystencils.codegen.config import CpuOptions, OpenMpOptions, VectorizationOptions

    src, dst = ps.fields(src=probe[0], dst=probe[1])
    c = src.center
    if problem == "rd":
        lap = (src[0, 1] + src[0, -1] - 2.0 * c) * ih2 + (src[1, 0] + src[-1, 0] - 2.0 * c) * ih2
        rhs = c + DT * (d * lap + K * c * (1.0 - c))
    else:
        lap = ((src[0, 0, 1] + src[0, 0, -1] - 2.0 * c) * ih2 + (src[0, 1, 0] + src[0, -1, 0] - 2.0 * c) * ih2 +
               (src[1, 0, 0] + src[-1, 0, 0] - 2.0 * c) * ih2)
        rhs = c + DT * (d * lap)
    asm = [ps.Assignment(dst.center, rhs)]

    def config(vectorize):
        return ps.CreateKernelConfig(
            target=ps.Target.CurrentCPU,
            cpu=CpuOptions(openmp=OpenMpOptions(enable=True, num_threads=threads),
                           vectorize=VectorizationOptions(enable=vectorize, assume_inner_stride_one=vectorize)))

    try:
        kernel = ps.create_kernel(asm, config(True)).compile()
        note = "vectorised"
    except Exception as e:  # the vectoriser refused: gcc's auto-vectoriser then
        sys.stderr.write("pystencils: no explicit vectorisation (%s)\n" % e)
        kernel = ps.create_kernel(asm, config(False)).compile()
        note = "gcc-vectorised"

    def step(u, v):
        halo(u)
        kernel(src=u, dst=v)

    return step, note


# ---- Devito ----
def make_devito(problem, shape, threads, h, d):
    """Devito's grid holds the ghost layer as its outermost points: the update runs on
    grid.interior and the periodic copies are equations of their own after it, so one apply()
    takes a whole rep's steps (a call costs milliseconds of Python: once per step, that would
    dominate). Returns (load, run(k0, steps), result)."""
    import os
    os.environ.setdefault("DEVITO_LOGGING", "ERROR")
    os.environ["OMP_NUM_THREADS"] = str(threads)  # read when the operator's OpenMP code first runs
    from devito import Eq, Grid, Operator, TimeFunction, configuration
    configuration["language"] = "openmp"
    full = tuple(s + 2 for s in shape)
    grid = Grid(shape=full, extent=tuple((s - 1) * h for s in full), dtype=np.float64)
    u = TimeFunction(name="u", grid=grid, space_order=2)
    if problem == "rd":
        rhs = u + DT * (d * u.laplace + K * u * (1.0 - u))
    else:
        rhs = u + DT * (d * u.laplace)
    eqs = [Eq(u.forward, rhs, subdomain=grid.interior)]
    t = grid.stepping_dim
    dims = grid.dimensions
    for a, n in enumerate(shape):  # the periodic copies, axis by axis (later axes over the earlier ghosts)
        for ghost, source in ((0, n), (n + 1, 1)):
            to = list(dims)
            fro = list(dims)
            to[a], fro[a] = ghost, source
            eqs.append(Eq(u[(t + 1,) + tuple(to)], u[(t + 1,) + tuple(fro)]))
    op = Operator(eqs)

    def load(a):
        halo(a)
        u.data[0][...] = a

    def run(k0, steps):
        op.apply(time_m=k0, time_M=k0 + steps - 1)
        return steps

    def result(k):
        return u.data[k % 2]

    return load, run, result


def main():
    impl, problem = sys.argv[1], sys.argv[2]
    if problem == "rd":
        n = int(sys.argv[3])
        shape = (n, n)
        rest = sys.argv[4:]
        h = 1.0 / n
        d = 10.0 / (float(n) * float(n))
        size = "%d" % n
    elif problem == "heat3d":
        nx, ny, nz = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
        shape = (nz, ny, nx)
        rest = sys.argv[6:]
        h = 1.0 / nx
        d = 10.0 * h * h
        size = "%dx%dx%d" % (nx, ny, nz)
    else:
        raise SystemExit("peers.py: unknown problem %r (rd, heat3d)" % problem)
    threads, steps, reps = int(rest[0]), int(rest[1]), int(rest[2])
    ih2 = 1.0 / (h * h)
    u, v = init(shape, h)
    t0 = time.perf_counter()
    extra = ""
    result = None
    if impl == "numba":
        step, threads_used = make_numba(problem, shape, threads, ih2, d)
    elif impl == "pystencils":
        step, note = make_pystencils(problem, shape, threads, ih2, d, (u, v))
        threads_used = threads
        extra = " note=%s" % note
    elif impl == "devito":
        load, run, result = make_devito(problem, shape, threads, h, d)
        load(u)
        threads_used = threads
    else:
        raise SystemExit("peers.py: unknown implementation %r (numba, pystencils, devito)" % impl)
    compile_s = time.perf_counter() - t0
    per = []
    total = 0
    for r in range(-1, reps):
        t0 = time.perf_counter()
        done = 0
        if result:  # Devito: the rep's steps in one call
            done = run(total, steps)
        else:
            for k in range(steps):
                step(u, v)
                u, v = v, u
                done += 1
                if problem == "rd" and k % 4 == 3 and time.perf_counter() - t0 > REP_BUDGET_S:
                    break  # a busy machine: fewer steps
        t = (time.perf_counter() - t0) / done
        total += done
        if r >= 0:
            per.append(t)
    final = result(total) if result else u
    interior = final[(slice(1, -1),) * len(shape)]
    checksum = float(interior.sum())
    sumsq = float((interior * interior).sum())
    assert math.isfinite(checksum)
    print("%s n=%s threads=%d variant=%s sec_per_step=%s median=%.6e checksum=%.15e steps=%d sumsq=%.15e compile_s=%.3f%s" % (
        impl, size, threads_used, problem, ",".join("%.6e" % t for t in per), sorted(per)[reps // 2], checksum,
        total, sumsq, compile_s, extra))


if __name__ == "__main__":
    main()
