"""errors.py - the exceptions the package raises.

Every failure of the runtime's C API arrives as a status code and a message;
the message is passed on unchanged (it names the tensor and says expected
vs. found), and the code picks the class. Compiler failures carry torsorc's
located diagnostics (`model.tsr:12:9: error: ...` with the caret line).
"""


class TorsorError(Exception):
    """Base class of every Torsor error. `code` is the runtime status code
    (0 when the error did not come from the runtime)."""

    code = 0

    def __init__(self, message, code=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class CompileError(TorsorError):
    """torsorc rejected the model. `diagnostics` holds its stderr verbatim
    (file:line:col: error: ... with a caret line); `command` the argv."""

    def __init__(self, message, diagnostics="", command=()):
        super().__init__(message)
        self.diagnostics = diagnostics
        self.command = list(command)


class InvalidArgumentError(TorsorError, ValueError):
    """Wrong name, rank, extent, dtype or value (TORSOR_INVALID_ARGUMENT)."""

    code = 1


class TorsorIOError(TorsorError, OSError):
    """Missing, unreadable or malformed file (TORSOR_IO_ERROR)."""

    code = 2


class AbiError(TorsorError):
    """The model .so does not match this runtime (TORSOR_ABI_ERROR)."""

    code = 3


class UnavailableError(TorsorError):
    """Feature or device not in this build (TORSOR_UNAVAILABLE)."""

    code = 4


class FailedPreconditionError(TorsorError, RuntimeError):
    """E.g. a run before every input is bound (TORSOR_FAILED_PRECONDITION)."""

    code = 5


class DeviceError(TorsorError):
    """The CUDA driver failed; the message names the driver call and what
    was being done (TORSOR_DEVICE_ERROR)."""

    code = 6


class OutOfMemoryError(TorsorError, MemoryError):
    """An allocation failed: a file, a tensor, or a buffer of the compiled
    model; the message says how much and for what (TORSOR_OUT_OF_MEMORY)."""

    code = 7


class TorsorWarning(UserWarning):
    """Something Torsor did for you that you may not want: a dtype
    conversion (a copy), or a result with no gradient from a tensor that
    requires one. Silence one with warnings.filterwarnings, or make them
    errors with warnings.simplefilter("error", torsor.TorsorWarning)."""


_BY_CODE = {c.code: c for c in (InvalidArgumentError, TorsorIOError, AbiError,
                                UnavailableError, FailedPreconditionError,
                                DeviceError, OutOfMemoryError)}


# The runtime's messages are written for its C API and the torsor-run CLI;
# from Python, the same fixes are Python calls.
_PYTHON_FIXES = [
    ("turn them off with --no-check-groups or torsorModuleSetCheckGroups",
     "turn them off with m.set_check_groups(False)"),
    ("compile it with torsorc --grad", "compile it with torsor.compile(..., grad=True)"),
    ("bind single arrays with --param NAME=FILE.npy",
     "or bind arrays with m.set_params({name: array})"),
]


def pythonic(message):
    """`message` with the CLI flags it suggests replaced by Python calls."""
    import re
    for old, new in _PYTHON_FIXES:
        message = message.replace(old, new)
    return re.sub(r"compile the model with --dtype=(f32|f64)",
                  r"compile it with torsor.compile(..., dtype='\1')", message)


def from_status(code, message):
    """The exception for a runtime status code and message (CLI flags in
    the message replaced by the Python calls that do the same)."""
    return _BY_CODE.get(code, TorsorError)(pythonic(message), code)
