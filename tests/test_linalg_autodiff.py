"""Derivatives of the linear-algebra primitives for real and complex inputs (JAX's rules).

* jvp against a central difference ``(f(x + h dx) - f(x - h dx)) / 2h`` along a random
  (complex, for complex inputs) direction; Hermitian directions for the functions that
  read a Hermitian matrix (cholesky, eigh, pinv(hermitian=True));
* vjp by the identity ``Re <vjp(ct), dx> == Re <ct, jvp(dx)>`` (JAX's cotangents are
  transposes, not adjoints: the pairing is ``Re(sum(a * b))``, no conjugate);
* ``jit`` of the jvp against the eager one.
Eigenvectors and singular vectors are only defined up to phase, so their checks go
through phase-invariant functions.
"""
import zlib

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit.transforms.api_ad import grad, jvp, vjp


def _rnd(rng, shape, cplx):
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if cplx else x


def _herm(x):
    return (x + np.conj(np.swapaxes(x, -1, -2))) / 2


def _cat(v):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return np.concatenate([np.ravel(np.asarray(a)) for a in v])


def _check(f, xs, dirs, rng, rtol=1e-6):
    h = 1e-6
    plus = f(*[x + h * d for x, d in zip(xs, dirs)])
    minus = f(*[x - h * d for x, d in zip(xs, dirs)])
    fd = (_cat(plus) - _cat(minus)) / (2 * h)
    _, t = jvp(f, tuple(xs), tuple(dirs))
    t = _cat(t)
    scale = max(1.0, np.max(np.abs(fd)))
    assert np.max(np.abs(t - fd)) / scale < rtol, (t, fd)
    out, pull = vjp(f, *xs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    cts = [_rnd(rng, np.shape(o), np.iscomplexobj(o)) for o in outs]
    ct = cts if isinstance(out, list) else (type(out)(*cts) if isinstance(out, tuple) else cts[0])
    lhs = np.real(np.sum(_cat(pull(ct)) * _cat(dirs)))
    rhs = np.real(np.sum(_cat(cts) * t))
    assert abs(lhs - rhs) <= 1e-9 * max(1.0, abs(rhs)), (lhs, rhs)
    jitted = _cat(tracejit.jit(lambda *a: jvp(f, tuple(a[:len(xs)]), tuple(a[len(xs):]))[1])(*xs, *dirs))
    np.testing.assert_allclose(jitted, t, rtol=1e-9, atol=1e-12 * scale)


CASES = {
    "solve": (lambda a, b: jnp.linalg.solve(a, b), "square,rhs"),
    "inv": (lambda a: jnp.linalg.inv(a), "square"),
    "det": (lambda a: jnp.linalg.det(a), "square"),
    "slogdet": (lambda a: list(jnp.linalg.slogdet(a)), "square"),
    "cholesky": (lambda a: jnp.linalg.cholesky(a), "hpd"),
    "cholesky_upper": (lambda a: jnp.linalg.cholesky(a, upper=True), "hpd"),
    "eigvalsh": (lambda a: jnp.linalg.eigvalsh(a), "hpd"),
    "eigh_vectors": (lambda a: (lambda w, v: (v * jnp.sin(w)) @ jnp.conj(v.T))(*jnp.linalg.eigh(a)), "hpd"),
    "eigh_abs_vectors": (lambda a: jnp.abs(jnp.linalg.eigh(a)[1]), "hpd"),
    "qr_tall": (lambda a: list(jnp.linalg.qr(a)), "tall"),
    "qr_square": (lambda a: list(jnp.linalg.qr(a)), "square"),
    "qr_r": (lambda a: jnp.linalg.qr(a, mode="r"), "tall"),
    "svdvals_tall": (lambda a: jnp.linalg.svd(a, compute_uv=False), "tall"),
    "svdvals_wide": (lambda a: jnp.linalg.svd(a, compute_uv=False), "wide"),
    "svd_tall": (lambda a: (lambda u, s, vh: (u * jnp.exp(s)) @ vh)(*jnp.linalg.svd(a, full_matrices=False)), "tall"),
    "svd_wide": (lambda a: (lambda u, s, vh: (u * jnp.exp(s)) @ vh)(*jnp.linalg.svd(a, full_matrices=False)), "wide"),
    "svd_square_full": (lambda a: jnp.abs(jnp.linalg.svd(a)[2]), "square"),
    "pinv_tall": (lambda a: jnp.linalg.pinv(a), "tall"),
    "pinv_wide": (lambda a: jnp.linalg.pinv(a), "wide"),
    "pinv_hermitian": (lambda a: jnp.linalg.pinv(a, hermitian=True), "hpd"),
    "lstsq": (lambda a, b: list(jnp.linalg.lstsq(a, b)[:2]), "tall,rhs4"),
    "norm2": (lambda a: jnp.linalg.norm(a, 2), "tall"),
    "matrix_power": (lambda a: jnp.linalg.matrix_power(a, -2), "square"),
}


@pytest.mark.parametrize("cplx", [False, True], ids=["float64", "complex128"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_linalg_jvp_vjp(name, cplx):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    f, kinds = CASES[name]
    xs, dirs = [], []
    for kind in kinds.split(","):
        if kind == "square":
            xs.append(_rnd(rng, (3, 3), cplx) + 3 * np.eye(3))
            dirs.append(_rnd(rng, (3, 3), cplx))
        elif kind == "hpd":
            m = _rnd(rng, (3, 3), cplx)
            xs.append(m @ np.conj(m.T) + 3 * np.eye(3))
            dirs.append(_herm(_rnd(rng, (3, 3), cplx)))
        elif kind in ("tall", "wide"):
            shape = (4, 3) if kind == "tall" else (3, 4)
            xs.append(_rnd(rng, shape, cplx))
            dirs.append(_rnd(rng, shape, cplx))
        else:
            rows = 4 if kind == "rhs4" else 3
            xs.append(_rnd(rng, (rows, 2), cplx))
            dirs.append(_rnd(rng, (rows, 2), cplx))
    _check(f, xs, dirs, rng)


def test_holomorphic_grad_of_cholesky_matches_jax_definition():
    """JAX: grad(holomorphic=True) = vjp(f)(1) with cotangents paired by Re(sum(a * b)); for
    f = sum(cholesky(X)) (input symmetrized to (X + X^H) / 2) that makes
    Re G_ij = Re d/dt f(X + t E_ij) and Im G_ij = -Re d/dt f(X + i t E_ij)."""
    rng = np.random.default_rng(3)
    m = _rnd(rng, (3, 3), True)
    x = m @ np.conj(m.T) + 3 * np.eye(3)
    g = grad(lambda a: jnp.sum(jnp.linalg.cholesky(a)), holomorphic=True)(x)
    gj = tracejit.jit(grad(lambda a: jnp.sum(jnp.linalg.cholesky(a)), holomorphic=True))(x)

    def fs(a):
        return np.sum(np.linalg.cholesky((a + np.conj(a.T)) / 2))
    h = 1e-6
    want = np.zeros((3, 3), complex)
    for i in range(3):
        for j in range(3):
            e = np.zeros((3, 3))
            e[i, j] = 1
            d1 = (fs(x + h * e) - fs(x - h * e)) / (2 * h)
            d2 = (fs(x + 1j * h * e) - fs(x - 1j * h * e)) / (2 * h)
            want[i, j] = d1.real - 1j * d2.real
    np.testing.assert_allclose(g, want, atol=1e-7)
    np.testing.assert_allclose(gj, g, rtol=1e-12)


def test_complex_abs_grad_conventions():
    z = np.array([3 + 4j, -1 + 2j])
    np.testing.assert_allclose(grad(lambda z: jnp.sum(jnp.abs(z) ** 2))(z), 2 * np.conj(z))
    np.testing.assert_allclose(grad(lambda z: jnp.sum(z ** 2), holomorphic=True)(z), 2 * z)


def test_unsupported_cases_raise_like_jax():
    a = np.random.default_rng(0).standard_normal((3, 4))
    with pytest.raises(NotImplementedError, match="QR"):
        jvp(lambda a: jnp.linalg.qr(a)[1], (a,), (a,))
    with pytest.raises(NotImplementedError, match="full matrices"):
        jvp(lambda a: jnp.linalg.svd(a)[0], (a,), (a,))


@pytest.mark.parametrize("cplx", [False, True], ids=["float64", "complex128"])
def test_det_derivative_of_singular_matrices_is_the_adjugate(cplx):
    """JAX differentiates det through a cofactor solve, defined for singular matrices too:
    d det = tr(adj(A) dA) (det(A) inv(A) only when A is invertible)."""
    u = np.array([1., 2, 3]) + (1j * np.array([0., 1, -1]) if cplx else 0)
    a = np.outer(u, [1., 0, 1]) + np.outer([0, 1., 1], [2, 1, 0])       # rank 2
    g = grad(jnp.linalg.det, holomorphic=cplx)(a)
    h = 1e-6
    want = np.zeros((3, 3), a.dtype)
    for i in range(3):
        for j in range(3):
            e = np.zeros((3, 3))
            e[i, j] = h
            want[i, j] = (np.linalg.det(a + e) - np.linalg.det(a - e)) / (2 * h)
    np.testing.assert_allclose(g, want, atol=1e-8)
    np.testing.assert_allclose(tracejit.jit(grad(jnp.linalg.det, holomorphic=cplx))(a), g, atol=1e-12)
    np.testing.assert_array_equal(grad(jnp.linalg.det)(np.zeros((3, 3))), np.zeros((3, 3)))
    b = np.array([[2.0, 1.0], [0.5, 3.0]])
    np.testing.assert_allclose(grad(jnp.linalg.det)(b), np.linalg.det(b) * np.linalg.inv(b).T, rtol=1e-14)
