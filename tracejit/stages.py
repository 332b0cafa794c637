"""The ahead-of-time stages (``jax.stages``): ``jit(f).lower(x)`` is :class:`Lowered`,
``.compile()`` is :class:`Compiled`; :class:`Wrapped` is the jitted function's type.

Examples
--------
>>> import numpy as np, tracejit
>>> from tracejit import stages
>>> f = tracejit.jit(lambda x: x + 1)
>>> lowered = f.lower(np.ones(2))
>>> isinstance(f, stages.Wrapped), isinstance(lowered, stages.Lowered)
(True, True)
>>> compiled = lowered.compile()
>>> isinstance(compiled, stages.Compiled), compiled(np.ones(2))
(True, Array([2., 2.]))
"""
from tracejit.api import Compiled, Jitted, Lowered

Wrapped = Jitted
"""The type of ``tracejit.jit(f)`` (JAX's ``Wrapped`` protocol: callable, with ``lower``)."""

__all__ = ["Compiled", "Lowered", "Wrapped"]
