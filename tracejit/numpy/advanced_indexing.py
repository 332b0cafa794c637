"""Advanced indexing (integer arrays, boolean masks, traced indices) and
``x.at[idx]`` updates, lowered to the gather/scatter/dynamic-slice primitives
of :mod:`tracejit.ops.indexing`.

Semantics follow NumPy's indexing rules for shapes (advanced indices broadcast
together; their dimensions replace the indexed axes when the advanced indices
are adjacent, and move to the front when they are separated by a slice,
``None`` or Ellipsis) and JAX's rules for out-of-bounds values: negative
indices wrap once (``i + n`` for ``-n <= i < 0``); then gathers clamp and
scatters drop out-of-range entries. Static Python integers must be in range
(``IndexError``, as in NumPy). Boolean masks must be concrete, except in
``x.at[mask].set(v)``-style updates, which become a ``where``.

The lowering: static slices are applied first with ``slice`` (for gathers) or
turned into ``arange`` index vectors (for scatters); the indexed axes are
transposed to the front; one ``B + (k,)`` integer index array is stacked; and
the gathered ``B + P`` block is transposed into NumPy's result order.
"""
from __future__ import annotations

import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.core.avals import ShapedArray
from tracejit.core.errors import NonConcreteBooleanIndexError
from tracejit.core.trace import trace_flat
from tracejit.core.tracer import Tracer
from tracejit.ops.elementwise import binary_prims
from tracejit.ops.indexing import (dynamic_slice_p, dynamic_update_slice_p, gather_p, scatter_apply_p,
                                   scatter_p)
from tracejit.numpy import dynamic_slices
from tracejit.numpy._util import aval, broadcast_shapes, convert, is_tracer, to_operand
from tracejit.numpy.misc import where
from tracejit.numpy.shape import broadcast_to, reshape, stack, transpose
from tracejit.numpy.ufuncs import UFUNCS as U

_NEW, _SLICE, _INT, _ARR, _BOOL, _SBOOL, _TBOOL = "new", "slice", "int", "arr", "bool", "sbool", "tbool"

_INVALID = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
            "boolean arrays are valid indices")

NON_CONCRETE_BOOL_MSG = (
    "Array boolean indices must be concrete: indexing with a traced boolean mask gives a result whose "
    "shape depends on the data, which jit cannot compile. Use jnp.where(mask, x, fill) to keep the shape, "
    "functions with a static `size=` argument (jnp.nonzero(mask, size=n), jnp.where(mask, size=n)), or "
    "x.at[mask].set(v) / .add(v) for masked updates. Got a traced mask {mask}.")


# --------------------------------------------------------------------------- parsing

def _classify(e):
    """One index entry -> (kind, value)."""
    if e is None:
        return _NEW, None
    if e is Ellipsis:
        return Ellipsis, None
    if isinstance(e, slice):
        if any(is_tracer(p) for p in (e.start, e.stop, e.step)):
            raise IndexError("slice bounds must be static under jit (got a traced start/stop/step); use "
                             "lax.dynamic_slice(x, starts, sizes) or lax.dynamic_slice_in_dim for a traced start")
        return _SLICE, e
    if isinstance(e, (bool, np.bool_)):
        return _SBOOL, bool(e)
    if isinstance(e, (int, np.integer)):
        return _INT, operator.index(e)
    from_list = isinstance(e, (list, tuple))
    if from_list and _has_tracer(e):
        e = to_operand(e)
    if isinstance(e, Tracer):
        if e.dtype == dtypes.bool_:
            return _TBOOL, e
        if dtypes.is_integer(e.dtype):
            return _ARR, e
        raise IndexError(f"{_INVALID}; got a traced array of dtype {e.dtype.name}")
    try:
        arr = np.asarray(e)
    except Exception:
        raise IndexError(f"{_INVALID}; got {type(e).__name__}") from None
    if from_list and arr.size == 0:
        arr = arr.astype(np.int64)  # NumPy reads an empty list as an (empty) integer index
    if arr.dtype == np.bool_:
        return (_BOOL, arr) if arr.ndim else (_SBOOL, bool(arr))
    if not dtypes.is_integer(arr.dtype):
        raise IndexError(f"{_INVALID}; got an array of dtype {arr.dtype}")
    if arr.ndim == 0:
        return _INT, int(arr)
    return _ARR, arr


def _has_tracer(seq) -> bool:
    return any(isinstance(b, Tracer) or (isinstance(b, (list, tuple)) and _has_tracer(b)) for b in seq)


def _consumes(kind, value) -> int:
    if kind in (_SLICE, _INT, _ARR):
        return 1
    if kind in (_BOOL, _TBOOL):
        return value.ndim
    return 0


class _Parsed:
    """An index expanded to one entry per axis of ``shape`` (new axes inserted)."""

    def __init__(self, entries, shape, orig_shape):
        self.entries = entries          # list of (kind, value) with kinds _SLICE/_INT/_ARR
        self.shape = tuple(shape)       # operand shape after inserting new axes
        self.orig_shape = tuple(orig_shape)


def _parse(shape, idx):
    """Expand Ellipsis, concrete boolean masks and new axes. Returns _Parsed, or the raw entry list
    if a traced boolean mask is present (the caller decides what to do with it)."""
    raw = [_classify(e) for e in (idx if isinstance(idx, tuple) else (idx,))]
    n_ell = sum(1 for k, _ in raw if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(_consumes(k, v) for k, v in raw)
    if used > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but {used} were indexed")
    fill = [(_SLICE, slice(None))] * (len(shape) - used)
    if n_ell:
        pos = next(i for i, (k, _) in enumerate(raw) if k is Ellipsis)
        raw = raw[:pos] + fill + raw[pos + 1:]
    else:
        raw = raw + fill
    if any(k == _TBOOL for k, _ in raw):
        return raw
    entries, new_shape, axis = [], [], 0
    for kind, v in raw:
        if kind in (_NEW, _SBOOL):
            new_shape.append(1)
            if kind == _NEW:
                entries.append((_SLICE, slice(None)))
            else:  # a 0-d boolean adds an axis of length 1 (True) or 0 (False)
                entries.append((_ARR, np.zeros(1 if v else 0, np.int64)))
        elif kind == _BOOL:
            want = tuple(shape[axis:axis + v.ndim])
            if v.shape != want:
                bad = next(i for i, (a, b) in enumerate(zip(v.shape, want)) if a != b)
                raise IndexError(f"boolean index did not match indexed array along axis {axis + bad}; size of "
                                 f"axis is {want[bad]} but size of corresponding boolean axis is {v.shape[bad]}")
            for nz in np.nonzero(v):
                entries.append((_ARR, nz.astype(np.int64)))
            new_shape.extend(want)
            axis += v.ndim
        else:
            n = shape[axis]
            if kind == _INT:
                if not -n <= v < n:
                    raise IndexError(f"index {v} is out of bounds for axis {axis} with size {n}")
                v %= n
            entries.append((kind, v))
            new_shape.append(n)
            axis += 1
    return _Parsed(entries, new_shape, shape)


# --------------------------------------------------------------------------- index arrays

_SMALL_INTS = {np.dtype(t) for t in (np.int8, np.int16, np.int32, np.uint8, np.uint16)}


def _index_dtype(arrays, shape):
    """int32 when every index array fits (keeps int32 programs int32), else int64."""
    if arrays and all(aval(a).dtype in _SMALL_INTS for a in arrays) and max(shape, default=0) < 2 ** 31 - 1:
        return np.dtype(np.int32)
    return np.dtype(np.int64)


def _normalize(a, n, dtype, wrap_negative=True):
    """Cast to ``dtype`` and wrap negative indices once (``i + n`` for ``i < 0``)."""
    src = aval(a).dtype
    if not is_tracer(a):
        a = np.asarray(a)
        if src == np.uint64 or (src.kind == "u" and src.itemsize >= dtype.itemsize):
            a = np.minimum(a, np.iinfo(dtype).max)  # keep huge unsigned values out of range, not wrapped
        a = a.astype(dtype)
        return np.where(a < 0, a + dtype.type(n), a) if wrap_negative else a
    if src == np.uint64:
        a = U["minimum"](a, np.uint64(np.iinfo(np.int64).max))
    if src != dtype:
        a = convert(a, dtype)
    if not wrap_negative or src.kind == "u":
        return a
    return where(U["less"](a, 0), U["add"](a, n), a)


def _stack_indices(parts, shape):
    """Broadcast each (already broadcast-compatible) index part to ``shape`` and stack on a new last axis."""
    if not any(is_tracer(p) for p in parts):
        return np.stack([np.broadcast_to(p, shape) for p in parts], axis=-1) if parts else \
            np.zeros(tuple(shape) + (0,), np.int64)
    return stack([broadcast_to(p, shape) for p in parts], axis=-1)


class _Plan:
    """Where each dimension goes for entries that are all full slices, partial slices or index arrays.

    Gather/scatter layout ``G`` = B + partial-slice lengths + pass-through lengths; NumPy's result
    layout ``R`` = B at the first advanced axis if the advanced entries are adjacent, else in front.
    """

    def __init__(self, shape, entries, wrap_negative=True):
        self.shape = shape
        adv = [a for a, (k, _) in enumerate(entries) if k in (_INT, _ARR)]
        vals = {a: (np.asarray(v) if k == _INT else v) for a, (k, v) in enumerate(entries) if a in adv}
        self.B = broadcast_shapes(*[aval(vals[a]).shape for a in adv]) if adv else ()
        slice_axes = [a for a, (k, _) in enumerate(entries) if k == _SLICE]
        ranges = {a: range(*entries[a][1].indices(shape[a])) for a in slice_axes}
        self.partial = [a for a in slice_axes if ranges[a] != range(shape[a])]
        self.passthrough = [a for a in slice_axes if a not in self.partial]
        self.indexed = sorted(adv + self.partial)
        self.x_perm = self.indexed + self.passthrough
        nb = len(self.B)
        b_lbl = [("b", j) for j in range(nb)]
        if adv and adv == list(range(adv[0], adv[-1] + 1)):
            r = [("s", a) for a in slice_axes if a < adv[0]] + b_lbl + [("s", a) for a in slice_axes if a > adv[0]]
        else:
            r = b_lbl + [("s", a) for a in slice_axes]
        g = b_lbl + [("s", a) for a in self.partial] + [("s", a) for a in self.passthrough]
        self.g_to_r = [g.index(lbl) for lbl in r]
        self.r_to_g = [r.index(lbl) for lbl in g]
        dim = {("b", j): s for j, s in enumerate(self.B)}
        dim.update({("s", a): len(ranges[a]) for a in slice_axes})
        self.r_shape = tuple(dim[lbl] for lbl in r)
        self.g_shape = tuple(dim[lbl] for lbl in g)
        bfull = self.B + tuple(len(ranges[a]) for a in self.partial)
        npart = len(self.partial)
        dtype = _index_dtype([vals[a] for a in adv if entries[a][0] == _ARR], [shape[a] for a in self.indexed])
        parts = []
        for a in self.indexed:
            if a in vals:
                v = _normalize(vals[a], shape[a], dtype, wrap_negative)
                vs = aval(v).shape
                v = reshape(v, (1,) * (nb - len(vs)) + vs + (1,) * npart)
            else:
                q = self.partial.index(a)
                view = [1] * (nb + npart)
                view[nb + q] = len(ranges[a])
                v = np.asarray(ranges[a], dtype).reshape(view)
            parts.append(v)
        self.indices = _stack_indices(parts, bfull)


def _permute(x, perm):
    return x if list(perm) == list(range(len(perm))) else transpose(x, perm)


# --------------------------------------------------------------------------- gather

def _fill_default(dtype):
    if dtypes.is_inexact(dtype):
        return complex(np.nan, np.nan) if dtypes.is_complex(dtype) else float("nan")
    if dtype == dtypes.bool_:
        return True
    return int(np.iinfo(dtype).min if dtype.kind == "i" else np.iinfo(dtype).max)


def _gather_mode(mode, fill_value, dtype, what="x.at[idx].get"):
    if mode in (None, "clip", "promise_in_bounds"):
        return "clip", None
    if mode in ("fill", "drop"):
        fv = _fill_default(dtype) if fill_value is None else fill_value
        return "fill", np.asarray(fv).astype(dtype).item() if not isinstance(fv, Tracer) else _no_traced_fill()
    raise ValueError(f"{what}: mode must be one of 'clip', 'fill', 'drop', 'promise_in_bounds' or None, got {mode!r}")


def _no_traced_fill():
    raise TypeError("fill_value must be a static scalar, not a traced array")


def gather_entries(x, entries, *, mode=None, fill_value=None, wrap_negative=True):
    """Gather ``x`` at per-axis entries (full slices or index arrays) with NumPy result layout."""
    gmode, fv = _gather_mode(mode, fill_value, aval(x).dtype)
    plan = _Plan(aval(x).shape, entries, wrap_negative)
    xt = _permute(x, plan.x_perm)
    out = gather_p.bind(xt, plan.indices, mode=gmode, fill_value=fv)
    return _permute(out, plan.g_to_r)


def getitem(x, idx, *, mode=None, fill_value=None):
    """``x[idx]`` for any NumPy index; with ``mode``/``fill_value`` as in ``x.at[idx].get``."""
    from tracejit.numpy.indexing import _basic_getitem
    if dynamic_slices.has_dynamic_slice(idx):
        return dynamic_slices.getitem(x, idx, lambda w, rest: getitem(w, rest, mode=mode, fill_value=fill_value))
    x = to_operand(x)
    parsed = _parse(aval(x).shape, idx)
    if not isinstance(parsed, _Parsed):
        mask = next(v for k, v in parsed if k == _TBOOL)
        raise NonConcreteBooleanIndexError(NON_CONCRETE_BOOL_MSG.format(mask=mask.aval.str_short()))
    if parsed.shape != aval(x).shape:
        x = reshape(x, parsed.shape)
    entries = parsed.entries
    arrays = [v for k, v in entries if k == _ARR]
    if not arrays:  # e.g. 0-d integer arrays: plain integer indexing
        return _basic_getitem(x, [v for _, v in entries])
    if all(is_tracer(v) and v.ndim == 0 for v in arrays) and mode in (None, "clip", "promise_in_bounds"):
        return _dynamic_getitem(x, entries, _basic_getitem)
    # Static slices first (cheap, fusable); what remains is pure gathering.
    x = _basic_getitem(x, [v if k == _SLICE else slice(None) for k, v in entries])
    entries = [(_SLICE, slice(None)) if k == _SLICE else (k, v) for k, v in entries]
    return gather_entries(x, entries, mode=mode, fill_value=fill_value)


def _dynamic_getitem(x, entries, basic_getitem):
    """Static ints and slices plus traced scalar ints: slice, then one dynamic_slice of size 1."""
    y = basic_getitem(x, [v if k != _ARR else slice(None) for k, v in entries])
    kept = [(k, v, n) for (k, v), n in zip(entries, aval(x).shape) if k != _INT]
    shape = aval(y).shape
    starts, sizes, out_shape = [], [], []
    for (k, v, n), s in zip(kept, shape):
        if k == _ARR:
            starts.append(_normalize(v, n, aval(v).dtype))
            sizes.append(1)
        else:
            starts.append(0)
            sizes.append(s)
            out_shape.append(s)
    y = dynamic_slice_p.bind(y, *starts, slice_sizes=tuple(sizes))
    return reshape(y, tuple(out_shape))


# --------------------------------------------------------------------------- scatter

_COMBINE = {"add": "add", "mul": "mul", "min": "min", "max": "max"}


def _scatter_mode(mode):
    if mode in (None, "drop", "fill", "promise_in_bounds"):
        return "drop"
    if mode == "clip":
        return "clip"
    raise ValueError(f"x.at[idx] update: mode must be one of 'drop', 'fill', 'clip', 'promise_in_bounds' "
                     f"or None, got {mode!r}")


def _broadcast_values(v, shape, what):
    vs = aval(v).shape
    while len(vs) > len(shape) and vs[0] == 1:  # NumPy drops extra leading length-1 dims
        vs = vs[1:]
        v = reshape(v, vs)
    try:
        if broadcast_shapes(vs, shape) != tuple(shape):
            raise ValueError
    except ValueError:
        raise ValueError(f"{what}: cannot broadcast values of shape {aval(v).shape} to the indexed shape "
                         f"{tuple(shape)}") from None
    return broadcast_to(v, shape) if vs != tuple(shape) else v


def _values(x, values):
    v = to_operand(values)
    return convert(v, aval(x).dtype)


def scatter(x, idx, values, kind, *, mode=None, func=None):
    """``x[idx] (op)= values`` functionally. ``kind``: set/add/mul/min/max, or apply (``func``)."""
    if dynamic_slices.has_dynamic_slice(idx):
        return dynamic_slices.update(x, idx, lambda w, rest: scatter(w, rest, values, kind, mode=mode, func=func))
    x = to_operand(x)
    orig_shape = aval(x).shape
    parsed = _parse(orig_shape, idx)
    if not isinstance(parsed, _Parsed):
        return _masked_update(x, parsed, values, kind, func)
    smode = _scatter_mode(mode)
    xe = reshape(x, parsed.shape) if parsed.shape != orig_shape else x
    entries = parsed.entries
    if kind != "apply" and _is_window(entries, parsed.shape):
        out = _window_update(xe, entries, _values(x, values), kind, smode)
    else:
        plan = _Plan(parsed.shape, entries)
        xt = _permute(xe, plan.x_perm)
        if kind == "apply":
            program = _scalar_program(func, aval(x).dtype)
            out = scatter_apply_p.bind(xt, plan.indices, program=program, mode=smode)
        else:
            v = _broadcast_values(_values(x, values), plan.r_shape, f"x.at[idx].{kind}")
            v = _permute(v, plan.r_to_g)
            out = scatter_p.bind(xt, plan.indices, v, kind=kind, mode=smode)
        out = _permute(out, np.argsort(plan.x_perm).tolist())
    return reshape(out, orig_shape) if parsed.shape != orig_shape else out


def _is_window(entries, shape):
    """Ints (static or traced scalars) and unit-stride slices: the update is one rectangular window."""
    for (k, v), n in zip(entries, shape):
        if k == _ARR and not (is_tracer(v) and aval(v).ndim == 0):
            return False
        if k == _SLICE and len(range(*v.indices(n))) > 1 and v.indices(n)[2] != 1:
            return False
    return True


def _window_update(x, entries, v, kind, mode):
    """A dynamic_update_slice: static starts, or traced scalar indices.

    A traced index out of range drops the update (JAX's default scatter mode),
    unless ``mode`` is ``clip``: the window then writes back what it read.
    The window is written in place when ``x`` is not needed afterwards, which
    keeps ``x.at[i].set(v)`` in a loop from copying ``x`` each iteration.
    """
    shape = aval(x).shape
    starts, sizes, r_shape, in_range = [], [], [], []
    for (k, e), n in zip(entries, shape):
        if k == _INT:
            starts.append(e)
            sizes.append(1)
        elif k == _ARR:
            i = _normalize(e, n, np.dtype(np.int64))     # int64: ``n`` may not fit a narrower index type
            starts.append(i)
            sizes.append(1)
            in_range.append(U["logical_and"](U["greater_equal"](i, 0), U["less"](i, n)))
        else:
            r = range(*e.indices(n))
            starts.append(r.start if len(r) else 0)
            sizes.append(len(r))
            r_shape.append(len(r))
    v = reshape(_broadcast_values(v, tuple(r_shape), f"x.at[idx].{kind}"), tuple(sizes))
    drop = bool(in_range) and mode == "drop"
    if kind != "set" or drop:
        cur = dynamic_slice_p.bind(x, *starts, slice_sizes=tuple(sizes))
        if kind != "set":
            v = binary_prims[_COMBINE[kind]].bind(cur, v)
        if drop:
            ok = in_range[0]
            for r in in_range[1:]:
                ok = U["logical_and"](ok, r)
            v = where(ok, v, cur)
    return dynamic_update_slice_p.bind(x, v, *starts)


def _scalar_program(func, dtype):
    def body(v):
        return [convert(to_operand(func(v)), dtype)]
    return trace_flat(body, [ShapedArray((), dtype)], name=getattr(func, "__name__", "func"))


def _masked_update(x, raw, values, kind, func):
    """``x.at[mask]`` with a traced boolean mask: a select, so the shape stays static."""
    shape = aval(x).shape
    tb = [i for i, (k, _) in enumerate(raw) if k == _TBOOL]
    others_full = all(k == _TBOOL or (k == _SLICE and v == slice(None)) for k, v in raw)
    if kind == "get" or len(tb) != 1 or not others_full:
        mask = raw[tb[0]][1]
        raise NonConcreteBooleanIndexError(
            NON_CONCRETE_BOOL_MSG.format(mask=mask.aval.str_short())
            + " (x.at[mask] updates with a traced mask support only a single mask over consecutive full axes, "
              "e.g. x.at[mask], x.at[:, mask] or x.at[..., mask])")
    a = tb[0]
    mask = raw[a][1]
    m = mask.ndim
    if mask.shape != shape[a:a + m]:
        raise IndexError(f"boolean index of shape {mask.shape} does not match the indexed array's axes "
                         f"{shape[a:a + m]}")
    full_mask = broadcast_to(reshape(mask, (1,) * a + mask.shape + (1,) * (len(shape) - a - m)), shape)
    if kind == "apply":
        new = convert(to_operand(func(x)), aval(x).dtype)
        return where(full_mask, new, x)
    pre, post = shape[:a], shape[a + m:]
    v = _values(x, values)
    vs = aval(v).shape
    while len(vs) > len(pre) + 1 + len(post) and vs[0] == 1:
        vs = vs[1:]
    vs = (1,) * (len(pre) + 1 + len(post) - len(vs)) + vs
    if vs[len(pre)] != 1:
        raise ValueError(f"x.at[mask].{kind} with a traced mask needs values that do not depend on the number "
                         f"of selected elements (shape broadcastable to {pre + (1,) + post}); got values of "
                         f"shape {aval(v).shape}. Use jnp.where(mask, values, x) with values of the full shape.")
    v = reshape(v, vs[:len(pre)] + (1,) * m + vs[len(pre) + 1:])
    v = broadcast_to(v, shape)
    if kind != "set":
        v = binary_prims[_COMBINE[kind]].bind(x, v)
    return where(full_mask, v, x)


# --------------------------------------------------------------------------- x.at[idx]

class IndexUpdateRef:
    """``x.at[idx]``: functional versions of ``x[idx] = v``, ``x[idx] += v``, ...

    Every method returns a new array; under ``jit`` the update is done in place
    when ``x`` is not used afterwards. Out-of-bounds indices are dropped for
    updates and clamped for :meth:`get` (``mode=`` changes that, as in JAX).
    Repeated indices accumulate for ``add``/``multiply``/``min``/``max`` (like
    ``np.add.at``); for ``set`` the last update (in index order) wins.

    Examples
    --------
    >>> import tracejit, tracejit.numpy as jnp
    >>> tracejit.jit(lambda x: x.at[jnp.array([0, 0, 2])].add(1.0))(jnp.zeros(3))
    Array([2., 0., 1.])
    """

    __slots__ = ("array", "index")

    def __init__(self, array, idx):
        self.array = array
        self.index = idx

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None):
        """``x[idx]``; ``mode='fill'`` returns ``fill_value`` (default NaN / min int / True) out of bounds."""
        return getitem(self.array, self.index, mode=mode, fill_value=fill_value)

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] = values``."""
        return scatter(self.array, self.index, values, "set", mode=mode)

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] += values`` (repeated indices accumulate)."""
        return scatter(self.array, self.index, values, "add", mode=mode)

    def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] -= values`` (repeated indices accumulate)."""
        v = U["negative"](_values(to_operand(self.array), values))
        return scatter(self.array, self.index, v, "add", mode=mode)

    def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] *= values`` (repeated indices accumulate)."""
        return scatter(self.array, self.index, values, "mul", mode=mode)

    mul = multiply

    def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] /= values``: ``x / ones_like(x).at[idx].multiply(values)`` (true division, as JAX)."""
        from tracejit.numpy.creation import ones_like
        return U["true_divide"](self.array, scatter(ones_like(self.array), self.index, values, "mul", mode=mode))

    def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] **= values``: ``x ** ones_like(x).at[idx].multiply(values)`` (as JAX)."""
        from tracejit.numpy.creation import ones_like
        return U["power"](self.array, scatter(ones_like(self.array), self.index, values, "mul", mode=mode))

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] = minimum(x[idx], values)`` (NaN-propagating, repeated indices combine)."""
        return scatter(self.array, self.index, values, "min", mode=mode)

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``x[idx] = maximum(x[idx], values)`` (NaN-propagating, repeated indices combine)."""
        return scatter(self.array, self.index, values, "max", mode=mode)

    def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """``func.at(x, idx)`` for an elementwise unary ``func``: applied once per occurrence of an index."""
        return scatter(self.array, self.index, None, "apply", mode=mode, func=func)
