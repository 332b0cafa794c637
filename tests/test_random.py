"""tracejit.random: JAX golden streams, the threefry / erf_inv primitives, jit, key reuse, distributions."""
import json
import math
import os
import warnings

import numpy as np
import pytest

import tracejit
from tracejit import random as R
from tracejit.core.primitive import ELEMENTWISE, decomposition_rules
from tracejit.ops.random_bits import erf_inv_p, threefry2x32_np, threefry2x32_p

GOLDEN = json.load(open(os.path.join(os.path.dirname(__file__), "data", "jax_random_golden.json")))
CASES = GOLDEN["cases"]
KEY = R.PRNGKey(0)


def _ids(cases):
    return [c["name"] for c in cases]


def _call(case, key=None):
    fn, args, kw = case["fn"], case["args"], dict(case["kwargs"])
    if fn in ("PRNGKey", "key"):
        return R.PRNGKey(args[0]) if fn == "PRNGKey" else R.key_data(R.key(args[0]))
    if fn == "PRNGKey_int32":
        return R.PRNGKey(np.int32(args[0]))
    if fn == "PRNGKey_uint32":
        return R.PRNGKey(np.uint32(args[0]))
    k = np.array(args[0], np.uint32) if key is None else key
    if fn == "bernoulli_f32":
        return R.bernoulli(k, np.asarray(kw["p"], np.float32))
    if fn == "permutation_arr":
        return R.permutation(k, np.array(kw.pop("x")), **kw)
    for name in ("a", "alpha", "lam", "logits"):
        if isinstance(kw.get(name), list):
            kw[name] = np.array(kw[name])
    if isinstance(kw.get("num"), list):
        kw["num"] = tuple(kw["num"])
    return getattr(R, fn)(k, **kw)


def _expected(case):
    return np.array(case["value"], dtype=case["dtype"]).reshape(case["shape"])


def _check(out, case):
    out, exp = np.asarray(out), _expected(case)
    assert out.dtype == exp.dtype and out.shape == exp.shape, (out.dtype, out.shape, exp.dtype, exp.shape)
    if case["exact"] or exp.dtype.kind != "f":
        np.testing.assert_array_equal(out, exp)
    else:
        # log/pow/erf_inv differ from XLA's by a few ulp; a wrong algorithm is off by far more.
        rtol = 1e-12 if exp.dtype == np.float64 else 2e-6
        np.testing.assert_allclose(out, exp, rtol=rtol, atol=8 * np.finfo(exp.dtype).eps)


def test_golden_metadata():
    assert GOLDEN["jax_threefry_partitionable"] is True
    assert GOLDEN["jax_enable_x64"] is True
    assert {c["fn"] for c in CASES if c["exact"]} >= {"bits", "uniform", "split", "fold_in", "randint",
                                                      "bernoulli", "permutation", "PRNGKey"}


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_golden_eager(case):
    _check(_call(case), case)


JIT_CASES = [c for c in CASES if c["args"] and isinstance(c["args"][0], list)]


@pytest.mark.parametrize("case", JIT_CASES, ids=_ids(JIT_CASES))
def test_golden_jit(case):
    # The key is a traced argument; shapes and parameters are static in the closure.
    f = tracejit.jit(lambda k: _call(case, k))
    _check(f(np.array(case["args"][0], np.uint32)), case)


# ----------------------------------------------------------------------------- threefry primitive

def test_threefry_known_answers():
    # Random123's known-answer vectors for Threefry-2x32-20 (also in JAX's tests).
    cases = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
             ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
             ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]
    for (k0, k1), (x0, x1), expected in cases:
        out = threefry2x32_p.bind(np.uint32(k0), np.uint32(k1), np.uint32(x0), np.uint32(x1))
        assert [int(o) for o in out] == list(expected)


@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (3, 5)])
@pytest.mark.parametrize("scalar_keys", [True, False])
def test_threefry_decomposition_matches_impl(shape, scalar_keys):
    rng = np.random.default_rng(1)
    kshape = () if scalar_keys else shape
    k0, k1 = (rng.integers(0, 2 ** 32, kshape, dtype=np.uint32) for _ in range(2))
    x0, x1 = (rng.integers(0, 2 ** 32, shape, dtype=np.uint32) for _ in range(2))
    impl = threefry2x32_np(k0, k1, x0, x1)
    # Under the root trace the elementwise primitives of the decomposition run NumPy.
    dec = decomposition_rules[threefry2x32_p](k0, k1, x0, x1)
    for a, b in zip(impl, dec):
        assert np.asarray(b).dtype == np.uint32
        np.testing.assert_array_equal(a, np.broadcast_to(b, a.shape))


def test_threefry_decomposition_is_elementwise():
    prog = tracejit.make_jaxpr(lambda *a: decomposition_rules[threefry2x32_p](*a))(
        np.uint32(1), np.uint32(2), np.zeros(4, np.uint32), np.arange(4, dtype=np.uint32))
    assert prog.eqns and all(e.primitive in ELEMENTWISE for e in prog.eqns)


def test_threefry_rejects_bad_operands():
    with pytest.raises(TypeError, match="uint32"):
        tracejit.make_jaxpr(lambda x: threefry2x32_p.bind(x, x, x, x))(np.zeros(3, np.int32))
    with pytest.raises(TypeError, match="equal shapes"):
        tracejit.make_jaxpr(lambda a, b: threefry2x32_p.bind(a, a, a, b))(
            np.zeros(3, np.uint32), np.zeros(4, np.uint32))


# ----------------------------------------------------------------------------- erf_inv

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_erf_inv_decomposition_matches_impl(dtype):
    x = np.concatenate([np.linspace(-1, 1, 2001), [np.nan, 1.5, -2.0, -0.0, 1e-30]]).astype(dtype)
    impl = erf_inv_p.bind(x)
    dec = decomposition_rules[erf_inv_p](x)[0]
    assert impl.dtype == dec.dtype == dtype
    np.testing.assert_array_equal(impl, dec)


def test_erf_inv_special_values():
    for dt in (np.float32, np.float64):
        out = R.erf_inv(np.array([-1, 1, 0, 2, np.nan], dt))
        assert out[0] == -np.inf and out[1] == np.inf and out[2] == 0
        assert np.isnan(out[3]) and np.isnan(out[4]) and out.dtype == dt


def test_erf_inv_accuracy_float64():
    # erf(erf_inv(y)) == y to ~1 ulp in the bulk, and the tails keep relative accuracy in 1 - y.
    y = np.concatenate([np.linspace(-0.999, 0.999, 4001), 1 - np.logspace(-15, -3, 50)])
    x = R.erf_inv(y)
    back = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(back, y, rtol=4e-16, atol=4e-16)
    tail = 1 - np.logspace(-15, -3, 50)
    xt = R.erf_inv(tail)
    # w = -log1p(-y*y) as XLA: y*y rounds near |y| = 1, so 1 - y keeps ~8 digits there (as in JAX).
    np.testing.assert_allclose([math.erfc(v) for v in xt], 1 - tail, rtol=1e-8)


def test_erf_inv_accuracy_float32():
    y = np.linspace(-0.9999, 0.9999, 20001).astype(np.float32)
    ref = R.erf_inv(y.astype(np.float64))
    out = R.erf_inv(y).astype(np.float64)
    # Giles' single-precision polynomials (XLA's, so JAX's normals): ~1 ulp in the bulk,
    # relative error up to ~3.5e-6 in the |y| > 0.9966 branch.
    ulp = np.abs(out - ref) / np.spacing(np.abs(ref).astype(np.float32))
    assert np.median(ulp) < 1 and np.percentile(ulp, 99) < 4
    np.testing.assert_allclose(out, ref, rtol=5e-6, atol=1e-37)


# ----------------------------------------------------------------------------- keys

def test_key_data_round_trip_and_batches():
    k = R.key(5)
    assert R.key_data(k).tolist() == R.PRNGKey(5).tolist() == [0, 5]
    ks = R.split(k, 4)
    assert ks.shape == (4, 2) and ks.dtype == np.uint32
    np.testing.assert_array_equal(R.key_data(R.wrap_key_data(R.key_data(ks))), ks)
    assert R.split(k, (2, 3)).shape == (2, 3, 2)
    assert R.split(k, 0).shape == (0, 2)
    with pytest.raises(ValueError, match="single key"):
        R.split(ks)
    with pytest.raises(ValueError, match="single key"):
        R.uniform(ks, (2,))
    with pytest.raises(TypeError, match="PRNG key"):
        R.uniform(np.zeros(2, np.int32))
    with pytest.raises(TypeError, match="scalar"):
        R.fold_in(k, np.arange(2))
    with pytest.raises(TypeError, match="integer"):
        R.PRNGKey(1.5)


def test_seed_traced_matches_eager():
    for seed in (np.int64(-3), np.int64(2 ** 40 + 1), np.int32(-7), np.uint32(9)):
        np.testing.assert_array_equal(tracejit.jit(R.PRNGKey)(seed), R.PRNGKey(seed))
    np.testing.assert_array_equal(tracejit.jit(R.fold_in)(KEY, np.int32(-1)), R.fold_in(KEY, 2 ** 32 - 1))


# ----------------------------------------------------------------------------- shapes and dtypes

@pytest.mark.parametrize("fn,dtype", [(R.uniform, np.float64), (R.normal, np.float64), (R.exponential, np.float64),
                                      (R.laplace, np.float64), (R.logistic, np.float64), (R.gumbel, np.float64)])
def test_default_dtypes_and_shapes(fn, dtype):
    assert fn(KEY).shape == () and fn(KEY).dtype == dtype
    assert fn(KEY, (0, 3)).shape == (0, 3)
    assert fn(KEY, (2, 3), np.float32).dtype == np.float32
    out, ref = tracejit.jit(lambda k: fn(k, (64,)))(KEY), fn(KEY, (64,))
    if fn is R.uniform:
        np.testing.assert_array_equal(out, ref)
    else:
        # Compiled log/log1p/sqrt may differ from NumPy's by an ulp or two.
        np.testing.assert_allclose(out, ref, rtol=8 * np.finfo(dtype).eps)


def test_misc_dtypes():
    assert R.randint(KEY, (3,), 0, 5).dtype == np.int64
    assert R.randint(KEY, (3,), 0, 5, np.int8).dtype == np.int8
    assert R.bits(KEY, (2,)).dtype == np.uint64
    assert R.bernoulli(KEY).shape == () and R.bernoulli(KEY).dtype == np.bool_
    assert R.poisson(KEY, 2.0, (3,)).dtype == np.int64
    assert R.poisson(KEY, 2.0, (3,), np.int32).dtype == np.int32
    assert R.normal(KEY, (3,), np.complex64).dtype == np.complex64
    assert R.gamma(KEY, np.ones((2, 3), np.float32)).shape == (2, 3)
    assert R.choice(KEY, 5, (0,)).shape == (0,)
    with pytest.raises(ValueError, match="float dtype"):
        R.uniform(KEY, (2,), np.int32)
    with pytest.raises(TypeError, match="integer dtypes"):
        R.randint(KEY, (2,), 0, 3, np.float32)
    with pytest.raises(ValueError, match="broadcast"):
        R.uniform(KEY, (3,), minval=np.zeros(4))
    with pytest.raises(ValueError, match="larger sample"):
        R.choice(KEY, 3, (4,), replace=False)


def test_randint_edges():
    x = R.randint(KEY, (1000,), np.array(-3), 4, np.int32)
    assert x.min() == -3 and x.max() == 3
    assert (R.randint(KEY, (5,), 7, 2) == 7).all()  # maxval <= minval returns minval, as JAX
    u8 = R.randint(KEY, (2000,), 0, 256, np.uint8)
    assert u8.min() == 0 and u8.max() == 255


# ----------------------------------------------------------------------------- jit, loops, dropout

def dropout(x, key):
    mask = R.bernoulli(key, 0.8, x.shape)
    return x * mask / 0.8


def test_dropout_jit_matches_eager_and_is_elementwise():
    x = np.arange(1.0, 13.0).reshape(3, 4)
    out = tracejit.jit(dropout)(x, KEY)
    np.testing.assert_array_equal(out, dropout(x, KEY))
    kept = out != 0
    np.testing.assert_allclose(out[kept], x[kept] / 0.8)
    prog = tracejit.make_jaxpr(dropout)(x, KEY)
    # Key words are sliced out of the key; everything else fuses (threefry decomposes).
    structural = {"slice", "reshape", "squeeze", "broadcast_in_dim"}
    for e in prog.eqns:
        assert (e.primitive in ELEMENTWISE or e.primitive.name in structural
                or e.primitive is threefry2x32_p), e.primitive


@pytest.mark.skipif(not hasattr(tracejit.lax, "fori_loop"), reason="lax.fori_loop not available")
def test_fori_loop_with_split_keys():
    def body(i, carry):
        key, acc = carry
        key, sub = R.split(key)
        return key, acc + R.uniform(sub, (3,))

    out = tracejit.jit(lambda k: tracejit.lax.fori_loop(0, 4, body, (k, np.zeros(3)))[1])(KEY)
    key, acc = KEY, np.zeros(3)
    for _ in range(4):
        key, sub = R.split(key)
        acc = acc + R.uniform(sub, (3,))
    np.testing.assert_array_equal(out, acc)


def test_samplers_under_jit_match_eager():
    def f(k):
        ks = R.split(k, 8)
        return (R.gamma(ks[0], 2.0, (4,)), R.poisson(ks[1], 4.0, (4,)), R.choice(ks[2], 6, (3,), replace=False),
                R.categorical(ks[3], np.log(np.array([0.1, 0.9])), shape=(5,)),
                R.choice(ks[4], np.arange(10.0), (2, 2), p=np.full(10, 0.1)),
                R.multivariate_normal(ks[5], np.zeros(2), np.eye(2), (3,)),
                R.truncated_normal(ks[6], -1.0, 1.0, (3,)), R.dirichlet(ks[7], np.ones(3)))
    for a, b in zip(tracejit.jit(f)(KEY), f(KEY)):
        np.testing.assert_allclose(a, b, rtol=1e-13)


# ----------------------------------------------------------------------------- key reuse

def _reuse(k):
    return R.uniform(k, (2,)) + R.normal(k, (2,))


def test_key_reuse_warns_under_jit():
    with pytest.warns(R.KeyReuseWarning, match="split"):
        tracejit.jit(_reuse)(KEY)


@pytest.mark.parametrize("consume", [lambda k: R.split(k), lambda k: R.fold_in(k, 1), R.key_data])
def test_key_reuse_counts_split_fold_in_key_data(consume):
    def f(k):
        consume(k)
        return R.uniform(k)
    with pytest.warns(R.KeyReuseWarning):
        tracejit.make_jaxpr(f)(KEY)


def test_key_reuse_modes():
    old = tracejit.config.key_reuse
    try:
        tracejit.config.update("key_reuse", "error")
        with pytest.raises(R.KeyReuseError):
            tracejit.make_jaxpr(_reuse)(KEY)
        tracejit.config.update("key_reuse", "off")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            tracejit.make_jaxpr(_reuse)(KEY)
    finally:
        tracejit.config.update("key_reuse", old)


def test_no_reuse_report_for_split_keys_or_eager():
    def f(k):
        k1, k2 = R.split(k)
        return R.uniform(k1, (2,)) + R.normal(k2, (2,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tracejit.make_jaxpr(f)(KEY)
        _reuse(KEY)  # eager reuse of a concrete key is allowed, as in JAX
        tracejit.make_jaxpr(lambda k: R.permutation(k, 4000))(KEY)  # internal splits are not reuse


# ----------------------------------------------------------------------------- distributions
# Fixed seeds make every check deterministic; the bounds are ~4-5 standard errors
# (or KS at alpha ~ 1e-4), so a correct sampler passes for essentially any seed.

N = 40000


def _ks(samples, cdf):
    x = np.sort(np.asarray(samples, np.float64))
    f = cdf(x)
    n = len(x)
    d = max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))
    assert d < 1.95 / math.sqrt(n), d  # alpha = 0.001


_erf = np.vectorize(math.erf)


@pytest.mark.parametrize("name,cdf", [
    ("normal", lambda x: 0.5 * (1 + _erf(x / math.sqrt(2)))),
    ("exponential", lambda x: 1 - np.exp(-x)),
    ("logistic", lambda x: 1 / (1 + np.exp(-x))),
    ("gumbel", lambda x: np.exp(-np.exp(-x))),
    ("laplace", lambda x: np.where(x < 0, 0.5 * np.exp(x), 1 - 0.5 * np.exp(-x))),
    ("uniform", lambda x: x),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ks(name, cdf, dtype):
    _ks(getattr(R, name)(R.PRNGKey(11), (N,), dtype), cdf)


def _moments(x, mean, var):
    x = np.asarray(x, np.float64)
    se = math.sqrt(var / len(x))
    assert abs(x.mean() - mean) < 5 * se, (x.mean(), mean)
    assert abs(x.var() - var) < 0.05 * var + 1e-12, (x.var(), var)


@pytest.mark.parametrize("a", [0.2, 1.0, 4.5])
def test_gamma_beta_moments(a):
    _moments(R.gamma(R.PRNGKey(3), a, (N,)), a, a)
    b = 2.0
    _moments(R.beta(R.PRNGKey(4), a, b, (N,)), a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1)))
    assert np.all(np.isfinite(R.loggamma(R.PRNGKey(5), 1e-3, (100,))))


@pytest.mark.parametrize("lam", [0.5, 4.0, 30.0])
def test_poisson_moments(lam):
    _moments(R.poisson(R.PRNGKey(6), lam, (N,)), lam, lam)
    assert (R.poisson(KEY, 0.0, (5,)) == 0).all()


def test_dirichlet_and_multivariate_normal():
    alpha = np.array([0.5, 1.0, 3.0])
    d = R.dirichlet(R.PRNGKey(7), alpha, (N,))
    np.testing.assert_allclose(d.sum(-1), 1, rtol=1e-12)
    np.testing.assert_allclose(d.mean(0), alpha / alpha.sum(), atol=0.01)
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    for method in ("cholesky", "eigh", "svd"):
        x = R.multivariate_normal(R.PRNGKey(8), np.array([1.0, -1.0]), cov, (N,), method=method)
        np.testing.assert_allclose(x.mean(0), [1.0, -1.0], atol=0.04)
        np.testing.assert_allclose(np.cov(x.T), cov, atol=0.06)


def test_truncated_normal_and_bernoulli():
    t = R.truncated_normal(R.PRNGKey(9), -0.5, 1.5, (N,), np.float32)
    assert t.min() > -0.5 and t.max() < 1.5 and t.dtype == np.float32
    for p, mode in [(0.3, "low"), (0.01, "high")]:
        _moments(R.bernoulli(R.PRNGKey(10), p, (N,), mode=mode).astype(float), p, p * (1 - p))


def test_categorical_and_choice_frequencies():
    p = np.array([0.1, 0.2, 0.7])
    c = R.categorical(R.PRNGKey(12), np.log(p), shape=(N,))
    np.testing.assert_allclose(np.bincount(c, minlength=3) / N, p, atol=0.01)
    c2 = R.categorical(R.PRNGKey(12), np.log(np.tile(p, (2, 1))), axis=1)
    assert c2.shape == (2,)
    ch = R.choice(R.PRNGKey(13), 3, (N,), p=p)
    np.testing.assert_allclose(np.bincount(ch, minlength=3) / N, p, atol=0.01)
    nr = R.choice(R.PRNGKey(14), 10, (10,), replace=False, p=np.full(10, 0.1))
    assert sorted(nr.tolist()) == list(range(10))
    nc = R.categorical(R.PRNGKey(15), np.zeros(6), shape=(6,), replace=False)
    assert sorted(nc.tolist()) == list(range(6))
    rows = R.choice(R.PRNGKey(16), np.arange(12).reshape(4, 3), (2,), replace=False)
    assert rows.shape == (2, 3) and len({tuple(r) for r in rows.tolist()}) == 2


def test_permutation_uniformity_and_axes():
    # All 6 orders of 3 items appear about equally often.
    counts = {}
    for i in range(900):
        perm = tuple(R.permutation(R.fold_in(KEY, i), 3).tolist())
        counts[perm] = counts.get(perm, 0) + 1
    assert len(counts) == 6 and all(abs(c - 150) < 5 * math.sqrt(150) for c in counts.values())
    x = np.arange(20).reshape(4, 5)
    p = R.permutation(KEY, x, axis=1)
    assert sorted(p[0].tolist()) == list(range(5)) and (p == x[:, p[0]]).all()
    s = R.shuffle(KEY, x, axis=0)
    assert (np.sort(s, axis=0) == x).all()


def _implicit_gamma_grad(a, x):
    """d x / d a of a Gamma(a, 1) sample x at a fixed quantile: -(dP/da) / (dP/dx), by mpmath."""
    import mpmath as mp
    with mp.workdps(30):
        a, x = mp.mpf(float(a)), mp.mpf(float(x))
        if mp.gammainc(a, 0, x, regularized=True) < 0.5:
            dp_da = mp.diff(lambda t: mp.gammainc(t, 0, x, regularized=True), a)
        else:
            dp_da = -mp.diff(lambda t: mp.gammainc(t, x, mp.inf, regularized=True), a)
        return float(-dp_da / (x ** (a - 1) * mp.exp(-x) / mp.gamma(a)))


@pytest.mark.parametrize("a", [0.3, 2.0, 7.5, 40.0])
def test_gamma_sample_gradient_is_the_implicit_reparameterization(a):
    # random.gamma was not differentiable in a (no rule for the primitive); JAX's is, by implicit
    # reparameterization: with the uniform draw fixed, d x / d a = -(dP/da) / (dP/dx)
    key = R.key(3)
    alphas = np.full(6, a)
    x = np.asarray(R.gamma(key, alphas))
    want = [_implicit_gamma_grad(a, v) for v in x]
    g = tracejit.jacfwd(lambda al: R.gamma(key, al))(alphas)
    np.testing.assert_allclose(np.diag(g), want, rtol=1e-10)
    np.testing.assert_allclose(tracejit.jit(tracejit.grad(lambda al: R.gamma(key, al).sum()))(alphas), want,
                               rtol=1e-10)
    # log space: d log x / d a = (d x / d a) / x
    lg = tracejit.grad(lambda al: R.loggamma(key, al).sum())(alphas)
    np.testing.assert_allclose(lg, np.asarray(want) / np.exp(np.asarray(R.loggamma(key, alphas))), rtol=1e-9)


def test_gamma_family_gradients_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    cases = [lambda m, k, a: m.random.beta(k, a, 2.0, shape=(5,)).sum(),
             lambda m, k, a: (m.random.dirichlet(k, m.numpy.array([1.0, 2.0]) * a, shape=(5,)) ** 2).sum(),
             lambda m, k, a: m.random.chisquare(k, a, shape=(5,)).sum(),
             lambda m, k, a: m.random.t(k, a, shape=(5,)).sum()]
    for f in cases:
        for a in (0.3, 2.0, 7.5):
            got = tracejit.grad(lambda v: f(tracejit, R.key(1), v))(a)
            want = jax.grad(lambda v: f(jax, jax.random.key(1), v))(a)
            np.testing.assert_allclose(got, want, rtol=1e-11)
