"""Special matrices, matrix functions and further factorizations of ``jax.scipy.linalg``.

Re-exported by :mod:`tracejit.scipy.linalg` (which imports this module at its end, so the
helpers and factorizations defined there are reached as ``_la.<name>`` at call time).

* Structured matrices built from arrays (``circulant``, ``hankel``, ``leslie``, ``companion``,
  ``fiedler``, ``fiedler_companion``, ``convolution_matrix``) are gathers and masks: they
  trace, batch over leading axes as JAX's do, and differentiate.
* Fixed-size constructors (``dft``, ``hadamard``, ``hilbert``, ``invhilbert``, ``pascal``,
  ``invpascal``, ``helmert``) take Python ints and are computed on the host, binomial entries
  exactly in integers before the one rounding to the output dtype.
* ``polar`` uses the SVD for both of JAX's methods (the factors of a full-rank matrix are
  unique); ``expm_frechet`` is the JVP of ``expm``, as in JAX; ``hessenberg`` is Householder
  reduction with LAPACK ``?gehrd``'s reflector conventions; ``eigh_tridiagonal`` diagonalizes the
  dense tridiagonal matrix with ``eigh``; ``rsf2csf`` applies JAX's/SciPy's Givens rotations.
* ``funm`` and the singularity test of ``solve_sylvester`` need eigenvalues of a general
  matrix, which ``tracejit.numpy.linalg.eig`` gives only eagerly; under a trace they come
  from LAPACK ``?geev`` in a host callback (no derivative; ``vmap`` passes the batch at once).
  ``solve_sylvester`` itself solves the Kronecker system ``(A (x) I + I (x) B^T) vec(X) = vec(C)``.
"""
from __future__ import annotations

import math
import operator

import numpy as np

import tracejit.numpy as jnp
import tracejit.scipy.linalg as _la
from tracejit.core import dtypes
from tracejit.core.avals import ShapedArray
from tracejit.numpy._util import eager, promote, to_operand
from tracejit.ops.callback import FlatCallback, pure_callback_p, split_callback_args
from tracejit.ops.control_flow_functions import fori_loop
from tracejit.transforms.api_ad import custom_jvp, jvp, stop_gradient

__all__ = ["circulant", "companion", "convolution_matrix", "dft", "eigh_tridiagonal", "expm_frechet", "fiedler",
           "fiedler_companion", "funm", "hadamard", "hankel", "helmert", "hessenberg", "hilbert", "invhilbert",
           "invpascal", "leslie", "pascal", "polar", "qr_multiply", "rsf2csf", "solve_sylvester"]


def _mH(x):
    return jnp.conj(jnp.swapaxes(x, -1, -2))


def _batch_last(*xs, core=1):
    """Broadcast the leading (batch) axes of ``xs``, keeping each one's last ``core`` axes."""
    batch = tuple(np.broadcast_shapes(*(jnp.shape(x)[:jnp.ndim(x) - core] for x in xs)))
    return [jnp.broadcast_to(x, batch + jnp.shape(x)[jnp.ndim(x) - core:]) for x in xs]


def _complex_dtype(dt):
    return np.result_type(np.dtype(dt), np.complex64)


# --------------------------------------------------------------------------- general eigenvalues

def _host_eig(a):
    w, v = np.linalg.eig(a)
    dt = _complex_dtype(a.dtype)
    return w.astype(dt), v.astype(dt)


def _host_eigvals(a):
    return np.linalg.eigvals(a).astype(_complex_dtype(a.dtype))


def _eig_call(a, vectors):
    """LAPACK ``?geev`` of a (batch of) square inexact matrices, always complex; a host callback
    (``vmap`` passes the whole batch: NumPy batches over leading axes) under a trace."""
    if eager(a):
        return _host_eig(np.asarray(a)) if vectors else _host_eigvals(np.asarray(a))
    shape, cdt = jnp.shape(a), _complex_dtype(a.dtype)
    fun = _host_eig if vectors else _host_eigvals
    avals = (ShapedArray(shape[:-1], cdt),) + ((ShapedArray(shape, cdt),) if vectors else ())
    in_tree, dynamic, static = split_callback_args((a,), {})
    outs = pure_callback_p.bind(*dynamic, callback=FlatCallback(fun, in_tree, static, label=fun.__name__),
                                result_avals=avals, vmap_method="broadcast_all", sharding=None)
    return tuple(outs) if vectors else outs[0]


def _eigvals_no_derivative(a):
    """Eigenvalues for decisions only (no derivative flows through them)."""
    return _eig_call(stop_gradient(a), vectors=False)


@custom_jvp
def _eig(a):
    """(w, V) with A V = V diag(w) of one square matrix, differentiable where the eigenvalues are
    distinct: with C = V^-1 dA V, dw = diag(C) and dV = V (C / (w_j - w_i)) off the diagonal. The
    columns' scale is left free, which functions of A built as V f(w) V^-1 do not see."""
    return _eig_call(a, vectors=True)


@_eig.defjvp
def _eig_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    w, v = _eig(a)
    c = jnp.linalg.solve(v, jnp.asarray(da).astype(v.dtype) @ v)
    n = jnp.shape(a)[-1]
    off = ~np.eye(n, dtype=bool)
    gap = jnp.where(off, w[None, :] - w[:, None], 1.0)
    return (w, v), (jnp.diagonal(c), v @ jnp.where(off, c / gap, 0.0))


# --------------------------------------------------------------------------- structured matrices

def circulant(c):
    """Circulant matrix ``A[i, j] = c[(i - j) % n]`` with first column ``c`` (leading axes batch).

    Examples
    --------
    >>> from tracejit.scipy.linalg import circulant
    >>> circulant([1, 2, 3])
    Array([[1, 3, 2],
           [2, 1, 3],
           [3, 2, 1]])
    """
    c = jnp.atleast_1d(to_operand(c))
    n = jnp.shape(c)[-1]
    idx = (np.arange(n)[:, None] - np.arange(n)[None, :]) % max(n, 1)
    return jnp.take(c, idx, axis=-1)


def hankel(c, r=None):
    """Hankel matrix ``H[i, j] = v[i + j]`` with ``v = concatenate([c, r[1:]])``: first column
    ``c``, last row ``r`` (zeros by default; ``r[0]`` is ignored). Leading axes of ``c`` and ``r``
    broadcast into a batch, as in JAX.

    Examples
    --------
    >>> from tracejit.scipy.linalg import hankel
    >>> hankel([1, 2, 3], [9, 4, 5, 6])
    Array([[1, 2, 3, 4],
           [2, 3, 4, 5],
           [3, 4, 5, 6]])
    """
    c = to_operand(c)
    r = jnp.zeros_like(c) if r is None else to_operand(r)
    for name, x in (("c", c), ("r", r)):
        if jnp.ndim(x) == 0:
            raise ValueError(f"hankel: {name} must be at least 1-dimensional, got a scalar.")
    c, r = _batch_last(*promote(c, r))
    m, n = jnp.shape(c)[-1], jnp.shape(r)[-1]
    if m == 0 or n == 0:
        return jnp.zeros(jnp.shape(c)[:-1] + (m, n), dtype=c.dtype)
    vals = jnp.concatenate([c, r[..., 1:]], axis=-1)
    return jnp.take(vals, np.arange(m)[:, None] + np.arange(n)[None, :], axis=-1)


def leslie(f, s):
    """Leslie matrix: fecundities ``f`` (length ``N >= 2``) as the first row, survival rates ``s``
    (length ``N - 1``) on the first subdiagonal. Leading axes batch.

    Examples
    --------
    >>> from tracejit.scipy.linalg import leslie
    >>> leslie([0.1, 2.0, 1.0], [0.2, 0.8])
    Array([[0.1, 2. , 1. ],
           [0.2, 0. , 0. ],
           [0. , 0.8, 0. ]])
    """
    f, s = jnp.atleast_1d(to_operand(f)), jnp.atleast_1d(to_operand(s))
    n = jnp.shape(f)[-1]
    if n < 2:
        raise ValueError(f"The length of f along the last axis must be at least 2; got shape {jnp.shape(f)}.")
    if jnp.shape(s)[-1] != n - 1:
        raise ValueError("Incorrect lengths for f and s. The length of s along the last axis must be one less "
                         f"than the length of f; got f shape {jnp.shape(f)} and s shape {jnp.shape(s)}.")
    f, s = _batch_last(*promote(f, s))
    s_ext = jnp.concatenate([s, jnp.zeros_like(s[..., :1])], axis=-1)      # s_ext[j] sits at (j + 1, j)
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    below = jnp.where(i == j + 1, s_ext[..., None, :], jnp.zeros_like(s_ext[..., None, :]))
    return jnp.where(i == 0, f[..., None, :], below)


def companion(a):
    """Companion matrix of the polynomial ``a[0] x**(N-1) + ... + a[N-1]``: first row
    ``-a[1:] / a[0]``, ones on the first subdiagonal; ``(..., N-1, N-1)``. As JAX, a zero
    ``a[0]`` gives inf/nan entries instead of SciPy's error.

    Examples
    --------
    >>> from tracejit.scipy.linalg import companion
    >>> companion([1.0, -10.0, 31.0, -30.0])
    Array([[ 10., -31.,  30.],
           [  1.,   0.,   0.],
           [  0.,   1.,   0.]])
    """
    (a,) = _la._inexact(jnp.atleast_1d(to_operand(a)))
    if jnp.shape(a)[-1] < 2:
        raise ValueError(f"The length of `a` along the last axis must be at least 2; got shape {jnp.shape(a)}.")
    first = -a[..., 1:] / a[..., :1]
    m = jnp.shape(first)[-1]
    return jnp.where((np.arange(m) == 0)[:, None], first[..., None, :], np.eye(m, k=-1).astype(a.dtype))


def fiedler(a):
    """Symmetric Fiedler matrix ``F[i, j] = |a[i] - a[j]|`` (leading axes batch).

    Examples
    --------
    >>> from tracejit.scipy.linalg import fiedler
    >>> fiedler([1, 4, 12])
    Array([[ 0,  3, 11],
           [ 3,  0,  8],
           [11,  8,  0]])
    """
    a = jnp.atleast_1d(to_operand(a))
    return jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """Fiedler companion matrix of the polynomial with coefficients ``a`` (descending): a
    pentadiagonal ``(N-1, N-1)`` matrix whose eigenvalues are its roots (``(0, 0)`` for
    ``N == 1``). Leading axes batch; as JAX, a zero ``a[0]`` gives inf/nan instead of an error.

    Examples
    --------
    >>> from tracejit.scipy.linalg import fiedler_companion
    >>> fiedler_companion([1.0, -16.0, 86.0, -176.0, 105.0])
    Array([[  16.,  -86.,    1.,    0.],
           [   1.,    0.,    0.,    0.],
           [   0.,  176.,    0., -105.],
           [   0.,    1.,    0.,    0.]])
    """
    (a,) = _la._inexact(jnp.atleast_1d(to_operand(a)))
    if jnp.shape(a)[-1] == 0:
        raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero length, but got an "
                         f"array of shape {jnp.shape(a)}.")
    n = jnp.shape(a)[-1] - 1
    batch = jnp.shape(a)[:-1]
    if n == 0:
        return jnp.zeros(batch + (0, 0), dtype=a.dtype)
    a = a / a[..., :1]
    if n == 1:
        return -a[..., 1:, None]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    even, odd = i % 2 == 0, i % 2 == 1
    neg = -a
    out = jnp.zeros(batch + (n, n), dtype=a.dtype)
    # (mask, value) pairs of JAX's masked construction; later masks never overlap earlier ones
    for mask, val in [((j == i - 2) & odd & (i >= 3), 1.0),
                      ((j == i - 1) & even & (i >= 2), jnp.take(neg, np.minimum(i + 1, n), axis=-1)),
                      ((j == i + 2) & even, 1.0),
                      ((j == i + 1) & even, jnp.take(neg, np.minimum(i + 2, n), axis=-1)),
                      ((i == 1) & (j == 0), 1.0),
                      ((i == 0) & (j == 0), neg[..., 1:2, None])]:
        out = jnp.where(mask, val, out)
    return out


def convolution_matrix(a, n, mode="full"):
    """Toeplitz matrix ``A`` with ``A @ v == numpy.convolve(a, v, mode)`` for ``len(v) == n``
    (``n`` a static positive int; ``mode`` 'full', 'same' or 'valid'). Leading axes batch.

    Examples
    --------
    >>> from tracejit.scipy.linalg import convolution_matrix
    >>> convolution_matrix([-1, 4, -2], 4, mode="same")
    Array([[ 4, -1,  0,  0],
           [-2,  4, -1,  0],
           [ 0, -2,  4, -1],
           [ 0,  0, -2,  4]])
    """
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"n must be a positive integer; got {n}.")
    a = to_operand(a)
    if jnp.ndim(a) == 0:
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
    m = jnp.shape(a)[-1]
    if m < 1:
        raise ValueError(f"len(a) must be at least 1; got shape {jnp.shape(a)}.")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
    pad = [(0, 0)] * (jnp.ndim(a) - 1) + [(0, n - 1)]
    az, raz = jnp.pad(a, pad), jnp.pad(jnp.flip(a, axis=-1), pad)
    length = m + n - 1
    if mode == "same":
        trim = min(n, m) - 1
        tb, te = trim // 2, trim - trim // 2
    elif mode == "valid":
        tb = te = min(n, m) - 1
    else:
        tb = te = 0
    return _la.toeplitz(az[..., tb:length - te], raz[..., length - n - tb:length - tb])


# --------------------------------------------------------------------------- fixed-size constructors

def _host_array(values, dtype):
    """``values`` (Python numbers; ints of any size) as an Array of ``dtype`` (huge ints become inf)."""
    def to_float(v):
        try:
            return float(v)
        except OverflowError:
            return math.copysign(math.inf, v)
    arr = np.array([[to_float(v) for v in row] for row in values], dtype=np.float64).reshape(
        len(values), len(values[0]) if values else 0)
    return jnp.asarray(arr.astype(dtype))


def _check_kind(kind):
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"Expected kind to be one of: ['symmetric', 'lower', 'upper']; got {kind}")
    return kind


def dft(n, scale=None, *, dtype=None):
    """``n x n`` discrete Fourier transform matrix ``W[i, j] = exp(-2j pi i j / n)``, optionally
    scaled by ``1/sqrt(n)`` (``scale='sqrtn'``) or ``1/n`` (``'n'``). ``dtype`` (complex) defaults
    to the default complex dtype, as JAX (SciPy's ``dft`` is always complex128).

    Examples
    --------
    >>> from tracejit.scipy.linalg import dft
    >>> import numpy as np
    >>> w = dft(4)
    >>> np.round(w.real, 12) + 0.0
    array([[ 1.,  1.,  1.,  1.],
           [ 1.,  0., -1.,  0.],
           [ 1., -1.,  1., -1.],
           [ 1.,  0., -1.,  0.]])
    >>> np.allclose(w @ w.conj().T, 4 * np.eye(4))
    True
    """
    if scale is not None and scale not in ("sqrtn", "n"):
        raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
    n = operator.index(n)
    dt = dtypes.canonical(complex if dtype is None else dtype)
    if not dtypes.is_complex(dt):
        raise ValueError(f"dtype must be a complex floating-point type; got {dt}.")
    k = np.arange(n)
    w = np.exp(-2j * np.pi * ((k[:, None] * k[None, :]) % max(n, 1)) / max(n, 1))   # exact phase reduction
    if scale == "sqrtn":
        w = w / np.sqrt(n)
    elif scale == "n":
        w = w / n
    return jnp.asarray(w.astype(dt))


def hadamard(n, dtype=int):
    """``n x n`` Hadamard matrix (Sylvester's construction; ``n`` a power of 2) with ``H @ H.T = n I``.

    Examples
    --------
    >>> from tracejit.scipy.linalg import hadamard
    >>> hadamard(4)
    Array([[ 1,  1,  1,  1],
           [ 1, -1,  1, -1],
           [ 1,  1, -1, -1],
           [ 1, -1, -1,  1]])
    """
    n = operator.index(n)
    if n < 1 or not math.log2(n).is_integer():
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    h = np.ones((1, 1), dtype=np.int64)
    for _ in range(int(math.log2(n))):
        h = np.block([[h, h], [h, -h]])
    return jnp.asarray(h, dtype=dtypes.canonical(dtype))


def hilbert(n):
    """Hilbert matrix ``H[i, j] = 1 / (i + j + 1)`` of order ``n`` (default float dtype).

    Examples
    --------
    >>> from tracejit.scipy.linalg import hilbert
    >>> hilbert(2)
    Array([[1.        , 0.5       ],
           [0.5       , 0.33333333]])
    """
    k = np.arange(operator.index(n), dtype=np.float64)
    return jnp.asarray((1.0 / (k[:, None] + k[None, :] + 1.0)).astype(dtypes.canonical(float)))


def invhilbert(n):
    """Inverse of the Hilbert matrix of order ``n``, from its closed form evaluated exactly in
    integers and rounded once to the default float dtype (no ``exact=True``, as JAX; entries
    beyond the float range are inf).

    Examples
    --------
    >>> from tracejit.scipy.linalg import invhilbert
    >>> invhilbert(3)
    Array([[   9.,  -36.,   30.],
           [ -36.,  192., -180.],
           [  30., -180.,  180.]])
    """
    n = operator.index(n)
    c = math.comb
    vals = [[(-1) ** (i + j) * (i + j + 1) * c(n + i, n - j - 1) * c(n + j, n - i - 1) * c(i + j, i) ** 2
             for j in range(n)] for i in range(n)]
    return _host_array(vals, dtypes.canonical(float)) if n else jnp.zeros((0, 0))


def pascal(n, kind=None):
    """Pascal matrix of order ``n``: ``kind`` 'symmetric' (default, ``binom(i + j, i)``), 'lower'
    (``binom(i, j)``) or 'upper'. Entries are exact integers rounded once to float32: JAX returns
    float32 here even with x64 enabled (SciPy returns exact uint64), and tracejit follows JAX.

    Examples
    --------
    >>> from tracejit.scipy.linalg import pascal
    >>> pascal(3)
    Array([[1., 1., 1.],
           [1., 2., 3.],
           [1., 3., 6.]], dtype=float32)
    """
    n, kind = operator.index(n), _check_kind(kind)
    if kind == "symmetric":
        vals = [[math.comb(i + j, i) for j in range(n)] for i in range(n)]
    else:
        vals = [[math.comb(i, j) for j in range(n)] for i in range(n)]
        if kind == "upper":
            vals = [list(r) for r in zip(*vals)]
    return _host_array(vals, np.float32) if n else jnp.zeros((0, 0), dtype=np.float32)


def invpascal(n, kind=None):
    """Inverse of :func:`pascal` (``kind`` as there), exact in integers then rounded once to the
    default float dtype (JAX's result type; SciPy's default is exact int64).

    Examples
    --------
    >>> from tracejit.scipy.linalg import invpascal
    >>> invpascal(3)
    Array([[ 3., -3.,  1.],
           [-3.,  5., -2.],
           [ 1., -2.,  1.]])
    """
    n, kind = operator.index(n), _check_kind(kind)
    low = [[(-1) ** (i - j) * math.comb(i, j) for j in range(n)] for i in range(n)]
    if kind == "lower":
        vals = low
    elif kind == "upper":
        vals = [list(r) for r in zip(*low)]
    else:     # L^-T L^-1
        vals = [[sum(low[k][i] * low[k][j] for k in range(n)) for j in range(n)] for i in range(n)]
    return _host_array(vals, dtypes.canonical(float)) if n else jnp.zeros((0, 0))


def helmert(n, full=False):
    """Helmert matrix of order ``n``: the ``(n-1, n)`` orthonormal contrasts, with the row
    ``1/sqrt(n)`` on top when ``full``.

    Examples
    --------
    >>> from tracejit.scipy.linalg import helmert
    >>> helmert(2, full=True)
    Array([[ 0.70710678,  0.70710678],
           [ 0.70710678, -0.70710678]])
    """
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"n must be a positive integer; got {n}.")
    h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))      # SciPy's construction
    d = np.arange(n) * np.arange(1, n + 1)
    h[0] = 1
    d[0] = n
    h = h / np.sqrt(d)[:, None]
    return jnp.asarray((h if full else h[1:]).astype(dtypes.canonical(float)))


# --------------------------------------------------------------------------- decompositions

def polar(a, side="right", *, method="qdwh", eps=None, max_iterations=None):
    """Polar decomposition ``a = u @ p`` (``side='right'``, ``p`` is ``(n, n)``) or ``a = p @ u``
    (``'left'``, ``(m, m)``) with ``p`` Hermitian positive semidefinite; ``(..., m, n)`` input.

    Both of JAX's methods are computed from the SVD ``a = w diag(s) vh``: ``u = w @ vh``. For a
    full-rank ``a`` the factors are unique, so ``'qdwh'`` (JAX's default, an iteration) gives the
    same result; unlike JAX's QDWH, every shape works with either ``side``, and the result is
    differentiable (JAX's ``'qdwh'`` is not in reverse mode). ``eps`` and ``max_iterations`` only
    tune QDWH's iteration and are ignored.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import polar
    >>> u, p = polar(np.array([[0.0, 2.0], [-3.0, 0.0]]))
    >>> u
    Array([[ 0.,  1.],
           [-1.,  0.]])
    >>> p
    Array([[3., 0.],
           [0., 2.]])
    """
    a = to_operand(a)
    if jnp.ndim(a) < 2:
        raise ValueError("The input `a` must be at least a 2-D array.")
    if side not in ("right", "left"):
        raise ValueError("The argument `side` must be either 'right' or 'left'.")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"Unknown polar decomposition method {method}.")
    (a,) = _la._inexact(a)
    w, s, vh = jnp.linalg.svd(a, full_matrices=False)
    s = s.astype(w.dtype)
    u = jnp.matmul(w, vh)
    if side == "right":
        p = jnp.matmul(_mH(vh) * s[..., None, :], vh)
    else:
        p = jnp.matmul(w * s[..., None, :], _mH(w))
    return u, p


def qr_multiply(a, c, mode="right", pivoting=False, conjugate=False, overwrite_a=False, overwrite_c=False):
    """QR-decompose ``a`` (``(..., M, N)``, ``K = min(M, N)``) and multiply by ``Q`` (``M x K``):
    ``(Q @ c, R)`` for ``mode='left'`` (``c`` is ``(..., K, P)``) or ``(c @ Q, R)`` for 'right'
    (``c`` is ``(..., P, M)``); ``conjugate`` uses ``conj(Q)``. 1-D ``c`` is a column ('left') or a
    row ('right') and the product comes back 1-D. ``R`` is ``(..., K, N)``.

    ``pivoting=True`` (column-pivoted QR, LAPACK ``?geqp3``) is not available: tracejit has no
    pivoted QR, and it raises ``NotImplementedError`` as :func:`qr` does.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import qr_multiply, solve_triangular
    >>> a = np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0], [1.0, 4.0]])
    >>> b = np.array([2.0, 4.0, 5.0, 4.0])
    >>> qtb, r = qr_multiply(a, b)
    >>> np.round(solve_triangular(r, qtb), 12)
    array([2. , 0.7])
    """
    if mode not in ("right", "left"):
        raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
    if pivoting:
        raise NotImplementedError("qr_multiply: pivoting=True is not supported (no column-pivoted QR)")
    a, c = _la._inexact(a, c)
    onedim = jnp.ndim(c) == 1
    if onedim:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = jnp.shape(a)[-2:]
    k = min(m, n)
    if mode == "left" and jnp.shape(c)[-2] != k:
        raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape {jnp.shape(a)} so Q "
                         f"has {k} columns, but c has {jnp.shape(c)[-2]} rows (expected {k}).")
    if mode == "right" and jnp.shape(c)[-1] != m:
        raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape {jnp.shape(a)} so Q "
                         f"has {m} rows, but c has {jnp.shape(c)[-1]} columns (expected {m}).")
    a, c = _batch_last(a, c, core=2)
    q, r = jnp.linalg.qr(a, mode="reduced")
    if conjugate:
        q = jnp.conj(q)
    out = jnp.matmul(q, c) if mode == "left" else jnp.matmul(c, q)
    return (jnp.reshape(out, (-1,)) if onedim else out), r


def hessenberg(a, *, calc_q=False, overwrite_a=False, check_finite=True):
    """Hessenberg form ``H = Q^H a Q`` (zero below the first subdiagonal), ``(H, Q)`` with
    ``calc_q``; ``(..., N, N)`` input.

    Householder reduction with LAPACK ``?gehrd``'s reflectors (``beta = -sign(Re alpha) ||x||``,
    the identity where nothing is to annihilate), so ``H`` and ``Q`` match JAX's and SciPy's.
    As JAX (and LAPACK), a complex input also gets a real subdiagonal, including ``N == 2``, which
    SciPy returns unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import hessenberg
    >>> a = np.array([[2.0, 1.0, 1.0], [3.0, 1.0, 0.0], [4.0, 0.0, 1.0]])
    >>> h, q = hessenberg(a, calc_q=True)
    >>> np.round(h, 12)
    array([[ 2. , -1.4, -0.2],
           [-5. ,  1. ,  0. ],
           [ 0. ,  0. ,  1. ]])
    >>> np.allclose(q @ h @ q.T, a)
    True
    """
    (a,) = _la._inexact(a)
    if jnp.ndim(a) < 2 or jnp.shape(a)[-1] != jnp.shape(a)[-2]:
        raise ValueError(f"hessenberg: expected a (batch of) square matrices, got shape {jnp.shape(a)}")
    n = jnp.shape(a)[-1]
    q0 = jnp.broadcast_to(jnp.eye(n, dtype=a.dtype), jnp.shape(a))
    rows = np.arange(n)
    complex_in = dtypes.is_complex(np.dtype(a.dtype))

    def step(k, carry):
        h, q = carry
        col = jnp.take(h, k, axis=-1)                                        # (..., n)
        alpha = jnp.sum(jnp.where(rows == k + 1, col, 0), axis=-1)
        rest = jnp.where(rows > k + 1, col, 0)
        xsq = jnp.sum(jnp.real(rest * jnp.conj(rest)), axis=-1)
        asq = jnp.real(alpha * jnp.conj(alpha)) + xsq
        xnorm = jnp.where(xsq > 0, jnp.sqrt(jnp.where(xsq > 0, xsq, 1)), 0)    # no NaN derivative at 0
        anorm = jnp.where(asq > 0, jnp.sqrt(jnp.where(asq > 0, asq, 1)), 0)
        beta = jnp.where(jnp.signbit(jnp.real(alpha)), anorm, -anorm)
        trivial = (xnorm == 0) & (jnp.imag(alpha) == 0) if complex_in else xnorm == 0
        tau = jnp.where(trivial, 0, (beta - alpha) / jnp.where(trivial, 1, beta))
        v = jnp.where(rows == k + 1, 1, rest / jnp.where(trivial, 1, alpha - beta)[..., None])
        vh = jnp.conj(v)
        # H^H h H with H = I - tau v v^H, then the annihilated column exactly (beta; 0)
        h = h - (jnp.conj(tau)[..., None, None] * v[..., :, None]) * jnp.matmul(vh[..., None, :], h)
        h = h - (tau[..., None, None] * jnp.matmul(h, v[..., :, None])) * vh[..., None, :]
        newcol = jnp.where(rows == k + 1, jnp.where(trivial, alpha, beta)[..., None], 0)
        h = jnp.where((rows > k)[:, None] & (rows == k)[None, :], newcol[..., :, None], h)
        q = q - (tau[..., None, None] * jnp.matmul(q, v[..., :, None])) * vh[..., None, :]
        return h, q
    h, q = fori_loop(0, n - 1, step, (a, q0)) if n > 1 else (a, q0)
    h = jnp.triu(h, -1)
    return (h, q) if calc_q else h


def eigh_tridiagonal(d, e, *, eigvals_only=False, select="a", select_range=None, tol=None, key=None):
    """Eigenvalues (ascending) and, unless ``eigvals_only``, eigenvectors (columns) of the Hermitian
    tridiagonal matrix with diagonal ``real(d)``, superdiagonal ``e`` and subdiagonal ``conj(e)``.

    ``select='a'`` gives all; ``'i'`` those with indices ``select_range[0] <= i <= select_range[1]``
    (static ints); ``'v'`` raises ``NotImplementedError`` (data-dependent size), as in JAX. The
    dense matrix is diagonalized with ``eigh`` (LAPACK ``?syevd``), so ``tol`` (the tolerance of
    JAX's bisection) and ``key`` (its random start for inverse iteration) are not used: eigenvalues
    are accurate to rounding, eigenvectors are orthonormal up to sign, and the result is
    differentiable. Complex ``d``/``e`` are accepted as in JAX (SciPy takes real input only).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import eigh_tridiagonal
    >>> w = eigh_tridiagonal(np.array([2.0, 2.0]), np.array([1.0]), eigvals_only=True)
    >>> np.round(w, 12)
    array([1., 3.])
    """
    alpha, beta = to_operand(d), to_operand(e)
    da, db = np.dtype(alpha.dtype), np.dtype(beta.dtype)
    if da != db:
        raise TypeError(f"diagonal and off-diagonal values must have same dtype, got {da} and {db}")
    if not dtypes.is_inexact(da):
        raise TypeError("Only float32 and float64 inputs are supported as inputs to "
                        f"jax.scipy.linalg.eigh_tridiagonal, got {da} and {db}")
    if select == "i":
        if select_range is None:
            raise ValueError("for select='i', select_range must be specified.")
        lo, hi = (operator.index(x) for x in select_range)
        if lo > hi:
            raise ValueError("Got empty index range in select_range.")
    elif select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
    elif select != "a":
        raise ValueError("'select must have a value in {'a', 'i', 'v'}.")
    n = jnp.shape(alpha)[-1]
    if n <= 1:
        w, v = jnp.real(alpha), jnp.broadcast_to(jnp.eye(n, dtype=da), jnp.shape(alpha) + (n,))
    else:
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        e_ext = jnp.concatenate([beta, jnp.zeros_like(beta[..., :1])], axis=-1)
        t = jnp.where(i == j, jnp.real(alpha)[..., None, :].astype(da), 0)
        t = jnp.where(j == i + 1, e_ext[..., :, None], t)               # t[i, i+1] = e[i]
        t = jnp.where(i == j + 1, jnp.conj(e_ext)[..., None, :], t)     # t[j+1, j] = conj(e[j])
        w, v = jnp.linalg.eigh(t)
    if select == "i":
        w, v = w[..., lo:hi + 1], v[..., lo:hi + 1]
    return w if eigvals_only else (w, v)


def rsf2csf(T, Z, check_finite=True):
    """Convert a real Schur form ``(T, Z)`` (``a = Z T Z^T``, e.g. from ``scipy.linalg.schur``)
    to the complex one: upper triangular ``T`` and unitary ``Z``, by the Givens rotations of
    SciPy's and JAX's ``rsf2csf``. Batch axes of ``T`` and ``Z`` broadcast.

    Each 2x2 block's eigenvalue ``mu[0]`` is computed in closed form, choosing the one LAPACK
    ``?geev`` lists first (for a complex pair, the one with positive imaginary part).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import rsf2csf
    >>> t, z = rsf2csf(np.array([[1.0, 2.0], [-2.0, 1.0]]), np.eye(2))
    >>> np.round(np.diag(t), 12)
    array([1.+2.j, 1.-2.j])
    >>> np.allclose(np.tril(t, -1), 0)
    True
    >>> np.allclose(z @ t @ z.conj().T, [[1.0, 2.0], [-2.0, 1.0]])
    True
    """
    T, Z = to_operand(T), to_operand(Z)
    for name, x in (("T", T), ("Z", Z)):
        if jnp.ndim(x) < 2 or jnp.shape(x)[-1] != jnp.shape(x)[-2]:
            raise ValueError(f"Input '{name}' must be square.")
    if jnp.shape(T)[-1] != jnp.shape(Z)[-1]:
        raise ValueError(f"Input array shapes must match: Z: {jnp.shape(Z)} vs. T: {jnp.shape(T)}")
    T, Z = _la._inexact(T, Z)
    T, Z = _batch_last(T.astype(_complex_dtype(T.dtype)), Z.astype(_complex_dtype(T.dtype)), core=2)
    cdt = np.dtype(T.dtype)
    n = jnp.shape(T)[-1]
    if n <= 1:
        return T, Z
    eps = float(np.finfo(cdt).eps)
    rows = np.arange(n)

    def rotate_cols(x, m, cs, sn, mask, zero=False):
        """Columns m-1, m of ``x`` (rows where ``mask``) times G^H, G = [[conj(cs), sn], [-sn, cs]]
        (with ``zero``, then ``x[m, m-1] = 0``)."""
        c1, c2 = jnp.take(x, m - 1, axis=-1), jnp.take(x, m, axis=-1)
        k1 = jnp.where(mask, c1 * cs[..., None] + c2 * jnp.conj(sn)[..., None], c1)
        if zero:
            k1 = jnp.where(rows == m, 0, k1)
        k2 = jnp.where(mask, c2 * jnp.conj(cs)[..., None] - c1 * jnp.conj(sn)[..., None], c2)
        x = jnp.where(rows == m - 1, k1[..., :, None], x)
        return jnp.where(rows == m, k2[..., :, None], x)

    def body(it, carry):
        t, z = carry
        m = n - it
        r1, r2 = jnp.take(t, m - 1, axis=-2), jnp.take(t, m, axis=-2)
        a, b = jnp.take(r1, m - 1, axis=-1), jnp.take(r1, m, axis=-1)
        c, d = jnp.take(r2, m - 1, axis=-1), jnp.take(r2, m, axis=-1)
        act = jnp.abs(c) > eps * (jnp.abs(a) + jnp.abs(d))
        half = (a - d) / 2
        root = jnp.sqrt(jnp.where(act, half * half + b * c, 1))        # (safe where inactive: no NaN derivative)
        mu = half + jnp.where(jnp.real(half * jnp.conj(root)) >= 0, root, -root)   # mu[0] - T[m, m]
        r = jnp.sqrt(jnp.where(act, jnp.real(mu * jnp.conj(mu)) + jnp.real(c * jnp.conj(c)), 1)).astype(cdt)
        cs, sn = jnp.where(act, mu / r, 1), jnp.where(act, c / r, 0)   # the identity where inactive
        # rows m-1, m (columns >= m-1) <- G @ rows, then columns m-1, m (rows <= m) and Z's <- cols @ G^H
        cols = rows >= m - 1
        n1 = jnp.where(cols, jnp.conj(cs)[..., None] * r1 + sn[..., None] * r2, r1)
        n2 = jnp.where(cols, cs[..., None] * r2 - sn[..., None] * r1, r2)
        t = jnp.where((rows == m - 1)[:, None], n1[..., None, :], t)
        t = jnp.where((rows == m)[:, None], n2[..., None, :], t)
        t = rotate_cols(t, m, cs, sn, rows <= m, zero=True)
        z = rotate_cols(z, m, cs, sn, True)
        return t, z
    return fori_loop(1, n, body, (T, Z))


# --------------------------------------------------------------------------- matrix functions

def expm_frechet(A, E, *, method=None, compute_expm=True):
    """Frechet derivative of ``expm`` at ``A`` in direction ``E``: ``(expm(A), L(A, E))`` (or
    only ``L`` when ``compute_expm=False``); ``(..., N, N)`` inputs of equal shape. As in JAX it
    is the JVP of :func:`expm` (``method`` is ignored), and is itself differentiable.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import expm_frechet
    >>> ea, l = expm_frechet(np.zeros((2, 2)), np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> np.round(l, 12)
    array([[1., 2.],
           [3., 4.]])
    """
    A, E = to_operand(A), to_operand(E)
    if jnp.ndim(A) < 2 or jnp.shape(A)[-2] != jnp.shape(A)[-1]:
        raise ValueError(f"expected A to be a (batched) square matrix, got A.shape={jnp.shape(A)}")
    if jnp.ndim(E) < 2 or jnp.shape(E)[-2] != jnp.shape(E)[-1]:
        raise ValueError(f"expected E to be a (batched) square matrix, got E.shape={jnp.shape(E)}")
    if jnp.shape(A) != jnp.shape(E):
        raise ValueError(f"expected A and E to be the same shape, got A.shape={jnp.shape(A)} E.shape={jnp.shape(E)}")
    A, E = _la._inexact(A, E)
    expm_a, frechet = jvp(lambda x: _la.expm(x, upper_triangular=False, max_squarings=16), (A,), (E,))
    return (expm_a, frechet) if compute_expm else frechet


def funm(A, func, disp=True):
    """Matrix function ``f(A)`` for a scalar ``func`` applied to the eigenvalues (complex result).

    JAX and SciPy use the Schur form and Parlett's recurrence; tracejit has no Schur
    decomposition and uses the eigendecomposition ``A = V diag(w) V^-1`` (``f(A) = V diag(f(w))
    V^-1``), the same matrix for diagonalizable ``A``. Defective (non-diagonalizable) ``A``, where
    Parlett's recurrence also breaks down, give inaccurate results. ``func`` receives the complex
    eigenvalues and its result is cast to complex, as in JAX; the result is complex even when its
    imaginary part vanishes (SciPy would return it real). The eigendecomposition is LAPACK
    ``?geev`` (a host callback under ``jit``); ``funm`` is differentiable through it where the
    eigenvalues are distinct (JAX's raises: it has no Schur derivative).

    With ``disp=False`` it returns ``(F, err)``: JAX's/SciPy's error estimate evaluated on the
    complex Schur form ``T = R diag(w) R^-1`` from ``V = QR`` (SciPy's Schur form may order the
    eigenvalues differently, so the estimate can differ from theirs).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import funm
    >>> f = funm(np.array([[1.0, 2.0], [0.0, 3.0]]), lambda x: x ** 2)
    >>> f.dtype
    dtype('complex128')
    >>> np.round(f.real, 12) + 0.0
    array([[1., 8.],
           [0., 9.]])
    """
    (A,) = _la._inexact(A)
    if jnp.ndim(A) != 2 or jnp.shape(A)[0] != jnp.shape(A)[1]:
        raise ValueError("expected square array_like input")
    w, v = _eig(A)
    fw = jnp.asarray(func(w)).astype(w.dtype)
    F = _mH(jnp.linalg.solve(_mH(v), _mH(v * fw[None, :])))          # (V diag(fw)) V^-1
    if disp:
        return F
    _, r = jnp.linalg.qr(v)
    t = _mH(jnp.linalg.solve(_mH(r), _mH(r * w[None, :])))            # R diag(w) R^-1
    n = jnp.shape(A)[0]
    tol = float(np.finfo(np.dtype(F.dtype)).eps)
    diff = jnp.abs(w[:, None] - w[None, :]) + jnp.where(np.eye(n, dtype=bool), np.inf, 0.0)
    minden = jnp.minimum(jnp.abs(w[0]), jnp.min(diff)) if n > 1 else jnp.abs(w[0])
    minden = jnp.where(minden == 0.0, tol, minden)
    strict = jnp.max(jnp.sum(jnp.abs(jnp.triu(t, 1)), axis=0))
    err = jnp.where(jnp.any(jnp.isinf(F)), np.inf, jnp.minimum(1.0, jnp.maximum(tol, tol / minden * strict)))
    return F, err


def solve_sylvester(A, B, C, *, method="schur", tol=1e-8):
    """Solve the Sylvester equation ``A X + X B = C`` (``A`` ``(..., m, m)``, ``B`` ``(..., n, n)``,
    ``C`` ``(..., m, n)``; batch axes broadcast).

    JAX solves it by Bartels-Stewart on Schur forms (``method='schur'``) or by
    eigendecompositions (``'eigen'``); tracejit solves the equivalent ``mn x mn`` Kronecker
    system ``(A (x) I_n + I_m (x) B^T) vec(X) = vec(C)`` exactly for either method (O((mn)^3):
    meant for small equations; it is differentiable). As in JAX, the result is all NaN when some
    eigenvalue sum ``|lambda_i(A) + mu_j(B)|`` is below ``tol`` (eigenvalues from LAPACK ``?geev``,
    a host callback under ``jit``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import solve_sylvester
    >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> b = np.array([[5.0, 6.0], [7.0, 8.0]])
    >>> x = solve_sylvester(a, b, a + b)
    >>> np.round(x, 12) + 0.0
    array([[1., 0.],
           [0., 1.]])
    """
    if method not in ("schur", "eigen"):
        raise ValueError(f'Unrecognized method {method}. The two valid methods are either "schur" or "eigen".')
    A, B, C = _la._inexact(A, B, C)
    m, n = jnp.shape(C)[-2:]
    if jnp.shape(A)[-2:] != (m, m) or jnp.shape(B)[-2:] != (n, n):
        raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {jnp.shape(A)}\nB: {jnp.shape(B)}\n"
                         f"C: {jnp.shape(C)}")
    A, B, C = _batch_last(A, B, C, core=2)
    batch = jnp.shape(C)[:-2]
    im, i_n = np.eye(m, dtype=A.dtype), np.eye(n, dtype=A.dtype)
    # row-major vec: K[(i, j), (k, l)] = A[i, k] delta_jl + delta_ik B[l, j]
    k4 = (A[..., :, None, :, None] * i_n[:, None, :]
          + im[:, None, :, None] * jnp.swapaxes(B, -1, -2)[..., None, :, None, :])
    K = jnp.reshape(k4, batch + (m * n, m * n))
    # the eigenvalues only decide singularity
    wa, wb = _eigvals_no_derivative(A), _eigvals_no_derivative(B)
    bad = jnp.any(jnp.abs(wa[..., :, None] + wb[..., None, :]) < tol, axis=(-2, -1))
    K = jnp.where(bad[..., None, None], np.eye(m * n, dtype=A.dtype), K)    # keep the solve nonsingular
    x = jnp.linalg.solve(K, jnp.reshape(C, batch + (m * n, 1)))
    X = jnp.reshape(x, batch + (m, n))
    return jnp.where(bad[..., None, None], np.nan, X)

