#!/usr/bin/env bash
# ab_cold.sh — what a new user waits for, two builds side by side, interleaved in one run:
#
#   bench/ab_cold.sh OLD_BIN NEW_BIN [ROUNDS]
#
# OLD_BIN and NEW_BIN hold `pdejit`. Each round, in alternating order, each build runs on an empty
# kernel cache: (1) a whole `pdejit run bench/small2d.pde` (64², 100 euler steps); (2) a whole
# `pdejit run samples/gray_scott.pde --steps 1 --no-stability-check` (its two kernels cold);
# (3) `--watch` on a copy of the Gray-Scott sample: once it steps, a one-line edit of the u equation,
# and the "ready in X ms" the run prints when the new kernels are swapped in. Prints the median
# CPU (user + system, bash's `time`) and wall milliseconds of (1) and (2), the median "ready in"
# of (3), and new/old. The machine's load average is printed first and last: on a shared machine
# read the ratios.
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-7}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
TIMEFORMAT='%3R %3U %3S'
whole() { # BIN KEY ARGS...: one cold run, appends "cpu_ms wall_ms" to $tmp/KEY
    local bin=$1 key=$2; shift 2
    local cache; cache=$(mktemp -d)
    { time PDEJIT_CACHE_DIR=$cache "$bin/pdejit" run "$@" --out none -q >/dev/null 2>&1; } 2>"$tmp/t"
    awk '{printf "%.1f %.1f\n", ($2 + $3) * 1e3, $1 * 1e3}' "$tmp/t" >>"$tmp/$key"
    rm -rf "$cache"
}
watch_ready() { # BIN KEY: the "ready in" of a swap after a one-line edit, appended to $tmp/KEY
    local bin=$1 key=$2 cache; cache=$(mktemp -d)
    cp "$ROOT/samples/gray_scott.pde" "$tmp/w.pde"
    PDEJIT_CACHE_DIR=$cache "$bin/pdejit" run "$tmp/w.pde" --watch --until 1e9 --out none --no-stability-check \
        2>"$tmp/w.err" >/dev/null &
    local pid=$!
    for _ in $(seq 100); do grep -q . "$tmp/w.err" 2>/dev/null && break; sleep 0.1; done
    sleep 1
    sed -i 's/Du\*lap(u)/1.01*Du*lap(u)/' "$tmp/w.pde"
    for _ in $(seq 300); do grep -q 'ready in' "$tmp/w.err" && break; sleep 0.1; done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    sed -n 's/.*ready in \([0-9.]*\) ms.*/\1/p' "$tmp/w.err" | head -1 >>"$tmp/$key"
    rm -rf "$cache"
}
for r in $(seq "$ROUNDS"); do
    order="old new"; [ $((r % 2)) = 0 ] && order="new old"
    for which in $order; do
        bin=$OLD; [ "$which" = new ] && bin=$NEW
        whole "$bin" "small-$which" "$ROOT/bench/small2d.pde"
        whole "$bin" "gs-$which" "$ROOT/samples/gray_scott.pde" --steps 1 --no-stability-check
        watch_ready "$bin" "watch-$which"
    done
done
col() { awk -v c="$2" '{print $c}' "$tmp/$1" | median; }
ratio() { awk -v a="$2" -v b="$1" 'BEGIN {printf "%.2f", a / b}'; }
printf '| what | old CPU ms | new CPU ms | new/old | old wall ms | new wall ms | new/old |\n|---|---|---|---|---|---|---|\n'
for k in small gs; do
    oc=$(col "$k-old" 1) nc=$(col "$k-new" 1) ow=$(col "$k-old" 2) nw=$(col "$k-new" 2)
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$k" "$oc" "$nc" "$(ratio "$oc" "$nc")" "$ow" "$nw" "$(ratio "$ow" "$nw")"
done
ow=$(median <"$tmp/watch-old") nw=$(median <"$tmp/watch-new")
printf '| watch ready | | | | %s | %s | %s |\n' "$ow" "$nw" "$(ratio "$ow" "$nw")"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
