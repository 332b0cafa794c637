"""Compile a Program with the configured backend."""
from __future__ import annotations

import time

from tracejit.backends import get_backend


def compile_program(program, *, backend: str = "cpu", name: str = "function", donate_argnums=()):
    """Compile ``program``; returns ``(executable, timings_ms)``."""
    t0 = time.perf_counter()
    executable = get_backend(backend).compile(program, name=name, donate_argnums=donate_argnums)
    timings = getattr(executable, "timings", None) or {"compile_ms": (time.perf_counter() - t0) * 1e3}
    return executable, dict(timings)


def optimize_text(program, *, backend: str = "cpu") -> str:
    """The program as the backend will run it."""
    b = get_backend(backend)
    describe = getattr(b, "optimized_text", None)
    return describe(program) if describe else str(program)
