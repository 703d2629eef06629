#!/bin/sh
# mpi_test.sh — runs over MPI (issue: domain decomposition through PETSc's DMDA) against one process:
#
#   sh tests/mpi_test.sh PDEJIT SOURCE_DIR WORK_DIR
#
# Explicit runs on 2, 3 and 4 processes (mpirun --oversubscribe, several process layouts) must give
# the --dump and the snapshot files of the run without mpirun byte for byte: rand()/randn(), a
# corner-reading stencil, periodic axes, time- and position-dependent conditions, two ghost layers,
# 1D/2D/3D, single precision, the interpreter. Monitors agree to 1e-12. A NaN on one process
# stops all with the message one process gives; bad decompositions and the GPU are refused before
# the run with exit 2. Implicit schemes and steady solves (the DMDA and the solvers on every
# process) agree with one process to 1e-10 relative, with the same Newton iterations under a
# direct solve; a Newton failure ends every process with one process's message. --watch: rank 0
# watches, every process swaps at the same step. A checkpoint written on 3 processes resumes on 2
# to the same dump as a run never stopped. Exits 77 (skipped) without mpirun.
set -u
pdejit=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
work=$3
command -v mpirun >/dev/null 2>&1 || { echo "mpi_test: skipped: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# under AddressSanitizer: Open MPI's own allocations kept to the end are not pdejit's leaks (its
# components stay loaded and the stacks are unwound fully, so the suppressions can name them)
export OMPI_MCA_mca_base_component_disable_dlclose=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$src/tests/mpi/lsan.supp:print_suppressions=0"
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
cat > rz.pde <<'EOF'
# an r-z mesh (the axis a symmetry face, areas r) and a stretched, listed grid: the metric in the
# kernels, coordinates of the whole mesh on every block; monitors weighed by the cells' volumes
mesh cylindrical(nr = 20, nz = 14, Lr = 1, Lz = 2)
field u = exp(-5*((r - 0.3)^2 + (z - 1)^2))
on outer: u = 0.1
on top: dn(u) = 1
eq dt(u) = div((1 + r)*grad(u)) - 0.1*u*z
time dt = 0.0004, steps = 40, scheme = rk2
monitor every = 0.004, mass = integral(u), avg = mean(u)
output every = 0.004, format = csv
EOF
cat > stretch2d.pde <<'EOF'
mesh grid(nx = 18, x = stretch(1.1), dy = [0.1, 0.2, 0.1, 0.15, 0.1, 0.1, 0.05, 0.2, 0.1, 0.1, 0.1, 0.2])
field u = sin(3*x)*y + dx
on left: u = 1
on right: dn(u) = 2
eq dt(u) = lap(u) + x*dy
time dt = 0.00002, steps = 40, scheme = rk3
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
same rz rz.pde
same stretch2d stretch2d.pde
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
# an r-z mesh: the same snapshots; its integral and (volume-weighted) mean on 3 processes
"$pdejit" run rz.pde -q --out z1 >/dev/null 2>&1 || fail "rz: one process"
mpi 3 run rz.pde -q --out z3 >/dev/null 2>&1 || fail "rz on 3 processes: exit $?"
for s in z1/snapshot_*; do cmp -s "$s" "z3/$(basename "$s")" || fail "rz: snapshot $(basename "$s") differs on 3 processes"; done
awk -F, 'NR == FNR { for (i = 1; i <= NF; i++) a[FNR, i] = $i; next }
         FNR > 1 { for (i = 3; i <= NF; i++) { d = $i - a[FNR, i]; if (d < 0) d = -d; m = a[FNR, i] < 0 ? -a[FNR, i] : a[FNR, i];
                   if (d > 1e-12 * (m > 1e-300 ? m : 1)) { print "row " FNR " column " i ": " a[FNR, i] " vs " $i; bad = 1 } } }
         END { exit bad }' z1/monitor.csv z3/monitor.csv || fail "rz: the monitors on 3 processes differ by more than 1e-12"

# VTK snapshots over MPI: a .pvti per snapshot whose pieces are the blocks, the same values
sed 's/format = csv/format = vtk/' heat3d.pde > heat3d-vtk.pde
"$pdejit" run heat3d-vtk.pde -q --out v1 >/dev/null 2>&1 || fail "heat3d-vtk: one process"
mpi 3 run heat3d-vtk.pde -q --out v3 >/dev/null 2>&1 || fail "heat3d-vtk on 3 processes: exit $?"
python3 "$src/tests/mpi/vtk_pieces.py" v1 v3 || fail "heat3d-vtk: the pieces on 3 processes differ from one process's .vti"
# listed and stretched faces: a .pvtr of .vtr pieces, each with its block's faces as coordinates
# (2D, 3D and a stretched r-z mesh, 2 to 4 processes, several layouts), against one process's
# .vtr, parsed
printf 'output every = 0.0002, format = vtk\n' | cat stretch2d.pde - > stretch2d-vtk.pde
cat > stretch3d-vtk.pde <<'EOF2'
mesh grid(nx = 7, ny = 6, nz = 8, dx = [0.1, 0.2, 0.1, 0.3, 0.1, 0.2, 0.1], z = stretch(1.15), Lz = 2)
field u = sin(3*x)*y + z*dz
field v = x + 2*y
on left: u = 1
on top: dn(v) = 1
eq dt(u) = lap(u) + x*dy
eq dt(v) = div((1 + z)*grad(v)) - u
time dt = 0.0002, steps = 10, scheme = rk2
output every = 0.001, format = vtk
EOF2
cat > rzs-vtk.pde <<'EOF2'
mesh cylindrical(nr = 10, nz = 8, Lr = 1, r0 = 0.2, r = stretch(1.2), dz = [0.1, 0.2, 0.3, 0.4, 0.3, 0.2, 0.3, 0.2])
field u = exp(-5*((r - 0.5)^2 + (z - 1)^2))
on outer: u = 0.1
on top: dn(u) = 1
eq dt(u) = div((1 + r)*grad(u)) - 0.1*u*z
time dt = 0.0002, steps = 20, scheme = rk2
output every = 0.002, format = vtk
EOF2
for c in stretch2d-vtk stretch3d-vtk rzs-vtk; do
    layouts="4:1x4 4:4x1"; [ $c = stretch3d-vtk ] && layouts="4:4x1x1 4:1x1x4 4:1x2x2"
    "$pdejit" run $c.pde -q --out $c-1 >/dev/null 2>&1 || fail "$c: one process"
    ls $c-1/snapshot_000000.vtr >/dev/null 2>&1 || fail "$c: one process wrote no .vtr"
    for run in 2 3 4 $layouts; do
        n=${run%%:*}; layout=; [ "$run" != "$n" ] && layout="--ranks-layout ${run#*:}"
        d=$c-$n${layout:+-${run#*:}}
        mpi "$n" run $c.pde -q --out $d $layout >/dev/null 2>&1 || { fail "$c on $n processes $layout: exit $?"; continue; }
        python3 "$src/tests/mpi/vtk_pieces.py" $c-1 $d || fail "$c: the .vtr pieces on $n processes $layout differ from one process's .vtr"
    done
done

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
refused "the GPU" "the cuda back end cannot run over MPI yet: use --backend cpu" 2 rd2d.pde --backend cuda
# an output that rank 0 cannot write ends every process (no hang)
mpi 3 run rd2d.pde -q --dump /proc/no/such.csv >/dev/null 2>unwritable.err; r=$?
[ "$r" = 2 ] && grep -q "cannot write the dump" unwritable.err || fail "unwritable dump: exit $r: $(cat unwritable.err)"

# 4. implicit schemes and steady solves: within 1e-10 of one process, relative to each column's
#    largest value. The solvers' tolerances are tight: the preconditioner (block Jacobi over the
#    processes) differs with the blocks, so only rounding should remain.
tight="-snes_rtol 1e-12 -ksp_rtol 1e-13 -snes_stol 1e-16"
reldiff() { # A.csv B.csv: exit 1 (and the figure) when max|a - b| / max|a| of a column exceeds 1e-10
    awk -F, 'NR == FNR { for (i = 1; i <= NF; i++) a[FNR, i] = $i; na = FNR; next }
             FNR > 1 { nb = FNR; for (i = 1; i <= NF; i++) { d = $i - a[FNR, i]; if (d < 0) d = -d; if (d > dm[i]) dm[i] = d;
                       m = a[FNR, i] < 0 ? -a[FNR, i] : a[FNR, i]; if (m > am[i]) am[i] = m } }
             END { w = 0; for (i in dm) { r = am[i] > 0 ? dm[i] / am[i] : dm[i]; if (r > w) w = r }
                   if (na != nb || na < 2) { print "the rows differ: " na " and " nb; exit 1 }
                   if (w > 1e-10) { print "relative difference " w; exit 1 } }' "$1" "$2"
}
near() { # NAME FILE [run options]: 2, 3 and 4 processes against one
    name=$1; file=$2; shift 2
    "$pdejit" run "$file" -q --dump "$name-1.csv" --solver-options "$tight" "$@" >/dev/null 2>"$name-1.err" || { fail "$name: one process: $(cat "$name-1.err")"; return; }
    for n in 2 3 4; do
        mpi "$n" run "$file" -q --dump "$name-$n.csv" --solver-options "$tight" "$@" >/dev/null 2>"$name-$n.err" || { fail "$name on $n processes: exit $?: $(cat "$name-$n.err")"; continue; }
        why=$(reldiff "$name-1.csv" "$name-$n.csv") || fail "$name on $n processes: $why"
    done
}
cat > nl2d.pde <<'EOF'
# 2D nonlinear: a diffusivity depending on u, a reaction, a Dirichlet side depending on t and y,
# zero flux on the others, a coefficient field
mesh grid(nx = 24, ny = 20)
field u = exp(-20*((x-0.4)^2+(y-0.5)^2))
field w = 1 + x*y
on left: u = 1 + t*y
on right, bottom, top: dn(u) = 0
eq dt(u) = div(0.1*w*(1 + u^2)*grad(u)) + u*(1 - u)
time dt = 0.01, steps = 10, scheme = beuler
EOF
cat > per2d.pde <<'EOF'
# periodic x and y, two coupled fields, a corner-reading term (the box stencil), Crank-Nicolson
mesh grid(nx = 20, ny = 18)
field u = 1 + 0.5*sin(2*pi*x)*cos(2*pi*y)
field v = 0.5 + 0.2*cos(2*pi*x)
eq dt(u) = 0.05*lap(u) - u*v + 0.1*(u[1,1] - u[-1,-1])
eq dt(v) = 0.02*lap(v) + u*v - v^3
periodic x, y
time dt = 0.01, steps = 8, scheme = cn
EOF
cat > fourth1d.pde <<'EOF'
# 1D fourth order (two ghost layers): a Cahn-Hilliard flux, u and lap(u) given at the left end
mesh grid(nx = 64)
field u = 0.3*sin(3*x) + 0.1*cos(17*x)
flux F(u) = grad(u^3 - u - 0.001*lap(u))
eq dt(u) = div(F(u))
on left: u = 0.2, lap(u) = 0
on right: dn(u) = 0
time dt = 0.002, steps = 10, scheme = bdf2
EOF
cat > imp3d.pde <<'EOF'
# 3D: periodic z, walls on x, zero flux on y, a nonlinear source
mesh grid(nx = 12, ny = 10, nz = 9)
field u = sin(pi*x)*sin(pi*y)*(1 + 0.3*cos(2*pi*z))
on left, right: u = 0
on bottom, top: dn(u) = 0
periodic z
eq dt(u) = lap(u) + u^2
time dt = 0.005, steps = 6, scheme = bdf2
EOF
cat > steady2d.pde <<'EOF'
# steady: nonlinear Poisson, Dirichlet on two sides (one depending on y), zero flux on the others
mesh grid(nx = 24, ny = 18)
field u = 0
on left: u = 1
on right: u = y
on bottom, top: dn(u) = 0
eq dt(u) = div((1 + u^2)*grad(u)) + 1
steady
EOF
cat > adapt2d.pde <<'EOF'
# bdf2 with adaptive steps (global error norms): Allen-Cahn, periodic x, Dirichlet in y
mesh grid(nx = 24, ny = 20)
field u = 0.3*sin(2*pi*x)*sin(pi*y) + 0.1*cos(6*pi*x)
on bottom, top: u = 0
periodic x
eq dt(u) = 0.002*lap(u) + u - u^3
time dt = 0.01, until = 0.5, scheme = bdf2, adapt = 1e-4
EOF
cat > imex2d.pde <<'EOF'
# imex: implicit diffusion, explicit reaction
mesh grid(nx = 24, ny = 20)
field u = exp(-20*((x-0.5)^2+(y-0.5)^2))
on all: dn(u) = 0
eq dt(u) = implicit(0.05*lap(u)) + u*(1 - u)
time dt = 0.01, steps = 8, scheme = imex
EOF
near nl2d nl2d.pde
near nl2d-interp nl2d.pde --backend interp --steps 3
near per2d per2d.pde
near fourth1d fourth1d.pde
near imp3d imp3d.pde
near steady2d steady2d.pde
near adapt2d adapt2d.pde
near imex2d imex2d.pde
# an algebraic equation (eq 0 = ...): FiPy's coupled Cahn-Hilliard (samples/implicit/
# cahn_hilliard_coupled.pde), c and mu in one system, bdf2 (an absolute tolerance: the residual's
# rounding floor, about 1e-14, is above $tight's relative 1e-12 in the late steps)
cat > chc2d.pde <<'EOF'
mesh grid(nx = 24, ny = 20, Lx = 12, Ly = 10)
field c = 0.5 + 0.1*randn(), mu = 0
eq dt(c) = lap(mu)
eq 0 = mu - (c*(1 - c)*(1 - 2*c) - lap(c))
time dt = 1, steps = 10, scheme = bdf2
solver atol = 1e-13
EOF
near chc2d chc2d.pde
# the full gradient on faces (tangential differences read the exchanged corner ghosts) and its
# angle's Jacobian (samples/pfhub3.pde, explicit, is one of the samples above)
near pfhub3-bdf2 "$src/samples/implicit/pfhub3.pde" --until 0.5 --out none
for layout in 1x4 2x2; do
    mpi 4 run nl2d.pde -q --solver-options "$tight" --ranks-layout "$layout" --dump "nl2d-$layout.csv" >/dev/null 2>&1 || fail "nl2d: layout $layout: exit $?"
    why=$(reldiff nl2d-1.csv "nl2d-$layout.csv") || fail "nl2d with --ranks-layout $layout: $why"
done
# the Jacobian assembled over the processes is the exact one: under a direct solve (MUMPS over
# MPI) Newton takes the same iterations as on one process, step by step
direct="-ksp_type preonly -pc_type lu"
for f in nl2d fourth1d imp3d steady2d; do
    "$pdejit" run "$f.pde" -q --verbose --solver-options "$direct" 2>&1 | grep -oE "step [0-9]*, t = [^:]*: [0-9]* Newton|steady solve: [0-9]* Newton" > "$f-newton-1.txt"
    mpi 3 run "$f.pde" -q --verbose --solver-options "$direct" 2>&1 | grep -oE "step [0-9]*, t = [^:]*: [0-9]* Newton|steady solve: [0-9]* Newton" > "$f-newton-3.txt"
    [ -s "$f-newton-1.txt" ] && cmp -s "$f-newton-1.txt" "$f-newton-3.txt" ||
        fail "$f: Newton iterations on 3 processes ($(tr '\n' ' ' < "$f-newton-3.txt")) are not one process's ($(tr '\n' ' ' < "$f-newton-1.txt"))"
done
# a Newton solve that fails ends every process, exit 1, with one process's message, no hang
cat > diverge.pde <<'EOF'
mesh grid(nx = 24, ny = 20)
field u = 1 + x
eq dt(u) = 0.01*lap(u) + u^2
on all: dn(u) = 0
time dt = 0.1, steps = 30, scheme = beuler
EOF
"$pdejit" run diverge.pde -q --solver-options "$direct" >/dev/null 2>diverge-1.err; r1=$?
mpi 4 run diverge.pde -q --solver-options "$direct" >/dev/null 2>diverge-4.err; r4=$?
[ "$r1" = 1 ] && [ "$r4" = 1 ] || fail "diverge: exit $r1 on one process, $r4 on 4 (want 1)"
grep -q "Newton did not converge in the step from t = 0.1" diverge-1.err || fail "diverge: one process says $(cat diverge-1.err)"
[ "$(grep -c '^pdejit' diverge-4.err)" = 1 ] && [ "$(grep '^pdejit' diverge-4.err)" = "$(cat diverge-1.err)" ] ||
    fail "diverge: on 4 processes '$(cat diverge-4.err)', not one process's '$(cat diverge-1.err)'"

# 5. --watch: rank 0 watches the file; a broken edit is reported once, a good one swapped in on
#    every process at the same step (du/dt = 1, then 2 from ts: u(T) = ts + 2 (T - ts) in every
#    cell), what a running simulation cannot change is refused; the messages are one process's.
#    100 000 steps (about 10 s on 2 idle cores) leave the three edits time to land under load.
cat > w.pde <<'EOF'
mesh grid(nx = 40, ny = 30)
field u
eq dt(u) = 1
time dt = 0.0002, until = 20
EOF
PDEJIT_WATCH_STEPS=1 timeout 300 mpirun --oversubscribe -np 3 -x PDEJIT_WATCH_STEPS "$pdejit" run w.pde --watch --out none --dump w.csv 2> w.log & pid=$!
until grep -q watching w.log || ! kill -0 $pid 2>/dev/null; do sleep 0.05; done
sed -i 's/= 1$/= 2 + qq/' w.pde
until grep -q 'not compile' w.log || ! kill -0 $pid 2>/dev/null; do sleep 0.05; done
sed -i 's/nx = 40/nx = 41/; s/= 2 + qq$/= 2/' w.pde
until grep -q 'mesh changed' w.log || ! kill -0 $pid 2>/dev/null; do sleep 0.05; done
sed -i 's/nx = 41/nx = 40/' w.pde
wait $pid; r=$?
[ "$r" = 0 ] || fail "--watch on 3 processes: exit $r: $(cat w.log)"
grep -q "w.pde changed but it does not compile; still running the previous definition" w.log &&
    grep -q "^w.pde:3:16: error: undefined name 'qq'" w.log || fail "--watch: the broken edit is not reported: $(cat w.log)"
grep -q "w.pde changed, but the mesh changed along x: restart the run for that; still running" w.log ||
    fail "--watch: the mesh change is not refused: $(cat w.log)"
[ "$(grep -c 'swapped in the new definition' w.log)" = 1 ] && [ "$(grep -c 'not compile' w.log)" = 1 ] ||
    fail "--watch: not one report per edit: $(cat w.log)"
ts=$(sed -n 's/^pdejit: t = \([0-9.e+-]*\): w.pde changed: swapped in.*/\1/p' w.log)
awk -F, -v ts="$ts" 'NR > 1 { want = ts + 2 * (20 - ts); d = $3 - want; if (d < 0) d = -d; if (d > 1e-6) bad = 1; n++ }
                     END { exit bad || n != 1200 || ts == "" }' w.csv ||
    fail "--watch: the dump is not u = ts + 2 (T - ts) with ts = '$ts' in all 1200 cells"

# 6. checkpoints: written on 3 processes (the fields gathered on rank 0, which writes the file),
#    resumed on 2 (rank 0 reads it, the fields are scattered): the dump of a run never stopped,
#    byte for byte for an explicit scheme, within 1e-10 for an implicit one; a checkpoint that
#    cannot be read is refused on every process with one process's message
cat > ck.pde <<'EOF'
mesh grid(nx = 24, ny = 20)
field u = exp(-20*((x-0.4)^2+(y-0.5)^2)) + 0.1*rand()
on left: u = 1 + t*y
on right: dn(u) = 0
periodic y
eq dt(u) = 0.1*lap(u) - u^3 + 0.01*randn()
time dt = 0.003, until = 0.3, scheme = rk4
EOF
"$pdejit" run ck.pde -q --out none --dump ck-full.csv >/dev/null 2>&1 || fail "checkpoint: one process"
mpi 3 run ck.pde -q --out ck3 --checkpoint-every 0.1 --until 0.15 >/dev/null 2>ck3.err || fail "checkpoint on 3 processes: $(cat ck3.err)"
mpi 2 run ck.pde -q --out ck3 --resume ck3/checkpoint.pjc --dump ck-resumed.csv >/dev/null 2>ck2.err || fail "resumed on 2 processes: $(cat ck2.err)"
cmp -s ck-full.csv ck-resumed.csv || fail "checkpoint: written on 3 processes, resumed on 2: the dump differs from one process's"
mpi 3 run nl2d.pde -q --out cki --checkpoint-every 0.05 --steps 6 --solver-options "$tight" >/dev/null 2>cki.err || fail "implicit checkpoint on 3 processes: $(cat cki.err)"
mpi 2 run nl2d.pde -q --out cki --resume cki/checkpoint.pjc --dump cki-resumed.csv --solver-options "$tight" >/dev/null 2>cki2.err ||
    fail "implicit, resumed on 2 processes: $(cat cki2.err)"
why=$(reldiff nl2d-1.csv cki-resumed.csv) || fail "implicit checkpoint, resumed on 2 processes: $why"
"$pdejit" run ck.pde -q --resume ck.pde >/dev/null 2>ckbad-1.err; r1=$?
mpi 3 run ck.pde -q --resume ck.pde >/dev/null 2>ckbad-3.err; r3=$?
[ "$r1" = 2 ] && [ "$r3" = 2 ] && grep -q "ck.pde: not a pdejit checkpoint" ckbad-1.err &&
    [ "$(grep -c '^pdejit' ckbad-3.err)" = 1 ] && [ "$(grep '^pdejit' ckbad-3.err)" = "$(cat ckbad-1.err)" ] ||
    fail "a bad checkpoint: exit $r1 on one process ($(cat ckbad-1.err)), $r3 on 3 ($(cat ckbad-3.err))"

[ "$failures" = 0 ] && echo "mpi_test: all passed" && exit 0
echo "mpi_test: $failures failure(s)"
exit 1
