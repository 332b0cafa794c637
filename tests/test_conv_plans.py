"""Plans of convolution programs: a reshape returned as an output is a native copy (so a loop or
cond body holding one stays native), and a computed value that many window taps read is stored
once instead of recomputed per tap. Values are checked against NumPy."""
import ml_dtypes
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax


def _text(fn, *args):
    return tracejit.jit(fn).lower(*args).compile().as_text()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_, np.complex64,
                                   ml_dtypes.bfloat16])
@pytest.mark.parametrize("shape", [(3, 4, 5), (0, 4, 2), (1, 1, 1)])
def test_reshape_returned_as_output_is_a_native_copy(dtype, shape):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3).astype(dtype)

    def f(a):
        b = a + a if dtype is not np.bool_ else a ^ True
        return b.reshape(shape[0], shape[1] * shape[2]), b        # the same memory returned twice, as two shapes

    text = _text(f, x)
    assert "numpy reshape" not in text, text
    want = (x + x) if dtype is not np.bool_ else ~x
    for got in (tracejit.jit(f)(x), tracejit.jit(f)(x[::-1][::-1])):
        np.testing.assert_array_equal(np.asarray(got[0]), want.reshape(shape[0], shape[1] * shape[2]))
        np.testing.assert_array_equal(np.asarray(got[1]), want)
        assert not np.shares_memory(np.asarray(got[0]), np.asarray(got[1]))


def test_cond_returning_a_weight_gradient_shape_stays_native():
    # A kernel gradient is a (taps, I, O) product returned as (kh, kw, I, O): the cond holding it
    # was a host loop (its body needed a NumPy step for the reshape).
    rng = np.random.default_rng(1)
    p, g = rng.standard_normal((40, 9 * 3)), rng.standard_normal((40, 5))

    def f(p, g, flag):
        def branch(scale):
            return lambda p, g: (scale * (p.T @ g)).reshape(3, 3, 3, 5)
        return lax.cond(flag > 0, branch(1.0), branch(-2.0), p, g)

    lines = [line for line in _text(f, p, g, 1).splitlines() if " loop " in line]
    assert lines and all(line.startswith("native loop") for line in lines), lines
    for flag, scale in ((1, 1.0), (0, -2.0)):
        np.testing.assert_allclose(np.asarray(tracejit.jit(f)(p, g, flag)), (scale * (p.T @ g)).reshape(3, 3, 3, 5),
                                   rtol=1e-12)


def _kernel_shapes(text):
    return [line.split(" over ")[1].split(" (")[0] for line in text.splitlines() if line.startswith("kernel ")]


def test_value_read_by_many_window_taps_is_stored_once():
    # relu(x * 2 + 1) pooled 2x2 then read by the 25 taps of a 5x5 window: the pooled map is a
    # kernel of its own, not recomputed inside the taps' kernel.
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 12, 12, 3)).astype(np.float32)

    def f(x):
        h = jnp.maximum(x * 2 + 1, 0.0)
        h = lax.reduce_window(h, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return lax.reduce_window(h, 0.0, lax.add, (1, 5, 5, 1), (1, 1, 1, 1), "VALID")

    assert "[2, 6, 6, 3]" in _kernel_shapes(_text(f, x))
    h = np.maximum(x.astype(np.float64) * 2 + 1, 0).reshape(2, 6, 2, 6, 2, 3).max(axis=(2, 4))
    want = sum(h[:, i:i + 2, j:j + 2] for i in range(5) for j in range(5))
    np.testing.assert_allclose(np.asarray(tracejit.jit(f)(x)), want, rtol=1e-5)


def test_cheap_value_read_by_window_taps_stays_fused():
    # One operation is cheaper to recompute per tap than to store and load.
    x = np.random.default_rng(3).standard_normal((2, 12, 12, 3))

    def f(x):
        return lax.reduce_window(x * 2, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "VALID")

    assert "[2, 12, 12, 3]" not in _kernel_shapes(_text(f, x))
    want = sum(2 * x[:, i:i + 10, j:j + 10] for i in range(3) for j in range(3))
    np.testing.assert_allclose(np.asarray(tracejit.jit(f)(x)), want, rtol=1e-12)
