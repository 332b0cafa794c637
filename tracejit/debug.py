"""``tracejit.debug``: printing and callbacks from traced code (``jax.debug``).

``debug.print`` and ``debug.callback`` bind the effectful ``debug_callback`` primitive
(:mod:`tracejit.ops.callback`): eagerly the callback runs at once; under ``jit`` it is a
host step of the compiled program, run at its place in program order every call (also in
loop bodies and ``cond`` branches; never removed or merged by the compiler, even when it
is the only thing a loop does). Under ``vmap`` it runs once per example, in order; under
``grad`` / ``jvp`` it sees the primal values and runs once (the backward pass never runs
it). Every callback is ordered here, ``ordered=True`` or not.

The sharding helpers describe the one CPU device: ``inspect_array_sharding`` calls its
callback with ``SingleDeviceSharding`` at once (under ``jit``, when tracing: JAX calls it
when compiling), ``visualize_*`` print a plain-text box. ``breakpoint`` works eagerly only.

Examples
--------
>>> import numpy as np, tracejit
>>> @tracejit.jit
... def f(x):
...     tracejit.debug.print("x = {x}, sum = {}", x.sum(), x=x)
...     return x * 2
>>> _ = f(np.arange(3.0))
x = [0. 1. 2.], sum = 3.0
"""
from __future__ import annotations

import builtins
import functools
import logging
import string
import sys

import numpy as np

from tracejit.core.pytree import tree_leaves
from tracejit.core.trace import EVAL_TRACE, current_trace
from tracejit.core.tracer import Tracer
from tracejit.ops.callback import FlatCallback, debug_callback_p, split_callback_args

__all__ = ["callback", "print", "log", "DebugEffect", "OrderedDebugEffect", "visualize_array_sharding",
           "inspect_array_sharding", "visualize_sharding", "breakpoint"]

logger = logging.getLogger("tracejit.debug")


class DebugEffect:
    """The effect of an unordered debug callback (``jax.debug.DebugEffect``); a label here."""

    def __str__(self):
        return "Debug"

    __repr__ = __str__


class OrderedDebugEffect:
    """The effect of an ordered debug callback (``jax.debug.OrderedDebugEffect``); a label here:
    tracejit runs every debug callback in program order."""

    def __str__(self):
        return "OrderedDebug"

    __repr__ = __str__


debug_effect = DebugEffect()
ordered_debug_effect = OrderedDebugEffect()


def _bind(fun, args, kwargs, ordered, partitioned, label=None) -> None:
    in_tree, dynamic, static = split_callback_args(args, kwargs)
    debug_callback_p.bind(*dynamic, callback=FlatCallback(fun, in_tree, static, label), ordered=bool(ordered),
                          partitioned=bool(partitioned))


def callback(callback=None, *args, ordered: bool = False, partitioned: bool = False, **kwargs):
    """Call ``callback(*args, **kwargs)`` on the host for its side effect (``jax.debug.callback``).

    Array leaves of the arguments arrive as NumPy arrays (the callback's own copies), other
    leaves as they are; the return value is ignored. See the module docstring for when it runs.

    Parameters
    ----------
    callback : callable, optional
        Without it, returns a function taking ``(callback, *args, **kwargs)`` (JAX's two-call form).
    *args, **kwargs
        The callback's arguments (pytrees).
    ordered : bool
        Accepted; every debug callback is ordered here.
    partitioned : bool
        Accepted; one device, so there are no shards.

    Returns
    -------
    None

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> seen = []
    >>> f = tracejit.jit(lambda x: tracejit.debug.callback(seen.append, x) or x + 1)
    >>> f(np.ones(2))
    Array([2., 2.])
    >>> seen
    [array([1., 1.])]
    """
    def _callback(fun, *c_args, **c_kwargs):
        if not callable(fun):
            raise TypeError(f"first argument to tracejit.debug.callback must be callable, but got an object "
                            f"of type {type(fun)}")
        _bind(fun, c_args, c_kwargs, ordered, partitioned)

    if callback is not None:
        _callback(callback, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(f"debug_callback received unexpected arguments in the two-call form: {args=} {kwargs=}")
    return _callback


class _FormatChecker(string.Formatter):
    """JAX's format check: every argument is used, no field is formatted."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        unused_args = [arg for i, arg in enumerate(args) if i not in used_args]
        unused_kwargs = [k for k in kwargs if k not in used_args]
        if unused_args:
            raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused_args}")
        if unused_kwargs:
            raise ValueError(f"Unused keyword arguments to `jax.debug.print`: {unused_kwargs}. You may be passing "
                             "an f-string (i.e, `f\"{x}\"`) into `jax.debug.print` and instead should pass in a "
                             "regular string.")


_checker = _FormatChecker()


def _format_and_emit(fmt, np_printoptions, has_placeholders, use_logging, *args, **kwargs):
    if has_placeholders:
        with np.printoptions(**np_printoptions):
            msg = fmt.format(*args, **kwargs)
    else:
        msg = " ".join((fmt, *(str(a) for a in args)))
    if use_logging:
        logger.info(msg)
    else:
        sys.stdout.write(msg + "\n")     # looked up per call: redirections (capsys) see it


def _print(fmt=None, *args, ordered: bool = False, partitioned: bool = False, skip_format_check: bool = False,
           _use_logging: bool = False, **kwargs):
    def _debug_print(fmt, *c_args, **c_kwargs):
        if not skip_format_check:
            _checker.format(fmt, *c_args, **c_kwargs)
        has_placeholders = False
        if fmt:
            _, field_name, *_ = next(iter(string.Formatter().parse(fmt)))
            has_placeholders = field_name is not None
        # NumPy's print options when print is called (not when the program runs), as in JAX.
        fun = functools.partial(_format_and_emit, fmt, dict(np.get_printoptions()), has_placeholders,
                                _use_logging)
        _bind(fun, c_args, c_kwargs, ordered, partitioned, f"debug.{'log' if _use_logging else 'print'}({fmt!r})")

    if fmt is not None:
        _debug_print(fmt, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(f"debug_print received unexpected arguments in the two-call form: {args=} {kwargs=}")
    return _debug_print


def print(fmt=None, *args, ordered: bool = False, partitioned: bool = False, skip_format_check: bool = False,
          **kwargs):  # noqa: A001  (jax.debug.print's name)
    """Print ``fmt.format(*args, **kwargs)`` to stdout when the program runs (``jax.debug.print``).

    The values are NumPy arrays, formatted with NumPy's print options of the time of the call.
    Pass a plain string, not an f-string: every argument must be used by ``fmt`` (ValueError).

    Parameters
    ----------
    fmt : str, optional
        A ``str.format`` string. Without it, returns a function taking ``(fmt, *args, **kwargs)``.
    *args, **kwargs
        Values to format (arrays, traced arrays, scalars, pytrees).
    ordered, partitioned : bool
        Accepted; every print is ordered here and there is one device.
    skip_format_check : bool
        Do not check that ``fmt`` uses every argument.

    Returns
    -------
    None

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> def body(i, c):
    ...     tracejit.debug.print("step {i}: {c}", i=i, c=c)
    ...     return c * 2
    >>> tracejit.jit(lambda c: tracejit.lax.fori_loop(0, 3, body, c))(1.0)
    step 0: 1.0
    step 1: 2.0
    step 2: 4.0
    Array(8.)
    """
    return _print(fmt, *args, ordered=ordered, partitioned=partitioned, skip_format_check=skip_format_check,
                  **kwargs)


def log(fmt=None, *args, ordered: bool = False, partitioned: bool = False, skip_format_check: bool = False,
        **kwargs):
    """Like :func:`print`, but the message goes to the ``tracejit.debug`` logger at INFO level
    (``jax.debug.log``).

    Examples
    --------
    >>> import logging, sys, numpy as np, tracejit
    >>> handler, log = logging.StreamHandler(sys.stdout), logging.getLogger("tracejit.debug")
    >>> log.addHandler(handler); log.setLevel(logging.INFO)
    >>> tracejit.jit(lambda x: tracejit.debug.log("x={}", x))(np.ones(2))
    x=[1. 1.]
    >>> log.removeHandler(handler); log.setLevel(logging.NOTSET)
    """
    return _print(fmt, *args, ordered=ordered, partitioned=partitioned, skip_format_check=skip_format_check,
                  _use_logging=True, **kwargs)


def breakpoint(*, backend=None, filter_frames: bool = True, num_frames=None, ordered: bool = False, token=None,
               **kwargs):  # noqa: A001  (jax.debug.breakpoint's name)
    """Enter the Python debugger (``pdb``) at the caller (``jax.debug.breakpoint``), eagerly only.

    Under ``jit``, ``vmap`` or ``grad`` it raises ``NotImplementedError``: tracejit has no
    debugger over the values of a compiled program. Run the function eagerly
    (``tracejit.disable_jit()``), or call ``pdb`` from ``tracejit.debug.callback``.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> tracejit.jit(lambda x: tracejit.debug.breakpoint())(np.ones(2))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    NotImplementedError: tracejit.debug.breakpoint works only eagerly ...
    """
    if current_trace() is not EVAL_TRACE:
        raise NotImplementedError(
            "tracejit.debug.breakpoint works only eagerly (outside jit, vmap and grad): tracejit has no "
            "debugger for traced values. Run the function under tracejit.disable_jit(), or use "
            "tracejit.debug.callback(lambda *values: pdb.set_trace(), *values).")
    import pdb
    pdb.Pdb().set_trace(sys._getframe(1))
    return token


def _sharding_of(value):
    from tracejit.device_api import Device, SingleDeviceSharding
    return SingleDeviceSharding(Device())


def inspect_array_sharding(value, *, callback):
    """Call ``callback(sharding)`` for each array of the pytree ``value``
    (``jax.debug.inspect_array_sharding``).

    Every array is on the one CPU device: the sharding is ``SingleDeviceSharding``. The callback
    runs at once, also while ``jit`` traces (JAX calls it when compiling).

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> tracejit.debug.inspect_array_sharding(np.ones(2), callback=builtins.print)
    SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=None)
    """
    for leaf in tree_leaves(value):
        callback(_sharding_of(leaf))


def visualize_sharding(shape, sharding, *, use_color: bool = True, scale: float = 1.0, min_width: int = 9,
                       max_width: int = 80, color_map=None):
    """Print the devices holding an array of ``shape`` (``jax.debug.visualize_sharding``).

    One CPU device holds everything: a plain-text box labelled ``CPU 0`` (no colours; JAX's
    needs the ``rich`` package). Shapes of rank 1 and 2 only, as in JAX.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> tracejit.debug.visualize_sharding((4,), tracejit.numpy.ones(4).sharding)
    ┌───────┐
    │ CPU 0 │
    └───────┘
    """
    if len(shape) > 2 or len(shape) < 1:
        raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
    label = "CPU 0"
    width = max(min_width, len(label) + 4) - 2
    width = min(width, max_width - 2)
    pad = width - len(label)
    rows = ["┌" + "─" * width + "┐", "│" + " " * (pad // 2) + label + " " * (pad - pad // 2) + "│",
            "└" + "─" * width + "┘"]
    builtins.print("\n".join(rows))


def visualize_array_sharding(arr, **kwargs):
    """Print how ``arr`` is placed on devices (``jax.debug.visualize_array_sharding``): one CPU device.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> tracejit.debug.visualize_array_sharding(np.ones((2, 3)))
    ┌───────┐
    │ CPU 0 │
    └───────┘
    """
    shape = arr.aval.shape if isinstance(arr, Tracer) else np.shape(arr)
    inspect_array_sharding(arr, callback=lambda sharding: visualize_sharding(shape, sharding, **kwargs))
