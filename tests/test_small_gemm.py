"""Small products generated in LLVM (backends/cpu/small_gemm.py) instead of BLAS calls from native
code: the kernel itself on random shapes, layouts, batches and accumulations against a float64
NumPy product, IEEE special values, and jitted programs (the native entry, loop bodies) that use it."""
import ctypes

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.backends.cpu import llvm_engine, native_blas, parallel, small_gemm
from tracejit.backends.cpu.native import vector_bytes
from tracejit.compiler.plan import DotStep

pytestmark = pytest.mark.skipif("+fma" not in llvm_engine.host_cpu_features(),
                                reason="the generated product needs fused multiply-add (BLAS serves it otherwise)")


def _compiled(g: small_gemm.SmallGemm):
    module = llvm_engine.new_module("small_gemm_test")
    fn = small_gemm.function(module, g, vector_bytes() // g.dtype.itemsize)
    fn.linkage = "external"
    compiled = llvm_engine.compile_ir(str(module), name="small_gemm_test")
    call = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(compiled.address(g.name))
    return compiled, call


def _run(g, a, b, out):
    compiled, call = _compiled(g)
    call(a.ctypes.data, b.ctypes.data, out.ctypes.data)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_products_match_numpy(dtype):
    rng = np.random.default_rng(0)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    for _ in range(30):
        m, n, k = (int(v) for v in rng.integers(1, 40, 3))
        batch = int(rng.integers(1, 4))
        transposed_a = bool(rng.integers(0, 2))
        accumulate = bool(rng.integers(0, 2))
        alpha = float(rng.choice([1.0, -0.01, 2.5])) if accumulate else 1.0
        a = rng.standard_normal((batch, k, m) if transposed_a else (batch, m, k)).astype(dtype)
        b = rng.standard_normal((batch, k, n + 3)).astype(dtype)[..., :n]      # rows longer than n
        b_mem = np.ascontiguousarray(np.pad(b, ((0, 0), (0, 0), (0, 3))))
        c = rng.standard_normal((batch, m, n)).astype(dtype)
        a_row, a_col = (1, m) if transposed_a else (k, 1)
        g = small_gemm.SmallGemm(np.dtype(dtype), m, n, k, a_row, a_col, n + 3, alpha, accumulate,
                                 ((batch, a[0].size, b_mem[0].size),))
        out = c.copy() if accumulate else np.full((batch, m, n), np.nan, dtype)
        _run(g, np.ascontiguousarray(a), b_mem, out)
        a64 = np.swapaxes(a, 1, 2) if transposed_a else a
        want = (c.astype(np.float64) if accumulate else 0) + alpha * (a64.astype(np.float64) @ b.astype(np.float64))
        scale = np.abs(a64).astype(np.float64) @ np.abs(b).astype(np.float64) * abs(alpha) + np.abs(c) * accumulate
        assert np.all(np.abs(out - want) <= tol * scale + tol), (m, n, k, batch, transposed_a, accumulate)


def _compiled_kernel(g: small_gemm.SmallGemm):
    module = llvm_engine.new_module("small_gemm_kernel_test")
    small_gemm.kernel(module, g, vector_bytes() // g.dtype.itemsize, "product_kernel")
    compiled = llvm_engine.compile_ir(str(module), name="small_gemm_kernel_test")
    return compiled, ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(
        compiled.address("product_kernel"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_heads_split_off_a_model_axis(dtype):
    # attention's operands: (batch, seq, heads, d) buffers read as (batch, heads) batches of
    # matrices whose rows are heads * d apart; keys read transposed (q @ k.T: b's columns
    # contiguous, packed per matrix); a kernel over a range of the batch's matrices writes those
    # matrices only
    rng = np.random.default_rng(3)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    for _ in range(8):
        nb, t, h, d, s = int(rng.integers(1, 5)), *(int(v) for v in rng.integers(1, 40, 4))
        q = rng.standard_normal((nb, t, h, d)).astype(dtype)
        kv = rng.standard_normal((nb, s, h, d)).astype(dtype)
        transposed = bool(rng.integers(0, 2))
        if transposed:      # out[b, h] = q[b, :, h] @ kv[b, :, h].T: t x s, contracting d
            g = small_gemm.SmallGemm(np.dtype(dtype), t, s, d, h * d, 1, 1, batch=((nb, t * h * d, s * h * d),
                                     (h, d, d)), b_col=h * d)
            lhs, rhs = q, kv
            want = np.einsum("bthd,bshd->bhts", q.astype(np.float64), kv)
        else:               # out[b, h] = p[b, h] @ kv[b, :, h]: t x d, contracting s
            p_ = rng.standard_normal((nb, h, t, s)).astype(dtype)
            g = small_gemm.SmallGemm(np.dtype(dtype), t, d, s, s, 1, h * d, batch=((nb, h * t * s, s * h * d),
                                     (h, t * s, d)))
            lhs, rhs = p_, kv
            want = np.einsum("bhts,bshd->bhtd", p_.astype(np.float64), kv)
        want = want.reshape(nb * h, -1)
        first, last = sorted(int(v) for v in rng.integers(0, nb * h + 1, 2))
        out = np.full(want.shape, np.nan, dtype)
        compiled, call = _compiled_kernel(g)
        slots = (ctypes.c_void_p * 3)(lhs.ctypes.data, rhs.ctypes.data, out.ctypes.data)
        call(slots, first, last)
        scale = np.abs(want) + 1
        assert np.all(np.abs(out[first:last] - want[first:last]) <= tol * scale[first:last] * d), (g, first, last)
        assert np.isnan(out[:first]).all() and np.isnan(out[last:]).all()


def test_no_element_outside_the_product_is_written():
    # the last column block's lanes past n and rows past m are masked: the guard cells keep their NaN
    m, n, k = 7, 21, 5
    a, b = np.ones((m, k)), np.ones((k, n))
    out = np.full(m * n + 64, np.nan)
    g = small_gemm.SmallGemm(np.dtype(np.float64), m, n, k, k, 1, n)
    _run(g, a, b, out)
    np.testing.assert_array_equal(out[:m * n], 5.0)
    assert np.isnan(out[m * n:]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("vectors, extra", [(1, 0), (1, 3), (2, -1), (2, 3), (4, 0), (5, 0), (5, 1), (6, 0)])
@pytest.mark.parametrize("avx512", [False, True])
def test_whole_and_partial_column_blocks(dtype, vectors, extra, avx512, monkeypatch):
    # whole column blocks (two vectors wide) load and store plainly, a partial last one in plain
    # pieces, or masked as on AVX-512 hosts (either code runs anywhere): n at, below and past
    # multiples of the block width, nothing written past the product
    monkeypatch.setattr(small_gemm, "_avx512", lambda: avx512)
    lanes = vector_bytes() // np.dtype(dtype).itemsize
    width = 2 * lanes
    m, n, k = 13, vectors * lanes + extra, 9
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    out = np.full(m * n + 2 * width, np.nan, dtype)
    _run(small_gemm.SmallGemm(np.dtype(dtype), m, n, k, k, 1, n), a, b, out)
    np.testing.assert_allclose(out[:m * n].reshape(m, n), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    assert np.isnan(out[m * n:]).all()
    # accumulating (the partial vector read back the same way)
    c = rng.standard_normal((m, n)).astype(dtype)
    acc = np.concatenate([c.ravel(), np.full(2 * width, np.nan, dtype)])
    _run(small_gemm.SmallGemm(np.dtype(dtype), m, n, k, k, 1, n, -0.5, True), a, b, acc)
    np.testing.assert_allclose(acc[:m * n].reshape(m, n), c - 0.5 * (a.astype(np.float64) @ b), rtol=1e-5, atol=1e-5)
    assert np.isnan(acc[m * n:]).all()


def test_ieee_special_values_as_numpy():
    a = np.array([[np.inf, 1.0, 0.0], [np.nan, 2.0, -0.0], [1e308, 1e308, 1.0], [-0.0, -0.0, -0.0]])
    b = np.array([[0.0, 1.0], [1.0, -np.inf], [2.0, 3.0]])
    g = small_gemm.SmallGemm(np.dtype(np.float64), 4, 2, 3, 3, 1, 2)
    got = _run(g, a, b, np.empty((4, 2)))
    with np.errstate(all="ignore"):
        want = np.array([[sum(a[i, p] * b[p, j] for p in range(3)) for j in range(2)] for i in range(4)])
    np.testing.assert_array_equal(got, want)       # NaN where inf * 0, inf, overflow; -0.0 sums


def _small_dot_steps(fn, *args):
    plan = tracejit.jit(fn).lower(*args).compile().executable.plan
    return [native_blas.gemm_call(s, plan.buffers) for s in plan.steps if isinstance(s, DotStep)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_jitted_small_products_use_it_and_match_numpy(dtype):
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(s).astype(dtype) for s in ((24, 40), (40, 36), (24, 36)))

    def f(a, b, c):
        return jnp.maximum(a @ b + 1.0, 0.0), a.T @ c, c - 0.5 * (a @ b), jnp.einsum("ij,kj->ik", c, c)
    calls = _small_dot_steps(f, a, b, c)
    assert calls and any(call.own is not None for call in calls)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    for got, want in zip(tracejit.jit(f)(a, b, c), f(a, b, c)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=rtol)


def test_loop_body_products_use_it(monkeypatch):
    rng = np.random.default_rng(2)
    w = (rng.standard_normal((32, 32)) * 0.2).astype(np.float32)
    xs = rng.standard_normal((20, 8, 32)).astype(np.float32)

    def rnn(w, xs):
        return lax.scan(lambda h, x: (jnp.tanh(h @ w + x), h.sum()), jnp.zeros((8, 32), np.float32), xs)
    h, sums = tracejit.jit(rnn)(w, xs)
    hh, want = np.zeros((8, 32), np.float32), []
    for x in xs:
        want.append(hh.sum())
        hh = np.tanh(hh @ w + x)
    np.testing.assert_allclose(h, hh, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(sums, want, rtol=2e-4, atol=2e-5)
    monkeypatch.setenv("TRACEJIT_OWN_GEMM", "0")      # BLAS again: the same values to rounding
    h0, _ = tracejit.jit(lambda w, xs: rnn(w, xs))(w, xs)
    np.testing.assert_allclose(h0, h, rtol=2e-5, atol=2e-6)


def test_large_or_transposed_right_operands_keep_blas():
    calls = _small_dot_steps(lambda a, b: (a @ b, a @ a.T), np.ones((8, 2048), np.float32), np.ones((2048, 8),
                                                                                                   np.float32))
    assert all(call.own is None for call in calls)


def _random_product_program(rng):
    """A jitted program of one product of random shape, layout and epilogue, and its NumPy twin."""
    m, n, k = (int(v) for v in rng.integers(1, 90, 3))
    batch = int(rng.choice([0, 0, 2, 3]))
    t_a, t_b = bool(rng.integers(0, 2)), bool(rng.integers(0, 4) == 0)
    form = str(rng.choice(["plain", "bias_relu", "sgd", "scaled"]))

    def program(a, b, c, xp):
        lhs = xp.swapaxes(a, -1, -2) if t_a else a
        rhs = xp.swapaxes(b, -1, -2) if t_b else b
        p = lhs @ rhs
        if form == "bias_relu":
            return xp.maximum(p + c[..., :1, :], 0.0)
        if form == "sgd":
            return c - 0.03 * p
        return p * 0.5 if form == "scaled" else p
    lead = (batch,) if batch else ()
    shapes = (lead + ((k, m) if t_a else (m, k)), lead + ((n, k) if t_b else (k, n)), lead + (m, n))
    return program, shapes


def _fuzz_seeds(share: int) -> range:
    """The seeds of a class fuzzer: ``SMALL_GEMM_FUZZ_SEEDS`` (40 in ``make test``) over ``share``."""
    import os
    return range(int(os.environ.get("SMALL_GEMM_FUZZ_SEEDS", "40")) // share)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_jitted_products_match_numpy(dtype):
    # The class fuzzer of generated products under jit (the native entry; BLAS where they do not
    # qualify): SMALL_GEMM_FUZZ_SEEDS=2000 runs a campaign.
    tol = 2e-5 if dtype == np.float32 else 1e-13
    for seed in _fuzz_seeds(1):
        rng = np.random.default_rng(seed)
        program, shapes = _random_product_program(rng)
        a, b, c = (rng.standard_normal(s).astype(dtype) for s in shapes)
        got = np.asarray(tracejit.jit(lambda a, b, c: program(a, b, c, jnp))(a, b, c))
        want = program(*(v.astype(np.float64) for v in (a, b, c)), np)
        scale = program(*(np.abs(v).astype(np.float64) for v in (a, b, c)), np)
        assert got.dtype == dtype and got.shape == want.shape, seed
        assert np.all(np.abs(got - want) <= tol * (np.abs(scale) + 1)), seed


def test_compile_cache_keeps_generated_and_blas_products_apart(tmp_path):
    # Code that calls a BLAS symbol must not be loaded where generated code was compiled, nor the
    # reverse: the cache key names the products a module makes (the entry's, and the kernels over
    # a batch's matrices, whose presence also shifts the other kernels' names).
    import subprocess
    import sys
    script = ("import numpy as np, tracejit\n"
              "a = np.arange(16 * 64, dtype=np.float32).reshape(16, 64) / 1e3\n"
              "f = tracejit.jit(lambda a, b: a @ b)\n"
              "c = f.lower(a, a.T.copy()).compile()\n"
              "assert np.allclose(c(a, a.T.copy()), a @ a.T, rtol=1e-5)\n"
              # attention heads: a kernel over 8 matrices, or a library call from Python
              "q = np.arange(2 * 128 * 4 * 64, dtype=np.float32).reshape(2, 128, 4, 64) % 7 / 7\n"
              "g = tracejit.jit(lambda q: np.tanh(np.einsum('bthd,bshd->bhts', q, q) / 64))\n"
              "h = g.lower(q).compile()\n"
              "assert np.allclose(h(q), np.tanh(np.einsum('bthd,bshd->bhts', q, q) / 64), rtol=1e-5)\n"
              "print(c.timings['cache'], h.timings['cache'])\n")
    outcomes = []
    for flag in ("1", "0", "1"):
        env = {**__import__("os").environ, "TRACEJIT_CACHE_DIR": str(tmp_path), "TRACEJIT_OWN_GEMM": flag}
        run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        outcomes.append(run.stdout.strip())
    assert outcomes[0] == outcomes[1] == "compiled compiled" and outcomes[2] == "persistent-hit persistent-hit", \
        outcomes


def _product_launches(f, *args):
    """The generated product kernels (native_blas.ProductKernel) of ``f``'s step-by-step executable."""
    ex = tracejit.jit(f).lower(*args).compile().executable
    return [launch for launch in ex.launches if isinstance(launch.kernel, DotStep)]


def _random_attention_program(rng):
    """Attention-like products of random sizes on heads split off a model axis: ``q @ k.T`` (keys
    read transposed) and ``p @ v`` (values' rows ``heads * d`` apart), with a random epilogue."""
    nb = int(rng.integers(1, 4))
    if rng.integers(0, 2):      # larger than the native entry makes: generated kernels over the heads
        h, (t, s), d = int(rng.integers(4, 13)), (int(v) for v in rng.integers(40, 129, 2)), int(rng.integers(16, 81))
    else:
        h, (t, s, d) = int(rng.integers(1, 9)), (int(v) for v in rng.integers(1, 41, 3))
    form = str(rng.choice(["plain", "scaled_bias", "relu", "transposed_residual"]))

    def program(q, k, v, r, xp):
        heads = lambda x: x.reshape(x.shape[0], x.shape[1], h, d).transpose(0, 2, 1, 3)
        scores = heads(q) @ heads(k).transpose(0, 1, 3, 2)             # (nb, h, t, s)
        if form == "scaled_bias":
            scores = scores * 0.125 + r[:, :1, :t, :s]
        elif form == "relu":
            scores = xp.maximum(scores, 0.0)
        elif form == "transposed_residual":      # an operand read across the product's rows
            scores = scores + r[:, :, :s, :t].transpose(0, 1, 3, 2)
        return scores, (scores[..., :s] @ heads(v)).transpose(0, 2, 1, 3).reshape(nb, t, h * d)
    shapes = ((nb, t, h * d), (nb, s, h * d), (nb, s, h * d), (nb, h, max(t, s), max(t, s)))
    return program, shapes


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_attention_products_match_numpy(dtype):
    # The class fuzzer of batched products whose batch axes do not lead (heads): generated kernels
    # split over threads above the native entry's size, the entry's own products below it, both
    # against a float64 NumPy product; SMALL_GEMM_FUZZ_SEEDS=2000 runs a campaign.
    tol = 2e-5 if dtype == np.float32 else 1e-13
    kernels = 0
    for seed in _fuzz_seeds(3):
        rng = np.random.default_rng(10_000 + seed)
        program, shapes = _random_attention_program(rng)
        args = [rng.standard_normal(s).astype(dtype) for s in shapes]
        f = lambda q, k, v, r: program(q, k, v, r, jnp)
        kernels += len(_product_launches(f, *args))
        got = tracejit.jit(f)(*args)
        want = program(*(a.astype(np.float64) for a in args), np)
        scale = program(*(np.abs(a).astype(np.float64) for a in args), np)
        for g, w, s in zip(got, want, scale):
            g = np.asarray(g)
            assert g.dtype == dtype and g.shape == w.shape, seed
            assert np.all(np.abs(g - w) <= tol * (np.abs(s) + 1)), seed
    assert kernels > 0      # (the fixed seeds reach the kernels)


def test_attention_heads_are_generated_kernels_split_over_threads(monkeypatch):
    # a GPT-2-sized head split (4 x 12 heads of 128 x 64) makes both products, forward and in the
    # gradient, generated kernels over the 48 matrices; the library gives the same values
    nb, t, h, d = 4, 128, 12, 64
    rng = np.random.default_rng(4)
    x = rng.standard_normal((nb, t, 3 * h * d)).astype(np.float32)

    def attention(x):
        q, k, v = (x[..., i * h * d:(i + 1) * h * d].reshape(nb, t, h, d).transpose(0, 2, 1, 3) for i in range(3))
        att = q @ k.transpose(0, 1, 3, 2) / 8.0
        att = jnp.exp(att - att.max(-1, keepdims=True))
        return (att / att.sum(-1, keepdims=True) @ v).transpose(0, 2, 1, 3).reshape(nb, t, h * d)
    loss = lambda x: (attention(x) ** 2).sum()
    launches = _product_launches(attention, x)
    assert len(launches) == 2 and all(launch.parallel_size == nb * h for launch in launches)
    assert tracejit.jit(attention).lower(x).compile().as_text().count("generated code, a kernel over 48 matrices") == 2
    assert len(_product_launches(tracejit.grad(loss), x)) >= 4
    got, grad = np.asarray(tracejit.jit(attention)(x)), np.asarray(tracejit.jit(tracejit.grad(loss))(x))
    monkeypatch.setenv("TRACEJIT_OWN_GEMM", "0")
    assert not _product_launches(lambda x: attention(x), x)
    np.testing.assert_allclose(got, np.asarray(tracejit.jit(lambda x: attention(x))(x)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad, np.asarray(tracejit.jit(tracejit.grad(lambda x: loss(x)))(x)),
                               rtol=1e-4, atol=1e-5)


def _body_items(f, *args):
    """The kinds of a native loop body's items: ("kernel", emitter) or ("blas", GemmCall)."""
    from tests import helpers
    step, = helpers.control_flow_steps(tracejit.jit(f).lower(*args).compile())
    return [(kind, what) for kind, what, _ in step.loop.construct.body.items]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, form, split", [(128, "tanh", True), (96, "bias", True), (131, "tanh", False),
                                                (96, "sgd", False)])
def test_loop_body_products_split_into_row_blocks_over_threads(dtype, rows, form, split, monkeypatch):
    # a body's product of 1M-16M multiply-adds whose right operand fits in L2 is generated code over
    # blocks of its rows, which the body's code splits over the thread team; a library call where
    # the rows do not split into equal blocks of 8-64, or the product adds to another buffer
    rng = np.random.default_rng(rows)
    n = 176                     # (a 176x176 right operand: 124 KB float32, 248 KB float64)
    w = (rng.standard_normal((n, n)) / 13).astype(dtype)
    x0 = rng.standard_normal((rows, n)).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)

    def body(x, xp):
        if form == "tanh":
            return xp.tanh(x @ w + 0.5)
        if form == "bias":          # (and a residual: the epilogue reads the block's own rows of x)
            return 0.5 * (x @ w) + b + x
        return x - 0.5 * (x @ w)
    split = split and parallel.runtime() is not None     # (without an OpenMP team: one library call)
    f = lambda w, x0, b: lax.fori_loop(0, 3, lambda i, x: body(x, jnp), x0)
    items = _body_items(f, w, x0, b)
    products = [what for kind, what in items if isinstance(what, native_blas.ProductKernel)]
    assert bool(products) == split and (split or any(kind == "blas" for kind, _ in items)), items
    if split:
        assert products[0].layout.parallel_size >= 2 and products[0].fuses_epilogue == (form != "sgd")
    got = np.asarray(tracejit.jit(f)(w, x0, b))
    want = x0.astype(np.float64)
    for _ in range(3):
        want = body(want, np)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    monkeypatch.setenv("TRACEJIT_OWN_GEMM", "0")
    assert not [what for _, what in _body_items(lambda w, x0, b: f(w, x0, b), w, x0, b)
                if isinstance(what, native_blas.ProductKernel)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_loop_body_products_match_numpy(dtype):
    # The class fuzzer of loop-body products of 1M-16M multiply-adds (row blocks over the team where
    # they qualify, a library call where not): random sizes, transposed operands and epilogues
    # against a float64 NumPy loop; SMALL_GEMM_FUZZ_SEEDS=2000 runs a campaign.
    tol = 5e-5 if dtype == np.float32 else 1e-12
    split = 0
    for seed in _fuzz_seeds(5):
        rng = np.random.default_rng(20_000 + seed)
        n = int(rng.integers(96, 257)) if dtype == np.float32 else int(rng.integers(96, 181))
        m = int(rng.choice([8, 16, 24, 32, 48, 64])) * int(rng.integers(2, 5)) + int(rng.choice([0, 0, 0, 1]))
        t_w, form = bool(rng.integers(0, 2)), str(rng.choice(["tanh", "residual", "scaled"]))
        w = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(dtype)
        x0 = rng.standard_normal((m, n)).astype(dtype)

        def body(x, w, xp):
            p = x @ (w.T if t_w else w)
            return xp.tanh(p) if form == "tanh" else (0.5 * p + x if form == "residual" else 0.7 * p)
        f = lambda w, x0: lax.fori_loop(0, 2, lambda i, x: body(x, w, jnp), x0)
        split += any(isinstance(what, native_blas.ProductKernel) for _, what in _body_items(f, w, x0))
        want = x0.astype(np.float64)
        for _ in range(2):
            want = body(want, w.astype(np.float64), np)
        got = np.asarray(tracejit.jit(f)(w, x0))
        assert got.dtype == dtype and np.all(np.abs(got - want) <= tol * (np.abs(want) + 1)), (seed, m, n, t_w, form)
    assert split > 0 or parallel.runtime() is None
