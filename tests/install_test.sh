#!/bin/sh
# install_test.sh — the installed library as another project sees it. Installs the build into a
# temporary prefix, checks the layout, builds samples/embed against it twice (CMake with
# find_package(pdejit), make with pkg-config), runs both builds and checks what they print and
# which libpdejit they load, and runs the installed command.
#
#   install_test.sh BUILD_DIR SOURCE_DIR CMAKE CC [SAMPLE_FLAGS]
#
# SAMPLE_FLAGS is -fsanitize=... in a sanitizer build: a sanitized library needs a sanitized
# program. Exit 0 passed, 1 failed, 77 skipped (no make or pkg-config on this machine).
set -u
build=$1 src=$2 cmake=$3 cc=$4 flags=${5:-}
fail() { echo "install_test: FAILED: $*" >&2; exit 1; }
for tool in make pkg-config; do
    command -v "$tool" >/dev/null 2>&1 || { echo "install_test: skipped: no $tool"; exit 77; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pdejit-install.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install"; }
for f in bin/pdejit include/pdejit.h lib/libpdejit.so lib/pkgconfig/pdejit.pc \
         lib/cmake/pdejit/pdejitConfig.cmake lib/cmake/pdejit/pdejitConfigVersion.cmake \
         lib/cmake/pdejit/pdejitTargets.cmake share/man/man1/pdejit.1 share/bash-completion/completions/pdejit; do
    [ -e "$prefix/$f" ] || fail "the install has no $f"
done
ls "$prefix"/lib/libpdejit.so.[0-9]* >/dev/null 2>&1 || fail "the install has no versioned libpdejit.so.N"

# CMake: find_package(pdejit) -> pdejit::pdejit
"$cmake" -S "$src/samples/embed" -B "$tmp/with-cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$tmp/cmake.log" 2>&1 &&
    "$cmake" --build "$tmp/with-cmake" >>"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "the CMake build of samples/embed"; }

# make + pkg-config, built outside the source tree
mkdir "$tmp/with-make" || fail "mkdir"
PKG_CONFIG_PATH=$prefix/lib/pkgconfig make -s -C "$tmp/with-make" -f "$src/samples/embed/Makefile" CC="$cc" \
    CFLAGS="-O2 -Wall -Wextra -Werror $flags" LDFLAGS="$flags" >"$tmp/make.log" 2>&1 || { cat "$tmp/make.log"; fail "the make build of samples/embed"; }

# the make build (pkg-config's flags: an rpath in pdejit.pc's Libs) runs without LD_LIBRARY_PATH
for exe in "$tmp/with-cmake/embed" "$tmp/with-make/embed"; do
    [ -x "$exe" ] || fail "$exe was not built"
    ld=$prefix/lib
    [ "$exe" = "$tmp/with-make/embed" ] && ld=
    lib=$(LD_LIBRARY_PATH=$ld ldd "$exe" | awk '$1 ~ /^libpdejit\.so/ {print $3}')
    lib=$(readlink -f "$lib" 2>/dev/null || echo "$lib")
    case $lib in "$(readlink -f "$prefix")"/lib/libpdejit.so.*) ;; *) fail "$exe loads libpdejit from '$lib', not from the install";; esac
    out=$(LD_LIBRARY_PATH=$ld PDEJIT_CACHE_DIR=$tmp/cache "$exe" 2>&1)
    status=$?
    echo "$out"
    [ $status -eq 0 ] || fail "$exe exited with $status"
    case $out in *"max error"*"(tolerance"*) ;; *) fail "$exe printed no checked result";; esac
done

"$prefix/bin/pdejit" check "$src/samples/heat1d.pde" || fail "the installed pdejit command"

# With PETSc, the implicit solver is the module libpdejit-implicit.so (runtime/implicit_module.h):
# the library and the command load no PETSc until an implicit program runs; the installed
# command finds the installed module; a module that cannot be found is an error message.
if [ -e "$build/libpdejit-implicit.so" ]; then
    [ -e "$prefix/lib/libpdejit-implicit.so" ] || fail "the install has no lib/libpdejit-implicit.so"
    for f in "$prefix"/lib/libpdejit.so "$prefix/bin/pdejit"; do
        readelf -d "$f" | grep -i 'NEEDED.*petsc' && fail "$f loads PETSc at its start"
    done
    heat=$src/samples/implicit/stiff_heat.pde
    # under AddressSanitizer, once more when LeakSanitizer's own tracer crashed (no leak report:
    # seen in CI after PETSc's MPI start; tests/testutil.c's tu_run does the same)
    implicit_run() { PDEJIT_CACHE_DIR=$tmp/cache "$prefix/bin/pdejit" run "$heat" --steps 3 --out none >"$tmp/implicit.log" 2>&1; }
    implicit_run || { grep -q "LeakSanitizer has encountered a fatal error" "$tmp/implicit.log" && implicit_run; } ||
        { cat "$tmp/implicit.log"; fail "the installed command on an implicit problem"; }
    PDEJIT_CACHE_DIR=$tmp/cache LD_DEBUG=files "$prefix/bin/pdejit" run "$heat" --steps 1 --out none 2>&1 |
        grep -q "file=$prefix/[a-z./]*libpdejit-implicit.so .*generating link map" ||
        fail "the installed command did not load the installed implicit module"
    PDEJIT_CACHE_DIR=$tmp/cache PDEJIT_IMPLICIT_MODULE=$tmp/nowhere.so "$prefix/bin/pdejit" run "$heat" --steps 1 \
        --out none >"$tmp/missing.log" 2>&1 && fail "an implicit run without its module succeeded"
    grep -q "the implicit solver (PETSc) could not be loaded: $tmp/nowhere.so: no such file" "$tmp/missing.log" ||
        { cat "$tmp/missing.log"; fail "no message for a missing implicit module"; }
fi
echo "install_test: passed"
