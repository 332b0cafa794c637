"""``lax``'s collectives over named axes (``jax.lax.psum`` and friends), for ``vmap(axis_name=...)``.

Under ``vmap(f, axis_name='i')`` each example of the batch plays one device of JAX's SPMD model:
``psum(x, 'i')`` is the sum over all examples (the same for each), ``axis_index('i')`` is the
example's position, and so on (``ops/collectives.py``, ``transforms/collective_rules.py``). Outside
a ``vmap`` binding the name they raise JAX's ``NameError: unbound axis name``. ``axis_index_groups``
is not supported.
"""
from __future__ import annotations

from tracejit.core.named_axes import axis_names, bound_axis_size
from tracejit.core.pytree import tree_map
from tracejit.ops.collectives import (all_gather_p, axis_index_p, pmax_p, pmin_p, ppermute_p, psum_p,
                                      psum_scatter_p)
from tracejit.ops.operands import concrete_operand

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute", "pshuffle",
           "axis_index", "axis_size"]


def _no_groups(axis_index_groups, name):
    if axis_index_groups is not None:
        raise NotImplementedError(f"{name}: axis_index_groups is not supported")


def _name(axis_name):
    names = axis_names(axis_name)
    return names if len(names) > 1 else names[0]


def psum(x, axis_name, *, axis_index_groups=None):
    """Sum of ``x`` (a pytree) over the named axis: every example gets the total.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit import lax
    >>> tracejit.vmap(lambda v: v / lax.psum(v, "i"), axis_name="i")(np.array([1.0, 3.0]))
    Array([0.25, 0.75])
    """
    _no_groups(axis_index_groups, "psum")
    return tree_map(lambda v: psum_p.bind(concrete_operand(v), axis_name=_name(axis_name)), x)


def pmean(x, axis_name, *, axis_index_groups=None):
    """Mean of ``x`` (a pytree) over the named axis (``psum / axis size``).

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit import lax
    >>> tracejit.vmap(lambda v: lax.pmean(v, "i"), axis_name="i")(np.array([1.0, 3.0]))
    Array([2., 2.])
    """
    _no_groups(axis_index_groups, "pmean")
    n = axis_size(axis_name)
    return tree_map(lambda v: v / n, psum(x, axis_name))


def pmax(x, axis_name, *, axis_index_groups=None):
    """Maximum of ``x`` (a pytree) over the named axis."""
    _no_groups(axis_index_groups, "pmax")
    return tree_map(lambda v: pmax_p.bind(concrete_operand(v), axis_name=_name(axis_name)), x)


def pmin(x, axis_name, *, axis_index_groups=None):
    """Minimum of ``x`` (a pytree) over the named axis."""
    _no_groups(axis_index_groups, "pmin")
    return tree_map(lambda v: pmin_p.bind(concrete_operand(v), axis_name=_name(axis_name)), x)


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
    """Every example's ``x`` stacked along a new ``axis`` (concatenated along ``axis`` if ``tiled``).

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit import lax
    >>> tracejit.vmap(lambda v: lax.all_gather(v, "i"), axis_name="i")(np.array([1.0, 2.0]))
    Array([[1., 2.],
           [1., 2.]])
    """
    _no_groups(axis_index_groups, "all_gather")

    def one(v):
        v = concrete_operand(v)
        ndim = getattr(v, "ndim", 0)
        return all_gather_p.bind(v, axis_name=_name(axis_name), axis=int(axis) % (ndim + (0 if tiled else 1)),
                                 tiled=bool(tiled))
    return tree_map(one, x)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """The sum over the named axis, scattered: example ``i`` gets block ``i`` along ``scatter_dimension``."""
    _no_groups(axis_index_groups, "psum_scatter")
    return tree_map(lambda v: psum_scatter_p.bind(concrete_operand(v), axis_name=_name(axis_name),
                                                  scatter_dimension=int(scatter_dimension), tiled=bool(tiled)), x)


def ppermute(x, axis_name, perm):
    """Send example ``src``'s ``x`` to example ``dst`` for each ``(src, dst)`` in ``perm``; examples
    nobody sends to get zeros.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit import lax
    >>> shift = lambda v: lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 0)])
    >>> tracejit.vmap(shift, axis_name="i")(np.array([1.0, 2.0, 3.0]))
    Array([3., 1., 2.])
    """
    perm = tuple((int(s), int(d)) for s, d in perm)
    srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"ppermute sources and destinations must be unique, got perm={perm}")
    return tree_map(lambda v: ppermute_p.bind(concrete_operand(v), axis_name=_name(axis_name), perm=perm), x)


def pshuffle(x, axis_name, perm):
    """``out[i] = x[perm[i]]`` over the named axis (a ``ppermute``)."""
    return ppermute(x, axis_name, [(int(p), i) for i, p in enumerate(perm)])


def axis_index(axis_name):
    """This example's position along the named axis (int32).

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit import lax
    >>> tracejit.vmap(lambda v: v * lax.axis_index("i"), axis_name="i")(np.ones(3))
    Array([0., 1., 2.])
    """
    return axis_index_p.bind(axis_name=_name(axis_name))


def axis_size(axis_name):
    """The size of the named axis (a Python int; the product for several names)."""
    size = 1
    for name in axis_names(axis_name):
        size *= bound_axis_size(name)
    return size
