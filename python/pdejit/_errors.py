"""_errors.py — the exceptions of the package and the mapping from the C API's pj_status."""


class Error(Exception):
    """Base class of pdejit's errors; `status` is the C API's pj_status number (or None)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class InputError(Error, ValueError):
    """A bad argument (PJ_ERR_INPUT without a problem text involved)."""


class ProblemError(InputError):
    """A problem text (or a redefinition, or a Term expression) that does not compile: the message
    is the compiler's FILE:LINE:COL diagnostics, each with its source line and a caret."""

    @property
    def diagnostics(self):
        return self.args[0]


class RunError(Error, RuntimeError):
    """The run failed: a NaN or an infinity (the message names step, time, field and cell)."""


class BackendError(Error, RuntimeError):
    """The back end could not start or compile."""


class UnavailableError(BackendError):
    """The back end cannot run on this machine (backend="cuda" without a GPU)."""


class UnsupportedError(BackendError):
    """The back end lacks a capability the problem or the call needs: the message names both
    ("the cuda back end cannot solve implicit schemes or steady problems yet (bdf2): use --backend
    cpu")."""


class Interrupted(Error):
    """Simulation.interrupt() stopped advance() or run() at a step boundary."""


_BY_STATUS = {1: RunError, 2: InputError, 3: BackendError, 4: MemoryError, 5: UnavailableError, 6: Interrupted,
               7: UnsupportedError}


def raise_status(status, message):
    """Raises the exception of a pj_status (not PJ_OK) with `message`."""
    cls = _BY_STATUS.get(status, Error)
    if cls is MemoryError:
        raise MemoryError(message)
    raise cls(message, status)
