"""Reductions with ``where=`` masks (``jnp.sum(x, where=m)``, masked means and variances) on traced
arrays, eagerly and under jit, against NumPy: masks broadcast against the operand, rows with no
element selected, keepdims, several axes, integer/bool/complex dtypes; gradients of masked means."""
import warnings

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4, 5))
M = rng.random((3, 4, 5)) < 0.6
M[1, 2, :] = False                        # a row with nothing selected
MASKS = {"full": M, "broadcast": rng.random((4, 1)) < 0.5, "row": np.array([True, False, True, True, False])}
AXES = [None, 0, 2, (0, 2), -1]


def _both(fn, *args):
    """fn eagerly and under jit, with NumPy's warnings (empty means) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args), tracejit.jit(fn)(*args)


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "var", "std", "all", "any", "max", "min"])
@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize("axis", AXES, ids=str)
def test_masked_reductions_match_numpy(name, mask, axis):
    m = MASKS[mask]
    x = X > 0 if name in ("all", "any") else X
    kw = {"initial": -5.0 if name == "max" else 5.0} if name in ("max", "min") else {}
    kw.update(axis=axis)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = getattr(np, name)(x, where=m, **kw)
        want_k = getattr(np, name)(x, where=m, keepdims=True, **kw)
    for got in _both(lambda v: getattr(jnp, name)(v, where=m, **kw), x):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-14)
        assert np.asarray(got).dtype == np.asarray(want).dtype
    for got in _both(lambda v: getattr(jnp, name)(v, where=m, keepdims=True, **kw), x):
        np.testing.assert_allclose(np.asarray(got), want_k, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.complex128, np.float32])
def test_masked_sum_mean_var_dtypes(dtype):
    x = (X * 4).astype(dtype)
    for name, kw in (("sum", {}), ("mean", {}), ("var", {"ddof": 1}), ("std", {}), ("prod", {"axis": 1})):
        if dtype is np.bool_ and name in ("var", "std"):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = getattr(np, name)(x, where=M, **kw)
        for got in _both(lambda v, name=name, kw=kw: getattr(jnp, name)(v, where=M, **kw), x):
            np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6 if dtype is np.float32 else 1e-12)
            assert np.asarray(got).dtype == np.asarray(want).dtype, (name, np.asarray(got).dtype)


def test_masked_var_ddof_beyond_count_and_given_mean():
    # count - ddof clipped at 0 (inf/nan as NumPy); NumPy 2's mean= centers on the given mean.
    m = np.zeros((3, 4, 5), bool)
    m[0, 0, :2] = True
    for got in _both(lambda v: jnp.var(v, axis=2, where=m, ddof=3), X):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_array_equal(np.asarray(got), np.var(X, axis=2, where=m, ddof=3))
    mu = np.mean(X, axis=1, keepdims=True) + 0.25
    for got in _both(lambda v: jnp.var(v, axis=1, mean=mu), X):
        np.testing.assert_allclose(np.asarray(got), np.var(X, axis=1, mean=mu), rtol=1e-12)


def test_masked_max_without_initial_raises_as_numpy():
    with pytest.raises(ValueError):
        np.max(X, where=M)
    with pytest.raises(ValueError, match="initial"):
        tracejit.jit(lambda v: jnp.max(v, where=M))(X)


def test_masked_mean_gradient():
    # d/dx mean(x**2, where=m) = 2 x m / count(m); vmapped rows and jit agree.
    g = tracejit.grad(lambda v: jnp.mean(v ** 2, where=M))(X)
    np.testing.assert_allclose(np.asarray(g), 2 * X * M / M.sum(), rtol=1e-12)
    rows = tracejit.vmap(tracejit.grad(lambda v, m: jnp.var(v, where=m)))(X.reshape(3, 20), M.reshape(3, 20))
    for r in range(3):
        v, m = X.reshape(3, 20)[r], M.reshape(3, 20)[r]
        want = 2 * (v - v[m].mean()) * m / m.sum() if m.any() else np.zeros(20)
        np.testing.assert_allclose(np.asarray(rows[r]), want, rtol=1e-12, atol=1e-14)


def test_masked_reduction_gradients_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    for name, kw in (("sum", {}), ("mean", {"axis": 1}), ("var", {}), ("std", {"axis": 2}), ("prod", {}),
                     ("max", {"initial": 0.0}), ("min", {"initial": 0.0, "axis": 0})):
        f = lambda np_, v, name=name, kw=kw: getattr(np_, name)(v * 1.5, where=M, **kw).sum()   # noqa: E731
        want = np.asarray(jax.grad(lambda v: f(jax.numpy, v))(X))
        np.testing.assert_allclose(np.asarray(tracejit.grad(lambda v: f(jnp, v))(X)), want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(tracejit.jit(tracejit.grad(lambda v: f(jnp, v)))(X)), want,
                                   rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd"])
def test_nan_reductions_honour_where_and_initial(name):
    # They dropped where= and initial= (eagerly too: wrong numbers), or raised for nanvar's.
    x = X.copy()
    x[0, 1, :] = np.nan
    x[2, 0, 1] = np.nan
    kws = [{"where": M, "initial": 0.5}, {"initial": 0.0}] if name in ("nanmax", "nanmin") else \
        [{"where": M}, {"where": MASKS["row"], "keepdims": True}]
    if name in ("nansum", "nanprod"):
        kws.append({"where": M, "initial": 2.0})
    if name in ("nanvar", "nanstd"):
        kws += [{"where": M, "ddof": 1}, {"mean": np.nanmean(x, axis=2, keepdims=True) + 0.1}]
    for kw in kws:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = getattr(np, name)(x, axis=2, **kw)
        for got in _both(lambda v, kw=kw: getattr(jnp, name)(v, axis=2, **kw), x):
            assert np.asarray(got).shape == want.shape
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-14)
