"""Pytrees: flatten/unflatten/map of tuples, lists, dicts, None, namedtuples,
dataclasses and registered classes, and pytrees as jit arguments and results."""
import collections
import dataclasses

import numpy as np
import pytest

import tracejit
from tracejit import jit, register_pytree_node, tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten
from helpers import assert_same, count_traces

Point = collections.namedtuple("Point", "x y")


@dataclasses.dataclass
class Params:
    w: object
    b: object


class Pair:
    """A user class registered as a pytree node (aux data: a name)."""

    def __init__(self, first, second, name="pair"):
        self.first, self.second, self.name = first, second, name


register_pytree_node(Pair, lambda p: ((p.first, p.second), p.name), lambda name, c: Pair(c[0], c[1], name))


TREES = [1.0, (1, 2), [1, (2, 3)], {"b": 1, "a": [2, 3]}, None, (None, 1), Point(1, 2), Params(1, [2, 3]),
         {"p": Point(x=(1, 2), y=None), "q": [Params(3, 4)]}, (), [], {}]


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_flatten_unflatten_roundtrip(tree):
    leaves, treedef = tree_flatten(tree)
    rebuilt = tree_unflatten(treedef, leaves)
    assert rebuilt == tree and type(rebuilt) is type(tree)
    assert tree_leaves(tree) == leaves and tree_structure(tree) == treedef
    assert treedef.num_leaves == len(leaves)
    assert hash(treedef) == hash(tree_structure(tree))


def test_leaf_order_and_repr():
    leaves, treedef = tree_flatten({"b": (2, 3), "a": 1, "c": [None, 4]})
    assert leaves == [1, 2, 3, 4]  # dict keys sorted
    assert repr(treedef) == "{'a': *, 'b': (*, *), 'c': [None, *]}"
    assert repr(tree_structure((1,))) == "(*,)"
    assert repr(tree_structure(Point(1, 2))) == "Point(*, *)"


def test_structures_differ():
    assert tree_structure((1, 2)) != tree_structure([1, 2])
    assert tree_structure({"a": 1}) != tree_structure({"b": 1})
    assert tree_structure(Pair(1, 2, "x")) != tree_structure(Pair(1, 2, "y"))  # aux data counts
    assert tree_structure(Point(1, 2)) != tree_structure((1, 2))


def test_tree_map():
    assert tree_map(lambda v: v * 2, {"a": 1, "b": [2, 3]}) == {"a": 2, "b": [4, 6]}
    assert tree_map(lambda u, v: u + v, (1, [2]), (10, [20])) == (11, [22])
    out = tree_map(lambda v: v + 1, Pair(1, 2, "named"))
    assert (out.first, out.second, out.name) == (2, 3, "named")
    with pytest.raises(ValueError, match="structures differ"):
        tree_map(lambda u, v: u, (1, 2), [1, 2])
    # is_leaf stops recursion.
    assert tree_map(lambda v: len(v), {"a": (1, 2)}, is_leaf=lambda v: isinstance(v, tuple)) == {"a": 2}


def test_unflatten_leaf_count_errors():
    treedef = tree_structure((1, 2))
    with pytest.raises(ValueError, match="too many leaves"):
        tree_unflatten(treedef, [1, 2, 3])
    with pytest.raises(ValueError, match="too few leaves"):
        tree_unflatten(treedef, [1])


def test_tree_util_module_and_register_docs():
    assert tracejit.tree_util.tree_flatten is tree_flatten or callable(tracejit.tree_util.tree_flatten)
    assert register_pytree_node.__doc__ and "Examples" in register_pytree_node.__doc__


# ----------------------------------------------------------------------------- pytrees through jit

def test_jit_with_nested_containers():
    x = np.arange(3.0)
    y = np.ones((2, 2), np.float32)

    def f(tree):
        return {"sum": tree["a"][0] + tree["a"][1], "scaled": [tree["b"] * 2, None], "n": (tree["c"],)}
    tree = {"a": (x, x * 2), "b": y, "c": np.int32(4)}
    got = jit(f)(tree)
    assert_same(got, f(tree))


def test_jit_with_namedtuple_dataclass_registered():
    p = Point(np.arange(3.0), np.ones(3))
    params = Params(np.ones((2, 3)), np.zeros(2))
    pair = Pair(np.arange(2), np.arange(2) * 3, "tag")

    @jit
    def step(point, prm, pr):
        return Point(point.y, point.x * 2), Params(prm.w.T, prm.b + 1), Pair(pr.second, pr.first, pr.name)
    got_point, got_params, got_pair = step(p, params, pair)
    assert type(got_point) is Point and type(got_params) is Params and type(got_pair) is Pair
    assert_same(tuple(got_point), (p.y, p.x * 2))
    assert_same((got_params.w, got_params.b), (params.w.T, params.b + 1))
    assert_same((got_pair.first, got_pair.second), (pair.second, pair.first)) and got_pair.name == "tag"


def test_none_and_empty_containers_as_arguments_and_outputs():
    f = jit(lambda a, n, e: (a, n, e, None, {}, []))
    got = f(np.ones(2), None, ())
    assert got[1] is None and got[2] == () and got[3] is None and got[4] == {} and got[5] == []
    assert_same(got[0], np.ones(2))
    assert jit(lambda: None)() is None
    assert_same(jit(lambda: {"k": 1.5})(), {"k": np.asarray(1.5)})


def test_tree_structure_is_part_of_the_cache_key():
    counted = count_traces(lambda t: tracejit.tree_leaves(t)[0] * 1)
    f = jit(counted)
    f((np.ones(2), np.ones(2)))
    f((np.ones(2), np.ones(2)))
    assert counted.count == 1
    f([np.ones(2), np.ones(2)])
    f({"a": np.ones(2), "b": np.ones(2)})
    f(Pair(np.ones(2), np.ones(2), "x"))
    f(Pair(np.ones(2), np.ones(2), "y"))
    assert counted.count == 5


def test_pytree_kwargs_and_python_scalar_leaves():
    f = jit(lambda x, opts: x * opts["scale"] + opts["shift"][0])
    got = f(np.ones(3, np.float32), opts={"scale": 2.0, "shift": [1]})
    assert_same(got, np.full(3, 3.0, np.float32))


def test_unregistered_leaf_object_is_rejected():
    class Opaque:
        pass
    with pytest.raises(TypeError, match="Opaque.*static_argnums"):
        jit(lambda t: t)((np.ones(2), Opaque()))
