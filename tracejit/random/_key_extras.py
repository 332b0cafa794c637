"""Key utilities of ``jax.random`` that fit tracejit's ``uint32[..., 2]`` key data: clone, key_impl."""
from __future__ import annotations

import numpy as np

from tracejit.core.tracer import Tracer
from tracejit.random._keys import _check_impl, check_key

import tracejit.numpy as jnp


def clone(key):
    """A copy of a key (or a batch of keys) that key-reuse checking treats as a fresh key.

    The values are unchanged, and ``key`` itself is not consumed: after
    ``k2 = clone(k)`` both ``k`` and ``k2`` may be used once each in a
    traced function without a reuse report (``jax.random.clone``).

    Parameters
    ----------
    key : uint32[..., 2]
        Key data.

    Returns
    -------
    uint32[..., 2]
        Equal to ``key``, a distinct array (or traced value).

    Examples
    --------
    >>> from tracejit import random
    >>> k = random.PRNGKey(0)
    >>> c = random.clone(k)
    >>> c.tolist() == k.tolist(), c is k
    (True, False)
    """
    k = check_key("clone", key, allow_batched=True, consume=False)
    if isinstance(k, Tracer):
        # No copy primitive exists; a bitwise no-op gives a distinct traced value.
        return jnp.bitwise_or(k, np.uint32(0))
    return np.array(k, copy=True)


def key_impl(keys):
    """The PRNG implementation name of a key or batch of keys: always ``'threefry2x32'``.

    tracejit keys are threefry2x32 key data (JAX's default implementation);
    the keys are validated, not consumed.

    Parameters
    ----------
    keys : uint32[..., 2]
        Key data.

    Returns
    -------
    str

    Examples
    --------
    >>> from tracejit import random
    >>> random.key_impl(random.key(0))
    'threefry2x32'
    """
    check_key("key_impl", keys, allow_batched=True, consume=False)
    return "threefry2x32"


def key_dtype(impl=None):
    """The dtype of PRNG keys (``jax.random.key_dtype``): ``uint32``.

    tracejit's keys are their threefry2x32 key data (``uint32[2]``), not an extended key dtype as
    JAX's typed keys are, so this is the dtype ``random.key(0).dtype`` has.

    Parameters
    ----------
    impl : None or str
        The PRNG implementation: only ``'threefry2x32'`` (the default) exists here.

    Examples
    --------
    >>> from tracejit import random
    >>> random.key_dtype() == random.key(0).dtype
    True
    """
    _check_impl(impl, "key_dtype")
    return np.dtype(np.uint32)
