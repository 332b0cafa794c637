"""``lax.with_sharding_constraint`` and the derivative and batching rules of resharding.

Resharding a global array (``ops/mpi_reshard.py``'s primitive ``mpi_reshard``, which
``device_put`` and ``with_sharding_constraint`` bind inside ``jit``) is linear in the global view:
its JVP reshards the tangent, its transpose reshards the cotangent back (from the new sharding to
the old one), as JAX's ``device_put`` transposes. A replicated target's cotangent is the same
global value on every holder (SPMD), so the way back takes each piece from one holder, not a sum.
Under ``vmap`` the batch axis is not split: the block maps gain it as a whole dimension.
"""
from __future__ import annotations

from tracejit.core.primitive import batching_rules
from tracejit.core.pytree import broadcast_prefix, tree_flatten, tree_leaves, tree_unflatten
from tracejit.device_types import Device, SingleDeviceSharding
from tracejit.ops.mpi_reshard import mpi_reshard_p
from tracejit.transforms import batching
from tracejit.transforms.ad_rules_structural import _def_linear

__all__ = ["with_sharding_constraint"]


def _is_sharding_leaf(s) -> bool:
    return type(s) not in (tuple, list, dict)       # a PartitionSpec (a tuple subclass) is one sharding


def with_sharding_constraint(x, shardings):
    """``x`` placed with ``shardings`` (``jax.lax.with_sharding_constraint``).

    With a ``NamedSharding`` it is ``device_put(x, sharding)``, inside ``jit`` as well: a global
    array with another sharding is resharded (its blocks move between the processes of both
    meshes, every one of which makes the call), a global value keeps this process's block. With
    one process (a one-device mesh), or a ``Device`` / ``SingleDeviceSharding``, it is the
    identity. Differentiable (the cotangent is resharded back) and batchable.

    Parameters
    ----------
    x : pytree of arrays or global arrays
    shardings : NamedSharding, Device, SingleDeviceSharding, or a pytree prefix of them
        A bare ``PartitionSpec`` raises TypeError (there is no mesh context to read it in).

    Returns
    -------
    pytree like ``x``

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit import lax
    >>> from tracejit.sharding import NamedSharding, P, make_mesh
    >>> s = NamedSharding(make_mesh((tracejit.process_count(),), ("i",)), P("i"))
    >>> tracejit.jit(lambda v: lax.with_sharding_constraint(v * 2, s))(np.arange(3.0))
    Array([0., 2., 4.])
    """
    sharding_leaves = tree_leaves(shardings, is_leaf=_is_sharding_leaf)
    hooks = [s._is_leaf for s in sharding_leaves if hasattr(s, "_is_leaf")]
    is_leaf = lambda v: any(hook(v) for hook in hooks)       # noqa: E731  (global arrays stay whole)
    leaves, tree = tree_flatten(x, is_leaf=is_leaf)
    per_leaf = broadcast_prefix(shardings, tree_unflatten(tree, list(range(len(leaves)))), is_leaf=_is_sharding_leaf)
    return tree_unflatten(tree, [_constrain(v, s) for v, s in zip(leaves, per_leaf)])


def _constrain(x, sharding):
    put = getattr(sharding, "_put_leaf", None)
    if put is not None:
        return put(x)
    if isinstance(sharding, (Device, SingleDeviceSharding)):
        return x
    raise TypeError(f"with_sharding_constraint: expected a NamedSharding, Device or SingleDeviceSharding, got "
                    f"{type(sharding).__name__} {sharding!r} (a PartitionSpec needs NamedSharding(mesh, spec))")


# --------------------------------------------------------------------------- rules of mpi_reshard

_def_linear(mpi_reshard_p, lambda ct, x, *, sources, targets, shape: mpi_reshard_p.bind(
    ct, sources=targets, targets=sources, shape=shape))


def _reshard_batched(args, dims, batch_size, *, sources, targets, shape):
    if dims[0] is None:
        return [mpi_reshard_p.bind(args[0], sources=sources, targets=targets, shape=shape)], [None]
    x = batching.to_front(args[0], dims[0])

    def whole_batch(blocks):       # every block spans the batch axis, put in front
        return tuple((rank, ((0, batch_size),) + bounds) for rank, bounds in blocks)
    out = mpi_reshard_p.bind(x, sources=whole_batch(sources), targets=whole_batch(targets),
                             shape=(batch_size,) + tuple(shape))
    return [out], [0]


batching_rules[mpi_reshard_p] = _reshard_batched
