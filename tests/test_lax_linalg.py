"""tracejit.lax.linalg: JAX's lax.linalg API composed from tracejit's linear algebra.

Each function is checked against a NumPy / SciPy reference or the identity that defines it
(float32, float64, complex; batches; empty and 1x1 matrices), eagerly, under jit and under vmap,
with gradients against central differences, and against JAX 0.10 itself when it is installed.
"""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit.lax import linalg as L

RNG = np.random.default_rng(20240610)
TOL = {np.dtype(np.float32): 3e-4, np.dtype(np.float64): 1e-10,
       np.dtype(np.complex64): 3e-4, np.dtype(np.complex128): 1e-10}
DTYPES = [np.float32, np.float64, np.complex128]


def _rand(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def _mH(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _spd(n, dtype, batch=()):
    a = _rand(batch + (n, n), dtype)
    return (a @ _mH(a) + n * np.eye(n)).astype(dtype)


def _close(got, want, dtype, scale=1.0):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=TOL[np.dtype(dtype)] * scale, atol=TOL[np.dtype(dtype)] * scale)


def _modes(f, *args):
    """``f(*args)`` eagerly and under jit (the same results are expected)."""
    return [f(*args), tracejit.jit(f)(*args)]


# --------------------------------------------------------------------------- factorizations

@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky(dtype):
    a = _spd(4, dtype, (2,))
    junk = _rand((2, 4, 4), dtype)
    for out in _modes(L.cholesky, a):
        assert isinstance(out, tracejit.Array) and out.dtype == dtype
        _close(np.triu(out, 1), np.zeros((2, 4, 4)), dtype)
        _close(out @ _mH(np.asarray(out)), a, dtype, scale=10)
    # symmetrized by default; with symmetrize_input=False only the lower triangle is read
    skew = junk - _mH(junk)
    _close(L.cholesky(a + skew), np.linalg.cholesky(a), dtype, 10)
    lower_only = np.tril(a) + np.triu(junk, 1)
    _close(L.cholesky(lower_only, symmetrize_input=False), np.linalg.cholesky(a), dtype, 10)
    _close(tracejit.vmap(L.cholesky)(a), L.cholesky(a), dtype)
    assert L.cholesky(np.zeros((0, 0), dtype)).shape == (0, 0)
    _close(L.cholesky(np.full((1, 1), 4.0, dtype)), [[2.0]], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_of_a_matrix_that_is_not_positive_definite_is_nan(dtype):
    # As JAX's: NaN (nan+nanj for complex) in the failed factor's lower triangle, zeros above; the
    # other matrices of the batch are factored (jnp.linalg.cholesky keeps NumPy's LinAlgError).
    good = _spd(3, dtype, ())
    bad = np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]]).astype(dtype)
    a = np.stack([bad, good, -good])
    nan = complex(np.nan, np.nan) if np.dtype(dtype).kind == "c" else np.nan
    want_bad = np.where(np.tril(np.ones((3, 3), bool)), np.asarray(nan, dtype), np.zeros((), dtype))
    for out in _modes(L.cholesky, a) + [tracejit.vmap(L.cholesky)(a), tracejit.jit(tracejit.vmap(L.cholesky))(a)]:
        out = np.asarray(out)
        np.testing.assert_array_equal(out[0], want_bad)
        np.testing.assert_array_equal(out[2], want_bad)
        _close(out[1], np.linalg.cholesky(good), dtype, 10)
    with pytest.raises(np.linalg.LinAlgError):
        tracejit.jit(jnp.linalg.cholesky)(a)


def test_cholesky_nans_match_jax():
    jax = pytest.importorskip("jax")
    x64 = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        a = np.array([[[1.0, 2.0], [2.0, 1.0]], [[2.0, 0.5], [0.5, 1.0]]])
        for dtype in (np.float64, np.complex128):
            np.testing.assert_array_equal(np.asarray(L.cholesky(a.astype(dtype))),
                                          np.asarray(jax.lax.linalg.cholesky(a.astype(dtype))))
    finally:
        jax.config.update("jax_enable_x64", x64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cholesky_update(dtype):
    a = _spd(5, dtype, (3,))
    r = np.swapaxes(np.linalg.cholesky(a), -1, -2)
    w = _rand((3, 5), dtype)
    want = np.swapaxes(np.linalg.cholesky(a + w[..., :, None] * w[..., None, :]), -1, -2)
    for out in _modes(L.cholesky_update, r, w):
        _close(out, want, dtype, scale=10)
    _close(tracejit.vmap(L.cholesky_update)(r, w), want, dtype, scale=10)
    with pytest.raises(TypeError):
        L.cholesky_update(r.astype(np.complex128), w.astype(np.complex128))


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh(dtype):
    a = _spd(5, dtype, (2,))
    for v, w in _modes(L.eigh, a):           # eigenvectors FIRST
        assert v.shape == (2, 5, 5) and w.shape == (2, 5) and w.dtype == np.finfo(dtype).dtype
        _close(w, np.linalg.eigvalsh(a), dtype, scale=100)
        _close(np.asarray(a) @ v, np.asarray(v) * np.asarray(w)[..., None, :], dtype, scale=100)
    junk = np.triu(a) + np.tril(_rand((2, 5, 5), dtype), -1)
    _close(L.eigh(junk, lower=False, symmetrize_input=False)[1], np.linalg.eigvalsh(a), dtype, 100)
    v, w = L.eigh(a, subset_by_index=(1, 3))
    assert v.shape == (2, 5, 2)
    _close(w, np.linalg.eigvalsh(a)[..., 1:3], dtype, scale=100)
    with pytest.raises(NotImplementedError):
        L.eigh(a, implementation=L.EighImplementation.JACOBI)
    assert L.eigh(a, implementation=L.EighImplementation.QR)[1].shape == (2, 5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (1, 1)])
def test_svd(dtype, shape):
    x = _rand((2,) + shape, dtype)
    k = min(shape)
    for u, s, vh in _modes(lambda x: L.svd(x, full_matrices=False), x):
        _close(s, np.linalg.svd(x, compute_uv=False), dtype, 10)
        _close((np.asarray(u) * np.asarray(s)[..., None, :]) @ vh, x, dtype, 10)
    u, s, vh = L.svd(x)
    assert u.shape == (2, shape[0], shape[0]) and vh.shape == (2, shape[1], shape[1])
    _close(L.svd(x, compute_uv=False), np.linalg.svd(x, compute_uv=False), dtype, 10)
    u, s, vh = L.svd(x, full_matrices=False, subset_by_index=(0, 1), algorithm=L.SvdAlgorithm.DEFAULT)
    assert (u.shape, s.shape, vh.shape) == ((2, shape[0], 1), (2, 1), (2, 1, shape[1]))
    if k > 1:
        with pytest.raises(ValueError, match="full_matrices"):
            L.svd(x, subset_by_index=(0, 1))


def _check_lu(x, lu, piv, perm):
    m, n = x.shape[-2:]
    k = min(m, n)
    assert lu.shape == x.shape and piv.dtype == np.int32 and perm.dtype == np.int32
    assert piv.shape == x.shape[:-2] + (k,) and perm.shape == x.shape[:-2] + (m,)
    lower = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
    upper = np.triu(lu[..., :k, :])
    _close(np.take_along_axis(x, np.asarray(perm)[..., None], axis=-2), lower @ upper, x.dtype, 10)
    np.testing.assert_array_equal(L.lu_pivots_to_permutation(piv, m), perm)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 1, 1), (0, 0)])
def test_lu(dtype, shape):
    x = _rand(shape, dtype)
    for out in _modes(L.lu, x):
        _check_lu(x, *(np.asarray(o) for o in out))
    if len(shape) == 2 and min(shape) > 0:
        lu, piv, perm = L.lu(x)
        # partial pivoting on |Re| + |Im| (LAPACK's): |l| <= 1, or sqrt(2) for complex
        assert np.all(np.abs(np.tril(lu, -1)) <= (np.sqrt(2) if np.iscomplexobj(x) else 1) + 1e-6)
        batch = np.stack([x, 2 * x[::-1]])
        got, want = tracejit.vmap(L.lu)(batch), L.lu(batch)
        _close(got[0], want[0], dtype)
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(got[2], want[2])


def test_lu_pivots_to_permutation():
    piv = np.array([[3, 1, 4, 4], [0, 2, 2, 3]], np.int32)
    want = []
    for p in piv:
        perm = list(range(6))
        for i, j in enumerate(p):
            perm[i], perm[j] = perm[j], perm[i]
        want.append(perm)
    for out in _modes(lambda p: L.lu_pivots_to_permutation(p, 6), piv):
        assert out.dtype == np.int32
        np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(tracejit.vmap(lambda p: L.lu_pivots_to_permutation(p, 6))(piv), want)
    with pytest.raises(ValueError):
        L.lu_pivots_to_permutation(piv, 3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_qr(dtype, shape):
    x = _rand((2,) + shape, dtype)
    for full in (True, False):
        mode = "complete" if full else "reduced"
        q, r = L.qr(x, full_matrices=full)
        wq, wr = np.linalg.qr(x, mode=mode)
        _close(q, wq, dtype, 10)
        _close(r, wr, dtype, 10)
        for q, r, p in _modes(lambda x: L.qr(x, pivoting=True, full_matrices=full), x):
            assert p.dtype == np.int32 and q.shape == wq.shape and r.shape == wr.shape
            _close(np.asarray(q) @ r, np.take_along_axis(x, np.asarray(p)[..., None, :], axis=-1), dtype, 10)
            _close(np.triu(r), r, dtype)
            d = np.abs(np.diagonal(r, 0, -2, -1))
            assert np.all(d[..., :-1] >= d[..., 1:] * (1 - 1e-5))


def test_qr_pivoting_matches_scipy():
    sl = pytest.importorskip("scipy.linalg")
    for dtype in (np.float64, np.complex128):
        x = _rand((6, 4), dtype)
        q, r, p = L.qr(x, pivoting=True)
        wq, wr, wp = sl.qr(x, pivoting=True)
        np.testing.assert_array_equal(p, wp)
        _close(q, wq, dtype, 10)
        _close(r, wr, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_householder_product_and_ormqr(dtype):
    x = _rand((6, 4), dtype)
    h, taus = np.linalg.qr(x, mode="raw")           # LAPACK's geqrf output (transposed)
    a = np.ascontiguousarray(h.T)
    taus = taus.astype(dtype)
    qfull = np.linalg.qr(x, mode="complete")[0]
    for q in _modes(L.householder_product, a, taus):
        _close(q, qfull[:, :4], dtype, 10)
    c = _rand((6, 3), dtype)
    for left in (True, False):
        for transpose in (True, False):
            qq = _mH(qfull) if transpose else qfull
            cc = c if left else c.T
            want = qq @ cc if left else cc @ qq
            f = lambda a, t, c: L.ormqr(a, t, c, left=left, transpose=transpose)  # noqa: E731
            for out in _modes(f, a, taus, cc):
                _close(out, want, dtype, 10)
    with pytest.raises(ValueError):
        L.ormqr(a, taus, c.T)


def _reflector_q(out, taus):
    """Q of a reduction whose reflector i lies below row i + 1 (gehrd / sytrd lower format)."""
    n = out.shape[-1]
    q = np.eye(n, dtype=out.dtype)
    q[1:, 1:] = L.householder_product(out[1:, :-1], taus)
    return q


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [5, 2, 1])
def test_hessenberg(dtype, n):
    a = _rand((n, n), dtype)
    for out, taus in _modes(L.hessenberg, a):
        assert out.shape == (n, n) and taus.shape == (n - 1,)
        h = np.triu(out, -1)
        q = _reflector_q(np.asarray(out), np.asarray(taus))
        _close(_mH(q) @ q, np.eye(n), dtype, 10)
        _close(_mH(q) @ a @ q, h, dtype, 10)
    batch = np.stack([a, 2 * a])
    for got, want in zip(tracejit.vmap(L.hessenberg)(batch), L.hessenberg(batch)):
        _close(got, want, dtype)


def test_hessenberg_matches_scipy():
    sl = pytest.importorskip("scipy.linalg")
    for dtype in (np.float64, np.complex128):
        a = _rand((6, 6), dtype)
        out, taus = L.hessenberg(a)
        h, q = sl.hessenberg(a, calc_q=True)
        _close(np.triu(out, -1), h, dtype, 10)
        _close(_reflector_q(np.asarray(out), np.asarray(taus)), q, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tridiagonal(dtype):
    n = 5
    a = _spd(n, dtype)
    junk = a + np.triu(_rand((n, n), dtype), 1)            # the upper triangle is not read
    for out, d, e, taus in _modes(L.tridiagonal, junk):
        assert d.dtype == e.dtype == np.finfo(dtype).dtype and taus.dtype == dtype
        np.testing.assert_array_equal(np.triu(out, 1), np.triu(junk, 1))
        _close(np.diagonal(out), d, dtype)
        _close(np.diagonal(out, -1), e, dtype)
        t = np.diag(np.asarray(d)) + np.diag(np.asarray(e), -1) + np.diag(np.asarray(e), 1)
        q = _reflector_q(np.asarray(out), np.asarray(taus))
        _close(_mH(q) @ a @ q, t, dtype, 100)
    # the upper-triangle algorithm: same eigenvalues, the strict lower triangle untouched
    junk = a + np.tril(_rand((n, n), dtype), -1)
    out, d, e, _ = L.tridiagonal(junk, lower=False)
    np.testing.assert_array_equal(np.tril(out, -1), np.tril(junk, -1))
    t = np.diag(np.asarray(d)) + np.diag(np.asarray(e), -1) + np.diag(np.asarray(e), 1)
    _close(np.linalg.eigvalsh(t), np.linalg.eigvalsh(a), dtype, 100)
    _close(np.diagonal(out, 1), e, dtype)
    batch = np.stack([a, 2 * a])
    for got, want in zip(tracejit.vmap(L.tridiagonal)(batch), L.tridiagonal(batch)):
        _close(got, want, dtype)


def test_tridiagonal_matches_lapack():
    lapack = pytest.importorskip("scipy.linalg.lapack")
    for dtype, fn in ((np.float64, lapack.dsytrd), (np.complex128, lapack.zhetrd)):
        a = _spd(6, dtype)
        for lower in (True, False):
            out, d, e, taus = L.tridiagonal(a, lower=lower)
            c, wd, we, wtau, info = fn(a, lower=int(lower))
            assert info == 0
            _close(d, wd, dtype, 100)
            _close(e, we, dtype, 100)
            _close(taus, wtau, dtype, 100)
            tri = np.tril if lower else np.triu
            _close(tri(out), tri(c), dtype, 100)


# --------------------------------------------------------------------------- products and solves

@pytest.mark.parametrize("dtype", DTYPES)
def test_triangular_solve(dtype):
    m = 4
    a = _rand((2, m, m), dtype) + 4 * np.eye(m)
    b_left, b_right = _rand((2, m, 3), dtype), _rand((2, 3, m), dtype)
    for lower in (True, False):
        for unit in (True, False):
            t = np.tril(a) if lower else np.triu(a)
            if unit:
                t = t * (1 - np.eye(m)) + np.eye(m)
            for transpose in (True, False):
                for conj in (True, False):
                    op = np.conj(t) if conj else t
                    op = np.swapaxes(op, -1, -2) if transpose else op
                    kw = dict(lower=lower, unit_diagonal=unit, transpose_a=transpose, conjugate_a=conj)
                    x = L.triangular_solve(a, b_left, left_side=True, **kw)
                    _close(op @ np.asarray(x), b_left, dtype, 10)
                    x = L.triangular_solve(a, b_right, left_side=False, **kw)
                    _close(np.asarray(x) @ op, b_right, dtype, 10)
    f = lambda a, b: L.triangular_solve(a, b, left_side=True, lower=True)  # noqa: E731
    for x in _modes(f, a, b_left[..., 0]):               # one dimension less: a vector
        _close(np.tril(a) @ np.asarray(x)[..., None], b_left[..., :1], dtype, 10)
    _close(tracejit.vmap(f)(a, b_left), f(a, b_left), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tridiagonal_solve(dtype):
    m = 5
    dl, d, du = _rand((3, m), dtype), _rand((3, m), dtype) + 4, _rand((3, m), dtype)
    b = _rand((3, m, 2), dtype)
    dense = (d[..., :, None] * np.eye(m) + du[..., :, None] * np.eye(m, k=1) + dl[..., :, None] * np.eye(m, k=-1))
    for x in _modes(L.tridiagonal_solve, dl, d, du, b):
        _close(x, np.linalg.solve(dense, b), dtype, 10)
    _close(tracejit.vmap(L.tridiagonal_solve)(dl, d, du, b), np.linalg.solve(dense, b), dtype, 10)
    with pytest.raises(NotImplementedError):
        L.tridiagonal_solve(dl, d, du, b, perturb_singular=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_symmetric_product(dtype):
    a, c = _rand((2, 4, 3), dtype), _spd(4, dtype, (2,))
    want = 2.0 * a @ np.swapaxes(a, -1, -2) - 0.5 * c
    for sym in (False, True):
        f = lambda a, c: L.symmetric_product(a, c, alpha=2.0, beta=-0.5, symmetrize_output=sym)  # noqa: E731
        for out in _modes(f, a, c):
            assert out.dtype == dtype
            _close(out, want, dtype, 10)
    with pytest.raises(TypeError):
        L.symmetric_product(a.astype(np.complex128), c)


@pytest.mark.parametrize("dtype", DTYPES)
def test_qdwh(dtype):
    x = _rand((6, 4), dtype)
    for u, h, num_iters, ok in _modes(L.qdwh, x):
        assert bool(ok) and 0 < int(num_iters) <= 10
        _close(np.asarray(u) @ h, x, dtype, 30)
        _close(_mH(np.asarray(u)) @ u, np.eye(4), dtype, 30)
        _close(h, _mH(np.asarray(h)), dtype, 30)
        assert np.all(np.linalg.eigvalsh(np.asarray(h).astype(np.complex128)) > 0)
    padded = np.zeros((6, 4), dtype)
    padded[:5, :3] = x[:5, :3]
    u, h, _, ok = L.qdwh(padded, dynamic_shape=(5, 3))
    _close(np.asarray(u)[:5, :3] @ np.asarray(h)[:3, :3], x[:5, :3], dtype, 30)
    batch = np.stack([x, 3 * x])
    for got, want in zip(tracejit.vmap(L.qdwh)(batch), [np.stack(o) for o in zip(L.qdwh(x), L.qdwh(3 * x))]):
        _close(got, want, dtype, 30) if want.dtype.kind in "fc" else np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError):
        L.qdwh(x.T)


def test_qdwh_matches_scipy_polar():
    sl = pytest.importorskip("scipy.linalg")
    x = _rand((5, 5), np.float64)
    u, h, _, _ = L.qdwh(x)
    wu, wh = sl.polar(x)
    _close(u, wu, np.float64, 1e3)
    _close(h, wh, np.float64, 1e3)


def test_dtype_and_rank_errors():
    with pytest.raises(TypeError, match="dtype"):
        L.cholesky(np.eye(3, dtype=np.int64))
    with pytest.raises(ValueError):
        L.qr(np.ones(3))


# --------------------------------------------------------------------------- derivatives

def _fd_check(f, args, argnum=0, rtol=1e-5):
    """grad of ``sum(sin(f))`` against a central difference along a random direction."""
    loss = lambda *a: jnp.sum(jnp.sin(f(*a)))  # noqa: E731
    g = np.asarray(tracejit.grad(loss, argnums=argnum)(*args))
    d = RNG.standard_normal(np.shape(args[argnum]))
    h = 1e-6

    def at(s):
        a = list(args)
        a[argnum] = args[argnum] + s * d
        return float(loss(*a))
    fd = (at(h) - at(-h)) / (2 * h)
    np.testing.assert_allclose(np.sum(g * d), fd, rtol=rtol, atol=1e-7)


def test_gradients_against_finite_differences():
    sq, rect = _rand((4, 4), np.float64), _rand((5, 3), np.float64)
    spd = _spd(4, np.float64)
    _fd_check(L.cholesky, (spd,))
    _fd_check(lambda a: L.eigh(a)[1], (spd,))
    _fd_check(lambda a: L.eigh(a)[0] ** 2, (spd,))
    _fd_check(lambda a: L.lu(a)[0], (sq,))
    _fd_check(lambda a: L.qr(a, full_matrices=False)[1], (rect,))
    _fd_check(lambda a: L.qr(a, pivoting=True, full_matrices=False)[0], (rect,))
    _fd_check(lambda a: L.svd(a, compute_uv=False), (rect,))
    for argnum in (0, 1):
        _fd_check(lambda a, b: L.triangular_solve(a, b, left_side=True, lower=True), (sq + 4 * np.eye(4), rect[:4]),
                  argnum)
    dl, d, du, b = _rand((4,), np.float64), _rand((4,), np.float64) + 4, _rand((4,), np.float64), rect[:4]
    for argnum in range(4):
        _fd_check(L.tridiagonal_solve, (dl, d, du, b), argnum)
    _fd_check(lambda r, w: L.cholesky_update(r, w), (np.linalg.cholesky(spd).T, rect[:4, 0]), 1)


def test_jit_grad_matches_eager_grad():
    spd = _spd(4, np.float64)
    loss = lambda a: jnp.sum(jnp.sin(L.cholesky(a)) + L.eigh(a)[1] + L.lu(a)[0])  # noqa: E731
    _close(tracejit.jit(tracejit.grad(loss))(spd), tracejit.grad(loss)(spd), np.float64)
    _close(tracejit.vmap(tracejit.grad(loss))(np.stack([spd, 2 * spd])),
           np.stack([tracejit.grad(loss)(spd), tracejit.grad(loss)(2 * spd)]), np.float64)


# --------------------------------------------------------------------------- against JAX

def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_values_match_jax(dtype):
    jax = _jax()
    JL = jax.lax.linalg
    sq, rect, spd = _rand((4, 4), dtype), _rand((6, 4), dtype), _spd(4, dtype)
    herm = sq + _mH(sq)
    b = _rand((4, 3), dtype)
    dl, d, du = _rand((4,), dtype), _rand((4,), dtype) + 4, _rand((4,), dtype)
    dl[0] = du[-1] = 0
    cases = [
        ("cholesky", (spd,), {}), ("eigh", (spd,), {}), ("lu", (rect,), {}), ("lu", (rect.T,), {}),
        ("qr", (rect,), {}), ("qr", (rect,), {"full_matrices": False}),
        ("qr", (rect,), {"pivoting": True}), ("qr", (rect.T,), {"pivoting": True, "full_matrices": False}),
        ("svd", (rect,), {"compute_uv": False}), ("hessenberg", (sq,), {}),
        ("tridiagonal", (herm,), {}), ("tridiagonal", (herm,), {"lower": False}),
        ("triangular_solve", (sq + 4 * np.eye(4), b), {"left_side": True, "transpose_a": True, "conjugate_a": True}),
        ("triangular_solve", (sq + 4 * np.eye(4), b.T), {"lower": True, "unit_diagonal": True}),
        ("tridiagonal_solve", (dl, d, du, b), {}), ("qdwh", (rect,), {}),
    ]
    geqrf = jax._src.lax.linalg.geqrf(rect)
    cases += [("householder_product", geqrf, {}), ("ormqr", (*geqrf, rect.T), {"left": False, "transpose": True})]
    if dtype == np.float64:
        r = np.linalg.cholesky(spd).T
        cases += [("cholesky_update", (r, b[:, 0]), {}),
                  ("symmetric_product", (rect.T, spd), {"alpha": 2.0, "beta": 0.5, "symmetrize_output": True})]
    for name, args, kw in cases:
        got, want = getattr(L, name)(*args, **kw), getattr(JL, name)(*args, **kw)
        got, want = (got, want) if isinstance(want, (tuple, list)) else ((got,), (want,))
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            g, w = np.asarray(g), np.asarray(w)
            assert g.shape == w.shape, (name, g.shape, w.shape)
            if w.dtype.kind in "fc":
                assert g.dtype == w.dtype, (name, g.dtype, w.dtype)
                np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9, err_msg=name)
            else:
                np.testing.assert_array_equal(g, w, err_msg=name)
    lu_piv = np.array([[2, 2, 3], [1, 2, 4]], np.int32)
    np.testing.assert_array_equal(L.lu_pivots_to_permutation(lu_piv, 6), JL.lu_pivots_to_permutation(lu_piv, 6))


def test_gradients_match_jax():
    jax = _jax()
    import jax.numpy as jjnp
    JL = jax.lax.linalg
    sq, rect, spd = _rand((4, 4), np.float64), _rand((5, 3), np.float64), _spd(4, np.float64)
    cases = [
        (lambda lib, a: lib.cholesky(a), spd),
        (lambda lib, a: lib.eigh(a)[1], spd),
        (lambda lib, a: lib.eigh(a)[0] ** 2, spd),
        (lambda lib, a: lib.lu(a)[0], sq),
        (lambda lib, a: lib.lu(a)[0], rect),
        (lambda lib, a: lib.qr(a, full_matrices=False)[0], rect),
        (lambda lib, a: lib.qr(a, pivoting=True, full_matrices=False)[1], rect),
        (lambda lib, a: lib.svd(a, full_matrices=False)[0] ** 2, rect),
        (lambda lib, a: lib.triangular_solve(a + 4 * np.eye(4), np.ones((2, 4)), lower=True, transpose_a=True), sq),
    ]
    for f, x in cases:
        want = jax.grad(lambda a: jjnp.sum(jjnp.sin(f(JL, a))))(x)
        got = tracejit.grad(lambda a: jnp.sum(jnp.sin(f(L, a))))(x)
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)
        t = RNG.standard_normal(x.shape)
        np.testing.assert_allclose(tracejit.jvp(lambda a: f(L, a), (x,), (t,))[1],
                                   jax.jvp(lambda a: f(JL, a), (x,), (t,))[1], rtol=1e-8, atol=1e-10)
    dl, d, du, b = RNG.standard_normal(4), RNG.standard_normal(4) + 4, RNG.standard_normal(4), rect[:4]
    want = jax.grad(lambda *a: jjnp.sum(jjnp.sin(JL.tridiagonal_solve(*a))), (0, 1, 2, 3))(dl, d, du, b)
    got = tracejit.grad(lambda *a: jnp.sum(jnp.sin(L.tridiagonal_solve(*a))), (0, 1, 2, 3))(dl, d, du, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10)
