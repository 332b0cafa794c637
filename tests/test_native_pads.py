"""Pads with interior padding or negative edges compile to native operations (compiler pass
``native_pads``) with lax.pad's values: checked against the reference implementation."""
import numpy as np
import pytest

import tracejit
from tracejit import lax

CASES = [((5,), [(1, 2, 1)]), ((5,), [(-2, 1, 2)]), ((3,), [(-5, 4, 0)]), ((3,), [(4, -5, 0)]),
         ((4, 3), [(0, 0, 1), (1, -1, 2)]), ((1, 4), [(2, 1, 3), (0, 0, 0)]), ((0, 3), [(1, 1, 2), (0, 0, 1)]),
         ((6,), [(-3, -2, 0)]), ((2, 3, 4), [(1, 0, 1), (-1, 2, 0), (0, -3, 2)]), ((3,), [(-7, 4, 1)])]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_, np.complex64])
@pytest.mark.parametrize("shape,config", CASES)
def test_pad_matches_reference_and_runs_natively(shape, config, dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 5).astype(dtype)
    value = np.bool_(True) if dtype is np.bool_ else dtype(-3)
    f = tracejit.jit(lambda a, v: lax.pad(a, v, config))
    want = lax.pad(x, value, config)             # eager: the reference implementation
    got = f(x, value)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert "numpy pad" not in f.lower(x, value).compile().as_text()


def test_max_pool_gradient_has_no_host_steps():
    # a strided window's taps are strided slices; their transposes were interior pads on the host
    x = np.random.default_rng(1).standard_normal((2, 8, 8, 3))

    def loss(a):
        return tracejit.numpy.sum(lax.reduce_window(a, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") ** 2)
    text = tracejit.jit(tracejit.grad(loss)).lower(x).compile().as_text()
    assert "numpy" not in text
    np.testing.assert_allclose(tracejit.jit(tracejit.grad(loss))(x), tracejit.grad(loss)(x), rtol=1e-15)


def test_random_pads_match_reference():
    # the class of the rewrite: random ranks, sizes (0 and 1 included), interior and negative edges
    rng = np.random.default_rng(7)
    for _ in range(80):
        shape = tuple(int(s) for s in rng.integers(0, 5, rng.integers(1, 4)))
        config = []
        for s in shape:
            interior = int(rng.integers(0, 3))
            full = s + max(s - 1, 0) * interior
            lo = int(rng.integers(-full - 2, 3))
            hi = int(rng.integers(max(-full - lo, -3), 3))
            config.append((lo, hi, interior))
        x = rng.standard_normal(shape)
        want = lax.pad(x, -1.5, config)
        got = tracejit.jit(lambda a: lax.pad(a, -1.5, config))(x)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=f"{shape} {config}")
