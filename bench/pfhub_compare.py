#!/usr/bin/env python3
"""pfhub_compare.py — a pfhub_full.sh run's free energy against the curves published on PFHub.

    bench/pfhub_compare.py 2a|2b MONITOR_CSV
    bench/pfhub_compare.py 3 MONITOR_CSV CORNER     (CORNER: the run's square side, 960 for the full)

The published curves are the extracts in tests/data/pfhub/ (their sources are in the files'
headers), which tests/test_pfhub_published.c compares over their early stretch; what is compared
and why is explained there:
  2a, 2b  F - G against moose_itg_2a / moose_itg_2b (G: the order parameters' gradient energy,
          which those records leave out), and F against moose_2X_ia, moose_2X_sta and
          fenics_2X_ivan, at every published time the run reached
  3       the whole 960 x 960 square's F (the run's plus the uniform melt's energy for the rest of
          the square) and F's change from t = 15, against memphis_3a, moose_itg_3a, inl_moose_3a
          and chimad3_moose_3a (the last two extracts end at t = 36.6 and 31.3)
Prints one line per published time and the largest relative difference per stretch of time.
"""
import csv
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(path, column):
    rows = [line for line in open(path) if not line.startswith('#')]
    table = list(csv.DictReader(rows))
    return [float(r[next(iter(r))]) for r in table], [float(r[column]) for r in table]


def at(ts, vs, t):
    for i in range(len(ts) - 1):
        if ts[i] <= t <= ts[i + 1]:
            return vs[i] + (vs[i + 1] - vs[i]) * (t - ts[i]) / (ts[i + 1] - ts[i])
    return None


def report(rows, stretches):
    """rows: (t, ours, theirs, relative difference) -> the largest |difference| per stretch."""
    for t, ours, theirs, rel in rows:
        print(f"t = {t:10.4f}  ours {ours:14.4f}  published {theirs:14.4f}  {100 * rel:+8.3f} %")
    for lo, hi in stretches:
        inside = [abs(r[3]) for r in rows if lo <= r[0] < hi]
        if inside:
            print(f"  t in [{lo:g}, {hi:g}): {len(inside)} times, largest difference {100 * max(inside):.2f} %")


def main():
    which, monitor = sys.argv[1], sys.argv[2]
    data = os.path.join(ROOT, 'tests', 'data', 'pfhub')
    if which in ('2a', '2b'):
        ts, f = read(monitor, 'F' if which == '2a' else 'energy')
        _, g = read(monitor, 'G')
        ours = [a - b for a, b in zip(f, g)]
        pt, pv = read(os.path.join(data, f'moose_itg_{which}.csv'), 'total_energy')
        rows = [(t, at(ts, ours, t), v, (at(ts, ours, t) - v) / v) for t, v in zip(pt, pv) if at(ts, ours, t) is not None]
        print(f"PFHub {which}: F - G against moose_itg_{which}")
        report(rows, [(0.4, 8.2), (8.2, 20), (20, 100), (100, 1e9)])
        for name, column in ((f'moose_{which}_ia', 'TotalEnergy'), (f'moose_{which}_sta', 'TotalEnergy'),
                             (f'fenics_{which}_ivan', 'total_free_energy')):
            pt, pv = read(os.path.join(data, name + '.csv'), column)
            rows = [(t, at(ts, f, t), v, (at(ts, f, t) - v) / v) for t, v in zip(pt, pv)
                    if t >= 0.4 and at(ts, f, t) is not None]
            print(f"PFHub {which}: F against {name}")
            report(rows, [(0.4, 1.9), (1.9, 8.2), (8.2, 20), (20, 100)])
        return
    corner = float(sys.argv[3])
    ts, f = read(monitor, 'F')
    lam = 10 / 0.6267
    rest = (-0.25 + 0.3 * lam * 8 / 15) * (960.0 ** 2 - corner ** 2)
    for name in ('memphis_3a', 'moose_itg_3a', 'inl_moose_3a', 'chimad3_moose_3a'):
        pt, pv = read(os.path.join(data, name + '.csv'), 'free_energy')
        whole = [(t, at(ts, f, t) + rest, v, (at(ts, f, t) + rest - v) / v) for t, v in zip(pt, pv) if at(ts, f, t) is not None]
        print(f"PFHub 3: the square's F against {name}")
        report(whole, [(0, 1e9)])
        base, ours15 = at(pt, pv, 15), at(ts, f, 15)
        if base is None or ours15 is None:
            continue
        change = [(t, at(ts, f, t) - ours15, v - base, (at(ts, f, t) - ours15 - (v - base)) / abs(v - base))
                  for t, v in zip(pt, pv) if t > 16 and at(ts, f, t) is not None]
        print(f"PFHub 3: F(t) - F(15) against {name}")
        report(change, [(16, 31), (31, 100), (100, 1e9)])


if __name__ == '__main__':
    main()
