"""bfloat16: a storage dtype that computes in float32 and rounds every result once.

The reference for one operation is NumPy's float32 result of the widened operands, rounded to
bfloat16 by ml_dtypes (what XLA's CPU backend and ml_dtypes' own loops give). Results are compared
in bfloat16 units in the last place: 0 for correctly rounded float32 operations, 1 where tracejit's
float32 transcendental may differ from NumPy's by one float32 ulp across a rounding boundary.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.core import dtypes

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 7.25, 100.0, 1e-30, -1e-38, 9.2e-41, -9.2e-41,
                    3.3e38, -3.3e38, np.inf, -np.inf, np.nan, 1.0078125, 255.0, -0.0039], np.float32).astype(BF16)


def _rng_bf16(shape, seed=0, scale=2.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(BF16)


def _widen(a):
    return a.astype(np.float32) if getattr(a, "dtype", None) == BF16 else a


def reference(np_fn, *args):
    """NumPy's float32 result on the widened operands, rounded once to bfloat16."""
    with np.errstate(all="ignore"):
        out = np.asarray(np_fn(*(_widen(a) for a in args)))
    return out.astype(BF16) if out.dtype == np.float32 else out


def ulps(a, b):
    """Distance of two bfloat16 arrays in units in the last place (0 where both are NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == BF16 and b.dtype == BF16, (a.dtype, b.dtype)

    def key(x):
        bits = x.view(np.uint16).astype(np.int32)
        mag = bits & 0x7FFF
        return np.where(bits & 0x8000, -mag, mag)
    both_nan = np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    one_nan = np.isnan(a.astype(np.float32)) ^ np.isnan(b.astype(np.float32))
    d = np.abs(key(a) - key(b))
    return np.where(both_nan, 0, np.where(one_nan, 1 << 20, d))


def assert_ulps(got, want, limit):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype != BF16:
        np.testing.assert_array_equal(got, want)
        return
    d = ulps(got, want)
    assert d.size == 0 or d.max() <= limit, (d.max(), got[d > limit][:5], want[d > limit][:5])
    if limit == 0:   # signs of zeros too
        np.testing.assert_array_equal(np.signbit(got.astype(np.float32)), np.signbit(want.astype(np.float32)))


def run_both(fn, *args):
    """``fn`` eagerly and under ``jit``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args), tracejit.jit(fn)(*args)


# ----------------------------------------------------------------------------- dtype basics

def test_dtype_is_exported_floating_and_has_finfo():
    assert np.dtype(jnp.bfloat16) == BF16 and np.dtype(tracejit.dtypes.bfloat16) == BF16
    assert jnp.issubdtype(jnp.bfloat16, jnp.floating) and jnp.issubdtype(BF16, jnp.inexact)
    assert not jnp.issubdtype(jnp.bfloat16, jnp.integer) and not jnp.issubdtype(jnp.float32, jnp.bfloat16)
    assert tracejit.dtypes.issubdtype(jnp.bfloat16, np.floating)
    assert jnp.finfo(jnp.bfloat16).eps == 2.0 ** -7 and jnp.finfo(jnp.bfloat16).bits == 16
    assert tracejit.dtypes.scalar_type_of(jnp.ones(2, jnp.bfloat16)) is float
    assert dtypes.is_float(BF16) and dtypes.to_inexact(BF16) == BF16


@pytest.mark.parametrize("make", [
    lambda: jnp.zeros(3, jnp.bfloat16), lambda: jnp.ones((2, 2), dtype="bfloat16"),
    lambda: jnp.array([1, 2.5], dtype=jnp.bfloat16), lambda: jnp.arange(4, dtype=jnp.bfloat16),
    lambda: jnp.full((2,), 1.5, jnp.bfloat16), lambda: jnp.asarray(np.ones(2, BF16)),
    lambda: jnp.linspace(0, 1, 5).astype(jnp.bfloat16), lambda: jnp.eye(2, dtype=jnp.bfloat16)])
def test_creation_gives_bfloat16(make):
    eager = make()
    assert eager.dtype == BF16
    assert tracejit.jit(make)().dtype == BF16
    np.testing.assert_array_equal(np.asarray(tracejit.jit(make)()).astype(np.float32), np.asarray(eager).astype(np.float32))


@pytest.mark.parametrize("other", [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64, np.float16,
                                   np.float32, np.float64, np.complex64, np.complex128])
def test_promotion_follows_numpy_with_ml_dtypes(other):
    x = jnp.ones(2, jnp.bfloat16)
    y = np.ones(2, other)
    want = np.result_type(BF16, np.dtype(other))
    assert (x + y).dtype == want
    assert tracejit.jit(lambda a, b: a + b)(x, y).dtype == want
    assert tracejit.dtypes.result_type(BF16, other) == want


def test_python_scalars_are_weak():
    x = jnp.ones(2, jnp.bfloat16)
    assert (x * 2).dtype == BF16 and (x + 2.5).dtype == BF16 and (x * 1j).dtype == np.complex64
    assert tracejit.jit(lambda a: a / 3)(x).dtype == BF16
    assert_ulps(tracejit.jit(lambda a: a / 3)(x), reference(lambda a: a / np.float32(3), np.asarray(x)), 0)


# ----------------------------------------------------------------------------- conversions

def test_float32_to_bfloat16_rounds_like_ml_dtypes_bit_for_bit():
    # Every bfloat16 pattern with the low halves that decide the rounding: ties, NaN payloads,
    # denormals, overflow to inf.
    high = np.arange(65536, dtype=np.uint32) << 16
    low = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x1234, 0xC000], np.uint32)
    f = (high[:, None] | low[None, :]).ravel().view(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = f.astype(BF16).view(np.uint16)
    convert = tracejit.jit(lambda a: a.astype(jnp.bfloat16))
    np.testing.assert_array_equal(np.asarray(convert(f)).view(np.uint16), want)
    np.testing.assert_array_equal(np.asarray(lax.convert_element_type(f, jnp.bfloat16)).view(np.uint16), want)
    # Strided and reversed operands.
    np.testing.assert_array_equal(np.asarray(convert(f[::-3])).view(np.uint16), want[::-3])


@pytest.mark.parametrize("dst", [np.float32, np.float64, np.float16, np.bool_, np.int8, np.uint8, np.int16,
                                 np.int32, np.int64, np.uint32, np.uint64, np.complex64])
def test_bfloat16_to_other_dtypes(dst):
    every = np.arange(65536, dtype=np.uint16).view(BF16)
    wide = every.astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = lax.convert_element_type(wide, dst)      # exact widening, then float32's conversion
        eager, jitted = run_both(lambda a: lax.convert_element_type(a, dst), every)
    np.testing.assert_array_equal(np.asarray(jitted), want)
    np.testing.assert_array_equal(np.asarray(eager), want)


@pytest.mark.parametrize("src", [np.float64, np.int64, np.int32, np.uint8, np.bool_, np.float16])
def test_other_dtypes_to_bfloat16_round_once_like_ml_dtypes(src):
    # 1 + 2**-8 + 2**-30 rounds up directly; through float32 it would tie and round to 1.
    vals = np.array([1 + 2.0 ** -8 + 2.0 ** -30, 2.0 ** 24 + 2.0 ** 16 + 1, -0.0, 3.4e38, 1e39, -1e-45,
                     1e-40, np.nan, -np.inf, 65504.0, 255, 1, 0, 7])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        x = vals.astype(src)
        want = x.astype(BF16)
        eager, jitted = run_both(lambda a: a.astype(jnp.bfloat16), x)
    assert_ulps(jitted, want, 0)
    assert_ulps(eager, want, 0)


# ----------------------------------------------------------------------------- elementwise

# (fmax/fmin of +0 and -0 may give either zero, as IEEE allows: they are compared as values.)
EXACT_BINARY = [np.add, np.subtract, np.multiply, np.divide, np.maximum, np.minimum, np.fmax, np.fmin,
                np.copysign, np.greater, np.less_equal, np.equal, np.not_equal]


@pytest.mark.parametrize("fn", EXACT_BINARY, ids=lambda f: f.__name__)
def test_basic_arithmetic_is_rounded_once_with_special_values(fn):
    x = np.repeat(SPECIAL, len(SPECIAL))
    y = np.tile(SPECIAL, len(SPECIAL))
    jfn = getattr(jnp, fn.__name__)
    eager, jitted = run_both(jfn, x, y)
    want = reference(fn, x, y)
    if fn in (np.fmax, np.fmin):
        want, jitted, eager = (np.asarray(v).astype(np.float32) for v in (want, jitted, eager))
        np.testing.assert_array_equal(jitted, want)
        np.testing.assert_array_equal(eager, want)
        return
    assert_ulps(jitted, want, 0)
    assert_ulps(eager, want, 0)


EXACT_UNARY = [np.negative, np.abs, np.sqrt, np.square, np.floor, np.ceil, np.trunc, np.rint, np.sign,
               np.reciprocal, np.isnan, np.isinf, np.isfinite, np.signbit]


@pytest.mark.parametrize("fn", EXACT_UNARY, ids=lambda f: f.__name__)
def test_exact_unary_with_special_values(fn):
    eager, jitted = run_both(getattr(jnp, fn.__name__), SPECIAL)
    want = reference(fn, SPECIAL)
    assert_ulps(jitted, want, 0)
    assert_ulps(eager, want, 0)


TRANSCENDENTAL = [np.exp, np.expm1, np.log, np.log1p, np.sin, np.cos, np.tan, np.tanh, np.arctan, np.sinh,
                  np.arcsinh, np.exp2, np.log2, np.cbrt]


@pytest.mark.parametrize("fn", TRANSCENDENTAL, ids=lambda f: f.__name__)
def test_transcendentals_within_one_ulp(fn):
    x = np.concatenate([_rng_bf16(300, seed=1, scale=3.0), SPECIAL])
    if fn in (np.log, np.log2):
        x = np.abs(x.astype(np.float32)).astype(BF16)
    eager, jitted = run_both(getattr(jnp, fn.__name__), x)
    want = reference(fn, x)
    assert_ulps(jitted, want, 1)
    assert_ulps(eager, want, 1)


def test_degrees_and_radians_stay_bfloat16():
    x = _rng_bf16(50, seed=2)
    for name in ("degrees", "radians", "rad2deg", "deg2rad"):
        eager, jitted = run_both(getattr(jnp, name), x)
        assert eager.dtype == BF16 and jitted.dtype == BF16
        assert_ulps(jitted, eager, 0)
        assert_ulps(jitted, reference(getattr(np, name), x), 1)


def test_nn_and_special_functions_keep_bfloat16():
    x = _rng_bf16(64, seed=3)
    for fn, ref in [(tracejit.nn.relu, lambda a: np.maximum(a, 0)),
                    (tracejit.nn.sigmoid, lambda a: 1 / (1 + np.exp(-a))),
                    (tracejit.nn.softmax, lambda a: np.exp(a - a.max()) / np.exp(a - a.max()).sum()),
                    (tracejit.scipy.special.logsumexp, lambda a: np.log(np.exp(a - a.max()).sum()) + a.max()),
                    (jnp.i0, np.i0)]:
        eager, jitted = run_both(fn, x)
        assert eager.dtype == BF16 and jitted.dtype == BF16, fn
        # Composites round after each operation: a few ulps from the once-rounded float32 value.
        want = np.asarray(ref(x.astype(np.float32)), np.float32)
        np.testing.assert_allclose(np.asarray(jitted).astype(np.float32), want, rtol=3e-2, atol=1e-2)
        np.testing.assert_allclose(np.asarray(eager).astype(np.float32), want, rtol=3e-2, atol=1e-2)


def test_kernels_are_native_and_fused():
    f = tracejit.jit(lambda a, b: jnp.tanh(a * b + 1).astype(jnp.bfloat16) * 2)
    a, b = _rng_bf16((64, 8)), _rng_bf16((64, 8), seed=1)
    text = f.lower(a, b).as_text().split("# kernels and steps")[1]
    assert "numpy" not in text and text.count("kernel ") == 1, text
    want = reference(np.multiply, reference(np.tanh, reference(lambda p: p + 1, reference(np.multiply, a, b))), 2)
    assert_ulps(f(a, b), want, 1)


# ----------------------------------------------------------------------------- reductions and products

@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "var", "argmax", "argmin"])
def test_reductions_accumulate_in_float32(name, axis):
    if name.startswith("arg") and isinstance(axis, tuple):
        return
    x = _rng_bf16((7, 9), seed=4, scale=1.0)
    if name == "prod":
        x = (1 + 0.05 * x.astype(np.float32)).astype(BF16)
    for operand in (x, x[::-2, ::3], x[:, :1], x.T):
        kw = {} if axis is None else {"axis": axis}
        eager, jitted = run_both(lambda a: getattr(jnp, name)(a, **kw), operand)
        want = reference(lambda a: getattr(np, name)(a, **kw), operand)
        assert_ulps(jitted, want, 1)
        assert_ulps(eager, want, 1)
        if not name.startswith("arg"):
            assert_ulps(getattr(tracejit.Array, name)(jnp.asarray(operand), **kw), want, 1)


def test_empty_and_nan_reductions():
    e = np.zeros((0, 3), BF16)
    assert_ulps(tracejit.jit(jnp.sum)(e), np.array(0, BF16), 0)
    assert_ulps(tracejit.jit(lambda a: jnp.sum(a, axis=0))(e), np.zeros(3, BF16), 0)
    x = np.array([1, np.nan, 2], np.float32).astype(BF16)
    assert_ulps(tracejit.jit(jnp.max)(x), np.array(np.nan, BF16), 0)
    assert_ulps(tracejit.jit(jnp.nanmax)(x), np.array(2, BF16), 0)


def test_sum_is_more_accurate_than_bfloat16_accumulation():
    x = np.full(4096, 1.0, BF16)    # accumulating in bfloat16 stops at 256
    assert float(jnp.sum(x)) == 4096.0 and float(tracejit.jit(jnp.sum)(x)) == 4096.0
    assert float(jnp.asarray(x).sum()) == 4096.0 and float(jnp.cumsum(x)[-1]) == 4096.0


@pytest.mark.parametrize("shapes", [((5, 8), (8, 3)), ((8,), (8, 4)), ((2, 3, 8), (8, 2)), ((4, 6), (6,))])
def test_matmul_gives_bfloat16_from_float32_products(shapes):
    a, b = _rng_bf16(shapes[0], seed=5), _rng_bf16(shapes[1], seed=6)
    want = reference(np.matmul, a, b)
    eager, jitted = run_both(jnp.matmul, a, b)
    assert_ulps(jitted, want, 1)
    assert_ulps(eager, want, 1)
    assert_ulps(jnp.asarray(a) @ jnp.asarray(b), want, 1)
    assert_ulps(tracejit.jit(lambda x, y: jnp.einsum("...i,i...->...", x, y) if False else x @ y)(a, b), want, 1)


def test_preferred_element_type_float32_keeps_float32():
    a, b = _rng_bf16((4, 8), seed=7), _rng_bf16((8, 3), seed=8)
    out = tracejit.jit(lambda x, y: lax.dot(x, y, preferred_element_type=jnp.float32))(a, b)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), a.astype(np.float32) @ b.astype(np.float32), rtol=1e-6)
    out = tracejit.jit(lambda x, y: jnp.einsum("ij,jk->ik", x, y, preferred_element_type=jnp.float32))(a, b)
    np.testing.assert_allclose(np.asarray(out), a.astype(np.float32) @ b.astype(np.float32), rtol=1e-6)
    k = _rng_bf16((2, 4, 3), seed=9)
    conv = lax.conv_general_dilated(a[None], k, (1,), "VALID", preferred_element_type=jnp.float32)
    want = lax.conv_general_dilated(a[None].astype(np.float32), k.astype(np.float32), (1,), "VALID")
    assert conv.dtype == np.float32
    np.testing.assert_allclose(np.asarray(conv), np.asarray(want), rtol=1e-6)


# ----------------------------------------------------------------------------- movement, indexing, control flow

def test_data_movement_keeps_bits():
    x = np.arange(24, dtype=np.uint16).view(BF16).reshape(4, 6)      # tiny denormals: any arithmetic shows
    checks = [lambda a: a.T, lambda a: a[::-1, 1::2], lambda a: jnp.concatenate([a, a], axis=1),
              lambda a: jnp.pad(a, 1, constant_values=1.5), lambda a: jnp.broadcast_to(a[:1], (3, 6)),
              lambda a: a[jnp.array([2, 0])], lambda a: lax.dynamic_slice(a, (1, 2), (2, 3)),
              lambda a: lax.dynamic_update_slice(a, a[:1, :2], (3, 4)), lambda a: jnp.where(a > 0, a, -a),
              lambda a: jnp.sort(a, axis=1), lambda a: jnp.flip(a), lambda a: jnp.asarray(a).at[1, 2].set(5.0)]
    for fn in checks:
        want = np.asarray(fn(x.astype(np.float32))).astype(BF16)
        eager, jitted = run_both(fn, x)
        assert_ulps(jitted, want, 0)
        assert_ulps(eager, want, 0)


def test_control_flow_carries_bfloat16():
    x = _rng_bf16(8, seed=9)
    y = tracejit.jit(lambda v: lax.fori_loop(0, 3, lambda i, c: c * 2 + 1, v))(x)
    want = x
    for _ in range(3):
        want = reference(lambda c: c * 2 + 1, want)
    assert_ulps(y, want, 0)
    carry, ys = lax.scan(lambda c, v: (c + v, c * v), np.zeros((), BF16), x)
    c = np.zeros((), BF16)
    for i in range(8):
        assert_ulps(ys[i], reference(np.multiply, c, x[i]), 0)
        c = reference(np.add, c, x[i])
    assert_ulps(carry, c, 0)
    assert tracejit.jit(lambda v: lax.cond(v[0] > 0, lambda u: u + 1, lambda u: u - 1, v))(x).dtype == BF16
    assert tracejit.vmap(lambda r: r * 2 + 1)(x.reshape(2, 4)).dtype == BF16


def test_grad_jvp_and_vjp_in_bfloat16():
    x = _rng_bf16(16, seed=10, scale=1.0)
    f = lambda v: jnp.sum(jnp.sin(v) * v)
    g = tracejit.grad(f)(x)
    gj = tracejit.jit(tracejit.grad(f))(x)
    assert g.dtype == BF16 and gj.dtype == BF16
    xf = x.astype(np.float64)
    np.testing.assert_allclose(np.asarray(gj).astype(np.float64), np.cos(xf) * xf + np.sin(xf), rtol=3e-2, atol=2e-2)
    assert_ulps(g, gj, 1)
    _, t = tracejit.jvp(jnp.tanh, (x,), (np.ones(16, BF16),))
    assert t.dtype == BF16
    W = np.full((16, 4), 0.25, BF16)
    gw = tracejit.grad(lambda w: jnp.sum(jnp.tanh(x @ w)).astype(jnp.float32))(W)
    assert gw.dtype == BF16 and gw.shape == W.shape


def test_mixed_float32_and_bfloat16_primitive_operands_raise():
    from tracejit.ops.dot import dot_general_p
    with pytest.raises((TypeError, NotImplementedError), match="bfloat16|dtype"):
        dot_general_p.bind(np.ones((2, 2), BF16), np.ones((2, 2), np.float32),
                           dimension_numbers=(((1,), (0,)), ((), ())))
    with pytest.raises(TypeError, match="same dtypes"):
        lax.add(jnp.ones(2, jnp.bfloat16), jnp.ones(2, jnp.float32))
    # Sort's operands map one to one to its results: a float32 payload stays float32.
    keys, payload = lax.sort((np.array([2, 1], BF16), np.array([0.1, 0.2], np.float32)), num_keys=1)
    assert keys.dtype == BF16 and payload.dtype == np.float32 and payload[0] == np.float32(0.2)


def test_data_dependent_shapes_work_eagerly():
    x = np.array([1, 2, 2, 0, -1, 2], np.float32).astype(BF16)
    assert_ulps(jnp.unique(x), np.unique(x), 0)
    np.testing.assert_array_equal(jnp.nonzero(x)[0], np.nonzero(x.astype(np.float32))[0])
    np.testing.assert_array_equal(jnp.argwhere(x), np.argwhere(x.astype(np.float32)))
    assert_ulps(jnp.setdiff1d(x, np.array([2], BF16)), np.array([-1, 0, 1], np.float32).astype(BF16), 0)
    assert_ulps(jnp.union1d(x, x[:2]), np.unique(x), 0)
    assert_ulps(jnp.extract(x > 0, x), x[x.astype(np.float32) > 0], 0)
    assert_ulps(jnp.asarray(x)[x > 0], x[x.astype(np.float32) > 0], 0)


# ----------------------------------------------------------------------------- JAX

def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def test_random_bits_match_jax():
    jax = _jax()
    for sampler in ("uniform", "normal"):
        ours = getattr(tracejit.random, sampler)(tracejit.random.key(3), (64,), dtype=jnp.bfloat16)
        theirs = getattr(jax.random, sampler)(jax.random.key(3), (64,), dtype=jax.numpy.bfloat16)
        assert_ulps(ours, np.asarray(theirs), 0)


@pytest.mark.parametrize("name", ["add", "multiply", "divide", "exp", "tanh", "sqrt", "sum", "mean", "max",
                                  "matmul", "softmax", "cumsum", "rad2deg"])
def test_values_match_jax(name):
    jax = _jax()
    jjnp = jax.numpy
    x = np.abs(_rng_bf16((6, 8), seed=11).astype(np.float32)).astype(BF16)
    y = _rng_bf16((8, 6), seed=12)
    fns = {"add": lambda m, a, b: m.add(a, b.T), "multiply": lambda m, a, b: m.multiply(a, b.T),
           "divide": lambda m, a, b: m.divide(a, b.T), "exp": lambda m, a, b: m.exp(a),
           "tanh": lambda m, a, b: m.tanh(b), "sqrt": lambda m, a, b: m.sqrt(a),
           "sum": lambda m, a, b: m.sum(a, axis=1), "mean": lambda m, a, b: m.mean(b, axis=0),
           "max": lambda m, a, b: m.max(a), "matmul": lambda m, a, b: m.matmul(a, b),
           "cumsum": lambda m, a, b: m.cumsum(a, axis=1), "rad2deg": lambda m, a, b: m.rad2deg(a),
           "softmax": None}
    if name == "softmax":
        ours, theirs = tracejit.nn.softmax(x), jax.nn.softmax(jjnp.asarray(x))
    else:
        ours = tracejit.jit(lambda a, b: fns[name](jnp, a, b))(x, y)
        theirs = jax.jit(lambda a, b: fns[name](jjnp, a, b))(x, y)
    assert ours.dtype == BF16 and theirs.dtype == BF16
    assert_ulps(ours, np.asarray(theirs), 1)
