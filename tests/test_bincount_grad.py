"""Derivatives of weighted ``bincount`` / ``histogram`` with respect to the weights.

The weighted counts are linear in the weights (each bin sums the weights of its values), so
forward mode scatters the weights' tangents and reverse mode gathers the bins' cotangents.
Checked against central differences of NumPy's own functions, eagerly, under ``jit`` and
``vmap``, with values below 0 (they count in bin 0 under ``length=``) and at or past
``length`` (dropped).
"""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tests.helpers import central_difference


X = np.array([0, 1, 1, 3, -2, 7, 4, 4, 0])
LENGTH = 5


def _np_bincount(w):
    kept = X < LENGTH
    return np.bincount(np.clip(X, 0, None)[kept], weights=w[kept], minlength=LENGTH)[:LENGTH]


def _loss(counts, xp):
    return (xp.sin(counts) * xp.arange(1, LENGTH + 1)).sum()


@pytest.mark.parametrize("transform", ["eager", "jit", "vmap"])
def test_bincount_weight_gradient(transform):
    rng = np.random.default_rng(0)
    w = rng.standard_normal(X.size)
    want = central_difference(lambda v: _loss(_np_bincount(v), np), w)
    g = tracejit.grad(lambda v: _loss(jnp.bincount(X, weights=v, length=LENGTH), jnp))
    if transform == "jit":
        g = tracejit.jit(g)
    if transform == "vmap":
        got = tracejit.vmap(g)(np.stack([w, w]))
        np.testing.assert_allclose(got, np.stack([want, want]), rtol=1e-7, atol=1e-8)
        return
    np.testing.assert_allclose(g(w), want, rtol=1e-7, atol=1e-8)


def test_bincount_jvp_and_float32_weights():
    w = np.linspace(-1.0, 1.0, X.size)
    t = np.arange(X.size, dtype=np.float64)
    out, tan = tracejit.jit(lambda v, u: tracejit.jvp(lambda z: jnp.bincount(X, weights=z, length=LENGTH),
                                                      (v,), (u,)))(w, t)
    np.testing.assert_allclose(out, _np_bincount(w))
    np.testing.assert_array_equal(tan, _np_bincount(t))     # the same sums of the tangents
    g = tracejit.grad(lambda v: jnp.bincount(X, weights=v, length=LENGTH).sum())(w.astype(np.float32))
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, (X < LENGTH).astype(np.float32))


@pytest.mark.parametrize("density", [False, True])
def test_histogram_weight_gradient(density):
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 2, 12)
    w = rng.uniform(0.5, 1.5, 12)

    def loss(v, xp, hist):
        h, _ = hist(a, bins=4, range=(0.0, 1.5), weights=v, density=density)
        return (h * xp.cos(xp.arange(4.0))).sum()

    want = central_difference(lambda v: loss(v, np, np.histogram), w)
    for g in (tracejit.grad(lambda v: loss(v, jnp, jnp.histogram)),
              tracejit.jit(tracejit.grad(lambda v: loss(v, jnp, jnp.histogram)))):
        np.testing.assert_allclose(g(w), want, rtol=1e-6, atol=1e-9)
