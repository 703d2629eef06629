"""python_term.py — pdejit.Term against NumPy and Numba @njit(parallel=True) on the same arrays.

The term: a reaction with a conditional plus a 5-point Laplacian (zero flux at the walls), on
1000 x 1000 cells:

    D*lap(u) + (u > a ? k*u*(1 - u) : -k*u*v)

Measured, each as the median of several runs:
  per call     the Python call on existing arrays, result into a preallocated array (and, for
               Term and NumPy, as a new array), overhead included;
  first call   in a fresh process with an empty kernel cache: Term(...) and its first call (the
               LLVM compile), against Numba's first call (its compile, cache off);
  cached       in a fresh process with the kernel cache filled: `import pdejit`, Term(...) and the
               first call, against Numba's first call with cache=True filled.

    python bench/python_term.py [--cells 1000] [--runs 5] [--calls 30]
    python bench/python_term.py --start [--runs 9]    # the cached start alone, split; no Numba

Needs the pdejit package (pip install ./python) and numba; prints a Markdown table. The
agreement of the three results is checked (to 1e-12 relative) before anything is timed."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

EXPR = "D*lap(u) + (u > a ? k*u*(1 - u) : -k*u*v)"
PARAMS = {"D": 0.1, "a": 0.5, "k": 2.0}

# one measurement in a fresh process: prints JSON {"ms": ...}
CHILD = r"""
import sys, time, json, os
n, what = int(sys.argv[1]), sys.argv[2]
import numpy as np
rng = np.random.default_rng(0)
u, v = rng.random((n, n)), rng.random((n, n))
out = np.empty((n, n))
t0 = time.perf_counter()
c0 = time.process_time()
if what == "term":
    import pdejit
    t1 = time.perf_counter()
    term = pdejit.Term(%(expr)r, grid=(n, n), spacing=(1.0 / n, 1.0 / n), fields=["u", "v"], params=%(params)r)
    t2 = time.perf_counter()
    term(u=u, v=v, out=out)
    t3 = time.perf_counter()
    extra = {"from_cache": term.from_cache, "import": (t1 - t0) * 1e3, "Term()": (t2 - t1) * 1e3,
             "call": (t3 - t2) * 1e3, "cpu": (time.process_time() - c0) * 1e3}
else:
    sys.path.insert(0, %(here)r)
    from python_term_numba import make
    f = make(cache=what == "numba-cached")
    f(u, v, out, 1.0 / n, %(D)r, %(a)r, %(k)r)
    extra = {}
ms = (time.perf_counter() - t0) * 1e3
print(json.dumps(dict(ms=ms, **extra)))
"""

NUMBA_SRC = r'''"""python_term_numba.py — the benchmark's term in Numba (written by bench/python_term.py)."""
import numba


def make(cache=False):
    @numba.njit(parallel=True, cache=cache)
    def term(u, v, out, h, D, a, k):
        ny, nx = u.shape
        ih2 = 1.0 / (h * h)
        for j in numba.prange(ny):
            jm = j - 1 if j > 0 else 0
            jp = j + 1 if j < ny - 1 else ny - 1
            for i in range(nx):
                im = i - 1 if i > 0 else 0
                ip = i + 1 if i < nx - 1 else nx - 1
                c = u[j, i]
                lap = (u[j, ip] - 2 * c + u[j, im]) * ih2 + (u[jp, i] - 2 * c + u[jm, i]) * ih2
                r = k * c * (1 - c) if c > a else -k * c * v[j, i]
                out[j, i] = D * lap + r
    return term
'''


def child(n, what, env):
    r = subprocess.run([sys.executable, "-c", CHILD % dict(expr=EXPR, params=PARAMS, here=HERE, **PARAMS), str(n),
                        what], capture_output=True, text=True, env=env, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def median_ms(fn, calls):
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


HERE = None


def main():
    global HERE
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=int, default=1000, help="cells per axis (the grid is square)")
    ap.add_argument("--runs", type=int, default=5, help="fresh processes per first-call measurement")
    ap.add_argument("--calls", type=int, default=30, help="calls per per-call measurement")
    ap.add_argument("--start", action="store_true",
                    help="only the Term's start from the cache, split (import, Term(), call; CPU time); no Numba")
    args = ap.parse_args()
    n = args.cells
    work = tempfile.mkdtemp(prefix="pdejit-bench-")
    HERE = work
    if args.start:
        cache = tempfile.mkdtemp(prefix="pdejit-cache-", dir=work)
        env = dict(os.environ, PDEJIT_CACHE_DIR=cache)
        child(n, "term", env)  # fills the cache
        runs = [child(n, "term", env) for _ in range(args.runs)]
        assert all(r["from_cache"] for r in runs)
        print("%d x %d cells, %s threads; medians of %d fresh processes, cached Term" % (n, n, os.cpu_count(),
                                                                                      args.runs))
        print()
        print("| import pdejit | Term() | first call | whole (wall) | whole (CPU, all threads) |")
        print("|---|---|---|---|---|")
        print("| %.1f | %.1f | %.1f | %.1f | %.1f |" % tuple(statistics.median(r[k] for r in runs)
                                                         for k in ("import", "Term()", "call", "ms", "cpu")))
        return
    with open(os.path.join(work, "python_term_numba.py"), "w") as f:
        f.write(NUMBA_SRC)
    sys.path.insert(0, work)
    import numpy as np
    import pdejit
    from python_term_numba import make

    rng = np.random.default_rng(0)
    u, v = rng.random((n, n)), rng.random((n, n))
    h = 1.0 / n
    out = np.empty((n, n))
    term = pdejit.Term(EXPR, grid=(n, n), spacing=(h, h), fields=["u", "v"], params=PARAMS)
    numba_term = make()

    def numpy_term(out=None):
        p = np.pad(u, 1, mode="edge")
        lap = (p[1:-1, 2:] - 2 * u + p[1:-1, :-2]) / (h * h) + (p[2:, 1:-1] - 2 * u + p[:-2, 1:-1]) / (h * h)
        r = np.where(u > PARAMS["a"], PARAMS["k"] * u * (1 - u), -PARAMS["k"] * u * v)
        if out is None:
            return PARAMS["D"] * lap + r
        np.multiply(PARAMS["D"], lap, out=out)
        out += r
        return out

    a = term(u=u, v=v)
    b = numpy_term()
    numba_term(u, v, out, h, PARAMS["D"], PARAMS["a"], PARAMS["k"])
    scale = np.abs(b).max()
    assert np.abs(a - b).max() <= 1e-12 * scale and np.abs(out - b).max() <= 1e-12 * scale, "the results differ"

    rows = []
    per = {
        "pdejit.Term, out=": lambda: term(u=u, v=v, out=out),
        "pdejit.Term, new array": lambda: term(u=u, v=v),
        "Numba parallel, out=": lambda: numba_term(u, v, out, h, PARAMS["D"], PARAMS["a"], PARAMS["k"]),
        "NumPy, out=": lambda: numpy_term(out),
        "NumPy, new array": lambda: numpy_term(),
    }
    for name, fn in per.items():
        rows.append((name, "per call", median_ms(fn, args.calls)))

    env = dict(os.environ)
    firsts = {"term-cold": [], "term-cached": [], "numba-cold": [], "numba-cached": []}
    for r in range(args.runs):
        cold = tempfile.mkdtemp(prefix="pdejit-cold-", dir=work)
        firsts["term-cold"].append(child(n, "term", dict(env, PDEJIT_CACHE_DIR=cold))["ms"])
        warm = child(n, "term", dict(env, PDEJIT_CACHE_DIR=cold))
        assert warm["from_cache"]
        firsts["term-cached"].append(warm["ms"])
        ncache = tempfile.mkdtemp(prefix="numba-", dir=work)
        firsts["numba-cold"].append(child(n, "numba", dict(env, NUMBA_CACHE_DIR=ncache))["ms"])
        child(n, "numba-cached", dict(env, NUMBA_CACHE_DIR=ncache))  # fills its cache
        firsts["numba-cached"].append(child(n, "numba-cached", dict(env, NUMBA_CACHE_DIR=ncache))["ms"])
    rows.append(("pdejit.Term", "first call, empty cache (Term() + call)", statistics.median(firsts["term-cold"])))
    rows.append(("Numba parallel", "first call, compiling", statistics.median(firsts["numba-cold"])))
    rows.append(("pdejit.Term", "from the cache: import pdejit + Term() + call",
                 statistics.median(firsts["term-cached"])))
    rows.append(("Numba parallel", "from its cache (cache=True): first call", statistics.median(firsts["numba-cached"])))

    print("%d x %d cells, %s threads; medians of %d calls / %d fresh processes" % (n, n, os.cpu_count(), args.calls,
                                                                                 args.runs))
    print()
    print("| what | measured | ms |")
    print("|---|---|---|")
    for name, what, ms in rows:
        print("| %s | %s | %.2f |" % (name, what, ms))


if __name__ == "__main__":
    main()
