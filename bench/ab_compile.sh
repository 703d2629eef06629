#!/usr/bin/env bash
# ab_compile.sh — two builds' compile times side by side, interleaved in one run:
#
#   bench/ab_compile.sh OLD_BIN NEW_BIN [ROUNDS] [FILES]
#
# OLD_BIN and NEW_BIN hold pj_bench (as for bench/ab.sh). Each round, per file (default: the
# samples the peer table and the demo use), runs both builds' `pj_bench compile FILE` in
# alternating order on an empty kernel cache (cold: every kernel compiled) and once more on that
# cache (a hit). Prints the median total milliseconds over the rounds (what a run pays before its
# first step: front end, JIT creation, kernels) and their ratio new / old (< 1 is faster).
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-7} FILES=${4:-samples/gray_scott.pde,samples/heat3d.pde,samples/advection_vanleer.pde}
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
tmp=$(mktemp -d)
for f in ${FILES//,/ }; do
    key=$(basename "$f" .pde)
    for r in $(seq "$ROUNDS"); do
        order="old new"; [ $((r % 2)) = 0 ] && order="new old"
        for which in $order; do
            bin=$OLD; [ "$which" = new ] && bin=$NEW
            cache=$(mktemp -d)
            PDEJIT_CACHE_DIR=$cache "$bin/pj_bench" compile "$f" | sed -n 's/.*total_ms=\([^ ]*\).*/\1/p' >>"$tmp/$key-$which-cold"
            PDEJIT_CACHE_DIR=$cache "$bin/pj_bench" compile "$f" | sed -n 's/.*total_ms=\([^ ]*\).*/\1/p' >>"$tmp/$key-$which-hit"
            rm -rf "$cache"
        done
    done
done
printf '| file | old cold ms | new cold ms | new/old | old hit ms | new hit ms | new/old |\n|---|---|---|---|---|---|---|\n'
for f in ${FILES//,/ }; do
    key=$(basename "$f" .pde)
    oc=$(median <"$tmp/$key-old-cold") nc=$(median <"$tmp/$key-new-cold")
    oh=$(median <"$tmp/$key-old-hit") nh=$(median <"$tmp/$key-new-hit")
    printf '| %s | %s | %s | %.2f | %s | %s | %.2f |\n' "$key" "$oc" "$nc" "$(awk -v a="$nc" -v b="$oc" 'BEGIN {print a / b}')" \
        "$oh" "$nh" "$(awk -v a="$nh" -v b="$oh" 'BEGIN {print a / b}')"
done
rm -rf "$tmp"
