#!/usr/bin/env bash
# run.sh — the CPU benchmark, one command:  bench/run.sh [--quick] [harness options]
#
# Builds what it needs, then prints one Markdown report (also saved under bench/results/):
#   1. the library and the pdejit command, Release, in $PDEJIT_BUILD (default build-bench/;
#      the warnings only -O3 brings are not errors there: the project's own build polices them);
#   2. bench/ref_rd.c, the hand-written C reference: gcc -O3 -march=native -fopenmp;
#   3. bench/pj_bench.c, the pdejit driver, that build's target pj_bench;
#   4. bench/.venv with numpy and numba from pip (when pip cannot install them the benchmark
#      says so and goes on without them);
# and runs bench/harness.py: step timings (C, pdejit, interpreter, Numba, NumPy) at 64², 256²,
# 1024², 2048² on 1 and 2 threads, compile/cache timings of every sample, and the wall time
# of a whole cached `pdejit run`.
#
# --peers: only the peer table (C, pdejit, Numba, pystencils, Devito; 2D and 3D; the fractions of
# the DRAM bound from bench/copy_bw.c and of the floating-point roof from bench/fma_peak.c), the
# peers pip-installed into bench/.venv-peers.
# --quick: one round, fewer reps (under 2 minutes once built). Other options go to harness.py,
# e.g. --rounds 5, --sizes 64,1024, --threads 2. Environment: PDEJIT_BUILD (build folder),
# BENCH_NO_PYTHON=1 (skip NumPy/Numba), CC (default gcc).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
CC=${CC:-gcc}
BIN=$BUILD/bench
mkdir -p "$BIN"

# 1. the library and the command
bench_build pdejit_core pdejit

# 2. the C reference
log "building the C reference: $CC -O3 -march=native -fopenmp"
"$CC" -O3 -march=native -fopenmp "$ROOT/bench/ref_rd.c" -lm -o "$BIN/ref_rd"

# 3. the pdejit driver (bench/CMakeLists.txt: against the library, LLVM linked as in the command)
bench_build pj_bench
LLVM_CONFIG=$(command -v llvm-config-14 || command -v llvm-config)

# 3b. the copy bandwidth and the floating-point roof the peer table divides by
for tool in copy_bw fma_peak; do
    if [ ! -x "$BIN/$tool" ] || [ "$ROOT/bench/$tool.c" -nt "$BIN/$tool" ]; then
        "$CC" -O3 -march=native -fopenmp "$ROOT/bench/$tool.c" -o "$BIN/$tool"
    fi
done

# 3c. --peers: Numba, pystencils and Devito in bench/.venv-peers
PEERS_PY=""
case " $* " in *" --peers "*)
    PVENV=$ROOT/bench/.venv-peers
    if [ "${BENCH_NO_PYTHON:-0}" != 1 ]; then
        if ! "$PVENV/bin/python" -c 'import numba, pystencils, devito' 2>/dev/null; then
            log "creating $PVENV with numpy, numba, pystencils 2 and devito 4 (pip)"
            python3 -m venv "$PVENV" >&2 && timeout 900 "$PVENV/bin/pip" install -q numpy numba 'pystencils>=2,<3' 'devito>=4.8,<5' >&2 || true
        fi
        if "$PVENV/bin/python" -c 'import numba, pystencils, devito' 2>/dev/null; then
            PEERS_PY=$PVENV/bin/python
            log "pystencils $("$PEERS_PY" -c 'import pystencils; print(pystencils.__version__)'), Devito $("$PEERS_PY" -c 'import devito; print(devito.__version__)')"
        else
            log "pip could not install the peers into $PVENV: the table goes on with C and pdejit only"
        fi
    fi
esac

# 4. NumPy and Numba in bench/.venv
VENV=$ROOT/bench/.venv
PY=""
PY_NOTE=""
if [ "${BENCH_NO_PYTHON:-0}" = 1 ]; then
    PY_NOTE="skipped (BENCH_NO_PYTHON=1)"
elif [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import numpy, numba' 2>/dev/null; then
    PY=$VENV/bin/python
else
    log "creating $VENV with numpy and numba (pip)"
    if python3 -m venv "$VENV" >&2 && timeout 600 "$VENV/bin/pip" install -q numpy numba >&2 &&
        "$VENV/bin/python" -c 'import numpy, numba' 2>/dev/null; then
        PY=$VENV/bin/python
    else
        PY_NOTE="pip could not install numpy and numba into bench/.venv"
        log "$PY_NOTE: going on without NumPy and Numba"
    fi
fi
if [ -n "$PY" ]; then
    log "NumPy $("$PY" -c 'import numpy; print(numpy.__version__)'), Numba $("$PY" -c 'import numba; print(numba.__version__)')"
fi

# 5. run
OUT=$ROOT/bench/results/$(date +%Y%m%d-%H%M%S).md
log "running (report also in $OUT)"
{
    echo "## CPU benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "Command: \`bench/run.sh${*:+ $*}\`. Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs" \
         "($(grep -o -m1 'avx512f' /proc/cpuinfo || echo 'no avx512')), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo);" \
         "$("$CC" --version | head -1); LLVM $("$LLVM_CONFIG" --version)${PY:+; NumPy $("$PY" -c 'import numpy; print(numpy.__version__)'), Numba $("$PY" -c 'import numba; print(numba.__version__)')}."
    echo
    python3 "$ROOT/bench/harness.py" --bin "$BIN" --pdejit "$BUILD/pdejit" --python "$PY" --py-note "$PY_NOTE" \
        --samples "$ROOT/samples" ${PEERS_PY:+--peers-python "$PEERS_PY"} "$@"
} | tee "$OUT"
