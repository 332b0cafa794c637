"""``tracejit.random``: a functional PRNG compatible with ``jax.random``.

Keys are threefry2x32 key data (``uint32[2]``); every function takes a key
and returns values that depend only on the key, so the same key gives the
same numbers eagerly and under ``jit``. ``bits``, ``uniform``, ``split``,
``fold_in``, ``randint``, ``bernoulli``, ``permutation`` and ``choice``
without ``p`` reproduce ``jax.random``'s streams (partitionable threefry,
JAX's default) bit for bit; the other samplers follow JAX's algorithms and
key use, so they give JAX's values up to rounding of their final formulas
(exactly, for integer-valued ones such as ``binomial`` and ``geometric``).
Dtypes default to NumPy 2's: float64 / int64.

Using one key twice in a traced function is reported (``tracejit.config.key_reuse``:
'off', 'warn' (default) or 'error'); split keys instead.

Examples
--------
>>> import numpy as np
>>> import tracejit
>>> from tracejit import random
>>> key = random.PRNGKey(0)
>>> key, sub = random.split(key)
>>> random.normal(sub, (2, 3), np.float32).shape
(2, 3)
>>> def dropout(x, key):
...     mask = random.bernoulli(key, 0.8, x.shape)
...     return x * mask / 0.8
>>> tracejit.jit(dropout)(np.ones(4), key).shape
(4,)
"""
from tracejit.random._keys import (KeyReuseError, KeyReuseWarning, PRNGKey, bits, fold_in, key, key_data,
                                   split, wrap_key_data)
from tracejit.random._discrete_samplers import binomial, geometric, multinomial, rademacher
from tracejit.random._key_extras import clone, key_dtype, key_impl
from tracejit.random._more_samplers import (ball, cauchy, chisquare, double_sided_maxwell, f, generalized_normal,
                                            lognormal, maxwell, orthogonal, pareto, rayleigh, t, triangular,
                                            wald, weibull_min)
from tracejit.random._samplers import (bernoulli, beta, categorical, choice, dirichlet, erf_inv, exponential,
                                       gamma, gumbel, laplace, loggamma, logistic, multivariate_normal, normal,
                                       permutation, poisson, randint, shuffle, truncated_normal, uniform)

__all__ = [
    "ball", "bernoulli", "beta", "binomial", "bits", "categorical", "cauchy", "chisquare", "choice", "clone",
    "dirichlet", "double_sided_maxwell", "erf_inv", "exponential", "f", "fold_in", "gamma",
    "generalized_normal", "geometric", "gumbel", "key", "key_data", "key_dtype", "key_impl", "KeyReuseError",
    "KeyReuseWarning", "laplace", "loggamma", "logistic", "lognormal", "maxwell", "multinomial",
    "multivariate_normal", "normal", "orthogonal", "pareto", "permutation", "poisson", "PRNGKey",
    "rademacher", "randint", "rayleigh", "shuffle", "split", "t", "triangular", "truncated_normal", "uniform",
    "wald", "weibull_min", "wrap_key_data",
]
