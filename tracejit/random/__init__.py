"""``tracejit.random``: functional PRNG compatible with ``jax.random``."""
