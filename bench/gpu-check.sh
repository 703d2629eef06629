#!/usr/bin/env bash
# gpu-check.sh — the GPU check of pdejit: tests and benchmark on a machine with an NVIDIA GPU,
# written to one report.
#
#   bench/gpu-check.sh --build [BUILD]   here (a machine with the compilers): builds BUILD/gpu/
#                                        (default BUILD=build, which must hold libpdejit_core.a of
#                                        a build without PETSc, which the GPU machine lacks:
#                                        cmake -S . -B build-gpu -DPJ_WITH_PETSC=OFF):
#                                        test_gpu, test_cuda and gpu_bench with LLVM static,
#                                        xxhash/png/zlib/libgomp static, libcmocka copied beside
#                                        them (lib/, found through the rpath), packed with BUILD/pdejit
#                                        into BUILD/gpu.tar.xz (~15 MB; ~3 min): carry that file.
#   bench/gpu-check.sh [BUILD]           there (no cmake, LLVM or compiler needed): unpacks the archive
#                                        when BUILD/gpu/ is not there, runs the GPU
#                                        tests and the benchmark, writes $OUT/gpu-report.md (OUT
#                                        defaults to ./gpu-out) and the raw logs beside it.
#
# Run from the repository root. Every step has a timeout; the whole run is meant to take under
# 5 minutes on an H200. Exit status: 0 when every step passed, 1 otherwise (the report says which).
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
TEST_BINARY=/tmp/pdejit-gpu-check/pdejit # the command as test_gpu and test_cuda know it

if [ "${1:-}" = "--build" ]; then
    BUILD=${2:-build}
    LIB=$BUILD/libpdejit_core.a
    [ -f "$LIB" ] || { echo "gpu-check: $LIB not found: build the project first (cmake --build $BUILD)"; exit 1; }
    if grep -q "^PJ_WITH_PETSC:BOOL=ON" "$BUILD/CMakeCache.txt" 2>/dev/null; then
        echo "gpu-check: $BUILD links PETSc, which the GPU machine does not have: configure a build without it"
        echo "  (cmake -S . -B build-gpu -DPJ_WITH_PETSC=OFF && cmake --build build-gpu) and pass that"
        exit 1
    fi
    CUDA_INC=$(dirname "$(ls /usr/local/cuda/include/cuda.h /usr/include/cuda.h 2>/dev/null | head -1)")
    DEST=$BUILD/gpu
    mkdir -p "$DEST/lib"
    ARCH=/usr/lib/x86_64-linux-gnu
    static_or() { [ -f "$ARCH/lib$1.a" ] && echo "$ARCH/lib$1.a" || echo "-l$1"; }
    GOMP=$(gcc -print-file-name=libgomp.a)
    [ -f "$GOMP" ] || GOMP=-lgomp
    CFLAGS="-std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -Icompiler -Iruntime -Igrammar -I$BUILD -isystem $CUDA_INC"
    LIBS="$LIB $(static_or xxhash) $(static_or png16) $(static_or z) $GOMP -lm -ldl -lpthread"
    # the tests also run the CPU back end (the oracle beside the GPU): LLVM linked statically, as
    # in the pdejit command, and the shared case table (solve.c, randexpr.c) as under ctest
    LLVM_CONFIG=$(command -v llvm-config-14 || command -v llvm-config)
    LLVM_LIBS="-L$($LLVM_CONFIG --libdir) $($LLVM_CONFIG --link-static --libs core orcjit native passes) $($LLVM_CONFIG --link-static --system-libs | sed 's|[^ ]*libz3\.so||') -lstdc++"
    set -e
    for t in test_gpu test_cuda test_cases; do
        # the tests run in tests/ and start the command from other folders: an absolute path that
        # the run below links to BUILD/pdejit (wherever the repository lies there)
        gcc $CFLAGS -DPJ_SOURCE_DIR='".."' -DPJ_BINARY="\"$TEST_BINARY\"" -o "$DEST/$t" tests/$t.c tests/testutil.c \
            tests/solve.c tests/randexpr.c $LIBS $LLVM_LIBS -lcmocka -Wl,-rpath,'$ORIGIN/lib'
        strip --strip-debug "$DEST/$t"
    done
    gcc $CFLAGS -o "$DEST/gpu_bench" bench/gpu_bench.c $LIBS $LLVM_LIBS -Wl,-rpath,'$ORIGIN/lib'
    cp -L "$(gcc -print-file-name=libcmocka.so.0 | grep / || echo $ARCH/libcmocka.so.0)" "$DEST/lib/" 2>/dev/null ||
        cp -L "$ARCH/libcmocka.so.0" "$DEST/lib/"
    set +e
    # One archive to carry (the device's carry limit is 64 MiB, and each binary holds ~40 MB of the
    # same LLVM): xz -9's 64 MiB window stores that LLVM about once, ~15 MB in all (2-3 min here).
    STAGE=$(mktemp -d /tmp/pdejit-gpupack.XXXXXX)
    mkdir -p "$STAGE/gpu/lib"
    cp "$DEST"/test_gpu "$DEST"/test_cuda "$DEST"/test_cases "$DEST"/gpu_bench "$STAGE/gpu/"
    cp "$DEST"/lib/* "$STAGE/gpu/lib/"
    # the shared libraries beyond glibc the binaries ask for (the run below puts lib/ on
    # LD_LIBRARY_PATH, so the pdejit command the tests start finds them too)
    for so in $(ldd "$BUILD/pdejit" "$DEST/test_gpu" 2>/dev/null | awk '/=> \// {print $3}' | sort -u); do
        case $(basename "$so") in libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libgcc_s.so*) ;;
        *) cp -L "$so" "$STAGE/gpu/lib/" ;; esac
    done
    strip "$STAGE"/gpu/test_gpu "$STAGE"/gpu/test_cuda "$STAGE"/gpu/test_cases "$STAGE"/gpu/gpu_bench
    [ -x "$BUILD/pdejit" ] && { cp "$BUILD/pdejit" "$STAGE/"; strip "$STAGE/pdejit"; }
    tar -C "$STAGE" -cf - gpu $([ -f "$STAGE/pdejit" ] && echo pdejit) | xz -9 -T1 >"$BUILD/gpu.tar.xz" ||
        { echo "gpu-check: packing $BUILD/gpu.tar.xz failed"; rm -rf "$STAGE"; exit 1; }
    rm -rf "$STAGE"
    ls -la "$DEST" "$DEST/lib" "$BUILD/gpu.tar.xz"
    echo "gpu-check: built $DEST and $BUILD/gpu.tar.xz (it, with pdejit stripped);"
    echo "  on the GPU machine: carry $BUILD/gpu.tar.xz and run bench/gpu-check.sh $BUILD (it unpacks it)"
    exit 0
fi

BUILD=${1:-build}
case $BUILD in /*) G=$BUILD/gpu ;; *) G=$ROOT/$BUILD/gpu ;; esac
if [ ! -x "$G/test_gpu" ] && [ -f "$BUILD/gpu.tar.xz" ]; then # the carried archive of --build
    tar -C "$BUILD" -xJf "$BUILD/gpu.tar.xz" 2>/dev/null ||
        python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' "$BUILD/gpu.tar.xz" "$BUILD" ||
        echo "gpu-check: could not unpack $BUILD/gpu.tar.xz (no xz, no python3)"
fi
OUTDIR=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUTDIR"
REPORT=$OUTDIR/gpu-report.md
: >"$REPORT"
FAILED=""
export LD_LIBRARY_PATH=$G/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$(dirname "$TEST_BINARY")" && ln -sf "$(cd "$(dirname "$BUILD/pdejit")" && pwd)/pdejit" "$TEST_BINARY"
note() { echo "$*" | tee -a "$REPORT"; }
export PDEJIT_CACHE_DIR=$(mktemp -d /tmp/pdejit-gpucheck-cache.XXXXXX)
START=$(date +%s)

note "# pdejit GPU check — $(date -u '+%Y-%m-%d %H:%M UTC')"
note ""
note '```'
(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.max.memory --format=csv 2>&1 ||
    echo "nvidia-smi: not available") | tee -a "$REPORT"
note "host: $(nproc) cores; git: $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
for b in test_gpu test_cuda test_cases gpu_bench; do
    if [ ! -x "$G/$b" ]; then note "missing $G/$b (run bench/gpu-check.sh --build $BUILD here first)"; FAILED="$FAILED build"; fi
done
MISSING=$(ldd "$G/test_gpu" "$G/gpu_bench" 2>/dev/null | grep "not found" | sort -u)
[ -n "$MISSING" ] && note "missing shared libraries: $MISSING"
note '```'

run_step() { # name timeout command... : runs, logs to $OUTDIR/name.log, adds a summary to the report
    local name=$1 limit=$2
    shift 2
    local t0=$(date +%s)
    timeout --kill-after=10 "$limit" "$@" >"$OUTDIR/$name.log" 2>&1
    local rc=$?
    local secs=$(($(date +%s) - t0))
    note ""
    note "## $name: exit $rc in ${secs} s$([ $rc = 124 ] && echo ' (TIMED OUT)')"
    [ $rc != 0 ] && FAILED="$FAILED $name"
    return $rc
}

summarize_tests() { # cmocka log: result lines and every message of the gpu tests
    note '```'
    grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED|ERROR|LINE) +\]|^GPU:|^no GPU|largest difference|fields .* after|cases run|SKIPPED|device memory|kernels: cold|interp:|gpu:|emu:|run:|gray-scott|GPU memory|skipped|NVRTC .* loaded|compile for" \
        "$OUTDIR/$1.log" | head -150 | tee -a "$REPORT"
    note '```'
}

# 1. the GPU tests (tests/ is their working folder, as under ctest)
cd tests; run_step test_gpu 170 "$G/test_gpu"; cd "$ROOT"
summarize_tests test_gpu
cd tests; run_step test_cuda 120 "$G/test_cuda"; cd "$ROOT"
summarize_tests test_cuda
# the table of cases (samples, solve.c's problems) on the cuda back end against the interpreter
cd tests; run_step test_cases 170 "$G/test_cases" cuda; cd "$ROOT"
summarize_tests test_cases

# 2. the benchmark
note ""
note "## benchmark"
BENCH_T0=$(date +%s)
timeout --kill-after=10 100 "$G/gpu_bench" --report "$REPORT" >"$OUTDIR/gpu_bench.log" 2>&1
rc=$?
note ""
note "(gpu_bench: exit $rc in $(($(date +%s) - BENCH_T0)) s$([ $rc = 124 ] && echo ', TIMED OUT'))"
[ $rc != 0 ] && { FAILED="$FAILED gpu_bench"; note "(its output: $OUTDIR/gpu_bench.log)"; }

# 3. cold compile and cache hit in fresh processes (the hit must not load NVRTC)
note ""
note "## NVRTC cold compile and cache hit, fresh processes"
PROBE=$(mktemp -d /tmp/pdejit-probe.XXXXXX)
note '```'
for prec in "" --single; do
    for pass in cold hit; do
        timeout 60 "$G/gpu_bench" --compile-probe "$PROBE" $prec 2>&1 | sed "s/^/$pass: /" | tee -a "$REPORT"
    done
done
note '```'
rm -rf "$PROBE"

# 4. the command, where this build has the cuda back end in it
if [ -x "$BUILD/pdejit" ] && ! timeout 60 "$BUILD/pdejit" run samples/heat1d.pde --backend cuda --steps 1 --out none 2>&1 |
    grep -q "not built yet"; then
    note ""
    note "## pdejit run --backend cuda"
    note '```'
    for f in samples/gray_scott.pde samples/heat3d.pde; do
        timeout 60 "$BUILD/pdejit" run "$f" --backend cuda --out none --dump "$OUTDIR/cuda.csv" --verbose 2>&1 | tail -3 | tee -a "$REPORT"
        timeout 120 "$BUILD/pdejit" run "$f" --backend cpu --out none --dump "$OUTDIR/cpu.csv" --quiet 2>&1 | tail -1 | tee -a "$REPORT"
        if cmp -s "$OUTDIR/cuda.csv" "$OUTDIR/cpu.csv"; then note "$f: cuda and cpu dumps identical"
        else note "$f: cuda and cpu dumps differ (see $OUTDIR/*.csv; last-bit differences of libm are expected)"; fi
    done
    note '```'
fi

# 5. Terms on CuPy arrays through the Python package, where this machine has a Python with pdejit,
#    pytest and CuPy ($PDEJIT_PYTHON, default BUILD/pyenv/bin/python)
PYTHON=${PDEJIT_PYTHON:-$BUILD/pyenv/bin/python}
note ""
note "## Python: Terms on CuPy arrays"
if [ -x "$PYTHON" ] && timeout 60 "$PYTHON" -c "import pdejit, pytest, cupy" >/dev/null 2>&1; then
    cd python/tests
    run_step python_cupy 300 "$PYTHON" -m pytest -q -rs test_term_device.py test_docs.py -k "cupy or device"
    cd "$ROOT"
    note '```'
    tail -15 "$OUTDIR/python_cupy.log" | tee -a "$REPORT"
    note '```'
else
    note "skipped: no Python with pdejit, pytest and CuPy here ($PYTHON; set PDEJIT_PYTHON)"
fi

rm -rf "$PDEJIT_CACHE_DIR"
note ""
note "total: $(($(date +%s) - START)) s; $([ -z "$FAILED" ] && echo 'every step passed' || echo "FAILED:$FAILED")"
[ -z "$FAILED" ]
