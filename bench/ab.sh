#!/usr/bin/env bash
# ab.sh — two builds of pdejit side by side against the C reference, interleaved in one run:
#
#   bench/ab.sh OLD_BIN NEW_BIN [ROUNDS] [SIZES] [THREADS]
#
# OLD_BIN and NEW_BIN are folders holding ref_rd and pj_bench (bench/run.sh builds them into
# $PDEJIT_BUILD/bench; build the old tree the same way). Each round runs, per size, the C
# reference, then both builds' `pj_bench step N THREADS S 5 cpu` and `... cpu-run` in alternating
# order, so a busy spell of this shared machine hits every variant alike. Prints each variant's
# median seconds per step over the rounds and its speed relative to the C reference of the same
# round (C's time / the variant's time; > 1 is faster than C), median over the rounds.
# A size NXxNYxNZ (e.g. 256x256x256) is the 3D heat step instead (`ref_rd --3d`, `pj_bench
# step3d`; variants cpu, one step a sweep, and cpu-tblock, the batches of sim_step_n).
# $AB_VARIANTS replaces the variants (e.g. "cpu cpu-tblock" in 2D) and $AB_STEPS the steps a rep
# (64 for temporal blocking's batches, as `bench/run.sh --tblock`).
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-7} SIZES=${4:-1024,2048} THREADS=${5:-2}
export PDEJIT_CACHE_DIR=${PDEJIT_CACHE_DIR:-$(mktemp -d)}
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p"; }
steps_for() { [ -n "${AB_STEPS:-}" ] && { echo "$AB_STEPS"; return; }; case $1 in 64) echo 2000 ;; 256) echo 400 ;; 1024) echo 40 ;; *x*) echo 4 ;; *) echo 10 ;; esac; }
variants() { [ -n "${AB_VARIANTS:-}" ] && { echo "$AB_VARIANTS"; return; }; case $1 in *x*) echo "cpu cpu-tblock" ;; *) echo "cpu cpu-run" ;; esac; }
# the C reference and pdejit's step of size $1 on $THREADS threads, $2 steps a rep, $3 reps
ref() { case $1 in *x*) "$4/ref_rd" --3d ${1//x/ } "$THREADS" "$2" "$3" ;; *) "$4/ref_rd" "$1" "$THREADS" "$2" "$3" ;; esac; }
pj() { case $1 in *x*) "$5/pj_bench" step3d ${1//x/ } "$THREADS" "$2" "$3" "$4" ;; *) "$5/pj_bench" step "$1" "$THREADS" "$2" "$3" "$4" ;; esac; }
tmp=$(mktemp -d)
for n in ${SIZES//,/ }; do
    s=$(steps_for "$n")
    pj "$n" 1 1 cpu "$OLD" >/dev/null  # compile into the cache first
    pj "$n" 1 1 cpu "$NEW" >/dev/null
    for r in $(seq "$ROUNDS"); do
        c=$(ref "$n" "$s" 5 "$OLD" | field median)
        order="old new"; [ $((r % 2)) = 0 ] && order="new old"
        for which in $order; do
            bin=$OLD; [ "$which" = new ] && bin=$NEW
            for v in $(variants "$n"); do
                t=$(pj "$n" "$s" 5 "$v" "$bin" | field median)
                echo "$t" >>"$tmp/$n-$which-$v.t"
                awk -v c="$c" -v t="$t" 'BEGIN {print c / t}' >>"$tmp/$n-$which-$v.r"
            done
        done
        echo "$c" >>"$tmp/$n-c.t"
    done
done
printf '| size | variant | median s/step | speed vs C (median of rounds) |\n|---|---|---|---|\n'
for n in ${SIZES//,/ }; do
    printf '| %s | C reference | %s | 1 |\n' "$n" "$(median <"$tmp/$n-c.t")"
    for which in old new; do
        for v in $(variants "$n"); do
            printf '| %s | %s %s | %s | %.3f |\n' "$n" "$which" "$v" "$(median <"$tmp/$n-$which-$v.t")" \
                "$(median <"$tmp/$n-$which-$v.r")"
        done
    done
done
rm -rf "$tmp"
