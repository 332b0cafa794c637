"""JAX's device API for a CPU-only, single-process library (``jax.devices``, ``jax.device_put``, ...).

tracejit runs on one device, the CPU of the machine it runs on (kernels may use
several threads: ``config.num_threads``). Its arrays (:class:`tracejit.Array`) are
read-only NumPy arrays in host memory, so ``device_put`` returns Arrays and
``device_get`` hands back NumPy views of them.
Under ``mpiexec`` after :func:`tracejit.distributed.initialize` there is one CPU device per
process (``devices()`` lists them all, ``local_devices()`` this process's); ``device_put`` to a
``tracejit.sharding.NamedSharding`` places this process's block of a global array.

Examples
--------
>>> import tracejit
>>> tracejit.devices()
[CpuDevice(id=0)]
>>> tracejit.default_backend()
'cpu'
"""
from __future__ import annotations

import platform as _platform

import numpy as np

from tracejit.array import Array, as_array_result
from tracejit.core.pytree import tree_map
from tracejit.core.tracer import Tracer, jax_value
# The value types are defined below the array layer (Array methods build them); this module,
# above it, re-exports them with the public functions.
from tracejit.device_types import _PROCESS, Device, Shard, SingleDeviceSharding, _check_placement

__all__ = ["Device", "SingleDeviceSharding", "Shard", "devices", "local_devices", "device_count", "local_device_count", "default_backend",
           "device_put", "device_get", "process_count", "process_index", "process_indices"]


def _check_backend(backend) -> None:
    if backend is None or backend == "cpu" or getattr(backend, "platform", None) == "cpu":
        return
    raise RuntimeError(f"Unknown backend: {backend!r} requested, but no platforms that are instances of "
                       f"{backend} are present. Platforms present are: cpu")


def devices(backend=None) -> list:
    """All devices, one per process: ``[CpuDevice(id=0)]`` in one process (``jax.devices``).

    Parameters
    ----------
    backend : str, optional
        ``None`` or ``'cpu'``; other platforms (``'gpu'``, ``'tpu'``) raise RuntimeError.

    Examples
    --------
    >>> import tracejit
    >>> tracejit.devices("cpu")
    [CpuDevice(id=0)]
    """
    _check_backend(backend)
    return [Device(i) for i in range(_PROCESS[1])]


def local_devices(process_index=None, backend=None, host_id=None) -> list:
    """The devices of a process (default: this one): ``[CpuDevice(id=0)]`` in one process (``jax.local_devices``).

    Parameters
    ----------
    process_index : int, optional
        None (this process) or a process index; others raise ValueError, as JAX does.
    backend : str, optional
        ``None`` or ``'cpu'``.
    host_id : int, optional
        JAX's deprecated spelling of ``process_index``.

    Examples
    --------
    >>> import tracejit
    >>> tracejit.local_devices(process_index=0)
    [CpuDevice(id=0)]
    """
    _check_backend(backend)
    index = process_index if process_index is not None else host_id
    if index is None:
        return [Device()]
    if not 0 <= index < _PROCESS[1]:
        raise ValueError(f"Unknown process_index {index}")
    return [Device(index)]


def device_count(backend=None) -> int:
    """Number of devices (one per process): 1 in one process (``jax.device_count``).

    Examples
    --------
    >>> import tracejit
    >>> tracejit.device_count()
    1
    """
    _check_backend(backend)
    return _PROCESS[1]


def local_device_count(backend=None) -> int:
    """Number of devices of this process: 1 (``jax.local_device_count``).

    Examples
    --------
    >>> import tracejit
    >>> tracejit.local_device_count()
    1
    """
    _check_backend(backend)
    return 1


def default_backend() -> str:
    """The platform jitted code runs on: ``'cpu'`` (``jax.default_backend``).

    Examples
    --------
    >>> import tracejit
    >>> tracejit.default_backend()
    'cpu'
    """
    return "cpu"


def process_count(backend=None) -> int:
    """Number of processes of the program: 1 without MPI (``jax.process_count``).

    Examples
    --------
    >>> import tracejit
    >>> tracejit.process_count()
    1
    """
    _check_backend(backend)
    return _PROCESS[1]


def process_index(backend=None) -> int:
    """Index of this process (its MPI rank): 0 without MPI (``jax.process_index``).

    Examples
    --------
    >>> import tracejit
    >>> tracejit.process_index()
    0
    """
    _check_backend(backend)
    return _PROCESS[0]


def process_indices(backend=None) -> list:
    """Indices of all processes: ``[0]`` without MPI (``jax.process_indices``).

    Examples
    --------
    >>> import tracejit
    >>> tracejit.process_indices()
    [0]
    """
    _check_backend(backend)
    return list(range(_PROCESS[1]))


def _put_leaf(x, donate: bool, may_alias):
    if isinstance(x, Tracer):
        return jax_value(x)  # under jit/grad/vmap, the identity (a NumPy array argument becomes a JAX array)
    if type(x) is Array:
        return x            # immutable already
    if isinstance(x, np.ndarray):
        if donate or may_alias:
            return as_array_result(np.asarray(x))
        # A later write to the input does not change the result (JAX arrays are immutable).
        return as_array_result(np.array(x))
    arr = np.asarray(x)
    if arr.dtype == object:
        raise TypeError(f"device_put: {type(x).__name__} is not a valid array value")
    return as_array_result(arr)


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Place a pytree of arrays on a device (``jax.device_put``): here, Arrays in host memory.

    Every leaf becomes a :class:`tracejit.Array`: a NumPy array is copied (so writing to
    the input later does not change the result, as JAX arrays are immutable) unless
    ``donate`` or ``may_alias`` is true, in which case the Array is a read-only view of it;
    an Array is returned as is; scalars and array-likes go through ``np.asarray``. Under ``jit``, ``grad``
    or ``vmap`` traced values pass through unchanged.

    Parameters
    ----------
    x : pytree
        Arrays, scalars or array-likes.
    device, src : Device or 'cpu', optional
        The target / source device: this process's CPU device. ``device`` may be a
        ``NamedSharding`` (each process keeps its block of the global value); other shardings raise TypeError.
    donate : bool or pytree of bool
        Whether ``x`` may be consumed (the input array is returned, not copied).
    may_alias : bool, optional
        Whether the result may share the input's memory.

    Returns
    -------
    pytree of tracejit.Array

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> x = np.ones(2)
    >>> y = tracejit.device_put(x, tracejit.devices()[0])
    >>> x[0] = 5.0
    >>> y
    Array([1., 1.])
    >>> tracejit.device_put({"a": 1.0, "b": [2, 3]})
    {'a': Array(1.), 'b': [Array(2), Array(3)]}
    """
    put = getattr(device, "_put_leaf", None)
    if put is not None:
        # A sharding (tracejit.sharding.NamedSharding) places each leaf itself, a global array
        # whole (resharded); the duck-typed hooks keep this module below the sharding layer.
        return tree_map(put, x, is_leaf=getattr(device, "_is_leaf", None))
    _check_placement(device, "device")
    _check_placement(src, "src")
    donate_all = donate is True
    alias = may_alias is True
    return tree_map(lambda leaf: _put_leaf(leaf, donate_all, alias), x)


def _get_leaf(x):
    if isinstance(x, Tracer):
        return x
    to_array = getattr(x, "__array__", None)
    if to_array is None:
        return x
    return np.asarray(x)


def device_get(x):
    """Transfer a pytree of arrays to host NumPy arrays (``jax.device_get``).

    Leaves with ``__array__`` become ``numpy.ndarray`` (NumPy arrays are returned as
    they are); other leaves, such as Python scalars, are returned unchanged, as
    in JAX.

    Parameters
    ----------
    x : pytree

    Returns
    -------
    pytree

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> tracejit.device_get([1, 2.0, np.float32(3.0), np.ones(2)])
    [1, 2.0, array(3., dtype=float32), array([1., 1.])]
    """
    return tree_map(_get_leaf, x)


def environment_lines() -> list[str]:
    """Lines of :func:`tracejit.print_environment_info` about the machine and devices."""
    return [f"device info: cpu-{device_count()}, {local_device_count()} local devices",
            f"process_count: {process_count()}",
            f"platform: {_platform.uname()}"]
