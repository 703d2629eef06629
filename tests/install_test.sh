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
         lib/cmake/pdejit/pdejitTargets.cmake; do
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

for exe in "$tmp/with-cmake/embed" "$tmp/with-make/embed"; do
    [ -x "$exe" ] || fail "$exe was not built"
    lib=$(LD_LIBRARY_PATH=$prefix/lib ldd "$exe" | awk '$1 ~ /^libpdejit\.so/ {print $3}')
    case $lib in "$prefix"/lib/libpdejit.so.*) ;; *) fail "$exe loads libpdejit from '$lib', not from the install";; esac
    out=$(LD_LIBRARY_PATH=$prefix/lib PDEJIT_CACHE_DIR=$tmp/cache "$exe" 2>&1)
    status=$?
    echo "$out"
    [ $status -eq 0 ] || fail "$exe exited with $status"
    case $out in *"max error"*"(tolerance"*) ;; *) fail "$exe printed no checked result";; esac
done

"$prefix/bin/pdejit" check "$src/samples/heat1d.pde" || fail "the installed pdejit command"
echo "install_test: passed"
