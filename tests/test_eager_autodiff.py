"""Autodiff outside ``jit`` runs on concrete values, as in JAX (issue 14, item 4).

``grad`` / ``vjp`` / ``jvp`` / ``value_and_grad`` / ``jacfwd`` / ``jacrev`` / ``hessian`` /
``linearize`` and ``custom_jvp`` / ``custom_vjp`` rules applied eagerly may use Python control
flow on values (``if x > 0``, ``while err > tol``, ``int(n)``, ``float(x)``, ``x.item()``...):
the traced program records the path taken. Under ``jit`` (and on vmapped values) the same code
still raises the concretization errors.

Every derivative is checked against the analytic one or central finite differences in float64,
and against JAX itself when it is importable.
"""
import math

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import (ConcretizationTypeError, TracerArrayConversionError, TracerBoolConversionError,
                      TracerIntegerConversionError, grad, hessian, jacfwd, jacrev, jit, jvp, linearize,
                      value_and_grad, vjp, vmap)


# --------------------------------------------------------------------------- functions under test
# Written against a NumPy-like module ``xp`` so the same code runs with NumPy (finite
# differences), with tracejit (NumPy functions dispatch on tracers) and with jax.numpy.

def piecewise(x, xp=np):
    if x > 0:
        return xp.sin(x) * x
    return x ** 3


def newton_sqrt(a, xp=np):
    x = a
    while abs(x * x - a) > 1e-13:
        x = x - (x * x - a) / (2 * x)
    return x


def cubic_root(a, xp=np):
    """The root of x**3 + x - a by Newton's method: dx/da = 1 / (3 x**2 + 1)."""
    x = a * 0.0 + 1.0
    while abs(x ** 3 + x - a) > 1e-13:
        x = x - (x ** 3 + x - a) / (3 * x ** 2 + 1)
    return x


def fixed_point(a, xp=np):
    """x = a cos(x) by iteration while the step is large: dx/da = cos x / (1 + a sin x)."""
    x = a
    err = 1.0
    while err > 1e-14:
        new = a * xp.cos(x)
        err = abs(new - x)
        x = new
    return x


def table_lookup(x, xp=np):
    coeffs = [1.0, 2.0, 3.0, 4.0]
    return coeffs[int(xp.floor(x))] * x ** 2


def index_lookup(x, xp=np):
    coeffs = [1.0, 2.0, 3.0, 4.0]
    return coeffs[(x * 1).astype(int)] * xp.exp(x)        # __index__ of an integer value


def range_loop(x, xp=np):
    total = x * 0.0
    for k in range((x * 2).astype(int)):                   # range(n) with a computed n
        total = total + xp.sin(k * x)
    return total


def item_branch(v, xp=np):
    if v[0].item() > 1.0:
        return xp.sum(v ** 2)
    return xp.sum(xp.sin(v))


def any_branch(v, xp=np):
    if (v > 1).any():
        return xp.sum(v * v * v)
    return xp.sum(v)


def vector_branch(v, xp=np):
    scale = 1.0 if v[0] > 0 else 2.0
    return v * v * scale


CASES = [
    (piecewise, [1.3, -0.7]),
    (newton_sqrt, [2.0, 0.3]),
    (cubic_root, [3.0, 10.0]),
    (fixed_point, [0.5, 0.9]),
    (table_lookup, [0.5, 2.5]),
    (index_lookup, [1.5, 3.2]),
    (range_loop, [1.7, 2.4]),
]
VECTOR_CASES = [
    (item_branch, [np.array([1.5, 0.5]), np.array([0.5, 2.0])]),
    (any_branch, [np.array([1.5, 0.5]), np.array([0.5, 0.2])]),
]


def central_diff(f, x, eps=1e-6):
    x = np.asarray(x, np.float64)
    if x.ndim == 0:
        return (f(x + eps) - f(x - eps)) / (2 * eps)
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def analytic(f, x):
    """Closed forms, where there is one (else None)."""
    if f is piecewise:
        return math.cos(x) * x + math.sin(x) if x > 0 else 3 * x ** 2
    if f is newton_sqrt:
        return 0.5 / math.sqrt(x)
    if f is cubic_root:
        r = cubic_root(x)
        return 1 / (3 * r ** 2 + 1)
    if f is fixed_point:
        r = fixed_point(x)
        return math.cos(r) / (1 + x * math.sin(r))
    if f is table_lookup:
        return 2 * [1.0, 2.0, 3.0, 4.0][int(math.floor(x))] * x
    return None


# --------------------------------------------------------------------------- eager: values are concrete

@pytest.mark.parametrize("f,points", CASES, ids=[c[0].__name__ for c in CASES])
def test_grad_with_python_control_flow(f, points):
    g = grad(f)                       # one function object: the path is traced again at each call
    for x in points:
        got = g(x)
        np.testing.assert_allclose(got, central_diff(f, x), rtol=1e-6, atol=1e-8)
        want = analytic(f, x)
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("f,points", VECTOR_CASES, ids=[c[0].__name__ for c in VECTOR_CASES])
def test_grad_vector_control_flow(f, points):
    for x in points:
        np.testing.assert_allclose(grad(f)(x), central_diff(f, x), rtol=1e-6, atol=1e-8)


def test_both_branches_of_one_function_object():
    g = grad(piecewise)
    assert float(g(2.0)) == pytest.approx(math.cos(2.0) * 2.0 + math.sin(2.0), rel=1e-12)
    assert float(g(-2.0)) == pytest.approx(12.0, rel=1e-12)
    assert float(g(3.0)) == pytest.approx(math.cos(3.0) * 3.0 + math.sin(3.0), rel=1e-12)


def test_value_and_grad_has_aux_with_python_values():
    def f(a):
        x, n = a, 0
        while abs(x * x - a) > 1e-13:
            x = x - (x * x - a) / (2 * x)
            n += 1
        return x * 3.0, {"iterations": n, "residual": float(abs(x * x - a))}
    (value, aux), g = value_and_grad(f, has_aux=True)(2.0)
    assert float(value) == pytest.approx(3 * math.sqrt(2.0), rel=1e-12)
    assert int(aux["iterations"]) > 2                      # a Python number, returned as an array scalar
    assert float(aux["residual"]) <= 1e-13
    assert float(g) == pytest.approx(1.5 / math.sqrt(2.0), rel=1e-9)
    g2, aux2 = grad(f, has_aux=True)(9.0)
    assert float(g2) == pytest.approx(0.5, rel=1e-9)
    assert aux2["iterations"] > 2


def test_grad_grad_with_branches():
    d2 = grad(grad(piecewise))
    assert float(d2(1.3)) == pytest.approx(2 * math.cos(1.3) - 1.3 * math.sin(1.3), rel=1e-10)
    assert float(d2(-0.7)) == pytest.approx(6 * -0.7, rel=1e-10)
    # Third derivative, and the inner function branching on the outer variable (a closure).
    assert float(grad(grad(grad(piecewise)))(-0.7)) == pytest.approx(6.0, rel=1e-10)

    def outer(y):
        return grad(lambda x: x * x * y if y > 1 else x * y)(y)      # 2y^2 or y
    assert float(grad(outer)(2.0)) == pytest.approx(8.0, rel=1e-12)
    assert float(grad(outer)(0.5)) == pytest.approx(1.0, rel=1e-12)


def test_newton_under_grad_of_grad():
    # d^2/da^2 sqrt(a) = -a^(-3/2) / 4, through the unrolled Newton loop.
    assert float(grad(grad(newton_sqrt))(2.0)) == pytest.approx(-0.25 * 2.0 ** -1.5, rel=1e-6)


def test_jacobians_and_hessian_with_branches():
    x = np.array([1.0, 2.0])
    want = np.diag(2 * x)
    np.testing.assert_allclose(jacfwd(vector_branch)(x), want, rtol=1e-12)
    np.testing.assert_allclose(jacrev(vector_branch)(x), want, rtol=1e-12)
    np.testing.assert_allclose(jacrev(vector_branch)(-x), np.diag(-4 * x), rtol=1e-12)

    def h(v):
        return np.sum(v ** 3) if v[0] > 0 else np.sum(v ** 2)
    np.testing.assert_allclose(hessian(h)(x), np.diag(6 * x), rtol=1e-12)
    np.testing.assert_allclose(hessian(h)(-x), 2 * np.eye(2), rtol=1e-12)
    # Hessian through a Newton loop: d^2/da^2 of the cubic root, against finite differences
    # of the (analytic) first derivative.
    d2 = hessian(cubic_root)(3.0)
    np.testing.assert_allclose(d2, central_diff(lambda a: analytic(cubic_root, float(a)), 3.0), rtol=1e-5)


def test_vjp_jvp_linearize_with_branches():
    for x in (1.3, -0.7):
        want = analytic(piecewise, x)
        out, f_vjp = vjp(piecewise, x)
        assert float(out) == pytest.approx(piecewise(x), rel=1e-12)
        assert float(f_vjp(1.0)[0]) == pytest.approx(want, rel=1e-12)
        out, tan = jvp(piecewise, (x,), (2.0,))
        assert float(tan) == pytest.approx(2 * want, rel=1e-12)
        out, f_jvp = linearize(piecewise, x)
        assert float(out) == pytest.approx(piecewise(x), rel=1e-12)
        assert float(f_jvp(3.0)) == pytest.approx(3 * want, rel=1e-12)
    _, tan = jvp(newton_sqrt, (4.0,), (1.0,))
    assert float(tan) == pytest.approx(0.25, rel=1e-9)


def test_conversions_give_values_without_derivative():
    # float(x) / x.item() / x.tolist() give the current value as a Python number: a constant.
    def f(v):
        assert isinstance(float(v[0]), float) and isinstance(v.tolist(), list)
        return v[0] * float(v[1]) + v[1] * v[0].item() + v[0] * complex(v[1]).real
    np.testing.assert_allclose(grad(f)(np.array([3.0, 4.0])), [8.0, 3.0], rtol=1e-12)

    def g(x):
        n = int(x * 2)                       # int() of a float value
        assert isinstance(n, int) and n == 5
        return x ** n
    assert float(grad(g)(2.5)) == pytest.approx(5 * 2.5 ** 4, rel=1e-12)


def test_asarray_of_an_integer_value_converts_but_a_differentiated_one_raises():
    def masked_sum(v):
        mask = np.asarray(v > 0)             # boolean: no derivative to lose
        assert isinstance(mask, np.ndarray) and mask.dtype == bool
        return np.sum(v[mask] ** 2)
    np.testing.assert_allclose(grad(masked_sum)(np.array([1.0, -2.0, 3.0])), [2.0, 0.0, 6.0])
    with pytest.raises(TracerArrayConversionError, match="derivative"):
        grad(lambda x: np.sin(np.asarray(x)))(1.0)


def test_repr_shows_the_value():
    seen = []
    grad(lambda x: (seen.append(repr(x)), x * 2)[1])(1.5)
    assert "value=array(1.5)" in seen[0]


def test_jit_inside_eager_grad_stays_abstract():
    g = jit(lambda y: y * y)
    s = jit(np.sin)

    def f(x):
        return g(x) * (2.0 if s(x) > 0 else 3.0)   # the jitted results are concrete outside jit
    assert float(grad(f)(1.0)) == pytest.approx(4.0)
    assert float(grad(f)(-1.0)) == pytest.approx(-6.0)
    inner = jit(piecewise)
    with pytest.raises(TracerBoolConversionError):
        grad(lambda x: inner(x))(1.0)                # inside jit(g) values are abstract


def test_lax_control_flow_bodies_stay_abstract_under_eager_grad():
    # As in JAX: a lax.cond branch is traced abstractly; values computed in it are abstract.
    def f(x):
        return tracejit.lax.cond(True, lambda y: y * (2.0 if y > 0 else 3.0), lambda y: y, x)
    with pytest.raises(TracerBoolConversionError):
        grad(f)(1.0)


# --------------------------------------------------------------------------- custom rules

@tracejit.custom_jvp
def relu_like(x):
    return jnp.where(x > 0, x, 0.0)


@relu_like.defjvp
def _relu_like_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return relu_like(x), (t * 1.0 if x > 0 else t * 0.0)      # branches on the primal value


@tracejit.custom_vjp
def scaled(x):
    return x * 2.0 if x > 0 else x * 3.0                       # the primal branches too


def _scaled_fwd(x):
    return scaled(x), x


def _scaled_bwd(r, ct):
    return ((2.0 if r > 0 else 3.0) * ct,)                    # branches on the residual


scaled.defvjp(_scaled_fwd, _scaled_bwd)


def test_custom_jvp_rule_with_control_flow():
    assert float(grad(relu_like)(2.0)) == 1.0
    assert float(grad(relu_like)(-2.0)) == 0.0
    assert float(jvp(relu_like, (2.0,), (3.0,))[1]) == 3.0
    assert float(jacfwd(relu_like)(2.0)) == 1.0
    assert float(jacrev(relu_like)(2.0)) == 1.0
    sq = lambda x: relu_like(x) * x                              # x**2 for x > 0
    assert float(grad(grad(sq))(2.0)) == pytest.approx(2.0)
    assert float(hessian(sq)(2.0)) == pytest.approx(2.0)
    assert float(jacfwd(jacfwd(sq))(2.0)) == pytest.approx(2.0)
    assert float(jacrev(jacfwd(sq))(2.0)) == pytest.approx(2.0)
    assert float(grad(lambda y: jacfwd(lambda x: relu_like(x) * y * x)(y))(2.0)) == pytest.approx(8.0)
    # The rule's primal is computed inside jacfwd's / jacrev's vmapped pass: still concrete.
    for jac in (jacfwd, jacrev):
        assert float(jac(lambda x: relu_like(x * 2.0))(1.0)) == 2.0
        assert float(jac(lambda x: relu_like(x * 2.0))(-1.0)) == 0.0
    assert float(hessian(lambda x: relu_like(x * 2.0) ** 2)(1.0)) == pytest.approx(8.0)
    assert float(jacrev(lambda x: scaled(x * 2.0))(1.0)) == pytest.approx(4.0)


def test_custom_vjp_rules_with_control_flow():
    assert float(scaled(2.0)) == 4.0
    assert float(grad(scaled)(2.0)) == 2.0
    assert float(grad(scaled)(-2.0)) == 3.0
    assert float(jacrev(scaled)(-2.0)) == 3.0
    assert float(grad(lambda y: grad(lambda x: scaled(x) * y)(y))(-2.0)) == 3.0
    assert float(jacrev(jacrev(lambda x: scaled(x) * x))(2.0)) == pytest.approx(4.0)
    assert float(value_and_grad(lambda x: scaled(x) ** 2)(1.5)[1]) == pytest.approx(2 * 3.0 * 2.0)


# --------------------------------------------------------------------------- under jit / vmap: abstract

def test_same_functions_raise_under_jit():
    # Without autograph (tests/test_autograph.py), Python control flow on traced values raises;
    # with it, the while loops compile and give the eager values, and an `if` holding a
    # `return` (not convertible) still raises.
    with pytest.raises(TracerBoolConversionError):
        jit(piecewise)(1.0)
    for f, x in [(newton_sqrt, 2.0), (fixed_point, 0.5)]:
        np.testing.assert_allclose(jit(f)(x), f(x), rtol=1e-12)
    for f, x in [(piecewise, 1.0), (newton_sqrt, 2.0), (fixed_point, 0.5)]:
        with pytest.raises(TracerBoolConversionError):
            jit(f, autograph=False)(x)
        with pytest.raises(TracerBoolConversionError):
            jit(grad(f))(x)
        with pytest.raises(TracerBoolConversionError):
            jit(lambda y, f=f: grad(f)(y))(x)                   # grad inside jit
    with pytest.raises(TracerIntegerConversionError):
        jit(grad(table_lookup))(1.5)
    with pytest.raises(TracerIntegerConversionError):
        jit(grad(index_lookup))(1.5)
    with pytest.raises(TracerIntegerConversionError):
        jit(grad(range_loop))(1.5)
    with pytest.raises(ConcretizationTypeError):
        jit(grad(item_branch))(np.array([1.5, 0.5]))
    with pytest.raises(ConcretizationTypeError):
        jit(grad(lambda x: x * float(x)))(1.5)
    with pytest.raises(TracerArrayConversionError):
        jit(grad(lambda x: np.sum(x * np.asarray(x > 0))))(np.ones(2))
    with pytest.raises(TracerBoolConversionError):
        jit(hessian(lambda v: np.sum(v ** 3) if v[0] > 0 else np.sum(v)))(np.ones(2))
    with pytest.raises(TracerBoolConversionError):
        jit(grad(relu_like))(2.0)
    with pytest.raises(TracerBoolConversionError):
        jit(scaled)(2.0)


def test_vmapped_values_stay_abstract():
    xs = np.array([1.0, -1.0, 2.0])
    with pytest.raises(TracerBoolConversionError):
        vmap(grad(piecewise))(xs)
    with pytest.raises(TracerBoolConversionError):
        grad(lambda v: np.sum(vmap(piecewise)(v)))(xs)
    # Values that depend on no vmapped argument are concrete outside jit, as in JAX.
    np.testing.assert_allclose(vmap(lambda x: x * (2.0 if np.sum(np.ones(3)) > 2 else 3.0))(xs), 2 * xs)
    np.testing.assert_allclose(grad(lambda y: np.sum(vmap(lambda x: x * (y if y > 0 else -y))(xs)))(-2.0),
                               -np.sum(xs))
    with pytest.raises(TracerBoolConversionError):
        jit(lambda y: vmap(lambda x: x * (2.0 if np.sum(y) > 2 else 3.0))(xs))(np.ones(3))
    # Without value-dependent control flow both work.
    np.testing.assert_allclose(vmap(grad(lambda x: np.sin(x) * x))(xs), np.cos(xs) * xs + np.sin(xs))


def test_no_control_flow_computes_nothing_while_tracing():
    # Values are computed on demand only: the traced program of a function without
    # value-dependent control flow has no concrete values (and the derivative is unchanged).
    from tracejit.transforms.api_ad import _Traced
    t = _Traced(lambda x: np.sin(x) * x, (np.float64(1.0),), False, "grad")
    assert t.program.concrete_values == {} or all(v in t.program.in_vars for v in t.program.concrete_values)
    assert t.saved is None
    t = _Traced(piecewise, (np.float64(1.0),), False, "grad")
    assert t.saved                                                 # the forward values, reused by vjp


# --------------------------------------------------------------------------- against JAX

@pytest.fixture(scope="module")
def jax_mod():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


@pytest.mark.parametrize("f,points", CASES + VECTOR_CASES, ids=[c[0].__name__ for c in CASES + VECTOR_CASES])
def test_grad_matches_jax(jax_mod, f, points):
    import jax.numpy as jjnp
    for x in points:
        want = jax_mod.grad(lambda y: f(y, jjnp))(jjnp.asarray(x, jjnp.float64))
        got = grad(lambda y: f(y, jnp))(np.asarray(x, np.float64))
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-10, atol=1e-13)


def test_nested_and_jacobians_match_jax(jax_mod):
    import jax.numpy as jjnp
    for x in (1.3, -0.7):
        np.testing.assert_allclose(grad(grad(piecewise))(x),
                                   jax_mod.grad(jax_mod.grad(lambda y: piecewise(y, jjnp)))(x), rtol=1e-12)
    v = np.array([1.0, 2.0])
    for fn in (jacfwd, jacrev):
        jfn = getattr(jax_mod, fn.__name__)
        for s in (1.0, -1.0):
            np.testing.assert_allclose(fn(vector_branch)(s * v),
                                       jfn(lambda y: vector_branch(y, jjnp))(jjnp.asarray(s * v)), rtol=1e-12)

    def h(v, xp):
        return xp.sum(v ** 3) if v[0] > 0 else xp.sum(v ** 2)
    for s in (1.0, -1.0):
        np.testing.assert_allclose(hessian(lambda y: h(y, jnp))(s * v),
                                   jax_mod.hessian(lambda y: h(y, jjnp))(jjnp.asarray(s * v)), rtol=1e-12)
    np.testing.assert_allclose(grad(grad(newton_sqrt))(2.0),
                               jax_mod.grad(jax_mod.grad(lambda a: newton_sqrt(a, jjnp)))(2.0), rtol=1e-9)


def test_value_and_grad_aux_and_jvp_match_jax(jax_mod):
    import jax.numpy as jjnp

    def f(a, xp):
        x, n = a, 0
        while abs(x * x - a) > 1e-13:
            x = x - (x * x - a) / (2 * x)
            n += 1
        return xp.sin(x), n
    (v1, n1), g1 = value_and_grad(lambda a: f(a, jnp), has_aux=True)(3.0)
    (v2, n2), g2 = jax_mod.value_and_grad(lambda a: f(a, jjnp), has_aux=True)(3.0)
    assert n1 == n2
    np.testing.assert_allclose([v1, g1], [v2, g2], rtol=1e-12)
    for x in (1.3, -0.7):
        np.testing.assert_allclose(jvp(piecewise, (x,), (2.0,)),
                                   jax_mod.jvp(lambda y: piecewise(y, jjnp), (x,), (2.0,)), rtol=1e-12)


def test_custom_rules_match_jax(jax_mod):
    import jax.numpy as jjnp

    @jax_mod.custom_jvp
    def j_relu(x):
        return jjnp.where(x > 0, x, 0.0)

    @j_relu.defjvp
    def _(primals, tangents):
        x, = primals
        t, = tangents
        return j_relu(x), (t * 1.0 if x > 0 else t * 0.0)

    @jax_mod.custom_vjp
    def j_scaled(x):
        return x * 2.0 if x > 0 else x * 3.0
    j_scaled.defvjp(lambda x: (j_scaled(x), x), lambda r, ct: ((2.0 if r > 0 else 3.0) * ct,))

    for x in (2.0, -2.0):
        np.testing.assert_allclose(grad(relu_like)(x), jax_mod.grad(j_relu)(x))
        np.testing.assert_allclose(grad(scaled)(x), jax_mod.grad(j_scaled)(x))
        np.testing.assert_allclose(hessian(lambda y: relu_like(y) * y ** 2)(x),
                                   jax_mod.hessian(lambda y: j_relu(y) * y ** 2)(x))
        np.testing.assert_allclose(jacrev(jacrev(lambda y: scaled(y) * y))(x),
                                   jax_mod.jacrev(jax_mod.jacrev(lambda y: j_scaled(y) * y))(x))
