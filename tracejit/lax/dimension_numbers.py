"""Types and enums of ``jax.lax``: Precision, PrecisionLike, DotDimensionNumbers,
GatherDimensionNumbers, ScatterDimensionNumbers, GatherScatterMode, RoundingMethod,
FftType, RandomAlgorithm.

They carry the same members, values and string parsing as JAX's, so code that builds
them runs unchanged. tracejit computes on the CPU in the operands' own precision, so
``Precision`` is accepted and has no effect.
"""
from __future__ import annotations

import enum
from typing import NamedTuple, Sequence, Tuple, Union

__all__ = ["Precision", "PrecisionLike", "DotDimensionNumbers", "GatherDimensionNumbers",
           "ScatterDimensionNumbers", "GatherScatterMode", "RoundingMethod", "FftType", "RandomAlgorithm"]

_PRECISION_STRINGS = {"highest": 2, "float32": 2, "high": 1, "bfloat16_3x": 1, "tensorfloat32": 1,
                      "default": 0, "bfloat16": 0, "fastest": 0, None: 0}


class Precision(enum.Enum):
    """Precision of matrix products on accelerators (``jax.lax.Precision``).

    ``DEFAULT`` (aliases ``'default'``, ``'fastest'``, ``'bfloat16'``), ``HIGH`` (``'high'``,
    ``'bfloat16_3x'``, ``'tensorfloat32'``), ``HIGHEST`` (``'highest'``, ``'float32'``).
    ``Precision('high')`` parses an alias. No effect on tracejit's CPU results.

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.Precision("highest"), str(lax.Precision.HIGH)
    (Precision.HIGHEST, 'HIGH')
    """

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        if isinstance(value, str) or value is None:
            v = _PRECISION_STRINGS.get(value)
            return None if v is None else cls(v)
        return None

    def __repr__(self):
        return f"{type(self).__name__}.{self.name}"

    def __str__(self):
        return self.name


PrecisionLike = Union[None, str, Precision, Tuple[str, str], Tuple[Precision, Precision]]
"""What a ``precision=`` argument accepts (``jax.lax.PrecisionLike``)."""

DotDimensionNumbers = Tuple[Tuple[Sequence[int], Sequence[int]], Tuple[Sequence[int], Sequence[int]]]
"""``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`` for ``dot_general``."""


class GatherDimensionNumbers(NamedTuple):
    """How ``lax.gather`` reads windows (``jax.lax.GatherDimensionNumbers``).

    offset_dims : output axes that index into a gathered window.
    collapsed_slice_dims : operand axes with window size 1 that the output drops.
    start_index_map : the operand axis each entry of an index vector starts.
    operand_batching_dims, start_indices_batching_dims : operand axes paired with axes
        of ``start_indices`` (the window is taken at the same batch position).

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), \
operand_batching_dims=(), start_indices_batching_dims=())
    """

    offset_dims: Tuple[int, ...]
    collapsed_slice_dims: Tuple[int, ...]
    start_index_map: Tuple[int, ...]
    operand_batching_dims: Tuple[int, ...] = ()
    start_indices_batching_dims: Tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """How ``lax.scatter*`` writes windows (``jax.lax.ScatterDimensionNumbers``).

    update_window_dims : axes of ``updates`` that index into a window.
    inserted_window_dims : operand axes with window size 1 that ``updates`` omits.
    scatter_dims_to_operand_dims : the operand axis each entry of an index vector starts.
    operand_batching_dims, scatter_indices_batching_dims : paired batch axes.

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.ScatterDimensionNumbers((1,), (0,), (0,)).update_window_dims
    (1,)
    """

    update_window_dims: Sequence[int]
    inserted_window_dims: Sequence[int]
    scatter_dims_to_operand_dims: Sequence[int]
    operand_batching_dims: Sequence[int] = ()
    scatter_indices_batching_dims: Sequence[int] = ()


class GatherScatterMode(enum.Enum):
    """Out-of-bounds handling of gather/scatter (``jax.lax.GatherScatterMode``).

    ``CLIP`` clamps each window into bounds; ``FILL_OR_DROP`` fills out-of-bounds gathered
    windows with a fill value and drops out-of-bounds scattered windows;
    ``PROMISE_IN_BOUNDS`` trusts the caller (gathers clamp, scatters drop); ``ONE_HOT`` is
    parsed but not supported by tracejit's gather/scatter. ``from_any`` parses ``'clip'``,
    ``'fill'``/``'drop'``/None, ``'promise_in_bounds'`` and ``'one_hot'``.

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.GatherScatterMode.from_any("clip"), lax.GatherScatterMode.from_any(None)
    (<GatherScatterMode.CLIP: 1>, <GatherScatterMode.FILL_OR_DROP: 2>)
    """

    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()
    ONE_HOT = enum.auto()

    @staticmethod
    def from_any(s):
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        if s == "one_hot":
            return GatherScatterMode.ONE_HOT
        raise ValueError(f'Unknown gather mode "{s}"')


class RoundingMethod(enum.IntEnum):
    """How ``lax.round`` rounds halfway values (``jax.lax.RoundingMethod``).

    Examples
    --------
    >>> from tracejit import lax
    >>> int(lax.RoundingMethod.TO_NEAREST_EVEN)
    1
    """

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


class FftType(enum.IntEnum):
    """Kind of FFT (``jax.lax.FftType``).

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.FftType.IRFFT.value
    3
    """

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


class RandomAlgorithm(enum.IntEnum):
    """PRNG algorithm of ``rng_bit_generator`` (``jax.lax.RandomAlgorithm``).

    Examples
    --------
    >>> from tracejit import lax
    >>> str(lax.RandomAlgorithm.RNG_THREE_FRY)
    'RNG_THREE_FRY'
    """

    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self):
        return self.name
