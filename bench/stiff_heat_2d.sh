#!/usr/bin/env bash
# stiff_heat_2d.sh — implicit against explicit on stiff 2D diffusion, start-up cost, and the
# Cahn-Hilliard sample at full size, one command:
#   bench/stiff_heat_2d.sh [stiff_heat_2d.py options]
#   (e.g. --sizes 256,512 --times 0.01,0.1 --rounds 3 --only heat,startup,ch)
# Builds the pdejit command (Release, in $PDEJIT_BUILD, default build-bench/, as bench/run.sh) and
# runs bench/stiff_heat_2d.py with it (python3, standard library only). The report (Markdown)
# goes to stdout and bench/results/stiff-heat-2d-DATE.md.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
bench_build pdejit

OUT=$ROOT/bench/results/stiff-heat-2d-$(date +%Y%m%d-%H%M%S).md
{
    echo "# Stiff 2D diffusion, implicit against rk4; start-up; Cahn-Hilliard ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    python3 "$ROOT/bench/stiff_heat_2d.py" --pdejit "$BUILD/pdejit" "$@"
    echo
    echo "Load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT"
log "report: $OUT"
