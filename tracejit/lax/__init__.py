"""``tracejit.lax``: the primitive-level API of jax.lax.

Binary functions accept Python scalars as weak operands (they take the other
operand's dtype), like ``jax.lax``; array operands must already agree in
dtype and shape (rank-0 operands broadcast).
"""
from tracejit.lax.ops import *  # noqa: F401,F403
from tracejit.lax.ops import __all__ as _ops_all

__all__ = list(_ops_all)
from tracejit.lax.control_flow import *  # noqa: E402,F401,F403
from tracejit.lax.control_flow import __all__ as _cf_all  # noqa: E402
from tracejit.lax.indexing import *  # noqa: E402,F401,F403
from tracejit.lax.indexing import __all__ as _ix_all  # noqa: E402

__all__ += list(_cf_all) + list(_ix_all)
