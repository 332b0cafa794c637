"""JAX's configuration context managers (``jax.disable_jit``, ``jax.debug_nans``, ...).

Each flag is a :class:`State`, as in JAX: ``flag.value`` reads the current
value, ``with flag(new_value):`` overrides it for the current thread (nested
blocks restore the outer value), ``@flag(new_value)`` decorates a function,
and the same option is set for every thread with
``tracejit.config.update("jax_<name>", value)``. The option values live in
:data:`tracejit.config.config`.

What each flag does in tracejit (a CPU-only, single-process library whose
arrays are NumPy arrays):

================================  ==============================================================
``disable_jit``                   implemented: jitted functions run their Python code eagerly
``debug_nans`` / ``debug_infs``   implemented for jitted calls (FloatingPointError, see below)
``log_compiles``                  implemented: one log line per compile (diagnostics.md)
``explain_cache_misses``          implemented: says why a function traced again
``enable_checks``                 implemented: the IR checker runs after tracing and every pass
``no_tracing``                    implemented: a jit trace raises RuntimeError
``no_execution``                  implemented: running a jitted executable raises RuntimeError
``debug_key_reuse``               implemented: ``config.key_reuse`` reads ``'error'`` while on
``enable_x64``                    implemented: ``False`` is JAX's 32-bit mode (docs/porting.md, "Dtypes")
``numpy_dtype_promotion``         ``'standard'`` only; ``'strict'`` raises NotImplementedError
``default_prng_impl``             ``'threefry2x32'`` only; the others raise NotImplementedError
``numpy_rank_promotion``          stored, no check: tracejit always broadcasts as NumPy (``'allow'``)
``check_tracer_leaks``            stored, no extra check (a leaked tracer raises when it is used)
``legacy_prng_key``               stored, no check: tracejit's keys are always raw uint32[2] arrays
``enable_custom_prng``            stored, no effect: tracejit has no custom PRNG implementations
``thread_guard``                  stored, no effect: it guards multi-process programs
``default_device``                stored; the one CPU device is the default anyway
================================  ==============================================================

Examples
--------
>>> import numpy as np, tracejit
>>> with tracejit.debug_nans(True):
...     tracejit.config.debug_nans
True
>>> tracejit.config.debug_nans
False
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from tracejit.config import config
from tracejit.core.pytree import tree_leaves
from tracejit.core.trace import EVAL_TRACE, current_trace

__all__ = [
    "State", "disable_jit", "enable_x64", "numpy_dtype_promotion", "numpy_rank_promotion", "debug_nans",
    "debug_infs", "log_compiles", "enable_checks", "check_tracer_leaks", "checking_leaks",
    "default_prng_impl", "explain_cache_misses", "legacy_prng_key", "enable_custom_prng", "debug_key_reuse",
    "no_tracing", "no_execution", "thread_guard", "default_device", "make_user_context",
]


class _NoDefault:
    def __repr__(self):
        return "<no default>"


no_default = _NoDefault()


class State:
    """One JAX configuration flag, usable as a context manager factory (``jax._src.config.State``).

    Parameters
    ----------
    name : str
        JAX's option name, e.g. ``"jax_debug_nans"``.
    doc : str
        What the flag does in tracejit.
    default_context_manager_value : optional
        The value ``flag()`` (without an argument) sets; boolean flags use True.

    Examples
    --------
    >>> import tracejit
    >>> tracejit.debug_infs.value
    False
    >>> with tracejit.debug_infs():
    ...     tracejit.debug_infs.value
    True
    >>> tracejit.debug_infs.name
    'jax_debug_infs'
    """

    def __init__(self, name: str, doc: str, default_context_manager_value=no_default):
        self._name = name
        self._option = name[4:]
        self.__name__ = self._option
        self.__doc__ = doc
        self._default_context_manager_value = default_context_manager_value

    @property
    def name(self) -> str:
        return self._name

    @property
    def value(self):
        """The value in effect in this thread (a context manager's, else the global one)."""
        return getattr(config, self._option)

    def get_global(self):
        """The value set with ``config.update`` (ignoring this thread's context managers)."""
        return config._values[self._option]

    def set_global(self, value) -> None:
        """Same as ``tracejit.config.update(self.name, value)``."""
        config.update(self._option, value)

    def __call__(self, new_val=no_default) -> "StateContextManager":
        return StateContextManager(self, new_val)

    def __bool__(self):
        raise TypeError(f"bool() not supported for instances of type '{type(self).__name__}' "
                        f"(did you mean to use '{type(self).__name__}.value' instead?)")

    def __repr__(self):
        return f"<tracejit config flag {self._name}={self.value!r}>"


class StateContextManager:
    """``with flag(value):`` / ``@flag(value)``: the flag's value for this thread, restored on exit.

    Examples
    --------
    >>> import tracejit
    >>> @tracejit.log_compiles(True)
    ... def logging_on():
    ...     return tracejit.config.log_compiles
    >>> logging_on(), tracejit.config.log_compiles
    (True, False)
    """

    __slots__ = ("state", "new_val", "_tokens")

    def __init__(self, state: State, new_val):
        if new_val is no_default:
            if state._default_context_manager_value is no_default:
                raise TypeError(f"Context manager for {state.__name__} config option requires an argument "
                                "representing the new value for the config option.")
            new_val = state._default_context_manager_value
        from tracejit.config import _validate
        self.state = state
        self.new_val = _validate(state._option, new_val)     # a bad value raises here, as in JAX
        self._tokens = threading.local()

    def __enter__(self):
        stack = getattr(self._tokens, "stack", None)
        if stack is None:
            stack = self._tokens.stack = []
        stack.append(config._swap_local(self.state._option, self.new_val))
        return None

    def __exit__(self, exc_type, exc_value, traceback):
        config._restore_local(self._tokens.stack.pop())
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with StateContextManager(self.state, self.new_val):
                return func(*args, **kwargs)
        return wrapper


def _flag(option: str, doc: str, is_bool: bool = True) -> State:
    return State("jax_" + option, doc, True if is_bool else no_default)


enable_x64 = _flag("enable_x64", """Context manager for ``jax_enable_x64``: 64-bit types (default on).

On (the default), tracejit's dtypes are NumPy 2's, which are JAX's with x64 enabled (float64 and
int64 defaults). Off is JAX's default 32-bit mode, the porting switch: results are 32-bit
(float64 -> float32, int64 -> int32, uint64 -> uint32, complex128 -> complex64), ``jit`` takes
64-bit arguments as 32-bit, and ``tracejit.random`` draws JAX's 32-bit streams. Inside a program
operations follow NumPy's rules on the values they get, so results agree with JAX's to float32
rounding (docs/porting.md, "Dtypes"). The context manager sets it for this thread.

Examples
--------
>>> import tracejit, tracejit.numpy as jnp
>>> with tracejit.enable_x64(False):
...     jnp.ones(2).dtype, jnp.arange(3).dtype
(dtype('float32'), dtype('int32'))
>>> jnp.ones(2).dtype
dtype('float64')
""")
numpy_dtype_promotion = _flag("numpy_dtype_promotion", """Context manager for ``jax_numpy_dtype_promotion``.

``'standard'`` is what tracejit does (NumPy 2 / NEP 50 promotion, JAX's standard mode
with x64). ``'strict'`` (an error for implicit promotion between different array dtypes)
is not implemented yet and raises NotImplementedError; any other value raises ValueError.

Examples
--------
>>> import numpy as np, tracejit
>>> with tracejit.numpy_dtype_promotion("standard"):
...     tracejit.jit(lambda a, b: a + b)(np.ones(1, np.int32), np.ones(1, np.float32)).dtype
dtype('float64')
""", is_bool=False)
numpy_rank_promotion = _flag("numpy_rank_promotion", """Context manager for ``jax_numpy_rank_promotion``.

Values ``'allow'``, ``'warn'``, ``'raise'`` (others raise ValueError). tracejit stores the
value but always broadcasts as NumPy does, i.e. ``'allow'``: ``'warn'`` and ``'raise'`` do
not report implicit rank promotion yet.

Examples
--------
>>> import tracejit
>>> with tracejit.numpy_rank_promotion("allow"):
...     tracejit.config.numpy_rank_promotion
'allow'
""", is_bool=False)
debug_nans = _flag("debug_nans", """Context manager for ``jax_debug_nans``: raise on NaN results.

When a jitted function called outside any transformation (or an AOT ``Compiled``) returns
a floating or complex array holding a NaN, tracejit runs the function again without jit
under ``numpy.errstate(invalid='raise')`` to find the operation (NumPy's
``FloatingPointError: invalid value encountered in log``), as JAX re-runs the de-optimized
function; if that run does not raise, a FloatingPointError names the jitted function.
Eager ``tracejit.numpy`` calls are NumPy calls and are not checked.

Examples
--------
>>> import numpy as np, tracejit
>>> with tracejit.debug_nans(True):
...     tracejit.jit(np.log)(np.array(-1.0))
Traceback (most recent call last):
    ...
FloatingPointError: invalid value encountered in log ...
""")
debug_infs = _flag("debug_infs", """Context manager for ``jax_debug_infs``: raise on infinite results.

As :data:`debug_nans`, for ``inf`` results (the de-optimized re-run uses
``numpy.errstate(divide='raise', over='raise')``).

Examples
--------
>>> import numpy as np, tracejit
>>> with tracejit.debug_infs(True):
...     tracejit.jit(lambda x: 1 / x)(np.array(0.0))
Traceback (most recent call last):
    ...
FloatingPointError: divide by zero encountered in divide ...
""")
log_compiles = _flag("log_compiles", """Context manager for ``jax_log_compiles``: log each compile.

Same as ``tracejit.config.log_compiles``: one WARNING line per compile on the
``tracejit`` logger (function, signature, timings, kernels); see docs/diagnostics.md.

Examples
--------
>>> import tracejit
>>> with tracejit.log_compiles():
...     tracejit.config.log_compiles
True
""")
enable_checks = _flag("enable_checks", """Context manager for ``jax_enable_checks``: internal invariant checks.

Same as ``tracejit.config.enable_checks``: the IR type checker runs after tracing and
after every compiler pass (slower).

Examples
--------
>>> import tracejit
>>> with tracejit.enable_checks(True):
...     tracejit.config.enable_checks
True
""")
check_tracer_leaks = _flag("check_tracer_leaks", """Context manager for ``jax_check_tracer_leaks``.

Stored only. tracejit needs no leak checker: every tracer knows when its trace has
finished, so a leaked tracer raises :class:`tracejit.errors.UnexpectedTracerError` as soon
as it is used. A leak that is never used is not reported.

Examples
--------
>>> import tracejit
>>> with tracejit.check_tracer_leaks(True):
...     tracejit.config.check_tracer_leaks
True
""")
default_prng_impl = _flag("default_prng_impl", """Context manager for ``jax_default_prng_impl``.

``'threefry2x32'`` (JAX's default) is the only PRNG tracejit implements; ``'rbg'``,
``'unsafe_rbg'``, ``'threefry4x32'``, ``'philox2x32'``, ``'philox4x32'`` raise
NotImplementedError, other values ValueError.

Examples
--------
>>> import tracejit
>>> with tracejit.default_prng_impl("threefry2x32"):
...     tracejit.config.default_prng_impl
'threefry2x32'
""", is_bool=False)
explain_cache_misses = _flag("explain_cache_misses", """Context manager for ``jax_explain_cache_misses``.

Same as ``tracejit.config.explain_cache_misses``: a recompile warns why the function was
traced again ("argument x changed f64[4] -> f64[8]").

Examples
--------
>>> import tracejit
>>> with tracejit.explain_cache_misses():
...     tracejit.config.explain_cache_misses
True
""")
legacy_prng_key = _flag("legacy_prng_key", """Context manager for ``jax_legacy_prng_key``.

Values ``'allow'``, ``'warn'``, ``'error'``. Stored only: tracejit's keys are always the raw
``uint32[2]`` arrays that JAX calls legacy keys (typed keys are not implemented), so
``'warn'``/``'error'`` report nothing.

Examples
--------
>>> import tracejit
>>> with tracejit.legacy_prng_key("allow"):
...     tracejit.config.legacy_prng_key
'allow'
""", is_bool=False)
enable_custom_prng = _flag("enable_custom_prng", """Context manager for ``jax_enable_custom_prng``.

Stored only: tracejit has no custom PRNG implementations, so the flag changes nothing.

Examples
--------
>>> import tracejit
>>> with tracejit.enable_custom_prng(True):
...     tracejit.config.enable_custom_prng
True
""")
debug_key_reuse = _flag("debug_key_reuse", """Context manager for ``jax_debug_key_reuse``.

While on, ``tracejit.config.key_reuse`` reads ``'error'``: a PRNG key consumed twice in one
traced function raises ``tracejit.random.KeyReuseError`` (tracejit checks inside traced
functions only; eager reuse is not tracked).

Examples
--------
>>> import tracejit
>>> with tracejit.debug_key_reuse(True):
...     tracejit.config.key_reuse
'error'
""")
no_tracing = _flag("no_tracing", """Context manager for ``jax_no_tracing``: forbid jit tracing.

While on, a jitted function that would trace (a new signature, ``lower``,
``eval_shape``, ``make_jaxpr``) raises RuntimeError; cached signatures still run.

Examples
--------
>>> import numpy as np, tracejit
>>> with tracejit.no_tracing(True):
...     tracejit.jit(lambda x: x * 3)(np.ones(2))
Traceback (most recent call last):
    ...
RuntimeError: re-tracing function <lambda> ... for `jit`, but 'no_tracing' is set
""")
no_execution = _flag("no_execution", """Context manager for ``jax_no_execution``: forbid running jitted code.

While on, calling a jitted function (or a ``Compiled``) outside any transformation raises
RuntimeError. Eager ``tracejit.numpy`` calls are NumPy calls and still run.

Examples
--------
>>> import numpy as np, tracejit
>>> with tracejit.no_execution(True):
...     tracejit.jit(lambda x: x * 4)(np.ones(2))
Traceback (most recent call last):
    ...
RuntimeError: tracejit tried to execute function jit(<lambda>), but the no_execution config option is set
""")
thread_guard = _flag("thread_guard", """Context manager for ``jax_thread_guard``.

Stored only: JAX's thread guard catches multi-process collectives issued from another
thread; tracejit runs in one process, so there is nothing to guard.

Examples
--------
>>> import tracejit
>>> with tracejit.thread_guard(True):
...     tracejit.config.thread_guard
True
""")
default_device = _flag("default_device", """Context manager for ``jax_default_device``.

Accepts None, ``'cpu'`` or a CPU :class:`tracejit.Device`; ``'gpu'``/``'tpu'`` raise
RuntimeError (no such platform), other values ValueError. tracejit has one device, so the
value changes nothing but is readable as ``tracejit.config.default_device``.

Examples
--------
>>> import tracejit
>>> with tracejit.default_device(tracejit.devices()[0]):
...     tracejit.config.default_device
CpuDevice(id=0)
""", is_bool=False)

_disable_jit = _flag("disable_jit", "Context manager for ``jax_disable_jit`` (use :func:`disable_jit`).")


def disable_jit(disable: bool = True) -> StateContextManager:
    """Context manager that turns ``jit`` off in its dynamic context (``jax.disable_jit``).

    Inside it, calling a jitted function runs its Python code directly, on NumPy
    arrays outside transformations, so ``print`` shows values and breakpoints
    work. It is per thread and nests: ``disable_jit(False)`` inside turns jit
    back on. ``tracejit.config.update("jax_disable_jit", True)`` sets it for
    every thread.

    Parameters
    ----------
    disable : bool
        True (default) disables jit, False enables it.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> @tracejit.jit
    ... def f(x):
    ...     print(type(x).__name__, x)
    ...     return x * 2
    >>> with tracejit.disable_jit():
    ...     f(np.array([1.0, 2.0]))
    ndarray [1. 2.]
    array([2., 4.])
    """
    return _disable_jit(bool(disable))


def checking_leaks() -> StateContextManager:
    """``check_tracer_leaks(True)`` (``jax.checking_leaks``); see :data:`check_tracer_leaks`.

    Examples
    --------
    >>> import tracejit
    >>> with tracejit.checking_leaks():
    ...     tracejit.config.check_tracer_leaks
    True
    """
    return check_tracer_leaks(True)


# --------------------------------------------------------------------------- user contexts

class UserContext:
    """A value that selects jit programs (returned by :func:`make_user_context`).

    Examples
    --------
    >>> import tracejit
    >>> ctx = tracejit.make_user_context(default_value=0)
    >>> with ctx(3):
    ...     ctx.value
    3
    >>> ctx.value
    0
    """

    def __init__(self, default_value):
        self._check(default_value)
        self._global = default_value
        self._local = threading.local()

    @staticmethod
    def _check(value):
        try:
            hash(value)
        except TypeError:
            raise TypeError(f"user context values must be hashable (they key the jit cache), got "
                            f"{type(value).__name__}") from None

    @property
    def value(self):
        stack = getattr(self._local, "stack", None)
        return stack[-1] if stack else self._global

    def get_global(self):
        """The value outside every ``with`` block."""
        return self._global

    def set_global(self, new_value) -> None:
        """Set the value for every thread."""
        self._check(new_value)
        self._global = new_value

    def __call__(self, new_value) -> "_UserContextManager":
        self._check(new_value)
        return _UserContextManager(self, new_value)


class _UserContextManager:
    def __init__(self, ctx: UserContext, new_value):
        self._ctx, self._new_value = ctx, new_value

    def __enter__(self):
        local = self._ctx._local
        if getattr(local, "stack", None) is None:
            local.stack = []
        local.stack.append(self._new_value)

    def __exit__(self, *exc):
        self._ctx._local.stack.pop()
        return False


def make_user_context(default_value=None) -> UserContext:
    """A jit-cache-sensitive context (``jax.make_user_context``).

    Its value (``ctx.value``; changed with ``with ctx(v):`` per thread or
    ``ctx.set_global(v)``) is part of every jitted function's cache key, so a
    function that reads it traces and compiles again when it changes. Values
    must be hashable.

    Parameters
    ----------
    default_value : hashable, optional
        The value outside ``with`` blocks.

    Returns
    -------
    UserContext

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> scale = tracejit.make_user_context(default_value=1)
    >>> f = tracejit.jit(lambda x: x * scale.value)
    >>> f(np.ones(2))
    Array([1., 1.])
    >>> with scale(3):
    ...     f(np.ones(2))
    Array([3., 3.])
    """
    ctx = UserContext(default_value)
    with config._lock:
        config._user_contexts.append(ctx)
    return ctx


# --------------------------------------------------------------------------- the jit call path

def flagged_call(jitted, call, args, kwargs):
    """Jitted.__call__ while a call-time flag is on (``config._jit_hooks``).

    ``call(args, kwargs)`` is the ordinary jitted call.
    """
    if config.disable_jit:
        return jitted._fun(*args, **kwargs)
    if current_trace() is not EVAL_TRACE:
        return call(args, kwargs)
    check_execution(jitted._name)
    out = call(args, kwargs)
    check_results(jitted, args, kwargs, out)
    return out


def check_execution(name: str) -> None:
    """RuntimeError under ``no_execution``."""
    if config.no_execution:
        raise RuntimeError(f"tracejit tried to execute function jit({name}), but the no_execution config "
                           "option is set")


def check_results(jitted, args, kwargs, out) -> None:
    """FloatingPointError when ``debug_nans``/``debug_infs`` is on and ``out`` holds a NaN/inf."""
    nans, infs = config.debug_nans, config.debug_infs
    if not (nans or infs):
        return
    found = None
    for leaf in tree_leaves(out):
        if isinstance(leaf, (np.ndarray, np.generic)) and leaf.dtype.kind in "fc":
            if nans and np.isnan(leaf).any():
                found = "nan"
                break
            if infs and np.isinf(leaf).any():
                found = "inf"
                break
    if found is None:
        return
    name = jitted._name
    if not jitted._donate_argnums:
        # JAX re-runs the de-optimized function to point at the operation; so does tracejit,
        # with NumPy's floating-point errors raised.
        errstate = {"invalid": "raise"} if nans else {}
        if infs:
            errstate.update(divide="raise", over="raise")
        try:
            with _disable_jit(True), np.errstate(**errstate):
                jitted._fun(*args, **kwargs)
        except FloatingPointError as e:
            raise FloatingPointError(f"{e} (debug_{found}s: jit({name}) returned {found}; this is where "
                                     "the function without jit first produced it)") from None
    raise FloatingPointError(
        f"invalid value ({found}) encountered in jit({name}). Because debug_nans and/or debug_infs is set, "
        "the de-optimized function (the function as if the jit decorator were removed) was called in an "
        "attempt to get a more precise error message. However, it did not produce invalid values during "
        "its execution (or the function donates arguments and was not re-run). The invalid value may "
        "come from an input, or from an operation NumPy does not flag.")
