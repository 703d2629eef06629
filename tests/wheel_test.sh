#!/bin/sh
# wheel_test.sh — the Python package as a wheel, as a user installs it (issue 26 item 2). This
# build is installed into a temporary prefix; a copy of python/ (no build folder of its own) is
# built with `python -m build --wheel` against that install, found by pkg-config; the wheel is
# installed into a fresh virtual environment in another folder; the copy is removed; then the
# installed package must load the installed libpdejit (its run path, no LD_LIBRARY_PATH) and run
# every `python` block of docs/python.md (as python/tests/test_docs.py does). The wheel built
# from a clone with no prior build (setup.py runs CMake: minutes on 2 cores) is the manual check
# of docs/python.md, "Installing"; this test reuses the library already built to stay short.
#
#   wheel_test.sh BUILD_DIR SOURCE_DIR CMAKE
#
# Exit 0 passed, 1 failed, 77 skipped (no python3 with venv, or PyPI not reachable for build,
# setuptools, wheel, cffi, numpy).
set -u
build=$1 src=$2 cmake=$3
fail() { echo "wheel_test: FAILED: $*" >&2; exit 1; }
skip() { echo "wheel_test: skipped: $*"; exit 77; }
command -v python3 >/dev/null 2>&1 || skip "no python3"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pdejit-wheel.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT

python3 -m venv "$tmp/tools" >/dev/null 2>&1 || skip "python3 -m venv does not work (Debian: python3-venv)"
"$tmp/tools/bin/pip" install -q --timeout 15 build setuptools wheel cffi >"$tmp/pip.log" 2>&1 ||
    { cat "$tmp/pip.log"; skip "PyPI is not reachable (pip install build setuptools wheel cffi)"; }

"$cmake" --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install"; }
mkdir "$tmp/src" "$tmp/run" && cp -R "$src/python" "$tmp/src/python" && rm -rf "$tmp/src/python/build" \
    "$tmp/src/python"/*.egg-info "$tmp/src/python/pdejit"/_pdejit_cffi* && cp "$src/docs/python.md" "$tmp/run/" &&
    cp -R "$src/samples" "$tmp/run/samples" || fail "copying the sources"

PKG_CONFIG_PATH=$tmp/prefix/lib/pkgconfig "$tmp/tools/bin/python" -m build --wheel --no-isolation \
    --outdir "$tmp/dist" "$tmp/src/python" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "python -m build --wheel"; }
wheel=$(ls "$tmp/dist"/pdejit-*.whl 2>/dev/null) || fail "no wheel in $tmp/dist"

python3 -m venv "$tmp/elsewhere/venv" >/dev/null 2>&1 || fail "the second venv"
"$tmp/elsewhere/venv/bin/pip" install -q --timeout 15 "$wheel" >"$tmp/pip2.log" 2>&1 ||
    { cat "$tmp/pip2.log"; fail "pip install $wheel"; }
rm -rf "$tmp/src" "$tmp/dist"   # the sources and the wheel are gone: only the install is left

cd "$tmp/run" || fail "cd"
env -u LD_LIBRARY_PATH PDEJIT_CACHE_DIR="$tmp/cache" "$tmp/elsewhere/venv/bin/python" - "$tmp/prefix" <<'EOF' || fail "the installed package"
import os, pathlib, re, subprocess, sys
import pdejit
from pdejit import _pdejit_cffi

prefix = os.path.realpath(sys.argv[1])
ext = _pdejit_cffi.__file__
assert pathlib.Path(ext).resolve().is_relative_to(pathlib.Path(sys.prefix).resolve()), ext
loaded = [line.split()[-1] for line in open("/proc/self/maps") if "libpdejit.so" in line]
assert loaded and all(os.path.realpath(p).startswith(prefix + "/") for p in loaded), (loaded, prefix)
text = open("python.md").read()
namespace = {"SAMPLES": pathlib.Path("samples").resolve()}
blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
assert len(blocks) > 5
for i, block in enumerate(blocks):
    exec(compile(block, "docs/python.md block %d" % (i + 1), "exec"), namespace)
print("wheel_test: pdejit %s from %s: %d blocks of docs/python.md ran" % (pdejit.__version__, loaded[0], len(blocks)))
EOF
