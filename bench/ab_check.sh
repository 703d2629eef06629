#!/usr/bin/env bash
# ab_check.sh — what the explicit stability check costs a short run, two builds side by side,
# interleaved in one run:
#
#   bench/ab_check.sh OLD_BIN NEW_BIN [ROUNDS]
#
# OLD_BIN and NEW_BIN hold `pdejit`. On a warm kernel cache (one run of each first), each round
# runs, in alternating order, each build on: (1) Gray-Scott (samples/gray_scott.pde) at 103² with
# rk4, 2000 steps (the check at the start and again at each of its 3 output times); (2) the same
# with --no-stability-check; (3) bench/small2d.pde (64², Fisher-KPP, a symmetric Jacobian); (4) the
# same with --no-stability-check. Prints the median CPU (user + system, bash's `time`) and wall
# milliseconds of each, and new/old. The load average is printed first and last: on a shared
# machine read the ratios.
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-7}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/nx = 128, ny = 128/nx = 103, ny = 103/; s/scheme = rk2/scheme = rk4/' "$ROOT/samples/gray_scott.pde" >"$tmp/gs103.pde"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
TIMEFORMAT='%3R %3U %3S'
one() { # BIN KEY ARGS...: one run on its own cache (warm after the first), appends "cpu_ms wall_ms" to $tmp/KEY
    local bin=$1 key=$2; shift 2
    { time PDEJIT_CACHE_DIR="$tmp/cache-$key" "$bin/pdejit" run "$@" --out none -q \
        >/dev/null 2>&1; } 2>"$tmp/t"
    awk '{printf "%.1f %.1f\n", ($2 + $3) * 1e3, $1 * 1e3}' "$tmp/t" >>"$tmp/$key"
}
cases=(gs gs-nocheck small small-nocheck)
args() {
    case $1 in
    gs) echo "$tmp/gs103.pde --steps 2000" ;;
    gs-nocheck) echo "$tmp/gs103.pde --steps 2000 --no-stability-check" ;;
    small) echo "$ROOT/bench/small2d.pde" ;;
    small-nocheck) echo "$ROOT/bench/small2d.pde --no-stability-check" ;;
    esac
}
for which in old new; do # the caches warmed, not counted
    bin=$OLD; [ "$which" = new ] && bin=$NEW
    for c in "${cases[@]}"; do
        # shellcheck disable=SC2046
        one "$bin" "$c-$which" $(args "$c")
        rm -f "$tmp/$c-$which"
    done
done
for r in $(seq "$ROUNDS"); do
    order="old new"; [ $((r % 2)) = 0 ] && order="new old"
    for which in $order; do
        bin=$OLD; [ "$which" = new ] && bin=$NEW
        # shellcheck disable=SC2046
        for c in "${cases[@]}"; do one "$bin" "$c-$which" $(args "$c"); done
    done
done
col() { awk -v c="$2" '{print $c}' "$tmp/$1" | median; }
ratio() { awk -v a="$2" -v b="$1" 'BEGIN {printf "%.2f", a / b}'; }
printf '| what | old CPU ms | new CPU ms | new/old | old wall ms | new wall ms | new/old |\n|---|---|---|---|---|---|---|\n'
for k in "${cases[@]}"; do
    oc=$(col "$k-old" 1) nc=$(col "$k-new" 1) ow=$(col "$k-old" 2) nw=$(col "$k-new" 2)
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$k" "$oc" "$nc" "$(ratio "$oc" "$nc")" "$ow" "$nw" "$(ratio "$ow" "$nw")"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
