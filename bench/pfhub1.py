"""pfhub1.py — PFHub benchmark 1a (spinodal decomposition, periodic 200 x 200): pdejit's free energy
curve (samples/implicit/pfhub1.pde, bdf2 + adapt) against the published results. Run by
bench/pfhub1.sh, which builds pdejit and (with --fipy) FiPy 4.0.3's venv; prints Markdown.

1. To t = 54 with a monitor every 1 (steps of at most 1, as FiPy's published run): F at the times
   of PFHub's record fipy_1a_travis (FiPy 3.1, the same grid of 200 x 200 unit cells; github.com/
   usnistgov/pfhub, _data/simulations/fipy_1a_travis/meta.yaml), interpolated linearly between
   monitor rows; with --fipy, also FiPy 4.0.3 running the published script's algorithm here
   (bench/pfhub1_fipy.py).
2. The long run, to --until (default 10000, the sample's end) with a monitor every 100: the curve
   must decrease at every row; shown beside PFHub's record prismspf_1a (PRISMS-PF, finite
   elements: another discretization, not the same resolution, so only a guide; the published
   FiPy curve ends at t = 52.75).
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time

FIPY_1A = [  # (t, F) as published in PFHub's fipy_1a_travis record
    (0.0, 319.09096487896744), (0.9834705943388384, 318.83057833279986),
    (10.432280700761654, 283.6148043822506), (20.81378117476748, 207.903541306264),
    (27.567792571902892, 197.39411290020013), (33.79300496867283, 188.64120084392533),
    (40.24119682471971, 178.87382145157355), (46.746063504583994, 169.26132300018622),
    (52.746625481564735, 162.25546973386005)]
PRISMS_1A = [  # (t, F) as published in PFHub's prismspf_1a record (_data/charts/1a1_free_energy.json)
    (100.0, 115.6166174), (200.0, 102.5245412), (500.0, 84.678672), (1000.0, 70.35382018),
    (2000.0, 59.92824777), (3000.0, 52.50633843), (10000.0, 40.81065093)]


def read_rows(path, tcol="t", ecol="energy"):
    with open(path) as f:
        return [(float(r[tcol]), float(r[ecol])) for r in csv.DictReader(line for line in f if not line.startswith("#"))]


def at(rows, t):
    for (t0, e0), (t1, e1) in zip(rows, rows[1:]):
        if t0 <= t <= t1 + 1e-9:
            return e0 + (e1 - e0) * (t - t0) / (t1 - t0)
    return float("nan")


def run(cmd):
    t0 = time.time()
    c0 = os.times()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    c1 = os.times()
    return time.time() - t0, (c1.children_user + c1.children_system) - (c0.children_user + c0.children_system)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pdejit", required=True)
    ap.add_argument("--sample", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples", "implicit", "pfhub1.pde"))
    ap.add_argument("--until", type=float, default=10000)
    ap.add_argument("--fipy", help="python of a venv with FiPy 4.0.3: run bench/pfhub1_fipy.py too")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="pfhub1-")

    print("## PFHub benchmark 1a: free energy, pdejit (bdf2 + adapt = 1e-4) against published results\n")
    wall, cpu = run([a.pdejit, "run", a.sample, "--until", "54", "--set", "every=1", "--threads", str(a.threads),
                     "--out", os.path.join(tmp, "early"), "--quiet"])
    early = read_rows(os.path.join(tmp, "early", "monitor.csv"))
    print("To t = 54, monitor every 1: %.1f s wall, %.1f s CPU (%d thread%s)\n" % (wall, cpu, a.threads, "" if a.threads == 1 else "s"))
    fipy4 = None
    if a.fipy:
        fpcsv = os.path.join(tmp, "fipy.csv")
        t0 = time.time()
        with open(fpcsv, "w") as f:
            subprocess.run([a.fipy, os.path.join(os.path.dirname(os.path.abspath(__file__)), "pfhub1_fipy.py")],
                           check=True, stdout=f, stderr=subprocess.DEVNULL)
        fipy4 = read_rows(fpcsv)
        print("FiPy 4.0.3 (bench/pfhub1_fipy.py, the published script's algorithm) to t = 52.75: %.0f s wall\n" % (time.time() - t0))
    head = "| t | FiPy 3.1, published | pdejit | difference |"
    sep = "|---|---|---|---|"
    if fipy4:
        head += " FiPy 4.0.3, here | pdejit against it |"
        sep += "---|---|"
    print(head)
    print(sep)
    worst = 0.0
    for t, ref in FIPY_1A:
        v = at(early, t)
        line = "| %.2f | %.4f | %.4f | %+.2f %% |" % (t, ref, v, 100 * (v - ref) / ref)
        if t >= 15:
            worst = max(worst, abs(v - ref) / ref)
        if fipy4:
            w = fipy4[0][1] if t == 0 else at(fipy4, t)
            line += " %.4f | %+.2f %% |" % (w, 100 * (v - w) / w)
        print(line)
    final = at(early, FIPY_1A[-1][0])
    print("\nFinal published point (t = 52.75): pdejit %.4f, FiPy %.4f: %+.2f %%; from t = 20 on at most %.2f %% apart."
          % (final, FIPY_1A[-1][1], 100 * (final - FIPY_1A[-1][1]) / FIPY_1A[-1][1], 100 * worst))
    mono = all(e1 < e0 for (_, e0), (_, e1) in zip(early, early[1:]))
    print("Decreasing at every one of the %d monitor rows: %s.\n" % (len(early), "yes" if mono else "NO"))

    wall, cpu = run([a.pdejit, "run", a.sample, "--until", repr(a.until), "--threads", str(a.threads),
                     "--out", os.path.join(tmp, "long"), "--quiet"])
    long_ = read_rows(os.path.join(tmp, "long", "monitor.csv"))
    mono = all(e1 < e0 for (_, e0), (_, e1) in zip(long_, long_[1:]))
    print("To t = %g, monitor every 100: %.1f s wall, %.1f s CPU; decreasing at every one of the %d rows: %s.\n"
          % (a.until, wall, cpu, len(long_), "yes" if mono else "NO"))
    print("| t | pdejit | PRISMS-PF, published (finite elements, another discretization) |")
    print("|---|---|---|")
    for t, ref in PRISMS_1A:
        if t <= a.until:
            print("| %g | %.4f | %.4f (%+.1f %%) |" % (t, at(long_, t), ref, 100 * (at(long_, t) - ref) / ref))
    print("\nLast row: t = %g, F = %.4f." % long_[-1])


if __name__ == "__main__":
    sys.exit(main())
