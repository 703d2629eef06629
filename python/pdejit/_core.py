"""_core.py — problems and simulations over the C API (pj_problem_*, pj_sim_*): compile(),
schemes(), Problem, Simulation, its params and its fields as zero-copy NumPy arrays (a run's
callbacks and monitor rows: _run.py)."""
import collections
import contextlib
import os
import threading
import warnings

import numpy as np

from ._errors import Error, InputError, ProblemError, raise_status
from ._pdejit_cffi import ffi, lib
from ._run import MonitorHistory, RunCallbacks

_ERR_LEN = 1024

RunResult = collections.namedtuple("RunResult", "steps t seconds snapshots")
# The implicit solver's counts since the simulation was made (pj_solver_stats): steps accepted and
# rejected, Newton and linear iterations, the last step's, the true residual norm of the last solve
# (as PETSc's -snes_monitor prints it), Jacobian assemblies and their seconds, the last step's dt,
# whether it is a steady solve or adaptive, the PETSc options no solver used, a note ("" or why the
# scheme runs otherwise than its name says), and for a steady solve that Newton from the initial
# fields could not finish, the pseudo-time steps of the continuation that did and their Newton
# iterations (0 and 0 where Newton alone converged).
SolverStats = collections.namedtuple(
    "SolverStats", "steps rejected newton linear last_newton last_linear last_residual jacobians "
    "seconds_jacobian last_dt steady adaptive unused_options note pseudo_steps pseudo_newton")


def _str(cdata):
    return ffi.string(cdata).decode("utf-8", "replace") if cdata != ffi.NULL else None


def _num(value):
    """A float as a repr shows it: the shortest text that reads back as it, without a trailing .0."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _take_diagnostics(pp, fallback):
    """The malloc'd diagnostics of a failed compile as a str (freed here)."""
    if pp[0] == ffi.NULL:
        return fallback
    text = ffi.string(pp[0]).decode("utf-8", "replace")
    lib.free(pp[0])
    return text.rstrip("\n")


def _check(status, errbuf=None, what=None):
    if status != lib.PJ_OK:
        message = ffi.string(errbuf).decode("utf-8", "replace") if errbuf is not None else ""
        if not message:
            message = _str(lib.pj_strerror(status))
        raise_status(status, (what + ": " if what else "") + message)


def _number(value, what):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError("%s must be a number, not %s" % (what, type(value).__name__))
    return float(value)


def schemes():
    """The time schemes compile(scheme=...) and a file's `scheme =` take: the library's table
    (pj_scheme_names), the list `pdejit help run` prints."""
    return tuple(_str(lib.pj_scheme_names()).split(", "))


def compile(source, scheme=None, name=None, consts=None):
    """Compiles a problem: `source` is the problem text, or the path of a .pde file (a
    pathlib.Path, or a str of one line naming an existing file). `scheme` overrides the file's
    time scheme: one of schemes() (an unknown name raises ProblemError listing them). `consts` ({name: value}) sets consts instead of the values written, wherever
    they are used, the mesh included (`pdejit run --set` on a const). Raises ProblemError with
    the diagnostics."""
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source
                                           and (os.path.isfile(source) or source.endswith(".pde"))):
        path = os.fspath(source)
        with open(path, "rb") as f:
            data = f.read()
        name = name or path
    elif isinstance(source, (str, bytes)):
        data = source.encode("utf-8") if isinstance(source, str) else bytes(source)
        name = name or "<string>"
    else:
        raise TypeError("compile() takes a problem text or a path, not %s" % type(source).__name__)
    if scheme is not None and not isinstance(scheme, str):
        raise TypeError("scheme must be a str")
    if consts is not None and not isinstance(consts, collections.abc.Mapping):
        raise TypeError("consts must be a mapping of const names to numbers")
    out = ffi.new("pj_problem **")
    diags = ffi.new("char **")
    c_scheme = scheme.encode() if scheme else ffi.NULL
    if consts:
        keep = [ffi.new("char[]", str(k).encode()) for k in consts]
        names = ffi.new("const char *[]", keep)
        values = ffi.new("double[]", [_number(v, "const %s" % k) for k, v in consts.items()])
        status = lib.pj_problem_compile_consts(name.encode(), data, len(data), c_scheme, len(keep), names, values,
                                               out, diags)
    else:
        status = lib.pj_problem_compile_scheme(name.encode(), data, len(data), c_scheme, out, diags)
    if status != lib.PJ_OK:
        text = _take_diagnostics(diags, _str(lib.pj_strerror(status)))
        if status == lib.PJ_ERR_MEMORY:
            raise MemoryError(text)
        raise ProblemError(text, status)
    _take_diagnostics(diags, None)  # warnings: not kept
    return Problem(ffi.gc(out[0], lib.pj_problem_free), name, data)


class Mesh:
    """problem.mesh and sim.mesh: the problem's mesh. `shape` is NumPy's order, a field's
    ((nz, ny, nx), (ny, nx) or (nx,)); `n`, `length`, `origin` and `h` (the mean spacing,
    length / n) are per axis (as many as the dimension); `geometry` is "grid", "cylindrical" or
    "spherical", and `axes` the coordinates' names, ("x", "y", "z")[:dim], ("r", "z") or ("r",).
    The coordinates by name (`x`, `y`, `z`; `r`, `z` on a radial mesh) are the cell centres, the
    values `x` has in expressions and the --dump columns: origin + (i + 1/2) * h, or on an axis
    with listed or stretched widths the middle of each cell's faces; read-only float64 arrays
    shaped like a field (broadcast views: no memory of their own; np.array(mesh.x) copies).
    `faces(axis)` gives an axis's n + 1 face positions, `uniform` whether each axis has equal
    widths. A mesh without a coordinate has no attribute of it (`mesh.z` in 2D raises
    AttributeError)."""

    def __init__(self, problem):
        h = problem._h
        self.dim = problem.dim
        self.n = tuple(int(lib.pj_problem_n(h, a)) for a in range(self.dim))
        self.length = tuple(lib.pj_problem_length(h, a) for a in range(self.dim))
        self.origin = tuple(lib.pj_problem_origin(h, a) for a in range(self.dim))
        self.h = tuple(L / n for L, n in zip(self.length, self.n))
        self.shape = tuple(reversed(self.n))
        self.cells = int(np.prod(self.n))
        self.geometry = ("grid", "cylindrical", "spherical")[lib.pj_problem_geometry(h)]
        self.axes = tuple(("xyz" if self.geometry == "grid" else "rz")[:self.dim])
        self._lines, self._faces = [], []
        for a in range(self.dim):
            line, faces = np.empty(self.n[a]), np.empty(self.n[a] + 1)
            lib.pj_problem_centres(h, a, ffi.from_buffer("double[]", line), ffi.from_buffer("double[]", faces))
            line.flags.writeable = faces.flags.writeable = False
            self._lines.append(line)
            self._faces.append(faces)
        self.uniform = tuple(bool(np.allclose(np.diff(f), self.h[a], rtol=1e-12, atol=0)) for a, f in enumerate(self._faces))

    def faces(self, axis):
        """The n + 1 face positions along axis (0, 1, 2 or its name), read-only."""
        return self._faces[self._axis(axis)]

    def _axis(self, axis):
        if isinstance(axis, str):
            if axis not in self.axes and self.geometry == "grid":
                raise AttributeError("a %dD mesh has no %s axis" % (self.dim, axis))
            if axis not in self.axes:
                raise AttributeError("a %s mesh has no %s axis: its coordinates are %s" % (
                    self.geometry, axis, ", ".join(self.axes)))
            return self.axes.index(axis)
        if not 0 <= axis < self.dim:
            raise IndexError("axis %r of a %dD mesh" % (axis, self.dim))
        return axis

    def _centres(self, name):
        axis = self._axis(name)
        along = [1] * self.dim
        along[self.dim - 1 - axis] = self.n[axis]  # the field's axes are (z, y, x): x varies fastest
        return np.broadcast_to(self._lines[axis].reshape(along), self.shape)

    x = property(lambda self: self._centres("x"), doc="The cells' x centres, shaped like a field.")
    y = property(lambda self: self._centres("y"), doc="The cells' y centres, shaped like a field (2D, 3D).")
    z = property(lambda self: self._centres("z"), doc="The cells' z centres, shaped like a field (3D; r-z meshes).")
    r = property(lambda self: self._centres("r"), doc="The cells' r centres, shaped like a field (radial meshes).")

    def __repr__(self):
        if self.geometry != "grid" or not all(self.uniform):
            return "<pdejit.Mesh %s(%s)>" % (self.geometry, ", ".join(
                "n%s=%d, %s=%s..%s%s" % (c, n, c, _num(f[0]), _num(f[-1]), "" if u else " (non-uniform)")
                for c, n, f, u in zip(self.axes, self.n, self._faces, self.uniform)))
        return "<pdejit.Mesh grid(%s)>" % ", ".join(
            ["n%s=%d" % (c, n) for c, n in zip("xyz", self.n)] + ["L%s=%s" % (c, _num(L)) for c, L in zip("xyz", self.length)]
            + ["%s0=%s" % (c, _num(o)) for c, o in zip("xyz", self.origin)])


class Problem:
    """A compiled problem: its fields, params, mesh (a Mesh), monitors (their names), arrays
({name: N} of `field eta[N]`, whose members are the fields eta1 ... etaN) and time settings.
    simulate() makes simulations of it (each keeps the problem alive)."""

    def __init__(self, handle, name, text):
        self._h = handle
        self.name = name
        self.text = text.decode("utf-8", "replace")
        h = handle
        self.dim = lib.pj_problem_dim(h)
        self.cells = lib.pj_problem_cells(h)
        self.fields = tuple(_str(lib.pj_problem_field_name(h, i)) for i in range(lib.pj_problem_field_count(h)))
        names = [_str(lib.pj_problem_param_name(h, i)) for i in range(lib.pj_problem_param_count(h))]
        self.params = {n: lib.pj_problem_param(h, n.encode()) for n in names}
        dt, until, steps = lib.pj_problem_dt(h), lib.pj_problem_until(h), lib.pj_problem_steps(h)
        self.dt = dt if dt > 0 else None
        self.until = until if until >= 0 else None
        self.steps = steps if steps >= 0 else None
        self.has_output = bool(lib.pj_problem_has_output(h))
        self.has_monitor = bool(lib.pj_problem_has_monitor(h))  # run() writes monitor.csv in its out_dir
        self.monitors = tuple(_str(lib.pj_problem_monitor_name(h, i)) for i in range(lib.pj_problem_monitor_count(h)))
        self.arrays = {_str(lib.pj_problem_array_name(h, i)): int(lib.pj_problem_array_size(h, i))
                       for i in range(lib.pj_problem_array_count(h))}
        self.mesh = Mesh(self)

    @property
    def shape(self):
        """The mesh as a NumPy shape: (nz, ny, nx), (ny, nx) or (nx,)."""
        return tuple(int(lib.pj_problem_n(self._h, a)) for a in reversed(range(self.dim)))

    @property
    def length(self):
        """The domain's extent along x, y, z (as many as the dimension)."""
        return tuple(lib.pj_problem_length(self._h, a) for a in range(self.dim))

    def simulate(self, backend="cpu", threads=0, precision="double", fast_math=False, seed=0,
                 solver_options=None):
        """A simulation at t = 0 on `backend` ("cpu": LLVM JIT, "interp": the interpreter,
        "cuda": the GPU). threads: 0 for all cores; precision: "double" or "single"; seed: the
        key of rand() and randn() (0 to 2**64 - 1); solver_options: PETSc options for implicit
        schemes ("-ksp_type cg -pc_type gamg"), after the file's solver statement."""
        return Simulation(self, backend, threads, precision, fast_math, seed, solver_options)

    def __repr__(self):
        return "<pdejit.Problem %s: %dD mesh %s, fields %s, params %s>" % (
            self.name, self.dim, self.shape, ", ".join(self.fields) or "none", ", ".join(self.params) or "none")


class _Params(collections.abc.MutableMapping):
    """sim.params: the simulation's params by name; assigning one never recompiles."""

    def __init__(self, sim):
        self._sim = sim

    def __getitem__(self, name):
        if name not in self._sim.problem.params:
            raise KeyError(name)
        return lib.pj_sim_param(self._sim._h, name.encode())

    def __setitem__(self, name, value):
        if not isinstance(name, str) or name not in self._sim.problem.params:
            raise KeyError(name)
        value = _number(value, "param %s" % name)
        with self._sim._lock_unless_callback():
            _check(lib.pj_sim_set_param(self._sim._h, name.encode(), value), what="param %s" % name)

    def __delitem__(self, name):
        raise TypeError("params cannot be removed")

    def __iter__(self):
        return iter(self._sim.problem.params)

    def __len__(self):
        return len(self._sim.problem.params)

    def __repr__(self):
        if self._sim.closed:
            return "<pdejit params of a closed Simulation>"
        return repr(dict(self))


class DeviceArray:
    """A field on the GPU, without a copy: __cuda_array_interface__ (version 3) lets CuPy or
    Numba wrap it (cupy.asarray(sim.fields["u"])). Keeps its simulation alive."""

    def __init__(self, sim, ptr, shape, strides, dtype):
        self._keep = sim._alive()  # the C simulation stays until this goes (Simulation.close)
        self.shape, self.strides, self.dtype = shape, strides, np.dtype(dtype)
        self.__cuda_array_interface__ = {"shape": shape, "strides": strides, "typestr": self.dtype.str,
                                         "data": (ptr, False), "version": 3, "stream": None}

    def __repr__(self):
        return "<pdejit.DeviceArray %s %s on the GPU>" % (self.shape, self.dtype.name)


class _HostArrayOwner:
    """The base object of a field's NumPy array: describes the memory and keeps the C simulation
    (and so the buffers) alive while any array on it exists, Simulation.close() or not."""

    def __init__(self, sim, ptr, shape, strides, dtype):
        self._keep = sim._alive()
        self.__array_interface__ = {"shape": shape, "strides": strides, "typestr": np.dtype(dtype).str,
                                    "data": (ptr, False), "version": 3}


class _Fields(collections.abc.Mapping):
    """sim.fields: each field's current values where they live, without a copy (a NumPy array
    of the interior cells, shape (nz, ny, nx) / (ny, nx) / (nx,); on the GPU a DeviceArray).
    Writes go through to the simulation. The schemes swap buffers while stepping: take the
    array again after advance(), run() or redefine(). An array's name (`field eta[N]`) gives its
    members stacked on a leading axis, shape (N, ...): a read-only copy (members(name) gives the
    members' own arrays, which take writes). Iterating names the fields (the members)."""

    def __init__(self, sim):
        self._sim = sim

    def members(self, name):
        """The members of the array `name` (`field name[N]`), name1 ... nameN, as a list of the
        fields' own arrays (views: writes go through)."""
        n = self._sim.problem.arrays.get(name) if isinstance(name, str) else None
        if n is None:
            raise KeyError(name)
        return [self[name + str(k)] for k in range(1, n + 1)]

    def __getitem__(self, name):
        if isinstance(name, str) and name in self._sim.problem.arrays:
            members = self.members(name)
            if isinstance(members[0], DeviceArray):
                return tuple(members)  # no stacking on the GPU without a copy there: one per member
            stacked = np.stack(members)
            stacked.flags.writeable = False
            return stacked
        if not isinstance(name, str) or name not in self._sim.problem.fields:
            raise KeyError(name)
        view = ffi.new("pj_field_view *")
        _check(lib.pj_sim_field_view(self._sim._h, name.encode(), view), what="field %s" % name)
        dim = self._sim.problem.dim
        shape = tuple(int(view.shape[a]) for a in reversed(range(dim)))
        strides = tuple(int(view.strides[a]) * view.elem_size for a in reversed(range(dim)))
        dtype = np.float64 if view.elem_size == 8 else np.float32
        ptr = int(ffi.cast("uintptr_t", view.data))
        if view.on_device:
            return DeviceArray(self._sim, ptr, shape, strides, dtype)
        return np.asarray(_HostArrayOwner(self._sim, ptr, shape, strides, dtype))

    def __iter__(self):
        return iter(self._sim.problem.fields)

    def __len__(self):
        return len(self._sim.problem.fields)

    def __contains__(self, name):
        return name in self._sim.problem.fields or name in self._sim.problem.arrays

    def __repr__(self):
        sim = self._sim
        return "<pdejit fields %s of %s: %s %s%s>" % (
            ", ".join(sim.problem.fields) or "none", sim.problem.name, sim.problem.shape,
            "float64" if sim.precision == "double" else "float32",
            ", closed" if sim.closed else " on %s" % sim.backend)


class _Interruptible:
    """Around a stepping call on the main thread: SIGINT stops it at a step boundary (the
    extension's C handler calls pj_sim_interrupt); KeyboardInterrupt is raised after it returns.
    Elsewhere (other threads, or SIGINT not handled by Python) it does nothing."""

    def __init__(self, sim):
        self._sim = sim
        self._on = False
        self.caught = False

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            import signal
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                self._on = lib.pdejit_py_sigint_begin(self._sim._h) == 0
        return self

    def __exit__(self, *exc):
        if self._on:
            self.caught = bool(lib.pdejit_py_sigint_end())
        return False


class Simulation:
    """A simulation of a problem on one back end (Problem.simulate). advance() and run() release
    the GIL while they step; redefine() and interrupt() may be called from another thread
    meanwhile (the swap then happens between two steps); another advance(), run() or a param
    change waits for the stepping to end."""

    def __init__(self, problem, backend="cpu", threads=0, precision="double", fast_math=False, seed=0,
                 solver_options=None):
        if not isinstance(problem, Problem):
            raise TypeError("Simulation needs a Problem (pdejit.compile)")
        if not isinstance(backend, str):
            raise TypeError("backend must be a str")
        if precision not in ("double", "single"):
            raise InputError("precision must be 'double' or 'single', not %r" % (precision,))
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or not 0 <= threads <= 1024:
            raise InputError("threads must be an int from 0 (all cores) to 1024, not %r" % (threads,))
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**64:
            raise InputError("seed must be an int from 0 to 2**64 - 1, not %r" % (seed,))
        if solver_options is not None and not isinstance(solver_options, str):
            raise TypeError("solver_options must be a str of PETSc options (\"-ksp_type cg\")")
        be = ffi.new("pj_backend *")
        if lib.pj_backend_by_name(backend.encode(), be) < 0:
            raise InputError("unknown back end %r; back ends are %s" % (backend, _str(lib.pj_backend_names())))
        opts = ffi.new("pj_sim_options *")
        opts.backend = be[0]
        opts.single = precision == "single"
        opts.threads = int(threads)
        opts.fast_math = bool(fast_math)
        opts.seed = int(seed)
        keep = ffi.new("char[]", solver_options.encode()) if solver_options else ffi.NULL
        opts.solver_options = keep  # implicit schemes: PETSc options after the solver statement's
        out = ffi.new("pj_sim **")
        err = ffi.new("char[]", _ERR_LEN)
        status = lib.pj_sim_create(problem._h, opts, out, err, _ERR_LEN)
        _check(status, err, what="%s back end" % backend)
        self.problem = problem
        self.backend = backend
        self.precision = precision
        self._handle = ffi.gc(out[0], lib.pj_sim_free)
        # what the C simulation needs alive: itself, its problem, the options string it may read
        self._keep = (self._handle, problem, keep)
        self.params = _Params(self)
        self.fields = _Fields(self)
        # the C API lets pj_sim_redefine run beside pj_sim_advance, nothing else: stepping calls
        # (and param changes) take one lock, redefinitions another
        self._step_lock = threading.Lock()
        self._redefine_lock = threading.Lock()
        self._history = MonitorHistory()  # the monitor rows of every run() (monitor_history)
        self._callback_thread = None      # the thread inside a callback of run(), while it is

    def _stepping(self, what):
        """The step lock, for a call that steps or replaces the state; from inside a callback of
        run() (whose thread holds it) an InputError instead of a deadlock."""
        if self._callback_thread == threading.get_ident():
            raise InputError("%s inside a callback of run(): the run is stepping (raise an exception in the "
                             "callback to stop it)" % what)
        return self._step_lock

    def _lock_unless_callback(self):
        """The step lock, or nothing inside a callback of run(): between two steps, on the stepping
        thread, reading monitors and setting params is safe."""
        if self._callback_thread == threading.get_ident():
            return contextlib.nullcontext()
        return self._step_lock

    @property
    def _h(self):
        h = self._handle
        if h is None:
            raise InputError("this Simulation of %s is closed (close() or the end of its with block)" %
                             self.problem.name)
        return h

    @property
    def closed(self):
        return self._handle is None

    def close(self):
        """Frees the C simulation: its fields, kernels and solver (a field array taken before keeps
        its buffer until it goes). Waits for a stepping call on another thread to end; closing twice
        does nothing. Using the simulation afterwards raises InputError ("... is closed")."""
        with self._stepping("close()"), self._redefine_lock:
            self._handle = self._keep = None

    def _alive(self):
        self._h  # raises when closed
        return self._keep

    def __enter__(self):
        self._h  # a closed simulation cannot be entered
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def mesh(self):
        """The problem's Mesh: shape, h, cell centres x, y, z."""
        return self.problem.mesh

    def monitors(self):
        """The file's monitors (`monitor NAME = integral(e) ...`) evaluated at the current state:
        {name: value} in the order written, the numbers `pdejit run` writes to monitor.csv at this
        time ({} when the file has none)."""
        h = self._h
        value = ffi.new("double *")
        err = ffi.new("char[]", _ERR_LEN)
        out = {}
        with self._lock_unless_callback():
            for name in self.problem.monitors:
                _check(lib.pj_sim_monitor(h, name.encode(), value, err, _ERR_LEN), err, what="monitor %s" % name)
                out[name] = value[0]
        return out

    def monitor_history(self):
        """The monitor rows every run() of this simulation took, as monitor.csv has them: {"t": ...,
        "step": ..., NAME: ...} of NumPy arrays (float64; step int64), one entry per monitor time,
        in the order taken. advance() takes none."""
        return self._history.arrays()

    @property
    def t(self):
        return lib.pj_sim_time(self._h)

    @property
    def steps(self):
        return lib.pj_sim_steps(self._h)

    @property
    def rejected(self):
        """Steps the error controller rejected (rk23 or rk45 with adapt; `steps` counts those it
        accepted), or None when the problem does not step so."""
        n = ffi.new("int64_t *")
        if lib.pj_sim_adaptive_stats(self._h, ffi.NULL, n, ffi.NULL, ffi.NULL) != lib.PJ_OK:
            return None
        return n[0]

    @property
    def shape(self):
        return self.problem.shape

    def advance(self, t_end, dt=None):
        """Steps of at most dt (default: the problem's `time dt`) until t_end exactly, the GIL
        released. Raises RunError on a NaN/Inf, Interrupted after interrupt()."""
        t_end = _number(t_end, "t_end")
        if dt is None:
            dt = self.problem.dt
            if dt is None:
                raise InputError("advance: no dt given and the problem has no `time dt =`")
        dt = _number(dt, "dt")
        err = ffi.new("char[]", _ERR_LEN)
        with self._stepping("advance()"), _Interruptible(self) as guard:
            status = lib.pj_sim_advance(self._h, dt, t_end, err, _ERR_LEN)
        if guard.caught and status == lib.PJ_INTERRUPTED:
            raise KeyboardInterrupt("pdejit: stopped at t = %g after step %d" % (self.t, self.steps))
        _check(status, err)

    def solver_stats(self):
        """The implicit solver's counts (SolverStats), or None when the scheme is explicit. `steps`
        counts accepted steps, as `self.steps` does."""
        st = ffi.new("pj_solver_stats *")
        if lib.pj_sim_solver_stats(self._h, st) != lib.PJ_OK:
            return None
        names = _str(st.unused_option_names) or ""
        return SolverStats(st.steps, st.rejected, st.newton, st.linear, st.last_newton, st.last_linear,
                           st.last_residual, st.jacobians, st.seconds_jacobian, st.last_dt, bool(st.steady),
                           bool(st.adaptive), tuple(names.split()), _str(st.note) or "", st.pseudo_steps,
                           st.pseudo_newton)

    def run(self, outputs=True, out_dir=None, dump=None, dt=None, until=None, steps=None, check_every=1,
            no_stability_check=False, checkpoint_every=None, strict_options=False, on_monitor=None,
            on_progress=None, progress=False):
        """A whole run as `pdejit run` makes it: the file's time settings (or dt, until, steps),
        snapshots at the file's output times and monitor.csv in out_dir (default NAME.out in the
        current folder, as the command does) when outputs is true and the file has an output or
        monitor statement,
        the final state as CSV in `dump`, a checkpoint (out_dir/checkpoint.pjc) at each multiple
        of checkpoint_every of simulated time. An explicit scheme whose dt exceeds its stability
        limit raises InputError unless no_stability_check. Returns RunResult(steps, t, seconds,
        snapshots). PETSc options (solver_options, the solver statement) that no solver used are
        named after the run in a warning (UserWarning), or with strict_options=True an InputError
        (as `pdejit run --strict-options`).

        While it runs, on the stepping thread between two steps: on_monitor(t, {name: value}) at
        each monitor time (the row monitor_history() keeps); on_progress(t, t_end) before the
        first step, about every 0.1 s of wall time and at the end; progress=True shows a tqdm bar
        when tqdm is installed, else a line on stderr. A callback may read sim.t, sim.steps,
        sim.fields, sim.monitors() and set params; an exception it raises stops the run at that
        step and run() raises it."""
        o = ffi.new("pj_run_options *", lib.pj_run_options_default())
        keep = []
        o.no_stability_check = bool(no_stability_check)
        if checkpoint_every is not None:
            o.checkpoint_every = _number(checkpoint_every, "checkpoint_every")
            if not o.checkpoint_every > 0:
                raise InputError("checkpoint_every must be > 0")
        if dt is not None:
            o.dt = _number(dt, "dt")
        if until is not None:
            o.until = _number(until, "until")
        if steps is not None:
            if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
                raise InputError("steps must be an int >= 0")
            o.steps = int(steps)
        if isinstance(check_every, bool) or not isinstance(check_every, (int, np.integer)) or check_every < 1:
            raise InputError("check_every must be an int >= 1")
        o.check_every = int(check_every)
        if (outputs and (self.problem.has_output or self.problem.has_monitor)) or checkpoint_every is not None:
            if out_dir is None:
                base = os.path.basename(self.problem.name)
                out_dir = (base[:-4] if base.endswith(".pde") and len(base) > 4 else base) + ".out"
            keep.append(ffi.new("char[]", os.fsencode(out_dir)))
            o.out_dir = keep[-1]
        if dump is not None:
            keep.append(ffi.new("char[]", os.fsencode(dump)))
            o.dump_path = keep[-1]
        result = ffi.new("pj_run_result *")
        err = ffi.new("char[]", _ERR_LEN)
        callbacks = RunCallbacks(self, on_monitor, on_progress, progress)
        callbacks.install(o)
        with self._stepping("run()"), _Interruptible(self) as guard:
            self._callback_thread = threading.get_ident()
            try:
                status = lib.pj_sim_run(self._h, o, result, err, _ERR_LEN)
            finally:
                self._callback_thread = None
                callbacks.close()
        if callbacks.error is not None:
            raise callbacks.error
        if guard.caught and status == lib.PJ_INTERRUPTED:
            raise KeyboardInterrupt("pdejit: stopped at t = %g after step %d" % (self.t, self.steps))
        _check(status, err)
        stats = self.solver_stats()
        if stats is not None and stats.unused_options:
            names = " ".join(stats.unused_options)
            if strict_options:
                raise InputError("PETSc option%s that no solver used: %s" % ("" if len(stats.unused_options) == 1
                                                                             else "s", names))
            warnings.warn("PETSc option%s that no solver used: %s (misspelt, or for a solver this run does not "
                          "have)" % ("" if len(stats.unused_options) == 1 else "s", names), stacklevel=2)
        return RunResult(result.steps, result.t, result.seconds, result.snapshots)

    def resume(self, checkpoint):
        """Loads a checkpoint written by run(checkpoint_every=...) (`pdejit run --resume`): the
        fields, time and step count; the next run() continues that run and ends with the same
        bits as one never stopped. InputError, nothing changed, when it is not a checkpoint of
        this problem, grid, precision, seed and params."""
        err = ffi.new("char[]", _ERR_LEN)
        with self._stepping("resume()"):
            status = lib.pj_sim_resume(self._h, os.fsencode(checkpoint), err, _ERR_LEN)
        _check(status, err)

    def init_from_csv(self, path):
        """Sets the fields named in a CSV of the dump format (run(dump=...), `pdejit run --dump`)
        of the same grid; the others keep their values (`pdejit run --init`)."""
        err = ffi.new("char[]", _ERR_LEN)
        with self._stepping("init_from_csv()"):
            status = lib.pj_sim_init_from_csv(self._h, os.fsencode(path), err, _ERR_LEN)
        _check(status, err)

    def redefine(self, text):
        """Hot swap: func, flux, eq, const or boundary statements replace the running ones (the
        fields keep their state, params keep their values). ProblemError with the diagnostics
        when the text has an error; the simulation then runs on unchanged."""
        if not isinstance(text, str):
            raise TypeError("redefine() takes the text of statements")
        diags = ffi.new("char **")
        if self._callback_thread == threading.get_ident():
            raise InputError("redefine() inside a callback of run(): call it from another thread while the run goes")
        with self._redefine_lock:
            status = lib.pj_sim_redefine(self._h, text.encode("utf-8"), diags)
        if status != lib.PJ_OK:
            message = _take_diagnostics(diags, _str(lib.pj_strerror(status)))
            if status == lib.PJ_ERR_INPUT:
                raise ProblemError(message, status)
            raise_status(status, message)
        _take_diagnostics(diags, None)

    def interrupt(self):
        """Stops advance() or run() (running on another thread) at the next step boundary."""
        lib.pj_sim_interrupt(self._h)

    @property
    def can_swap(self):
        return bool(lib.pj_sim_can_swap(self._h))

    @property
    def info(self):
        """How the back end got ready: backend, device, warning, kernels, from_cache, ms_prepare,
        ms_compiler; and how the explicit steps ran on the host (stepping: threads, temporal
        blocking, tiles; None on the GPU and for implicit schemes)."""
        i = ffi.new("pj_sim_info *")
        lib.pj_sim_get_info(self._h, i)
        return {"backend": _str(i.backend), "device": _str(i.device), "warning": _str(i.warning),
                "kernels": i.kernels, "from_cache": i.from_cache, "ms_prepare": i.ms_prepare,
                "ms_compiler": i.ms_compiler, "stepping": _str(i.stepping)}

    def _repr_png_(self):
        """The picture a notebook shows: the first field (pdejit.plot.png); None when there is none
        to show (no field, closed, a GPU field without CuPy: the notebook then shows the repr)."""
        from .plot import png
        try:
            return png(self) if self.problem.fields and not self.closed else None
        except TypeError:
            return None

    def __repr__(self):
        p = self.problem
        where = "closed" if self.closed else "t=%s after %d steps" % (_num(self.t), self.steps)
        return "<pdejit.Simulation of %s on %s (%s): mesh %s, fields %s, %s>" % (
            p.name, self.backend, self.precision, p.shape, ", ".join(p.fields) or "none", where)


__all__ = ["compile", "schemes", "Problem", "Mesh", "Simulation", "RunResult", "DeviceArray", "Error"]
