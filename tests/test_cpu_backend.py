"""The LLVM backend against the NumPy reference: every lowered primitive at
every native dtype, special values, layouts, fusion structure, AOT API."""
import threading

import numpy as np
import pytest

import tracejit
from tracejit.compiler.plan import NumpyStep
import tracejit.numpy as jnp
from tracejit import lax

FLOATS = [np.float32, np.float64]
INTS = [np.int8, np.int32, np.int64, np.uint8, np.uint32, np.uint64]
ALL = [np.bool_] + INTS + FLOATS


def special_values(dtype, n=67, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        edge = [0, 1, 2, 3, 7, int(info.max), int(info.min), int(info.max) - 1, int(info.min) + 1]
        if info.min < 0:
            edge += [-1, -2, -3, -7]
        rand = rng.integers(info.min, info.max, n - len(edge), dtype=dtype, endpoint=True)
        return np.concatenate([np.array(edge, dtype=dtype), rand])
    fi = np.finfo(dtype)
    edge = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, np.inf, -np.inf, np.nan, fi.tiny, -fi.tiny,
                     fi.smallest_subnormal, fi.max, -fi.max, 3.0, -3.0, 1e-30, 100.0, -100.0], dtype=dtype)
    return np.concatenate([edge, (rng.standard_normal(n - len(edge)) * 10).astype(dtype)])


def run_both(fn, *args):
    ref = tracejit.jit(fn, backend="reference")(*args)
    out = tracejit.jit(fn, backend="cpu")(*args)
    return ref, out


def assert_same(ref, out, ulp=0):
    ref, out = np.asarray(ref), np.asarray(out)
    assert ref.dtype == out.dtype and ref.shape == out.shape, (ref.dtype, out.dtype, ref.shape, out.shape)
    if ulp and np.issubdtype(ref.dtype, np.floating):
        np.testing.assert_array_max_ulp(np.where(np.isnan(ref), 0, ref), np.where(np.isnan(out), 0, out), ulp)
        np.testing.assert_array_equal(np.isnan(ref), np.isnan(out))
    else:
        np.testing.assert_array_equal(ref, out)
    if np.issubdtype(ref.dtype, np.floating):
        finite_zero = (ref == 0)
        np.testing.assert_array_equal(np.signbit(ref[finite_zero]), np.signbit(out[finite_zero]))


EXACT_BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "equal", "not_equal", "less", "less_equal",
                "greater", "greater_equal", "floor_divide", "remainder", "fmod", "bitwise_and", "bitwise_or",
                "bitwise_xor", "left_shift", "right_shift", "true_divide", "copysign", "fmax", "fmin"]


def _numpy_has_loop(name, dtype, nin):
    # Only combinations NumPy itself defines are tested (e.g. no `subtract` for bool).
    try:
        with np.errstate(all="ignore"):
            getattr(np, name)(*[np.ones(2, dtype)] * nin)
        return True
    except TypeError:
        return False


def _cases(names, nin):
    return [pytest.param(n, d, id=f"{n}-{np.dtype(d).name}") for n in names for d in ALL
            if _numpy_has_loop(n, d, nin)]


@pytest.mark.parametrize("name,dtype", _cases(EXACT_BINARY, 2))
def test_binary_exact(name, dtype):
    x = special_values(dtype, seed=1)
    y = special_values(dtype, seed=2)[::-1].copy()
    ref, out = run_both(lambda a, b: getattr(jnp, name)(a, b), x, y)
    assert_same(ref, out)


UNARY_EXACT = ["negative", "absolute", "sign", "floor", "ceil", "rint", "trunc", "sqrt", "square", "isnan",
               "isinf", "isfinite", "signbit", "invert", "logical_not"]


@pytest.mark.parametrize("name,dtype", _cases(UNARY_EXACT, 1))
def test_unary_exact(name, dtype):
    x = special_values(dtype, seed=3)
    ref, out = run_both(lambda a: getattr(jnp, name)(a), x)
    assert_same(ref, out)


TRANSCENDENTAL = ["exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "tanh", "sinh", "cosh",
                  "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "cbrt", "exp2"]


@pytest.mark.parametrize("name", TRANSCENDENTAL)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_transcendental_close(name, dtype):
    x = special_values(dtype, n=200, seed=4)
    ref, out = run_both(lambda a: getattr(jnp, name)(a), x)
    assert_same(ref, out, ulp=8)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_power_arctan2(dtype):
    x, y = special_values(dtype, seed=5), special_values(dtype, seed=6)
    for fn in (jnp.power, jnp.arctan2, jnp.hypot):
        ref, out = run_both(lambda a, b: fn(a, b), np.abs(x), y)
        assert_same(ref, out, ulp=8)


@pytest.mark.parametrize("src", ALL, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dst", ALL, ids=lambda d: np.dtype(d).name)
def test_convert(src, dst):
    x = special_values(src, seed=7)
    if np.issubdtype(src, np.floating) and np.issubdtype(dst, np.integer):
        # Out-of-range float -> int casts are undefined in C; compare the in-range ones.
        info = np.iinfo(dst)
        x = np.where(np.isfinite(x) & (x >= info.min) & (x <= info.max), x, 0).astype(src)
    ref, out = run_both(lambda a: a.astype(dst), x)
    assert_same(ref, out)


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), -1])
def test_reductions(dtype, axis):
    x = special_values(dtype, n=4 * 5 * 7, seed=8).reshape(4, 5, 7)
    fns = [jnp.max, jnp.min, jnp.all, jnp.any]
    if dtype != np.bool_:
        fns += [jnp.sum, jnp.prod]
    for fn in fns:
        ref, out = run_both(lambda a: fn(a, axis=axis), x)
        if np.issubdtype(dtype, np.floating) and fn in (jnp.sum, jnp.prod):
            np.testing.assert_allclose(out, ref, rtol=1e-5 if dtype == np.float32 else 1e-12, equal_nan=True)
        else:
            assert_same(ref, out)


def test_layouts_transpose_slice_reverse_broadcast():
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    fns = [lambda a: a.T * 2, lambda a: a[::-1, 1:3, ::2] + 1, lambda a: a + a.sum(1, keepdims=True),
           lambda a: np.transpose(a, (1, 0, 2))[:, ::-1] - a[0:1, 0], lambda a: jnp.broadcast_to(a[:, :1], (3, 4, 5)) * a,
           lambda a: a.reshape(12, 5)[3:] * 3, lambda a: (a.reshape(-1) + 1).reshape(5, 12)]
    for fn in fns:
        ref, out = run_both(fn, x)
        assert_same(ref, out)
    nc = x[:, ::2]  # a non-contiguous input
    ref, out = run_both(lambda a: np.sin(a) + 1, nc)
    assert_same(ref, out, ulp=8)


def test_shapes_scalar_empty_size1():
    for shape in [(), (0,), (3, 0), (1,), (1, 1), (5, 1), (1, 5)]:
        x = np.ones(shape, np.float64)
        ref, out = run_both(lambda a: a * 2 + jnp.exp(a), x)
        assert_same(ref, out, ulp=4)
        ref, out = run_both(lambda a: a.sum(), x)
        assert_same(ref, out)
    ref, out = run_both(lambda a, b: a + b, np.ones((4, 1)), np.ones((1, 3)))
    assert_same(ref, out)


def test_iota_where_select():
    ref, out = run_both(lambda a: jnp.where(jnp.arange(a.shape[0]) % 3 == 0, a, -a) + jnp.eye(5)[0, 0],
                        np.linspace(-1, 1, 37))
    assert_same(ref, out)
    ref, out = run_both(lambda i, a, b, c: lax.select_n(i, a, b, c), np.array([0, 1, 2, 2, 1], np.int32),
                        *(np.full(5, v, np.float32) for v in (1, 2, 3)))
    assert_same(ref, out)


def test_seed_g_is_one_kernel():
    f = lambda x: x * 2 + np.sin(x)  # noqa: E731
    g = lambda x: np.exp(f(f(x))) - x  # noqa: E731
    x = np.linspace(-2, 2, 10_001, dtype=np.float32)
    c = tracejit.jit(g).lower(x).compile()
    assert len(c.kernels) == 1
    np.testing.assert_allclose(c(x), g(x), rtol=2e-6)
    mem = c.memory_analysis()
    assert mem["temp_size_in_bytes"] == 0 and mem["allocations_per_call"] == 1


def softmax(x):
    m = x.max(-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(-1, keepdims=True)


def layernorm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * g + b


def test_softmax_and_layernorm_kernel_counts():
    x = np.random.default_rng(0).standard_normal((33, 130)).astype(np.float32)
    c = tracejit.jit(softmax).lower(x).compile()
    assert len(c.kernels) <= 3
    np.testing.assert_allclose(c(x), softmax(x), rtol=1e-5, atol=1e-7)
    g, b = np.ones(130, np.float32) * 1.5, np.full(130, 0.25, np.float32)
    c = tracejit.jit(layernorm).lower(x, g, b).compile()
    assert len(c.kernels) <= 2
    np.testing.assert_allclose(c(x, g, b), layernorm(x, g, b), rtol=1e-4, atol=1e-5)


def test_matmul_epilogue_and_transposed_operands():
    rng = np.random.default_rng(1)
    x, w, bias = rng.standard_normal((16, 32)), rng.standard_normal((64, 32)), rng.standard_normal(64)
    fn = lambda x, w, b: np.maximum(x @ w.T + b, 0)  # noqa: E731
    c = tracejit.jit(fn).lower(x, w, bias).compile()
    text = c.as_text()
    assert "blas dot_general" in text and "perm (1, 0)" in text   # transpose passed as a flag
    assert len(c.kernels) == 1                                      # bias + relu fused epilogue
    np.testing.assert_allclose(c(x, w, bias), fn(x, w, bias), rtol=1e-12)
    a, bm = rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 5, 2))
    ref, out = run_both(lambda a, b: jnp.einsum("bij,bjk->bik", a, b) * 2, a, bm)
    np.testing.assert_allclose(out, ref, rtol=1e-12)


def test_fallback_numpy_step_for_unlowered_primitive():
    x = (np.arange(12) - 5).astype(np.complex128).reshape(3, 4)
    fn = lambda a: np.exp(a * 1j).sum(0) + 1        # noqa: E731  complex exp has no native rule
    ref, out = run_both(fn, x)
    assert_same(ref, out)
    steps = tracejit.jit(fn).lower(x).compile().executable.plan.steps
    assert any(isinstance(s, NumpyStep) and s.eqn.primitive.name == "exp" for s in steps)


def test_compiled_signature_mismatch_and_analysis():
    c = tracejit.jit(lambda x: np.exp(x) * 2).lower(np.ones(8, np.float32)).compile()
    with pytest.raises(TypeError, match=r"f32\[8\].*f32\[9\]"):
        c(np.ones(9, np.float32))
    cost = c.cost_analysis()
    assert cost["transcendentals"] == 8 and cost["bytes accessed"] == 64
    assert "kernel" in c.as_text() and "define" in c.as_text(llvm_ir=True)


def test_threads_share_one_executable():
    fn = tracejit.jit(lambda x: np.tanh(x) * 3 + x.sum())
    inputs = [np.random.default_rng(i).standard_normal(200_000) for i in range(8)]
    expected = [np.tanh(x) * 3 + x.sum() for x in inputs]
    fn(inputs[0])
    results = [None] * 8

    def work(i):
        for _ in range(5):
            results[i] = fn(inputs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r, e in zip(results, expected):
        np.testing.assert_allclose(r, e, rtol=1e-9)


def test_large_parallel_kernel_matches():
    x = np.random.default_rng(3).standard_normal((700, 1000)).astype(np.float32)
    ref, out = run_both(lambda a: np.exp(-a * a) * a, x)
    assert_same(ref, out, ulp=4)
    ref, out = run_both(lambda a: a.sum(0), x)
    np.testing.assert_allclose(out, ref, rtol=1e-4)


def test_sibling_reductions_with_different_axes_do_not_merge():
    # Regression: a row reduction and a full reduction over the same input share a
    # permutation but not a row split; merging them gave wrong results.
    x = np.random.default_rng(5).standard_normal((3, 4))
    ref, out = run_both(lambda a: a.sum(1) * a.sum(), x)
    np.testing.assert_allclose(out, ref, rtol=1e-13)


def test_donated_argument_becomes_the_output():
    fn = tracejit.jit(lambda x, y: x * 2 + y, donate_argnums=(0,))
    x, y = np.arange(6.0), np.ones(6)
    expected = x * 2 + y
    out = fn(x, y)
    np.testing.assert_array_equal(out, expected)
    assert np.shares_memory(out, x)           # no new allocation for the output
    keep = tracejit.jit(lambda x, y: x * 2 + y)
    x2 = np.arange(6.0)
    assert not np.shares_memory(keep(x2, y), x2)


def test_in_place_temporaries_share_arena_memory():
    def f(x):
        a = np.exp(x)             # used by a reduction and a later kernel: materialized
        b = np.exp(a - a.max())   # reads `a` elementwise for the last time: written over it
        return b.T + b
    x = np.random.default_rng(2).standard_normal((64, 64))
    c = tracejit.jit(f).lower(x).compile()
    np.testing.assert_allclose(c(x), f(x), rtol=1e-12)
    assert c.memory_analysis()["temp_size_in_bytes"] < 2 * x.nbytes


def test_in_place_never_clobbers_a_value_another_output_reads():
    # Regression: with several outputs in one pass, writing output 1 over an input that
    # output 3 still reads gave wrong results.
    x, row, v = np.arange(72.).reshape(6, 4, 3), np.array([10., 20., 30.]), np.ones((6, 3))
    f = lambda x, v, row: [x.at[:, 1].set(v), x.at[:, 1].set(1.5), x.at[:, 1].set(row),  # noqa: E731
                           x.at[:, 1].add(v), x.at[:, 1].add(1.5), x.at[:, 1].add(row)]
    ref, out = run_both(f, x, v, row)
    for a, b in zip(ref, out):
        assert_same(a, b)
    fd = tracejit.jit(lambda x, y: (x + y, x * y), donate_argnums=(0,))
    a, b = np.arange(5.0), np.full(5, 2.0)
    s, p = fd(a.copy(), b)
    np.testing.assert_array_equal(s, a + b)
    np.testing.assert_array_equal(p, a * b)


def test_reduction_over_empty_axis_writes_identity():
    for fn in (lambda x: x[:, :0].sum(-1), lambda x: x[:, :0].prod(-1), lambda x: jnp.max(x[:, :0], -1, initial=-5.0)):
        ref, out = run_both(fn, np.ones((2, 3)))
        assert_same(ref, out)


def test_merge_respects_producers_seen_through_aliases():
    # Regression: a reduction reading a reshape (alias) of a later step's output was merged
    # into an earlier kernel and read uninitialized memory.
    x = np.array([3., 1, 2, 1])
    ref, out = run_both(lambda x: (jnp.min(x), jnp.sum(jnp.diagonal(jnp.outer(x, x)))), x)
    for a, b in zip(ref, out):
        assert_same(a, b)


def test_layernorm_backward_fuses_into_three_kernels():
    def loss(x, g, b, dy):
        return (layernorm(x, g, b) * dy).sum()
    rng = np.random.default_rng(7)
    x, dy = rng.standard_normal((48, 96)), rng.standard_normal((48, 96))
    g, b = rng.standard_normal(96), rng.standard_normal(96)
    grad = tracejit.grad(loss, argnums=(0, 1, 2))
    c = tracejit.jit(grad).lower(x, g, b, dy).compile()
    assert len(c.kernels) <= 3
    for got, want in zip(c(x, g, b, dy), tracejit.jit(grad, backend="reference")(x, g, b, dy)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    # Storing every forward intermediate (each [48, 96] value of the traced program) would take more.
    program = tracejit.make_jaxpr(grad)(x, g, b, dy)
    every_intermediate = sum(v.aval.nbytes for e in program.eqns for v in e.outputs)
    assert c.memory_analysis()["temp_size_in_bytes"] < every_intermediate / 4


def test_native_loops_match_reference():
    # Small kernel-only bodies run as one native loop (tracejit/backends/cpu/loops.py).
    cases = [
        (lambda x: lax.fori_loop(0, 50, lambda i, v: v * 0.9 + i, x), np.ones(7, np.float32)),
        (lambda x: lax.while_loop(lambda c: c[0] < 12, lambda c: (c[0] + 1, c[1] * 1.1, c[1]), (0, x, x)),
         np.linspace(0, 1, 5)),
        (lambda xs: lax.scan(lambda c, x: (c + x.sum(), c * x), np.float64(0), xs, reverse=True),
         np.arange(12.0).reshape(4, 3)),
    ]
    for fn, x in cases:
        ref, out = run_both(fn, x)
        for a, b in zip(tracejit.tree_leaves(ref), tracejit.tree_leaves(out)):
            np.testing.assert_allclose(b, a, rtol=1e-6)
        # The native path was taken.
        assert "native loop" in tracejit.jit(fn).lower(x).compile().as_text()


def test_maximum_minimum_signed_zeros_and_nan_like_numpy():
    for dt in FLOATS:
        a = np.array([0., -0., np.nan, 1., np.nan, -0.], dt)
        b = np.array([-0., 0., 1., np.nan, np.nan, -0.], dt)
        for fn in (jnp.maximum, jnp.minimum):
            out = tracejit.jit(fn)(a, b)
            expected = getattr(np, fn.__name__)(a, b)
            np.testing.assert_array_equal(np.signbit(out), np.signbit(expected))
            np.testing.assert_array_equal(np.isnan(out), np.isnan(expected))


def test_column_reductions_vectorize_across_rows():
    x = np.random.default_rng(9).standard_normal((67, 45)).astype(np.float32)
    for fn in (lambda a: a.sum(0), lambda a: np.exp(a).max(0) * a[0], lambda a: (a - a.mean(0)).sum(0)):
        ref, out = run_both(fn, x)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    from tracejit.backends.cpu.codegen import KernelEmitter  # noqa: F401
    c = tracejit.jit(lambda a: a.sum(0)).lower(x).compile()
    assert c.executable.launches[0].granule > 1      # lanes run along the (contiguous) columns


def test_large_outputs_recycle_memory_after_release():
    fn = tracejit.jit(lambda x: x * 2.0)
    x = np.arange(300_000, dtype=np.float64)             # 2.4 MB output: pooled
    first = fn(x)
    np.testing.assert_array_equal(first, x * 2)
    address = first.__array_interface__["data"][0]
    del first                                              # released: its memory is reused
    second = fn(x + 1)
    np.testing.assert_array_equal(second, (x + 1) * 2)
    assert second.__array_interface__["data"][0] == address
    third = fn(x)                                          # `second` is alive: new memory
    assert not np.shares_memory(second, third)
    np.testing.assert_array_equal(second, (x + 1) * 2)


def test_batched_matmul_by_matrix_does_not_broadcast_the_matrix():
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal((4, 16, 32)), rng.standard_normal((32, 24))
    c = tracejit.jit(lambda x, w: x @ w).lower(x, w).compile()
    assert not c.kernels                           # one BLAS call, no copy of w per batch
    assert c.memory_analysis()["temp_size_in_bytes"] == 0
    np.testing.assert_allclose(c(x, w), x @ w, rtol=1e-12)


def _layernorm_grad():
    def ln_loss(x, g, b, dy):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (((x - m) / np.sqrt(v + 1e-5) * g + b) * dy).sum()
    return tracejit.grad(ln_loss, argnums=(0, 1, 2))


def test_costly_per_row_values_are_computed_once_per_row():
    rng = np.random.default_rng(4)
    x, dy = rng.standard_normal((80, 96)), rng.standard_normal((80, 96))
    g, b = rng.standard_normal(96), rng.standard_normal(96)
    c = tracejit.jit(_layernorm_grad()).lower(x, g, b, dy).compile()
    from tracejit.compiler.kernel_ir import walk
    for k in c.kernels:
        for phase in k.phases:
            full = phase.reduce_op or any(c.executable.plan.buffers[o].shape == x.shape for o in phase.outputs)
            if full and not phase.per_row:
                # 1/sqrt(var + eps) is a per-row value: never recomputed per element.
                assert not any(n.kind == "op" and n.prim.name == "sqrt" for n in walk(phase.exprs)), k.describe()
    for got, want in zip(c(x, g, b, dy), tracejit.jit(_layernorm_grad(), backend="reference")(x, g, b, dy)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_maps_join_the_row_kernel_that_walks_in_memory_order():
    x = np.random.default_rng(6).standard_normal((128, 96)).astype(np.float32)
    g, b, dy = np.ones(96, np.float32), np.zeros(96, np.float32), np.ones((128, 96), np.float32)
    c = tracejit.jit(_layernorm_grad()).lower(x, g, b, dy).compile()
    for k in c.kernels:
        if k.is_row_kernel and tuple(k.perm) != tuple(range(len(k.perm))):
            # A column-style kernel keeps only its reductions; dx is written by the row-order kernel.
            assert all(p.reduce_op or p.per_row for p in k.phases), k.describe()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(200, 70), (33, 130), (64, 64), (300, 3)])
def test_wide_column_blocks_match_numpy(dtype, shape):
    x = np.random.default_rng(8).standard_normal(shape).astype(dtype)
    for fn in (lambda a: a.sum(0), lambda a: (a * a[:, :1]).max(0) - a.min(0), lambda a: (a / a.std(0)).sum(0)):
        ref, out = run_both(fn, x)
        np.testing.assert_allclose(out, ref, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


def test_first_call_output_memory_is_faulted_in_during_the_compile():
    """A compile fills one buffer per large output on another thread; the first call writes its
    result there instead of faulting in fresh pages (runtime.prime_in_background)."""
    import time
    x = np.linspace(-3, 3, 1 << 19, dtype=np.float32)          # 2 MiB output
    compiled = tracejit.jit(lambda a: np.exp(np.sin(a)) * 2).lower(x).compile()
    pools = [pool for _, _, _, pool in compiled.executable._fresh_outputs if pool is not None]
    assert len(pools) == 1
    deadline = time.monotonic() + 30
    while not pools[0].buffers and time.monotonic() < deadline:
        time.sleep(0.001)
    primed = pools[0].buffers[-1].ctypes.data     # only the address: a reference would keep it in use
    out = compiled(x)
    assert out.ctypes.data == primed
    np.testing.assert_allclose(out, np.exp(np.sin(x)) * 2, rtol=1e-6)


def test_output_priming_is_capped(monkeypatch):
    from tracejit.backends.cpu import runtime
    started = []
    monkeypatch.setattr(runtime.threading, "Thread", lambda target, **kw: started.append(target) or
                        type("T", (), {"start": lambda self: None})())
    small, big = runtime.OutputPool(1 << 20), runtime.OutputPool(runtime.PRIME_MAX_BYTES + 1)
    runtime.prime_in_background([big])
    assert started == []
    runtime.prime_in_background([big, small])
    assert len(started) == 1
    started[0]()
    assert len(small.buffers) == 1 and big.buffers == []


def test_a_call_waits_for_its_output_buffer_still_being_primed():
    import time
    from tracejit.backends.cpu import runtime
    pool = runtime.OutputPool(1 << 20)
    pool.priming = threading.Event()

    def slow_prime():
        time.sleep(0.05)
        pool.prime()
    worker = threading.Thread(target=slow_prime)
    worker.start()
    out = pool.take((1 << 18,), np.float32)
    worker.join()
    assert pool.priming is None and len(pool.buffers) == 1 and np.shares_memory(out, pool.buffers[0])
    assert out.shape == (1 << 18,) and not out.any()       # the primed (zero-filled) buffer
    fresh = runtime.OutputPool(32).take((4,), np.int64)       # nothing pending: a new buffer
    assert fresh.shape == (4,)


def test_transcendental_broadcast_over_a_short_axis_is_computed_once():
    # n-body's pairwise weights: w[i, j] holds a pow and is broadcast over the 3 coordinates. It is
    # materialized (EXPENSIVE_BROADCAST_MATERIALIZE_FACTOR), not recomputed 3 times per pair.
    rng = np.random.default_rng(3)
    pos, mass = rng.standard_normal((64, 3)), rng.random(64)

    def accel(pos, mass):
        d = pos[None, :, :] - pos[:, None, :]
        w = mass[None, :] * (np.sum(d * d, axis=-1) + 1e-2) ** -1.5
        return np.sum(d * w[:, :, None], axis=1)
    c = tracejit.jit(accel).lower(pos, mass).compile()
    pow_lines = [line for line in c.as_text().splitlines() if "pow(" in line]
    assert len(pow_lines) == 1 and "reduce_sum" not in pow_lines[0]
    np.testing.assert_allclose(c(pos, mass), accel(pos, mass), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int32, np.uint8])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sums_over_a_short_axis_are_additions_in_numpy_order(dtype, axis):
    # compiler/passes/short_sums.py: a sum over an axis of 2-4 elements is a map kernel over the
    # other axes, with NumPy's values bit for bit: its order, +0.0 for negative zeros, NaN and inf.
    rng = np.random.default_rng(5)
    shape = [5, 6, 7]
    shape[axis] = 3
    x = (rng.standard_normal(shape) * 1e16).astype(dtype) if dtype not in (np.int32, np.uint8) else \
        rng.integers(0, 200, shape).astype(dtype)
    if np.dtype(dtype).kind in "fc":
        x.flat[::7] = -0.0
        x.flat[5], x.flat[11], x.flat[13] = np.nan, np.inf, -np.inf
        x[tuple(slice(None) if d == axis % 3 else 0 for d in range(3))] = -0.0    # a line of -0.0: sums to +0.0
    f = tracejit.jit(lambda x: jnp.sum(x, axis=axis, dtype=x.dtype))
    got, want = f(x), np.sum(x, axis=axis, dtype=dtype)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(np.real(got)), np.signbit(np.real(want)))
    text = f.lower(x).compile().as_text()
    assert "reduce_sum" not in text and text.count("kernel") == 1
