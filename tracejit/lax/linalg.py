"""``tracejit.lax.linalg``: ``jax.lax.linalg``'s decompositions, composed from tracejit's.

Every function has ``jax.lax.linalg``'s signature and output conventions (``eigh`` returns
``(v, w)``, eigenvectors first; ``lu`` returns ``(lu, pivots, permutation)`` with int32
indices; ``svd`` returns ``(u, s, vh)``). They are built from ``tracejit.numpy.linalg``
(LAPACK-backed Cholesky, QR, SVD, eigh and solve, with their derivatives) and ``lax.fori_loop``s
of masked elimination / Householder / Givens steps (``_linalg_kernels``), so
they batch over leading axes, run eagerly, under ``jit`` and ``vmap``, and differentiate
wherever JAX's do (and a few where JAX's do not). Householder reductions follow LAPACK's
conventions (``xLARFG``: ``beta = -sign(alpha) * norm``; ``xGEHRD``, ``xSYTRD``/``xHETRD``,
``xGEQP3`` storage), so their outputs match JAX's up to rounding.

Differences from JAX: ``tracejit.numpy.linalg.cholesky`` of a matrix that is not positive definite
raises NumPy's ``LinAlgError`` (``lax.linalg.cholesky`` gives NaNs, as JAX's); ``eigh``/``cholesky`` differentiate along the Hermitian part
of the direction also with ``symmetrize_input=False``; triangular and tridiagonal solves use the
general LU solver on the masked / assembled matrix (same result, O(n^3)).

``eig`` and ``schur`` call LAPACK's ``?geev`` / ``?gees`` on the host (eagerly, and under ``jit`` as a
host callback; ``vmap`` passes the whole batch), through SciPy's LAPACK, the library JAX's CPU
kernels call: results match JAX's bit for bit (eigenvalue order, unit 2-norm eigenvectors with a real
largest component). A matrix with an infinity or NaN, or on which LAPACK fails, gives NaNs, as in
JAX. Without SciPy, ``eig`` falls back to NumPy's ``geev`` (right eigenvectors only; single
precision computed in double, as NumPy does) and ``schur`` is unavailable. ``eig``'s derivative is
JAX's rule (eigenvalues; eigenvectors with ``enable_eigvec_derivs=True``); ``schur`` has none.

Examples
--------
>>> import numpy as np
>>> from tracejit.lax import linalg
>>> v, w = linalg.eigh(np.array([[2.0, 0.0], [0.0, 1.0]]))
>>> w
Array([1., 2.])
"""
from __future__ import annotations

import enum
import functools
import operator
import warnings

import numpy as np

from tracejit.core import dtypes

import tracejit.numpy as jnp
from tracejit.array import eager_results
from tracejit.core.avals import ShapedArray
from tracejit.ops import control_flow_functions as control_flow
from tracejit.lax._linalg_kernels import (_H, _is_complex, _mT, apply_reflectors, hessenberg_core, lu_kernel, mask,
                                          qdwh_iterate, qr_pivoted, swap)
from tracejit.lax.ops import broadcasted_iota, complex as _complex
from tracejit.numpy._util import aval, eager, is_tracer, to_operand
from tracejit.ops.callback import FlatCallback, pure_callback_p, split_callback_args
from tracejit.ops.linalg import cholesky_p as _cholesky_p
from tracejit.scipy.linalg import solve_triangular
from tracejit.transforms.ad_custom import custom_jvp

__all__ = ["EigImplementation", "EighImplementation", "SvdAlgorithm", "cholesky", "cholesky_update", "eig", "eigh",
           "hessenberg", "householder_product", "lu", "lu_pivots_to_permutation", "ormqr", "qdwh", "qr", "schur",
           "svd", "symmetric_product", "triangular_solve", "tridiagonal", "tridiagonal_solve"]


class EigImplementation(enum.Enum):
    """Algorithm choice for :func:`eig` (``LAPACK``, on the host, is the only one on the CPU)."""
    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


class EighImplementation(enum.Enum):
    """Algorithm choice for :func:`eigh` (``QR``, LAPACK's, is the only one on the CPU)."""
    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
    """Algorithm choice for :func:`svd` (accepted; the CPU computes with LAPACK's ``gesdd``)."""
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


# --------------------------------------------------------------------------- helpers

def _operand(x, name, kinds="fc", min_ndim=2, square=False):
    x = to_operand(x)
    if not is_tracer(x) and not isinstance(x, np.ndarray):
        x = np.asarray(x)
    a = aval(x)
    if dtypes.kind(np.dtype(a.dtype)) not in kinds:
        accepted = "floating" if kinds == "f" else "floating, complexfloating"
        raise TypeError(f"{name} does not accept dtype {np.dtype(a.dtype).name}. Accepted dtypes are "
                        f"subtypes of {accepted}.")
    if len(a.shape) < min_ndim:
        raise ValueError(f"{name}: expected an array of rank >= {min_ndim}, got shape {a.shape}")
    if square and a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: expected square matrices, got shape {a.shape}")
    return x


def _symmetrize(x):
    return (x + _H(x)) / 2


def _index(v, what):
    if is_tracer(v):
        raise TypeError(f"{what} must be static (a Python int) under jit")
    return operator.index(v)


def _subset(subset_by_index, size):
    if subset_by_index is None:
        return None
    start, end = (_index(i, "subset_by_index") for i in subset_by_index)
    if not 0 <= start <= end <= size:
        raise ValueError(f"subset_by_index must satisfy 0 <= start <= end <= {size}, got {subset_by_index}")
    return start, end


# --------------------------------------------------------------------------- Cholesky

@eager_results
def cholesky(x, *, symmetrize_input=True):
    """Cholesky factor ``L`` (lower triangular) with ``x = L @ L^H`` (``jax.lax.linalg.cholesky``).

    Parameters
    ----------
    x : array, shape (..., n, n)
        Hermitian positive-definite matrices.
    symmetrize_input : bool
        Factor ``(x + x^H) / 2``; with False only the lower triangle of ``x`` is read.

    Returns
    -------
    Array, shape (..., n, n). A matrix that is not positive definite gives NaN in its factor's lower
    triangle (zeros above), as JAX's; the other matrices of a batch are factored normally.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> linalg.cholesky(np.array([[4.0, 2.0], [2.0, 5.0]]))
    Array([[2., 0.],
           [1., 2.]])
    """
    x = _operand(x, "cholesky", square=True)
    x = _symmetrize(x) if symmetrize_input else x
    if aval(x).dtype == np.float16:
        raise TypeError("cholesky does not accept dtype float16 (LAPACK has no half-precision factorization)")
    return _cholesky_p.bind(x, upper=False, nan_on_failure=True)


@eager_results
def cholesky_update(r_matrix, w_vector):
    """Rank-1 update of a Cholesky factor: upper ``R'`` with ``R'^T R' = R^T R + w w^T``.

    Givens rotations row by row, as JAX's (real matrices; ``O(n^2)`` work per row).

    Parameters
    ----------
    r_matrix : array, shape (..., n, n)
        Upper-triangular factor ``R`` of ``A = R^T R``.
    w_vector : array, shape (..., n)

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> linalg.cholesky_update(np.eye(2), np.array([0.0, 1.0])) ** 2
    Array([[1., 0.],
           [0., 2.]])
    """
    r = _operand(r_matrix, "cholesky_update", kinds="f", square=True)
    w = _operand(w_vector, "cholesky_update", kinds="f", min_ndim=1)
    n = aval(r).shape[-1]
    if aval(w).shape[-1] != n or aval(w).dtype != aval(r).dtype:
        raise ValueError(f"cholesky_update takes a square matrix and a vector of the same size and dtype, got "
                         f"{aval(r).str_short()} and {aval(w).str_short()}")
    rows = np.arange(n)

    def step(k, carry):
        r, z = carry
        row = jnp.take(r, k, axis=-2)
        x, y = jnp.take(row, k, axis=-1), jnp.take(z, k, axis=-1)
        zero = y == 0
        den = jnp.where(zero, 1, jnp.maximum(jnp.abs(x), jnp.abs(y)))
        xs, ys = x / den, y / den
        rh = 1 / jnp.sqrt(jnp.where(zero, 1, xs * xs + ys * ys))
        c = jnp.where(zero, 1, xs * rh)[..., None]
        s = jnp.where(zero, 0, -ys * rh)[..., None]
        new_row, z = c * row - s * z, c * z + s * row
        return jnp.where(rows[:, None] == k, new_row[..., None, :], r), z
    return control_flow.fori_loop(0, n, step, (r, jnp.broadcast_to(w, aval(r).shape[:-1])))[0]


# --------------------------------------------------------------------------- eigh / svd

@eager_results
def eigh(x, *, lower=True, symmetrize_input=True, sort_eigenvalues=True, subset_by_index=None,
         implementation=None):
    """Eigendecomposition of Hermitian matrices: ``(v, w)``, eigenvectors FIRST (``jax.lax.linalg.eigh``).

    Parameters
    ----------
    x : array, shape (..., n, n)
    lower : bool
        The triangle read when ``symmetrize_input`` is False.
    symmetrize_input : bool
        Decompose ``(x + x^H) / 2``.
    sort_eigenvalues : bool
        Eigenvalues come in ascending order either way.
    subset_by_index : (start, end), optional
        Keep eigenvalues ``start:end`` (ascending) and their eigenvectors.
    implementation : EighImplementation, optional
        ``None`` or ``QR``; ``JACOBI`` and ``QDWH`` are GPU/TPU algorithms (NotImplementedError, as JAX on CPU).

    Returns
    -------
    v : Array, shape (..., n, d)
        ``v[..., :, i]`` is the eigenvector of ``w[..., i]``.
    w : Array, shape (..., d), real

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> v, w = linalg.eigh(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> w
    Array([1., 3.])
    """
    if implementation not in (None, EighImplementation.QR):
        raise NotImplementedError(f"eigh: implementation {implementation} is not supported on the CPU")
    x = _operand(x, "eigh", square=True)
    w, v = jnp.linalg.eigh(_symmetrize(x) if symmetrize_input else x, UPLO="L" if lower else "U")
    sub = _subset(subset_by_index, aval(x).shape[-1])
    if sub is not None:
        w, v = w[..., sub[0]:sub[1]], v[..., :, sub[0]:sub[1]]
    return v, w


@eager_results
def svd(x, *, full_matrices=True, compute_uv=True, subset_by_index=None, algorithm=None):
    """Singular value decomposition ``x = u @ diag(s) @ vh`` (``jax.lax.linalg.svd``).

    Parameters
    ----------
    x : array, shape (..., m, n)
    full_matrices : bool
        ``u`` is (m, m) and ``vh`` (n, n), else (m, k) and (k, n), ``k = min(m, n)``.
    compute_uv : bool
        Return ``(u, s, vh)``; else only ``s``.
    subset_by_index : (start, end), optional
        Keep singular values ``start:end`` (descending) and their vectors; needs
        ``full_matrices=False`` (JAX's CPU backend does not implement it).
    algorithm : SvdAlgorithm, optional
        Accepted; the result is LAPACK's.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> linalg.svd(np.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False)
    Array([4., 3.])
    """
    if algorithm is not None and not isinstance(algorithm, SvdAlgorithm):
        raise TypeError(f"svd: algorithm must be None or a SvdAlgorithm, got {algorithm!r}")
    x = _operand(x, "svd")
    m, n = aval(x).shape[-2:]
    sub = _subset(subset_by_index, min(m, n))
    if sub is not None and full_matrices and sub != (0, min(m, n)):
        raise ValueError("full_matrices and subset_by_index cannot both be set")
    if not compute_uv:
        s = jnp.linalg.svd(x, compute_uv=False)
        return s if sub is None else s[..., sub[0]:sub[1]]
    u, s, vh = jnp.linalg.svd(x, full_matrices=full_matrices)
    if sub is not None:
        u, s, vh = u[..., :, sub[0]:sub[1]], s[..., sub[0]:sub[1]], vh[..., sub[0]:sub[1], :]
    return u, s, vh


# --------------------------------------------------------------------------- LU

@eager_results
def lu(x):
    """LU decomposition with partial pivoting, ``P x = L U`` (``jax.lax.linalg.lu``).

    Returns
    -------
    lu : Array, shape (..., m, n)
        ``L`` (unit diagonal not stored) below the diagonal, ``U`` on and above it.
    pivots : int32 Array, shape (..., min(m, n))
        Row ``i`` was swapped with row ``pivots[i]`` (0-based, in order).
    permutation : int32 Array, shape (..., m)
        The same swaps as a permutation: ``x[permutation] = L @ U``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> lu, piv, perm = linalg.lu(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> piv, perm
    (Array([1, 1], dtype=int32), Array([1, 0], dtype=int32))
    """
    out, piv, perm = lu_kernel(_operand(x, "lu"))
    return out, piv.astype(np.int32), perm.astype(np.int32)


@eager_results
def lu_pivots_to_permutation(pivots, permutation_size):
    """The permutation made by applying the row swaps ``pivots`` (from :func:`lu`) to ``range(permutation_size)``.

    Parameters
    ----------
    pivots : integer array, shape (..., k)
    permutation_size : int
        Static, at least ``k``.

    Returns
    -------
    int32 Array, shape (..., permutation_size)

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> linalg.lu_pivots_to_permutation(np.array([2, 2, 3], np.int32), 5)
    Array([2, 0, 3, 1, 4], dtype=int32)
    """
    piv = _operand(pivots, "lu_pivots_to_permutation", kinds="iu", min_ndim=1)
    size = _index(permutation_size, "permutation_size")
    k = aval(piv).shape[-1]
    if size < k:
        raise ValueError(f"Output permutation size {size} has to exceed the trailing dimension of the pivots {k}")
    piv = jnp.astype(piv, np.int32)
    rng = np.arange(size, dtype=np.int32)

    def step(i, perm):
        return swap(perm, i, jnp.take(piv, i, axis=-1)[..., None], rng, -1)
    return control_flow.fori_loop(0, k, step, jnp.broadcast_to(rng, aval(piv).shape[:-1] + (size,)))


# --------------------------------------------------------------------------- QR and Householder products

@eager_results
def ormqr(a, taus, c, *, left=True, transpose=False):
    """``Q @ c`` (``left``; ``c @ Q`` otherwise; ``Q^H`` with ``transpose``) for ``Q`` given as
    Householder reflectors, without forming ``Q`` (``jax.lax.linalg.ormqr``).

    Parameters
    ----------
    a : array, shape (..., m, n)
        Reflector ``i`` is ``a[..., i+1:, i]`` below an implicit 1 (LAPACK's ``geqrf`` format).
    taus : array, shape (..., k)
    c : array, shape (..., m, p) if ``left`` else (..., p, m)

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> linalg.ormqr(np.array([[0.0], [1.0]]), np.array([1.0]), np.eye(2))   # I - v v^T, v = (1, 1)
    Array([[ 0., -1.],
           [-1.,  0.]])
    """
    a = _operand(a, "ormqr")
    taus = _operand(taus, "ormqr", min_ndim=1)
    c = _operand(c, "ormqr")
    m = aval(a).shape[-2]
    if aval(c).shape[-2 if left else -1] != m:
        raise ValueError(f"ormqr with left={left} expects c to have {m} {'rows' if left else 'columns'}, got "
                         f"a shape {aval(a).shape} and c shape {aval(c).shape}")
    return apply_reflectors(a, taus, c, left, transpose)


@eager_results
def householder_product(a, taus):
    """The unitary matrix ``Q = H_0 H_1 ... H_{k-1}`` of Householder reflectors (LAPACK's ``orgqr``),
    its first ``n`` columns (``jax.lax.linalg.householder_product``).

    Parameters
    ----------
    a : array, shape (..., m, n), m >= n
        Reflectors below the diagonal, as :func:`ormqr` reads them.
    taus : array, shape (..., k), k <= n

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> linalg.householder_product(np.array([[0.0], [1.0]]), np.array([1.0]))
    Array([[ 0.],
           [-1.]])
    """
    a = _operand(a, "householder_product")
    m, n = aval(a).shape[-2:]
    if m < n:
        raise ValueError(f"householder_product: a must have at least as many rows as columns, got {aval(a).shape}")
    taus = _operand(taus, "householder_product", min_ndim=1)
    if aval(taus).shape[-1] > n:
        raise ValueError("householder_product: taus must not be longer than min(m, n)")
    eye = jnp.broadcast_to(jnp.eye(m, n, dtype=aval(a).dtype), aval(a).shape)
    return ormqr(a, taus, eye)


@eager_results
def qr(x, *, pivoting=False, full_matrices=True, use_magma=None):
    """QR decomposition ``x = q @ r`` (``x[..., :, p] = q @ r`` with ``pivoting``), ``jax.lax.linalg.qr``.

    Parameters
    ----------
    x : array, shape (..., m, n)
    pivoting : bool
        Column pivoting (LAPACK's ``geqp3``): the diagonal of ``r`` does not increase in magnitude.
    full_matrices : bool
        ``q`` (m, m) and ``r`` (m, n); else (m, k) and (k, n), ``k = min(m, n)``.
    use_magma : bool, optional
        GPU option, ignored.

    Returns
    -------
    ``(q, r)``, or ``(q, r, p)`` with an int32 column permutation ``p`` of shape (..., n).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> q, r = linalg.qr(np.array([[3.0, 1.0], [4.0, 2.0]]))
    >>> np.round(r, 6)
    array([[-5. , -2.2],
           [ 0. ,  0.4]])
    """
    x = _operand(x, "qr")
    if pivoting:
        return qr_pivoted(x, full_matrices)
    q, r = jnp.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return q, r


# --------------------------------------------------------------------------- Hessenberg / tridiagonal

@eager_results
def hessenberg(a):
    """Reduction to upper Hessenberg form ``Q^H a Q`` (LAPACK's ``gehrd``), ``jax.lax.linalg.hessenberg``.

    Returns
    -------
    a : Array, shape (..., n, n)
        The Hessenberg matrix on and above the first subdiagonal, the Householder vectors below it.
    taus : Array, shape (..., n - 1)
        ``Q = H_0 ... H_{n-2}``, ``H_i = I - taus[i] v_i v_i^H`` (see :func:`householder_product`).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> h, taus = linalg.hessenberg(np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]]))
    >>> taus
    Array([0., 0.])
    """
    a = _operand(a, "hessenberg", square=True)
    h, refl, taus = hessenberg_core(a)
    n = aval(a).shape[-1]
    return jnp.where(np.arange(n)[:, None] > np.arange(n)[None, :] + 1, refl, h), taus


@eager_results
def tridiagonal(a, *, lower=True):
    """Reduction of Hermitian matrices to real tridiagonal form (LAPACK's ``sytrd``/``hetrd``),
    ``jax.lax.linalg.tridiagonal``.

    Parameters
    ----------
    a : array, shape (..., n, n)
        Only the triangle named by ``lower`` is read (the other is returned unchanged).

    Returns
    -------
    a : Array
        With ``lower``: the diagonal and first subdiagonal hold the tridiagonal matrix and the
        Householder vectors lie below (above the first superdiagonal otherwise).
    d : Array, shape (..., n), real
        The diagonal.
    e : Array, shape (..., n - 1), real
        The off-diagonal.
    taus : Array, shape (..., n - 1)

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> _, d, e, _ = linalg.tridiagonal(np.array([[2.0, 1.0], [1.0, 3.0]]))
    >>> d, e
    (Array([2., 3.]), Array([1.]))
    """
    a = _operand(a, "tridiagonal", square=True)
    if not lower:       # the upper algorithm is the lower one on the matrix reversed along both axes
        out, d, e, taus = tridiagonal(jnp.flip(a, axis=(-2, -1)), lower=True)
        return jnp.flip(out, axis=(-2, -1)), jnp.flip(d, -1), jnp.flip(e, -1), jnp.flip(taus, -1)
    n = aval(a).shape[-1]
    rows, cols = np.arange(n)[:, None], np.arange(n)[None, :]
    strict = jnp.where(rows > cols, a, 0)
    diag = jnp.where(rows == cols, jnp.real(a).astype(aval(a).dtype), 0)
    h, refl, taus = hessenberg_core(strict + _H(strict) + diag)
    d = jnp.real(jnp.diagonal(h, 0, -2, -1))
    e = jnp.real(jnp.diagonal(h, -1, -2, -1))
    dt = aval(a).dtype
    out = jnp.where(rows > cols + 1, refl, jnp.where(rows == cols, d[..., :, None].astype(dt),
                                                     jnp.where(rows == cols + 1, jnp.real(h).astype(dt), a)))
    return out, d, e, taus


# --------------------------------------------------------------------------- products and solves

@eager_results
def symmetric_product(a_matrix, c_matrix, *, alpha=1.0, beta=0.0, symmetrize_output=False):
    """``alpha * a @ a^T + beta * c`` for symmetric ``c`` (``jax.lax.linalg.symmetric_product``).

    The whole matrix is computed (JAX guarantees only the lower triangle); with
    ``symmetrize_output`` the upper triangle is the transpose of the lower one.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> linalg.symmetric_product(np.array([[1.0], [2.0]]), np.eye(2), alpha=2.0, beta=1.0)
    Array([[3., 4.],
           [4., 9.]])
    """
    a = _operand(a_matrix, "symmetric_product", kinds="f")
    c = _operand(c_matrix, "symmetric_product", kinds="f", square=True)
    out = alpha * jnp.matmul(a, _mT(a)) + beta * c
    if symmetrize_output:
        out = jnp.tril(out) + _mT(jnp.tril(out, -1))
    return out


@eager_results
def triangular_solve(a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False,
                     unit_diagonal=False):
    """Solve ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` for triangular ``a``
    (``jax.lax.linalg.triangular_solve``).

    Parameters
    ----------
    a : array, shape (..., m, m)
        Only the triangle named by ``lower`` is read (and not its diagonal with ``unit_diagonal``).
    b : array, shape (..., m, n) if ``left_side`` else (..., n, m)
        Or one dimension less (a single vector).
    left_side, lower, unit_diagonal : bool
    transpose_a, conjugate_a : bool
        ``op(a)`` is ``a``, ``a^T``, ``conj(a)`` or ``a^H``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> a = np.array([[2.0, 0.0], [1.0, 1.0]])
    >>> linalg.triangular_solve(a, np.array([[2.0], [3.0]]), left_side=True, lower=True)
    Array([[1.],
           [2.]])
    """
    a = _operand(a, "triangular_solve", square=True)
    b = _operand(b, "triangular_solve", min_ndim=1)
    conjugate_a = conjugate_a and _is_complex(a)
    single = aval(b).ndim == aval(a).ndim - 1
    if single:
        b = jnp.expand_dims(b, -1 if left_side else -2)
    if not left_side:        # x op(a) = b  <=>  op(a)^T x^T = b^T
        transpose_a, b = not transpose_a, _mT(b)
    if conjugate_a and not transpose_a:
        a = jnp.conj(a)
    trans = (2 if conjugate_a else 1) if transpose_a else 0
    x = solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    if not left_side:
        x = _mT(x)
    if single:
        x = x[..., 0] if left_side else x[..., 0, :]
    return x


@eager_results
def tridiagonal_solve(dl, d, du, b, *, perturb_singular=False):
    """Solve ``A x = b`` for tridiagonal ``A`` (``jax.lax.linalg.tridiagonal_solve``).

    Parameters
    ----------
    dl, d, du : array, shape (..., m)
        ``A[i, i-1] = dl[i]`` (``dl[0]`` unused), ``A[i, i] = d[i]``, ``A[i, i+1] = du[i]``
        (``du[m-1]`` unused).
    b : array, shape (..., m, n)
    perturb_singular : bool
        Not supported (NotImplementedError): a singular system raises ``LinAlgError``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> linalg.tridiagonal_solve(np.array([0.0, 1.0]), np.array([2.0, 2.0]), np.array([1.0, 0.0]),
    ...                          np.array([[3.0], [3.0]]))
    Array([[1.],
           [1.]])
    """
    if perturb_singular:
        raise NotImplementedError("tridiagonal_solve(perturb_singular=True) is not supported")
    dl, d, du = (_operand(v, "tridiagonal_solve", min_ndim=1) for v in (dl, d, du))
    b = _operand(b, "tridiagonal_solve")
    m = aval(d).shape[-1]
    if aval(dl).shape != aval(d).shape or aval(du).shape != aval(d).shape or aval(b).shape[-2] != m:
        raise ValueError(f"tridiagonal_solve: dl, d, du must have shape (..., m) and b (..., m, n), got "
                         f"{aval(dl).shape}, {aval(d).shape}, {aval(du).shape} and {aval(b).shape}")
    rows, cols = np.arange(m)[:, None], np.arange(m)[None, :]
    mat = (jnp.where(cols == rows, d[..., :, None], 0) + jnp.where(cols == rows + 1, du[..., :, None], 0)
           + jnp.where(cols == rows - 1, dl[..., :, None], 0))
    return jnp.linalg.solve(mat, b)


# --------------------------------------------------------------------------- QDWH polar decomposition

@eager_results
def qdwh(x, *, is_hermitian=False, max_iterations=None, eps=None, dynamic_shape=None):
    """Polar decomposition ``x = u @ h`` by the QR-based dynamically weighted Halley iteration
    (``jax.lax.linalg.qdwh``; Nakatsukasa, Bai and Gygi 2010), JAX's algorithm step for step.

    Parameters
    ----------
    x : array, shape (M, N), M >= N
        Full rank; batches go through ``vmap``.
    is_hermitian : bool
        Unused (as in JAX).
    max_iterations : int, optional
        Static bound on the iterations (default 10).
    eps : float, optional
        Convergence tolerance base (default: the dtype's machine epsilon).
    dynamic_shape : (m, n), optional
        The true size of an ``x`` padded with zeros to (M, N).

    Returns
    -------
    u, h, num_iters, is_converged
        ``u`` has orthonormal columns, ``h`` is Hermitian positive semi-definite.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> x = np.array([[0.0, 2.0], [3.0, 0.0]])
    >>> u, h, n_iter, ok = linalg.qdwh(x)
    >>> np.round(h, 6), bool(ok), np.allclose(u @ h, x)
    (array([[3., 0.],
           [0., 2.]]), True, True)
    """
    x = _operand(x, "qdwh")
    if aval(x).ndim != 2:
        raise ValueError(f"qdwh expects a matrix (use vmap for batches), got shape {aval(x).shape}")
    big_m, big_n = aval(x).shape
    if big_m < big_n:
        raise ValueError("The input matrix of shape M x N must have M >= N.")
    max_iterations = 10 if max_iterations is None else _index(max_iterations, "max_iterations")
    if dynamic_shape is not None:
        m, n = (_index(v, "dynamic_shape") for v in dynamic_shape)
        x = mask(x, (m, n))
    else:
        m, n = big_m, big_n
    return qdwh_iterate(x, m, n, max_iterations, eps)


# --------------------------------------------------------------------------- eig / schur (host LAPACK)

def _scipy_linalg():
    """SciPy's ``linalg`` (its LAPACK is the one JAX's CPU kernels call), or None without SciPy."""
    try:
        from scipy import linalg
    except ImportError:
        return None
    return linalg


def _complex_of(dt):
    return np.dtype(np.complex128) if np.dtype(dt) in (np.float64, np.complex128) else np.dtype(np.complex64)


def _host_geev(a, *, left, right):
    """LAPACK ``?geev`` of every matrix of the batch ``a``: ``[w] + [vl] + [vr]`` as requested, complex;
    NaNs for a matrix with a non-finite entry or on which LAPACK fails (JAX's convention)."""
    a = np.asarray(a)
    cdt = _complex_of(a.dtype)
    w = np.full(a.shape[:-1], np.nan, cdt)
    vl = np.full(a.shape, np.nan, cdt)
    vr = np.full(a.shape, np.nan, cdt)
    sl = _scipy_linalg()
    if sl is None and left:
        raise NotImplementedError("lax.linalg.eig: left eigenvectors need SciPy's LAPACK (scipy is not installed)")
    for idx in np.ndindex(*a.shape[:-2]):
        m = a[idx]
        if m.shape[-1] == 0 or not np.isfinite(m).all():
            continue
        try:
            if sl is not None:
                res = sl.eig(m, left=left, right=right, check_finite=False)
            else:                               # NumPy's geev (in double precision for single)
                res = np.linalg.eig(m) if right else np.linalg.eigvals(m)
        except np.linalg.LinAlgError:
            continue
        res = list(res) if isinstance(res, tuple) else [res]
        w[idx] = res.pop(0)
        if left:
            vl[idx] = res.pop(0)
        if right:
            vr[idx] = res.pop(0)
    return [w] + ([vl] if left else []) + ([vr] if right else [])


def _host_gees(a, *, vectors):
    """LAPACK ``?gees`` (no sorting) of every matrix of the batch ``a``: ``[t] + [q]``, in ``a``'s dtype
    (the real Schur form for real matrices); NaNs where it fails or for non-finite entries."""
    a = np.asarray(a)
    sl = _scipy_linalg()
    if sl is None:
        raise NotImplementedError("lax.linalg.schur needs SciPy's LAPACK (?gees); scipy is not installed")
    t = np.full(a.shape, np.nan, a.dtype)
    q = np.full(a.shape, np.nan, a.dtype)
    for idx in np.ndindex(*a.shape[:-2]):
        m = a[idx]
        if m.shape[-1] == 0 or not np.isfinite(m).all():
            continue
        try:
            t[idx], q[idx] = sl.schur(m, output="complex" if dtypes.kind(m.dtype) == "c" else "real", check_finite=False)
        except np.linalg.LinAlgError:
            continue
    return [t, q] if vectors else [t]


# One function object per static choice: equal callbacks of one program may then be merged.
_GEEV = {(l, r): functools.partial(_host_geev, left=l, right=r) for l in (False, True) for r in (False, True)}
_GEES = {v: functools.partial(_host_gees, vectors=v) for v in (False, True)}


def _host_call(fun, label, x, result_avals):
    """``fun(x)`` on the host: eagerly at once, else a ``pure_callback`` (whole batches under ``vmap``)."""
    if eager(x):
        return fun(np.asarray(x))
    in_tree, dynamic, static = split_callback_args((x,), {})
    outs = pure_callback_p.bind(*dynamic, callback=FlatCallback(fun, in_tree, static, label=label),
                                result_avals=tuple(result_avals), vmap_method="broadcast_all", sharding=None)
    return list(outs)


def _geev(a, left, right):
    shape, cdt = aval(a).shape, _complex_of(aval(a).dtype)
    avals = [ShapedArray(shape[:-1], cdt)] + [ShapedArray(shape, cdt)] * (int(left) + int(right))
    return _host_call(_GEEV[(left, right)], "geev", a, avals)


def _eig_vec_jvp(w, v, da):
    """JAX's eigenvector JVP (nondegenerate perturbation theory, differentiating through LAPACK's
    normalization: unit 2-norm, real largest-magnitude component)."""
    n = aval(w).shape[-1]
    eye = np.eye(n, dtype=aval(w).dtype)
    f = 1 / (eye + w[..., None, :] - w[..., :, None]) - eye
    p = jnp.linalg.solve(v, da) @ v
    dw = jnp.diagonal(p, axis1=-2, axis2=-1)
    u = v @ (f * p)
    k = jnp.argmax(jnp.abs(v), axis=-2)
    sel = broadcasted_iota(np.int32, aval(v).shape, aval(v).ndim - 2) == k[..., None, :].astype(np.int32)
    sel = sel.astype(aval(v).dtype)
    c = _complex(-jnp.real(jnp.sum(jnp.conj(v) * u, axis=-2)),
                 -jnp.imag(jnp.sum(sel * u, axis=-2)) / jnp.real(jnp.sum(sel * v, axis=-2)))
    return dw, u + v * c[..., None, :]


@functools.lru_cache(maxsize=None)
def _eig_function(left, right, vec_derivs):
    def eig_fn(a):
        return _geev(a, left, right)

    fn = custom_jvp(eig_fn)

    def jvp(primals, tangents):
        (a,), (da,) = primals, tangents
        if (left or right) and not vec_derivs:
            raise NotImplementedError(
                "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the input that "
                "JAX cannot check (see the enable_eigvec_derivs argument to jax.lax.linalg.eig). Pass "
                "enable_eigvec_derivs=True to jax.lax.linalg.eig to opt in. See "
                "https://github.com/jax-ml/jax/issues/2748 for discussion.")
        outs = _geev(a, left, True)
        w, vr = outs[0], outs[-1]
        da = jnp.asarray(da).astype(aval(vr).dtype)
        if not (left or right):
            return [w], [jnp.sum(jnp.linalg.solve(vr, da) * jnp.swapaxes(vr, -1, -2), axis=-1)]
        dw, dvr = _eig_vec_jvp(w, vr, da)
        primal_out, tangent_out = [w], [dw]
        if left:
            _, dvl = _eig_vec_jvp(jnp.conj(w), outs[1], _H(da))
            primal_out.append(outs[1])
            tangent_out.append(dvl)
        if right:
            primal_out.append(vr)
            tangent_out.append(dvr)
        return primal_out, tangent_out

    fn.defjvp(jvp)
    return fn


def _general_operand(x, name):
    x = _operand(x, name, square=True)
    if aval(x).dtype == np.float16:
        raise TypeError(f"{name} does not accept dtype float16 (LAPACK has no half-precision routine)")
    return x


@eager_results
def eig(x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True, enable_eigvec_derivs=False,
        implementation=None, use_magma=None):
    """Eigendecomposition of general square matrices (``jax.lax.linalg.eig``): LAPACK ``?geev``.

    Parameters
    ----------
    x : array, shape (..., n, n), floating or complex
    compute_left_eigenvectors, compute_right_eigenvectors : bool
    enable_eigvec_derivs : bool
        Allow differentiating the eigenvectors (valid for distinct eigenvalues), as in JAX.
    implementation : EigImplementation, optional
        ``None`` or ``LAPACK`` (the others are GPU libraries: ValueError, as JAX on the CPU).
    use_magma : bool, optional
        Deprecated alias of ``implementation``.

    Returns
    -------
    list ``[w, vl, vr]`` (the vectors only when requested), all complex (complex64 for float32 and
    complex64 input, else complex128). ``w[..., i]`` is the eigenvalue of ``vr[..., :, i]``
    (``x @ vr = vr * w``) and of the left eigenvector ``vl[..., :, i]`` (``vl^H @ x = w * vl^H``),
    in LAPACK's order; each eigenvector has unit 2-norm and a real largest-magnitude component. A
    matrix with an infinity or NaN gives NaNs. Eagerly, under ``jit`` (a host callback) and
    ``vmap``; differentiable as JAX's (eigenvalues; eigenvectors with ``enable_eigvec_derivs``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> w, vr = linalg.eig(np.array([[2.0, 1.0], [0.0, 3.0]]), compute_left_eigenvectors=False)
    >>> w
    Array([2.+0.j, 3.+0.j])
    >>> np.round(np.abs(vr), 4)
    array([[1.    , 0.7071],
           [0.    , 0.7071]])
    """
    if use_magma is not None:
        warnings.warn("use_magma is deprecated, please use implementation=EigImplementation.MAGMA instead.",
                      DeprecationWarning, stacklevel=2)
        implementation = EigImplementation.MAGMA if use_magma else EigImplementation.LAPACK
    if implementation is not None and implementation != EigImplementation.LAPACK:
        raise ValueError("Only the lapack implementation is supported on CPU.")
    x = _general_operand(x, "eig")
    fn = _eig_function(bool(compute_left_eigenvectors), bool(compute_right_eigenvectors), bool(enable_eigvec_derivs))
    return list(fn(x))


@functools.lru_cache(maxsize=None)
def _schur_function(vectors):
    def schur_fn(a):
        return _host_call(_GEES[vectors], "gees", a, [ShapedArray(aval(a).shape, aval(a).dtype)] * (1 + vectors))

    fn = custom_jvp(schur_fn)

    def jvp(primals, tangents):
        raise NotImplementedError("Differentiation rule for 'schur' not implemented")

    fn.defjvp(jvp)
    return fn


@eager_results
def schur(x, *, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
    """Schur decomposition ``x = q @ t @ q^H`` (``jax.lax.linalg.schur``): LAPACK ``?gees``.

    ``t`` is upper triangular (for real ``x`` the real Schur form: quasi-triangular with 2x2 blocks
    for complex conjugate pairs), ``q`` unitary; both in ``x``'s dtype. Needs SciPy's LAPACK.

    Parameters
    ----------
    x : array, shape (..., n, n), floating or complex
    compute_schur_vectors : bool
        Return ``[t, q]``; else ``[t]``.
    sort_eig_vals : bool
        Must be False (NotImplementedError otherwise, as in JAX).
    select_callable : ignored

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.lax import linalg
    >>> t, q = linalg.schur(np.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> t
    Array([[1., 2.],
           [0., 3.]])
    """
    if sort_eig_vals:
        raise NotImplementedError("The sort feature of LAPACK's gees routine is not implemented.")
    x = _general_operand(x, "schur")
    return list(_schur_function(bool(compute_schur_vectors))(x))
