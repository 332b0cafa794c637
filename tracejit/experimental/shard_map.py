"""``jax.experimental.shard_map``: the older home of :func:`tracejit.shard_map.shard_map`.

Examples
--------
>>> from tracejit.experimental.shard_map import shard_map
>>> import tracejit
>>> shard_map is tracejit.shard_map
True
"""
from tracejit.shard_map import shard_map

__all__ = ["shard_map"]
