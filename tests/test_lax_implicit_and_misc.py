"""lax.custom_root / lax.custom_linear_solve (implicit differentiation), jnp.sinc, jnp.fromfile and
jnp.linalg.tensorinv / tensorsolve: values against NumPy, derivatives against closed forms and
central differences, eagerly, under jit and vmap, and against JAX 0.10 when it is installed."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax

RNG = np.random.default_rng(11)


def _newton(f, x0):
    """A root finder that is never differentiated (its loop would not transpose)."""
    def body(state):
        x, i = state
        return x - f(x) / tracejit.grad(f)(x), i + 1
    return lax.while_loop(lambda s: (s[1] < 40) & (jnp.abs(f(s[0])) > 1e-14), body, (x0, 0))[0]


def _sqrt(a):
    return lax.custom_root(lambda x: x ** 2 - a, 1.0, _newton, lambda g, y: y / g(1.0))


# --------------------------------------------------------------------------- custom_root

def test_custom_root_newton_sqrt():
    a = np.array([0.5, 2.0, 9.0])
    np.testing.assert_allclose(_sqrt(2.0), np.sqrt(2.0), rtol=1e-14)
    assert isinstance(_sqrt(2.0), tracejit.Array)
    want = 0.5 / np.sqrt(a)
    np.testing.assert_allclose(tracejit.vmap(tracejit.grad(_sqrt))(a), want, rtol=1e-12)
    np.testing.assert_allclose(tracejit.jit(tracejit.vmap(tracejit.grad(_sqrt)))(a), want, rtol=1e-12)
    np.testing.assert_allclose(tracejit.vmap(_sqrt)(a), np.sqrt(a), rtol=1e-14)
    # higher orders through the implicit rule: d2/da2 sqrt(a) = -a^(-3/2) / 4
    for second in (tracejit.grad(tracejit.grad(_sqrt)), tracejit.jacfwd(tracejit.jacfwd(_sqrt)),
                   tracejit.jacfwd(tracejit.grad(_sqrt))):
        np.testing.assert_allclose(second(2.0), -0.25 * 2.0 ** -1.5, rtol=1e-10)
    out, tangent = tracejit.jvp(_sqrt, (4.0,), (1.0,))
    np.testing.assert_allclose((out, tangent), (2.0, 0.25), rtol=1e-13)


def test_custom_root_vector_pytree_and_aux():
    mat = np.array([[3.0, 1.0], [1.0, 2.0]])

    def root(p):
        def f(x):   # x = (u, v): mat @ [u, v] + [u^3, v^3] = p
            y = mat @ jnp.stack([x["u"], x["v"]]) + jnp.stack([x["u"], x["v"]]) ** 3 - p
            return {"u": y[0], "v": y[1]}

        def solve(f, x0):
            def body(_, x):
                flat = jnp.stack([x["u"], x["v"]])
                jac = mat + 3 * jnp.diag(flat ** 2)
                step = jnp.linalg.solve(jac, jnp.stack([f(x)["u"], f(x)["v"]]))
                return {"u": x["u"] - step[0], "v": x["v"] - step[1]}
            x = lax.fori_loop(0, 30, body, x0)
            return x, jnp.abs(f(x)["u"])

        def tangent_solve(g, y):
            jac = tracejit.jacfwd(lambda t: jnp.stack([g({"u": t[0], "v": t[1]})[k] for k in "uv"]))(jnp.zeros(2))
            s = jnp.linalg.solve(jac, jnp.stack([y["u"], y["v"]]))
            return {"u": s[0], "v": s[1]}
        x, resid = lax.custom_root(f, {"u": 0.0, "v": 0.0}, solve, tangent_solve, has_aux=True)
        return jnp.stack([x["u"], x["v"]]), resid

    p = np.array([1.0, 2.0])
    x, resid = root(p)
    assert float(resid) < 1e-12
    np.testing.assert_allclose(mat @ x + x ** 3, p, atol=1e-12)
    # implicit function theorem: dx/dp = (mat + 3 diag(x^2))^-1
    want = np.linalg.inv(mat + 3 * np.diag(np.asarray(x) ** 2))
    np.testing.assert_allclose(tracejit.jacrev(lambda p: root(p)[0])(p), want, rtol=1e-10)
    np.testing.assert_allclose(tracejit.jacfwd(lambda p: root(p)[0])(p), want, rtol=1e-10)
    np.testing.assert_allclose(tracejit.jit(tracejit.jacrev(lambda p: root(p)[0]))(p), want, rtol=1e-10)


# --------------------------------------------------------------------------- custom_linear_solve

def _dense_solve(a, b, transpose=True, symmetric=False):
    return lax.custom_linear_solve(lambda x: a @ x, b, lambda mv, y: jnp.linalg.solve(a, y),
                                   (lambda vm, y: jnp.linalg.solve(a.T, y)) if transpose else None,
                                   symmetric=symmetric)


def _cg(matvec, b):
    """Conjugate gradients in a while_loop (not reverse-differentiable: only the implicit rule is)."""
    def body(s):
        x, r, p, k = s
        ap = matvec(p)
        alpha = (r @ r) / (p @ ap)
        x, r_new = x + alpha * p, r - alpha * ap
        return x, r_new, r_new + (r_new @ r_new) / (r @ r) * p, k + 1
    return lax.while_loop(lambda s: (s[3] < 50) & (s[1] @ s[1] > 1e-28), body, (b * 0, b, b, 0))[0]


def _loss(a, b):
    return jnp.sum(jnp.sin(_dense_solve(a, b)))


def test_custom_linear_solve_dense_gradients():
    a = RNG.standard_normal((4, 4)) + 4 * np.eye(4)
    b = RNG.standard_normal(4)
    x = np.linalg.solve(a, b)
    np.testing.assert_allclose(_dense_solve(a, b), x, rtol=1e-12)
    # x = A^-1 b: dL/db = A^-T c, dL/dA = -(A^-T c) x^T with c = cos(x)
    lam = np.linalg.solve(a.T, np.cos(x))
    for grad in (tracejit.grad(_loss, (0, 1)), tracejit.jit(tracejit.grad(_loss, (0, 1)))):
        ga, gb = grad(a, b)
        np.testing.assert_allclose(gb, lam, rtol=1e-10)
        np.testing.assert_allclose(ga, -np.outer(lam, x), rtol=1e-10)
    da, db = RNG.standard_normal((4, 4)), RNG.standard_normal(4)
    _, tangent = tracejit.jvp(lambda a, b: _dense_solve(a, b), (a, b), (da, db))
    np.testing.assert_allclose(tangent, np.linalg.solve(a, db - da @ x), rtol=1e-10)
    # second order: the Hessian in b of sum(sin(A^-1 b)) is -A^-T diag(sin x) A^-1
    ainv = np.linalg.inv(a)
    want = -ainv.T @ np.diag(np.sin(x)) @ ainv
    for hess in (tracejit.hessian(lambda b: _loss(a, b)), tracejit.jacrev(tracejit.jacrev(lambda b: _loss(a, b))),
                 tracejit.jacfwd(tracejit.jacfwd(lambda b: _loss(a, b)))):
        np.testing.assert_allclose(hess(b), want, rtol=1e-9, atol=1e-12)
    # grad of a jvp in A (reverse over forward) against a central difference
    f = lambda a: tracejit.jvp(lambda a: _loss(a, b), (a,), (da,))[1]  # noqa: E731
    d, h = RNG.standard_normal((4, 4)), 1e-6
    np.testing.assert_allclose(np.sum(tracejit.grad(f)(a) * d), (f(a + h * d) - f(a - h * d)) / (2 * h), rtol=1e-6)


def test_custom_linear_solve_while_loop_solver_symmetric_and_vmap():
    m = RNG.standard_normal((5, 5))
    a = m @ m.T + 5 * np.eye(5)
    b = RNG.standard_normal((3, 5))

    def solve(a, b):
        return lax.custom_linear_solve(lambda x: a @ x, b, _cg, symmetric=True)
    np.testing.assert_allclose(tracejit.vmap(solve, (None, 0))(a, b), np.linalg.solve(a, b.T).T, rtol=1e-10)
    loss = lambda a, b: jnp.sum(jnp.cos(solve(a, b)))  # noqa: E731
    x = np.linalg.solve(a, b[0])
    lam = np.linalg.solve(a, -np.sin(x))
    ga, gb = tracejit.grad(loss, (0, 1))(a, b[0])
    np.testing.assert_allclose(gb, lam, rtol=1e-9)
    np.testing.assert_allclose(ga, -np.outer(lam, x), rtol=1e-9)
    gb_batch = tracejit.jit(tracejit.vmap(tracejit.grad(loss, 1), (None, 0)))(a, b)
    np.testing.assert_allclose(gb_batch, np.linalg.solve(a, -np.sin(np.linalg.solve(a, b.T))).T, rtol=1e-9)


def test_custom_linear_solve_pytree_aux_and_missing_transpose():
    a = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
    b = {"u": RNG.standard_normal(3), "v": RNG.standard_normal(2)}

    def solve(a, b):
        def mv(x):
            return {"u": a @ x["u"], "v": 2.0 * x["v"]}

        def inv(_, y, t=False):
            return {"u": jnp.linalg.solve(a.T if t else a, y["u"]), "v": y["v"] / 2.0}, jnp.sum(y["u"])
        return lax.custom_linear_solve(mv, b, inv, lambda vm, y: inv(vm, y, True), has_aux=True)
    (x, aux) = solve(a, b)
    np.testing.assert_allclose(x["u"], np.linalg.solve(a, b["u"]), rtol=1e-12)
    np.testing.assert_allclose(x["v"], b["v"] / 2, rtol=1e-12)
    np.testing.assert_allclose(aux, np.sum(b["u"]), rtol=1e-12)
    g = tracejit.grad(lambda b: jnp.sum(solve(a, b)[0]["u"]) + jnp.sum(solve(a, b)[0]["v"]))(b)
    np.testing.assert_allclose(g["u"], np.linalg.solve(a.T, np.ones(3)), rtol=1e-12)
    np.testing.assert_allclose(g["v"], np.full(2, 0.5), rtol=1e-12)
    # without transpose_solve: forward mode works, reverse mode raises as in JAX
    bv = b["u"]
    _, t = tracejit.jvp(lambda b: _dense_solve(a, b, transpose=False), (bv,), (bv,))
    np.testing.assert_allclose(t, np.linalg.solve(a, bv), rtol=1e-12)
    with pytest.raises(TypeError, match="transpose_solve"):
        tracejit.grad(lambda b: jnp.sum(_dense_solve(a, b, transpose=False)))(bv)


def test_implicit_gradients_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jjnp

    def jsqrt(a):
        def newton(f, x0):
            return jax.lax.fori_loop(0, 40, lambda i, x: x - f(x) / jax.grad(f)(x), x0)
        return jax.lax.custom_root(lambda x: x ** 2 - a, 1.0, newton, lambda g, y: y / g(1.0))
    for ours, theirs in ((tracejit.grad(_sqrt), jax.grad(jsqrt)),
                         (tracejit.grad(tracejit.grad(_sqrt)), jax.grad(jax.grad(jsqrt)))):
        np.testing.assert_allclose(ours(3.0), theirs(3.0), rtol=1e-12)

    def jloss(a, b):
        x = jax.lax.custom_linear_solve(lambda x: a @ x, b, lambda mv, y: jjnp.linalg.solve(a, y),
                                        lambda vm, y: jjnp.linalg.solve(a.T, y))
        return jjnp.sum(jjnp.sin(x))
    a = RNG.standard_normal((4, 4)) + 4 * np.eye(4)
    b = RNG.standard_normal(4)
    for ours, theirs in zip(tracejit.grad(_loss, (0, 1))(a, b), jax.grad(jloss, (0, 1))(a, b)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tracejit.hessian(_loss)(a, b), jax.hessian(jloss)(a, b), rtol=1e-10, atol=1e-13)


# --------------------------------------------------------------------------- sinc

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.complex128])
def test_sinc_values(dtype):
    x = np.array([-2.5, -1.0, -0.25, 0.0, 1e-8, 0.5, 3.0])
    if np.dtype(dtype).kind == "c":
        x = x + 0.5j * x[::-1]
    x = x.astype(dtype)
    want = np.sinc(x)
    for got in (jnp.sinc(x), tracejit.jit(jnp.sinc)(x), tracejit.vmap(jnp.sinc)(x)):
        assert isinstance(got, tracejit.Array) and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-14, atol=1e-7)
    assert float(jnp.sinc(0)) == 1.0 and jnp.sinc(np.float32(0)).dtype == np.float32


def test_sinc_derivatives():
    # the Maclaurin series sinc(x) = 1 - (pi x)^2/6 + (pi x)^4/120 - ...: derivatives at 0
    f, orders = jnp.sinc, []
    for _ in range(4):
        f = tracejit.grad(f)
        orders.append(float(f(0.0)))
    np.testing.assert_allclose(orders, [0.0, -np.pi ** 2 / 3, 0.0, np.pi ** 4 / 5], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tracejit.jit(tracejit.grad(tracejit.grad(jnp.sinc)))(0.0), -np.pi ** 2 / 3,
                               rtol=1e-12)
    np.testing.assert_allclose(tracejit.jacfwd(tracejit.jacfwd(jnp.sinc))(0.0), -np.pi ** 2 / 3, rtol=1e-12)
    x = np.array([-1.3, 0.0, 0.2, 2.7])
    g = tracejit.vmap(tracejit.grad(jnp.sinc))(x)
    h = 1e-6
    fd = (np.sinc(x + h) - np.sinc(x - h)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_sinc_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jjnp
    x = np.array([-1.5, 0.0, 0.3, 2.0])
    np.testing.assert_allclose(jnp.sinc(x), jjnp.sinc(x), rtol=1e-15)
    ours, theirs = jnp.sinc, jjnp.sinc
    for _ in range(3):
        ours, theirs = tracejit.grad(ours), jax.grad(theirs)
        for v in (0.0, 0.7):
            np.testing.assert_allclose(ours(v), theirs(v), rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------- fromfile

def test_fromfile(tmp_path):
    data = RNG.standard_normal(6).astype(np.float32)
    path = tmp_path / "data.bin"
    data.tofile(path)
    got = jnp.fromfile(path, dtype=np.float32)
    assert isinstance(got, tracejit.Array) and got.dtype == np.float32
    np.testing.assert_array_equal(got, data)
    np.testing.assert_array_equal(jnp.fromfile(path, dtype=np.float32, count=2, offset=4), data[1:3])
    text = tmp_path / "data.txt"
    text.write_text("1, 2, 3.5")
    np.testing.assert_array_equal(jnp.fromfile(text, sep=","), [1.0, 2.0, 3.5])
    np.testing.assert_array_equal(tracejit.jit(lambda s: s * jnp.fromfile(path, dtype=np.float32))(2.0), 2 * data)


# --------------------------------------------------------------------------- tensorinv / tensorsolve

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_tensorinv(dtype):
    a = (RNG.standard_normal((4, 6, 8, 3)) + 5 * np.eye(24).reshape(4, 6, 8, 3)).astype(dtype)
    want = np.linalg.tensorinv(a, ind=2)
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    for got in (jnp.linalg.tensorinv(a, 2), tracejit.jit(lambda a: jnp.linalg.tensorinv(a, ind=2))(a)):
        assert got.shape == (8, 3, 4, 6) and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    b = (RNG.standard_normal((6, 2, 3)) + 3 * np.eye(6).reshape(6, 2, 3)).astype(dtype)
    np.testing.assert_allclose(tracejit.jit(lambda b: jnp.linalg.tensorinv(b, 1))(b), np.linalg.tensorinv(b, 1),
                               rtol=rtol, atol=rtol)
    assert tracejit.jit(jnp.linalg.tensorinv)(np.eye(4, dtype=np.int64).reshape(2, 2, 2, 2)).dtype == np.float64
    with pytest.raises(ValueError):
        tracejit.jit(lambda a: jnp.linalg.tensorinv(a, 0))(a)
    with pytest.raises(np.linalg.LinAlgError):
        tracejit.jit(lambda a: jnp.linalg.tensorinv(a, 1))(a)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tensorsolve(dtype):
    a = (RNG.standard_normal((2, 3, 6)) + 4 * np.eye(6).reshape(2, 3, 6)).astype(dtype)
    b = RNG.standard_normal((2, 3)).astype(dtype)
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    for got in (jnp.linalg.tensorsolve(a, b), tracejit.jit(jnp.linalg.tensorsolve)(a, b)):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, np.linalg.tensorsolve(a, b), rtol=rtol, atol=rtol)
    c = RNG.standard_normal((6, 2, 3)).astype(dtype) + 4 * np.eye(6).reshape(6, 2, 3).astype(dtype)  # axes=(0,)
    f = tracejit.jit(lambda c, b: jnp.linalg.tensorsolve(c, b, axes=(0,)))
    np.testing.assert_allclose(f(c, b), np.linalg.tensorsolve(c, b, axes=(0,)), rtol=rtol, atol=rtol)
    with pytest.raises(np.linalg.LinAlgError):
        tracejit.jit(jnp.linalg.tensorsolve)(a, b[:, 0])


def test_tensorinv_tensorsolve_gradients():
    a = RNG.standard_normal((2, 3, 6)) + 4 * np.eye(6).reshape(2, 3, 6)
    b = RNG.standard_normal((2, 3))
    loss = lambda a, b: jnp.sum(jnp.sin(jnp.linalg.tensorsolve(a, b)))  # noqa: E731
    ga, gb = tracejit.grad(loss, (0, 1))(a, b)
    x = np.linalg.tensorsolve(a, b)
    mat = a.reshape(6, 6)
    lam = np.linalg.solve(mat.T, np.cos(x))
    np.testing.assert_allclose(gb, lam.reshape(2, 3), rtol=1e-10)
    np.testing.assert_allclose(ga, -np.outer(lam, x).reshape(2, 3, 6), rtol=1e-10)
    inv_loss = lambda a: jnp.sum(jnp.sin(jnp.linalg.tensorinv(a, 2)))  # noqa: E731
    sq = RNG.standard_normal((2, 3, 3, 2)) + 3 * np.eye(6).reshape(2, 3, 3, 2)
    d, h = RNG.standard_normal(sq.shape), 1e-6
    fd = (float(inv_loss(sq + h * d)) - float(inv_loss(sq - h * d))) / (2 * h)
    np.testing.assert_allclose(np.sum(tracejit.grad(inv_loss)(sq) * d), fd, rtol=1e-6)
