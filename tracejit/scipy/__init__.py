"""``tracejit.scipy``: ``jax.scipy``'s API (special functions, distributions, linear algebra, signal).

Everything is written on ``tracejit.numpy`` and the primitives, so it runs eagerly and under
``jit``, ``grad`` and ``vmap``.

Examples
--------
>>> import tracejit.scipy as jsp
>>> float(jsp.special.gammaln(4.0))  # log(3!)
1.791759469228055
"""
from tracejit.scipy import linalg, signal, special, stats  # noqa: F401

__all__ = ["linalg", "signal", "special", "stats"]
