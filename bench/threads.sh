#!/usr/bin/env bash
# threads.sh — do the default threads pay? Whole `pdejit run` wall times, default threads against
# --threads 1 and --threads 2, interleaved in one run (docs/performance.md, "Threads that pay"):
#
#   bench/threads.sh PDEJIT [ROUNDS] [SIZES] [--busy]
#
# PDEJIT: the command to time (e.g. build/pdejit). Per size N (default 64,103,256,1024), Gray-Scott
# (samples/gray_scott.pde) on an N x N square with rk4 (dt = 1, or 0.2 h²/Du where that is
# smaller), for 2000 steps at 64² and 103², 500 at
# 256², 30 at 1024², on a warm kernel cache; each round runs the three variants in turn. --busy
# keeps one busy process (`yes > /dev/null`) pinned to core 1 (taskset) for the whole run. Prints
# the median milliseconds over the rounds and default / best.
set -euo pipefail
PJ=$1 ROUNDS=${2:-7} SIZES=${3:-64,103,256,1024} BUSY=${4:-}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
export PDEJIT_CACHE_DIR=${PDEJIT_CACHE_DIR:-$tmp/cache}
busy=
if [ "$BUSY" = --busy ]; then
    taskset -c 1 yes >/dev/null &
    busy=$!
fi
cleanup() { [ -n "$busy" ] && kill "$busy" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
ms() { local s e; s=$(date +%s%N); "$PJ" run "$@" --out none --quiet >/dev/null 2>&1; e=$(date +%s%N); echo $(((e - s) / 1000)); }
printf '| mesh | steps | default ms | --threads 1 ms | --threads 2 ms | default / best |\n|---|---|---|---|---|---|\n'
for n in ${SIZES//,/ }; do
    case $n in 64 | 103) steps=2000 ;; 256) steps=500 ;; *) steps=30 ;; esac
    dt=$(awk -v n="$n" 'BEGIN {h = 2.5 / n; d = 0.2 * h * h / 2e-5; print d < 1 ? d : 1}') # stable rk4 steps
    sed "s/nx = 128, ny = 128/nx = $n, ny = $n/; s/scheme = rk2/scheme = rk4/; s/dt = 1,/dt = $dt,/" \
        "$here/samples/gray_scott.pde" >"$tmp/gs$n.pde"
    "$PJ" run "$tmp/gs$n.pde" --steps 1 --out none --quiet >/dev/null 2>&1 # the kernels into the cache
    for r in $(seq "$ROUNDS"); do
        ms "$tmp/gs$n.pde" --steps "$steps" >>"$tmp/d$n"
        ms "$tmp/gs$n.pde" --steps "$steps" --threads 1 >>"$tmp/t1$n"
        ms "$tmp/gs$n.pde" --steps "$steps" --threads 2 >>"$tmp/t2$n"
    done
    d=$(median <"$tmp/d$n") t1=$(median <"$tmp/t1$n") t2=$(median <"$tmp/t2$n")
    awk -v n="$n" -v s="$steps" -v d="$d" -v a="$t1" -v b="$t2" \
        'BEGIN {best = a < b ? a : b; printf "| %s² | %s | %.1f | %.1f | %.1f | %.2f |\n", n, s, d / 1000, a / 1000, b / 1000, d / best}'
done
