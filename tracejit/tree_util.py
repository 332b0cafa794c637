"""``tracejit.tree_util``: pytree utilities (as ``jax.tree_util``)."""
from tracejit.core.pytree import (PyTreeDef, register_pytree_node, tree_flatten, tree_leaves,  # noqa: F401
                                  tree_map, tree_structure, tree_unflatten)
