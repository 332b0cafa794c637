"""``vmap``: map a function over an axis of its arguments (JAX's ``jax.vmap``)."""
from __future__ import annotations

import functools
import operator

import numpy as np

from tracejit.array import eager_results
from tracejit.core.pytree import broadcast_prefix, tree_flatten, tree_unflatten
from tracejit.core.trace import NO_VALUE, current_trace, is_concrete_context, trace_flat
from tracejit.core.tracer import Tracer
from tracejit.core.values import leaf_aval
from tracejit.core.named_axes import axis_frame
from tracejit.transforms import batching, callback_rules, collective_rules  # noqa: F401  (register rules)
from tracejit.transforms.ad import aval_of

__all__ = ["vmap"]


def _is_axis(x) -> bool:
    return x is None or isinstance(x, (int, np.integer))


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
    """Vectorize ``fun`` over an axis of its arguments.

    ``vmap(f)(xs)`` computes ``stack([f(x) for x in xs])`` as whole-array
    operations: ``f`` is traced once for one example, then each primitive is
    applied to the whole batch by its batching rule.  The few primitives
    without a rule (least squares, FFTs, gamma/Poisson sampling, custom_vjp
    calls, dynamic slices at per-example starts) run once per
    example, which gives the same values but makes the program grow with the
    batch size (``docs/vmap.md``).

    Parameters
    ----------
    fun : callable
        The function of one example; its arguments and results may be pytrees.
    in_axes : int, None or pytree, optional
        The mapped axis of each argument (None: the argument is shared by all
        examples); a tuple gives one entry per positional argument and may be
        a pytree prefix of it.  Keyword arguments are mapped over axis 0.
    out_axes : int, None or pytree, optional
        Where the mapped axis goes in each result (None: the result must not
        depend on the example).
    axis_name : hashable, optional
        A name for the mapped axis: collectives in ``fun`` (``lax.psum(x, axis_name)``, ``pmean``,
        ``pmax``, ``pmin``, ``all_gather``, ``psum_scatter``, ``ppermute``, ``axis_index``) compute
        over the batch, as over devices in JAX.
    spmd_axis_name : None
        Not supported (one device).
    axis_size : int, optional
        The batch size, required when no argument is mapped.

    Returns
    -------
    callable
        The vectorized function.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> dot = lambda a, b: (a * b).sum()
    >>> tracejit.vmap(dot, in_axes=(0, None))(np.arange(6.0).reshape(2, 3), np.ones(3))
    Array([ 3., 12.])
    """
    if spmd_axis_name is not None:
        raise NotImplementedError("vmap: spmd_axis_name (sharding the mapped axis over devices) is not "
                                  "supported: there is one CPU device")
    if not callable(fun):
        raise TypeError(f"vmap requires a callable, got {type(fun).__name__}")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)       # JAX treats a list of axes like a tuple

    @functools.wraps(fun)
    def batched(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                             f"positional arguments passed to the function, but got len(in_axes)={len(in_axes)}, "
                             f"len(args)={len(args)}")
        if not (isinstance(in_axes, tuple) or _is_axis(in_axes)):
            raise TypeError(f"vmap in_axes must be an int, None, or a tuple (one entry per positional "
                            f"argument), got {type(in_axes).__name__} {in_axes!r}")
        leaves, in_tree = tree_flatten((args, kwargs))
        axes = broadcast_prefix(in_axes, args, is_leaf=_is_axis)
        axes += [0] * (len(leaves) - len(axes))                     # keyword arguments
        values, avals, dims, size = _mapped_leaves(leaves, axes, axis_size)
        example_avals = [batching.example_aval(a, d) for a, d in zip(avals, dims)]
        box = {}

        def flat_fun(*tracers):
            a, kw = tree_unflatten(in_tree, tracers)
            out_leaves, box["out_tree"] = tree_flatten(fun(*a, **kw))
            return out_leaves
        # Eagerly (not under jit), values that do not depend on the arguments stay concrete, as
        # in JAX: jacfwd's and jacrev's vmapped passes give custom rules concrete primals, and
        # values of an enclosing eager grad stay concrete. The arguments themselves are
        # abstract (see tracejit.core.trace.trace_flat).
        eager_args = [NO_VALUE] * len(example_avals) if is_concrete_context(current_trace()) else None
        # The axis name is bound while f is traced (collectives check it) and batched (they are
        # computed over this batch): core/named_axes.py, transforms/collective_rules.py.
        with axis_frame(axis_name, size):
            program = trace_flat(flat_fun, example_avals, getattr(fun, "__name__", "function"), eager_args)
            outs, out_dims = batching.batch_program(program, program.const_values, values, dims, size)
        out_tree = box["out_tree"]
        out_axes_flat = broadcast_prefix(out_axes, tree_unflatten(out_tree, outs), is_leaf=_is_axis)
        return tree_unflatten(out_tree, [_place(o, d, a, size) for o, d, a in zip(outs, out_dims, out_axes_flat)])
    return eager_results(batched)


def _mapped_leaves(leaves, axes, axis_size):
    """(values, avals, batch axes normalized to >= 0 or None, batch size)."""
    values, avals, dims, sizes = [], [], [], set()
    for leaf, axis in zip(leaves, axes):
        aval = leaf_aval(leaf, "an argument of vmap")       # a Python scalar stays weakly typed (NEP 50)
        value = leaf if isinstance(leaf, (Tracer, np.ndarray)) else np.asarray(leaf, aval.dtype)
        if axis is not None:
            axis = operator.index(axis)
            if not -aval.ndim <= axis < aval.ndim:
                raise ValueError(f"vmap was requested to map its argument along axis {axis}, which implies "
                                 f"that its rank should be at least {max(axis + 1, -axis)}, but is only "
                                 f"{aval.ndim} (its shape is {aval.shape})")
            axis %= aval.ndim
            sizes.add(aval.shape[axis])
        values.append(value)
        avals.append(aval)
        dims.append(axis)
    if len(sizes) > 1:
        detail = ", ".join(f"argument {i} of shape {a.shape} mapped over axis {d}"
                           for i, (a, d) in enumerate(zip(avals, dims)) if d is not None)
        raise ValueError(f"vmap got inconsistent sizes for the array axes to be mapped: {detail}")
    if sizes:
        size = sizes.pop()
        if axis_size is not None and axis_size != size:
            raise ValueError(f"vmap got axis_size={axis_size} but the mapped axes have size {size}")
    elif axis_size is None:
        raise ValueError("vmap must have at least one non-None value in in_axes (or be given axis_size)")
    else:
        size = operator.index(axis_size)
    return values, avals, dims, size


def _place(out, d, axis, size):
    """A result with its batch axis (``d``; None when not batched) moved to ``axis``."""
    if axis is None:
        if d is not None:
            raise ValueError("vmap has mapped output but out_axes is None")
        return out
    ndim = aval_of(out).ndim + (1 if d is None else 0)
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"vmap out_axes {axis} is out of range for a result of rank {ndim}")
    return batching.move_axis(batching.with_batch(out, d, size), 0, axis % ndim)
