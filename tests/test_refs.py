"""Mutable array references (jax.new_ref / Ref / freeze / empty_ref / free_ref, the jax.ref module):
eagerly, as jit arguments (written back, compiled once), made inside jit / grad / vmap, carried by
autograph's compiled loops and conds, and the errors for what cannot work. Each result is checked
against the same steps done by hand in NumPy (and against JAX where the peers extra is installed).
"""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import ref


def test_eager_reads_are_snapshots_and_writes_are_in_place():
    r = tracejit.new_ref(np.arange(4.0))
    snap = r[1:3]
    r[1] = 10.0
    r[2:] += 1.0
    np.testing.assert_array_equal(snap, [1.0, 2.0])          # a read is a copy, not a view
    np.testing.assert_array_equal(r[...], [0.0, 10.0, 3.0, 4.0])
    assert isinstance(r[...], tracejit.Array) and r.shape == (4,) and r.dtype == np.float64 and len(r) == 4
    assert tracejit.typeof(r) == ref.AbstractRef(tracejit.typeof(np.zeros(4)))
    assert ref.swap(r, 0, 5.0) == 0.0 and ref.get(r, 0) == 5.0
    ref.set(r, None, np.ones(4))
    ref.addupdate(r, slice(0, 2), 2.0)
    np.testing.assert_array_equal(ref.freeze(r), [3.0, 3.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="frozen"):
        r[0]
    e = tracejit.empty_ref(tracejit.ShapeDtypeStruct((2, 3), np.int32))
    np.testing.assert_array_equal(e[...], np.zeros((2, 3), np.int32))
    tracejit.free_ref(e)
    with pytest.raises(ValueError, match="freed"):
        e[...] = 1
    init = np.ones(3)
    r2 = tracejit.new_ref(init)
    r2[0] = 7.0
    assert init[0] == 1.0                                     # new_ref copies its initial value
    r3 = tracejit.tree_util.tree_map(lambda v: v * 3, r2)     # a new Ref with a writable buffer of its own
    r3[1] = -1.0
    np.testing.assert_array_equal(r3[...], [21.0, -1.0, 3.0])
    np.testing.assert_array_equal(r2[...], [7.0, 1.0, 1.0])


def test_jit_argument_refs_are_written_back_and_compile_once():
    r = tracejit.new_ref(np.zeros(3))
    calls = []

    @tracejit.jit
    def step(r, x):
        calls.append(1)
        r[1] += x
        r[0] = r[1] * 2
        return r[...].sum()
    want = np.zeros(3)
    for x in (1.0, 2.5, -1.0):
        got = step(r, x)
        want[1] += x
        want[0] = want[1] * 2
        assert got == want.sum()
        np.testing.assert_array_equal(r[...], want)
    assert len(calls) == 1
    refs = {"a": tracejit.new_ref(np.zeros(2)), "b": tracejit.new_ref(np.ones(2, np.int32))}

    @tracejit.jit
    def both(d):
        d["a"][...] = d["b"][...] * 3.0
        d["b"][0] = 9
    both(refs)
    np.testing.assert_array_equal(refs["a"][...], [3.0, 3.0])
    np.testing.assert_array_equal(refs["b"][...], [9, 1])


def test_refs_made_inside_traced_functions():
    def g(x):
        r = tracejit.new_ref(0.0)
        r[...] = jnp.sin(x)
        r[...] += x * r[...]
        return r[...]
    x = 0.8
    want = np.sin(x) + x * np.sin(x)
    dwant = np.cos(x) + np.sin(x) + x * np.cos(x)
    assert np.isclose(g(x), want)
    for gg in (tracejit.grad(g), tracejit.jit(tracejit.grad(g))):
        assert np.isclose(gg(x), dwant, rtol=1e-14)
    xs = np.array([0.0, 0.5, 2.0])
    np.testing.assert_allclose(tracejit.vmap(g)(xs), np.sin(xs) + xs * np.sin(xs), rtol=1e-14)
    np.testing.assert_allclose(tracejit.jit(tracejit.vmap(tracejit.grad(g)))(xs),
                               np.cos(xs) + np.sin(xs) + xs * np.cos(xs), rtol=1e-14)


@pytest.mark.parametrize("n", [5, 100])            # unrolled, and a compiled loop
def test_autograph_loops_and_conds_carry_refs(n):
    xs = np.arange(float(n * 2)).reshape(n, 2)
    acc = tracejit.new_ref(np.zeros(2))

    def total(acc, xs):
        for i in range(xs.shape[0]):
            acc[...] += xs[i]
            if acc[0] > 10.0:
                acc[1] -= 1.0
        return acc[...] * 2

    want_acc = np.zeros(2)
    for row in xs:
        want_acc += row
        if want_acc[0] > 10.0:
            want_acc[1] -= 1.0
    out = tracejit.jit(total)(acc, xs)
    np.testing.assert_array_equal(acc[...], want_acc)
    np.testing.assert_array_equal(out, 2 * want_acc)

    def made_inside(xs):
        r = tracejit.new_ref(jnp.zeros(2))
        k = 0
        while r[0] < 30.0 and k < xs.shape[0]:
            r[...] = r[...] + xs[k]
            k += 1
        return r[...], k
    got, k = tracejit.jit(made_inside)(xs)
    want, kk = np.zeros(2), 0
    while want[0] < 30.0 and kk < n:
        want = want + xs[kk]
        kk += 1
    np.testing.assert_array_equal(got, want)
    assert int(k) == kk


def test_a_ref_rebound_in_a_loop_leaves_the_original_alone():
    def f(r, xs):
        first = r
        for i in range(xs.shape[0]):
            r = tracejit.new_ref(r[...] + xs[i])
        return r[...], first[...]
    orig = tracejit.new_ref(np.zeros(2))
    xs = np.ones((50, 2))
    new, old = tracejit.jit(f)(orig, xs)
    np.testing.assert_array_equal(new, [50.0, 50.0])
    np.testing.assert_array_equal(old, [0.0, 0.0])
    np.testing.assert_array_equal(orig[...], [0.0, 0.0])


def test_unsupported_uses_raise_clear_errors():
    outside = tracejit.new_ref(np.zeros(3))

    @tracejit.jit
    def closes_over(x):
        outside[0] += x
    with pytest.raises(TypeError, match="Pass the Ref as an argument"):
        closes_over(1.0)

    def body_writes(xs):
        r = tracejit.new_ref(0.0)
        tracejit.lax.fori_loop(0, 3, lambda i, c: (r.set(r[...] + xs[i]), c)[1], 0)
        return r[...]
    with pytest.raises(NotImplementedError, match="cannot leave that function"):
        tracejit.jit(body_writes)(np.ones(3))
    # a Ref passed to vmap may be read; a write could not reach the caller's Ref: it raises
    r = tracejit.new_ref(np.arange(3.0))
    np.testing.assert_array_equal(tracejit.vmap(lambda r, x: r[1] + x, in_axes=(None, 0))(r, np.arange(3.0)),
                                  [1.0, 2.0, 3.0])
    with pytest.raises(NotImplementedError, match="could not reach the caller"):
        tracejit.vmap(lambda r, x: r.set(x, 0), in_axes=(None, 0))(r, np.arange(3.0))
    np.testing.assert_array_equal(r[...], [0.0, 1.0, 2.0])
    # eager grad may read a Ref made outside it, not store a value being differentiated in it
    scale = tracejit.new_ref(np.array(3.0))
    assert tracejit.grad(lambda x: x * scale[...])(2.0) == 3.0
    with pytest.raises(TypeError, match="traced value"):
        tracejit.grad(lambda x: (scale.set(x), x)[1])(2.0)


def test_against_jax():
    jax = pytest.importorskip("jax")
    if not hasattr(jax, "new_ref"):
        pytest.skip("this JAX has no mutable array refs")
    jax.config.update("jax_enable_x64", True)

    def step(r, x):
        r[1] += x
        r[0] = r[1] * 2
        return r[...].sum()
    jr, tr = jax.new_ref(jax.numpy.zeros(3)), tracejit.new_ref(np.zeros(3))
    for x in (1.0, 2.5):
        a, b = jax.jit(step)(jr, x), tracejit.jit(step)(tr, x)
        assert float(a) == float(b)
    np.testing.assert_array_equal(np.asarray(jax.freeze(jr)), tracejit.freeze(tr))

    def g(x):
        r = jax.new_ref(0.0) if isinstance(x, jax.Array) else tracejit.new_ref(0.0)
        r[...] = jax.numpy.sin(x) if isinstance(x, jax.Array) else jnp.sin(x)
        return r[...]
    assert np.isclose(float(jax.grad(g)(1.0)), tracejit.grad(g)(1.0))
