"""pdejit from Python: problems written as text, compiled to kernels (LLVM on the CPU, NVRTC on
the GPU) by the pdejit library, simulated with zero-copy NumPy views of their fields, and
text-defined terms evaluated on NumPy arrays (and on CuPy arrays, on the GPU). See docs/python.md."""
from ._errors import (BackendError, Error, InputError, Interrupted, ProblemError, RunError,
                      UnavailableError, UnsupportedError)
from ._core import DeviceArray, Mesh, Problem, RunResult, Simulation, SolverStats, compile, schemes
from ._term import DeviceBuffer, Derivative, Term, fipy_faces
from .plot import plot

from ._pdejit_cffi import ffi as _ffi, lib as _lib

__version__ = _ffi.string(_lib.pj_version()).decode()  # the library's: CMakeLists.txt's project version
__all__ = ["compile", "schemes", "Problem", "Mesh", "Simulation", "RunResult", "SolverStats", "DeviceArray", "Term", "Derivative", "DeviceBuffer", "fipy_faces", "plot", "Error",
           "InputError", "ProblemError", "RunError", "BackendError", "UnavailableError", "UnsupportedError", "Interrupted"]
