# setup.py — the cffi extension (the metadata is in pyproject.toml): pdejit/_build.py compiles
# pdejit._pdejit_cffi against include/pdejit.h and libpdejit.so, found as its comment says. When
# no pdejit is given or installed, build_ext takes the library of the source tree's build/, or
# (a fresh clone: `pip install ./python`, `python -m build --wheel`) first builds it with CMake
# (python/build/cmake: Release, without -Werror; PDEJIT_CMAKE_ARGS adds options, e.g.
# "-DPJ_WITH_PETSC=OFF"), and puts libpdejit.so.N and the implicit solver's module into the
# package beside the extension, whose run path is $ORIGIN: the wheel runs wherever it is installed. The extension is always rebuilt
# (never one of an earlier build, linked with another library or run path).
import glob
import importlib.util
import os
import re
import shlex
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("_pdejit_build", os.path.join(HERE, "pdejit", "_build.py"))
_b = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_b)

# what build_ext puts into the package from a CMake build (and removes from an earlier one)
BUNDLED = ("libpdejit.so*", "libpdejit-implicit.so")


def cmake_build(src, build_dir):
    """Configures and builds the library (and the implicit module where PETSc is) in build_dir,
    starting again when build_dir is a build of another source tree."""
    if os.path.exists(os.path.join(build_dir, "CMakeCache.txt")) and _b._cmake_source_dir(build_dir) != src:
        shutil.rmtree(build_dir)
    if not shutil.which("cmake"):
        raise RuntimeError("building pdejit needs cmake (and gcc, flex, bison, LLVM 14: README.md); or set "
                           "PDEJIT_BUILD_DIR to a build, or install pdejit where pkg-config finds it")
    args = ["cmake", "-S", src, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DPJ_WERROR=OFF"]
    if shutil.which("ccache"):
        args.append("-DCMAKE_C_COMPILER_LAUNCHER=ccache")
    args += shlex.split(os.environ.get("PDEJIT_CMAKE_ARGS", ""))
    subprocess.run(args, check=True)
    subprocess.run(["cmake", "--build", build_dir, "--target", "pdejit_shared", "-j", str(os.cpu_count() or 2)],
                   check=True)


class BuildExt(build_ext):
    def finalize_options(self):
        super().finalize_options()
        self.force = True

    def run(self):
        dest = os.path.join(HERE, "pdejit") if self.inplace else os.path.join(self.build_lib, "pdejit")
        for pattern in BUNDLED:
            for path in glob.glob(os.path.join(dest, pattern)):
                os.remove(path)
        if _b.BUNDLED:
            build_dir = _b._lib
            if _b.BUNDLED == "cmake":
                cmake_build(_b.source_tree(), build_dir)
            os.makedirs(dest, exist_ok=True)
            # the file of the soname (libpdejit.so.0), which the extension names
            for path in glob.glob(os.path.join(build_dir, "libpdejit.so.*")):
                if re.fullmatch(r"libpdejit\.so\.\d+", os.path.basename(path)):
                    shutil.copyfile(os.path.realpath(path), os.path.join(dest, os.path.basename(path)))
            module = os.path.join(build_dir, "libpdejit-implicit.so")
            if os.path.exists(module):
                shutil.copyfile(module, os.path.join(dest, os.path.basename(module)))
        super().run()


setup(cffi_modules=["pdejit/_build.py:ffibuilder"], cmdclass={"build_ext": BuildExt})
