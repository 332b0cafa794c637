"""The kernel IR that fusion produces and code generators consume.

A kernel iterates over a static index space. Every value inside it is an
expression over *loads* of materialized buffers; a load's address is an
affine function of the iteration index (:class:`IndexMap`), so transposes,
broadcasts, slices and reversals never move data: they only change the map.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class IndexMap:
    """``value_index[j] = offset_j + scale_j * iteration_index[src_j]`` (src -1: constant)."""

    terms: tuple  # tuple of (src, scale, offset)

    @staticmethod
    def identity(ndim: int) -> "IndexMap":
        return IndexMap(tuple((i, 1, 0) for i in range(ndim)))

    def then(self, inner: tuple) -> "IndexMap":
        """Compose with a structural op: ``inner[k] = (src_k, scale_k, offset_k)`` over this map's value index."""
        out = []
        for src, scale, off in inner:
            if src < 0:
                out.append((-1, 0, off))
                continue
            s2, sc2, off2 = self.terms[src]
            if s2 < 0 or scale == 0:
                out.append((-1, 0, off + scale * off2))
            else:
                out.append((s2, scale * sc2, off + scale * off2))
        return IndexMap(tuple(out))

    def permuted(self, perm) -> "IndexMap":
        """Re-express over an iteration space whose dim ``i`` was old dim ``perm[i]``.

        ``perm`` may also be a dict ``old dim -> new dim``; an old dim mapped to -1
        (a size-1 dim that does not exist in the new space) contributes index 0.
        """
        where = perm if isinstance(perm, dict) else {old: new for new, old in enumerate(perm)}
        out = []
        for s, sc, o in self.terms:
            t = where.get(s, -1) if s >= 0 else -1
            out.append((t, sc, o) if t >= 0 else (-1, 0, o))
        return IndexMap(tuple(out))


@dataclass(frozen=True)
class GatherSpec:
    """What makes a load a gather: the buffer's leading ``len(indexed_shape)`` dims are indexed by
    the node's ``args`` (one integer expression per dim), clamped into range (``clip``) or, when any
    is out of range, replaced by ``fill_value`` (``fill``). Its map gives the other dims."""

    mode: str
    fill_value: object
    indexed_shape: tuple


def is_gather(node) -> bool:
    return node.kind == "load" and node.value is not None


@dataclass(eq=False)
class Node:
    """An expression node. ``kind``: load | const | iota | op.

    A load with a :class:`GatherSpec` in ``value`` is a gather: its ``args`` are index expressions.
    """

    kind: str
    dtype: np.dtype
    args: tuple = ()
    buffer: int = -1            # load: buffer id
    map: IndexMap | None = None  # load: value-index map; iota: map of its single term
    value: object = None        # const value; iota dimension
    prim: object = None         # op: primitive
    params: tuple = ()          # op: sorted params items

    def __repr__(self):
        return format_exprs([self])[-1]


@dataclass
class Phase:
    """One pass over the row: a reduction (``reduce_op`` set) or a map storing ``outputs``."""

    reduce_op: str | None
    exprs: list                  # one expression per output
    outputs: list                # buffer ids written (reduction: shape = outer dims)
    out_maps: list = None        # map phases: buffer index as a function of the iteration index
    per_row: bool = False        # runs once per row (values that depend only on the row index)


@dataclass
class Kernel:
    """A fused loop nest.

    ``outer`` dims are split across threads; ``row`` dims are looped inside
    each phase (the innermost one vectorized). A loop kernel has no row dims
    of its own: its whole space is ``outer`` and ``row`` is the last dim.
    """

    name: str
    shape: tuple                 # iteration space = outer + row
    n_outer: int                 # leading dims that index rows
    phases: list = field(default_factory=list)
    eqn_names: list = field(default_factory=list)   # primitives fused here (for reports)
    reduced_shape: tuple = ()    # X shape before permutation (row kernels), for merging
    perm: tuple = ()             # iteration dim i is X dim perm[i] (row kernels)

    @property
    def is_row_kernel(self) -> bool:
        return any(p.reduce_op for p in self.phases)

    @property
    def outer_size(self) -> int:
        return math.prod(self.shape[:self.n_outer])

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def buffers_written(self):
        return [b for p in self.phases for b in p.outputs]

    def loads(self):
        return [n for n in walk([e for p in self.phases for e in p.exprs]) if n.kind == "load"]

    def describe(self) -> str:
        """Readable, exact text of the kernel (shared sub-expressions are named once)."""
        lines = [f"kernel {self.name} over {list(self.shape)} (outer {self.n_outer}): "
                 f"{', '.join(self.eqn_names)}"]
        for p in self.phases:
            what = f"reduce_{p.reduce_op}" if p.reduce_op else "map"
            *lets, result = format_exprs(p.exprs)
            for let in lets:
                lines.append(f"      {let}")
            lines.append(f"    {what} -> {', '.join(f'b{b}' for b in p.outputs)}: {result}")
        return "\n".join(lines)


def exact_text(kernel: Kernel) -> str:
    """``kernel.describe()`` and every load's index map (which describe() omits): what identifies the
    kernel's code, for cache keys."""
    return kernel.describe() + "".join(f"\nload b{n.buffer} {n.map}" for n in kernel.loads())


def walk(exprs, descend=None) -> list:
    """Every node reachable from ``exprs``, each once (expression DAGs share nodes); with
    ``descend``, only through the nodes for which ``descend(node)`` is true."""
    out, stack, seen = [], list(exprs), set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        out.append(n)
        if descend is None or descend(n):
            stack.extend(n.args)
    return out


def _map_text(m: IndexMap) -> str:
    identity = all(t == (i, 1, 0) for i, t in enumerate(m.terms))
    if identity:
        return ""
    return "@[" + ",".join("%d" % o if s < 0 else (f"{o}+" if o else "") + (f"{sc}*" if sc != 1 else "") + f"i{s}"
                           for s, sc, o in m.terms) + "]"


def format_exprs(exprs) -> list:
    """Text of expressions in linear size: nodes used more than once become ``%n = ...`` lines.

    Returns the let-lines followed by one line with the expressions (``; ``-separated).
    """
    uses: dict[int, int] = {}
    order = []
    stack = [(e, False) for e in reversed(exprs)]
    seen = set()
    while stack:
        n, expanded = stack.pop()
        if expanded:
            order.append(n)
            continue
        uses[id(n)] = uses.get(id(n), 0) + 1
        if id(n) in seen:
            continue
        seen.add(id(n))
        stack.append((n, True))
        stack.extend((a, False) for a in reversed(n.args))
    names: dict[int, str] = {}
    text: dict[int, str] = {}
    lets = []
    for n in order:
        if is_gather(n):
            g = n.value
            fill = f" fill={g.fill_value!r}" if g.mode == "fill" else ""
            t = (f"gather[{g.mode}{fill}](b{n.buffer}{_map_text(n.map)}; "
                 f"{', '.join(text[id(a)] for a in n.args)})")
        elif n.kind == "load":
            t = f"load(b{n.buffer}{_map_text(n.map)})"
        elif n.kind == "const":
            t = repr(n.value)
        elif n.kind == "iota":
            t = f"iota{_map_text(n.map)}:{n.dtype.name}"
        else:
            shown = {k: v for k, v in n.params if k not in ("weak_type",)}
            prm = ("[" + " ".join(f"{k}={getattr(v, 'name', v)}" for k, v in shown.items()) + "]") if shown else ""
            t = f"{n.prim.name}{prm}({', '.join(text[id(a)] for a in n.args)})"
        if n.kind == "op" and uses[id(n)] > 1:
            name = f"%{len(lets)}"
            lets.append(f"{name} = {t}")
            t = name
        text[id(n)] = t
    return lets + ["; ".join(text[id(e)] for e in exprs)]
