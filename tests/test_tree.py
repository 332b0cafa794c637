"""tracejit.tree and tracejit.tree_util (jax.tree / jax.tree_util): key paths, registration helpers,
PyTreeDef methods, Partial, and registered nodes passing through jit, grad and vmap."""
import collections
import dataclasses
import functools
import operator
from typing import Any

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import tree_util as tu
import tracejit.tree as jtree

Point = collections.namedtuple("Point", "x y")


def test_tree_namespace_basics():
    t = {"b": (2, None), "a": [1, Point(3, 4)]}
    leaves, td = jtree.flatten(t)
    assert leaves == [1, 3, 4, 2]
    assert jtree.leaves(t) == leaves and jtree.structure(t) == td
    assert jtree.unflatten(td, [10, 30, 40, 20]) == {"b": (20, None), "a": [10, Point(30, 40)]}
    assert jtree.map(lambda x: x + 1, t) == {"b": (3, None), "a": [2, Point(4, 5)]}
    assert jtree.reduce(operator.add, t) == 10
    assert jtree.reduce(operator.add, t, 100) == 110
    assert jtree.reduce(operator.add, [], 7) == 7
    assert jtree.reduce_associative(operator.add, [1, (2, 3), [4, 5, 6]]) == 21
    assert jtree.reduce_associative(operator.add, [], identity=0) == 0
    with pytest.raises(TypeError):
        jtree.reduce_associative(operator.add, [])
    assert jtree.all([True, {"a": 1}]) and not jtree.all([True, (0,)]) and jtree.all([None])
    # is_leaf sees None (None is otherwise an empty node).
    assert jtree.leaves([None, 1]) == [1]
    assert jtree.leaves([None, 1], is_leaf=lambda x: x is None) == [None, 1]
    assert jtree.map(lambda x: 0 if x is None else x, (None, 2), is_leaf=lambda x: x is None) == (0, 2)


def test_ordereddict_and_defaultdict():
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    leaves, td = jtree.flatten(od)
    assert leaves == [1, 2]                                   # insertion order, not sorted
    back = td.unflatten([3, 4])
    assert type(back) is collections.OrderedDict and list(back.items()) == [("b", 3), ("a", 4)]
    assert td != jtree.structure(collections.OrderedDict([("a", 2), ("b", 1)]))
    assert td != jtree.structure({"b": 1, "a": 2})
    assert [tu.keystr(p) for p, _ in jtree.leaves_with_path(od)] == ["['b']", "['a']"]
    dd = collections.defaultdict(list, {"y": 1, "x": 2})
    leaves, td = jtree.flatten(dd)
    assert leaves == [2, 1]
    back = td.unflatten([5, 6])
    assert type(back) is collections.defaultdict and back.default_factory is list and dict(back) == {"x": 5, "y": 6}
    assert [tu.keystr(p) for p, _ in jtree.leaves_with_path(dd)] == ["['x']", "['y']"]
    out = tracejit.jit(lambda d: jtree.map(lambda v: v * 2, d))(collections.OrderedDict(w=np.ones(2), b=np.zeros(1)))
    assert type(out) is collections.OrderedDict and list(out) == ["w", "b"]


def test_map_with_prefix_rest():
    # rest trees may have ``tree``'s structure as a prefix: f gets whole subtrees.
    out = jtree.map(lambda a, b: (a, b), (1, 2), ([3, 4], {"k": 5}))
    assert out == ((1, [3, 4]), (2, {"k": 5}))
    with pytest.raises(ValueError):
        jtree.map(lambda a, b: a, (1, 2), [1, 2])
    with pytest.raises(ValueError):
        jtree.map(lambda a, b: a, {"a": 1}, {"b": 1})
    with pytest.raises(ValueError):
        jtree.map(lambda a, b: a, (1, 2), (1, 2, 3))


def test_key_paths_and_keystr():
    params = {"foo": {"bar": {"baz": 1, "bat": [2, 3]}}, "p": Point(4, None)}
    pairs = jtree.leaves_with_path(params)
    assert [x for _, x in pairs] == jtree.leaves(params)
    strs = [tu.keystr(p) for p, _ in pairs]
    assert strs == ["['foo']['bar']['bat'][0]", "['foo']['bar']['bat'][1]", "['foo']['bar']['baz']", "['p'].x"]
    assert [tu.keystr(p, simple=True, separator="/") for p, _ in pairs] == [
        "foo/bar/bat/0", "foo/bar/bat/1", "foo/bar/baz", "p/x"]
    path0 = pairs[0][0]
    assert path0 == (tu.DictKey("foo"), tu.DictKey("bar"), tu.DictKey("bat"), tu.SequenceKey(0))
    assert path0[-1].idx == 0 and path0[0].key == "foo"
    pv, td = jtree.flatten_with_path([1, {"x": 3}])
    assert pv == [((tu.SequenceKey(0),), 1), ((tu.SequenceKey(1), tu.DictKey("x")), 3)]
    assert td == jtree.structure([1, {"x": 3}])
    assert jtree.map_with_path(lambda p, x: x + p[0].idx, [1, 2, 3]) == [1, 3, 5]
    assert jtree.map_with_path(lambda p, x, y: (tu.keystr(p), x + y), {"a": 1}, {"a": 2}) == {"a": ("['a']", 3)}
    # is_leaf_takes_path
    got = jtree.leaves_with_path({"a": (1, 2), "b": (3, 4)}, is_leaf=lambda p, x: p == (tu.DictKey("a"),),
                                 is_leaf_takes_path=True)
    assert [x for _, x in got] == [(1, 2), 3, 4]
    assert str(tu.FlattenedIndexKey(2)) == "[<flat index 2>]" and str(tu.GetAttrKey("w")) == ".w"


def test_dataclass_and_unkeyed_nodes_paths():
    @dataclasses.dataclass
    class D:
        a: Any
        b: Any

    class Pair:
        def __init__(self, u, v): self.u, self.v = u, v

    tu.register_pytree_node(Pair, lambda p: ((p.u, p.v), None), lambda _, c: Pair(*c))
    pairs = jtree.leaves_with_path([D(1, 2), Pair(3, 4)])
    assert [tu.keystr(p) for p, _ in pairs] == ["[0].a", "[0].b", "[1][<flat index 0>]", "[1][<flat index 1>]"]


def test_treedef_methods():
    td = jtree.structure({"a": 1, "b": (2, 3), "c": None})
    assert td.num_leaves == 3
    assert td.num_nodes == 6          # dict, leaf a, tuple and its 2 leaves, None node
    assert jtree.structure(None).num_nodes == 1 and jtree.structure(None).num_leaves == 0
    children = td.children()
    assert children == [jtree.structure(1), jtree.structure((2, 3)), jtree.structure(None)]
    assert tu.treedef_children(td) == children
    assert td.children[1] == children[1]          # tuple-style indexing still works
    assert td.unflatten([7, 8, 9]) == {"a": 7, "b": (8, 9), "c": None}
    assert td.flatten_up_to({"a": [1, 2], "b": ({"z": 0}, 3), "c": None}) == [[1, 2], {"z": 0}, 3]
    with pytest.raises(ValueError):
        td.flatten_up_to({"a": 1, "b": [2, 3], "c": None})
    assert td.node_data() == (dict, ("a", "b", "c"))
    assert jtree.structure(1).node_data() is None
    assert tu.treedef_is_leaf(jtree.structure(1)) and tu.treedef_is_leaf(jtree.structure(None))
    assert not tu.treedef_is_leaf(td)
    assert tu.treedef_is_strict_leaf(jtree.structure(1)) and not tu.treedef_is_strict_leaf(jtree.structure(None))
    tt = tu.treedef_tuple([jtree.structure(1), jtree.structure([1, 2])])
    assert tt == jtree.structure((0, [0, 0]))
    assert tu.build_tree(td, [1, [2, 3], []]) == {"a": 1, "b": (2, 3), "c": None}
    assert tu.all_leaves([1, 2.0, np.ones(2)]) and not tu.all_leaves([1, (2,)]) and not tu.all_leaves([None])
    assert tu.all_leaves([None, 1], is_leaf=lambda x: x is None)
    assert tu.is_tree_node(dict) and tu.is_tree_node(Point) and not tu.is_tree_node(float)
    assert tu.flatten_one_level({"b": 2, "a": 1}) == ([1, 2], ("a", "b"))
    with pytest.raises(ValueError):
        tu.flatten_one_level(1.0)


def test_transpose_and_broadcast():
    outer, inner = jtree.structure([0, 0, 0]), jtree.structure({"m": 0, "v": 0})
    t = [{"m": i, "v": 10 * i} for i in range(3)]
    assert jtree.transpose(outer, inner, t) == {"m": [0, 1, 2], "v": [0, 10, 20]}
    assert jtree.transpose(outer, None, t) == {"m": [0, 1, 2], "v": [0, 10, 20]}
    with pytest.raises(TypeError):
        jtree.transpose(outer, jtree.structure((0, 0)), t)
    assert jtree.broadcast([1, 2, 3], [[0, 0], 0, (0, 0, 0)]) == [[1, 1], 2, (3, 3, 3)]
    assert jtree.broadcast(5, {"a": 0, "b": [0, 0]}) == {"a": 5, "b": [5, 5]}
    assert tu.tree_broadcast({"a": 1, "b": 2}, {"a": (0, 0), "b": 0}) == {"a": (1, 1), "b": 2}


def test_register_with_keys_and_class_decorators():
    class Box:
        def __init__(self, v, w, tag): self.v, self.w, self.tag = v, w, tag

    tu.register_pytree_with_keys(
        Box, lambda b: (((tu.GetAttrKey("v"), b.v), (tu.GetAttrKey("w"), b.w)), b.tag),
        lambda tag, c: Box(c[0], c[1], tag))
    b = Box(1, [2], "t")
    assert [tu.keystr(p) for p, _ in jtree.leaves_with_path(b)] == [".v", ".w[0]"]
    out = jtree.map(lambda x: x * 3, b)
    assert (out.v, out.w, out.tag) == (3, [6], "t")
    assert jtree.structure(Box(1, [2], "t")) != jtree.structure(Box(1, [2], "u"))

    @tu.register_pytree_node_class
    class Scaled:
        def __init__(self, x, scale): self.x, self.scale = x, scale
        def tree_flatten(self): return (self.x,), self.scale
        @classmethod
        def tree_unflatten(cls, scale, children): return cls(children[0], scale)

    s = jtree.map(lambda x: x + 1, Scaled(1.0, 2))
    assert (s.x, s.scale) == (2.0, 2)

    @tu.register_pytree_with_keys_class
    class KP:
        def __init__(self, a, b): self.a, self.b = a, b
        def tree_flatten_with_keys(self): return ((tu.GetAttrKey("a"), self.a), (tu.GetAttrKey("b"), self.b)), None
        @classmethod
        def tree_unflatten(cls, aux, children): return cls(*children)

    assert [tu.keystr(p) for p, _ in jtree.leaves_with_path(KP(1, 2))] == [".a", ".b"]
    assert jtree.leaves(KP(1, (2, 3))) == [1, 2, 3]


def test_register_pytree_node_with_keys_func():
    class Two:
        def __init__(self, x, y): self.x, self.y = x, y

    tu.register_pytree_node(Two, lambda t: ((t.x, t.y), None), lambda _, c: Two(*c),
                            lambda t: (((tu.GetAttrKey("x"), t.x), (tu.GetAttrKey("y"), t.y)), None))
    assert [tu.keystr(p) for p, _ in jtree.leaves_with_path(Two(1, 2))] == [".x", ".y"]
    # re-registering without keys falls back to flat indices
    tu.register_pytree_node(Two, lambda t: ((t.x, t.y), None), lambda _, c: Two(*c))
    assert [tu.keystr(p) for p, _ in jtree.leaves_with_path(Two(1, 2))] == ["[<flat index 0>]", "[<flat index 1>]"]

    # a dataclass registered with its own flatten (one child) gets flat-index keys, not field names
    @dataclasses.dataclass
    class Half:
        a: Any
        b: Any

    tu.register_pytree_node(Half, lambda h: ((h.a,), h.b), lambda b, c: Half(c[0], b))
    assert [tu.keystr(p) for p, _ in jtree.leaves_with_path(Half(1, 2))] == ["[<flat index 0>]"]


def test_register_dataclass_and_static():
    @tu.register_dataclass
    @dataclasses.dataclass
    class Layer:
        w: Any
        b: Any
        name: str = dataclasses.field(default="dense", metadata=dict(static=True))

    leaves, td = jtree.flatten(Layer(1.0, 2.0, "x"))
    assert leaves == [1.0, 2.0]
    assert td != jtree.structure(Layer(1.0, 2.0, "y"))
    back = td.unflatten([3.0, 4.0])
    assert (back.w, back.b, back.name) == (3.0, 4.0, "x")
    assert [tu.keystr(p) for p, _ in jtree.leaves_with_path(Layer(1, 2))] == [".w", ".b"]

    @dataclasses.dataclass
    class Explicit:
        x: Any
        n: int

    tu.register_dataclass(Explicit, data_fields=["x"], meta_fields=["n"])
    assert jtree.leaves(Explicit(5, 3)) == [5]
    with pytest.raises(ValueError):
        @dataclasses.dataclass
        class Bad:
            x: Any
            y: Any
        tu.register_dataclass(Bad, data_fields=["x"], meta_fields=[])

    @tu.register_static
    @dataclasses.dataclass(frozen=True)
    class Cfg:
        depth: int

    assert jtree.leaves([Cfg(3), 1.0]) == [1.0]
    assert jtree.structure(Cfg(3)) != jtree.structure(Cfg(4))
    assert jtree.map(lambda x: x, [Cfg(3), 1.0]) == [Cfg(3), 1.0]


def test_registered_nodes_through_jit_grad_vmap():
    @tu.register_dataclass
    @dataclasses.dataclass
    class Lin:
        w: Any
        b: Any
        act: str = dataclasses.field(default="tanh", metadata=dict(static=True))

    def loss(p, x):
        y = x @ p.w + p.b
        y = jnp.tanh(y) if p.act == "tanh" else y
        return jnp.sum(y ** 2)

    rng = np.random.default_rng(0)
    p = Lin(rng.normal(size=(3, 2)), rng.normal(size=2))
    x = rng.normal(size=(4, 3))
    g = tracejit.jit(tracejit.grad(loss))(p, x)
    assert isinstance(g, Lin) and g.act == "tanh"
    # finite differences of the loss in w[0, 0]
    eps = 1e-6
    w2 = p.w.copy(); w2[0, 0] += eps
    fd = (loss(Lin(w2, p.b), x) - loss(p, x)) / eps
    np.testing.assert_allclose(g.w[0, 0], fd, rtol=1e-4)
    # vmap over a batch of Lin (in_axes as a pytree prefix)
    pb = Lin(np.stack([p.w, 2 * p.w]), np.stack([p.b, p.b]))
    out = tracejit.vmap(loss, in_axes=(Lin(0, 0), None))(pb, x)
    np.testing.assert_allclose(out, [loss(p, x), loss(Lin(2 * p.w, p.b), x)], rtol=1e-12)
    # returned from jit
    q = tracejit.jit(lambda p: Lin(p.w * 2, p.b, "id"))(p)
    assert isinstance(q, Lin) and q.act == "id"
    np.testing.assert_allclose(q.w, 2 * p.w)


def test_partial():
    p = tu.Partial(operator.add, 1.0)
    assert jtree.leaves(p) == [1.0] and p(2.0) == 3.0
    q = jtree.map(lambda x: x * 10, p)
    assert isinstance(q, tu.Partial) and q(1.0) == 11.0
    nested = tu.Partial(tu.Partial(lambda a, b, c=0: a + b + c, 1.0), c=5.0)
    assert nested(2.0) == 8.0 and jtree.leaves(nested) == [1.0, 5.0]

    @tracejit.jit
    def apply(f, x):
        return f(x)

    np.testing.assert_allclose(apply(tu.Partial(jnp.multiply, np.float64(3.0)), np.arange(3.0)), [0.0, 3.0, 6.0])

    @tracejit.jit
    def make(scale):
        return tu.Partial(jnp.multiply, scale)

    f = make(np.float64(2.0))
    assert isinstance(f, tu.Partial)
    np.testing.assert_allclose(f(np.ones(2)), [2.0, 2.0])
    g = tracejit.grad(lambda s: apply(tu.Partial(jnp.multiply, s), 3.0))(2.0)
    np.testing.assert_allclose(g, 3.0)


def test_top_level_namespace():
    assert tracejit.tree.map is jtree.map
    assert tracejit.tree_util.keystr is tu.keystr


def test_doctests():
    import doctest
    import tracejit.core.pytree as core_pytree
    for mod in (tu, jtree, core_pytree):
        res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        assert res.failed == 0, mod.__name__


def test_tree_static_fields_are_aux_data_and_static_under_jit():
    import dataclasses

    @tracejit.tree_util.register_dataclass
    @dataclasses.dataclass
    class Scaled:
        x: object
        how: str = tracejit.tree.static(default="add")
        k: int = tracejit.tree.static(default=2, metadata={"doc": "kept"})

    a, b = Scaled(np.ones(3)), Scaled(np.ones(3), "mul", 3)
    assert len(tracejit.tree.leaves(a)) == 1
    assert tracejit.tree.structure(a) != tracejit.tree.structure(b)
    assert dataclasses.fields(Scaled)[2].metadata["doc"] == "kept"

    @tracejit.jit
    def apply(s):
        return s.x + s.k if s.how == "add" else s.x * s.k       # Python branches on static fields
    np.testing.assert_array_equal(apply(a), np.full(3, 3.0))
    np.testing.assert_array_equal(apply(b), np.full(3, 3.0))
    np.testing.assert_array_equal(apply(Scaled(np.ones(3), "mul", 5)), np.full(3, 5.0))
