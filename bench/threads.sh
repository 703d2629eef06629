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
# the median milliseconds over the rounds and default / best. With BASE=OTHER_PDEJIT in the
# environment, each round also times OTHER_PDEJIT's default threads (an older build, say), and the
# table gains its median and its default / best (best: this build's 1 or 2 threads).
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
ms() { local s e pj=$1; shift; s=$(date +%s%N); "$pj" run "$@" --out none --quiet >/dev/null 2>&1; e=$(date +%s%N); echo $(((e - s) / 1000)); }
BASE=${BASE:-}
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M) UTC"
if [ -n "$BASE" ]; then
    printf '| mesh | steps | default ms | --threads 1 ms | --threads 2 ms | default / best | base default ms | base default / best |\n|---|---|---|---|---|---|---|---|\n'
else
    printf '| mesh | steps | default ms | --threads 1 ms | --threads 2 ms | default / best |\n|---|---|---|---|---|---|\n'
fi
for n in ${SIZES//,/ }; do
    case $n in 64 | 103) steps=2000 ;; 256) steps=500 ;; *) steps=30 ;; esac
    dt=$(awk -v n="$n" 'BEGIN {h = 2.5 / n; d = 0.2 * h * h / 2e-5; print d < 1 ? d : 1}') # stable rk4 steps
    sed "s/nx = 128, ny = 128/nx = $n, ny = $n/; s/scheme = rk2/scheme = rk4/; s/dt = 1,/dt = $dt,/" \
        "$here/samples/gray_scott.pde" >"$tmp/gs$n.pde"
    "$PJ" run "$tmp/gs$n.pde" --steps 1 --out none --quiet >/dev/null 2>&1 # the kernels into the cache
    [ -z "$BASE" ] || "$BASE" run "$tmp/gs$n.pde" --steps 1 --out none --quiet >/dev/null 2>&1
    for r in $(seq "$ROUNDS"); do
        ms "$PJ" "$tmp/gs$n.pde" --steps "$steps" >>"$tmp/d$n"
        ms "$PJ" "$tmp/gs$n.pde" --steps "$steps" --threads 1 >>"$tmp/t1$n"
        ms "$PJ" "$tmp/gs$n.pde" --steps "$steps" --threads 2 >>"$tmp/t2$n"
        [ -z "$BASE" ] || ms "$BASE" "$tmp/gs$n.pde" --steps "$steps" >>"$tmp/b$n"
    done
    d=$(median <"$tmp/d$n") t1=$(median <"$tmp/t1$n") t2=$(median <"$tmp/t2$n")
    b=$([ -z "$BASE" ] || median <"$tmp/b$n")
    awk -v n="$n" -v s="$steps" -v d="$d" -v a="$t1" -v b="$t2" -v o="$b" \
        'BEGIN {best = a < b ? a : b; printf "| %s² | %s | %.1f | %.1f | %.1f | %.2f |", n, s, d / 1000, a / 1000, b / 1000, d / best
                if (o != "") printf " %.1f | %.2f |", o / 1000, o / best; printf "\n"}'
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M) UTC"
