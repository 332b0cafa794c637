"""The Gumbel distribution's log-probabilities, shared by ``gumbel_r`` and ``gumbel_l`` (which
differ in the sign of the standardized variable)."""
import tracejit.numpy as jnp
from tracejit.scipy.stats._util import promote


def standardized(x, loc, scale, sign):
    """z = sign (x - loc) / scale, the standardized right-skewed variable."""
    x, loc, scale = promote(x, loc, scale)
    return sign * (x - loc) / scale


def log_lower(z):
    """log P(Z <= z) for the right-skewed variable: -exp(-z)."""
    return -jnp.exp(-z)


def log_upper(z):
    """log P(Z > z) = log(1 - exp(-exp(-z))) for the right-skewed variable, without the rounding of
    the inner probability to 1: log1p(-exp(-t)) for t = exp(-z) >= log 2 (it was 0.0 for
    -1.4e-39 at z = -4.49), and -z - t/2 once t < 1e-8 (exp(-z) underflowing to 0 gave -inf for
    -750 at z = 750)."""
    t = jnp.exp(-z)
    tiny = t < 1e-8
    big = t >= 0.6931471805599453
    tm = jnp.where(tiny | big, 1.0, t)
    tb = jnp.where(big, t, 1.0)
    mid = jnp.log(-jnp.expm1(-tm))
    return jnp.where(tiny, -z - 0.5 * t, jnp.where(big, jnp.log1p(-jnp.exp(-tb)), mid))
