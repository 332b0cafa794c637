"""Primitive definitions. Importing this package registers every primitive's rules."""
from tracejit.ops import call, dot, elementwise, reductions, structural  # noqa: F401
from tracejit.ops import control_flow, indexing, sorting, linalg, random_bits  # noqa: F401
from tracejit.ops import callback  # noqa: F401
