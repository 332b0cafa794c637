"""tracejit.scipy.linalg's special matrices, matrix functions and further factorizations
(linalg_special.py): values against SciPy (float64 and complex), batching, ``jit``/``vmap``,
gradients against central differences, and a few results against ``jax.scipy.linalg``."""
import numpy as np
import pytest
import scipy.linalg as S

import tracejit
import tracejit.numpy as jnp
from tracejit.scipy import linalg as sl

RNG = np.random.default_rng(11)


def _close(got, want, rtol=1e-12, atol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _cnormal(*shape):
    return RNG.normal(size=shape) + 1j * RNG.normal(size=shape)


def _fd_grad(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
    return g


# --------------------------------------------------------------------------- fixed-size constructors

@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_constructors_match_scipy(n):
    _close(sl.dft(n), S.dft(n))
    for scale in ("sqrtn", "n"):
        _close(sl.dft(n, scale), S.dft(n, scale))
    if n & (n - 1) == 0:
        _close(sl.hadamard(n), S.hadamard(n))
    _close(sl.hilbert(n), S.hilbert(n))
    _close(sl.invhilbert(n), S.invhilbert(n, exact=True).astype(float), rtol=1e-15)
    for kind in ("symmetric", "lower", "upper"):
        _close(sl.pascal(n, kind), S.pascal(n, kind).astype(np.float32))
        _close(sl.invpascal(n, kind), S.invpascal(n, kind).astype(float))
    _close(sl.helmert(n), S.helmert(n))
    _close(sl.helmert(n, full=True), S.helmert(n, full=True))


def test_constructor_dtypes_and_errors():
    # JAX's result types: default complex/float, pascal float32 (as JAX, even with x64), hadamard int
    assert sl.dft(3).dtype == np.complex128 and sl.dft(3, dtype=np.complex64).dtype == np.complex64
    assert sl.pascal(3).dtype == np.float32 and sl.invpascal(3).dtype == np.float64
    assert sl.hadamard(4).dtype == np.int64 and sl.hadamard(4, dtype=float).dtype == np.float64
    assert sl.hilbert(3).dtype == sl.invhilbert(3).dtype == sl.helmert(3).dtype == np.float64
    assert sl.helmert(1).shape == (0, 1) and sl.pascal(0).shape == (0, 0)
    # exact integers rounded once: pascal(30)[-1, -1] = C(58, 29) to float32
    assert float(sl.pascal(30)[-1, -1]) == float(np.float32(S.pascal(30)[-1, -1]))
    big = sl.invhilbert(20)
    _close(big, S.invhilbert(20, exact=True).astype(float), rtol=1e-15, atol=0)
    with pytest.raises(ValueError):
        sl.hadamard(3)
    with pytest.raises(ValueError):
        sl.helmert(0)
    with pytest.raises(ValueError):
        sl.dft(3, scale="bad")
    with pytest.raises(ValueError):
        sl.dft(3, dtype=np.float64)
    with pytest.raises(ValueError):
        sl.pascal(3, kind="bad")


# --------------------------------------------------------------------------- structured matrices

@pytest.mark.parametrize("n", [1, 2, 5])
def test_structured_match_scipy(n):
    c, r = RNG.normal(size=n), RNG.normal(size=n + 2)
    _close(sl.circulant(c), S.circulant(c))
    _close(sl.hankel(c), S.hankel(c))
    _close(sl.hankel(c, r), S.hankel(c, r))
    _close(sl.fiedler(c), S.fiedler(c))
    cc = _cnormal(n)
    _close(sl.circulant(cc), S.circulant(cc))
    _close(sl.hankel(cc, r), S.hankel(cc, r))
    _close(sl.fiedler(cc), S.fiedler(cc))
    a = RNG.normal(size=n + 1)
    _close(sl.companion(a), S.companion(a))
    _close(sl.leslie(a, a[1:]), S.leslie(a, a[1:]))
    for N in (n, n + 2):
        a = RNG.normal(size=N)
        want = S.fiedler_companion(a)
        _close(sl.fiedler_companion(a), want.reshape(N - 1, N - 1))     # SciPy's N=1 result is (0,), JAX's (0, 0)
    for mode in ("full", "same", "valid"):
        for m in (1, 3, 6):
            a = RNG.normal(size=m)
            _close(sl.convolution_matrix(a, n, mode), S.convolution_matrix(a, n, mode))
    # integer inputs keep their dtype where JAX's do
    assert sl.circulant([1, 2, 3]).dtype == np.int64
    assert sl.fiedler([1, 4, 2]).dtype == np.int64
    assert sl.convolution_matrix([1, 2], 3).dtype == np.int64
    assert sl.companion([1, 2, 3]).dtype == np.float64


def test_structured_batched_and_errors():
    c, r = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(3, 5))
    _close(sl.hankel(c, r), np.stack([[S.hankel(ci, ri) for ci, ri in zip(cb, r)] for cb in c]))
    _close(sl.circulant(c), np.stack([[S.circulant(ci) for ci in cb] for cb in c]))
    f, s = RNG.normal(size=(2, 1, 4)), RNG.normal(size=(3, 3))
    _close(sl.leslie(f, s), np.stack([[S.leslie(f[i, 0], s[j]) for j in range(3)] for i in range(2)]))
    a = RNG.normal(size=(3, 5))
    _close(sl.companion(a), np.stack([S.companion(x) for x in a]))
    _close(sl.fiedler_companion(a), np.stack([S.fiedler_companion(x) for x in a]))
    _close(sl.fiedler(a), np.stack([S.fiedler(x) for x in a]))
    _close(sl.convolution_matrix(a, 3, "same"), np.stack([S.convolution_matrix(x, 3, "same") for x in a]))
    with pytest.raises(ValueError):
        sl.hankel(1.0)
    with pytest.raises(ValueError):
        sl.leslie([1.0], [])
    with pytest.raises(ValueError):
        sl.leslie([1.0, 2.0, 3.0], [1.0])
    with pytest.raises(ValueError):
        sl.companion([1.0])
    with pytest.raises(ValueError):
        sl.fiedler_companion(np.zeros(0))
    with pytest.raises(ValueError):
        sl.convolution_matrix([1.0], 0)
    with pytest.raises(ValueError):
        sl.convolution_matrix([1.0], 2, mode="bad")


# --------------------------------------------------------------------------- decompositions

@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (4, 2), (2, 4)])
def test_polar(shape):
    for a in (RNG.normal(size=shape), _cnormal(*shape)):
        for side in ("right", "left"):
            u, p = sl.polar(a, side)
            su, sp = S.polar(a, side)
            _close(u, su, atol=1e-12)
            _close(p, sp, atol=1e-12)
            _close(sl.polar(a, side, method="svd")[1], sp, atol=1e-12)
    batch = RNG.normal(size=(2,) + shape)
    u, p = sl.polar(batch)
    _close(u, np.stack([S.polar(x)[0] for x in batch]), atol=1e-12)
    with pytest.raises(ValueError):
        sl.polar(np.ones(3))
    with pytest.raises(ValueError):
        sl.polar(np.eye(2), side="up")
    with pytest.raises(ValueError):
        sl.polar(np.eye(2), method="newton")


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (1, 1)])
def test_qr_multiply(shape):
    m, n = shape
    k = min(m, n)
    for a in (RNG.normal(size=shape), _cnormal(*shape)):
        for conjugate in (False, True):
            for mode, c in (("left", RNG.normal(size=(k, 2))), ("right", RNG.normal(size=(2, m))),
                            ("left", RNG.normal(size=k)), ("right", RNG.normal(size=m))):
                got = sl.qr_multiply(a, c, mode, conjugate=conjugate)
                want = S.qr_multiply(a, c, mode, conjugate=conjugate)
                _close(got[0], want[0], atol=1e-12)
                _close(got[1], want[1], atol=1e-12)
    ab, c = RNG.normal(size=(2,) + shape), RNG.normal(size=(2, m))
    got, r = sl.qr_multiply(ab, c)
    _close(got, np.stack([S.qr_multiply(x, c)[0] for x in ab]), atol=1e-12)
    with pytest.raises(NotImplementedError):
        sl.qr_multiply(ab[0], c, pivoting=True)
    with pytest.raises(ValueError):
        sl.qr_multiply(ab[0], np.ones((2, m + 1)))
    with pytest.raises(ValueError):
        sl.qr_multiply(ab[0], c, mode="middle")


def test_hessenberg():
    for n in (1, 2, 3, 4, 6):
        for a in (RNG.normal(size=(n, n)), _cnormal(n, n)):
            h, q = sl.hessenberg(a, calc_q=True)
            _close(q @ h @ q.conj().T, a, atol=1e-12)
            _close(q.conj().T @ q, np.eye(n), atol=1e-12)
            assert np.all(np.asarray(h)[np.tril_indices(n, -2)] == 0)
            if n == 2 and np.iscomplexobj(a):
                # LAPACK (and JAX) also make a complex 2x2's subdiagonal real; SciPy returns it unchanged
                assert abs(np.imag(h[1, 0])) < 1e-15
                continue
            sh, sq = S.hessenberg(a, calc_q=True)
            _close(h, sh, atol=1e-12)
            _close(q, sq, atol=1e-12)
            _close(sl.hessenberg(a), sh, atol=1e-12)
    # a column with nothing to annihilate is left alone (LAPACK's tau = 0)
    a = np.array([[1.0, 2.0, 3.0], [0.0, 4.0, 5.0], [0.0, 6.0, 7.0]])
    _close(sl.hessenberg(a), a)
    batch = RNG.normal(size=(3, 5, 5))
    _close(sl.hessenberg(batch), np.stack([S.hessenberg(x) for x in batch]), atol=1e-12)
    assert sl.hessenberg(batch[0].astype(np.float32)).dtype == np.float32


def test_eigh_tridiagonal():
    for n in (1, 2, 6):
        d, e = RNG.normal(size=n), RNG.normal(size=n - 1)
        w, v = sl.eigh_tridiagonal(d, e)
        sw, sv = S.eigh_tridiagonal(d, e)
        _close(w, sw, atol=1e-13)
        _close(np.abs(np.sum(np.asarray(v) * sv, axis=0)), np.ones(n), atol=1e-10)   # same vectors up to sign
        _close(sl.eigh_tridiagonal(d, e, eigvals_only=True), sw, atol=1e-13)
    got = sl.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 3))
    _close(got, S.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 3)), atol=1e-13)
    w, v = sl.eigh_tridiagonal(d, e, select="i", select_range=(2, 2))
    assert w.shape == (1,) and v.shape == (6, 1)
    # complex (Hermitian: superdiagonal e, subdiagonal conj(e)), which JAX accepts and SciPy does not
    dc, ec = RNG.normal(size=5) + 0j, _cnormal(4)
    w, v = sl.eigh_tridiagonal(dc, ec)
    t = np.diag(dc.real) + np.diag(ec, 1) + np.diag(ec.conj(), -1)
    _close(t @ v, np.asarray(v) * np.asarray(w), atol=1e-12)
    assert w.dtype == np.float64 and v.dtype == np.complex128
    with pytest.raises(NotImplementedError):
        sl.eigh_tridiagonal(d, e, select="v", select_range=(0.0, 1.0))
    with pytest.raises(TypeError):
        sl.eigh_tridiagonal(d, e.astype(np.float32))
    with pytest.raises(ValueError):
        sl.eigh_tridiagonal(d, e, select="i", select_range=(3, 1))


def test_rsf2csf():
    for n in (1, 2, 4, 6):
        a = RNG.normal(size=(n, n))
        if n == 2:
            a = np.array([[1.0, 2.0], [-3.0, 0.5]])       # a complex pair
        T, Z = S.schur(a)
        t, z = sl.rsf2csf(T, Z)
        st, sz = S.rsf2csf(T, Z)
        _close(t, st, atol=1e-12)
        _close(z, sz, atol=1e-12)
        _close(z @ t @ z.conj().T, a, atol=1e-12)
    T, Z = S.schur(RNG.normal(size=(5, 5)))
    t, z = sl.rsf2csf(np.stack([T, T]), Z)
    _close(t, np.stack([S.rsf2csf(T, Z)[0]] * 2), atol=1e-12)
    assert t.dtype == z.dtype == np.complex128
    assert sl.rsf2csf(T.astype(np.float32), Z.astype(np.float32))[0].dtype == np.complex64
    with pytest.raises(ValueError):
        sl.rsf2csf(np.ones((2, 3)), np.ones((2, 3)))


# --------------------------------------------------------------------------- matrix functions

def test_expm_frechet():
    for n in (1, 3):
        for a, e in ((RNG.normal(size=(n, n)), RNG.normal(size=(n, n))), (_cnormal(n, n), _cnormal(n, n))):
            ea, l = sl.expm_frechet(a, e)
            sea, sl_ = S.expm_frechet(a, e)
            _close(ea, sea, rtol=1e-11)
            _close(l, sl_, rtol=1e-10, atol=1e-12)
            _close(sl.expm_frechet(a, e, compute_expm=False), sl_, rtol=1e-10, atol=1e-12)
    a, e = RNG.normal(size=(2, 3, 3)), RNG.normal(size=(2, 3, 3))
    _close(sl.expm_frechet(a, e)[1], np.stack([S.expm_frechet(x, y)[1] for x, y in zip(a, e)]), rtol=1e-10)
    with pytest.raises(ValueError):
        sl.expm_frechet(np.eye(2), np.eye(3))


def test_funm():
    for n in (1, 3, 5):
        for a in (RNG.normal(size=(n, n)), _cnormal(n, n)):
            f = sl.funm(a, jnp.sin)
            assert f.dtype == np.complex128           # JAX's dtype; SciPy returns real when it can
            _close(f, S.funm(a, np.sin), rtol=1e-10, atol=1e-12)
            F, err = sl.funm(a, jnp.exp, disp=False)
            _close(F, S.expm(a), rtol=1e-10, atol=1e-12)
            assert 0 < float(err) < 1e-12
    # diagonalizable with a repeated eigenvalue
    v = RNG.normal(size=(3, 3))
    a = v @ np.diag([1.0, 1.0, 2.0]) @ np.linalg.inv(v)
    _close(sl.funm(a, lambda x: x ** 2), a @ a, rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError):
        sl.funm(np.ones((2, 3)), jnp.sin)


def test_funm_gradient_matches_expm():
    # funm's derivative once was silently zero (its eigendecomposition was cut from differentiation)
    a = RNG.normal(size=(4, 4))
    w = RNG.normal(size=(4, 4))
    via_funm = lambda x: jnp.sum(jnp.real(sl.funm(x, jnp.exp)) * w)
    via_expm = lambda x: jnp.sum(sl.expm(x) * w)
    _close(tracejit.grad(via_funm)(a), tracejit.grad(via_expm)(a), rtol=1e-9, atol=1e-11)
    _close(tracejit.jit(tracejit.grad(via_funm))(a), tracejit.grad(via_expm)(a), rtol=1e-9, atol=1e-11)


def test_solve_sylvester():
    for m, n in ((1, 1), (3, 2), (4, 4)):
        a = RNG.normal(size=(m, m)) + 3 * np.eye(m)
        b = RNG.normal(size=(n, n)) + 3 * np.eye(n)
        c = RNG.normal(size=(m, n))
        _close(sl.solve_sylvester(a, b, c), S.solve_sylvester(a, b, c), rtol=1e-10, atol=1e-12)
        ac, bc, cc = a + 1j * RNG.normal(size=(m, m)), b + 1j * RNG.normal(size=(n, n)), _cnormal(m, n)
        _close(sl.solve_sylvester(ac, bc, cc), S.solve_sylvester(ac, bc, cc), rtol=1e-10, atol=1e-12)
        # complex a with real b: check the residual (SciPy 1.17 returns a wrong X for some of these)
        x = np.asarray(sl.solve_sylvester(ac, b, cc))
        _close(ac @ x + x @ b, cc, atol=1e-12)
    a = RNG.normal(size=(2, 3, 3)) + 3 * np.eye(3)
    b = np.diag([4.0, 5.0])
    c = RNG.normal(size=(3, 2))
    _close(sl.solve_sylvester(a, b, c), np.stack([S.solve_sylvester(x, b, c) for x in a]), rtol=1e-10)
    assert sl.solve_sylvester(a, b, c, method="eigen").shape == (2, 3, 2)
    # an eigenvalue sum below tol: all NaN, as JAX
    a = RNG.normal(size=(3, 3))
    assert np.all(np.isnan(sl.solve_sylvester(a, -a.T, np.ones((3, 3)))))
    with pytest.raises(ValueError):
        sl.solve_sylvester(np.eye(2), np.eye(3), np.ones((2, 2)))
    with pytest.raises(ValueError):
        sl.solve_sylvester(np.eye(2), np.eye(2), np.ones((2, 2)), method="qr")


# --------------------------------------------------------------------------- transformations

def test_jit_matches_eager():
    a = RNG.normal(size=(4, 4))
    b = RNG.normal(size=(3, 3)) + 3 * np.eye(3)
    c = RNG.normal(size=(4, 3))
    v = RNG.normal(size=4)
    T, Z = S.schur(RNG.normal(size=(4, 4)))

    def f(a, b, c, v, T, Z):
        return [sl.circulant(v), sl.hankel(v, v[:3]), sl.leslie(v, v[1:]), sl.companion(v), sl.fiedler(v),
                sl.fiedler_companion(v), sl.convolution_matrix(v, 3, "same"), *sl.polar(a, "left"),
                *sl.hessenberg(a, calc_q=True), sl.eigh_tridiagonal(v, v[1:], eigvals_only=True),
                *sl.qr_multiply(a, c, "left"), sl.solve_sylvester(a + 3 * jnp.eye(4), b, c),
                *sl.expm_frechet(a, a.T), sl.funm(a, jnp.exp), *sl.rsf2csf(T, Z), sl.dft(3), sl.hadamard(4),
                sl.pascal(3), sl.invpascal(3), sl.hilbert(3), sl.invhilbert(3), sl.helmert(3)]
    args = (a, b, c, v, T, Z)
    for got, want in zip(tracejit.jit(f)(*args), f(*args)):
        assert got.dtype == want.dtype
        _close(got, want, rtol=1e-10, atol=1e-12)


def test_vmap():
    a = RNG.normal(size=(3, 4, 4))
    _close(tracejit.vmap(sl.hessenberg)(a), np.stack([S.hessenberg(x) for x in a]), atol=1e-12)
    b, c = np.diag([4.0, 5.0]), RNG.normal(size=(4, 2))
    got = tracejit.vmap(lambda x: sl.solve_sylvester(x, b, c))(a + 3 * np.eye(4))
    _close(got, np.stack([S.solve_sylvester(x + 3 * np.eye(4), b, c) for x in a]), rtol=1e-10)
    _close(tracejit.vmap(lambda x: sl.polar(x)[0])(a), np.stack([S.polar(x)[0] for x in a]), atol=1e-12)


def test_gradients():
    v = RNG.normal(size=4)
    a = RNG.normal(size=(3, 3))
    w4, w3 = RNG.normal(size=(4, 4)), RNG.normal(size=(3, 3))
    wc = RNG.normal(size=(5, 2))
    T, Z = S.schur(RNG.normal(size=(4, 4)))
    D = np.triu(RNG.normal(size=(4, 4)))
    cases = [
        (lambda v: jnp.sum(sl.circulant(v) * w4), v),
        (lambda v: jnp.sum(sl.hankel(v, v[::-1]) * w4), v),
        (lambda v: jnp.sum(sl.leslie(v, v[1:]) * w4), v),
        (lambda v: jnp.sum(sl.companion(v) * w3), v),
        (lambda v: jnp.sum(sl.fiedler(v) * w4), v),
        (lambda v: jnp.sum(sl.fiedler_companion(v) * w3), v),
        (lambda v: jnp.sum(sl.convolution_matrix(v, 2) * wc), v),
        (lambda a: jnp.sum(sl.polar(a)[0] * w3), a),
        (lambda a: jnp.sum(sl.polar(a, "left")[1] * w3), a),
        (lambda a: jnp.sum(sl.expm_frechet(a, w3)[1] * w3.T), a),
        (lambda a: jnp.sum(sl.solve_sylvester(a + 3 * jnp.eye(3), a.T + 2 * jnp.eye(3), w3) * w3.T), a),
        (lambda v: jnp.sum(sl.eigh_tridiagonal(v, 0.5 * v[1:], eigvals_only=True) * v), v),
        # rsf2csf along a direction that keeps T quasi-triangular (its rotations switch on at exact zeros)
        (lambda s: jnp.sum(jnp.real(sl.rsf2csf(T + s * D, Z)[0] * w4)), np.array(0.0)),
    ]
    for f, x in cases:
        _close(tracejit.grad(f)(x), _fd_grad(f, x), rtol=1e-6, atol=1e-7)
    f, x = cases[7]
    _close(tracejit.jit(tracejit.grad(f))(x), _fd_grad(f, x), rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------------- against JAX

@pytest.fixture
def jsl():
    jax = pytest.importorskip("jax")
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    import jax.scipy.linalg as jsl
    yield jsl
    jax.config.update("jax_enable_x64", before)


def _same(got, want, rtol=1e-10, atol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    _close(got, want, rtol=rtol, atol=atol)


def test_against_jax(jsl):
    # a few cheap ones (JAX compiles each op), chosen where JAX's results differ from SciPy's
    for name in ("dft", "hadamard", "hilbert", "invhilbert", "pascal", "invpascal", "helmert"):
        _same(getattr(sl, name)(4), getattr(jsl, name)(4), rtol=1e-5)        # JAX's pascal: lgamma in float32
    _same(sl.fiedler_companion(np.array([2.0])), jsl.fiedler_companion(np.array([2.0])))     # (0, 0)
    _same(sl.leslie(np.array([1, 2, 3]), np.array([4, 5])), jsl.leslie(np.array([1, 2, 3]), np.array([4, 5])))
    _same(sl.convolution_matrix(np.array([1, 2, 3]), 4, "same"), jsl.convolution_matrix(np.array([1, 2, 3]), 4, "same"))
    a = _cnormal(2, 2)                                   # complex 2x2: JAX's (LAPACK's) real subdiagonal
    for got, want in zip(sl.hessenberg(a, calc_q=True), jsl.hessenberg(a, calc_q=True)):
        _same(got, want)
    sq = RNG.normal(size=(4, 4))
    _same(sl.solve_sylvester(sq, -sq.T, np.ones((4, 4))), jsl.solve_sylvester(sq, -sq.T, np.ones((4, 4))))   # NaN
    T, Z = S.schur(sq)
    for got, want in zip(sl.rsf2csf(T, Z), jsl.rsf2csf(T, Z)):
        _same(got, want)
