"""``tracejit.pure_callback``: call a pure Python function from traced code (``jax.pure_callback``).

The primitive and its rules are in :mod:`tracejit.ops.callback`; ``tracejit.debug`` has the
effectful callbacks (``debug.callback``, ``debug.print``).
"""
from __future__ import annotations

import numpy as np

from tracejit.array import eager_values
from tracejit.core.avals import ShapedArray
from tracejit.core.pytree import tree_flatten, tree_unflatten
from tracejit.ops.callback import VMAP_METHODS, FlatCallback, pure_callback_p, split_callback_args

__all__ = ["pure_callback"]


def _result_aval(leaf, i) -> ShapedArray:
    try:
        return ShapedArray(tuple(leaf.shape), np.dtype(leaf.dtype))
    except (AttributeError, TypeError) as e:
        raise TypeError(f"pure_callback: result_shape_dtypes leaf {i} must have `shape` and `dtype` attributes "
                        f"(e.g. a ShapeDtypeStruct), got {type(leaf).__name__}: {e}") from None


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
    result_leaves, out_tree = tree_flatten(result_shape_dtypes)
    result_avals = tuple(_result_aval(leaf, i) for i, leaf in enumerate(result_leaves))
    outs = pure_callback_p.bind(*dynamic, callback=FlatCallback(callback, in_tree, static),
                                result_avals=result_avals, vmap_method=vmap_method, sharding=sharding)
    return eager_values(tree_unflatten(out_tree, outs))
