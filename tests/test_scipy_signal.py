"""tracejit.scipy.signal.convolve/correlate against a direct N-D sum (SciPy's definitions)."""
import itertools

import numpy as np
import pytest

import tracejit as jax
from tracejit.scipy import signal

RNG = np.random.default_rng(11)


def _full_conv(a, b):
    out = np.zeros(tuple(x + y - 1 for x, y in zip(a.shape, b.shape)), np.result_type(a, b))
    for idx in itertools.product(*map(range, b.shape)):
        sl = tuple(slice(i, i + n) for i, n in zip(idx, a.shape))
        out[sl] += a * b[idx]
    return out


def _ref_conv(a, b, mode):
    if mode == "valid" and not all(x >= y for x, y in zip(a.shape, b.shape)):
        a, b = b, a
    full = _full_conv(a, b)
    if mode == "full":
        return full
    if mode == "same":
        st = [(f - n) // 2 for f, n in zip(full.shape, a.shape)]
        return full[tuple(slice(s, s + n) for s, n in zip(st, a.shape))]
    return full[tuple(slice(m - 1, n) for n, m in zip(a.shape, b.shape))]


def _ref_corr(a, b, mode):
    swapped = mode == "valid" and not all(x >= y for x, y in zip(a.shape, b.shape))
    if swapped:
        a, b = b, a
    out = _ref_conv(a, np.conj(b[(slice(None, None, -1),) * b.ndim]), mode)
    return np.conj(out[(slice(None, None, -1),) * out.ndim]) if swapped else out


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("shapes", [((7,), (3,)), ((3,), (6,)), ((5, 6), (2, 3)), ((2, 3), (4, 5)),
                                    ((4, 3, 5), (2, 2, 3))])
def test_convolve_correlate(mode, shapes):
    a, b = RNG.normal(size=shapes[0]), RNG.normal(size=shapes[1])
    np.testing.assert_allclose(signal.convolve(a, b, mode), _ref_conv(a, b, mode), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(signal.correlate(a, b, mode), _ref_corr(a, b, mode), rtol=1e-12, atol=1e-12)


def test_1d_matches_numpy_and_jit_grad_vmap():
    a, b = RNG.normal(size=9), RNG.normal(size=4)
    for mode in ("full", "same", "valid"):
        np.testing.assert_allclose(signal.convolve(a, b, mode), np.convolve(a, b, mode), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(jax.jit(lambda a, b: signal.correlate(a, b, "same"))(a, b),
                               _ref_corr(a, b, "same"), rtol=1e-12, atol=1e-13)
    g = jax.grad(lambda b: signal.convolve(a, b).sum())(b)
    np.testing.assert_allclose(g, np.full(4, a.sum()), rtol=1e-12)
    batch = RNG.normal(size=(3, 9))
    np.testing.assert_allclose(jax.vmap(lambda x: signal.convolve(x, b, "valid"))(batch),
                               np.stack([np.convolve(x, b, "valid") for x in batch]), rtol=1e-12, atol=1e-13)


def test_2d_forms_dtypes_and_errors():
    a, b = RNG.normal(size=(5, 5)), RNG.normal(size=(3, 2))
    np.testing.assert_allclose(signal.convolve2d(a, b, "same"), _ref_conv(a, b, "same"), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(signal.correlate2d(a, b, "valid"), _ref_corr(a, b, "valid"), rtol=1e-12, atol=1e-12)
    ai, bi = np.arange(6).reshape(2, 3), np.array([[1, 2], [3, 4]])
    out = signal.convolve(ai, bi)
    np.testing.assert_array_equal(out, _full_conv(ai, bi))
    assert signal.convolve(a.astype(np.float32), b.astype(np.float32)).dtype == np.float32
    with pytest.raises(ValueError):
        signal.convolve(np.ones((3, 2)), np.ones((2, 3)), "valid")
    with pytest.raises(ValueError):
        signal.convolve(np.ones(3), np.ones((2, 2)))
    with pytest.raises(NotImplementedError):
        signal.convolve2d(a, b, boundary="wrap")
