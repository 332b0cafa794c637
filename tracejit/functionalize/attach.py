"""NumPy semantics on the tracer's operators, methods and NumPy protocols.

``tracejit/numpy/array_methods.py`` attaches JAX's behaviour to :class:`Tracer`; this module
wraps those methods so that a NumPy-semantics tracer (``t._np is not None``) behaves like an
``np.ndarray``: its results are NumPy arrays (new bases, or views that alias it), ``x[i] = v``,
``x += y``, ``out=``, ``fill``, ``sort``, ``put`` write in place. A JAX-semantics tracer takes
the original path unchanged (one ``_np is None`` test).
"""
from __future__ import annotations

import numpy as np

from tracejit.array import Array
from tracejit.core.tracer import IMMUTABLE_MESSAGE, Tracer
from tracejit import numpy as jnp
from tracejit.functionalize import mutators, setitem, state

_ORIGINAL = {}


def _original(name):
    fn = _ORIGINAL.get(name)
    if fn is None:
        fn = _ORIGINAL[name] = Tracer.__dict__[name]
    return fn


def _numpy_operands(args) -> bool:
    """Whether NumPy semantics apply to an operation on ``args``: every tracer among them is a
    NumPy array and none is a tracejit.Array (``ndarray + jax.Array`` is a jax.Array)."""
    for a in args:
        if isinstance(a, Tracer):
            if a._np is None:
                return False
        elif isinstance(a, Array):
            return False
    return True


def _set(name, fn):
    fn.__name__ = name
    fn.__qualname__ = f"Tracer.{name}"
    fn.__doc__ = getattr(_original(name), "__doc__", None) if name in Tracer.__dict__ else fn.__doc__
    setattr(Tracer, name, fn)


# ------------------------------------------------------------------------ operators and methods
def _wrap_result(name):
    orig = _original(name)

    def method(self, *args, **kwargs):
        out = orig(self, *args, **kwargs)
        if self._np is None or out is NotImplemented or not _numpy_operands(args):
            return out
        return state.as_numpy_results(out)
    _set(name, method)


_INPLACE = {"add": "__add__", "sub": "__sub__", "mul": "__mul__", "truediv": "__truediv__",
            "floordiv": "__floordiv__", "mod": "__mod__", "pow": "__pow__", "matmul": "__matmul__",
            "and": "__and__", "or": "__or__", "xor": "__xor__", "lshift": "__lshift__",
            "rshift": "__rshift__"}
_UFUNC_OF = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
             "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
             "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift",
             "rshift": "right_shift"}


def _inplace(short):
    binary = _ORIGINAL.get(_INPLACE[short]) or _original(_INPLACE[short])

    def method(self, other):
        if self._np is None:
            return NotImplemented     # JAX semantics: Python rebinds the name to ``self op other``
        out = binary(state.plain(self), state.plain(other))
        if out is NotImplemented:
            return out
        # NumPy's rule for in-place operators: the result must cast to self's dtype ('same_kind').
        mutators.cast_check(out.dtype, self.dtype, "same_kind", _UFUNC_OF[short])
        if np.broadcast_shapes(out.shape, self.shape) != self.shape:
            raise ValueError(f"non-broadcastable output operand with shape {self.shape} doesn't "
                             f"match the broadcast shape {out.shape}")
        state.assign(self, out)
        return self
    _set(f"__i{short}__", method)


def _getitem(self, idx):
    if self._np is None:
        return _original("__getitem__")(self, idx)
    return setitem.getitem(self, idx, _original("__getitem__"))


def _setitem(self, idx, value):
    if self._np is None:
        raise TypeError(IMMUTABLE_MESSAGE.format(type(self)))
    setitem.setitem(self, idx, value)


def _view_method(name, kind, make_arg):
    orig = _original(name)

    def method(self, *args, **kwargs):
        if self._np is None:
            return orig(self, *args, **kwargs)
        out = orig(state.plain(self), *args, **kwargs)
        if kwargs.get("order", "C") != "C":
            return state.make_fn_view(self, None, out, ambiguous=True)
        return state.make_view(self, kind, make_arg(self, out, *args, **kwargs), out)
    _set(name, method)


def _reshape_arg(self, out, *a, **k):
    return tuple(out.shape)


def _transpose_arg(self, out, *axes, **k):
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], (int, np.integer))):
        axes = axes[0]
    if not axes:
        return tuple(range(self.ndim))[::-1]
    return tuple(int(a) % self.ndim for a in axes)


def _swapaxes_arg(self, out, a, b):
    axes = list(range(self.ndim))
    a, b = a % self.ndim, b % self.ndim
    axes[a], axes[b] = axes[b], axes[a]
    return tuple(axes)


def _T(self):
    out = jnp.transpose(state.plain(self)) if self._np is not None else jnp.transpose(self)
    if self._np is None:
        return out
    return state.make_view(self, "transpose", tuple(range(self.ndim))[::-1], out)


def _mT(self):
    if self._np is None:
        return jnp.swapaxes(self, -1, -2)
    return state.make_view(self, "transpose", _swapaxes_arg(self, None, -1, -2),
                           jnp.swapaxes(state.plain(self), -1, -2))


def _real(self):
    if self._np is None:
        return jnp.real(self)
    if np.dtype(self.dtype).kind != "c":      # NumPy: ``x.real`` of a real array is x itself, a view
        return state.make_view(self, "transpose", tuple(range(self.ndim)), state.plain(self))
    return state.make_fn_view(self, jnp.real, jnp.real(state.plain(self)))


def _imag(self):
    if self._np is None:
        return jnp.imag(self)
    if np.dtype(self.dtype).kind != "c":      # NumPy: a read-only array of zeros
        return state.make_fn_view(self, jnp.imag, jnp.imag(state.plain(self)), readonly=True)
    return state.make_fn_view(self, jnp.imag, jnp.imag(state.plain(self)))


def _copy_method(self, *args, **kwargs):
    out = _original("copy")(self, *args, **kwargs)
    return out if self._np is None else state.new_base(out)


def _astype(self, dtype, *args, copy=True, **kwargs):
    if self._np is not None and not copy and np.dtype(dtype) == self.dtype:
        return self                    # NumPy: no copy needed, the array itself
    out = _original("astype")(self, dtype, *args, **kwargs)
    return out if self._np is None else state.new_base(out)


def _sort(self, axis=-1, kind=None, order=None, **kwargs):
    if self._np is None:
        return _original("sort")(self, axis)
    mutators.sort(self, axis, kind, order)
    return None


def _fill(self, value):
    """``ndarray.fill``: set every element (NumPy arrays under jit; JAX arrays are immutable)."""
    mutators.fill(self, value)


def _put(self, ind, v, mode="raise"):
    """``ndarray.put``: ``a.flat[ind] = v`` (NumPy arrays under jit; JAX arrays are immutable)."""
    mutators.put(self, ind, v, mode)


# ------------------------------------------------------------------------------ NumPy protocols
def _moveaxis_perm(ndim, source, destination):
    source = [s % ndim for s in np.atleast_1d(source)]
    destination = [d % ndim for d in np.atleast_1d(destination)]
    order = [n for n in range(ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return tuple(order)


def _view_function(func, a, args, kwargs, out):
    """The view NumPy's ``func(a, ...)`` returns, or None when ``func`` makes a new array."""
    name = func.__name__
    if name in ("reshape", "ravel") and kwargs.get("order", "C") != "C":
        return state.make_fn_view(a, None, out, ambiguous=True)
    if name in ("reshape", "squeeze", "expand_dims", "atleast_1d", "atleast_2d", "atleast_3d", "ravel"):
        return state.make_view(a, "reshape", tuple(out.shape), out)
    if name == "transpose":
        axes = args[0] if args else kwargs.get("axes")
        return state.make_view(a, "transpose", _transpose_arg(a, out, axes) if axes is not None
                               else tuple(range(a.ndim))[::-1], out)
    if name == "swapaxes":
        return state.make_view(a, "transpose", _swapaxes_arg(a, out, *args, **kwargs), out)
    if name == "moveaxis":
        return state.make_view(a, "transpose", _moveaxis_perm(a.ndim, *args, **kwargs), out)
    if name in ("asarray", "asanyarray") and out.dtype == a.dtype:
        return a                           # NumPy: the array itself
    if name in _FN_VIEWS:
        readonly = name in ("diagonal", "broadcast_to")
        fn = _FN_VIEWS[name]
        return state.make_fn_view(a, lambda v: fn(v, *args, **kwargs), out, readonly=readonly,
                                  probe_fn=lambda p: func(p, *args, **kwargs))
    return None


# Functions that return views NumPy lets you write through (flip) or not (diagonal, broadcast_to):
# re-derived from their base after writes; writing into them raises.
_FN_VIEWS = {"flip": jnp.flip, "fliplr": jnp.fliplr, "flipud": jnp.flipud, "rot90": jnp.rot90,
             "diagonal": jnp.diagonal, "broadcast_to": jnp.broadcast_to}
_ACCUMULATE_IN_OUT = ("sum", "prod", "cumsum", "cumprod", "nansum", "nanprod")


def _array_function(self, func, types, args, kwargs):
    impl = mutators.FUNCTIONS.get(func)
    if impl is not None:
        return impl(*args, **kwargs)
    out = kwargs.pop("out", None)
    if out is not None and func.__name__ in _ACCUMULATE_IN_OUT and kwargs.get("dtype") is None:
        kwargs["dtype"] = out.dtype       # NumPy accumulates in out's dtype
    plain_args = [state.plain(a) for a in args]
    result = _original("__array_function__")(self, func, types, plain_args, kwargs)
    if out is not None:
        return mutators.write_outputs((out,), result, "unsafe", func.__name__)
    if args and state.is_numpy(args[0]) and isinstance(result, Tracer):
        view = _view_function(func, args[0], args[1:], kwargs, result)
        if view is not None:
            return view
    return state.as_numpy_results(result, self._trace)


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    out = kwargs.pop("out", None)
    casting = kwargs.pop("casting", "same_kind")
    if out is not None:
        out = out if isinstance(out, tuple) else (out,)
        if method == "reduce" and kwargs.get("dtype") is None and out[0] is not None:
            kwargs["dtype"] = out[0].dtype      # NumPy reduces in out's dtype
    if method == "at":
        target = mutators.target(inputs[0], f"np.{ufunc.__name__}.at")
        rest = [state.plain(i) for i in inputs[1:]]
        idx, vals = rest[0], (rest[1] if len(rest) > 1 else None)
        upd = getattr(state.plain(target).at[idx], {"add": "add", "multiply": "multiply",
                                                     "minimum": "min", "maximum": "max"}.get(ufunc.__name__, "?"), None)
        if upd is None or vals is None:
            raise NotImplementedError(f"np.{ufunc.__name__}.at is not supported on traced arrays "
                                      "(add, multiply, minimum and maximum are)")
        state.write(target, upd(jnp.asarray(vals).astype(target.dtype)))
        return None
    result = _original("__array_ufunc__")(self, ufunc, method, *[state.plain(i) for i in inputs], **kwargs)
    if out is not None and any(o is not None for o in out):
        return mutators.write_outputs(out, result, casting, ufunc.__name__)
    return state.as_numpy_results(result, self._trace)


# ------------------------------------------------------------------------------------ attaching
def attach() -> None:
    """Install NumPy semantics on :class:`Tracer` (once, when tracejit.functionalize is imported)."""
    if "__setitem__" in _ORIGINAL:
        return
    for name in ("__setitem__", "__getitem__", "__array_ufunc__", "__array_function__", "T", "mT",
                 "real", "imag", "sort", "copy", "astype", "reshape", "transpose", "swapaxes",
                 "squeeze", "ravel"):
        _original(name)
    for short in _INPLACE:
        _original(_INPLACE[short])
    ops = [n for n in Tracer.__dict__ if n.startswith("__") and n.endswith("__") and n[2:-2] in (
        set(_INPLACE) | {f"r{s}" for s in _INPLACE} | {"neg", "pos", "abs", "invert", "eq", "ne", "lt",
                                                        "le", "gt", "ge", "divmod", "rdivmod"})]
    methods = ("sum", "prod", "mean", "var", "std", "max", "min", "argmax", "argmin", "all", "any",
               "cumsum", "cumprod", "flatten", "clip", "round", "conj", "conjugate", "dot", "argsort",
               "trace", "nonzero", "take", "repeat")
    for name in ops + [m for m in methods if m in Tracer.__dict__]:
        _wrap_result(name)
    for short in _INPLACE:
        _inplace(short)
    _set("__getitem__", _getitem)
    _set("__setitem__", _setitem)
    _view_method("reshape", "reshape", _reshape_arg)
    _view_method("ravel", "reshape", _reshape_arg)
    _view_method("squeeze", "reshape", _reshape_arg)
    _view_method("transpose", "transpose", _transpose_arg)
    _view_method("swapaxes", "transpose", _swapaxes_arg)
    _set("__array_function__", _array_function)
    _set("__array_ufunc__", _array_ufunc)
    setattr(Tracer, "T", property(_T, doc=_original("T").__doc__))
    setattr(Tracer, "mT", property(_mT, doc=_original("mT").__doc__))
    setattr(Tracer, "real", property(_real, doc=_original("real").__doc__))
    setattr(Tracer, "imag", property(_imag, doc=_original("imag").__doc__))
    _set("sort", _sort)
    _set("copy", _copy_method)
    _set("astype", _astype)
    _set("fill", _fill)
    _set("put", _put)
