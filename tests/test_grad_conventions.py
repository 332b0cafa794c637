"""Derivatives at ties and other non-differentiable points follow JAX's rules exactly.

Each expected value is what JAX's rule (jax/_src/lax/lax.py, jax/_src/numpy/ufuncs.py,
jax/_src/lax/control_flow/loops.py) gives:

* ``max``/``min`` (so ``maximum``, ``minimum``, ``clip``): ties split 0.5 / 0.5;
* ``abs`` of a real: ``select(x >= 0, g, -g)``, so +1 at 0; of a complex: 0 at 0;
* ``reduce_max``/``reduce_min``: location indicators divided by their count;
* ``logaddexp``/``logaddexp2``: a custom JVP ``t1 * exp(x1 - out) + t2 * exp(x2 - out)``
  (+inf replaced by 0), so 0.5 / 0.5 at ties;
* ``fmax``/``fmin``: ``where((x1 > x2) | isnan(x2), x1, x2)``: ties go to ``x2``;
* ``cummax``/``cummin``/``cumprod``: differentiated through ``associative_scan``'s tree;
* ``sort``: a stable permutation gather.
"""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.transforms.api_ad import grad, jacfwd, jacrev, jvp, vjp


def both(f):
    """Eager and jit(grad) agree; returns the eager gradient."""
    def g(*args):
        eager = grad(f, argnums=tuple(range(len(args))))(*args)
        jitted = tracejit.jit(grad(f, argnums=tuple(range(len(args)))))(*args)
        for a, b in zip(eager, jitted):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        return tuple(np.asarray(a) for a in eager)
    return g


def test_logaddexp_tie_splits_half():
    assert both(jnp.logaddexp)(0., 0.) == (0.5, 0.5)
    assert grad(lambda a: jnp.logaddexp(a, 0.))(0.) == 0.5
    assert grad(lambda a: jnp.logaddexp(0., a))(0.) == 0.5
    assert both(jnp.logaddexp2)(1., 1.) == (0.5, 0.5)
    x = np.array([1., 2., 3.])
    np.testing.assert_allclose(grad(lambda a: jnp.logaddexp(a, a).sum())(x), np.ones(3))


def test_logaddexp_matches_softmax_weights_and_infinities():
    gx, gy = both(jnp.logaddexp)(1., 3.)
    np.testing.assert_allclose([gx, gy], [1 / (1 + np.exp(2)), 1 / (1 + np.exp(-2))], rtol=1e-15)
    gx, gy = both(jnp.logaddexp2)(1., 3.)
    np.testing.assert_allclose([gx, gy], [0.2, 0.8], rtol=1e-15)
    # JAX's rule replaces +inf by 0 in the exponent: d/dx1 = exp(0 - 0), d/dx2 = exp(x2 - 0)
    gx, gy = grad(jnp.logaddexp, argnums=(0, 1))(np.inf, 0.)
    assert (gx, gy) == (1.0, 1.0)
    gx, gy = grad(jnp.logaddexp, argnums=(0, 1))(-np.inf, 0.)
    assert (gx, gy) == (0.0, 1.0)


def test_logaddexp_vmap_jacobians_and_second_order():
    f = lambda a: jnp.logaddexp(a, a[::-1])  # noqa: E731
    x = np.array([0., 1., 0.])
    jf, jr = jacfwd(f)(x), jacrev(f)(x)
    np.testing.assert_allclose(jf, jr, rtol=1e-15)
    np.testing.assert_allclose(jf[1, 1], 1.0)
    np.testing.assert_allclose(jf[0], [0.5, 0, 0.5])
    batched = tracejit.vmap(grad(lambda a: jnp.logaddexp(a, 2 * a)))(np.array([0., 1., -1.]))
    w = 1 / (1 + np.exp(-np.array([0., 1., -1.])))
    np.testing.assert_allclose(batched, (1 - w) + 2 * w, rtol=1e-14)
    # logaddexp(x, 0) = softplus: second derivative sigmoid'(0) = 1/4
    assert grad(grad(lambda a: jnp.logaddexp(a, 0.)))(0.) == pytest.approx(0.25, abs=1e-15)
    # a vmapped custom-JVP call stays one equation
    text = str(tracejit.make_jaxpr(tracejit.vmap(lambda a: jnp.logaddexp(a, 2 * a)))(np.ones(7)))
    assert text.count("custom_jvp_call") == 1


def test_maximum_minimum_clip_ties():
    assert both(jnp.maximum)(2., 2.) == (0.5, 0.5)
    assert both(jnp.minimum)(2., 2.) == (0.5, 0.5)
    assert grad(lambda x: jnp.maximum(x, 0.))(0.) == 0.5     # relu written with maximum
    assert grad(lambda x: jnp.where(x > 0, x, 0.))(0.) == 0.0  # relu written with where
    g = grad(lambda x: jnp.clip(x, -1., 1.).sum())(np.array([-1., 0., 1., 2.]))
    np.testing.assert_array_equal(g, [0.5, 1., 0.5, 0.])
    g = tracejit.jit(grad(lambda x, lo: jnp.clip(x, lo, 1.).sum(), argnums=(0, 1)))(np.array([-1., 0.]), -1.)
    np.testing.assert_array_equal(g[0], [0.5, 1.])
    assert g[1] == 0.5


def test_abs_at_zero_is_plus_one_as_jax():
    # JAX: select(x >= 0, g, -g) (not sign(0) = 0)
    assert both(jnp.abs)(0.) == (1.0,)
    assert both(jnp.abs)(-0.0) == (1.0,)
    assert grad(jnp.abs)(-2.) == -1.0
    assert jvp(jnp.abs, (0.,), (3.,))[1] == 3.0
    assert complex(grad(lambda z: jnp.abs(z))(0j)) == 0
    assert complex(jvp(jnp.abs, (np.complex128(0),), (np.complex128(1 + 1j),))[1]) == 0
    assert complex(grad(lambda z: jnp.abs(z))(3 + 4j)) == pytest.approx(0.6 - 0.8j)


def test_fmax_fmin_hypot_copysign_at_ties():
    assert both(jnp.fmax)(1., 1.) == (0.0, 1.0)
    assert both(jnp.fmin)(1., 1.) == (0.0, 1.0)
    assert both(jnp.fmax)(2., 1.) == (1.0, 0.0)
    assert both(jnp.fmin)(2., 1.) == (0.0, 1.0)
    assert grad(jnp.fmax, argnums=(0, 1))(1., np.nan) == (1.0, 0.0)
    assert grad(jnp.hypot, argnums=(0, 1))(0., 0.) == (0.5, 0.5)
    np.testing.assert_allclose(grad(jnp.hypot, argnums=(0, 1))(3., 4.), (0.6, 0.8))
    assert grad(jnp.copysign)(0., -1.) == -1.0
    assert grad(jnp.copysign)(0., 1.) == 1.0
    assert grad(jnp.copysign)(-2., 1.) == -1.0
    assert grad(jnp.copysign)(-2., -1.) == 1.0


@pytest.mark.parametrize("fn", [jnp.max, jnp.min, jnp.amax, jnp.amin])
def test_reduction_extremum_ties_share_equally(fn):
    x = np.array([[3., 1., 3.], [2., 2., 2.]]) * (1 if fn in (jnp.max, jnp.amax) else -1)
    g = both(lambda x: fn(x))(x)[0]
    np.testing.assert_allclose(g, [[0.5, 0, 0.5], [0, 0, 0]])
    g = both(lambda x: fn(x, axis=1).sum())(x)[0]
    np.testing.assert_allclose(g, [[0.5, 0, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    g = both(lambda x: (fn(x, axis=0, keepdims=True) * np.array([[1., 2., 3.]])).sum())(x)[0]
    np.testing.assert_allclose(g, [[1, 0, 3], [0, 2, 0]])
    t = np.arange(6.).reshape(2, 3)
    np.testing.assert_allclose(jvp(lambda x: fn(x, axis=1), (x,), (t,))[1], [1.0, 4.0])


def test_reduction_extremum_ties_with_initial_and_size_one_axes():
    assert grad(lambda x: jnp.max(x, initial=1.))(np.array([1., 0.]))[0] == 0.5
    x = np.array([[2.], [2.], [1.]])
    g = tracejit.jit(grad(lambda x: jnp.max(x, axis=(0, 1), keepdims=True).sum()))(x)
    np.testing.assert_allclose(g, [[0.5], [0.5], [0.]])
    g = tracejit.jit(grad(lambda x: (jnp.max(x, axis=1, keepdims=True) * x).sum()))(x)
    np.testing.assert_allclose(g, 2 * x)


def test_cumulative_extrema_ties_follow_associative_scan():
    j3 = jacrev(lambda x: jnp.cummax(x))(np.ones(3))
    np.testing.assert_allclose(j3, [[1, 0, 0], [0.5, 0.5, 0], [0.25, 0.25, 0.5]])
    j5 = tracejit.jit(jacfwd(lambda x: lax.cummin(x)))(np.ones(5))
    np.testing.assert_allclose(j5[4], [0.125, 0.125, 0.125, 0.125, 0.5])
    np.testing.assert_allclose(j5[3], [0.25, 0.25, 0.25, 0.25, 0])
    jr = jacrev(lambda x: lax.cummax(x, reverse=True))(np.ones(3))
    np.testing.assert_allclose(jr[0], [0.5, 0.25, 0.25])


def test_sort_and_argmax_ties():
    g = both(lambda x: jnp.sort(x)[0] + 2 * jnp.sort(x)[1])(np.array([1., 1., 2.]))[0]
    np.testing.assert_array_equal(g, [1., 2., 0.])   # stable: the first tied element sorts first
    g = both(lambda x: jnp.sort(x, descending=True)[0])(np.array([2., 1., 2.]))[0]
    np.testing.assert_array_equal(g, [0., 0., 1.])
    g = both(lambda x: jnp.take_along_axis(x, jnp.argmax(x, axis=0, keepdims=True), axis=0).sum())(
        np.array([3., 1., 3.]))[0]
    np.testing.assert_array_equal(g, [1., 0., 0.])


def test_logsumexp_shift_carries_no_derivative():
    x = np.array([[1., 1., 0.], [2., 3., 3.]])
    g = both(lambda x: jnp.logsumexp(x, axis=1).sum())(x)[0]
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(g, e / e.sum(1, keepdims=True), rtol=1e-15)
    _, f_vjp = vjp(lambda x: jnp.logsumexp(x), x)
    np.testing.assert_allclose(f_vjp(1.0)[0], np.exp(x) / np.exp(x).sum(), rtol=1e-14)


def _axis_choices(ndim):
    import itertools
    return [None] + [c for k in range(1, ndim + 1) for c in itertools.combinations(range(ndim), k)]


@pytest.mark.parametrize("shape", [(3, 1), (2, 1, 3)])
@pytest.mark.parametrize("reducer", ["max", "sum", "prod", "logsumexp"])
def test_jit_grad_of_reductions_over_size_one_axes(shape, reducer):
    """jit(grad) equals eager grad for every axis subset and keepdims (size-1 axes included)."""
    rng = np.random.default_rng(len(shape))
    x = rng.uniform(0.5, 1.5, size=shape)
    red = getattr(jnp, reducer)
    for axis in _axis_choices(len(shape)):
        for keepdims in (False, True):
            def f(x):
                y = red(x, axis=axis, keepdims=keepdims)
                return jnp.sum(jnp.sin(y) * jnp.sum(x)) + jnp.sum(x * (y if keepdims else 1.0))
            np.testing.assert_allclose(tracejit.jit(grad(f))(x), grad(f)(x), rtol=1e-12, atol=1e-14,
                                       err_msg=f"axis={axis} keepdims={keepdims}")


def test_vmap_of_user_custom_jvp_is_one_call_and_keeps_the_rule():
    from tracejit.transforms.api_ad import custom_jvp

    @custom_jvp
    def f(x, y):
        return jnp.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        return f(x, y), 2.0 * tx + 3.0 * ty     # deliberately not the true derivative

    xs, y = np.array([0.1, 0.2, 0.3]), 1.5
    np.testing.assert_allclose(tracejit.vmap(f, in_axes=(0, None))(xs, y), np.sin(xs) * y)
    text = str(tracejit.make_jaxpr(tracejit.vmap(f, in_axes=(0, None)))(xs, y))
    assert text.count("custom_jvp_call") == 1
    g = grad(lambda xs, y: jnp.sum(tracejit.vmap(f, in_axes=(0, None))(xs, y)), argnums=(0, 1))(xs, y)
    np.testing.assert_allclose(g[0], [2.0, 2.0, 2.0])
    assert float(g[1]) == 9.0
    np.testing.assert_allclose(tracejit.vmap(grad(f))(xs, np.ones(3)), [2.0, 2.0, 2.0])
