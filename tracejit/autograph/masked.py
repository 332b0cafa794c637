"""Slices whose length depends on the loop index, inside a compiled loop body: masked windows.

``for i in range(n): x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]`` reads ``L[i, :i]``, whose
length changes every iteration, so one loop body cannot hold it as an array of a fixed shape.
Inside a ``fori_loop`` body that autograph compiles, the loop index is an :class:`AffineIndex`:
a traced integer that also knows its value as an affine form ``c0 + c1*i + c2*j`` over the
loop indices in scope, each with its static range. Slicing with such a bound gives a
:class:`Masked` value: the whole axis (its fixed size) plus a :class:`Window` ``[start, stop)``
in the axis's own coordinates, the elements NumPy's slice would hold. Computing on the whole
axis and masking where it matters (reductions and contractions fill the outside with their
identity; writes ``where(window, new, old)``) gives NumPy's values with fixed shapes.

Only what can be proven right is converted, else the body fails to trace and the loop is
unrolled (``tracejit.autograph.runtime``), as before:

- a bound is an int or an affine form whose range over the loop stays within ``[0, n]`` (or
  ``[-n, -1]``): no Python clamping or wrap-around in any iteration, so the length is exactly
  ``stop - start`` (empty when negative);
- two windows meet elementwise (or in a contraction) only when their start and stop forms are
  equal, so the lengths agree in every iteration as NumPy requires; a window meets a fixed
  axis only when that axis has length 1 (broadcasting);
- supported: arithmetic, comparisons and unary/binary ufuncs, ``np.where``, ``sum``/``prod``/
  ``max``/``min``/``any``/``all`` (``max``/``min`` only over windows never empty), ``@``,
  ``np.dot``/``np.inner``/``np.outer`` (at most 2-D), ``astype``, ``copy``, ``.T``, in-place
  operators and assignment into ``x[window] = ...`` of NumPy arrays. Anything else raises
  :class:`MaskedUnsupported` (a ``TypeError``): the caller unrolls.

Examples
--------
>>> f = Affine({}, 3) + Affine({LoopVar(0, 9): 2}, 1)
>>> f.interval()
(4, 22)
"""
from __future__ import annotations

import operator

import numpy as np

from tracejit.core import dtypes
from tracejit import numpy as jnp
from tracejit.array import Array
from tracejit.core.tracer import IMMUTABLE_MESSAGE, Tracer
from tracejit.functionalize import state as _fstate
from tracejit.numpy.indexing import _expand_index


class MaskedUnsupported(TypeError):
    """An operation on a loop-index-dependent slice that is not converted (the loop is unrolled)."""


def _unsupported(what):
    raise MaskedUnsupported(f"{what} (a slice whose length depends on the loop index)")


# ------------------------------------------------------------------------------ affine forms
class LoopVar:
    """One loop index in scope, with the static range ``[lo, hi]`` (inclusive) of its values."""

    __slots__ = ("lo", "hi")

    def __init__(self, lo, hi):
        self.lo, self.hi = int(lo), int(hi)


class Affine:
    """``const + sum(coef * var)`` over :class:`LoopVar` s (an integer-valued affine form)."""

    __slots__ = ("terms", "const")

    def __init__(self, terms=None, const=0):
        self.terms = {v: int(c) for v, c in (terms or {}).items() if c}
        self.const = int(const)

    def __add__(self, other):
        terms = dict(self.terms)
        for v, c in other.terms.items():
            terms[v] = terms.get(v, 0) + c
        return Affine(terms, self.const + other.const)

    def scale(self, k):
        return Affine({v: c * k for v, c in self.terms.items()}, self.const * k)

    def __eq__(self, other):
        return isinstance(other, Affine) and self.terms == other.terms and self.const == other.const

    __hash__ = None

    def interval(self):
        """The (min, max) of the form over the ranges of its variables."""
        lo = hi = self.const
        for v, c in self.terms.items():
            lo += c * (v.lo if c > 0 else v.hi)
            hi += c * (v.hi if c > 0 else v.lo)
        return lo, hi


class AffineIndex(Tracer):
    """A traced loop index (or an affine function of loop indices): an ordinary traced integer
    that also carries its value as an :class:`Affine` form. ``+``, ``-`` and ``*`` with Python
    integers and other affine indices keep the form; every other use is an ordinary tracer."""

    __slots__ = ("form",)

    def __init__(self, tracer, form):
        super().__init__(tracer._trace, tracer.aval, tracer._var)
        self.form = form

    def __add__(self, other):
        return _affine_result(Tracer.__add__(self, other), self.form, _form(other), 1)

    def __radd__(self, other):
        return _affine_result(Tracer.__radd__(self, other), self.form, _form(other), 1)

    def __sub__(self, other):
        return _affine_result(Tracer.__sub__(self, other), self.form, _form(other), -1)

    def __rsub__(self, other):
        return _affine_result(Tracer.__rsub__(self, other), self.form.scale(-1), _form(other), 1)

    def __mul__(self, other):
        out = Tracer.__mul__(self, other)
        f = _form(other)
        if f is None or f.terms:          # a product of two indices is not affine
            return out
        return _affine_result(out, self.form.scale(f.const), Affine(), 1)

    __rmul__ = __mul__

    def __neg__(self):
        return _affine_result(Tracer.__neg__(self), self.form.scale(-1), Affine(), 1)


def _form(x):
    if isinstance(x, AffineIndex):
        return x.form
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return Affine({}, int(x))
    return None


def _affine_result(out, form, other, sign):
    if other is None or not isinstance(out, Tracer) or out.shape != () or out.dtype.kind not in "iu":
        return out
    return AffineIndex(out, form + other.scale(sign))


def loop_index(value, lo, hi):
    """The loop index ``value`` (a traced integer scalar) whose values lie in ``[lo, hi]``."""
    return AffineIndex(value, Affine({LoopVar(lo, hi): 1}))


def interval_of(x):
    """The static (min, max) of an int or an affine index, or None."""
    f = _form(x)
    return None if f is None else f.interval()


# -------------------------------------------------------------------------------- windows
class Window:
    """The valid positions ``[start, stop)`` of one axis, in the axis's own coordinates."""

    __slots__ = ("start", "stop", "start_value", "stop_value")

    def __init__(self, start, stop, start_value, stop_value):
        self.start, self.stop = start, stop                 # Affine forms
        self.start_value, self.stop_value = start_value, stop_value   # ints or traced ints

    def same(self, other):
        return self.start == other.start and self.stop == other.stop

    def never_empty(self):
        return (self.stop + self.start.scale(-1)).interval()[0] >= 1

    def mask(self, size):
        r = jnp.arange(size)
        return (r >= self.start_value) & (r < self.stop_value)


def _bound(b, n, default):
    if b is None:
        return Affine({}, default), default
    f = _form(b)
    if f is None:
        _unsupported(f"a slice bound that is not an affine function of the loop indices ({b!r})")
    if not f.terms:                     # a plain int: Python's own clamping, the same every iteration
        c = min(max(f.const + n if f.const < 0 else f.const, 0), n)
        return Affine({}, c), c
    lo, hi = f.interval()
    if 0 <= lo and hi <= n:
        return f, b
    if -n <= lo and hi < 0:             # negative in every iteration: counts from the end
        return f + Affine({}, n), b + n
    _unsupported(f"a slice bound ranging over [{lo}, {hi}] on an axis of length {n}, which Python "
                 "clamps or wraps around in some iterations")


def _window(entry, n):
    if entry.step is not None and not (_form(entry.step) is not None and not _form(entry.step).terms
                                       and _form(entry.step).const == 1):
        _unsupported("a slice with a step")
    start, start_value = _bound(entry.start, n, 0)
    stop, stop_value = _bound(entry.stop, n, n)
    return Window(start, stop, start_value, stop_value)


def has_affine_slice(idx) -> bool:
    """Whether ``idx`` holds a slice with a loop-index-dependent bound."""
    entries = idx if isinstance(idx, tuple) else (idx,)
    return any(isinstance(e, slice) and any(isinstance(b, AffineIndex) for b in (e.start, e.stop, e.step))
               for e in entries)


def _parse(x, idx):
    """(key, windows): ``idx`` with each affine slice replaced by a whole-axis slice, and the
    window of each axis of ``x[key]`` (None for a fixed axis)."""
    key, windows = [], []
    axis = 0
    for e in _expand_index(idx, x.ndim):
        if e is None:
            key.append(None)
            windows.append(None)
            continue
        n = x.shape[axis]
        if isinstance(e, slice):
            if any(isinstance(b, AffineIndex) for b in (e.start, e.stop, e.step)):
                windows.append(_window(e, n))
                key.append(slice(None))
            else:
                windows.append(None)
                key.append(e)
        elif isinstance(e, (bool, np.bool_)):
            _unsupported("a boolean index")
        elif isinstance(e, (int, np.integer)) or (isinstance(e, Tracer) and e.shape == ()
                                                  and e.dtype.kind in "iu"):
            key.append(e)
        else:
            _unsupported("an array index")
        axis += 1
    return tuple(key), tuple(windows)


def _full_mask(windows, shape, axes=None):
    """The product of the windows' masks (over ``axes``), shaped to broadcast against ``shape``;
    None when no axis has a window."""
    mask = None
    for ax, w in enumerate(windows):
        if w is None or (axes is not None and ax not in axes):
            continue
        m = jnp.reshape(w.mask(shape[ax]), tuple(shape[ax] if a == ax else 1 for a in range(len(shape))))
        mask = m if mask is None else mask & m
    return mask


def _resize(data, ax, size):
    """``data`` cut or zero-extended along ``ax`` to ``size`` (the extension lies outside every window)."""
    n = data.shape[ax]
    if n > size:
        return data[(slice(None),) * ax + (slice(0, size),)]
    if n < size:
        pad = [(0, 0)] * data.ndim
        pad[ax] = (0, size - n)
        return jnp.pad(data, pad)
    return data


# ---------------------------------------------------------------------------- masked values
def _numpy_semantics(operands) -> bool:
    for a in operands:
        if isinstance(a, Masked):
            if not a.np_sem:
                return False
        elif isinstance(a, Tracer):
            if a._np is None:
                return False
        elif isinstance(a, Array):
            return False
    return True


def _parts(x):
    if isinstance(x, Masked):
        return x.data, x.windows
    if isinstance(x, Tracer):
        return _fstate.plain(x), (None,) * x.ndim
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
    return x, (None,) * np.ndim(x)


def _result(data, windows, np_sem):
    if any(w is not None for w in windows):
        return Masked(data, windows, np_sem)
    return _fstate.new_base(data) if np_sem and isinstance(data, Tracer) else data


class Masked:
    """A slice whose length depends on the loop index: the whole axes (``data``) and a window
    per axis. A view of a NumPy array (``source``) re-reads it after writes and writes through."""

    __array_priority__ = 2000
    __slots__ = ("_data", "windows", "np_sem", "_source", "_key", "_index", "_seen", "_written", "frozen")

    def __init__(self, data, windows, np_sem, source=None, key=None, index=None):
        self._data, self.windows, self.np_sem = data, tuple(windows), np_sem
        self._source, self._key, self._index = source, key, index
        self._seen = source._np.buf.version if source is not None else None
        self._written = None
        self.frozen = False       # an alias of a view that cannot be written through

    @property
    def data(self):
        src = self._source
        if src is not None and src._np.buf.version != self._seen:
            self._seen = src._np.buf.version
            self._data = _fstate.plain(src)[self._key]
        return self._data

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self):
        return len(self.windows)

    def _refuse(self, *_, **__):
        _unsupported("this use (shape, len, indexing, conversion to a Python value or an array)")

    shape = property(_refuse)
    size = property(_refuse)
    __len__ = __iter__ = __bool__ = __int__ = __float__ = __index__ = __array__ = _refuse
    __getitem__ = __setitem__ = __imatmul__ = _refuse
    __hash__ = None

    def __repr__(self):
        return f"<Masked {self.data.aval.str_short()} windows={[w is not None for w in self.windows]}>"

    # elementwise
    def astype(self, dtype, *args, **kwargs):
        return Masked(self.data.astype(dtype), self.windows, self.np_sem)

    def copy(self, *args, **kwargs):
        return Masked(self.data, self.windows, self.np_sem)

    @property
    def T(self):
        if self.ndim > 2:
            _unsupported(".T of more than two axes")
        out = Masked(jnp.transpose(self.data), self.windows[::-1], self.np_sem)
        out.frozen = self._source is not None
        return out

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or any(v is not None for k, v in kwargs.items() if k == "out") or \
                any(k not in ("out",) for k in kwargs) or ufunc.nout != 1:
            _unsupported(f"np.{ufunc.__name__}.{method} with {sorted(kwargs)}")
        if ufunc.__name__ == "matmul":
            return matmul(*inputs)
        fn = getattr(jnp, ufunc.__name__, None)
        if fn is None:
            _unsupported(f"np.{ufunc.__name__}")
        return elementwise(fn, *inputs)

    def __array_function__(self, func, types, args, kwargs):
        impl = _FUNCTIONS.get(func.__name__)
        if impl is None:
            _unsupported(f"np.{func.__name__}")
        return impl(*args, **kwargs)

    # reductions
    def sum(self, axis=None, dtype=None, keepdims=False):
        return reduce(self, "sum", axis, keepdims, dtype)

    def prod(self, axis=None, dtype=None, keepdims=False):
        return reduce(self, "prod", axis, keepdims, dtype)

    def max(self, axis=None, keepdims=False):
        return reduce(self, "max", axis, keepdims)

    def min(self, axis=None, keepdims=False):
        return reduce(self, "min", axis, keepdims)

    def any(self, axis=None, keepdims=False):
        return reduce(self, "any", axis, keepdims)

    def all(self, axis=None, keepdims=False):
        return reduce(self, "all", axis, keepdims)

    def dot(self, other):
        return dot(self, other)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    # in place
    def _inplace(self, fn, other):
        if not self.np_sem:
            return NotImplemented          # JAX semantics: Python rebinds the name
        if self.frozen:
            _unsupported("an in-place update through a transposed view")
        new = elementwise(fn, self, other)
        new_dtype = new.dtype if isinstance(new, Masked) else jnp.asarray(new).dtype
        if not np.can_cast(new_dtype, self.dtype, "same_kind"):
            _unsupported(f"an in-place update casting {new_dtype} to {self.dtype}")
        if self._source is not None:
            write(self._source, self._key, self.windows, new)
            self._written = self._source._np.buf.version
        else:
            self._data = _fit(new, self.windows, self.data.shape).astype(self.dtype)
        return self


def _make_binary(fn, reflected=False):
    if reflected:
        return lambda self, other: elementwise(fn, other, self)
    return lambda self, other: elementwise(fn, self, other)


def _make_inplace(fn):
    return lambda self, other: self._inplace(fn, other)


for _name, _fn in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv), ("mod", operator.mod),
                   ("pow", operator.pow), ("and", operator.and_), ("or", operator.or_),
                   ("xor", operator.xor), ("lshift", operator.lshift), ("rshift", operator.rshift)):
    setattr(Masked, f"__{_name}__", _make_binary(_fn))
    setattr(Masked, f"__r{_name}__", _make_binary(_fn, reflected=True))
    setattr(Masked, f"__i{_name}__", _make_inplace(_fn))
for _name, _fn in (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge),
                   ("eq", operator.eq), ("ne", operator.ne)):
    setattr(Masked, f"__{_name}__", _make_binary(_fn))
for _name, _fn in (("neg", operator.neg), ("pos", operator.pos), ("abs", operator.abs),
                   ("invert", operator.invert)):
    setattr(Masked, f"__{_name}__", (lambda f: lambda self: Masked(f(self.data), self.windows, self.np_sem))(_fn))


# ----------------------------------------------------------------------------- operations
def elementwise(fn, *operands):
    """``fn(*operands)`` broadcast as NumPy does, windows matched axis by axis."""
    parts = [_parts(o) for o in operands]
    nd = max(len(w) for _, w in parts)
    datas = [d for d, _ in parts]
    wins = [(None,) * (nd - len(w)) + tuple(w) for _, w in parts]
    shapes = [(1,) * (nd - np.ndim(d)) + tuple(np.shape(d)) for d in datas]
    out_windows = []
    for ax in range(nd):
        found = [(k, wins[k][ax]) for k in range(len(parts)) if wins[k][ax] is not None]
        if not found:
            out_windows.append(None)
            continue
        w0 = found[0][1]
        if not all(w.same(w0) for _, w in found):
            _unsupported("two slices of different index-dependent lengths combined")
        if any(wins[k][ax] is None and shapes[k][ax] != 1 for k in range(len(parts))):
            _unsupported("a slice of index-dependent length combined with a fixed-length axis")
        size = min(shapes[k][ax] for k, _ in found)
        for k, _ in found:
            if shapes[k][ax] != size:
                datas[k] = _resize(datas[k], ax - (nd - np.ndim(datas[k])), size)
        out_windows.append(w0)
    return _result(fn(*datas), out_windows, _numpy_semantics(operands))


_FILL = {"sum": 0, "prod": 1, "any": False, "all": True}


def _identity(kind, dtype):
    if kind in _FILL:
        return np.asarray(_FILL[kind]).astype(dtype)
    if dtype.kind == "c":
        _unsupported(f"{kind} of complex values")
    if dtypes.is_float(dtype):
        return np.asarray(-np.inf if kind == "max" else np.inf, dtype)
    if dtype.kind == "b":
        return np.asarray(kind == "min")
    info = np.iinfo(dtype)
    return np.asarray(info.min if kind == "max" else info.max, dtype)


def reduce(m, kind, axis=None, keepdims=False, dtype=None, **kwargs):
    """``m.sum(axis)`` (and prod/max/min/any/all): the outside of each reduced window filled
    with the reduction's identity."""
    if kwargs.get("out") is not None or kwargs.get("where", True) is not True or kwargs.get("initial") is not None:
        _unsupported(f"{kind} with out=, where= or initial=")
    if not isinstance(m, Masked):
        return getattr(jnp, kind)(m, axis=axis, keepdims=keepdims, **({"dtype": dtype} if dtype else {}))
    data = m.data
    axes = tuple(range(m.ndim)) if axis is None else tuple(
        a % m.ndim for a in (axis if isinstance(axis, tuple) else (axis,)))
    if kind in ("max", "min") and any(m.windows[a] is not None and not m.windows[a].never_empty() for a in axes):
        _unsupported(f"{kind} of a slice that is empty in some iterations")
    mask = _full_mask(m.windows, data.shape, axes)
    if mask is not None:
        data = jnp.where(mask, data, _identity(kind, data.dtype))
    out = getattr(jnp, kind)(data, axis=axes, keepdims=keepdims, **({"dtype": dtype} if dtype else {}))
    windows = [None if a in axes else w for a, w in enumerate(m.windows) if keepdims or a not in axes]
    return _result(out, windows, m.np_sem)


def _contracted(da, wa, ax_a, db, wb, ax_b):
    """Both operands zeroed outside the contracted window (their sizes matched)."""
    x, y = wa[ax_a], wb[ax_b]
    if x is None and y is None:
        return da, db
    if x is None or y is None or not x.same(y):
        _unsupported("a contraction over slices of different index-dependent lengths")
    size = min(da.shape[ax_a], db.shape[ax_b])
    mask = x.mask(size)

    def zeroed(d, ax):
        m = jnp.reshape(mask, tuple(size if a == ax else 1 for a in range(d.ndim)))
        return jnp.where(m, _resize(d, ax, size), np.zeros((), d.dtype))
    return zeroed(da, ax_a), zeroed(db, ax_b)


def matmul(a, b):
    """``a @ b`` for operands of one or two axes."""
    da, wa = _parts(a)
    db, wb = _parts(b)
    if not 1 <= np.ndim(da) <= 2 or not 1 <= np.ndim(db) <= 2:
        _unsupported("@ of operands that are not 1-D or 2-D")
    da, db = _contracted(jnp.asarray(da), wa, np.ndim(da) - 1, jnp.asarray(db), wb, 0)
    out = jnp.matmul(da, db)
    windows = (wa[:1] if len(wa) == 2 else ()) + (wb[1:] if len(wb) == 2 else ())
    return _result(out, windows, _numpy_semantics((a, b)))


def dot(a, b, out=None):
    if out is not None:
        _unsupported("np.dot with out=")
    if np.ndim(_parts(a)[0]) == 0 or np.ndim(_parts(b)[0]) == 0:
        return elementwise(operator.mul, a, b)
    return matmul(a, b)


def inner(a, b):
    if np.ndim(_parts(a)[0]) != 1 or np.ndim(_parts(b)[0]) != 1:
        _unsupported("np.inner of operands that are not 1-D")
    return matmul(a, b)


def outer(a, b, out=None):
    if out is not None:
        _unsupported("np.outer with out=")
    for x in (a, b):
        if isinstance(x, Masked) and x.ndim != 1:
            _unsupported("np.outer of a masked operand with more than one axis (NumPy ravels it)")
    a = a if isinstance(a, Masked) else jnp.ravel(_fstate.plain(a))
    b = b if isinstance(b, Masked) else jnp.ravel(_fstate.plain(b))
    (da, wa), (db, wb) = _parts(a), _parts(b)
    out = jnp.reshape(da, (-1, 1)) * jnp.reshape(db, (1, -1))
    return _result(out, (wa[0], wb[0]), _numpy_semantics((a, b)))


def _where(cond, x, y):
    return elementwise(jnp.where, cond, x, y)


def _reduction(kind):
    def fn(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        if kind in ("max", "min", "any", "all") and dtype is not None:
            _unsupported(f"np.{kind} with dtype")
        return reduce(a, kind, axis, keepdims, dtype, out=out, **kwargs)
    return fn


_FUNCTIONS = {"dot": dot, "inner": inner, "outer": outer, "matmul": matmul, "where": _where,
              "sum": _reduction("sum"), "prod": _reduction("prod"), "max": _reduction("max"),
              "amax": _reduction("max"), "min": _reduction("min"), "amin": _reduction("min"),
              "any": _reduction("any"), "all": _reduction("all"),
              "copy": lambda a, *args, **kw: a.copy()}


# ---------------------------------------------------------------------------------- writes
def _fit(value, windows, shape):
    """``value``'s data laid out on a target of ``shape`` whose axes have ``windows``."""
    dv, wv = _parts(value)
    dv = jnp.asarray(dv)
    nd = len(shape)
    if dv.ndim > nd:
        _unsupported("assigning a value with more axes than its target")
    wv = (None,) * (nd - dv.ndim) + tuple(wv)
    dv = jnp.reshape(dv, (1,) * (nd - dv.ndim) + dv.shape)
    for ax in range(nd):
        w, v = windows[ax], wv[ax]
        size = dv.shape[ax]
        if v is None:
            if size != 1 and (w is not None or size != shape[ax]):
                _unsupported("assigning a fixed-length value into a window (or the converse)")
        elif w is None or not w.same(v):
            _unsupported("assigning a window into a target of another length")
        else:
            dv = _resize(dv, ax, shape[ax])
    return jnp.broadcast_to(dv, shape)


def write(x, key, windows, value):
    """``x[key] = value`` inside ``windows`` (the rest of ``x[key]`` unchanged), NumPy array ``x``."""
    cur = _fstate.plain(x)
    target = cur[key]
    new = jnp.where(_full_mask(windows, target.shape), _fit(value, windows, target.shape).astype(x.dtype), target)
    whole = all(isinstance(k, slice) and k == slice(None) for k in key)
    _fstate.write(x, new if whole else cur.at[key].set(new))


# ------------------------------------------------------------------------- Tracer indexing
_PREVIOUS = {}


def _getitem(self, idx):
    if not has_affine_slice(idx):
        return _PREVIOUS["__getitem__"](self, idx)
    key, windows = _parse(self, idx)
    data = _fstate.plain(self)[key]
    if self._np is None:
        return Masked(data, windows, False)
    return Masked(data, windows, True, source=self, key=key, index=idx)


def _setitem(self, idx, value):
    if isinstance(value, Masked) and not has_affine_slice(idx):
        _unsupported("assigning into a fixed-size region")
    if not has_affine_slice(idx):
        return _PREVIOUS["__setitem__"](self, idx, value)
    if self._np is None:
        raise TypeError(IMMUTABLE_MESSAGE.format(type(self)))
    _fstate.check_writable(self, "item assignment")
    if (isinstance(value, Masked) and value._source is self and value._index is idx
            and value._written == self._np.buf.version):
        return            # ``x[idx] op= v``: the in-place operator wrote it already
    key, windows = _parse(self, idx)
    write(self, key, windows, value)


def attach() -> None:
    """Route ``tracer[...]`` with a loop-index-dependent slice here (once)."""
    if _PREVIOUS:
        return
    for name, fn in (("__getitem__", _getitem), ("__setitem__", _setitem)):
        _PREVIOUS[name] = Tracer.__dict__[name]
        fn.__doc__ = _PREVIOUS[name].__doc__
        setattr(Tracer, name, fn)


attach()
