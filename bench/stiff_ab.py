#!/usr/bin/env python3
"""stiff_ab.py — two pdejit builds side by side on the stiff heat problem of stiff_heat_2d.py.

  python3 bench/stiff_ab.py --before OLD/pdejit --after NEW/pdejit --time T --rounds N CASE...

CASE is rk4 (run with --after only, at 0.999 of its stability limit, the denominator) or
SCHEME:TOL (an implicit scheme from dt = 1e-6 with adapt = TOL, run with both builds). Each round
runs every case once, interleaved; an untimed first run dumps the solution for the max error
against the exact one. Prints a markdown table: steps, linear iterations, max error, medians of
wall and CPU (user + system of the whole pdejit process, start-up included), CPU / rk4's, and
every round's CPU. Uses stiff_heat_2d.py's run, heat_src and max_error; standard library only.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stiff_heat_2d as B  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", help="the old pdejit command (omit: --after alone)")
    ap.add_argument("--after", required=True, help="the new pdejit command")
    ap.add_argument("--time", type=float, default=0.1, help="T, the end time")
    ap.add_argument("--n", type=int, default=256, help="cells per side")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("cases", nargs="+", help="rk4 | SCHEME:TOL")
    a = ap.parse_args()
    bins = {"after": a.after}
    if a.before:
        bins["before"] = a.before
    opts = argparse.Namespace(pdejit=a.after, threads=a.threads)
    probe = B.run(opts, B.heat_src(a.n, a.time, "rk4", 1.0), dump=False)
    m = B.LIMIT_RE.search(probe["err"])
    if not m:
        sys.exit("stiff_ab: no stability limit in pdejit's message:\n" + probe["err"])
    dt = float(m.group(1)) * 0.999

    def src(case):
        if case == "rk4":
            return B.heat_src(a.n, a.time, "rk4", dt)
        scheme, tol = case.split(":")
        return B.heat_src(a.n, a.time, scheme, 1e-6, float(tol))

    def builds(case):
        return ["after"] if case == "rk4" else [b for b in ("before", "after") if b in bins]

    res = {}
    for c in a.cases:
        for b in builds(c):
            opts.pdejit = bins[b]
            r = B.run(opts, src(c))
            if r["rc"] != 0:
                sys.exit(f"stiff_ab: {c} with {bins[b]} failed:\n{r['err']}")
            res[(c, b)] = dict(err=B.max_error(r["rows"], a.time), steps=r["steps"], lin=r["linear"], cpu=[], wall=[])
    for _ in range(a.rounds):
        for c in a.cases:
            for b in builds(c):
                opts.pdejit = bins[b]
                r = B.run(opts, src(c), dump=False)
                res[(c, b)]["cpu"].append(r["cpu"])
                res[(c, b)]["wall"].append(r["wall"])
    rk = statistics.median(res[("rk4", "after")]["cpu"]) if ("rk4", "after") in res else float("nan")
    print(f"{a.n}^2 cells, T = {a.time}, rk4 dt = {dt:.3g}; medians of {a.rounds} interleaved rounds")
    print("| case | build | steps | linear its | max error | wall s | CPU s | CPU / rk4's | CPU of each round |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (c, b), v in res.items():
        cm, wm = statistics.median(v["cpu"]), statistics.median(v["wall"])
        rounds = " ".join("%.2f" % x for x in v["cpu"])
        print(f"| {c} | {b} | {v['steps']} | {v['lin']} | {v['err']:.3g} | {wm:.2f} | {cm:.2f} | {cm / rk:.2f} | {rounds} |")


if __name__ == "__main__":
    main()
