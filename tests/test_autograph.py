"""Autograph: Python loops and ifs over traced values become compiled control flow (issue 16)."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit as jax
import tracejit.numpy as jnp
from tracejit import autograph, lax
from tracejit.config import config

SCALE = 3.0


def _prims(program):
    """Every primitive name in the program, loop bodies included."""
    return str(program)


def _n_eqns(program):
    return len(program.eqns)


def acc_loop(x):
    acc = 0.0
    for i in range(500):
        acc = acc + x[i] * 2
    return acc


def test_long_for_loop_compiles_to_one_loop():
    x = np.arange(500.0)
    np.testing.assert_allclose(jax.jit(acc_loop)(x), acc_loop(x))
    prog = jax.make_jaxpr(acc_loop)(x)
    assert "scan" in _prims(prog) or "while" in _prims(prog)
    assert _n_eqns(prog) < 20
    assert _n_eqns(jax.jit(acc_loop, autograph=False).trace(
        jax.jit(acc_loop)._signature_of((x,), {})[0])[0]) > 500


def nested(x):
    s = jnp.zeros(())
    for i in range(20):
        for j in range(30):
            s = s + x[i, j] * (i - j)
    return s


def test_nested_loops():
    x = np.random.default_rng(0).normal(size=(20, 30))
    np.testing.assert_allclose(jax.jit(nested)(x), nested(x), rtol=1e-12)
    assert _n_eqns(jax.make_jaxpr(nested)(x)) < 40


def collatz(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps = steps + 1
    return steps


def test_while_with_traced_condition_and_if():
    for n in (1, 6, 27):
        assert int(jax.jit(collatz)(np.int64(n))) == collatz(n)
    assert "while" in _prims(jax.make_jaxpr(collatz)(np.int64(27)))


def first_over(x, limit):
    i = 0
    total = 0.0
    while i < x.shape[0]:
        if x[i] > limit:
            break
        total = total + x[i]
        i = i + 1
    return total, i


def test_break_in_while():
    x = np.arange(100.0)
    got = jax.jit(first_over)(x, 40.0)
    want = first_over(x, 40.0)
    np.testing.assert_allclose(got[0], want[0])
    assert int(got[1]) == want[1]


def skip_odd(x):
    s = 0.0
    for i in range(40):
        if x[i] % 2 == 1:
            continue
        s = s + x[i]
    return s


def test_continue_in_for():
    x = np.arange(40.0)
    np.testing.assert_allclose(jax.jit(skip_odd)(x), skip_odd(x))


def break_for(x):
    s = 0.0
    for i in range(100):
        if x[i] > 50:
            break
        s = s + x[i]
    return s


def test_break_in_for_range():
    x = np.arange(100.0)
    np.testing.assert_allclose(jax.jit(break_for)(x), break_for(x))
    assert "while" in _prims(jax.make_jaxpr(break_for)(x))


def sign_rows(A):
    t = np.zeros(A.shape[1])
    for r in A:
        if r.sum() > 100:
            t = t + r
        else:
            t = t - r
    return t


def test_iterate_rows_and_if_in_loop():
    A = np.arange(90.0).reshape(30, 3)
    np.testing.assert_allclose(jax.jit(sign_rows)(A), sign_rows(A))
    prog = _prims(jax.make_jaxpr(sign_rows)(A))
    assert "scan" in prog and "cond" in prog


def traced_bounds(x, n):
    s = x[0] * 0
    for i in range(n):
        s = s + x[i]
    return s


def test_traced_range_bounds():
    x = np.arange(10.0)
    for n in (0, 3, 10):
        np.testing.assert_allclose(jax.jit(traced_bounds)(x, np.int64(n)), traced_bounds(x, n))


def growing(x, n):
    out = x[:1]
    for i in range(1, n):
        out = np.concatenate([out, out[-1:] + x[i]])
    return out


def test_shape_changing_loop_unrolls_below_cap():
    x = np.arange(40.0)
    f = jax.jit(growing, static_argnums=1)
    np.testing.assert_allclose(f(x, 40), growing(x, 40))


def tri(A):
    s = 0.0
    for i in range(A.shape[0]):
        s = s + A[i, :i].sum()
    return s


def test_index_dependent_shapes_unroll():
    A = np.arange(400.0).reshape(20, 20)
    np.testing.assert_allclose(jax.jit(tri)(A), tri(A))


def test_shape_changing_loop_above_cap_names_the_line(monkeypatch):
    monkeypatch.setattr(autograph.runtime, "UNROLL_CAP", 30)
    x = np.arange(40.0)
    with pytest.raises(autograph.AutographError, match=r"line \d+.*unrolling cap") as e:
        jax.jit(growing, static_argnums=1)(x, 40)
    line = growing.__code__.co_firstlineno + 2
    assert f"line {line}:" in str(e.value)
    assert "fori_loop" in str(e.value)


def no_loops(x):
    y = np.sin(x) * 2
    return y + x.sum()


def short_loop(x):
    for _ in range(3):
        x = x * 2
    return x


def test_unconverted_functions_trace_unchanged():
    x = np.arange(4.0)
    for fn in (no_loops, short_loop):
        a = str(jax.make_jaxpr(fn)(x))
        b = str(jax.make_jaxpr(jax.jit(fn, autograph=False))(x))
        assert a == b
    assert "scan" not in str(jax.make_jaxpr(short_loop)(x))


def test_switches(monkeypatch):
    x = np.arange(500.0)
    assert _n_eqns(jax.jit(acc_loop, autograph=False).trace(jax.jit(acc_loop)._signature_of((x,), {})[0])[0]) > 500
    config.update("autograph", False)
    try:
        f = jax.jit(acc_loop)
        assert _n_eqns(f.trace(f._signature_of((x,), {})[0])[0]) > 500
    finally:
        config.update("autograph", True)
    f = jax.jit(acc_loop)
    assert _n_eqns(f.trace(f._signature_of((x,), {})[0])[0]) < 20


def carry_type_clash(x, n):
    s = 0
    for i in range(n):
        s = x[:i + 1]
    return s


def test_error_points_at_user_line():
    with pytest.raises(autograph.AutographError) as e:
        jax.jit(carry_type_clash)(np.ones(4), np.int64(3))
    assert f"line {carry_type_clash.__code__.co_firstlineno + 2}:" in str(e.value)


def raises_inside(x):
    total = x[0]
    for i in range(50):
        total = total + x[i]
        if i == 40:
            total = total + undefined_name  # noqa: F821
    return total


def test_traceback_shows_source_line():
    with pytest.raises(NameError) as e:
        jax.jit(raises_inside)(np.ones(50))
    lines, tb = [], e.value.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == __file__:
            lines.append(tb.tb_lineno)
        tb = tb.tb_next
    assert raises_inside.__code__.co_firstlineno + 5 in lines


def helper(v, k):
    for _ in range(k):
        v = v * 0.5 + 1.0
    return v


def uses_closure_and_globals(x):
    bias = 1.0

    def inner(y):
        return y + bias

    acc = x
    for i in range(100):
        acc = inner(helper(acc, 1)) * SCALE / SCALE
    return acc


def test_closures_globals_and_same_module_calls():
    x = np.linspace(0, 1, 8)
    np.testing.assert_allclose(jax.jit(uses_closure_and_globals)(x), uses_closure_and_globals(x))


def test_closure_cells_are_live():
    k = 2.0

    def f(x):
        for i in range(30):
            x = x + k
        return x
    x = np.zeros(3)
    np.testing.assert_allclose(jax.jit(f)(x), x + 60)
    k = 3.0
    np.testing.assert_allclose(jax.jit(f)(x), x + 90)


def list_loops(params, x):
    for w in params:
        x = x @ w
    outs = []
    for i in range(20):
        outs.append(x * i)
    return np.stack(outs).sum(0)


def test_python_containers_stay_python():
    params = [np.eye(3) * 2 for _ in range(3)]
    x = np.ones(3)
    np.testing.assert_allclose(jax.jit(list_loops)(params, x), list_loops(params, x))


def if_one_branch(x):
    if x.sum() > 0:
        y = x * 2
    return y


def test_one_branch_variable_under_traced_if_errors_clearly():
    with pytest.raises(autograph.AutographError, match="only one branch"):
        jax.jit(if_one_branch)(np.ones(3))


def python_if(x, flag):
    if flag:
        y = x + 1
    else:
        y = x - 1
    return y


def test_traced_if_and_python_if():
    x = np.ones(3)
    np.testing.assert_allclose(jax.jit(python_if, static_argnums=1)(x, True), x + 1)
    np.testing.assert_allclose(jax.jit(python_if)(x, np.bool_(False)), x - 1)
    assert "cond" in str(jax.make_jaxpr(python_if)(x, np.bool_(False)))


def return_in_loop(x):
    for i in range(30):
        if x[i] > 3:
            return x[i]
    return x[0]


def test_return_inside_loop_has_clear_error():
    with pytest.raises(jax.ConcretizationTypeError, match=r"(?s)autograph \(line \d+\).*`return`"):
        jax.jit(return_in_loop)(np.arange(30.0))


class Model:
    def __init__(self, k):
        self.k = k

    def run(self, x):
        for i in range(50):
            x = x + self.k
        return x


def test_methods_and_lax_loops_unchanged():
    m = Model(2.0)
    np.testing.assert_allclose(jax.jit(m.run)(np.zeros(2)), np.full(2, 100.0))
    f = jax.jit(lambda x: lax.fori_loop(0, 10, lambda i, c: c + i, x))
    np.testing.assert_allclose(f(np.zeros(2)), np.full(2, 45.0))


def test_functions_without_source_are_unchanged():
    assert autograph.convert(len) is len
    assert autograph.convert(np.mean) is np.mean
    ns = {}
    exec("def g(x):\n    for i in range(30):\n        x = x + 1\n    return x", ns)
    assert autograph.convert(ns["g"]) is ns["g"]
    np.testing.assert_allclose(jax.jit(ns["g"])(np.zeros(2)), np.full(2, 30.0))


def test_conversion_is_cached():
    assert autograph.convert(acc_loop) is autograph.convert(acc_loop)
    assert autograph.convert(acc_loop) is not acc_loop



def _looped(x):
    for _ in range(20):
        x = x * 1.01
    return x


def test_wrappers_of_user_functions_are_not_replaced_by_the_wrapped_source():
    # functools.wraps gives a wrapper (tracejit's grad, a user decorator) the wrapped function's
    # module, name and __wrapped__: converting it must not compile the wrapped function's source in
    # the wrapper's place (jit(grad(f)) computed f itself; a decorator's own work was dropped).
    import functools
    np.testing.assert_allclose(jax.jit(jax.grad(_looped))(2.0), 1.01 ** 20, rtol=1e-14)

    def plus_100(g):
        @functools.wraps(g)
        def inner(x):
            return g(x) + 100.0
        return inner
    np.testing.assert_allclose(jax.jit(plus_100(_looped))(2.0), 2.0 * 1.01 ** 20 + 100.0, rtol=1e-14)
    np.testing.assert_allclose(jax.jit(_looped)(2.0), 2.0 * 1.01 ** 20, rtol=1e-14)
