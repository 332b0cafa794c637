"""Host callbacks: ``tracejit.pure_callback`` and ``tracejit.debug`` (print, callback, log, sharding,
breakpoint) eagerly, under ``jit`` (host steps in program order), ``vmap`` and ``grad``; the
compiler keeps effects (dce, cse, loop passes) and never caches a callback program on disk."""
import os
import pdb

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.diagnostics.persistent_cache import disabled as pc_disabled
from tracejit.experimental import io_callback
from tracejit.ops.callback import debug_callback_p, pure_callback_p

F64 = tracejit.ShapeDtypeStruct((), np.float64)


def lines(capsys):
    return capsys.readouterr().out.splitlines()


def noisy_sin(x):
    tracejit.debug.print("g {}", x)
    return jnp.sin(x)


# --------------------------------------------------------------------------- debug.print

def test_print_eager_formats(capsys):
    tracejit.debug.print("x={} y={y}", np.arange(3.0), y=jnp.ones(2, np.int32))
    tracejit.debug.print("{} {} {}", 1, 2.5, np.float32(3))
    tracejit.debug.print("{:.2f} {!r}", 1.23456, "s")
    tracejit.debug.print("no placeholders", 1, np.arange(2), skip_format_check=True)
    tracejit.debug.print(ordered=True)("two-call {}", 7)
    tracejit.debug.print("{d[a]} {t[1]}", d={"a": np.ones(1)}, t=(0, 5))
    assert lines(capsys) == ["x=[0. 1. 2.] y=[1 1]", "1 2.5 3.0", "1.23 's'", "no placeholders 1 [0 1]",
                             "two-call 7", "[1.] 5"]


def test_print_checks_arguments():
    with pytest.raises(ValueError, match="Unused positional arguments"):
        tracejit.debug.print("x", 1)
    with pytest.raises(ValueError, match="f-string"):
        tracejit.debug.print("x", y=1)
    with pytest.raises(TypeError, match="two-call form"):
        tracejit.debug.print(None, 1)
    with pytest.raises(TypeError, match="must be callable"):
        tracejit.debug.callback(3, 1)


def test_print_jit_order_and_every_call(capsys):
    @tracejit.jit
    def f(x):
        tracejit.debug.print("a {}", x)
        y = jnp.exp(x) * 2
        tracejit.debug.print("b {}", y.sum())
        tracejit.debug.print("c")
        z = y - 1
        tracejit.debug.print("d {} {}", z[0], x[-1])
        return z
    out = f(np.zeros(3))
    assert isinstance(out, tracejit.Array)
    np.testing.assert_allclose(out, np.ones(3))
    assert lines(capsys) == ["a [0. 0. 0.]", "b 6.0", "c", "d 1.0 0.0"]
    f(np.ones(3))
    assert lines(capsys)[0] == "a [1. 1. 1.]"


def test_print_reference_backend(capsys):
    f = tracejit.jit(lambda x: (tracejit.debug.print("r {}", x), x + 1)[1], backend="reference")
    np.testing.assert_allclose(f(np.ones(2)), 2.0)
    assert lines(capsys) == ["r [1. 1.]"]


def test_print_vmap_once_per_example(capsys):
    def f(x, y):
        tracejit.debug.print("x={} y={}", x, y)
        tracejit.debug.print("second {}", x.sum())
        return x * y
    xs = np.arange(6.0).reshape(2, 3)
    for g in (tracejit.vmap(f, in_axes=(0, None)), tracejit.jit(tracejit.vmap(f, in_axes=(0, None)))):
        g(xs, 7.0)
        assert lines(capsys) == ["x=[0. 1. 2.] y=7.0", "x=[3. 4. 5.] y=7.0", "second 3.0", "second 12.0"]
    # Only unbatched operands: called once.
    tracejit.vmap(lambda x, y: (tracejit.debug.print("y {}", y), x)[1], in_axes=(0, None))(np.arange(3.0), 2.0)
    assert lines(capsys) == ["y 2.0"]


@pytest.mark.parametrize("how", ["grad", "jit_grad", "grad_grad", "jvp", "value_and_grad", "jacrev", "jacfwd"])
def test_print_under_autodiff_once_with_primals(capsys, how):
    if how == "grad":
        r = tracejit.grad(noisy_sin)(1.0)
    elif how == "jit_grad":
        r = tracejit.jit(tracejit.grad(noisy_sin))(1.0)
    elif how == "grad_grad":
        r = tracejit.grad(tracejit.grad(noisy_sin))(1.0) + np.sin(1.0) + np.cos(1.0)   # -sin(1) + ...
    elif how == "jvp":
        r = tracejit.jvp(noisy_sin, (1.0,), (1.0,))[1]
    elif how == "value_and_grad":
        r = tracejit.value_and_grad(noisy_sin)(1.0)[1]
    else:
        r = getattr(tracejit, how)(noisy_sin)(1.0)
    np.testing.assert_allclose(r, np.cos(1.0))
    assert lines(capsys) == ["g 1.0"]


def test_print_vjp_backward_prints_nothing(capsys):
    out, f_vjp = tracejit.vjp(noisy_sin, 0.5)
    assert lines(capsys) == ["g 0.5"]
    f_vjp(1.0)
    f_vjp(2.0)
    assert lines(capsys) == []


@pytest.mark.parametrize("jit", [False, True])
def test_custom_jvp_rule_prints_no_tangents_in_reverse_mode(capsys, jit):
    @tracejit.custom_jvp
    def h(x):
        return x * 2

    @h.defjvp
    def _(p, t):
        tracejit.debug.print("rule {} {}", p[0], t[0])
        return h(p[0]), t[0] * 2
    g = tracejit.grad(h)
    assert float((tracejit.jit(g) if jit else g)(3.0)) == 2.0
    assert lines(capsys) == []                     # JAX's transpose drops callbacks on tangents too
    tracejit.jvp(h, (3.0,), (1.0,))
    assert lines(capsys) == ["rule 3.0 1.0"]


def test_print_vmap_of_grad(capsys):
    r = tracejit.vmap(tracejit.grad(noisy_sin))(np.array([1.0, 2.0]))
    np.testing.assert_allclose(r, np.cos([1.0, 2.0]))
    assert lines(capsys) == ["g 1.0", "g 2.0"]


def test_print_eager_grad_with_python_control_flow(capsys):
    def f(x):
        tracejit.debug.print("in {}", x)
        y = x * 3
        if y > 1:                       # asks the eager trace for a value
            tracejit.debug.print("big {}", y)
        return y * y
    np.testing.assert_allclose(tracejit.grad(f)(1.0), 18.0)
    assert lines(capsys) == ["in 1.0", "big 3.0"]


# --------------------------------------------------------------------------- control flow

def _body_print(i, c):
    tracejit.debug.print("i={} c={}", i, c)
    return c + 1


@pytest.mark.parametrize("jit", [False, True])
def test_prints_in_loops_and_branches(capsys, jit):
    wrap = tracejit.jit if jit else (lambda f: f)
    wrap(lambda x: lax.fori_loop(0, 3, _body_print, x))(0.0)
    assert lines(capsys) == ["i=0 c=0.0", "i=1 c=1.0", "i=2 c=2.0"]
    wrap(lambda x, n: lax.fori_loop(0, n, _body_print, x))(0.0, 2)           # traced bound: a while
    assert lines(capsys) == ["i=0 c=0.0", "i=1 c=1.0"]
    wrap(lambda x: lax.while_loop(lambda c: (tracejit.debug.print("cond {}", c), c < 2)[1],
                                  lambda c: (tracejit.debug.print("body {}", c), c + 1)[1], x))(0)
    assert lines(capsys) == ["cond 0", "body 0", "cond 1", "body 1", "cond 2"]
    wrap(lambda xs: lax.scan(lambda c, x: (tracejit.debug.print("s {} {}", c, x), (c + x, c))[1], 0.0, xs))(
        np.arange(3.0))
    assert lines(capsys) == ["s 0.0 0.0", "s 0.0 1.0", "s 1.0 2.0"]
    branch = [lambda x: (tracejit.debug.print("F {}", x), x)[1], lambda x: (tracejit.debug.print("T {}", x), -x)[1]]
    f = wrap(lambda p, x: lax.cond(p, branch[1], branch[0], x))
    f(True, 1.0)
    f(False, 2.0)
    wrap(lambda i, x: lax.switch(i, branch, x))(0, 3.0)
    assert lines(capsys) == ["T 1.0", "F 2.0", "F 3.0"]


def test_vmap_cond_with_batched_predicate_runs_both_branches(capsys):
    f = tracejit.vmap(lambda p, x: lax.cond(p, lambda x: (tracejit.debug.print("T {}", x), x)[1],
                                            lambda x: (tracejit.debug.print("F {}", x), x)[1], x))
    f(np.array([True, False]), np.array([1.0, 2.0]))
    assert lines(capsys) == ["F 1.0", "F 2.0", "T 1.0", "T 2.0"]      # as JAX


def test_loops_with_effects_are_never_removed(capsys):
    # Loop results unused, and a carry the body returns unchanged: the loops still run.
    @tracejit.jit
    def f(x):
        lax.fori_loop(0, 2, lambda i, c: (tracejit.debug.print("unused {}", i), c + 1)[1], x)
        same = lax.fori_loop(0, 2, lambda i, c: (tracejit.debug.print("same {}", i), c)[1], x)
        lax.scan(lambda c, _: (tracejit.debug.print("scan"), (c, None))[1], x, None, length=2)
        lax.while_loop(lambda c: c < 1, lambda c: (tracejit.debug.print("w"), c + 1)[1], 0)
        lax.cond(x > 0, lambda: tracejit.debug.print("cond"), lambda: None)
        return same * 2
    np.testing.assert_allclose(f(1.0), 2.0)
    assert lines(capsys) == ["unused 0", "unused 1", "same 0", "same 1", "scan", "scan", "w", "cond"]
    program_text, plan_text = f.lower(1.0).as_text().split("# kernels and steps")
    assert program_text.count("debug_callback") == 5
    assert plan_text.count("numpy debug_callback") == 5      # each one a step of its program or body


def test_effects_not_merged_or_removed(capsys):
    seen = []

    @tracejit.jit
    def f(x):
        y = jnp.sin(x)                                   # used only by the callbacks
        tracejit.debug.callback(seen.append, y)
        tracejit.debug.callback(seen.append, y)          # equal equation: not merged
        for _ in range(2):                               # two equal loops holding a callback
            lax.fori_loop(0, 1, lambda i, c: (tracejit.debug.callback(seen.append, c), c)[1], x)
        return x
    f(np.zeros(2))
    assert len(seen) == 4
    program = tracejit.make_jaxpr(f)(np.zeros(2))
    from tracejit.compiler.driver import optimize_program
    optimized = optimize_program(program)
    assert [e.primitive.name for e in optimized.eqns].count("debug_callback") == 2
    assert [e.primitive.name for e in optimized.eqns].count("scan") == 2
    # A nested jit(inline=False) called twice: once inlined, both loops are the same equation.
    inner = tracejit.jit(lambda x: lax.fori_loop(0, 2, lambda i, c: (tracejit.debug.print("loop {}", i), c + 1)[1],
                                                 x), inline=False)
    assert float(tracejit.jit(lambda x: inner(x) + inner(x))(1.0)) == 6.0
    assert lines(capsys) == ["loop 0", "loop 1"] * 2


# --------------------------------------------------------------------------- debug.callback

def test_callback_receives_numpy_copies():
    got = []

    def cb(a, s, *, k, tree):
        got.append((a, s, k, tree))
        a[...] = -1                                      # its own copy: nothing else changes

    @tracejit.jit
    def f(x):
        y = x * 2
        tracejit.debug.callback(cb, y, "static", k=3, tree={"t": (x, None)})
        return y + 1
    for v in (1.0, 5.0):
        out = f(np.full(4, v))
        np.testing.assert_allclose(out, 2 * v + 1)
    (a0, s, k, tree), (a1, *_) = got
    assert type(a0) is np.ndarray and type(k) is np.ndarray and type(tree["t"][0]) is np.ndarray
    assert s == "static" and tree["t"][1] is None and k == 3
    np.testing.assert_allclose(a0, -1)                   # the callback's own write, kept
    np.testing.assert_allclose(tree["t"][0], 1.0)        # an earlier call's array is not overwritten
    assert a1 is not a0
    tracejit.debug.callback()(lambda v: got.append(v), 1)   # two-call form
    assert got[-1] == 1


def test_callback_may_use_tracejit_inside():
    out = []
    f = tracejit.jit(lambda x: tracejit.debug.callback(lambda v: out.append(jnp.sum(v) * 2), x) or x)
    f(np.ones(3))
    assert isinstance(out[0], tracejit.Array) and float(out[0]) == 6.0


def test_log(caplog):
    import logging
    with caplog.at_level(logging.INFO, logger="tracejit.debug"):
        tracejit.jit(lambda x: tracejit.debug.log("v={}", x))(np.ones(2))
    assert [r.getMessage() for r in caplog.records] == ["v=[1. 1.]"]


def test_sharding_helpers_and_effects(capsys):
    seen = []
    tracejit.debug.inspect_array_sharding({"a": np.ones(2), "b": jnp.ones(3)}, callback=seen.append)
    tracejit.jit(lambda x: tracejit.debug.inspect_array_sharding(x, callback=seen.append) or x)(np.ones(2))
    assert len(seen) == 3 and all(s == jnp.ones(1).sharding and s.num_devices == 1 for s in seen)
    tracejit.debug.visualize_array_sharding(np.ones((2, 3)))
    assert lines(capsys) == ["┌───────┐", "│ CPU 0 │", "└───────┘"]
    with pytest.raises(ValueError, match="1 and 2 dimensions"):
        tracejit.debug.visualize_sharding((1, 2, 3), seen[0])
    assert str(tracejit.debug.DebugEffect()) == "Debug"
    assert str(tracejit.debug.OrderedDebugEffect()) == "OrderedDebug"


def test_breakpoint(monkeypatch):
    with pytest.raises(NotImplementedError, match="only eagerly"):
        tracejit.jit(lambda x: tracejit.debug.breakpoint() or x)(np.ones(2))
    frames = []
    monkeypatch.setattr(pdb.Pdb, "set_trace", lambda self, frame=None: frames.append(frame))
    tracejit.debug.breakpoint()
    assert frames[0].f_code.co_name == "test_breakpoint"


# --------------------------------------------------------------------------- pure_callback

def test_pure_callback_eager_and_jit():
    seen = []

    def cb(x, n, *, scale):
        seen.append((type(x), type(n), type(scale)))
        return {"s": np.sin(x) * scale, "n": np.asarray(n + 1, np.int32)}
    spec = {"s": tracejit.ShapeDtypeStruct((3,), np.float64), "n": tracejit.ShapeDtypeStruct((), np.int32)}
    f = lambda x: tracejit.pure_callback(cb, spec, x, 2, scale=np.float64(3.0))   # noqa: E731
    for g in (f, tracejit.jit(f)):
        out = g(np.arange(3.0))
        assert isinstance(out["s"], tracejit.Array) and out["n"].dtype == np.int32
        np.testing.assert_allclose(out["s"], np.sin(np.arange(3.0)) * 3)
        assert int(out["n"]) == 3
    assert seen == [(np.ndarray, np.ndarray, np.ndarray)] * 2


def test_pure_callback_unused_is_removed_under_jit():
    calls = []

    def counted(x):
        calls.append(1)
        return x

    def f(x):
        tracejit.pure_callback(counted, F64, x)
        return x + 1
    f(1.0)
    assert len(calls) == 1                                    # eagerly it runs
    tracejit.jit(f)(1.0)
    assert len(calls) == 1                                    # compiled, its unused result is not computed
    tracejit.jit(lambda x: tracejit.pure_callback(counted, F64, x) + 1)(1.0)
    assert len(calls) == 2


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("bad, message", [
    (lambda x: np.zeros(4), r"shape for return value #0: Expected: \(3,\), Actual: \(4,\)"),
    (lambda x: np.zeros(3, np.float32), "dtype for return value #0: Expected: float64, Actual: float32"),
    (lambda x: (np.zeros(3), np.zeros(3)), "number of outputs from callback. Expected: 1, Actual: 2"),
    (lambda x: 1.0, r"Expected: \(3,\), Actual: \(\)"),
])
def test_pure_callback_result_errors(bad, message, jit):
    f = lambda x: tracejit.pure_callback(bad, tracejit.ShapeDtypeStruct((3,), np.float64), x)   # noqa: E731
    with pytest.raises(tracejit.errors.JaxRuntimeError, match=message):
        (tracejit.jit(f) if jit else f)(np.arange(3.0))


def test_pure_callback_argument_errors():
    with pytest.raises(ValueError, match="vmap_method must be on of the allowed methods"):
        tracejit.pure_callback(np.sin, F64, 1.0, vmap_method="bogus")
    with pytest.raises(TypeError, match="shape"):
        tracejit.pure_callback(np.sin, 3, 1.0)
    # A callback's own exception propagates unchanged; the executable still works afterwards.
    f = tracejit.jit(lambda x: tracejit.pure_callback(lambda v: v / v if v else {}["zero"], F64, x) + 1)
    with pytest.raises(KeyError, match="zero"):
        f(0.0)
    assert float(f(2.0)) == 2.0


def _pc(x, method):
    return tracejit.pure_callback(np.sin, F64, x, vmap_method=method)


def test_pure_callback_has_no_derivative():
    msg = "Pure callbacks do not support JVP. Please use `jax.custom_jvp`"
    for diff in (tracejit.grad, lambda f: tracejit.jit(tracejit.grad(f)), tracejit.jacfwd):
        with pytest.raises(ValueError, match=msg):
            diff(lambda x: _pc(x, None))(1.0)
    with pytest.raises(ValueError, match=msg):
        tracejit.jvp(lambda x: _pc(x, None), (1.0,), (1.0,))
    with pytest.raises(ValueError, match=msg):       # at vjp(), not when the backward pass runs
        tracejit.vjp(lambda x: _pc(x, None), 1.0)
    # No derivative is needed through a stopped input.
    np.testing.assert_allclose(tracejit.grad(lambda x: x * _pc(tracejit.stop_gradient(x), None))(2.0), np.sin(2.0))


def test_pure_callback_inside_custom_jvp():
    @tracejit.custom_jvp
    def sin(x):
        return tracejit.pure_callback(np.sin, tracejit.ShapeDtypeStruct(x.shape, x.dtype), x,
                                      vmap_method="expand_dims")

    @sin.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return sin(x), tracejit.pure_callback(np.cos, tracejit.ShapeDtypeStruct(x.shape, x.dtype), x) * t
    for g in (tracejit.grad(sin), tracejit.jit(tracejit.grad(sin))):
        np.testing.assert_allclose(g(0.5), np.cos(0.5))
    np.testing.assert_allclose(tracejit.vmap(sin)(np.arange(3.0)), np.sin(np.arange(3.0)))


def _shapes_seen(method, jit, x, y, in_axes):
    seen = []

    def show(a, b):
        seen.append((np.shape(a), np.shape(b)))
        return np.asarray(a + b)

    def fun(a, b):
        out = tracejit.ShapeDtypeStruct(np.broadcast_shapes(np.shape(a), np.shape(b)), np.float64)
        return tracejit.pure_callback(show, out, a, b, vmap_method=method)
    g = tracejit.vmap(fun, in_axes=in_axes)
    out = (tracejit.jit(g) if jit else g)(x, y)
    return seen, np.asarray(out)


VMAP_CASES = [(np.arange(4.0), 1.0, (0, None)), (np.arange(8.0).reshape(2, 4), np.ones(2), (1, None))]
EXPECTED_SHAPES = {       # JAX 0.10's calls for VMAP_CASES
    "sequential": [[((), ())] * 4, [((2,), (2,))] * 4],
    "sequential_unrolled": [[((), ())] * 4, [((2,), (2,))] * 4],
    "expand_dims": [[((4,), (1,))], [((4, 2), (1, 2))]],
    "broadcast_all": [[((4,), (4,))], [((4, 2), (4, 2))]],
    "legacy_vectorized": [[((4,), ())], [((4, 2), (2,))]],
}


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("method", list(EXPECTED_SHAPES))
def test_pure_callback_vmap_methods(method, jit):
    for (x, y, axes), shapes in zip(VMAP_CASES, EXPECTED_SHAPES[method]):
        seen, out = _shapes_seen(method, jit, x, y, axes)
        assert seen == shapes
        np.testing.assert_allclose(out, np.moveaxis(np.asarray(x), axes[0], 0) + y)


def test_pure_callback_vmap_without_method():
    with pytest.raises(NotImplementedError, match="Got vmap_method=None"):
        tracejit.vmap(lambda x: _pc(x, None))(np.arange(3.0))
    # Nested vmap, and a vmap whose operand is unbatched (no batching rule involved).
    np.testing.assert_allclose(tracejit.vmap(tracejit.vmap(lambda x: _pc(x, "sequential")))(np.ones((2, 3))),
                               np.sin(np.ones((2, 3))))
    np.testing.assert_allclose(tracejit.vmap(lambda x, y: _pc(y, None) + x, in_axes=(0, None))(np.ones(2), 0.5),
                               1 + np.sin(0.5))


def test_pure_and_debug_callbacks_in_program_order(capsys):
    def f(x):
        tracejit.debug.print("start")
        y = tracejit.pure_callback(lambda v: (print("pure", v), v * 2)[1], F64, x)
        tracejit.debug.print("after {}", y)
        return y
    tracejit.jit(f)(1.5)
    assert lines(capsys) == ["start", "pure 1.5", "after 3.0"]


# --------------------------------------------------------------------------- caches

def _make(k):
    def cb(x):
        return np.asarray(x + k)
    return cb


def test_different_callbacks_are_not_confused_in_process(capsys):
    apply = tracejit.jit(lambda fun, x: tracejit.pure_callback(fun, F64, x), static_argnums=0)
    assert float(apply(_make(1.0), 1.0)) == 2.0
    assert float(apply(_make(10.0), 1.0)) == 11.0           # same code and shapes, another closure
    # Separately jitted functions whose programs print identically.
    f1 = tracejit.jit(lambda x: tracejit.debug.callback(_make_printer("one"), x) or x)
    f2 = tracejit.jit(lambda x: tracejit.debug.callback(_make_printer("two"), x) or x)
    f1(1.0)
    f2(1.0)
    f1(1.0)
    assert lines(capsys) == ["one", "two", "one"]


def _make_printer(word):
    def cb(x):
        print(word)
    return cb


def test_persistent_cache_skips_callback_programs(tmp_path):
    old = tracejit.config.compilation_cache_dir
    # The vector exp the programs call is a module of its own, compiled once per process and cached
    # on its own (it calls nothing back): compiled here first, so the entries below are the programs'.
    with pc_disabled():
        tracejit.jit(lambda x: jnp.exp(x * 3) - 1)(np.arange(8.0))
    tracejit.config.update("compilation_cache_dir", str(tmp_path))
    try:
        def entries():
            d = tmp_path / "v1"
            return sorted(n for n in os.listdir(d) if n.endswith(".tjc")) if d.exists() else []

        def program(k):
            return lambda x: jnp.exp(tracejit.pure_callback(_make(k), tracejit.ShapeDtypeStruct((8,), np.float64),
                                                            x * 2)) + 1
        x = np.arange(8.0)
        for k in (1.0, 2.0, 1.0):
            compiled = tracejit.jit(program(k)).lower(x).compile()
            assert compiled.timings["cache"] == "compiled (not cached: host callback)"
            np.testing.assert_allclose(compiled(x), np.exp(x * 2 + k) + 1)
        assert entries() == []
        # The same program without a callback is stored: the cache is on.
        compiled = tracejit.jit(lambda x: jnp.exp(x * 2) + 1).lower(x).compile()
        assert compiled.timings["cache"] == "compiled" and len(entries()) == 1
        # Once the compiler drops an unused pure callback, nothing calls back: cacheable again.
        f = tracejit.jit(lambda x: (tracejit.pure_callback(_make(3.0), F64, x[0]), jnp.exp(x * 2) + 1)[1])
        assert f.lower(x).compile().timings["cache"] == "persistent-hit"
    finally:
        tracejit.config.update("compilation_cache_dir", old)


# --------------------------------------------------------------------------- io_callback

class Counter:
    """An impure callback: counts its calls and returns the running total of what it saw."""

    def __init__(self):
        self.calls, self.total = [], 0.0

    def __call__(self, x):
        self.calls.append(np.array(x))
        self.total += float(np.sum(x))
        return np.float64(self.total)


@pytest.mark.parametrize("jit", [False, True])
def test_io_callback_runs_once_per_call_even_when_unused(jit):
    c = Counter()

    def f(x):
        io_callback(c, F64, x)                     # result unused: still runs
        t1 = io_callback(c, F64, x * 2)
        t2 = io_callback(c, F64, x * 2)            # equal to the one above: not merged
        return t1, t2
    g = tracejit.jit(f) if jit else f
    t1, t2 = g(np.arange(3.0))
    assert [a.tolist() for a in c.calls] == [[0, 1, 2], [0, 2, 4], [0, 2, 4]]
    assert (float(t1), float(t2)) == (9.0, 15.0)
    g(np.ones(3))
    assert len(c.calls) == 6


def test_io_callback_in_loops_runs_every_iteration_in_order():
    c = Counter()
    f = tracejit.jit(lambda x: lax.fori_loop(0, 4, lambda i, v: v + io_callback(c, F64, v), x))
    assert float(f(np.float64(1.0))) == 1 + 1 + 3 + 8 + 21
    assert [float(a) for a in c.calls] == [1.0, 2.0, 5.0, 13.0]


@pytest.mark.parametrize("bad, message", [(lambda x: np.zeros(4), "Incorrect output shape"),
                                          (lambda x: np.zeros(3, np.float32), "Incorrect output dtype")])
def test_io_callback_result_errors(bad, message):
    spec = tracejit.ShapeDtypeStruct((3,), np.float64)
    with pytest.raises(tracejit.errors.JaxRuntimeError, match=message + ".*io_callback"):
        tracejit.jit(lambda x: io_callback(bad, spec, x))(np.arange(3.0))
    with pytest.raises(TypeError, match="io_callback: result_shape_dtypes leaf 0"):
        io_callback(np.sin, [3], np.ones(3))


def test_io_callback_transforms():
    with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
        tracejit.grad(lambda x: io_callback(np.sin, F64, x))(1.0)
    with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
        tracejit.jvp(lambda x: io_callback(np.sin, F64, x), (1.0,), (1.0,))
    with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
        tracejit.vmap(lambda x: io_callback(np.sin, F64, x, ordered=True))(np.ones(2))
    for g in (tracejit.vmap, lambda h: tracejit.jit(tracejit.vmap(h))):
        c = Counter()
        out = g(lambda x: io_callback(lambda v: np.float64(v * 10), F64, x) + io_callback(c, F64, x))(
            np.array([1.0, 2.0, 3.0]))
        assert [float(a) for a in c.calls] == [1.0, 2.0, 3.0]     # once per example, in order
        assert out.shape == (3,) and out[0] == 11.0


def test_io_callback_is_an_effect():
    from tracejit.core.primitive import EFFECTFUL
    from tracejit.ops.callback import io_callback_p
    assert io_callback_p in EFFECTFUL
    p = tracejit.make_jaxpr(lambda x: (io_callback(np.sin, F64, x), x + 1)[1])(1.0)
    assert "io_callback" in str(p)


def test_doctests():
    import doctest
    import tracejit.api_callback
    import tracejit.experimental
    import tracejit.ops.callback
    for mod in (tracejit.debug, tracejit.api_callback, tracejit.ops.callback, tracejit.experimental):
        assert doctest.testmod(mod).failed == 0, mod.__name__


def test_primitives_and_rules_registered():
    from tracejit.core.primitive import EFFECTFUL
    assert debug_callback_p in EFFECTFUL and pure_callback_p not in EFFECTFUL
    p = tracejit.make_jaxpr(lambda x: tracejit.debug.print("{}", x))(np.ones(2))
    assert "debug_callback" in str(p)
    assert tracejit.jit(lambda x: tracejit.pure_callback(np.sin, F64, x)).lower(1.0).compile().cost_analysis()


# --------------------------------------------------------------------------- against JAX

@pytest.fixture
def jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def _run_both(jax, capsys, make, *args):
    """Prints of ``make(lib, lax, numpy)(*args)`` with tracejit and with JAX."""
    out_t = make(tracejit, lax, jnp)(*args)
    got = lines(capsys)
    out_j = make(jax, jax.lax, jax.numpy)(*args)
    jax.effects_barrier()
    want = lines(capsys)
    np.testing.assert_allclose(np.asarray(out_t), np.asarray(out_j), rtol=1e-12)
    return got, want


PROGRAMS = {
    "jit": lambda lib, lx, np_: lib.jit(lambda x: (lib.debug.print("a {} {s}", x, s=x.sum()), np_.cos(x) * 2)[1]),
    "vmap": lambda lib, lx, np_: lib.vmap(lambda x: (lib.debug.print("v {}", x), x * 3)[1]),
    "grad": lambda lib, lx, np_: lib.grad(lambda x: (lib.debug.print("p {}", x), np_.sum(np_.sin(x)))[1]),
    "jit_grad": lambda lib, lx, np_: lib.jit(lib.grad(lambda x: (lib.debug.print("q {}", x), np_.sum(x * x))[1])),
    "fori": lambda lib, lx, np_: lib.jit(lambda x: lx.fori_loop(
        0, 3, lambda i, c: (lib.debug.print("i={} c={}", i, c), c * 2)[1], x)),
    "scan": lambda lib, lx, np_: lib.jit(lambda x: lx.scan(
        lambda c, v: (lib.debug.print("c={} v={}", c, v), (c + v, c))[1], 0.0, x)[1]),
    "while": lambda lib, lx, np_: lib.jit(lambda x: lx.while_loop(
        lambda c: c.sum() < 10, lambda c: (lib.debug.print("w {}", c), c * 2)[1], x)),
    "vmap_cond": lambda lib, lx, np_: lib.vmap(lambda x: lx.cond(
        x > 1, lambda v: (lib.debug.print("T {}", v), v)[1], lambda v: (lib.debug.print("F {}", v), -v)[1], x)),
    "unused_loop": lambda lib, lx, np_: lib.jit(lambda x: (lx.fori_loop(
        0, 2, lambda i, c: (lib.debug.print("u {}", i), c)[1], x), x + 1)[1]),
    "checkpoint": lambda lib, lx, np_: lib.grad(lib.checkpoint(      # printed again when recomputed
        lambda x: (lib.debug.print("ck {}", x), np_.sum(np_.sin(x) * x))[1])),
    "custom_vjp": lambda lib, lx, np_: lib.grad(lambda x: np_.sum(_custom_vjp_double(lib)(x))),
    "jit_custom_vjp": lambda lib, lx, np_: lib.jit(lib.grad(lambda x: np_.sum(_custom_vjp_double(lib)(x)))),
}


def _custom_vjp_double(lib):
    @lib.custom_vjp
    def double(x):
        lib.debug.print("primal {}", x)           # not run under grad: the rules run instead
        return x * 2

    def fwd(x):
        lib.debug.print("fwd {}", x)
        return x * 2, x

    def bwd(r, ct):
        lib.debug.print("bwd {} {}", r, ct)
        return (ct * 2,)
    double.defvjp(fwd, bwd)
    return double


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_prints_match_jax(jax, capsys, name):
    got, want = _run_both(jax, capsys, PROGRAMS[name], np.array([0.5, 1.5, 2.5]))
    assert got == want and got


@pytest.mark.parametrize("method", list(EXPECTED_SHAPES))
def test_vmap_methods_match_jax(jax, method):
    for jit, (x, y, axes) in zip((False, True), VMAP_CASES):
        seen_j = []

        def show(a, b):
            seen_j.append((np.shape(a), np.shape(b)))
            return np.asarray(a + b)

        def fun(a, b):
            out = jax.ShapeDtypeStruct(np.broadcast_shapes(np.shape(a), np.shape(b)), np.float64)
            return jax.pure_callback(show, out, a, b, vmap_method=method)
        g = jax.vmap(fun, in_axes=axes)
        want = np.asarray((jax.jit(g) if jit else g)(x, y))
        seen, got = _shapes_seen(method, jit, x, y, axes)
        assert seen == seen_j
        np.testing.assert_array_equal(got, want)


def test_pure_callback_errors_match_jax(jax):
    spec = jax.ShapeDtypeStruct((3,), np.float64)
    for bad in (lambda x: np.zeros(4), lambda x: np.zeros(3, np.float32)):
        with pytest.raises(RuntimeError) as want:
            jax.jit(lambda x: jax.pure_callback(bad, spec, x))(np.arange(3.0)).block_until_ready()
        with pytest.raises(RuntimeError) as got:
            tracejit.jit(lambda x: tracejit.pure_callback(bad, spec, x))(np.arange(3.0))
        assert str(got.value).split(" (pure_callback")[0] in str(want.value)
    for transform, x in (("grad", np.ones(())), ("vmap", np.ones(2))):
        with pytest.raises((ValueError, NotImplementedError)) as want:
            getattr(jax, transform)(lambda v: jax.pure_callback(np.sin, jax.ShapeDtypeStruct((), np.float64), v))(x)
        with pytest.raises(type(want.value)) as got:
            getattr(tracejit, transform)(lambda v: tracejit.pure_callback(np.sin, F64, v))(x)
        assert str(got.value) == str(want.value)


def test_io_callback_matches_jax(jax):
    from jax.experimental import io_callback as jax_io_callback
    results = []
    for lib, cb, np_ in ((tracejit, io_callback, jnp), (jax, jax_io_callback, jax.numpy)):
        c = Counter()
        f = lib.jit(lambda x: lib.lax.fori_loop(
            0, 3, lambda i, v: v * 0.5 + cb(c, lib.ShapeDtypeStruct((), np.float64), v, ordered=True), x))
        out = f(np.float64(2.0))
        jax.effects_barrier()
        results.append((float(out), [float(a) for a in c.calls]))
    assert results[0] == results[1]
