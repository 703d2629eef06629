#!/usr/bin/env bash
# implicit_fipy.sh — implicit solves, pdejit against FiPy 4.0.3, one command:
#   bench/implicit_fipy.sh [implicit_fipy.py options]
#
# Builds the pdejit command (Release, in $PDEJIT_BUILD, default build-bench/, as bench/run.sh),
# makes bench/.venv-fipy with FiPy 4.0.3 and SciPy from pip (FiPy then solves with its SciPy
# suite: LinearLUSolver, SuperLU), and runs bench/implicit_fipy.py: Allen-Cahn at 256² and 1024²
# with dt 100x the explicit limit, Cahn-Hilliard 128² to t = 50, both codes on the same machine
# in one run, errors against a pdejit reference, medians of --rounds runs. The report (Markdown)
# goes to stdout and bench/results/implicit-fipy-DATE.md.
# Options, e.g.: --rounds 3 --fipy-rounds 2 --pcs hypre,gamg,mg --rd-sizes 256 --rd-steps 10
#   --ch-size 128 --ch-until 50 --ch-fipy-dt 0.5 --ch-adapt 1e-4 --threads 1
# One thread for pdejit (--threads 1) and for FiPy's BLAS (OMP/OPENBLAS_NUM_THREADS=1).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
bench_build pdejit

bench_fipy_venv
PY=$VENV/bin/python
log "FiPy $("$PY" -c 'import fipy; print(fipy.__version__)'), SciPy $("$PY" -c 'import scipy; print(scipy.__version__)')"

OUT=$ROOT/bench/results/implicit-fipy-$(date +%Y%m%d-%H%M%S).md
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{
    echo "# Implicit solves: pdejit against FiPy ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    "$PY" "$ROOT/bench/implicit_fipy.py" --pdejit "$BUILD/pdejit" "$@"
    echo
    echo "Load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT"
log "report: $OUT"
