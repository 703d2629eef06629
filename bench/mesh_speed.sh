#!/usr/bin/env bash
# mesh_speed.sh — the speed of non-uniform and curvilinear 2D meshes against the uniform grid of
# the same size, side by side in one run (issue 29 item 6):
#
#   bench/mesh_speed.sh [PDEJIT] [ROUNDS] [SIZES] [THREADS]
#
# PDEJIT is the pdejit binary (default build/pdejit). The problem is diffusion, dt(u) = lap(u),
# with zero-flux sides, on N x N cells: uniform; x = stretch(1.001); y = stretch(1.001);
# dx = [...] (N listed widths, at most 1024); and the r-z cylindrical mesh. Each round measures
# every mesh once (`pdejit bench --backends cpu`, its Mcells/s), in an order that turns with the
# round, so a busy spell of this shared machine hits them alike. Prints each mesh's median Mcells/s
# and its median ratio to the uniform grid's in the same round (>= 0.7 is the target).
set -euo pipefail
PJ=${1:-build/pdejit} ROUNDS=${2:-5} SIZES=${3:-1024,2048} THREADS=${4:-1}
export PDEJIT_CACHE_DIR=${PDEJIT_CACHE_DIR:-$(mktemp -d)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
problem() { # $1 mesh line, $2 x name, $3 y name, $4 sides
    printf '%s\nfield u = exp(-50*((%s-0.5)^2 + (%s-0.5)^2))\neq dt(u) = lap(u)\non %s: dn(u) = 0\ntime dt = 1e-8, until = 1\n' \
        "$1" "$2" "$3" "$4"
}
widths() { awk -v n="$1" 'BEGIN {s = ""; for (i = 0; i < n; i++) s = s (i ? ", " : "") (1 + 0.5 * sin(i / 30.0)) / n; print s}'; }
for n in ${SIZES//,/ }; do
    g="nx = $n, ny = $n, Lx = 1, Ly = 1"
    problem "mesh grid($g)" x y all >"$tmp/uniform.pde"
    problem "mesh grid($g, x = stretch(1.001))" x y all >"$tmp/stretch-x.pde"
    problem "mesh grid($g, y = stretch(1.001))" x y all >"$tmp/stretch-y.pde"
    problem "mesh cylindrical(nr = $n, nz = $n, Lr = 1, Lz = 1)" r z "outer, bottom, top" >"$tmp/cyl-rz.pde"
    meshes="uniform stretch-x stretch-y cyl-rz"
    if [ "$n" -le 1024 ]; then
        problem "mesh grid(dx = [$(widths "$n")], ny = $n, Ly = 1)" x y all >"$tmp/list-dx.pde"
        meshes="$meshes list-dx"
    fi
    for m in $meshes; do "$PJ" bench "$tmp/$m.pde" --backends cpu --sizes "$n" --steps 2 --threads "$THREADS" >/dev/null; done
    for r in $(seq "$ROUNDS"); do
        set -- $meshes
        order=$(for i in $(seq 0 $(($# - 1))); do j=$(((i + r) % $#)); shift_list=($meshes); echo "${shift_list[$j]}"; done)
        for m in $order; do
            "$PJ" bench "$tmp/$m.pde" --backends cpu --sizes "$n" --threads "$THREADS" |
                awk -v m="$m" '$3 == "cpu" {print $5}' >>"$tmp/$n-$m.r$r"
        done
        for m in $meshes; do
            awk -v u="$(cat "$tmp/$n-uniform.r$r")" '{print $1 / u}' "$tmp/$n-$m.r$r" >>"$tmp/$n-$m.ratio"
            cat "$tmp/$n-$m.r$r" >>"$tmp/$n-$m.all"
        done
    done
    printf '%s^2, %s thread(s), %s rounds: median Mcells/s, median ratio to uniform in the same round\n' "$n" "$THREADS" "$ROUNDS"
    for m in $meshes; do
        printf '  %-10s %8.1f Mcells/s   %.2fx\n' "$m" "$(median <"$tmp/$n-$m.all")" "$(median <"$tmp/$n-$m.ratio")"
    done
done
