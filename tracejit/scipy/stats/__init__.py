"""``tracejit.scipy.stats``: probability distributions with ``jax.scipy.stats``'s API.

Each distribution is a module of functions (``norm.logpdf(x, loc, scale)``, ...),
written on ``tracejit.numpy`` and ``tracejit.scipy.special``: eager, ``jit``,
``grad`` and ``vmap`` all work.

Examples
--------
>>> from tracejit.scipy.stats import norm
>>> round(float(norm.logpdf(1.0, loc=1.0, scale=1.0)), 12)
-0.918938533205
"""
from tracejit.scipy.stats import (bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet, expon,  # noqa: F401
                                  gamma, gennorm, geom, gumbel_l, gumbel_r, laplace, logistic, multinomial,
                                  multivariate_normal, nbinom, norm, pareto, poisson, t, truncnorm, uniform,
                                  vonmises, wrapcauchy)
from tracejit.scipy.stats._core import mode, rankdata, sem  # noqa: F401
from tracejit.scipy.stats.kde import gaussian_kde  # noqa: F401

# The distribution modules, and the functions and class of the module itself.
__all__ = ["bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma", "gennorm",
           "geom", "gumbel_l", "gumbel_r", "laplace", "logistic", "multinomial", "multivariate_normal", "nbinom",
           "norm", "pareto", "poisson", "t", "truncnorm", "uniform", "vonmises", "wrapcauchy",
           "mode", "rankdata", "sem", "gaussian_kde"]
