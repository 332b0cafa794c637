"""vmap against the loop it replaces: ``stack([f(example) for example in batch])``."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.core.primitive import batching_rules

RNG = np.random.default_rng(0)


def _loop(f, args, in_axes, out_axis=0):
    """The reference: ``jit(f)`` on each example, each result leaf stacked along ``out_axis``."""
    in_axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    size = next(a.shape[ax] for a, ax in zip(args, in_axes) if ax is not None)
    one = tracejit.jit(f)
    outs = [one(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)]) for i in range(size)]
    return tracejit.tree_map(lambda *leaves: np.stack([np.asarray(v) for v in leaves], axis=out_axis), *outs)


def _check(f, args, in_axes=0, out_axes=0, rtol=1e-12, atol=1e-12, jit=False):
    g = tracejit.vmap(f, in_axes=in_axes, out_axes=out_axes)
    got = (tracejit.jit(g) if jit else g)(*args)
    want = _loop(f, args, in_axes, out_axes)
    for g_leaf, w_leaf in zip(tracejit.tree_leaves(got), tracejit.tree_leaves(want)):
        assert np.asarray(g_leaf).dtype == w_leaf.dtype
        np.testing.assert_allclose(g_leaf, w_leaf, rtol=rtol, atol=atol)
    assert tracejit.tree_structure(got) == tracejit.tree_structure(want)
    return got


X = RNG.standard_normal((5, 4, 3))
W = RNG.standard_normal((3, 2))

CASES = {
    "elementwise": (lambda x: jnp.sin(x) * 2 + x ** 2 - 1, (X,), 0),
    "where": (lambda x: jnp.where(x > 0, x, 0.5), (X,), 0),
    "clip_abs": (lambda x: jnp.clip(jnp.abs(x), 0.2, 1.0), (X,), 1),
    "sum": (lambda x: x.sum(), (X,), 0),
    "max_axis": (lambda x: x.max(axis=0), (X,), 2),
    "mean_keepdims": (lambda x: x.mean(axis=1, keepdims=True), (X,), 0),
    "argmax": (lambda x: jnp.argmax(x, axis=-1), (X,), 1),
    "cumsum": (lambda x: jnp.cumsum(x, axis=1), (X,), 0),
    "sort": (lambda x: jnp.sort(x, axis=0), (X,), 2),
    "reverse_slice": (lambda x: x[::-1, 1:], (X,), 0),
    "transpose_reshape": (lambda x: x.T.reshape(-1), (X,), 1),
    "expand": (lambda x: x[None, :, ::2] * 3, (X,), 0),
    "matmul_shared_weight": (lambda x, w: x @ w, (X, W), (0, None)),
    "matmul_weight_left": (lambda w, x: w.T @ x.T, (W, X), (None, 0)),
    "matmul_both": (lambda a, b: a @ b.T, (X, RNG.standard_normal((5, 2, 3))), (0, 0)),
    "matmul_batched_weight": (lambda x, w: x @ w, (X[0], RNG.standard_normal((6, 3, 2))), (None, 0)),
    "vector_dot": (lambda a, b: jnp.dot(a, b), (X[:, 0], X[:, 1]), (0, 0)),
    "concatenate_shared": (lambda x, c: jnp.concatenate([x, c], axis=0), (X, X[0]), (0, None)),
    "stack": (lambda x: jnp.stack([x, 2 * x], axis=-1), (X,), 0),
    "softmax": (lambda x: jnp.exp(x - x.max()) / jnp.exp(x - x.max()).sum(), (X,), 0),
    "pad": (lambda x: jnp.pad(x, ((1, 0), (0, 2))), (X,), 0),
    "gather_shared_index": (lambda x: x[np.array([2, 0, 0])], (X,), 0),
    "gather_batched_index": (lambda x, i: x[i], (X, np.array([3, 0, 1, 2, 3])), (0, 0)),
    "take": (lambda x, i: jnp.take(x, i, axis=1), (X, np.array([[0, 2], [1, 1], [2, 0], [0, 0], [1, 2]])), (0, 0)),
    "gather_shared_table": (lambda t, i: t[i], (X[0], np.array([[3, 0], [1, 1], [2, 2], [0, 3], [1, 0]])), (None, 0)),
    "gather_clip_out_of_range": (lambda x, i: jnp.take(x, i, axis=0, mode="clip"), (X, np.array([7, -9, 2, 0, 1])), (0, 0)),
    "gather_fill_out_of_range": (lambda x, i: jnp.take(x, i, axis=1, mode="fill", fill_value=-1.0),
                                 (X, np.array([5, 1, -7, 2, 0])), (0, 0)),
    "scatter_set": (lambda x, v: x.at[1].set(v), (X, X[:, 0]), (0, 0)),
    "scatter_set_batched_index": (lambda x, i, v: x.at[i].set(v), (X, np.array([0, 3, 1, 1, 2]), X[:, 0]), (0, 0, 0)),
    "scatter_add_duplicates": (lambda x, i: x.at[i].add(1.0), (X, np.array([[0, 0, 1], [2, 2, 2], [3, 1, 3], [0, 1, 2],
                                                                              [1, 1, 0]])), (0, 0)),
    "scatter_into_shared": (lambda x, i, v: x.at[i].set(v), (X[0], np.array([0, 3, 1, 1, 2]), X[:, 0]), (None, 0, 0)),
    "scatter_shared_update": (lambda x, v: x.at[np.array([2, 0])].add(v), (X, X[0, :2]), (0, None)),
    "scatter_drop_out_of_range": (lambda x, i, v: x.at[i].set(v, mode="drop"),
                                  (X, np.array([9, 0, -8, 3, 1]), X[:, 0]), (0, 0, 0)),
    "scatter_add_shared": (lambda x: x.at[:, 0].add(1.0), (X,), 0),
    "dynamic_slice": (lambda x, i: lax.dynamic_slice(x, (i, 0), (2, 3)), (X, np.int64(1)), (0, None)),
    "dynamic_slice_batched_start": (lambda x, i: lax.dynamic_slice(x, (i, 0), (2, 3)), (X, np.arange(5) % 3), (0, 0)),
    "dynamic_update_slice": (lambda x, u: lax.dynamic_update_slice(x, u, (1, 0)), (X, X[:, :2]), (0, 0)),
    "inv": (lambda a: jnp.linalg.inv(a @ a.T + 3 * jnp.eye(4)), (X,), 0),
    "solve": (lambda a, b: jnp.linalg.solve(a @ a.T + 3 * jnp.eye(4), b), (X, X[:, :, 0]), (0, 0)),
    "cholesky_det": (lambda a: jnp.linalg.cholesky(a @ a.T + jnp.eye(4)) * jnp.linalg.det(a @ a.T + jnp.eye(4)),
                     (X,), 0),
    "slogdet": (lambda a: jnp.stack(jnp.linalg.slogdet(a[:3, :3] + 2 * jnp.eye(3))), (X,), 0),
    "eigh": (lambda a: jnp.linalg.eigh(a[:3] @ a[:3].T)[0], (X,), 0),
    "svd_values": (lambda a: jnp.linalg.svd(a, compute_uv=False), (X,), 0),
    "qr_r_abs": (lambda a: jnp.abs(jnp.linalg.qr(a)[1]), (X,), 0),
    "pinv": (lambda a: jnp.linalg.pinv(a), (X,), 0),
    "solve_shared_matrix": (lambda a, b: jnp.linalg.solve(a @ a.T + 3 * jnp.eye(4), b), (X[0], X[:, :, 0]),
                            (None, 0)),
    "cond": (lambda p, v: lax.cond(p > 0, lambda: v * 2, lambda: v - 1), (X[:, 0, 0], X), (0, 0)),
    "cond_shared_predicate": (lambda p, v: lax.cond(p > 0, lambda: v * 2, lambda: jnp.sin(v)), (np.float64(1.0), X),
                              (None, 0)),
    "switch": (lambda i, v: lax.switch(i, [lambda u: u + 1, lambda u: u * u, lambda u: -u], v),
               (np.array([0, 2, 1, 5, -1]), X), (0, 0)),
    "cond_unbatched_operand": (lambda p, v: lax.cond(p > 0, lambda: v[0], lambda: p), (X[:, 0, 0], X[0, 0]), (0, None)),
    "fori_loop": (lambda v: lax.fori_loop(0, 3, lambda i, c: c * 0.5 + i, v), (X,), 0),
    "scan": (lambda v: lax.scan(lambda c, r: (c + r, c * r), 0.0, v)[1], (X[:, :, 0],), 0),
    "scan_batched_init": (lambda c, xs: lax.scan(lambda c, x: (c * 0.9 + x, c - x), c, xs),
                          (X[:, 0, :], X[0]), (0, None)),
    "scan_batched_consts_reverse": (lambda w, xs: lax.scan(lambda c, x: (c + w * x, jnp.sin(c)), 0.0, xs,
                                                           reverse=True)[1], (X[:, 0, 0], X[0, :, 0]), (0, None)),
    "scan_xs_on_axis_1": (lambda xs: lax.scan(lambda c, x: (jnp.maximum(c, x), c.sum()), jnp.zeros(3), xs),
                          (np.moveaxis(X, 0, 1),), 1),
    "while_steps_differ": (lambda n: lax.while_loop(lambda c: c[0] > 1, lambda c: (jnp.where(c[0] % 2 == 0, c[0] // 2,
                                                                                            3 * c[0] + 1), c[1] + 1),
                                                    (n, 0)), (np.array([6, 7, 1, 27, 2]),), 0),
    "while_shared_predicate": (lambda x: lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * 1.5),
                                                        (0, x)), (X,), 0),
    "fori_loop_batched_bound": (lambda n, x: lax.fori_loop(0, n, lambda i, c: c + i * x, x), (np.array([0, 3, 1, 5, 2]), X),
                                (0, 0)),
    "shared_scalar_output": (lambda x, y: (x * 0).sum() + y, (X, np.float64(2.0)), (0, None)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_matches_the_loop(name):
    f, args, in_axes = CASES[name]
    _check(f, args, in_axes)


@pytest.mark.parametrize("name", ["elementwise", "matmul_shared_weight", "matmul_both", "gather_batched_index",
                                  "switch", "cond_shared_predicate",
                                  "gather_shared_table", "scatter_set_batched_index", "scatter_add_duplicates",
                                  "cond", "softmax", "argmax", "dynamic_slice_batched_start"])
def test_jit_of_vmap(name):
    f, args, in_axes = CASES[name]
    _check(f, args, in_axes, rtol=1e-12, atol=1e-12, jit=True)


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.int64, np.float32, np.complex64, np.complex128])
def test_dtypes(dtype):
    x = (RNG.standard_normal((4, 3)) * 3).astype(dtype)
    if dtype == np.bool_:
        f = lambda v: jnp.logical_xor(v, v[::-1]) | True  # noqa: E731
    elif np.dtype(dtype).kind == "c":
        f = lambda v: v * v.conj() + 1j  # noqa: E731
    else:
        f = lambda v: v * 2 - v.sum()  # noqa: E731
    _check(f, (x,), 0, rtol=1e-6, atol=1e-6)


def test_special_values_and_empty_batch():
    x = np.array([[np.nan, np.inf], [-np.inf, -0.0], [0.0, 1e-310]])
    got = tracejit.vmap(lambda v: jnp.maximum(v, 0.0) + jnp.sqrt(jnp.abs(v)))(x)
    np.testing.assert_array_equal(got, np.maximum(x, 0.0) + np.sqrt(np.abs(x)))
    empty = tracejit.vmap(lambda v: (v * 2).sum())(np.zeros((0, 3)))
    assert empty.shape == (0,)
    assert tracejit.vmap(lambda v: jnp.linalg.inv(v))(np.zeros((0, 2, 2))).shape == (0, 2, 2)


def test_in_axes_variants():
    a = RNG.standard_normal((3, 4))
    b = RNG.standard_normal((4, 3))
    f = lambda x, y: x * y + 1  # noqa: E731
    _check(f, (a, b), (1, 0))
    _check(f, (a, b.T), (-1, -1))
    _check(f, (a, a[0]), (0, None))
    # pytree arguments with a prefix of in_axes
    tree_f = lambda p, x: p["w"] * x + p["b"]  # noqa: E731
    params = {"w": RNG.standard_normal(3), "b": RNG.standard_normal(3)}
    xs = RNG.standard_normal((6, 3))
    got = tracejit.vmap(tree_f, in_axes=(None, 0))(params, xs)
    np.testing.assert_allclose(got, params["w"] * xs + params["b"])
    per_example_b = {"w": params["w"], "b": RNG.standard_normal((6, 3))}
    got = tracejit.vmap(tree_f, in_axes=({"w": None, "b": 0}, 0))(per_example_b, xs)
    np.testing.assert_allclose(got, params["w"] * xs + per_example_b["b"])
    # keyword arguments map over axis 0
    got = tracejit.vmap(lambda x, *, y: x - y)(xs, y=xs[::-1])
    np.testing.assert_allclose(got, xs - xs[::-1])
    # a list of in_axes means a tuple
    np.testing.assert_allclose(tracejit.vmap(f, in_axes=[0, None])(a, a[0]), a * a[0] + 1)


def test_out_axes_and_pytree_outputs():
    x = RNG.standard_normal((5, 3))
    out = tracejit.vmap(lambda v: {"double": 2 * v, "total": v.sum()}, out_axes={"double": 1, "total": 0})(x)
    np.testing.assert_allclose(out["double"], 2 * x.T)
    np.testing.assert_allclose(out["total"], x.sum(1))
    shared, mapped = tracejit.vmap(lambda v, c: (c * 2, v + c), in_axes=(0, None), out_axes=(None, 0))(x, x[0])
    np.testing.assert_allclose(shared, 2 * x[0])
    np.testing.assert_allclose(mapped, x + x[0])
    # an output that does not depend on the example, mapped anyway, is repeated
    np.testing.assert_allclose(tracejit.vmap(lambda v: jnp.ones(2))(x), np.ones((5, 2)))


def test_nested_vmap_pairwise_distances():
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((6, 3))
    dist = lambda u, v: jnp.sqrt(((u - v) ** 2).sum())  # noqa: E731
    got = tracejit.vmap(tracejit.vmap(dist, in_axes=(None, 0)), in_axes=(0, None))(a, b)
    want = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_per_example_gradients_and_gradient_of_vmap():
    w = RNG.standard_normal((3, 2))
    xs, ys = RNG.standard_normal((7, 3)), RNG.standard_normal((7, 2))

    def loss(w, x, y):
        return ((jnp.tanh(x @ w) - y) ** 2).sum()
    per_example = tracejit.jit(tracejit.vmap(tracejit.grad(loss), in_axes=(None, 0, 0)))(w, xs, ys)
    want = np.stack([tracejit.grad(loss)(w, x, y) for x, y in zip(xs, ys)])
    np.testing.assert_allclose(per_example, want, rtol=1e-10, atol=1e-12)
    total = tracejit.grad(lambda w: tracejit.vmap(loss, in_axes=(None, 0, 0))(w, xs, ys).sum())(w)
    np.testing.assert_allclose(total, want.sum(0), rtol=1e-10, atol=1e-12)


def test_vmapped_cond_gradient_and_program_size():
    xs = RNG.standard_normal(40)
    f = lambda x: lax.cond(x > 0, lambda: jnp.sin(x) * x, lambda: x ** 3)  # noqa: E731
    got = tracejit.vmap(tracejit.grad(f))(xs)
    want = np.where(xs > 0, np.cos(xs) * xs + np.sin(xs), 3 * xs ** 2)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    program = tracejit.make_jaxpr(tracejit.vmap(f))(xs)
    assert len(program.eqns) < 12, program      # both branches once, then a select: not 40 conds


def test_vmapped_scan_is_one_scan():
    xs = RNG.standard_normal((64, 10, 3))
    rnn = lambda seq: lax.scan(lambda h, x: (jnp.tanh(h * 0.5 + x), h.sum()), jnp.zeros(3), seq)  # noqa: E731
    program = tracejit.make_jaxpr(tracejit.vmap(rnn))(xs)
    assert [e.primitive.name for e in program.eqns].count("scan") == 1, program
    got = tracejit.jit(tracejit.vmap(rnn))(xs)
    want = [np.stack(w) for w in zip(*[tracejit.jit(rnn)(x) for x in xs])]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_random_keys_are_mapped():
    keys = tracejit.random.split(tracejit.random.PRNGKey(0), 4)

    def sample(key):
        k1, k2 = tracejit.random.split(key)
        return tracejit.random.normal(k1, (3,)) + tracejit.random.uniform(k2)
    got = tracejit.vmap(sample)(keys)
    want = np.stack([sample(k) for k in keys])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(tracejit.jit(tracejit.vmap(sample))(keys), want)
    many = tracejit.random.split(tracejit.random.PRNGKey(1), 100)
    program = tracejit.make_jaxpr(tracejit.vmap(sample))(many)
    assert [e.primitive.name for e in program.eqns].count("threefry2x32") <= 4, program   # not one per key


def test_float32_stays_float32_and_jit_matches_eager():
    x = RNG.standard_normal((8, 16)).astype(np.float32)
    # a shared Python scalar is weakly typed, as in JAX; a NumPy float64 scalar is not
    assert tracejit.vmap(lambda a, s: a * s, in_axes=(0, None))(x, 2.0).dtype == np.float32
    assert tracejit.vmap(lambda a, s: a * s, in_axes=(0, None))(x, np.float64(2.0)).dtype == np.float64
    f = tracejit.vmap(lambda v: jnp.exp(v) * 2 + v.mean())
    eager, jitted = f(x), tracejit.jit(f)(x)
    assert eager.dtype == jitted.dtype == np.float32
    np.testing.assert_allclose(jitted, eager, rtol=2e-6, atol=1e-6)     # float32 sums in another order


def test_errors_name_the_problem():
    x = np.ones((3, 2))
    with pytest.raises(ValueError, match="inconsistent sizes"):
        tracejit.vmap(lambda a, b: a + b)(x, np.ones((4, 2)))
    with pytest.raises(ValueError, match="at least one non-None"):
        tracejit.vmap(lambda a: a, in_axes=None)(x)
    with pytest.raises(ValueError, match="rank should be at least"):
        tracejit.vmap(lambda a: a, in_axes=2)(x)
    with pytest.raises(ValueError, match="out_axes is None"):
        tracejit.vmap(lambda a: a, out_axes=None)(x)
    with pytest.raises(ValueError, match="len\\(in_axes\\)=2"):
        tracejit.vmap(lambda a: a, in_axes=(0, 0))(x)
    with pytest.raises(NotImplementedError, match="spmd_axis_name"):
        tracejit.vmap(lambda a: a, spmd_axis_name="batch")     # (axis_name works: test_collectives_vmap.py)
    with pytest.raises(TypeError, match="in_axes must be"):
        tracejit.vmap(lambda a: a, in_axes="0")(x)
    np.testing.assert_allclose(tracejit.vmap(lambda: jnp.arange(2.0), in_axes=(), axis_size=3)(),
                               np.tile(np.arange(2.0), (3, 1)))


def test_common_primitives_have_batching_rules():
    """The loop fallback is for rare primitives: these must batch as whole arrays."""
    names = {p.name for p in batching_rules}
    for name in ("add", "mul", "sin", "exp", "select_n", "convert_element_type", "dot_general", "reduce_sum",
                 "reduce_max", "argmax", "cumsum", "broadcast_in_dim", "reshape", "transpose", "slice",
                 "concatenate", "pad", "rev", "squeeze", "sort", "dynamic_slice", "dynamic_update_slice",
                 "gather", "scatter", "cond", "scan", "while", "inv", "solve", "svd", "eigh", "cholesky"):
        assert name in names, name
    program = tracejit.make_jaxpr(tracejit.vmap(lambda x, w: jnp.tanh(x @ w).sum(-1)))(X, np.stack([W] * 5))
    assert len(program.eqns) < 8, program     # no per-example copies


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3), data=st.data())
def test_property_any_axis(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = RNG.standard_normal(shape)
    f = lambda v: jnp.cos(v) * v.sum() - jnp.flip(v)  # noqa: E731
    size = x.shape[axis]
    got = tracejit.vmap(f, in_axes=axis)(x)
    want = np.stack([f(np.take(x, i, axis=axis)) for i in range(size)]) if size else np.zeros(
        (0,) + tuple(np.delete(np.array(shape), axis % len(shape))))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# A batched gather inside a loop body or cond branch captures the example index (a constant) in
# the batched sub-program; loop and cond programs must be closed, so the batching rules pass such
# constants as operands (this raised KeyError eagerly and "must be closure-converted" under jit).
_SORT_ROWS = lambda a: a[jnp.argsort(a[:, 0])]          # noqa: E731

GATHER_IN_SUBPROGRAMS = {
    "fori_loop": lambda a: lax.fori_loop(0, 3, lambda k, a: _SORT_ROWS(a) * 1.5 - k, a),
    "scan": lambda a: lax.scan(lambda c, x: (_SORT_ROWS(c) + x, c[0]), a, jnp.arange(3.0))[0],
    "while_loop same trip count": lambda a: lax.while_loop(
        lambda c: c[1] < 3, lambda c: (_SORT_ROWS(c[0]) + 1.0, c[1] + 1), (a, 0))[0],
    "while_loop per-example trip count": lambda a: lax.while_loop(
        lambda c: c[0][0, 0] < 2.0, lambda c: (_SORT_ROWS(c[0]) + 1.0, c[1] + 1), (a, 0)),
    "cond shared predicate": lambda a: lax.cond(
        True, _SORT_ROWS, lambda a: a[::-1][jnp.argsort(a[:, 1])], a),
    "cond shared predicate, other branch": lambda a: lax.cond(
        False, _SORT_ROWS, lambda a: a[::-1][jnp.argsort(a[:, 1])] * 2.0, a),
    "switch in fori_loop": lambda a: lax.fori_loop(0, 2, lambda k, a: lax.switch(
        k, [_SORT_ROWS, lambda a: a[jnp.argsort(-a[:, 1])]], a), a),
}


@pytest.mark.parametrize("name", list(GATHER_IN_SUBPROGRAMS))
@pytest.mark.parametrize("under_jit", [False, True])
def test_vmap_of_batched_gathers_inside_loops_and_conds(name, under_jit):
    fn = GATHER_IN_SUBPROGRAMS[name]
    x = np.random.default_rng(7).normal(size=(4, 5, 2))
    want = [fn(xi) for xi in x]
    batched = tracejit.vmap(fn)
    got = (tracejit.jit(batched) if under_jit else batched)(x)
    want_leaves, got_leaves = tracejit.tree_leaves(want[0]), tracejit.tree_leaves(got)
    for k, g in enumerate(got_leaves):
        np.testing.assert_allclose(g, np.stack([np.asarray(tracejit.tree_leaves(w)[k]) for w in want]),
                                   rtol=1e-13, err_msg=name)
    assert len(got_leaves) == len(want_leaves)
