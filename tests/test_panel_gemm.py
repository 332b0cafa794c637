"""Generated panel products (tracejit/backends/cpu/panel_gemm.py) and the ``tracejit`` BLAS provider.

The kernel is compared with float64 NumPy products on every edge of its blocking (rows around the
4-row block, columns around the column block and its masked tail, contractions around the packed
block), on views, with special values, on one and two threads, from several Python threads at once
and in a forked child; what it does not serve must go elsewhere. How ``auto`` decides to use it is
driven with fake providers and a fake timer (no dependence on this machine's speed).
"""
from __future__ import annotations

import multiprocessing
import os
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracejit
from tracejit.backends.cpu import blas, llvm_engine, native_blas, panel_gemm

from helpers import at_page_end
from test_blas_choice import isolated_chooser

pytestmark = pytest.mark.skipif("+fma" not in llvm_engine.host_cpu_features(),
                                reason="the generated product needs fused multiply-add (it does not load)")
FLOATS = [np.float32, np.float64]
TOL = {np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-13}


@pytest.fixture(scope="module")
def kernels():
    return panel_gemm.PanelKernels()


def _rand(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _check(got, want, k):
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    tol = TOL[got.dtype] * scale * max(1.0, np.sqrt(k))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=tol)


def _served(kernels, a, b, out, alpha=1.0, beta=0.0):
    """What serves() must say for these (accepted) layouts: what the shape rule says (run() computes
    the other shapes too; the provider sends them to a library)."""
    m, k = a.shape
    return kernels.serves(a, b, out, alpha, beta) == kernels.serves_shape(out.dtype, m, b.shape[1], k)


@pytest.mark.parametrize("dtype", FLOATS)
def test_the_shapes_it_serves(kernels, dtype):
    dtype = np.dtype(dtype)
    width = kernels.vectors * kernels.lanes(dtype)
    n = panel_gemm.MIN_COLUMN_BLOCKS * width
    k = -(-panel_gemm.MIN_MACS[dtype] // (8 * n))
    assert kernels.serves_shape(dtype, 8, n, k)
    assert not kernels.serves_shape(dtype, 8, n - 1, k)               # too few column blocks for the team
    assert not kernels.serves_shape(dtype, 8, n, k - 1)               # too small to repay the launch
    assert kernels.serves_shape(dtype, panel_gemm.MAX_ROWS, n, k)
    assert not kernels.serves_shape(dtype, panel_gemm.MAX_ROWS + 1, n, k)
    assert not kernels.serves_shape(np.int32, 8, n, k)


def _rand_b(k, n, dtype, seed, layout="rows", extra=0):
    """A ``(k, n)`` ``b`` with rows ``n + extra`` long (``layout`` "rows"), or the transpose of an
    ``(n, k + extra)`` matrix's first ``k`` columns ("columns": ``x @ w.T``)."""
    if layout == "rows":
        return _rand((k, n + extra), dtype, seed)[:, :n]
    return _rand((n, k + extra), dtype, seed)[:, :k].T


def _blocks(kernels, dtype):
    """(rows per block, columns per block, rows of b per packed block) of this host's kernel."""
    lanes = kernels.lanes(dtype)
    return kernels.rows, kernels.vectors * lanes, panel_gemm.contraction_block(dtype, lanes, kernels.vectors)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("b_layout", ["rows", "columns"])
def test_every_block_edge_against_float64(kernels, dtype, threads, b_layout):
    mr, nr, kc = _blocks(kernels, np.dtype(dtype))
    ms = [1, mr - 1, mr, mr + 1, 2 * mr + 3, panel_gemm.MAX_ROWS]
    ns = [1, nr - 1, nr, nr + 1, 3 * nr + 5]
    ks = [1, 2, kc - 1, kc, kc + 1, 2 * kc + 7]
    seed = 0
    for m in ms:
        for n in ns:
            for k in ks:
                if m * n * k > 3e6 and (m, n) != (panel_gemm.MAX_ROWS, 3 * nr + 5):
                    continue
                seed += 1
                a, b = _rand((m, k), dtype, seed), _rand_b(k, n, dtype, seed + 1000, b_layout)
                out = np.full((m, n), np.nan, dtype)
                assert _served(kernels, a, b, out)
                kernels.run(a, b, out, threads=threads)
                _check(out, a.astype(np.float64) @ b.astype(np.float64), k)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(dtype=st.sampled_from(FLOATS), m=st.integers(1, 40), n=st.integers(1, 400), k=st.integers(1, 700),
       a_layout=st.sampled_from(["rows", "transposed", "row_step", "broadcast"]), ldb_extra=st.integers(0, 40),
       b_layout=st.sampled_from(["rows", "columns"]), accumulate=st.booleans(), threads=st.sampled_from([1, 2]),
       seed=st.integers(0, 2 ** 16))
def test_random_products_against_float64(kernels, dtype, m, n, k, a_layout, ldb_extra, b_layout, accumulate, threads,
                                         seed):
    """Random sizes across the blocks' edges, layouts of ``a`` and ``b``, row lengths of ``b``,
    accumulation."""
    if a_layout == "rows":
        a = _rand((m, k), dtype, seed)
    elif a_layout == "transposed":
        a = _rand((k, m), dtype, seed).T
    elif a_layout == "row_step":
        a = _rand((2 * m, k + 3), dtype, seed)[::2, 1:k + 1]
    else:
        a = np.broadcast_to(_rand((1, k), dtype, seed), (m, k))
    b = _rand_b(k, n, dtype, seed + 1, b_layout, ldb_extra)
    c = _rand((m, n), dtype, seed + 2)
    out = c.copy()
    kernels.run(a, b, out, 1.0, 1.0 if accumulate else 0.0, threads=threads)
    want = a.astype(np.float64) @ b.astype(np.float64) + (c if accumulate else 0.0)
    _check(out, want, k)


@pytest.mark.parametrize("dtype", FLOATS)
def test_the_avx2_shaped_kernel(dtype):
    """The blocking a CPU without AVX-512 gets (3 vectors of 32 bytes; compiled here for this CPU,
    whose instructions include AVX2's): the same edges."""
    narrow = panel_gemm.PanelKernels()
    narrow.vector_bytes, narrow.vectors = 32, 3
    mr, nr, kc = _blocks(narrow, np.dtype(dtype))
    assert nr == 3 * 32 // np.dtype(dtype).itemsize
    for seed, (m, n, k, b_layout) in enumerate([(1, 1, 1, "rows"), (mr + 1, nr - 1, kc + 1, "rows"),
                                                (3 * mr + 2, 5 * nr + 3, 2 * kc + 5, "rows"),
                                                (mr + 1, nr - 1, kc + 1, "columns"),
                                                (3 * mr + 2, 5 * nr + 3, 2 * kc + 5, "columns")]):
        a, b, c = _rand((m, k), dtype, seed), _rand_b(k, n, dtype, seed + 1, b_layout), _rand((m, n), dtype, seed + 2)
        out = c.copy()
        narrow.run(a, b, out, 1.0, 1.0, threads=2)
        _check(out, c + a.astype(np.float64) @ b.astype(np.float64), k)


@pytest.mark.parametrize("dtype", FLOATS)
def test_accumulate_and_alpha(kernels, dtype):
    mr, nr, kc = _blocks(kernels, np.dtype(dtype))
    m, n, k = 2 * mr + 1, 2 * nr + 3, kc + 9
    a, b, c = _rand((m, k), dtype), _rand((k, n), dtype, 1), _rand((m, n), dtype, 2)
    wide = a.astype(np.float64) @ b.astype(np.float64)
    out = c.copy()
    kernels.run(a, b, out, 1.0, 1.0, threads=2)             # out += a @ b
    _check(out, c.astype(np.float64) + wide, k)
    out = c.copy()
    kernels.run(a, b, out, -0.5, 0.0, threads=2)            # out = -0.5 a @ b, the old out ignored
    _check(out, -0.5 * wide, k)
    assert not kernels.serves(a, b, out, 2.0, 1.0)         # alpha with accumulation: a library's


@pytest.mark.parametrize("dtype", FLOATS)
def test_views_strides_and_guards(kernels, dtype):
    """Transposed and sliced ``a``, ``b`` with rows longer than ``n`` (NaN past ``n``: never in the
    result), or a transposed ``b`` whose columns are longer than ``k`` (NaN past ``k``), broadcast rows
    of ``a``; ``out`` inside a NaN-guarded buffer that must stay untouched."""
    mr, nr, kc = _blocks(kernels, np.dtype(dtype))
    m, n, k = 3 * mr + 2, nr + 7, kc + 3
    wide_b = _rand((k, n + 13), dtype, 3)
    wide_b[:, n:] = np.nan
    wide_w = _rand((n, k + 13), dtype, 7)
    wide_w[:, k:] = np.nan
    cases = [_rand((k, m), dtype, 4).T,                                  # transposed view of a
             _rand((2 * m, k + 5), dtype, 5)[::2, 2:k + 2],              # every other row, sliced columns
             np.broadcast_to(_rand((1, k), dtype, 6), (m, k))]           # one row, stride 0
    for a, b in [(a, b) for a in cases for b in (wide_b[:, :n], wide_w[:, :k].T)]:
        assert a.shape == (m, k)
        guard = 37
        buf = np.full(m * n + 2 * guard, np.nan, dtype)
        out = buf[guard:guard + m * n].reshape(m, n)
        assert _served(kernels, a, b, out)
        kernels.run(a, b, out, threads=2)
        _check(out, a.astype(np.float64) @ b.astype(np.float64), k)
        assert np.isnan(buf[:guard]).all() and np.isnan(buf[guard + m * n:]).all()


@pytest.mark.parametrize("dtype", FLOATS)
def test_special_values_like_numpy(kernels, dtype):
    """NaN and inf propagate as in NumPy's product (inf * 0 is NaN; inf - inf is NaN); denormal and
    extreme finite operands give NumPy's values."""
    mr, nr, kc = _blocks(kernels, np.dtype(dtype))
    m, n, k = mr + 2, nr + 2, kc + 2
    info = np.finfo(dtype)
    a, b = _rand((m, k), dtype, 7), _rand((k, n), dtype, 8)
    a[0, 3] = np.nan
    a[1, 5] = np.inf
    b[5, 2] = 0.0                     # row 1, column 2: inf * 0
    a[2, 7], a[2, 8] = np.inf, -np.inf
    b[7, :], b[8, :] = 1.0, 1.0       # row 2: inf - inf everywhere
    a[3, :] = info.smallest_subnormal * np.arange(1, k + 1)
    a[4, :] = info.max / (16 * k)
    out = np.empty((m, n), dtype)
    kernels.run(a, b, out, threads=2)
    with np.errstate(invalid="ignore"):
        want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(out), np.isinf(want))
    assert np.isnan(out[0]).all() and np.isnan(out[1, 2]) and np.isnan(out[2]).all()
    for i in range(3, m):           # each row on its own scale: the tiny row is not hidden by the huge one
        scale = np.max(np.abs(want[i]))
        assert 0 < scale < np.inf
        # (each product of a subnormal is rounded to a multiple of the smallest subnormal)
        atol = TOL[np.dtype(dtype)] * scale * np.sqrt(k) + k * float(info.smallest_subnormal)
        np.testing.assert_allclose(out[i], want[i], rtol=0, atol=atol)


def test_what_it_does_not_serve(kernels):
    a, b = _rand((8, 400), np.float32), _rand((400, 700), np.float32, 1)
    out = np.zeros((8, 700), np.float32)
    assert kernels.serves(a, b, out, 1.0, 0.0)
    assert kernels.serves(a, np.asfortranarray(b), out, 1.0, 0.0)                      # columns contiguous
    assert not kernels.serves(a[:, :300], b[:300], out, 1.0, 0.0)                      # under MIN_MACS
    refused = [
        (a.astype(np.int32), b.astype(np.int32), out.astype(np.int32), 1.0, 0.0),     # not a float
        (a.astype(np.float64), b, out, 1.0, 0.0),                                       # mixed dtypes
        (a, _rand((400, 1400), np.float32)[:, ::2], out, 1.0, 0.0),                      # no stride of b is 1
        (a[:, ::-1], b, out, 1.0, 0.0),                                                 # negative stride
        (a, b, np.empty((700, 8), np.float32).T, 1.0, 0.0),                             # out not C-contiguous
        (a, b, out, 2.0, 1.0),                                                          # alpha with accumulate
        (a[:, :0], b[:0], out, 1.0, 0.0),                                               # empty contraction
        (_rand((panel_gemm.MAX_ROWS + 1, 400), np.float32), b,
         np.empty((panel_gemm.MAX_ROWS + 1, 700), np.float32), 1.0, 0.0),               # too many rows
        (a[None], b[None], out[None], 1.0, 0.0),                                        # batched
    ]
    for args in refused:
        assert not kernels.serves(*args)
    square = _rand((1000, 1000), np.float32)
    assert kernels.serves(square[:8], square, square[8:16].copy(), 1.0, 0.0)
    assert not kernels.serves(square[:8], square, square[8:16], 1.0, 0.0)               # out overlaps b
    assert kernels.serves(square[:8, :992], square[8:], square[:8].copy(), 1.0, 0.0)
    assert not kernels.serves(square[:8, :992], square[8:], square[:8], 1.0, 0.0)       # out overlaps a


def test_provider_falls_back_to_numpy_for_what_it_does_not_serve():
    p = blas._instance("tracejit")
    assert p is not None and p.generated and blas.check_provider(p) is None
    a, b = _rand((300, 20), np.float64), _rand((20, 10), np.float64, 1)     # 10 columns: NumPy's
    out = np.empty((300, 10))
    p.gemm(a, b, out)
    _check(out, a @ b, 20)
    a3, b3 = _rand((3, 5, 6), np.float32), _rand((3, 6, 4), np.float32, 1)
    out3 = np.empty((3, 5, 4), np.float32)
    p.gemm(a3, b3, out3)
    _check(out3, a3.astype(np.float64) @ b3, 6)


def test_concurrent_calls_from_python_threads(kernels):
    results, barrier = {}, threading.Barrier(4)

    def worker(i):
        a, b = _rand((40 + i, 300), np.float32, i), _rand((300, 500 + 7 * i), np.float32, 10 + i)
        out = np.empty((a.shape[0], b.shape[1]), np.float32)
        barrier.wait()
        for _ in range(5):
            kernels.run(a, b, out, threads=2)
        results[i] = np.max(np.abs(out - a.astype(np.float64) @ b)) / np.max(np.abs(a.astype(np.float64) @ b))
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [0, 1, 2, 3] and max(results.values()) < 1e-5


def _product_in_child(queue):
    k = panel_gemm.PanelKernels()
    a, b = _rand((33, 70), np.float64), _rand((70, 150), np.float64, 1)
    out = np.empty((33, 150))
    k.run(a, b, out, threads=2)
    queue.put(float(np.max(np.abs(out - a @ b))))


def test_fork_after_threaded_products(kernels):
    a, b = _rand((33, 70), np.float64), _rand((70, 150), np.float64, 1)
    kernels.run(a, b, np.empty((33, 150)), threads=2)            # the team exists before the fork
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_product_in_child, args=(queue,))
    child.start()
    child.join(60)
    assert child.exitcode == 0 and queue.get(timeout=5) < 1e-12


def _products_before_unreadable_pages(queue):
    kernels, keep, worst = panel_gemm.PanelKernels(), [], 0.0
    for dtype in FLOATS:
        mr, nr, kc = _blocks(kernels, np.dtype(dtype))
        for m, n, k in [(mr + 1, 4 * nr + 3, kc + 5), (2 * mr + 3, 5 * nr - 1, 2 * kc - 3)]:
            for a_layout, b_layout in [("rows", "rows"), ("rows", "columns"), ("columns", "rows")]:
                a = (at_page_end(_rand((m, k), dtype, 1), keep) if a_layout == "rows"
                     else at_page_end(_rand((k, m), dtype, 1), keep).T)
                b = (at_page_end(_rand((k, n), dtype, 2), keep) if b_layout == "rows"
                     else at_page_end(_rand((n, k), dtype, 2), keep).T)
                for threads in (1, 2):
                    out = np.empty((m, n), dtype)
                    kernels.run(a, b, out, threads=threads)
                    want = a.astype(np.float64) @ b.astype(np.float64)
                    worst = max(worst, float(np.max(np.abs(out - want))) / float(np.max(np.abs(want))))
    queue.put(worst)


def test_no_read_past_the_operands():
    """``a`` and ``b`` (rows or columns contiguous) end where an unreadable page begins, with the
    masked column tail at the end of the last thread's range: a read past either kills the child."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_products_before_unreadable_pages, args=(queue,))
    child.start()
    child.join(120)
    assert child.exitcode == 0, f"the child died (exit code {child.exitcode}: -11 is a segmentation fault)"
    assert queue.get(timeout=5) < 1e-5


# --------------------------------------------------------------------------- how auto uses it, with fakes

class FakeGenerated(blas.NumpyBLAS):
    """NumPy's product as a generated provider that serves at most 256 rows (a rule of the fake's
    own); ``fast`` says on which classes the fake timer makes it fastest."""

    generated = True
    settle_s = 0.0

    def __init__(self, fast):
        self.name, self.pool, self.fast, self.served = "tracejit", "openmp", fast, 0

    def serves_shape(self, shape, dtype="float32"):
        return shape[0] == 1 and shape[1] <= 256

    def serves(self, a, b, out, alpha=1.0, beta=0.0):
        return out.ndim == 2 and out.shape[0] <= 256

    def run(self, a, b, out, alpha=1.0, beta=0.0):       # a product it serves (counted)
        assert self.serves(a, b, out, alpha, beta)
        self.served += 1
        super().gemm(a, b, out, alpha, beta)

    def gemm(self, a, b, out, alpha=1.0, beta=0.0):
        if self.serves(a, b, out, alpha, beta):
            self.run(a, b, out, alpha, beta)
        else:
            super().gemm(a, b, out, alpha, beta)


@pytest.fixture
def with_generated(monkeypatch, tmp_path):
    """The chooser with NumPy and a fake generated provider, fastest (by the fake timer) on panels."""
    numpy = blas.NumpyBLAS()
    numpy.settle_s = 0.0
    generated = FakeGenerated(fast={"panel"})
    timed = []

    def time_gemm(p, a, b, out, repeats):
        timed.append((p.name, out.shape))
        cls = "batched" if out.ndim == 3 else blas.shape_class(out.shape[0], out.shape[1], a.shape[1])
        return [(1e-4 if cls in getattr(p, "fast", ()) else 1e-2)] * repeats
    for _ in isolated_chooser(monkeypatch, tmp_path, {"numpy": numpy, "tracejit": generated}, time_gemm):
        yield numpy, generated, timed


def test_generated_code_is_timed_on_its_shapes_and_used_where_it_won(with_generated):
    numpy, generated, timed = with_generated
    auto = blas.provider()
    assert all(name == "numpy" or len(shape) == 2 and shape[0] <= 256 for name, shape in timed)
    assert any(name == "tracejit" for name, _ in timed)
    for dtype in ("float32", "float64"):
        # libraries are chosen among libraries; generated code is an addition where it won
        assert set(auto.table["choice"][dtype].values()) == {"numpy"}
        assert auto.table["own"][dtype] == {c: ("tracejit" if c == "panel" else None) for c in blas.CLASSES}
    assert auto.provider_for(np.float32, "panel") is numpy         # what native code calls: a library
    for (m, k, n), used in [((128, 300, 600), 1), ((1000, 300, 200), 0), ((16, 300, 600), 0)]:
        before = generated.served
        out = np.empty((m, n))
        blas.gemm(np.ones((m, k)), np.ones((k, n)), out)
        np.testing.assert_array_equal(out, k)
        # a panel with 128 rows: generated; 1000 rows (also "panel"): the library; skinny: it lost there
        assert generated.served - before == used, (m, k, n)
    # a batch of one is a matrix product: (B, T, D) @ (D, F) in a program reaches blas as one
    for batch, used in [(1, 1), (2, 0)]:
        before = generated.served
        out = np.empty((batch, 128, 600))
        blas.gemm(np.ones((batch, 128, 300)), np.ones((batch, 300, 600)), out)
        np.testing.assert_array_equal(out, 300)
        assert generated.served - before == used, batch
    before = generated.served
    x = np.random.default_rng(0).standard_normal((2, 64, 300))
    w = np.random.default_rng(1).standard_normal((300, 600))
    np.testing.assert_allclose(tracejit.jit(lambda x, w: x @ w)(x, w), x @ w, rtol=1e-12, atol=1e-12)
    assert generated.served == before + 1
    before = generated.served
    out = np.empty((128, 600), np.complex64)
    blas.gemm(np.ones((128, 300), np.complex64), np.ones((300, 600), np.complex64), out)
    assert generated.served == before                              # complex: never generated code
    rows = {(r["provider"], r["dtype"], r["class"]): r for r in blas.report()}
    assert rows["tracejit", "float32", "panel"]["chosen"] and rows["numpy", "float32", "panel"]["chosen"]
    assert not rows["tracejit", "float32", "skinny"]["chosen"]
    assert rows["tracejit", "float32", "square"]["gflops"] is None  # never timed on square products


def test_generated_code_that_only_ties_is_not_used(with_generated):
    _, generated, _ = with_generated
    generated.fast = set()
    auto = blas.provider()
    assert all(v is None for d in auto.table["own"].values() for v in d.values())


@pytest.mark.parametrize("lead, won", [(1.01, False), (1.05, True)])
def test_generated_code_needs_a_clear_lead(lead, won):
    """A narrow win (within ``OWN_MARGIN``, the size of one noisy reading) keeps the library."""
    assert 1.01 < blas.OWN_MARGIN < 1.05
    rates = {"tracejit": {"float32": {"128x768x3072": 200.0 * lead}},
             "mkl": {"float32": {"128x768x3072": 200.0, "1024x512x256": 1.0}}}
    assert blas._own_wins(rates, "tracejit", "mkl", "float32", "panel") is won


def test_own_gemm_switch_leaves_it_out(monkeypatch):
    monkeypatch.setenv("TRACEJIT_OWN_GEMM", "0")
    assert blas._load_generated() is None


@pytest.mark.parametrize("dtype", FLOATS)
def test_jit_products_through_the_generated_provider(dtype):
    """A program's products with the provider forced: those it serves generated, the rest (few
    columns: ``x.T @ x[:, :40]``) through its fallback."""
    saved = tracejit.config.blas
    tracejit.config.update("blas", "tracejit")
    try:
        x, w, bias = _rand((100, 300), dtype), _rand((300, 700), dtype, 1), _rand((700,), dtype, 2)
        w2, big = _rand((700, 50), dtype, 3), _rand((400, 300), dtype, 4)
        f = tracejit.jit(lambda x, w, bias, w2, big: (np.tanh(x @ w + bias) @ w2, big @ w, x.T @ x[:, :40]))
        got = f(x, w, bias, w2, big)
        wide = [v.astype(np.float64) for v in (x, w, bias, w2, big)]
        want = (np.tanh(wide[0] @ wide[1] + wide[2]) @ wide[3], wide[4] @ wide[1], wide[0].T @ wide[0][:, :40])
        for g, v in zip(got, want):
            _check(np.asarray(g), v, 700)
    finally:
        tracejit.config.update("blas", saved)


# A class fuzzer of programs whose products the generated code serves: how a program's operands
# reach it (a matrix, a 3-D x read as one matrix, transposed views of x and of w), with the
# elementwise work around the product that compiles into an epilogue, accumulation or a scale.
# PANEL_PROGRAM_FUZZ_SEEDS=N runs a longer campaign (1,000 seeds pass).
PANEL_PROGRAM_SEEDS = int(os.environ.get("PANEL_PROGRAM_FUZZ_SEEDS", "100"))


def _panel_program(seed: int):
    """``(f, args, want, description)``: a random jitted product of a size the generated code serves
    and what float64 NumPy gives for it."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype([np.float32, np.float64][seed % 2])
    kernels = blas.provider().kernels
    min_n = panel_gemm.MIN_COLUMN_BLOCKS * kernels.vectors * kernels.lanes(dtype)
    # (from 2 rows: one row is a matrix-vector product, which compiles into a fused reduction)
    m = int(rng.integers(2, 64) if rng.random() < 0.4 else rng.integers(64, panel_gemm.MAX_ROWS + 1))
    n = int(rng.integers(min_n, min_n + 300))
    # (more multiply-adds than a program's single native call makes itself: then blas serves them)
    fewest = max(panel_gemm.MIN_MACS[dtype], native_blas.ENTRY_GEMM_MACS) + 1
    k = max(int(rng.integers(1, 600)), -(-fewest // (m * n)))
    lhs = str(rng.choice(["matrix", "batch", "transposed"]))
    rhs = str(rng.choice(["rows", "columns"]))
    after = str(rng.choice(["none", "bias", "tanh_bias", "residual", "scale"]))
    batch = next((d for d in (4, 3, 2) if m % d == 0), 1)
    x = _rand((k, m) if lhs == "transposed" else (batch, m // batch, k) if lhs == "batch" else (m, k), dtype, seed)
    w = _rand((n, k) if rhs == "columns" else (k, n), dtype, seed + 1)
    bias, residual = _rand((n,), dtype, seed + 2), _rand((m, n), dtype, seed + 3)
    if lhs == "batch":
        residual = residual.reshape(batch, m // batch, n)

    def program(x, w, bias, residual, tanh, scalar):
        y = (x.T if lhs == "transposed" else x) @ (w.T if rhs == "columns" else w)
        return {"none": y, "bias": y + bias, "tanh_bias": tanh(y + bias), "residual": residual + y,
                "scale": y * scalar(2.5)}[after]
    wide = [v.astype(np.float64) for v in (x, w, bias, residual)]
    want = program(*wide, np.tanh, np.float64)
    f = tracejit.jit(lambda *a: program(*a, tracejit.numpy.tanh, dtype.type))
    return f, (x, w, bias, residual), want, f"seed {seed}: {dtype} m={m} n={n} k={k} {lhs} @ {rhs}, {after}"


def test_random_programs_through_generated_products(monkeypatch):
    """Every program's product is served by the generated code (counted) and matches float64 NumPy."""
    saved = tracejit.config.blas
    tracejit.config.update("blas", "tracejit")
    try:
        generated = blas.provider()
        assert generated.name == "tracejit"
        served = []
        run = generated.run
        monkeypatch.setattr(generated, "run", lambda *a, **kw: (served.append(a[2].shape), run(*a, **kw)))
        _check_random_programs(served)
    finally:
        tracejit.config.update("blas", saved)


def _check_random_programs(served: list):
    for seed in range(PANEL_PROGRAM_SEEDS):
        f, args, want, what = _panel_program(seed)
        before = len(served)
        got = np.asarray(f(*args))
        assert len(served) == before + 1, f"{what}: not served by the generated code"
        assert got.dtype == args[0].dtype and got.shape == want.shape, what
        scale = max(1.0, float(np.max(np.abs(want))))
        k = args[0].shape[0] if "transposed" in what else args[0].shape[-1]
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=0,
                                   atol=TOL[got.dtype] * scale * max(1.0, np.sqrt(k)), err_msg=what)
