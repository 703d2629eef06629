# lib.sh — what the bench scripts share; sourced after setting ROOT (the checkout) and `set -euo
# pipefail`. Gives BUILD ($PDEJIT_BUILD, default build-bench/), bench/results/, log MESSAGE,
# bench_build TARGET... (the Release build, configured on first use) and bench_fipy_venv (VENV:
# bench/.venv-fipy with FiPy 4.0.3 and SciPy from pip, made on first use).
BUILD=${PDEJIT_BUILD:-$ROOT/build-bench}
mkdir -p "$ROOT/bench/results"
log() { printf 'bench: %s\n' "$*" >&2; }

bench_build() {
    if [ ! -f "$BUILD/CMakeCache.txt" ]; then
        log "configuring $BUILD (Release)"
        # -O3 turns on gcc's flow-sensitive warnings that the project's default -O2 build does not
        # see; here they stay warnings (the project's -Werror comes after CMAKE_C_FLAGS, so only
        # the -Wno-error=NAME forms win over it)
        local noerr="-Wno-error=maybe-uninitialized -Wno-error=uninitialized -Wno-error=array-bounds"
        noerr="$noerr -Wno-error=stringop-overflow -Wno-error=stringop-truncation -Wno-error=format-truncation"
        noerr="$noerr -Wno-error=restrict -Wno-error=free-nonheap-object -Wno-error=use-after-free"
        cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$noerr" >&2
    fi
    log "building $* in $BUILD"
    cmake --build "$BUILD" -j2 --target "$@" >&2
}

bench_fipy_venv() {
    VENV=$ROOT/bench/.venv-fipy
    if ! { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import fipy, scipy' 2>/dev/null; }; then
        log "creating $VENV with fipy==4.0.3 and scipy (pip)"
        python3 -m venv "$VENV" >&2
        timeout 900 "$VENV/bin/pip" install -q fipy==4.0.3 scipy >&2
    fi
}
