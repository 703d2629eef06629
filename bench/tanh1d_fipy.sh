#!/usr/bin/env bash
# tanh1d_fipy.sh — FiPy's tanh1D (examples/cahnHilliard/tanh1D.py, nx = 1000) against pdejit's steady
# solve, one command:
#   bench/tanh1d_fipy.sh [tanh1d_fipy.py options, e.g. --rounds 5 --fipy-rounds 3 --solver-options "..."]
# Builds the pdejit command (Release, in $PDEJIT_BUILD, default build-bench/, as bench/run.sh), makes
# bench/.venv-fipy (FiPy 4.0.3 and SciPy from pip, as implicit_fipy.sh) and runs bench/tanh1d_fipy.py.
# One thread each. The report (Markdown) goes to stdout and bench/results/tanh1d-fipy-DATE.md.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
bench_build pdejit
bench_fipy_venv
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=$ROOT/bench/results/tanh1d-fipy-$(date +%Y%m%d-%H%M%S).md
{
    echo "# tanh1D: pdejit against FiPy ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    "$VENV/bin/python" "$ROOT/bench/tanh1d_fipy.py" --pdejit "$BUILD/pdejit" "$@"
    echo
    echo "Load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT"
log "report: $OUT"
