"""Pytrees: nested containers (tuples, lists, dicts, None, namedtuples,
dataclasses and registered classes) flattened into a list of leaves plus a
hashable structure description (:class:`PyTreeDef`)."""
from __future__ import annotations

import collections
import dataclasses
from typing import Any, Callable, NamedTuple


class _NodeType(NamedTuple):
    to_iterable: Callable[[Any], tuple[list, Any]]   # x -> (children, aux_data)
    from_iterable: Callable[[Any, list], Any]         # (aux_data, children) -> x


_registry: dict[type, _NodeType] = {}


def register_pytree_node(cls: type, flatten_func, unflatten_func) -> None:
    """Register ``cls`` as a pytree node.

    Parameters
    ----------
    cls : type
        The container class.
    flatten_func : callable
        ``x -> (children, aux_data)``; ``aux_data`` must be hashable.
    unflatten_func : callable
        ``(aux_data, children) -> x``.

    Examples
    --------
    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    """
    _registry[cls] = _NodeType(lambda x: tuple(flatten_func(x)), unflatten_func)


def _dict_flatten(d):
    keys = sorted(d)
    return [d[k] for k in keys], tuple(keys)


register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c))
register_pytree_node(list, lambda l: (l, None), lambda _, c: list(c))
register_pytree_node(dict, _dict_flatten, lambda keys, c: dict(zip(keys, c)))
register_pytree_node(type(None), lambda n: ((), None), lambda _, c: None)
# As JAX: an OrderedDict keeps its insertion order (the order is part of the structure); a defaultdict
# sorts its keys like dict and keeps its default_factory in the aux data.
register_pytree_node(collections.OrderedDict, lambda d: (list(d.values()), tuple(d)),
                     lambda keys, c: collections.OrderedDict(zip(keys, c)))
register_pytree_node(collections.defaultdict,
                     lambda d: ([d[k] for k in sorted(d)], (d.default_factory, tuple(sorted(d)))),
                     lambda aux, c: collections.defaultdict(aux[0], zip(aux[1], c)))


class _Children(tuple):
    """A treedef's child treedefs: a tuple (``td.children[0]``) that JAX code may also call (``td.children()``)."""

    __slots__ = ()

    def __call__(self) -> list:
        return list(self)


class PyTreeDef:
    """Hashable description of a pytree's structure (without its leaves).

    ``num_leaves``, ``num_nodes``, ``children()``, ``unflatten``, ``flatten_up_to``
    and ``node_data()`` are as on ``jax.tree_util.PyTreeDef``.

    Examples
    --------
    >>> td = tree_structure({"a": 1, "b": (2, 3)})
    >>> td.num_leaves, td.num_nodes, td.unflatten([4, 5, 6])
    (3, 5, {'a': 4, 'b': (5, 6)})
    """

    __slots__ = ("node_type", "aux", "children", "num_leaves", "_hash")

    def __init__(self, node_type, aux, children):
        self.node_type = node_type
        self.aux = aux
        self.children = _Children(children)
        self.num_leaves = 1 if node_type is None else sum(c.num_leaves for c in children)
        self._hash = hash((node_type, aux, children))

    @property
    def num_nodes(self) -> int:
        """Number of nodes, leaves included (``None`` and ``()`` count as one node)."""
        return 1 + sum(c.num_nodes for c in self.children)

    def node_data(self):
        """``(node type, aux data)`` of the root, or ``None`` for a leaf."""
        return None if self.node_type is None else (self.node_type, self.aux)

    def unflatten(self, leaves):
        """Rebuild a pytree of this structure from ``leaves`` (as ``tree_unflatten``)."""
        return tree_unflatten(self, leaves)

    def flatten_up_to(self, xs) -> list:
        """Flatten ``xs`` down to this structure: each leaf here takes the whole subtree of ``xs`` below it.

        Raises ``ValueError`` when ``xs`` does not have this structure as a prefix.

        Examples
        --------
        >>> tree_structure((1, 2)).flatten_up_to(([1, 2], {"a": 3}))
        [[1, 2], {'a': 3}]
        """
        out: list = []

        def rec(td, x):
            if td.node_type is None:
                out.append(x)
                return
            node = _node_type_of(x)
            if type(x) is not td.node_type or node is None:
                raise ValueError(f"tree structures differ: expected {td.node_type.__name__} matching {td}, "
                                 f"got {type(x).__name__}: {x!r}")
            children, aux = node.to_iterable(x)
            children = list(children)
            if aux != td.aux or len(children) != len(td.children):
                raise ValueError(f"tree structures differ: expected {td}, got {tree_structure(x)}")
            for c, xc in zip(td.children, children):
                rec(c, xc)

        rec(self, xs)
        return out

    def __eq__(self, other):
        return (isinstance(other, PyTreeDef) and self._hash == other._hash
                and self.node_type is other.node_type and self.aux == other.aux
                and self.children == other.children)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        if self.node_type is None:
            return "*"
        inner = ", ".join(map(repr, self.children))
        name = self.node_type.__name__
        if self.node_type is tuple:
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.node_type is list:
            return f"[{inner}]"
        if self.node_type is dict:
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.aux, self.children)) + "}"
        if self.node_type is type(None):
            return "None"
        return f"{name}({inner})"


LEAF = PyTreeDef(None, None, ())


def _node_type_of(x):
    cls = type(x)
    node = _registry.get(cls)
    if node is not None:
        return node
    if isinstance(x, tuple) and hasattr(cls, "_fields"):  # namedtuple
        node = _NodeType(lambda t: (tuple(t), None), lambda _, c, cls=cls: cls(*c))
        _registry[cls] = node
        return node
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        names = tuple(f.name for f in dataclasses.fields(x))
        node = _NodeType(lambda d, names=names: ([getattr(d, n) for n in names], None),
                         lambda _, c, cls=cls, names=names: cls(**dict(zip(names, c))))
        _registry[cls] = node
        return node
    return None


def tree_flatten(tree, is_leaf=None) -> tuple[list, PyTreeDef]:
    """Flatten ``tree`` into ``(leaves, treedef)``.

    Examples
    --------
    >>> tree_flatten({"a": 1, "b": (2, 3)})
    ([1, 2, 3], {'a': *, 'b': (*, *)})
    """
    leaves: list = []

    def rec(x):
        if is_leaf is not None and is_leaf(x):
            leaves.append(x)
            return LEAF
        node = _node_type_of(x)
        if node is None:
            leaves.append(x)
            return LEAF
        children, aux = node.to_iterable(x)
        return PyTreeDef(type(x), aux, tuple(rec(c) for c in children))

    treedef = rec(tree)
    return leaves, treedef


def tree_unflatten(treedef: PyTreeDef, leaves) -> Any:
    """Rebuild a pytree of structure ``treedef`` from ``leaves``."""
    it = iter(leaves)

    def rec(td):
        if td.node_type is None:
            leaf = next(it, _SENTINEL)
            if leaf is _SENTINEL:
                raise ValueError(f"too few leaves for tree structure {treedef}")
            return leaf
        children = [rec(c) for c in td.children]
        node = _registry.get(td.node_type) or _node_type_of_cls(td.node_type)
        return node.from_iterable(td.aux, children)

    out = rec(treedef)
    if next(it, _SENTINEL) is not _SENTINEL:
        raise ValueError(f"too many leaves for tree structure {treedef}")
    return out


_SENTINEL = object()


def _node_type_of_cls(cls):
    raise KeyError(f"pytree node type {cls.__name__} is not registered")


def broadcast_prefix(prefix, tree, is_leaf=None) -> list:
    """One entry per leaf of ``tree``: the leaf of ``prefix`` (a tree prefix of ``tree``) above it.

    Used for arguments like ``vmap``'s ``in_axes``, where ``0`` may stand for
    a whole subtree.  ``is_leaf`` decides what counts as a leaf of ``prefix``
    (``None`` is a leaf there, not an empty node).

    Examples
    --------
    >>> broadcast_prefix((0, None), ((1, 2), {"a": 3}), is_leaf=lambda x: x is None or isinstance(x, int))
    [0, 0, None]
    """
    out: list = []

    def rec(p, t):
        if is_leaf is not None and is_leaf(p) or _node_type_of(p) is None:
            out.extend([p] * len(tree_leaves(t)))
            return
        p_node, t_node = _node_type_of(p), _node_type_of(t)
        p_children, p_aux = p_node.to_iterable(p)
        t_children, t_aux = (t_node.to_iterable(t) if t_node is not None else (None, None))
        if type(p) is not type(t) or p_aux != t_aux or len(p_children) != len(t_children):
            raise ValueError(f"{type(p).__name__} prefix {p!r} does not match the structure of "
                             f"{tree_structure(t)}")
        for pc, tc in zip(p_children, t_children):
            rec(pc, tc)

    rec(prefix, tree)
    return out


def tree_leaves(tree, is_leaf=None) -> list:
    """The leaves of ``tree``, left to right."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None) -> PyTreeDef:
    """The structure of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f, tree, *rest, is_leaf=None):
    """Apply ``f`` to corresponding leaves of ``tree`` and ``rest``.

    Each tree of ``rest`` has the structure of ``tree`` or has it as a prefix
    (``f`` then gets the whole subtree below a leaf of ``tree``).

    Examples
    --------
    >>> tree_map(lambda x: x * 2, {"a": 1, "b": [2, 3]})
    {'a': 2, 'b': [4, 6]}
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [treedef.flatten_up_to(r) for r in rest]  # each of ``rest`` has ``tree``'s structure as a prefix
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def treedef_children_count(treedef: PyTreeDef) -> int:
    return len(treedef.children)
