#!/usr/bin/env bash
# mpi_implicit.sh — an implicit 2D problem on 1 and 2 MPI processes:
#
#   bench/mpi_implicit.sh [PDEJIT] [ROUNDS] [N]        (defaults: build/pdejit, 3, 512)
#
# Allen-Cahn on N² cells (nonlinear, zero-flux sides), 5 beuler steps with pdejit's default solver
# (Newton, GMRES; ILU(1) on one process, block Jacobi with ILU(0) per process on two), one thread
# per process: the wall and CPU seconds of the whole command (/usr/bin/time: start-up, PETSc's
# set-up and the steps; CPU is every process's user + system), the stepping time from --verbose,
# and the Newton and linear iterations, on 1 process (no mpirun) and on 2 (mpirun -np 2
# --ranks-layout 1x2), interleaved round by round. Prints the medians and the load average.
set -euo pipefail
PDEJIT=${1:-build/pdejit}
ROUNDS=${2:-3}
N=${3:-512}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/ac.pde" <<EOF
mesh grid(nx = $N, ny = $N)
field u = 0.5*sin(6.2832*3*x)*sin(6.2832*2*y) + 0.3*cos(6.2832*5*x*y)
on all: dn(u) = 0
eq dt(u) = 1e-4*lap(u) + u - u^3
time dt = 0.05, steps = 5, scheme = beuler
EOF
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
step_seconds() { sed -n 's/^pdejit: [0-9]* step.* to t = .* in \([0-9.e+-]*\) s.*/\1/p' "$1" | tail -n 1; }
iterations() { sed -n 's/.*implicit solver: .*; \([0-9]*\) Newton iterations, \([0-9]*\) linear.*/\1 Newton, \2 linear/p' "$1" | tail -n 1; }
"$PDEJIT" run "$work/ac.pde" --threads 1 -q --out none --steps 1 >/dev/null # kernels into the cache
for p in 1 2; do : > "$work/wall$p"; : > "$work/cpu$p"; : > "$work/step$p"; done
load0=$(cut -d' ' -f1 /proc/loadavg)
for r in $(seq "$ROUNDS"); do
    /usr/bin/time -f "%e %U %S" -o "$work/time1" "$PDEJIT" run "$work/ac.pde" --threads 1 -v --out none >/dev/null 2>"$work/one.log"
    /usr/bin/time -f "%e %U %S" -o "$work/time2" mpirun --oversubscribe -np 2 "$PDEJIT" run "$work/ac.pde" --threads 1 \
        --ranks-layout 1x2 -v --out none >/dev/null 2>"$work/two.log"
    for p in 1 2; do
        read -r wall user sys < "$work/time$p"
        echo "$wall" >> "$work/wall$p"
        awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }' >> "$work/cpu$p"
    done
    step_seconds "$work/one.log" >> "$work/step1"
    step_seconds "$work/two.log" >> "$work/step2"
    echo "round $r: 1 process $(tail -n 1 "$work/wall1") s wall, 2 processes $(tail -n 1 "$work/wall2") s wall" >&2
done
load1=$(cut -d' ' -f1 /proc/loadavg)
echo "| processes | wall (s) | CPU (s) | stepping (s) | iterations (5 steps) |"
echo "|---|---|---|---|---|"
for p in 1 2; do
    log=$([ "$p" = 1 ] && echo "$work/one.log" || echo "$work/two.log")
    echo "| $p | $(median < "$work/wall$p") | $(median < "$work/cpu$p") | $(median < "$work/step$p") | $(iterations "$log") |"
done
echo "N = $N, $ROUNDS rounds, medians; load average $load0 before, $load1 after"
