"""Smaller top-level JAX functions: ``typeof``, ``named_call``/``named_scope``,
``ensure_compile_time_eval``, ``custom_gradient``, ``closure_convert``,
``effects_barrier`` and ``print_environment_info``.

Examples
--------
>>> import numpy as np, tracejit
>>> tracejit.typeof(np.ones((2, 3), np.float32))
ShapedArray(f32[2,3])
"""
from __future__ import annotations

import contextlib
import functools
import sys

import numpy as np

from tracejit.core.avals import ShapedArray
from tracejit.core.interpret import eval_program
from tracejit.core.pytree import tree_flatten, tree_unflatten
from tracejit.core.trace import EVAL_TRACE, Trace, current_trace, set_current_trace, trace_flat
from tracejit.core.tracer import Tracer
from tracejit.core.values import leaf_aval
from tracejit.functionalize.refs import Ref
from tracejit.transforms.ad_custom import closure_convert, custom_vjp  # noqa: F401  (closure_convert: re-exported)

__all__ = ["typeof", "named_call", "named_scope", "ensure_compile_time_eval", "custom_gradient",
           "closure_convert", "effects_barrier", "print_environment_info"]


def typeof(x) -> ShapedArray:
    """The abstract value (shape, dtype, weak type) of an array, scalar or tracer (``jax.typeof``).

    Parameters
    ----------
    x : array, scalar or tracer

    Returns
    -------
    ShapedArray
        A Python scalar gives a weakly typed one (``{weak}``), as in JAX.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> tracejit.typeof(1.0)
    ShapedArray(f64[]{weak})
    >>> tracejit.jit(lambda x: print(tracejit.typeof(x)) or x)(np.zeros(3, np.int32))
    ShapedArray(i32[3])
    Array([0, 0, 0], dtype=int32)
    """
    if isinstance(x, Tracer):
        return x.aval
    if isinstance(x, Ref):
        return x.aval                # an AbstractRef, as JAX's
    return leaf_aval(x, "the argument of typeof")


@contextlib.contextmanager
def named_scope(name: str):
    """Context manager that names the operations inside it (``jax.named_scope``).

    tracejit's programs carry no name stack (no profiler consumes one), so the scope
    is only a label: it checks ``name`` and changes nothing else.

    Parameters
    ----------
    name : str

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> @tracejit.jit
    ... def f(x):
    ...     with tracejit.named_scope("layer1"):
    ...         return x * 2
    >>> f(np.ones(2))
    Array([2., 2.])
    """
    if not isinstance(name, str):
        raise TypeError("named_scope name argument must be a string.")
    yield


def named_call(fun, *, name: str | None = None):
    """Wrap ``fun`` so its operations are named ``name`` (``jax.named_call``); a label only here.

    Parameters
    ----------
    fun : callable
    name : str, optional
        Defaults to ``fun.__name__``.

    Returns
    -------
    callable
        ``fun`` run inside :func:`named_scope` ``(name)``.

    Examples
    --------
    >>> import tracejit
    >>> double = tracejit.named_call(lambda x: 2 * x, name="double")
    >>> double(3.0)
    6.0
    """
    if name is None:
        name = getattr(fun, "__name__", "function")

    @functools.wraps(fun)
    def named(*args, **kwargs):
        with named_scope(name):
            return fun(*args, **kwargs)
    return named


class _CompileTimeEvalTrace(Trace):
    """Evaluates primitives on concrete operands with their NumPy impl rules; an operation
    on a traced value goes to the enclosing trace, as without the context manager."""

    name = "compile_time_eval"

    def __init__(self, parent: Trace):
        self.parent = parent

    def process_primitive(self, prim, args, params):
        for a in args:
            if isinstance(a, Tracer):
                with set_current_trace(self.parent):
                    return self.parent.process_primitive(prim, args, params)
        return EVAL_TRACE.process_primitive(prim, args, params)


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Evaluate operations on concrete values while tracing (``jax.ensure_compile_time_eval``).

    Inside a traced function (``jit``, ``grad``, ``vmap``), operations whose operands are
    all concrete (NumPy arrays, scalars, results of other such operations) are computed
    right away with NumPy instead of being recorded, so their results can drive Python
    control flow. Operations on traced values are recorded as usual. Outside any
    transformation it changes nothing (everything is eager already).

    Examples
    --------
    >>> import numpy as np, tracejit, tracejit.numpy as jnp
    >>> @tracejit.jit
    ... def f(x):
    ...     with tracejit.ensure_compile_time_eval():
    ...         n = jnp.arange(4).sum()        # a NumPy value, not a tracer
    ...         assert not isinstance(n, tracejit.core.tracer.Tracer)
    ...         y = x * n                      # x is traced: recorded
    ...     return y if n > 5 else -y          # Python control flow on n works
    >>> f(np.ones(2))
    Array([6., 6.])
    """
    parent = current_trace()
    if parent is EVAL_TRACE or isinstance(parent, _CompileTimeEvalTrace):
        yield
        return
    with set_current_trace(_CompileTimeEvalTrace(parent)):
        yield


def custom_gradient(fun):
    """Define a function's gradient inline (``jax.custom_gradient``).

    ``fun(*args)`` returns ``(value, vjp_fn)``; ``vjp_fn(cotangent)`` returns the
    cotangents of the arguments (a tuple with one entry per argument, or a single
    value for a one-argument function). Built on :class:`tracejit.custom_vjp`, so
    forward-mode differentiation raises TypeError, as in JAX.

    Parameters
    ----------
    fun : callable

    Returns
    -------
    callable
        Returns ``value``; its reverse-mode derivative is ``vjp_fn``.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> @tracejit.custom_gradient
    ... def f(x):
    ...     return x ** 2, lambda g: (g * x,)      # deliberately half the true derivative
    >>> f(3.0), float(tracejit.grad(f)(3.0))
    (9.0, 3.0)
    """
    @custom_vjp
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        value, _ = fun(*args, **kwargs)
        return value

    def fwd(*args, **kwargs):
        value, rule = fun(*args, **kwargs)
        return value, rule

    def bwd(rule, cotangent):
        cts = rule(cotangent)
        if not isinstance(cts, (tuple, list)):
            cts = (cts,)
        return tuple(cts)

    wrapped.defvjp(fwd, bwd)
    return wrapped


def effects_barrier() -> None:
    """Wait until all side effects have run (``jax.effects_barrier``); a no-op here.

    Jitted calls run synchronously and tracejit has no asynchronous effects, so there
    is nothing to wait for.

    Examples
    --------
    >>> import tracejit
    >>> tracejit.effects_barrier()
    """
    return None


def print_environment_info(return_string: bool = False):
    """Print (or return) tracejit's, NumPy's, llvmlite's and Python's versions and the devices.

    Parameters
    ----------
    return_string : bool
        Return the text instead of printing it (``jax.print_environment_info``).

    Examples
    --------
    >>> import tracejit
    >>> tracejit.print_environment_info(return_string=True).splitlines()[0].split(":")[0]
    'tracejit'
    """
    from tracejit import device_api, version
    try:
        import llvmlite
        llvm = f"{llvmlite.__version__} (LLVM {'.'.join(map(str, _llvm_version()))})"
    except Exception:       # noqa: BLE001 - the reference backend works without llvmlite
        llvm = "not installed"
    lines = [f"tracejit: {version.__version__}",
             f"numpy:    {np.__version__}",
             f"llvmlite: {llvm}",
             f"python:   {sys.version}",
             *device_api.environment_lines()]
    text = "\n".join(lines) + "\n"
    if return_string:
        return text
    print(text, end="")
    return None


def _llvm_version():
    import llvmlite.binding as llvm
    return llvm.llvm_version_info
