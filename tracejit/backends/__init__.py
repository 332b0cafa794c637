"""Backends, registered by name: ``reference`` (NumPy) and ``cpu`` (LLVM).

A backend is a *target* of the compile driver (``compiler/driver.py``), which is
handed the target and never imports it. A target has:

- ``plans``: False when it runs the Program as traced (the reference interpreter,
  so that it checks every compiler stage); then the driver runs no stage.
- ``can_lower(eqn)`` / ``can_reduce(eqn)``: what its fused kernels can compute.
- ``build(optimized, *, name)``: the driver's ``Optimized`` result -> an executable
  (a callable on NumPy arrays with ``program``, ``timings`` and ``kernels``). It
  compiles everything, loop bodies included: an executable never compiles while it runs.
"""
from __future__ import annotations

_BACKENDS: dict = {}


def register_backend(name: str, backend) -> None:
    _BACKENDS[name] = backend


def get_backend(name: str):
    if name not in _BACKENDS:
        _load(name)
    try:
        return _BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; available: {sorted(_BACKENDS) or ['reference', 'cpu']}") from None


def _load(name):
    if name == "reference":
        from tracejit.backends import reference  # noqa: F401
    elif name == "cpu":
        try:
            from tracejit.backends.cpu import backend  # noqa: F401
        except ImportError:
            # The LLVM backend is not built yet: run the reference interpreter.
            from tracejit.backends import reference
            register_backend("cpu", reference.BACKEND)
