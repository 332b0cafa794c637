"""Control-flow bodies (cond branches, while/scan bodies) as compiled code.

The control-flow primitives run their sub-programs through
``tracejit.ops.control_flow.run_program``. Inside a CPU executable we route
that hook to executables compiled from each sub-program (cached per
sub-program), so a loop body runs as fused native kernels; elsewhere (the
reference backend, eager calls) it stays the NumPy interpreter.
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

_state = threading.local()
_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_installed = False
_previous = None


def _compiled(program):
    exe = _cache.get(program)
    if exe is None:
        with _lock:
            exe = _cache.get(program)
            if exe is None:
                from tracejit.backends.cpu.backend import BACKEND
                exe = BACKEND.compile(program, name="body")
                _cache[program] = exe
    return exe


def _runner(program, consts, args):
    if not getattr(_state, "active", False):
        return _previous(program, consts, args)
    exe = _compiled(program)
    avals = program.in_avals
    values = [np.asarray(v, dtype=a.dtype) if not (isinstance(v, np.ndarray) and v.dtype == a.dtype) else v
              for v, a in zip([*consts, *args], avals)]
    return exe(*values)


def install() -> None:
    """Route control-flow sub-programs through the compiler while CPU steps run."""
    global _installed, _previous
    if _installed:
        return
    try:
        from tracejit.ops import control_flow
    except ImportError:
        return
    if not hasattr(control_flow, "set_program_runner"):
        return
    _previous = control_flow.set_program_runner(_runner)
    _installed = True


class compiled_bodies:
    """Context manager: sub-programs run compiled on this thread."""

    def __enter__(self):
        self._prev = getattr(_state, "active", False)
        _state.active = True

    def __exit__(self, *exc):
        _state.active = self._prev
