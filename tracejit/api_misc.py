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

from tracejit.api import _leaf_aval
from tracejit.core.avals import ShapedArray
from tracejit.core.interpret import eval_program
from tracejit.core.pytree import tree_flatten, tree_unflatten
from tracejit.core.trace import EVAL_TRACE, Trace, current_trace, set_current_trace, trace_flat
from tracejit.core.tracer import Tracer
from tracejit.transforms.ad_custom import custom_vjp

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
    return _leaf_aval(x, "the argument of typeof")


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


def closure_convert(fun, *example_args):
    """Hoist the traced values ``fun`` closes over into arguments (``jax.closure_convert``).

    ``fun`` is traced once with arguments shaped like ``example_args``. Traced values of
    enclosing transformations that it uses (for example a variable being differentiated)
    become the hoisted constants; concrete values stay inside. Use it to pass a closure
    to a function such as a ``custom_vjp`` that must not close over traced values.

    Parameters
    ----------
    fun : callable
    *example_args
        Arrays, scalars or ShapeDtypeStructs (pytrees) with the argument types.

    Returns
    -------
    (converted, consts)
        ``converted(*args, *consts)`` computes ``fun(*args)``; ``consts`` is a list.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> def outer(c):
    ...     g, consts = tracejit.closure_convert(lambda x: x * c, 1.0)
    ...     assert len(consts) == 1                # c is traced by grad: hoisted
    ...     return g(2.0, *consts)
    >>> float(tracejit.grad(outer)(3.0))
    2.0
    >>> g, consts = tracejit.closure_convert(lambda x: x + np.ones(2), np.zeros(2))
    >>> consts, g(np.ones(2))
    ([], array([2., 2.]))
    """
    flat, in_tree = tree_flatten(example_args)
    in_avals = [_leaf_aval(leaf, f"example argument {i} of closure_convert") for i, leaf in enumerate(flat)]
    out_trees = []

    def flat_fun(*tracers):
        out = fun(*tree_unflatten(in_tree, list(tracers)))
        leaves, out_tree = tree_flatten(out)
        out_trees.append(out_tree)
        return leaves

    program = trace_flat(flat_fun, in_avals, getattr(fun, "__name__", "function"))
    out_tree = out_trees[0]
    consts = list(program.const_values)
    hoisted_at = [i for i, c in enumerate(consts) if isinstance(c, Tracer)]
    hoisted = [consts[i] for i in hoisted_at]

    @functools.wraps(fun)
    def converted(*args_and_consts):
        n = len(args_and_consts) - len(hoisted)
        if n < 0:
            raise TypeError(f"closure_convert: the converted function takes its arguments followed by "
                            f"{len(hoisted)} hoisted constants, got {len(args_and_consts)} values")
        values = list(consts)
        for i, v in zip(hoisted_at, args_and_consts[n:]):
            values[i] = v
        leaves, tree = tree_flatten(tuple(args_and_consts[:n]))
        if tree != in_tree:
            raise TypeError(f"closure_convert: the converted function was traced for arguments {in_tree}, "
                            f"got {tree}")
        return tree_unflatten(out_tree, eval_program(program, values, leaves))

    return converted, hoisted


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
