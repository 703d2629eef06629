#!/usr/bin/env bash
# mpi_scaling.sh — strong scaling of the 2D reaction-diffusion step over MPI processes:
#
#   bench/mpi_scaling.sh [PDEJIT] [ROUNDS] [N]        (defaults: build/pdejit, 5, 4096)
#
# Gray-Scott (two fields, 5-point Laplacians, periodic; the cell size of the sample) on N² cells,
# 40 rk2 steps, one thread per
# process: the stepping time of `pdejit run --verbose` on 1 process (no mpirun) and on 2 (mpirun
# -np 2 --ranks-layout 1x2, blocks of N x N/2 cells), interleaved round by round, and rank 0's ghost
# exchanges (calls, seconds, bytes received per call), from the --verbose lines. Prints the medians,
# the parallel efficiency T1 / (2 T2), and the exchange's share of the stepping.
set -euo pipefail
PDEJIT=${1:-build/pdejit}
ROUNDS=${2:-5}
N=${3:-4096}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
L=$(awk -v n="$N" 'BEGIN { print n * 2.5 / 128 }') # the spacing of samples/gray_scott.pde
cat > "$work/rd.pde" <<EOF
mesh grid(nx = $N, ny = $N, Lx = $L, Ly = $L)
param Du = 2e-5, Dv = 1e-5, F = 0.035, k = 0.065
field u = 1 - 0.5*(abs(x - 1.25) < 0.1 && abs(y - 1.25) < 0.1 ? 1 : 0)
field v = 0.25*(abs(x - 1.25) < 0.1 && abs(y - 1.25) < 0.1 ? 1 : 0) + 0.01*sin(20*x)*sin(20*y)
eq dt(u) = Du*lap(u) - u*v^2 + F*(1 - u)
eq dt(v) = Dv*lap(v) + u*v^2 - (F + k)*v
periodic x, y
time dt = 1, steps = 40, scheme = rk2
EOF
step_seconds() { sed -n 's/.* steps to t = .* in \([0-9.e+-]*\) s:.*/\1/p' "$1" | tail -n 1; }
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
"$PDEJIT" run "$work/rd.pde" --threads 1 -q --out none --steps 1 >/dev/null # kernels into the cache
: > "$work/t1"; : > "$work/t2"; : > "$work/x2"; : > "$work/b2"
for r in $(seq "$ROUNDS"); do
    "$PDEJIT" run "$work/rd.pde" --threads 1 -v --out none >/dev/null 2>"$work/one.log"
    step_seconds "$work/one.log" >> "$work/t1"
    mpirun --oversubscribe -np 2 "$PDEJIT" run "$work/rd.pde" --threads 1 --ranks-layout 1x2 -v --out none \
        >/dev/null 2>"$work/two.log"
    step_seconds "$work/two.log" >> "$work/t2"
    sed -n 's/.*ghost exchanges: [0-9]* in \([0-9.e+-]*\) s.*/\1/p' "$work/two.log" >> "$work/x2"
    sed -n 's/.*stepping), \([0-9.e+-]*\) kB received each.*/\1/p' "$work/two.log" >> "$work/b2"
    echo "round $r: 1 process $(tail -n 1 "$work/t1") s, 2 processes $(tail -n 1 "$work/t2") s (exchange $(tail -n 1 "$work/x2") s)" >&2
done
t1=$(median < "$work/t1"); t2=$(median < "$work/t2"); x2=$(median < "$work/x2"); b2=$(median < "$work/b2")
calls=$(sed -n 's/.*ghost exchanges: \([0-9]*\) in.*/\1/p' "$work/two.log" | tail -n 1)
echo "| cells | steps | 1 process (s) | 2 processes (s) | speed-up | efficiency | exchange (s, rank 0) | exchange share | per exchange |"
echo "|---|---|---|---|---|---|---|---|---|"
awk -v n="$N" -v t1="$t1" -v t2="$t2" -v x2="$x2" -v b2="$b2" -v calls="$calls" 'BEGIN {
    printf "| %d² | 40 | %.3f | %.3f | %.2f | %.0f%% | %.4f (%d calls) | %.1f%% | %.1f kB, %.1f µs |\n",
           n, t1, t2, t1 / t2, 100 * t1 / (2 * t2), x2, calls, 100 * x2 / t2, b2, 1e6 * x2 / calls }'
