#!/bin/sh
# run.sh — runs each libFuzzer target of a PJ_FUZZ=ON build for SECONDS (`make fuzz`).
#
#   tests/fuzz/run.sh BUILD_DIR [SECONDS]       (SECONDS: 60 when not given)
#
# With FUZZ_RUNS=N in the environment each target instead runs N inputs from the random seed
# FUZZ_SEED (1 when not given) and a fresh corpus: the same inputs on every machine, so a finding
# is reproducible and `make test` does not pass or fail by chance (SECONDS then only bounds the
# time, as a safety). Without it, the seed is random and the corpus grows run after run.
# Each target starts from its corpus kept in BUILD_DIR/fuzz/corpus/<target> (grown run after
# run) and its seeds (BUILD_DIR/fuzz/seeds/<target>, written by the build's fuzz_seeds target).
# A crash, a leak, undefined behaviour, a timeout (one input over 60 s) or running out of memory
# stops the target: the input is kept as BUILD_DIR/fuzz/artifacts/<target>-*, and this script
# fails after running the others. Make the input a regression test: tests/fuzz/regressions/.
set -u
build=${1:?usage: run.sh BUILD_DIR [SECONDS]}
seconds=${2:-60}
runs=${FUZZ_RUNS:-}
here=$(cd "$(dirname "$0")" && pwd)
failed=""
for target in frontend cache_entry checkpoint init_csv; do
    bin=$build/tests/fuzz/fuzz_$target
    corpus=$build/fuzz/corpus/$target
    budget="-max_total_time=$seconds"
    if [ -n "$runs" ]; then
        corpus=$build/fuzz/corpus-fixed/$target
        rm -rf "$corpus"
        budget="-runs=$runs -seed=${FUZZ_SEED:-1} -max_total_time=$((seconds * 5))"
    fi
    seeds=$build/fuzz/seeds/$target
    mkdir -p "$corpus" "$build/fuzz/artifacts"
    dict=""
    [ "$target" = frontend ] && dict="-dict=$here/pde.dict"
    log=$build/fuzz/$target.log
    # first the inputs that once failed: clang's UBSan catches more than the gcc build's replay
    regressions=$(find "$here/regressions/$target" -type f 2>/dev/null | sort)
    if [ -n "$regressions" ] && ! "$bin" $regressions >"$log" 2>&1; then
        tail -n 40 "$log"
        echo "fuzz_$target: FAILED on a regression input (tests/fuzz/regressions/$target)"
        failed="$failed $target"
        continue
    fi
    if [ -n "$runs" ]; then echo "fuzz_$target: $runs inputs from seed ${FUZZ_SEED:-1} (log: $log)"
    else echo "fuzz_$target: ${seconds} s (log: $log)"; fi
    if "$bin" $budget -timeout=60 -max_len=8192 -print_final_stats=1 $dict \
         -artifact_prefix="$build/fuzz/artifacts/$target-" "$corpus" "$seeds" >"$log" 2>&1; then
        grep -E '^stat::number_of_executed_units|^stat::average_exec_per_sec' "$log" | tr '\n' ' '
        echo
    else
        tail -n 40 "$log"
        echo "fuzz_$target: FAILED: the input is in $build/fuzz/artifacts/ (see docs/fuzzing.md)"
        failed="$failed $target"
    fi
done
[ -z "$failed" ] || { echo "fuzzing found a problem in:$failed"; exit 1; }
