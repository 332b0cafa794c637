"""The arguments of a jitted function: ``np.ndarray`` arguments become NumPy arrays in the
trace, and the final values of those the function wrote are extra outputs of the program,
copied back into the caller's arrays after each call (``tracejit.api``)."""
from __future__ import annotations

import numpy as np

from tracejit.array import Array
from tracejit.core.trace import current_trace
from tracejit.core.tracer import Tracer
from tracejit.functionalize import state


class Session:
    """The NumPy arguments of one jit trace."""

    __slots__ = ("args", "layout_sensitive", "__weakref__")

    def __init__(self):
        self.args = []                 # (leaf index, NumPy tracer)
        self.layout_sensitive = False  # a written buffer had a reshape view (see docs/inplace.md)


def is_numpy_leaf(leaf) -> bool:
    """Whether a jit argument leaf follows NumPy semantics: an ``np.ndarray`` (not a
    ``tracejit.Array``), or a NumPy-semantics tracer of an enclosing trace.

    Examples
    --------
    >>> import numpy as np
    >>> is_numpy_leaf(np.zeros(2)), is_numpy_leaf(1.0)
    (True, False)
    """
    if isinstance(leaf, Tracer):
        return leaf._np is not None
    return type(leaf) is np.ndarray or (isinstance(leaf, np.ndarray) and not isinstance(leaf, Array))


def box_arguments(tracers, numpy_leaves):
    """The tracers a jitted function is called with: those at ``numpy_leaves`` as NumPy arrays
    (each its own base). Returns ``(tracers, session)``.

    Examples
    --------
    >>> # used by tracejit.api's jit trace; see docs/inplace.md
    """
    session = Session()
    if not numpy_leaves:
        return list(tracers), session
    out = list(tracers)
    for i in numpy_leaves:
        out[i] = state.new_base(tracers[i], arg=i)
        session.args.append((i, out[i]))
    state.SESSIONS[current_trace()] = session
    return out, session


def mutated(session):
    """``(leaf indices, final values)`` of the arguments the traced function wrote."""
    idx, vals = [], []
    for i, t in session.args:
        if t._np.buf.version:
            idx.append(i)
            vals.append(t._np.buf.value)
    return tuple(idx), vals


def check_call(leaves, mutated_args, layout_sensitive) -> None:
    """Before running: NumPy's error for a read-only argument the function writes; arguments
    the function writes must not share memory with other arguments (under jit each argument is
    its own buffer, so writes through one would not show in the other)."""
    for i in mutated_args:
        leaf = leaves[i]
        if isinstance(leaf, np.ndarray) and not leaf.flags.writeable:
            raise ValueError("assignment destination is read-only")
        for j, other in enumerate(leaves):
            if j != i and isinstance(other, np.ndarray) and np.may_share_memory(leaf, other):
                raise NotImplementedError(
                    f"argument leaves {i} and {j} share memory and the jitted function writes into "
                    f"leaf {i}: under jit each argument is a separate array, so the write would not "
                    "show in the other one as it does in NumPy. Pass separate arrays (e.g. a .copy()).")
    if layout_sensitive:
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, np.ndarray) and leaf.ndim >= 2 and not leaf.flags.c_contiguous:
                raise NotImplementedError(
                    f"argument leaf {i} is not C-contiguous and the jitted function writes an array "
                    "that has a reshape view: whether NumPy's reshape returns a view or a copy depends "
                    "on memory layout, and the traced program assumes C order. Pass "
                    "np.ascontiguousarray(x).")


def write_back(leaves, mutated_args, values) -> None:
    """Copy the final values of mutated arguments into the caller's arrays (``np.copyto``; a
    traced caller's NumPy array is written with its functionalized update)."""
    for i, v in zip(mutated_args, values):
        leaf = leaves[i]
        if isinstance(leaf, Tracer):
            state.assign(leaf, v)
        else:
            np.copyto(leaf, v, casting="unsafe")
