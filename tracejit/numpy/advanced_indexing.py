"""Advanced indexing (integer arrays, boolean masks, traced indices) and
``x.at[idx]`` updates, via gather/scatter primitives."""
from __future__ import annotations


def getitem(x, idx):
    raise NotImplementedError(
        f"indexing a traced array with {type(idx).__name__} index {idx!r}: only ints, slices, None and "
        "Ellipsis are supported so far; advanced (array/boolean/traced) indexing is not implemented yet")


class IndexUpdateRef:
    def __init__(self, array, idx):
        raise NotImplementedError("x.at[idx] updates are not implemented yet")
