"""_run.py — what Simulation.run reports while it goes (pj_run_options' on_monitor and on_progress):
the monitor rows kept for Simulation.monitor_history(), the user's on_monitor and on_progress
callbacks, and progress=True (a tqdm bar when tqdm is installed, else a line on stderr)."""
import sys
import time

import numpy as np

from ._pdejit_cffi import ffi, lib


class MonitorHistory:
    """The monitor rows of a simulation's runs, as monitor.csv has them: t, step, then each monitor."""

    def __init__(self):
        self._t, self._step, self._columns = [], [], {}

    def add(self, t, step, values):
        n = len(self._t)
        for name, value in values.items():
            self._columns.setdefault(name, [float("nan")] * n).append(value)
        for name, column in self._columns.items():
            if len(column) == n:  # a monitor this row has not (a hot swap changed them)
                column.append(float("nan"))
        self._t.append(t)
        self._step.append(step)

    def arrays(self):
        out = {"t": np.array(self._t, dtype=np.float64), "step": np.array(self._step, dtype=np.int64)}
        out.update((name, np.array(column, dtype=np.float64)) for name, column in self._columns.items())
        return out


class _Bar:
    """progress=True: a tqdm bar over simulated time when tqdm can be imported, else a line on
    stderr (rewritten in place on a terminal, one every few seconds otherwise)."""

    def __init__(self, name):
        self._name, self._bar, self._t = name, None, None
        self._tty = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
        self._last = 0.0

    def __call__(self, t, t_end):
        if self._bar is None and self._t is None:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            self._t = t
            if tqdm is not None:
                self._bar = tqdm(total=t_end, initial=t, desc=self._name, unit="t", unit_scale=True)
        if self._bar is not None:
            self._bar.update(t - self._t)
            self._t = t
            return
        now = time.monotonic()
        last = t >= t_end
        if not last and now - self._last < (0.2 if self._tty else 3.0):
            return
        self._last = now
        line = "%s: t = %.6g of %.6g (%.0f%%)" % (self._name, t, t_end, 100 * t / t_end if t_end > 0 else 100)
        sys.stderr.write(("\r" + line + ("\n" if last else "")) if self._tty else line + "\n")
        sys.stderr.flush()

    def close(self):
        if self._bar is not None:
            self._bar.close()


class RunCallbacks:
    """The context of one run's C callbacks: keeps the rows, calls the user's functions, and holds
    the first exception they raise (the run then stops as interrupted, and run() raises it)."""

    def __init__(self, sim, on_monitor, on_progress, progress):
        for what, fn in (("on_monitor", on_monitor), ("on_progress", on_progress)):
            if fn is not None and not callable(fn):
                raise TypeError("%s must be callable" % what)
        self.sim = sim
        self.on_monitor, self.on_progress = on_monitor, on_progress
        self.bar = _Bar("pdejit %s" % sim.problem.name) if progress else None
        self.error = None
        self.handle = ffi.new_handle(self)

    def install(self, options):
        """Fills a pj_run_options' callback members (the handle lives as long as this object)."""
        options.on_monitor = lib.pdejit_py_on_monitor
        options.monitor_ctx = self.handle
        if self.on_progress is not None or self.bar is not None:
            options.on_progress = lib.pdejit_py_on_progress
            options.progress_ctx = self.handle

    def close(self):
        if self.bar is not None:
            self.bar.close()

    def _guarded(self, fn, *args):
        if self.error is not None:
            return 1
        try:
            fn(*args)
            return 0
        except BaseException as e:  # KeyboardInterrupt too: the run stops, run() raises it
            self.error = e
            return 1

    def monitor(self, t, step, n, names, values):
        row = {ffi.string(names[i]).decode(): values[i] for i in range(n)}
        self.sim._history.add(t, step, row)
        if self.on_monitor is None:
            return 0
        return self._guarded(self.on_monitor, t, row)

    def progress(self, t, t_end):
        r = 0
        if self.bar is not None:
            r = self._guarded(self.bar, t, t_end)
        if self.on_progress is not None and not r:
            r = self._guarded(self.on_progress, t, t_end)
        return r


@ffi.def_extern()
def pdejit_py_on_monitor(ctx, t, step, n, names, values):
    return ffi.from_handle(ctx).monitor(t, step, n, names, values)


@ffi.def_extern()
def pdejit_py_on_progress(ctx, t, t_end, steps):
    return ffi.from_handle(ctx).progress(t, t_end)
