"""jax.ds (slices with a traced start: reads, x.at updates, Ref writes), lax.stage,
random.key_dtype and tree_util.default_registry.

The ds reference below spells out JAX's rules per element (measured on JAX 0.10: reads clamp,
x.at updates drop, Ref writes clamp or wrap-and-drop); every start from -7 to 7 is checked for each
size and stride, under jit with the start traced, and against JAX itself when installed.
"""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax, random, tree_util
from tracejit.numpy.dynamic_slices import Slice

N = 5
STARTS = range(-7, 8)
SHAPES = [(n, st) for st in (1, 2, 3) for n in range(0, 6)]


def _read_indices(i, n, st):
    if st == 1:
        i = i + N if i < 0 else i
        i = min(max(i, 0), N - n)
        return list(range(i, i + n))
    return [min(max(i + k * st, 0), N - 1) for k in range(n)]


def _ref_read(x, i, n, st):
    return x[..., _read_indices(i, n, st)]


def _ref_at_set(x, i, n, st, v):
    x = x.copy()
    if st == 1:
        if n == N or 0 <= i <= N - n:
            x[..., max(min(i, N - n), 0):max(min(i, N - n), 0) + n] = v
        return x
    for k in range(n):
        j = i + k * st
        if 0 <= j < N:
            x[..., j] = v[k] if np.ndim(v) else v
    return x


def _ref_ref_write(x, i, n, st, v):
    x = x.copy()
    if st == 1:
        j = _read_indices(i, n, 1)
        x[j] = v
        return x
    for k in range(n):
        j = i + k * st
        j = j + N if j < 0 else j
        if 0 <= j < N:
            x[j] = v[k]
    return x


@pytest.mark.parametrize("n,st", SHAPES)
def test_ds_reads_and_updates_follow_jax_rules(n, st):
    x = np.arange(float(N))
    X = np.arange(4.0 * N).reshape(4, N)
    get = tracejit.jit(lambda x, i: x[tracejit.ds(i, n, st)])
    get2 = tracejit.jit(lambda x, i: x[1:, tracejit.ds(i, n, st)])
    at_set = tracejit.jit(lambda x, i: x.at[tracejit.ds(i, n, st)].set(-1.0))
    at_add = tracejit.jit(lambda x, i: x.at[0, tracejit.ds(i, n, st)].add(10.0))
    vals = -np.arange(1.0, n + 1.0)

    def write(r, i):
        r[tracejit.ds(i, n, st)] = -jnp.arange(1.0, n + 1.0)
    ref_write = tracejit.jit(write)
    for i in STARTS:
        np.testing.assert_array_equal(get(x, i), _ref_read(x, i, n, st), err_msg=f"get {i}")
        np.testing.assert_array_equal(get2(X, i), _ref_read(X[1:], i, n, st), err_msg=f"get2 {i}")
        np.testing.assert_array_equal(at_set(x, i), _ref_at_set(x, i, n, st, -1.0), err_msg=f"set {i}")
        want = X.copy()
        want[0] = _ref_at_set(X[0], i, n, st, X[0, _read_indices(i, n, st)] + 10.0 if st == 1 else
                              np.array([X[0, min(max(i + k * st, 0), N - 1)] + 10.0 for k in range(n)]))
        np.testing.assert_array_equal(at_add(X, i), want, err_msg=f"add {i}")
        r = tracejit.new_ref(x)
        ref_write(r, i)
        np.testing.assert_array_equal(tracejit.freeze(r), _ref_ref_write(x, i, n, st, vals), err_msg=f"ref {i}")


def test_ds_forms_eager_grad_and_vmap():
    assert tracejit.ds(None) == slice(None)
    s = tracejit.ds(3)
    assert isinstance(s, Slice) and (s.start, s.size, s.stride) == (0, 3, 1)
    x = jnp.arange(10.0)
    np.testing.assert_array_equal(x[tracejit.ds(4, 2)], [4.0, 5.0])          # an Array, eagerly
    g = tracejit.grad(lambda x, i: (x[tracejit.ds(i, 3)] ** 2).sum())(np.arange(6.0), 2)
    np.testing.assert_array_equal(g, [0, 0, 4, 6, 8, 0])
    out = tracejit.vmap(lambda x, i: x[tracejit.ds(i, 2)])(np.arange(10.0).reshape(2, 5), np.array([0, 3]))
    np.testing.assert_array_equal(out, [[0, 1], [8, 9]])
    with pytest.raises(TypeError, match="integer"):
        tracejit.jit(lambda x, i: x[tracejit.ds(i, 2)])(x, 1.5)
    with pytest.raises(ValueError, match="stride"):
        tracejit.ds(0, 2, 0)


def test_ds_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    x = np.arange(float(N))
    for n, st in [(2, 1), (3, 2), (5, 1), (2, 3)]:
        for i in (-6, -1, 0, 2, 4, 6):
            want = jax.jit(lambda x, i: x.at[jax.ds(i, n, st)].set(-1.0))(x, i)
            got = tracejit.jit(lambda x, i: x.at[tracejit.ds(i, n, st)].set(-1.0))(x, i)
            np.testing.assert_array_equal(np.asarray(want), got)
            want = jax.jit(lambda x, i: x[jax.ds(i, n, st)])(x, i)
            np.testing.assert_array_equal(np.asarray(want), tracejit.jit(lambda x, i: x[tracejit.ds(i, n, st)])(x, i))


def test_lax_stage_lifts_values_into_the_trace():
    np.testing.assert_array_equal(lax.stage(np.arange(3)), [0, 1, 2])
    assert isinstance(lax.stage(2.0), tracejit.Array)
    seen = []
    tracejit.jit(lambda: seen.append(type(lax.stage(2.0)).__name__) or 0)()
    assert seen == ["Tracer"]
    text = str(tracejit.make_jaxpr(lambda: lax.stage(3.0) * 2)())
    assert "mul" in text                          # an operation of the program, not folded away
    assert tracejit.grad(lambda x: lax.stage(x) * 3)(1.0) == 3.0
    np.testing.assert_array_equal(tracejit.vmap(lambda x: lax.stage(2.0) + x)(np.ones(2)), [3.0, 3.0])


def test_key_dtype_and_default_registry():
    assert random.key_dtype() == random.key(0).dtype == np.uint32
    with pytest.raises(NotImplementedError, match="threefry"):
        random.key_dtype("rbg")
    reg = tree_util.default_registry
    leaves, tree = reg.flatten({"b": (2, 3), "a": 1})
    assert leaves == [1, 2, 3] and tree == tree_util.tree_structure({"a": 0, "b": (0, 0)})
    assert reg.flatten([1, (2, 3)], leaf_predicate=lambda x: isinstance(x, tuple))[0] == [1, (2, 3)]
    assert reg.flatten_one_level(5) is None and reg.flatten_one_level((4, [5])) == ([4, [5]], None)

    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b
    reg.register_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    doubled = tree_util.tree_map(lambda v: 2 * v, Pair(1, 2))
    assert (doubled.a, doubled.b) == (2, 4)
    paths = [tree_util.keystr(p) for p, _ in reg.flatten_with_path({"x": [7]})[0]]
    assert paths == ["['x'][0]"]
