"""``vjp(...).with_refs``: JAX 0.10's cotangent destinations (``jax.ad`` markers and Ref accumulators)."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit.ad import DidntWant, DontWant, GradRef, GradValue


def _f(p, y, xp=jnp):
    return xp.sin(p["w"]) * y, {"a": p["w"] * 2 + y}


P = {"w": np.array([0.5, -1.0, 2.0])}
Y = np.float64(3.0)
CT = (np.array([1.0, 2.0, -1.0]), {"a": np.array([0.5, 0.5, 1.0])})


def _want():
    w = P["w"]
    dw = CT[0] * np.cos(w) * Y + 2 * CT[1]["a"]
    dy = np.sum(CT[0] * np.sin(w)) + np.sum(CT[1]["a"])
    return dw, dy


def test_values_refs_and_unwanted():
    _, f_vjp = tracejit.vjp(_f, P, Y)
    dw, dy = _want()
    got = f_vjp(CT)
    np.testing.assert_allclose(got[0]["w"], dw, rtol=1e-14)
    np.testing.assert_allclose(got[1], dy, rtol=1e-14)
    assert tracejit.tree.structure(f_vjp.with_refs()(CT)) == tracejit.tree.structure(got)
    acc = tracejit.new_ref(np.ones(3))
    out = f_vjp.with_refs({"w": acc}, DontWant())(CT)
    assert out == ({"w": GradRef()}, DidntWant())
    np.testing.assert_allclose(acc[...], 1 + dw, rtol=1e-14)
    f_vjp.with_refs({"w": acc}, GradValue())(CT)          # a second call accumulates
    np.testing.assert_allclose(acc[...], 1 + 2 * dw, rtol=1e-14)
    vals = f_vjp.with_refs({"w": GradValue()}, GradValue())(CT)
    np.testing.assert_allclose(vals[0]["w"], dw, rtol=1e-14)
    assert tracejit.tree.leaves(out) == [] and tracejit.tree.leaves(GradRef()) == []


def test_refs_passed_to_jit_accumulate_microbatch_gradients():
    w = np.array([1.0, -2.0, 0.5])
    loss = lambda w, xb: jnp.sum(jnp.tanh(xb @ w) ** 2)   # noqa: E731

    @tracejit.jit
    def step(acc, xb):
        _, pull = tracejit.vjp(loss, w, xb)
        return pull.with_refs(acc, DontWant())(np.float64(1.0))

    acc = tracejit.new_ref(np.zeros(3))
    batches = [np.arange(6.0).reshape(2, 3) * 0.1 + i for i in range(3)]
    for xb in batches:
        assert step(acc, xb) == (GradRef(), DidntWant())
    want = sum(np.asarray(tracejit.grad(loss)(w, xb)) for xb in batches)
    np.testing.assert_allclose(acc[...], want, rtol=1e-13)


def test_errors():
    _, f_vjp = tracejit.vjp(_f, P, Y)
    with pytest.raises(ValueError, match="Accumulator aval mismatch: expected f64\\[3\\], got f64\\[2\\]"):
        f_vjp.with_refs({"w": tracejit.new_ref(np.zeros(2))}, DontWant())
    with pytest.raises(ValueError, match="Accumulator aval mismatch"):
        f_vjp.with_refs({"w": tracejit.new_ref(np.zeros(3, np.float32))}, DontWant())
    with pytest.raises(ValueError, match="structure"):
        f_vjp.with_refs(GradValue(), GradValue())
    with pytest.raises(TypeError, match="GradValue\\(\\), DontWant\\(\\) or a Ref"):
        f_vjp.with_refs({"w": 1.0}, GradValue())
    with pytest.raises(TypeError, match="one argument"):
        f_vjp(CT, CT)


def test_integer_primal_has_a_float0_cotangent():
    _, f_vjp = tracejit.vjp(lambda x, n: x * n, np.float64(2.0), np.int64(3))
    out = f_vjp.with_refs(GradValue(), DontWant())(np.float64(1.0))
    assert out[1] == DidntWant() and float(out[0]) == 3.0


def test_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    _, theirs = jax.vjp(lambda p, y: _f(p, y, jax.numpy), P, Y)
    _, ours = tracejit.vjp(_f, P, Y)
    a, b = jax.new_ref(jax.numpy.ones(3)), tracejit.new_ref(np.ones(3))
    for _ in range(2):
        rt = theirs.with_refs({"w": a}, jax.ad.DontWant())(CT)
        ro = ours.with_refs({"w": b}, DontWant())(CT)
    assert type(rt[1]).__name__ == type(ro[1]).__name__ == "DidntWant"
    assert type(rt[0]["w"]).__name__ == type(ro[0]["w"]).__name__ == "GradRef"
    np.testing.assert_allclose(b[...], np.asarray(a[...]), rtol=1e-14)
