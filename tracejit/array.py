"""``tracejit.Array``: the type of the arrays tracejit returns (JAX's ``jax.Array``, on the CPU).

An :class:`Array` is a read-only NumPy array (an ``ndarray`` subclass), so NumPy
reads it at no cost (``np.asarray(x)`` is a view, never a copy), and it behaves
as JAX's arrays do:

- it is immutable: ``x[0] = 1`` raises JAX's ``TypeError`` (use ``x.at[0].set(1)``),
  ``x += 1`` rebinds ``x`` to a new array, in-place methods (``fill``, ``put``,
  ``resize``, ``partition``) raise, and ``x.sort()`` returns a sorted copy;
- Python operators and array methods (``x + 1``, ``x.sum()``, ``x.T``) return Arrays,
  0-d results included (JAX has no scalars: ``x.sum()`` is a 0-d Array);
- NumPy's own functions (``np.sin(x)``, ``np.concatenate([x, y])``) see a plain
  read-only ``ndarray`` and return NumPy's results, as ``np.sin`` of a ``jax.Array`` does;
- it has JAX's array API: ``.at``, ``block_until_ready``, ``devices``, ``device``,
  ``sharding``, ``addressable_data``, ``addressable_shards``, ``copy_to_host_async``,
  ``delete``/``is_deleted``, ``is_fully_addressable``, ``is_fully_replicated``, ``weak_type``.

``isinstance(t, tracejit.Array)`` is also true for a traced array inside ``jit``,
``grad`` or ``vmap``, as ``isinstance(t, jax.Array)`` is in JAX.

``jit`` results and the results of the public functions of ``tracejit.numpy``,
``lax``, ``nn``, ``scipy`` and ``random`` called outside a trace are Arrays
(:func:`eager_results` wraps those functions). A full integer index (``x[0]`` of a
vector) gives a NumPy scalar, at NumPy's speed; JAX gives a 0-d Array.

Examples
--------
>>> import tracejit, tracejit.numpy as jnp
>>> x = jnp.arange(3.0)
>>> x
Array([0., 1., 2.])
>>> x.at[1].set(7.0)
Array([0., 7., 2.])
>>> x[0] = 5.0
Traceback (most recent call last):
    ...
TypeError: 'tracejit.Array' object does not support item assignment. JAX arrays are immutable. Instead of ``x[idx] = y``, use ``x = x.at[idx].set(y)`` or another .at[] method: https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html
>>> isinstance(x, tracejit.Array), type(x + 1).__name__, type(x.sum()).__name__
(True, 'Array', 'Array')
"""
from __future__ import annotations

import functools
import types
import weakref

import numpy as np

from tracejit.config import config
from tracejit.core import dtypes
from tracejit.core.primitive import impl_rules
from tracejit.core.pytree import tree_map
from tracejit.core.storage_dtypes import has_storage_operand
from tracejit.core.trace import EVAL_TRACE, current_trace
from tracejit.core.tracer import Tracer
from tracejit.ops.elementwise import convert_element_type_p
from tracejit.device_types import Device, Shard, SingleDeviceSharding, _check_placement

__all__ = ["Array", "arrays_in", "as_array_result", "eager_results", "eager_values", "wrap_module_functions",
           "wrap_package_faces"]

_IMMUTABLE = ("'tracejit.Array' object does not support item assignment. JAX arrays are immutable. "
              "Instead of ``x[idx] = y``, use ``x = x.at[idx].set(y)`` or another .at[] method: "
              "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html")


class _ArrayMeta(type):
    """``isinstance(tracer, Array)`` holds, as for ``jax.Array`` and JAX's tracers."""

    def __instancecheck__(cls, obj):
        return type.__instancecheck__(cls, obj) or (cls is Array and isinstance(obj, Tracer))


class Array(np.ndarray, metaclass=_ArrayMeta):
    """JAX's array type: an immutable NumPy array in host memory (see the module docstring).

    Create one with any ``tracejit.numpy`` function, ``jit``, or
    ``tracejit.device_put``; ``np.asarray`` gives back a read-only NumPy view.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> y = tracejit.jit(lambda a: a * 2)(np.ones(2))
    >>> type(y).__name__, y.devices(), np.asarray(y).flags.writeable
    ('Array', {CpuDevice(id=0)}, False)
    """

    # -- NumPy's protocols: NumPy functions compute on plain ndarray views ------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "at" and type(inputs[0]) is Array:
            raise TypeError(_IMMUTABLE)       # ufunc.at writes its first operand in place
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_plain(o) for o in out)
        inputs = tuple(_plain(i) for i in inputs)
        if out is None and method != "at" and "dtype" not in kwargs and _bfloat16_operation(inputs):
            return _in_float32(getattr(ufunc, method), inputs, kwargs)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return func(*_plain_tree(args), **{k: _plain_tree(v) for k, v in kwargs.items()})

    # -- immutability ---------------------------------------------------------------
    def __setitem__(self, index, value):
        raise TypeError(_IMMUTABLE)

    def _refuse_in_place(self, *args, **kwargs):
        raise TypeError(_IMMUTABLE)

    fill = put = resize = partition = itemset = _refuse_in_place

    # ``sort`` (a sorted copy) and ``at`` (functional updates) compute with tracejit.numpy, which
    # is above this module: tracejit/numpy/array_methods.py attaches them.

    # -- JAX's array API -------------------------------------------------------------
    def block_until_ready(self):
        """Results are computed synchronously: returns the array itself."""
        return self

    def copy_to_host_async(self):
        """The array already is in host memory: nothing to do."""

    def devices(self) -> set:
        """The set of devices holding the array: the CPU device."""
        return {_cpu_device()}

    @property
    def device(self):
        """The device holding the array (the CPU device)."""
        return _cpu_device()

    @property
    def sharding(self):
        """A single-device sharding on the CPU device."""
        return SingleDeviceSharding(_cpu_device())

    @property
    def addressable_shards(self) -> list:
        """One shard holding the whole array."""
        return [Shard(_cpu_device(), tuple(slice(None) for _ in self.shape), self)]

    global_shards = addressable_shards

    def addressable_data(self, index: int):
        """The data of shard ``index``; the only shard is 0, the whole array."""
        if index != 0:
            raise IndexError(f"addressable_data: index {index} out of range (one shard on the CPU device)")
        return self

    # The runtime may write a donated Array's memory although the Array is read-only (its users
    # cannot write it; donating it hands the memory to the call): backends/cpu/runtime.py.
    _tracejit_owns_memory = True
    is_fully_addressable = True
    is_fully_replicated = True
    committed = False
    weak_type = False

    def on_device_size_in_bytes(self) -> int:
        """Bytes the array's elements take (``nbytes``)."""
        return int(self.nbytes)

    def unsafe_buffer_pointer(self) -> int:
        """Address of the first element."""
        return int(self.__array_interface__["data"][0])

    def to_device(self, device, *, stream=None):
        """Array-API placement: only the CPU device exists, so the array itself."""
        _check_placement(device, "device")
        return self

    def delete(self) -> None:
        """Mark the array deleted: passing it to a jitted function raises (its memory stays NumPy's)."""
        mark_deleted(self)

    def is_deleted(self) -> bool:
        """Whether :meth:`delete` was called or the array was donated to a jitted call."""
        ref = _donated.get(id(self))
        return ref is not None and ref() is self

    def __reduce__(self):
        # Pickle as an Array, read-only again when loaded.
        return (_unpickle, (_plain(self).copy(),))


def _unpickle(data):
    return as_array_result(data)


def _cpu_device():
    return Device()


# -- deletion and donation marks ------------------------------------------------------------
# Arrays whose memory a call with donate_argnums gave to its output, or that were deleted with
# Array.delete(): {id(array): weak reference}. Such an array no longer holds its own value: passing
# it to a jitted call raises, as JAX does for a deleted (donated) array (the CPU runtime checks,
# backends/cpu/runtime.py). The mark belongs to the array, so it lives here, below the runtime that
# reads it; it applies to any NumPy array (a donated np.ndarray too). An entry leaves with its array.
_donated: dict = {}


class _DonatedRef(weakref.ref):
    __slots__ = ("key", "why", "advice")


def _forget_donated(ref) -> None:
    if _donated.get(ref.key) is ref:
        del _donated[ref.key]


def _mark_donated(a, why: str, advice: str) -> None:
    """Make passing ``a`` to a jitted function raise: ``why`` it no longer holds its own value, and
    ``advice`` on what to pass instead, both said in the error."""
    ref = _DonatedRef(a, _forget_donated)
    ref.key = key = id(a)
    ref.why, ref.advice = why, advice
    _donated[key] = ref


def mark_donated_to(a, name: str) -> None:
    """Mark ``a`` as donated to ``jit(name)``, which wrote its result into the array's memory.

    Parameters
    ----------
    a : numpy.ndarray
        The donated argument (a :class:`Array` or a plain NumPy array).
    name : str
        The jitted function's name, quoted in the error a later call raises.
    """
    _mark_donated(a, f"it was donated to jit({name}) (donate_argnums/donate_argnames), which wrote its "
                     "result into the array's memory, so the array no longer holds its own value",
                  "Use that call's result instead, pass a copy (f(x.copy())), or don't donate the argument.")


def mark_deleted(a) -> None:
    """Mark ``a`` as deleted (``a.delete()``, JAX's explicit deletion): passing it to a jitted call raises.

    Parameters
    ----------
    a : numpy.ndarray
        The deleted array.
    """
    _mark_donated(a, "it was deleted with Array.delete()",
                  "Pass a copy made before deleting it, or don't delete it.")


# ``ndarray.view`` as a plain function: ``_view_as(x, Array)`` reinterprets x's memory as another
# ndarray subclass without copying (the fast way to change an array's type).
_view_as = np.ndarray.view


def as_array_result(x):
    """``x`` as a read-only :class:`Array` when it is a NumPy array or scalar; else ``x`` itself."""
    t = type(x)
    if t is np.ndarray:
        a = _view_as(x, Array)
    elif t is Array:
        a = x                       # maybe a copy NumPy made of an Array (astype, copy, fancy indexing)
    elif isinstance(x, np.generic):
        a = _view_as(np.asarray(x), Array)
    else:
        return x
    if config._x64_maybe_off and dtypes.narrow(a.dtype) != a.dtype:
        a = _view_as(a.astype(dtypes.narrow(a.dtype)), Array)    # enable_x64 off: 32-bit results
    a.setflags(write=False)
    return a


def operand_result(x):
    """The result of a ``jnp`` function that may hand back its NumPy operand itself (``positive``,
    ``real`` of a real constant under jit) as a JAX array: read-only, and a copy when the operand is
    writable (the JAX array must not change when the NumPy array is written later); anything else
    unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.ones(2)
    >>> r = operand_result(a)
    >>> a[0] = 5.0
    >>> r
    Array([1., 1.])
    """
    if type(x) is np.ndarray:
        return as_array_result(x.copy() if x.flags.writeable else x)
    return x


def arrays_in(out):
    """Every NumPy array or scalar leaf of the pytree ``out`` as a read-only :class:`Array`.

    Examples
    --------
    >>> import numpy as np
    >>> arrays_in({"w": np.ones(2), "n": 3})
    {'n': 3, 'w': Array([1., 1.])}
    """
    t = type(out)
    if t is np.ndarray or t is Array or isinstance(out, np.generic):
        return as_array_result(out)
    if isinstance(out, Tracer) or out is None or t in (int, float, bool, complex, str):
        return out
    return tree_map(as_array_result, out)


def _plain(x):
    return _view_as(x, np.ndarray) if type(x) is Array else x


def _bfloat16_operation(inputs) -> bool:
    """Whether a NumPy operation on ``inputs`` has a bfloat16 result by NumPy's promotion."""
    if not has_storage_operand(inputs):
        return False
    try:
        return np.result_type(*inputs) == dtypes.bfloat16
    except TypeError:
        return False


def _in_float32(fn, inputs, kwargs):
    """A bfloat16 operation computed as tracejit computes it (core/storage_dtypes.py): on float32,
    rounded once. ml_dtypes' own loops would accumulate reductions in bfloat16 and give float32
    products (``@``)."""
    wide = [np.asarray(i, np.float32) if getattr(i, "dtype", None) == dtypes.bfloat16 else i for i in inputs]
    result = fn(*wide, **kwargs)

    def narrow(r):
        return r.astype(dtypes.bfloat16) if getattr(r, "dtype", None) == np.float32 else r
    return tuple(narrow(r) for r in result) if isinstance(result, tuple) else narrow(result)


def _plain_tree(x):
    t = type(x)
    if t is Array:
        return _plain(x)
    if t is tuple or t is list:
        return t(_plain_tree(v) for v in x)
    return x


# -- operators and methods that return Arrays --------------------------------------------
def _returning_arrays(base_method):
    widen = base_method.__name__ in _FLOAT32_METHODS

    def method(self, *args, **kwargs):
        if widen and "dtype" not in kwargs and "out" not in kwargs and _bfloat16_operation((self,) + args):
            return arrays_in(_in_float32(base_method, (_plain(self),) + args, kwargs))
        return arrays_in(base_method(self, *args, **kwargs))
    method.__name__ = base_method.__name__
    method.__doc__ = f"``ndarray.{base_method.__name__}``, with the result as an Array."
    return method


def _rebinding(binary):
    # ``x += y`` on a JAX array binds ``x`` to ``x + y``; the old array is unchanged.
    def method(self, other):
        return as_array_result(binary(_plain(self), other))
    method.__name__ = binary.__name__.replace("__", "__i", 1)
    return method


_BINARY = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
           "lshift", "rshift"]
_OPERATORS = ([f"__{n}__" for n in _BINARY] + [f"__r{n}__" for n in _BINARY]
              + ["__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__",
                 "__neg__", "__pos__", "__abs__", "__invert__"])
# Methods that compute (NumPy's reductions reach ml_dtypes' bfloat16 loops without __array_ufunc__).
_FLOAT32_METHODS = {"cumprod", "cumsum", "dot", "mean", "prod", "std", "sum", "trace", "var"}
_METHODS = ["all", "any", "argmax", "argmin", "argsort", "astype", "choose", "clip", "compress", "conj",
            "conjugate", "copy", "cumprod", "cumsum", "diagonal", "dot", "flatten", "max", "mean", "min",
            "prod", "ravel", "repeat", "reshape", "round", "searchsorted", "squeeze", "std", "sum",
            "swapaxes", "take", "trace", "transpose", "var", "nonzero", "__divmod__", "__rdivmod__"]

for _name in _OPERATORS + _METHODS:
    setattr(Array, _name, _returning_arrays(getattr(np.ndarray, _name)))
for _name in _BINARY:
    setattr(Array, f"__i{_name}__", _rebinding(getattr(np.ndarray, f"__{_name}__")))


def _astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True, _base=Array.astype):
    """``ndarray.astype``; a bfloat16 array converts as its float32 value does (conversion's rule,
    the same under ``jit``), where ml_dtypes' own casts differ (NaN to integers gives 0)."""
    if self.dtype == dtypes.bfloat16 and dtype is not None and np.dtype(dtype) != self.dtype \
            and (order, casting, subok) == ("K", "unsafe", True):
        return arrays_in(impl_rules[convert_element_type_p](_plain(self), new_dtype=np.dtype(dtype))[0])
    return _base(self, dtype, order=order, casting=casting, subok=subok, copy=copy)


Array.astype = _astype


# (has_index, getitem) for indices NumPy does not know: ``jax.ds`` Slices, registered by
# tracejit/numpy/dynamic_slices.py (a layer above this one).
EXTRA_INDEXING = []


def _getitem(self, index, _base=np.ndarray.__getitem__):
    try:
        out = _base(self, index)
    except IndexError:
        for has_index, getitem in EXTRA_INDEXING:
            if has_index(index):
                return as_array_result(getitem(self, index))
        raise
    # A full integer index gives a NumPy scalar (NumPy's speed); arrays come back as Arrays.
    return as_array_result(out) if isinstance(out, np.ndarray) else out


Array.__getitem__ = _getitem
del _name


class _ResultsAsArrays:
    """Forwards to an object (``x.at``, ``x.at[idx]``); what its methods return becomes Arrays."""

    __slots__ = ("_target",)

    def __init__(self, target):
        self._target = target

    def __getitem__(self, index):
        return _ResultsAsArrays(self._target[index])

    def __getattr__(self, name):
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            return arrays_in(attr(*args, **kwargs))
        return call

    def __repr__(self):
        return repr(self._target)


# -- the public functions of the package faces ------------------------------------------
def eager_results(fn, post=None):
    """Wrap ``fn`` so that, called outside any trace, its NumPy results come back as Arrays.

    Under ``jit``/``grad``/``vmap`` the wrapper returns ``fn``'s tracers unchanged (and its NumPy
    results, computed from constants, as Arrays too). ``post``, when
    given, is applied to every result first (``tracejit.numpy`` makes weakly typed scalars strong).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.array import eager_results
    >>> eager_results(np.ones)(2)
    Array([1., 1.])
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        if post is not None:
            out = post(out)
        writable = [a for a in (*args, *kwargs.values()) if type(a) is np.ndarray and a.flags.writeable]
        if writable:
            out = _detached(out, writable)
        # Under a trace too: a value computed from constants there (jnp.zeros(3) inside grad) is a
        # concrete Array, with .at and the rest of JAX's array API; tracers pass through.
        return arrays_in(out)
    wrapper.__tracejit_eager_results__ = True
    return wrapper


def _detached(out, writable):
    """``out`` with every NumPy view of a writable argument copied: a JAX array does not change
    when the NumPy array it was made from is written later (``v = jnp.reshape(x, s); x[0] = 5``)."""
    def leaf(r):
        if type(r) is np.ndarray and any(r is a or r.base is not None and np.may_share_memory(r, a) for a in writable):
            return r.copy()
        return r
    if type(out) is np.ndarray:
        return leaf(out)
    if type(out) in (tuple, list):
        return type(out)(leaf(r) for r in out)
    return out


def eager_values(out):
    """``arrays_in(out)`` outside any trace; ``out`` unchanged under a trace."""
    return arrays_in(out) if current_trace() is EVAL_TRACE else out


def wrap_module_functions(namespace: dict, names, extra_types: tuple = ()) -> None:
    """Replace each plain Python function among ``names`` in ``namespace`` by :func:`eager_results` of it.

    Classes, dtypes, constants and submodules are left alone.

    Parameters
    ----------
    namespace : dict
        A module's namespace (``vars(module)``), changed in place.
    names : iterable of str
        The names to consider.
    extra_types : tuple of type
        Callable types to wrap besides functions and ``functools.partial`` objects (the package
        face passes ``custom_jvp`` and ``custom_vjp``, which are defined above this module).

    Examples
    --------
    >>> import numpy as np
    >>> ns = {"zeros": np.zeros, "pi": np.pi, "f": lambda n: np.zeros(n)}
    >>> wrap_module_functions(ns, ["zeros", "pi", "f"])
    >>> ns["pi"], type(ns["f"](2)).__name__, ns["zeros"] is np.zeros
    (3.141592653589793, 'Array', True)
    """
    kinds = (types.FunctionType, functools.partial) + tuple(extra_types)
    for name in names:
        fn = namespace.get(name)
        if isinstance(fn, kinds) \
                and not getattr(fn, "__tracejit_eager_results__", False):
            namespace[name] = eager_results(fn)


def wrap_package_faces(modules, extra_types: tuple = ()) -> None:
    """Wrap the public functions (``__all__``, defined in tracejit) of each module with :func:`eager_results`.

    Parameters
    ----------
    modules : iterable of module
        The package faces (``tracejit.lax``, ``tracejit.random``, ...), changed in place.
    extra_types : tuple of type
        Callable types to wrap besides functions: see :func:`wrap_module_functions`.
    """
    for module in modules:
        namespace = vars(module)
        names = getattr(module, "__all__", None) or [n for n in namespace if not n.startswith("_")]
        wrap_module_functions(namespace, [n for n in names if _defined_in_tracejit(namespace.get(n))], extra_types)


def _defined_in_tracejit(fn) -> bool:
    return (getattr(fn, "__module__", None) or "").startswith("tracejit.")
