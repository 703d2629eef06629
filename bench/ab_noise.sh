#!/usr/bin/env bash
# ab_noise.sh — what noise costs: the same equation with randn(), with rand() and without noise
# (bench/noise_ac.pde, noise_ac_rand.pde, noise_ac_plain.pde: Allen-Cahn, 128², euler, 4000
# steps), on two builds side by side, interleaved in one run:
#
#   bench/ab_noise.sh OLD_PDEJIT NEW_PDEJIT [ROUNDS] [THREADS] [N]
#
# OLD_PDEJIT and NEW_PDEJIT are pdejit executables (the same one twice measures one build). Each
# round runs, per thread count (default "1 2"), both builds' `pdejit run -v --threads T FILE` of
# the three files in alternating order (kernels compiled into a cache first), so a busy spell of
# this shared machine hits every variant alike. Prints each variant's median Mcells/s over the
# rounds and, per build, the medians over rounds of randn / plain and rand / plain (the issue's
# "runs at >= 0.5x"). N (default 128) runs copies of the three files on an N x N mesh instead, with
# dt = min(0.01, 1/(8 D N^2)) (half euler's diffusion limit) and about as many cell updates as at
# 128² (4000 * (128/N)^2 steps, at least 20).
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-5} THREADS=${4:-1 2} N=${5:-128}
here=$(cd "$(dirname "$0")" && pwd)
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
tmp=$(mktemp -d)
export PDEJIT_CACHE_DIR=$tmp/cache
if [ "$N" != 128 ]; then
    read -r dt until < <(awk -v n="$N" 'BEGIN {dt = 1 / (8e-4 * n * n); if (dt > 0.01) dt = 0.01
        s = int(4000 * 128 * 128 / (n * n)); if (s < 20) s = 20; printf "%.6g %.6g\n", dt, s * dt}')
    for f in noise_ac noise_ac_rand noise_ac_plain; do
        sed "s/nx = 128, ny = 128/nx = $N, ny = $N/; s/dt = 0.01, until = 40/dt = $dt, until = $until/" \
            "$here/$f.pde" >"$tmp/$f.pde"
    done
    here=$tmp
fi
mcells() { "$1" run -v --threads "$2" "$here/$3.pde" 2>&1 | sed -n 's/.*: \([0-9.e+]*\) Mcells\/s.*/\1/p'; }
for bin in "$OLD" "$NEW"; do for f in noise_ac noise_ac_rand noise_ac_plain; do mcells "$bin" 1 $f >/dev/null; done; done
for r in $(seq "$ROUNDS"); do
    order="old new"; [ $((r % 2)) = 0 ] && order="new old"
    for t in $THREADS; do
        for which in $order; do
            bin=$OLD; [ "$which" = new ] && bin=$NEW
            a=$(mcells "$bin" "$t" noise_ac) u=$(mcells "$bin" "$t" noise_ac_rand) b=$(mcells "$bin" "$t" noise_ac_plain)
            echo "$a" >>"$tmp/$which-$t-noise"
            echo "$u" >>"$tmp/$which-$t-unif"
            echo "$b" >>"$tmp/$which-$t-plain"
            awk -v a="$a" -v b="$b" 'BEGIN {print a / b}' >>"$tmp/$which-$t-ratio"
            awk -v a="$u" -v b="$b" 'BEGIN {print a / b}' >>"$tmp/$which-$t-uratio"
        done
    done
done
printf '| build | threads | randn() Mcells/s | rand() Mcells/s | no noise Mcells/s | randn / none | rand / none |\n|---|---|---|---|---|---|---|\n'
for which in old new; do
    for t in $THREADS; do
        printf '| %s | %s | %s | %s | %s | %.3f | %.3f |\n' "$which" "$t" "$(median <"$tmp/$which-$t-noise")" \
            "$(median <"$tmp/$which-$t-unif")" "$(median <"$tmp/$which-$t-plain")" \
            "$(median <"$tmp/$which-$t-ratio")" "$(median <"$tmp/$which-$t-uratio")"
    done
done
rm -rf "$tmp"
