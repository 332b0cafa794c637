"""The newer jax.scipy functions: special (boxcox, boxcox1p, erfcx, dawsn, loggamma, sici, fresnel,
owens_t, hyp2f1, bessel_jn, wofz), stats (pareto's cdf/logcdf/sf/logsf/ppf, poisson.entropy, mode,
rankdata, sem, gaussian_kde) and signal (detrend, fftconvolve, stft, istft, csd, welch).

Values against SciPy (and mpmath where SciPy itself is inaccurate) in float64, special values,
``jit`` (one compilation per area) and ``vmap`` agreement, gradients against central differences,
and, when JAX is installed, agreement with ``jax.scipy`` where JAX is accurate.
"""
import math
import warnings

import mpmath as mp
import numpy as np
import pytest
import scipy.signal as ssig
import scipy.special as ssp
import scipy.stats as sst

import tracejit
import tracejit.numpy as jnp
from tracejit.scipy import signal as ts
from tracejit.scipy import special as sp
from tracejit.scipy import stats as tst

# the edge values evaluated on purpose (0, +-inf, NaN, overflow) make NumPy warn in eager mode
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

mp.mp.dps = 40
RNG = np.random.default_rng(20240611)


def _rel(got, ref, floor=1e-300):
    got = np.atleast_1d(np.asarray(got))
    ref = np.atleast_1d(np.asarray(ref))
    with np.errstate(all="ignore"):
        err = np.abs(got - ref) / np.maximum(np.abs(ref), floor)
    err[(got == ref) | (np.isnan(got) & np.isnan(ref))] = 0.0
    return err


def _max_rel(got, ref, floor=1e-300):
    return float(np.max(_rel(got, ref, floor)))


def _central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


# ============================================================================ special: values

def test_erfcx_dawsn_loggamma_vs_scipy():
    x = np.concatenate([RNG.uniform(-5, 30, 300), 10 ** RNG.uniform(-10, 300, 60), [0.0, 0.5, 1.0, 49.9, 50.0, 50.1]])
    assert _max_rel(sp.erfcx(x), ssp.erfcx(x)) < 1e-14
    # below -5 SciPy's exp(x*x) (x*x rounded) is off by up to x^2 ulps: mpmath (ours splits x^2 exactly)
    for v in [-5.5, -11.12, -15.38, -20.25, -26.6]:
        ref = float(mp.erfc(mp.mpf(v)) * mp.exp(mp.mpf(v) ** 2))
        assert abs(float(sp.erfcx(v)) - ref) <= 1e-15 * abs(ref)
    xd = np.concatenate([RNG.uniform(-12, 12, 300), 10 ** RNG.uniform(-300, 300, 60), [3.25, 6.25]])
    # SciPy's dawsn (Faddeeva package) is itself good to ~1.4e-14
    assert _max_rel(sp.dawsn(xd), ssp.dawsn(xd)) < 3e-14
    xg = np.concatenate([RNG.uniform(0, 30, 200), 10 ** RNG.uniform(-300, 300, 60)])
    assert _max_rel(sp.loggamma(xg), ssp.loggamma(xg)) < 1e-14


def test_boxcox_vs_mpmath():
    x = np.concatenate([10 ** RNG.uniform(-300, 300, 80), RNG.uniform(0, 5, 80)])
    lm = np.concatenate([RNG.uniform(-3, 3, 120), 10 ** RNG.uniform(-20, 0, 40) * RNG.choice([-1, 1], 40)])
    ref = [float(mp.expm1(mp.mpf(l) * mp.log(mp.mpf(v))) / mp.mpf(l)) for v, l in zip(x, lm)]
    assert _max_rel(sp.boxcox(x, lm), ref) < 1e-15
    x1 = np.concatenate([RNG.uniform(-1, 5, 80), 10 ** RNG.uniform(-300, 300, 80) * RNG.choice([-1, 1], 80)])
    x1 = np.where(x1 < -1, -x1, x1)
    ref = [float(mp.expm1(mp.mpf(l) * mp.log1p(mp.mpf(v))) / mp.mpf(l)) for v, l in zip(x1, lm)]
    assert _max_rel(sp.boxcox1p(x1, lm), ref) < 1e-15
    assert float(sp.boxcox1p(1e-300, 1e-20)) == 1e-300          # no denormal rounding of lmbda * log1p(x)
    # against SciPy (same definition), incl. lmbda == 0 and the edges
    xe = np.array([0.0, 0.0, -1.0, np.inf, np.inf, np.nan, 2.0, 2.0])
    le = np.array([1.0, -1.0, 2.0, 1.0, -1.0, 1.0, np.nan, 0.0])
    np.testing.assert_array_equal(sp.boxcox(xe, le), ssp.boxcox(xe, le))
    np.testing.assert_array_equal(sp.boxcox1p(xe - 1.0, le), ssp.boxcox1p(xe - 1.0, le))


_CI_ZEROS = [0.6165054856207163, 3.3841804225511862]


def test_sici_and_fresnel():
    x = np.concatenate([RNG.uniform(-60, 60, 300), 10 ** RNG.uniform(-300, 12, 80),
                        (np.array(_CI_ZEROS)[None, :] + RNG.uniform(-0.2, 0.2, (20, 2))).ravel()])
    si, ci = sp.sici(x)
    ssi, sci = ssp.sici(x)
    assert _max_rel(si, ssi) < 1e-15
    a = np.abs(x)
    # Ci: relative up to 4 (SciPy loses it near the zeros: mpmath there), else relative to the envelope 1/x
    far = (a > 4) | np.all(np.abs(a[:, None] - np.array(_CI_ZEROS)) > 0.3, axis=1)
    assert _max_rel(ci[far & (a <= 4)], sci[far & (a <= 4)]) < 3e-15
    assert np.max(np.abs(ci - sci)[a > 4] * a[a > 4]) < 1e-15
    near = x[~far][:12]
    ref = [float(mp.ci(mp.mpf(abs(v)))) for v in near]
    assert _max_rel(sp.sici(near)[1], ref) < 3e-15
    # zeros of Ci to within an ulp: relative accuracy kept
    for z0 in _CI_ZEROS:
        v = z0 * (1 + 2 ** -50)
        assert _max_rel(sp.sici(v)[1], float(mp.ci(mp.mpf(v)))) < 1e-14
    xf = np.concatenate([RNG.uniform(-40, 40, 300), 10 ** RNG.uniform(-90, 2, 60)])
    s, c = sp.fresnel(xf)
    rs, rc = ssp.fresnel(xf)
    assert _max_rel(s, rs) < 5e-15 and _max_rel(c, rc) < 5e-15
    # large x: SciPy's values drift (4e-13 at 3e4, 4e-9 at 2e8); mpmath
    for v in [2.98e4 + 0.123, 1.97565665e8, 36974.5, 5e15]:
        s1, c1 = sp.fresnel(v)
        assert float(s1) == pytest.approx(float(mp.fresnels(mp.mpf(v))), rel=1e-15)
        assert float(c1) == pytest.approx(float(mp.fresnelc(mp.mpf(v))), rel=1e-15)


def _owens_ref(h, a):
    with mp.workdps(30):
        h, a = abs(mp.mpf(h)), mp.mpf(a)
        sgn, a = mp.sign(a), abs(a)
        pts = [mp.mpf(0)] + [mp.mpf(2) ** k / h for k in range(-8, 12) if h > 0 and mp.mpf(2) ** k / h < a] + [a]
        g = lambda u: mp.exp(-h * h * u * u / 2) / (1 + u * u)            # noqa: E731
        return float(sgn * mp.quad(g, sorted(set(pts))) * mp.exp(-h * h / 2) / (2 * mp.pi))


def test_owens_t():
    h = np.concatenate([RNG.uniform(-5, 5, 150), [0.0, 1.0, 2.0]])
    a = np.concatenate([RNG.uniform(-3, 3, 150), [np.inf, 1.0, -1.0]])
    # SciPy (the same algorithm, without the split exponentials / T3 fix) agrees to its own ~1e-13
    assert _max_rel(sp.owens_t(h, a), ssp.owens_t(h, a), 1e-30) < 5e-13
    # mpmath at hard points: large h (tiny T), T3's cells, |a| > 1, tiny and huge a
    hh = [30.0, 26.2, 36.4, 3.4, 3.37, 2.98, 4.7, 1.0, 5.0, 12.0, 0.3, 8.0]
    aa = [0.3, 0.0375, 0.0215, -0.77, 0.6, 1.136, -0.96, 1e-8, 1.00001, 45.0, 1e6, 0.999]
    ref = [_owens_ref(u, v) for u, v in zip(hh, aa)]
    assert _max_rel(sp.owens_t(np.array(hh), np.array(aa)), ref) < 3e-15
    # exact values and limits
    assert float(sp.owens_t(0.0, 1.0)) == pytest.approx(0.125, rel=1e-15)
    np.testing.assert_allclose(sp.owens_t(np.array([np.inf, 0.0, 1.0, 0.0]), np.array([1.0, np.inf, -np.inf, -np.inf])),
                               [0.0, 0.25, -0.5 * ssp.ndtr(-1.0), -0.25], rtol=1e-15)
    assert np.isnan(sp.owens_t(np.nan, 1.0)) and np.isnan(sp.owens_t(1.0, np.nan))


def _hyp_ref(a, b, c, x):
    with mp.workdps(60):
        return float(mp.hyp2f1(a, b, c, x))


def test_hyp2f1_vs_mpmath():
    n = 60
    a, b, c = (RNG.uniform(-5, 5, n) for _ in range(3))
    x = np.concatenate([RNG.uniform(-20, 1, n // 2), 1 - 10 ** RNG.uniform(-9, 0, n // 2)])
    # c - a - b and b - a (nearly) integers: the logarithmic cases of the 1 - z and 1/(1 - z) forms
    a2, b2 = RNG.uniform(-4, 4, 30), RNG.uniform(-4, 4, 30)
    c2 = a2 + b2 + RNG.integers(-4, 5, 30) + RNG.choice([0.0, 1e-9, -1e-5, 1e-2], 30)
    x2 = RNG.uniform(0.5, 1, 30)
    a3 = RNG.uniform(-4, 4, 20)
    b3, c3, x3 = a3 + RNG.integers(-4, 5, 20), RNG.uniform(-4, 4, 20), -10 ** RNG.uniform(0, 3, 20)
    A, B, C, X = (np.concatenate(v) for v in ([a, a2, a3], [b, b2, b3], [c, c2, c3], [x, x2, x3]))
    got = sp.hyp2f1(A, B, C, X)
    ref = np.array([_hyp_ref(*p) for p in zip(A, B, C, X)])
    err = _rel(got, ref)
    assert np.percentile(err, 90) < 1e-14 and err.max() < 2e-12, (err.max(), np.argmax(err))


def test_hyp2f1_special_cases():
    cases = [  # (a, b, c, x), SciPy's value
        (1.0, 1.0, 2.0, -1.0), (0.5, 1.0, 1.5, 0.25), (-2.0, 3.0, 1.0, 1.5), (-2.0, 3.0, 1.0, 1.0),
        (-2.0, 3.0, 1.0, -3.0), (-2.0, 3.0, -5.0, 0.5), (1.0, 3.0, 2.0, -3.0), (1.0, 3.0, 2.0, 0.7),
        (-3.0, 3.0, -5.0, -2.0), (3.0, -2.0, 1.5, -7.0), (2.0, 3.0, 5.0, 1.0), (1.0, 2.0, 5.0, 1.0),
        (1.0, 2.0, 3.0, 1.5), (1.0, 2.0, 2.0, 0.3), (0.0, 1.0, 2.0, 5.0), (1.0, 1.0, -2.0, 0.5),
        (1.0, 1.0, 2.0, np.nan), (np.nan, 1.0, 2.0, 0.5), (-9.0, 4.14, -4.2, 0.64),
    ]
    a, b, c, x = (np.array(v) for v in zip(*cases))
    np.testing.assert_allclose(sp.hyp2f1(a, b, c, x), ssp.hyp2f1(a, b, c, x), rtol=1e-13)
    assert float(sp.hyp2f1(1.0, 1.0, 2.0, -1.0)) == pytest.approx(math.log(2.0), rel=1e-15)
    # c a non-positive integer without an earlier terminating a or b: inf (JAX's and SciPy's)
    assert np.isinf(sp.hyp2f1(1.0, 1.0, -2.0, 0.5)) and np.isinf(sp.hyp2f1(-3.0, 2.0, -3.0, 0.5))


def test_bessel_jn_vs_scipy():
    z = np.concatenate([RNG.uniform(-60, 60, 120), 10 ** RNG.uniform(-12, 2.3, 40), [0.0, -0.0, 2.404825557695773]])
    v = 12
    got = sp.bessel_jn(z, v=v)
    assert got.shape == (v + 1,) + z.shape
    ref = ssp.jv(np.arange(v + 1)[:, None], z)
    env = np.maximum(np.abs(ref), 1 / np.sqrt(np.maximum(np.abs(z), 1)))
    assert np.max(np.abs(got - ref) / env) < 5e-15
    # accurate far beyond n_iter (JAX's recurrence starts exactly at n_iter and fails there)
    z2 = np.array([150.0, -333.3])
    got2 = sp.bessel_jn(z2, v=3, n_iter=10)
    assert np.max(np.abs(got2 - ssp.jv(np.arange(4)[:, None], z2)) * np.sqrt(np.abs(z2))) < 1e-14
    assert sp.bessel_jn(np.float32(1.0), v=1).dtype == np.float32
    np.testing.assert_array_equal(sp.bessel_jn(np.array([np.inf, np.nan]), v=1),
                                  [[0.0, np.nan], [0.0, np.nan]])
    with pytest.raises(ValueError):
        sp.bessel_jn(1.0 + 1j, v=1)


def test_wofz_and_complex_erfcx():
    r = 10 ** RNG.uniform(-3, 3, 400)
    th = RNG.uniform(0, np.pi, 400)
    z = r * np.exp(1j * th)
    # SciPy (the Faddeeva package) is good to 6e-15 above the real axis
    assert _max_rel(sp.wofz(z), ssp.wofz(z)) < 1e-14
    zl = np.conj(z[np.abs(z) < 10])      # below: ill-conditioned (relative condition 2|z|^2)
    assert np.max(_rel(sp.wofz(zl), ssp.wofz(zl)) / (1 + np.abs(zl) ** 2)) < 1e-14
    big = np.array([1e10, -1e10, 1e10j, 1e200 + 1e200j, np.inf, 0.0, 1e-300])
    np.testing.assert_allclose(sp.wofz(big), ssp.wofz(big), rtol=1e-15, atol=0)
    assert np.isnan(complex(sp.wofz(np.nan)).real)
    assert sp.wofz(1.0).dtype == np.complex128 and sp.wofz(np.float32(1.0)).dtype == np.complex64
    zc = np.array([1 + 1j, -2 + 0.5j, 0.3 - 3j])
    assert _max_rel(sp.erfcx(zc), ssp.erfcx(zc)) < 1e-14


def test_special_values():
    sv = np.array([-np.inf, -30.0, -1.0, -0.0, 0.0, 1e-300, 1.0, 1e10, 1e300, np.inf, np.nan])
    np.testing.assert_allclose(sp.erfcx(sv), ssp.erfcx(sv), rtol=1e-15)
    np.testing.assert_allclose(sp.dawsn(sv), ssp.dawsn(sv), rtol=2e-14)
    si, ci = sp.sici(sv)
    ssi, sci = ssp.sici(sv)
    np.testing.assert_allclose(si, ssi, rtol=1e-15)
    np.testing.assert_allclose(ci, sci, rtol=1e-15)
    for got, ref in zip(sp.fresnel(sv), ssp.fresnel(sv)):
        ref[8] = 0.5                                     # SciPy: NaN at 1e300
        np.testing.assert_allclose(got, ref, rtol=1e-15)
    # loggamma follows JAX: NaN for x <= 0 (SciPy: inf at 0)
    lg = sp.loggamma(np.array([0.0, -1.5, np.inf, 1.0, np.nan]))
    np.testing.assert_array_equal(lg, [np.nan, np.nan, np.inf, 0.0, np.nan])
    # integer inputs promote to float64, float32 stays float32
    assert sp.erfcx(2).dtype == np.float64 and sp.owens_t(np.float32(1), np.float32(0.5)).dtype == np.float32
    assert sp.hyp2f1(1, 1, 2, np.float32(0.5)).dtype == np.float32
    with pytest.raises(TypeError):
        sp.dawsn(1.0 + 1j)


# ============================================================================ special: transforms

def _all_special(x):
    ax = jnp.abs(x) + 0.1
    return (sp.erfcx(x), sp.dawsn(x), sp.loggamma(ax), *sp.sici(x), *sp.fresnel(x), sp.boxcox(ax, 0.3),
            sp.boxcox1p(ax, -0.7), sp.owens_t(x, 0.7), sp.hyp2f1(0.3, 1.7, 2.2, x / 4.0 - 0.5),
            sp.bessel_jn(x, v=3), jnp.real(sp.wofz(x + 0.5j)))


def test_special_jit_and_vmap_match_eager():
    x = np.concatenate([RNG.uniform(-6, 6, 30), [0.0, 1.0, -3.5]])
    eager = _all_special(x)
    jitted = tracejit.jit(_all_special)(x)          # one compilation for every function
    for e, j in zip(eager, jitted):
        np.testing.assert_allclose(j, e, rtol=2e-15, atol=1e-300)
    vm = tracejit.vmap(lambda v: sp.owens_t(v, jnp.asarray(0.7)))(x)
    np.testing.assert_allclose(vm, eager[9], rtol=1e-15)
    vh = tracejit.vmap(lambda c: sp.hyp2f1(0.3, 1.7, c, 0.9))(np.array([2.2, 2.0, -0.5]))
    np.testing.assert_allclose(vh, ssp.hyp2f1(0.3, 1.7, np.array([2.2, 2.0, -0.5]), 0.9), rtol=1e-13)
    vb = tracejit.vmap(lambda v: sp.bessel_jn(v, v=2))(np.array([0.5, 7.0]))
    np.testing.assert_allclose(vb, ssp.jv(np.arange(3)[None, :], np.array([0.5, 7.0])[:, None]), atol=1e-15)


@pytest.mark.parametrize("name,fn,x", [
    ("erfcx", sp.erfcx, [-2.0, 0.3, 5.0]),
    ("dawsn", sp.dawsn, [-4.0, 0.7, 9.0]),
    ("loggamma", sp.loggamma, [0.3, 2.5, 40.0]),
    ("si", lambda v: sp.sici(v)[0], [-3.0, 0.5, 12.0]),
    ("ci", lambda v: sp.sici(v)[1], [0.4, 3.0, 12.0]),
    ("fresnel_s", lambda v: sp.fresnel(v)[0], [-1.0, 0.5, 2.5]),
    ("fresnel_c", lambda v: sp.fresnel(v)[1], [-1.0, 0.5, 2.5]),
    ("boxcox_x", lambda v: sp.boxcox(v, 0.4), [0.5, 3.0]),
    ("boxcox_l", lambda v: sp.boxcox(3.0, v), [-0.5, 0.0, 1.5]),
    ("boxcox1p_x", lambda v: sp.boxcox1p(v, -0.4), [-0.5, 3.0]),
    ("owens_t_h", lambda v: sp.owens_t(v, 0.6), [-1.0, 0.5, 3.0]),
    ("owens_t_a", lambda v: sp.owens_t(1.3, v), [-2.0, 0.5, 3.0]),
    ("hyp2f1_a", lambda v: sp.hyp2f1(v, 1.3, 2.1, 0.3), [0.7]),
    ("hyp2f1_c", lambda v: sp.hyp2f1(0.7, 1.3, v, -3.0), [2.1]),
    ("hyp2f1_x", lambda v: sp.hyp2f1(0.7, 1.3, 2.1, v), [-3.0, 0.3, 0.8]),
    ("bessel_jn", lambda v: jnp.sum(sp.bessel_jn(v, v=3) * np.arange(1.0, 5.0)), [0.5, 7.0, -20.0]),
    ("wofz", lambda v: jnp.imag(sp.wofz(v + 0.5j)), [-1.0, 2.0]),
])
def test_grad_vs_central_differences(name, fn, x):
    g = tracejit.grad(fn)
    for v in x:
        num = _central(lambda t: float(fn(t)), v, 1e-5)
        assert float(g(v)) == pytest.approx(num, rel=2e-7, abs=1e-9), (name, v)


def test_grad_under_jit_and_vmap():
    f = tracejit.jit(tracejit.grad(lambda h, a: sp.owens_t(h, a), argnums=(0, 1)))
    dh, da = f(1.3, 0.6)
    assert float(dh) == pytest.approx(_central(lambda t: float(sp.owens_t(t, 0.6)), 1.3), rel=1e-7)
    assert float(da) == pytest.approx(_central(lambda t: float(sp.owens_t(1.3, t)), 0.6), rel=1e-7)
    d = tracejit.vmap(tracejit.grad(sp.erfcx))(np.array([-1.0, 0.5, 3.0]))
    x = np.array([-1.0, 0.5, 3.0])
    np.testing.assert_allclose(d, 2 * x * ssp.erfcx(x) - 2 / np.sqrt(np.pi), rtol=1e-14)


# ============================================================================ stats

def test_pareto_vs_scipy():
    x = np.concatenate([RNG.uniform(0, 10, 50), 1 + 10 ** RNG.uniform(-15, -1, 20), 10 ** RNG.uniform(1, 30, 20),
                        [1.0, np.inf, np.nan, -3.0]])
    b = RNG.uniform(0.1, 5, x.size)
    for name in ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"]:
        got = getattr(tst.pareto, name)(x, b, 0.5, 1.5)
        ref = getattr(sst.pareto, name)(x, b, 0.5, 1.5)
        assert _max_rel(got, ref) < 1e-13, name
    q = np.concatenate([RNG.uniform(0, 1, 50), 10 ** RNG.uniform(-300, -1, 10), [0.0, 1.0, -0.1, 1.1, np.nan]])
    np.testing.assert_allclose(tst.pareto.ppf(q, 2.5, 1.0, 2.0), sst.pareto.ppf(q, 2.5, 1.0, 2.0), rtol=1e-14)
    # accuracy just above the support's start (1 - y^-b cancels there) and far out (SciPy: -inf)
    assert float(tst.pareto.cdf(1 + 1e-12, 2.0)) == pytest.approx(2e-12, rel=1e-4)
    assert float(tst.pareto.logsf(1e250, 4.0)) == pytest.approx(-1000 * math.log(10), rel=1e-15)
    assert float(tst.pareto.logpdf(1e250, 4.0)) == pytest.approx(math.log(4) - 1250 * math.log(10), rel=1e-15)
    g = tracejit.grad(lambda v: tst.pareto.logcdf(v, 2.0))(3.0)
    assert float(g) == pytest.approx(_central(lambda t: float(tst.pareto.logcdf(t, 2.0)), 3.0), rel=1e-7)


def test_poisson_entropy():
    mu = np.concatenate([10 ** RNG.uniform(-5, 2, 40), [0.5, 10.0, 99.0]])
    got = tst.poisson.entropy(mu)
    # SciPy sums numerically (good to ~1e-13 up to mu ~ 100, 1e-12 at 1e3, 0.1 at 1.6e4)
    np.testing.assert_allclose(got, sst.poisson.entropy(mu), rtol=5e-13)
    for m in [2e-5, 0.3, 37.0, 199.99, 200.0, 450.0, 3000.0]:
        with mp.workdps(30):
            mm = mp.mpf(m)
            k0 = int(m)
            w = int(40 * math.sqrt(m)) + 50
            ref = -mp.fsum(mp.exp(lp) * lp for lp in (k * mp.log(mm) - mm - mp.loggamma(k + 1)
                                                     for k in range(max(0, k0 - w), k0 + w)))
        assert float(tst.poisson.entropy(m)) == pytest.approx(float(ref), rel=2e-15)
    np.testing.assert_array_equal(tst.poisson.entropy(np.array([0.0, -1.0, np.inf, np.nan])),
                                  [0.0, np.nan, np.inf, np.nan])
    assert tst.poisson.entropy(5.0, np.zeros((2, 3))).shape == (2, 3)
    g = tracejit.grad(tst.poisson.entropy)(3.0)
    assert float(g) == pytest.approx(_central(lambda t: float(tst.poisson.entropy(t)), 3.0), rel=1e-7)
    np.testing.assert_allclose(tracejit.jit(tst.poisson.entropy)(mu), got, rtol=1e-14)


def test_mode_rankdata_sem_vs_scipy():
    x = RNG.integers(0, 5, (7, 9)).astype(float)
    for axis in [0, 1, None]:
        for keepdims in [False, True]:
            m, c = tst.mode(x, axis=axis, keepdims=keepdims)
            r = sst.mode(x, axis=axis, keepdims=keepdims)
            np.testing.assert_array_equal(m, r.mode)
            np.testing.assert_array_equal(c, r.count)
    xt = np.array([3.0, 1.0, 2.0, 3.0, 1.0, 1.0, 7.0])
    for method in ["average", "min", "max", "dense", "ordinal"]:
        np.testing.assert_array_equal(tst.rankdata(xt, method), sst.rankdata(xt, method))
        np.testing.assert_array_equal(tst.rankdata(x, method, axis=1), sst.rankdata(x, method, axis=1))
    assert np.all(np.isnan(tst.rankdata(np.array([1.0, np.nan, 2.0]))))
    y = RNG.normal(size=(6, 4))
    for kw in [{}, {"axis": 1}, {"axis": None}, {"ddof": 0}, {"axis": 1, "keepdims": True}]:
        np.testing.assert_allclose(tst.sem(y, **kw), sst.sem(y, **kw), rtol=1e-14)
    y[2, 1] = np.nan
    np.testing.assert_allclose(tst.sem(y, nan_policy="omit"), sst.sem(y, nan_policy="omit"), rtol=1e-14)
    assert np.isnan(tst.sem(y)[1])
    jf = tracejit.jit(lambda v: (tst.rankdata(v), tst.mode(v)[0], tst.sem(v)))
    r, mo, se = jf(xt)
    np.testing.assert_array_equal(r, sst.rankdata(xt))
    assert float(mo) == 1.0 and float(se) == pytest.approx(sst.sem(xt), rel=1e-14)
    g = tracejit.grad(lambda v: tst.sem(v))(xt)
    e0 = np.zeros_like(xt)
    e0[0] = 1.0
    assert float(g[0]) == pytest.approx(_central(lambda t: float(tst.sem(xt + t * e0)), 0.0), rel=1e-7)


def test_gaussian_kde_vs_scipy():
    d1 = RNG.normal(size=60)
    d2 = RNG.normal(size=(2, 40))
    w = RNG.uniform(size=40)
    p2 = RNG.normal(size=(2, 7))
    for data, pts, kw in [(d1, np.linspace(-3, 3, 9), {}), (d2, p2, {}), (d2, p2, {"weights": w}),
                          (d2, p2, {"bw_method": "silverman"}), (d1, np.array([0.3]), {"bw_method": 0.25})]:
        k, r = tst.gaussian_kde(data, **kw), sst.gaussian_kde(data, **kw)
        np.testing.assert_allclose(k(pts), r(pts), rtol=1e-13)
        np.testing.assert_allclose(k.logpdf(pts), r.logpdf(pts), rtol=1e-13)
        m, cov = np.zeros(k.d), np.eye(k.d)
        assert float(k.integrate_gaussian(m, cov)) == pytest.approx(r.integrate_gaussian(m, cov), rel=1e-13)
        assert float(k.integrate_kde(k)) == pytest.approx(r.integrate_kde(r), rel=1e-13)
        assert float(k.neff) == pytest.approx(r.neff, rel=1e-14)
    k = tst.gaussian_kde(d1, bw_method=lambda kde: 0.4)
    assert float(k.integrate_box_1d(-0.5, 1.0)) == pytest.approx(
        sst.gaussian_kde(d1, bw_method=0.4).integrate_box_1d(-0.5, 1.0), rel=1e-13)
    # far tail: logpdf by logsumexp stays finite
    assert np.isfinite(float(k.logpdf(60.0)[0]))
    # a pytree: through jit; differentiable in the data
    jv = tracejit.jit(lambda kde, x: kde.evaluate(x))(k, np.array([0.1, 0.2]))
    np.testing.assert_allclose(jv, sst.gaussian_kde(d1, bw_method=0.4)(np.array([0.1, 0.2])), rtol=1e-13)
    f = lambda v: tst.gaussian_kde(v).logpdf(0.3)[0]          # noqa: E731
    g = tracejit.grad(f)(d1[:6])
    e0 = np.zeros(6)
    e0[0] = 1.0
    assert float(g[0]) == pytest.approx(_central(lambda t: float(f(d1[:6] + t * e0)), 0.0), rel=1e-6)
    with pytest.raises(NotImplementedError):
        k.integrate_box([0.0], [1.0])
    with pytest.raises(NotImplementedError):
        k.resample(None)


# ============================================================================ signal

def test_detrend_and_fftconvolve_vs_scipy():
    x = RNG.normal(size=120)
    X2 = RNG.normal(size=(3, 50))
    np.testing.assert_allclose(ts.detrend(x), ssig.detrend(x), atol=1e-14)
    np.testing.assert_allclose(ts.detrend(X2, axis=0), ssig.detrend(X2, axis=0), atol=1e-14)
    np.testing.assert_allclose(ts.detrend(x, bp=[30, 77]), ssig.detrend(x, bp=[30, 77]), atol=1e-14)
    np.testing.assert_allclose(ts.detrend(X2, type="constant"), ssig.detrend(X2, type="constant"), atol=1e-15)
    a, b, c = RNG.normal(size=(5, 7)), RNG.normal(size=(3, 4)), RNG.normal(size=(5, 3))
    for mode in ["full", "same", "valid"]:
        np.testing.assert_allclose(ts.fftconvolve(x, x[:17], mode), ssig.fftconvolve(x, x[:17], mode), atol=1e-13)
        np.testing.assert_allclose(ts.fftconvolve(x[:17], x, mode), ssig.fftconvolve(x[:17], x, mode), atol=1e-13)
        np.testing.assert_allclose(ts.fftconvolve(a, b, mode), ssig.fftconvolve(a, b, mode), atol=1e-14)
    np.testing.assert_allclose(ts.fftconvolve(a, c, axes=1), ssig.fftconvolve(a, c, axes=1), atol=1e-14)
    np.testing.assert_allclose(ts.fftconvolve(a + 1j * a, c), ssig.fftconvolve(a + 1j * a, c), atol=1e-14)
    with pytest.raises(ValueError):
        ts.fftconvolve(a, x)


def test_stft_istft_csd_welch_vs_scipy():
    warnings.simplefilter("ignore", UserWarning)
    x, y = RNG.normal(size=200), RNG.normal(size=200)
    X2 = RNG.normal(size=(3, 150))
    for kw in [{}, {"nperseg": 33, "noverlap": 10, "nfft": 40}, {"boundary": "even", "nperseg": 32},
               {"boundary": None, "padded": False, "nperseg": 16}, {"window": "hamming", "nperseg": 20},
               {"return_onesided": False, "nperseg": 16}, {"detrend": "linear", "nperseg": 16},
               {"boundary": "odd", "nperseg": 16}, {"boundary": "constant", "nperseg": 16, "fs": 3.0}]:
        for got, ref in zip(ts.stft(x, **kw), ssig.stft(x, **kw)):
            np.testing.assert_allclose(got, ref, atol=1e-15, rtol=1e-13)
    np.testing.assert_allclose(ts.stft(X2.T, nperseg=20, axis=0)[2], ssig.stft(X2.T, nperseg=20, axis=0)[2],
                               atol=1e-15)
    for kw in [{"nperseg": 32}, {"nperseg": 33, "noverlap": 10}, {"nperseg": 20, "window": "hamming"}]:
        Z = ssig.stft(x, **kw)[2]
        for got, ref in zip(ts.istft(Z, **kw), ssig.istft(Z, **kw)):
            np.testing.assert_allclose(got, ref, atol=1e-14)
    Z2 = ssig.stft(x, nperseg=16, return_onesided=False)[2]
    np.testing.assert_allclose(ts.istft(Z2, nperseg=16, input_onesided=False)[1],
                               ssig.istft(Z2, nperseg=16, input_onesided=False)[1], atol=1e-14)
    for kw in [{"nperseg": 64}, {"nperseg": 50, "average": "median"}, {"nperseg": 32, "scaling": "spectrum"},
               {"nperseg": 32, "detrend": "linear"}, {"nperseg": 32, "return_onesided": False},
               {"nperseg": 31, "nfft": 40}, {"nperseg": 16, "detrend": False},
               {"nperseg": 16, "detrend": lambda d: d - d.mean(axis=-1, keepdims=True)}]:
        for got, ref in zip(ts.welch(x, **kw), ssig.welch(x, **kw)):
            np.testing.assert_allclose(got, ref, atol=1e-15, rtol=1e-13)
        for got, ref in zip(ts.csd(x, y, **kw), ssig.csd(x, y, **kw)):
            np.testing.assert_allclose(got, ref, atol=1e-15, rtol=1e-13)
    np.testing.assert_allclose(ts.csd(X2, X2[::-1], nperseg=30, axis=1)[1],
                               ssig.csd(X2, X2[::-1], nperseg=30, axis=1)[1], atol=1e-15, rtol=1e-13)
    np.testing.assert_allclose(ts.csd(x, y[:150], nperseg=32)[1], ssig.csd(x, y[:150], nperseg=32)[1],
                               atol=1e-15, rtol=1e-13)
    # JAX's default segment is the whole input (SciPy's: 256)
    assert ts.welch(x)[0].shape == (101,)


def test_signal_jit_vmap_grad():
    x, y = RNG.normal(size=64), RNG.normal(size=64)

    def many(a, b):
        return (ts.stft(a, nperseg=16)[2], ts.istft(ts.stft(a, nperseg=16)[2], nperseg=16)[1],
                ts.csd(a, b, nperseg=16)[1], ts.welch(a, nperseg=16)[1], ts.fftconvolve(a, b[:9]),
                ts.detrend(a, bp=[20]))
    for got, ref in zip(tracejit.jit(many)(x, y), many(x, y)):
        np.testing.assert_allclose(got, ref, atol=1e-14)
    np.testing.assert_allclose(tracejit.vmap(lambda a: ts.welch(a, nperseg=16)[1])(np.stack([x, y])),
                               ssig.welch(np.stack([x, y]), nperseg=16)[1], atol=1e-15)
    fns = [lambda a: jnp.sum(ts.welch(a, nperseg=16)[1] * np.arange(9.0)),
           lambda a: jnp.sum(jnp.abs(ts.stft(a, nperseg=16)[2]) ** 2 * np.arange(9.0)[:, None]),
           lambda a: jnp.sum(ts.istft(ts.stft(a, nperseg=16)[2] * 1.5, nperseg=16)[1] * np.arange(64.0)),
           lambda a: jnp.sum(ts.fftconvolve(a, y[:10], mode="same") * np.arange(64.0)),
           lambda a: jnp.sum(ts.detrend(a) ** 3),
           lambda a: jnp.sum(jnp.real(ts.csd(a, y, nperseg=16)[1] * (1 + 2j)))]
    idx = [0, 17, 40]
    for f in fns:
        g = tracejit.grad(f)(x)
        for i in idx:
            e = np.zeros_like(x)
            e[i] = 1.0
            assert float(g[i]) == pytest.approx(_central(lambda t: float(f(x + t * e)), 0.0), rel=1e-6, abs=1e-8)


# ============================================================================ against JAX

def test_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.scipy.signal as jsig
    import jax.scipy.special as jsp
    import jax.scipy.stats as jst

    x = np.concatenate([RNG.uniform(-6, 6, 40), [0.0, 0.5, 1.0]])
    z = np.linspace(-0.9, 0.85, 9)                 # inside JAX's hyp2f1's range of validity
    zb = np.linspace(0.1, 20, 9)                   # inside JAX's bessel_jn's (n_iter=50) range

    def specials(m, v, zz, zj):
        a = abs(v) + 0.1
        return (m.erfcx(v), m.dawsn(v), m.loggamma(a), m.sici(v)[0], m.sici(v)[1], m.fresnel(v)[0],
                m.fresnel(v)[1], m.boxcox(a, 0.37), m.boxcox1p(a, -1.3), m.owens_t(v / 2, 0.8),
                m.hyp2f1(0.3, 1.7, 2.2, zz), m.bessel_jn(zj, v=4), m.wofz(v + 0.7j))
    theirs = jax.jit(lambda v, zz, zj: specials(jsp, v, zz, zj))(x, z, zb)
    ours = specials(sp, x, z, zb)
    # JAX's own accuracy sets the tolerances: lgamma ~1e-13 absolute, owens_t a 13-point quadrature,
    # wofz a 32-term Weideman expansion
    tols = [1e-13, 1e-14, 1e-13, 1e-14, 1e-13, 1e-14, 1e-14, 1e-14, 1e-14, 1e-12, 1e-13, 1e-13, 3e-13]
    # Ci is a sum of terms of size ~1: near its zero at x = 3.3842 both sides have ~1e-16 absolute
    # error (a floor of 1e-3 failed when a random x fell within 1e-4 of the zero)
    floors = [0, 0, 1.0, 0, 1e-2, 0, 0, 0, 0, 0, 0, 0.1, 0]
    for i, (o, t, tol, fl) in enumerate(zip(ours, theirs, tols, floors)):
        o, t = np.asarray(o), np.asarray(t)
        assert o.shape == t.shape and o.dtype == t.dtype, i
        assert _max_rel(o, t, max(fl, 1e-300)) < tol, i

    xs = np.concatenate([RNG.uniform(0, 8, 20), [np.nan, 1.0]])
    q = np.array([0.0, 0.3, 0.99, 1.0, -0.5, np.nan])
    mu = np.array([0.0, 0.5, 5.0, 50.0, 150.0])
    v = RNG.integers(0, 4, (5, 6)).astype(float)
    d = RNG.normal(size=(2, 30))

    def stats(m, xs_, q_, mu_, v_, d_):
        return ([getattr(m.pareto, n)(xs_, 2.5, 0.5) for n in ["cdf", "logcdf", "sf", "logsf"]]
                + [m.pareto.ppf(q_, 2.5), m.poisson.entropy(mu_), *m.mode(v_, axis=1),
                   m.rankdata(v_, "dense", axis=0), m.sem(v_, axis=None), m.gaussian_kde(d_)(d_[:, :4])])
    theirs = jax.jit(lambda *a: stats(jst, *a))(xs, q, mu, v, d)
    ours = stats(tst, xs, q, mu, v, d)
    for i, (o, t) in enumerate(zip(ours, theirs)):
        # JAX's poisson.entropy is good to 1e-5 only (a 2-term series from mu = 100)
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-5 if i == 5 else 1e-13, err_msg=str(i))

    sig = RNG.normal(size=100)

    def signals(m, a):
        return (*m.stft(a, nperseg=20), *m.welch(a), m.csd(a, a[::-1], nperseg=25)[1],
                m.istft(m.stft(a, nperseg=20)[2])[1], m.fftconvolve(a, a[:7], "same"), m.detrend(a, bp=[40]))
    theirs = jax.jit(lambda a: signals(jsig, a))(sig)
    ours = signals(ts, sig)
    for i, (o, t) in enumerate(zip(ours, theirs)):           # welch: default nperseg = the input's length, as JAX
        assert np.shape(o) == np.shape(t), i
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), atol=1e-13, err_msg=str(i))


def test_doctests():
    import doctest
    import importlib
    for name in ["tracejit.scipy.special_more", "tracejit.scipy.signal_spectral", "tracejit.scipy.stats.pareto",
                 "tracejit.scipy.stats.poisson", "tracejit.scipy.stats._core", "tracejit.scipy.stats.kde"]:
        mod = importlib.import_module(name)
        assert doctest.testmod(mod).failed == 0, name
