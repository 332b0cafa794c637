"""Structured control flow: lax.cond / switch / while_loop / fori_loop / scan / map.

Every test runs both eagerly and under ``tracejit.jit`` (``run`` below) and
compares with NumPy or with a plain-Python loop over the same values.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracejit
from tracejit import lax
from tracejit.core.check import check_program
from tracejit.core.errors import ConcretizationTypeError
from tracejit.core.ir import count_eqns
from tracejit.ops.control_flow import closure_convert, cond_p, program_cost, run_program, scan_p, while_p
from tracejit.core.primitive import cost_rules

MODES = ["eager", "jit"]


def run(mode, f, *args, **kw):
    """Call ``f`` eagerly or through a fresh ``jit`` (static kwargs via static_argnames)."""
    if mode == "eager":
        return f(*args, **kw)
    return tracejit.jit(f, static_argnames=tuple(kw))(*args, **kw)


def program_of(f, *args):
    p = tracejit.make_jaxpr(f)(*args)
    check_program(p)
    return p


def no_consts_in_subprograms(program):
    for eqn in program.eqns:
        for sub in (v for k, v in eqn.params.items() if k in ("branches", "cond_program",
                                                              "body_program", "program")):
            for s in (sub if isinstance(sub, tuple) else (sub,)):
                assert s.const_vars == [] and s.const_values == []
                no_consts_in_subprograms(s)


# --------------------------------------------------------------------------- cond

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.complex64])
def test_cond_basic_dtypes(mode, dtype):
    x = np.array([1, -2, 3], dtype=dtype)
    f = lambda p, x: lax.cond(p, lambda v: v * 2, lambda v: v - 1, x)  # noqa: E731
    for p in (True, False, np.bool_(True)):
        out = run(mode, f, p, x)
        np.testing.assert_array_equal(out, x * 2 if p else x - 1)
        assert out.dtype == dtype


@pytest.mark.parametrize("mode", MODES)
def test_cond_integer_pred(mode):
    f = lambda p, x: lax.cond(p, lambda v: v + 10.0, lambda v: v, x)  # noqa: E731
    for p in (0, 1, -3, np.int32(5), np.int64(0)):
        np.testing.assert_array_equal(run(mode, f, p, np.ones(2)), np.ones(2) + (10 if p else 0))


@pytest.mark.parametrize("mode", MODES)
def test_cond_pytree_operands_and_outputs(mode):
    def f(p, tree):
        def yes(t):
            return {"s": t["a"].sum(), "pair": (t["b"] * 2, t["a"][::-1])}

        def no(t):
            return {"s": t["a"].max(), "pair": (-t["b"], t["a"])}
        return lax.cond(p, yes, no, tree)
    tree = {"a": np.arange(4.0), "b": np.array([[1, 2], [3, 4]], np.int32)}
    for p in (True, False):
        out = run(mode, f, p, tree)
        exp_s = tree["a"].sum() if p else tree["a"].max()
        exp_b = tree["b"] * 2 if p else -tree["b"]
        exp_a = tree["a"][::-1] if p else tree["a"]
        assert set(out) == {"s", "pair"}
        np.testing.assert_array_equal(out["s"], exp_s)
        np.testing.assert_array_equal(out["pair"][0], exp_b)
        np.testing.assert_array_equal(out["pair"][1], exp_a)
        assert out["pair"][0].dtype == np.int32


@pytest.mark.parametrize("mode", MODES)
def test_cond_multiple_operands_and_views(mode):
    base = np.arange(12.0).reshape(3, 4)
    x, y = base.T, base[::2]  # non-contiguous views
    f = lambda p, x, y: lax.cond(p, lambda a, b: a.sum(0) + b.sum(), lambda a, b: a[0] - b[0, 0],  # noqa: E731
                                 x, y)
    for p in (True, False):
        exp = x.sum(0) + y.sum() if p else x[0] - y[0, 0]
        np.testing.assert_allclose(run(mode, f, p, x, y), exp)


@pytest.mark.parametrize("mode", MODES)
def test_cond_closures_over_tracers_and_arrays(mode):
    table = np.array([10.0, 20.0, 30.0])

    def f(p, x):
        y = x * 3  # a tracer of the enclosing jit trace under jit
        return lax.cond(p, lambda: y + table, lambda: table - x)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(run(mode, f, True, x), x * 3 + table)
    np.testing.assert_array_equal(run(mode, f, False, x), table - x)
    p = program_of(f, True, x)
    no_consts_in_subprograms(p)
    (eqn,) = [e for e in p.eqns if e.primitive is cond_p]
    # index, then the closed-over values of both branches (y, table, table, x).
    assert len(eqn.inputs) == 5


@pytest.mark.parametrize("mode", MODES)
def test_cond_old_form_weak_scalar_branch(mode):
    f = lambda p, x: lax.cond(p, lambda: x, lambda: 0.0)  # noqa: E731
    x = np.array([1.5, 2.5], np.float32)
    out = run(mode, f, False, np.float32(1.5))
    assert out.dtype == np.float32 and out == 0.0
    out = run(mode, f, True, np.float32(1.5))
    assert out.dtype == np.float32 and out == 1.5
    g = lambda p: lax.cond(p, lambda: 1, lambda: np.int32(7))  # noqa: E731
    out = run(mode, g, True)
    assert out.dtype == np.int32 and out == 1
    with pytest.raises(TypeError, match=r"true_fun output f32\[2\] does not match false_fun output f64\[\]"):
        run(mode, lambda p: lax.cond(p, lambda: x, lambda: 0.0), True)


@pytest.mark.parametrize("mode", MODES)
def test_cond_type_mismatch_names_both_types(mode):
    a32, a64 = np.ones(3, np.float32), np.ones(3, np.float64)
    with pytest.raises(TypeError, match=r"f64\[3\].*f32\[3\]|f32\[3\].*f64\[3\]"):
        run(mode, lambda p: lax.cond(p, lambda: a32, lambda: a64), True)
    with pytest.raises(TypeError, match="pytree structure"):
        run(mode, lambda p: lax.cond(p, lambda: (a32, a32), lambda: [a32, a32]), True)
    with pytest.raises(TypeError, match="boolean or integer"):
        run(mode, lambda p: lax.cond(p, lambda: a32, lambda: a32), 1.0)
    with pytest.raises(TypeError, match="scalar"):
        run(mode, lambda p: lax.cond(p, lambda: a32, lambda: a32), np.array([True, False]))


def test_cond_program_text_shows_branches():
    f = lambda x: lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: -v, x)  # noqa: E731
    text = str(program_of(f, np.ones(3, np.float32)))
    assert "cond[branches=(" in text
    assert "mul" in text and "neg" in text
    # Each branch is printed as its own nested program.
    assert text.count("{ lambda ;") == 3


def test_cond_only_selected_branch_runs():
    calls = []

    def record(name):
        def impl(v):
            calls.append(name)
            return v
        return impl
    # Both branches are traced (Python bodies called once each) ...
    f = tracejit.jit(lambda p, x: lax.cond(p, record("t"), record("f"), x))
    f(True, np.ones(2))
    assert sorted(calls) == ["f", "t"]
    # ... and the NumPy result of an error-raising branch is never computed.
    g = tracejit.jit(lambda p, x: lax.cond(p, lambda v: v // 0, lambda v: v + 1, x))
    with np.errstate(divide="raise"):
        np.testing.assert_array_equal(g(False, np.arange(3)), np.arange(3) + 1)


# --------------------------------------------------------------------------- switch

@pytest.mark.parametrize("mode", MODES)
def test_switch_clamps_index(mode):
    branches = [lambda x: x + 1.0, lambda x: x * 10.0, lambda x: -x]
    f = lambda i, x: lax.switch(i, branches, x)  # noqa: E731
    x = np.array([1.0, 2.0])
    for i, exp in [(-5, x + 1), (-1, x + 1), (0, x + 1), (1, x * 10), (2, -x), (3, -x), (100, -x)]:
        np.testing.assert_array_equal(run(mode, f, i, x), exp)
        np.testing.assert_array_equal(run(mode, f, np.int32(i), x), exp)
    with pytest.raises(TypeError, match="integer"):
        run(mode, f, True, x)


@pytest.mark.parametrize("mode", MODES)
def test_switch_int8_index_extremes(mode):
    branches = [lambda: np.float64(0), lambda: np.float64(1)]
    f = lambda i: lax.switch(i, branches)  # noqa: E731
    assert run(mode, f, np.int8(-128)) == 0 and run(mode, f, np.int8(127)) == 1
    assert run(mode, f, np.uint64(2**63)) == 1


def test_switch_single_branch_and_mismatch():
    assert lax.switch(7, [lambda x: x * 2], 3) == 6
    with pytest.raises(TypeError, match=r"branch 1.*i32\[\].*branch 0.*f32\[\]|f32\[\].*i32\[\]"):
        lax.switch(0, [lambda: np.float32(1), lambda: np.int32(1)])


# --------------------------------------------------------------------------- while_loop

def collatz_steps_py(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def collatz_steps(n):
    def body(c):
        n, steps = c
        n = lax.cond(n % 2 == 0, lambda m: m // 2, lambda m: 3 * m + 1, n)
        return n, steps + 1
    return lax.while_loop(lambda c: c[0] != 1, body, (n, np.int64(0)))[1]


@pytest.mark.parametrize("mode", MODES)
def test_while_collatz(mode):
    for n in (1, 2, 6, 7, 27):
        assert run(mode, collatz_steps, np.int64(n)) == collatz_steps_py(n)


@pytest.mark.parametrize("mode", MODES)
def test_while_newton_sqrt_convergence(mode):
    def sqrt_newton(a):
        def body(c):
            x, _, it = c
            new = 0.5 * (x + a / x)
            return new, x, it + 1

        def not_converged(c):
            x, prev, it = c
            return (np.abs(x - prev) > 1e-12 * np.abs(x)).any() & (it < 100)
        return lax.while_loop(not_converged, body, (a, a * 0 + np.inf, 0))
    a = np.array([2.0, 9.0, 1e-4, 12345.0])
    x, _, it = run(mode, sqrt_newton, a)
    np.testing.assert_allclose(x, np.sqrt(a), rtol=1e-14)
    assert 0 < it < 100


@pytest.mark.parametrize("mode", MODES)
def test_while_zero_iterations_and_pytree_carry(mode):
    def f(x):
        return lax.while_loop(lambda c: c["n"] < 0, lambda c: {"n": c["n"] + 1, "v": c["v"] * 2},
                              {"n": np.int32(5), "v": x})
    out = run(mode, f, np.arange(3.0))
    assert out["n"] == 5 and out["n"].dtype == np.int32
    np.testing.assert_array_equal(out["v"], np.arange(3.0))


@pytest.mark.parametrize("mode", MODES)
def test_while_weak_python_scalar_carry(mode):
    # i starts as a Python int; comparisons and additions with Python ints stay weak.
    assert run(mode, lambda: lax.while_loop(lambda i: i < 10, lambda i: i + 3, 0)) == 12
    # A weak float carry adopts the body's float32.
    out = run(mode, lambda: lax.while_loop(lambda v: v < 5, lambda v: v + np.float32(1.5), 0.0))
    assert out.dtype == np.float32 and out == 6.0
    out = run(mode, lambda: lax.while_loop(lambda v: v < 3, lambda v: v + np.float32(5), 0))
    assert out.dtype == np.float32 and out == 5.0
    # Promotion happens once; a body whose dtype still differs is an error naming both types.
    with pytest.raises(TypeError, match=r"output carry i32\[\] does not match input carry f64\[\]"):
        run(mode, lambda: lax.while_loop(lambda v: v < 3, lambda v: np.int32(5), 0.0))


@pytest.mark.parametrize("mode", MODES)
def test_while_carry_mismatch_error(mode):
    x = np.ones(3)
    with pytest.raises(TypeError, match=r"body_fun output carry f32\[3\] does not match input carry "
                                        r"f64\[3\]"):
        run(mode, lambda x: lax.while_loop(lambda v: v.sum() < 10, lambda v: v.astype(np.float32), x), x)
    with pytest.raises(TypeError, match=r"f64\[1,3\].*f64\[3\]"):
        run(mode, lambda x: lax.while_loop(lambda v: v.sum() < 10, lambda v: v[None], x), x)
    with pytest.raises(TypeError, match="pytree structure"):
        run(mode, lambda x: lax.while_loop(lambda c: c[0].sum() < 1, lambda c: [c[0], c[1]], (x, x)), x)
    with pytest.raises(TypeError, match="boolean scalar"):
        run(mode, lambda x: lax.while_loop(lambda v: v < 10, lambda v: v + 1, x), x)


def test_while_program_text_and_consts():
    limit = np.float64(100.0)
    scale = np.array([1.0, 2.0])

    def f(x, k):
        return lax.while_loop(lambda v: v.sum() < limit * k, lambda v: v * scale + k, x)
    p = program_of(f, np.ones(2), 1.5)
    no_consts_in_subprograms(p)
    text = str(p)
    assert "while[cond_nconsts=1 cond_program={" in text and "body_program={" in text
    (eqn,) = [e for e in p.eqns if e.primitive is while_p]
    assert eqn.params["body_nconsts"] == 2
    out = tracejit.jit(f)(np.ones(2), 1.5)
    v = np.ones(2)
    while v.sum() < 150:
        v = v * scale + 1.5
    np.testing.assert_array_equal(out, v)


def test_python_while_on_tracer_raises_concretization_error_without_autograph():
    def f(x):
        while x < 10:
            x = x + 1
        return x
    with pytest.raises(ConcretizationTypeError):
        tracejit.jit(f, autograph=False)(1.0)
    # With autograph (the default) the loop is a while_loop (tests/test_autograph.py).
    assert float(tracejit.jit(f)(1.0)) == 10.0


# --------------------------------------------------------------------------- fori_loop

@pytest.mark.parametrize("mode", MODES)
def test_fori_static_bounds_uses_scan(mode):
    f = lambda x: lax.fori_loop(2, 7, lambda i, v: v * 0.5 + i, x)  # noqa: E731
    x = np.array([1.0, -3.0], np.float32)
    exp = x.copy()
    for i in range(2, 7):
        exp = exp * np.float32(0.5) + np.float32(i)
    out = run(mode, f, x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, exp, rtol=1e-6)
    counts = count_eqns(program_of(f, x))
    assert counts.get("scan") == 1 and "while" not in counts


@pytest.mark.parametrize("mode", MODES)
def test_fori_traced_bounds_uses_while(mode):
    f = lambda lo, hi, x: lax.fori_loop(lo, hi, lambda i, v: v + i * i, x)  # noqa: E731
    for lo, hi in [(0, 5), (3, 3), (5, 2), (-2, 4)]:
        exp = 1.0 + sum(i * i for i in range(lo, hi))
        assert run(mode, f, np.int64(lo), np.int64(hi), 1.0) == exp
    # Under jit the bounds are jitted arguments: one compile serves every trip count.
    jf = tracejit.jit(lambda n, x: lax.fori_loop(0, n, lambda i, v: v * 2, x))
    assert [int(jf(n, 1)) for n in (0, 1, 5, 10)] == [1, 2, 32, 1024]
    assert len(jf.signatures_compiled) == 1
    counts = count_eqns(program_of(lambda n, x: lax.fori_loop(0, n, lambda i, v: v * 2, x), 3, 1.0))
    assert counts.get("while") == 1 and "scan" not in counts
    with pytest.raises(ValueError, match="unroll"):
        tracejit.jit(lambda n: lax.fori_loop(0, n, lambda i, v: v, 0.0, unroll=2))(3)


@pytest.mark.parametrize("mode", MODES)
def test_fori_index_dtype_follows_bounds(mode):
    out = run(mode, lambda: lax.fori_loop(np.int32(0), 4, lambda i, c: c + i, np.int32(0)))
    assert out == 6 and out.dtype == np.int32
    out = run(mode, lambda: lax.fori_loop(0, 4, lambda i, c: c + i, np.int8(1)))
    assert out == 7 and out.dtype == np.int8  # weak Python-int index adapts to int8


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bounds", [(0, 3), (np.int64(0), np.int64(3))])
def test_fori_carry_mismatch_error(mode, bounds):
    lo, hi = bounds
    with pytest.raises(TypeError, match=r"body_fun output carry f32\[3\] does not match input carry "
                                        r"f64\[3\]"):
        run(mode, lambda x, lo, hi: lax.fori_loop(lo, hi, lambda i, v: v.astype(np.float32), x),
            np.ones(3), lo, hi)


@pytest.mark.parametrize("mode", MODES)
def test_fori_pytree_carry_and_unroll(mode):
    def f(x):
        return lax.fori_loop(0, 6, lambda i, c: (c[0] + x * i, c[1] * 2), (np.zeros(2), np.int64(1)), unroll=2)
    s, p = run(mode, f, np.array([1.0, 2.0]))
    np.testing.assert_array_equal(s, [15.0, 30.0])
    assert p == 64


# --------------------------------------------------------------------------- scan / map

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64, np.complex128])
def test_scan_cumsum(mode, dtype):
    xs = np.arange(1, 11).astype(dtype)
    if dtype == np.complex128:
        xs = xs * (1 - 2j)

    def f(xs):
        return lax.scan(lambda c, x: (c + x, c + x), np.zeros((), dtype), xs)
    total, ys = run(mode, f, xs)
    np.testing.assert_array_equal(ys, np.cumsum(xs))
    assert ys.dtype == dtype and total == np.cumsum(xs)[-1]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=0, max_size=12), st.booleans())
def test_scan_matches_python_loop(values, reverse):
    xs = np.array(values, np.float64).reshape(-1)

    def f(xs):
        return lax.scan(lambda c, x: (c * 0.5 + x, c - x), 1.0, xs, reverse=reverse)
    c, ys = tracejit.jit(f)(xs)
    exp_c, exp_ys = 1.0, np.zeros_like(xs)
    for i in (reversed(range(len(xs))) if reverse else range(len(xs))):
        exp_ys[i] = exp_c - xs[i]
        exp_c = exp_c * 0.5 + xs[i]
    np.testing.assert_array_equal(ys, exp_ys)
    assert c == exp_c


@pytest.mark.parametrize("mode", MODES)
def test_scan_reverse_cumsum(mode):
    xs = np.arange(1.0, 6.0)
    _, ys = run(mode, lambda xs: lax.scan(lambda c, x: (c + x, c + x), 0.0, xs, reverse=True), xs)
    np.testing.assert_array_equal(ys, np.cumsum(xs[::-1])[::-1])


@pytest.mark.parametrize("mode", MODES)
def test_scan_pytrees_and_2d_slices(mode):
    a = np.arange(12.0).reshape(4, 3)
    b = np.arange(4, dtype=np.int32)

    def f(a, b):
        def body(carry, x):
            row, k = x["row"], x["k"]
            new = {"acc": carry["acc"] + row, "n": carry["n"] + k}
            return new, (row * k, carry["n"])
        return lax.scan(body, {"acc": np.zeros(3), "n": np.int32(0)}, {"row": a, "k": b})
    carry, (scaled, ns) = run(mode, f, a, b)
    np.testing.assert_array_equal(carry["acc"], a.sum(0))
    assert carry["n"] == b.sum() and carry["n"].dtype == np.int32
    np.testing.assert_array_equal(scaled, a * b[:, None])
    np.testing.assert_array_equal(ns, np.concatenate([[0], np.cumsum(b)[:-1]]))
    assert ns.dtype == np.int32


@pytest.mark.parametrize("mode", MODES)
def test_scan_xs_none_with_length(mode):
    def f(x0):
        return lax.scan(lambda c, _: (c * 2, c), x0, None, length=5)
    c, ys = run(mode, f, np.array([1.0, 3.0]))
    np.testing.assert_array_equal(ys, np.array([1.0, 3.0]) * (2.0 ** np.arange(5))[:, None])
    np.testing.assert_array_equal(c, [32.0, 96.0])
    with pytest.raises(ValueError, match="length"):
        lax.scan(lambda c, _: (c, c), 0.0, None)
    with pytest.raises(ValueError, match="leading axis sizes"):
        lax.scan(lambda c, x: (c, x), 0.0, np.ones(3), length=4)
    with pytest.raises(ValueError, match="leading axis sizes"):
        lax.scan(lambda c, x: (c, x), 0.0, (np.ones(3), np.ones(2)))


@pytest.mark.parametrize("mode", MODES)
def test_scan_empty(mode):
    c, ys = run(mode, lambda xs: lax.scan(lambda c, x: (c + x, x * 2), np.float32(3), xs),
                np.zeros(0, np.float32))
    assert c == 3 and ys.shape == (0,) and ys.dtype == np.float32


@pytest.mark.parametrize("mode", MODES)
def test_scan_carry_errors_and_weak_init(mode):
    xs = np.ones(3, np.float32)
    with pytest.raises(TypeError, match=r"scan body output carry f32\[2\] does not match input carry "
                                        r"f64\[2\]"):
        run(mode, lambda xs: lax.scan(lambda c, x: (c.astype(np.float32), x), np.zeros(2), xs), xs)
    with pytest.raises(TypeError, match="pair"):
        run(mode, lambda xs: lax.scan(lambda c, x: c + x, 0.0, xs), xs)
    # A Python-scalar init takes the body's float32.
    c, ys = run(mode, lambda xs: lax.scan(lambda c, x: (c + x, c), 0.0, xs), xs)
    assert c.dtype == np.float32 and ys.dtype == np.float32 and c == 3
    np.testing.assert_array_equal(ys, [0, 1, 2])


@pytest.mark.parametrize("mode", MODES)
def test_map(mode):
    xs = np.arange(12.0).reshape(4, 3)
    out = run(mode, lambda xs: lax.map(lambda r: (r.sum(), r[::-1]), xs), xs)
    np.testing.assert_array_equal(out[0], xs.sum(1))
    np.testing.assert_array_equal(out[1], xs[:, ::-1])
    np.testing.assert_array_equal(run(mode, lambda x: lax.map(lambda v: v * v, x), np.arange(5)),
                                  np.arange(5) ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_nested_cond_inside_scan_inside_jit(mode):
    offset = np.float64(100.0)

    def f(xs, thresh):
        def body(c, x):
            y = lax.cond(x > thresh, lambda v: v * 2 + c, lambda v: v - offset, x)
            return c + 1.0, y
        return lax.scan(body, 0.0, xs)
    xs = np.array([0.5, 3.0, -1.0, 7.0])
    c, ys = run(mode, f, xs, 1.0)
    exp = [x * 2 + i if x > 1.0 else x - 100.0 for i, x in enumerate(xs)]
    np.testing.assert_array_equal(ys, exp)
    assert c == 4.0
    p = program_of(f, xs, 1.0)
    no_consts_in_subprograms(p)
    text = str(p)
    assert "scan[" in text and "cond[branches=(" in text
    counts = count_eqns(p)
    assert counts["scan"] == 1 and counts["cond"] == 1


def test_nested_loops_closing_over_outer_loop_values():
    def f(n):
        # Sum over i < n of sum over j < i of (i * j): inner loop closes over i.
        def outer(i, total):
            return total + lax.fori_loop(0, i, lambda j, s: s + i * j, np.int64(0))
        return lax.fori_loop(0, n, outer, np.int64(0))
    exp = lambda n: sum(i * j for i in range(n) for j in range(i))  # noqa: E731
    jf = tracejit.jit(f)
    for n in (0, 1, 4, 9):
        assert jf(np.int64(n)) == exp(n)
        assert f(np.int64(n)) == exp(n)
    no_consts_in_subprograms(program_of(f, np.int64(3)))


def test_nested_jit_inside_control_flow():
    inner = tracejit.jit(lambda v: v * 3.0)
    f = tracejit.jit(lambda x: lax.fori_loop(0, 3, lambda i, v: inner(v), x))
    assert f(1.0) == 27.0
    inner_call = tracejit.jit(lambda v: v + 1.0, inline=False)
    g = tracejit.jit(lambda p, x: lax.cond(p, inner_call, lambda v: v, x))
    assert g(True, 1.0) == 2.0 and g(False, 1.0) == 1.0


# --------------------------------------------------------------------------- primitives

def test_closure_convert_and_run_program():
    from tracejit.core.avals import ShapedArray
    from tracejit.core.trace import trace_flat
    c = np.array([1.0, 2.0])
    p = trace_flat(lambda x: [x * c], [ShapedArray((2,), np.float64)])
    assert len(p.const_vars) == 1
    q, consts = closure_convert(p)
    assert q.const_vars == [] and len(q.in_vars) == 2 and consts[0] is c
    np.testing.assert_array_equal(run_program(q, consts, [np.array([3.0, 4.0])])[0], [3.0, 8.0])
    check_program(q)


def test_checker_rejects_bad_control_flow_equations():
    from tracejit.core.errors import ProgramTypeError
    p = tracejit.make_jaxpr(lambda x: lax.scan(lambda c, x: (c + x, c), 0.0, x))(np.ones(3))
    (eqn,) = [e for e in p.eqns if e.primitive is scan_p]
    eqn.params["length"] = 4
    with pytest.raises(ProgramTypeError, match="leading axis"):
        check_program(p)


def test_cost_rules():
    body_cost = None

    def f(x):
        return lax.scan(lambda c, x: (c * x + 1.0, c), 1.0, x)
    p = program_of(f, np.ones(5))
    (eqn,) = [e for e in p.eqns if e.primitive is scan_p]
    body_cost = program_cost(eqn.params["program"])
    scan_cost = cost_rules[scan_p]([a.aval for a in eqn.inputs], [v.aval for v in eqn.outputs],
                                   **eqn.params)
    assert body_cost["flops"] == 2 and scan_cost["flops"] == 10
    p = program_of(lambda x: lax.cond(x > 0, lambda v: v * v * v, lambda v: v + 1, x), 1.0)
    (eqn,) = [e for e in p.eqns if e.primitive is cond_p]
    assert cost_rules[cond_p]([], [], **eqn.params)["flops"] == 2  # the dearer branch
    p = program_of(lambda x: lax.while_loop(lambda v: v < 9, lambda v: v * 2, x), 1.0)
    (eqn,) = [e for e in p.eqns if e.primitive is while_p]
    assert cost_rules[while_p]([], [], **eqn.params)["flops"] == 2  # one iteration: lt + mul
