"""``tracejit.numpy.linalg``: NumPy's linear algebra, traceable.

Factorizations and solvers (solve, inv, cholesky, qr, svd, eigh, det,
slogdet, lstsq, pinv) are library steps that call LAPACK through
``numpy.linalg``, batched over leading axes as NumPy does. Norms, powers and
ranks are composed from them. Results match NumPy 2's dtypes (float32 stays
float32; integers and bools compute in float64).

Errors NumPy raises at run time (``LinAlgError`` for a singular matrix in
``solve``/``inv`` or a non positive-definite one in ``cholesky``) are raised
the same way when a compiled function runs.
"""
from __future__ import annotations

import math
import operator
from collections import namedtuple

import numpy as np

from tracejit.core import dtypes
from tracejit.ops.linalg import (cholesky_p, det_p, eigh_p, inv_p, lstsq_p, pinv_p, qr_p, slogdet_p, solve_p,
                                 svd_p)
from tracejit.numpy._util import aval, canonicalize_axis, convert, eager, is_tracer, promote, to_operand
from tracejit.numpy import ufuncs as U

__all__ = ["LinAlgError", "solve", "inv", "cholesky", "qr", "svd", "svdvals", "eigh", "eigvalsh", "eig",
           "eigvals", "det", "slogdet", "norm", "vector_norm", "matrix_norm", "lstsq", "matrix_power",
           "pinv", "matrix_rank", "multi_dot", "matrix_transpose", "outer", "vecdot", "diagonal", "trace",
           "cross", "matmul", "tensordot", "cond", "tensorinv", "tensorsolve"]

LinAlgError = np.linalg.LinAlgError

QRResult = namedtuple("QRResult", ["Q", "R"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
LstsqResult = namedtuple("LstsqResult", ["x", "residuals", "rank", "s"])


def _array(x):
    x = to_operand(x)
    return x if is_tracer(x) or isinstance(x, np.ndarray) else np.asarray(x)


def _matrix_operand(fn, a, square=True):
    x = _array(a)
    s = aval(x).shape
    if len(s) < 2:
        raise LinAlgError(f"{len(s)}-dimensional array given. Array must be at least two-dimensional")
    if square and s[-1] != s[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    return x


def _static_float(v, fn, what):
    if is_tracer(v):
        raise TypeError(f"linalg.{fn}: {what} must be static under jit (a Python float)")
    return None if v is None else float(v)


# --------------------------------------------------------------------------- solvers

def solve(a, b):
    """Solve ``a @ x = b`` (``b`` is a vector only when it is 1-D, as NumPy 2).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.solve(jnp.array([[2.0, 0], [0, 4]]), jnp.array([2.0, 4]))
    Array([1., 1.])
    """
    if eager(a, b):
        return np.linalg.solve(a, b)
    from tracejit.numpy.shape import broadcast_to, reshape
    a, b = promote(_array(a), _array(b))
    a, b = _matrix_operand("solve", a), _array(b)
    sa, sb = aval(a).shape, aval(b).shape
    n = sa[-1]
    vector = len(sb) == 1
    if vector:
        if sb[0] != n:
            raise ValueError(f"solve: b has {sb[0]} rows, expected {n}")
        b = reshape(b, (n, 1))
        sb = (n, 1)
    if sb[-2] != n:
        raise ValueError(f"solve: b has {sb[-2]} rows, expected {n} (shapes {sa} and {sb})")
    batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    a = broadcast_to(a, batch + sa[-2:]) if sa[:-2] != batch else a
    b = broadcast_to(b, batch + sb[-2:]) if sb[:-2] != batch else b
    x = solve_p.bind(a, b)
    return reshape(x, batch + (n,)) if vector else x


def inv(a):
    """Inverse of (each) square matrix.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.inv(jnp.array([[2.0, 0], [0, 4]]))
    Array([[0.5 , 0.  ],
           [0.  , 0.25]])
    """
    if eager(a):
        return np.linalg.inv(a)
    return inv_p.bind(_matrix_operand("inv", a))


def cholesky(a, /, *, upper=False):
    """Cholesky factor ``L`` with ``a = L @ L.conj().T`` (or upper ``U``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.cholesky(jnp.array([[4.0, 0], [0, 9]]))
    Array([[2., 0.],
           [0., 3.]])
    """
    if eager(a):
        return np.linalg.cholesky(a, upper=upper)
    return cholesky_p.bind(_matrix_operand("cholesky", a), upper=bool(upper))


def qr(a, mode="reduced"):
    """QR factorization (modes 'reduced', 'complete', 'r').

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> q, r = jnp.linalg.qr(jnp.eye(2))
    >>> r.shape
    (2, 2)
    """
    if eager(a):
        return np.linalg.qr(a, mode=mode)
    if mode not in ("reduced", "complete", "r"):
        raise NotImplementedError(f"qr(mode={mode!r}) is not supported on traced arrays")
    outs = qr_p.bind(_matrix_operand("qr", a, square=False), mode=mode)
    return outs[0] if mode == "r" else QRResult(*outs)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """Singular value decomposition ``a = U @ diag(S) @ Vh``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.svd(jnp.array([[3.0, 0], [0, 4]]), compute_uv=False)
    Array([4., 3.])
    """
    if eager(a):
        return np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv, hermitian=hermitian)
    outs = svd_p.bind(_matrix_operand("svd", a, square=False), full_matrices=bool(full_matrices),
                      compute_uv=bool(compute_uv), hermitian=bool(hermitian))
    return SVDResult(*outs) if compute_uv else outs[0]


def svdvals(x, /):
    """Singular values (descending).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.svdvals(jnp.eye(2))
    Array([1., 1.])
    """
    return svd(x, compute_uv=False)


def _check_uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")


def eigh(a, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.eigh(jnp.array([[2.0, 0], [0, 1]])).eigenvalues
    Array([1., 2.])
    """
    if eager(a):
        return np.linalg.eigh(a, UPLO)
    _check_uplo(UPLO)
    return EighResult(*eigh_p.bind(_matrix_operand("eigh", a), UPLO=UPLO, compute_v=True))


def eigvalsh(a, UPLO="L"):
    """Eigenvalues (ascending) of a Hermitian matrix.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.eigvalsh(jnp.array([[2.0, 0], [0, 1]]))
    Array([1., 2.])
    """
    if eager(a):
        return np.linalg.eigvalsh(a, UPLO)
    _check_uplo(UPLO)
    return eigh_p.bind(_matrix_operand("eigvalsh", a), UPLO=UPLO, compute_v=False)[0]


def _general_eig(name):
    def fn(a):
        if eager(a):
            return getattr(np.linalg, name)(a)
        raise NotImplementedError(
            f"linalg.{name} is not supported on traced arrays: NumPy returns a real or a complex result "
            "depending on the values, which a static program cannot express. Use eigh/eigvalsh for "
            "symmetric/Hermitian matrices, or call it outside jit.")
    fn.__name__ = name
    fn.__doc__ = (f"``numpy.linalg.{name}`` (eager only: its output dtype depends on the data).\n\n"
                  f"Examples\n--------\n>>> import tracejit.numpy as jnp\n"
                  f">>> jnp.linalg.{name}(jnp.eye(2))  # doctest: +SKIP\n")
    return fn


eig = _general_eig("eig")
eigvals = _general_eig("eigvals")


def det(a):
    """Determinant of (each) square matrix.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.linalg.det(jnp.array([[2.0, 0], [0, 3]])))
    6.0
    """
    if eager(a):
        return np.linalg.det(a)
    return det_p.bind(_matrix_operand("det", a))


def slogdet(a):
    """Sign and natural log of the absolute determinant.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.slogdet(jnp.array([[-2.0, 0], [0, 1]])).sign
    Array(-1.)
    """
    if eager(a):
        return np.linalg.slogdet(a)
    return SlogdetResult(*slogdet_p.bind(_matrix_operand("slogdet", a)))


def lstsq(a, b, rcond=None):
    """Least-squares solution of ``a @ x = b``: ``(x, residuals, rank, s)``.

    Under jit the residuals have a static shape: empty when ``M <= N`` (as
    NumPy), otherwise the squared residual norms per column; NumPy also
    returns them empty for rank-deficient ``a``, which depends on the data,
    so there the computed residuals are returned (as jax.numpy does).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.lstsq(jnp.array([[1.0], [1.0]]), jnp.array([1.0, 3.0]))[0]
    Array([2.])
    """
    if eager(a, b):
        return np.linalg.lstsq(a, b, rcond=rcond)
    from tracejit.numpy.shape import reshape
    from tracejit.numpy.indexing import getitem
    a, b = promote(_array(a), _array(b))
    a, b = _array(a), _array(b)
    if aval(a).ndim != 2 or aval(b).ndim not in (1, 2):
        raise LinAlgError(f"lstsq: a must be 2-D and b 1-D or 2-D, got {aval(a).shape} and {aval(b).shape}")
    m, n = aval(a).shape
    if aval(b).shape[0] != m:
        raise LinAlgError("Incompatible dimensions")
    vector = aval(b).ndim == 1
    b2 = reshape(b, (m, 1)) if vector else b
    x, resid, rank, s = lstsq_p.bind(a, b2, rcond=_static_float(rcond, "lstsq", "rcond"))
    if vector:
        x = reshape(x, (n,))
    if m <= n:
        resid = getitem(resid, slice(0, 0))
    return LstsqResult(x, resid, rank, s)


def pinv(a, rcond=None, hermitian=False, *, rtol=None):
    """Moore-Penrose pseudo-inverse.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.pinv(jnp.array([[2.0, 0], [0, 0]]))
    Array([[0.5, 0. ],
           [0. , 0. ]])
    """
    if eager(a):
        return np.linalg.pinv(a, rcond=rcond, hermitian=hermitian, **({"rtol": rtol} if rtol is not None else {}))
    if rtol is not None:
        if rcond is not None:
            raise ValueError("`rtol` and `rcond` can't be both set.")
        rcond = rtol
    return pinv_p.bind(_matrix_operand("pinv", a, square=False), rcond=_static_float(rcond, "pinv", "rcond"),
                       hermitian=bool(hermitian))


def tensorinv(a, ind=2):
    """Inverse of ``a`` for ``tensordot(..., ind)``: ``a`` viewed as a square matrix of its first
    ``ind`` axes by the rest, inverted, with shape ``a.shape[ind:] + a.shape[:ind]``
    (``numpy.linalg.tensorinv``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.tensorinv(2 * jnp.eye(4).reshape(4, 2, 2), ind=1).shape
    (2, 2, 4)
    """
    if eager(a):
        return np.linalg.tensorinv(a, ind=ind)
    from tracejit.numpy.shape import reshape
    x = _array(a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    shape = aval(x).shape
    rows, cols = math.prod(shape[ind:]), math.prod(shape[:ind])
    if rows != cols:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    return reshape(inv(reshape(x, (rows, cols))), shape[ind:] + shape[:ind])


def tensorsolve(a, b, axes=None):
    """Solve ``tensordot(a, x, axes=x.ndim) = b`` for ``x`` (``numpy.linalg.tensorsolve``).

    ``axes`` (static) are moved to the end of ``a`` first; ``x`` has shape ``a.shape[b.ndim:]``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.tensorsolve(2 * jnp.eye(4).reshape(2, 2, 4), jnp.ones((2, 2)))
    Array([0.5, 0.5, 0.5, 0.5])
    """
    if eager(a, b):
        return np.linalg.tensorsolve(a, b, axes=axes)
    from tracejit.numpy.shape import ravel, reshape, transpose
    x, y = _array(a), _array(b)
    an, bn = aval(x).ndim, aval(y).ndim
    if axes is not None:
        order = list(range(an))
        for k in axes:
            order.remove(k)
            order.insert(an, k)
        x = transpose(x, order)
    shape = aval(x).shape
    out_shape = shape[-(an - bn):]
    n = math.prod(out_shape)
    if math.prod(shape) != n * n:
        raise LinAlgError("Input arrays must satisfy the requirement prod(a.shape[b.ndim:]) == "
                          "prod(a.shape[:b.ndim])")
    return reshape(solve(reshape(x, (n, n)), ravel(y)), out_shape)


# --------------------------------------------------------------------------- composed

def matrix_power(a, n):
    """Raise a square matrix to the (static) integer power ``n``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.matrix_power(jnp.array([[1, 1], [0, 1]]), 3).tolist()
    [[1, 3], [0, 1]]
    """
    if eager(a):
        return np.linalg.matrix_power(a, n)
    if is_tracer(n):
        raise TypeError("matrix_power: the exponent must be a static Python int under jit")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError("exponent must be an integer") from None
    from tracejit.numpy.contractions import matmul
    from tracejit.numpy.creation import eye
    from tracejit.numpy.shape import broadcast_to
    x = _matrix_operand("matrix_power", a)
    if n == 0:
        m = aval(x).shape[-1]
        return broadcast_to(eye(m, dtype=aval(x).dtype), aval(x).shape)
    if n < 0:
        x, n = inv(x), -n
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def _as_inexact(x):
    d = aval(x).dtype
    return x if dtypes.is_inexact(d) else convert(x, dtypes.float64)


def _real_dtype(d):
    return {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(d, d)


def _abs_sq(x):
    from tracejit.numpy.misc import real, imag
    if dtypes.is_complex(aval(x).dtype):
        return U.add(U.square(real(x)), U.square(imag(x)))
    return U.square(x)


def _vector_norm(x, ord, axes, keepdims):
    from tracejit.numpy.reductions import max as max_, min as min_, sum as sum_
    rd = _real_dtype(aval(x).dtype)
    if ord is None or ord == 2:
        return U.sqrt(sum_(_abs_sq(x), axis=axes, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    ax = U.absolute(x)
    if ord == np.inf:
        return max_(ax, axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return min_(ax, axis=axes, keepdims=keepdims)
    if ord == 0:
        return convert(sum_(U.not_equal(x, convert(np.asarray(0), aval(x).dtype)), axis=axes,
                            keepdims=keepdims), rd)
    if ord == 1:
        return sum_(ax, axis=axes, keepdims=keepdims)
    p = np.asarray(ord, rd)[()]
    return U.power(sum_(U.power(ax, p), axis=axes, keepdims=keepdims), U.true_divide(np.asarray(1, rd)[()], p))


def _matrix_norm(x, ord, row, col, keepdims):
    from tracejit.numpy.reductions import max as max_, min as min_, sum as sum_
    from tracejit.numpy.shape import moveaxis, reshape
    nd = aval(x).ndim
    if row == col:
        raise ValueError("Duplicate axes given.")

    def keep(r):
        if not keepdims:
            return r
        shape = list(aval(x).shape)
        shape[row] = shape[col] = 1
        return reshape(r, tuple(shape))

    if ord in (2, -2, "nuc"):
        s = svd(moveaxis(x, (row, col), (nd - 2, nd - 1)), compute_uv=False)
        out = max_(s, axis=-1) if ord == 2 else min_(s, axis=-1) if ord == -2 else sum_(s, axis=-1)
        return keep(out)
    if ord in (None, "fro", "f"):
        return keep(U.sqrt(sum_(_abs_sq(x), axis=(row, col))))
    ax = U.absolute(x)
    if ord in (1, -1):
        red, other = row, col
    elif ord in (np.inf, -np.inf):
        red, other = col, row
    else:
        raise ValueError("Invalid norm order for matrices.")
    sums = sum_(ax, axis=red)
    if other > red:
        other -= 1
    out = max_(sums, axis=other) if ord in (1, np.inf) else min_(sums, axis=other)
    return keep(out)


def norm(x, ord=None, axis=None, keepdims=False):
    """Matrix or vector norm (``numpy.linalg.norm``): vector ords ``inf, -inf,
    0, 1, 2, p``; matrix ords ``'fro', 'nuc', inf, -inf, 1, -1, 2, -2``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.linalg.norm(jnp.array([3.0, 4.0])))
    5.0
    """
    if eager(x):
        return np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    from tracejit.numpy.shape import ravel, reshape
    v = _as_inexact(_array(x))
    nd = aval(v).ndim
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            out = U.sqrt(_sum_all(_abs_sq(ravel(v))))
            return reshape(out, (1,) * nd) if keepdims else out
        if nd == 1:
            return _vector_norm(v, ord, (0,), keepdims)
        if nd == 2:
            return _matrix_norm(v, ord, 0, 1, keepdims)
        raise ValueError("Improper number of dimensions to norm.")
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = tuple(canonicalize_axis(a, nd) for a in axes)
    if len(axes) == 1:
        return _vector_norm(v, ord, axes, keepdims)
    if len(axes) == 2:
        return _matrix_norm(v, ord, axes[0], axes[1], keepdims)
    raise ValueError("Improper number of dimensions to norm.")


def _sum_all(x):
    from tracejit.numpy.reductions import sum as sum_
    return sum_(x)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """Array-API vector norm over ``axis`` (all axes, flattened, when None).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.linalg.vector_norm(jnp.ones((2, 2))))
    2.0
    """
    if eager(x):
        return np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
    from tracejit.numpy.shape import ravel, reshape
    v = _as_inexact(_array(x))
    nd = aval(v).ndim
    if axis is None:
        out = _vector_norm(ravel(v), ord, (0,), False)
        return reshape(out, (1,) * nd) if keepdims else out
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return _vector_norm(v, ord, tuple(canonicalize_axis(a, nd) for a in axes), keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """Array-API matrix norm over the last two axes.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.linalg.matrix_norm(jnp.eye(2), ord="nuc"))
    2.0
    """
    if eager(x):
        return np.linalg.matrix_norm(x, keepdims=keepdims, ord=ord)
    v = _as_inexact(_matrix_operand("matrix_norm", x, square=False))
    nd = aval(v).ndim
    return _matrix_norm(v, ord, nd - 2, nd - 1, keepdims)


def cond(x, p=None):
    """Condition number (``p`` = None/2/-2 via singular values, else norm(x) * norm(inv(x))).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.linalg.cond(jnp.array([[2.0, 0], [0, 1]])))
    2.0
    """
    if eager(x):
        return np.linalg.cond(x, p)
    v = _matrix_operand("cond", x, square=p not in (None, 2, -2))
    from tracejit.numpy.indexing import getitem
    if p in (None, 2, -2):
        s = svd(v, compute_uv=False)
        big, small = getitem(s, (Ellipsis, 0)), getitem(s, (Ellipsis, -1))
        return U.true_divide(big, small) if p != -2 else U.true_divide(small, big)
    return U.multiply(norm(v, p, axis=(-2, -1)), norm(inv(v), p, axis=(-2, -1)))


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """Rank: the number of singular values above ``tol`` (NumPy's default tolerance).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> int(jnp.linalg.matrix_rank(jnp.array([[1.0, 2], [2, 4]])))
    1
    """
    if eager(A, tol):
        return np.linalg.matrix_rank(A, tol=tol, hermitian=hermitian, rtol=rtol)
    from tracejit.numpy.reductions import any as any_, max as max_, sum as sum_
    x = _array(A)
    if aval(x).ndim < 2:
        return convert(any_(U.not_equal(x, convert(np.asarray(0), aval(x).dtype))), dtypes.int64)
    s = svd(x, compute_uv=False, hermitian=hermitian)
    if tol is None:
        m, n = aval(x).shape[-2:]
        r = rtol if rtol is not None else max(m, n) * np.finfo(aval(s).dtype).eps
        tol_v = U.multiply(max_(s, axis=-1, keepdims=True, initial=0.0), r)
    else:
        from tracejit.numpy.shape import expand_dims
        tol_v = expand_dims(_array(tol), -1)
    return sum_(convert(U.greater(s, tol_v), dtypes.int64), axis=-1)


def multi_dot(arrays, *, out=None):
    """Chained matrix product (left to right; 1-D ends act as row/column vectors).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.multi_dot([jnp.eye(2), jnp.ones((2, 1))]).shape
    (2, 1)
    """
    if eager(*arrays):
        return np.linalg.multi_dot(arrays)
    from tracejit.numpy.contractions import matmul
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    result = _array(arrays[0])
    for x in arrays[1:]:
        result = matmul(result, x)
    return result


def matrix_transpose(x, /):
    """Swap the last two axes.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.matrix_transpose(jnp.ones((2, 3))).shape
    (3, 2)
    """
    if eager(x):
        return np.linalg.matrix_transpose(x)
    from tracejit.numpy.shape import swapaxes
    return swapaxes(_matrix_operand("matrix_transpose", x, square=False), -1, -2)


def outer(x1, x2, /):
    """Outer product of two 1-D arrays.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.outer(jnp.ones(2), jnp.ones(3)).shape
    (2, 3)
    """
    if eager(x1, x2):
        return np.linalg.outer(x1, x2)
    from tracejit.numpy.contractions import outer as outer_
    if aval(_array(x1)).ndim != 1 or aval(_array(x2)).ndim != 1:
        raise ValueError("linalg.outer: both inputs must be 1-D")
    return outer_(x1, x2)


def vecdot(x1, x2, /, *, axis=-1):
    """``sum(conj(x1) * x2, axis)``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.linalg.vecdot(jnp.ones(3), jnp.ones(3)))
    3.0
    """
    if eager(x1, x2):
        return np.linalg.vecdot(x1, x2, axis=axis)
    from tracejit.numpy.reductions import sum as sum_
    return sum_(U.multiply(U.conjugate(x1), x2), axis=axis)


def diagonal(x, /, *, offset=0):
    """Diagonals of the last two axes.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.diagonal(jnp.eye(2))
    Array([1., 1.])
    """
    from tracejit.numpy.extra import diagonal as diagonal_
    return diagonal_(x, offset, -2, -1)


def trace(x, /, *, offset=0, dtype=None):
    """Traces of the last two axes.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.linalg.trace(jnp.eye(2)))
    2.0
    """
    if eager(x):
        return np.linalg.trace(x, offset=offset, dtype=dtype)
    from tracejit.numpy.extra import trace as trace_
    return trace_(x, offset, -2, -1, dtype=dtype)


def cross(x1, x2, /, *, axis=-1):
    """Cross product of 3-element vectors.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.cross(jnp.array([1, 0, 0]), jnp.array([0, 1, 0]))
    Array([0, 0, 1])
    """
    if eager(x1, x2):
        return np.linalg.cross(x1, x2, axis=axis)
    from tracejit.numpy.extra import cross as cross_
    return cross_(x1, x2, axis=axis)


def matmul(x1, x2, /):
    """Matrix product (same as ``tracejit.numpy.matmul``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.linalg.matmul(jnp.eye(2), jnp.ones(2))
    Array([1., 1.])
    """
    from tracejit.numpy.contractions import matmul as matmul_
    return matmul_(x1, x2)


def tensordot(x1, x2, /, *, axes=2):
    """Tensor contraction (same as ``tracejit.numpy.tensordot``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.linalg.tensordot(jnp.ones(3), jnp.ones(3), axes=1))
    3.0
    """
    from tracejit.numpy.contractions import tensordot as tensordot_
    return tensordot_(x1, x2, axes)


def __dir__():
    # The public names only (tab completion), as JAX's API modules list them; helpers stay importable.
    return sorted(__all__)
