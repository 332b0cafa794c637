"""``tracejit.scipy.special``: special functions with ``jax.scipy.special``'s API.

Every function is written on ``tracejit.numpy`` and the primitives, so it runs
eagerly (NumPy), under ``jit`` (one fused kernel for the elementwise ones),
``grad`` (analytic derivatives through ``custom_jvp``, as JAX) and ``vmap``.

Numerics: the functions compute in float64 and round once to the input's
floating dtype (integers promote to float64). Algorithms (written for this
module; see each function's notes):

- gammaln/gamma/digamma: Stirling series (exact Bernoulli numbers) for
  x >= 10, recurrence down to [1.5, 2.5) and a Taylor series of lgamma around
  2 there (coefficients (-1)^k (zeta(k) - 1) / k), a Taylor series around the
  positive root of digamma, reflection for x <= 0.
- erfc/ndtr/log_ndtr: Cephes' rational erfcx approximations with exp(-x^2)
  evaluated from an exact split of x^2 (no error amplification in the tail).
- erfinv/ndtri: Giles' polynomials with w = -log((1-y)(1+y)) formed from
  log1p terms (and from p directly for ndtri), so tails keep full precision.
- gammainc/gammaincc/betainc: power series and continued fractions in
  ``lax.while_loop`` (converged per element), prefactors from log-space with
  Stirling corrections; Temme's uniform expansion for gammainc with large a
  near x = a.
- i0e/i1e: power series (positive terms) below 30, Hankel's asymptotic
  series above; zeta: Euler-Maclaurin summation.

Examples
--------
>>> import numpy as np
>>> from tracejit.scipy import special
>>> round(float(special.gammaln(10.0)), 12)  # log(9!)
12.801827480081
"""
from __future__ import annotations

import math

import numpy as np

import tracejit.numpy as jnp
from tracejit.ops.binders import un
from tracejit.transforms.api_ad import custom_jvp, stop_gradient
from tracejit.numpy._util import convert, to_operand
from tracejit.ops.random_bits import _GILES_F64
from tracejit.scipy._common import B2K, F64, finish, horner, log1pmx, promote_args_inexact, result_float_dtype

__all__ = [
    "bernoulli", "beta", "betainc", "betaln", "comb", "digamma", "entr", "erf", "erfc", "erfinv", "exp1", "expi",
    "expit", "expn", "factorial", "gamma", "gammainc", "gammaincc", "gammaln", "gammasgn", "hyp1f1", "i0", "i0e",
    "i1", "i1e", "kl_div", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri",
    "poch", "polygamma", "psi", "rel_entr", "softmax", "spence", "sph_harm", "sph_harm_y", "xlog1py", "xlogy",
    "zeta",
]

_PI = math.pi
_LOG_PI = math.log(math.pi)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)
_SQRT2 = math.sqrt(2.0)
_INV_SQRT2 = 1 / math.sqrt(2.0)
_INF = np.inf


def _unary(fn):
    """Wrap a float64 kernel as a public unary function (promotion + rounding)."""
    def wrapper(x):
        dt, (x64,) = promote_args_inexact(x)
        return finish(fn(x64), dt)
    return wrapper


def _where(c, a, b):
    return jnp.where(c, a, b)


# ============================================================================ gamma family

# lgamma(2 + z) = sum_{k>=1} LG2[k-1] z^k, |z| <= 1/2: (1 - euler_gamma), then (-1)^k (zeta(k) - 1) / k.
_LG2 = [
    0.42278433509846713, 0.3224670334241132, -0.0673523010531981, 0.020580808427784546,
    -0.007385551028673986, 0.0028905103307415234, -0.001192753911703261, 0.0005096695247430425,
    -0.00022315475845357939, 9.945751278180853e-05, -4.492623673813314e-05, 2.050721277567069e-05,
    -9.439488275268397e-06, 4.374866789907488e-06, -2.039215753801366e-06, 9.55141213040742e-07,
    -4.492469198764566e-07, 2.1207184805554665e-07, -1.0043224823968099e-07, 4.7698101693639804e-08,
    -2.2711094608943164e-08, 1.0838659214896955e-08, -5.183475041970047e-09, 2.4836745438024785e-09,
    -1.1921401405860912e-09, 5.731367241678862e-10, -2.7595228851242334e-10, 1.330476437424449e-10,
    -6.4229645638381e-11, 3.1044247747322276e-11, -1.5021384080754142e-11,
]
# Stirling: lgamma(x) = (x - 1/2) log x - x + log(2 pi)/2 + sum_k B_2k / (2k (2k-1) x^(2k-1)).
_STIRLING = [B2K[k - 1] / (2 * k * (2 * k - 1)) for k in range(1, 10)]
# digamma(x) = log x - 1/(2x) - sum_k B_2k / (2k x^2k).
_PSI_ASYM = [B2K[k - 1] / (2 * k) for k in range(1, 10)]
# digamma(X0 + z) = sum_k PSI0[k] z^k around the positive root X0 (|z| <= 1/4).
_X0 = 1.4616321449683622
_PSI0 = [
    -9.241265521729427e-17, 0.9676722454476212, -0.4427631689835922, 0.2584997609556511,
    -0.16394270544240658, 0.10782405069126241, -0.07219956125645474, 0.04880428816414313,
    -0.033161126474847376, 0.022597648232218118, -0.01542476590494897, 0.010538791616612184,
    -0.007204534386356875, 0.004926781395729858, -0.0033698016554393312, 0.00230512632673493,
    -0.001576936771430199, 0.0010788252019162978, -0.000738070938996006, 0.0005049532658346027,
    -0.0003454680251063082, 0.00023635601564027086, -0.00016170622091974827, 0.00011063372768747428,
    -7.569179582195078e-05, 5.17857579522209e-05,
]
_STIRLING_MIN = 10.0


def _stirling_correction(x):
    """lgamma(x) - [(x - 1/2) log x - x + log(2 pi)/2] for x >= 10 (accurate to 1e-18)."""
    r = 1.0 / x
    return r * horner(_STIRLING[::-1], r * r)


def _reduce_to_2(x):
    """For 0 < x < 10: (z, kind, prod): x maps to y = 2 + z in [1.5, 2.5), with
    lgamma(x) = lgamma(2 + z) + log(prod) for x >= 1.5, - log(x) for 0.5 <= x < 1.5,
    - log(x) - log1p(x) for x < 0.5."""
    n = jnp.clip(jnp.floor(x - 1.5), 0.0, 8.0)
    prod = jnp.ones_like(x)
    for k in range(1, 9):
        prod = prod * _where(n >= k, x - k, 1.0)
    z = _where(x < 0.5, x, _where(x < 1.5, x - 1.0, x - (n + 2.0)))
    return z, prod


def _lgamma_2(z):
    return z * horner(_LG2[::-1], z)


def _lgamma1p(a):
    """log Gamma(1 + a) for -1/2 <= a <= 1 without rounding 1 + a.

    The series of ``_lgamma_2`` is truncated for |z| <= 1/2; gammaincc's small-a branch calls this
    up to a = 1, where _lgamma_2(a) lost ~1e-11 (gammaincc(0.999, 1.0) was off by 8e-12 relative).
    For a > 1/2, log Gamma(1 + a) = lgamma(2 + (a - 1)) with a - 1 exact."""
    hi = a > 0.5
    lo = _where(hi, 0.0, a)
    return _where(hi, _lgamma_2(a - 1.0), _lgamma_2(lo) - jnp.log1p(lo))


def _lgamma_pos(x):
    """log Gamma(x) for x > 0 (x may be +inf)."""
    small = x < _STIRLING_MIN
    xs = _where(small, x, 1.0)          # safe operand for the small-x branch
    z, prod = _reduce_to_2(xs)
    core = _lgamma_2(z)
    low = _where(xs < 0.5, core - jnp.log(xs) - jnp.log1p(xs),
                 _where(xs < 1.5, core - jnp.log(xs), core + jnp.log(prod)))
    xl = _where(small, _STIRLING_MIN, x)
    xl_f = _where(jnp.isinf(xl), _STIRLING_MIN, xl)
    big = (xl_f - 0.5) * jnp.log(xl_f) - xl_f + _HALF_LOG_2PI + _stirling_correction(xl_f)
    big = _where(jnp.isinf(xl), _INF, big)
    return _where(small, low, big)


def _sinpi_abs_parity(x):
    """(|sin(pi x)|, n) with n = round(x) (sin(pi x) = (-1)^n sin(pi (x - n)))."""
    n = jnp.round(x)
    r = x - n
    return jnp.abs(jnp.sin(_PI * r)), n, r


def _is_nonpos_int(x):
    return (x <= 0) & (x == jnp.floor(x))


def _lgamma64(x):
    pos = x > 0
    xp = _where(pos, x, 1.0 - _where(jnp.isfinite(x), x, 0.0))
    lg = _lgamma_pos(xp)
    s, _, _ = _sinpi_abs_parity(_where(pos, 0.5, x))
    refl = _LOG_PI - jnp.log(s) - lg
    out = _where(pos, lg, refl)
    out = _where(_is_nonpos_int(x) | jnp.isinf(x), _INF, out)
    return _where(jnp.isnan(x), x, out)


def _digamma_pos(x):
    """digamma for x > 0."""
    small = x < _STIRLING_MIN
    xs = _where(small, x, 1.0)
    # psi(x) = psi(x + n) - sum_{k<n} 1/(x+k), with x + n >= 10 (n <= 10).
    n = jnp.clip(jnp.ceil(_STIRLING_MIN - xs), 0.0, 10.0)
    acc = jnp.zeros_like(x)
    for k in range(10):
        acc = acc + _where(n > k, 1.0 / (xs + k), 0.0)
    shifted = xs + n
    r = 1.0 / shifted
    r2 = r * r
    asym_s = jnp.log(shifted) - 0.5 * r - r2 * horner(_PSI_ASYM[::-1], r2)
    low = asym_s - acc
    # near the positive root: Taylor series
    zr = xs - _X0
    near = jnp.abs(zr) <= 0.25
    root = horner(_PSI0[::-1], zr)
    low = _where(near, root, low)
    xl = _where(small, _STIRLING_MIN, x)
    xl_f = _where(jnp.isinf(xl), _STIRLING_MIN, xl)
    rl = 1.0 / xl_f
    rl2 = rl * rl
    big = jnp.log(xl_f) - 0.5 * rl - rl2 * horner(_PSI_ASYM[::-1], rl2)
    big = _where(jnp.isinf(xl), _INF, big)
    return _where(small, low, big)


def _digamma64(x):
    pos = x > 0
    xf = _where(jnp.isfinite(x), x, 0.5)
    xp = _where(pos, x, 1.0 - xf)
    d = _digamma_pos(xp)
    _, _, r = _sinpi_abs_parity(_where(pos, 0.25, xf))
    # psi(x) = psi(1 - x) - pi / tan(pi x); tan(pi x) = tan(pi r).
    refl = d - _PI / jnp.tan(_PI * r)
    out = _where(pos, d, refl)
    out = _where((x == 0), -jnp.copysign(_INF, x), out)
    out = _where(_is_nonpos_int(x) & (x != 0), np.nan, out)
    return _where((x == -_INF) | jnp.isnan(x), np.nan, out)


def _log_minus_digamma(x, a):
    """log(x) - digamma(a) for x, a > 0 finite, without the cancellation of the two logs at large a
    (each ~log a, up to 710; their difference at x ~ a loses up to ~2000 eps): for a >= 10 it is
    log(x / a) + (log(a) - digamma(a)), the second term from its asymptotic series."""
    big = a >= _STIRLING_MIN
    ab = _where(big, a, _STIRLING_MIN)
    r = 1.0 / ab
    r2 = r * r
    tail = 0.5 * r + r2 * horner(_PSI_ASYM[::-1], r2)          # log(a) - digamma(a)
    t = x / ab
    # x / a out of the normal range (|log| > 690: no cancellation to avoid) takes the two logs
    ratio_ok = (t > 1e-300) & (t < 1e300)
    log_t = _where(ratio_ok, jnp.log(_where(ratio_ok, t, 1.0)), jnp.log(x) - jnp.log(ab))
    return _where(big, log_t + tail, jnp.log(x) - _digamma64(a))


def _gamma_pos(x):
    """Gamma(x) for x > 0."""
    small = x < _STIRLING_MIN
    xs = _where(small, x, 1.0)
    z, prod = _reduce_to_2(xs)
    core = jnp.exp(_lgamma_2(z))
    low = _where(xs < 0.5, core / xs / (xs + 1.0), _where(xs < 1.5, core / xs, core * prod))
    xl = jnp.clip(_where(small, _STIRLING_MIN, x), _STIRLING_MIN, 171.7)
    v = jnp.power(xl, 0.5 * xl - 0.25)
    big = _SQRT_2PI * (v * (v * jnp.exp(-xl))) * jnp.exp(_stirling_correction(xl))
    big = _where(x > 171.7, _INF, big)
    return _where(small, low, big)


def _gamma64(x):
    pos = x > 0
    xf = _where(jnp.isfinite(x), x, 0.5)
    xp = _where(pos, x, 1.0 - xf)
    g = _gamma_pos(xp)
    s, n, r = _sinpi_abs_parity(_where(pos, 0.5, xf))
    sgn = 1.0 - 2.0 * (n - 2.0 * jnp.floor(0.5 * n))     # (-1)^n
    sin_signed = sgn * jnp.sin(_PI * r)
    refl = _PI / (sin_signed * g)
    out = _where(pos, g, refl)
    out = _where(x == 0, jnp.copysign(_INF, x), out)
    return _where((_is_nonpos_int(x) & (x != 0)) | (x == -_INF) | jnp.isnan(x), np.nan, out)


@custom_jvp
def _gammaln_cj(x):
    return _lgamma64(x)


@custom_jvp
def _digamma_cj(x):
    return _digamma64(x)


@custom_jvp
def _gamma_cj(x):
    return _gamma64(x)


_gammaln_cj.defjvps(lambda t, ans, x: t * _digamma_cj(x))
_gamma_cj.defjvps(lambda t, ans, x: t * ans * _digamma_cj(x))


def gammaln(x):
    """Natural log of the absolute value of the gamma function (``jax.scipy.special.gammaln``).

    Parameters
    ----------
    x : array_like
        Real input; integers promote to float64.

    Returns
    -------
    array
        ``log|Gamma(x)|``; ``inf`` at the poles (0, -1, -2, ...) and at ``+-inf``.

    Examples
    --------
    >>> from tracejit.scipy.special import gammaln
    >>> float(gammaln(5.0))  # log(24)
    3.1780538303479458
    """
    dt, (x,) = promote_args_inexact(x)
    return finish(_gammaln_cj(x), dt)


def gamma(x):
    """The gamma function (``jax.scipy.special.gamma``).

    ``gamma(+0) = inf``, ``gamma(-0) = -inf``, NaN at negative integers and ``-inf``
    (SciPy's convention); ``inf`` above 171.62 (overflow).

    Examples
    --------
    >>> from tracejit.scipy.special import gamma
    >>> float(gamma(5.0))
    24.0
    >>> float(gamma(0.5)) ** 2  # doctest: +ELLIPSIS
    3.14159265358979...
    """
    dt, (x,) = promote_args_inexact(x)
    return finish(_gamma_cj(x), dt)


def gammasgn(x):
    """Sign of the gamma function: +1 or -1; at zero the sign of the zero (Gamma's poles at
    ``+-0`` are ``+-inf``), NaN at negative integers, ``-inf`` and NaN (as SciPy and JAX).

    Examples
    --------
    >>> from tracejit.scipy.special import gammasgn
    >>> float(gammasgn(-0.5)), float(gammasgn(-1.5)), float(gammasgn(-0.0))
    (-1.0, 1.0, -1.0)
    """
    dt, (x,) = promote_args_inexact(x)
    fl = jnp.floor(x)
    odd = (fl - 2.0 * jnp.floor(0.5 * fl)) != 0
    out = _where(x > 0, 1.0, _where(odd, -1.0, 1.0))
    out = _where(_is_nonpos_int(x) | jnp.isnan(x) | (x == -np.inf), np.nan, out)
    out = _where(x == 0, _where(jnp.signbit(x), -1.0, 1.0), out)
    return finish(stop_gradient(out), dt)


def digamma(x):
    """The digamma function ``psi(x) = d/dx log Gamma(x)`` (``jax.scipy.special.digamma``).

    ``psi(0) = -inf`` (``+inf`` at -0.0), NaN at negative integers and ``-inf``.

    Examples
    --------
    >>> from tracejit.scipy.special import digamma
    >>> round(float(digamma(1.0)), 14)  # -euler_gamma
    -0.57721566490153
    """
    dt, (x,) = promote_args_inexact(x)
    return finish(_digamma_cj(x), dt)


psi = digamma


def _lbeta64(a, b):
    """log|B(a, b)| for a, b > 0 with Stirling corrections when either argument is large."""
    lo = jnp.minimum(a, b)
    hi = jnp.maximum(a, b)
    # both small: the log of a ratio of (accurate) gamma values
    los = _where(hi < _STIRLING_MIN, lo, 1.0)
    his = _where(hi < _STIRLING_MIN, hi, 1.0)
    direct = jnp.log(_gamma_pos(los) / _gamma_pos(los + his) * _gamma_pos(his))
    s = lo + hi
    # hi >= 10, lo small: lgamma(lo) + [lgamma(hi) - lgamma(s)]
    hi_s = _where(hi >= _STIRLING_MIN, hi, _STIRLING_MIN)
    s_s = _where(hi >= _STIRLING_MIN, s, _STIRLING_MIN + 1.0)
    lo_s = _where(hi >= _STIRLING_MIN, lo, 1.0)
    ratio = lo_s / s_s
    diff = (_stirling_correction(hi_s) - _stirling_correction(s_s) - lo_s * jnp.log(s_s)
            + (hi_s - 0.5) * jnp.log1p(-ratio) + lo_s)
    one_big = _lgamma64(lo_s) + diff
    # both >= 10
    lo_b = _where(lo >= _STIRLING_MIN, lo_s, _STIRLING_MIN)
    both = (_HALF_LOG_2PI - 0.5 * jnp.log(s_s) + (lo_b - 0.5) * jnp.log(lo_b / s_s)
            + (hi_s - 0.5) * jnp.log1p(-lo_b / s_s)
            + _stirling_correction(lo_b) + _stirling_correction(hi_s) - _stirling_correction(s_s))
    out = _where(hi < _STIRLING_MIN, direct, _where(lo < _STIRLING_MIN, one_big, both))
    return _where(jnp.isinf(hi) & (lo > 0) & jnp.isfinite(lo), -_INF, out)


def _betaln64(a, b):
    pos = (a > 0) & (b > 0)
    out = _lbeta64(_where(pos, a, 1.0), _where(pos, b, 1.0))
    general = _lgamma64(a) + _lgamma64(b) - _lgamma64(a + b)
    return _where(jnp.isnan(a) | jnp.isnan(b), np.nan, _where(pos, out, general))


@custom_jvp
def _betaln_cj(a, b):
    return _betaln64(a, b)


@_betaln_cj.defjvp
def _betaln_jvp(primals, tangents):
    a, b = primals
    ta, tb = tangents
    dab = _digamma_cj(a + b)
    return _betaln_cj(a, b), ta * (_digamma_cj(a) - dab) + tb * (_digamma_cj(b) - dab)


def betaln(a, b):
    """Natural log of the absolute value of the beta function (``jax.scipy.special.betaln``).

    Accurate for large arguments (Stirling corrections, no cancellation of huge lgammas).

    Examples
    --------
    >>> from tracejit.scipy.special import betaln
    >>> float(betaln(1.0, 2.0))  # log(1/2)
    -0.6931471805599453
    """
    dt, (a, b) = promote_args_inexact(a, b)
    a, b = jnp.broadcast_arrays(a, b)
    return finish(_betaln_cj(a, b), dt)


def beta(a, b):
    """The beta function ``Gamma(a) Gamma(b) / Gamma(a + b)`` (``jax.scipy.special.beta``).

    Examples
    --------
    >>> from tracejit.scipy.special import beta
    >>> float(beta(2.0, 3.0))  # doctest: +ELLIPSIS
    0.08333333333333...
    """
    dt, (a, b) = promote_args_inexact(a, b)
    a, b = jnp.broadcast_arrays(a, b)
    sign = _gamma_sign(a) * _gamma_sign(b) * _gamma_sign(a + b)
    return finish(sign * jnp.exp(_betaln_cj(a, b)), dt)


def _gamma_sign(x):
    fl = jnp.floor(x)
    odd = (fl - 2.0 * jnp.floor(0.5 * fl)) != 0
    return stop_gradient(_where((x > 0) | ~odd, 1.0, -1.0))


def multigammaln(a, d):
    """Log of the multivariate gamma function of dimension ``d`` (``jax.scipy.special.multigammaln``).

    Parameters
    ----------
    a : array_like
        Must satisfy ``a > (d - 1) / 2`` elementwise.
    d : int
        Static dimension.

    Examples
    --------
    >>> from tracejit.scipy.special import multigammaln
    >>> float(multigammaln(3.0, 1))  # gammaln(3)
    0.6931471805599453
    """
    d = int(d)
    dt, (a,) = promote_args_inexact(a)
    out = d * (d - 1) / 4.0 * _LOG_PI
    acc = None
    for j in range(d):
        term = _gammaln_cj(a - j / 2.0)
        acc = term if acc is None else acc + term
    return finish(acc + out, dt)


def factorial(n, exact=False):
    """``n!`` as ``gamma(n + 1)`` (0 for negative ``n``), ``jax.scipy.special.factorial``.

    Examples
    --------
    >>> from tracejit.scipy.special import factorial
    >>> float(factorial(5))
    120.0
    """
    if exact:
        raise NotImplementedError("factorial with exact=True is not supported (as in JAX)")
    dt, (n,) = promote_args_inexact(n)
    return finish(_where(n < 0, 0.0, _gamma_cj(_where(n < 0, 0.0, n) + 1.0)), dt)


def comb(N, k, *, exact=False, repetition=False):
    """Binomial coefficient ``N choose k`` (``jax.scipy.special.comb``): 0 outside ``0 <= k <= N``.

    Examples
    --------
    >>> from tracejit.scipy.special import comb
    >>> float(comb(5, 2))
    10.0
    """
    if exact:
        raise NotImplementedError("comb with exact=True is not supported (as in JAX)")
    dt, (N, k) = promote_args_inexact(N, k)
    if repetition:
        N = N + k - 1.0
    ok = (k >= 0) & (k <= N) & (N >= 0)
    Ns = _where(ok, N, 1.0)
    ks = _where(ok, k, 0.0)
    # C(N, k) = 1 / ((N + 1) B(N - k + 1, k + 1)): betaln keeps its Stirling corrections when
    # N is large (lgamma(N + 1) - lgamma(k + 1) - lgamma(N - k + 1) cancelled: comb(1e10, 1)
    # was 9999974587)
    val = jnp.exp(-jnp.log1p(Ns) - _betaln_cj(Ns - ks + 1.0, ks + 1.0))
    # N - k + 1 >= 10 and min(k, N - k) < 150: poch(N - k + 1, k) / k! (few ulp; the exp of the
    # log above keeps |log C| eps, 1e-13 at N = 5e12, k = 10.5)
    kk = _where(ks > 0.5 * Ns, Ns - ks, ks)      # Ns - ks is exact there
    zc = Ns - kk + 1.0
    bigc = (zc >= _STIRLING_MIN) & (kk < 150.0) & jnp.isfinite(Ns)
    kb = _where(bigc, kk, 1.0)
    val = _where(bigc, _poch_big(_where(bigc, zc, _STIRLING_MIN), kb) / _gamma_cj(kb + 1.0), val)
    # exact integers where the result is an integer that fits; the rounding is a correction of
    # below an ULP or so that carries no derivative (rounding alone made both derivatives 0 there)
    exact = (Ns == jnp.floor(Ns)) & (ks == jnp.floor(ks)) & (val < 2.0 ** 52)
    val = val + stop_gradient(_where(exact, jnp.round(val) - val, 0.0))
    return finish(_where(ok, val, 0.0), dt)


def poch(z, m):
    """Rising factorial ``Gamma(z + m) / Gamma(z)`` (``jax.scipy.special.poch``).

    Examples
    --------
    >>> from tracejit.scipy.special import poch
    >>> float(poch(3.0, 2.0))  # 3 * 4
    12.0
    """
    dt, (z, m) = promote_args_inexact(z, m)
    val = _gamma_sign(z + m) * _gamma_sign(z) * jnp.exp(_gammaln_cj(z + m) - _gammaln_cj(z))
    # z, z + m >= 10 (finite): the difference of the two Stirling series in closed form
    # (lgamma(z + m) - lgamma(z) cancelled: poch(1e15, 0.5) was 8886110 instead of 31622776)
    big = (z >= _STIRLING_MIN) & (z + m >= _STIRLING_MIN) & jnp.isfinite(z) & jnp.isfinite(m)
    val = _where(big, _poch_big(_where(big, z, _STIRLING_MIN), _where(big, m, 1.0)), val)
    return finish(_where(m == 0, 1.0, val), dt)


def _log_poch_rest(z, m):
    """lgamma(z + m) - lgamma(z) - m log(z) for z >= 10, z + m >= 10, with no term of size
    z log z: z (log1p(t) - t) + (m - 1/2) log1p(t) + stirling(z + m) - stirling(z), t = m / z."""
    t = m / z
    return z * log1pmx(t) + (m - 0.5) * jnp.log1p(t) + (_stirling_correction(z + m) - _stirling_correction(z))


def _poch_big(z, m):
    """Gamma(z + m) / Gamma(z) for z >= 10, z + m >= 10 without forming either lgamma:
    z^m exp(z (log1p(t) - t) + (m - 1/2) log1p(t) + stirling(z + m) - stirling(z)), t = m / z.
    z^m is taken as (z^(m/2))^2 by pow (exp(m log z) lost |m log z| eps: 1.5e-13 at
    z = 3.6e13, m = 17) while z^(m/2) stays in range, and exp of the whole log otherwise."""
    rest = _log_poch_rest(z, m)
    lzm = m * jnp.log(z)
    in_range = jnp.abs(lzm) < 1400.0
    zh = jnp.power(z, _where(in_range, 0.5 * m, 0.0))
    return _where(in_range, zh * (zh * jnp.exp(rest)), jnp.exp(lzm + rest))


# ============================================================================ zeta / polygamma

_ZETA_N = 12          # terms summed directly
_ZETA_M = 14          # Euler-Maclaurin correction terms


def _zeta_em(s, q):
    """Hurwitz zeta sum_{k>=0} (q + k)^-s (s > 1) by Euler-Maclaurin summation after 12 direct
    terms (accurate for q > 0; raw value, no special cases)."""
    acc = jnp.zeros_like(s + q)
    for k in range(_ZETA_N):
        acc = acc + jnp.power(q + k, -s)
    a = q + _ZETA_N
    a_pow = jnp.power(a, -s)
    # The tail a^(1-s) / (s-1) as one power: a * a^-s underflows to 0 (or inf * 0 = NaN at
    # q = inf) for large q, e.g. zeta(2, 1e300) gave 0 instead of 1e-300.
    acc = acc + jnp.power(a, 1.0 - s) / (s - 1.0) + 0.5 * a_pow
    # sum_j B_2j / (2j)! * s (s+1) ... (s+2j-2) * a^(-s-2j+1)
    fac = s * a_pow / a          # s * a^(-s-1)
    inv_a2 = 1.0 / (a * a)
    for j in range(1, _ZETA_M + 1):
        acc = acc + (B2K[j - 1] / math.factorial(2 * j)) * fac
        fac = fac * (s + 2 * j - 1) * (s + 2 * j) * inv_a2
    return acc


def _zeta64(s, q):
    """Hurwitz zeta sum_{k>=0} (q + k)^-s (s > 1); q < 0 needs an integer s."""
    acc = _zeta_em(s, q)
    # q < 0 (not an integer), integer s: Euler-Maclaurin would start at q + 12, which is below
    # 2.5 (or negative) for q < -9.5 and gave wrong values and signs (zeta(2, -20.5) was -0.048).
    # With m = ceil(-q) and r = -(q + m - 1) in (0, 1) (both exact), the terms q, .., q + m - 1
    # are -(r + j), j = 0 .. m - 1, so
    #   zeta(s, q) = (-1)^s [zeta(s, r) - zeta(s, r + m)] + zeta(s, 1 - r),
    # three evaluations at positive arguments and no loop, whatever |q| (also more accurate
    # than the direct sum for -9.5 < q < 0: 6e-15 relative against 2e-4 near q = -9.47).
    neg = (q < 0) & (q != jnp.floor(q)) & (s == jnp.floor(s)) & jnp.isfinite(s) & (s > 1.0)
    qn = _where(neg, q, -0.5)
    mneg = jnp.ceil(-qn)
    r = -((qn + mneg) - 1.0)            # qn + mneg = 1 - r in (0, 1): exact, and so is r
    sn = _where(neg, s, 2.0)
    par = sn - 2.0 * jnp.floor(0.5 * sn)
    sgn = 1.0 - 2.0 * par               # (-1)^s
    refl = sgn * (_zeta_em(sn, r) - _zeta_em(sn, r + mneg)) + _zeta_em(sn, qn + mneg)
    acc = _where(neg, refl, acc)
    nonpos_int_q = (q <= 0) & (q == jnp.floor(q))
    out = _where(s == 1.0, _INF, acc)
    # s = +inf: only the k = 0 term survives, q^-inf (SciPy: 1 at q = 1, 0 above, inf below);
    # the correction terms are inf * 0 = NaN there.
    out = _where((s == _INF) & (q > 0), _where(q == 1.0, 1.0, _where(q > 1.0, 0.0, _INF)), out)
    out = _where(s < 1.0, np.nan, out)
    out = _where(nonpos_int_q & (s > 1.0), _INF, out)
    out = _where((q < 0) & (s != jnp.floor(s)) & ~nonpos_int_q, np.nan, out)
    return _where(jnp.isnan(s) | jnp.isnan(q), np.nan, out)


def _zeta_ds64(s, q):
    """d/ds of the Euler-Maclaurin sum in ``_zeta64``, term by term:
    -sum log(q + k) (q + k)^-s, the tail's derivative, and each correction term's
    c_j P_j(s) a^(-s-2j+1) differentiated as c_j P_j a^(...) (P_j'/P_j - log a)."""
    acc = jnp.zeros_like(s + q)
    for k in range(_ZETA_N):
        acc = acc - jnp.log(q + k) * jnp.power(q + k, -s)
    a = q + _ZETA_N
    log_a = jnp.log(a)
    a_pow = jnp.power(a, -s)
    acc = acc - a * a_pow * (log_a / (s - 1.0) + 1.0 / ((s - 1.0) * (s - 1.0))) - 0.5 * log_a * a_pow
    fac = s * a_pow / a          # P_1(s) a^(-s-1), P_1 = s
    dlog_p = 1.0 / s             # P_j'(s) / P_j(s)
    inv_a2 = 1.0 / (a * a)
    for j in range(1, _ZETA_M + 1):
        acc = acc + (B2K[j - 1] / math.factorial(2 * j)) * fac * (dlog_p - log_a)
        fac = fac * (s + 2 * j - 1) * (s + 2 * j) * inv_a2
        dlog_p = dlog_p + 1.0 / (s + 2 * j - 1) + 1.0 / (s + 2 * j)
    return _where((s > 1.0) & (q > 0), acc, np.nan)


@custom_jvp
def _zeta_cj(s, q):
    return _zeta64(s, q)


@_zeta_cj.defjvp
def _zeta_jvp(primals, tangents):
    s, q = primals
    ts, tq = tangents
    out = _zeta_cj(s, q)
    # d/dq zeta(s, q) = -s zeta(s + 1, q); d/ds from the same summation (NaN outside s > 1, q > 0)
    return out, tq * (-s * _zeta_cj(s + 1.0, q)) + ts * _zeta_ds64(s, q)


def zeta(x, q=None):
    """Hurwitz zeta function ``sum_{k>=0} (q + k)^-x`` (``jax.scipy.special.zeta``).

    ``q=None`` gives the Riemann zeta function (``q = 1``). Defined for ``x > 1``
    (``inf`` at ``x = 1``, NaN below). Differentiable in ``x`` (for ``q > 0``) and ``q``.

    Examples
    --------
    >>> from tracejit.scipy.special import zeta
    >>> round(float(zeta(2.0)), 14)  # pi**2 / 6
    1.64493406684823
    """
    if q is None:
        q = 1.0
    dt, (x, q) = promote_args_inexact(x, q)
    x, q = jnp.broadcast_arrays(x, q)
    return finish(_zeta_cj(x, q), dt)


def polygamma(n, x):
    """The ``n``-th derivative of digamma (``jax.scipy.special.polygamma``).

    ``polygamma(0, x) = digamma(x)``; for ``n >= 1``:
    ``(-1)^(n+1) n! zeta(n + 1, x)``. ``n`` must hold non-negative integers.

    Examples
    --------
    >>> from tracejit.scipy.special import polygamma
    >>> round(float(polygamma(1, 1.0)), 14)  # pi**2 / 6
    1.64493406684823
    """
    dt = result_float_dtype(x)
    n = convert(to_operand(n), F64)
    x = convert(to_operand(x), F64)
    n, x = jnp.broadcast_arrays(n, x)
    n = stop_gradient(n)
    nn = _where(n >= 1, n, 1.0)
    sign = 1.0 - 2.0 * (nn - 2.0 * jnp.floor(0.5 * nn))     # (-1)^n
    fact = jnp.exp(_gammaln_cj(nn + 1.0))
    fact = _where(nn < 22, jnp.round(fact), fact)
    high = -sign * fact * _zeta_cj(nn + 1.0, x)
    out = _where(n == 0, _digamma_cj(x), high)
    bad = (n < 0) | (n != jnp.floor(n))
    return finish(_where(bad, np.nan, out), dt)


_digamma_cj.defjvps(lambda t, ans, x: t * _zeta_cj(jnp.full_like(x, 2.0), x))


def bernoulli(n):
    """The Bernoulli numbers ``B_0 .. B_n`` (``B_1 = -1/2``), ``jax.scipy.special.bernoulli``.

    Examples
    --------
    >>> from tracejit.scipy.special import bernoulli
    >>> bernoulli(4)
    Array([ 1.        , -0.5       ,  0.16666667,  0.        , -0.03333333])
    """
    from tracejit.scipy._common import _bernoulli
    n = int(n)
    if n < 0:
        raise ValueError("n must be a non-negative integer")
    return np.array([float(v) for v in _bernoulli(n)], dtype=np.float64)


# ============================================================================ error functions

# Cephes erfc rational approximations (Moshier): erfc(x) = exp(-x^2) P(x)/Q(x), 1 <= x < 8,
# and R(x)/S(x) for x >= 8 (Q and S monic).
_ERFC_P = [2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
           4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
           9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2]
_ERFC_Q = [1.0, 1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2,
           9.75708501743205489753E2, 1.82390916687909736289E3, 2.24633760818710981792E3,
           1.65666309194161350182E3, 5.57535340817727675546E2]
_ERFC_R = [5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
           6.16021097993053585195E0, 7.40974269950448939160E0, 2.97886665372100240670E0]
_ERFC_S = [1.0, 2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1,
           1.70814450747565897222E1, 9.60896809063285878198E0, 3.36907645100081516050E0]


def _erfcx_ge1(a):
    """exp(a^2) erfc(a) for a >= 1 (a may be large or inf)."""
    ac = jnp.clip(a, 1.0, 1e8)
    mid = horner(_ERFC_P, ac) / horner(_ERFC_Q, ac)
    tail = horner(_ERFC_R, ac) / horner(_ERFC_S, ac)
    val = _where(ac < 8.0, mid, tail)
    # beyond 1e8 the asymptotic 1/(sqrt(pi) a) is exact to double precision
    return _where(a > 1e8, (1 / math.sqrt(math.pi)) / a, val)


def _exp_neg_sq(a, scale=1.0):
    """exp(-scale * a^2) for a >= 0 without the error of rounding a^2 (scale is 1 or 1/2)."""
    ac = jnp.minimum(a, 40.0)
    hi = jnp.floor(ac * 1048576.0) / 1048576.0        # 20 fraction bits: hi^2 is exact
    lo = ac - hi
    out = jnp.exp(-scale * hi * hi) * jnp.exp(-scale * lo * (ac + hi))
    return _where(a >= 40.0, 0.0, out)


def _erfc_pos_tail(a):
    """erfc(a) for a >= 1."""
    return _exp_neg_sq(a) * _erfcx_ge1(a)


def _erfc64(x):
    a = jnp.abs(x)
    small = 1.0 - un("erf", _where(a < 1.0, x, 0.0))
    tail = _erfc_pos_tail(_where(a < 1.0, 1.0, a))
    tail = _where(x < 0, 2.0 - tail, tail)
    return _where(jnp.isnan(x), x, _where(a < 1.0, small, tail))


@custom_jvp
def _erfc_cj(x):
    return _erfc64(x)


_erfc_cj.defjvps(lambda t, ans, x: t * (-2 / math.sqrt(math.pi)) * jnp.exp(-x * x))


def erf(x):
    """The error function (``jax.scipy.special.erf``).

    Examples
    --------
    >>> from tracejit.scipy.special import erf
    >>> float(erf(0.5))  # doctest: +ELLIPSIS
    0.520499877813046...
    """
    dt, (x,) = promote_args_inexact(x)
    return finish(un("erf", x), dt)


def erfc(x):
    """The complementary error function ``1 - erf(x)``, accurate in the tail (``jax.scipy.special.erfc``).

    Examples
    --------
    >>> from tracejit.scipy.special import erfc
    >>> float(erfc(10.0))  # doctest: +ELLIPSIS
    2.088487583762544...e-45
    """
    dt, (x,) = promote_args_inexact(x)
    return finish(_erfc_cj(x), dt)


def _ndtr64(x):
    a = jnp.abs(x)
    z = a * _INV_SQRT2
    central = 0.5 + 0.5 * un("erf", _where(a < _SQRT2, x * _INV_SQRT2, 0.0))
    zt = _where(a < _SQRT2, 1.0, z)
    at = _where(a < _SQRT2, _SQRT2, a)
    half_tail = 0.5 * _exp_neg_sq(at, 0.5) * _erfcx_ge1(zt)     # ndtr(-|x|)
    tail = _where(x > 0, 1.0 - half_tail, half_tail)
    return _where(jnp.isnan(x), x, _where(a < _SQRT2, central, tail))


@custom_jvp
def _ndtr_cj(x):
    return _ndtr64(x)


_ndtr_cj.defjvps(lambda t, ans, x: t * jnp.exp(-0.5 * x * x) / _SQRT_2PI)


def ndtr(x):
    """Standard normal CDF (``jax.scipy.special.ndtr``), accurate in both tails.

    Examples
    --------
    >>> from tracejit.scipy.special import ndtr
    >>> float(ndtr(0.0))
    0.5
    """
    dt, (x,) = promote_args_inexact(x)
    return finish(_ndtr_cj(x), dt)


def _log_ndtr64(x):
    # lower tail (x < -sqrt 2): log(erfcx(z)/2) - x^2/2 with z = -x/sqrt 2
    lower = x < -_SQRT2
    xl = _where(lower, x, -2.0)
    z = -xl * _INV_SQRT2
    low = jnp.log(0.5 * _erfcx_ge1(z)) - 0.5 * xl * xl
    # upper tail: log1p(-ndtr(-x))
    upper = x > 0.0
    up = jnp.log1p(-_ndtr64(-_where(upper, x, 4.0)))
    mid = jnp.log(_ndtr64(_where(lower | upper, 0.0, x)))
    out = _where(lower, low, _where(upper, up, mid))
    return _where(jnp.isnan(x), x, out)


@custom_jvp
def _log_ndtr_cj(x):
    return _log_ndtr64(x)


_log_ndtr_cj.defjvps(lambda t, ans, x: t * jnp.exp(-0.5 * x * x - ans) / _SQRT_2PI)


def log_ndtr(x, series_order=3):
    """Log of the standard normal CDF (``jax.scipy.special.log_ndtr``), accurate for very negative x.

    ``series_order`` is accepted for JAX compatibility (the result does not depend on it).

    Examples
    --------
    >>> from tracejit.scipy.special import log_ndtr
    >>> float(log_ndtr(-40.0))  # doctest: +ELLIPSIS
    -804.6084420137538...
    """
    if not 0 <= int(series_order) <= 30:
        raise ValueError("series_order must be in [0, 30]")
    dt, (x,) = promote_args_inexact(x)
    return finish(_log_ndtr_cj(x), dt)


def _giles(w, y):
    """Giles' erfinv: y * P(w) with w = -log((1-y)(1+y)) given separately (float64 tables)."""
    sw = jnp.sqrt(w)
    result = None
    for bound, shift, use_sqrt, coeffs in reversed(_GILES_F64):
        t = (sw if use_sqrt else w) - shift
        p = horner(list(coeffs), t)
        result = p if result is None else _where(w < bound, p, result)
    return result * y


def _erfinv64(y):
    w = -(jnp.log1p(-y) + jnp.log1p(y))
    out = _giles(_where(jnp.abs(y) < 1.0, w, 1.0), y)
    out = _where(jnp.abs(y) == 1.0, y * _INF, out)
    return _where(jnp.abs(y) > 1.0, np.nan, out)


@custom_jvp
def _erfinv_cj(y):
    return _erfinv64(y)


_erfinv_cj.defjvps(lambda t, ans, y: t * (math.sqrt(math.pi) / 2) * jnp.exp(ans * ans))


def erfinv(x):
    """Inverse error function (``jax.scipy.special.erfinv``); ``+-inf`` at ``+-1``, NaN outside.

    Examples
    --------
    >>> from tracejit.scipy.special import erfinv
    >>> float(erfinv(0.5))  # doctest: +ELLIPSIS
    0.476936276204469...
    """
    dt, (x,) = promote_args_inexact(x)
    return finish(_erfinv_cj(x), dt)


def _ndtri64(p):
    # ndtri(p) = sqrt(2) erfinv(2p - 1); w = -log((1-y)(1+y)) = -log(4 p (1 - p)) from p directly.
    inside = (p > 0) & (p < 1)
    ps = _where(inside, p, 0.5)
    w = -(jnp.log(4.0 * ps) + jnp.log1p(-ps))
    y = 2.0 * ps - 1.0
    giles = _SQRT2 * _giles(_where(w < 36.0, w, 1.0), y)
    # Far tails (beyond Giles' range): x^2 ~ t - log(2 pi t), t = -2 log(min(p, 1-p)), then Newton.
    lower = ps < 0.5
    t = -2.0 * _where(lower, jnp.log(ps), jnp.log1p(-ps))
    tt = _where(w < 36.0, 10.0, t)
    far = jnp.sqrt(tt - jnp.log(2 * math.pi * tt))
    x = _where(w < 36.0, giles, _where(lower, -far, far))
    # Newton steps on log Phi(x) = log p (lower half) / log Phi(-x) = log1p(-p) (upper half).
    xs = _where(lower, x, -x)
    target = -0.5 * t
    for _ in range(3):
        lp = _log_ndtr64(xs)
        # d/dx log Phi(x) = phi(x) / Phi(x) = exp(-x^2/2 - log Phi(x)) / sqrt(2 pi)
        deriv = jnp.exp(-0.5 * xs * xs - lp) / _SQRT_2PI
        xs = xs - (lp - target) / deriv
    x = _where(lower, xs, -xs)
    x = _where(p == 0, -_INF, _where(p == 1, _INF, x))
    return _where((p < 0) | (p > 1) | jnp.isnan(p), np.nan, x)


@custom_jvp
def _ndtri_cj(p):
    return _ndtri64(p)


_ndtri_cj.defjvps(lambda t, ans, p: t * _SQRT_2PI * jnp.exp(0.5 * ans * ans))


def ndtri(p):
    """Inverse of the standard normal CDF (``jax.scipy.special.ndtri``).

    Full relative precision down to the smallest ``p`` (no ``2p - 1`` rounding);
    ``-inf``/``inf`` at 0/1, NaN outside [0, 1].

    Examples
    --------
    >>> from tracejit.scipy.special import ndtri
    >>> round(float(ndtri(0.975)), 14)
    1.95996398454005
    """
    dt, (p,) = promote_args_inexact(p)
    return finish(_ndtri_cj(p), dt)


# ============================================================================ logistic / entropy

def expit(x):
    """Logistic sigmoid ``1 / (1 + exp(-x))`` (``jax.scipy.special.expit``).

    Examples
    --------
    >>> from tracejit.scipy.special import expit
    >>> float(expit(0.0))
    0.5
    """
    dt = result_float_dtype(x)
    return un("logistic", convert(to_operand(x), dt))


@custom_jvp
def _logit_cj(p):
    # near p = 1/2 the two logs cancel (logit(0.5000008) was 4e3 eps off): there
    # logit = log1p((2p - 1) / (1 - p)), 2p - 1 exact for p >= 1/4
    mid = (p > 0.3) & (p < 0.7)
    pm = _where(mid, p, jnp.full_like(p, 0.5))
    return _where(mid, jnp.log1p((2.0 * pm - 1.0) / (1.0 - pm)), jnp.log(p) - jnp.log1p(-p))


_logit_cj.defjvps(lambda t, ans, p: t / (p * (1.0 - p)))


def logit(x):
    """Log-odds ``log(x / (1 - x))`` (``jax.scipy.special.logit``), accurate near 0 and 1.

    Examples
    --------
    >>> from tracejit.scipy.special import logit
    >>> float(logit(0.5))
    0.0
    """
    dt = result_float_dtype(x)
    x = convert(to_operand(x), dt)
    return _logit_cj(x)


@custom_jvp
def _xlogy_cj(x, y):
    # 0 where x == 0, unless y is NaN (as SciPy and JAX)
    zero = (x == 0) & ~jnp.isnan(y)
    return _where(zero, jnp.zeros_like(x), x * jnp.log(_where(zero, jnp.ones_like(y), y)))


@_xlogy_cj.defjvp
def _xlogy_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    # JAX's rule: x' log(y) + y' x / y
    return _xlogy_cj(x, y), tx * jnp.log(y) + ty * (x / y)


def xlogy(x, y):
    """``x * log(y)``, 0 where ``x == 0`` (``jax.scipy.special.xlogy``).

    Examples
    --------
    >>> from tracejit.scipy.special import xlogy
    >>> float(xlogy(0.0, 0.0)), float(xlogy(2.0, 1.0))
    (0.0, 0.0)
    """
    dt = result_float_dtype(x, y)
    x, y = jnp.broadcast_arrays(convert(to_operand(x), dt), convert(to_operand(y), dt))
    return _xlogy_cj(x, y)


@custom_jvp
def _xlog1py_cj(x, y):
    zero = (x == 0) & ~jnp.isnan(y)
    return _where(zero, jnp.zeros_like(x), x * jnp.log1p(_where(zero, jnp.zeros_like(y), y)))


@_xlog1py_cj.defjvp
def _xlog1py_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    return _xlog1py_cj(x, y), tx * jnp.log1p(y) + ty * (x / (1.0 + y))


def xlog1py(x, y):
    """``x * log1p(y)``, 0 where ``x == 0`` (``jax.scipy.special.xlog1py``).

    Examples
    --------
    >>> from tracejit.scipy.special import xlog1py
    >>> float(xlog1py(0.0, -1.0))
    0.0
    """
    dt = result_float_dtype(x, y)
    x, y = jnp.broadcast_arrays(convert(to_operand(x), dt), convert(to_operand(y), dt))
    return _xlog1py_cj(x, y)


def entr(x):
    """Elementwise entropy ``-x log x`` (``-0.0`` at 0, ``-inf`` for ``x < 0``), ``jax.scipy.special.entr``.

    Its derivative is JAX's: ``-(log x + 1)``, ``+inf`` at 0, 0 for ``x < 0``.

    Examples
    --------
    >>> from tracejit.scipy.special import entr
    >>> float(entr(1.0)), float(entr(0.0))
    (-0.0, -0.0)
    """
    dt = result_float_dtype(x)
    return _entr_cj(convert(to_operand(x), dt))


@custom_jvp
def _entr_cj(x):
    val = -_xlogy_cj(x, _where(x <= 0, jnp.ones_like(x), x))
    return _where(x < 0, -_INF, _where(x == 0, -jnp.zeros_like(x), val))     # -0.0 at 0, as JAX's -xlogy(0, 0)


@_entr_cj.defjvp
def _entr_jvp(primals, tangents):
    # -(log x + 1), as JAX's: +inf at 0 (the limit), 0 where the value is the constant -inf.
    (x,), (tx,) = primals, tangents
    slope = -(jnp.log(_where(x < 0, jnp.ones_like(x), x)) + 1)
    return _entr_cj(x), _where(x < 0, jnp.zeros_like(x), slope) * tx


def _xlog_ratio(p, q):
    """p log(p / q) for p, q > 0 (other lanes hold safe values). Where p / q under- or overflows
    the product is still finite (rel_entr(5e-324, 2.0) is -3.7e-321, not -inf; rel_entr(1.0,
    5e-324) is 744.4, not inf), so there the log is log(p) - log(q); a subnormal p / q has lost
    digits too (rel_entr(1e-20, 1e300) was 1.5e-8 relative off)."""
    r = p / q
    off = (r < np.finfo(np.float64).tiny) | jnp.isinf(r)
    safe_r = _where(off, jnp.ones_like(r), r)
    far = p * (jnp.log(p) - jnp.log(q))
    return _where(off, far, _xlogy_cj(p, safe_r))


def _near_ratio(p, q):
    """(near, t) with t = (p - q) / q where 1/2 < p / q < 3/2 (p - q is exact there), else 0.

    Near p = q, log(p / q) from the rounded ratio has an absolute error of an ulp of 1, a large
    relative error of the small logarithm (rel_entr(2.0077575e-36, 2.0077570e-36) was 4e-10
    relative off, kl_div 4e-3: p log(p/q) - p + q cancelled); log1p(t) and log1pmx(t) keep it."""
    t = (p - q) / q
    near = jnp.abs(t) < 0.5
    return near, _where(near, t, jnp.zeros_like(t))


def rel_entr(p, q):
    """Elementwise relative entropy ``p log(p/q)`` (``jax.scipy.special.rel_entr``).

    0 at ``p == 0, q >= 0``; ``inf`` when ``p > 0, q == 0`` or either is negative.

    Examples
    --------
    >>> from tracejit.scipy.special import rel_entr
    >>> float(rel_entr(1.0, 1.0))
    0.0
    """
    # float64 inside, rounded once (as the other functions): in float32, p / q underflowed for
    # p = 1.4e-45 and the result was -inf.
    dt, (p, q) = promote_args_inexact(p, q)
    p, q = jnp.broadcast_arrays(p, q)
    both_pos = (p > 0) & (q > 0)
    safe_p = _where(both_pos, p, jnp.ones_like(p))
    safe_q = _where(both_pos, q, jnp.ones_like(q))
    near, t = _near_ratio(safe_p, safe_q)
    val = _where(near, safe_p * jnp.log1p(t), _xlog_ratio(safe_p, safe_q))
    out = _where(both_pos, val, _where((p == 0) & (q >= 0), jnp.zeros_like(p), jnp.full_like(p, _INF)))
    return finish(_where(jnp.isnan(p) | jnp.isnan(q), jnp.full_like(p, np.nan), out), dt)  # NaN in, NaN out (SciPy)


def kl_div(p, q):
    """Elementwise ``p log(p/q) - p + q`` (``jax.scipy.special.kl_div``).

    Examples
    --------
    >>> from tracejit.scipy.special import kl_div
    >>> float(kl_div(1.0, 2.0))  # doctest: +ELLIPSIS
    0.30685281944005...
    """
    # float64 inside, rounded once (as the other functions): in float32, p / q underflowed for
    # p = 1.4e-45 and the result was -inf.
    dt, (p, q) = promote_args_inexact(p, q)
    p, q = jnp.broadcast_arrays(p, q)
    both_pos = (p > 0) & (q > 0)
    safe_p = _where(both_pos, p, jnp.ones_like(p))
    safe_q = _where(both_pos, q, jnp.ones_like(q))
    near, t = _near_ratio(safe_p, safe_q)
    # near p = q (|t| < 1/2): q ((1 + t) log1p(t) - t) = q ((1 + t) log1pmx(t) + t^2), no
    # cancellation (kl_div(2.0077575e-36, 2.0077570e-36) was 4e-3 relative off, kl_div(1, 0.999)
    # 2.8e-10 as SciPy's is)
    close = safe_q * ((1.0 + t) * log1pmx(t) + t * t)
    val = _where(near, close, _xlog_ratio(safe_p, safe_q) - safe_p + safe_q)
    out = _where(both_pos, val, _where((p == 0) & (q >= 0), q, jnp.full_like(p, _INF)))
    return finish(_where(jnp.isnan(p) | jnp.isnan(q), jnp.full_like(p, np.nan), out), dt)


# ============================================================================ logsumexp / softmax

def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """``log(sum(b * exp(a)))`` computed stably (``jax.scipy.special.logsumexp``).

    Parameters
    ----------
    a : array_like
    axis : int or tuple of ints, optional
        Axes to reduce (all by default).
    b : array_like, optional
        Scale factors, broadcast against ``a``; may be negative (then use ``return_sign``).
    keepdims : bool
    return_sign : bool
        Also return the sign of the sum; without it a negative sum gives NaN.
    where : array_like of bool, optional
        Elements to include.

    Examples
    --------
    >>> from tracejit.scipy.special import logsumexp
    >>> float(logsumexp([0.0, 0.0]))  # doctest: +ELLIPSIS
    0.693147180559945...
    >>> [float(v) for v in logsumexp([1.0, 1.0], b=[1.0, -2.0], return_sign=True)]
    [1.0, -1.0]
    """
    x = to_operand(a)
    dt = result_float_dtype(x) if b is None else result_float_dtype(x, b)
    x = convert(x, dt)
    if b is not None:
        bb = convert(to_operand(b), dt)
        x, bb = jnp.broadcast_arrays(x, bb)
    else:
        bb = None
    if where is not None:
        wm = to_operand(where)
        x, wm = jnp.broadcast_arrays(x, wm)
        if bb is not None:
            bb = jnp.broadcast_to(bb, jnp.shape(x))
    else:
        wm = None
    neg_inf = jnp.full_like(x, -_INF)
    mask_for_max = x
    if bb is not None:
        mask_for_max = _where(bb == 0, neg_inf, mask_for_max)
    if wm is not None:
        mask_for_max = _where(wm, mask_for_max, neg_inf)
    mx = jnp.max(mask_for_max, axis=axis, keepdims=True, initial=-_INF)
    mx = stop_gradient(_where(jnp.isfinite(mx), mx, jnp.zeros_like(mx)))
    e = jnp.exp(x - mx)
    if bb is not None:
        # b == 0 drops the term even where a is +inf (exp(inf) * 0 made the sum NaN); finite terms
        # keep their b-derivative exp(a - max)
        e = _where((bb == 0) & jnp.isinf(e), jnp.zeros_like(e), e) * bb
    if wm is not None:
        e = _where(wm, e, jnp.zeros_like(e))
    s = jnp.sum(e, axis=axis, keepdims=keepdims)
    shift = mx if keepdims else jnp.reshape(mx, jnp.shape(s))
    if return_sign:
        sign = stop_gradient(jnp.sign(s))
        out = jnp.log(jnp.abs(s)) + shift
        return out, sign
    return jnp.log(s) + shift


def softmax(x, axis=None):
    """``exp(x) / sum(exp(x), axis)`` (``scipy.special.softmax``; all axes by default).

    Examples
    --------
    >>> from tracejit.scipy.special import softmax
    >>> softmax([0.0, 0.0])
    Array([0.5, 0.5])
    """
    x = to_operand(x)
    x = convert(x, result_float_dtype(x))
    mx = stop_gradient(jnp.max(x, axis=axis, keepdims=True))
    e = jnp.exp(x - mx)
    return e / jnp.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=None):
    """``x - logsumexp(x, axis)`` (``scipy.special.log_softmax``; all axes by default).

    Examples
    --------
    >>> from tracejit.scipy.special import log_softmax
    >>> log_softmax([0.0, 0.0])  # doctest: +ELLIPSIS
    Array([-0.69314718, -0.69314718])
    """
    x = to_operand(x)
    x = convert(x, result_float_dtype(x))
    mx = stop_gradient(jnp.max(x, axis=axis, keepdims=True))
    sh = x - mx
    return sh - jnp.log(jnp.sum(jnp.exp(sh), axis=axis, keepdims=True))


# ============================================================================ Bessel I0, I1

_BESSEL_SERIES_MAX = 30.0
_BESSEL_SERIES_TERMS = 72
_BESSEL_ASYM_TERMS = 24


def _bessel_ie(x, order):
    """exp(-|x|) I_order(|x|) for order 0 or 1 (|x| only; sign handled by the caller)."""
    a = jnp.abs(x)
    small = a < _BESSEL_SERIES_MAX
    xs = _where(small, a, 1.0)
    q = 0.25 * xs * xs
    t = jnp.ones_like(xs)
    s = jnp.ones_like(xs)
    for k in range(1, _BESSEL_SERIES_TERMS):
        t = t * q / (k * (k + order))
        s = s + t
    if order == 1:
        s = s * (0.5 * xs)
    series = s * jnp.exp(-xs)
    # Hankel: I_nu(x) e^-x ~ 1/sqrt(2 pi x) sum_k (-1)^k a_k(nu) / x^k
    xl = _where(small, _BESSEL_SERIES_MAX, a)
    xl_f = _where(jnp.isinf(xl), _BESSEL_SERIES_MAX, xl)
    mu = 4.0 * order * order
    r = 1.0 / xl_f
    term = jnp.ones_like(xl_f)
    acc = jnp.ones_like(xl_f)
    for k in range(1, _BESSEL_ASYM_TERMS):
        term = term * (-(mu - (2 * k - 1) ** 2) / (8.0 * k)) * r
        acc = acc + term
    # sqrt(2 pi) sqrt(x), not sqrt(2 pi x): 2 pi x overflows for x > 2.9e307 (i0e(1.7e308) gave 0,
    # and i0 = exp(|x|) * i0e gave inf * 0 = NaN instead of inf).
    asym = acc / (math.sqrt(2 * math.pi) * jnp.sqrt(xl_f))
    asym = _where(jnp.isinf(xl), 0.0, asym)
    return _where(small, series, asym)


def _i0e64(x):
    return _where(jnp.isnan(x), x, _bessel_ie(x, 0))


def _i1e64(x):
    v = _bessel_ie(x, 1)
    return _where(jnp.isnan(x), x, _where(x < 0, -v, v))


@custom_jvp
def _i0e_cj(x):
    return _i0e64(x)


@custom_jvp
def _i1e_cj(x):
    return _i1e64(x)


_i0e_cj.defjvps(lambda t, ans, x: t * (_i1e_cj(x) - jnp.sign(x) * ans))


def _i1e_deriv(x, ans):
    # d/dx i1e = i0e - i1e (sign(x) + 1/x); the limit at 0 is 1/2.
    safe = _where(x == 0, jnp.ones_like(x), x)
    d = _i0e_cj(x) - ans * (jnp.sign(x) + 1.0 / safe)
    return _where(x == 0, 0.5 * jnp.ones_like(x), d)


_i1e_cj.defjvps(lambda t, ans, x: t * _i1e_deriv(x, ans))


def i0e(x):
    """Exponentially scaled modified Bessel function of order 0, ``exp(-|x|) I0(x)``.

    Examples
    --------
    >>> from tracejit.scipy.special import i0e
    >>> float(i0e(0.0))
    1.0
    """
    dt, (x,) = promote_args_inexact(x)
    return finish(_i0e_cj(x), dt)


def i1e(x):
    """Exponentially scaled modified Bessel function of order 1, ``exp(-|x|) I1(x)``.

    Examples
    --------
    >>> from tracejit.scipy.special import i1e
    >>> float(i1e(0.0))
    0.0
    """
    dt, (x,) = promote_args_inexact(x)
    return finish(_i1e_cj(x), dt)


def i0(x):
    """Modified Bessel function of order 0 (``jax.scipy.special.i0``).

    Examples
    --------
    >>> from tracejit.scipy.special import i0
    >>> float(i0(1.0))  # doctest: +ELLIPSIS
    1.266065877752008...
    """
    dt, (x,) = promote_args_inexact(x)
    return finish(jnp.exp(jnp.abs(x)) * _i0e_cj(x), dt)


def i1(x):
    """Modified Bessel function of order 1 (``jax.scipy.special.i1``).

    Examples
    --------
    >>> from tracejit.scipy.special import i1
    >>> float(i1(1.0))  # doctest: +ELLIPSIS
    0.565159103992485...
    """
    dt, (x,) = promote_args_inexact(x)
    return finish(jnp.exp(jnp.abs(x)) * _i1e_cj(x), dt)


# ============================================================================ spence (dilogarithm)

_LI2_COEFFS = [1.0 / (k * k) for k in range(58, 0, -1)]   # sum_k z^k / k^2, highest degree first
_PI2_6 = math.pi ** 2 / 6


def _li2_series(z):
    """Li2(z) = sum_{k>=1} z^k / k^2 for |z| <= 1/2."""
    return z * horner(_LI2_COEFFS, z)


def _spence64(x):
    """spence(x) = Li2(1 - x) for x >= 0, mapping 1 - x into |z| <= 1/2 by Li2's identities."""
    xs = _where(x > 0, x, 0.5)
    xs = _where(jnp.isinf(xs), 4.0, xs)
    # x in [0.5, 1.5]: z = 1 - x exactly
    mid = _li2_series(_where((xs >= 0.5) & (xs <= 1.5), 1.0 - xs, 0.0))
    # x in (0, 0.5): reflection Li2(z) = pi^2/6 - log z log(1-z) - Li2(1-z), 1 - z = x
    xl = _where(xs < 0.5, xs, 0.25)
    low = _PI2_6 - jnp.log1p(-xl) * jnp.log(xl) - _li2_series(xl)
    # x in (1.5, 2]: Landen Li2(z) = -Li2(z/(z-1)) - log(1-z)^2 / 2, z/(z-1) = (x-1)/x
    xm = _where((xs > 1.5) & (xs <= 2.0), xs, 1.75)
    lx = jnp.log(xm)
    upper_mid = -_li2_series((xm - 1.0) / xm) - 0.5 * lx * lx
    # x > 2: Li2(z) = -pi^2/6 - log(-z)^2 / 2 - Li2(1/z), 1/z = 1/(1-x) in (-1, 0)
    xh = _where(xs > 2.0, xs, 4.0)
    lxm1 = jnp.log(xh - 1.0)
    u = 1.0 / (1.0 - xh)
    # 1/z in [-1/2, 0) (x >= 3): series; else Landen again: -Li2(1/x) - log(x/(x-1))^2 / 2
    lr = jnp.log(xh / (xh - 1.0))
    li2_u = _where(xh >= 3.0, _li2_series(_where(xh >= 3.0, u, 0.0)),
                   -_li2_series(1.0 / xh) - 0.5 * lr * lr)
    high = -_PI2_6 - 0.5 * lxm1 * lxm1 - li2_u
    out = _where(xs < 0.5, low, _where(xs <= 1.5, mid, _where(xs <= 2.0, upper_mid, high)))
    out = _where(x == 0, _PI2_6, out)
    out = _where(x == _INF, -_INF, out)
    return _where((x < 0) | jnp.isnan(x), np.nan, out)


@custom_jvp
def _spence_cj(x):
    return _where(x == np.inf, np.nan, _spence64(x))      # NaN at +inf, as SciPy and JAX


def _spence_deriv(x):
    safe = _where(x == 1.0, 2.0, x)
    return _where(x == 1.0, -1.0, jnp.log(safe) / (1.0 - safe))


_spence_cj.defjvps(lambda t, ans, x: t * _spence_deriv(x))


def spence(x):
    """Spence's function ``int_1^x log(t) / (1 - t) dt = Li2(1 - x)`` for ``x >= 0`` (``jax.scipy.special.spence``).

    NaN for ``x < 0`` and at ``+inf`` (as SciPy and JAX); ``spence(0) = pi**2 / 6``.

    Examples
    --------
    >>> from tracejit.scipy.special import spence
    >>> float(spence(1.0))
    0.0
    >>> round(float(spence(0.0)), 14)  # pi**2 / 6
    1.64493406684823
    """
    dt, (x,) = promote_args_inexact(x)
    return finish(_spence_cj(x), dt)


# ============================================================================ spherical harmonics

def _static_n_max(n, n_max, name):
    if n_max is not None:
        return int(n_max)
    from tracejit.numpy._util import is_tracer
    if is_tracer(n):
        raise ValueError(f"{name}: pass a static n_max when n is traced (as JAX)")
    return int(np.max(np.asarray(n))) if np.size(n) else 0


def _sph_harm(m, n, azimuth, polar, n_max):
    """Y_n^m with the Condon-Shortley phase, by the normalized associated Legendre recurrence in n."""
    dt = result_float_dtype(azimuth, polar)
    m = jnp.asarray(to_operand(m))
    n = jnp.asarray(to_operand(n))
    az = convert(to_operand(azimuth), F64)
    po = convert(to_operand(polar), F64)
    m, n, az, po = jnp.broadcast_arrays(m, n, az, po)
    mf = convert(m, F64)
    nf = convert(n, F64)
    ma = jnp.abs(mf)
    x = jnp.cos(po)
    s = jnp.abs(jnp.sin(po))
    # Pbar_m^m = (-1)^m sqrt((2m+1)/(4 pi) prod_{k<=m} (2k-1)/(2k)) s^m
    pmm = jnp.full_like(x, 1.0 / math.sqrt(4 * math.pi))
    for k in range(1, n_max + 1):
        pmm = _where(ma >= k, pmm * (-s) * math.sqrt((2 * k - 1) / (2 * k)), pmm)
    pmm = pmm * jnp.sqrt(2 * ma + 1)
    prev = jnp.zeros_like(x)
    cur = jnp.zeros_like(x)
    out = jnp.zeros_like(x)
    for l in range(n_max + 1):
        lf = float(l)
        at_m = ma == lf
        next_m = ma == lf - 1
        denom = jnp.maximum(lf * lf - ma * ma, 1.0)
        a = jnp.sqrt(max(4 * lf * lf - 1, 0.0) / denom)
        b = jnp.sqrt(jnp.maximum(((lf - 1) ** 2 - ma * ma) / max(4 * (lf - 1) ** 2 - 1, 1.0), 0.0))
        rec = a * (x * cur - b * prev)
        new = _where(at_m, pmm, _where(next_m, jnp.sqrt(2 * ma + 3) * x * cur, _where(ma < lf, rec, 0.0)))
        prev, cur = cur, new
        out = _where(nf == lf, cur, out)
    # negative m: Y_n^-m = (-1)^m conj(Y_n^m); the phase e^{i m phi} carries the conjugation
    sign = _where((mf < 0) & ((ma - 2.0 * jnp.floor(0.5 * ma)) != 0), -1.0, 1.0)
    val = sign * out
    ok = (ma <= nf) & (nf >= 0) & (nf <= n_max)
    val = _where(ok, val, 0.0)
    cdt = np.complex64 if dt == np.float32 else np.complex128
    phase = jnp.exp(1j * jnp.astype(mf * az, np.complex128))
    return jnp.astype(jnp.astype(val, np.complex128) * phase, cdt)


def sph_harm(m, n, theta, phi, n_max=None):
    """Spherical harmonic ``Y_n^m(theta, phi)`` with SciPy's (pre-1.15) convention:
    ``theta`` azimuthal, ``phi`` polar, Condon-Shortley phase (``jax.scipy.special.sph_harm``).

    Parameters
    ----------
    m, n : array_like of int
        Order and degree (``|m| <= n``; 0 elsewhere).
    theta, phi : array_like
        Azimuthal and polar angles.
    n_max : int, optional
        Static bound on ``n``; required when ``n`` is traced.

    Examples
    --------
    >>> from tracejit.scipy.special import sph_harm
    >>> round(float(sph_harm(0, 0, 0.0, 0.0).real), 12)  # 1 / sqrt(4 pi)
    0.282094791774
    """
    return _sph_harm(m, n, theta, phi, _static_n_max(n, n_max, "sph_harm"))


def sph_harm_y(n, m, theta, phi, diff_n=0):
    """Spherical harmonic with SciPy 1.15's argument order: degree ``n``, order ``m``, polar
    ``theta``, azimuthal ``phi`` (``jax.scipy.special.sph_harm_y``; ``diff_n=0`` only).

    Examples
    --------
    >>> from tracejit.scipy.special import sph_harm_y
    >>> round(float(sph_harm_y(1, 0, 0.0, 0.0).real), 12)  # sqrt(3 / (4 pi))
    0.488602511903
    """
    if diff_n != 0:
        raise NotImplementedError("sph_harm_y: only diff_n=0 is supported")
    return _sph_harm(m, n, phi, theta, _static_n_max(n, None, "sph_harm_y"))


from tracejit.scipy._incomplete import exp1, expi, expn, gammainc, gammaincc  # noqa: E402,F401
from tracejit.scipy._hyp1f1 import hyp1f1  # noqa: E402,F401
from tracejit.scipy._betainc import betainc  # noqa: E402,F401
from tracejit.scipy.special_more import (bessel_jn, boxcox, boxcox1p, dawsn, erfcx, fresnel,  # noqa: E402,F401
                                         loggamma, owens_t, sici, wofz)
from tracejit.scipy._hyp2f1 import hyp2f1  # noqa: E402,F401
from tracejit.scipy import special_more as _special_more  # noqa: E402

__all__ = sorted(__all__ + _special_more.__all__ + ["hyp2f1"])


def __dir__():
    # The public names only (tab completion), as JAX's API modules list them; helpers stay importable.
    return sorted(__all__)
