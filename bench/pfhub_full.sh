#!/usr/bin/env bash
# pfhub_full.sh — PFHub benchmarks 2a, 2b and 3 at their full sizes, from the reduced samples the
# tests run (docs/pfhub.md):
#   bench/pfhub_full.sh 2a|2b|3 [pdejit run options: --until T --backend cpu --threads N]
#
#   2a, 2b  samples/pfhub2.pde, samples/pfhub2b.pde on the benchmark's 200 x 200 square at h = 1
#           (the samples' h = 2 is 9 % off in the free energy at t = 10); rk2, dt = 0.001 (the
#           explicit limit at h = 1 is about 0.002), to the samples' t = 50 unless --until says
#           otherwise (the benchmark goes on to t = 1e6: bdf2 is the way there, --scheme bdf2
#           --dt ...)
#   3       samples/pfhub3.pde on the benchmark's 960 x 960 square (2400 x 2400 cells, dx = 0.4,
#           the sample's spacing and step) to t = 1500: about 500 000 steps of 5.8 million cells,
#           days on one core (samples/implicit/pfhub3.pde's bdf2 takes 33x fewer steps)
#
# Builds the pdejit command (Release, in $PDEJIT_BUILD, default build-bench/, as bench/run.sh);
# the run's folder (monitor.csv, PNG frames) is bench/results/pfhubNAME-DATE/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
WHICH=${1:?usage: bench/pfhub_full.sh 2a|2b|3 [pdejit run options]}
shift
case $WHICH in
    2a) SRC=samples/pfhub2.pde FROM='mesh grid(nx = 100, ny = 100' TO='mesh grid(nx = 200, ny = 200'
        DT_FROM='time dt = 0.005' DT_TO='time dt = 0.001' ;;
    2b) SRC=samples/pfhub2b.pde FROM='mesh grid(nx = 100, ny = 100' TO='mesh grid(nx = 200, ny = 200'
        DT_FROM='time dt = 0.005' DT_TO='time dt = 0.001' ;;
    3) SRC=samples/pfhub3.pde FROM='mesh grid(nx = 60, ny = 60, Lx = 24, Ly = 24)'
       TO='mesh grid(nx = 2400, ny = 2400, Lx = 960, Ly = 960)' DT_FROM='until = 8' DT_TO='until = 1500' ;;
    *) echo "bench/pfhub_full.sh: unknown benchmark '$WHICH' (2a, 2b or 3)" >&2; exit 2 ;;
esac
bench_build pdejit
OUT=$ROOT/bench/results/pfhub$WHICH-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
python3 - "$ROOT/$SRC" "$OUT/problem.pde" "$FROM" "$TO" "$DT_FROM" "$DT_TO" <<'PY'
import sys
src, dst, a, b, c, d = sys.argv[1:]
text = open(src).read()
assert a in text and c in text, "the sample changed: update bench/pfhub_full.sh"
open(dst, "w").write(text.replace(a, b, 1).replace(c, d, 1))
PY
log "running $OUT/problem.pde"
"$BUILD/pdejit" run "$OUT/problem.pde" --out "$OUT" "$@"
log "monitors: $OUT/monitor.csv"
