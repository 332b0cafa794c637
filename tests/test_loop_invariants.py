"""Loop-invariant code motion (compiler/passes/loop_invariants.py): body work that reads only the
loop's constants runs once, before the loop, with the same results."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.compiler.driver import optimize_program
from tracejit.core.check import check_program


def _loop(program, name="scan"):
    return [e for e in program.eqns if e.primitive.name == name][0]


def _body(loop):
    return loop.params["program"] if loop.primitive.name == "scan" else loop.params["body_program"]


def _names(program):
    return [e.primitive.name for e in program.eqns]


def power_iteration(rows, cols, vals, x0, iters):
    n = x0.shape[0]

    def step(_, x):
        y = jnp.zeros(n, x.dtype).at[rows].add(vals * x[cols])
        return y / jnp.sqrt(jnp.sum(y * y))
    return lax.fori_loop(0, iters, step, x0)


def test_sparse_index_normalization_leaves_the_loop_with_the_same_result():
    rng = np.random.default_rng(0)
    n, nnz = 50, 400
    rows, cols = rng.integers(0, n, nnz).astype(np.int32), rng.integers(-n, n, nnz).astype(np.int32)
    vals, x0 = rng.random(nnz), np.ones(n) / np.sqrt(n)
    program = optimize_program(tracejit.make_jaxpr(power_iteration, static_argnums=4)(rows, cols, vals, x0, 7))
    check_program(program)
    body = _body(_loop(program))
    assert "select_n" not in _names(body) and "select_n" in _names(program), program
    x = x0
    for _ in range(7):
        y = np.bincount(rows, weights=vals * x[cols % n], minlength=n)
        x = y / np.sqrt(y @ y)
    got = tracejit.jit(power_iteration, static_argnums=4)(rows, cols, vals, x0, 7)
    np.testing.assert_allclose(got, x, rtol=1e-12)
    ref = tracejit.jit(power_iteration, static_argnums=4, backend="reference")(rows, cols, vals, x0, 7)
    np.testing.assert_allclose(got, ref, rtol=1e-12)


@pytest.mark.parametrize("trips", [0, 1, 5])
def test_invariant_product_and_sum_computed_once_for_any_trip_count(trips):
    a = np.arange(12.0).reshape(3, 4) / 10
    b = np.arange(8.0).reshape(4, 2)

    def f(x):
        def body(i, c):
            return c * 0.5 + (a @ b).sum() * jnp.exp(a[0, 0]) + i
        return lax.fori_loop(0, trips, body, x)
    program = optimize_program(tracejit.make_jaxpr(f)(np.ones(3)))
    check_program(program)
    assert "exp" not in _names(_body(_loop(program)))
    c = np.ones(3)
    for i in range(trips):
        c = c * 0.5 + (a @ b).sum() * np.exp(a[0, 0]) + i
    np.testing.assert_allclose(tracejit.jit(f)(np.ones(3)), c, rtol=1e-14)


def test_nested_invariant_rises_out_of_both_loops_and_while_bodies_too():
    w = np.linspace(-1, 1, 16)

    def f(x):
        def outer(i, c):
            def inner(j, d):
                return d + jnp.tanh(w) * j
            return lax.fori_loop(0, 3, inner, c) * 0.5

        def cond(s):
            return s[0] < 4

        def wbody(s):
            return s[0] + 1, s[1] + jnp.sin(w).sum()
        return lax.fori_loop(0, 4, outer, x), lax.while_loop(cond, wbody, (0, 0.0))
    program = optimize_program(tracejit.make_jaxpr(f)(np.zeros(16)))
    check_program(program)
    outer_body = _body(_loop(program))
    assert "tanh" in _names(program) and "tanh" not in _names(outer_body)
    assert "sin" in _names(program) and "sin" not in _names(_body(_loop(program, "while")))
    got, (k, s) = tracejit.jit(f)(np.zeros(16))
    c = np.zeros(16)
    for _ in range(4):
        for j in range(3):
            c = c + np.tanh(w) * j
        c = c * 0.5
    np.testing.assert_allclose(got, c, rtol=1e-14)
    assert int(k) == 4 and np.isclose(float(s), 4 * np.sin(w).sum())


def test_callbacks_stay_in_the_loop_and_views_and_widenings_are_not_materialized(capsys):
    big = np.ones(4)

    def f(x, idx):
        def body(i, c):
            tracejit.debug.print("tick {}", idx.sum())
            wide = jnp.broadcast_to(big, (64, 4)).sum(0)           # a view: stays fused
            return c + x[(idx.astype(jnp.int64) + 1) % 64] + wide[0]  # a widened gather index: stays fused
        return lax.fori_loop(0, 3, body, x)
    idx = np.arange(64, dtype=np.int32)
    program = optimize_program(tracejit.make_jaxpr(f)(np.ones(64), idx))
    body_names = _names(_body(_loop(program)))
    assert "debug_callback" in body_names
    assert "broadcast_in_dim" in body_names and "rem" in body_names
    got = tracejit.jit(f)(np.ones(64), idx)
    assert capsys.readouterr().out.count("tick") == 3
    np.testing.assert_allclose(got, np.ones(64) + 3 * (1 + 64))


def test_one_body_shared_by_two_loops_hoists_into_distinct_variables():
    v = np.linspace(0, 1, 5)

    def body(i, c):
        return c + jnp.cos(v)

    def f(x):
        return lax.fori_loop(0, 2, body, x) + lax.fori_loop(0, 3, body, x)
    program = optimize_program(tracejit.make_jaxpr(f)(np.zeros(5)))
    check_program(program)
    np.testing.assert_allclose(tracejit.jit(f)(np.zeros(5)), 5 * np.cos(v), rtol=1e-14)
