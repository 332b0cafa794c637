"""Scans and general reductions of ``jax.lax``: associative_scan, cumlogsumexp, reduce,
reduce_xor.

``associative_scan`` is the odd/even parallel prefix (Ladner-Fischer) that JAX uses: the
combining function is applied to whole strided slices, ``O(log n)`` times, so the same
pairs are combined in the same order as JAX and any function of arrays works under
``jit``, ``grad`` and ``vmap``. ``reduce`` recognizes JAX's monoids (``lax.add`` /
``mul`` / ``max`` / ``min`` and the bitwise functions, and their ``tracejit.numpy``
ufuncs) and uses the reduction primitives; any other computation is folded pairwise
along each reduced axis (``O(log n)`` vectorized calls), which needs it to be associative,
as XLA does.
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.core.pytree import tree_flatten, tree_unflatten
from tracejit.lax.ops import (add, bitwise_and, bitwise_or, bitwise_xor, broadcast, concatenate, convert_element_type,
                              mul, reduce_and, reduce_max, reduce_min, reduce_or, reduce_prod, reduce_sum,
                              reshape, rev, slice_in_dim)
from tracejit.lax.ops import max as lax_max, min as lax_min
from tracejit.numpy._util import aval, canonicalize_axis, to_operand
from tracejit.numpy.ufuncs import UFUNCS

__all__ = ["associative_scan", "cumlogsumexp", "reduce", "reduce_xor"]


def _array(x):
    x = to_operand(x)
    return np.asarray(x) if dtypes.is_python_scalar(x) else x


def _combiner(fn, treedef, what):
    """``fn`` on flat leaf lists; results keep the leaves' dtypes (weak results adapt)."""
    def combine(a_flat, b_flat):
        out = fn(tree_unflatten(treedef, a_flat), tree_unflatten(treedef, b_flat))
        out_flat, out_tree = tree_flatten(out)
        if out_tree != treedef:
            raise TypeError(f"{what}: the combining function must return the structure of its inputs "
                            f"{treedef}, got {out_tree}")
        return [_array(o) if aval(_array(o)).dtype == aval(a).dtype else convert_element_type(_array(o), aval(a).dtype)
                for o, a in zip(out_flat, a_flat)]
    return combine


def _interleave(even, odd, axis):
    """``out[0::2] = even``, ``out[1::2] = odd`` along ``axis`` (``len(even) - len(odd)`` is 0 or 1)."""
    shape = aval(even).shape
    n_even, n_odd = shape[axis], aval(odd).shape[axis]
    head = slice_in_dim(even, 0, n_odd, 1, axis) if n_even != n_odd else even
    pair_shape = shape[:axis] + (n_odd, 1) + shape[axis + 1:]
    both = concatenate([reshape(head, pair_shape), reshape(odd, pair_shape)], axis + 1)
    out = reshape(both, shape[:axis] + (2 * n_odd,) + shape[axis + 1:])
    if n_even != n_odd:
        out = concatenate([out, slice_in_dim(even, n_odd, n_even, 1, axis)], axis)
    return out


def _prefix(combine, elems, axis):
    """Inclusive scan of the leaf list ``elems`` along ``axis`` by odd/even recursion."""
    n = aval(elems[0]).shape[axis]
    if n < 2:
        return elems
    # Combine neighbours (0,1), (2,3), ...; their prefixes are the odd outputs.
    pairs = combine([slice_in_dim(e, 0, n - 1, 2, axis) for e in elems],
                    [slice_in_dim(e, 1, n, 2, axis) for e in elems])
    odd = _prefix(combine, pairs, axis)
    # Even outputs 2, 4, ...: the odd prefix before them combined with the element itself.
    n_odd = aval(odd[0]).shape[axis]
    n_rest = (n - 1) // 2                      # elements 2, 4, ... below n
    rest = combine([slice_in_dim(o, 0, n_rest, 1, axis) for o in odd] if n_rest != n_odd else odd,
                   [slice_in_dim(e, 2, n, 2, axis) for e in elems])
    even = [concatenate([slice_in_dim(e, 0, 1, 1, axis), r], axis) for e, r in zip(elems, rest)]
    return [_interleave(ev, od, axis) for ev, od in zip(even, odd)]


def associative_scan(fn, elems, reverse=False, axis=0):
    """Inclusive scan of ``elems`` with the associative ``fn`` (``jax.lax.associative_scan``).

    ``elems`` is a pytree of arrays sharing the length of ``axis``; ``fn(a, b)`` combines two
    such pytrees elementwise (slices of them) and returns one. The result holds
    ``[e0, fn(e0, e1), fn(fn(e0, e1), e2), ...]`` (from the end when ``reverse``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.associative_scan(lax.add, np.arange(5))
    Array([ 0,  1,  3,  6, 10])
    >>> lax.associative_scan(lax.add, np.arange(4), reverse=True)
    Array([6, 6, 5, 3])
    """
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    leaves, treedef = tree_flatten(elems)
    leaves = [_array(e) for e in leaves]
    if not leaves:
        return elems
    axis = canonicalize_axis(axis, aval(leaves[0]).ndim)
    n = aval(leaves[0]).shape[axis]
    if any(aval(e).ndim <= axis or aval(e).shape[axis] != n for e in leaves):
        raise ValueError(f"Array inputs to associative_scan must have the same first dimension. (saw: "
                         f"{[aval(e).shape for e in leaves]})")
    if reverse:
        leaves = [rev(e, (axis,)) for e in leaves]
    out = _prefix(_combiner(fn, treedef, "associative_scan"), leaves, axis)
    if reverse:
        out = [rev(e, (axis,)) for e in out]
    return tree_unflatten(treedef, out)


def cumlogsumexp(operand, axis=0, reverse=False):
    """``log(cumsum(exp(operand)))`` along ``axis``, without overflow (``jax.lax.cumlogsumexp``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> np.round(np.exp(lax.cumlogsumexp(np.log(np.array([1.0, 2.0, 3.0])))), 12)
    array([1., 3., 6.])
    """
    x = _array(operand)
    if dtypes.kind(aval(x).dtype) != "f":
        raise TypeError(f"lax.cumlogsumexp does not accept dtype {aval(x).dtype.name}: it needs a floating dtype")
    if not aval(x).shape:
        raise TypeError("lax.cumlogsumexp needs an operand of rank >= 1")
    return associative_scan(UFUNCS["logaddexp"], x, reverse=reverse, axis=axis)


# --------------------------------------------------------------------------- reduce

def _identities(dt):
    info = np.finfo(dt) if dtypes.kind(dt) == "f" else None
    low = -np.inf if info is not None else (False if dtypes.kind(dt) == "b" else np.iinfo(dt).min)
    high = np.inf if info is not None else (True if dtypes.kind(dt) == "b" else np.iinfo(dt).max)
    return low, high


def _monoid(computation, dt):
    """``(reducer, identity)`` when ``computation`` is a monoid JAX recognizes, else None."""
    low, high = _identities(dt) if dtypes.kind(dt) in "biuf" else (None, None)
    int_like = dtypes.kind(dt) in "biu"
    table = [((add, UFUNCS["add"]), dtypes.kind(dt) != "b", reduce_sum, 0),
             ((mul, UFUNCS["multiply"]), dtypes.kind(dt) != "b", reduce_prod, 1),
             ((lax_max, UFUNCS["maximum"]), dtypes.kind(dt) in "biuf", reduce_max, low),
             ((lax_min, UFUNCS["minimum"]), dtypes.kind(dt) in "biuf", reduce_min, high),
             ((bitwise_or, UFUNCS["bitwise_or"]), dtypes.kind(dt) == "b", reduce_or, False),
             ((bitwise_and, UFUNCS["bitwise_and"]), dtypes.kind(dt) == "b", reduce_and, True),
             ((bitwise_or, UFUNCS["bitwise_or"]), int_like and dtypes.kind(dt) != "b", None, 0),
             ((bitwise_and, UFUNCS["bitwise_and"]), int_like and dtypes.kind(dt) != "b", None, -1),
             ((bitwise_xor, UFUNCS["bitwise_xor"]), int_like, None, 0)]
    for fns, ok, reducer, identity in table:
        if ok and any(computation is f for f in fns):
            return reducer, np.array(identity).astype(dt)[()]
    return None


def _is_concrete_value(x, value) -> bool:
    """``x`` is a known (not traced) scalar equal to ``value``, zero signs included."""
    if not isinstance(x, (np.ndarray, np.generic)):
        return False
    x = np.asarray(x)
    same = bool(x == value)
    return same and (dtypes.kind(x.dtype) != "f" or bool(np.signbit(x)) == bool(np.signbit(value)))


def _fold_axis(combine, leaves, axis):
    """Combine every element along ``axis`` pairwise (keeping order); the axis ends with size 1."""
    n = aval(leaves[0]).shape[axis]
    while n > 1:
        half = n // 2
        pairs = combine([slice_in_dim(e, 0, 2 * half, 2, axis) for e in leaves],
                        [slice_in_dim(e, 1, 2 * half, 2, axis) for e in leaves])
        if n % 2:
            pairs = [concatenate([p, slice_in_dim(e, n - 1, n, 1, axis)], axis) for p, e in zip(pairs, leaves)]
        leaves, n = pairs, half + n % 2
    return leaves


def reduce(operands, init_values, computation, dimensions, out_sharding=None):
    """Reduce ``operands`` over ``dimensions`` with the monoid ``(computation, init_values)``
    (``jax.lax.reduce``).

    ``operands`` is an array or a pytree of arrays of one shape; ``init_values`` the matching
    pytree of scalars; ``computation(a, b)`` combines two such pytrees. It must be
    associative and commutative with ``init_values`` its identity, as in JAX; here it is
    called on arrays (slices of the operands), so write it with array functions.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.reduce(np.arange(6).reshape(2, 3), 0, lax.add, (1,))
    Array([ 3, 12])
    >>> vals, idx = lax.reduce((np.array([3.0, 7.0, 5.0]), np.arange(3)), (-np.inf, 0),
    ...                        lambda a, b: (lax.max(a[0], b[0]),
    ...                                      lax.select(a[0] >= b[0], a[1], b[1])), (0,))
    >>> float(vals), int(idx)
    (7.0, 1)
    """
    if not callable(computation):
        raise TypeError("lax.reduce: computation must be callable")
    leaves, treedef = tree_flatten(operands)
    init_leaves, init_tree = tree_flatten(init_values)
    if treedef != init_tree:
        raise ValueError(f"Operands must have the same tree structure as init_values: {treedef} vs. {init_tree}")
    leaves = [_array(x) for x in leaves]
    if not leaves:
        raise TypeError("lax.reduce needs at least one operand")
    shape = aval(leaves[0]).shape
    if any(aval(x).shape != shape for x in leaves):
        raise TypeError(f"lax.reduce: operands must have one shape, got {[aval(x).shape for x in leaves]}")
    dims = sorted({canonicalize_axis(d, len(shape)) for d in dimensions})
    inits = []
    for v, x in zip(init_leaves, leaves):
        v = _array(v)
        if aval(v).shape != ():
            raise TypeError(f"lax.reduce: init_values must be scalars, got shape {aval(v).shape}")
        inits.append(v if aval(v).dtype == aval(x).dtype else convert_element_type(v, aval(x).dtype))
    out_shape = tuple(d for i, d in enumerate(shape) if i not in dims)
    monoid = _monoid(computation, aval(leaves[0]).dtype) if len(leaves) == 1 else None
    if monoid is not None and monoid[0] is not None:
        reducer, identity = monoid
        out = reducer(leaves[0], tuple(dims))
        if _is_concrete_value(inits[0], identity):
            return tree_unflatten(treedef, [out])
        return tree_unflatten(treedef, [computation(broadcast(inits[0], out_shape), out)])
    combine = _combiner(computation, treedef, "reduce")
    init_b = [broadcast(v, out_shape) for v in inits]
    if any(shape[d] == 0 for d in dims):
        return tree_unflatten(treedef, init_b)
    for d in dims:
        leaves = _fold_axis(combine, leaves, d)
    leaves = [reshape(x, out_shape) for x in leaves]
    if monoid is not None and _is_concrete_value(inits[0], monoid[1]):
        return tree_unflatten(treedef, leaves)
    return tree_unflatten(treedef, combine(init_b, leaves))


def reduce_xor(operand, axes):
    """Bitwise XOR of the elements over ``axes`` (``jax.lax.reduce_xor``); bool and integer dtypes.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.reduce_xor(np.array([[1, 2], [4, 8]], np.uint8), (0, 1))
    Array(15, dtype=uint8)
    """
    x = _array(operand)
    dt = aval(x).dtype
    if dtypes.kind(dt) not in "biu":
        raise TypeError(f"lax.reduce_xor does not accept dtype {dt.name}: it needs a bool or integer dtype")
    return reduce(x, np.zeros((), dt)[()], bitwise_xor, tuple(axes))
