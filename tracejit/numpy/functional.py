"""Function application: vectorize, apply_along_axis, apply_over_axes,
piecewise.

On concrete inputs these run NumPy's versions (which call the Python
function per element or per slice). On traced inputs the function is traced
once and batched with ``tracejit.vmap``, as ``jax.numpy`` does, so it must be
written with array operations (``jnp.*``), not Python control flow on values.
"""
from __future__ import annotations

import math
import re

import numpy as np

from tracejit.core import dtypes
from tracejit.numpy._util import aval, broadcast_shapes, canonicalize_axis, convert, eager, is_tracer, to_operand
from tracejit.numpy import ufuncs as U
from tracejit.numpy.misc import where
from tracejit.numpy.shape import broadcast_to, expand_dims, moveaxis, reshape, transpose
from tracejit.transforms.api_vmap import vmap

__all__ = ["vectorize", "apply_along_axis", "apply_over_axes", "piecewise"]


def _array(x):
    x = to_operand(x)
    return x if is_tracer(x) or isinstance(x, np.ndarray) else np.asarray(x)


_DIM = r"\w+"
_CORE = rf"(?:{_DIM}(?:,{_DIM})*)?"
_ARGS = rf"\({_CORE}\)(?:,\({_CORE}\))*"
_SIG = rf"^{_ARGS}->{_ARGS}$"


def _parse_signature(sig):
    sig = sig.replace(" ", "")
    if not re.match(_SIG, sig):
        raise ValueError(f"not a valid gufunc signature: {sig}")
    ins, outs = sig.split("->")
    parse = lambda s: [tuple(d for d in g.split(",") if d) for g in re.findall(r"\(([^)]*)\)", s)]  # noqa: E731
    return parse(ins), parse(outs)


class vectorize:
    """Generalized function vectorization (``numpy.vectorize``).

    Concrete calls run ``numpy.vectorize``. Traced calls batch ``pyfunc``
    with ``vmap`` over the broadcast loop dimensions (core dimensions from
    ``signature``, as in ``jax.numpy.vectorize``); ``otypes`` casts the
    outputs.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> f = jnp.vectorize(lambda a, b: a + 2 * b)
    >>> f(jnp.array([1, 2]), 3)
    array([7, 8])
    """

    def __init__(self, pyfunc, otypes=None, doc=None, excluded=None, cache=False, signature=None):
        self.pyfunc = pyfunc
        self.otypes = otypes
        self.excluded = set(excluded or ())
        self.signature = signature
        self.__doc__ = doc if doc is not None else getattr(pyfunc, "__doc__", None)
        self.__name__ = getattr(pyfunc, "__name__", "vectorized")
        self._np = np.vectorize(pyfunc, otypes=otypes, excluded=excluded, cache=cache, signature=signature)

    def __call__(self, *args, **kwargs):
        if eager(*args, *kwargs.values()):
            return self._np(*args, **kwargs)
        fixed_kw = {k: v for k, v in kwargs.items() if k in self.excluded}
        names = [k for k in kwargs if k not in self.excluded]
        pos = [i for i in range(len(args)) if i not in self.excluded]
        mapped = [args[i] for i in pos] + [kwargs[k] for k in names]
        if self.signature is not None:
            in_core, out_core = _parse_signature(self.signature)
            if len(in_core) != len(mapped):
                raise TypeError(f"wrong number of positional arguments: expected {len(in_core)}, got {len(mapped)}")
        else:
            in_core, out_core = [()] * len(mapped), None
        ops = [_array(a) for a in mapped]
        sizes, loops = {}, []
        for x, core in zip(ops, in_core):
            shape = aval(x).shape
            if len(shape) < len(core):
                raise ValueError(f"input with shape {shape} does not have enough dimensions for its core "
                                 f"dimensions {core}")
            for d, s in zip(core, shape[len(shape) - len(core):]):
                if sizes.setdefault(d, s) != s:
                    raise ValueError(f"inconsistent size for core dimension {d!r}: {sizes[d]} vs {s}")
            loops.append(shape[:len(shape) - len(core)])
        B = broadcast_shapes(*loops) if loops else ()
        N = math.prod(B)
        flat = [reshape(broadcast_to(x, B + aval(x).shape[len(L):]), (N,) + aval(x).shape[len(L):])
                for x, L in zip(ops, loops)]

        def one(*xs):
            a = list(args)
            for i, v in zip(pos, xs[:len(pos)]):
                a[i] = v
            kw = dict(fixed_kw)
            kw.update(zip(names, xs[len(pos):]))
            return self.pyfunc(*a, **kw)

        out = vmap(one)(*flat)
        multi = isinstance(out, tuple)
        outs = list(out) if multi else [out]
        res = []
        for k, o in enumerate(outs):
            o = _array(o)
            o = reshape(o, B + aval(o).shape[1:])
            if self.otypes:
                ot = self.otypes if isinstance(self.otypes, str) else list(self.otypes)
                o = convert(o, np.dtype(ot[k]))
            res.append(o)
        return tuple(res) if multi else res[0]


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """Apply ``func1d`` to the 1-D slices of ``arr`` along ``axis`` (``numpy.apply_along_axis``).

    The slices' results replace ``axis`` in the output shape.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.apply_along_axis(lambda r: r[0] + r[-1], 1, jnp.arange(6).reshape(2, 3))
    Array([2, 8])
    """
    if eager(arr, *args, *kwargs.values()):
        return np.apply_along_axis(func1d, axis, arr, *args, **kwargs)
    x = _array(arr)
    nd = aval(x).ndim
    ax = canonicalize_axis(axis, nd)
    x = moveaxis(x, ax, -1)
    batch = aval(x).shape[:-1]
    N = math.prod(batch)
    flat = reshape(x, (N, aval(x).shape[-1]))
    out = _array(vmap(lambda r: func1d(r, *args, **kwargs))(flat))
    out_core = aval(out).shape[1:]
    out = reshape(out, batch + out_core)
    # Put the result dimensions where ``axis`` was.
    nb, nc = len(batch), len(out_core)
    perm = list(range(ax)) + list(range(nb, nb + nc)) + list(range(ax, nb))
    return transpose(out, perm) if perm != list(range(nb + nc)) else out


def apply_over_axes(func, a, axes):
    """Apply ``func(a, axis)`` repeatedly over ``axes``, keeping the number of dimensions.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.apply_over_axes(jnp.sum, jnp.ones((2, 3)), [0, 1]).tolist()
    [[6.0]]
    """
    if eager(a):
        return np.apply_over_axes(func, a, axes)
    val = _array(a)
    N = aval(val).ndim
    if np.ndim(axes) == 0:
        axes = (axes,)
    for axis in axes:
        if axis < 0:
            axis = N + axis
        res = _array(func(val, axis))
        if aval(res).ndim == aval(val).ndim:
            val = res
        else:
            res = expand_dims(res, axis)
            if aval(res).ndim == aval(val).ndim:
                val = res
            else:
                raise ValueError("function is not returning an array of the correct shape")
    return val


def piecewise(x, condlist, funclist, *args, **kw):
    """Piecewise-defined function (``numpy.piecewise``).

    Under jit every function is evaluated on all of ``x`` and the results are
    selected with ``where`` (later conditions win, as in NumPy); values are
    cast to ``x``'s dtype. One extra function is the default where no
    condition holds.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> x = jnp.array([-2.0, 0.5, 3.0])
    >>> jnp.piecewise(x, [x < 0, x > 1], [lambda v: -v, 10.0, lambda v: v])
    Array([ 2. ,  0.5, 10. ])
    """
    if eager(x, condlist if isinstance(condlist, (list, tuple)) else [condlist]):
        return np.piecewise(x, condlist, funclist, *args, **kw)
    xa = _array(x)
    n2 = len(funclist)
    if isinstance(condlist, (list, tuple)):
        conds = [_array(c) for c in condlist]
    else:
        c = _array(condlist)
        if aval(c).ndim == aval(xa).ndim + 1:
            conds = [c[i] for i in range(aval(c).shape[0])]
        else:
            conds = [c]
    conds = [convert(c, dtypes.bool_) for c in conds]
    n = len(conds)
    if n == n2 - 1:
        from tracejit.numpy.reductions import any as any_
        from tracejit.numpy.shape import stack
        conds.append(U.logical_not(any_(stack([broadcast_to(c, aval(xa).shape) for c in conds]), axis=0))
                     if n else np.ones(aval(xa).shape, bool))
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    dt = aval(xa).dtype
    from tracejit.numpy.creation import zeros_like
    y = zeros_like(xa)
    for cond, f in zip(conds, funclist):
        val = f(xa, *args, **kw) if callable(f) else f
        y = where(cond, convert(_array(val), dt), y)
    return y
