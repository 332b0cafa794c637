"""Padding to bucket sizes, so data-dependent lengths compile a few times instead of once per length.

A jitted function compiles once per input shape. When a dimension varies with
the data (sequence lengths, batch remainders, number of detections), pad it
up to the next of a few *bucket* sizes: N distinct lengths then compile at
most ``len(buckets)`` times.

Masking rules
-------------
Padding appends zeros (or ``pad_value``) along the axis, and the function
sees the padded array, so:

* elementwise work on padded positions is harmless: it is sliced off (by
  :func:`bucketed_jit`) or ignored;
* **reductions over the padded axis must use the mask**: ``sum`` is correct
  only because the pad value is 0, but ``mean`` must divide by the real
  length (``(x * m).sum(axis) / m.sum(axis)``), ``max``/``min`` must replace
  padded positions (``np.where(m, x, -np.inf).max(axis)``), and ``softmax``,
  ``prod``, ``argmax``, ``cumprod``, ``std`` likewise;
* anything mixing positions along the axis (convolutions, ``cumsum`` with
  ``reverse``, sorting, attention) must mask the padded positions first;
* a mask passed as an argument and bucketed on the same axis pads with
  ``False`` (zeros), so it marks padded positions automatically; otherwise
  pass the real length as an argument and build the mask inside the function
  (``np.arange(x.shape[axis]) < length``) -- the length is data, not a
  static argument, so it doesn't cause a recompile.

This module sits above the API: :func:`jit` (the package's ``tracejit.jit``)
is :func:`tracejit.api.jit` plus the ``buckets=`` option, so the API itself
never imports the padding code.
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable

import numpy as np

from tracejit import api
from tracejit.core.pytree import tree_flatten, tree_map, tree_unflatten
from tracejit.core.tracer import Tracer

__all__ = ["jit", "pad_to_bucket", "bucketed_jit", "BucketedJitted", "next_bucket"]


def _check_buckets(buckets, where: str) -> tuple:
    try:
        sizes = tuple(sorted({int(b) for b in buckets}))
    except TypeError:
        raise TypeError(f"{where}: buckets must be a sequence of positive ints, got {buckets!r}") from None
    if not sizes or sizes[0] < 1:
        raise ValueError(f"{where}: buckets must be a non-empty sequence of positive ints, got {buckets!r}")
    return sizes


def next_bucket(length: int, buckets) -> int:
    """The smallest bucket ``>= length``.

    Examples
    --------
    >>> next_bucket(100, (64, 128, 256))
    128
    """
    sizes = _check_buckets(buckets, "next_bucket")
    for b in sizes:
        if b >= length:
            return b
    raise ValueError(f"length {length} exceeds the largest bucket {sizes[-1]} (buckets {sizes}); "
                     "add a larger bucket or split the input")


def _pad_axis(x, axis: int, target: int, pad_value=0):
    n = x.shape[axis]
    if n == target:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, target - n)
    if isinstance(x, Tracer):
        import tracejit.numpy as jnp
        return jnp.pad(x, widths, constant_values=pad_value)
    return np.pad(np.asarray(x), widths, constant_values=pad_value)


def pad_to_bucket(x, axis: int, buckets, pad_value=0):
    """Pad ``x`` along ``axis`` to the smallest bucket ``>=`` its length.

    Parameters
    ----------
    x : array_like
        The array (a traced value works too).
    axis : int
        The axis whose length varies.
    buckets : sequence of int
        Allowed padded lengths.
    pad_value : scalar
        Value of the padded positions (default 0).

    Returns
    -------
    padded : array
        ``x`` padded with ``pad_value`` to the bucket length along ``axis``.
    mask : ndarray of bool, shape ``(bucket,)``
        True for real data, False for padding. Reductions over ``axis`` must
        use it (see the module docstring for the masking rules).

    Raises
    ------
    ValueError
        When the length exceeds the largest bucket (the message names it).

    Examples
    --------
    >>> padded, mask = pad_to_bucket(np.arange(3.0), 0, (4, 8))
    >>> padded
    array([0., 1., 2., 0.])
    >>> mask
    array([ True,  True,  True, False])
    >>> float((padded * mask).sum() / mask.sum())   # a masked mean
    1.0
    """
    if not isinstance(x, Tracer):
        x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("pad_to_bucket: x is a scalar; it has no axis to pad")
    ax = axis + x.ndim if axis < 0 else axis
    if not 0 <= ax < x.ndim:
        raise ValueError(f"pad_to_bucket: axis {axis} is out of bounds for an array of rank {x.ndim}")
    n = x.shape[ax]
    try:
        target = next_bucket(n, buckets)
    except ValueError as e:
        raise ValueError(f"pad_to_bucket: {e}") from None
    mask = np.arange(target) < n
    return _pad_axis(x, ax, target, pad_value), mask


class BucketedJitted:
    """A jitted function whose bucketed arguments are padded to bucket sizes (see :func:`bucketed_jit`).

    Parameters
    ----------
    jitted : tracejit.api.Jitted
        The jitted function the padded arguments are passed to (its options,
        e.g. static arguments, are the ones :func:`bucketed_jit` or :func:`jit` got).
    buckets : dict
        ``{argument name or positional index: (axis, sizes)}`` or ``(axis, sizes, pad_value)``.
    """

    def __init__(self, jitted: api.Jitted, buckets: dict):
        if not isinstance(buckets, dict) or not buckets:
            raise TypeError("bucketed_jit: buckets must be a non-empty dict {argument name or index: "
                            "(axis, sizes)} or {argument: (axis, sizes, pad_value)}")
        fun = jitted._fun
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._name = getattr(fun, "__name__", "function")
        self._jitted = jitted
        self._signature = inspect.signature(fun)
        params = list(self._signature.parameters.values())
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self._specs = {}   # parameter name -> (axis, sizes, pad_value)
        for arg, spec in buckets.items():
            if isinstance(arg, int):
                if not 0 <= arg < len(positional):
                    raise ValueError(f"bucketed_jit: argument index {arg} is not a positional parameter of "
                                     f"{self._name} (parameters: {positional})")
                arg = positional[arg]
            elif arg not in self._signature.parameters:
                raise ValueError(f"bucketed_jit: {arg!r} is not a parameter of {self._name} "
                                 f"(parameters: {list(self._signature.parameters)})")
            if arg in self._jitted._static_argnames:
                raise ValueError(f"bucketed_jit: argument {arg!r} of {self._name} is static; only array "
                                 "arguments can be padded to buckets")
            if not isinstance(spec, (tuple, list)) or len(spec) not in (2, 3):
                raise TypeError(f"bucketed_jit: the bucket spec of {arg!r} must be (axis, sizes) or "
                                f"(axis, sizes, pad_value), got {spec!r}")
            axis, sizes = int(spec[0]), _check_buckets(spec[1], f"bucketed_jit argument {arg!r}")
            self._specs[arg] = (axis, sizes, spec[2] if len(spec) == 3 else 0)

    def _pad_arguments(self, args, kwargs):
        bound = self._signature.bind(*args, **kwargs)
        resize = {}   # axis -> {padded length: real length}
        for name, (axis, sizes, pad_value) in self._specs.items():
            if name not in bound.arguments:
                continue

            def pad(leaf, name=name, axis=axis, sizes=sizes, pad_value=pad_value):
                if not isinstance(leaf, Tracer):
                    leaf = np.asarray(leaf)
                if leaf.ndim == 0:
                    raise ValueError(f"{self._name}: bucketed argument {name!r} is a scalar")
                ax = axis + leaf.ndim if axis < 0 else axis
                if not 0 <= ax < leaf.ndim:
                    raise ValueError(f"{self._name}: bucket axis {axis} is out of bounds for argument {name!r} "
                                     f"of shape {leaf.shape}")
                n = leaf.shape[ax]
                try:
                    target = next_bucket(n, sizes)
                except ValueError as e:
                    raise ValueError(f"{self._name}: argument {name!r} along axis {axis}: {e}") from None
                resize.setdefault(ax, {}).setdefault(target, set()).add(n)
                return _pad_axis(leaf, ax, target, pad_value)

            bound.arguments[name] = tree_map(pad, bound.arguments[name])
        return bound, resize

    def __call__(self, *args, **kwargs):
        bound, resize = self._pad_arguments(args, kwargs)
        out = self._jitted(*bound.args, **bound.kwargs)
        # Slice back only where unambiguous: one real length padded to that size on that axis.
        cuts = {ax: {t: next(iter(ns)) for t, ns in m.items() if len(ns) == 1 and next(iter(ns)) != t}
                for ax, m in resize.items()}
        if not any(cuts.values()):
            return out
        leaves, tree = tree_flatten(out)
        return tree_unflatten(tree, [_unpad(leaf, cuts) for leaf in leaves])

    def lower(self, *args, **kwargs):
        """Lower for the padded shapes of these arguments."""
        bound, _ = self._pad_arguments(args, kwargs)
        return self._jitted.lower(*bound.args, **bound.kwargs)

    @property
    def signatures_compiled(self):
        return self._jitted.signatures_compiled

    def clear_cache(self):
        self._jitted.clear_cache()

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self):
        return f"<tracejit.bucketed_jit of {self._name} buckets={self._specs}>"


def _unpad(leaf, cuts):
    shape = getattr(leaf, "shape", None)
    if shape is None:
        return leaf
    index = []
    for ax, n in enumerate(shape):
        real = cuts.get(ax, {}).get(n)
        index.append(slice(0, real) if real is not None else slice(None))
    return leaf[tuple(index)] if any(s.stop is not None for s in index) else leaf


def bucketed_jit(fun: Callable, buckets: dict, **jit_kwargs) -> BucketedJitted:
    """``jit(fun)`` with some arguments padded to bucket sizes along one axis.

    Each call pads every bucketed argument along its axis to the smallest
    bucket ``>=`` its length, calls the jitted function on the padded
    arguments, and slices every output back along the same axis where the
    output's size equals the padded size (and exactly one real length was
    padded to it), so the caller sees unpadded results. N distinct lengths
    compile at most ``len(sizes)`` times.

    Parameters
    ----------
    fun : callable
        The function. It sees *padded* arguments: reductions over a padded
        axis must use a mask (see "Masking rules" in :mod:`tracejit.buckets`).
    buckets : dict
        ``{argument name or positional index: (axis, sizes)}`` or
        ``(axis, sizes, pad_value)``; pytree arguments pad every leaf.
    **jit_kwargs
        Passed to :func:`tracejit.jit` (``static_argnums``, ``donate_argnums``, ...).

    Examples
    --------
    >>> def process_sequences(seqs, masks):
    ...     return np.maximum(seqs, 0) * masks[:, :, None]
    >>> f = bucketed_jit(process_sequences, {"seqs": (1, (16, 32, 64)), "masks": (1, (16, 32, 64))})
    >>> for n in (10, 12, 20, 30):
    ...     out = f(np.ones((2, n, 4), np.float32), np.ones((2, n), np.float32))
    >>> out.shape, len(f.signatures_compiled)
    ((2, 30, 4), 2)
    """
    if not callable(fun):
        raise TypeError(f"bucketed_jit expects a callable, got {type(fun).__name__}")
    jit_kwargs.pop("keep_unused", None)
    return BucketedJitted(api.Jitted(fun, **jit_kwargs), buckets)


def jit(fun: Callable | None = None, *, buckets: dict | None = None, **jit_kwargs):
    """``tracejit.jit``: :func:`tracejit.api.jit`, with arguments padded to bucket sizes when ``buckets`` is given.

    Parameters
    ----------
    fun : callable, optional
        A function of arrays (and pytrees of arrays) returning arrays. When
        omitted, returns a decorator taking it.
    buckets : dict, optional
        ``{argument name or index: (axis, sizes)}`` (or ``(axis, sizes,
        pad_value)``): pad that axis up to the next size in ``sizes`` (and
        slice outputs back), so N distinct lengths compile at most
        ``len(sizes)`` times; see :func:`bucketed_jit`, and
        :func:`pad_to_bucket` for the masking rules.
    **jit_kwargs
        The options of :func:`tracejit.api.jit`: ``static_argnums``,
        ``static_argnames``, ``donate_argnums``, ``donate_argnames``,
        ``inline``, ``backend`` (and JAX's options it accepts and ignores).

    Returns
    -------
    Jitted or BucketedJitted
        A ``Jitted`` without ``buckets``, else a ``BucketedJitted`` wrapping one.

    Examples
    --------
    >>> f = jit(lambda x: x * 2, buckets={"x": (0, (4, 8))})
    >>> f(np.ones(3)).shape, f(np.ones(4)).shape, len(f.signatures_compiled)
    ((3,), (4,), 1)
    >>> @jit(static_argnums=1)
    ... def scale(x, k):
    ...     return x * k
    >>> scale(np.ones(2), 3)
    Array([3., 3.])
    """
    # api.jit checks the options here, whether or not there are buckets (the decorator form too).
    plain = api.jit(fun, **jit_kwargs)
    if buckets is None:
        return plain
    if fun is None:
        return functools.partial(jit, buckets=buckets, **jit_kwargs)
    return BucketedJitted(plain, buckets)
