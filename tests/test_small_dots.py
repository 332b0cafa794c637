"""Small and matrix-vector products compiled as fused sums (compiler/passes/small_dots.py)."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
import helpers
from helpers import check_against_numpy, sample

SHAPES = [((7, 5), (5,)), ((5,), (5, 6)), ((5,), (5,)), ((3, 4), (4, 2)), ((2, 3, 4), (2, 4, 5)),
          ((1, 1), (1, 1)), ((0, 3), (3,)), ((4, 0), (0, 3)), ((300, 200), (200,)), ((3, 300), (300, 2))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.complex128, np.uint8],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("s1,s2", SHAPES, ids=repr)
def test_small_products_match_numpy(s1, s2, dtype):
    a, b = sample(s1, dtype, seed=1, low=-3, high=4), sample(s2, dtype, seed=2, low=-3, high=4)
    check_against_numpy(lambda xp, a, b: xp.matmul(a, b), a, b, reassoc=True)


def test_contraction_over_several_dims_and_batches():
    a, b = sample((2, 3, 4, 5), np.float64, seed=3), sample((2, 5, 4, 6), np.float64, seed=4)
    check_against_numpy(lambda xp, a, b: xp.einsum("bijk,bkjl->bil", a, b), a, b, reassoc=True)
    got = tracejit.jit(lambda a, b: lax.dot_general(a, b, (((2, 3), (2, 1)), ((0,), (0,)))))(a, b)
    np.testing.assert_allclose(got, np.einsum("bijk,bkjl->bil", a, b), rtol=1e-13)


def test_small_products_are_kernels_and_large_ones_stay_blas():
    small = tracejit.jit(lambda a, x: a @ x).lower(np.ones((64, 64)), np.ones(64)).as_text()
    assert "dot_general" not in small.split("# kernels")[1] and "reduce_sum" in small
    large = tracejit.jit(lambda a, b: a @ b).lower(np.ones((64, 64)), np.ones((64, 64))).as_text()
    assert "dot" in large.split("# kernels")[1]


def test_loop_with_a_matrix_vector_product_runs_natively():
    # A forward triangular solve: each step is a masked dot product with the solution so far.
    n = 64
    rng = np.random.default_rng(5)
    L = np.tril(rng.standard_normal((n, n))) + n * np.eye(n)
    b = rng.standard_normal(n)

    def solve(L, b):
        def body(i, x):
            return x.at[i].set((b[i] - jnp.dot(L[i], x)) / L[i, i])
        return lax.fori_loop(0, n, body, jnp.zeros_like(b))
    f = tracejit.jit(solve)
    np.testing.assert_allclose(f(L, b), np.linalg.solve(L, b), rtol=1e-12)
    steps = helpers.control_flow_steps(f.lower(L, b).compile())
    assert steps and steps[0].loop.native


# ---- rows in blocks: a row sum whose rows share a vector (codegen KernelEmitter._row_block)

ROW_COUNTS = [1, 3, 4, 5, 7, 9, 130]        # below, at, and around multiples of the block of 4
ROW_LENGTHS = [8, 15, 16, 17, 33, 128]      # whole vectors and masked tails, float32 and float64


def _uncached_ir(fn, *args):
    saved = tracejit.config.compilation_cache_dir
    tracejit.config.update("compilation_cache_dir", "off")
    try:
        return tracejit.jit(fn).lower(*args).compile().as_text(llvm_ir=True)
    finally:
        tracejit.config.update("compilation_cache_dir", saved)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("rows", ROW_COUNTS)
def test_row_blocked_matvec_matches_float64_reference(rows, dtype):
    for n in ROW_LENGTHS:
        a, x = sample((rows, n), dtype, seed=rows), sample((n,), dtype, seed=n)
        m = np.arange(n) < n // 2
        fns = [lambda a, x: a @ x,
               lambda a, x: (a * jnp.where(m, x, 0)).sum(-1),               # the shared vector is computed
               lambda a, x: a @ x + a[:, 0],                                # a later per-row phase
               lambda a, x: (a[::-1] * (x * 2)).sum(1)]                     # negative-stride rows
        refs = [a.astype(np.float64) @ x, (a.astype(np.float64) * np.where(m, x, 0)).sum(-1),
                a.astype(np.float64) @ x + a[:, 0], (a[::-1].astype(np.float64) * (x * 2.0)).sum(1)]
        tol = 1e-5 if dtype == np.float32 else 1e-13
        for fn, ref in zip(fns, refs):
            got = np.asarray(tracejit.jit(fn)(a, x))
            assert got.dtype == dtype and got.shape == (rows,)
            np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(a).sum(1).max() * 4)


def test_row_blocks_keep_nan_inf_and_signed_zero_rows_apart():
    a = sample((9, 24), np.float64, seed=3)
    a[1, 5], a[2, 0], a[6, 23] = np.nan, np.inf, -np.inf
    a[4] = -0.0
    x = sample((24,), np.float64, seed=4)
    got = tracejit.jit(lambda a, x: a @ x)(a, x)
    want = a @ x
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-13)
    assert got[4] == 0


def test_row_blocks_under_threads_split_at_any_row():
    # Thread chunks need not start at a multiple of the block: each chunk blocks its own rows.
    a, x = sample((1001, 200), np.float64, seed=5), sample((200,), np.float64, seed=6)
    f = tracejit.jit(lambda a, x: jnp.tanh(a @ x) + a @ (x * 0.5))
    np.testing.assert_allclose(f(a, x), np.tanh(a @ x) + a @ (x * 0.5), rtol=1e-12)


def test_matvec_uses_row_blocks_and_plain_row_sums_do_not():
    a, x = np.ones((64, 64)), np.ones(64)
    assert "bacc0" in _uncached_ir(lambda a, x: a @ x, a, x)
    # Nothing shared between rows: one row at a time.
    assert "bacc0" not in _uncached_ir(lambda a: (a * a).sum(1), a)


def test_masked_vector_of_a_matvec_is_computed_once_per_call():
    # Cholesky's step: L @ where(idx < j, L[j], 0). The masked row is stored once, not
    # recomputed for every row of the product.
    idx = np.arange(32)
    text = tracejit.jit(lambda l, j: l @ jnp.where(idx < j, l[j], 0.0)).lower(np.ones((32, 32)), 3).as_text()
    kernels = text.split("# kernels")[1]
    reduce_line = [ln for ln in kernels.splitlines() if "reduce_sum ->" in ln][0]
    assert "select_n" not in reduce_line, kernels
