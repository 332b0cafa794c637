"""jax.custom_derivatives' symbolic zeros (defjvp/defvjp(symbolic_zeros=True), SymbolicZero,
CustomVJPPrimal, zero_from_primal, custom_vjp_primal_tree_values), linear_call, and jax.fwd_and_bwd.

Every derivative is checked against the closed form (or plain autodiff of the same function),
eagerly and under jit / vmap; JAX itself is compared where the peers extra is installed.
"""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit.custom_derivatives import (CustomVJPPrimal, SymbolicZero, custom_vjp_primal_tree_values, linear_call,
                                         zero_from_primal)


def _sin_times(record):
    @tracejit.custom_jvp
    def f(x, y):
        return jnp.sin(x) * y

    def f_jvp(primals, tangents):
        x, y = primals
        xd, yd = tangents
        record.append((isinstance(xd, SymbolicZero), isinstance(yd, SymbolicZero)))
        t = SymbolicZero.from_primal_value(f(x, y))
        if not isinstance(xd, SymbolicZero):
            t = jnp.cos(x) * xd * y
        if not isinstance(yd, SymbolicZero):
            t = jnp.sin(x) * yd if isinstance(t, SymbolicZero) else t + jnp.sin(x) * yd
        return f(x, y), t
    f.defjvp(f_jvp, symbolic_zeros=True)
    return f


@pytest.mark.parametrize("wrap", [lambda g: g, tracejit.jit], ids=["eager", "jit"])
def test_custom_jvp_symbolic_zeros_mark_the_inputs_not_differentiated(wrap):
    seen = []
    f = _sin_times(seen)
    x, y = 0.7, -1.3
    assert np.isclose(wrap(tracejit.grad(f))(x, y), np.cos(x) * y) and seen[-1] == (False, True)
    assert np.isclose(wrap(tracejit.grad(f, argnums=1))(x, y), np.sin(x)) and seen[-1] == (True, False)
    gx, gy = wrap(tracejit.grad(f, argnums=(0, 1)))(x, y)
    assert np.allclose([gx, gy], [np.cos(x) * y, np.sin(x)]) and seen[-1] == (False, False)
    _, t = tracejit.jvp(lambda y: f(x, y), (y,), (2.0,))
    assert np.isclose(t, 2 * np.sin(x)) and seen[-1] == (True, False)
    # the rule may answer a SymbolicZero tangent: a zero derivative, not an error
    assert wrap(tracejit.grad(lambda x: f(x, 0.0) + x))(x) == 1.0


def test_custom_jvp_symbolic_zeros_under_vmap_and_integer_inputs():
    seen = []
    f = _sin_times(seen)
    xs, ys = np.array([0.1, 0.5, 2.0]), np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(tracejit.vmap(tracejit.grad(f))(xs, ys), np.cos(xs) * ys, rtol=1e-14)

    @tracejit.custom_jvp
    def scale(x, n):
        return x * n

    kinds = []

    def scale_jvp(primals, tangents):
        kinds.append(type(tangents[1]).__name__)
        assert tangents[1].dtype == tracejit.dtypes.float0      # an integer input's zero is float0
        return scale(*primals), tangents[0] * primals[1]
    scale.defjvp(scale_jvp, symbolic_zeros=True)
    assert tracejit.grad(scale)(2.0, 3) == 3.0 and kinds == ["SymbolicZero"]


@pytest.mark.parametrize("wrap", [lambda g: g, tracejit.jit], ids=["eager", "jit"])
def test_custom_vjp_symbolic_zeros(wrap):
    perturbed = []

    @tracejit.custom_vjp
    def f(x, y):
        return jnp.sin(x) * y, x * 2.0

    def f_fwd(x, y):
        assert isinstance(x, CustomVJPPrimal) and isinstance(y, CustomVJPPrimal)
        perturbed.append((x.perturbed, y.perturbed))
        x, y = custom_vjp_primal_tree_values((x, y))
        return f(x, y), (jnp.cos(x), jnp.sin(x), y)

    cts_seen = []

    def f_bwd(res, cts):
        c, s, y = res
        a, b = cts
        cts_seen.append((isinstance(a, SymbolicZero), isinstance(b, SymbolicZero)))
        gx = (0.0 if isinstance(a, SymbolicZero) else c * a * y) + (0.0 if isinstance(b, SymbolicZero) else 2.0 * b)
        gy = SymbolicZero.from_primal_value(y) if isinstance(a, SymbolicZero) else s * a
        return gx, gy
    f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
    x, y = 0.4, 1.7
    assert np.isclose(wrap(tracejit.grad(lambda x, y: f(x, y)[0]))(x, y), np.cos(x) * y)
    assert perturbed[-1] == (True, False) and cts_seen[-1] == (False, True)
    assert np.isclose(wrap(tracejit.grad(lambda x, y: f(x, y)[1], argnums=1))(x, y), 0.0)
    assert perturbed[-1] == (False, True) and cts_seen[-1] == (True, False)
    g = wrap(tracejit.grad(lambda x, y: f(x, y)[0] + f(x, y)[1], argnums=(0, 1)))(x, y)
    np.testing.assert_allclose(g, [np.cos(x) * y + 2.0, np.sin(x)], rtol=1e-14)
    # without differentiation the primal runs (the rules are not consulted)
    assert np.isclose(wrap(lambda x, y: f(x, y)[0])(x, y), np.sin(x) * y)


def test_symbolic_zero_helpers():
    z = zero_from_primal({"a": np.ones((2, 3), np.float32), "n": np.int32(4)}, symbolic_zeros=True)
    assert isinstance(z["a"], SymbolicZero) and z["a"].shape == (2, 3) and z["a"].dtype == np.float32
    assert z["n"].dtype == tracejit.dtypes.float0 and not z["a"]
    zi = zero_from_primal({"a": np.ones(2), "n": 4})
    np.testing.assert_array_equal(zi["a"], [0.0, 0.0])
    assert zi["n"].dtype == tracejit.dtypes.float0
    assert custom_vjp_primal_tree_values([CustomVJPPrimal(1.0, True), (CustomVJPPrimal(2, False),)]) == [1.0, (2,)]
    with pytest.raises(TypeError, match="CustomVJPPrimal"):
        custom_vjp_primal_tree_values([1.0])


def _div(r, x):
    return x / r


def test_linear_call_uses_the_given_transpose():
    def wrong_t(r, ct):          # deliberately 10x the true transpose: proves it is the one used
        return 10 * ct / r
    assert tracejit.grad(lambda x: linear_call(_div, wrong_t, 2.0, x))(1.0) == 5.0
    assert tracejit.jit(tracejit.grad(lambda x: linear_call(_div, wrong_t, 2.0, x)))(1.0) == 5.0
    (t,) = tracejit.linear_transpose(lambda x: linear_call(_div, wrong_t, 4.0, x), 1.0)(2.0)
    assert t == 5.0
    # forward mode is the function itself on the tangents
    y, ty = tracejit.jvp(lambda x: linear_call(_div, wrong_t, 2.0, x), (1.0,), (3.0,))
    assert (y, ty) == (0.5, 1.5)
    with pytest.raises(TypeError, match="residual"):
        tracejit.grad(lambda r: linear_call(_div, wrong_t, r, 1.0))(2.0)


def test_linear_call_pytrees_vmap_and_second_order():
    a = np.array([[1.0, 2.0], [3.0, 4.0], [0.5, -1.0]])
    mv = lambda a, x: {"y": a @ x["v"]}                 # noqa: E731
    mvt = lambda a, ct: {"v": a.T @ ct["y"]}           # noqa: E731
    loss = lambda v: jnp.sum(linear_call(mv, mvt, a, {"v": v})["y"] ** 2)     # noqa: E731
    v = np.array([1.0, -1.0])
    np.testing.assert_allclose(tracejit.grad(loss)(v), 2 * a.T @ (a @ v), rtol=1e-14)
    np.testing.assert_allclose(tracejit.hessian(loss)(v), 2 * a.T @ a, rtol=1e-14)
    vs = np.stack([v, 3 * v, -v])
    np.testing.assert_allclose(tracejit.jit(tracejit.vmap(tracejit.grad(loss)))(vs), 2 * (a.T @ a @ vs.T).T,
                               rtol=1e-14)
    out = tracejit.vmap(lambda v: linear_call(mv, mvt, a, {"v": v}))(vs)
    np.testing.assert_allclose(out["y"], vs @ a.T, rtol=1e-14)
    with pytest.raises(TypeError, match="structure"):
        tracejit.grad(lambda v: jnp.sum(linear_call(mv, lambda a, ct: a.T @ ct["y"], a, {"v": v})["y"]))(v)


@pytest.mark.parametrize("jitted", [True, False])
def test_fwd_and_bwd_match_vjp_and_compile_once(jitted):
    rng = np.random.default_rng(0)
    x, w, ct = rng.standard_normal((4, 3)), rng.standard_normal((3, 5)), rng.standard_normal((4, 5))
    f = lambda x, w: jnp.tanh(x @ w) * x.sum()          # noqa: E731
    fwd, bwd = tracejit.fwd_and_bwd(f, argnums=(0, 1), jitted=jitted)
    for i in range(3):
        y, res = fwd(x + i, w)
        want_y, pull = tracejit.vjp(f, x + i, w)
        got, want = bwd(res, ct), pull(ct)
        np.testing.assert_allclose(y, want_y, rtol=1e-14)
        assert isinstance(got, tuple) and len(got) == 2
        for g, wnt in zip(got, want):
            np.testing.assert_allclose(g, wnt, rtol=1e-13, atol=1e-14)
    if jitted:
        assert len(fwd.signatures_compiled) == 1 and len(bwd.signatures_compiled) == 1
    fwd1, bwd1 = tracejit.fwd_and_bwd(lambda x, w: ((x @ w).sum(), w.shape[0]), argnums=1, has_aux=True,
                                      jitted=jitted)
    y, res, aux = fwd1(x, w)
    (gw,) = bwd1(res, 1.0)
    np.testing.assert_allclose(gw, np.broadcast_to(x.sum(0)[:, None], w.shape), rtol=1e-14)
    assert int(aux) == 3


def test_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    x, w = np.linspace(-1, 1, 6).reshape(2, 3), np.linspace(0, 2, 12).reshape(3, 4)
    fwd, bwd = jax.fwd_and_bwd(lambda x, w: jax.numpy.tanh(x @ w), argnums=(0, 1))
    tfwd, tbwd = tracejit.fwd_and_bwd(lambda x, w: jnp.tanh(x @ w), argnums=(0, 1))
    ct = np.ones((2, 4))
    for a, b in zip(bwd(fwd(x, w)[1], ct), tbwd(tfwd(x, w)[1], ct)):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-13)
    jt = lambda r, c: 10 * c / r                       # noqa: E731
    want = jax.grad(lambda x: jax.custom_derivatives.linear_call(_div, jt, 2.0, x))(1.0)
    assert float(want) == tracejit.grad(lambda x: linear_call(_div, jt, 2.0, x))(1.0)


def test_linear_call_on_views_empty_and_non_finite_values():
    # Transposed (non-contiguous) and reversed (negative-stride) operands, an empty linear argument,
    # and NaN/inf values: the primitive is the traced function, so each matches NumPy's result.
    a = np.arange(12.0).reshape(3, 4).T                    # (4, 3), non-contiguous
    mv = lambda a, x: a @ x                                 # noqa: E731
    mvt = lambda a, ct: a.T @ ct                            # noqa: E731
    x = np.array([1.0, np.nan, -np.inf])[::-1]              # negative stride
    for f in (lambda x: linear_call(mv, mvt, a, x), tracejit.jit(lambda x: linear_call(mv, mvt, a, x))):
        np.testing.assert_array_equal(np.asarray(f(x)), a @ x)
    ct = np.array([1.0, 0.0, np.inf, 2.0])
    (g,) = tracejit.vjp(lambda x: linear_call(mv, mvt, a, x), np.ones(3))[1](ct)
    np.testing.assert_array_equal(g, a.T @ ct)
    empty = np.zeros((0, 3))
    assert tracejit.jit(lambda x: linear_call(mv, mvt, empty, x))(np.ones(3)).shape == (0,)
    (ge,) = tracejit.vjp(lambda x: linear_call(mv, mvt, empty, x), np.ones(3))[1](np.zeros(0))
    np.testing.assert_array_equal(ge, np.zeros(3))
