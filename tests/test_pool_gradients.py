"""Max and min pooling derivatives: XLA's select-and-scatter choice, not a share among ties.

``lax.reduce_window`` with ``lax.max`` (``lax.min``) and the identity ``-inf`` (``+inf``) is
differentiated as JAX differentiates it: each window's cotangent goes wholly to one element,
the one XLA's ``SelectAndScatter`` with ``ge`` (``le``) selects. The reference below is written
from that definition: scan the window in C order over real elements (padding is skipped, a
base-dilation hole is an element of value ``init`` whose cotangent is dropped), keep the current
choice while it is ``>=`` (``<=``) the next element, else take the next one.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import tracejit
from tracejit import lax


def reference_pool_grad(x, ct, is_max, window, strides, pads, base, wdil):
    """d/dx of ``sum(ct * reduce_window(x))`` by select-and-scatter's choice."""
    init = -np.inf if is_max else np.inf
    keeps = np.greater_equal if is_max else np.less_equal
    dilated = [(n - 1) * b + 1 if n else 0 for n, b in zip(x.shape, base)]
    grad = np.zeros(x.shape, np.float64)
    for out_idx in itertools.product(*(range(n) for n in ct.shape)):
        chosen = None          # (value, index into x or None for a hole)
        for tap in itertools.product(*(range(k) for k in window)):
            q = [o * s + k * d - lo for o, s, k, d, (lo, _) in zip(out_idx, strides, tap, wdil, pads)]
            if any(not 0 <= v < n for v, n in zip(q, dilated)):
                continue                                   # padding: never chosen
            hole = any(v % b for v, b in zip(q, base))
            where = None if hole else tuple(v // b for v, b in zip(q, base))
            value = init if hole else x[where]
            if chosen is None or not keeps(chosen[0], value):
                chosen = (value, where)
        if chosen is not None and chosen[1] is not None:
            grad[chosen[1]] += ct[out_idx]
    return grad


def _pool(is_max, window, strides, padding, base=None, wdil=None):
    op, init = (lax.max, -np.inf) if is_max else (lax.min, np.inf)
    return lambda x: lax.reduce_window(x, init, op, window, strides, padding, base, wdil)


CASES = [
    # window, strides, padding, base dilation, window dilation
    ((2, 2), (2, 2), "VALID", None, None),
    ((3, 3), (1, 1), "SAME", None, None),
    ((3, 2), (2, 1), ((1, 2), (0, 1)), None, None),
    ((2, 2), (1, 1), "VALID", None, (2, 1)),
    ((2, 3), (1, 2), ((1, 0), (2, 1)), (2, 1), None),
    ((1, 3), (1, 1), ((0, 0), (-1, 2)), None, None),
]


def _tied_input(rng, shape):
    """Small integers as floats (many ties), with NaN, +-inf and -0.0 mixed in."""
    x = rng.integers(-2, 3, shape).astype(np.float64)
    flat = x.reshape(-1)
    picks = rng.choice(flat.size, size=4, replace=False)
    flat[picks] = [np.nan, np.inf, -np.inf, -0.0]
    return x


@pytest.mark.parametrize("is_max", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_pool_gradient_is_select_and_scatter(is_max, case):
    window, strides, padding, base, wdil = case
    rng = np.random.default_rng(len(str(case)) + is_max)
    pool = _pool(is_max, window, strides, padding, base, wdil)
    base_ = base or (1, 1)
    wdil_ = wdil or (1, 1)
    dilated = [(n - 1) * b + 1 for n, b in zip((5, 6), base_)]
    pads = lax.padtype_to_pads(dilated, [(k - 1) * d + 1 for k, d in zip(window, wdil_)], strides, padding) \
        if isinstance(padding, str) else padding
    for trial in range(3):
        x = _tied_input(rng, (5, 6)) if trial else rng.integers(0, 2, (5, 6)).astype(np.float64)
        out_shape = np.asarray(pool(x)).shape
        ct = rng.standard_normal(out_shape)
        want = reference_pool_grad(x, ct, is_max, window, strides, pads, base_, wdil_)
        loss = lambda v: (pool(v) * ct).sum()   # noqa: E731
        for got in (tracejit.grad(loss)(x), tracejit.jit(tracejit.grad(loss))(x)):
            np.testing.assert_array_equal(np.asarray(got), want)
        # vjp with a NaN-free cotangent, and vmap over a batch of inputs
        _, pullback = tracejit.vjp(pool, x)
        np.testing.assert_array_equal(np.asarray(pullback(ct)[0]), want)
    xs = np.stack([_tied_input(rng, (5, 6)) for _ in range(3)])
    batched = tracejit.vmap(tracejit.grad(lambda v: (pool(v) * ct).sum()))(xs)
    for b in range(3):
        np.testing.assert_array_equal(np.asarray(batched[b]),
                                      reference_pool_grad(xs[b], ct, is_max, window, strides, pads, base_, wdil_))


def test_pool_jvp_is_the_chosen_elements_tangent():
    # Forward mode takes the same element's tangent; values are max pooling's, NaN included.
    x = np.array([[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 0.0, 3.0], [np.nan, 5.0, 5.0, 5.0], [5.0, 5.0, 5.0, 5.0]])
    pool = _pool(True, (2, 2), (2, 2), "VALID")
    t = np.arange(16.0).reshape(4, 4) + 1
    for f in (tracejit.jvp, lambda fn, p, tg: tracejit.jit(lambda a, b: tracejit.jvp(fn, (a,), (b,)))(*p, *tg)):
        out, tan = f(pool, (x,), (t,))
        np.testing.assert_array_equal(np.asarray(out), [[1.0, 3.0], [np.nan, 5.0]])
        # first of the tied 1s (t=1); 3 at (1,3) (t=8); NaN chosen then replaced by the 5 after it
        # (NaN >= 5 is false: t=10); first tied 5 (t=11)
        np.testing.assert_array_equal(np.asarray(tan), [[1.0, 8.0], [10.0, 11.0]])


def test_pool_second_order_and_finite_differences():
    # Away from ties the derivative is the usual one: second order (zero) and finite differences.
    from tracejit.test_util import check_grads
    x = np.random.default_rng(3).permutation(48).reshape(6, 8) / 7.0
    f = lambda v: (_pool(True, (3, 3), (2, 2), "SAME")(v) ** 2).sum()   # noqa: E731
    check_grads(f, (x,), order=2, modes=["fwd", "rev"], atol=1e-6, rtol=1e-6)


def test_pool_gradients_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(7)
    for is_max, (window, strides, padding, base, wdil) in itertools.product((True, False), CASES):
        if wdil is not None or (not isinstance(padding, str) and min(min(p) for p in padding) < 0):
            continue     # JAX: no VJP with window dilation; negative padding fails in its transpose
        x = _tied_input(rng, (5, 6))
        ct = rng.standard_normal(np.asarray(_pool(is_max, window, strides, padding, base, wdil)(x)).shape)

        def loss(lx, v, is_max=is_max, g=(window, strides, padding, base, wdil)):
            op, init = (lx.max, -np.inf) if is_max else (lx.min, np.inf)
            return (lx.reduce_window(v, init, op, *g) * ct).sum()
        want = np.asarray(jax.grad(lambda v: loss(jax.lax, v))(x))
        np.testing.assert_array_equal(np.asarray(tracejit.grad(lambda v: loss(lax, v))(x)), want)
        np.testing.assert_array_equal(np.asarray(tracejit.jit(tracejit.grad(lambda v: loss(lax, v)))(x)), want)


def _random_case(seed):
    """A random pooling: rank 1-3, window, strides, padding (string, or pairs that may be negative),
    base and window dilation; max or min; tied values with NaN/inf/-0 mixed in."""
    rng = np.random.default_rng(seed)
    nd = int(rng.integers(1, 4))
    shape = tuple(int(v) for v in rng.integers(1, 6, nd))
    window = tuple(int(v) for v in rng.integers(1, 4, nd))
    strides = tuple(int(v) for v in rng.integers(1, 3, nd))
    base = tuple(int(v) for v in rng.integers(1, 3, nd)) if rng.random() < 0.3 else None
    wdil = tuple(int(v) for v in rng.integers(1, 3, nd)) if rng.random() < 0.3 else None
    if rng.random() < 0.3 and base is None:
        padding = "SAME" if rng.random() < 0.5 else "VALID"
    else:
        padding = tuple((int(lo), int(hi)) for lo, hi in rng.integers(-1, 3, (nd, 2)))
    x = rng.integers(-2, 3, shape).astype(np.float64)
    specials = rng.choice([np.nan, np.inf, -np.inf, -0.0], size=min(x.size, int(rng.integers(0, 3))))
    x.reshape(-1)[rng.choice(x.size, size=specials.size, replace=False)] = specials
    return bool(rng.random() < 0.5), window, strides, padding, base, wdil, x, rng


@pytest.mark.parametrize("seed", range(int(__import__("os").environ.get("POOL_FUZZ_SEEDS", "60"))))
def test_pool_gradient_random_configurations(seed):
    # A small fuzzer of the class (pooling derivatives): `POOL_FUZZ_SEEDS=3000` for a campaign.
    is_max, window, strides, padding, base, wdil, x, rng = _random_case(seed)
    pool = _pool(is_max, window, strides, padding, base, wdil)
    base_, wdil_ = base or (1,) * x.ndim, wdil or (1,) * x.ndim
    try:
        out = np.asarray(pool(x))
    except (ValueError, TypeError):
        return          # a negative pad larger than the input: raises (as JAX does)
    dilated = [(n - 1) * b + 1 for n, b in zip(x.shape, base_)]
    pads = lax.padtype_to_pads(dilated, [(k - 1) * d + 1 for k, d in zip(window, wdil_)], strides, padding) \
        if isinstance(padding, str) else padding
    ct = rng.standard_normal(out.shape)
    want = reference_pool_grad(x, ct, is_max, window, strides, pads, base_, wdil_)
    loss = lambda v: (pool(v) * ct).sum()   # noqa: E731
    np.testing.assert_array_equal(np.asarray(tracejit.grad(loss)(x)), want)
    np.testing.assert_array_equal(np.asarray(tracejit.jit(tracejit.grad(loss))(x)), want)


def test_window_larger_than_the_input_gives_an_empty_output_under_jit():
    # A window wider than a (padded) axis leaves no output along it; under jit the taps' slices
    # were [2:2] of a size-1 axis and raised TypeError (eagerly NumPy allowed them).
    x = np.arange(2.0).reshape(1, 1, 2)
    for op, init in ((lax.add, 0.0), (lax.max, -np.inf)):
        f = lambda v, op=op, init=init: lax.reduce_window(v, init, op, (1, 3, 3), (2, 1, 1), "VALID")  # noqa: E731
        for got in (f(x), tracejit.jit(f)(x)):
            assert np.asarray(got).shape == (1, 0, 0)
        g = tracejit.jit(tracejit.grad(lambda v, f=f: f(v).sum()))(x)
        np.testing.assert_array_equal(np.asarray(g), np.zeros_like(x))
