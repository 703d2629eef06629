#!/usr/bin/env python3
"""harness.py — runs the CPU benchmark and prints its report as Markdown (bench/run.sh calls it
after building what it needs; standard library only).

Step timings: the 2D reaction-diffusion step u + dt*(D*lap(u) + k*u*(1-u)), explicit Euler,
periodic square, at each size and thread count, every implementation in its own process, the
implementations interleaved round by round (C, pdejit, ..., C, pdejit, ...) so that a slow
spell of this shared machine hits them all alike. Per configuration: the median of all reps of
all rounds (each rep = seconds per step over a batch of steps, after one warm-up rep).

Compile timings: every sample of samples/, cold (empty cache folder) and cache hit, in fresh
processes, median of several tries; the whole-process wall time of `pdejit run` of a small
cached problem, median of several runs after a warm-up.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BYTES_PER_CELL = 16  # double: one read and one write of u per cell and step


def parse(line):
    out = {"impl": line.split()[0]}
    for tok in line.split()[1:]:
        if "=" in tok:
            k, v = tok.split("=", 1)
            out[k] = v
    return out


def run_line(cmd, env=None, prefix=None):
    """Runs cmd; returns the parsed line starting with prefix, or None (and says why)."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    except subprocess.TimeoutExpired:
        sys.stderr.write("timed out: %s\n" % " ".join(cmd))
        return None
    if r.returncode != 0:
        sys.stderr.write("failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stderr[-2000:]))
        return None
    for line in r.stdout.splitlines():
        if prefix is None or line.startswith(prefix):
            return parse(line)
    sys.stderr.write("no result line from: %s\n%s" % (" ".join(cmd), r.stdout[-2000:]))
    return None


def fmt_time(s):
    if s < 1e-3:
        return "%.2f µs" % (s * 1e6)
    if s < 1:
        return "%.3f ms" % (s * 1e3)
    return "%.3f s" % s


def last_level_cache():
    """The size of the largest CPU cache sysfs names, as this machine reports it ("L3 32 MiB")."""
    best = (0, 0, "unknown")
    base = "/sys/devices/system/cpu/cpu0/cache"
    for entry in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        try:
            with open(os.path.join(base, entry, "level")) as f:
                level = int(f.read())
            with open(os.path.join(base, entry, "size")) as f:
                size = f.read().strip()
        except (OSError, ValueError):
            continue
        kib = int(size[:-1]) * (1024 if size.endswith("M") else 1) if size[-1] in "KM" else 0
        if (level, kib) > best[:2]:
            best = (level, kib, "L%d %s" % (level, "%d MiB" % (kib // 1024) if kib >= 1024 else "%d KiB" % kib))
    return best[2]


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


UNIFORM_LEAVES = {"const", "param", "h", "dt", "t"}   # the same for every cell: hoisted out of the loop
CELL_LEAVES = {"load", "coord", "metric"}              # differ from cell to cell
NOT_OPERATIONS = UNIFORM_LEAVES | CELL_LEAVES | {"store"}


def ops_per_cell(ir_text, kernel="stage1"):
    """Floating-point operations a cell of one kernel of `pdejit emit --ir`: every node that
    depends on the cell (through a load, a coordinate or a metric table) and is not itself a
    leaf, each counted once (fma too: one instruction, as bench/fma_peak counts the roof)."""
    varying, count, inside = set(), 0, False
    for line in ir_text.splitlines():
        if line.startswith("kernel "):
            inside = line.split()[1] == kernel
            continue
        if not inside or "=" not in line or not line.lstrip().startswith("%"):
            continue
        name, rhs = [w.strip() for w in line.split("=", 1)]
        words = rhs.split()
        op, args = words[0], [w for w in words[1:] if w.startswith("%")]
        if op in CELL_LEAVES or any(a in varying for a in args):
            varying.add(name)
            if op not in NOT_OPERATIONS:
                count += 1
    return count


def problem_ops(args, prob, env):
    """Operations a cell of the peer table's problem `prob`, from `pdejit emit --ir` of the text
    pj_bench runs (written by it to $PJ_BENCH_SOURCE); None when it cannot be had."""
    pjb = os.path.join(args.bin, "pj_bench")
    src = os.path.join(os.path.dirname(env["PDEJIT_CACHE_DIR"]), prob + ".pde")
    cmd = [pjb, "step", "16", "1", "1", "1", "cpu"] if prob == "rd" else [pjb, "step3d", "8", "8", "8", "1", "1", "1", "cpu"]
    if run_line(cmd, dict(env, PJ_BENCH_SOURCE=src), "pdejit") is None:
        return None
    r = subprocess.run([args.pdejit, "emit", src, "--ir"], capture_output=True, text=True, env=env)
    return ops_per_cell(r.stdout) if r.returncode == 0 else None


def tblock_table(args):
    """Temporal blocking (backends/host/tblock.c): the C reference, pdejit one step at a time, and pdejit
    with several steps per sweep, side by side, interleaved round by round; batches of 64 steps."""
    rounds = args.rounds or (1 if args.quick else 5)
    reps = 3
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes != "64,256,1024,2048" else [2048, 4096]
    thread_counts = [int(t) for t in args.threads.split(",")]
    ref = os.path.join(args.bin, "ref_rd")
    pjb = os.path.join(args.bin, "pj_bench")
    tmp = tempfile.mkdtemp(prefix="pdejit-bench-")
    env = dict(os.environ, PDEJIT_CACHE_DIR=os.path.join(tmp, "cache"))
    env.pop("PDEJIT_TBLOCK", None)
    impls = [
        ("C reference (gcc -O3 -march=native -fopenmp)", "c", lambda n, t, s: [ref, str(n), str(t), str(s), str(reps)]),
        ("pdejit cpu, one step per sweep (sim_step)", "pj", lambda n, t, s: [pjb, "step", str(n), str(t), str(s), str(reps), "cpu"]),
        ("pdejit cpu, temporal blocking (sim_step_n, chosen automatically)", "tb",
         lambda n, t, s: [pjb, "step", str(n), str(t), str(s), str(reps), "cpu-tblock"]),
        ("pdejit cpu via driver_run (as `pdejit run`)", "run",
         lambda n, t, s: [pjb, "step", str(n), str(t), str(s), str(reps), "cpu-run"]),
    ]
    run_line([pjb, "step", "64", "1", "1", "1", "cpu"], env, "pdejit")
    t_start, load_start = time.time(), loadavg()
    results = {}
    for n in sizes:
        for t in thread_counts:
            for rnd in range(rounds):
                for label, key, build in impls:
                    res = run_line(build(n, t, 64), env)
                    if res is None:
                        continue
                    d = results.setdefault((n, t, key), {"times": [], "lines": []})
                    d["times"] += [float(x) for x in res["sec_per_step"].split(",")]
                    d["lines"].append(res)
            sys.stderr.write("  %dx%d, %d thread%s: done (%.0f s)\n" % (n, n, t, "" if t == 1 else "s", time.time() - t_start))
    print("### Temporal blocking\n")
    print("`bench/run.sh --tblock`: Fisher-KPP, explicit Euler, periodic, double; time per step = median of "
          "%d rounds x %d reps (each rep up to 64 steps, stopped after 0.5 s); load average %s at the start, "
          "%s at the end; %.0f s.\n" % (rounds, reps, load_start, loadavg(), time.time() - t_start))
    print("| cells | threads | implementation | time/step | best rep | Mcups | speed vs C | steps/sweep |")
    print("|---|---|---|---|---|---|---|---|")
    for n in sizes:
        for t in thread_counts:
            c = results.get((n, t, "c"))
            c_med = statistics.median(c["times"]) if c else None
            for label, key, _ in impls:
                d = results.get((n, t, key))
                if not d:
                    print("| %d² | %d | %s | failed | | | | |" % (n, t, label))
                    continue
                med = statistics.median(d["times"])
                print("| %d² | %d | %s | %s | %s | %.0f | %s | %s |" % (
                    n, t, label, fmt_time(med), fmt_time(min(d["times"])), n * n / med / 1e6,
                    ("%.2f" % (c_med / med)) if c_med else "", d["lines"][0].get("block", "1")))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def peers_table(args):
    """The peer table (issue 13 item 5): the 2D reaction-diffusion step and the 3D heat step
    (7-point) in C, pdejit, Numba, pystencils and Devito, interleaved round by round, with the
    fraction of the DRAM bound (bench/copy_bw: a plain copy's GB/s at the same thread count)."""
    rounds = args.rounds or (1 if args.quick else 5)
    reps = 3 if args.quick else 5
    cases = []  # (problem, shape tuple (x first), label)
    for spec in args.peer_sizes.split(","):
        prob, size = spec.split(":")
        dims = tuple(int(v) for v in size.split("x"))
        cases.append((prob, dims))
    thread_counts = [int(t) for t in args.threads.split(",")]
    ref = os.path.join(args.bin, "ref_rd")
    pjb = os.path.join(args.bin, "pj_bench")
    cbw = os.path.join(args.bin, "copy_bw")
    fma = os.path.join(args.bin, "fma_peak")
    peers = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers.py")
    tmp = tempfile.mkdtemp(prefix="pdejit-bench-")
    env = dict(os.environ, PDEJIT_CACHE_DIR=os.path.join(tmp, "cache"))
    env.pop("PDEJIT_TBLOCK", None)

    def size_args(prob, dims):
        return [str(v) for v in dims]

    impls = [
        ("C reference (gcc -O3 -march=native -fopenmp)", "c",
         lambda p, d, t, s: [ref] + (["--3d"] if p == "heat3d" else []) + size_args(p, d) + [str(t), str(s), str(reps)]),
        ("pdejit cpu", "pj",
         lambda p, d, t, s: [pjb, "step" if p == "rd" else "step3d"] + size_args(p, d) + [str(t), str(s), str(reps), "cpu"]),
        ("pdejit cpu, temporal blocking when it pays (sim_step_n)", "tb",
         lambda p, d, t, s: [pjb, "step" if p == "rd" else "step3d"] + size_args(p, d) + [str(t), str(s), str(reps), "cpu-tblock"]),
    ]
    if args.peers_python:
        for label, key in (("Numba @njit(parallel=True)", "numba"),
                           ("pystencils (-O3 -march=native -ffast-math, OpenMP, AVX-512)", "pystencils"),
                           ("Devito (OpenMP, opt 'advanced')", "devito")):
            impls.append((label, key, lambda p, d, t, s, key=key: [args.peers_python, peers, key, p] + size_args(p, d) +
                          [str(t), str(s), str(reps)]))
    ops = {prob: problem_ops(args, prob, env) for prob in {c[0] for c in cases}}
    t_start, load_start = time.time(), loadavg()
    results, bandwidth, roof = {}, {}, {}
    for prob, dims in cases:
        cells = dims[0] * dims[0] if prob == "rd" else dims[0] * dims[1] * dims[2]
        # 3D: 16 steps a rep at least, so that the blocked row takes blocks of several steps; 2D:
        # 32, the most a 2D block takes (TB_MAX_K), so that the blocked row is not capped by the
        # rep (2048² had 5 steps a rep and 4096² 3: blocks of 5 and 3 steps, not the 32 chosen)
        steps = max(32 if prob == "rd" else 16, min(2000, int(2.5e7 / cells)))
        for t in thread_counts:
            for rnd in range(rounds):
                bw = run_line([cbw, str(t), "1024", "3"], env, "copy")
                if bw:
                    bandwidth.setdefault(t, []).append(float(bw["median"]))
                peak = run_line([fma, str(t), "3"], env, "fma")
                if peak:
                    roof.setdefault(t, []).append(float(peak["median"]))
                for label, key, build in impls:
                    env_t = dict(env, OMP_NUM_THREADS=str(t))
                    res = run_line(build(prob, dims, t, steps), env_t)
                    if res is None:
                        continue
                    d = results.setdefault((prob, dims, t, key), {"times": [], "lines": []})
                    d["times"] += [float(x) for x in res["sec_per_step"].split(",")]
                    d["lines"].append(res)
            sys.stderr.write("  %s %s, %d thread%s: done (%.0f s)\n" % (
                prob, "x".join(map(str, dims)), t, "" if t == 1 else "s", time.time() - t_start))
    print("### Peers: pdejit, C, Numba, pystencils, Devito\n")
    print("`bench/run.sh --peers`: explicit Euler, periodic, double, one ghost layer and a serial halo "
          "copy every step in each (pdejit: its ghost fill). *rd*: `u + dt*(D*lap(u) + k*u*(1-u))` in 2D; "
          "*heat3d*: `u + dt*D*lap(u)`, 7 points. Time per step = median of %d rounds x %d reps; Mcups = "
          "million cell updates per second; GB/s counts 16 bytes per cell (one read, one write); *of DRAM* = "
          "that over a plain copy's GB/s at the same thread count on 1 GiB arrays (`copy_bw`: %s), above 1 "
          "where the state stays in the last-level cache (%s); *speed vs C* = C's time / this time; *check*: the "
          "field's sum equals C's to 1e-12 after the same steps (blank: step counts differ). Load average "
          "%s at the start, %s at the end; %.0f s.\n" % (
              rounds, reps, ", ".join("%d thread%s %.1f GB/s" % (t, "" if t == 1 else "s", statistics.median(v))
                                      for t, v in sorted(bandwidth.items())) or "not measured",
              last_level_cache(), load_start, loadavg(), time.time() - t_start))
    print("*of FP roof* = Mcups x (operations a cell) / (the floating-point operations a second of an FMA loop "
          "at the same thread count, `fma_peak`: %s); operations a cell are the nodes of pdejit's stage kernel "
          "that depend on the cell (`pdejit emit --ir`; an fma counts once, as an add or a multiply): %s.\n" % (
              ", ".join("%d thread%s %.1f Gop/s" % (t, "" if t == 1 else "s", statistics.median(v))
                        for t, v in sorted(roof.items())) or "not measured",
              ", ".join("%s %s" % (p, o if o is not None else "not counted") for p, o in sorted(ops.items()))))
    print("| problem | cells | threads | implementation | time/step | best rep | Mcups | GB/s | of DRAM | of FP roof | speed vs C | check | compile |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for prob, dims in cases:
        cells = dims[0] * dims[0] if prob == "rd" else dims[0] * dims[1] * dims[2]
        name = "x".join(map(str, dims)) if len(dims) == 3 else "%d²" % dims[0]
        for t in thread_counts:
            c = results.get((prob, dims, t, "c"))
            c_med = statistics.median(c["times"]) if c else None
            c_sum = float(c["lines"][0]["checksum"]) if c else None
            c_steps = c["lines"][0]["steps"] if c else None
            bw = statistics.median(bandwidth[t]) if t in bandwidth else None
            peak = statistics.median(roof[t]) if t in roof else None
            for label, key, _ in impls:
                d = results.get((prob, dims, t, key))
                if not d:
                    print("| %s | %s | %d | %s | failed | | | | | | | | |" % (prob, name, t, label))
                    continue
                med = statistics.median(d["times"])
                gbs = cells * BYTES_PER_CELL / med / 1e9
                chk = ""
                if key != "c" and c_sum is not None and d["lines"][0]["steps"] == c_steps:
                    ok = True
                    for f in ("checksum", "sumsq"):
                        if f in c["lines"][0] and f in d["lines"][0]:
                            a, b = float(d["lines"][0][f]), float(c["lines"][0][f])
                            ok = ok and abs(a - b) <= 1e-12 * abs(b)
                    chk = "ok" if ok else "DIFFERS"
                comp = d["lines"][0].get("compile_s", "")
                fp = cells / med * ops[prob] / (peak * 1e9) if peak and ops[prob] else None
                print("| %s | %s | %s | %s | %s | %s | %.0f | %.1f | %s | %s | %s | %s | %s |" % (
                    prob, name, d["lines"][0].get("threads", str(t)), label, fmt_time(med), fmt_time(min(d["times"])),
                    cells / med / 1e6, gbs, ("%.2f" % (gbs / bw)) if bw else "", ("%.2f" % fp) if fp else "",
                    ("%.2f" % (c_med / med)) if c_med else "", chk, ("%s s" % comp) if comp else ""))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="folder with ref_rd and pj_bench")
    ap.add_argument("--pdejit", required=True, help="the pdejit command")
    ap.add_argument("--python", default="", help="the venv's python (NumPy/Numba); empty: skip them")
    ap.add_argument("--py-note", default="", help="why NumPy/Numba are missing")
    ap.add_argument("--samples", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--sizes", default="64,256,1024,2048")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--tblock", action="store_true",
                    help="only the temporal blocking table (2048² and 4096² unless --sizes)")
    ap.add_argument("--peers", action="store_true",
                    help="only the peer table: C, pdejit, Numba, pystencils, Devito in 2D and 3D")
    ap.add_argument("--peers-python", default="", help="the python of bench/.venv-peers; empty: no Python peers")
    ap.add_argument("--peer-sizes", default="rd:2048,heat3d:256x256x256,heat3d:512x512x128",
                    help="PROBLEM:SIZE,... (rd:N, heat3d:NXxNYxNZ)")
    args = ap.parse_args()
    if args.peers:
        return peers_table(args)
    if args.tblock:
        return tblock_table(args)

    quick = args.quick
    rounds = args.rounds or (1 if quick else 5)
    reps = 3 if quick else 5
    target_updates = 1.0e7 if quick else 2.5e7  # cell updates per rep of the compiled codes
    sizes = [int(s) for s in args.sizes.split(",")]
    thread_counts = [int(t) for t in args.threads.split(",")]
    ref = os.path.join(args.bin, "ref_rd")
    pjb = os.path.join(args.bin, "pj_bench")
    tmp = tempfile.mkdtemp(prefix="pdejit-bench-")
    env = dict(os.environ, PDEJIT_CACHE_DIR=os.path.join(tmp, "cache"))
    t_start = time.time()
    load_start = loadavg()

    # implementation: (label, command builder(n, threads, steps, reps), steps divisor, threads it runs)
    impls = [
        ("C reference (gcc -O3 -march=native -fopenmp)", "c", lambda n, t, s, r: [ref, str(n), str(t), str(s), str(r)], 1),
        ("pdejit cpu", "pj", lambda n, t, s, r: [pjb, "step", str(n), str(t), str(s), str(r), "cpu"], 1),
        ("pdejit cpu --fast-math", "pjf", lambda n, t, s, r: [pjb, "step", str(n), str(t), str(s), str(r), "cpu-fast"], 1),
        ("pdejit cpu via driver_run (as `pdejit run`: NaN/Inf check every step)", "pjrun",
         lambda n, t, s, r: [pjb, "step", str(n), str(t), str(s), str(r), "cpu-run"], 1),
        ("C, each difference divided by h (diagnostic: pdejit's spelling before commit fcd80b6)", "cdiv", lambda n, t, s, r: [ref, str(n), str(t), str(s), str(r), "--div"], 1),
        ("C, each difference times 1/h (diagnostic)", "crecip",
         lambda n, t, s, r: [ref, str(n), str(t), str(s), str(r), "--recip"], 1),
        ("pdejit interpreter", "interp", lambda n, t, s, r: [pjb, "step", str(n), str(t), str(s), str(r), "interp"], 30),
    ]
    if args.python:
        py = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rd_py.py")
        impls.append(("Numba @njit(parallel=True)", "numba",
                      lambda n, t, s, r: [args.python, py, "numba", str(n), str(t), str(s), str(r)], 1))
        impls.append(("NumPy (one thread)", "numpy",
                      lambda n, t, s, r: [args.python, py, "numpy", str(n), str(t), str(s), str(r)], 100))

    # warm the kernel cache so that no step process pays a cold compile
    run_line([pjb, "step", "64", "1", "1", "1", "cpu"], env, "pdejit")
    run_line([pjb, "step", "64", "1", "1", "1", "cpu-fast"], env, "pdejit")

    results = {}  # (n, t, key) -> dict(times=[...], line=last parsed)
    for n in sizes:
        base_steps = max(5, min(20000, int(target_updates / (n * n))))
        for t in thread_counts:
            for rnd in range(rounds):
                for label, key, build, div in impls:
                    if key == "numpy" and t != 1:
                        continue
                    steps = max(1, base_steps // div)
                    r = reps if div == 1 else max(3, reps - 2)
                    res = run_line(build(n, t, steps, r), env)
                    if res is None:
                        continue
                    d = results.setdefault((n, t, key), {"times": [], "lines": []})
                    d["times"] += [float(x) for x in res["sec_per_step"].split(",")]
                    d["lines"].append(res)
            sys.stderr.write("  %dx%d, %d thread%s: done (%.0f s)\n" % (n, n, t, "" if t == 1 else "s", time.time() - t_start))

    out = []
    w = out.append
    w("### Step timings\n")
    w("2D reaction-diffusion `u + dt*(D*lap(u) + k*u*(1-u))`, explicit Euler, periodic on both axes "
      "(pdejit: `periodic x, y`, ghost fill inside every step; C/NumPy/Numba: the equivalent halo "
      "copy every step), double precision. Time per step: median of %d rounds x %d reps (each rep a "
      "batch of steps); Mcups = million cell updates per second; GB/s counts %d bytes per cell "
      "(one read, one write of u); *speed vs C* = C's time / this time (1.00 = as fast as C, "
      "higher is faster); *best rep*: the fastest rep, for a machine that was busy at times; "
      "*ghost fill* = one serial ghost fill (halo update), measured alone, which the step "
      "includes; *check*: the field's sum after the same steps equals the C reference's to 1e-12 "
      "(blank: different step counts, not compared).\n" % (rounds, reps, BYTES_PER_CELL))
    w("| cells | threads | implementation | time/step | best rep | Mcups | GB/s | speed vs C | ghost fill | check |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for n in sizes:
        for t in thread_counts:
            c = results.get((n, t, "c"))
            c_med = statistics.median(c["times"]) if c else None
            c_sum = float(c["lines"][0]["checksum"]) if c else None
            c_steps = c["lines"][0]["steps"] if c else None
            for label, key, _, _ in impls:
                d = results.get((n, t, key))
                if not d:
                    if key == "numpy" and t != 1:
                        continue
                    w("| %d² | %d | %s | failed | | | | | | |" % (n, t, label))
                    continue
                med = statistics.median(d["times"])
                mcups = n * n / med / 1e6
                gbs = n * n * BYTES_PER_CELL / med / 1e9
                ratio = ("%.2f" % (c_med / med)) if c_med else ""
                gf = ""
                if "ghost_fill" in d["lines"][0]:
                    g = statistics.median(float(x["ghost_fill"]) for x in d["lines"])
                    gf = "%s (%.0f%%)" % (fmt_time(g), 100 * g / med)
                chk = ""
                if key != "c" and c_sum is not None and d["lines"][0]["steps"] == c_steps:
                    s = float(d["lines"][0]["checksum"])
                    chk = "ok" if abs(s - c_sum) <= 1e-12 * abs(c_sum) else "DIFFERS (%.15e vs %.15e)" % (s, c_sum)
                thr = d["lines"][0].get("threads", str(t))
                w("| %d² | %s | %s | %s | %s | %.0f | %.1f | %s | %s | %s |" % (
                    n, thr, label, fmt_time(med), fmt_time(min(d["times"])), mcups, gbs, ratio, gf, chk))
                summary[(n, t, key)] = med
    w("")

    # ---- compile and cache timings of every sample ----
    tries = 2 if quick else 7
    samples = sorted(f for f in os.listdir(args.samples) if f.endswith(".pde"))
    w("### Compile and cache timings of every sample\n")
    w("Fresh process each time, CPU back end, double precision. *cold*: empty cache folder "
      "(`PDEJIT_CACHE_DIR` set to a new temporary folder): LLVM `default<O3>` + object emission + "
      "storing the entry + loading it; *hit*: the same again with the entry on disk (read, checksum, "
      "load into ORC, resolve). Per kernel as `pdejit run --verbose` reports it; *before the first "
      "step* adds the front end (parse, check, lower) and the JIT's creation. Medians of %d tries.\n" % tries)
    w("| sample | scheme | kernels | cold: per kernel (ms) | cold: all kernels | hit: per kernel (ms) | hit: all kernels | front end | JIT creation | before the first step, cold / hit |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    gs_cold = gs_hit = None
    max_hit = 0
    for f in samples:
        path = os.path.join(args.samples, f)
        cold, hit = [], []
        for i in range(tries):
            cdir = os.path.join(tmp, "c-%s-%d" % (f, i))
            e = dict(os.environ, PDEJIT_CACHE_DIR=cdir)
            a = run_line([pjb, "compile", path], e, "compile")
            b = run_line([pjb, "compile", path], e, "compile")
            if a and b:
                cold.append(a)
                hit.append(b)
            shutil.rmtree(cdir, ignore_errors=True)
        if not cold:
            w("| %s | | | failed | | | | | | |" % f)
            continue

        def per_kernel(lines):
            names = [k.split(":")[0] for k in lines[0]["kernels"].split(",")]
            cols = []
            for j, nm in enumerate(names):
                cols.append(statistics.median(float(l["kernels"].split(",")[j].split(":")[2]) for l in lines))
            return names, cols

        names, kc = per_kernel(cold)
        _, kh = per_kernel(hit)
        med = lambda lines, k: statistics.median(float(l[k]) for l in lines)
        pc, ph = med(cold, "prepare_ms"), med(hit, "prepare_ms")
        max_hit = max(max_hit, ph)
        if f == "gray_scott.pde":
            gs_cold, gs_hit = pc, ph
        w("| %s | %s | %d | %s | %.1f ms | %s | %.2f ms | %.2f ms | %.2f ms | %.1f / %.2f ms |" % (
            f, cold[0]["scheme"], len(names), ", ".join("%s %.1f" % (nm, x) for nm, x in zip(names, kc)), pc,
            ", ".join("%.2f" % x for x in kh), ph, med(cold, "frontend_ms"), med(cold, "jit_create_ms"),
            med(cold, "total_ms"), med(hit, "total_ms")))
    w("")

    # the real command, once cold and once hit, for the record
    w("`pdejit run samples/gray_scott.pde --out none --quiet --verbose --steps 1`, cold then hit:\n")
    w("```")
    vdir = os.path.join(tmp, "verbose")
    for _ in range(2):
        r = subprocess.run([args.pdejit, "run", os.path.join(args.samples, "gray_scott.pde"), "--out", "none", "--quiet",
                            "--verbose", "--steps", "1"], capture_output=True, text=True,
                           env=dict(os.environ, PDEJIT_CACHE_DIR=vdir))
        for line in r.stderr.splitlines():
            if "kernel" in line:
                w(line)
    w("```\n")

    # ---- whole-process wall time of a small cached run ----
    runs = 5 if quick else 10
    wdir = os.path.join(tmp, "whole")
    cmd = [args.pdejit, "run", os.path.join(args.samples, "fisher.pde"), "--out", "none", "--quiet"]
    we = dict(os.environ, PDEJIT_CACHE_DIR=wdir)
    subprocess.run(cmd, env=we, capture_output=True)  # warm-up: fills the cache
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=we, capture_output=True)
        walls.append(time.perf_counter() - t0)
    whole = statistics.median(walls)
    w("### Whole `pdejit run` of a small cached problem\n")
    w("`PDEJIT_CACHE_DIR=<warm> pdejit run samples/fisher.pde --out none --quiet` (200 cells, RK2, "
      "1000 steps; the pdejit command links LLVM statically): wall time of the whole process, "
      "%d runs after one warm-up: median **%.1f ms** (min %.1f, max %.1f).\n" % (
          runs, whole * 1e3, min(walls) * 1e3, max(walls) * 1e3))

    # ---- targets ----
    w("### Targets\n")
    w("| target | measured | verdict |")
    w("|---|---|---|")

    def ratio(n, key, t=2):
        c, p = summary.get((n, t, "c")), summary.get((n, t, key))
        return c / p if c and p else None

    for n in (1024, 2048):
        r = ratio(n, "pj")
        rf = ratio(n, "pjf")
        if r is not None:
            w("| ≥ 1.0× the C reference at %d², 2 threads | %.2f× (with --fast-math: %s) | %s |" % (
                n, r, "%.2f×" % rf if rf else "?", "met" if r >= 1.0 else "not met"))
    r = ratio(64, "pj")
    if r is not None:
        rf = ratio(64, "pjf")
        r1 = ratio(64, "pj", 1)
        w("| within 1.2× of C at 64² per step (2 threads) | pdejit takes %.2f× C's time (1 thread: %s; --fast-math: %s) | %s |" % (
            1 / r, "%.2f×" % (1 / r1) if r1 else "?", "%.2f×" % (1 / rf) if rf else "?", "met" if 1 / r <= 1.2 else "not met"))
    if gs_cold is not None:
        w("| cold compile of all Gray-Scott kernels ≤ 50 ms | %.1f ms | %s |" % (gs_cold, "met" if gs_cold <= 50 else "not met"))
        w("| cache hit ≤ 5 ms | Gray-Scott %.2f ms; worst sample %.2f ms (all kernels) | %s |" % (
            gs_hit, max_hit, "met" if max_hit <= 5 else "not met"))
    w("| whole `pdejit run` of a small cached problem ≤ 100 ms | %.1f ms | %s |" % (whole * 1e3, "met" if whole <= 0.1 else "not met"))
    w("")
    if not args.python:
        w("NumPy and Numba were not measured: %s\n" % (args.py_note or "no virtual environment"))
    w("Load average at the start / end: %s / %s; the benchmark took %.0f s.\n" % (load_start, loadavg(), time.time() - t_start))
    shutil.rmtree(tmp, ignore_errors=True)
    print("\n".join(out))


if __name__ == "__main__":
    main()
