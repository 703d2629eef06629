#!/usr/bin/env bash
# The main job of `make demo`: the Gray-Scott sample on the CPU JIT (compile times, cache hits,
# Mcells/s), its snapshots as PNG, the same problem checked against the interpreter, and the
# GPU side when a CUDA device is present.
set -euo pipefail
PDEJIT=${1:-build/pdejit}
cd "$(dirname "$0")/.."
out=${DEMO_OUT:-demo.out}
rm -rf "$out"
mkdir -p "$out"
cache=$(mktemp -d /tmp/pdejit-demo-cache-XXXXXX)
trap 'rm -rf "$cache"' EXIT

echo "== Gray-Scott spots, 128x128, rk2, CPU JIT (LLVM $(llvm-config-14 --version 2>/dev/null || echo 14)) =="
echo "-- first run: an empty kernel cache, every kernel compiled"
PDEJIT_CACHE_DIR=$cache "$PDEJIT" run samples/gray_scott.pde --backend cpu --verbose --out "$out/gray_scott"
echo "-- second run: every kernel loaded from the cache"
PDEJIT_CACHE_DIR=$cache "$PDEJIT" run samples/gray_scott.pde --backend cpu --verbose --out none \
    --dump "$out/gray_scott_cpu.csv"
echo "-- the interpreter (the reference) on the same problem"
"$PDEJIT" run samples/gray_scott.pde --backend interp --verbose --out none --dump "$out/gray_scott_interp.csv"
if cmp -s "$out/gray_scott_cpu.csv" "$out/gray_scott_interp.csv"; then
    echo "CPU JIT and interpreter agree bit for bit on all $(($(wc -l < "$out/gray_scott_cpu.csv") - 1)) cells"
else
    echo "CPU JIT and interpreter differ: see $out/gray_scott_*.csv" >&2
    exit 1
fi
echo "snapshots: $(ls "$out/gray_scott" | grep -c png) PNG images in $out/gray_scott/ (u_*.png, v_*.png)"
echo
echo "== the same problem on the GPU, where one exists =="
set +e
gpu=$(PDEJIT_CACHE_DIR=$cache "$PDEJIT" run samples/gray_scott.pde --backend cuda --verbose --out none \
      --dump "$out/gray_scott_cuda.csv" 2>&1)
rc=$?
set -e
echo "$gpu"
if [ $rc -eq 0 ]; then
    if cmp -s "$out/gray_scott_cuda.csv" "$out/gray_scott_interp.csv"; then
        echo "GPU and interpreter agree bit for bit"
    else
        echo "GPU and interpreter differ in the last bits (libm vs CUDA math): see $out/gray_scott_cuda.csv"
    fi
elif [ $rc -ne 2 ]; then
    exit $rc
fi
echo
echo "== Fisher-KPP front, 1D =="
PDEJIT_CACHE_DIR=$cache "$PDEJIT" run samples/fisher.pde --verbose --out "$out/fisher" --dump "$out/fisher.csv"
echo
echo "== Implicit: stiff diffusion at 100x the explicit limit (bdf2 through PETSc) =="
set +e
refused=$(PDEJIT_CACHE_DIR=$cache "$PDEJIT" run samples/implicit/stiff_heat.pde --scheme rk4 --out none 2>&1)
rc=$?
set -e
echo "rk4 at the same dt (exit $rc): $refused"
PDEJIT_CACHE_DIR=$cache "$PDEJIT" run samples/implicit/stiff_heat.pde --verbose --out none --dump "$out/stiff_heat.csv" 2>&1 |
    grep -v "^pdejit: step "
awk -F, 'NR > 1 { e = $2 - exp(-3.141592653589793^2 * 0.1) * sin(3.141592653589793 * $1); if (e < 0) e = -e;
                  if (e > m) m = e } END { printf "max |u - exp(-pi^2 t) sin(pi x)| at t = 0.1: %.3g\n", m }' "$out/stiff_heat.csv"
echo
echo "== Implicit: Cahn-Hilliard spinodal decomposition, fourth order, bdf2 with adaptive steps =="
ch=$(PDEJIT_CACHE_DIR=$cache "$PDEJIT" run samples/implicit/cahn_hilliard.pde --verbose --out "$out/cahn_hilliard" 2>&1)
echo "$ch" | grep -v "^pdejit: step "
# the report's numbers agree: the spans between output times add up to the solver's totals and the last line
echo "$ch" | awk '
    /^pdejit: steps [0-9]+-[0-9]+ \(/ { a += substr($4, 2); r += $6; split($0, p, ": "); split(p[3], w, " ");
                                         n += w[1]; l += w[3] }
    /^pdejit: implicit solver: / { split($0, p, ": "); split(p[3], w, " "); A = w[1]; R = w[4]; N = w[6]; L = w[9] }
    /^pdejit: [0-9]+ steps accepted/ { F = $2; FR = substr($5, 2) }
    END { ok = a == A && r == R + 0 && n == N && l == L && F == A && FR == R + 0
          printf "the spans add up: %d accepted, %d rejected, %d Newton, %d linear iterations; the totals say %s, %s, %s, %s; " \
                 "the last line %s accepted, %s rejected: %s\n", a, r, n, l, A, R + 0, N, L, F, FR, ok ? "they agree" : "THEY DISAGREE"
          exit !ok }'
echo "snapshots: $(ls "$out/cahn_hilliard" | grep -c png) PNG images in $out/cahn_hilliard/"
echo
echo "== CPU throughput, back ends side by side =="
PDEJIT_CACHE_DIR=$cache "$PDEJIT" bench samples/gray_scott.pde --sizes 64,256,1024 --plot "$out/bench.png"
echo
echo "demo output is in $out/"
