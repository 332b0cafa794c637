"""GEMM providers of dot_general steps (tracejit/backends/cpu/blas.py) against NumPy.

Every provider runs on every machine that has it: NumPy's always; NumPy's
bundled OpenBLAS through ctypes where the wheel bundles one; MKL where the
``mkl`` package is installed (the test extra installs it on x86-64 Linux).
How ``auto`` chooses among them is tested in test_blas_choice.py.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracejit
from tracejit.backends.cpu import blas

PROVIDERS = [name for name in blas.PROVIDERS if blas._instance(name) is not None]
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12, np.dtype(np.complex64): 2e-5,
       np.dtype(np.complex128): 1e-12}


def _rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dtype)


def _close(got, want):
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL[np.dtype(got.dtype)] * scale * 10)


@pytest.fixture(params=PROVIDERS)
def provider(request):
    saved = tracejit.config.blas
    tracejit.config.update("blas", request.param)
    yield blas.provider()
    tracejit.config.update("blas", saved)


def test_auto_routes_every_product_to_a_loaded_provider():
    import glob
    import os
    import sys
    if glob.glob(os.path.join(sys.prefix, "lib", "libmkl_rt.so*")):
        assert "mkl" in PROVIDERS
    auto = blas.provider("auto")
    assert auto.name == "auto"
    for dtype in DTYPES:
        for cls in blas.CLASSES:
            assert auto.provider_for(dtype, cls).name in PROVIDERS


@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm_views_pass_as_flags(provider, dtype):
    a, b = _rand((37, 53), dtype), _rand((53, 29), dtype, 1)
    cases = [(a, b), (np.ascontiguousarray(a.T).T, b), (a, np.ascontiguousarray(b.T).T),
             (a[::1, :], b[:, :]), (_rand((60, 53), dtype)[5:42], b), (a, _rand((53, 40), dtype)[:, 3:32]),
             (a[:, ::-1], b[::-1]), (a[::2], b), (np.broadcast_to(a[:1], (37, 53)), b)]
    for x, y in cases:
        out = np.empty((x.shape[0], y.shape[1]), dtype)
        provider.gemm(x, y, out)
        _close(out, x.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
               @ y.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64))


@pytest.mark.parametrize("shape", [(0, 5, 3), (4, 0, 3), (4, 5, 0), (1, 1, 1), (1, 7, 1), (7, 1, 9)])
def test_gemm_degenerate_shapes(provider, shape):
    m, k, n = shape
    a, b = _rand((m, k), np.float64), _rand((k, n), np.float64, 1)
    out = np.full((m, n), np.nan)
    provider.gemm(a, b, out)
    np.testing.assert_allclose(out, a @ b, atol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_batched_gemm(provider, dtype):
    a, b = _rand((3, 9, 11), dtype), _rand((3, 11, 6), dtype, 1)
    for x, y in [(a, b), (np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1), b),
                 (a, np.ascontiguousarray(b.transpose(0, 2, 1)).transpose(0, 2, 1)), (a[:, ::2], b)]:
        out = np.empty((3, x.shape[1], 6), dtype)
        provider.gemm(x, y, out)
        _close(out, np.matmul(x, y))


def test_special_values_propagate(provider):
    a = np.array([[np.nan, 1.0], [np.inf, 0.0], [1e300, 1e300]])
    b = np.array([[1.0, 0.0], [2.0, 1e10]])
    out = np.empty((3, 2))
    provider.gemm(a, b, out)
    with np.errstate(all="ignore"):
        want = a @ b
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(out), np.isinf(want))


def test_jitted_contractions_with_each_provider(provider):
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((16, 32)).astype(np.float32), rng.standard_normal((32, 24)).astype(np.float32)
    q, k = rng.standard_normal((2, 4, 8, 16)), rng.standard_normal((2, 4, 8, 16))
    f = tracejit.jit(lambda x, w: np.maximum(x @ w, 0) @ w.T)
    _close(f(x, w), np.maximum(x @ w, 0) @ w.T)
    g = tracejit.jit(lambda q, k: q @ np.swapaxes(k, -1, -2))
    _close(g(q, k), q @ np.swapaxes(k, -1, -2))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(m=st.integers(1, 40), k=st.integers(1, 40), n=st.integers(1, 40), ta=st.booleans(), tb=st.booleans(),
       dtype=st.sampled_from(DTYPES), name=st.sampled_from(PROVIDERS))
def test_gemm_property(m, k, n, ta, tb, dtype, name):
    a = _rand((k, m), dtype).T if ta else _rand((m, k), dtype)
    b = _rand((n, k), dtype, 1).T if tb else _rand((k, n), dtype, 1)
    out = np.empty((m, n), dtype)
    blas.provider(name).gemm(a, b, out)
    _close(out, a.astype(np.complex128) @ b.astype(np.complex128) if np.dtype(dtype).kind == "c"
           else a.astype(np.float64) @ b.astype(np.float64))


def test_unknown_provider_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown BLAS provider 'fastest'"):
        blas.provider("fastest")


AXPY_CASES = [
    ("sgd", lambda w, x, g: w - 0.01 * (x.T @ g), True),
    ("plus", lambda w, x, g: w + x.T @ g, True),
    ("plus-left", lambda w, x, g: (x.T @ g) * 3.0 + w, True),
    ("minus", lambda w, x, g: w - x.T @ g, True),
    ("reversed-minus", lambda w, x, g: x.T @ g - w, False),
    ("broadcast-c", lambda w, x, g: w[0] + x.T @ g, False),
    ("product-reused", lambda w, x, g: (w - x.T @ g, (x.T @ g).sum()), False),
]


@pytest.mark.parametrize("name,fn,folds", AXPY_CASES, ids=[c[0] for c in AXPY_CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_axpy_epilogues_fold_into_the_product(provider, name, fn, folds, dtype):
    from tracejit.compiler.plan import DotStep
    rng = np.random.default_rng(7)
    w, x, g = (rng.standard_normal(s).astype(dtype) for s in [(24, 16), (40, 24), (40, 16)])
    c = tracejit.jit(fn).lower(w, x, g).compile()
    dots = [s for s in c.executable.plan.steps if isinstance(s, DotStep)]
    assert any(d.accumulate is not None for d in dots) == folds
    if folds:
        assert not c.kernels                    # no kernel reads the product back
    w_before = w.copy()
    want = tracejit.jit(fn, backend="reference")(w, x, g)
    got = c(w, x, g)
    np.testing.assert_array_equal(w, w_before)          # the accumulation works on a copy
    for a, b in zip(tracejit.tree_leaves(got), tracejit.tree_leaves(want)):
        _close(np.asarray(a), np.asarray(b))


def test_sgd_step_parameters_update_in_one_call_each():
    from tracejit.compiler.plan import DotStep
    rng = np.random.default_rng(3)
    w1, w2 = rng.standard_normal((32, 64)).astype(np.float32), rng.standard_normal((64, 8)).astype(np.float32)
    x = rng.standard_normal((16, 32)).astype(np.float32)

    def loss(p, x):
        return (np.maximum(x @ p[0], 0) @ p[1]).sum()

    def step(p, x):
        return [w - 0.1 * gw for w, gw in zip(p, tracejit.grad(loss)(p, x))]
    c = tracejit.jit(step).lower([w1, w2], x).compile()
    assert sum(d.accumulate is not None for d in c.executable.plan.steps if isinstance(d, DotStep)) == 2
    for a, b in zip(c([w1, w2], x), tracejit.jit(step, backend="reference")([w1, w2], x)):
        _close(a, b)


# Heads split off a model axis: (B, T, H, D) arrays read as (B, H, T, D). Their batch axes (B, H) do not
# merge into one without a copy, so the product runs once per index of B on (H, ...) views.
# (Real ones of this size are generated kernels over the heads, tests/test_small_gemm.py; these tests
# turn those off, TRACEJIT_OWN_GEMM=0, to reach the library's path.)
HEAD_PRODUCTS = [      # (each large enough to be a BLAS call of the host, not the native entry's)
    ("bthd,bshd->bhts", [(2, 128, 3, 32), (2, 112, 3, 32)]),       # attention scores: both operands strided
    ("bhts,bshd->bthd", [(2, 3, 128, 112), (2, 112, 3, 32)]),      # scores @ values
    ("bthd,bshd->bhts", [(6, 128, 1, 32), (6, 112, 1, 32)]),       # one head: the batch axes merge
    ("abcij,acbjk->abcik", [(2, 3, 2, 64, 48), (2, 2, 3, 48, 64)]),   # three batch axes
]


@pytest.mark.parametrize("spec,shapes", HEAD_PRODUCTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_products_over_split_heads_read_views_in_place(provider, spec, shapes, dtype, monkeypatch):
    monkeypatch.setenv("TRACEJIT_OWN_GEMM", "0")
    ops = [_rand(s, dtype, i) for i, s in enumerate(shapes)]
    f = tracejit.jit(lambda x, y: np.einsum(spec, x, y))
    seen = []
    real_gemm = blas.gemm

    def recording_gemm(a, b, out, alpha=1.0, beta=0.0):
        seen.append(any(np.shares_memory(a, o) for o in ops) + any(np.shares_memory(b, o) for o in ops))
        real_gemm(a, b, out, alpha, beta)

    monkeypatch.setattr(blas, "gemm", recording_gemm)
    got = f(*ops)
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    _close(got, np.einsum(spec, *(o.astype(wide) for o in ops)))
    assert seen and all(n == 2 for n in seen), seen    # each product read both inputs where they lie


def test_products_over_split_heads_negative_strides(provider):
    q, k = _rand((2, 256, 3, 32), np.float64), _rand((2, 224, 3, 32), np.float64, 1)
    f = tracejit.jit(lambda x, y: np.einsum("bthd,bshd->bhts", x, y))
    for x, y in [(q[:, ::-1], k), (q, k[:, ::2]), (q[::-1, :, ::-1], k[..., ::-1])]:
        _close(f(x, y), np.einsum("bthd,bshd->bhts", x, y))


@pytest.mark.parametrize("second", [(0, 1, 3, 2), (0, 2, 1, 3)])
def test_chained_transposes_of_an_operand_stay_a_view(second):
    # attention's keys: heads split off, then swapped for q @ k^T -- two transposes, one view of k
    rng = np.random.default_rng(5)
    q, k = rng.standard_normal((2, 64, 4, 32)), rng.standard_normal((2, 64, 4, 32))
    first = (0, 2, 1, 3)

    def scores(q, k):
        kk = k.transpose(first).transpose(second)
        return np.einsum("bhtd,bhds->bhts" if second == (0, 1, 3, 2) else "bhtd,bshd->bhts", q.transpose(first), kk)

    f = tracejit.jit(scores)
    text = f.lower(q, k).compile().as_text()
    assert "kernel" not in text, text       # no copy of either operand
    _close(f(q, k), scores(q, k))
