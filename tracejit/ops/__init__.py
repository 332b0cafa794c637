"""Primitive definitions. Importing this package registers every primitive's rules."""
from tracejit.ops import call, dot, elementwise, reductions, structural  # noqa: F401
from tracejit.ops import control_flow, indexing, sorting, linalg, random_bits  # noqa: F401
from tracejit.ops import callback  # noqa: F401
from tracejit.ops.segment import segment_max, segment_min, segment_prod, segment_sum  # noqa: F401,E402  (jax.ops)
