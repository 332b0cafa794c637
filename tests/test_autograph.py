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


def test_config_switch_is_part_of_the_cache_key():
    # a program traced with autograph on must not be reused once it is switched off (there the
    # same function raises: an `if` on a traced value needs lax.cond)
    x = np.arange(40.0)
    f = jax.jit(skip_odd)
    want = f(x)
    config.update("autograph", False)
    try:
        with pytest.raises(jax.errors.TracerBoolConversionError):
            f(x)
    finally:
        config.update("autograph", True)
    np.testing.assert_array_equal(f(x), want)


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


# ------------------------------------------------------------------ NumPy programs as written (bench_numpy_programs)
def _check_np(f, *args, static=()):
    """jit(f) and f on copies: equal results and equal argument arrays afterwards."""
    eager = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    expected = f(*eager)
    got = jax.jit(f, static_argnums=static)(*args)
    if expected is not None:
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
    for e, g in zip(eager, args):
        if isinstance(e, np.ndarray):
            np.testing.assert_array_equal(g, e)


def jacobi_inplace(u, steps):
    for t in range(steps):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u


def test_loop_writing_numpy_argument_in_place_is_one_loop():
    # The carried NumPy array is a NumPy array inside the compiled body (it was unrolled before:
    # item assignment of the plain carry failed), and the argument is written back.
    u = np.random.default_rng(0).random((8, 9))
    _check_np(jacobi_inplace, u, 40, static=(1,))
    prog = jax.make_jaxpr(jacobi_inplace, static_argnums=1)(u, 40)
    assert "scan" in _prims(prog) and _n_eqns(prog) < 10


def views_see_loop_writes(x):
    v = x[1:]                  # a view made before the loop
    for i in range(40):
        x += 1.0
        x[0] = i
    return v.sum() + x.sum()


def rebinding_in_loop(d):
    e = d                      # alias of the argument; the loop rebinds d, e is untouched
    for k in range(20):
        d = np.minimum(d, d[:, k % 4, None] + d[None, k % 4, :])
    d[0, 0] = -1.0             # a NumPy array after the loop (writable), not the argument
    return d, e


def test_views_and_aliases_of_carried_numpy_arrays():
    _check_np(views_see_loop_writes, np.arange(5.0))
    _check_np(rebinding_in_loop, np.random.default_rng(1).random((4, 4)))


def nussinov_small(seq):
    n = seq.shape[0]
    table = np.zeros((n, n), dtype=np.int64)
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):           # traced bounds once the outer loop compiles
            best = table[i, j - 1]          # first assigned in the body
            if i + 1 < n:
                best = max(best, table[i + 1, j])
            if seq[i] + seq[j] == 3:
                best = max(best, table[i + 1, j - 1] + 1)
            table[i, j] = best
    return table


def test_nussinov_as_written():
    # np.zeros(...) written with traced values, builtin max on traced scalars inside a traced if,
    # a variable first assigned in a traced-bound loop body.
    seq = np.random.default_rng(2).integers(0, 4, 24)
    _check_np(nussinov_small, seq)


def crc16_bytes(data):
    crc = 0xFFFF
    for byte in data:
        crc ^= int(byte) << 8
        for _ in range(8):
            if crc & 0x8000:
                crc = ((crc << 1) ^ 0x1021) & 0xFFFF
            else:
                crc = (crc << 1) & 0xFFFF
    return crc


def test_crc_with_int_of_traced_byte():
    data = np.random.default_rng(3).integers(0, 256, 40).astype(np.uint8)
    assert int(jax.jit(crc16_bytes)(data)) == crc16_bytes(data)


def builtins_on_traced(x):
    out = np.zeros(4)
    for i in range(20):
        a, b = x[i % 3], x[(i + 1) % 3]
        if a > 0:
            out[0] = max(a, b)
            out[1] = min(a, b, 0.5)
            out[2] = float(int(a * 3.7))
        out[3] += max(b, a)
    return out


def test_builtin_max_min_int_float_on_traced_scalars():
    _check_np(builtins_on_traced, np.array([1.5, -2.0, np.nan]))
    _check_np(builtins_on_traced, np.array([np.nan, 2.0, -0.7]))


def hist_into_zeros(x, nbins):
    counts = np.zeros(nbins, dtype=np.int64)
    idx = (x * nbins).astype(np.int64)
    np.add.at(counts, idx, 1)
    return counts


def add_at_in_loop(x):
    counts = np.zeros(5, dtype=np.int64)
    for i in range(30):
        np.add.at(counts, np.array([i % 5, 0]), x[i])
    return counts


def test_arrays_from_np_zeros_written_with_traced_values():
    x = np.random.default_rng(4).random(100)
    _check_np(hist_into_zeros, x, 7, static=(1,))
    _check_np(add_at_in_loop, np.arange(30))


def test_np_zeros_not_written_stays_concrete():
    def f(x):
        shape_src = np.zeros(3)             # never written: stays a NumPy constant
        return x + shape_src.size
    assert "__ag.new_array" not in getattr(autograph.convert(f), "__autograph_source__", "")
    np.testing.assert_array_equal(jax.jit(f)(np.ones(2)), np.ones(2) + 3)


def view_read_in_body(x):
    v = x[1:]                  # not carried: read inside the body while x is written
    for i in range(20):
        x[0] = v.sum() * 0.5
        x[1:] += 1.0
    return x


def test_view_read_inside_compiled_body_is_not_stale():
    # A compiled body would read v's value from before the loop: the loop is unrolled instead.
    _check_np(view_read_in_body, np.arange(4.0))


def two_views_written_in_traced_if(x):
    v = x[1:]
    if x.sum() > 0:
        x[0] = 5.0
        v *= 2
    return v


def test_two_carried_views_of_one_array_in_traced_if_raise():
    # Carried separately they would lose their aliasing (a wrong answer): a clear error instead.
    with pytest.raises(autograph.AutographError, match="views of the same NumPy array"):
        jax.jit(two_views_written_in_traced_if)(np.arange(4.0))
