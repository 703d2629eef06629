"""_term.py — Term: a text-defined cell or face expression compiled once (pj_term_compile) and
evaluated on NumPy arrays (pj_term_eval, pj_term_eval_faces), with its derivative by an input at the
cell (pj_term_jacobian); on GPU arrays (__cuda_array_interface__: CuPy ...) by a second C term on
the cuda back end (pj_term_options.on_device), compiled on first use; fipy_faces: face arrays in
FiPy's face order."""
import threading

import numpy as np

from ._core import _check, _number, _take_diagnostics
from ._errors import InputError, ProblemError, UnavailableError, raise_status
from ._pdejit_cffi import ffi, lib

_ERR_LEN = 1024
_BOUNDARIES = {"zero-flux": lib.PJ_TERM_ZERO_FLUX, "periodic": lib.PJ_TERM_PERIODIC}
_AT = {"cells": lib.PJ_TERM_CELLS, "faces": lib.PJ_TERM_FACES}


def fipy_faces(faces):
    """One flat array of a face term's values in FiPy's face order, from its per-axis arrays
    (x, y[, z]): FiPy's Grid2D numbers the faces normal to y first, then those normal to x (Grid3D:
    z, y, x), each x fastest; Grid1D's faces are the x faces. A copy (term(..., fipy=True) writes
    that order without one)."""
    faces = tuple(faces)
    return np.concatenate([np.asarray(f, dtype=np.float64).ravel() for f in reversed(faces)])


def _device_interface(x):
    """x's __cuda_array_interface__ when x is an array in GPU memory (and not also a host array),
    else None."""
    if x is None or isinstance(x, np.ndarray) or hasattr(x, "__array_interface__"):
        return None
    return getattr(x, "__cuda_array_interface__", None)


def _on_device(term, inputs, outs):
    """True when the call's arrays are GPU arrays, False when host arrays; TypeError for a mix."""
    named = [("input " + f, inputs[f]) for f in term.fields if f in inputs]
    if len(outs) > 1:
        named += [("out for axis " + "xyz"[a], o) for a, o in enumerate(outs[:3]) if o is not None]
    else:
        named += [("out", o) for o in outs if o is not None]
    dev = [what for what, x in named if _device_interface(x) is not None]
    if dev and len(dev) != len(named):
        host = [what for what, x in named if _device_interface(x) is None]
        raise TypeError("%s: %s %s in GPU memory (__cuda_array_interface__) but %s %s not: pass every array on "
                        "the same side (cupy.asarray(a) or cupy.asnumpy(a))"
                        % (term._what, ", ".join(dev), "is" if len(dev) == 1 else "are", ", ".join(host),
                           "is" if len(host) == 1 else "are"))
    return bool(dev)


class DeviceBuffer:
    """A result in GPU memory when CuPy is not installed: `shape` float64 (or float32) values, C order, owned
    by this object (freed with it) and exposed as __cuda_array_interface__ (version 3), so that
    Numba, PyTorch or CuPy wrap it without a copy. Keeps its Term alive."""

    def __init__(self, handle, shape, typestr="<f8"):
        self._h, self.shape, self.dtype = handle, tuple(shape), np.dtype(typestr)
        self.size = int(np.prod(self.shape))
        err = ffi.new("char[]", _ERR_LEN)
        ptr = ffi.new("void **")
        _check(lib.pj_term_device_alloc(handle, self.dtype.itemsize * max(self.size, 1), ptr, err, _ERR_LEN), err)
        self._ptr = int(ffi.cast("uintptr_t", ptr[0]))
        self.__cuda_array_interface__ = {"shape": self.shape, "strides": None, "typestr": typestr,
                                         "data": (self._ptr, False), "version": 3, "stream": None}

    def __repr__(self):
        return "<pdejit.DeviceBuffer %s %s on the GPU>" % (self.shape, self.dtype.name)

    def __del__(self):
        if getattr(self, "_ptr", 0):
            lib.pj_term_device_free(self._h, ffi.cast("void *", self._ptr))
            self._ptr = 0


def _device_empty(term, shape, typestr):
    """A new GPU array of `shape` and typestr ('<f8' or '<f4'), and its address: CuPy's when CuPy
    imports, else a DeviceBuffer on the term's device."""
    try:
        import cupy
    except ImportError:
        b = DeviceBuffer(term._device_handle(typestr), shape, typestr)
        return b, b._ptr
    a = cupy.empty(shape, dtype=np.dtype(typestr))
    return a, int(a.data.ptr)


def _device_pointer(term, what, x, count, shapes, writable, typestr=None):
    """The device address of GPU array x after checking its __cuda_array_interface__: float64 or
    float32 (typestr, when given: the call's), `count` values of one of `shapes` (or flat),
    C-contiguous, no mask, writable for an output."""
    cai = _device_interface(x)
    if not isinstance(cai, dict) or not all(k in cai for k in ("shape", "typestr", "data")):
        raise TypeError("%s: %s: __cuda_array_interface__ must be a dict with shape, typestr and data" % (term._what, what))
    version = cai.get("version", 0)
    if not isinstance(version, int) or not 0 <= version <= 3:
        raise TypeError("%s: %s: __cuda_array_interface__ version %r (0 to 3 are known)" % (term._what, what, version))
    if cai["typestr"] not in ("<f8", "<f4"):
        hint = " (cast it: a.astype(cupy.float64))" if cai["typestr"] in ("<f2", "<i4", "<i8") else ""
        raise TypeError("%s: %s has typestr %r: a Term on the GPU takes float64 ('<f8') or float32 ('<f4') "
                        "arrays%s" % (term._what, what, cai["typestr"], hint))
    if typestr is not None and cai["typestr"] != typestr:
        raise TypeError("%s: %s has typestr %r, the inputs %r: pass every array in one precision"
                        % (term._what, what, cai["typestr"], typestr))
    shape = tuple(int(n) for n in cai["shape"])
    if int(np.prod(shape)) != count or (shape not in shapes and len(shape) != 1):
        raise InputError("%s: %s has shape %s; the term needs %s (or %d values flat)"
                         % (term._what, what, shape, " or ".join(str(s) for s in shapes), count))
    strides = cai.get("strides")
    if strides is not None:
        expect, step = [], np.dtype(cai["typestr"]).itemsize
        for n in reversed(shape):
            expect.append(step)
            step *= n
        expect = tuple(reversed(expect))
        if any(n > 1 and int(st) != e for n, st, e in zip(shape, strides, expect)):
            raise InputError("%s: %s is not C-contiguous (strides %s): pass cupy.ascontiguousarray(a)"
                             % (term._what, what, tuple(strides)))
    if cai.get("mask") is not None:
        raise InputError("%s: %s has a mask: masked GPU arrays are not supported" % (term._what, what))
    data = cai["data"]
    if not isinstance(data, tuple) or len(data) != 2:
        raise TypeError("%s: %s: __cuda_array_interface__ data must be (pointer, read_only)" % (term._what, what))
    ptr, read_only = data
    if not isinstance(ptr, int) or ptr <= 0:
        raise InputError("%s: %s has no device address (data pointer %r)" % (term._what, what, ptr))
    if writable and read_only:
        raise InputError("%s: %s is read-only" % (term._what, what))
    return ptr


def _check_names(term, kwargs):
    """The inputs of a call are exactly the term's fields (host and device calls alike)."""
    missing = [f for f in term.fields if f not in kwargs]
    extra = [k for k in kwargs if k not in term.fields]
    if missing or extra:
        raise InputError("%s: needs the inputs %s%s" % (term._what, ", ".join(term.fields),
                                                         "; unknown: " + ", ".join(extra) if extra else ""))


class _Inputs:
    """Checks and converts the keyword arrays of a call into C pointers (copies only arrays that
    are not C-contiguous float64)."""

    @staticmethod
    def gather(term, kwargs, out):
        arrays, ptrs = _Inputs.inputs(term, kwargs)
        if out is None:
            out = np.empty(term.shape if arrays[0].ndim != 1 or term.dim == 1 else (term.cells,))
        elif not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.flags.c_contiguous
                  and out.flags.writeable and out.size == term.cells):
            raise InputError("%s: out must be a writable C-contiguous float64 array of %d cells"
                             % (term._what, term.cells))
        return arrays, ptrs, out

    @staticmethod
    def inputs(term, kwargs):
        _check_names(term, kwargs)
        arrays = []
        for f in term.fields:
            a = np.ascontiguousarray(kwargs[f], dtype=np.float64)
            if a.size != term.cells or (a.shape != term.shape and a.ndim != 1):
                raise InputError("%s: input %s has shape %s; the grid is %s (or %d cells flat)"
                                 % (term._what, f, a.shape, term.shape, term.cells))
            arrays.append(a)
        ptrs = ffi.new("const double *[]", [ffi.cast("const double *", ffi.from_buffer(a)) for a in arrays])
        return arrays, ptrs

    @staticmethod
    def gather_faces(term, kwargs, out, fipy):
        """As gather for a face term: out is None, a sequence of one array per axis (x first) of the
        face shapes, or one flat array of every face in FiPy's order; returns the per-axis arrays
        written, the pointers to them, and what the call returns."""
        arrays, ptrs = _Inputs.inputs(term, kwargs)
        shapes, counts = term.face_shapes, [int(np.prod(s)) for s in term.face_shapes]
        if out is None:
            if fipy:
                out = np.empty(sum(counts))
            else:
                axes = tuple(np.empty(s) for s in shapes)
        if out is not None and isinstance(out, np.ndarray):
            if not (out.dtype == np.float64 and out.flags.c_contiguous and out.flags.writeable
                    and out.size == sum(counts)):
                raise InputError("%s: out must be a writable C-contiguous float64 array of the %d faces (FiPy's "
                                 "order), or one array per axis" % (term._what, sum(counts)))
            flat, parts, start = out.reshape(-1), [None] * term.dim, 0
            for a in reversed(range(term.dim)):  # FiPy: the last axis's faces first
                parts[a] = flat[start:start + counts[a]].reshape(shapes[a])
                start += counts[a]
            axes, result = tuple(parts), out
        elif out is not None:
            axes = tuple(out) if isinstance(out, (tuple, list)) else None
            if axes is None or len(axes) != term.dim or not all(
                    isinstance(o, np.ndarray) and o.dtype == np.float64 and o.flags.c_contiguous and o.flags.writeable
                    and o.size == c for o, c in zip(axes, counts)):
                raise InputError("%s: out must be %d writable C-contiguous float64 arrays of the shapes %s, or one "
                                 "flat array of the %d faces" % (term._what, term.dim, list(shapes), sum(counts)))
            result = axes
        else:
            result = axes
        optrs = ffi.new("double *[]", [ffi.cast("double *", ffi.from_buffer(o)) for o in axes])
        return arrays, ptrs, optrs, axes, result


class _DeviceInputs:
    """The GPU counterpart of _Inputs: checks the arrays' __cuda_array_interface__ and gives the
    device addresses (never copies)."""

    @staticmethod
    def inputs(term, kwargs):
        _check_names(term, kwargs)
        first = _device_interface(kwargs[term.fields[0]])
        typestr = first.get("typestr") if isinstance(first, dict) else None
        typestr = typestr if typestr in ("<f8", "<f4") else None
        addr = [_device_pointer(term, "input " + f, kwargs[f], term.cells, (term.shape,), False, typestr)
                for f in term.fields]
        flat = len(first["shape"]) == 1 and term.dim > 1
        return ffi.new("const double *[]", [ffi.cast("const double *", a) for a in addr]), flat, typestr

    @staticmethod
    def gather(term, kwargs, out):
        """The inputs' and out's addresses, out (new when None) and the call's typestr."""
        ptrs, flat, typestr = _DeviceInputs.inputs(term, kwargs)
        term._device_handle(typestr)  # compiled (or UnavailableError) before any allocation
        if out is None:
            out, optr = _device_empty(term, (term.cells,) if flat else term.shape, typestr)
        else:
            optr = _device_pointer(term, "out", out, term.cells, (term.shape,), True, typestr)
        return ptrs, ffi.cast("double *", optr), out, typestr

    @staticmethod
    def gather_faces(term, kwargs, out, fipy):
        """As _Inputs.gather_faces: out is None, one GPU array per axis, or one flat GPU array of
        every face in FiPy's order (the last axis's faces first)."""
        ptrs, _, typestr = _DeviceInputs.inputs(term, kwargs)
        term._device_handle(typestr)
        shapes, counts = term.face_shapes, [int(np.prod(s)) for s in term.face_shapes]
        if out is None:
            out = (_device_empty(term, (sum(counts),), typestr)[0] if fipy
                   else tuple(_device_empty(term, s, typestr)[0] for s in shapes))
        if isinstance(out, (tuple, list)):
            if len(out) != term.dim:
                raise InputError("%s: out must be %d GPU arrays of the shapes %s, or one flat array of the %d faces"
                                 % (term._what, term.dim, list(shapes), sum(counts)))
            addr = [_device_pointer(term, "out for axis " + "xyz"[a], o, counts[a], (shapes[a],), True, typestr)
                    for a, o in enumerate(out)]
        else:
            base = _device_pointer(term, "out", out, sum(counts), ((sum(counts),),), True, typestr)
            addr, start = [0] * term.dim, 0
            for a in reversed(range(term.dim)):
                addr[a] = base + np.dtype(typestr).itemsize * start
                start += counts[a]
        return ptrs, ffi.new("double *[]", [ffi.cast("double *", a) for a in addr]), out, typestr


class Term:
    """A cell (or face) expression of the problem language over input fields on a uniform grid,
    compiled once (LLVM, through the kernel cache) and evaluated at every cell of NumPy arrays:

        term = pdejit.Term("D*lap(u) - u*v^2", grid=(nx, ny), spacing=(hx, hy),
                           fields=["u", "v"], params={"D": 1e-3})
        r = term(u=a, v=b)              # a new array of the grid's shape
        term(u=a, v=b, out=r)           # into r
        dr_du = term.jacobian("u")(u=a, v=b)   # d term / d u at each cell

    Arrays have the NumPy shape of the grid, (ny, nx) for grid=(nx, ny) (x fastest), or are flat.
    boundary: "zero-flux" (ghost cells mirror the cells next to the wall: no flux through it) or
    "periodic", for every axis, or a sequence of one per axis. definitions: func, flux and const
    statements the expression uses. t: the time the expression's `t` reads (default 0).

    at="faces": the expression is in face context (as inside div(...): grad(u) the normal gradient,
    a bare field the face average, L R LL RR harm upwind, boundary, wall(u), x y z the face centre)
    and a call returns one array per axis, x first, of the faces normal to it: for grid=(nx, ny)
    the x faces (ny, nx + 1) and the y faces (ny + 1, nx), boundary faces included;
    term(..., fipy=True) returns one flat array in FiPy's face order instead (fipy_faces)."""

    def __init__(self, expr, grid, spacing=None, fields=("u",), params=None, boundary="zero-flux",
                 definitions=None, threads=0, at="cells"):
        if not isinstance(expr, str):
            raise TypeError("Term: the expression must be a str")
        grid = (grid,) if isinstance(grid, (int, np.integer)) else tuple(grid)
        if not 1 <= len(grid) <= 3 or not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool)
                                               for n in grid):
            raise InputError("Term: grid must be 1 to 3 cell counts (nx, ny, nz)")
        dim = len(grid)
        if spacing is None:
            spacing = (1.0,) * dim
        spacing = (spacing,) * dim if isinstance(spacing, (int, float, np.number)) else tuple(spacing)
        if len(spacing) != dim:
            raise InputError("Term: spacing needs %d values, one per axis of the grid" % dim)
        if isinstance(fields, str):
            fields = [fields]
        fields = list(fields)
        params = dict(params or {})
        if isinstance(boundary, str):
            boundary = (boundary,) * dim
        boundary = tuple(boundary)
        if len(boundary) != dim or any(b not in _BOUNDARIES for b in boundary):
            raise InputError("Term: boundary must be 'zero-flux' or 'periodic', or one of them per axis")
        if definitions is not None and not isinstance(definitions, str):
            raise TypeError("Term: definitions must be a str")
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or not 0 <= threads <= 1024:
            raise InputError("Term: threads must be an int from 0 (all cores) to 1024")
        for f in fields + list(params):
            if not isinstance(f, str):
                raise TypeError("Term: field and param names must be str")
        if at not in _AT:
            raise InputError("Term: at must be 'cells' or 'faces'")

        self._spec = (expr, grid, spacing, fields, params, boundary, definitions, threads, at)
        self._h = self._compile(False)
        self._dev = {}  # the term on the GPU per typestr, compiled on the first call with such arrays
        self.expr = expr
        self.grid = tuple(int(n) for n in grid)
        self.spacing = tuple(float(h) for h in spacing)
        self.fields = tuple(fields)
        self.boundary = boundary
        self.dim = dim
        self.at = at
        self.shape = tuple(reversed(self.grid))
        # a face term's arrays: per axis, the grid's NumPy shape with one more along that axis
        self.face_shapes = tuple(tuple(n + (dim - 1 - i == a) for i, n in enumerate(self.shape))
                                 for a in range(dim)) if at == "faces" else ()
        self.cells = int(np.prod(self.grid))
        self._params = {k: float(v) for k, v in params.items()}
        self.from_cache = bool(lib.pj_term_from_cache(self._h))
        self._what = "Term(%r)" % expr if len(expr) < 40 else "Term"
        self._err = ffi.new("char[]", _ERR_LEN)
        self._lock = threading.Lock()  # one evaluation at a time: they share the term's buffers

    def _compile(self, on_device, single=False):
        """The C term (pj_term_compile) of the constructor's arguments, on the CPU or the GPU."""
        expr, grid, spacing, fields, params, boundary, definitions, threads, at = self._spec
        o = ffi.new("pj_term_options *")
        keep = []
        o.dim = len(grid)
        for a in range(len(grid)):
            o.n[a] = int(grid[a])
            o.h[a] = _number(spacing[a], "spacing")
            o.boundary[a] = _BOUNDARIES[boundary[a]]
        names = [ffi.new("char[]", f.encode()) for f in fields]
        pnames = [ffi.new("char[]", p.encode()) for p in params]
        keep += names + pnames
        o.n_fields = len(fields)
        o.fields = keep_arr = ffi.new("const char *[]", names or [ffi.NULL])
        o.n_params = len(params)
        o.params = pkeep = ffi.new("const char *[]", pnames or [ffi.NULL])
        values = [_number(v, "param %s" % k) for k, v in (self._params if on_device else params).items()]
        o.param_values = vkeep = ffi.new("double[]", values or [0.0])
        keep += [keep_arr, pkeep, vkeep]
        if definitions:
            keep.append(ffi.new("char[]", definitions.encode()))
            o.definitions = keep[-1]
        o.threads = int(threads)
        o.at = _AT[at]
        o.on_device = 1 if on_device else 0
        o.single = 1 if single else 0
        out = ffi.new("pj_term **")
        diags = ffi.new("char **")
        status = lib.pj_term_compile(expr.encode(), o, out, diags)
        if status != lib.PJ_OK:
            message = _take_diagnostics(diags, "pj_term_compile failed")
            if status == lib.PJ_ERR_INPUT:
                raise ProblemError(message, status)
            if on_device:
                message = "%s on the GPU: %s" % (self._what, message)
            raise_status(status, message)
        return ffi.gc(out[0], lib.pj_term_free)

    def _device_handle(self, typestr="<f8"):
        """The term on the GPU for arrays of typestr ('<f8', or '<f4': float kernels), compiled now
        on first use, with the params' current values: UnavailableError where there is no GPU, CUDA
        driver or NVRTC."""
        if typestr not in self._dev:
            self._dev[typestr] = self._compile(True, typestr == "<f4")
        return self._dev[typestr]

    @property
    def on_device(self):
        """True once the term has been evaluated on GPU arrays (its GPU kernels are ready)."""
        return bool(self._dev)

    @property
    def params(self):
        return dict(self._params)

    def set_param(self, name, value):
        """Changes a param (never recompiles)."""
        if name not in self._params:
            raise KeyError(name)
        value = _number(value, "param %s" % name)
        with self._lock:
            _check(lib.pj_term_set_param(self._h, name.encode(), value))
            for h in self._dev.values():
                _check(lib.pj_term_set_param(h, name.encode(), value))
        self._params[name] = value

    def __call__(self, out=None, t=0.0, **inputs):
        if self.at == "faces":
            return self._faces(out, t, inputs)
        if _on_device(self, inputs, (out,)):
            with self._lock:
                ptrs, optr, out, typestr = _DeviceInputs.gather(self, inputs, out)
                t = _number(t, "t")
                _check(lib.pj_term_eval(self._device_handle(typestr), ptrs, t, optr, self._err, _ERR_LEN), self._err)
            return out
        arrays, ptrs, out = _Inputs.gather(self, inputs, out)
        t = _number(t, "t")
        with self._lock:
            status = lib.pj_term_eval(self._h, ptrs, t, ffi.cast("double *", ffi.from_buffer(out)), self._err, _ERR_LEN)
            _check(status, self._err)
        return out

    def _faces(self, out, t, inputs):
        fipy = inputs.pop("fipy", False) if "fipy" not in self.fields else False
        if _on_device(self, inputs, tuple(out) if isinstance(out, (tuple, list)) else (out,)):
            with self._lock:
                ptrs, optrs, result, typestr = _DeviceInputs.gather_faces(self, inputs, out, bool(fipy))
                t = _number(t, "t")
                _check(lib.pj_term_eval_faces(self._device_handle(typestr), ptrs, t, optrs, self._err, _ERR_LEN),
                       self._err)
            return result
        arrays, ptrs, optrs, axes, result = _Inputs.gather_faces(self, inputs, out, bool(fipy))
        t = _number(t, "t")
        with self._lock:
            status = lib.pj_term_eval_faces(self._h, ptrs, t, optrs, self._err, _ERR_LEN)
            _check(status, self._err)
        return result

    def jacobian(self, field):
        """The derivative of the term with respect to input `field` at the cell, as a callable
        with the term's inputs: term.jacobian("u")(u=a, v=b) -> array (for an implicit source
        term's linearisation, e.g. FiPy's ImplicitSourceTerm coefficient). Cell terms only."""
        if self.at == "faces":
            raise InputError("%s: a face term has no derivative at the cell" % self._what)
        if field not in self.fields:
            raise KeyError(field)
        return Derivative(self, field)

    def __repr__(self):
        return "<pdejit.Term %r on %s %s, inputs %s>" % (self.expr, "x".join(map(str, self.grid)),
                                                         "cells" if self.at == "cells" else "cells' faces",
                                                         ", ".join(self.fields))


class Derivative:
    """d term / d field at the cell (Term.jacobian)."""

    def __init__(self, term, field):
        self.term, self.field = term, field
        self.fields, self.shape, self.cells, self.dim = term.fields, term.shape, term.cells, term.dim
        self._what = "%s.jacobian(%r)" % (term._what, field)
        self._name = field.encode()

    def _device_handle(self, typestr="<f8"):
        return self.term._device_handle(typestr)

    def __repr__(self):
        return "<pdejit.Derivative d/d%s of %r on %s cells>" % (self.field, self.term.expr, "x".join(map(str, self.term.grid)))

    def __call__(self, out=None, t=0.0, **inputs):
        term = self.term
        if _on_device(self, inputs, (out,)):
            with term._lock:
                ptrs, optr, out, typestr = _DeviceInputs.gather(self, inputs, out)
                t = _number(t, "t")
                _check(lib.pj_term_jacobian(term._device_handle(typestr), self._name, ptrs, t, optr, term._err,
                                            _ERR_LEN), term._err)
            return out
        arrays, ptrs, out = _Inputs.gather(self, inputs, out)
        t = _number(t, "t")
        with term._lock:
            status = lib.pj_term_jacobian(term._h, self._name, ptrs, t, ffi.cast("double *", ffi.from_buffer(out)),
                                          term._err, _ERR_LEN)
            _check(status, term._err)
        return out
