#!/bin/sh
# mpi_test.sh — runs over MPI (issue: domain decomposition through PETSc's DMDA) against one process:
#
#   sh tests/mpi_test.sh PDEJIT SOURCE_DIR WORK_DIR
#
# Explicit runs on 2, 3 and 4 processes (mpirun --oversubscribe, several process layouts) must give
# the --dump and the snapshot files of the run without mpirun byte for byte: rand()/randn(), a
# corner-reading stencil, periodic axes, time- and position-dependent conditions, two ghost layers,
# 1D/2D/3D, single precision, the interpreter. Monitors agree to 1e-12. A NaN on one process
# stops all with the message one process gives; bad decompositions, implicit schemes and the GPU
# are refused before the run with exit 2. Exits 77 (skipped) without mpirun.
set -u
pdejit=$1
src=$2
work=$3
command -v mpirun >/dev/null 2>&1 || { echo "mpi_test: skipped: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
mpi() { n=$1; shift; timeout 300 mpirun --oversubscribe -np "$n" "$pdejit" "$@"; }

cat > rd2d.pde <<'EOF'
# 2D: noise, a stencil reading corners, periodic y, a condition depending on t and y, a coefficient field
mesh grid(nx = 24, ny = 20)
param D = 0.1
field u = exp(-20*((x-0.4)^2+(y-0.5)^2)) + 0.1*rand()
field v = x*y
field w = 1 + x
on left: u = 1 + t*y
on right: dn(u) = 0
periodic y
on left, right: v = 0.2
eq dt(u) = D*lap(u) - u*v + 0.01*randn()
eq dt(v) = w*D*lap(v) + u*v*x + (u[1,1] - u[-1,-1])*0.1
time dt = 0.003, steps = 40, scheme = rk4
EOF
cat > bih1d.pde <<'EOF'
# 1D, two ghost layers (a fourth-order term), a Robin condition on the left, Dirichlet on the right
mesh grid(nx = 41)
field u = sin(3*x) + x
on left: u + 0.5*dn(u) = 1
on right: u = 0.3
eq dt(u) = 0.01*lap(u) - 1e-5*lap(lap(u)) + 0.2*u*(1 - u)
time dt = 0.001, steps = 60, scheme = rk3
EOF
cat > heat3d.pde <<'EOF'
# 3D, periodic z, walls elsewhere, a monitor and snapshots
mesh grid(nx = 12, ny = 10, nz = 9)
field u = sin(pi*x)*sin(pi*y)*(1 + 0.3*cos(2*pi*z)) + 0.05*rand()
on left, right, bottom, top: u = 0
periodic z
eq dt(u) = lap(u) + 0.1*(u[1,0,1] - u[0,-1,-1])
time dt = 0.0005, steps = 30, scheme = rk2
monitor every = 0.005, mass = integral(u), peak = maxval(u), low = minval(u), avg = mean(u)
output every = 0.005, format = csv
EOF

# 1. the same bits as one process
same() { # NAME FILE [run options]
    name=$1; file=$2; shift 2
    "$pdejit" run "$file" -q --dump "$name-1.csv" "$@" >/dev/null 2>"$name-1.err" || { fail "$name: one process: $(cat "$name-1.err")"; return; }
    for n in 2 3 4; do
        mpi "$n" run "$file" -q --dump "$name-$n.csv" "$@" >/dev/null 2>"$name-$n.err" || { fail "$name on $n processes: exit $?: $(cat "$name-$n.err")"; continue; }
        cmp -s "$name-1.csv" "$name-$n.csv" || fail "$name: the dump on $n processes differs from one process's"
    done
}
same rd2d rd2d.pde --seed 7
same rd2d-single rd2d.pde --precision single
same rd2d-interp rd2d.pde --backend interp --steps 8
same bih1d bih1d.pde
for f in "$src"/samples/*.pde; do
    b=$(basename "$f" .pde)
    same "sample-$b" "$f" --steps 12 --out "sample-$b.out"
done
for layout in 1x4 4x1 2x2; do
    mpi 4 run rd2d.pde -q --seed 7 --ranks-layout "$layout" --dump "rd2d-$layout.csv" >/dev/null 2>&1 || fail "layout $layout: exit $?"
    cmp -s rd2d-1.csv "rd2d-$layout.csv" || fail "rd2d: the dump with --ranks-layout $layout differs"
done

# initial values from a dump (--init): read by every process, scattered from rank 0
"$pdejit" run rd2d.pde -q --init rd2d-1.csv --steps 5 --dump init-1.csv >/dev/null 2>&1 || fail "--init: one process"
mpi 3 run rd2d.pde -q --init rd2d-1.csv --steps 5 --dump init-3.csv >/dev/null 2>&1 || fail "--init on 3 processes: exit $?"
cmp -s init-1.csv init-3.csv || fail "--init: the dump on 3 processes differs"

# snapshots and monitors: gathered on rank 0, written by it alone
"$pdejit" run heat3d.pde -q --out h1 --dump h1.csv >/dev/null 2>&1 || fail "heat3d: one process"
mpi 3 run heat3d.pde -q --out h3 --dump h3.csv >/dev/null 2>&1 || fail "heat3d on 3 processes: exit $?"
for s in h1/*; do
    b=$(basename "$s")
    [ "$b" = monitor.csv ] && continue
    cmp -s "$s" "h3/$b" || fail "heat3d: snapshot $b differs on 3 processes"
done
[ "$(ls h1 | wc -l)" = "$(ls h3 | wc -l)" ] || fail "heat3d: $(ls h1 | wc -l) output files on one process, $(ls h3 | wc -l) on 3"
awk -F, 'NR == FNR { for (i = 1; i <= NF; i++) a[FNR, i] = $i; next }
         FNR > 1 { for (i = 3; i <= NF; i++) { d = $i - a[FNR, i]; if (d < 0) d = -d; m = a[FNR, i] < 0 ? -a[FNR, i] : a[FNR, i];
                   if (d > 1e-12 * (m > 1e-300 ? m : 1)) { print "row " FNR " column " i ": " a[FNR, i] " vs " $i; bad = 1 } } }
         END { exit bad }' h1/monitor.csv h3/monitor.csv || fail "heat3d: the monitors on 3 processes differ by more than 1e-12"
[ "$(wc -l < h1/monitor.csv)" = "$(wc -l < h3/monitor.csv)" ] || fail "heat3d: monitor.csv rows differ"

# 2. a NaN on one process only (x > 0.9: the last block) stops every process, naming the cell as
#    one process does; exit 1, no hang
cat > nan.pde <<'EOF'
mesh grid(nx = 40, ny = 8)
field u = 1
eq dt(u) = x > 0.9 && t > 0.02 ? log(-u) : 0.001*lap(u)
time dt = 0.01, steps = 10
EOF
"$pdejit" run nan.pde -q >/dev/null 2>nan-1.err; r1=$?
mpi 4 run nan.pde -q >/dev/null 2>nan-4.err; r4=$?
[ "$r1" = 1 ] && [ "$r4" = 1 ] || fail "nan: exit $r1 on one process, $r4 on 4 (want 1)"
grep -q "non-finite value" nan-4.err || fail "nan: no message on 4 processes: $(cat nan-4.err)"
[ "$(head -n 1 nan-1.err)" = "$(head -n 1 nan-4.err)" ] || fail "nan: the message on 4 processes ($(cat nan-4.err)) is not one process's ($(cat nan-1.err))"

# 3. refused before the run, exit 2, with the numbers
refused() { # WHAT EXPECTED-TEXT NPROCS run-args...
    what=$1; want=$2; n=$3; shift 3
    mpi "$n" run "$@" -q >/dev/null 2>refused.err; r=$?
    [ "$r" = 2 ] || fail "$what: exit $r (want 2): $(cat refused.err)"
    grep -qF -- "$want" refused.err || fail "$what: message '$(cat refused.err)' lacks '$want'"
}
cat > narrow.pde <<'EOF'
mesh grid(nx = 6)
field u = x
eq dt(u) = -1e-4*lap(lap(u))
time dt = 1e-6, steps = 2
EOF
refused "a block narrower than the halo" "fewer than the 2 ghost layers the stencil needs" 4 narrow.pde
refused "a layout of another size" "--ranks-layout 3x1 makes 3 processes, but the run has 4" 4 rd2d.pde --ranks-layout 3x1
refused "a malformed layout" "--ranks-layout 2x2x2: give 2 numbers" 4 rd2d.pde --ranks-layout 2x2x2
printf 'mesh grid(nx = 20, ny = 3)\nfield u = x\neq dt(u) = 0.01*lap(u)\ntime dt = 0.001, steps = 2\n' > flat.pde
refused "more processes along an axis than cells" "4 processes along y, but the mesh has 3 cells there" 4 flat.pde --ranks-layout 1x4
refused "an implicit scheme" "implicit runs over MPI are not available yet" 2 "$src/samples/implicit/stiff_heat.pde"
refused "the GPU" "the cuda back end does not run over MPI yet" 2 rd2d.pde --backend cuda
refused "--watch" "--watch does not run over MPI yet" 2 rd2d.pde --watch
# an output that rank 0 cannot write ends every process (no hang)
mpi 3 run rd2d.pde -q --dump /proc/no/such.csv >/dev/null 2>unwritable.err; r=$?
[ "$r" = 2 ] && grep -q "cannot write the dump" unwritable.err || fail "unwritable dump: exit $r: $(cat unwritable.err)"

[ "$failures" = 0 ] && echo "mpi_test: all passed" && exit 0
echo "mpi_test: $failures failure(s)"
exit 1
