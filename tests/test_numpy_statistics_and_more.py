"""Statistics, set operations, index tricks, polynomials and function
application (issue 14 item 9) against NumPy: eager calls, jit, and grad vs
central finite differences."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp

RNG = np.random.default_rng(1234)
X = RNG.normal(size=(4, 5))
XN = X.copy()
XN[1, 2] = np.nan
XN[3, :] = np.nan
ARRAYS = {
    "f64": X, "f32": X.astype(np.float32), "int": RNG.integers(-5, 6, size=(4, 5)),
    "nan": XN, "inf": np.where(X > 1, np.inf, np.where(X < -1, -np.inf, X)), "view": X[::-1, ::-2],
}


def _cmp(ref, got, what, rtol):
    if isinstance(ref, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(ref), what
        for r, g in zip(ref, got):
            _cmp(r, g, what, rtol)
        return
    r, g = np.asarray(ref), np.asarray(got)
    assert g.dtype == r.dtype, f"{what}: dtype {g.dtype} != NumPy's {r.dtype}"
    assert g.shape == r.shape, f"{what}: shape {g.shape} != NumPy's {r.shape}"
    if r.dtype.kind in "fc":
        tol = rtol if r.dtype not in (np.float32, np.complex64) else max(rtol, 2e-6)
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(g, r, err_msg=what)


def check(fn, *args, rtol=1e-12):
    """fn(np, *args) is the oracle; fn(jnp, ...) eagerly and under jit must match it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = fn(np, *args)
        eager = fn(jnp, *args)
        traced = tracejit.jit(lambda *a: fn(jnp, *a))(*args)
    _cmp(ref, eager, "eager", rtol)
    _cmp(ref, traced, "jit", rtol)


# --------------------------------------------------------------------------- quantiles


@pytest.mark.parametrize("kind", list(ARRAYS))
@pytest.mark.parametrize("axis", [None, (0, 1)])
def test_median_and_nan_variants(kind, axis):
    a = ARRAYS[kind]
    check(lambda m, x: m.median(x, axis=axis), a)
    check(lambda m, x: m.nanmedian(x, axis=axis, keepdims=True), a)


@pytest.mark.parametrize("kind,method", [("f64", "linear"), ("f32", "linear"), ("int", "linear"), ("nan", "linear"),
                                         ("view", "lower"), ("int", "higher"), ("nan", "nearest"),
                                         ("f32", "midpoint"), ("int", "midpoint")])
def test_quantile_methods(kind, method):
    a = ARRAYS[kind]
    check(lambda m, x: m.quantile(x, 0.3, axis=1, method=method), a)
    check(lambda m, x, q: m.nanquantile(x, q, axis=0, method=method, keepdims=True), a, np.array([0.0, 0.45, 1.0]))


@pytest.mark.parametrize("kind", ["f64", "f32", "int", "nan", "inf"])
def test_percentile_weak_and_strong_q(kind):
    a = ARRAYS[kind]
    check(lambda m, x: m.percentile(x, 40), a)                          # Python q: keeps float32
    check(lambda m, x: m.percentile(x, np.array([10.0, 95.0]), axis=0), a)  # float64 q: float64 result
    check(lambda m, x: m.nanpercentile(x, [25, 50], axis=1), a)
    check(lambda m, x: m.quantile(x, 1), a)                              # int q: no interpolation


@pytest.mark.parametrize("a", [np.float64(2.5), np.array(3), np.array([7.0]), np.zeros((3, 0)),
                               np.array([1.0, np.nan, np.inf]), np.array([True, False, True])],
                         ids=["scalar", "0d-int", "size1", "empty", "nan-inf", "bool"])
def test_quantile_edge_cases(a):
    cases = [lambda m, x: m.median(x), lambda m, x: m.nanmedian(x), lambda m, x: m.quantile(x, 0.7),
             lambda m, x: m.nanquantile(x, [0.2, 1.0]), lambda m, x: m.percentile(x, 50, method="lower")]
    for fn in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                fn(np, a)
            except Exception as e:  # NumPy raises: so must we (same type)
                with pytest.raises(type(e)):
                    tracejit.jit(lambda x: fn(jnp, x))(a)
                continue
        check(fn, a)


def test_quantile_unsupported_method_is_clear():
    with pytest.raises(NotImplementedError, match="hazen"):
        tracejit.jit(lambda x: jnp.quantile(x, 0.5, method="hazen"))(X)
    np.testing.assert_allclose(jnp.quantile(X, 0.5, method="hazen"), np.quantile(X, 0.5, method="hazen"))


# --------------------------------------------------------------------------- average / cov / corrcoef


@pytest.mark.parametrize("kind", ["f64", "f32", "int", "view", "nan"])
def test_average_cov_corrcoef(kind):
    a = ARRAYS[kind]
    n = a.shape[1]
    check(lambda m, x: m.average(x, returned=True), a)
    check(lambda m, x: m.average(x, axis=1, weights=np.arange(1, n + 1), returned=True, keepdims=True), a)
    check(lambda m, x, w: m.average(x, axis=(0, 1), weights=w), a, np.abs(a.astype(float)) + 0.5)
    check(lambda m, x: m.cov(x), a)
    check(lambda m, x: m.cov(x, rowvar=False, bias=True), a)
    check(lambda m, x: m.cov(x, fweights=np.arange(1, n + 1), aweights=np.linspace(0.1, 1, n)), a)
    check(lambda m, x: m.cov(x[0], x[1], ddof=0), a)
    check(lambda m, x: m.corrcoef(x), a)
    check(lambda m, x: m.corrcoef(x[0], x[2]), a)


def test_cov_special_shapes_and_dtype():
    check(lambda m, x: m.cov(x), np.array([1.0, 2.0, 4.0], np.float32))
    check(lambda m, x: m.cov(x, dtype=np.float32), X)
    check(lambda m, x: m.cov(x), X[:1])
    check(lambda m, x: m.cov(x), X[:, :1])  # one observation: dof 0 gives inf/nan like NumPy


# --------------------------------------------------------------------------- interp / gradient / trapezoid

XP = np.array([0.0, 1.0, 2.0, 2.0, 4.0])
FP = np.array([1.0, 3.0, 2.0, 5.0, 0.0])
XQ = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, np.nan, np.inf, -np.inf])


def test_interp():
    check(lambda m, x, xp, fp: m.interp(x, xp, fp), XQ, XP, FP)
    check(lambda m, x, xp, fp: m.interp(x, xp, fp, left=-7.0, right=9.0), XQ, XP, FP)
    check(lambda m, x, xp, fp: m.interp(x, xp, fp), XQ.astype(np.float32), XP.astype(np.int32), FP)
    check(lambda m, x, xp, fp: m.interp(x, xp, fp), XQ, XP, FP + 1j * FP[::-1])
    check(lambda m, x, xp, fp: m.interp(x, xp, fp), XQ, XP[:1], FP[:1])
    check(lambda m, x, xp, fp: m.interp(x, xp, fp, period=3), XQ[:8], np.array([2.5, 0.0, 1.5]), FP[:3])
    check(lambda m, x, xp, fp: m.interp(x, xp, fp), np.float64(1.5), XP, FP)


@pytest.mark.parametrize("kind", ["f64", "f32", "int", "view", "inf"])
def test_gradient_and_trapezoid(kind):
    a = ARRAYS[kind]
    n0, n1 = a.shape
    check(lambda m, x: m.gradient(x), a)
    check(lambda m, x: m.gradient(x, 2.0, axis=1, edge_order=2), a)
    check(lambda m, x: m.gradient(x, np.array([0, 1, 3, 4.5])[:n0], np.arange(n1) ** 1.5), a)
    check(lambda m, x: m.gradient(x, np.array([0, 1, 3, 4.5])[:n0], axis=0, edge_order=2), a)
    check(lambda m, x: m.trapezoid(x), a)
    check(lambda m, x: m.trapezoid(x, x=np.array([0, 1, 3, 4.5])[:n0], axis=0), a)
    check(lambda m, x: m.trapezoid(x, dx=0.5, axis=0), a)


def test_gradient_errors_match_numpy():
    with pytest.raises(ValueError):
        tracejit.jit(lambda x: jnp.gradient(x, edge_order=2))(np.ones(2))
    with pytest.raises(TypeError):
        tracejit.jit(jnp.gradient)(np.array([True, False, True]))


def test_histogram2d_dd():
    s = RNG.normal(size=(20, 3))
    check(lambda m, x, y: m.histogram2d(x, y, bins=4), s[:, 0], s[:, 1])
    check(lambda m, x, y: m.histogram2d(x, y, bins=[3, 5], range=[[-1, 1], [-2, 2]], density=True), s[:, 0], s[:, 1])
    check(lambda m, x: m.histogramdd(x, bins=(2, 3, 2), weights=np.arange(20.0)), s)
    check(lambda m, x: m.histogramdd(x, bins=[np.array([-1.0, 0.0, 1.0])] * 3), s)


# --------------------------------------------------------------------------- set operations

SETS = {
    "int": (np.array([3, 1, 4, 1, 5, 9, 2, 6]), np.array([1, 5, 7, 2, 2])),
    "nan": (np.array([3.0, np.nan, 1.0, np.nan, 2.0]), np.array([np.nan, 1.0, 7.0])),
    "mixed": (np.array([3, 1, 2], np.int32), np.array([1.0, 2.5])),
    "views": (np.arange(10)[::-3], np.arange(8)[::-2]),
    "empty": (np.zeros(0), np.array([1.0, 2.0])),
    "bool": (np.array([True, True]), np.array([False])),
}


@pytest.mark.parametrize("case", list(SETS))
def test_set_ops(case):
    a, b = SETS[case]
    check(lambda m, x, y: m.isin(x, y), a, b)
    check(lambda m, x, y: m.isin(x, y, invert=True), a, np.arange(40))  # the sorted-search path
    check(lambda m, x, y: m.in1d(x, y) if m is jnp else np.isin(x.ravel(), y), a, b)
    for name in ("union1d", "intersect1d", "setdiff1d", "setxor1d"):
        size = getattr(np, name)(a, b).size
        check(lambda m, x, y: getattr(m, name)(x, y, **({} if m is np else {"size": size})), a, b)
    size = np.intersect1d(a, b).size
    check(lambda m, x, y: m.intersect1d(x, y, return_indices=True, **({} if m is np else {"size": size})), a, b)


def test_set_ops_padding_and_errors():
    a, b = SETS["int"]
    for name in ("union1d", "intersect1d", "setdiff1d", "setxor1d"):
        fn = getattr(jnp, name)
        ref = getattr(np, name)(a, b)
        for fill in (None, -1):
            eager = fn(a, b, size=ref.size + 3, fill_value=fill)
            traced = tracejit.jit(lambda x, y: fn(x, y, size=ref.size + 3, fill_value=fill))(a, b)
            np.testing.assert_array_equal(eager, traced)
            np.testing.assert_array_equal(traced[:ref.size], ref)
            np.testing.assert_array_equal(traced[ref.size:], ref[0] if fill is None else fill)
        np.testing.assert_array_equal(tracejit.jit(lambda x, y: fn(x, y, size=1))(a, b), ref[:1])
        with pytest.raises(tracejit.ConcretizationTypeError, match="size="):
            tracejit.jit(fn)(a, b)


# --------------------------------------------------------------------------- index tricks

INDEXED = {"f64": np.arange(12.0).reshape(3, 4), "int": np.arange(12).reshape(3, 4),
           "view": np.arange(24.0).reshape(3, 8)[::-1, ::-2], "bool": np.arange(12).reshape(3, 4) % 3 == 0}


@pytest.mark.parametrize("kind", list(INDEXED))
def test_insert_delete(kind):
    a = INDEXED[kind]
    check(lambda m, x: m.insert(x, 1, 99.5), a)
    check(lambda m, x: m.insert(x, [0, 2, 2], [7, 8, 9], axis=1), a)
    check(lambda m, x, v: m.insert(x, 1, v, axis=0), a, np.ones(a.shape[1]))
    check(lambda m, x: m.insert(x, slice(1, 3), -1, axis=-1), a)
    check(lambda m, x: m.delete(x, [0, 2]), a)
    check(lambda m, x: m.delete(x, -1, axis=1), a)
    check(lambda m, x: m.delete(x, np.array([True, False, True]), axis=0), a)
    check(lambda m, x: m.delete(x, slice(None, None, 2), axis=1), a)


def test_insert_delete_need_static_positions():
    with pytest.raises(tracejit.ConcretizationTypeError, match="static"):
        tracejit.jit(lambda x, i: jnp.delete(x, i))(np.arange(4.0), np.array([1]))


def test_index_generators_and_ix():
    x = np.zeros((3, 4))
    check(lambda m, a: m.indices((2, 3)), x)
    check(lambda m, a: m.indices((2, 3), sparse=True, dtype=np.int32), x)
    check(lambda m, a: m.diag_indices(3, 3), x)
    check(lambda m, a: m.diag_indices_from(a[:, :3]), x)
    check(lambda m, a: (m.tril_indices(3, -1, 4), m.triu_indices(4, 1)), x)
    check(lambda m, a: (m.tril_indices_from(a, 1), m.triu_indices_from(a, -1)), x)
    check(lambda m, a: m.mask_indices(3, m.triu, 1), x)
    check(lambda m, p, q: m.ix_(p, q), np.array([0, 2]), np.array([1, 3, 0]))
    check(lambda m, a, p, q: a[m.ix_(p, q)], np.arange(12.0).reshape(3, 4), np.array([0, 2]), np.array([3, 0]))
    assert jnp.s_[1:2, ::-1] == np.s_[1:2, ::-1]


@pytest.mark.parametrize("kind", ["f64", "int", "view"])
def test_r_c(kind):
    a = INDEXED[kind]
    check(lambda m, x: m.r_[x[0], 0, x[1], 1:3], a)
    check(lambda m, x: m.r_[x, x], a)
    check(lambda m, x: m.c_[x[0], x[1]], a)
    check(lambda m, x: m.c_[x, x], a)
    check(lambda m, x: m.r_["0,2", x[0], x[1]], a)
    check(lambda m, x: m.r_["-1", x, x], a)
    check(lambda m, x: m.r_["0,2,0", x[0], x[1]], a)


def test_unravel_ravel_multi_index():
    check(lambda m, i: m.unravel_index(i, (3, 4)), np.array([0, 5, 11]))
    check(lambda m, i: m.unravel_index(i, (3, 4), order="F"), np.array([[0, 5], [11, 7]]))
    check(lambda m, i: m.unravel_index(i, (5,)), np.int64(3))
    check(lambda m, i, j: m.ravel_multi_index((i, j), (3, 4), mode="clip"), np.array([0, 2, 5]), np.array([3, 1, -1]))
    check(lambda m, i, j: m.ravel_multi_index((i, j), (3, 4), mode=("wrap", "clip"), order="F"),
          np.array([0, 2, 5]), np.array([3, 1, -1]))
    with pytest.raises(tracejit.ConcretizationTypeError, match="clip"):
        tracejit.jit(lambda i: jnp.ravel_multi_index((i, i), (3, 4)))(np.array([1]))


# --------------------------------------------------------------------------- polynomials

POLYS = {"f64": np.array([1.0, -2.0, 3.0]), "int": np.array([2, 0, -1, 5]), "f32": np.array([1.5, -2.0], np.float32),
         "cplx": np.array([1.0, 2j, -1.0])}


@pytest.mark.parametrize("kind", list(POLYS))
def test_polynomials(kind):
    p = POLYS[kind]
    q = POLYS["int"]
    check(lambda m, c, z: m.polyval(c, z), p, np.linspace(-2, 2, 5))
    check(lambda m, c, z: m.polyval(c, z), p, np.arange(4))
    check(lambda m, c, z: m.polyval(c, z), p, np.float64(0.5))
    check(lambda m, c, d: m.polyadd(c, d), p, q)
    check(lambda m, c, d: m.polysub(d, c), p, q[:2])
    check(lambda m, c, d: m.polymul(c, d), p, q)
    check(lambda m, c: m.polyder(c, 2), p)
    check(lambda m, c: m.polyint(c, 2, k=[1.0, 2.0]), p)
    check(lambda m, c: m.polyint(c), p)
    check(lambda m, c: m.vander(c, 4), p)
    if kind != "cplx":  # NumPy returns real coefficients for conjugate pairs (value-dependent)
        check(lambda m, c: m.poly(c), p)


def test_polyfit_and_roots():
    xs = np.linspace(0, 1, 7)
    ys = 3 * xs ** 2 - xs + 0.5 + 0.01 * np.sin(9 * xs)
    check(lambda m, a, b: m.polyfit(a, b, 2), xs, ys, rtol=1e-9)
    check(lambda m, a, b: m.polyfit(a, b, 1, w=np.arange(1, 8.0)), xs, np.stack([ys, 2 * ys], 1), rtol=1e-9)
    np.testing.assert_allclose(jnp.roots(np.array([1.0, -3.0, 2.0])), np.roots(np.array([1.0, -3.0, 2.0])))
    with pytest.raises(NotImplementedError, match="roots"):
        tracejit.jit(jnp.roots)(np.array([1.0, -3.0, 2.0]))


# --------------------------------------------------------------------------- function application


@pytest.mark.parametrize("kind", ["f64", "int", "view"])
def test_vectorize_apply_piecewise(kind):
    a = INDEXED[kind]
    check(lambda m, x: m.vectorize(lambda u, v: u * 2 + v)(x, x[0]), a)
    check(lambda m, x: m.vectorize(lambda r: (r * r).sum(), signature="(n)->()")(x), a)
    check(lambda m, x: m.vectorize(lambda r, s: r * s, excluded={1})(x, 3), a)
    check(lambda m, x: m.apply_along_axis(lambda r: r[::-1] * 2, 0, x), a)
    check(lambda m, x: m.apply_along_axis(lambda r: r.sum(), 1, x), a)
    check(lambda m, x: m.apply_along_axis(lambda r: m.outer(r, r[:2]), 1, x), a)
    check(lambda m, x: m.apply_over_axes(m.sum, x, [0, 1]), a)
    check(lambda m, x: m.piecewise(x, [x < 3, x > 7], [lambda v: -v, 10, lambda v: v * 2]), a)
    check(lambda m, x: m.piecewise(x, [x < 3], [lambda v: v * v, 1]), a)


# --------------------------------------------------------------------------- gradients


def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


GRAD_FNS = {
    "median": lambda m: lambda z: m.median(z),
    "quantile": lambda m: lambda z: m.quantile(z, 0.3),
    "percentile": lambda m: lambda z: m.sum(m.percentile(z, np.array([10.0, 75.0]))),
    "nanquantile": lambda m: lambda z: m.nanquantile(z, 0.6),
    "interp_fp": lambda m: lambda z: m.sum(m.interp(np.array([-0.5, 0.1, 1.0]), np.array([-1.0, 0.0, 0.5, 2.0]), z[:4])),
    "interp_x": lambda m: lambda z: m.sum(m.interp(z, np.array([-1.0, 0.0, 0.5, 2.0]), np.array([1.0, 3.0, -2.0, 0.5]))),
    "average": lambda m: lambda z: m.average(z, weights=z * z),
    "cov": lambda m: lambda z: m.sum(m.cov(z.reshape(2, 3)) ** 2),
    "corrcoef": lambda m: lambda z: m.corrcoef(z.reshape(2, 3))[0, 1],
    "trapezoid": lambda m: lambda z: m.trapezoid(z * z, x=m.cumsum(m.abs(z))),
    "polyval": lambda m: lambda z: m.sum(m.polyval(z[:3], z[3:])),
    "gradient": lambda m: lambda z: m.sum(m.gradient(z * z, edge_order=2) ** 2),
    "polyfit": lambda m: lambda z: m.sum(m.polyfit(np.linspace(0, 1, 6), z, 2)),
}


@pytest.mark.parametrize("name", list(GRAD_FNS))
def test_grad_matches_finite_differences(name):
    x = np.array([0.3, -1.2, 2.5, 0.7, 1.9, -0.4])
    ref = _fd(GRAD_FNS[name](np), x)
    g = tracejit.grad(GRAD_FNS[name](jnp))(x)
    gj = tracejit.jit(tracejit.grad(GRAD_FNS[name](jnp)))(x)
    np.testing.assert_allclose(g, ref, atol=1e-5)
    np.testing.assert_allclose(gj, ref, atol=1e-5)
