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
