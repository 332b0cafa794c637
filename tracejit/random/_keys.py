"""PRNG keys: creation, ``split``, ``fold_in``, raw bits, and key-reuse tracking.

A key is threefry2x32 key data: a ``uint32[2]`` array (``uint32[..., 2]`` for
a batch of keys). ``key(seed)`` and ``PRNGKey(seed)`` build the same data;
the streams follow ``jax.random`` with ``jax_threefry_partitionable=True``
(JAX's default), bit for bit.
"""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from tracejit.config import config
from tracejit.core import dtypes
from tracejit.core.errors import JAXTypeError
from tracejit.core.trace import EVAL_TRACE, current_trace
from tracejit.core.tracer import Tracer
from tracejit.numpy._util import aval, convert, to_operand
from tracejit.ops.elementwise import binary_prims, iota_p
from tracejit.ops.random_bits import threefry2x32_p

_U32 = np.dtype(np.uint32)
_U64 = np.dtype(np.uint64)
_MASK32 = 0xFFFFFFFF


class KeyReuseError(JAXTypeError):
    """A PRNG key was consumed twice in one traced function (``config.key_reuse='error'``);
    a ``TypeError``, as JAX's ``jax.errors.KeyReuseError``."""


class KeyReuseWarning(UserWarning):
    """A PRNG key was consumed twice in one traced function (``config.key_reuse='warn'``)."""


# ----------------------------------------------------------------------------- key reuse

_CONSUMED_ATTR = "_tracejit_random_consumed_keys"


def _consume(key, fname: str) -> None:
    """Record that ``fname`` consumed ``key`` in the current trace; report a reuse.

    Only traced functions are checked (eager reuse of a concrete key is
    allowed, as in JAX). A key is identified by its object: the same tracer
    or the same constant array. The record lives on the trace object, so it
    goes away with the trace."""
    mode = config.key_reuse
    if mode == "off":
        return
    if mode not in ("warn", "error"):
        raise ValueError(f"tracejit.config.key_reuse must be 'off', 'warn' or 'error', got {mode!r}")
    trace = current_trace()
    if trace is EVAL_TRACE or not isinstance(key, (Tracer, np.ndarray)):
        return
    used = getattr(trace, _CONSUMED_ATTR, None)
    if used is None:
        used = {}
        setattr(trace, _CONSUMED_ATTR, used)
    prev = used.get(id(key))
    if prev is None or prev[0] is not key:
        used[id(key)] = (key, fname)  # holding the key keeps its id unique for the trace
        return
    msg = (f"PRNG key reused: tracejit.random.{fname} got a key that was already consumed by "
           f"tracejit.random.{prev[1]} in the function being traced, so both draw from the same stream. "
           "Split the key instead, e.g. `key, subkey = tracejit.random.split(key)`, and give each use "
           "its own key (set tracejit.config.key_reuse to 'off' to silence this check).")
    if mode == "error":
        raise KeyReuseError(msg)
    warnings.warn(msg, KeyReuseWarning, stacklevel=4)


# ----------------------------------------------------------------------------- key checks

def check_key(name: str, key, *, allow_batched: bool = False, consume: bool = True):
    """Validate key data and mark it consumed; returns the key as an operand."""
    if isinstance(key, (list, tuple)):
        key = np.asarray(key, dtype=_U32)
    k = to_operand(key)
    a = aval(k)
    if a.dtype != _U32 or not a.shape or a.shape[-1] != 2:
        raise TypeError(f"tracejit.random.{name} expects a PRNG key: uint32 key data of shape (2,) "
                        f"(or (..., 2) for a batch), got {a.str_short()}. Create keys with "
                        "tracejit.random.key(seed) or PRNGKey(seed).")
    if not allow_batched and a.shape != (2,):
        raise ValueError(f"tracejit.random.{name} accepts a single key, but was given a key array of shape "
                         f"{a.shape[:-1]} (key data {a.shape}); index it, or use a Python loop / vmap.")
    if consume:
        _consume(key if isinstance(key, (Tracer, np.ndarray)) else k, name)
    return k


def key_words(key):
    """The two uint32 words of a single key, as rank-0 operands."""
    return key[0], key[1]


def _is_concrete(x) -> bool:
    return not isinstance(x, Tracer)


# ----------------------------------------------------------------------------- counters and bits

def iota_2x32(shape: tuple):
    """(hi, lo) uint32 words of the row-major flat index of each element of ``shape``.

    The high word is a rank-0 zero unless the array has 2**32 or more
    elements; the low word is built from ``iota`` equations only, so it
    fuses with the hash."""
    shape = tuple(shape)
    if shape == ():
        return _U32.type(0), _U32.type(0)
    size = math.prod(shape)
    wide = size > 2 ** 32
    dt = _U64 if wide else _U32
    idx = None
    stride = 1
    for d in reversed(range(len(shape))):
        term = iota_p.bind(dtype=dt, shape=shape, dimension=d)
        if stride != 1:
            term = binary_prims["mul"].bind(term, dt.type(stride))
        idx = term if idx is None else binary_prims["add"].bind(idx, term)
        stride *= shape[d]
    if not wide:
        return _U32.type(0), idx
    hi = convert(binary_prims["shift_right"].bind(idx, _U64.type(32)), _U32)
    return hi, convert(idx, _U32)


def combine_bits(b0, b1, bit_width: int):
    """Reduce the two hash words to ``bit_width`` bits per element (JAX's partitionable rule)."""
    if bit_width == 64:
        hi = binary_prims["shift_left"].bind(convert(b0, _U64), _U64.type(32))
        return binary_prims["or"].bind(hi, convert(b1, _U64))
    bits = binary_prims["xor"].bind(b0, b1)
    if bit_width == 32:
        return bits
    return convert(bits, np.dtype(f"uint{bit_width}"))


def random_bits(key, bit_width: int, shape: tuple):
    """Raw random bits (uint8/16/32/64) of ``shape`` from one key (not consuming it)."""
    if bit_width not in (8, 16, 32, 64):
        raise TypeError(f"random bits need an 8-, 16-, 32- or 64-bit width, got {bit_width}")
    if math.prod(shape) >= 2 ** 64:
        raise NotImplementedError("random bits array of size 2**64 or more")
    k0, k1 = key_words(key)
    hi, lo = iota_2x32(shape)
    b0, b1 = threefry2x32_p.bind(k0, k1, hi, lo)
    return combine_bits(b0, b1, bit_width)


def split_key(key, shape: tuple):
    """``split`` without the checks: keys of shape ``(*shape, 2)``."""
    from tracejit.numpy.shape import stack
    k0, k1 = key_words(key)
    hi, lo = iota_2x32(shape)
    b0, b1 = threefry2x32_p.bind(k0, k1, hi, lo)
    return stack([b0, b1], axis=len(shape))


# ----------------------------------------------------------------------------- public key API

def _seed_words(seed):
    """(hi, lo) uint32 words of an integer seed, as JAX's threefry_seed."""
    if isinstance(seed, int) and not isinstance(seed, bool):
        if not -2 ** 63 <= seed < 2 ** 64:
            raise OverflowError(f"PRNG seed {seed} does not fit in 64 bits")
        s = seed % 2 ** 64
        return np.array([(s >> 32) & _MASK32, s & _MASK32], dtype=_U32)
    s = to_operand(seed)
    a = aval(s)
    if a.shape != ():
        raise TypeError(f"PRNG key seed must be a scalar; got an array of shape {a.shape}")
    if not dtypes.is_integer(a.dtype):
        raise TypeError(f"PRNG key seed must be an integer; got dtype {a.dtype.name}")
    from tracejit.numpy.shape import stack
    lo = convert(s, _U32)  # truncation; sign-extends narrow signed seeds, like JAX
    if a.dtype.itemsize == 8:
        hi = convert(binary_prims["shift_right"].bind(convert(s, _U64), _U64.type(32)), _U32)
    else:
        hi = _U32.type(0)
    if _is_concrete(lo) and _is_concrete(hi):
        return np.array([hi, lo], dtype=_U32)
    return stack([hi, lo])


def PRNGKey(seed):
    """Create a PRNG key from an integer seed: ``uint32[2]`` key data.

    Parameters
    ----------
    seed : int or integer scalar (may be traced)
        A 64- or 32-bit integer; 64-bit seeds are split into two words.

    Returns
    -------
    numpy.ndarray or traced array
        ``uint32[2]``; equal to ``jax.random.PRNGKey(seed)``.

    Examples
    --------
    >>> from tracejit import random
    >>> random.PRNGKey(42)
    Array([ 0, 42], dtype=uint32)
    """
    return _seed_words(seed)


def key(seed, *, impl=None):
    """Create a PRNG key from an integer seed (``jax.random.key``).

    tracejit represents typed keys by their ``uint32[2]`` threefry key data,
    so ``key(s)`` equals ``PRNGKey(s)``; :func:`key_data` and
    :func:`wrap_key_data` convert (trivially) between the two views.

    Examples
    --------
    >>> from tracejit import random
    >>> k = random.key(0)
    >>> random.key_data(random.wrap_key_data(random.key_data(k))).tolist()
    [0, 0]
    """
    _check_impl(impl, "key")
    return _seed_words(seed)


def _check_impl(impl, name):
    if impl not in (None, "threefry2x32", "threefry"):
        raise NotImplementedError(f"tracejit.random.{name}: only the 'threefry2x32' PRNG is implemented, "
                                  f"got impl={impl!r}")


def key_data(keys):
    """The ``uint32[..., 2]`` key data of a key or a batch of keys.

    Examples
    --------
    >>> from tracejit import random
    >>> random.key_data(random.key(7)).tolist()
    [0, 7]
    """
    return check_key("key_data", keys, allow_batched=True)


def wrap_key_data(key_bits_array, *, impl=None):
    """Wrap ``uint32[..., 2]`` key data as keys (the inverse of :func:`key_data`).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import random
    >>> random.wrap_key_data(np.array([0, 7], np.uint32)).tolist()
    [0, 7]
    """
    _check_impl(impl, "wrap_key_data")
    return check_key("wrap_key_data", key_bits_array, allow_batched=True, consume=False)


def _num_to_shape(num) -> tuple:
    if isinstance(num, (tuple, list)):
        return tuple(operator.index(n) for n in num)
    return (operator.index(num),)


def split(key, num=2):
    """Split a key into ``num`` new keys (a leading axis of keys).

    Parameters
    ----------
    key : uint32[2]
        A PRNG key (consumed).
    num : int or tuple of int
        How many keys (or the shape of the key array). Default 2.

    Returns
    -------
    uint32[num, 2] (or ``uint32[*num, 2]``)

    Examples
    --------
    >>> from tracejit import random
    >>> k1, k2 = random.split(random.PRNGKey(0))
    >>> random.split(random.PRNGKey(0), 3).shape
    (3, 2)
    """
    k = check_key("split", key)
    shape = _num_to_shape(num)
    if any(n < 0 for n in shape):
        raise ValueError(f"tracejit.random.split: num must be non-negative, got {num}")
    return split_key(k, shape)


def fold_in(key, data):
    """Fold an integer into a key, giving a new key (``jax.random.fold_in``).

    ``data`` is taken modulo 2**32 (its low 32 bits), as a ``uint32``.

    Examples
    --------
    >>> from tracejit import random
    >>> random.fold_in(random.PRNGKey(0), 1).shape
    (2,)
    """
    from tracejit.numpy.shape import stack
    k = check_key("fold_in", key)
    if (data.ndim if isinstance(data, Tracer) else np.ndim(data)) != 0:
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape {np.shape(data)}; "
                        "use a Python loop or vmap for batches")
    if isinstance(data, int) and not isinstance(data, bool):
        d = _U32.type(data % 2 ** 32)
    else:
        d = to_operand(data)
        if not (dtypes.is_integer(aval(d).dtype) or aval(d).dtype == np.bool_):
            raise TypeError(f"fold_in data must be an integer, got dtype {aval(d).dtype.name}")
        d = convert(d, _U32)
    k0, k1 = key_words(k)
    b0, b1 = threefry2x32_p.bind(k0, k1, _U32.type(0), d)
    return stack([b0, b1])


def bits(key, shape=(), dtype=None):
    """Uniform random bits as unsigned integers (default ``uint64``, NumPy's default width).

    Examples
    --------
    >>> from tracejit import random
    >>> random.bits(random.PRNGKey(0), (3,), np.uint32).dtype
    dtype('uint32')
    """
    k = check_key("bits", key)
    dt = dtypes.narrow(_U64 if dtype is None else dtypes.canonical(dtype))
    if dtypes.kind(dt) != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt}")
    return random_bits(k, dt.itemsize * 8, canonical_shape(shape))


def canonical_shape(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (operator.index(shape),)
    try:
        out = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"shape must be a tuple of non-negative integers, got {shape!r}") from None
    if any(d < 0 for d in out):
        raise ValueError(f"shape must be a tuple of non-negative integers, got {shape!r}")
    return out
