"""``tracejit.scipy.linalg``: ``jax.scipy.linalg``'s API on ``tracejit.numpy.linalg``.

Factorizations with a LAPACK primitive (Cholesky, QR, SVD, eigh, solve, inv,
det) reuse ``tracejit.numpy.linalg`` (so they batch and differentiate as those
do). LU with partial pivoting is a ``lax.fori_loop`` of masked rank-1 updates
(differentiable, batched by ``vmap``); ``expm`` is Higham's scaling and squaring
with the [13/13] Pade approximant; ``sqrtm`` diagonalizes with ``eig``
(complex result, diagonalizable matrices). Triangular solves run through the
general solver on the masked triangle (same result, O(n^3) instead of O(n^2)).

Examples
--------
>>> import numpy as np
>>> from tracejit.scipy import linalg
>>> linalg.solve_triangular(np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([2.0, 3.0]), lower=True)
Array([1., 2.])
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

import tracejit.numpy as jnp
from tracejit.ops.control_flow_functions import fori_loop
from tracejit.numpy._util import convert, to_operand

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "det", "eigh", "expm", "inv", "lu", "lu_factor",
           "lu_solve", "qr", "solve", "solve_triangular", "sqrtm", "svd", "toeplitz", "schur",
           # defined in linalg_special.py (imported at the end of this module)
           "circulant", "companion", "convolution_matrix", "dft", "eigh_tridiagonal", "expm_frechet", "fiedler",
           "fiedler_companion", "funm", "hadamard", "hankel", "helmert", "hessenberg", "hilbert", "invhilbert",
           "invpascal", "leslie", "pascal", "polar", "qr_multiply", "rsf2csf", "solve_sylvester"]


def _inexact(*args):
    ops = [to_operand(a) for a in args]
    from tracejit.core import dtypes
    from tracejit.numpy._util import weak_pair
    dt, _ = dtypes.result_type(*(weak_pair(o) for o in ops))
    dt = np.dtype(dt)
    if dtypes.kind(dt) not in "fc":
        dt = np.dtype(np.float64)
    return [convert(o, dt) for o in ops]


def _mT(x):
    return jnp.swapaxes(x, -1, -2)


def _vector_rhs(b):
    return jnp.ndim(b) == 1


# --------------------------------------------------------------------------- triangular / Cholesky

def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, debug=None,
                     check_finite=True):
    """Solve ``a x = b`` for triangular ``a`` (``jax.scipy.linalg.solve_triangular``).

    Parameters
    ----------
    a : array_like, shape (..., n, n)
        Only the triangle named by ``lower`` is read.
    b : array_like, shape (..., n, k) or (n,)
    trans : {0, 1, 2, 'N', 'T', 'C'}
        Solve ``a x = b``, ``a.T x = b`` or ``a.conj().T x = b``.
    lower, unit_diagonal : bool

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import solve_triangular
    >>> solve_triangular(np.array([[2.0, 1.0], [0.0, 4.0]]), np.array([4.0, 8.0]))
    Array([1., 2.])
    """
    a, b = _inexact(a, b)
    n = jnp.shape(a)[-1]
    t = jnp.tril(a) if lower else jnp.triu(a)
    if unit_diagonal:
        eye = jnp.eye(n, dtype=t.dtype)
        t = t * (1 - eye) + eye
    trans = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}[trans]
    if trans == 1:
        t = _mT(t)
    elif trans == 2:
        t = jnp.conj(_mT(t))
    if _vector_rhs(b):
        return jnp.linalg.solve(t, b)
    batch = np.broadcast_shapes(jnp.shape(t)[:-2], jnp.shape(b)[:-2])
    return jnp.linalg.solve(jnp.broadcast_to(t, batch + (n, n)), jnp.broadcast_to(b, batch + jnp.shape(b)[-2:]))


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """Cholesky factor: upper ``U`` with ``a = U^H U`` by default, lower with ``lower=True`` (SciPy's default).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import cholesky
    >>> cholesky(np.array([[4.0, 2.0], [2.0, 5.0]]))
    Array([[2., 1.],
           [0., 2.]])
    """
    (a,) = _inexact(a)
    return jnp.linalg.cholesky(a, upper=not lower)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``(c, lower)`` for :func:`cho_solve`; ``c`` is the Cholesky factor (zeros off its triangle).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import cho_factor
    >>> c, low = cho_factor(np.array([[4.0, 2.0], [2.0, 5.0]]))
    >>> low
    False
    """
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """Solve ``a x = b`` given ``cho_factor(a)``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import cho_factor, cho_solve
    >>> a = np.array([[4.0, 2.0], [2.0, 5.0]])
    >>> cho_solve(cho_factor(a), np.array([6.0, 7.0]))
    Array([1., 1.])
    """
    c, lower = c_and_lower
    if lower:
        y = solve_triangular(c, b, lower=True)
        return solve_triangular(c, y, lower=True, trans=2)
    y = solve_triangular(c, b, lower=False, trans=2)
    return solve_triangular(c, y, lower=False)


# --------------------------------------------------------------------------- LU

def _lu_core(a):
    """(lu, piv, perm) of a (..., m, n) stack by Doolittle elimination with partial pivoting:
    a ``fori_loop`` over the pivot column with masked, batch-aware updates."""
    m, n = jnp.shape(a)[-2:]
    batch = jnp.shape(a)[:-2]
    k_steps = min(m, n)
    rows = jnp.arange(m)
    cols = jnp.arange(n)

    def step(k, carry):
        lu, piv, perm = carry
        col = jnp.take(lu, k, axis=-1)                                   # (..., m)
        p = jnp.argmax(jnp.where(rows >= k, jnp.abs(col), -1.0), axis=-1)  # (...,)
        pe = jnp.expand_dims(p, -1)
        idx = jnp.where(rows == k, pe, jnp.where(rows == pe, k, rows))    # (..., m)
        lu = jnp.take_along_axis(lu, jnp.broadcast_to(jnp.expand_dims(idx, -1), jnp.shape(lu)), axis=-2)
        perm = jnp.take_along_axis(perm, idx, axis=-1)
        piv = jnp.where(jnp.arange(k_steps) == k, pe, piv)
        col = jnp.take(lu, k, axis=-1)
        row = jnp.take(lu, k, axis=-2)                                   # (..., n)
        pivot = jnp.take(row, k, axis=-1)
        safe = jnp.expand_dims(jnp.where(pivot == 0, jnp.ones_like(pivot), pivot), -1)
        below = rows > k
        l = jnp.where(below, col / safe, jnp.zeros_like(col))
        right = jnp.where(cols > k, row, jnp.zeros_like(row))
        lu = lu - jnp.expand_dims(l, -1) * jnp.expand_dims(right, -2)
        lu = jnp.where(below[:, None] & (cols == k)[None, :], jnp.expand_dims(l, -1), lu)
        return lu, piv, perm
    piv0 = jnp.zeros(batch + (k_steps,), dtype=np.int64)
    perm0 = jnp.broadcast_to(jnp.arange(m), batch + (m,))
    return fori_loop(0, k_steps, step, (a, piv0, perm0))


def _lu_batched(a):
    if jnp.ndim(a) < 2:
        raise ValueError(f"expected at least a 2-D array, got shape {jnp.shape(a)}")
    return _lu_core(a)


def lu_factor(a, overwrite_a=False, check_finite=True):
    """LU factorization with partial pivoting: ``(lu, piv)`` as LAPACK's ``getrf`` (0-based ``piv``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import lu_factor
    >>> lu, piv = lu_factor(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> piv
    Array([1, 1], dtype=int32)
    """
    (a,) = _inexact(a)
    lu_, piv, _ = _lu_batched(a)
    return lu_, jnp.astype(piv, np.int32)   # LAPACK's int32 pivots, as SciPy and JAX


def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    """``p, l, u`` with ``a = p @ l @ u`` (or ``pl, u`` with ``permute_l=True``), ``jax.scipy.linalg.lu``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import lu
    >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> p, l, u = lu(a)
    >>> np.allclose(p @ l @ u, a)
    True
    """
    (a,) = _inexact(a)
    m, n = jnp.shape(a)[-2:]
    k = min(m, n)
    lu_, _, perm = _lu_batched(a)
    l = jnp.tril(lu_[..., :, :k], -1) + jnp.eye(m, k, dtype=lu_.dtype)
    u = jnp.triu(lu_[..., :k, :])
    # p[perm[i], i] = 1
    p = _mT(jnp.asarray(perm[..., :, None] == jnp.arange(m), dtype=lu_.dtype))
    if permute_l:
        return jnp.matmul(p, l), u
    return p, l, u


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """Solve ``a x = b`` (``trans=1``: ``a.T x = b``, 2: ``a^H x = b``) from :func:`lu_factor`.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import lu_factor, lu_solve
    >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> lu_solve(lu_factor(a), np.array([5.0, 11.0]))
    Array([1., 2.])
    """
    lu_, piv = lu_and_piv
    lu_, b = _inexact(lu_, b)
    trans = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}[trans]
    piv = to_operand(piv)
    vec = _vector_rhs(b)
    bb = b[:, None] if vec else b
    n = jnp.shape(lu_)[-1]
    batch = np.broadcast_shapes(jnp.shape(lu_)[:-2], jnp.shape(bb)[:-2])
    lu_ = jnp.broadcast_to(lu_, batch + (n, n))
    bb = jnp.broadcast_to(bb, batch + jnp.shape(bb)[-2:])
    rng = jnp.arange(n)
    perm = jnp.broadcast_to(rng, jnp.shape(piv)[:-1] + (n,))
    for k in range(jnp.shape(piv)[-1]):          # apply getrf's interchanges in order
        pk = piv[..., k:k + 1]
        vk = perm[..., k:k + 1]
        vp = jnp.take_along_axis(perm, pk, axis=-1)
        perm = jnp.where(rng == k, vp, jnp.where(rng == pk, vk, perm))
    perm = jnp.broadcast_to(perm, batch + (n,))

    def rows(x, idx):
        return jnp.take_along_axis(x, jnp.broadcast_to(jnp.expand_dims(idx, -1), jnp.shape(x)), axis=-2)
    if trans == 0:
        y = solve_triangular(lu_, rows(bb, perm), lower=True, unit_diagonal=True)
        x = solve_triangular(lu_, y, lower=False)
    else:
        y = solve_triangular(lu_, bb, lower=False, trans=trans)
        z = solve_triangular(lu_, y, lower=True, unit_diagonal=True, trans=trans)
        x = rows(z, jnp.argsort(perm, axis=-1))
    return x[..., 0] if vec else x


# --------------------------------------------------------------------------- thin wrappers

def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=False, check_finite=True,
          assume_a="gen"):
    """Solve ``a x = b`` (``assume_a``: 'gen', 'sym', 'her' or 'pos' (Cholesky)).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import solve
    >>> solve(np.array([[3.0, 1.0], [1.0, 2.0]]), np.array([9.0, 8.0]))
    Array([2., 3.])
    """
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"Expected assume_a to be one of 'gen', 'sym', 'her', 'pos'; got {assume_a!r}")
    a, b = _inexact(a, b)
    if assume_a == "pos":
        return cho_solve(cho_factor(a, lower=lower), b)
    if _vector_rhs(b):
        return jnp.linalg.solve(a, b)
    batch = np.broadcast_shapes(jnp.shape(a)[:-2], jnp.shape(b)[:-2])
    n = jnp.shape(a)[-1]
    return jnp.linalg.solve(jnp.broadcast_to(a, batch + (n, n)), jnp.broadcast_to(b, batch + jnp.shape(b)[-2:]))


def inv(a, overwrite_a=False, check_finite=True):
    """Matrix inverse.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import inv
    >>> inv(np.array([[2.0, 0.0], [0.0, 4.0]]))
    Array([[0.5 , 0.  ],
           [0.  , 0.25]])
    """
    (a,) = _inexact(a)
    return jnp.linalg.inv(a)


def det(a, overwrite_a=False, check_finite=True):
    """Determinant.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import det
    >>> round(float(det(np.array([[1.0, 2.0], [3.0, 4.0]]))), 12)
    -2.0
    """
    (a,) = _inexact(a)
    return jnp.linalg.det(a)


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False, turbo=True,
         eigvals=None, type=1, check_finite=True):
    """Eigen-decomposition of a Hermitian matrix (generalized with ``b``: ``a v = w b v``, ``type=1``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import eigh
    >>> w, v = eigh(np.array([[2.0, 0.0], [0.0, 1.0]]))
    >>> w
    Array([1., 2.])
    """
    if eigvals is not None:
        raise NotImplementedError("eigh: only eigvals=None is supported")
    if type != 1:
        raise NotImplementedError("eigh: only type=1 is supported")
    uplo = "L" if lower else "U"
    if b is None:
        (a,) = _inexact(a)
        if eigvals_only:
            return jnp.linalg.eigvalsh(a, UPLO=uplo)
        return jnp.linalg.eigh(a, UPLO=uplo)
    a, b = _inexact(a, b)
    L = jnp.linalg.cholesky(b)
    # C = L^-1 a L^-H; a v = w b v  <=>  C (L^H v) = w (L^H v)
    sym = jnp.tril(a) + _mT(jnp.conj(jnp.tril(a, -1))) if lower else jnp.triu(a) + _mT(jnp.conj(jnp.triu(a, 1)))
    y = solve_triangular(L, sym, lower=True)
    c = _mT(jnp.conj(solve_triangular(L, _mT(jnp.conj(y)), lower=True)))
    w, u = jnp.linalg.eigh(c)
    if eigvals_only:
        return w
    v = solve_triangular(L, u, lower=True, trans=2)
    return w, v


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """QR decomposition with SciPy's modes: 'full' (square Q), 'r' (``(R,)``), 'economic'.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import qr
    >>> q, r = qr(np.ones((3, 2)))
    >>> q.shape, r.shape
    ((3, 3), (3, 2))
    """
    if pivoting:
        raise NotImplementedError("qr: pivoting=True is not supported")
    (a,) = _inexact(a)
    if mode == "full":
        return jnp.linalg.qr(a, mode="complete")
    if mode == "economic":
        return jnp.linalg.qr(a, mode="reduced")
    if mode == "r":
        return (jnp.linalg.qr(a, mode="complete")[1],)
    if mode == "raw":
        raise NotImplementedError("qr: mode='raw' is not supported")
    raise ValueError(f"Unsupported QR decomposition mode {mode!r}")


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True, lapack_driver="gesdd"):
    """Singular value decomposition ``a = u @ diag(s) @ vh``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import svd
    >>> svd(np.diag([3.0, 4.0]), compute_uv=False)
    Array([4., 3.])
    """
    (a,) = _inexact(a)
    return jnp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


# --------------------------------------------------------------------------- matrix functions

def _pade13():
    m = 13
    c = [Fraction(math.factorial(2 * m - j) * math.factorial(m),
                  math.factorial(2 * m) * math.factorial(j) * math.factorial(m - j)) for j in range(m + 1)]
    return [float(v / c[-1]) for v in c]


_B13 = _pade13()
_THETA13 = 5.371920351148152


def expm(A, *, upper_triangular=False, max_squarings=16):
    """Matrix exponential by scaling and squaring with the [13/13] Pade approximant (Higham 2005).

    Parameters
    ----------
    A : array_like, shape (..., n, n)
    upper_triangular : bool
        Accepted for JAX compatibility.
    max_squarings : int
        Static bound on the number of squarings (norms above ``theta13 * 2**max_squarings``
        give inaccurate results, as in JAX).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import expm
    >>> np.round(expm(np.array([[0.0, 1.0], [0.0, 0.0]])), 12)
    array([[1., 1.],
           [0., 1.]])
    """
    (A,) = _inexact(A)
    n = jnp.shape(A)[-1]
    norm1 = jnp.max(jnp.sum(jnp.abs(A), axis=-2), axis=-1)
    s = jnp.ceil(jnp.log2(jnp.maximum(norm1, 1e-300) / _THETA13))
    s = jnp.clip(jnp.where(jnp.isfinite(s), s, 0.0), 0.0, float(max_squarings))
    scale = jnp.exp2(-s)[..., None, None]
    A = A * scale.astype(A.dtype)
    b = _B13
    ident = jnp.broadcast_to(jnp.eye(n, dtype=A.dtype), jnp.shape(A))
    A2 = jnp.matmul(A, A)
    A4 = jnp.matmul(A2, A2)
    A6 = jnp.matmul(A4, A2)
    U = jnp.matmul(A, jnp.matmul(A6, b[13] * A6 + b[11] * A4 + b[9] * A2)
                   + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * ident)
    V = jnp.matmul(A6, b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * ident
    R = jnp.linalg.solve(V - U, V + U)
    for i in range(int(max_squarings)):
        R = jnp.where((s > i)[..., None, None], jnp.matmul(R, R), R)
    return R


def sqrtm(A, blocksize=1):
    """Principal matrix square root via an eigendecomposition (complex result; diagonalizable ``A``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import sqrtm
    >>> np.round(sqrtm(np.array([[4.0, 0.0], [0.0, 9.0]])).real, 12)
    array([[2., 0.],
           [0., 3.]])
    """
    (A,) = _inexact(A)
    w, v = jnp.linalg.eig(A)
    sw = jnp.sqrt(w.astype(np.complex128 if A.dtype in (np.float64, np.complex128) else np.complex64))
    return jnp.matmul(v * sw[..., None, :], jnp.linalg.inv(v))


def schur(a, output="real"):
    """Not supported: no Schur decomposition primitive (LAPACK gees) is available."""
    raise NotImplementedError("tracejit.scipy.linalg.schur is not implemented (no gees primitive)")


# --------------------------------------------------------------------------- structured matrices

def block_diag(*arrs):
    """Block-diagonal matrix from the given blocks (0-d and 1-d inputs are 1-row blocks, as SciPy).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import block_diag
    >>> block_diag(np.ones((1, 1)), 2 * np.ones((2, 2)))
    Array([[1., 0., 0.],
           [0., 2., 2.],
           [0., 2., 2.]])
    """
    if not arrs:
        return jnp.zeros((1, 0))
    arrs = [jnp.atleast_2d(to_operand(a)) for a in arrs]
    for a in arrs:
        if jnp.ndim(a) != 2:
            raise ValueError(f"arguments to block_diag must have at most 2 dimensions, got {jnp.shape(a)}")
    from tracejit.numpy._util import promote
    arrs = promote(*arrs)
    dt = arrs[0].dtype
    total_c = sum(jnp.shape(a)[1] for a in arrs)
    rows = []
    c0 = 0
    for a in arrs:
        r, c = jnp.shape(a)
        parts = []
        if c0:
            parts.append(jnp.zeros((r, c0), dtype=dt))
        parts.append(a)
        if total_c - c0 - c:
            parts.append(jnp.zeros((r, total_c - c0 - c), dtype=dt))
        rows.append(jnp.concatenate(parts, axis=1))
        c0 += c
    return jnp.concatenate(rows, axis=0)


def toeplitz(c, r=None):
    """Toeplitz matrix with first column ``c`` and first row ``r`` (``r = conj(c)`` by default;
    ``r[0]`` is ignored). Leading axes of ``c`` and ``r`` batch, as in JAX.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.scipy.linalg import toeplitz
    >>> toeplitz(np.array([1.0, 2.0, 3.0]), np.array([1.0, 4.0]))
    Array([[1., 4.],
           [2., 1.],
           [3., 2.]])
    """
    c = jnp.atleast_1d(to_operand(c))
    r = jnp.conj(c) if r is None else jnp.atleast_1d(to_operand(r))
    from tracejit.numpy._util import promote
    c, r = promote(c, r)
    m, n = jnp.shape(c)[-1], jnp.shape(r)[-1]
    vals = jnp.concatenate([jnp.flip(c, axis=-1), r[..., 1:]], axis=-1)   # vals[m-1-i+j]
    idx = (m - 1) - np.arange(m)[:, None] + np.arange(n)[None, :]
    return jnp.take(vals, idx, axis=-1)


# --------------------------------------------------------------------------- further functions

# Imported last: linalg_special uses this module's helpers and factorizations (as ``_la.<name>``).
from tracejit.scipy.linalg_special import (circulant, companion, convolution_matrix, dft,  # noqa: E402
                                           eigh_tridiagonal, expm_frechet, fiedler, fiedler_companion, funm,
                                           hadamard, hankel, helmert, hessenberg, hilbert, invhilbert, invpascal,
                                           leslie, pascal, polar, qr_multiply, rsf2csf, solve_sylvester)

# ``doctest.testmod`` on this module also runs the examples of the functions defined there.
__test__ = {name: globals()[name] for name in __all__ if globals()[name].__module__ != __name__}


def __dir__():
    # The public names only (tab completion), as JAX's API modules list them; helpers stay importable.
    return sorted(__all__)
