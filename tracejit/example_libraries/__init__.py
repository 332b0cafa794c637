"""``tracejit.example_libraries`` (as ``jax.example_libraries``): :mod:`.optimizers` and :mod:`.stax`.

Examples
--------
>>> from tracejit.example_libraries import optimizers, stax
>>> callable(optimizers.adam(1e-3).init_fn), len(stax.Dense(3))
(True, 2)
"""
