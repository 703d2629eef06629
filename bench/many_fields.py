#!/usr/bin/env python3
"""many_fields.py — cold compile time against the number of fields of a coupled system.

    bench/many_fields.py gen N [--scheme rk4]          print the problem with N fields
    bench/many_fields.py time PDEJIT [--fields 10,30,100,300,1000] [--runs 3] [--scheme rk4]
                                     [--timeout 600]

The problem is multi-phase-field grain growth (Fan and Chen): N order parameters p0 .. pN-1 on a
periodic 2D grid, each relaxing by

    dt(pi) = -L*(-kappa*lap(pi) + pi^3 - pi + 2*gam*pi*(S() - pi^2) + c*pi*(p(i-1) - p(i+1)))

where S() = p0^2 + ... + pN-1^2 is one func shared by every equation (the sum over all fields)
and each field is also coupled to its two neighbours in the list. The text grows linearly with
N (S once, one eq per field); the kernels hold N equations that all use the N-term sum.

`time` runs `PDEJIT run FILE --steps 1 --out none --verbose` with an empty kernel cache
(PDEJIT_CACHE_DIR in a fresh temporary folder) for each N, --runs times, and prints a Markdown
table of the medians: the wall time and the CPU time (user + system, all threads) of the whole
run (parse, check, lowering, every kernel compiled by LLVM, the kernels in parallel, one step),
and the slowest kernel's compile time as --verbose reports it.
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def problem(n, scheme="rk4"):
    lines = [f"# multi-phase-field grain growth, {n} order parameters (bench/many_fields.py)",
             "mesh grid(nx = 32, ny = 32)",
             "periodic x, y",
             "param L = 1, kappa = 0.5, gam = 1.5, c = 0.1"]
    fields = ", ".join(f"p{i} = 0.5 + 0.4*sin(6.283185*(x + {i % 7}*y + {i}/{n}))" for i in range(n))
    lines.append(f"field {fields}")
    lines.append("func S() = " + " + ".join(f"p{i}^2" for i in range(n)))
    for i in range(n):
        a, b = (i - 1) % n, (i + 1) % n
        lines.append(f"eq dt(p{i}) = -L*(-kappa*lap(p{i}) + p{i}^3 - p{i} + "
                     f"2*gam*p{i}*(S() - p{i}^2) + c*p{i}*(p{a} - p{b}))")
    lines.append(f"time dt = 1e-4, steps = 1, scheme = {scheme}")
    return "\n".join(lines) + "\n"


def one_run(pdejit, path, timeout):
    with tempfile.TemporaryDirectory(prefix="pj-many-") as cache:
        env = dict(os.environ, PDEJIT_CACHE_DIR=cache)
        t0 = time.perf_counter()
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run([pdejit, "run", path, "--steps", "1", "--out", "none", "--verbose"],
                           env=env, capture_output=True, text=True, timeout=timeout)
        wall = time.perf_counter() - t0
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    if r.returncode != 0:
        sys.exit(f"many_fields: {path}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    out = r.stdout + r.stderr
    ms = [float(m) for m in re.findall(r"compiled in ([0-9.]+) ms", out)]
    return wall, cpu, ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("n", type=int)
    g.add_argument("--scheme", default="rk4")
    t = sub.add_parser("time")
    t.add_argument("pdejit")
    t.add_argument("--fields", default="10,30,100,300,1000")
    t.add_argument("--runs", type=int, default=3)
    t.add_argument("--scheme", default="rk4")
    t.add_argument("--timeout", type=float, default=600)
    a = ap.parse_args()
    if a.cmd == "gen":
        sys.stdout.write(problem(a.n, a.scheme))
        return
    print(f"| fields | problem bytes | cold run, wall s | cold run, CPU s | kernels | "
          "slowest kernel compile, ms |")
    print("|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="pj-many-src-") as d:
        for n in [int(x) for x in a.fields.split(",")]:
            path = os.path.join(d, f"p{n}.pde")
            text = problem(n, a.scheme)
            with open(path, "w") as f:
                f.write(text)
            walls, cpus, slowest, kernels = [], [], [], 0
            for _ in range(a.runs):
                wall, cpu, ms = one_run(a.pdejit, path, a.timeout)
                walls.append(wall)
                cpus.append(cpu)
                slowest.append(max(ms) if ms else 0.0)
                kernels = len(ms)
            print(f"| {n} | {len(text)} | {statistics.median(walls):.2f} | {statistics.median(cpus):.2f} | "
                  f"{kernels} | {statistics.median(slowest):.0f} |", flush=True)


if __name__ == "__main__":
    main()
