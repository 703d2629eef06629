#!/usr/bin/env bash
# ab_run.sh — two pdejit builds side by side on whole runs of problem files:
#
#   bench/ab_run.sh OLD/pdejit NEW/pdejit ROUNDS "THREADS" FILE...
#
# Each round, for each file and thread count, runs `pdejit run FILE --out none --threads T -v`
# with the old build, then the new, and takes the Mcells/s the run reports (its own measuring of
# sizes included, as a user's run). Prints per file and thread count the median of the rounds of
# each build, their ratio (new / old), and every round's figures: the machine is shared, so say
# which figures were taken during other work.
set -euo pipefail
[ $# -ge 5 ] || { sed -n 2,10p "$0"; exit 2; }
OLD=$1 NEW=$2 ROUNDS=$3 THREADS=$4
shift 4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
key() { basename "$1" .pde; }
for r in $(seq "$ROUNDS"); do
    for f in "$@"; do
        for t in $THREADS; do
            for v in OLD NEW; do
                "${!v}" run "$f" --out none --threads "$t" --verbose 2>&1 |
                    sed -n 's/.* \([0-9.e+]*\) Mcells\/s.*/\1/p' | tail -1 >>"$tmp/$(key "$f")-$t-$v"
            done
        done
    done
done
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "| file | threads | old Mcells/s | new Mcells/s | new / old | rounds, old | rounds, new |"
echo "|---|---|---|---|---|---|---|"
for f in "$@"; do
    for t in $THREADS; do
        k=$tmp/$(key "$f")-$t
        a=$(median <"$k-OLD") b=$(median <"$k-NEW")
        echo "| $(key "$f") | $t | $a | $b | $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b / a}') | $(tr '\n' ' ' <"$k-OLD") | $(tr '\n' ' ' <"$k-NEW") |"
    done
done
