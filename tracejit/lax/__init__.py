"""``tracejit.lax``: the primitive-level API of jax.lax.

Binary functions accept Python scalars as weak operands (they take the other
operand's dtype), like ``jax.lax``; array operands must already agree in
dtype and shape (rank-0 operands broadcast).
"""
from tracejit.lax.ops import *  # noqa: F401,F403
from tracejit.lax.ops import __all__ as _ops_all

__all__ = list(_ops_all)
from tracejit.ops.control_flow_functions import *  # noqa: E402,F401,F403
from tracejit.ops.control_flow_functions import __all__ as _cf_all  # noqa: E402
from tracejit.lax.indexing import *  # noqa: E402,F401,F403
from tracejit.lax.indexing import __all__ as _ix_all  # noqa: E402

from tracejit.lax.convolution import *  # noqa: E402,F401,F403
from tracejit.lax.convolution import __all__ as _conv_all  # noqa: E402

__all__ += list(_cf_all) + list(_ix_all) + list(_conv_all)


from tracejit.transforms.api_ad import stop_gradient  # noqa: E402  (jax.lax.stop_gradient)

__all__.append("stop_gradient")

from tracejit.lax.elementwise import *  # noqa: E402,F401,F403
from tracejit.lax.elementwise import __all__ as _ew_all  # noqa: E402
from tracejit.lax.shapes import *  # noqa: E402,F401,F403
from tracejit.lax.shapes import __all__ as _shapes_all  # noqa: E402
from tracejit.lax.special import *  # noqa: E402,F401,F403
from tracejit.lax.special import __all__ as _special_all  # noqa: E402

__all__ += list(_ew_all) + list(_shapes_all) + list(_special_all)
from tracejit.lax.sorting import *  # noqa: E402,F401,F403
from tracejit.lax.sorting import __all__ as _sorting_all  # noqa: E402
from tracejit.lax.reductions import *  # noqa: E402,F401,F403
from tracejit.lax.reductions import __all__ as _red_all  # noqa: E402

__all__ += list(_sorting_all) + list(_red_all)
from tracejit.lax.dimension_numbers import *  # noqa: E402,F401,F403
from tracejit.lax.dimension_numbers import __all__ as _dn_all  # noqa: E402
from tracejit.lax.shape_tuples import *  # noqa: E402,F401,F403
from tracejit.lax.shape_tuples import __all__ as _st_all  # noqa: E402

__all__ += list(_dn_all) + list(_st_all)
from tracejit.lax.gather_scatter import *  # noqa: E402,F401,F403
from tracejit.lax.gather_scatter import __all__ as _gs_all  # noqa: E402

__all__ += list(_gs_all)
from tracejit.lax.implicit import *  # noqa: E402,F401,F403
from tracejit.lax.implicit import __all__ as _implicit_all  # noqa: E402

__all__ += list(_implicit_all)
from tracejit.lax.parallel import *  # noqa: E402,F401,F403
from tracejit.lax.parallel import __all__ as _parallel_all  # noqa: E402

__all__ += list(_parallel_all)
from tracejit.lax.sharding_constraint import *  # noqa: E402,F401,F403
from tracejit.lax.sharding_constraint import __all__ as _sharding_constraint_all  # noqa: E402

__all__ += list(_sharding_constraint_all)
from tracejit.lax.extras import *  # noqa: E402,F401,F403
from tracejit.lax.extras import __all__ as _extras_all  # noqa: E402

__all__ += list(_extras_all)
from tracejit.lax import linalg  # noqa: E402,F401  (jax.lax.linalg, a submodule)
from tracejit.lax.conv_local import *  # noqa: E402,F401,F403
from tracejit.lax.conv_local import __all__ as _cl_all  # noqa: E402
__all__ += list(_cl_all)
