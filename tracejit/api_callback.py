"""``tracejit.pure_callback`` and ``tracejit.experimental.io_callback``: call a Python function from
traced code (``jax.pure_callback``, ``jax.experimental.io_callback``).

The primitive and its rules are in :mod:`tracejit.ops.callback`; ``tracejit.debug`` has the
effectful callbacks (``debug.callback``, ``debug.print``).
"""
from __future__ import annotations

import numpy as np

from tracejit.array import eager_values
from tracejit.core.avals import ShapedArray
from tracejit.core.pytree import tree_flatten, tree_unflatten
from tracejit.ops.callback import VMAP_METHODS, FlatCallback, io_callback_p, pure_callback_p, split_callback_args

__all__ = ["pure_callback", "io_callback"]


def _result_aval(leaf, i, kind="pure_callback") -> ShapedArray:
    try:
        return ShapedArray(tuple(leaf.shape), np.dtype(leaf.dtype))
    except (AttributeError, TypeError) as e:
        raise TypeError(f"{kind}: result_shape_dtypes leaf {i} must have `shape` and `dtype` attributes "
                        f"(e.g. a ShapeDtypeStruct), got {type(leaf).__name__}: {e}") from None


def _result_avals(result_shape_dtypes, kind):
    result_leaves, out_tree = tree_flatten(result_shape_dtypes)
    return tuple(_result_aval(leaf, i, kind) for i, leaf in enumerate(result_leaves)), out_tree


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None, **kwargs):
    """Call a pure Python function on the host, also from ``jit``, ``vmap`` and ``grad`` code.

    ``callback(*args, **kwargs)`` receives NumPy arrays (its own copies) for the array leaves
    of the arguments (other leaves, such as strings, as they are) and must return arrays
    matching ``result_shape_dtypes`` leaf by leaf, shape and dtype exactly (checked at run time:
    ``JaxRuntimeError`` naming the mismatch). Compiled, the call is a host step of the program.
    Being pure, it may run fewer times than written (a result nobody uses is not computed, two
    equal calls are merged) or more (eager autodiff may evaluate it while tracing).

    Parameters
    ----------
    callback : callable
        Returns a pytree of arrays.
    result_shape_dtypes : pytree
        Leaves with ``shape`` and ``dtype`` (``tracejit.ShapeDtypeStruct``, arrays).
    *args, **kwargs
        Arguments of ``callback`` (pytrees).
    sharding : optional
        Accepted for JAX compatibility; there is one CPU device.
    vmap_method : {None, 'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', 'legacy_vectorized'}
        How ``vmap`` calls the callback: once per example (``sequential``, in a loop;
        ``sequential_unrolled``), once on the batch with unbatched arguments given a leading axis of
        size 1 (``expand_dims``) or broadcast to the batch (``broadcast_all``) or left as they are
        (``legacy_vectorized``). ``None`` raises ``NotImplementedError`` under ``vmap``, as in JAX.

    Returns
    -------
    pytree of arrays
        Structured like ``result_shape_dtypes``.

    Raises
    ------
    ValueError
        For an unknown ``vmap_method``, and under ``grad`` / ``jvp`` (pure callbacks have no
        derivative: wrap them in ``custom_jvp`` / ``custom_vjp``).

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> spec = tracejit.ShapeDtypeStruct((3,), np.float64)
    >>> f = tracejit.jit(lambda x: tracejit.pure_callback(np.cumsum, spec, x) * 2)
    >>> f(np.ones(3))
    Array([2., 4., 6.])
    """
    if vmap_method not in VMAP_METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods {VMAP_METHODS}, but got: {vmap_method}")
    if not callable(callback):
        raise TypeError(f"pure_callback: callback must be callable, got {type(callback).__name__}")
    in_tree, dynamic, static = split_callback_args(args, kwargs)
    result_avals, out_tree = _result_avals(result_shape_dtypes, "pure_callback")
    outs = pure_callback_p.bind(*dynamic, callback=FlatCallback(callback, in_tree, static),
                                result_avals=result_avals, vmap_method=vmap_method, sharding=sharding)
    return eager_values(tree_unflatten(out_tree, outs))


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False, **kwargs):
    """Call an impure Python function on the host, also from ``jit`` code (``jax.experimental.io_callback``).

    Like :func:`pure_callback`, ``callback(*args, **kwargs)`` receives NumPy copies of the array
    leaves and must return arrays matching ``result_shape_dtypes``. Unlike it, the call is an
    effect: it runs exactly once per call written, in program order, even when its results are
    unused, and two equal calls are never merged (use it for I/O, counters, random state held in
    Python). It has no derivative (``grad``/``jvp`` raise ``ValueError``, as in JAX). Under
    ``vmap`` an unordered callback runs once per example, in order; an ordered one raises.

    Parameters
    ----------
    callback : callable
        Returns a pytree of arrays.
    result_shape_dtypes : pytree
        Leaves with ``shape`` and ``dtype`` (``tracejit.ShapeDtypeStruct``, arrays).
    *args, **kwargs
        Arguments of ``callback`` (pytrees).
    sharding : optional
        Accepted for JAX compatibility; there is one CPU device.
    ordered : bool
        Whether calls must keep their order with other ordered effects (always true here: every
        effect runs in program order); ``vmap`` refuses an ordered callback, as JAX does.

    Returns
    -------
    pytree of arrays
        Structured like ``result_shape_dtypes``.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit.experimental import io_callback
    >>> seen = []
    >>> def log(x):
    ...     seen.append(float(x.sum()))
    ...     return np.float64(len(seen))
    >>> f = tracejit.jit(lambda x: io_callback(log, tracejit.ShapeDtypeStruct((), np.float64), x) + x)
    >>> f(np.ones(2)), seen
    (Array([2., 2.]), [2.0])
    """
    if not callable(callback):
        raise TypeError(f"io_callback: callback must be callable, got {type(callback).__name__}")
    in_tree, dynamic, static = split_callback_args(args, kwargs)
    result_avals, out_tree = _result_avals(result_shape_dtypes, "io_callback")
    outs = io_callback_p.bind(*dynamic, callback=FlatCallback(callback, in_tree, static),
                              result_avals=result_avals, ordered=bool(ordered), sharding=sharding)
    return eager_values(tree_unflatten(out_tree, outs))
