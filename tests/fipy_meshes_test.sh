#!/bin/sh
# fipy_meshes_test.sh — FiPy itself side by side with pdejit on FiPy's examples on cylindrical and
# spherical meshes (samples/fipy/*.pde; issue 29 item 4): tests/fipy_meshes.py solves each with
# FiPy as FiPy's example file sets it up and with pdejit, and compares the fields with each other
# and with the exact solution at the doctest's atol = 1e-3.
#
#   fipy_meshes_test.sh PDEJIT SOURCE_DIR
#
# The Python with FiPy and SciPy: $PDEJIT_FIPY_PYTHON if set, else SOURCE_DIR/bench/.venv-fipy
# (what bench/implicit_fipy.sh and bench/pfhub1.sh --fipy make: FiPy 4.0.3 and SciPy from pip);
# `make test` installs FiPy into BUILD/fipyenv where pip can and passes it as $PDEJIT_FIPY_PYTHON.
# Exit 0 passed, 1 failed, 77 skipped (no such Python, or FiPy or SciPy does not import there).
set -u
pdejit=$1 src=$2
skip() { echo "fipy_meshes_test: skipped: $*"; exit 77; }
py=${PDEJIT_FIPY_PYTHON:-$src/bench/.venv-fipy/bin/python}
[ -x "$py" ] || command -v "$py" >/dev/null 2>&1 ||
    skip "no Python with FiPy: set PDEJIT_FIPY_PYTHON or make bench/.venv-fipy (pip install fipy scipy)"
"$py" -c 'import fipy, scipy' >/dev/null 2>&1 || skip "$py cannot import fipy and scipy"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pdejit-fipy.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "fipy_meshes_test: $("$py" -c 'import fipy, scipy; print("FiPy", fipy.__version__, "SciPy", scipy.__version__)')"
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$py" "$src/tests/fipy_meshes.py" "$pdejit" "$src/samples/fipy" "$tmp"
