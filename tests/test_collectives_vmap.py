"""Collectives over named axes under ``vmap(..., axis_name=...)``: ``psum``, ``pmean``, ``pmax``,
``pmin``, ``all_gather``, ``psum_scatter``, ``all_to_all``, ``ppermute``, ``pshuffle``, ``axis_index``, ``axis_size``
against NumPy and against JAX (same source for both) when JAX is installed; nested names, jit,
loops, and derivatives."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax

X = np.arange(12.0).reshape(4, 3) - 5.0
Y = np.linspace(-1.0, 2.0, 24).reshape(2, 4, 3)

# name -> (function of (lib, lax, jnp) returning the vmapped callable, input)
PROGRAMS = {
    "psum": (lambda lib, lx, np_: lib.vmap(lambda v: lx.psum(v, "i"), axis_name="i"), X),
    "normalize": (lambda lib, lx, np_: lib.vmap(lambda v: v / lx.psum(np_.abs(v), "i"), axis_name="i"), X),
    "pmean_center": (lambda lib, lx, np_: lib.vmap(lambda v: v - lx.pmean(v, "i"), axis_name="i"), X),
    "pmax_pmin": (lambda lib, lx, np_: lib.vmap(lambda v: lx.pmax(v, "i") - lx.pmin(v, "i"), axis_name="i"), X),
    "all_gather": (lambda lib, lx, np_: lib.vmap(lambda v: lx.all_gather(v, "i"), axis_name="i"), X),
    "all_gather_axis1": (lambda lib, lx, np_: lib.vmap(lambda v: lx.all_gather(v, "i", axis=1), axis_name="i"), X),
    "all_gather_tiled": (lambda lib, lx, np_: lib.vmap(lambda v: lx.all_gather(v, "i", tiled=True), axis_name="i"), X),
    "psum_scatter": (lambda lib, lx, np_: lib.vmap(lambda v: lx.psum_scatter(v, "i"), axis_name="i"),
                     np.arange(16.0).reshape(4, 4)),
    "psum_scatter_tiled": (lambda lib, lx, np_: lib.vmap(lambda v: lx.psum_scatter(v, "i", tiled=True),
                                                          axis_name="i"), np.arange(32.0).reshape(4, 8)),
    "ppermute_ring": (lambda lib, lx, np_: lib.vmap(
        lambda v: lx.ppermute(v, "i", [(k, (k + 1) % 4) for k in range(4)]), axis_name="i"), X),
    "ppermute_partial": (lambda lib, lx, np_: lib.vmap(lambda v: lx.ppermute(v, "i", [(0, 2), (3, 1)]),
                                                        axis_name="i"), X),
    "pshuffle": (lambda lib, lx, np_: lib.vmap(lambda v: lx.pshuffle(v, "i", [2, 0, 3, 1]), axis_name="i"), X),
    "axis_index": (lambda lib, lx, np_: lib.vmap(lambda v: v * lx.axis_index("i"), axis_name="i"), X),
    "psum_of_constant": (lambda lib, lx, np_: lib.vmap(lambda v: v + lx.psum(1, "i"), axis_name="i"), X),
    "nested_two_names": (lambda lib, lx, np_: lib.vmap(lib.vmap(
        lambda v: (lx.psum(v, "i"), lx.psum(v, "j"), lx.psum(v, ("i", "j")), lx.axis_index("i") * 10
                   + lx.axis_index("j")), axis_name="j"), axis_name="i"), Y),
    "jit_of_vmap": (lambda lib, lx, np_: lib.jit(lib.vmap(lambda v: v * lx.pmean(v, "i"), axis_name="i")), X),
    "vmap_of_jit": (lambda lib, lx, np_: lib.vmap(lib.jit(lambda v: v * lx.pmean(v, "i")), axis_name="i"), X),
    "in_fori_loop": (lambda lib, lx, np_: lib.vmap(lambda v: lx.fori_loop(
        0, 3, lambda k, c: c * 0.5 + lx.pmean(c, "i"), v), axis_name="i"), X),
    "in_cond": (lambda lib, lx, np_: lib.vmap(lambda v: lx.cond(
        v[0] > 0, lambda u: u - lx.psum(u, "i"), lambda u: u + lx.psum(u, "i"), v), axis_name="i"), X),
    "grad_through_psum": (lambda lib, lx, np_: lib.vmap(lib.grad(
        lambda v: np_.sum(lx.psum(v * v, "i") * v)), axis_name="i"), X),
    "grad_of_all_gather": (lambda lib, lx, np_: lib.vmap(lib.grad(
        lambda v: np_.sum(np_.sin(lx.all_gather(v, "i")) * np_.arange(3.0))), axis_name="i"), X),
    "grad_of_ppermute": (lambda lib, lx, np_: lib.vmap(lib.grad(
        lambda v: np_.sum(lx.ppermute(v, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]) * np_.arange(3.0) * v)),
        axis_name="i"), X),
    "grad_of_psum_scatter": (lambda lib, lx, np_: lib.vmap(lib.grad(
        lambda v: np_.sum(lx.psum_scatter(v, "i") ** 2)), axis_name="i"), np.arange(16.0).reshape(4, 4) / 7),
    "all_to_all_tiled": (lambda lib, lx, np_: lib.vmap(lambda v: lx.all_to_all(v, "i", 0, 1, tiled=True),
                                                        axis_name="i"), np.arange(96.0).reshape(4, 8, 3)),
    "all_to_all": (lambda lib, lx, np_: lib.vmap(lambda v: lx.all_to_all(v, "i", 1, 0), axis_name="i"),
                   np.arange(48.0).reshape(4, 3, 4)),
    "all_to_all_same_axis": (lambda lib, lx, np_: lib.jit(lib.vmap(
        lambda v: lx.all_to_all(v, "i", 1, 1, tiled=True), axis_name="i")), np.arange(96.0).reshape(4, 3, 8)),
    "grad_of_all_to_all": (lambda lib, lx, np_: lib.vmap(lib.grad(
        lambda v: np_.sum(lx.all_to_all(v, "i", 0, 1, tiled=True) ** 2 * np_.arange(24.0).reshape(2, 12))),
        axis_name="i"), np.arange(96.0).reshape(4, 8, 3) / 50),
}


def _numpy_expectations():
    s = X.sum(0)
    A, B, C = (PROGRAMS[k][1] for k in ("all_to_all_tiled", "all_to_all", "all_to_all_same_axis"))
    return {
        "psum": np.broadcast_to(s, X.shape),
        "pmean_center": X - X.mean(0),
        "pmax_pmin": np.broadcast_to(X.max(0) - X.min(0), X.shape),
        "all_gather": np.broadcast_to(X, (4,) + X.shape),
        "all_gather_tiled": np.broadcast_to(X.reshape(-1), (4, 12)),
        "psum_scatter": np.arange(16.0).reshape(4, 4).sum(0),
        "ppermute_ring": np.roll(X, 1, axis=0),
        "ppermute_partial": np.stack([np.zeros(3), X[3], X[0], np.zeros(3)]),
        "pshuffle": X[[2, 0, 3, 1]],
        "axis_index": X * np.arange(4)[:, None],
        # Example k: chunk k (rows 2k, 2k+1) of every example, concatenated along axis 1.
        "all_to_all_tiled": np.stack([np.concatenate([A[j, 2 * k:2 * k + 2] for j in range(4)], axis=1)
                                      for k in range(4)]),
        # Example k: entry k of axis 1 of every example, stacked along a new axis 0.
        "all_to_all": np.stack([np.stack([B[j, :, k] for j in range(4)]) for k in range(4)]),
        "all_to_all_same_axis": np.stack([np.concatenate([C[j, :, 2 * k:2 * k + 2] for j in range(4)], axis=1)
                                          for k in range(4)]),
    }


def _leaves(x):
    return [np.asarray(v) for v in tracejit.tree_util.tree_leaves(x)]


@pytest.mark.parametrize("name", list(_numpy_expectations()))
def test_against_numpy(name):
    make, x = PROGRAMS[name]
    np.testing.assert_allclose(make(tracejit, lax, jnp)(x), _numpy_expectations()[name], rtol=1e-14)


@pytest.fixture(scope="module")
def jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


# JAX's vmap rule asks for a full permutation (its pmap and shard_map do not): tracejit gives
# zeros where nothing is sent, as those do; checked against NumPy above.
JAX_VMAP_REFUSES = {"ppermute_partial"}


@pytest.mark.parametrize("name", [n for n in PROGRAMS if n not in JAX_VMAP_REFUSES])
def test_against_jax(jax, name):
    make, x = PROGRAMS[name]
    got = make(tracejit, lax, jnp)(x)
    want = make(jax, jax.lax, jax.numpy)(x)
    for g, w in zip(_leaves(got), _leaves(want)):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_data_parallel_gradient_equals_whole_batch_gradient():
    # Per-example gradients averaged with pmean under vmap: the gradient of the mean loss.
    rng = np.random.default_rng(0)
    w, xs, ys = rng.standard_normal(3), rng.standard_normal((8, 3)), rng.standard_normal(8)

    def loss(w, x, y):
        return (jnp.dot(x, w) - y) ** 2

    def step(w, x, y):
        return lax.pmean(tracejit.grad(loss)(w, x, y), "batch")
    g = tracejit.jit(tracejit.vmap(step, in_axes=(None, 0, 0), axis_name="batch"))(w, xs, ys)
    whole = tracejit.grad(lambda w: jnp.mean((xs @ w - ys) ** 2))(w)
    np.testing.assert_allclose(g, np.broadcast_to(whole, (8, 3)), rtol=1e-12)


def test_unbound_names_and_unsupported_options():
    with pytest.raises(NameError, match="unbound axis name: i"):
        lax.psum(np.ones(2), "i")
    with pytest.raises(NameError, match="unbound axis name: i"):
        tracejit.jit(lambda v: lax.pmean(v, "i"))(np.ones(2))
    with pytest.raises(NameError, match="unbound axis name: k"):
        tracejit.vmap(lambda v: lax.psum(v, "k"), axis_name="i")(np.ones(2))
    with pytest.raises(NameError, match="unbound axis name"):
        lax.axis_index("i")
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        tracejit.vmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1]]), axis_name="i")(np.ones(2))
    with pytest.raises(NotImplementedError, match="spmd_axis_name"):
        tracejit.vmap(lambda v: v, spmd_axis_name="i")(np.ones(2))
    with pytest.raises(ValueError, match="unique"):
        tracejit.vmap(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 1)]), axis_name="i")(np.ones(2))
    assert tracejit.vmap(lambda v: v * lax.axis_size("i"), axis_name="i")(np.ones(3)).tolist() == [3.0] * 3


def test_doctests():
    import doctest
    import tracejit.core.named_axes
    import tracejit.lax.parallel
    for mod in (tracejit.lax.parallel, tracejit.core.named_axes):
        assert doctest.testmod(mod).failed == 0


def test_all_to_all_moves_special_values_views_and_empty_arrays_exactly():
    x = np.arange(96.0).reshape(4, 8, 3)
    x[1, 2, 0], x[2, 5, 1], x[3, 0, 2] = np.nan, np.inf, -0.0
    view = np.ascontiguousarray(x.transpose(0, 2, 1))[:, ::-1].transpose(0, 2, 1)    # strided, reversed
    want = np.stack([np.concatenate([view[j, 2 * k:2 * k + 2] for j in range(4)], axis=1) for k in range(4)])
    f = tracejit.vmap(lambda a: lax.all_to_all(a, "i", 0, 1, tiled=True), axis_name="i")
    for got in (f(view), tracejit.jit(f)(view)):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert np.shape(f(np.zeros((4, 8, 0)))) == (4, 2, 0)
