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
from tracejit.scipy.stats import (bernoulli, beta, binom, cauchy, chi2, dirichlet, expon, gamma, geom,  # noqa: F401
                                  laplace, logistic, multivariate_normal, nbinom, norm, pareto, poisson, t,
                                  truncnorm, uniform, vonmises)

__all__ = ["bernoulli", "beta", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma", "geom", "laplace",
           "logistic", "multivariate_normal", "nbinom", "norm", "pareto", "poisson", "t", "truncnorm", "uniform",
           "vonmises"]
