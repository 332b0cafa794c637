"""BCOO: JAX's batched-coordinate sparse array, for the forms sparse code uses (``jax.experimental.sparse``).

A :class:`BCOO` holds ``data`` (``nse`` stored values) and ``indices`` (``nse`` rows of
coordinates, int32 by default) of an array of ``shape``; coordinates may repeat (values add) and an
entry whose coordinates are out of range (``fromdense`` pads with ``shape`` itself) stands for
nothing. Every operation is written with ``tracejit.numpy`` gathers and scatter-adds, so it runs
eagerly and under ``jit`` (a BCOO is a pytree: data and indices are its leaves, the shape static),
and differentiates with respect to ``data``. Implemented: sparse dimensions only (``n_batch`` and
``n_dense`` are 0; asking for others raises ``NotImplementedError``).
"""
from __future__ import annotations

import math

import numpy as np

import tracejit.numpy as jnp
from tracejit.core.pytree import register_pytree_node
from tracejit.core.tracer import Tracer


def _index_dtype(index_dtype):
    return np.dtype(np.int32 if index_dtype is None else index_dtype)


def _static_nse(nse, where):
    if isinstance(nse, Tracer):
        raise TypeError(f"{where}: nse must be a concrete int (it fixes the output shape); pass nse=... "
                        "as a Python int under jit")
    return int(nse)


class BCOO:
    """A sparse array in batched-coordinate format (``jax.experimental.sparse.BCOO``).

    Parameters
    ----------
    args : tuple
        ``(data, indices)``: ``data`` of shape ``(nse,)``, ``indices`` of shape ``(nse, ndim)``.
    shape : tuple of int
        The dense shape.
    indices_sorted, unique_indices : bool
        Accepted for JAX compatibility (hints; tracejit never relies on them).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.experimental import sparse
    >>> A = sparse.BCOO.fromdense(np.array([[0., 1., 0.], [2., 0., 3.]]))
    >>> A
    BCOO(float64[2, 3], nse=3)
    >>> A @ np.ones(3)
    Array([1., 5.])
    """

    __array_priority__ = 100    # ``ndarray @ BCOO`` calls BCOO.__rmatmul__

    def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
        data, indices = args
        self.data = jnp.asarray(data)
        self.indices = jnp.asarray(indices)
        self.shape = tuple(int(s) for s in shape)
        self.indices_sorted, self.unique_indices = bool(indices_sorted), bool(unique_indices)
        if self.data.ndim != 1 or self.indices.ndim != 2 or self.indices.shape != (self.data.shape[0], len(self.shape)):
            raise NotImplementedError(
                f"BCOO: data of shape (nse,) and indices of shape (nse, {len(self.shape)}) are supported (sparse "
                f"dimensions only); got data {tuple(self.data.shape)} and indices {tuple(self.indices.shape)}")
        if not np.issubdtype(self.indices.dtype, np.integer):
            raise TypeError(f"BCOO indices must be integers, got {self.indices.dtype}")

    # ---------------------------------------------------------------- properties
    dtype = property(lambda self: self.data.dtype)
    nse = property(lambda self: int(self.data.shape[0]))
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    n_batch = property(lambda self: 0)
    n_dense = property(lambda self: 0)
    n_sparse = property(lambda self: len(self.shape))
    T = property(lambda self: self.transpose())

    def __repr__(self):
        dims = ", ".join(map(str, self.shape))
        return f"BCOO({self.dtype.name}[{dims}], nse={self.nse})"

    def __len__(self):
        return self.shape[0]

    # ---------------------------------------------------------------- conversion
    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
        """The nonzeros of ``mat`` in row-major order; ``nse`` (required under ``jit``) pads with
        zeros at out-of-range coordinates or drops the last nonzeros.

        Examples
        --------
        >>> import numpy as np
        >>> from tracejit.experimental import sparse
        >>> sparse.BCOO.fromdense(np.array([0., 2., 0.]), nse=2).indices.tolist()
        [[1], [3]]
        """
        return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch)

    def todense(self):
        """The dense array (repeated coordinates add, out-of-range entries are dropped)."""
        return bcoo_todense(self)

    def astype(self, dtype):
        """The same pattern with ``data`` cast to ``dtype``."""
        return BCOO((self.data.astype(dtype), self.indices), shape=self.shape)

    def transpose(self, axes=None):
        """Dimensions permuted (reversed by default), as ``jnp.transpose``; still sparse."""
        return bcoo_transpose(self, permutation=tuple(reversed(range(self.ndim))) if axes is None else axes)

    def sum(self, axis=None):
        """``todense().sum(axis)``: a dense scalar for ``axis=None``, else a BCOO."""
        if axis is None:
            return jnp.sum(jnp.where(_in_range(self), self.data, 0))
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        return bcoo_reduce_sum(self, axes=axes)

    def sum_duplicates(self, nse=None, remove_zeros=True):
        """One entry per coordinate (values of repeats added), sorted; ``nse`` is required under jit."""
        return bcoo_sum_duplicates(self, nse=nse)

    # ---------------------------------------------------------------- arithmetic
    def __matmul__(self, other):
        if isinstance(other, BCOO):
            return _spspmm(self, other)
        other = jnp.asarray(other)
        return bcoo_dot_general(self, other, dimension_numbers=(([self.ndim - 1], [0]), ([], [])))

    def __rmatmul__(self, other):
        other = jnp.asarray(other)
        out = bcoo_dot_general(self, other, dimension_numbers=(([0], [other.ndim - 1]), ([], [])))
        # dot_general puts the sparse operand's free dims first: move them after other's.
        return jnp.moveaxis(out, tuple(range(self.ndim - 1)), tuple(range(out.ndim - self.ndim + 1, out.ndim)))

    def __mul__(self, other):
        if isinstance(other, BCOO):
            raise NotImplementedError("BCOO * BCOO (bcoo_multiply_sparse) is not implemented; densify one side")
        return bcoo_multiply_dense(self, other)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, BCOO) or jnp.ndim(other) != 0:
            raise NotImplementedError("BCOO / x is implemented for scalar x only (a zero entry over zero "
                                      "would not stay sparse)")
        return BCOO((self.data / other, self.indices), shape=self.shape)

    def __neg__(self):
        return BCOO((-self.data, self.indices), shape=self.shape)

    def __add__(self, other):
        if not isinstance(other, BCOO):
            return self.todense() + other
        if other.shape != self.shape:
            raise ValueError(f"BCOO + BCOO needs equal shapes, got {self.shape} and {other.shape}")
        dtype = jnp.result_type(self.dtype, other.dtype)
        return BCOO((jnp.concatenate([self.data.astype(dtype), other.data.astype(dtype)]),
                     jnp.concatenate([self.indices, other.indices.astype(self.indices.dtype)])), shape=self.shape)

    def __radd__(self, other):
        return self.todense() + other

    def __sub__(self, other):
        return self + (-other)


register_pytree_node(BCOO, lambda a: ((a.data, a.indices), a.shape),
                     lambda shape, children: BCOO(tuple(children), shape=shape))


# ------------------------------------------------------------------------ functions

def _in_range(a: BCOO):
    """Per stored entry: whether its coordinates lie inside the shape."""
    ok = jnp.ones(a.indices.shape[0], bool)
    for d, n in enumerate(a.shape):
        ok = ok & (a.indices[:, d] >= 0) & (a.indices[:, d] < n)
    return ok


def bcoo_fromdense(mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
    """``BCOO.fromdense`` as a function (``jax.experimental.sparse.bcoo_fromdense``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.experimental import sparse
    >>> sparse.bcoo_fromdense(np.eye(2)).data
    Array([1., 1.])
    """
    if n_dense or n_batch:
        raise NotImplementedError("BCOO with batch or dense dimensions (n_batch, n_dense > 0) is not implemented")
    mat = jnp.asarray(mat)
    if nse is None:
        if isinstance(mat, Tracer):
            raise TypeError("BCOO.fromdense under jit needs nse=... (a Python int): the number of stored "
                            "entries fixes the output shape")
        nse = int(np.count_nonzero(np.asarray(mat)))
    nse = _static_nse(nse, "bcoo_fromdense")
    coords = jnp.nonzero(mat, size=nse, fill_value=mat.shape if mat.ndim else 0)
    idt = _index_dtype(index_dtype)
    indices = jnp.stack([c.astype(idt) for c in coords], axis=1) if mat.ndim else jnp.zeros((nse, 0), idt)
    data = mat[tuple(jnp.minimum(c, max(n - 1, 0)) for c, n in zip(coords, mat.shape))] if mat.ndim else \
        jnp.broadcast_to(mat, (nse,))
    data = jnp.where(_in_range_coords(coords, mat.shape), data, 0) if mat.ndim else data
    return BCOO((data, indices), shape=mat.shape)


def _in_range_coords(coords, shape):
    ok = None
    for c, n in zip(coords, shape):
        here = c < n
        ok = here if ok is None else ok & here
    return ok


def bcoo_todense(mat: BCOO):
    """The dense array of ``mat`` (``jax.experimental.sparse.bcoo_todense``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.experimental import sparse
    >>> sparse.bcoo_todense(sparse.BCOO((np.array([1., 2.]), np.array([[0], [0]])), shape=(2,)))
    Array([3., 0.])
    """
    if mat.ndim == 0:
        return jnp.sum(mat.data)
    coords = tuple(mat.indices[:, d] for d in range(mat.ndim))
    return jnp.zeros(mat.shape, mat.dtype).at[coords].add(mat.data, mode="drop")


def todense(arr):
    """A BCOO as a dense array; anything else as it is (``jax.experimental.sparse.todense``)."""
    return arr.todense() if isinstance(arr, BCOO) else arr


def bcoo_transpose(mat: BCOO, *, permutation):
    """``mat`` with its dimensions permuted (``jax.experimental.sparse.bcoo_transpose``)."""
    perm = tuple(int(p) for p in permutation)
    if sorted(perm) != list(range(mat.ndim)):
        raise ValueError(f"bcoo_transpose: {perm} is not a permutation of {mat.ndim} dimensions")
    return BCOO((mat.data, mat.indices[:, list(perm)]), shape=tuple(mat.shape[p] for p in perm))


def bcoo_reduce_sum(mat: BCOO, *, axes):
    """Sum over ``axes``, still sparse: the summed coordinates are dropped (entries may repeat)."""
    axes = sorted({a % mat.ndim for a in axes})
    keep = [d for d in range(mat.ndim) if d not in axes]
    data = jnp.where(_in_range(mat), mat.data, 0)
    return BCOO((data, mat.indices[:, keep]), shape=tuple(mat.shape[d] for d in keep))


def bcoo_multiply_dense(sp_mat: BCOO, v):
    """Elementwise ``sp_mat * v`` for a dense ``v`` that broadcasts to its shape: still sparse."""
    v = jnp.asarray(v)
    if v.ndim == 0:
        return BCOO((sp_mat.data * v, sp_mat.indices), shape=sp_mat.shape)
    full = jnp.broadcast_to(v, sp_mat.shape)
    coords = tuple(jnp.clip(sp_mat.indices[:, d], 0, n - 1) for d, n in enumerate(sp_mat.shape))
    return BCOO((sp_mat.data * full[coords], sp_mat.indices), shape=sp_mat.shape)


def bcoo_dot_general(lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None):
    """``lax.dot_general`` of a BCOO with a dense array (either side), without densifying: each stored
    entry gathers the slice of the dense operand it multiplies and scatter-adds into the result.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.experimental import sparse
    >>> A = sparse.BCOO.fromdense(np.array([[0., 1.], [2., 0.]]))
    >>> sparse.bcoo_dot_general(A, np.array([10., 30.]), dimension_numbers=(([1], [0]), ([], [])))
    Array([30., 20.])
    """
    (lc, rc), (lb, rb) = dimension_numbers
    if lb or rb:
        raise NotImplementedError("bcoo_dot_general with batch dimensions is not implemented")
    if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
        raise NotImplementedError("bcoo_dot_general of two BCOO arrays: use A @ B (2-D) or densify one side")
    if not isinstance(lhs, BCOO):
        # dense . sparse = transpose of sparse . dense, with the result's dims reordered as dot_general's
        out = bcoo_dot_general(rhs, lhs, dimension_numbers=((rc, lc), ((), ())))
        n_sp = rhs.ndim - len(rc)
        return jnp.moveaxis(out, tuple(range(n_sp)), tuple(range(out.ndim - n_sp, out.ndim)))
    rhs = jnp.asarray(rhs)
    lc, rc = [int(c) % lhs.ndim for c in lc], [int(c) % rhs.ndim for c in rc]
    lfree = [d for d in range(lhs.ndim) if d not in lc]
    rfree = [d for d in range(rhs.ndim) if d not in rc]
    # rhs with its contracted dims first, flattened: row r holds the slice entry coordinates select.
    rmat = jnp.transpose(rhs, rc + rfree).reshape((math.prod(rhs.shape[d] for d in rc), -1))
    flat = jnp.zeros(lhs.indices.shape[0], lhs.indices.dtype)
    ok = _in_range(lhs)
    for d in lc:
        flat = flat * lhs.shape[d] + jnp.clip(lhs.indices[:, d], 0, lhs.shape[d] - 1)
    dtype = jnp.result_type(lhs.dtype, rhs.dtype) if preferred_element_type is None else preferred_element_type
    contrib = jnp.where(ok, lhs.data, 0).astype(dtype)[:, None] * rmat[flat].astype(dtype)
    out_rows = math.prod(lhs.shape[d] for d in lfree)
    row = jnp.zeros(lhs.indices.shape[0], lhs.indices.dtype)
    for d in lfree:
        row = row * lhs.shape[d] + jnp.clip(lhs.indices[:, d], 0, lhs.shape[d] - 1)
    out = jnp.zeros((out_rows, rmat.shape[1]), dtype).at[row].add(contrib)
    return out.reshape(tuple(lhs.shape[d] for d in lfree) + tuple(rhs.shape[d] for d in rfree))


def _spspmm(a: BCOO, b: BCOO) -> BCOO:
    """2-D BCOO @ BCOO: every pair of entries whose inner coordinates meet is an entry of the product
    (nse = min(a.nse * b.nse, product size), as JAX's bound); the others are padding at out-of-range
    coordinates."""
    if a.ndim != 2 or b.ndim != 2:
        raise NotImplementedError("BCOO @ BCOO is implemented for matrices (2-D) only")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul shapes {a.shape} and {b.shape} do not match")
    meet = (a.indices[:, 1][:, None] == b.indices[:, 0][None, :]) & _in_range(a)[:, None] & _in_range(b)[None, :]
    data = jnp.where(meet, a.data[:, None] * b.data[None, :], 0).reshape(-1)
    rows = jnp.where(meet, a.indices[:, 0][:, None], a.shape[0]).reshape(-1)
    cols = jnp.where(meet, b.indices[:, 1][None, :], b.shape[1]).reshape(-1)
    out = BCOO((data, jnp.stack([rows, cols], axis=1).astype(a.indices.dtype)), shape=(a.shape[0], b.shape[1]))
    size = a.shape[0] * b.shape[1]
    # No more entries than the product has elements (JAX's bound): past that, repeats are merged.
    return out if out.nse <= size else bcoo_sum_duplicates(out, nse=size)


def bcoo_sum_duplicates(mat: BCOO, nse=None) -> BCOO:
    """One entry per distinct in-range coordinate, in row-major order, repeats added; ``nse``
    (required under ``jit``) pads or truncates as ``fromdense`` does."""
    ok = _in_range(mat)
    lin = jnp.zeros(mat.indices.shape[0], np.int64)
    for d, n in enumerate(mat.shape):
        lin = lin * n + jnp.clip(mat.indices[:, d], 0, n - 1).astype(np.int64)
    total = mat.size
    lin = jnp.where(ok, lin, total)
    if nse is None:
        if isinstance(lin, Tracer):
            raise TypeError("sum_duplicates under jit needs nse=... (a Python int)")
        nse = int(np.unique(np.asarray(lin)[np.asarray(lin) < total]).size)
    nse = _static_nse(nse, "bcoo_sum_duplicates")
    uniq, inverse = jnp.unique(lin, size=nse + 1, fill_value=total, return_inverse=True)
    data = jnp.zeros(nse + 1, mat.dtype).at[inverse.reshape(-1)].add(jnp.where(ok, mat.data, 0))
    uniq, data = uniq[:nse], data[:nse]
    coords, rest = [], uniq
    for n in reversed(mat.shape):
        coords.append(rest % n)
        rest = rest // n
    coords = [jnp.where(uniq < total, c, n) for c, n in zip(reversed(coords), mat.shape)]
    data = jnp.where(uniq < total, data, 0)
    return BCOO((data, jnp.stack(coords, axis=1).astype(mat.indices.dtype)), shape=mat.shape,
                indices_sorted=True, unique_indices=True)


def eye(N, M=None, k=0, dtype=None, index_dtype=np.int32):
    """A sparse identity-like matrix: ones on diagonal ``k`` (``jax.experimental.sparse.eye``)."""
    M = N if M is None else M
    start, stop = max(0, -k), min(N, M - k)
    rows = np.arange(start, max(stop, start))
    data = jnp.ones(rows.size, np.float64 if dtype is None else dtype)
    idx = np.stack([rows, rows + k], axis=1).astype(_index_dtype(index_dtype)).reshape(-1, 2)
    return BCOO((data, idx), shape=(N, M), indices_sorted=True, unique_indices=True)


def empty(shape, dtype=None, index_dtype=np.int32):
    """An all-zero BCOO of ``shape`` with no stored entries."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return BCOO((jnp.zeros(0, np.float64 if dtype is None else dtype),
                 jnp.zeros((0, len(shape)), _index_dtype(index_dtype))), shape=shape)
