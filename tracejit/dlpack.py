"""DLPack interchange (``jax.dlpack``): :func:`from_dlpack` and :func:`is_supported_dtype`.

tracejit's arrays live in host memory and ``tracejit.Array`` is an ``ndarray`` subclass, so it
exports itself through NumPy's ``__dlpack__`` / ``__dlpack_device__`` (CPU device, read-only
buffers as NumPy allows), and importing is ``numpy.from_dlpack``, the result viewed as an Array.
"""
from __future__ import annotations

import numpy as np

from tracejit.array import as_array_result
from tracejit.core import dtypes

__all__ = ["from_dlpack", "is_supported_dtype"]


def from_dlpack(external_array, device=None, copy=None):
    """An Array from any object with ``__dlpack__`` (``jax.dlpack.from_dlpack``).

    Parameters
    ----------
    external_array : object
        A DLPack producer on the CPU (NumPy array, PyTorch CPU tensor, ...).
    device : optional
        ``None`` or the CPU device; other devices are not available.
    copy : bool, optional
        ``True`` always copies; ``None``/``False`` share the producer's memory when possible
        (the Array is read-only either way).

    Returns
    -------
    Array

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import dlpack
    >>> dlpack.from_dlpack(np.arange(3.0))
    Array([0., 1., 2.])
    """
    if device is not None and getattr(device, "platform", "cpu") != "cpu":
        raise ValueError(f"from_dlpack: tracejit has only the CPU device, got {device!r}")
    if not hasattr(external_array, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(external_array).__name__} has no __dlpack__ method "
                        "(DLPack capsules without one are not accepted, as in JAX)")
    out = np.from_dlpack(external_array, copy=copy)
    if out.dtype not in dtypes.SUPPORTED:
        raise TypeError(f"from_dlpack: dtype {out.dtype} is not supported by tracejit")
    if copy:
        out = np.array(out, copy=True)
    return as_array_result(np.asarray(out))


def is_supported_dtype(dtype) -> bool:
    """Whether arrays of ``dtype`` can go through DLPack to and from tracejit
    (``jax.dlpack.is_supported_dtype``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import dlpack
    >>> dlpack.is_supported_dtype(np.float32), dlpack.is_supported_dtype(np.str_)
    (True, False)
    """
    try:
        return np.dtype(dtype) in dtypes.SUPPORTED
    except TypeError:
        return False
