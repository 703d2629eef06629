#!/usr/bin/env bash
# pfhub1.sh — PFHub benchmark 1a (spinodal decomposition, periodic 200 x 200), pdejit's implicit
# run (samples/implicit/pfhub1.pde) against the published free energy curves, one command:
#   bench/pfhub1.sh [--fipy] [pfhub1.py options: --until 10000 --threads 1]
#
# Builds the pdejit command (Release, in $PDEJIT_BUILD, default build-bench/, as bench/run.sh) and
# runs bench/pfhub1.py: the sample to t = 54 against PFHub's published FiPy curve (same grid), then
# to t = 10000. With --fipy it also makes bench/.venv-fipy (FiPy 4.0.3 and SciPy from pip, as
# bench/implicit_fipy.sh) and runs bench/pfhub1_fipy.py, the published script's algorithm, to
# t = 52.75 (about 90 steps of three sparse LU solves of 40000 unknowns: 1.5 hours on a loaded
# 2-core machine). The report (Markdown)
# goes to stdout and bench/results/pfhub1-DATE.md.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"

FIPY=0
ARGS=()
for a in "$@"; do
    if [ "$a" = --fipy ]; then FIPY=1; else ARGS+=("$a"); fi
done

bench_build pdejit

if [ $FIPY = 1 ]; then
    bench_fipy_venv
    ARGS+=(--fipy "$VENV/bin/python")
fi

OUT=$ROOT/bench/results/pfhub1-$(date +%Y%m%d-%H%M%S).md
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{
    echo "# PFHub benchmark 1a with pdejit ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "Machine: $(nproc --all) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    python3 "$ROOT/bench/pfhub1.py" --pdejit "$BUILD/pdejit" "${ARGS[@]}"
    echo
    echo "Load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT"
log "report: $OUT"
