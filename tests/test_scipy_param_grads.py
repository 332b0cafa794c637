"""Derivatives of tracejit.scipy.special / tracejit.scipy.stats with respect to every float argument,
parameters included (shape parameters, loc, scale, exponents), eagerly and under ``jit(grad)``.

References are computed here: 5-point central differences of SciPy's float64 functions (step
1e-3 * max(1, |p|), truncation error ~1e-12) and, where SciPy is not enough, mpmath's ``diff``.
The ``*_regression`` cases were silently wrong derivatives when this file was written (since fixed).
"""

import mpmath as mp
import numpy as np
import pytest
import scipy.special as ssp
import scipy.stats as sst

import tracejit
import tracejit.numpy as tnp
from tracejit.scipy import special as tsp
from tracejit.scipy import stats as tst

RTOL = 1e-6


def _fd(fn, args, i, rel=1e-3):
    """5-point central difference of the vectorized float64 ``fn`` in argument ``i``."""
    args = [np.asarray(a, np.float64) for a in args]
    h = rel * np.maximum(1.0, np.abs(args[i]))

    def at(k):
        a = list(args)
        a[i] = args[i] + k * h
        return np.asarray(fn(*a), np.float64)
    return (-at(2) + 8 * at(1) - 8 * at(-1) + at(-2)) / (12 * h)


def _tj_grads(fn, args, argnums, jit):
    """d sum(fn(*args)) / d args[i] for i in argnums: elementwise derivatives for elementwise fn."""
    g = tracejit.grad(lambda *a: tnp.sum(fn(*a)), argnums=tuple(argnums))
    if jit:
        g = tracejit.jit(g)
    return [np.asarray(v, np.float64) for v in g(*[np.asarray(a, np.float64) for a in args])]


def _check(tfn, sfn, args, argnums, jit, rtol=RTOL, atol=1e-9):
    got = _tj_grads(tfn, args, argnums, jit)
    args = [np.asarray(a, np.float64) for a in args]
    args = np.broadcast_arrays(*args)
    for i, g in zip(argnums, got):
        ref = _fd(sfn, args, i)
        np.testing.assert_allclose(g, ref, rtol=rtol, atol=atol, err_msg=f"d/d(arg {i})")


def _grid(*cols):
    """Cartesian product of 1-d point lists as broadcast-ready flat columns."""
    mesh = np.meshgrid(*[np.asarray(c, np.float64) for c in cols], indexing="ij")
    return [m.ravel() for m in mesh]


JIT = pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])

# ----------------------------------------------------------------------------- special: parameters

A = [0.3, 1.0, 2.0, 3.0, 7.5, 30.0]

SPECIAL_CASES = {
    # name: (tracejit fn, scipy fn, argument columns, argnums)
    "betaln": (tsp.betaln, ssp.betaln, _grid(A, [0.3, 2.0, 30.0]), [0, 1]),
    "beta": (tsp.beta, ssp.beta, _grid([0.3, 2.0, 3.0, 7.5], [0.3, 2.0, 5.0]), [0, 1]),
    "poch": (tsp.poch, ssp.poch, _grid([0.3, 2.0, 3.0, 7.5], [0.5, 2.0, 3.0]), [0, 1]),
    "multigammaln": (lambda a: tsp.multigammaln(a, 3), lambda a: ssp.multigammaln(a, 3) if np.ndim(a) == 0
                     else np.array([ssp.multigammaln(v, 3) for v in np.ravel(a)]).reshape(np.shape(a)),
                     [np.array([1.3, 2.0, 3.0, 7.5, 30.0])], [0]),
    "owens_t": (tsp.owens_t, ssp.owens_t, _grid([-1.0, 0.3, 2.0, 6.0], [0.3, 1.0, 2.0, 30.0]), [0, 1]),
    "xlogy": (tsp.xlogy, ssp.xlogy, _grid([0.3, 2.0], [0.3, 2.0, 30.0]), [0, 1]),
    "xlog1py": (tsp.xlog1py, ssp.xlog1py, _grid([0.3, 2.0], [-0.5, 0.3, 2.0, 30.0]), [0, 1]),
    "kl_div": (tsp.kl_div, ssp.kl_div, _grid([0.3, 2.0], [0.3, 2.0, 30.0]), [0, 1]),
    "rel_entr": (tsp.rel_entr, ssp.rel_entr, _grid([0.3, 2.0], [0.3, 2.0, 30.0]), [0, 1]),
    "zeta_q": (tsp.zeta, ssp.zeta, _grid([2.0, 3.5], [0.3, 1.0, 2.0, 30.0]), [1]),
    "gammainc_x": (tsp.gammainc, ssp.gammainc, _grid([0.3, 2.0, 30.0], [0.1, 1.0, 30.0]), [1]),
    "gammaincc_x": (tsp.gammaincc, ssp.gammaincc, _grid([0.3, 2.0, 30.0], [0.1, 1.0, 30.0]), [1]),
    "hyp2f1": (tsp.hyp2f1, ssp.hyp2f1, _grid([0.3, 2.0], [0.5, 3.0], [1.5, 4.0], [-0.5, 0.3, 0.8]), [0, 1, 2, 3]),
    # non-integer a, b (integer: see test_betainc_integer_param_regression)
    "betainc": (tsp.betainc, ssp.betainc, _grid([0.3, 2.5, 30.5], [0.5, 2.5, 30.5], [0.1, 0.5, 0.9]),
                [0, 1, 2]),
    # non-integer N, k (integer: see test_comb_integer_regression)
    "comb": (lambda n, k: tsp.comb(n, k), lambda n, k: ssp.comb(n, k), _grid([7.5, 30.5], [0.5, 2.5]), [0, 1]),
    # boxcox with an array lmbda (the scalar-exponent bug only affects shape-() exponents)
    "boxcox": (tsp.boxcox, ssp.boxcox, _grid([0.3, 2.0, 30.0], [-1.0, 0.0, 0.5, 1.0, 2.0, 2.7]), [0, 1]),
    "boxcox1p": (tsp.boxcox1p, ssp.boxcox1p, _grid([-0.5, 0.3, 2.0, 30.0], [-1.0, 0.0, 0.5, 2.0, -1.7]), [0, 1]),
    "logsumexp_b": (lambda a, b: tsp.logsumexp(tnp.stack([a, tnp.ones_like(a)]), b=tnp.stack([b, 2.0 * tnp.ones_like(b)]),
                                               axis=0),
                    lambda a, b: ssp.logsumexp(np.stack([a, np.ones_like(a)]), b=np.stack([b, 2.0 * np.ones_like(b)]),
                                               axis=0),
                    _grid([0.3, 3.0], [0.3, 2.0]), [0, 1]),
}


_NO_JIT = {"beta", "gammainc_x", "gammaincc_x", "comb", "xlogy", "xlog1py", "rel_entr"}  # time
SPECIAL_RUNS = [(n, j) for n in SPECIAL_CASES for j in (False, True) if not (j and n in _NO_JIT)]


@pytest.mark.parametrize("name,jit", SPECIAL_RUNS, ids=[f"{n}-{'jit' if j else 'eager'}" for n, j in SPECIAL_RUNS])
def test_special_param_grads(name, jit):
    tfn, sfn, args, argnums = SPECIAL_CASES[name]
    _check(tfn, sfn, args, argnums, jit)


UNARY = {
    "gammaln": (tsp.gammaln, ssp.gammaln, A + [-2.5, 100.0]),
    "digamma": (tsp.digamma, ssp.digamma, A + [-2.5]),
    "polygamma1": (lambda x: tsp.polygamma(1, x), lambda x: ssp.polygamma(1, x), A),
    "ndtri": (tsp.ndtri, ssp.ndtri, [0.1, 0.3, 0.5, 0.9]),
    "log_ndtr": (tsp.log_ndtr, ssp.log_ndtr, [-30.0, -5.0, -0.3, 2.0, 7.0]),
    "erfcx": (tsp.erfcx, ssp.erfcx, [-2.0, 0.3, 3.0, 30.0]),
    "i0e": (tsp.i0e, ssp.i0e, [-2.0, 0.3, 3.0, 30.0, 100.0]),
    "i1e": (tsp.i1e, ssp.i1e, [-2.0, 0.3, 3.0, 30.0, 100.0]),
    "spence": (tsp.spence, ssp.spence, [0.3, 1.0, 2.0, 30.0]),
    "expi": (tsp.expi, ssp.expi, [-3.0, 0.3, 2.0, 30.0]),
    "exp1": (tsp.exp1, ssp.exp1, [0.3, 2.0, 30.0]),
    "expn3": (lambda x: tsp.expn(3, x), lambda x: ssp.expn(3, x), [0.3, 2.0, 30.0]),
    "dawsn": (tsp.dawsn, ssp.dawsn, [-2.0, 0.3, 3.0, 30.0]),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_special_unary_grads(name):
    tfn, sfn, xs = UNARY[name]
    _check(tfn, sfn, [np.array(xs)], [0], jit=False)


# ----------------------------------------------------------------------------- stats

# name: (number of shape parameters, x points, shape-parameter points, has loc/scale)
STATS = {
    # beta: non-integer a, b (integer: betainc bug, see test_beta_cdf_integer_b_regression)
    "beta": (2, [0.2, 0.7], [(0.3, 2.5), (2.5, 3.5), (3.5, 1.5), (30.5, 7.5)], True),
    "chi2": (1, [0.5, 3.0], [(0.3,), (1.0,), (2.0,), (30.0,)], True),
    "gamma": (1, [0.5, 3.0], [(0.3,), (1.0,), (2.0,), (30.0,)], True),
    "pareto": (1, [1.5, 4.0], [(0.3,), (1.0,), (3.0,), (30.0,)], True),
    "t": (1, [-1.5, 0.4, 3.0], [(0.3,), (1.0,), (2.0,), (30.0,)], True),
    "truncnorm": (2, [-0.5, 0.3], [(-1.0, 1.0), (-2.0, 0.5), (-0.7, 3.0)], True),
    "gennorm": (1, [-1.5, 0.4, 2.0], [(0.3,), (0.5,), (1.0,), (2.0,), (7.5,)], False),
    "vonmises": (1, [-1.5, 0.4, 2.0], [(0.3,), (1.0,), (30.0,)], False),
    "wrapcauchy": (1, [0.4, 2.0, 5.0], [(0.3,), (0.9,)], False),
    "norm": (0, [-1.5, 0.4], [()], True),
    "cauchy": (0, [-1.5, 0.4], [()], True),
    "expon": (0, [0.5, 2.0], [()], True),
    "gumbel_l": (0, [-1.5, 0.4], [()], True),
    "gumbel_r": (0, [-1.5, 0.4], [()], True),
    "laplace": (0, [-1.5, 0.4], [()], True),
    "logistic": (0, [-1.5, 0.4], [()], True),
    "uniform": (0, [0.3, 0.8], [()], True),
}
_METHODS = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]
STATS_CASES = [(d, m) for d in STATS for m in _METHODS if hasattr(getattr(tst, d), m)]


def _stats_args(dist, meth):
    nsh, xs, shapes, locscale = STATS[dist]
    xs = [0.2, 0.7] if meth in ("ppf", "isf") else xs
    locs = [(0.0, 1.0), (0.1, 2.0) if dist == "uniform" else (-0.1, 1.7)] if locscale else [()]
    if dist == "pareto":
        locs = [(0.0, 1.0), (0.3, 0.7)]
    rows = [(x,) + sh + ls for sh in shapes for x in xs for ls in locs]
    return [np.array(c) for c in zip(*rows)], nsh, locscale


def _call(fn, nsh, locscale):
    if locscale:
        return lambda *p: fn(*p[:1 + nsh], loc=p[1 + nsh], scale=p[2 + nsh])
    return lambda *p: fn(*p)


# jit(grad): logpdf of the distributions with shape parameters (time)
STATS_RUNS = [(d, m, False) for d, m in STATS_CASES] + [(d, "logpdf", True) for d in STATS if STATS[d][0]]


@pytest.mark.parametrize("dist,meth,jit", STATS_RUNS,
                         ids=[f"{d}.{m}-{'jit' if j else 'eager'}" for d, m, j in STATS_RUNS])
def test_stats_param_grads(dist, meth, jit):
    args, nsh, locscale = _stats_args(dist, meth)
    tfn = _call(getattr(getattr(tst, dist), meth), nsh, locscale)
    sfn = _call(getattr(getattr(sst, dist), meth), nsh, locscale)
    _check(tfn, sfn, args, list(range(len(args))), jit, rtol=1e-5, atol=1e-10)


def _binom_ref(k, n, p):
    return ssp.gammaln(n + 1) - ssp.gammaln(k + 1) - ssp.gammaln(n - k + 1) + k * np.log(p) + (n - k) * np.log1p(-p)


def _betabinom_ref(k, n, a, b):
    return (ssp.gammaln(n + 1) - ssp.gammaln(k + 1) - ssp.gammaln(n - k + 1)
            + ssp.betaln(k + a, n - k + b) - ssp.betaln(a, b))


DISCRETE = {
    "binom": (lambda k, n, p: tst.binom.logpmf(k, n, p), _binom_ref, _grid([3.0], [5.0, 7.5, 30.0], [0.3, 0.8]), [1, 2]),
    "nbinom": (lambda k, n, p: tst.nbinom.logpmf(k, n, p), sst.nbinom.logpmf,
               _grid([3.0], [0.3, 2.0, 7.5, 30.0], [0.3, 0.8]), [1, 2]),
    "betabinom": (lambda k, n, a, b: tst.betabinom.logpmf(k, n, a, b), _betabinom_ref,
                  _grid([3.0], [5.0, 7.5], [0.3, 2.0], [1.0, 30.0]), [1, 2, 3]),
    "geom": (lambda k, p: tst.geom.logpmf(k, p), sst.geom.logpmf, _grid([3.0], [0.1, 0.5, 0.9]), [1]),
    "bernoulli": (lambda k, p: tst.bernoulli.logpmf(k, p), sst.bernoulli.logpmf, _grid([0.0, 1.0], [0.1, 0.5, 0.9]), [1]),
    "poisson.logpmf": (lambda k, m: tst.poisson.logpmf(k, m), sst.poisson.logpmf, _grid([3.0], [0.3, 2.0, 3.0, 30.0]), [1]),
    "poisson.cdf": (lambda k, m: tst.poisson.cdf(k, m), sst.poisson.cdf, _grid([0.0, 3.0], [0.3, 2.0, 3.0, 30.0]), [1]),
}


DISCRETE_RUNS = [(n, False) for n in DISCRETE] + [("binom", True), ("nbinom", True)]


@pytest.mark.parametrize("name,jit", DISCRETE_RUNS, ids=[f"{n}-{'jit' if j else 'eager'}" for n, j in DISCRETE_RUNS])
def test_discrete_param_grads(name, jit):
    tfn, sfn, args, argnums = DISCRETE[name]
    _check(tfn, sfn, args, argnums, jit, rtol=1e-6, atol=1e-10)


def _scalar_grads(tfn, point, argnums, jit):
    g = tracejit.grad(tfn, argnums=tuple(argnums))
    if jit:
        g = tracejit.jit(g)
    return [float(v) for v in g(*map(float, point))]


def _check_scalar(tfn, sfn, point, argnums, jit, rtol=1e-6, atol=1e-10):
    got = _scalar_grads(tfn, point, argnums, jit)
    for i, g in zip(argnums, got):
        ref = float(_fd(sfn, point, i))
        assert abs(g - ref) <= atol + rtol * abs(ref), f"d/d(arg {i}) at {point}: {g} != {ref}"


def test_dirichlet_multinomial_mvn_grads():
    # vector parameters: one element of alpha / p / mean / cov moves
    cases = [
        (lambda x0, a0: tst.dirichlet.logpdf(tnp.stack([x0, 0.5 - x0, 0.5 + 0 * x0]), tnp.stack([a0, 2.0 + 0 * a0, 0.7 + 0 * a0])),
         lambda x0, a0: sst.dirichlet.logpdf(np.array([x0, 0.5 - x0, 0.5]), np.array([a0, 2.0, 0.7])),
         [(0.2, a) for a in (0.3, 1.0, 2.0, 30.0)], [0, 1]),
        (lambda p0: tst.multinomial.logpmf(tnp.array([2.0, 3.0, 1.0]), 6.0, tnp.stack([p0, 0.6 - p0, 0.4 + 0 * p0])),
         lambda p0: sst.multinomial.logpmf(np.array([2, 3, 1]), 6, np.array([p0, 0.6 - p0, 0.4])),
         [(0.2,), (0.5,)], [0]),
        (lambda x0, m0, c: tst.multivariate_normal.logpdf(tnp.stack([x0, 0.3 + 0 * x0]), tnp.stack([m0, -0.2 + 0 * m0]),
                                                          tnp.stack([tnp.stack([2.0 + 0 * c, c]), tnp.stack([c, 1.0 + 0 * c])])),
         lambda x0, m0, c: sst.multivariate_normal.logpdf(np.array([x0, 0.3]), np.array([m0, -0.2]),
                                                          np.array([[2.0, c], [c, 1.0]])),
         [(0.5, 0.1, 0.3), (-1.0, 1.0, -0.7)], [0, 1, 2]),
    ]
    for tfn, sfn, points, argnums in cases:
        for p in points:
            _check_scalar(tfn, lambda *q, s=sfn: s(*map(float, q)), p, argnums, jit=False)


# ----------------------------------------------------------------------------- wrong derivatives found here, fixed
# (the power exponent at 0.5/1/2/-1, comb at integers, betainc's terminating continued fraction)

@JIT
@pytest.mark.parametrize("y", [0.5, 1.0, 2.0, -1.0])
def test_power_scalar_exponent_grad_regression(y, jit):
    _check_scalar(lambda x, y: tnp.power(x, y), np.power, (0.3, y), [1], jit)


@pytest.mark.parametrize("y", [0.3, 2.5, -1.5])
def test_power_scalar_exponent_grad(y):
    _check_scalar(lambda x, y: tnp.power(x, y), np.power, (0.3, y), [0, 1], jit=False)


@JIT
@pytest.mark.parametrize("fn", ["boxcox", "boxcox1p"])
@pytest.mark.parametrize("lmbda", [-1.0, 0.5, 2.0])
def test_boxcox_scalar_lmbda_regression(fn, lmbda, jit):
    _check_scalar(getattr(tsp, fn), getattr(ssp, fn), (30.0, lmbda), [1], jit)


@pytest.mark.parametrize("meth", ["logpdf", "pdf", "cdf"])
@pytest.mark.parametrize("b", [0.5, 1.0, 2.0])
def test_gennorm_scalar_beta_regression(meth, b):
    _check_scalar(getattr(tst.gennorm, meth), getattr(sst.gennorm, meth), (0.4, b), [1], jit=False)


@pytest.mark.parametrize("b", [0.3, 3.0])
def test_gennorm_scalar_beta(b):
    for meth in ("logpdf", "cdf"):
        _check_scalar(getattr(tst.gennorm, meth), getattr(sst.gennorm, meth), (0.4, b), [0, 1], jit=False)


@JIT
def test_comb_integer_regression(jit):
    _check(lambda n, k: tsp.comb(n, k), lambda n, k: ssp.comb(n, k), _grid([5.0, 30.0], [2.0, 3.0]), [0, 1], jit)


def _betainc_mp_grad(a, b, x, i):
    with mp.workdps(30):
        p = [mp.mpf(a), mp.mpf(b), mp.mpf(x)]

        def g(t):
            q = list(p)
            q[i] = t
            return mp.betainc(q[0], q[1], 0, q[2], regularized=True)
        return float(mp.diff(g, p[i]))


@pytest.mark.parametrize("a,b,x,i", [(1.0, 1.0, 0.5, 1), (2.0, 2.0, 0.5, 1), (1.0, 2.0, 0.5, 0),
                                     (2.0, 2.5, 0.5, 0)])
def test_betainc_integer_param_regression(a, b, x, i):
    got = float(tracejit.grad(tsp.betainc, argnums=i)(a, b, x))
    ref = _betainc_mp_grad(a, b, x, i)
    assert abs(got - ref) <= 1e-9 * abs(ref)


def test_beta_cdf_integer_b_regression():
    _check_scalar(lambda x, a, b: tst.beta.cdf(x, a, b), sst.beta.cdf, (0.5, 2.0, 1.0), [2], jit=False)


@pytest.mark.parametrize("a,b,x,i", [(3.0, 4.5, 0.3, 1), (0.5, 3.5, 0.2, 0), (0.3, 30.5, 0.01, 1)])
def test_betainc_param_grad_mpmath(a, b, x, i):
    got = float(tracejit.grad(tsp.betainc, argnums=i)(a, b, x))
    ref = _betainc_mp_grad(a, b, x, i)
    assert abs(got - ref) <= 1e-9 * abs(ref)
