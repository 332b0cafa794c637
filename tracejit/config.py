"""Global configuration (``tracejit.config``), with environment defaults.

``config.update(name, value)`` sets an option for every thread (``jax_``
prefixes are accepted, as in ``jax.config.update("jax_debug_nans", True)``).
The JAX-style context managers of :mod:`tracejit.config_flags`
(``tracejit.debug_nans(True)``, ``tracejit.disable_jit()``, ...) override an
option for the current thread only, nested, as JAX's do.

Examples
--------
>>> import tracejit
>>> tracejit.config.update("log_compiles", True)
>>> tracejit.config.log_compiles
True
>>> tracejit.config.update("log_compiles", False)
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
        # GEMM provider of dot_general steps: "auto" (the fastest per dtype and shape class, measured
        # once per CPU model; backends/cpu/blas.py, blas.report()) or one forced for every product:
        # "numpy", "openblas" (NumPy's, via ctypes), "mkl", "system". Checked at first use.
        "blas": lambda: os.environ.get("TRACEJIT_BLAS", "auto"),
        # Start compiled MPI collectives early and wait for them late, so that independent kernels run
        # while their data moves (compiler/overlap.py); off: each collective is one blocking call.
        "overlap_collectives": lambda: env_flag("TRACEJIT_OVERLAP_COLLECTIVES", True),
        # What to do when one PRNG key is used twice in a traced function: off / warn / error.
        "key_reuse": lambda: os.environ.get("TRACEJIT_KEY_REUSE", "warn"),
        # Byte budget of the in-process compile cache (every jitted function's executables; least
        # recently used dropped above it): bytes or "512M"/"2G"; 0 = unbounded. See tracejit/jit_cache.py.
        "jit_cache_max_bytes": lambda: os.environ.get("TRACEJIT_JIT_CACHE_MAX_BYTES", "512M"),
        # Convert Python loops / ifs over traced values into compiled control flow (tracejit/autograph).
        "autograph": lambda: env_flag("TRACEJIT_AUTOGRAPH", True),
        # JAX's flags (issue 14); tracejit/config_flags.py documents what each does here.
        "disable_jit": lambda: env_flag("JAX_DISABLE_JIT"),
        "debug_nans": lambda: env_flag("JAX_DEBUG_NANS"),
        "debug_infs": lambda: env_flag("JAX_DEBUG_INFS"),
        "no_tracing": lambda: False,
        "no_execution": lambda: False,
        # JAX's x64 switch: True (default) keeps NumPy 2's dtypes (JAX's x64 mode); False is JAX's
        # default 32-bit mode, the porting switch (tracejit/core/dtypes.py: narrow).
        "enable_x64": lambda: env_flag("JAX_ENABLE_X64", True),
        "numpy_dtype_promotion": lambda: "standard",
        "numpy_rank_promotion": lambda: "allow",
        "check_tracer_leaks": lambda: False,
        "default_prng_impl": lambda: "threefry2x32",
        "legacy_prng_key": lambda: "allow",
        "enable_custom_prng": lambda: False,
        "debug_key_reuse": lambda: False,
        "thread_guard": lambda: False,
        "default_device": lambda: None,
        "platforms": lambda: "cpu",
        "platform_name": lambda: "cpu",
    }
    # Options whose value makes Jitted.__call__ take the slow path (tracejit/config_flags.py).
    _JIT_HOOKS = frozenset(["disable_jit", "debug_nans", "debug_infs", "no_execution"])

    def __init__(self):
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_lock", threading.Lock())
        object.__setattr__(self, "_version", 0)
        object.__setattr__(self, "_local", threading.local())   # .overrides: {name: value} of this thread
        object.__setattr__(self, "_n_local_hooks", 0)           # active thread-local overrides of _JIT_HOOKS
        object.__setattr__(self, "_n_local_x64", 0)             # active thread-local overrides of enable_x64
        object.__setattr__(self, "_jit_hooks", False)           # Jitted.__call__ must look at the flags
        object.__setattr__(self, "_user_contexts", [])          # make_user_context objects (jit cache key)
        for k, f in self._defaults.items():
            self._values[k] = _validate(k, f())
        self._refresh_hooks()

    def __getattr__(self, name):
        if name.startswith("jax_") and name[4:] in self._values:
            name = name[4:]
        overrides = getattr(self._local, "overrides", None)
        if overrides and name in overrides:
            return overrides[name]
        try:
            value = self._values[name]
        except KeyError:
            raise AttributeError(f"tracejit.config has no option {name!r}; options: "
                                 f"{sorted(self._values)}") from None
        if name == "key_reuse" and self.debug_key_reuse:
            return "error"      # jax.debug_key_reuse: a reused key raises KeyReuseError
        return value

    @property
    def x64_enabled(self) -> bool:
        """JAX's ``config.x64_enabled``: ``enable_x64`` in effect in this thread."""
        return self.enable_x64

    def _refresh_hooks(self) -> None:
        hooks = self._n_local_hooks > 0 or any(self._values[k] for k in self._JIT_HOOKS)
        object.__setattr__(self, "_jit_hooks", hooks)
        # Whether enable_x64 may be off anywhere (globally or in some thread's context manager):
        # where not, dtypes.narrow and the call paths skip the lookup.
        object.__setattr__(self, "_x64_maybe_off", not self._values["enable_x64"] or self._n_local_x64 > 0)

    def _canonical_name(self, name: str) -> str:
        if name.startswith("jax_"):
            name = name[4:]
        if name not in self._values:
            raise AttributeError(f"tracejit.config has no option {name!r}; options: {sorted(self._values)}")
        return name

    def _swap_local(self, name: str, value):
        """Set ``name`` for this thread only; returns what to pass to :meth:`_restore_local`."""
        name = self._canonical_name(name)
        value = _validate(name, value)
        overrides = getattr(self._local, "overrides", None)
        if overrides is None:
            overrides = self._local.overrides = {}
        prev = overrides.get(name, _UNSET)
        overrides[name] = value
        if name in self._JIT_HOOKS or name == "enable_x64":
            with self._lock:
                if name == "enable_x64":
                    object.__setattr__(self, "_n_local_x64", self._n_local_x64 + 1)
                else:
                    object.__setattr__(self, "_n_local_hooks", self._n_local_hooks + 1)
                self._refresh_hooks()
        return name, prev

    def _restore_local(self, token) -> None:
        name, prev = token
        overrides = self._local.overrides
        if prev is _UNSET:
            overrides.pop(name, None)
        else:
            overrides[name] = prev
        if name in self._JIT_HOOKS or name == "enable_x64":
            with self._lock:
                if name == "enable_x64":
                    object.__setattr__(self, "_n_local_x64", self._n_local_x64 - 1)
                else:
                    object.__setattr__(self, "_n_local_hooks", self._n_local_hooks - 1)
                self._refresh_hooks()

    def __setattr__(self, name, value):
        self.update(name, value)

    def update(self, name: str, value) -> None:
        """Set option ``name`` (the JAX-style spelling ``config.update``)."""
        name = self._canonical_name(name)
        value = _validate(name, value)
        with self._lock:
            self._values[name] = value
            object.__setattr__(self, "_version", self._version + 1)
            self._refresh_hooks()

    def compile_key(self) -> tuple:
        """Options that change generated programs, part of every cache key."""
        # autograph changes what a function traces to (a converted loop vs a concretization error)
        key = (self._values["backend"], self._values["num_threads"] == 1,
               self.enable_x64 if self._x64_maybe_off else True, self._values["autograph"])
        if self._user_contexts:     # tracejit.make_user_context values select programs too
            key += tuple(u.value for u in self._user_contexts)
        return key

    def __repr__(self):
        return "Config(" + ", ".join(f"{k}={v!r}" for k, v in sorted(self._values.items())) + ")"


_UNSET = object()
_ENUMS = {
    "numpy_rank_promotion": ("allow", "warn", "raise"),
    "numpy_dtype_promotion": ("standard", "strict"),
    "legacy_prng_key": ("allow", "warn", "error"),
    "default_prng_impl": ("threefry2x32", "threefry4x32", "rbg", "unsafe_rbg", "philox2x32", "philox4x32"),
}
_BOOLS = ("disable_jit", "debug_nans", "debug_infs", "no_tracing", "no_execution", "enable_x64",
          "check_tracer_leaks", "enable_custom_prng", "debug_key_reuse", "thread_guard")


def _validate(name: str, value):
    """Check (and normalize) a value of one of JAX's flags; other options pass through."""
    if name in _BOOLS:
        return bool(value)
    if name in _ENUMS:
        value = getattr(value, "value", value)      # JAX's StrEnum members
        if value not in _ENUMS[name]:
            raise ValueError(f"new enum value must be in {list(_ENUMS[name])}, got {value!r} of type "
                             f"{type(value)}.")
        if name == "numpy_dtype_promotion" and value == "strict":
            raise NotImplementedError(
                "numpy_dtype_promotion('strict') is not implemented: tracejit promotes as NumPy 2 "
                "(JAX's 'standard' mode) and has no strict promotion mode yet (issue 14)")
        if name == "default_prng_impl" and value != "threefry2x32":
            raise NotImplementedError(
                f"default_prng_impl({value!r}) is not implemented: tracejit.random implements the "
                "threefry2x32 PRNG only (JAX's default)")
        return value
    if name in ("platforms", "platform_name"):
        names = [p.strip() for p in str(value or "cpu").split(",") if p.strip()]
        if "cpu" not in names:
            raise RuntimeError(f"Unknown backend: {value!r} requested, but no platforms that are instances "
                               "of it are present. Platforms present are: cpu (tracejit compiles for the CPU)")
        return "cpu"
    if name == "default_device":
        if value is None or value == "cpu" or getattr(value, "platform", None) == "cpu":
            return value
        if value in ("gpu", "tpu", "cuda", "rocm"):
            raise RuntimeError(f"Unknown backend: {value!r} requested, but no platforms that are instances "
                               f"of {value} are present. Platforms present are: cpu")
        raise ValueError("jax.default_device must be passed either a Device object (e.g. "
                         f"`jax.devices('cpu')[0]`) or a platform name string like 'cpu' or 'gpu', got: {value!r}")
    return value


config = Config()
