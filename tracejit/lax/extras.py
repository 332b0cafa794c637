"""More of ``jax.lax``: approx_max_k / approx_min_k, fft, platform_dependent, the patches of a
convolution, ragged (grouped) matrix products and reduce_precision.

* ``approx_max_k`` / ``approx_min_k`` compute what JAX computes on the CPU: the exact top-k (a stable
  sort, ties in index order, ``0.0 == -0.0``), or with ``aggregate_to_topk=False`` the sorted
  leading ``n'`` entries, ``n'`` from XLA's ``ApproxTopKReductionOutputSize`` (reproduced here).
* ``fft`` is ``jax.lax.fft`` (``FftType`` or its name) on ``tracejit.numpy.fft``'s transforms, which
  differentiate as JAX's (the ``fft`` primitive's rules are in ``tracejit/numpy/ad_rules.py``).
* ``platform_dependent`` calls the ``cpu`` branch (else ``default``): tracejit runs on the CPU.
* ``conv_general_dilated_patches`` is the im2col of ``conv_general_dilated``
  (``tracejit/ops/convolution.py``: one strided slice per window tap) without the contraction.
* ``ragged_dot`` / ``ragged_dot_general`` mask each group's rows (``start <= i < end`` from the
  cumulative ``group_sizes``) into a leading group axis and contract it with ``dot_general``, as
  JAX's reference implementation does; all three of JAX's modes (ragged non-contracting,
  contracting and batch dimension) are supported.
* ``reduce_precision`` is a primitive (its derivative is itself, linear, as JAX's): XLA's bit
  algorithm on the integer view eagerly, and under ``jit`` exact float arithmetic (``frexp``,
  ``ldexp``, round-half-even) that gives the same bits.

Examples
--------
>>> import numpy as np
>>> from tracejit import lax
>>> lax.reduce_precision(np.float32(1.0 / 3.0), exponent_bits=5, mantissa_bits=10)
Array(0.33325195, dtype=float32)
"""
from __future__ import annotations

import dataclasses
import math
import operator
from typing import Sequence, Tuple, Union

import numpy as np

import tracejit.numpy as jnp
from tracejit.core import dtypes
from tracejit.ops.operands import widen_to_preferred
from tracejit.core.avals import ShapedArray
from tracejit.core.primitive import Primitive, batching_rules, decomposition_rules, def_rules
from tracejit.lax.dimension_numbers import FftType
from tracejit.lax.ops import (bitwise_and, broadcast_in_dim, broadcasted_iota, concatenate, convert_element_type,
                              dot_general, ge, lt, neg, reshape, select, slice_in_dim, transpose)
from tracejit.numpy._util import aval, canonicalize_axis, is_tracer, to_operand
from tracejit.ops.convolution import (ConvDimensionNumbers, _dilated, _out_sizes, _positive_ints, _spatial_prepare,
                                      _window_taps, conv_dimension_numbers, padtype_to_pads)
from tracejit.ops.sorting import sort_p
from tracejit.transforms import ad

__all__ = ["ConvGeneralDilatedDimensionNumbers", "RaggedDotDimensionNumbers", "approx_max_k", "approx_min_k",
           "conv_general_dilated_patches", "fft", "platform_dependent", "ragged_dot", "ragged_dot_general",
           "reduce_precision"]


def _array(x):
    x = to_operand(x)
    return np.asarray(x) if dtypes.is_python_scalar(x) else x


def _static_int(v, what):
    if is_tracer(v):
        raise TypeError(f"{what} must be static (a Python int) under jit")
    return operator.index(v)


# --------------------------------------------------------------------------- approx_max_k / approx_min_k

_TPU_LANE_TILING = 128      # XLA's tiling for operands of rank >= 2
_TPU_CHUNK_TILING = 1024    # ... and of rank 1


def _log2_floor(v):
    return 0 if v == 0 else v.bit_length() - 1


def _log2_ceil(v):
    return 0 if v == 0 else (v - 1).bit_length()


def _approx_output_size(input_size, rank, k, recall_target, aggregate_to_topk, input_size_override):
    """XLA's ``ApproxTopKReductionOutputSize(...)[0]``: how many sorted entries the CPU fallback keeps."""
    if aggregate_to_topk:
        return k
    tiling = _TPU_CHUNK_TILING if rank == 1 else _TPU_LANE_TILING
    if input_size <= tiling:
        return input_size
    if input_size_override >= 0 and input_size > input_size_override:
        raise ValueError(f"reduction_input_size_override: {input_size_override} should be greater equals to "
                         f"operands[reduction_dim]: {input_size}")
    logical = input_size_override if input_size_override >= 0 else input_size
    if k == 1:
        return tiling
    recall = float(np.float32(recall_target))          # XLA takes the recall target as a C float
    if recall == 1.0:
        return input_size
    if not 0.0 < recall <= 1.0:
        raise ValueError("recall_target should range in (0,1]")
    m = min(max(int((1.0 - k) / math.log(recall)), tiling), logical)
    log2_reduction = _log2_floor(logical // m)
    if log2_reduction == 0:
        return input_size
    log2_reduction = min(log2_reduction, _log2_ceil(input_size // tiling))
    tiles = -(-input_size // tiling)
    return -(-tiles // (1 << log2_reduction)) * tiling


def _approx_top_k(operand, k, reduction_dimension, recall_target, is_max_k, reduction_input_size_override,
                  aggregate_to_topk):
    x = _array(operand)
    a = aval(x)
    k = _static_int(k, "k")
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    if not a.shape:
        raise TypeError(f"approx_top_k operand must have >= 1 dimension, got {a.shape}")
    axis = canonicalize_axis(_static_int(reduction_dimension, "reduction_dimension"), len(a.shape))
    n = a.shape[axis]
    if n < k:
        raise ValueError(f"k must be smaller than the size of reduction_dim {n}, got {k}")
    if dtypes.kind(np.dtype(a.dtype)) != "f":
        raise ValueError("operand must be a floating type")
    size = _approx_output_size(n, len(a.shape), k, recall_target, bool(aggregate_to_topk),
                               operator.index(reduction_input_size_override))
    # A stable ascending sort of the keys: ties keep the lower index first and 0.0 == -0.0, as the CPU
    # fallback's sort with a strict ``>`` / ``<`` comparator; NaNs go last.
    keys = neg(x) if is_max_k else x
    idx = broadcasted_iota(np.int32, a.shape, axis)
    _, vals, idx = sort_p.bind(keys, x, idx, dimension=axis, is_stable=True, num_keys=1)
    return slice_in_dim(vals, 0, size, 1, axis), slice_in_dim(idx, 0, size, 1, axis)


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True):
    """The ``k`` largest entries along ``reduction_dimension`` and their int32 indices
    (``jax.lax.approx_max_k``).

    On the CPU JAX's "approximate" search is exact, and so is this: values in descending order,
    equal values (``0.0`` and ``-0.0`` count as equal) with the lower index first (JAX's order
    among equal values is unspecified on longer axes). With
    ``aggregate_to_topk=False`` the result keeps the sorted leading ``n'`` entries, ``n'`` being
    XLA's approximate output size for ``recall_target`` (the whole axis up to 128 entries, 1024 for
    rank 1). NaNs rank last (JAX's CPU result is unspecified for them).

    Parameters
    ----------
    operand : array of a floating dtype
    k : int
    reduction_dimension : int
    recall_target, reduction_input_size_override : float, int
        Only shape the ``aggregate_to_topk=False`` output, as in XLA.
    aggregate_to_topk : bool

    Returns
    -------
    (values, indices) : Arrays; ``indices`` is int32.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.approx_max_k(np.array([1.0, 3.0, 2.0, 3.0]), 2)
    (Array([3., 3.]), Array([1, 3], dtype=int32))
    """
    return _approx_top_k(operand, k, reduction_dimension, recall_target, True, reduction_input_size_override,
                         aggregate_to_topk)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True):
    """The ``k`` smallest entries along ``reduction_dimension`` and their int32 indices
    (``jax.lax.approx_min_k``): exact on the CPU, ascending, ties in index order (see
    :func:`approx_max_k`).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.approx_min_k(np.array([1.0, 3.0, 0.5, 1.0]), 3)
    (Array([0.5, 1. , 1. ]), Array([2, 0, 3], dtype=int32))
    """
    return _approx_top_k(operand, k, reduction_dimension, recall_target, False, reduction_input_size_override,
                         aggregate_to_topk)


# --------------------------------------------------------------------------- fft

_FFT_NAMES = {"fft": FftType.FFT, "FFT": FftType.FFT, "ifft": FftType.IFFT, "IFFT": FftType.IFFT,
              "rfft": FftType.RFFT, "RFFT": FftType.RFFT, "irfft": FftType.IRFFT, "IRFFT": FftType.IRFFT}


def _inexact_dtype(dt):
    """JAX's ``to_inexact_dtype``: integers and bools become the default float."""
    return dt if dtypes.kind(dt) in "fc" else dtypes.narrow(np.dtype(np.float64))


def _complex_dtype(dt):
    """JAX's ``to_complex_dtype``: float64 / complex128 give complex128, other floats complex64."""
    dt = _inexact_dtype(dt)
    return dtypes.narrow(np.dtype(np.complex128)) if dt in (np.float64, np.complex128) else np.dtype(np.complex64)


def fft(x, fft_type, fft_lengths):
    """Fourier transform over the last ``len(fft_lengths)`` axes (``jax.lax.fft``).

    Parameters
    ----------
    x : array
    fft_type : FftType or str
        ``FFT`` / ``IFFT`` (complex to complex; a real input is converted), ``RFFT`` (real
        float32/float64 to complex: the last axis becomes ``n // 2 + 1``), ``IRFFT`` (complex,
        last axis ``n // 2 + 1``, to real of the lengths). Names may be lower or upper case.
    fft_lengths : sequence of int
        The sizes of the transformed axes (equal to the input's, except IRFFT's last one).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.fft(np.array([1.0, 2.0, 3.0, 4.0]), "RFFT", (4,))
    Array([10.+0.j, -2.+2.j, -2.+0.j])
    """
    if isinstance(fft_type, str):
        if fft_type not in _FFT_NAMES:
            raise ValueError(f"Unknown FFT type '{fft_type}'")
        typ = _FFT_NAMES[fft_type]
    elif isinstance(fft_type, FftType):
        typ = fft_type
    else:
        raise TypeError(f"Unknown FFT type value '{fft_type}'")
    x = _array(x)
    dt = np.dtype(aval(x).dtype)
    if typ == FftType.RFFT:
        if dtypes.kind(dt) == "c":
            raise ValueError("only real valued inputs supported for rfft")
        x = convert_element_type(x, _inexact_dtype(dt))
    else:
        x = convert_element_type(x, _complex_dtype(dt))
    lengths = tuple(_static_int(n, "fft_lengths") for n in fft_lengths)
    if not lengths:
        return x
    shape, dt = aval(x).shape, np.dtype(aval(x).dtype)
    k = len(lengths)
    if k > len(shape):
        raise ValueError(f"FFT input shape {shape} must have at least as many input dimensions as fft_lengths "
                         f"{lengths}.")
    axes = tuple(range(len(shape) - k, len(shape)))
    if typ == FftType.RFFT:
        if dt not in (np.float32, np.float64):
            raise ValueError(f"RFFT input must be float32 or float64, got {dt.name}")
        if shape[-k:] != lengths:
            raise ValueError(f"RFFT input shape {shape} minor dimensions must be equal to fft_lengths {lengths}")
        return jnp.fft.rfftn(x, lengths, axes)
    if typ == FftType.IRFFT:
        if shape[-k:-1] != lengths[:-1]:
            raise ValueError(f"IRFFT input shape {shape} minor dimensions must be equal to all except the last "
                             f"fft_length, got fft_lengths={lengths}")
        if shape[-1] != lengths[-1] // 2 + 1:
            raise ValueError(f"IRFFT requires innermost dimension to be compatible with fft_length[-1]/2+1. Got: "
                             f"{shape[-1]} but fft_length is {lengths}.")
        return jnp.fft.irfftn(x, lengths, axes)
    if shape[-k:] != lengths:
        raise ValueError(f"FFT input shape {shape} minor dimensions must be equal to fft_lengths {lengths}")
    return (jnp.fft.fftn if typ == FftType.FFT else jnp.fft.ifftn)(x, lengths, axes)


# --------------------------------------------------------------------------- platform_dependent

def platform_dependent(*args, default=None, **per_platform):
    """``per_platform['cpu'](*args)``, else ``default(*args)`` (``jax.lax.platform_dependent``).

    tracejit computes on the CPU, so the choice is made at once (only the chosen branch is
    called, also under ``jit``); without a ``cpu`` or ``default`` branch it raises
    ``NotImplementedError``, as JAX does when lowering for the CPU.

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.platform_dependent(1.0, cpu=lambda x: x + 1, default=lambda x: x - 1)
    2.0
    """
    for name, branch in per_platform.items():
        if not callable(branch):
            raise TypeError(f"lax.platform_dependent: the '{name}' branch must be a callable.")
        if name == "gpu":
            raise ValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
    if default is not None and not callable(default):
        raise TypeError("lax.platform_dependent: the 'default' branch must be a callable.")
    branch = per_platform.get("cpu", default)
    if branch is None:
        raise NotImplementedError(f"lax.platform_dependent: no branch for the platform 'cpu' (branches: "
                                  f"{sorted(per_platform)}) and no default")
    return branch(*args)


# --------------------------------------------------------------------------- conv_general_dilated_patches

ConvGeneralDilatedDimensionNumbers = Union[Tuple[str, str, str], ConvDimensionNumbers, None]
"""What ``conv_general_dilated``'s ``dimension_numbers`` accepts (``jax.lax.ConvGeneralDilatedDimensionNumbers``):
``None``, three layout strings such as ``('NHWC', 'HWIO', 'NHWC')``, or a :class:`ConvDimensionNumbers`."""


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                                 dimension_numbers=None, precision=None, preferred_element_type=None):
    """The patches ``conv_general_dilated`` multiplies with its kernel (``jax.lax.conv_general_dilated_patches``).

    The output has ``conv_general_dilated``'s layout with the feature dimension holding each patch,
    flattened as ``c`` (input feature) major, then the filter's spatial positions in the kernel
    layout's order: size ``C * prod(filter_shape)``. Built from the convolution's im2col (one
    strided slice per tap), so values are copied exactly (JAX convolves with an identity kernel:
    an infinity or NaN in a window turns its other taps into NaN there, and ``-0.0`` into ``0.0``).

    Parameters
    ----------
    lhs : array, rank ``n + 2``
    filter_shape : sequence of n ints
        Window size per spatial dimension, in the order of the kernel spec ``dimension_numbers[1]``.
    window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers
        As in ``conv_general_dilated``.
    precision : ignored
    preferred_element_type : dtype, optional
        Result dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.conv_general_dilated_patches(np.arange(4.0).reshape(1, 1, 4), (2,), (1,), "VALID")
    Array([[[0., 1., 2.],
            [1., 2., 3.]]])
    """
    x = _array(lhs)
    la = aval(x)
    filter_shape = tuple(_static_int(f, "filter_shape") for f in filter_shape)
    if la.ndim < 2 or len(filter_shape) != la.ndim - 2:
        raise TypeError(f"conv_general_dilated_patches: filter_shape {filter_shape} must have one entry per "
                        f"spatial dimension of lhs of shape {la.shape}")
    dn = conv_dimension_numbers(la.shape, (1, 1) + filter_shape, dimension_numbers)
    nd, nsp = la.ndim, la.ndim - 2
    # JAX's kernel: O at rhs_spec[0], I at rhs_spec[1], the filter's sizes on the other axes in order.
    rest = [ax for ax in range(nd) if ax not in dn.rhs_spec[:2]]
    size_of_axis = dict(zip(rest, filter_shape))
    window = [size_of_axis[ax] for ax in dn.rhs_spec[2:]]     # per spatial dim of the lhs spec
    strides = _positive_ints("window_strides", window_strides, nsp)
    lhs_dil = _positive_ints("lhs_dilation", lhs_dilation, nsp)
    rhs_dil = _positive_ints("rhs_dilation", rhs_dilation, nsp)
    x = transpose(x, dn.lhs_spec)                             # (N, C, spatial...)
    n, c, *in_sizes = aval(x).shape
    effective = [_dilated(k, d) for k, d in zip(window, rhs_dil)]
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dil):
            raise ValueError("String padding is not implemented for transposed convolution using this op. Please "
                             "either exactly specify the required padding or use conv_transpose.")
        pads = padtype_to_pads(in_sizes, effective, strides, padding)
    else:
        pads = [tuple(int(v) for v in p) for p in padding]
    if len(pads) != nsp:
        raise ValueError(f"padding needs one (low, high) pair per spatial dim ({nsp}), got {padding!r}")
    spatial = list(range(2, 2 + nsp))
    x = _spatial_prepare(x, spatial, pads, lhs_dil, 0)
    out_sizes = _out_sizes(aval(x).shape[2:], window, strides, rhs_dil)
    taps = math.prod(window)
    if taps == 0 or 0 in (n, c, *out_sizes):
        p = broadcast_in_dim(np.zeros((), la.dtype)[()], (n, c * taps, *out_sizes), ())
    else:
        cols = [reshape(t, (n, c, 1, *out_sizes)) for t in _window_taps(x, spatial, window, strides, rhs_dil,
                                                                          out_sizes)]
        p = cols[0] if len(cols) == 1 else concatenate(cols, 2)   # (N, C, taps, out...), taps in window C order
        order = tuple(np.argsort(dn.rhs_spec[2:], kind="stable"))
        if order != tuple(range(nsp)):
            # The patch flattens the filter positions in the kernel's memory order of its spatial axes.
            p = reshape(p, (n, c, *window, *out_sizes))
            p = transpose(p, (0, 1, *(2 + i for i in order), *range(2 + nsp, 2 + 2 * nsp)))
        p = reshape(p, (n, c * taps, *out_sizes))
    y = transpose(p, tuple(int(i) for i in np.argsort(dn.out_spec)))
    return convert_element_type(y, preferred_element_type) if preferred_element_type is not None else y


# --------------------------------------------------------------------------- ragged_dot

@dataclasses.dataclass(frozen=True)
class RaggedDotDimensionNumbers:
    """Dimension numbers of :func:`ragged_dot_general` (``jax.lax.RaggedDotDimensionNumbers``).

    ``dot_dimension_numbers``: ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``;
    ``lhs_ragged_dimensions``: the one ragged dimension of ``lhs``; ``rhs_group_dimensions``: the
    group dimension of ``rhs`` (one when the ragged dimension is a non-contracting one, else none).

    Examples
    --------
    >>> from tracejit import lax
    >>> lax.RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0]).lhs_ragged_dimensions
    (0,)
    """

    dot_dimension_numbers: Tuple[Tuple[Sequence[int], Sequence[int]], Tuple[Sequence[int], Sequence[int]]]
    lhs_ragged_dimensions: Sequence[int]
    rhs_group_dimensions: Sequence[int]

    def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        object.__setattr__(self, "dot_dimension_numbers",
                           tuple(tuple(map(tuple, t)) for t in dot_dimension_numbers))
        object.__setattr__(self, "lhs_ragged_dimensions", tuple(lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions", tuple(rhs_group_dimensions))


_BASIC_RAGGED_DOT_DIMENSION_NUMBERS = RaggedDotDimensionNumbers(dot_dimension_numbers=(([1], [1]), ([], [])),
                                                                lhs_ragged_dimensions=[0], rhs_group_dimensions=[0])


def _remaining(n, *excluded):
    gone = {int(d) for e in excluded for d in e}
    return [d for d in range(n) if d not in gone]


def _ragged_mode(rank, dn):
    if len(dn.lhs_ragged_dimensions) != 1:
        raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension.")
    ragged = dn.lhs_ragged_dimensions[0]
    if not 0 <= ragged < rank:
        raise TypeError(f"ragged_dot_general requires lhs ragged dimension numbers to be nonnegative and less "
                        f"than the number of axes of the lhs value, got {ragged} for lhs of rank {rank}.")
    (lc, _), (lb, _) = dn.dot_dimension_numbers
    if ragged in _remaining(rank, lc, lb):
        return "noncontracting", ragged
    return ("contracting" if ragged in lc else "batch"), ragged


def _prefix_dims(mode, rank, ragged, batch, contract):
    batch, contract = list(batch), list(contract)
    if mode == "noncontracting":
        free = _remaining(rank, contract, batch)
        return batch + free[:free.index(ragged)]
    if mode == "contracting":
        return batch + contract[:contract.index(ragged)]
    return batch[:batch.index(ragged)]


def _ragged_to_dense(x, dim, group_sizes, axes):
    """``x`` with a leading group axis: entry ``g`` keeps the part of ``x`` whose index along ``dim``
    lies in group ``g`` (``starts[g] <= i < ends[g]``, from the cumulative sizes) and is 0 elsewhere.
    ``group_sizes`` has shape ``[x.shape[a] for a in axes] + [g]``."""
    shape = aval(x).shape
    g = aval(group_sizes).shape[-1]
    full = (g,) + tuple(shape)
    ends = jnp.cumsum(group_sizes, axis=-1)
    starts = ends - group_sizes
    front = (group_sizes.ndim - 1,) + tuple(range(group_sizes.ndim - 1))   # group axis first
    where = (0,) + tuple(a + 1 for a in axes)
    ends = broadcast_in_dim(transpose(ends, front), full, where)
    starts = broadcast_in_dim(transpose(starts, front), full, where)
    i = broadcasted_iota(aval(ends).dtype, full, dim + 1)
    inside = bitwise_and(ge(i, starts), lt(i, ends))
    xb = broadcast_in_dim(x, full, tuple(range(1, len(full))))
    return select(inside, xb, broadcast_in_dim(np.zeros((), aval(x).dtype)[()], full, ()))


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None):
    """Ragged (grouped) ``dot_general`` (``jax.lax.ragged_dot_general``).

    With ``g = group_sizes.shape[-1]`` groups of consecutive indices along the lhs ragged
    dimension, JAX's three modes:

    1. ragged non-contracting dimension ``m``: ``[b..., m..., k...] x [g, b..., k..., n...] ->
       [b..., m..., n...]``, rows of group ``i`` multiply the rhs slice ``i`` of its group dimension;
    2. ragged contracting dimension ``k``: ``[b..., m..., k...] x [b..., k..., n...] ->
       [g, b..., m..., n...]``, one product per group of the contracted entries;
    3. ragged batch dimension: a plain ``dot_general``.

    ``group_sizes`` is ``[g]`` or carries the lhs batch (and outer) dimensions in front, as in JAX.
    Indices past the last group (or before the first, for negative sizes) count in no group.
    Composed of a mask and ``dot_general``: it runs under ``jit`` and ``vmap`` and differentiates
    in ``lhs`` and ``rhs``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> dn = lax.RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])
    >>> lax.ragged_dot_general(np.ones((3, 2)), np.stack([np.eye(2), 2 * np.eye(2)]), np.array([1, 2]), dn)
    Array([[1., 1.],
           [2., 2.],
           [2., 2.]])
    """
    if group_offset is not None:
        raise NotImplementedError("Unimplemented group_offset support.")
    dn = ragged_dot_dimension_numbers
    if not isinstance(dn, RaggedDotDimensionNumbers):
        raise TypeError(f"ragged_dot_general takes RaggedDotDimensionNumbers, got {dn!r}")
    lhs, rhs, gs = _array(lhs), _array(rhs), _array(group_sizes)
    la, ra, ga = aval(lhs), aval(rhs), aval(gs)
    if dtypes.kind(np.dtype(ga.dtype)) not in "iu":
        raise TypeError("ragged_dot_general requires that group_sizes.dtype is subtype of np.integer.")
    dt = np.promote_types(la.dtype, ra.dtype)
    lhs, rhs = widen_to_preferred(preferred_element_type, convert_element_type(lhs, dt),
                                  convert_element_type(rhs, dt))
    mode, ragged = _ragged_mode(la.ndim, dn)
    (lc, rc), (lb, rb) = dn.dot_dimension_numbers
    if ga.ndim == 0:
        raise TypeError("expected rank of group_sizes to be >=1.")
    l_prefix = _prefix_dims(mode, la.ndim, ragged, lb, lc)
    prefix_shape = tuple(la.shape[i] for i in l_prefix)
    if ga.ndim != 1 and ga.shape != prefix_shape + (ga.shape[-1],):
        raise TypeError(f"expected group_sizes to have shape {prefix_shape + (ga.shape[-1],)}, got {ga.shape}.")
    g = ga.shape[-1]
    groups = dn.rhs_group_dimensions
    if mode in ("contracting", "batch") and groups:
        raise TypeError("ragged_dot_general requires zero group dimensions in the rhs when lhs ragged dimension "
                        "is contracting or batch.")
    if mode == "noncontracting":
        if len(groups) != 1:
            raise TypeError("ragged_dot_general requires exactly one rhs group dimension when lhs ragged "
                            "dimension is noncontracting.")
        if not 0 <= groups[0] < ra.ndim:
            raise TypeError(f"ragged_dot_general requires rhs group dimension numbers to be nonnegative and less "
                            f"than the number of axes of the rhs value, got {groups[0]} for rhs of rank {ra.ndim}.")
        if groups[0] in rb or groups[0] in rc:
            raise TypeError("ragged_dot_general requires rhs group dimension numbers to be distinct from "
                            "contracting and batch dimensions.")
        if ra.shape[groups[0]] != g:
            raise TypeError(f"expected rhs group dimension size to be {g}, got {ra.shape[groups[0]]}.")
    if ga.ndim == 1:
        gs = broadcast_in_dim(gs, prefix_shape + (g,), (len(prefix_shape),))

    def incr(dims):
        return [d + 1 for d in dims]
    if mode == "noncontracting":
        out = dot_general(_ragged_to_dense(lhs, ragged, gs, l_prefix), rhs,
                          ((incr(lc) + [0], list(rc) + [groups[0]]), (incr(lb), list(rb))))
    elif mode == "contracting":
        r_ragged = rc[list(lc).index(ragged)]
        r_prefix = _prefix_dims(mode, ra.ndim, r_ragged, rb, rc)
        out = dot_general(_ragged_to_dense(lhs, ragged, gs, l_prefix), _ragged_to_dense(rhs, r_ragged, gs, r_prefix),
                          ((incr(lc), incr(rc)), ([0] + incr(lb), [0] + incr(rb))))
    else:
        out = dot_general(lhs, rhs, dn.dot_dimension_numbers)
    return convert_element_type(out, preferred_element_type) if preferred_element_type is not None else out


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None, group_offset=None):
    """Grouped matrix product (``jax.lax.ragged_dot``): ``lhs`` (m, k), ``rhs`` (g, k, n),
    ``group_sizes`` (g,) of an integer dtype; rows ``[s_i, s_i + group_sizes[i])`` of ``lhs``
    (consecutive groups from row 0) are multiplied by ``rhs[i]``. Rows in no group give zeros.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.ragged_dot(np.ones((3, 2)), np.stack([np.eye(2), 2 * np.eye(2)]), np.array([2, 1]))
    Array([[1., 1.],
           [1., 1.],
           [2., 2.]])
    """
    return ragged_dot_general(lhs, rhs, group_sizes, _BASIC_RAGGED_DOT_DIMENSION_NUMBERS, precision=precision,
                              preferred_element_type=preferred_element_type, group_offset=group_offset)


# --------------------------------------------------------------------------- reduce_precision

def _float_layout(dt):
    info = np.finfo(dt)
    return info.nexp, info.nmant      # exponent bits, explicit mantissa bits


def _reduce_precision_bits(x, exponent_bits, mantissa_bits):
    """XLA's ``ReducePrecision`` on the integer view of ``x`` (a NumPy array)."""
    x = np.asarray(x)
    dt = x.dtype
    se, sm = _float_layout(dt)
    u = np.dtype(f"u{dt.itemsize}").type
    nbits = 8 * dt.itemsize
    bits = x.view(u).copy()
    sign = u(1 << (nbits - 1))
    exp_mask = u(((1 << se) - 1) << sm)
    is_nan = (bits & ~sign) > exp_mask
    if mantissa_bits < sm:
        drop = sm - mantissa_bits
        last = u(1 << drop)
        bias = ((bits & last) >> u(drop)) + u((1 << (drop - 1)) - 1)     # round half to even
        bits = (bits + bias) & ~u((1 << drop) - 1)
    if exponent_bits < se:
        bias_src = (1 << (se - 1)) - 1
        bias_dst = (1 << (exponent_bits - 1)) - 1
        exponent = bits & exp_mask
        signed_zero = bits & sign
        bits = np.where(exponent > u((bias_src + bias_dst) << sm), signed_zero | exp_mask, bits)
        bits = np.where(exponent <= u((bias_src - bias_dst) << sm), signed_zero, bits)
    out = np.asarray(bits, u).view(dt)
    return np.where(is_nan, x, out)


def _reduce_precision_arith(x, exponent_bits, mantissa_bits):
    """The same rounding in exact float arithmetic (no bit-reinterpreting primitive under ``jit``)."""
    dt = np.dtype(aval(x).dtype)
    se, sm = _float_layout(dt)
    info = np.finfo(dt)

    def c(v):
        return np.asarray(v, dt)[()]
    out = x
    if mantissa_bits < sm:
        a = jnp.abs(x)
        _, k = jnp.frexp(a)                                      # a = f * 2**k, 0.5 <= f < 1
        quantum = jnp.maximum(k - 1, info.minexp) - mantissa_bits    # log2 of the kept last bit
        scaled = jnp.ldexp(a, -quantum)                          # exact: at most 2**(mantissa_bits + 1)
        a = jnp.ldexp(jnp.round(scaled), quantum)                # half to even; a carry may reach inf
        out = jnp.where(jnp.isinf(x), x, jnp.copysign(a, x))
    if exponent_bits < se:
        bias = (1 << (exponent_bits - 1)) - 1
        a = jnp.abs(out)
        out = jnp.where(a >= c(2.0 ** (bias + 1)), jnp.copysign(c(np.inf), x), out)
        out = jnp.where(a < c(2.0 ** (1 - bias)), jnp.copysign(c(0.0), x), out)
    return jnp.where(jnp.isnan(x), x, out)


def _reduce_precision_abstract_eval(x, *, exponent_bits, mantissa_bits):
    if dtypes.kind(np.dtype(x.dtype)) != "f":
        raise TypeError(f"reduce_precision does not accept dtype {np.dtype(x.dtype).name}. Accepted dtypes are "
                        "subtypes of floating.")
    return [ShapedArray(x.shape, x.dtype, x.weak_type)]


reduce_precision_p = def_rules(
    Primitive("reduce_precision"), abstract_eval=_reduce_precision_abstract_eval,
    impl=lambda x, *, exponent_bits, mantissa_bits: [_reduce_precision_bits(x, exponent_bits, mantissa_bits)],
    cost=lambda i, o, **_: {"flops": 12 * o[0].size, "transcendentals": 0})
decomposition_rules[reduce_precision_p] = lambda x, **p: [_reduce_precision_arith(x, **p)]
batching_rules[reduce_precision_p] = lambda args, dims, size, **p: ([reduce_precision_p.bind(args[0], **p)],
                                                                     [dims[0]])


def _reduce_precision_jvp(primals, tangents, **params):
    t = tangents[0]
    return ([reduce_precision_p.bind(primals[0], **params)],
            [None if t is None else reduce_precision_p.bind(t, **params)])


ad.def_jvp(reduce_precision_p, _reduce_precision_jvp)
ad.def_simple_vjp(reduce_precision_p, lambda ct, needed, ins, outs, **params: [reduce_precision_p.bind(ct, **params)])


def reduce_precision(operand, exponent_bits, mantissa_bits):
    """Round to a float format with ``exponent_bits`` and ``mantissa_bits`` and back (``jax.lax.reduce_precision``).

    XLA's ``ReducePrecision``: the mantissa is rounded to nearest, ties to even; then values whose
    exponent exceeds the smaller format's range become infinities, and those below its smallest
    normal (subnormals of the smaller format too) become zeros of the same sign. NaNs pass
    unchanged. The dtype is kept. Its derivative is itself (linear), as JAX's.

    Parameters
    ----------
    operand : array of a floating dtype
    exponent_bits : int >= 1
    mantissa_bits : int >= 0

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.reduce_precision(np.array([1.0 + 2.0 ** -9, 70000.0, 1e-6]), exponent_bits=5, mantissa_bits=10)
    Array([1.00195312,        inf, 0.        ])
    """
    exponent_bits = _static_int(exponent_bits, "exponent_bits argument of lax.reduce_precision")
    mantissa_bits = _static_int(mantissa_bits, "mantissa_bits argument of lax.reduce_precision")
    if exponent_bits < 1:
        raise ValueError(f"reduce_precision: exponent_bits must be positive; got {exponent_bits}")
    if mantissa_bits < 0:
        raise ValueError(f"reduce_precision: mantissa_bits must be non-negative; got {mantissa_bits}")
    x = to_operand(operand)
    if dtypes.is_python_scalar(x):
        x = np.asarray(x, dtypes.narrow(dtypes.python_scalar_dtype(x)))
    _reduce_precision_abstract_eval(aval(x), exponent_bits=exponent_bits, mantissa_bits=mantissa_bits)
    return reduce_precision_p.bind(x, exponent_bits=exponent_bits, mantissa_bits=mantissa_bits)
