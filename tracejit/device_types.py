"""The device and sharding value types of tracejit's arrays (``jax.Device``, ``jax.Shard``, ...).

They live below :mod:`tracejit.array` so that ``Array.device``, ``Array.sharding`` and
``Array.addressable_shards`` can build them, while :mod:`tracejit.device_api` (above the
array layer, since ``device_put`` makes Arrays) keeps the public functions and re-exports
these types as ``tracejit.Device``, ``tracejit.device_api.SingleDeviceSharding``, ...
"""
from __future__ import annotations

__all__ = ["Device", "SingleDeviceSharding", "Shard"]


class Device:
    """A CPU device (JAX's ``jax.Device``): one per process (:func:`tracejit.devices` lists them).

    A single process has exactly one, ``CpuDevice(id=0)``. After
    :func:`tracejit.distributed.initialize` under ``mpiexec -n N`` there is one per MPI process:
    ``Device(k)`` is process ``k``'s, and ``Device()`` is this process's own. Attributes follow
    JAX's CPU device: ``platform`` and ``device_kind`` ``'cpu'``, ``process_index``/``host_id``/
    ``task_id`` the owning process, ``local_hardware_id`` 0. ``client`` is None (there is no XLA client).

    Examples
    --------
    >>> import tracejit
    >>> d = tracejit.devices()[0]
    >>> d, str(d), d.platform, d.id, d.process_index
    (CpuDevice(id=0), 'cpu:0', 'cpu', 0, 0)
    >>> isinstance(d, tracejit.Device) and d is tracejit.Device()
    True
    """

    __slots__ = ("id",)
    platform = "cpu"
    device_kind = "cpu"
    local_hardware_id = 0
    client = None

    def __new__(cls, id=None):
        # One object per id, so devices compare (and hash) by identity, as the singleton did.
        key = _PROCESS[0] if id is None else int(id)
        dev = _DEVICES.get(key)
        if dev is None:
            dev = object.__new__(cls)
            dev.id = key
            _DEVICES[key] = dev
        return dev

    # One device per process: the device's id is its process's index.
    process_index = property(lambda self: self.id, doc="The index of the process owning the device.")
    host_id = task_id = process_index

    def __repr__(self):
        return f"CpuDevice(id={self.id})"

    def __str__(self):
        return f"cpu:{self.id}"

    def __reduce__(self):
        return (Device, (self.id,))

    def memory_stats(self):
        """None, as JAX's CPU device returns (no allocator statistics)."""
        return None

    def live_buffers(self) -> list:
        """An empty list: tracejit's arrays are NumPy arrays, not device buffers."""
        return []

    def addressable_memories(self) -> list:
        """An empty list: tracejit has no memory kinds (memory spaces are left out on purpose)."""
        return []


_DEVICES: dict = {}
# (this process's index, the number of processes): (0, 1) until tracejit.distributed.initialize()
# sets them from MPI. Kept here, below every user, so device_api and Array read it without
# importing the distributed layer.
_PROCESS = [0, 1]


def _set_process(index: int, count: int) -> None:
    """Record this process's MPI rank and the number of processes (tracejit.distributed)."""
    _PROCESS[0], _PROCESS[1] = int(index), int(count)


class SingleDeviceSharding:
    """The placement of an array on one device (``jax.sharding.SingleDeviceSharding``): every
    tracejit array has this sharding on the CPU device.

    Examples
    --------
    >>> import tracejit, tracejit.numpy as jnp
    >>> s = jnp.ones(3).sharding
    >>> s.device_set, s.is_fully_replicated, s.shard_shape((4, 2))
    ({CpuDevice(id=0)}, True, (4, 2))
    """

    __slots__ = ("_device", "memory_kind")

    def __init__(self, device, *, memory_kind=None):
        _check_placement(device, "device")
        self._device = Device()
        self.memory_kind = memory_kind

    device_set = property(lambda self: {self._device}, doc="The set holding the one device.")
    addressable_devices = device_set
    num_devices = 1
    is_fully_replicated = True
    is_fully_addressable = True

    def shard_shape(self, global_shape) -> tuple:
        """The shape of the one shard: the whole array's."""
        return tuple(global_shape)

    def devices_indices_map(self, global_shape) -> dict:
        """The device and the index of the part it holds: all of the array."""
        return {self._device: tuple(slice(None) for _ in global_shape)}

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding)

    def __hash__(self):
        return hash(SingleDeviceSharding)

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"


class Shard:
    """One device's part of an array (``jax.Shard``); here the whole array on the CPU device."""

    __slots__ = ("device", "index", "data", "replica_id")

    def __init__(self, device, index, data, replica_id=0):
        self.device, self.index, self.data, self.replica_id = device, index, data, replica_id

    def __repr__(self):
        return f"Shard(device={self.device!r}, index={self.index}, replica_id={self.replica_id}, data={self.data!r})"


def _check_placement(where, what: str) -> None:
    """Raise TypeError unless ``where`` (the ``what`` argument of a placement call) names the CPU
    device: None, a :class:`Device`, ``'cpu'`` or any device whose ``platform`` is ``'cpu'``."""
    if where is None or where == "cpu":
        return
    if isinstance(where, Device):
        if where.id != _PROCESS[0]:
            raise ValueError(f"device_put: {where} belongs to process {where.id}, not this one "
                             f"(process {_PROCESS[0]}); a process places arrays only on its own device")
        return
    if getattr(where, "platform", None) == "cpu":      # a jax CpuDevice passed by ported code
        return
    raise TypeError(f"device_put: {what} must be None or a tracejit Device (tracejit.devices()[0]), got "
                    f"{type(where).__name__}; shardings and multi-device placement are not implemented "
                    "(the SPMD work, issue 17)")
