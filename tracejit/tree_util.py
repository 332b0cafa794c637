"""``tracejit.tree_util``: pytree utilities (as ``jax.tree_util``).

Pytrees are nested tuples, lists, dicts, ``None`` (an empty node), namedtuples,
dataclasses and registered classes; everything else is a leaf.  Dict keys are
sorted.  Besides flatten/unflatten/map this module has key paths
(:class:`SequenceKey`, :class:`DictKey`, :class:`GetAttrKey`,
:class:`FlattenedIndexKey`, :func:`keystr`, the ``*_with_path`` functions),
the registration helpers (:func:`register_pytree_with_keys`,
:func:`register_dataclass`, :func:`register_static`, ...) and :class:`Partial`.

Examples
--------
>>> from tracejit import tree_util
>>> tree_util.tree_leaves_with_path({"a": [1, 2]})
[((DictKey(key='a'), SequenceKey(idx=0)), 1), ((DictKey(key='a'), SequenceKey(idx=1)), 2)]
"""
from __future__ import annotations

import collections
import dataclasses
import functools
from typing import Any, Callable, NamedTuple

from tracejit.core.pytree import (LEAF, PyTreeDef, _node_type_of, _registry, broadcast_prefix,  # noqa: F401
                                  tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten)
from tracejit.core import pytree as _core

__all__ = [
    "DictKey", "FlattenedIndexKey", "GetAttrKey", "KeyEntry", "KeyPath", "Partial", "PyTreeDef", "SequenceKey",
    "PyTreeRegistry", "all_leaves", "build_tree", "default_registry", "flatten_one_level", "flatten_one_level_with_keys", "is_tree_node", "keystr",
    "register_dataclass", "register_pytree_node", "register_pytree_node_class", "register_pytree_with_keys",
    "register_pytree_with_keys_class", "register_static", "tree_all", "tree_broadcast", "tree_flatten",
    "tree_flatten_with_path", "tree_leaves", "tree_leaves_with_path", "tree_map", "tree_map_with_path",
    "tree_reduce", "tree_reduce_associative", "tree_structure", "tree_transpose", "tree_unflatten",
    "treedef_children", "treedef_is_leaf", "treedef_is_strict_leaf", "treedef_tuple",
]


# ----------------------------------------------------------------------------------------------- key entries
class SequenceKey(NamedTuple):
    """Key of a tuple or list element (``idx``); prints as ``[idx]``.

    Examples
    --------
    >>> str(SequenceKey(0))
    '[0]'
    """
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"


class DictKey(NamedTuple):
    """Key of a dict entry (``key``); prints as ``['key']``.

    Examples
    --------
    >>> str(DictKey("w"))
    "['w']"
    """
    key: Any

    def __str__(self):
        return f"[{self.key!r}]"


class GetAttrKey(NamedTuple):
    """Key of an attribute (namedtuple field, dataclass field); prints as ``.name``.

    Examples
    --------
    >>> str(GetAttrKey("x"))
    '.x'
    """
    name: str

    def __str__(self):
        return f".{self.name}"


class FlattenedIndexKey(NamedTuple):
    """Key of the ``key``-th child of a node registered without keys.

    Examples
    --------
    >>> str(FlattenedIndexKey(1))
    '[<flat index 1>]'
    """
    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


KeyEntry = Any
KeyPath = tuple


def _simple_str(k) -> str:
    if isinstance(k, SequenceKey):
        return str(k.idx)
    if isinstance(k, DictKey):
        return str(k.key)
    if isinstance(k, GetAttrKey):
        return k.name
    if isinstance(k, FlattenedIndexKey):
        return str(k.key)
    return str(k)


def keystr(keys, *, simple: bool = False, separator: str = "") -> str:
    """Pretty-print a key path.

    Parameters
    ----------
    keys : tuple
        Key entries (or anything convertible to ``str``).
    simple : bool
        Use compact forms (``0``, ``a``, ``name``) instead of ``[0]``, ``['a']``, ``.name``.
    separator : str
        Joins the entries.

    Examples
    --------
    >>> keystr((DictKey("foo"), SequenceKey(0)))
    "['foo'][0]"
    >>> keystr((DictKey("foo"), SequenceKey(0)), simple=True, separator="/")
    'foo/0'
    """
    fn = _simple_str if simple else str
    return separator.join(fn(k) for k in keys)


# ---------------------------------------------------------------------------------------- keyed flattening
_key_registry: dict[type, Callable[[Any], tuple]] = {}   # cls -> (x -> (((key, child), ...), aux))


def _keyed_children(x, node):
    """``(keys, children, aux)`` of a node ``x`` whose node type is ``node``."""
    cls = type(x)
    with_keys = _key_registry.get(cls)
    if with_keys is not None:
        pairs, aux = with_keys(x)
        pairs = list(pairs)
        return [k for k, _ in pairs], [c for _, c in pairs], aux
    children, aux = node.to_iterable(x)
    children = list(children)
    if cls is dict or cls is collections.OrderedDict:
        keys = [DictKey(k) for k in aux]
    elif cls is collections.defaultdict:
        keys = [DictKey(k) for k in aux[1]]
    elif cls in (tuple, list):
        keys = [SequenceKey(i) for i in range(len(children))]
    elif isinstance(x, tuple) and hasattr(cls, "_fields"):
        keys = [GetAttrKey(f) for f in cls._fields]
    elif (dataclasses.is_dataclass(x) and cls not in _explicit
          and len(dataclasses.fields(x)) == len(children)):   # flattened automatically, field by field
        keys = [GetAttrKey(f.name) for f in dataclasses.fields(x)]
    else:
        keys = [FlattenedIndexKey(i) for i in range(len(children))]
    return keys, children, aux


_explicit: set = set()  # classes registered through this module


def _flatten_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    out: list = []

    def rec(path, x):
        if is_leaf is not None and (is_leaf(path, x) if is_leaf_takes_path else is_leaf(x)):
            out.append((path, x))
            return LEAF
        node = _node_type_of(x)
        if node is None:
            out.append((path, x))
            return LEAF
        keys, children, aux = _keyed_children(x, node)
        return PyTreeDef(type(x), aux, tuple(rec(path + (k,), c) for k, c in zip(keys, children)))

    treedef = rec((), tree)
    return out, treedef


def tree_flatten_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    """Flatten ``tree`` like :func:`tree_flatten`, pairing each leaf with its key path.

    Parameters
    ----------
    tree : pytree
    is_leaf : callable, optional
        ``x -> bool`` (or ``(path, x) -> bool`` with ``is_leaf_takes_path``): stop at ``x``.
    is_leaf_takes_path : bool

    Returns
    -------
    (list of (key path, leaf), PyTreeDef)

    Examples
    --------
    >>> tree_flatten_with_path([1, {"x": 3}])
    ([((SequenceKey(idx=0),), 1), ((SequenceKey(idx=1), DictKey(key='x')), 3)], [*, {'x': *}])
    """
    return _flatten_with_path(tree, is_leaf, is_leaf_takes_path)


def tree_leaves_with_path(tree, is_leaf=None, is_leaf_takes_path=False) -> list:
    """``(key path, leaf)`` pairs of ``tree``, left to right.

    Examples
    --------
    >>> tree_leaves_with_path((1, [2]))
    [((SequenceKey(idx=0),), 1), ((SequenceKey(idx=1), SequenceKey(idx=0)), 2)]
    """
    return _flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f, tree, *rest, is_leaf=None, is_leaf_takes_path=False):
    """Map ``f(path, x, *xs)`` over the leaves of ``tree`` (and the matching subtrees of ``rest``).

    Each tree of ``rest`` has the structure of ``tree`` or has it as a prefix.

    Examples
    --------
    >>> tree_map_with_path(lambda p, x: x + p[0].idx, [1, 2, 3])
    [1, 3, 5]
    """
    pairs, treedef = _flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten([f(p, x, *xs) for (p, x), *xs in zip(pairs, *others)])


# ------------------------------------------------------------------------------------------ reductions etc.
class _Unspecified:
    def __repr__(self):
        return "<unspecified>"


_UNSPECIFIED = _Unspecified()


def tree_reduce(function, tree, initializer=_UNSPECIFIED, is_leaf=None):
    """``functools.reduce(function, leaves)`` (with ``initializer`` when given).

    Examples
    --------
    >>> import operator
    >>> tree_reduce(operator.add, [1, (2, 3), [4, 5, 6]])
    21
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _UNSPECIFIED:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_reduce_associative(operation, tree, *, identity=_UNSPECIFIED, is_leaf=None):
    """Reduce the leaves with an associative ``operation`` as a balanced tree (logarithmic depth).

    ``identity`` is returned for a tree without leaves (a ``TypeError`` without it).

    Examples
    --------
    >>> import operator
    >>> tree_reduce_associative(operator.add, [1, (2, 3), [4, 5, 6]])
    21
    """
    items = tree_leaves(tree, is_leaf)
    if not items:
        if identity is _UNSPECIFIED:
            raise TypeError("tree_reduce_associative: the tree has no leaves and no identity was given")
        return identity
    while len(items) > 1:
        paired = [operation(a, b) for a, b in zip(items[::2], items[1::2])]
        if len(items) % 2:
            paired.append(items[-1])
        items = paired
    return items[0]


def tree_all(tree, *, is_leaf=None) -> bool:
    """``all()`` over the leaves of ``tree``.

    Examples
    --------
    >>> tree_all([True, {"a": True}]), tree_all([True, (False,)])
    (True, False)
    """
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Turn a tree of structure ``outer(inner)`` into one of structure ``inner(outer)``.

    Parameters
    ----------
    outer_treedef : PyTreeDef
    inner_treedef : PyTreeDef or None
        ``None``: inferred from the first subtree.
    pytree_to_transpose : pytree

    Raises
    ------
    TypeError
        When ``pytree_to_transpose`` does not have the structure ``outer(inner)``.

    Examples
    --------
    >>> tree_transpose(tree_structure([0, 0]), tree_structure((0, 0)), [(1, 2), (3, 4)])
    ([1, 3], [2, 4])
    """
    try:
        subtrees = outer_treedef.flatten_up_to(pytree_to_transpose)
        if inner_treedef is None:
            inner_treedef = tree_structure(subtrees[0]) if subtrees else LEAF
        columns = [inner_treedef.flatten_up_to(s) for s in subtrees]
    except ValueError as e:   # JAX raises TypeError for a tree that is not outer(inner)
        raise TypeError(f"tree_transpose: mismatch between the tree and {outer_treedef} of {inner_treedef}: "
                        f"{e}") from None
    transposed = [outer_treedef.unflatten([col[i] for col in columns]) for i in range(inner_treedef.num_leaves)]
    return inner_treedef.unflatten(transposed)


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """Repeat each leaf of ``prefix_tree`` over the subtree of ``full_tree`` below it.

    Examples
    --------
    >>> tree_broadcast([1, 2], [[0, 0], {"a": 0}])
    [[1, 1], {'a': 2}]
    """
    full_def = tree_structure(full_tree, is_leaf)
    prefix_leaves, prefix_def = tree_flatten(prefix_tree, is_leaf)
    subtrees = prefix_def.flatten_up_to(full_tree)
    out = []
    for p, sub in zip(prefix_leaves, subtrees):
        out.extend([p] * len(tree_leaves(sub, is_leaf)))
    return full_def.unflatten(out)


def all_leaves(iterable, is_leaf=None) -> bool:
    """Whether every element of ``iterable`` is a leaf (``None`` is not one).

    Examples
    --------
    >>> all_leaves([1, 2.0]), all_leaves([1, (2,)]), all_leaves([None])
    (True, False, False)
    """
    items = list(iterable)
    if is_leaf is None:
        return all(_node_type_of(x) is None for x in items)
    return items == tree_leaves(items, is_leaf)


# ----------------------------------------------------------------------------------------------- treedefs
def treedef_children(treedef: PyTreeDef) -> list:
    """The child treedefs of ``treedef``'s root.

    Examples
    --------
    >>> treedef_children(tree_structure((1, [2, 3])))
    [*, [*, *]]
    """
    return list(treedef.children)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """Whether ``treedef`` has one node (a leaf, ``None`` or an empty container).

    Examples
    --------
    >>> treedef_is_leaf(tree_structure(1)), treedef_is_leaf(tree_structure(None)), treedef_is_leaf(tree_structure([1]))
    (True, True, False)
    """
    return treedef.num_nodes == 1


def treedef_is_strict_leaf(treedef: PyTreeDef) -> bool:
    """Whether ``treedef`` is exactly one leaf."""
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


def treedef_tuple(treedefs) -> PyTreeDef:
    """The treedef of a tuple whose elements have the structures ``treedefs``.

    Examples
    --------
    >>> treedef_tuple([tree_structure(1), tree_structure([1, 2])])
    (*, [*, *])
    """
    return PyTreeDef(tuple, None, tuple(treedefs))


def build_tree(treedef: PyTreeDef, xs):
    """Build a tree of structure ``treedef`` from nested iterables ``xs`` (one per node, the value at a leaf).

    Examples
    --------
    >>> build_tree(tree_structure({"a": 0, "b": (0, 0)}), [1, [2, 3]])
    {'a': 1, 'b': (2, 3)}
    """
    def rec(td, x):
        if td.node_type is None:
            return x
        children = list(x)
        if len(children) != len(td.children):
            raise ValueError(f"build_tree: node {td} has {len(td.children)} children, got {len(children)}")
        node = _registry.get(td.node_type) or _node_type_of_cls(td.node_type)
        return node.from_iterable(td.aux, [rec(c, xc) for c, xc in zip(td.children, children)])

    return rec(treedef, xs)


def _node_type_of_cls(cls):
    raise KeyError(f"pytree node type {cls.__name__} is not registered")


def is_tree_node(typ) -> bool:
    """Whether instances of ``typ`` are pytree nodes (not leaves).

    Examples
    --------
    >>> is_tree_node(dict), is_tree_node(int)
    (True, False)
    """
    if typ in _registry:
        return True
    return (issubclass(typ, tuple) and hasattr(typ, "_fields")) or dataclasses.is_dataclass(typ)


def flatten_one_level(tree):
    """``(children, aux data)`` of a pytree node; ``ValueError`` for a leaf.

    Examples
    --------
    >>> flatten_one_level({"b": 2, "a": 1})
    ([1, 2], ('a', 'b'))
    """
    node = _node_type_of(tree)
    if node is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    children, aux = node.to_iterable(tree)
    return list(children), aux


def flatten_one_level_with_keys(tree):
    """``([(key, child), ...], aux data)`` of a pytree node; ``ValueError`` for a leaf."""
    node = _node_type_of(tree)
    if node is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    keys, children, aux = _keyed_children(tree, node)
    return list(zip(keys, children)), aux


# ------------------------------------------------------------------------------------------- registration
def register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func=None) -> None:
    """Register ``nodetype`` as a pytree node (``jax.tree_util.register_pytree_node``).

    Parameters
    ----------
    nodetype : type
    flatten_func : callable
        ``x -> (children, aux_data)``; ``aux_data`` must be hashable.
    unflatten_func : callable
        ``(aux_data, children) -> x``.
    flatten_with_keys_func : callable, optional
        ``x -> (((key, child), ...), aux_data)``, giving key paths (else children get
        :class:`FlattenedIndexKey` entries).

    Examples
    --------
    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    >>> tree_leaves(Pair(1, [2]))
    [1, 2]
    """
    _core.register_pytree_node(nodetype, flatten_func, unflatten_func)
    _explicit.add(nodetype)
    if flatten_with_keys_func is not None:
        _key_registry[nodetype] = flatten_with_keys_func
    else:
        _key_registry.pop(nodetype, None)


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
    """Register ``nodetype`` as a pytree node whose children have key path entries.

    Parameters
    ----------
    nodetype : type
    flatten_with_keys : callable
        ``x -> (((key, child), ...), aux_data)``.
    unflatten_func : callable
        ``(aux_data, children) -> x``.
    flatten_func : callable, optional
        ``x -> (children, aux_data)``, same order and aux as ``flatten_with_keys`` (faster flattening).

    Examples
    --------
    >>> class Box:
    ...     def __init__(self, v): self.v = v
    >>> register_pytree_with_keys(Box, lambda b: (((GetAttrKey("v"), b.v),), None), lambda _, c: Box(*c))
    >>> tree_leaves_with_path(Box(3))
    [((GetAttrKey(name='v'),), 3)]
    """
    if flatten_func is None:
        def flatten_func(x):
            pairs, aux = flatten_with_keys(x)
            return [c for _, c in pairs], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls):
    """Class decorator: register ``cls`` through its ``tree_flatten`` method and ``tree_unflatten`` classmethod.

    Examples
    --------
    >>> @register_pytree_node_class
    ... class Scaled:
    ...     def __init__(self, x, scale): self.x, self.scale = x, scale
    ...     def tree_flatten(self): return (self.x,), self.scale
    ...     @classmethod
    ...     def tree_unflatten(cls, scale, children): return cls(children[0], scale)
    >>> tree_leaves(Scaled(1.0, 2))
    [1.0]
    """
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    _explicit.add(cls)
    return cls


def register_pytree_with_keys_class(cls):
    """Class decorator: register ``cls`` through ``tree_flatten_with_keys`` (and ``tree_flatten`` if defined)
    and the ``tree_unflatten`` classmethod.

    Examples
    --------
    >>> @register_pytree_with_keys_class
    ... class P:
    ...     def __init__(self, a): self.a = a
    ...     def tree_flatten_with_keys(self): return ((GetAttrKey("a"), self.a),), None
    ...     @classmethod
    ...     def tree_unflatten(cls, aux, children): return cls(*children)
    >>> keystr(tree_leaves_with_path(P(1))[0][0])
    '.a'
    """
    flatten = (lambda x: x.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten, flatten)
    return cls


def register_dataclass(nodetype=None, data_fields=None, meta_fields=None, drop_fields=()):
    """Register a dataclass as a pytree node: ``data_fields`` are children, ``meta_fields`` static aux data.

    Without ``data_fields``/``meta_fields`` the dataclass's fields are used, those with
    ``field(metadata=dict(static=True))`` being meta fields. Returns ``nodetype`` (usable as a decorator).

    Examples
    --------
    >>> @register_dataclass
    ... @dataclasses.dataclass
    ... class Layer:
    ...     w: Any
    ...     name: str = dataclasses.field(default="d", metadata=dict(static=True))
    >>> tree_flatten(Layer(1.0))[0]
    [1.0]
    """
    if nodetype is None:
        return lambda cls: register_dataclass(cls, data_fields, meta_fields, drop_fields)
    if data_fields is None and meta_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError("register_dataclass: data_fields and meta_fields are required for a non-dataclass")
        data_fields, meta_fields = [], []
        for f in dataclasses.fields(nodetype):
            if f.name in drop_fields:
                continue
            (meta_fields if f.metadata.get("static", False) else data_fields).append(f.name)
    elif data_fields is None or meta_fields is None:
        raise TypeError("register_dataclass: give both data_fields and meta_fields, or neither")
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init_names = {f.name for f in dataclasses.fields(nodetype) if f.init}
        missing = init_names - set(data_fields) - set(meta_fields) - set(drop_fields)
        if missing:
            raise ValueError(f"register_dataclass: init fields {sorted(missing)} are neither data nor meta fields")

    def flatten_with_keys(x):
        return (tuple((GetAttrKey(n), getattr(x, n)) for n in data_fields),
                tuple(getattr(x, n) for n in meta_fields))

    def flatten(x):
        return [getattr(x, n) for n in data_fields], tuple(getattr(x, n) for n in meta_fields)

    def unflatten(meta, children):
        kwargs = dict(zip(meta_fields, meta))
        kwargs.update(zip(data_fields, children))
        return nodetype(**kwargs)

    register_pytree_with_keys(nodetype, flatten_with_keys, unflatten, flatten)
    return nodetype


def register_static(cls):
    """Register ``cls`` as a node without children: instances are kept in the treedef (hashable, static).

    Examples
    --------
    >>> @register_static
    ... class Tag:
    ...     def __hash__(self): return 0
    ...     def __eq__(self, other): return isinstance(other, Tag)
    >>> tree_leaves([Tag(), 1])
    [1]
    """
    register_pytree_with_keys(cls, lambda x: ((), x), lambda x, _: x, lambda x: ((), x))
    return cls


class Partial(functools.partial):
    """``functools.partial`` that is a pytree: the bound arguments are children, the function is static.

    A ``Partial`` can be passed to and returned from ``jit``-compiled functions.

    Examples
    --------
    >>> import operator
    >>> p = Partial(operator.add, 1.0)
    >>> tree_leaves(p), p(2.0)
    ([1.0], 3.0)
    """

    def __new__(cls, func, *args, **kw):
        if isinstance(func, functools.partial):       # merge nested partials, as functools does
            args = func.args + args
            kw = {**func.keywords, **kw}
            func = func.func
        return super().__new__(cls, func, *args, **kw)


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, c: Partial(func, *c[0], **c[1]))
_explicit.add(Partial)


class PyTreeRegistry:
    """The registry of pytree node types, as an object (``jax.tree_util.default_registry`` is one).

    tracejit has one registry, shared by every pytree function; this object's methods are those
    functions (flattening, one-level flattening, registration).

    Examples
    --------
    >>> leaves, tree = default_registry.flatten({"a": 1, "b": (2, 3)})
    >>> leaves
    [1, 2, 3]
    >>> default_registry.flatten_one_level((4, [5]))[0]
    [4, [5]]
    """

    def flatten(self, tree, leaf_predicate=None):
        """``(leaves, treedef)``, as :func:`tree_flatten`."""
        return tree_flatten(tree, is_leaf=leaf_predicate)

    def flatten_one_level(self, tree):
        """``(children, aux_data)`` of a node (None for a leaf), as :func:`flatten_one_level`."""
        try:
            children, meta = flatten_one_level(tree)
        except ValueError:
            return None
        return list(children), meta

    def flatten_with_path(self, tree, leaf_predicate=None):
        """``(leaves_with_paths, treedef)``, as :func:`tree_flatten_with_path`."""
        return tree_flatten_with_path(tree, is_leaf=leaf_predicate)

    def register_node(self, nodetype, flatten_func, unflatten_func, flatten_with_keys_func=None):
        """Register ``nodetype`` (as :func:`register_pytree_node`)."""
        register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)

    def register_dataclass_node(self, nodetype, data_fields, meta_fields):
        """Register a dataclass by its data and meta fields (as :func:`register_dataclass`)."""
        register_dataclass(nodetype, data_fields, meta_fields)

    def __repr__(self):
        return "PyTreeRegistry(tracejit's pytree node types)"


default_registry = PyTreeRegistry()
