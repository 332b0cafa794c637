"""``tracejit.test_util`` (as ``jax.test_util``): :func:`check_grads`, derivative checks by finite differences.

Examples
--------
>>> import numpy as np
>>> from tracejit.test_util import check_grads
>>> check_grads(np.sin, (np.array([0.5, 1.0]),), order=2)
"""
from __future__ import annotations

import functools

import numpy as np

from tracejit.transforms.api_ad import jvp as _jvp, vjp as _vjp
from tracejit.core.pytree import tree_flatten, tree_leaves, tree_map
from tracejit.core import dtypes as _dtypes

__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp"]

EPS = 1e-4

_DEFAULT_GRADIENT_TOLERANCE = {
    np.dtype(np.float16): 1e-2, _dtypes.bfloat16: 1e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5,
}


def _dtype(x):
    return np.asarray(x).dtype if not hasattr(x, "dtype") else np.dtype(x.dtype)


def _is_inexact(x) -> bool:
    return _dtypes.is_inexact(np.dtype(_dtype(x)))


def _tolerance(dtype, given):
    if given is not None:
        return given
    return _DEFAULT_GRADIENT_TOLERANCE.get(np.dtype(dtype), 1e-5)


def _check_close(xs, ys, atol, rtol, err_msg):
    x_leaves, x_tree = tree_flatten(xs)
    y_leaves, y_tree = tree_flatten(ys)
    if x_tree != y_tree:
        raise AssertionError(f"{err_msg}: tree structures differ: {x_tree} vs {y_tree}")
    for x, y in zip(x_leaves, y_leaves):
        x, y = np.asarray(x), np.asarray(y)
        if not (_dtypes.is_inexact(x.dtype) or _dtypes.is_inexact(y.dtype)):
            np.testing.assert_array_equal(x, y, err_msg=err_msg)
            continue
        dtype = np.promote_types(x.dtype, y.dtype)
        np.testing.assert_allclose(x.astype(dtype), y.astype(dtype), atol=_tolerance(dtype, atol),
                                   rtol=_tolerance(dtype, rtol), err_msg=err_msg)


def _rand_like(rng, tree):
    def one(x):
        x = np.asarray(x)
        if not _dtypes.is_inexact(x.dtype):
            return np.zeros(x.shape, x.dtype)
        r = rng.standard_normal(x.shape)
        if np.issubdtype(x.dtype, np.complexfloating):
            r = r + 1j * rng.standard_normal(x.shape)
        return np.asarray(r, dtype=x.dtype)
    return tree_map(one, tree)


def _add(xs, ys, scale):
    return tree_map(lambda x, y: np.asarray(x) + scale * np.asarray(y).astype(_dtype(x))
                    if _is_inexact(x) else x, xs, ys)


def _inner(xs, ys):
    total = 0.0
    for x, y in zip(tree_leaves(xs), tree_leaves(ys)):
        x, y = np.asarray(x), np.asarray(y)
        if _dtypes.is_inexact(x.dtype) and _dtypes.is_inexact(y.dtype):
            total = total + np.sum(x.astype(np.complex128 if np.iscomplexobj(x) or np.iscomplexobj(y)
                                            else np.float64) * y)
    return total


def numerical_jvp(f, primals, tangents, eps=EPS):
    """Central difference ``(f(x + eps t) - f(x - eps t)) / (2 eps)`` (pytrees of arrays).

    Examples
    --------
    >>> import numpy as np
    >>> round(float(numerical_jvp(np.square, (np.array(3.0),), (np.array(1.0),))), 6)
    6.0
    """
    f_pos = f(*_add(primals, tangents, eps))
    f_neg = f(*_add(primals, tangents, -eps))
    return tree_map(lambda a, b: (np.asarray(a) - np.asarray(b)) * (0.5 / eps)
                    if _is_inexact(a) else np.zeros(np.shape(a)), f_pos, f_neg)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Check ``f_jvp(args, tangents) -> (f(*args), jvp)`` against ``f`` and a numerical JVP in a random direction.

    Examples
    --------
    >>> import functools, numpy as np
    >>> from tracejit import jvp
    >>> check_jvp(np.exp, functools.partial(jvp, np.exp), (np.array([0.1, 0.2]),))
    """
    args = tuple(args)
    rng = np.random.RandomState(0)
    tangent = _rand_like(rng, args)
    v_out, t_out = f_jvp(args, tangent)
    v_expected = f(*args)
    t_expected = numerical_jvp(f, args, tangent, eps=eps)
    _check_close(v_out, v_expected, atol, rtol, f"{err_msg} primal" if err_msg else "primal")
    _check_close(t_out, t_expected, atol, rtol, f"{err_msg} tangent" if err_msg else "tangent")


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Check ``f_vjp(*args) -> (out, vjp_fn)`` through ``<vjp(c), t> == <c, numerical_jvp(t)>`` for random
    tangents ``t`` and cotangents ``c``.

    Examples
    --------
    >>> import functools, numpy as np
    >>> from tracejit import vjp
    >>> check_vjp(np.tanh, functools.partial(vjp, np.tanh), (np.array([0.1, 0.2]),))
    """
    args = tuple(args)
    rng = np.random.RandomState(0)
    v_out, vjpfun = f_vjp(*args)
    v_expected = f(*args)
    _check_close(v_out, v_expected, atol, rtol, f"{err_msg} primal" if err_msg else "primal")
    tangent = _rand_like(rng, args)
    tangent_out = numerical_jvp(f, args, tangent, eps=eps)
    cotangent = _rand_like(rng, v_out)
    cotangent_out = tree_map(np.conj, vjpfun(tree_map(np.conj, cotangent)))
    ip = _inner(tangent, cotangent_out)
    ip_expected = _inner(tangent_out, cotangent)
    dtypes = [_dtype(x) for x in tree_leaves(v_out) if _is_inexact(x)]
    dtype = functools.reduce(np.promote_types, dtypes) if dtypes else np.dtype(np.float64)
    np.testing.assert_allclose(ip, ip_expected, atol=_tolerance(dtype, atol), rtol=_tolerance(dtype, rtol),
                               err_msg=f"{err_msg} VJP inner product" if err_msg else "VJP inner product")


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check the derivatives of ``f`` at ``args`` against finite differences, up to ``order``.

    Parameters
    ----------
    f : callable
        Function of ``*args`` (pytrees of arrays) returning a pytree of arrays.
    args : tuple
        Where to check.
    order : int
        Highest derivative order checked (forward mode nests ``jvp``, reverse mode ``vjp``).
    modes : sequence of {"fwd", "rev"}
    atol, rtol : float, optional
        Default by dtype (float32: 2e-3, float64: 1e-5, ...).
    eps : float, optional
        Finite-difference step, default 1e-4.

    Raises
    ------
    AssertionError
        When a derivative disagrees with its numerical estimate.

    Examples
    --------
    >>> import numpy as np
    >>> check_grads(lambda x, y: np.sin(x) * y, (np.array([0.3]), np.array([2.0])), order=2)
    """
    args = tuple(args)
    eps = eps or EPS
    for m in modes:
        if m not in ("fwd", "rev"):
            raise ValueError(f"check_grads: unknown mode {m!r} (use 'fwd' and/or 'rev')")

    def _check(f, args, order, err_msg=""):
        if "fwd" in modes:
            fwd_msg = f"JVP of {err_msg}" if err_msg else "JVP"
            check_jvp(f, functools.partial(_jvp, f), args, atol, rtol, eps, fwd_msg)
            if order > 1:
                _check(functools.partial(_jvp, f), (args, args), order - 1, fwd_msg)
        if "rev" in modes:
            rev_msg = f"VJP of {err_msg}" if err_msg else "VJP"
            check_vjp(f, functools.partial(_vjp, f), args, atol, rtol, eps, rev_msg)
            if order > 1:
                def f_vjp(*primals):
                    out, vjp_fn = _vjp(f, *primals)
                    return vjp_fn(out)
                _check(f_vjp, args, order - 1, rev_msg)

    _check(f, args, order)
