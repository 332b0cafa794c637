"""``tracejit.tree``: the short names of the pytree utilities (as ``jax.tree``).

Examples
--------
>>> import tracejit
>>> tracejit.tree.map(lambda x: x * 2, {"a": 1, "b": (2, None)})
{'a': 2, 'b': (4, None)}
"""
from __future__ import annotations

import dataclasses as _dataclasses

from tracejit import tree_util as _tu

__all__ = ["all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path", "map",
           "map_with_path", "reduce", "reduce_associative", "static", "structure", "transpose", "unflatten"]


def all(tree, *, is_leaf=None) -> bool:  # noqa: A001
    """``all()`` over the leaves of ``tree``.

    Examples
    --------
    >>> all([True, {"a": 1}]), all([True, 0])
    (True, False)
    """
    return _tu.tree_all(tree, is_leaf=is_leaf)


def broadcast(prefix_tree, full_tree, is_leaf=None):
    """Broadcast ``prefix_tree`` (a prefix of ``full_tree``'s structure) to ``full_tree``'s structure.

    Examples
    --------
    >>> broadcast([1, 2, 3], [[0, 0], 0, (0, 0, 0)])
    [[1, 1], 2, (3, 3, 3)]
    """
    return _tu.tree_broadcast(prefix_tree, full_tree, is_leaf)


def flatten(tree, is_leaf=None):
    """``(leaves, treedef)`` of ``tree``.

    Examples
    --------
    >>> flatten({"b": None, "a": [1, 2]})
    ([1, 2], {'a': [*, *], 'b': None})
    """
    return _tu.tree_flatten(tree, is_leaf)


def flatten_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    """``([(key path, leaf), ...], treedef)`` of ``tree``.

    Examples
    --------
    >>> flatten_with_path({"x": (5,)})[0]
    [((DictKey(key='x'), SequenceKey(idx=0)), 5)]
    """
    return _tu.tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)


def leaves(tree, is_leaf=None) -> list:
    """The leaves of ``tree``, left to right (dict entries in sorted key order).

    Examples
    --------
    >>> leaves({"b": 2, "a": [1, None]})
    [1, 2]
    """
    return _tu.tree_leaves(tree, is_leaf)


def leaves_with_path(tree, is_leaf=None, is_leaf_takes_path=False) -> list:
    """``(key path, leaf)`` pairs of ``tree``.

    Examples
    --------
    >>> [(_tu.keystr(p), x) for p, x in leaves_with_path({"w": [7, 8]})]
    [("['w'][0]", 7), ("['w'][1]", 8)]
    """
    return _tu.tree_leaves_with_path(tree, is_leaf, is_leaf_takes_path)


def map(f, tree, *rest, is_leaf=None):  # noqa: A001
    """Apply ``f`` leafwise to ``tree`` and the trees of ``rest`` (same structure, or ``tree``'s as prefix).

    Examples
    --------
    >>> map(lambda x, y: x + y, (1, [2]), (10, [20]))
    (11, [22])
    """
    return _tu.tree_map(f, tree, *rest, is_leaf=is_leaf)


def map_with_path(f, tree, *rest, is_leaf=None, is_leaf_takes_path=False):
    """Apply ``f(path, x, *xs)`` leafwise.

    Examples
    --------
    >>> map_with_path(lambda p, x: _tu.keystr(p), {"a": 0, "b": [0]})
    {'a': "['a']", 'b': ["['b'][0]"]}
    """
    return _tu.tree_map_with_path(f, tree, *rest, is_leaf=is_leaf, is_leaf_takes_path=is_leaf_takes_path)


def reduce(function, tree, initializer=_tu._UNSPECIFIED, is_leaf=None):
    """``functools.reduce`` over the leaves.

    Examples
    --------
    >>> import operator
    >>> reduce(operator.add, [1, (2, 3)], 10)
    16
    """
    return _tu.tree_reduce(function, tree, initializer, is_leaf)


def reduce_associative(operation, tree, *, identity=_tu._UNSPECIFIED, is_leaf=None):
    """Reduce the leaves with an associative operation, pairwise (logarithmic depth).

    Examples
    --------
    >>> import operator
    >>> reduce_associative(operator.mul, [1, (2, 3), 4])
    24
    """
    return _tu.tree_reduce_associative(operation, tree, identity=identity, is_leaf=is_leaf)


def structure(tree, is_leaf=None):
    """The treedef of ``tree``.

    Examples
    --------
    >>> structure((1, {"a": 2}))
    (*, {'a': *})
    """
    return _tu.tree_structure(tree, is_leaf)


def transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Turn an ``outer`` tree of ``inner`` trees into an ``inner`` tree of ``outer`` trees.

    Examples
    --------
    >>> transpose(structure([0, 0]), structure({"a": 0, "b": 0}), [{"a": 1, "b": 2}, {"a": 3, "b": 4}])
    {'a': [1, 3], 'b': [2, 4]}
    """
    return _tu.tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose)


def unflatten(treedef, leaves):
    """Rebuild a tree of structure ``treedef`` from ``leaves``.

    Examples
    --------
    >>> unflatten(structure({"a": 0, "b": (0, 0)}), [1, 2, 3])
    {'a': 1, 'b': (2, 3)}
    """
    return _tu.tree_unflatten(treedef, leaves)


def static(**kwargs):
    """A dataclass field marked static (``jax.tree.static``): ``dataclasses.field`` with
    ``metadata['static'] = True``, which :func:`tracejit.tree_util.register_dataclass` makes aux data.

    Examples
    --------
    >>> import dataclasses
    >>> import tracejit
    >>> @tracejit.tree_util.register_dataclass
    ... @dataclasses.dataclass
    ... class Op:
    ...     x: float
    ...     how: str = tracejit.tree.static(default="add")
    >>> tracejit.tree.leaves(Op(1.0))
    [1.0]
    """
    metadata = dict(kwargs.pop("metadata", None) or {})
    metadata["static"] = True
    return _dataclasses.field(metadata=metadata, **kwargs)
