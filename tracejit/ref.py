"""``jax.ref``: mutable array references (``Ref``, ``new_ref``, ``freeze``, ``get``, ``set``,
``swap``, ``addupdate``). Defined in ``tracejit/functionalize/refs.py``, where the in-place
machinery they use lives; the package face also exports ``Ref``, ``new_ref``, ``empty_ref``,
``freeze`` and ``free_ref`` as ``jax`` does.

Examples
--------
>>> import numpy as np
>>> from tracejit import ref
>>> r = ref.new_ref(np.zeros(2))
>>> ref.addupdate(r, 0, 3.0)
>>> ref.freeze(r)
Array([3., 0.])
"""
from tracejit.functionalize.refs import (AbstractRef, Ref, addupdate, empty_ref, free_ref, freeze, get, new_ref, set,
                                         swap)

__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get", "new_ref", "set", "swap"]
