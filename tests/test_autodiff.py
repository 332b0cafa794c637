"""Automatic differentiation: every rule family against central finite
differences in float64, hand-derived derivatives, nesting with jit, pytrees,
custom rules, stop_gradient, checkpoint, and the error cases."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.transforms.api_ad import (checkpoint, checkpoint_policies, custom_jvp, custom_vjp, float0, grad, hessian, jacfwd,
                             jacrev, jvp, linear_transpose, linearize, remat, stop_gradient, value_and_grad, vjp)

RTOL = 1e-6
EPS = 1e-5


def _rng(seed=0):
    return np.random.default_rng(seed)


def _tree_add(tree, delta, scale):
    leaves, treedef = tracejit.tree_flatten(tree)
    dl = tracejit.tree_leaves(delta)
    return tracejit.tree_unflatten(treedef, [np.asarray(x) + scale * d for x, d in zip(leaves, dl)])


def _vdot(a, b):
    return sum(float(np.sum(np.asarray(x) * np.asarray(y))) for x, y in
               zip(tracejit.tree_leaves(a), tracejit.tree_leaves(b)))


def check_fd(f, *args, seed=0, rtol=RTOL, atol=1e-8, jit=True):
    """Compare jvp and vjp of ``f`` at ``args`` with a central difference along a
    random direction (and, with ``jit``, the jitted vjp with the eager one)."""
    rng = _rng(seed)
    dirs = tuple(tracejit.tree_map(lambda x: rng.standard_normal(np.shape(x)), a) for a in args)
    plus = f(*[_tree_add(a, d, EPS) for a, d in zip(args, dirs)])
    minus = f(*[_tree_add(a, d, -EPS) for a, d in zip(args, dirs)])
    fd = tracejit.tree_map(lambda p, m: (np.asarray(p) - np.asarray(m)) / (2 * EPS), plus, minus)
    out, tan = jvp(f, args, dirs)
    for t, e in zip(tracejit.tree_leaves(tan), tracejit.tree_leaves(fd)):
        np.testing.assert_allclose(t, e, rtol=rtol, atol=atol)
    ct = tracejit.tree_map(lambda o: rng.standard_normal(np.shape(o)), out)
    _, f_vjp = vjp(f, *args)
    cts_in = f_vjp(ct)
    np.testing.assert_allclose(_vdot(cts_in, dirs), _vdot(ct, fd), rtol=rtol, atol=atol)
    if jit:
        backend = jit if isinstance(jit, str) else None
        jitted = tracejit.jit(lambda ct_, *a: vjp(f, *a)[1](ct_), backend=backend)(ct, *args)
        for x, y in zip(tracejit.tree_leaves(jitted), tracejit.tree_leaves(cts_in)):
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- hand-derived

def test_grad_sum_sin_is_cos():
    x = np.linspace(-2, 2, 7)
    np.testing.assert_allclose(grad(lambda x: np.sum(np.sin(x)))(x), np.cos(x), rtol=1e-14)


def test_grad_of_grad_cubic():
    f = lambda x: x ** 3  # noqa: E731
    assert float(grad(f)(2.0)) == pytest.approx(12.0)
    assert float(grad(grad(f))(2.0)) == pytest.approx(12.0)
    assert float(grad(grad(grad(f)))(2.0)) == pytest.approx(6.0)


def test_hessian_matches_analytic():
    a = _rng(1).standard_normal((3, 3))

    def f(x):
        return x @ a @ x + np.sum(x ** 3) + x[0] * x[1]
    x = np.array([0.5, -1.0, 2.0])
    expected = a + a.T + np.diag(6 * x)
    expected[0, 1] += 1
    expected[1, 0] += 1
    np.testing.assert_allclose(hessian(f)(x), expected, rtol=1e-12)
    np.testing.assert_allclose(tracejit.jit(hessian(f))(x), expected, rtol=1e-12)


def test_jacfwd_equals_jacrev_and_fd():
    def f(x):
        return np.concatenate([np.sin(x) * x[0], np.cumsum(x ** 2)[1:]])
    x = np.array([0.3, -0.7, 1.1])
    jf, jr = jacfwd(f)(x), jacrev(f)(x)
    assert jf.shape == (5, 3)
    np.testing.assert_allclose(jf, jr, rtol=1e-12)
    fd = np.stack([(f(x + EPS * e) - f(x - EPS * e)) / (2 * EPS) for e in np.eye(3)], axis=-1)
    np.testing.assert_allclose(jf, fd, rtol=RTOL, atol=1e-9)


def test_nested_closure_no_perturbation_confusion():
    # d/dx [x * d/dy (x * y)] = d/dx x**2 = 2x
    f = lambda x: x * grad(lambda y: x * y)(x)  # noqa: E731
    assert float(grad(f)(3.0)) == pytest.approx(6.0)


# --------------------------------------------------------------------------- elementwise families

_UNARY_DOMAINS = {
    "log": (0.5, 2), "log1p": (0.1, 2), "sqrt": (0.5, 2), "asin": (-0.7, 0.7), "acos": (-0.7, 0.7),
    "atanh": (-0.7, 0.7), "acosh": (1.5, 3), "cbrt": (0.5, 2),
}
_UNARY = ["exp", "exp2", "expm1", "log", "log1p", "sin", "cos", "tan", "tanh", "sinh", "cosh", "asin", "acos",
          "atan", "asinh", "acosh", "atanh", "sqrt", "cbrt", "logistic", "erf", "square", "abs", "neg", "rsqrt"]


@pytest.mark.parametrize("name", _UNARY)
def test_unary_rules_vs_finite_differences(name):
    lo, hi = _UNARY_DOMAINS.get(name, (-1.2, 1.2))
    if name == "rsqrt":
        lo, hi = 0.5, 2
    x = _rng(2).uniform(lo, hi, size=(5,))
    if name == "abs":
        x = np.where(np.abs(x) < 0.1, 0.5, x)
    check_fd(getattr(lax, name), x, jit=name in ("sin", "abs", "logistic"))


def test_unary_numpy_spellings():
    x = np.array([0.3, 0.9, 1.7])
    check_fd(lambda x: np.log10(x) + np.log2(x) + np.arctan(x) * np.sign(x) + np.floor(x), x)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "atan2", "max", "min", "rem"])
@pytest.mark.parametrize("scalar", [None, 0, 1])
def test_binary_rules_vs_finite_differences(name, scalar):
    rng = _rng(3)
    x = rng.uniform(0.5, 2.0, size=(4,))
    y = rng.uniform(0.5, 2.0, size=(4,)) + 0.25
    if scalar == 0:
        x = x[0]
    elif scalar == 1:
        y = y[0]
    check_fd(getattr(lax, name), x, y, jit=scalar is None)


def test_max_min_ties_split_like_jax():
    gx, gy = grad(lambda x, y: jnp.maximum(x, y), argnums=(0, 1))(2.0, 2.0)
    assert (float(gx), float(gy)) == (0.5, 0.5)
    gx, gy = grad(lambda x, y: jnp.minimum(x, y), argnums=(0, 1))(1.0, 2.0)
    assert (float(gx), float(gy)) == (1.0, 0.0)
    g = grad(lambda x: np.max(x))(np.array([1.0, 3.0, 3.0, 0.0]))
    np.testing.assert_array_equal(g, [0, 0.5, 0.5, 0])
    g = grad(lambda x: np.sum(np.min(x, axis=1)))(np.array([[1.0, 1.0], [2.0, 0.0]]))
    np.testing.assert_array_equal(g, [[0.5, 0.5], [0, 1]])


def test_pow_special_cases():
    assert float(grad(lambda x: x ** 0.0)(0.0)) == 0.0
    assert float(grad(lambda y: 0.0 ** y, )(2.0)) == 0.0
    np.testing.assert_allclose(grad(lambda x: np.sum(x ** 3))(np.array([2.0, -1.0])), [12.0, 3.0])


def test_select_where_clip_relu():
    x = np.array([-1.5, -0.2, 0.4, 2.0])
    np.testing.assert_array_equal(grad(lambda x: np.sum(np.maximum(x, 0)))(x), [0, 0, 1, 1])
    np.testing.assert_array_equal(grad(lambda x: np.sum(np.where(x > 0, x * x, -x)))(x), [-1, -1, 0.8, 4.0])
    np.testing.assert_array_equal(grad(lambda x: np.sum(np.clip(x, -1, 1)))(x), [0, 1, 1, 0])
    check_fd(lambda x, y: jnp.where(x > 0, x, y * 2), x, x[::-1].copy())


def test_convert_element_type_and_dtypes_preserved():
    x32 = np.array([1.0, 2.0], np.float32)
    g = grad(lambda x: np.sum(x.astype(np.float64) ** 2))(x32)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, [2, 4])
    g = grad(lambda x: np.sum(np.sin(x)))(x32)
    assert g.dtype == np.float32
    # Through an integer conversion the gradient is zero.
    np.testing.assert_array_equal(grad(lambda x: np.sum(x.astype(np.int32) * 1.0) + np.sum(x))(
        np.array([1.5, 2.5])), [1, 1])


def test_integer_intermediates_carry_no_gradient():
    x = np.array([3.0, 1.0, 2.0])
    g = grad(lambda x: x[np.argmax(x)] * 2 + np.sum(x > 1) * x[1])(x)
    np.testing.assert_array_equal(g, [2, 2, 0])


# --------------------------------------------------------------------------- structural families

def test_structural_rules_vs_finite_differences():
    rng = _rng(4)
    x = rng.standard_normal((3, 4))
    check_fd(lambda x: np.broadcast_to(x[:, None, :], (3, 2, 4)) * np.arange(24.0).reshape(3, 2, 4), x)
    check_fd(lambda x: np.reshape(x, (2, 6)) ** 2, x)
    check_fd(lambda x: np.transpose(x) * np.arange(12.0).reshape(4, 3), x)
    check_fd(lambda x: x[::2, 1::2] * 3, x)
    check_fd(lambda x: x.T[1:, ::-1] ** 2, x)
    check_fd(lambda x: np.concatenate([x, x ** 2, x[:1]], axis=0), x)
    check_fd(lambda x: np.squeeze(x[:1])[None] * np.expand_dims(x[1], 0), x)
    check_fd(lambda x: np.flip(x, 1) * x, x)
    check_fd(lambda x: np.stack([x, 2 * x], axis=1), x)


def test_pad_rule_with_negative_and_interior_padding():
    x = _rng(5).standard_normal((4, 3))
    check_fd(lambda x, v: lax.pad(x, v, [(1, -1, 1), (-1, 2, 0)]), x, np.float64(0.7))
    check_fd(lambda x: np.pad(x, ((1, 2), (0, 1))) ** 2, x)


def test_reductions_vs_finite_differences():
    x = _rng(6).uniform(0.5, 1.5, size=(3, 4))
    check_fd(lambda x: np.sum(x ** 2, axis=0), x)
    check_fd(lambda x: np.mean(x, axis=1) * np.var(x) + np.std(x, axis=0).sum(), x)
    check_fd(lambda x: np.prod(x, axis=1), x)
    check_fd(lambda x: np.prod(x), x)
    check_fd(lambda x: np.max(x, axis=0) + np.min(x, axis=1).sum(), x)
    check_fd(lambda x: np.cumsum(x, axis=1) * np.cumprod(x, axis=0), x)
    check_fd(lambda x: lax.cumsum(x, axis=0, reverse=True) + lax.cumprod(x, axis=1, reverse=True), x)
    check_fd(lambda x: lax.cummax(x, axis=1) * lax.cummin(x, axis=0, reverse=True), x)


def test_reduce_prod_with_zeros():
    x = np.array([2.0, 0.0, 3.0, 4.0])
    np.testing.assert_array_equal(grad(lambda x: np.prod(x))(x), [0, 24, 0, 0])
    x2 = np.array([0.0, 0.0, 3.0])
    np.testing.assert_array_equal(grad(lambda x: np.prod(x))(x2), [0, 0, 0])
    # d/dx1 sum(cumprod(x)) = x0 + x0*x2 + x0*x2*x3 = 2 + 6 + 24
    np.testing.assert_array_equal(grad(lambda x: np.sum(np.cumprod(x)))(x), [1, 32, 0, 0])


def test_dot_general_rules():
    rng = _rng(7)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    check_fd(lambda a, b: a @ b, a, b)
    check_fd(lambda a: a @ a.T, a)
    v = rng.standard_normal(4)
    check_fd(lambda a, v: (a @ v, v @ v), a, v)
    x, y = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 3))
    check_fd(lambda x, y: jnp.einsum("bij,bjk->bik", x, y), x, y)
    check_fd(lambda x, y: jnp.einsum("bij,bji->b", x, y), x, y)
    check_fd(lambda x, y: np.tensordot(x, y, axes=([1, 2], [2, 1])), x, y)
    check_fd(lambda x, y: lax.dot_general(x, y, (((0,), (0,)), ((2,), (1,)))), x, y)


def test_call_of_non_inlined_jit():
    inner = tracejit.jit(lambda x, w: np.tanh(x @ w), inline=False)
    w = _rng(8).standard_normal((3, 2))
    x = _rng(9).standard_normal((4, 3))
    check_fd(lambda x, w: inner(x, w) * 2, x, w)


# --------------------------------------------------------------------------- jit and pytrees

def _mlp_loss(params, x, labels):
    h = np.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(logp * labels, axis=1))


def _mlp_data():
    rng = _rng(10)
    params = {"w1": rng.standard_normal((5, 8)) * 0.5, "b1": rng.standard_normal(8) * 0.1,
              "w2": rng.standard_normal((8, 3)) * 0.5, "b2": rng.standard_normal(3) * 0.1}
    x = rng.standard_normal((6, 5))
    labels = np.eye(3)[rng.integers(0, 3, 6)]
    return params, x, labels


def test_softmax_cross_entropy_mlp_gradient():
    params, x, labels = _mlp_data()
    g = grad(_mlp_loss)(params, x, labels)
    assert set(g) == set(params) and all(g[k].shape == params[k].shape for k in params)
    check_fd(lambda p: _mlp_loss(p, x, labels), params)
    for k in params:  # a few coordinates, one at a time
        idx = (0,) * params[k].ndim
        e = {kk: np.zeros_like(v) for kk, v in params.items()}
        e[k][idx] = 1
        fd = (_mlp_loss(_tree_add(params, e, EPS), x, labels)
              - _mlp_loss(_tree_add(params, e, -EPS), x, labels)) / (2 * EPS)
        assert g[k][idx] == pytest.approx(fd, rel=1e-6)


def test_jit_of_grad_equals_grad_and_is_one_program():
    params, x, labels = _mlp_data()
    g_eager = grad(_mlp_loss)(params, x, labels)
    g_jit = tracejit.jit(grad(_mlp_loss))(params, x, labels)
    for k in params:
        np.testing.assert_allclose(g_jit[k], g_eager[k], rtol=1e-12)
    prog = tracejit.make_jaxpr(grad(_mlp_loss))(params, x, labels)
    assert "call" not in {e.primitive.name for e in prog.eqns}
    # grad(jit(f)) too
    g2 = grad(tracejit.jit(_mlp_loss))(params, x, labels)
    for k in params:
        np.testing.assert_allclose(g2[k], g_eager[k], rtol=1e-12)


def test_layernorm_forward_backward():
    rng = _rng(11)
    x = rng.standard_normal((4, 6))
    gamma, beta = rng.standard_normal(6), rng.standard_normal(6)

    def layernorm(x, gamma, beta):
        mu = np.mean(x, axis=-1, keepdims=True)
        var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * gamma + beta

    check_fd(layernorm, x, gamma, beta)
    w = rng.standard_normal((4, 6))
    check_fd(lambda x, g, b: np.sum(layernorm(x, g, b) * w), x, gamma, beta)
    # The gradient of a layernorm output sum w.r.t. x is zero along each row.
    gx = grad(lambda x: np.sum(layernorm(x, gamma, np.zeros(6)) * 0 + layernorm(x, np.ones(6), beta)))(x)
    np.testing.assert_allclose(gx, 0, atol=1e-9)


def test_pytree_argnums_has_aux_value_and_grad():
    def f(p, scale):
        return scale * np.sum(p[0] ** 2) + np.sum(p[1]["b"]), {"norm": np.sum(p[0])}
    p = [np.array([1.0, 2.0]), {"b": np.array([3.0])}]
    (val, aux), g = value_and_grad(f, has_aux=True)(p, 2.0)
    assert float(val) == pytest.approx(13.0) and float(aux["norm"]) == pytest.approx(3.0)
    np.testing.assert_allclose(g[0], [4.0, 8.0])
    np.testing.assert_allclose(g[1]["b"], [1.0])
    gp, gs = grad(lambda p, s: f(p, s)[0], argnums=(0, 1))(p, 2.0)
    assert float(gs) == pytest.approx(5.0)
    g_only, aux2 = grad(f, has_aux=True)(p, 2.0)
    np.testing.assert_allclose(g_only[0], [4.0, 8.0])
    assert float(grad(lambda a, b: a * b, argnums=-1)(3.0, 4.0)) == 3.0


def test_vjp_jvp_linearize_linear_transpose():
    x = np.array([0.1, 0.2, 0.3])
    out, f_vjp = vjp(lambda x: np.sin(x) * 2, x)
    (ct,) = f_vjp(np.ones(3))
    np.testing.assert_allclose(ct, 2 * np.cos(x))
    y, t = jvp(lambda x: np.exp(x), (x,), (np.ones(3),))
    np.testing.assert_allclose(t, np.exp(x))
    y, f_jvp = linearize(lambda x: x ** 2, x)
    np.testing.assert_allclose(f_jvp(np.ones(3)), 2 * x)
    np.testing.assert_allclose(f_jvp(2 * np.ones(3)), 4 * x)
    a = _rng(12).standard_normal((2, 3))
    (xt,) = linear_transpose(lambda v: a @ v, x)(np.array([1.0, -1.0]))
    np.testing.assert_allclose(xt, a.T @ np.array([1.0, -1.0]))


def test_jacobian_pytrees_and_argnums():
    def f(x, y):
        return {"s": x * y[0], "t": np.sum(x) * y}
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])
    for jac in (jacfwd, jacrev):
        j = jac(f, argnums=(0, 1))(x, y)
        assert j["s"][0].shape == (2, 2) and j["s"][1].shape == (2, 3) and j["t"][1].shape == (3, 3)
        np.testing.assert_allclose(j["s"][0], np.eye(2) * 3)
        np.testing.assert_allclose(j["t"][1], np.eye(3) * 3)


def _jacobian_by_columns(f, x, eps=1e-6):
    """Central differences, one input element at a time: the reference for the vmapped Jacobians."""
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        e = e.reshape(x.shape)
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    return np.stack(cols, axis=-1).reshape(np.shape(f(x)) + x.shape)


@pytest.mark.parametrize("jac", [jacfwd, jacrev])
def test_vmapped_jacobians_match_differences_across_shapes(jac):
    """jacfwd/jacrev push every basis vector through one vmapped JVP / backward pass."""
    import tracejit.numpy as jnp
    x = _rng(5).standard_normal((2, 3))
    f = lambda v: jnp.tanh(v @ v.T) * v[:, :1] + jnp.sort(v, axis=1)[:, ::-1].sum()  # noqa: E731
    np.testing.assert_allclose(jac(f)(x), _jacobian_by_columns(f, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tracejit.jit(jac(f))(x), jac(f)(x), rtol=1e-12, atol=1e-14)
    # scalar in / scalar out, empty input, float32 stays float32
    assert jac(lambda v: v ** 3)(np.float64(2.0)) == pytest.approx(12.0)
    assert jac(lambda v: jnp.sin(v) * 2)(np.zeros((0, 2))).shape == (0, 2, 0, 2)
    j32 = jac(lambda v: jnp.exp(v))(np.ones(3, np.float32))
    assert j32.dtype == np.float32
    np.testing.assert_allclose(j32, np.diag(np.full(3, np.e, np.float32)), rtol=1e-6)
    # has_aux and an integer argument (float0 block, jacrev only)
    j, aux = jac(lambda v: (v * 2, v.sum()), has_aux=True)(np.arange(2.0))
    np.testing.assert_allclose(j, 2 * np.eye(2))
    assert aux == 1.0
    if jac is jacrev:
        jj = jac(lambda v, k: v * k, argnums=(0, 1), allow_int=True)(np.ones(2), np.int64(3))
        assert jj[1].dtype == float0 and jj[1].shape == (2,)


def test_vmapped_jacobian_is_one_batched_program():
    import tracejit.numpy as jnp
    x = np.linspace(-1, 1, 50)
    program = tracejit.make_jaxpr(jacfwd(lambda v: jnp.sin(v) * v.sum()))(x)
    assert len(program.eqns) < 40, len(program.eqns)     # not one JVP per input element
    program = tracejit.make_jaxpr(jacrev(lambda v: jnp.sin(v) * v.sum()))(x)
    assert len(program.eqns) < 40, len(program.eqns)


def test_holomorphic_jacobian_of_complex_function():
    z = np.array([1 + 2j, -0.5 + 0.25j])
    for jac in (jacfwd, jacrev):
        np.testing.assert_allclose(jac(lambda v: v ** 2, holomorphic=True)(z), np.diag(2 * z), rtol=1e-12)


# --------------------------------------------------------------------------- custom rules

def test_custom_vjp_clip_gradient_and_nondiff_argnums():
    @custom_vjp
    def clip_gradient(lo, hi, x):
        return x

    def fwd(lo, hi, x):
        return x, None

    def bwd(lo, hi, res, g):
        return (np.clip(g, lo, hi),)
    clip_gradient = custom_vjp(clip_gradient.fun, nondiff_argnums=(0, 1))
    clip_gradient.defvjp(fwd, bwd)
    assert float(grad(lambda x: 5 * clip_gradient(-1.0, 1.0, x))(2.0)) == 1.0
    assert float(tracejit.jit(grad(lambda x: 5 * clip_gradient(-1.0, 2.0, x)))(2.0)) == 2.0
    assert float(clip_gradient(-1.0, 1.0, 3.0)) == 3.0  # eager: the primal
    # under jit without grad: the primal program runs
    assert float(tracejit.jit(lambda x: clip_gradient(-1.0, 1.0, x) * 2)(3.0)) == 6.0


def test_custom_vjp_residuals_pytrees_and_jvp_error():
    @custom_vjp
    def f(x, y):
        return np.sin(x) * y

    def f_fwd(x, y):
        return f(x, y), (np.cos(x), np.sin(x), y)

    def f_bwd(res, g):
        cos_x, sin_x, y = res
        return (cos_x * g * y, sin_x * g)
    f.defvjp(f_fwd, f_bwd)
    x, y = np.array([0.5, 1.0]), np.array([2.0, 3.0])
    gx, gy = grad(lambda x, y: np.sum(f(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, np.cos(x) * y)
    np.testing.assert_allclose(gy, np.sin(x))
    with pytest.raises(TypeError, match="forward-mode"):
        jvp(lambda x: f(x, y), (x,), (x,))
    # grad of grad differentiates the bwd rule
    assert float(grad(grad(lambda x: f(x, 1.0)))(0.3)) == pytest.approx(-np.sin(0.3))


def test_custom_jvp_stable_log1pexp_and_defjvps():
    @custom_jvp
    def log1pexp(x):
        return np.log(1.0 + np.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return log1pexp(x), t * (1 - 1 / (1 + np.exp(x)))
    with np.errstate(over="ignore"):
        assert float(grad(log1pexp)(100.0)) == 1.0
        assert float(tracejit.jit(grad(log1pexp))(100.0)) == 1.0
    assert float(jvp(log1pexp, (0.0,), (2.0,))[1]) == pytest.approx(1.0)
    xs = np.array([-1.0, 0.5, 2.0])
    np.testing.assert_allclose(jacrev(log1pexp)(xs), np.diag(1 / (1 + np.exp(-xs))))

    @custom_jvp
    def f(x, y):
        return np.sin(x) * y
    f.defjvps(lambda t, ans, x, y: np.cos(x) * t * y, lambda t, ans, x, y: np.sin(x) * t)
    gx, gy = grad(f, argnums=(0, 1))(0.5, 2.0)
    assert float(gx) == pytest.approx(np.cos(0.5) * 2) and float(gy) == pytest.approx(np.sin(0.5))


def test_stop_gradient():
    assert float(grad(lambda x: x * stop_gradient(x))(3.0)) == 3.0
    assert float(grad(grad(lambda x: stop_gradient(x) * x ** 2))(3.0)) == 6.0
    np.testing.assert_array_equal(stop_gradient(np.ones(2)), np.ones(2))
    out = tracejit.jit(lambda x: stop_gradient({"a": x})["a"] + 1)(np.zeros(2))
    np.testing.assert_array_equal(out, np.ones(2))
    jac = jacfwd(lambda x: x + stop_gradient(x ** 2))(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(jac, np.eye(2))


@pytest.mark.parametrize("policy", [None, checkpoint_policies.dots_saveable, checkpoint_policies.everything_saveable])
def test_checkpoint_gives_the_same_gradient(policy):
    params, x, labels = _mlp_data()

    def block(p, x):
        return np.tanh(np.tanh(x @ p["w1"] + p["b1"]) @ p["w1"].T)

    def loss(p, remat_it):
        b = checkpoint(block, policy=policy) if remat_it else block
        return _mlp_loss(p, b(p, x), labels)
    g_ref = grad(loss)(params, False)
    g_ck = grad(loss)(params, True)
    g_jit = tracejit.jit(grad(lambda p: loss(p, True)))(params)
    for k in params:
        np.testing.assert_allclose(g_ck[k], g_ref[k], rtol=1e-12)
        np.testing.assert_allclose(g_jit[k], g_ref[k], rtol=1e-12)


def test_checkpoint_recomputes_in_backward():
    f = remat(lambda x: np.sin(np.sin(x)))
    prog = tracejit.make_jaxpr(grad(f))(0.5)
    names = [e.primitive.name for e in prog.eqns]
    # forward stays a checkpoint call; the backward recomputes the inner sin
    assert names.count("checkpoint") == 1 and names.count("sin") >= 2
    assert float(grad(f)(0.5)) == pytest.approx(np.cos(np.sin(0.5)) * np.cos(0.5))
    assert float(grad(grad(f))(0.5)) == pytest.approx(
        float(grad(grad(lambda x: np.sin(np.sin(x))))(0.5)), rel=1e-12)
    assert float(checkpoint(lambda x, n: x * n, static_argnums=1)(2.0, 3)) == 6.0


# --------------------------------------------------------------------------- complex

def test_complex_conventions_match_jax():
    z = np.complex128(3 + 4j)
    assert complex(grad(lambda z: np.abs(z) ** 2)(z)) == pytest.approx(6 - 8j)
    assert complex(grad(lambda z: z ** 2, holomorphic=True)(z)) == pytest.approx(2 * z)
    # L = Re((1+2j) z) = a - 2b; JAX's cotangent is dL/da - i dL/db
    assert complex(grad(lambda z: np.real(z * (1 + 2j)))(z)) == pytest.approx(1 + 2j)
    assert complex(grad(lambda z: np.imag(z))(z)) == pytest.approx(-1j)


# --------------------------------------------------------------------------- errors and integer inputs

def test_grad_of_non_scalar_output_raises():
    with pytest.raises(TypeError, match="grad requires scalar output"):
        grad(lambda x: x * 2)(np.ones(3))
    with pytest.raises(TypeError, match="grad requires scalar output"):
        grad(lambda x: (x, x))(1.0)


def test_grad_of_integer_input_raises_and_allow_int():
    with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs"):
        grad(lambda x: x * 2.0)(3)
    with pytest.raises(TypeError, match="int32"):
        grad(lambda x: np.sum(x * 2.0))(np.arange(3, dtype=np.int32))
    g = grad(lambda x: x * 2.0, allow_int=True)(3)
    assert g.dtype == float0 and g.shape == ()
    _, f_vjp = vjp(lambda x, n: x * n, 2.0, np.int64(3))
    gx, gn = f_vjp(1.0)
    assert float(gx) == 3.0 and gn.dtype == float0
    with pytest.raises(TypeError, match="real-valued outputs"):
        grad(lambda x: (x > 0).astype(np.int32).sum())(np.ones(2))
    with pytest.raises(TypeError, match="requires at least 2 positional"):
        grad(lambda x, y: x, argnums=1)(1.0)


def test_jvp_and_vjp_argument_checks():
    with pytest.raises(TypeError, match="tuples or lists"):
        jvp(np.sin, 1.0, 1.0)
    with pytest.raises(ValueError, match="shapes"):
        jvp(np.sin, (np.ones(2),), (np.ones(3),))
    with pytest.raises(TypeError, match="dtypes must be equal"):
        jvp(np.sin, (np.ones(2),), (np.ones(2, np.float32),))
    y, t = jvp(lambda x, n: x * n, (2.0, 3), (1.0, np.zeros((), float0)))
    assert float(t) == 3.0
    _, f_vjp = vjp(np.sin, np.ones(2))
    with pytest.raises(ValueError, match="Shape of cotangent"):
        f_vjp(np.ones(3))


def test_while_loop_reverse_mode_error_or_forward():
    from tracejit.core.primitive import abstract_eval_rules
    if "while" not in {p.name for p in abstract_eval_rules} or not hasattr(lax, "while_loop"):
        pytest.skip("while_loop not available")

    def f(x):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))[1]
    with pytest.raises((TypeError, NotImplementedError), match="fori_loop|scan"):
        grad(f)(1.5)
    assert float(jvp(f, (1.5,), (1.0,))[1]) == 8.0


# --------------------------------------------------------------------------- control flow, indexing, sort, linalg

def test_cond_both_modes():
    def f(x, p):
        return lax.cond(p > 0, lambda x: np.sin(x) * x, lambda x: np.cos(x) + x ** 2, x)
    x = np.array([0.3, -1.2, 0.8])
    for p in (1.0, -1.0):
        check_fd(lambda x: f(x, p), x)
    np.testing.assert_allclose(grad(lambda x: np.sum(f(x, -1.0)))(x), -np.sin(x) + 2 * x)
    # switch with an integer index and a closed-over array
    w = np.array([2.0, 3.0, 4.0])
    g = lambda x, i: lax.switch(i, [lambda x: x * w, lambda x: x ** 3, lambda x: x * 0.0], x)  # noqa: E731
    for i in range(3):
        check_fd(lambda x: g(x, i), x)


def test_scan_fori_loop_reverse_and_forward_mode():
    w = np.array([[0.5, -0.3], [0.2, 0.9]])

    def rnn(h0, xs):
        def step(h, x):
            h = np.tanh(h @ w + x)
            return h, h * 2
        return lax.scan(step, h0, xs)
    h0, xs = np.array([0.1, -0.2]), _rng(13).standard_normal((5, 2))
    check_fd(rnn, h0, xs)
    check_fd(lambda h0, xs: lax.scan(lambda h, x: (h * x, h + x), h0, xs, reverse=True), h0, xs)
    # fori_loop with static bounds is a scan: reverse mode works
    f = lambda x: lax.fori_loop(0, 4, lambda i, c: c * x + i, x)  # noqa: E731
    check_fd(f, np.array([0.7, 1.1]))
    assert float(grad(grad(lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, 1.0)))(2.0)) == pytest.approx(12.0)
    # gradient w.r.t. a closed-over constant of the body
    check_fd(lambda w_: lax.scan(lambda h, x: (np.tanh(h @ w_ + x), None), h0, xs)[0], w)


def _at(x):
    from tracejit.numpy.indexing import IndexUpdateHelper
    return IndexUpdateHelper(x)   # x.at for NumPy arrays too (finite differences run eagerly)


def test_indexing_rules():
    x = _rng(14).standard_normal((5, 3))
    idx = np.array([4, 0, 0, 2])
    check_fd(lambda x: x[idx] * 2, x)                      # gather, repeated indices
    check_fd(lambda x: x[1:4, 1] + x[-1], x)
    check_fd(lambda x: jnp.take_along_axis(x, np.argsort(x, axis=0), axis=0), x)
    check_fd(lambda x, u: _at(x)[idx].set(u), x, _rng(15).standard_normal((4, 3)))   # last update wins
    check_fd(lambda x, u: _at(x)[idx].add(u), x, _rng(16).standard_normal((4, 3)))
    check_fd(lambda x, u: _at(x)[np.array([1, 3])].max(u), x, _rng(17).standard_normal((2, 3)))
    check_fd(lambda x: _at(x)[np.array([0, 2])].multiply(3.0), x)
    check_fd(lambda x: lax.dynamic_slice(x, (np.int64(1), np.int64(1)), (3, 2)) ** 2, x)
    check_fd(lambda x, u: lax.dynamic_update_slice(x, u, (np.int64(2), np.int64(0))), x, np.ones((2, 3)))
    g = grad(lambda x, u: np.sum(_at(x)[np.array([0, 0])].set(u) * 2), argnums=(0, 1))(np.ones(3), np.ones(2))
    np.testing.assert_array_equal(g[0], [0, 2, 2])
    np.testing.assert_array_equal(g[1], [0, 2])   # only the winning (last) update gets the gradient


def test_sort_rules():
    x = np.array([0.3, -1.0, 2.0, 0.1])
    check_fd(lambda x: np.sort(x) * np.arange(1.0, 5.0), x)
    np.testing.assert_array_equal(grad(lambda x: np.sort(x)[0])(x), [0, 1, 0, 0])
    check_fd(lambda x: jnp.sort(x.reshape(2, 2), axis=0), x)


def test_linalg_rules():
    rng = _rng(18)
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((3, 2))
    check_fd(lambda a, b: jnp.linalg.solve(a, b), a, b)
    check_fd(lambda a: jnp.linalg.inv(a), a)
    check_fd(lambda a: jnp.linalg.det(a), a)
    check_fd(lambda a: jnp.linalg.slogdet(a)[1], a)
    spd = a @ a.T + np.eye(3)
    sym = lambda m: (m + m.T) / 2  # noqa: E731  (the rules assume symmetric inputs, as JAX)
    check_fd(lambda m: jnp.linalg.cholesky(sym(m)), spd)
    check_fd(lambda m: jnp.linalg.eigh(sym(m))[0], spd)
    check_fd(lambda m: np.abs(jnp.linalg.eigh(sym(m))[1][:, 0]), spd)   # eigenvectors up to sign
    np.testing.assert_allclose(grad(lambda a: jnp.linalg.slogdet(a)[1])(a), np.linalg.inv(a).T, rtol=1e-10)
