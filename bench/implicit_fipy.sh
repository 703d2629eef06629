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
BUILD=${PDEJIT_BUILD:-$ROOT/build-bench}
mkdir -p "$ROOT/bench/results"
log() { printf 'bench: %s\n' "$*" >&2; }

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    log "configuring $BUILD (Release)"
    NOERR="-Wno-error=maybe-uninitialized -Wno-error=uninitialized -Wno-error=array-bounds"
    NOERR="$NOERR -Wno-error=stringop-overflow -Wno-error=stringop-truncation -Wno-error=format-truncation"
    NOERR="$NOERR -Wno-error=restrict -Wno-error=free-nonheap-object -Wno-error=use-after-free"
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$NOERR" >&2
fi
log "building pdejit in $BUILD"
cmake --build "$BUILD" -j2 --target pdejit >&2

VENV=$ROOT/bench/.venv-fipy
if ! { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import fipy, scipy' 2>/dev/null; }; then
    log "creating $VENV with fipy==4.0.3 and scipy (pip)"
    python3 -m venv "$VENV" >&2
    timeout 900 "$VENV/bin/pip" install -q fipy==4.0.3 scipy >&2
fi
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
