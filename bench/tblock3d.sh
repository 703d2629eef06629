#!/usr/bin/env bash
# tblock3d.sh — 3D temporal blocking (backends/host/tblock.c, tiles of rows of y), one command:
#
#   bench/tblock3d.sh [ROUNDS] [THREADS] [SIZES]      (defaults: 3, "1 2", "256x256x256 512x512x128")
#
# Needs $PDEJIT_BUILD (default build-bench/) with pdejit, bench/pj_bench and bench/ref_rd
# (bench/run.sh builds them; or `cmake --build build-bench --target pdejit pj_bench ref_rd`).
# Each round, per size and thread count, interleaved so that a busy spell of this shared machine
# hits every variant alike:
#   1. the 7-point heat step on a periodic box: the C reference (`ref_rd --3d`), pdejit one step
#      per sweep (`pj_bench step3d ... cpu`) and blocked (`... cpu-tblock`, sim_step_n in batches
#      of 32), seconds per step (median of the reps);
#   2. whole `pdejit run`s of $STEPS steps (default 128; the Mcells/s the command reports, compile
#      cached, the first blocks measuring the tile sizes included): the heat step with `on all:
#      u = 0`, and a Gray-Scott step (2 fields) with periodic and with Dirichlet sides,
#      PDEJIT_TBLOCK=off against the default, and the C reference of the same step
#      (`ref_rd --3d-case`, 8 steps a rep, median of 3 reps); the sizes each blocked run kept, from
#      its `pdejit: stepping:` line (the most frequent over the rounds).
# Prints the medians over the rounds, the ratios side by side, and the load average at the start
# and the end (the machine is shared: say so with the numbers).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${PDEJIT_BUILD:-$ROOT/build-bench}
ROUNDS=${1:-3} THREADS=${2:-1 2} SIZES=${3:-256x256x256 512x512x128} STEPS=${STEPS:-128}
export PDEJIT_CACHE_DIR=${PDEJIT_CACHE_DIR:-$(mktemp -d)}
unset PDEJIT_TBLOCK PDEJIT_TBLOCK_K PDEJIT_TBLOCK_TILE
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p"; }
mcells() { sed -n 's/.* \([0-9.e+]*\) Mcells\/s.*/\1/p' | tail -1; } # builds before b7b4281 printed 1.42e+03
# the sizes the run kept, from its `pdejit: stepping:` line ("K 5 tile 43", "K 8", or "unblocked")
stepping() {
    sed -n -e 's/^pdejit: stepping: temporal blocking, \([0-9]*\) steps a sweep in tiles of \([0-9]*\) rows of y.*/K \1 tile \2/p' \
        -e 's/^pdejit: stepping: temporal blocking, \([0-9]*\) steps a sweep (.*/K \1/p' \
        -e 's/^pdejit: stepping: one step a sweep.*/unblocked/p' | tail -1
}
common() { sort | uniq -c | sort -rn | head -1 | sed 's/^ *[0-9]* //'; } # the most frequent line

# a problem file: $1 heat|gs, $2 periodic|dirichlet, $3 NXxNYxNZ (spacing 1)
problem() {
    local nx ny nz
    IFS=x read -r nx ny nz <<<"$3"
    echo "mesh grid(nx = $nx, ny = $ny, nz = $nz, Lx = $nx, Ly = $ny, Lz = $nz)"
    local blob="exp(-((x - $nx/2)^2 + (y - $ny/2)^2 + (z - $nz/2)^2)/400)"
    if [ "$1" = heat ]; then
        echo "field u = 0.5 + 0.25*$blob"
        echo "eq dt(u) = 0.1*lap(u)"
        [ "$2" = periodic ] && echo "periodic x, y, z" || echo "on all: u = 0"
    else
        echo "param F = 0.04, k = 0.06"
        echo "field u = 1 - 0.5*$blob"
        echo "field v = 0.25*$blob"
        echo "eq dt(u) = 0.1*lap(u) - u*v*v + F*(1 - u)"
        echo "eq dt(v) = 0.05*lap(v) + u*v*v - (F + k)*v"
        [ "$2" = periodic ] && echo "periodic x, y, z" || printf 'on all: u = 1\non all: v = 0\n'
    fi
    echo "time dt = 1, steps = $STEPS, scheme = euler"
}

RUNS="heat:dirichlet gs:periodic gs:dirichlet"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
for n in $SIZES; do
    for p in $RUNS; do problem "${p%%:*}" "${p##*:}" "$n" >"$tmp/${p/:/-}-$n.pde"; done
    "$BUILD/bench/pj_bench" step3d ${n//x/ } 1 1 1 cpu >/dev/null # compile into the cache first
    for t in $THREADS; do
        for p in $RUNS; do "$BUILD/pdejit" run "$tmp/${p/:/-}-$n.pde" --steps 1 --out none --threads "$t" >/dev/null; done
        for r in $(seq "$ROUNDS"); do
            "$BUILD/bench/ref_rd" --3d ${n//x/ } "$t" 32 3 | field median >>"$tmp/c-$n-$t"
            "$BUILD/bench/pj_bench" step3d ${n//x/ } "$t" 32 3 cpu | field median >>"$tmp/pj-$n-$t"
            "$BUILD/bench/pj_bench" step3d ${n//x/ } "$t" 32 3 cpu-tblock >"$tmp/line"
            field median <"$tmp/line" >>"$tmp/tb-$n-$t"
            echo "K $(field block <"$tmp/line") tile $(field tile <"$tmp/line")" >>"$tmp/kt-$n-$t"
            for p in $RUNS; do
                f=$tmp/${p/:/-}-$n.pde
                "$BUILD/bench/ref_rd" --3d-case "${p/:/-}" ${n//x/ } "$t" 8 3 | field mcells >>"$tmp/ref-$p-$n-$t"
                PDEJIT_TBLOCK=off "$BUILD/pdejit" run "$f" --out none --threads "$t" --verbose 2>&1 | mcells >>"$tmp/off-$p-$n-$t"
                "$BUILD/pdejit" run "$f" --out none --threads "$t" --verbose >"$tmp/run" 2>&1
                mcells <"$tmp/run" >>"$tmp/on-$p-$n-$t"
                stepping <"$tmp/run" >>"$tmp/onkt-$p-$n-$t"
            done
        done
    done
done
echo
echo "| size | threads | C s/step | pdejit s/step | blocked s/step | pdejit / C | blocked / C | blocked K, tile rows |"
echo "|---|---|---|---|---|---|---|---|"
for n in $SIZES; do
    for t in $THREADS; do
        c=$(median <"$tmp/c-$n-$t") pj=$(median <"$tmp/pj-$n-$t") tb=$(median <"$tmp/tb-$n-$t")
        echo "| $n heat periodic | $t | $c | $pj | $tb | $(awk -v a="$c" -v b="$pj" 'BEGIN {printf "%.2fx", a / b}') |" \
             "$(awk -v a="$c" -v b="$tb" 'BEGIN {printf "%.2fx", a / b}') | $(common <"$tmp/kt-$n-$t") |"
    done
done
echo
echo "| \`pdejit run\`, $STEPS steps | size | threads | C Mcells/s | Mcells/s off | Mcells/s blocked | off / C | blocked / C | blocked / off | blocked K, tile rows |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for n in $SIZES; do
    for t in $THREADS; do
        for p in $RUNS; do
            c=$(median <"$tmp/ref-$p-$n-$t") a=$(median <"$tmp/off-$p-$n-$t") b=$(median <"$tmp/on-$p-$n-$t")
            echo "| ${p/:/ } | $n | $t | $c | $a | $b | $(awk -v c="$c" -v a="$a" 'BEGIN {printf "%.2fx", a / c}') |" \
                 "$(awk -v c="$c" -v b="$b" 'BEGIN {printf "%.2fx", b / c}') | $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2fx", b / a}') |" \
                 "$(common <"$tmp/onkt-$p-$n-$t") |"
        done
    done
done
echo
echo "medians of $ROUNDS rounds; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
