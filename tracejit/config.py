"""Global configuration (``tracejit.config``), with environment defaults.

Examples
--------
>>> import tracejit
>>> tracejit.config.update("log_compiles", True)
>>> tracejit.config.log_compiles
True
"""
from __future__ import annotations

import os
import threading


def env_flag(name: str, default: bool = False) -> bool:
    """Environment variable ``name`` as a switch: unset gives ``default``; "", 0, false, no, off are off."""
    v = os.environ.get(name)
    if v is None:
        return default
    return v.strip().lower() not in ("", "0", "false", "no", "off")


class Config:
    """Settings that affect tracing, compilation and diagnostics."""

    _defaults = {
        # Re-derive every type after tracing and after every compiler pass.
        "enable_checks": lambda: env_flag("TRACEJIT_ENABLE_CHECKS"),
        # One log line per compile (function, signature, timings, kernels, cache outcome).
        "log_compiles": lambda: env_flag("TRACEJIT_LOG_COMPILES"),
        # Explain why a function traced again ("argument x changed f32[4] -> f32[8]").
        "explain_cache_misses": lambda: env_flag("TRACEJIT_EXPLAIN_CACHE_MISSES"),
        # Warn when one function compiled more than this many distinct signatures.
        "recompile_warning_threshold": lambda: int(os.environ.get("TRACEJIT_RECOMPILE_WARNING", "8")),
        # Which backend runs jitted programs: "cpu" (LLVM) or "reference" (NumPy interpreter).
        "backend": lambda: os.environ.get("TRACEJIT_BACKEND", "cpu"),
        # Comma-separated pass names whose input and output programs are printed.
        "dump_passes": lambda: os.environ.get("TRACEJIT_DUMP", ""),
        # Worker threads of compiled kernels (0 = one per core).
        "num_threads": lambda: int(os.environ.get("TRACEJIT_NUM_THREADS", "0")),
        # Persistent compile cache directory: "" = on, under $XDG_CACHE_HOME/tracejit or
        # ~/.cache/tracejit; "off" = disabled; anything else = that directory.
        "compilation_cache_dir": lambda: os.environ.get("TRACEJIT_CACHE_DIR", ""),
        # GEMM provider of dot_general steps: "auto" (MKL when installed, else NumPy), "mkl", "numpy".
        "blas": lambda: os.environ.get("TRACEJIT_BLAS", "auto"),
        # What to do when one PRNG key is used twice in a traced function: off / warn / error.
        "key_reuse": lambda: os.environ.get("TRACEJIT_KEY_REUSE", "warn"),
        # Byte budget of the in-process compile cache (every jitted function's executables; least
        # recently used dropped above it): bytes or "512M"/"2G"; 0 = unbounded. See tracejit/jit_cache.py.
        "jit_cache_max_bytes": lambda: os.environ.get("TRACEJIT_JIT_CACHE_MAX_BYTES", "512M"),
    }

    def __init__(self):
        object.__setattr__(self, "_values", {k: f() for k, f in self._defaults.items()})
        object.__setattr__(self, "_lock", threading.Lock())
        object.__setattr__(self, "_version", 0)

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"tracejit.config has no option {name!r}; options: "
                                 f"{sorted(self._values)}") from None

    def __setattr__(self, name, value):
        self.update(name, value)

    def update(self, name: str, value) -> None:
        """Set option ``name`` (the JAX-style spelling ``config.update``)."""
        if name.startswith("jax_"):
            name = name[4:]
        if name not in self._values:
            raise AttributeError(f"tracejit.config has no option {name!r}; options: {sorted(self._values)}")
        with self._lock:
            self._values[name] = value
            object.__setattr__(self, "_version", self._version + 1)

    def compile_key(self) -> tuple:
        """Options that change generated programs, part of every cache key."""
        return (self._values["backend"], self._values["num_threads"] == 1)

    def __repr__(self):
        return "Config(" + ", ".join(f"{k}={v!r}" for k, v in sorted(self._values.items())) + ")"


config = Config()
