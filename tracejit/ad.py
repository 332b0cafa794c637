"""``jax.ad``: where ``vjp(...).with_refs`` puts each input's cotangent.

Pass :class:`GradValue` (return it), :class:`DontWant` (skip it) or a ``Ref`` (add it into the
Ref) per primal; results hold the cotangent, :class:`DidntWant` or :class:`GradRef`.

Examples
--------
>>> import numpy as np, tracejit
>>> _, f_vjp = tracejit.vjp(lambda x, y: x * y, np.float64(2.0), np.float64(5.0))
>>> f_vjp.with_refs(tracejit.ad.GradValue(), tracejit.ad.DontWant())(np.float64(1.0))
(Array(5.), DidntWant())
"""
from tracejit.transforms.vjp_accumulators import DidntWant, DontWant, GradRef, GradValue

__all__ = ["DidntWant", "DontWant", "GradRef", "GradValue"]
