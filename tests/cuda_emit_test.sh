#!/bin/sh
# cuda_emit_test.sh — `pdejit emit FILE --cuda` is one translation unit that nvcc accepts whole:
#
#   sh tests/cuda_emit_test.sh PDEJIT SOURCE_DIR WORK_DIR
#
# Every sample (samples/*.pde, samples/implicit/*.pde) is emitted in double and single precision
# and compiled with `nvcc -c -x cu` (no device needed). A sample the CUDA back end refuses to emit
# fails the test, except those listed in `refused` below with the reason; one of those that emits
# is compiled like the others (and reported, so that it leaves the list). nvcc is looked for in
# $NVCC, the PATH, $CUDA_HOME/bin and /usr/local/cuda/bin; without it the test exits 77 (skipped).
set -u
pdejit=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
work=$3
# samples the CUDA back end cannot emit yet: "NAME:reason", one a line (none today)
refused=""

nvcc=${NVCC:-}
if [ -z "$nvcc" ]; then
    for c in "$(command -v nvcc 2>/dev/null)" "${CUDA_HOME:+$CUDA_HOME/bin/nvcc}" /usr/local/cuda/bin/nvcc; do
        if [ -n "$c" ] && [ -x "$c" ]; then nvcc=$c; break; fi
    done
fi
[ -n "$nvcc" ] && [ -x "$nvcc" ] || { echo "cuda_emit_test: skipped: no nvcc (set NVCC)"; exit 77; }
rm -rf "$work" && mkdir -p "$work" || exit 1

failures=0
compiled=0
for pde in "$src"/samples/*.pde "$src"/samples/implicit/*.pde; do
    name=$(basename "$pde" .pde)
    why=$(printf '%s\n' "$refused" | sed -n "s/^$name://p")
    for prec in double single; do
        cu="$work/$(basename "$(dirname "$pde")")_${name}_$prec.cu"
        if ! "$pdejit" emit "$pde" --cuda --precision "$prec" >"$cu" 2>"$cu.err"; then
            if [ -n "$why" ]; then
                echo "refused (expected: $why): $name $prec: $(cat "$cu.err")"
            else
                echo "FAIL: pdejit emit $pde --cuda --precision $prec: $(cat "$cu.err")"
                failures=$((failures + 1))
            fi
            continue
        fi
        [ -z "$why" ] || echo "note: $name now emits; take it out of cuda_emit_test.sh's refused list"
        if "$nvcc" -c -x cu -o "$cu.o" "$cu" >"$cu.log" 2>&1; then
            compiled=$((compiled + 1))
        else
            echo "FAIL: nvcc -c -x cu $cu (pdejit emit $pde --cuda --precision $prec):"
            head -n 20 "$cu.log"
            failures=$((failures + 1))
        fi
    done
done
echo "cuda_emit_test: $compiled translation units compiled by $nvcc, $failures failures"
[ "$compiled" -gt 0 ] && [ "$failures" -eq 0 ]
