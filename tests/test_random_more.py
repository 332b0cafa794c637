"""tracejit.random's further samplers: JAX's values, jit / vmap, shapes and dtypes, distributions.

Every sampler follows jax.random's algorithm and key use, so its values are
compared with JAX 0.10's (when installed) eagerly and under jit. Distribution
checks use fixed keys (deterministic) and bounds of about alpha = 0.001.
"""
import doctest
import functools
import math
import warnings

import numpy as np
import pytest

import tracejit
from tracejit import random as R

KEY = R.PRNGKey(7)
P3 = np.array([0.2, 0.3, 0.5])

# name -> (sampler name, args after the key, kwargs, exact). "exact": integer-valued or
# built from correctly rounded operations only, so JAX's values are reproduced bit for bit.
CASES = {
    "cauchy": ("cauchy", ((40,),), {}, False),
    "cauchy_f32": ("cauchy", ((40,), np.float32), {}, False),
    "lognormal": ("lognormal", (0.7, (40,)), {}, False),
    "lognormal_default": ("lognormal", (), {"shape": (6,)}, False),
    "lognormal_c128": ("lognormal", (), {"shape": (6,), "dtype": np.complex128}, False),
    "rayleigh": ("rayleigh", (np.array([0.5, 2.0]), (20, 2)), {}, False),
    "pareto": ("pareto", (3.0, (40,)), {}, False),
    "weibull_min": ("weibull_min", (1.5, 2.0, (40,)), {}, False),
    "weibull_min_arr": ("weibull_min", (np.array([1.0, 3.0]), 0.7, (20, 2)), {}, False),
    "triangular": ("triangular", (0.0, np.array([0.5, 1.0, 2.5]), 3.0, (10, 3)), {}, True),
    "triangular_f32": ("triangular", (-1.0, 0.0, 2.0, (40,), np.float32), {}, True),
    "wald": ("wald", (np.array([0.5, 2.0]),), {"shape": (20, 2)}, False),
    "chisquare": ("chisquare", (3.0, (40,)), {}, False),
    "chisquare_small_df": ("chisquare", (np.array([0.3, 7.0]),), {}, False),
    "f": ("f", (3.0, 5.0, (40,)), {}, False),  # JAX 0.10's f fails on array dfs with a shape
    "t": ("t", (4.0, (40,)), {}, False),
    "t_f32": ("t", (np.array([1.5, 30.0], np.float32), (20, 2), np.float32), {}, False),
    "generalized_normal": ("generalized_normal", (1.5, (40,)), {}, False),
    "generalized_normal_int_p": ("generalized_normal", (3, (40,)), {}, False),
    "ball": ("ball", (3,), {"shape": (20,)}, False),
    "ball_p1": ("ball", (4, 1.0), {"shape": (10,)}, False),
    "maxwell": ("maxwell", ((40,),), {}, False),
    "double_sided_maxwell": ("double_sided_maxwell", (1.0, 2.0, (40,)), {}, False),
    "double_sided_maxwell_params": ("double_sided_maxwell", (np.zeros(3), np.array([1.0, 2.0, 3.0])), {},
                                    False),
    "orthogonal": ("orthogonal", (4,), {"shape": (2,)}, False),
    "orthogonal_wide": ("orthogonal", (3,), {"m": 5}, False),
    "orthogonal_tall_f32": ("orthogonal", (5,), {"m": 2, "dtype": np.float32}, False),
    "rademacher": ("rademacher", ((40,),), {}, True),
    "rademacher_f32": ("rademacher", ((40,), np.float32), {}, True),
    "geometric": ("geometric", (np.array([0.05, 0.3, 0.9]), (20, 3)), {}, True),
    "geometric_i32": ("geometric", (0.3, (40,), np.int32), {}, True),
    "binomial_inversion": ("binomial", (10, 0.3, (60,)), {}, True),
    "binomial_btrs": ("binomial", (1000, 0.3, (60,)), {}, True),
    "binomial_flip": ("binomial", (40.0, 0.8, (60,)), {}, True),
    # Many BTRS draws with k <= 9 and k > 9: JAX's Stirling-tail table and (clamped) series.
    "binomial_btrs_many": ("binomial", (np.array([35.0, 120.0]), 0.33, (1500, 2)), {}, True),
    "binomial_edges": ("binomial", (np.array([5.0, 50.0, 500.0, np.nan, -1.0, np.inf, 0.0, 7.5]),
                                    np.array([[0.1], [0.7], [-0.1]])), {}, True),
    "binomial_p01": ("binomial", (np.array([0.0, 7.0, 7.9, 30.0]), np.array([[0.0], [1.0]])), {}, True),
    "binomial_f32": ("binomial", (np.float32(200), np.float32(0.4), (30,)), {"dtype": np.float32}, True),
    "multinomial": ("multinomial", (10, P3), {}, True),
    "multinomial_batched": ("multinomial", (np.array([10.0, 200.0]), P3), {"shape": (2, 3)}, True),
}


def _run(case, key, rmod=R):
    name, args, kw, _ = CASES[case]
    return getattr(rmod, name)(key, *args, **kw)


def _close(out, ref, exact):
    out, ref = np.asarray(out), np.asarray(ref)
    assert out.dtype == ref.dtype and out.shape == ref.shape, (out.dtype, out.shape, ref.dtype, ref.shape)
    if exact or ref.dtype.kind not in "fc":
        np.testing.assert_array_equal(out, ref)
    else:
        # tan/log/pow/sqrt differ from XLA's (or NumPy's) by a few ulp; a different
        # algorithm or key use is off by far more.
        rtol = 1e-12 if ref.dtype in (np.float64, np.complex128) else 2e-5
        np.testing.assert_allclose(out, ref, rtol=rtol, atol=8 * np.finfo(ref.dtype).eps)


@functools.lru_cache(maxsize=None)
def _jax_value(case):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.random as JR
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(_run(case, jax.numpy.asarray(KEY), JR))


@functools.lru_cache(maxsize=None)
def _jit_value(case):
    return np.asarray(tracejit.jit(lambda k: _run(case, k))(KEY))


@pytest.mark.parametrize("case", sorted(CASES))
def test_eager_matches_jax(case):
    _close(_run(case, KEY), _jax_value(case), CASES[case][3])


@pytest.mark.parametrize("case", sorted(CASES))
def test_jit_matches_jax(case):
    _close(_jit_value(case), _jax_value(case), CASES[case][3])


@pytest.mark.parametrize("case", sorted(CASES))
def test_jit_matches_eager(case):
    # Compiled transcendental functions may differ from NumPy's by an ulp or two.
    _close(_jit_value(case), _run(case, KEY), CASES[case][3])


VMAP_CASES = ["cauchy", "t", "wald", "f", "ball", "double_sided_maxwell", "orthogonal", "geometric",
              "rademacher", "binomial_edges", "multinomial_batched", "triangular"]


@pytest.mark.parametrize("case", VMAP_CASES)
def test_vmap_over_keys_matches_loop(case):
    keys = R.split(R.PRNGKey(3), 3)
    ref = np.stack([np.asarray(_run(case, k)) for k in keys])
    out = tracejit.vmap(lambda k: _run(case, k))(keys)
    _close(out, ref, CASES[case][3])
    _close(tracejit.jit(tracejit.vmap(lambda k: _run(case, k)))(keys), ref, CASES[case][3])


def test_results_depend_on_key_and_differ_between_samplers():
    a, b = R.t(R.PRNGKey(0), 3.0, (8,)), R.t(R.PRNGKey(1), 3.0, (8,))
    assert not np.allclose(a, b)
    # Sub-keys are used as JAX splits them: f's numerator is not its denominator's draw.
    x = R.f(KEY, 4.0, 4.0, (8,))
    assert not np.allclose(x, 1.0) and np.all(x > 0)


# ----------------------------------------------------------------------------- shapes, dtypes, errors

def test_default_dtypes_and_shapes():
    floats = [R.cauchy(KEY), R.lognormal(KEY), R.rayleigh(KEY, 1.0), R.pareto(KEY, 2.0),
              R.weibull_min(KEY, 1.0, 1.0), R.triangular(KEY, 0.0, 0.5, 1.0), R.wald(KEY, 1.0),
              R.chisquare(KEY, 2.0), R.f(KEY, 2.0, 3.0), R.t(KEY, 2.0), R.generalized_normal(KEY, 2.0),
              R.maxwell(KEY), R.double_sided_maxwell(KEY, 0.0, 1.0), R.binomial(KEY, 5, 0.5)]
    for x in floats:
        assert np.shape(x) == () and np.asarray(x).dtype == np.float64
    assert R.multinomial(KEY, 5, P3).dtype == np.float64
    assert R.rademacher(KEY).dtype == np.int64 and R.geometric(KEY, 0.5).dtype == np.int64
    assert R.ball(KEY, 3).shape == (3,) and R.orthogonal(KEY, 3).shape == (3, 3)
    assert R.orthogonal(KEY, 2, (4,), np.complex64).dtype == np.complex64
    assert R.lognormal(KEY, 0.5, (2,), np.complex64).dtype == np.complex64
    for fn in (lambda d: R.cauchy(KEY, (3,), d), lambda d: R.t(KEY, 3.0, (3,), d),
               lambda d: R.binomial(KEY, 5, 0.5, (3,), d), lambda d: R.maxwell(KEY, (3,), d)):
        assert fn(np.float32).dtype == np.float32
        assert fn(np.float32).shape == (3,)
    assert R.cauchy(KEY, (0, 4)).shape == (0, 4)
    assert R.rademacher(KEY, (3,), np.int8).dtype == np.int8


def test_parameter_broadcasting():
    df = np.array([1.0, 2.0, 3.0])
    assert R.t(KEY, df).shape == (3,)
    assert R.chisquare(KEY, df, (2, 3)).shape == (2, 3)
    assert R.f(KEY, df, np.ones((2, 1))).shape == (2, 3)
    assert R.f(KEY, 3.0, df, (4, 3)).shape == (4, 3)
    assert R.triangular(KEY, 0.0, np.full((2, 1), 0.5), df).shape == (2, 3)
    assert R.binomial(KEY, np.array([[5], [10]]), np.array([0.1, 0.5, 0.9])).shape == (2, 3)
    assert R.geometric(KEY, df / 4, (4, 3)).shape == (4, 3)
    assert R.multinomial(KEY, np.array([3.0, 4.0]), P3, shape=(2, 3)).shape == (2, 3)
    # weibull_min and double_sided_maxwell follow JAX's looser shape rules.
    assert R.weibull_min(KEY, df, 2.0).shape == (3,)
    assert R.double_sided_maxwell(KEY, np.zeros(3), 1.0).shape == (3, 3)
    assert R.double_sided_maxwell(KEY, np.zeros(3), 1.0, (2,)).shape == (2, 3)
    # Broadcast parameters give each element its own distribution.
    x = R.rayleigh(R.PRNGKey(2), np.array([1.0, 100.0]), (2000, 2))
    assert 50 < np.median(x[:, 1]) / np.median(x[:, 0]) < 200
    for call in (lambda: R.t(KEY, df, (2,)), lambda: R.wald(KEY, df, (3, 2)),
                 lambda: R.pareto(KEY, np.ones(4), (3,)), lambda: R.binomial(KEY, df, 0.5, (2,))):
        with pytest.raises(ValueError, match="broadcast"):
            call()


def test_dtype_errors():
    with pytest.raises(ValueError, match="float dtype"):
        R.cauchy(KEY, (2,), np.int32)
    with pytest.raises(ValueError, match="float dtype"):
        R.binomial(KEY, 5, 0.5, (2,), np.int32)
    with pytest.raises(ValueError, match="int dtype"):
        R.geometric(KEY, 0.5, (2,), np.float32)
    with pytest.raises(ValueError, match="safely cast"):
        R.t(KEY, np.array([3.0]), dtype=np.float32)
    assert R.t(KEY, np.array([3]), dtype=np.float32).dtype == np.float32  # ints cast safely
    assert R.t(KEY, 3.0, dtype=np.float32).dtype == np.float32  # Python floats are weak
    with pytest.raises(TypeError, match="concrete"):
        tracejit.jit(lambda k, n: R.orthogonal(k, n))(KEY, 3)
    with pytest.raises(ValueError, match="single key"):
        R.t(R.split(KEY, 2), 3.0)


def test_binomial_edge_values():
    n = np.array([0.0, 7.0, 7.9, np.inf, np.nan, -2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NaN / inf parameters are handled silently
        # n = inf with p = 0 or 1 terminates (JAX 0.10 loops forever there).
        np.testing.assert_array_equal(R.binomial(KEY, n, 0.0), [0, 0, 0, np.inf, np.nan, np.nan])
        np.testing.assert_array_equal(R.binomial(KEY, n, 1.0), [0, 7, 7, np.inf, np.nan, np.nan])
        np.testing.assert_array_equal(tracejit.jit(lambda k: R.binomial(k, n, 1.0))(KEY),
                                      [0, 7, 7, np.inf, np.nan, np.nan])
        assert np.isnan(R.binomial(KEY, 5.0, np.array([-0.1, 1.5, np.nan]))).all()
        assert (R.geometric(KEY, 1.0, (5,)) == 1).all()


# ----------------------------------------------------------------------------- key utilities

def test_key_impl():
    assert R.key_impl(R.key(0)) == "threefry2x32"
    assert R.key_impl(R.split(KEY, 4)) == "threefry2x32"
    with pytest.raises(TypeError, match="PRNG key"):
        R.key_impl(np.zeros(2, np.int32))


def test_clone_values_and_reuse_tracking():
    np.testing.assert_array_equal(R.clone(KEY), KEY)
    assert R.clone(KEY) is not KEY
    np.testing.assert_array_equal(R.clone(R.split(KEY, 3)), R.split(KEY, 3))

    def cloned(k):
        k2 = R.clone(k)
        return R.uniform(k, (2,)) + R.normal(k2, (2,))

    def reused(k):
        return R.uniform(k, (2,)) + R.normal(k, (2,))

    old = tracejit.config.key_reuse
    try:
        tracejit.config.update("key_reuse", "error")
        np.testing.assert_allclose(tracejit.jit(cloned)(KEY), cloned(KEY), rtol=1e-14)
        with pytest.raises(R.KeyReuseError):
            tracejit.make_jaxpr(reused)(KEY)
        # Every new sampler consumes its key.
        with pytest.raises(R.KeyReuseError):
            tracejit.make_jaxpr(lambda k: R.t(k, 3.0) + R.binomial(k, 4, 0.5))(KEY)
    finally:
        tracejit.config.update("key_reuse", old)


# ----------------------------------------------------------------------------- distributions

N = 20000


def _ks(samples, cdf):
    x = np.sort(np.asarray(samples, np.float64).ravel())
    f = cdf(x)
    n = len(x)
    d = max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))
    assert d < 1.95 / math.sqrt(n), d  # alpha = 0.001


def _discrete_cdf_check(samples, cdf, support):
    """Empirical vs exact CDF on integer points (the KS bound is conservative for discrete laws)."""
    x = np.asarray(samples, np.float64).ravel()
    emp = np.array([np.mean(x <= k) for k in support])
    assert np.max(np.abs(emp - cdf(support))) < 1.95 / math.sqrt(len(x))


def _stats():
    return pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ks_continuous(dtype):
    st = _stats()
    key = R.PRNGKey(11)
    ks = R.split(key, 16)
    checks = [
        (R.cauchy(ks[0], (N,), dtype), st.cauchy.cdf),
        (R.lognormal(ks[1], 0.6, (N,), dtype), st.lognorm(0.6).cdf),
        (R.rayleigh(ks[2], 1.7, (N,), dtype), st.rayleigh(scale=1.7).cdf),
        (R.pareto(ks[3], 2.5, (N,), dtype), st.pareto(2.5).cdf),
        (R.weibull_min(ks[4], 2.0, 0.8, (N,), dtype), st.weibull_min(0.8, scale=2.0).cdf),
        (R.triangular(ks[5], -1.0, 0.5, 2.0, (N,), dtype), st.triang(0.5, loc=-1.0, scale=3.0).cdf),
        (R.wald(ks[6], 1.5, (N,), dtype), st.invgauss(1.5).cdf),
        (R.chisquare(ks[7], 3.5, (N,), dtype), st.chi2(3.5).cdf),
        (R.chisquare(ks[8], 0.4, (N,), dtype), st.chi2(0.4).cdf),
        (R.f(ks[9], 4.0, 7.0, (N,), dtype), st.f(4.0, 7.0).cdf),
        (R.t(ks[10], 2.5, (N,), dtype), st.t(2.5).cdf),
        (R.generalized_normal(ks[11], 1.3, (N,), dtype), st.gennorm(1.3).cdf),
        (R.generalized_normal(ks[12], 4.0, (N,), dtype), st.gennorm(4.0).cdf),
        (R.maxwell(ks[13], (N,), dtype), st.maxwell.cdf),
        (R.double_sided_maxwell(ks[14], 1.0, 2.0, (N,), dtype),
         lambda x: 0.5 + 0.5 * np.sign(x - 1.0) * st.maxwell.cdf(np.abs(x - 1.0) / 2.0)),
    ]
    for i, (x, cdf) in enumerate(checks):
        assert np.asarray(x).dtype == dtype, i
        _ks(x, cdf)


def test_moments_and_supports():
    ks = R.split(R.PRNGKey(12), 6)
    x = R.pareto(ks[0], 3.0, (N,))
    assert x.min() >= 1.0 and abs(x.mean() - 1.5) < 0.05
    t = R.triangular(ks[1], 2.0, 2.5, 4.0, (N,))
    assert t.min() >= 2.0 and t.max() <= 4.0 and abs(t.mean() - 8.5 / 3) < 0.02
    w = R.wald(ks[2], 2.0, (N,))
    assert w.min() > 0 and abs(w.mean() - 2.0) < 0.15 and abs(w.var() - 8.0) / 8.0 < 0.25
    r = R.rademacher(ks[3], (N,))
    assert set(np.unique(r).tolist()) == {-1, 1} and abs(r.mean()) < 5 / math.sqrt(N)
    c = R.cauchy(ks[4], (N,))
    assert abs(np.median(c)) < 0.05 and abs(np.percentile(c, 75) - 1.0) < 0.06
    assert np.all(R.rayleigh(ks[5], 1.0, (1000,)) >= 0) and np.all(R.maxwell(ks[5], (1000,)) >= 0)


@pytest.mark.parametrize("p", [0.07, 0.5, 0.95])
def test_geometric_distribution(p):
    st = _stats()
    g = R.geometric(R.PRNGKey(13), p, (N,))
    assert g.min() >= 1
    _discrete_cdf_check(g, st.geom(p).cdf, np.arange(1, 60))
    assert abs(g.mean() - 1 / p) < 5 * math.sqrt((1 - p) / p ** 2 / N) + 1e-9


@pytest.mark.parametrize("n,p", [(10, 0.3), (3, 0.5), (1000, 0.3), (60, 0.85), (25, 0.5), (200, 0.02)])
def test_binomial_distribution(n, p):
    st = _stats()
    b = R.binomial(R.PRNGKey(14), n, p, (N,))
    assert b.min() >= 0 and b.max() <= n and np.all(b == np.floor(b))
    _discrete_cdf_check(b, st.binom(n, p).cdf, np.arange(0, n + 1))
    assert abs(b.mean() - n * p) < 5 * math.sqrt(n * p * (1 - p) / N)


def test_multinomial_distribution():
    st = _stats()
    p = np.array([0.1, 0.25, 0.0, 0.65])
    c = R.multinomial(R.PRNGKey(15), 40, p, shape=(N, 4))
    np.testing.assert_array_equal(c.sum(-1), 40)
    assert (c[:, 2] == 0).all()
    for i in (0, 1, 3):
        _discrete_cdf_check(c[:, i], st.binom(40, p[i]).cdf, np.arange(0, 41))
    cov = np.cov(c[:, [0, 3]].T)[0, 1]
    assert abs(cov - (-40 * 0.1 * 0.65)) < 0.3
    big = R.multinomial(R.PRNGKey(16), np.array([5.0, 3000.0]), p[None, :], shape=(2, 4))
    np.testing.assert_array_equal(big.sum(-1), [5.0, 3000.0])


@pytest.mark.parametrize("p", [2.0, 1.0, 0.7])
def test_ball_uniform(p):
    d = 3
    x = R.ball(R.PRNGKey(17), d, p, (N,))
    norm = np.sum(np.abs(x) ** p, -1) ** (1 / p)
    assert norm.max() <= 1.0 + 1e-12
    _ks(norm, lambda r: np.clip(r, 0, 1) ** d)  # P(|x|_p <= r) = r**d in any d-dim norm ball
    assert np.all(np.abs(x.mean(0)) < 0.02)


def test_orthogonal_haar():
    st = _stats()
    n = 4
    q = R.orthogonal(R.PRNGKey(18), n, (5000,))
    np.testing.assert_allclose(np.einsum("bij,bik->bjk", q, q), np.broadcast_to(np.eye(n), q.shape), atol=1e-12)
    # A Haar-random column is uniform on the sphere: q_11**2 ~ Beta(1/2, (n-1)/2).
    _ks(q[:, 0, 0] ** 2, st.beta(0.5, (n - 1) / 2).cdf)
    assert abs(np.mean(np.linalg.det(q) > 0) - 0.5) < 0.05
    w = R.orthogonal(R.PRNGKey(19), 2, m=5)
    np.testing.assert_allclose(w @ w.T, np.eye(2), atol=1e-12)
    u = R.orthogonal(R.PRNGKey(20), 3, dtype=np.complex128)
    np.testing.assert_allclose(u.conj().T @ u, np.eye(3), atol=1e-12)


# ----------------------------------------------------------------------------- documentation

def test_docstring_examples():
    from tracejit.random import _discrete_samplers, _key_extras, _more_samplers
    for mod in (_more_samplers, _discrete_samplers, _key_extras):
        assert doctest.testmod(mod).failed == 0, mod.__name__
        for name in dir(mod):
            obj = getattr(mod, name)
            if callable(obj) and not name.startswith("_") and getattr(obj, "__module__", None) == mod.__name__:
                assert "Examples\n    --------" in (obj.__doc__ or ""), name
