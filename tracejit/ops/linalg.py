"""Linear-algebra and FFT primitives, run as *library steps*.

Each impl rule calls ``numpy.linalg`` / ``numpy.fft`` (LAPACK, pocketfft),
batched over leading axes exactly as NumPy batches. Output shapes follow
from the operand shapes; output dtypes are whatever NumPy 2 returns for the
operand dtypes, found once per dtype by running the NumPy function on a tiny
probe input (so float32 stays float32, ints become float64, ``fft`` of
float32 gives complex64, and unsupported dtypes such as float16 in
``linalg`` raise NumPy's own error at trace time).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from tracejit.core.avals import ShapedArray
from tracejit.core.primitive import Primitive, def_rules


def _probe_value(shape, dtype):
    """A small well-conditioned value (identity-like: invertible, positive definite)."""
    if len(shape) < 2:
        return np.ones(shape, dtype)
    return np.ascontiguousarray(np.broadcast_to(np.eye(shape[-2], shape[-1]), shape).astype(dtype))


@functools.lru_cache(maxsize=None)
def _probe_dtypes(name, call, in_dtypes, in_ndims, params):
    args = [_probe_value((2,) * nd, d) for d, nd in zip(in_dtypes, in_ndims)]
    try:
        outs = call(*args, **dict(params))
    except TypeError as e:
        raise TypeError(f"{name}: {e}") from None
    return tuple(np.asarray(o).dtype for o in outs)


def _library_primitive(name, call, shapes, cost=None, multiple=False):
    """A primitive whose impl is ``call(*arrays, **params) -> list`` and whose
    abstract eval is ``shapes(*avals, **params) -> list of shapes`` plus NumPy's dtypes."""

    def abstract_eval(*avals, **params):
        out_shapes = shapes(*avals, **params)
        out_dtypes = _probe_dtypes(name, call, tuple(a.dtype for a in avals), tuple(a.ndim for a in avals),
                                   tuple(sorted(params.items())))
        return [ShapedArray(s, d) for s, d in zip(out_shapes, out_dtypes)]

    def impl(*args, **params):
        with np.errstate(all="ignore"):
            outs = call(*args, **params)
        avals = abstract_eval(*(ShapedArray(np.shape(a), np.asarray(a).dtype) for a in args), **params)
        return [np.asarray(o, dtype=a.dtype).reshape(a.shape) for o, a in zip(outs, avals)]

    prim = Primitive(name, multiple_results=multiple)
    return def_rules(prim, abstract_eval=abstract_eval, impl=impl, cost=cost or _cubic_cost)


def _cubic_cost(in_avals, out_avals, **_):
    a = in_avals[0]
    n = max(a.shape[-2:]) if a.ndim >= 2 else 1
    batch = math.prod(a.shape[:-2]) if a.ndim > 2 else 1
    return {"flops": batch * n ** 3, "transcendentals": 0}


def _err(name, msg):
    return TypeError(f"{name}: {msg}")


def _square(name, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise _err(name, f"last 2 dimensions of the array must be square, got shape {a.shape}")
    return a.shape


def _matrix(name, a):
    if a.ndim < 2:
        raise _err(name, f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    return a.shape


# --------------------------------------------------------------------------- linalg

def _solve_shapes(a, b):
    _square("solve", a)
    if b.ndim < 2 or b.shape[:-2] != a.shape[:-2] or b.shape[-2] != a.shape[-1]:
        raise _err("solve", f"b must have shape batch + (n, k) matching a {a.shape}, got {b.shape}")
    return [b.shape]


solve_p = _library_primitive("solve", lambda a, b: [np.linalg.solve(a, b)], _solve_shapes)
inv_p = _library_primitive("inv", lambda a: [np.linalg.inv(a)], lambda a: [_square("inv", a)])
def _cholesky(a, *, upper, nan_on_failure=False):
    """NumPy's factor. A matrix that is not positive definite raises ``LinAlgError`` (NumPy), or with
    ``nan_on_failure`` (``jax.lax.linalg.cholesky``) gives NaN in its factor's triangle and zeros in
    the other, as JAX's LAPACK call does; the other matrices of a batch factor normally."""
    try:
        return [np.linalg.cholesky(a, upper=upper)]
    except np.linalg.LinAlgError:
        if not nan_on_failure:
            raise
    n = a.shape[-1]
    flat = a.reshape((-1, n, n))
    out = np.empty(flat.shape, np.linalg.cholesky(np.eye(1, dtype=a.dtype)).dtype)
    nan = complex(np.nan, np.nan) if out.dtype.kind == "c" else np.nan       # JAX's complex NaN: nan+nanj
    triangle = np.triu(np.ones((n, n), bool)) if upper else np.tril(np.ones((n, n), bool))
    failed = np.where(triangle, np.asarray(nan, out.dtype), np.zeros((), out.dtype))
    for i, m in enumerate(flat):
        try:
            out[i] = np.linalg.cholesky(m, upper=upper)
        except np.linalg.LinAlgError:
            out[i] = failed
    return [out.reshape(a.shape)]


cholesky_p = _library_primitive("cholesky", _cholesky,
                                lambda a, *, upper, nan_on_failure=False: [_square("cholesky", a)])
det_p = _library_primitive("det", lambda a: [np.linalg.det(a)], lambda a: [_square("det", a)[:-2]])
slogdet_p = _library_primitive("slogdet", lambda a: list(np.linalg.slogdet(a)),
                               lambda a: [_square("slogdet", a)[:-2]] * 2, multiple=True)


def _eigh_shapes(a, *, UPLO, compute_v):
    s = _square("eigh", a)
    return [s[:-1], s] if compute_v else [s[:-1]]


eigh_p = _library_primitive(
    "eigh", lambda a, *, UPLO, compute_v: list(np.linalg.eigh(a, UPLO)) if compute_v
    else [np.linalg.eigvalsh(a, UPLO)], _eigh_shapes, multiple=True)


def _qr_shapes(a, *, mode):
    *batch, m, n = _matrix("qr", a)
    k = min(m, n)
    if mode == "reduced":
        return [(*batch, m, k), (*batch, k, n)]
    if mode == "complete":
        return [(*batch, m, m), (*batch, m, n)]
    if mode == "r":
        return [(*batch, k, n)]
    raise _err("qr", f"mode must be 'reduced', 'complete' or 'r', got {mode!r}")


def _qr_call(a, *, mode):
    out = np.linalg.qr(a, mode=mode)
    return [out] if mode == "r" else list(out)


qr_p = _library_primitive("qr", _qr_call, _qr_shapes, multiple=True)


def _svd_shapes(a, *, full_matrices, compute_uv, hermitian):
    *batch, m, n = _matrix("svd", a)
    k = min(m, n)
    if not compute_uv:
        return [(*batch, k)]
    if full_matrices:
        return [(*batch, m, m), (*batch, k), (*batch, n, n)]
    return [(*batch, m, k), (*batch, k), (*batch, k, n)]


def _svd_call(a, *, full_matrices, compute_uv, hermitian):
    out = np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv, hermitian=hermitian)
    return list(out) if compute_uv else [out]


svd_p = _library_primitive("svd", _svd_call, _svd_shapes, multiple=True)


def _lstsq_shapes(a, b, *, rcond):
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[0]:
        raise _err("lstsq", f"a must be (M, N) and b (M, K) with equal M, got {a.shape} and {b.shape}")
    m, n = a.shape
    return [(n, b.shape[1]), (b.shape[1],), (), (min(m, n),)]


def _lstsq_call(a, b, *, rcond):
    x, _, rank, s = np.linalg.lstsq(a, b, rcond=rcond)
    # Residuals are always computed (as jax.numpy), so their shape is static;
    # tracejit.numpy trims them where NumPy's shape is known statically.
    r = b - a @ x
    resid = np.sum((r * np.conj(r)).real, axis=0).astype(s.dtype)
    return [x, resid, np.asarray(rank, np.int32), s]


lstsq_p = _library_primitive("lstsq", _lstsq_call, _lstsq_shapes, multiple=True)


def _pinv_shapes(a, *, rcond, hermitian):
    *batch, m, n = _matrix("pinv", a)
    return [(*batch, n, m)]


pinv_p = _library_primitive("pinv", lambda a, *, rcond, hermitian: [np.linalg.pinv(a, rcond=rcond,
                                                                                  hermitian=hermitian)],
                            _pinv_shapes)


# --------------------------------------------------------------------------- fft

_FFT_KINDS = {"fft": np.fft.fftn, "ifft": np.fft.ifftn, "rfft": np.fft.rfftn, "irfft": np.fft.irfftn}


def _fft_shapes(x, *, kind, lengths, axes, norm):
    if kind not in _FFT_KINDS:
        raise _err("fft", f"unknown fft kind {kind!r}")
    if len(lengths) != len(axes) or len(set(axes)) != len(axes) or any(not 0 <= a < x.ndim for a in axes):
        raise _err("fft", f"invalid axes {axes} / lengths {lengths} for shape {x.shape}")
    if any(n < 1 for n in lengths):
        raise _err("fft", f"invalid number of data points {lengths} specified")
    shape = list(x.shape)
    for a, n in zip(axes, lengths):
        shape[a] = n
    if kind == "rfft":
        shape[axes[-1]] = lengths[-1] // 2 + 1
    return [tuple(shape)]


def _fft_call(x, *, kind, lengths, axes, norm):
    return [_FFT_KINDS[kind](x, s=lengths, axes=axes, norm=norm)]


def _fft_cost(in_avals, out_avals, **_):
    n = max(out_avals[0].size, in_avals[0].size)
    return {"flops": int(5 * n * max(1.0, math.log2(max(n, 2)))), "transcendentals": 0}


fft_p = _library_primitive("fft", _fft_call, _fft_shapes, cost=_fft_cost)
"""``fft[kind, lengths, axes, norm]``: ``numpy.fft.{fftn, ifftn, rfftn, irfftn}``
with the given ``s=lengths`` over ``axes``."""

LINALG_PRIMITIVES = {solve_p, inv_p, cholesky_p, det_p, slogdet_p, eigh_p, qr_p, svd_p, lstsq_p, pinv_p, fft_p}
