"""``tracejit.experimental.sparse.BCOO`` against the dense NumPy computation, eagerly, under jit and
grad, and against ``jax.experimental.sparse`` when JAX is installed."""
import doctest

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.experimental import sparse


def _matrix(shape, density=0.3, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal(shape) * (rng.random(shape) < density)
    if np.dtype(dtype).kind == "c":
        m = m + 1j * m[::-1].reshape(shape)
    return m.astype(dtype)


SHAPES = [(5, 7), (1, 4), (6, 1), (3, 3)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_fromdense_todense_and_products(shape, dtype):
    m = _matrix(shape, dtype=dtype)
    A = sparse.BCOO.fromdense(m)
    assert A.nse == np.count_nonzero(m) and A.indices.dtype == np.int32 and A.dtype == m.dtype
    np.testing.assert_array_equal(A.todense(), m)
    rows, cols = np.nonzero(m)                      # row-major order, as JAX's
    np.testing.assert_array_equal(np.asarray(A.indices), np.stack([rows, cols], 1))
    x, X, y = np.arange(shape[1], dtype=dtype) + 1, _matrix((shape[1], 3), 1.0, 1, dtype), np.arange(shape[0]) - 2.0
    tol = dict(rtol=1e-5) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(A @ x, m @ x, **tol)
    np.testing.assert_allclose(A @ X, m @ X, **tol)
    np.testing.assert_allclose(y @ A, y @ m, **tol)
    np.testing.assert_allclose(A.sum(), m.sum(), **tol)
    np.testing.assert_allclose(A.sum(0).todense(), m.sum(0), **tol)
    np.testing.assert_allclose(A.sum(1).todense(), m.sum(1), **tol)
    np.testing.assert_array_equal(A.T.todense(), m.T)
    np.testing.assert_allclose((A @ A.T).todense(), m @ m.T, **tol)
    np.testing.assert_allclose((A * 2.5).todense(), m * 2.5, **tol)
    np.testing.assert_allclose((A * np.arange(shape[1])).todense(), m * np.arange(shape[1]), **tol)
    np.testing.assert_allclose((A + A.T.T).todense(), 2 * m, **tol)
    np.testing.assert_allclose((-A / 4).todense(), -m / 4, **tol)


def test_padding_duplicates_and_out_of_range_entries():
    m = _matrix((4, 5))
    nnz = np.count_nonzero(m)
    B = sparse.BCOO.fromdense(m, nse=nnz + 3)
    assert B.nse == nnz + 3
    np.testing.assert_array_equal(np.asarray(B.indices)[nnz:], [[4, 5]] * 3)    # padding at `shape`
    np.testing.assert_array_equal(np.asarray(B.data)[nnz:], 0)
    np.testing.assert_array_equal(B.todense(), m)
    np.testing.assert_allclose(B @ np.ones(5), m @ np.ones(5), rtol=1e-14)
    short = sparse.BCOO.fromdense(m, nse=2)                 # keeps the first two nonzeros
    np.testing.assert_array_equal(short.todense()[np.nonzero(short.todense())], m[np.nonzero(m)][:2])
    # repeated coordinates add; an out-of-range entry (even with a value) stands for nothing
    D = sparse.BCOO((np.array([1.0, 2.0, 5.0, 7.0]), np.array([[0, 0], [0, 0], [1, 1], [2, 0]])), shape=(2, 2))
    np.testing.assert_array_equal(D.todense(), [[3.0, 0.0], [0.0, 5.0]])
    np.testing.assert_array_equal(D @ np.ones(2), [3.0, 5.0])
    assert float(D.sum()) == 8.0
    U = D.sum_duplicates()
    assert U.nse == 2 and U.data.tolist() == [3.0, 5.0] and U.indices.tolist() == [[0, 0], [1, 1]]
    np.testing.assert_array_equal(tracejit.jit(lambda d: d.sum_duplicates(nse=3).todense())(D), D.todense())


def test_under_jit_grad_and_in_a_loop():
    m = _matrix((6, 6), seed=3) + np.eye(6) * 4
    A = sparse.BCOO.fromdense(m)
    x = np.linspace(-1, 1, 6)
    f = tracejit.jit(lambda A, x: (A @ x, x @ A, A.T @ x))
    for got, want in zip(f(A, x), (m @ x, x @ m, m.T @ x)):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    with pytest.raises(TypeError, match="nse"):
        tracejit.jit(lambda m: sparse.BCOO.fromdense(m).data)(m)
    np.testing.assert_array_equal(tracejit.jit(lambda m: sparse.BCOO.fromdense(m, nse=A.nse).todense())(m), m)

    # gradient with respect to the stored values: d/d data of sum((A @ x) ** 2)
    def loss(data):
        return jnp.sum((sparse.BCOO((data, A.indices), shape=A.shape) @ x) ** 2)
    g = tracejit.grad(loss)(A.data)
    rows, cols = np.asarray(A.indices).T
    np.testing.assert_allclose(g, 2 * (m @ x)[rows] * x[cols], rtol=1e-12)
    np.testing.assert_allclose(tracejit.jit(tracejit.grad(loss))(A.data), g, rtol=1e-12)

    # power iteration with a sparse matrix closed over by a fori_loop (the CSR mat-vec form)
    def power(A, v):
        return lax.fori_loop(0, 20, lambda i, v: (A @ v) / jnp.linalg.norm(A @ v), v)
    v = tracejit.jit(power)(A, np.ones(6))
    w = np.ones(6)
    for _ in range(20):
        w = m @ w / np.linalg.norm(m @ w)
    np.testing.assert_allclose(v, w, rtol=1e-10)


def test_helpers_and_errors():
    np.testing.assert_array_equal(sparse.eye(3, 4, k=1).todense(), np.eye(3, 4, k=1))
    np.testing.assert_array_equal(sparse.eye(4, k=-2).todense(), np.eye(4, k=-2))
    assert sparse.empty((2, 3)).nse == 0 and sparse.empty((2, 3)).todense().shape == (2, 3)
    m = _matrix((3, 4))
    A = sparse.bcoo_fromdense(m)
    np.testing.assert_array_equal(sparse.bcoo_todense(A), m)
    np.testing.assert_array_equal(sparse.todense(A), m)
    assert sparse.todense(m) is m
    np.testing.assert_array_equal(sparse.bcoo_transpose(A, permutation=(1, 0)).todense(), m.T)
    assert repr(A) == f"BCOO(float64[3, 4], nse={A.nse})" and A.ndim == 2 and A.size == 12
    assert (A.n_batch, A.n_sparse, A.n_dense) == (0, 2, 0)
    assert A.astype(np.float32).dtype == np.float32
    leaves, tree = tracejit.tree_util.tree_flatten(A)
    assert len(leaves) == 2 and tracejit.tree_util.tree_unflatten(tree, leaves).shape == A.shape
    with pytest.raises(NotImplementedError, match="n_batch"):
        sparse.BCOO.fromdense(m, n_batch=1)
    with pytest.raises(NotImplementedError, match="batch dimensions"):
        sparse.bcoo_dot_general(A, np.ones((3, 4)), dimension_numbers=(([1], [1]), ([0], [0])))
    with pytest.raises(ValueError, match="shapes"):
        A @ sparse.eye(3)
    for mod in (sparse, __import__("tracejit.experimental.sparse.bcoo", fromlist=["x"])):
        assert doctest.testmod(mod).failed == 0


def test_matches_jax_sparse():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    from jax.experimental import sparse as jsparse
    m = _matrix((5, 4), seed=7)
    for nse in (np.count_nonzero(m) + 2,):      # (JAX compiles each variant for seconds)
        A, J = sparse.BCOO.fromdense(m, nse=nse), jsparse.BCOO.fromdense(m, nse=nse)
        np.testing.assert_array_equal(np.asarray(A.indices), np.asarray(J.indices))
        np.testing.assert_array_equal(np.asarray(A.data), np.asarray(J.data))
        x = np.arange(4.0)
        np.testing.assert_allclose(A @ x, np.asarray(J @ x), rtol=1e-14)
        np.testing.assert_allclose(np.arange(5.0) @ A, np.asarray(np.arange(5.0) @ J.todense()), rtol=1e-14)
        np.testing.assert_array_equal(np.asarray(A.sum(0).indices), np.asarray(J.sum(0).indices))
        np.testing.assert_allclose((A @ A.T).todense(), np.asarray((J @ J.T).todense()), rtol=1e-14)
        assert (A @ A.T).nse == (J @ J.T).nse
