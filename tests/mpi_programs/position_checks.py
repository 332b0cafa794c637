"""Shared by the rank programs of meshes whose positions are not ranks (permuted_mesh.py,
subset_mesh.py): every collective over a 1-D mesh axis ``"i"``, checked against the values each
position holds, so that positions (not ranks) order gathers, sums, permutations and all-to-alls."""
import numpy as np

import tracejit.numpy as jnp
from tracejit import lax


def check_collectives_by_position(both, close, pos, count, label):
    """``both(fn)`` runs ``fn`` under the mesh's shard_map eagerly and compiled (and compares them);
    ``pos`` is this process's position on the axis of ``count`` processes."""
    val = lambda p: np.arange(3.0) + 10 * p                        # noqa: E731  (position p's value)
    mine = lambda: jnp.arange(3.0) + 10 * lax.axis_index("i")      # noqa: E731
    close(both(lambda: lax.axis_index("i")), pos, f"{label}: axis_index is the position")
    close(both(lambda: lax.psum(mine(), "i")), sum(val(p) for p in range(count)), f"{label}: psum")
    close(both(lambda: lax.pmax(mine(), "i")), val(count - 1), f"{label}: pmax")
    close(both(lambda: lax.all_gather(mine(), "i")), np.stack([val(p) for p in range(count)]),
          f"{label}: all_gather in position order")
    close(both(lambda: lax.ppermute(mine(), "i", [(p, (p + 1) % count) for p in range(count)])),
          val((pos - 1) % count), f"{label}: ppermute by position")
    close(both(lambda: lax.psum_scatter(jnp.tile(mine(), count), "i", tiled=True)),
          sum(val(p) for p in range(count)), f"{label}: psum_scatter")
    close(both(lambda: lax.all_to_all(jnp.stack([mine() + j for j in range(count)]), "i", 0, 0)),
          np.stack([val(p) + pos for p in range(count)]), f"{label}: all_to_all")
