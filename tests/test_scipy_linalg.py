"""tracejit.scipy.linalg: identities of each factorization, SciPy conventions (piv, modes,
upper Cholesky by default), jit/vmap/grad, and expm against a Taylor series in mpmath."""
import mpmath as mp
import numpy as np
import pytest

import tracejit as jax
from tracejit.scipy import linalg as sl

RNG = np.random.default_rng(3)


def _spd(n, batch=()):
    a = RNG.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def test_solve_triangular():
    a = np.tril(RNG.normal(size=(4, 4))) + 4 * np.eye(4)
    b = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(a @ sl.solve_triangular(a, b, lower=True), b, atol=1e-12)
    np.testing.assert_allclose(a.T @ sl.solve_triangular(a, b, lower=True, trans=1), b, atol=1e-12)
    np.testing.assert_allclose(a.T @ sl.solve_triangular(a.T, b, lower=False), b, atol=1e-12)
    # only the named triangle is read
    junk = a + np.triu(RNG.normal(size=(4, 4)), 1)
    np.testing.assert_allclose(sl.solve_triangular(junk, b[:, 0], lower=True), np.linalg.solve(a, b[:, 0]),
                               rtol=1e-12)
    unit = np.tril(a, -1) + np.eye(4)
    np.testing.assert_allclose(sl.solve_triangular(a, b, lower=True, unit_diagonal=True),
                               np.linalg.solve(unit, b), rtol=1e-12)
    np.testing.assert_allclose(jax.jit(lambda a, b: sl.solve_triangular(a, b, lower=True))(a, b),
                               np.linalg.solve(a, b), rtol=1e-12)


def test_cholesky_family():
    a = _spd(4)
    u = sl.cholesky(a)
    np.testing.assert_allclose(u, np.triu(u))
    np.testing.assert_allclose(u.T @ u, a, rtol=1e-12)
    l = sl.cholesky(a, lower=True)
    np.testing.assert_allclose(l @ l.T, a, rtol=1e-12)
    b = RNG.normal(size=(4, 2))
    for lower in (False, True):
        np.testing.assert_allclose(sl.cho_solve(sl.cho_factor(a, lower=lower), b), np.linalg.solve(a, b), rtol=1e-11)
    np.testing.assert_allclose(sl.solve(a, b, assume_a="pos"), np.linalg.solve(a, b), rtol=1e-11)
    g = jax.grad(lambda a: sl.cho_solve(sl.cho_factor(a), b).sum())(a)
    ainv = np.linalg.inv(a)
    full = -(ainv.T @ np.ones((4, 2)) @ (ainv @ b).T)
    np.testing.assert_allclose(g, (full + full.T) / 2, rtol=1e-9)  # symmetric perturbations, as JAX


def test_lu():
    for shape in [(4, 4), (5, 3), (3, 5)]:
        a = RNG.normal(size=shape)
        p, l, u = sl.lu(a)
        np.testing.assert_allclose(p @ l @ u, a, atol=1e-12)
        np.testing.assert_allclose(l, np.tril(l))
        np.testing.assert_allclose(np.diag(l), 1.0)
        np.testing.assert_allclose(u, np.triu(u))
        assert np.all(np.abs(l) <= 1 + 1e-12)  # partial pivoting
        pl, u2 = sl.lu(a, permute_l=True)
        np.testing.assert_allclose(pl @ u2, a, atol=1e-12)
    a = np.array([[1.0, 2.0, 0.0], [3.0, 4.0, 1.0], [0.0, 5.0, 6.0]])
    lu, piv = sl.lu_factor(a)
    np.testing.assert_array_equal(piv, [1, 2, 2])  # LAPACK getrf's 0-based interchanges
    assert piv.dtype == np.int32
    b = RNG.normal(size=(3, 2))
    np.testing.assert_allclose(a @ sl.lu_solve((lu, piv), b), b, atol=1e-12)
    np.testing.assert_allclose(a.T @ sl.lu_solve((lu, piv), b, trans=1), b, atol=1e-12)
    np.testing.assert_allclose(a @ sl.lu_solve((lu, piv), b[:, 0]), b[:, 0], atol=1e-12)
    # jit, vmap and grad
    lu_j, piv_j = jax.jit(sl.lu_factor)(a)
    np.testing.assert_allclose(lu_j, lu, rtol=1e-14)
    np.testing.assert_array_equal(piv_j, piv)
    batch = RNG.normal(size=(3, 4, 4))
    pb, lb, ub = sl.lu(batch)
    np.testing.assert_allclose(pb @ lb @ ub, batch, atol=1e-12)
    bb = RNG.normal(size=(3, 4, 2))
    for trans in (0, 1):
        x = sl.lu_solve(sl.lu_factor(batch), bb, trans=trans)
        np.testing.assert_allclose((np.swapaxes(batch, -1, -2) if trans else batch) @ x, bb, atol=1e-11)
    np.testing.assert_allclose(jax.jit(lambda a, b: sl.lu_solve(sl.lu_factor(a), b))(batch, bb),
                               np.linalg.solve(batch, bb), rtol=1e-10)
    g = jax.grad(lambda a: sl.lu_solve(sl.lu_factor(a), b[:, 0]).sum())(a)
    ainv = np.linalg.inv(a)
    np.testing.assert_allclose(g, -np.outer(ainv.T @ np.ones(3), ainv @ b[:, 0]), rtol=1e-9)


def test_wrappers():
    a = RNG.normal(size=(4, 4))
    s = _spd(4)
    np.testing.assert_allclose(sl.inv(a) @ a, np.eye(4), atol=1e-12)
    assert float(sl.det(a)) == pytest.approx(np.linalg.det(a), rel=1e-12)
    b = RNG.normal(size=4)
    np.testing.assert_allclose(a @ sl.solve(a, b), b, atol=1e-12)
    w, v = sl.eigh(s)
    np.testing.assert_allclose(s @ v, v * w, atol=1e-10)
    np.testing.assert_allclose(sl.eigh(s, eigvals_only=True), w, rtol=1e-12)
    bm = _spd(4)
    w2, v2 = sl.eigh(s, bm)
    np.testing.assert_allclose(s @ v2, bm @ v2 * w2, atol=1e-9)
    np.testing.assert_allclose(v2.T @ bm @ v2, np.eye(4), atol=1e-10)
    m = RNG.normal(size=(5, 3))
    q, r = sl.qr(m)
    assert q.shape == (5, 5) and r.shape == (5, 3)
    np.testing.assert_allclose(q @ r, m, atol=1e-12)
    q, r = sl.qr(m, mode="economic")
    assert q.shape == (5, 3)
    (r_only,) = sl.qr(m, mode="r")
    np.testing.assert_allclose(np.abs(r_only), np.abs(np.linalg.qr(m, mode="complete")[1]), atol=1e-12)
    u, sv, vh = sl.svd(m)
    assert u.shape == (5, 5) and vh.shape == (3, 3)
    np.testing.assert_allclose(sl.svd(m, compute_uv=False), np.linalg.svd(m, compute_uv=False), rtol=1e-12)
    with pytest.raises(NotImplementedError):
        sl.schur(a)


def test_expm():
    def ref(a):
        with mp.workdps(40):
            return np.array(mp.expm(mp.matrix(a.tolist())).tolist(), dtype=float)
    for scale in (1e-3, 1.0, 30.0):
        a = RNG.normal(size=(4, 4)) * scale
        np.testing.assert_allclose(sl.expm(a), ref(a), rtol=1e-11 if scale < 10 else 1e-9,
                                   atol=1e-14 * np.abs(ref(a)).max())
    np.testing.assert_allclose(sl.expm(np.zeros((3, 3))), np.eye(3))
    a = RNG.normal(size=(2, 3, 3))
    np.testing.assert_allclose(jax.jit(sl.expm)(a), np.stack([ref(x) for x in a]), rtol=1e-11)
    np.testing.assert_allclose(jax.vmap(sl.expm)(a), np.stack([ref(x) for x in a]), rtol=1e-11)
    # d/dt tr(expm(t A)) at t=1 is tr(A expm(A))
    a0 = a[0]
    g = jax.grad(lambda t: np.trace(sl.expm(t * a0)))(1.0)
    assert float(g) == pytest.approx(np.trace(a0 @ ref(a0)), rel=1e-9)
    assert sl.expm(np.eye(2, dtype=np.float32)).dtype == np.float32


def test_sqrtm_block_diag_toeplitz():
    s = _spd(3)
    r = sl.sqrtm(s)
    np.testing.assert_allclose(r @ r, s, atol=1e-10)
    np.testing.assert_allclose(r.imag, 0, atol=1e-10)
    out = sl.block_diag(np.array([[1.0, 2.0]]), np.array(3.0), np.ones((2, 1)))
    np.testing.assert_array_equal(out, [[1, 2, 0, 0], [0, 0, 3, 0], [0, 0, 0, 1], [0, 0, 0, 1]])
    np.testing.assert_array_equal(jax.jit(lambda a, b: sl.block_diag(a, b))(np.eye(2), np.ones((1, 2))),
                                  [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1]])
    c, r = np.array([1.0, 2.0, 3.0]), np.array([9.0, 4.0, 5.0, 6.0])
    np.testing.assert_array_equal(sl.toeplitz(c, r), [[1, 4, 5, 6], [2, 1, 4, 5], [3, 2, 1, 4]])
    np.testing.assert_array_equal(sl.toeplitz(c), [[1, 2, 3], [2, 1, 2], [3, 2, 1]])
    np.testing.assert_array_equal(jax.jit(sl.toeplitz)(c, r), sl.toeplitz(c, r))
