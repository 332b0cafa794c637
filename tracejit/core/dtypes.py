"""Dtypes and NumPy 2 (NEP 50) type promotion, with JAX-style weak types.

A *weak* type marks a value that came from a Python scalar (``2``, ``1.5``,
``1j``). Weak values adapt to the other operand's dtype, exactly as NumPy 2
treats Python scalars: ``f32_array * 2.0`` stays float32, ``i32_array + 1``
stays int32, but ``i32_array * 1.5`` becomes float64 (the default float).
"""
from __future__ import annotations

import numpy as np

from tracejit.config import config

try:  # bfloat16 is ml_dtypes' NumPy dtype (a dependency; JAX uses the same one)
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - only without the dependency installed
    _ml_dtypes = None

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
# bfloat16 is a storage type: tracejit computes on it in float32 and rounds each result back
# (core/storage_dtypes.py), as XLA on CPU and ml_dtypes' NumPy loops do. Its NumPy kind is "V".
bfloat16 = np.dtype(_ml_dtypes.bfloat16) if _ml_dtypes is not None else None

# 16-bit floats: NumPy's loops and XLA compute them in float32 and round each result.
HALF_FLOATS = frozenset([float16] + ([bfloat16] if bfloat16 is not None else []))

default_int = int64
default_float = float64
default_complex = complex128

SUPPORTED = frozenset([bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                       float16, float32, float64, complex64, complex128]
                      + ([bfloat16] if bfloat16 is not None else []))

_SHORT_NAMES = {bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64",
                uint8: "u8", uint16: "u16", uint32: "u32", uint64: "u64",
                float16: "f16", float32: "f32", float64: "f64",
                complex64: "c64", complex128: "c128", bfloat16: "bf16"}


# JAX's 32-bit mode (``enable_x64`` off): each 64-bit type is its 32-bit one.
_NARROW = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


def narrow(dtype: np.dtype) -> np.dtype:
    """``dtype`` as JAX's default 32-bit mode has it when ``enable_x64`` is off in this thread
    (int64 -> int32, uint64 -> uint32, float64 -> float32, complex128 -> complex64); else itself.

    Examples
    --------
    >>> import tracejit
    >>> narrow(float64)
    dtype('float64')
    >>> with tracejit.enable_x64(False):
    ...     narrow(float64), narrow(int8)
    (dtype('float32'), dtype('int8'))
    """
    return _NARROW[dtype] if x64_off() and dtype in _NARROW else dtype


def x64_off() -> bool:
    """Whether ``enable_x64`` is off in this thread (values are narrowed to 32 bits)."""
    return config._x64_maybe_off and not config.enable_x64


def short_name(dtype: np.dtype) -> str:
    """``f32``-style name used when printing programs."""
    return _SHORT_NAMES.get(dtype, dtype.name)


def canonical(dtype) -> np.dtype:
    """Turn anything NumPy accepts as a dtype into a supported ``np.dtype``."""
    if dtype is None:
        raise TypeError("dtype must not be None here")
    if dtype is float:
        return float64
    if dtype is int:
        return int64
    if dtype is complex:
        return complex128
    if dtype is bool:
        return bool_
    d = np.dtype(dtype)
    if d not in SUPPORTED:
        raise TypeError(f"tracejit does not support dtype {d}; supported dtypes are "
                        f"{sorted(x.name for x in SUPPORTED)}")
    return d


def kind(d: np.dtype) -> str:
    """NumPy's kind letter of ``d``, with ``"f"`` for bfloat16 (whose NumPy kind is ``"V"``)."""
    return "f" if d.kind == "V" and d == bfloat16 else d.kind


_FLOAT_PARENTS = (np.floating, np.inexact, np.number, np.generic)


def issubdtype(a, b) -> bool:
    """NumPy's ``issubdtype``, with bfloat16 under ``np.floating`` (ml_dtypes' bfloat16 is
    outside NumPy's hierarchy; JAX places it there).

    Examples
    --------
    >>> issubdtype(bfloat16, np.floating), issubdtype(np.float32, np.integer)
    (True, False)
    """
    if _is_bfloat16(a):
        return _is_bfloat16(b) or (isinstance(b, type) and b in _FLOAT_PARENTS)
    return bool(np.issubdtype(a, b))


def _is_bfloat16(x) -> bool:
    if bfloat16 is None or isinstance(x, type) and x in _FLOAT_PARENTS:
        return False
    try:
        return np.dtype(x) == bfloat16
    except TypeError:
        return False


def is_float(d: np.dtype) -> bool:
    return kind(d) == "f"


def is_complex(d: np.dtype) -> bool:
    return d.kind == "c"


def is_inexact(d: np.dtype) -> bool:
    return kind(d) in "fc"


def is_integer(d: np.dtype) -> bool:
    return d.kind in "iu"


def is_signed(d: np.dtype) -> bool:
    return d.kind == "i"


def is_bool(d: np.dtype) -> bool:
    return d.kind == "b"


# A Python scalar of the same kind stands in for a weak value when asking
# NumPy for the result type: NumPy 2 already treats Python scalars weakly.
_WEAK_STANDINS = {"b": True, "i": 0, "u": 0, "f": 0.0, "c": 0j}


def python_scalar_dtype(x) -> np.dtype:
    """Dtype a Python scalar takes on its own (NumPy defaults)."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return int64
    if isinstance(x, float):
        return float64
    if isinstance(x, complex):
        return complex128
    raise TypeError(f"not a Python scalar: {x!r}")


def is_python_scalar(x) -> bool:
    return type(x) in (bool, int, float, complex)


def result_type(*operands) -> tuple[np.dtype, bool]:
    """NEP 50 result dtype of ``operands`` and whether the result is weak.

    Each operand is a ``(dtype, weak)`` pair. The result is weak only when
    every operand is weak (two Python scalars combine into a Python scalar).
    """
    if not operands:
        raise ValueError("result_type needs at least one operand")
    strong = [d for d, weak in operands if not weak]
    if not strong:
        standins = [_WEAK_STANDINS[kind(d)] for d, _ in operands]
        # Python-scalar kinds combine as bool < int < float < complex, at the defaults.
        d = np.result_type(*(python_scalar_dtype(s) for s in standins))
        return canonical(d), True
    standins = [d if not weak else _WEAK_STANDINS[kind(d)] for d, weak in operands]
    return canonical(np.result_type(*standins)), False


def to_inexact(d: np.dtype) -> np.dtype:
    """The floating dtype a function like ``sin`` computes in for input ``d``."""
    if is_inexact(d):
        return d
    # NumPy's ufunc loops pick the smallest float that holds the integer type.
    if d in (bool_, int8, uint8):
        return float16
    if d in (int16, uint16):
        return float32
    return float64


def finfo(d: np.dtype):
    return np.finfo(d)


def iinfo(d: np.dtype):
    return np.iinfo(d)
