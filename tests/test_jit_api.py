"""The jit API: decorator forms, static and donated arguments, the cache
(keyed on input avals and static values), nested jit, AOT lower/compile,
eval_shape, ShapeDtypeStruct, block_until_ready, config and threads."""
import functools
import threading

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import ShapeDtypeStruct, jit, make_jaxpr
from helpers import assert_same, count_traces


def test_decorator_forms():
    @jit
    def f(x):
        return x * 2

    @jit(static_argnums=1)
    def g(x, n):
        return x * n

    @functools.partial(jit, static_argnums=(1,))
    def h(x, n):
        return x ** n

    x = np.arange(3.0)
    assert_same(f(x), x * 2)
    assert_same(g(x, 3), x * 3)
    assert_same(h(x, 2), x ** 2)
    assert f.__name__ == "f" and f.__wrapped__ is not None and "jit of f" in repr(f)
    with pytest.raises(TypeError, match="callable"):
        jit(3)
    with pytest.raises(TypeError, match="unexpected keyword"):
        jit(lambda x: x, bogus=1)


def test_same_signature_never_retraces():
    counted = count_traces(lambda x, y: x * y + 1)
    f = jit(counted)
    a, b = np.ones((2, 3), np.float32), np.full((2, 3), 2.0, np.float32)
    for _ in range(5):
        assert_same(f(a, b), a * b + 1)
    f(np.zeros((2, 3), np.float32), b)  # new values, same avals
    f(a[::-1], b.T.T)                   # views: same avals
    assert counted.count == 1
    f(np.ones((3, 3), np.float32), np.ones((3, 3), np.float32))  # new shape
    assert counted.count == 2
    f(np.ones((2, 3)), np.ones((2, 3)))  # new dtype
    assert counted.count == 3
    f(a, 2.0)   # weak Python scalar
    f(a, 5.0)   # another value of the same weak aval: cached
    assert counted.count == 4
    f(a, np.float32(2.0))  # strong NumPy scalar differs from the weak Python float
    assert counted.count == 5
    f(a, y=b)   # keyword instead of positional: a different call structure
    f(a, y=b)
    assert counted.count == 6
    assert len(f.signatures_compiled) == 6
    f.clear_cache()
    f(a, b)
    assert counted.count == 7


def test_static_argnums_and_argnames():
    counted = count_traces(lambda x, n, mode="add": x + n if mode == "add" else x * n)
    f = jit(counted, static_argnums=1, static_argnames="mode")
    x = np.arange(3.0)
    assert_same(f(x, 2), x + 2)
    assert_same(f(x, 2), x + 2)
    assert counted.count == 1
    assert_same(f(x, 3), x + 3)
    assert counted.count == 2
    assert_same(f(x, 3, mode="mul"), x * 3)
    assert_same(f(x, 3, mode="mul"), x * 3)
    assert counted.count == 3
    # static_argnames also covers the positional spelling, and negative argnums count from the end.
    g = jit(lambda x, n: x * n, static_argnames="n")
    assert_same(g(x, 4), g(x, n=4))
    k = jit(lambda x, n: x[:n], static_argnums=-1)
    assert_same(k(x, 2), x[:2])
    # A static value may be anything hashable, e.g. a tuple shape.
    r = jit(lambda x, shape: x.reshape(shape), static_argnums=1)
    assert_same(r(np.arange(6.0), (2, 3)), np.arange(6.0).reshape(2, 3))


def test_unhashable_static_argument():
    f = jit(lambda x, cfg: x * len(cfg), static_argnums=1)
    with pytest.raises(ValueError, match="Non-hashable static arguments.*list.*tuple"):
        f(np.ones(2), [1, 2])
    g = jit(lambda x, cfg: x, static_argnames="cfg")
    with pytest.raises(ValueError, match="cfg"):
        g(np.ones(2), cfg={"a": 1})


def test_donate_argnums():
    f = jit(lambda x, y: x * 2 + y, donate_argnums=0)
    x, y = np.arange(4.0), np.ones(4)
    expected = x * 2 + y
    assert_same(f(x.copy(), y), expected)
    assert_same(f(x.copy(), y), expected)
    g = jit(lambda x, y: (x + 1, y), donate_argnames="x")
    out = g(np.zeros(3), np.ones(3))
    assert_same(out, (np.ones(3), np.ones(3)))
    with pytest.raises(ValueError, match="donate_argnames"):
        jit(lambda x: x, donate_argnames="nope")


def test_nested_jit_inline_and_call():
    inner_counted = count_traces(lambda y: y * 3)
    inner = jit(inner_counted)
    outer = jit(lambda x: inner(x) + inner(x + 1))
    x = np.arange(3.0)
    assert_same(outer(x), x * 3 + (x + 1) * 3)
    assert inner_counted.count == 1  # the inner trace is cached per signature
    names = [e.primitive.name for e in make_jaxpr(lambda x: inner(x) + 1)(x).eqns]
    assert names == ["mul", "add"]
    kept = jit(lambda y: y * 3, inline=False)
    program = make_jaxpr(lambda x: kept(x) + 1)(x)
    assert [e.primitive.name for e in program.eqns] == ["call", "add"]
    assert_same(jit(lambda x: kept(x) + 1)(x), x * 3 + 1)
    # Calling the inner jitted function eagerly still works and is cached separately.
    assert_same(inner(x), x * 3)


def test_jitted_method():
    class Model:
        def __init__(self, scale):
            self.scale = scale

        @functools.partial(jit, static_argnums=0)
        def apply(self, x):
            return x * self.scale

        def __hash__(self):
            return hash(self.scale)

        def __eq__(self, other):
            return isinstance(other, Model) and other.scale == self.scale
    assert_same(Model(2.0).apply(np.ones(2)), np.full(2, 2.0))
    assert_same(Model(3.0).apply(np.ones(2)), np.full(2, 3.0))


def test_python_scalars_lists_and_0d_arguments():
    f = jit(lambda x: x + 1)
    assert_same(f(2.0), np.asarray(3.0))
    assert_same(f(2), np.asarray(3))
    assert_same(f(True), np.asarray(2))
    assert_same(f(np.float32(1)), np.asarray(2, np.float32))
    assert_same(f(np.array(1, np.int8)), np.asarray(2, np.int8))
    # A list is a pytree of leaves, as in JAX.
    assert_same(jit(lambda xs: xs[0] + xs[1])([1.0, 2.0]), np.asarray(3.0))


def test_outputs_are_fresh_arrays():
    x = np.arange(3.0)
    out = jit(lambda a: a)(x)
    assert out is not x and np.array_equal(out, x) and not np.shares_memory(out, x)
    x[0] = 100.0                                  # the result does not see later writes to the input
    assert out[0] == 0.0
    scalar = jit(lambda a: a.sum())(x)
    assert isinstance(scalar, tracejit.Array) and scalar.shape == ()
    f = jit(lambda a: (a, np.arange(2.0)))
    const = f(x)[1]
    assert type(const) is tracejit.Array and not const.flags.writeable
    with pytest.raises(TypeError, match="immutable"):     # JAX's arrays are immutable
        const[0] = 7.0
    with pytest.raises(ValueError, match="read-only"):    # NumPy writes through a view fail too
        np.asarray(const)[0] = 7.0
    mine = np.array(const)                        # a writable copy, NumPy's own array
    mine[0] = 7.0
    assert type(mine) is np.ndarray and f(x)[1][0] == 0.0 and const[0] == 0.0


def test_eval_shape_and_shape_dtype_struct():
    s = ShapeDtypeStruct((3, 4), np.float32)
    assert (s.shape, s.dtype, s.ndim, s.size) == ((3, 4), np.float32, 2, 12)
    assert repr(s) == "ShapeDtypeStruct(shape=(3, 4), dtype=float32)"
    assert s == ShapeDtypeStruct((3, 4), "float32") and hash(s) == hash(ShapeDtypeStruct((3, 4), np.float32))
    out = tracejit.eval_shape(lambda x: x.sum(0), s)
    assert out == ShapeDtypeStruct((4,), np.float32)
    tree = tracejit.eval_shape(lambda x, y: {"m": x @ y, "s": (x.sum(), y.astype(np.int32))}, s,
                               np.ones((4, 2), np.float32))
    assert tree == {"m": ShapeDtypeStruct((3, 2), np.float32),
                    "s": (ShapeDtypeStruct((), np.float32), ShapeDtypeStruct((4, 2), np.int32))}
    assert jit(lambda x: x.T).eval_shape(s) == ShapeDtypeStruct((4, 3), np.float32)
    counted = count_traces(lambda x: x * 2)
    tracejit.eval_shape(counted, ShapeDtypeStruct((2,), np.float64))
    assert counted.count == 1  # traced, nothing computed
    program, shapes = make_jaxpr(lambda x: x[0], return_shape=True)(s)
    assert shapes == ShapeDtypeStruct((4,), np.float32) and program.in_avals[0].shape == (3, 4)


def test_lower_compile():
    f = jit(lambda x, y: x * y + 1)
    x = np.arange(3, dtype=np.float32)
    lowered = f.lower(x, x)
    assert [a.str_short() for a in lowered.in_avals] == ["f32[3]", "f32[3]"]
    assert isinstance(lowered.as_text(), str) and "mul" in str(lowered.program)
    compiled = lowered.compile()
    assert_same(compiled(x, x), x * x + 1)
    with pytest.raises(TypeError, match=r"f32\[3\], f32\[3\].*f32\[4\], f32\[4\]"):
        compiled(np.ones(4, np.float32), np.ones(4, np.float32))
    with pytest.raises(TypeError, match=r"f32\[3\].*f64\[3\]"):
        compiled(x.astype(np.float64), x.astype(np.float64))
    # Lowering from ShapeDtypeStructs, without arrays.
    spec = ShapeDtypeStruct((2, 2), np.int32)
    c2 = jit(lambda a: a.sum(axis=0)).lower(spec).compile()
    assert_same(c2(np.ones((2, 2), np.int32)), np.full(2, 2, np.int64))
    # The compiled executable is shared with the jit cache.
    counted = count_traces(lambda a: a - 1)
    g = jit(counted)
    g.lower(x).compile()
    g(x)
    assert counted.count == 1  # lower traced; compile and the later call reuse that trace
    assert len(g.signatures_compiled) == 1


def test_block_until_ready_and_config():
    x = np.ones(2)
    assert tracejit.block_until_ready(x) is x
    tree = {"a": x, "b": [x]}
    assert tracejit.block_until_ready(tree) is tree
    assert_same(jit(lambda a: (a * 2).block_until_ready())(x), x * 2)
    cfg = tracejit.config
    assert cfg.enable_checks is True and cfg.backend in ("cpu", "reference")
    old = cfg.log_compiles
    try:
        cfg.update("jax_log_compiles", True)  # JAX spelling
        assert cfg.log_compiles is True
        cfg.log_compiles = False
        assert cfg.log_compiles is False
    finally:
        cfg.update("log_compiles", old)
    with pytest.raises(AttributeError, match="no option 'nope'"):
        cfg.update("nope", 1)
    with pytest.raises(AttributeError, match="no option"):
        cfg.nope
    assert "backend=" in repr(cfg) and isinstance(cfg.compile_key(), tuple)


def test_config_backend_is_part_of_the_cache_key():
    counted = count_traces(lambda x: x + 1)
    f = jit(counted)
    x = np.ones(2)
    f(x)
    old = tracejit.config.backend
    try:
        tracejit.config.update("backend", "reference" if old != "reference" else "cpu")
        assert_same(f(x), x + 1)
        assert counted.count == 2  # recompiled for the other backend
        f(x)
        assert counted.count == 2
    finally:
        tracejit.config.update("backend", old)
    f(x)
    assert counted.count == 2


@pytest.mark.parametrize("backend", ["reference", None])
def test_explicit_backends(backend):
    f = jit(lambda x: jnp.maximum(x, 0) * 2, backend=backend)
    x = np.array([-1.0, 0.5, 2.0])
    assert_same(f(x), np.maximum(x, 0) * 2)
    with pytest.raises(ValueError, match="unknown backend"):
        jit(lambda v: v, backend="tpu")(x)


def test_threads_share_one_jitted_function():
    counted = count_traces(lambda x, k: jnp.sin(x) * k + x.sum())
    f = jit(counted)
    inputs = [np.linspace(0, 1, 64) + i for i in range(8)]
    results = [None] * 8
    errors = []
    barrier = threading.Barrier(8)

    def worker(i):
        try:
            barrier.wait()
            for _ in range(20):
                results[i] = f(inputs[i], float(i))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i in range(8):
        assert_same(results[i], np.sin(inputs[i]) * float(i) + inputs[i].sum(), transcendental=True)
    assert counted.count == 1


def test_threads_with_different_signatures():
    f = jit(lambda x: x * 2 + 1)
    shapes = [(n,) for n in range(1, 9)]
    results = {}

    def worker(shape):
        x = np.ones(shape, np.float32)
        for _ in range(10):
            results[shape] = f(x)
    threads = [threading.Thread(target=worker, args=(s,)) for s in shapes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in shapes:
        assert_same(results[s], np.full(s, 3.0, np.float32))
    assert len(f.signatures_compiled) == 8


def test_tracing_in_one_thread_does_not_leak_into_another():
    started, release = threading.Event(), threading.Event()
    seen = {}

    def slow(x):
        started.set()
        release.wait(5)
        return x + 1

    t = threading.Thread(target=lambda: seen.setdefault("out", jit(slow)(np.ones(2))))
    t.start()
    started.wait(5)
    # While another thread is tracing, eager calls here still run NumPy directly.
    assert isinstance(jnp.sin(np.ones(2)), np.ndarray)
    assert_same(jit(lambda v: v * 3)(np.ones(2)), np.full(2, 3.0))
    release.set()
    t.join()
    assert_same(seen["out"], np.full(2, 2.0))


@pytest.mark.parametrize("scalar", [np.float64(1.5), np.float32(-2.0), np.int64(7), np.uint8(200), np.bool_(True),
                                    np.complex64(1 - 2j), np.float16(0.5)])
def test_numpy_scalar_arguments_take_the_fast_path(scalar):
    traces = []

    def f(x, y):
        traces.append(1)
        return x * 2 + y
    j = tracejit.jit(f)
    y = np.ones(3, np.float32)
    want = f(scalar, y)
    for _ in range(3):
        got = j(scalar, y)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    assert len(traces) == 2        # once eagerly above, once under jit
    assert any(type(scalar) in key for key in j._fast_cache)       # the later calls hit the fast cache
    # A 0-d array is a mutable NumPy array, a scalar is not (issue 16); f writes nothing in place,
    # so its program serves both: the same executable, no new trace.
    np.testing.assert_array_equal(j(np.asarray(scalar), y), want)
    assert len(traces) == 2


def test_numpy_and_jax_arguments_share_a_program_only_when_nothing_is_written_in_place():
    traces = []

    def pure(x):
        traces.append(1)
        return x * 2 + 1

    def writes_arg(x):
        traces.append(1)
        x[0] = 5.0
        return x * 2

    j = tracejit.jit(pure)
    a = np.arange(3.0)
    r = j(a)                                   # a NumPy argument
    np.testing.assert_array_equal(j(r), a * 4 + 3)     # a tracejit.Array: same program, no new trace
    assert len(traces) == 1
    w = tracejit.jit(writes_arg)
    b = np.arange(3.0)
    np.testing.assert_array_equal(w(b), [10.0, 2.0, 4.0])
    assert b[0] == 5.0                          # NumPy semantics: the argument was written back
    with pytest.raises(TypeError, match="immutable"):
        w(tracejit.numpy.asarray(np.arange(3.0)))      # JAX semantics for an Array: its own trace raises
    assert len(traces) == 3
