"""rd_py.py — the NumPy and Numba versions of the benchmark's step (bench/run.sh runs it in
bench/.venv).

    u' = u + dt*(D*lap(u) + k*u*(1 - u))   on an N x N periodic square, explicit Euler, D = 10/N^2

Both keep the layout of ref_rd.c: an (N+2) x (N+2) array with one ghost layer, a periodic halo
update before every step (rows, then columns with the corners), the update of the interior
into a second array, and a swap.

    python rd_py.py numpy|numba N THREADS STEPS_PER_REP REPS

prints one line like ref_rd and pj_bench: seconds per step for each rep (after one warm-up rep;
Numba's compile happens before it), the median and the checksum. NumPy runs on one thread
whatever THREADS says (its element-wise operations are serial); Numba uses
@njit(parallel=True) with prange over rows and numba.set_num_threads(THREADS).
"""
import sys
import time

import numpy as np

DT = 0.01
REP_BUDGET_S = 0.5  # a rep ends after this long even when its steps are not all done (as in pj_bench.c)
K = 0.01


def init(n):
    h = 1.0 / n
    x = (np.arange(n) + 0.5) * h
    u = np.zeros((n + 2, n + 2))
    # u[j, i]: j along y, i along x, as ref_rd
    u[1:-1, 1:-1] = 0.5 + 0.25 * (np.sin(2 * np.pi * x)[None, :] * np.cos(2 * np.pi * x)[:, None])
    return u, np.zeros_like(u)


def numpy_step(u, v, ih2, d):
    u[0, 1:-1] = u[-2, 1:-1]
    u[-1, 1:-1] = u[1, 1:-1]
    u[:, 0] = u[:, -2]
    u[:, -1] = u[:, 1]
    c = u[1:-1, 1:-1]
    lap = (u[1:-1, 2:] + u[1:-1, :-2] - 2.0 * c) * ih2 + (u[2:, 1:-1] + u[:-2, 1:-1] - 2.0 * c) * ih2
    v[1:-1, 1:-1] = c + DT * (d * lap + K * c * (1.0 - c))


def make_numba_step():
    import numba

    @numba.njit(parallel=True, fastmath=False, cache=False)
    def step(u, v, ih2, d):
        n = u.shape[0] - 2
        for i in range(1, n + 1):
            u[0, i] = u[n, i]
            u[n + 1, i] = u[1, i]
        for j in range(0, n + 2):
            u[j, 0] = u[j, n]
            u[j, n + 1] = u[j, 1]
        for j in numba.prange(1, n + 1):
            for i in range(1, n + 1):
                c = u[j, i]
                lap = (u[j, i + 1] + u[j, i - 1] - 2.0 * c) * ih2 + (u[j + 1, i] + u[j - 1, i] - 2.0 * c) * ih2
                v[j, i] = c + DT * (d * lap + K * c * (1.0 - c))

    return step, numba


def main():
    impl, n, threads, steps, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    h = 1.0 / n
    ih2 = 1.0 / (h * h)
    d = 10.0 / (float(n) * float(n))
    u, v = init(n)
    extra = ""
    if impl == "numba":
        step, numba = make_numba_step()
        numba.set_num_threads(threads)
        t0 = time.perf_counter()
        a, b = init(4)
        step(a, b, 1.0, 1.0)  # compile
        extra = " compile_s=%.3f" % (time.perf_counter() - t0)
        threads_used = numba.get_num_threads()
    else:
        step = numpy_step
        threads_used = 1
    per = []
    total = 0
    for r in range(-1, reps):
        t0 = time.perf_counter()
        done = 0
        for k in range(steps):
            step(u, v, ih2, d)
            u, v = v, u
            done += 1
            if k % 16 == 15 and time.perf_counter() - t0 > REP_BUDGET_S:
                break  # a busy machine: fewer steps
        t = (time.perf_counter() - t0) / done
        total += done
        if r >= 0:
            per.append(t)
    checksum = float(u[1:-1, 1:-1].sum())
    print("%s n=%d threads=%d variant=%s sec_per_step=%s median=%.6e checksum=%.15e steps=%d%s" % (
        impl, n, threads_used, impl, ",".join("%.6e" % t for t in per), sorted(per)[reps // 2], checksum,
        total, extra))


if __name__ == "__main__":
    main()
