"""The jax.numpy names added for issue 14 ("JAX programs run unchanged"), checked against NumPy
eagerly and under jit (``check_against_numpy``), with edge cases, JAX's deliberate differences
(functional ``place``/``put``/``fill_diagonal``, ``nanargmax`` -1, ``polydiv`` remainder, ``size=``
for data-dependent shapes), and grad/vmap of the differentiable ones."""
import io
import warnings

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit.core.errors import ConcretizationTypeError
from tests.helpers import FLOAT_DTYPES, assert_same, check_against_numpy, special_values, views

INT_ALL = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
FLOATS3 = [np.float16, np.float32, np.float64]


def _bits(dtype, n, seed=0):
    """Random bit patterns of a float dtype: every exponent, subnormals, infinities and NaNs."""
    d = np.dtype(dtype)
    raw = np.random.default_rng(seed).integers(0, 2 ** (8 * d.itemsize), n, dtype=np.uint64)
    return raw.astype(np.dtype(f"uint{8 * d.itemsize}")).view(d)


def _floats(dtype, n=400, seed=0):
    return np.concatenate([special_values(dtype), _bits(dtype, n, seed)])


# --------------------------------------------------------------------------- float ufuncs

@pytest.mark.parametrize("dtype", FLOATS3)
@pytest.mark.parametrize("name", ["fabs", "spacing", "modf", "frexp"])
def test_float_ufuncs_exact_on_all_bit_patterns(name, dtype):
    check_against_numpy(lambda xp, x: getattr(xp, name)(x), _floats(dtype))


@pytest.mark.parametrize("dtype", FLOATS3)
@pytest.mark.parametrize("exp_dtype", [np.int32, np.int64])
def test_ldexp_exact_including_subnormal_rounding(dtype, exp_dtype):
    x = _floats(dtype, 2000)
    n = np.random.default_rng(1).integers(-2300, 2300, x.size).astype(exp_dtype)
    check_against_numpy(lambda xp, x, n: xp.ldexp(x, n), x, n)


def test_frexp_ldexp_round_trip_and_negative_strides():
    x = _floats(np.float64).reshape(-1, 1)[: 400].reshape(20, 20)
    for name, v in views(x).items():
        check_against_numpy(lambda xp, v: xp.frexp(v), v)
        check_against_numpy(lambda xp, v: xp.ldexp(*xp.frexp(v)), v)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64])
def test_fabs_and_float_power_dtypes_follow_numpy(dtype):
    x = np.array([0, 1, 3, 5], dtype=dtype)
    check_against_numpy(lambda xp, x: xp.fabs(x), x)
    check_against_numpy(lambda xp, x: xp.float_power(x, 2), x, transcendental=True)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.complex128])
def test_float_power(dtype):
    x = np.array([0.5, 1.5, 2.0, 10.0, 0.0, np.inf], dtype=dtype)
    y = np.array([2.0, -1.5, 0.5, 3.0, 0.0, 1.0], dtype=dtype)
    check_against_numpy(lambda xp, x, y: xp.float_power(x, y), x, y, transcendental=True)
    check_against_numpy(lambda xp, x: xp.float_power(x, 3), x, transcendental=True)


@pytest.mark.parametrize("dtype", FLOATS3)
def test_heaviside(dtype):
    x = np.array([-np.inf, -1.0, -0.0, 0.0, 2.0, np.inf, np.nan], dtype)
    check_against_numpy(lambda xp, x: xp.heaviside(x, 0.5), x)
    check_against_numpy(lambda xp, x, h: xp.heaviside(x, h), x, np.linspace(-1, 1, 7).astype(dtype))
    check_against_numpy(lambda xp, x: xp.heaviside(x, np.nan), x)


def test_float_ufunc_errors():
    with pytest.raises(TypeError):
        tracejit.jit(jnp.fabs)(np.array([1j]))
    with pytest.raises(TypeError):
        tracejit.jit(jnp.ldexp)(np.array([1.0]), np.array([1.5]))


@pytest.mark.parametrize("name", ["isposinf", "isneginf"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.bool_])
def test_isposinf_isneginf(name, dtype):
    check_against_numpy(lambda xp, x: getattr(xp, name)(x), special_values(dtype))


def test_isposinf_complex_raises_like_numpy_and_jax():
    for fn in (jnp.isposinf, jnp.isneginf):
        with pytest.raises(TypeError):
            fn(np.array([1j]))
        with pytest.raises(ValueError):
            tracejit.jit(fn)(np.array([1j]))


@pytest.mark.parametrize("name", ["iscomplex", "isreal"])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, np.float64, np.int32, np.bool_])
def test_iscomplex_isreal(name, dtype):
    check_against_numpy(lambda xp, x: getattr(xp, name)(x), special_values(dtype))


# --------------------------------------------------------------------------- i0 and windows

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_i0(dtype):
    x = np.concatenate([np.linspace(-30, 30, 121), [0.0, 8.0, -8.0, 7.999, 8.001, np.nan, np.inf, -np.inf]])
    check_against_numpy(lambda xp, x: xp.i0(x), x.astype(dtype) if dtype != np.int64 else
                        np.arange(-20, 21).astype(dtype), transcendental="always")


def test_i0_grad_and_vmap():
    # d/dx I0(x) = I1(x); check against central differences of NumPy's i0 (float64).
    xs = np.array([-9.0, -1.0, 0.0, 0.5, 3.0, 8.0, 12.0])
    g = tracejit.vmap(tracejit.grad(jnp.i0))(xs)
    h = 1e-6
    fd = (np.i0(xs + h) - np.i0(xs - h)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
@pytest.mark.parametrize("M", [0, 1, 2, 5, 16, -3])
def test_windows(name, M):
    check_against_numpy(lambda xp: getattr(xp, name)(M))


@pytest.mark.parametrize("M", [0, 1, 2, 7, 12])
@pytest.mark.parametrize("beta", [0.0, 3.5, 14.0])
def test_kaiser_concrete_and_traced_beta(M, beta):
    check_against_numpy(lambda xp: xp.kaiser(M, beta))
    check_against_numpy(lambda xp, b: xp.kaiser(M, b), np.float64(beta), transcendental="always",
                        np_protocol=False)     # np.kaiser does not dispatch to tracejit


def test_kaiser_grad_in_beta():
    g = tracejit.grad(lambda b: jnp.sum(jnp.kaiser(9, b)))(4.0)
    h = 1e-6
    fd = (np.sum(np.kaiser(9, 4.0 + h)) - np.sum(np.kaiser(9, 4.0 - h))) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_window_length_must_be_static():
    with pytest.raises(TypeError, match="static"):
        tracejit.jit(jnp.hanning)(5)


# --------------------------------------------------------------------------- integers and bits

@pytest.mark.parametrize("dtype", INT_ALL)
def test_gcd_lcm(dtype):
    rng = np.random.default_rng(3)
    signed = np.dtype(dtype).kind == "i"
    a = rng.integers(-120 if signed else 0, 120, 300).astype(dtype)
    b = rng.integers(-120 if signed else 0, 120, 300).astype(dtype)
    a[:3], b[:3] = 0, [0, 5, 0]
    b[3] = 0
    check_against_numpy(lambda xp, a, b: xp.gcd(a, b), a, b)
    check_against_numpy(lambda xp, a, b: xp.lcm(a, b), a, b)      # int8/int16 wrap as NumPy's C loop
    check_against_numpy(lambda xp, a: xp.gcd(a, 12), a)


def test_gcd_vmap_and_empty():
    got = tracejit.vmap(jnp.gcd)(np.array([12, 18, 7, 0]), np.array([8, -12, 0, 0]))
    np.testing.assert_array_equal(got, np.gcd([12, 18, 7, 0], [8, -12, 0, 0]))
    check_against_numpy(lambda xp, a: xp.gcd(a, a), np.zeros((0, 3), np.int32))


@pytest.mark.parametrize("dtype", INT_ALL + [np.bool_])
def test_bitwise_count(dtype):
    d = np.dtype(dtype)
    if d == np.bool_:
        x = np.array([True, False])
    else:
        info = np.iinfo(d)
        x = np.random.default_rng(4).integers(info.min, info.max, 500, dtype=d, endpoint=True)
        x[:4] = [info.min, info.max, 0, 1 if d.kind == "u" else -1]
    check_against_numpy(lambda xp, x: xp.bitwise_count(x), x)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("bitorder", ["big", "little"])
@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.uint8])
def test_packbits_unpackbits(axis, bitorder, dtype):
    x = np.random.default_rng(5).integers(-1, 2, (3, 13)).astype(dtype)   # negative values count as set
    packed = check_against_numpy(lambda xp, x: xp.packbits(x, axis=axis, bitorder=bitorder), x)
    for count in [None, 0, 3, -5, 200]:
        check_against_numpy(lambda xp, p: xp.unpackbits(p, axis=axis, count=count, bitorder=bitorder), packed)


def test_packbits_errors():
    with pytest.raises(TypeError):
        tracejit.jit(jnp.packbits)(np.ones(3))
    with pytest.raises(TypeError):
        tracejit.jit(jnp.unpackbits)(np.ones(3, np.int32))


# --------------------------------------------------------------------------- NaN reductions

def _with_nans(dtype=np.float64):
    x = np.random.default_rng(6).standard_normal((4, 5)).astype(dtype)
    x[0, 1] = x[1, 3] = x[3, 0] = np.nan
    return x


@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("ddof", [0, 1, 4])
@pytest.mark.parametrize("keepdims", [False, True])
def test_nanvar_nanstd(name, axis, ddof, keepdims):
    x = _with_nans()
    x[2, :] = np.nan                                                    # an all-NaN row: NaN
    check_against_numpy(lambda xp, x: getattr(xp, name)(x, axis=axis, ddof=ddof, keepdims=keepdims), x,
                        reassoc=True, transcendental=name == "nanstd")


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.complex128, np.int32])
def test_nanvar_dtypes(dtype):
    x = _with_nans() + (1j * _with_nans()[::-1] if np.dtype(dtype).kind == "c" else 0)
    x = np.nan_to_num(x) if np.dtype(dtype).kind == "i" else x
    check_against_numpy(lambda xp, x: xp.nanvar(x, axis=1), x.astype(dtype), reassoc=True)
    check_against_numpy(lambda xp, x: xp.nanstd(x, axis=0), x.astype(dtype), reassoc=True, transcendental=True)


def test_nanvar_grad_and_views():
    x = _with_nans()
    g = tracejit.grad(lambda x: jnp.nanvar(x))(x)
    mask = ~np.isnan(x)
    want = np.where(mask, 2 * (np.where(mask, x, 0) - np.nanmean(x)) / mask.sum(), 0)
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-15)
    for v in views(x).values():
        check_against_numpy(lambda xp, v: xp.nanvar(v, axis=0), v, reassoc=True)


@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_nanargmax_nanargmin(name, axis):
    x = _with_nans()
    check_against_numpy(lambda xp, x: getattr(xp, name)(x, axis=axis), x)
    check_against_numpy(lambda xp, x: getattr(xp, name)(x, axis=axis, keepdims=True), x)
    check_against_numpy(lambda xp, x: getattr(xp, name)(x, axis=axis), np.arange(12).reshape(3, 4) % 5)


@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
def test_nanargmax_all_nan_slice_is_minus_one_as_jax(name):
    x = _with_nans()
    x[:, 2] = np.nan
    fill = -np.inf if name == "nanargmax" else np.inf
    want = getattr(np, name.replace("nan", ""))(np.where(np.isnan(x), fill, x), axis=0)
    want[2] = -1                                     # NumPy raises on the all-NaN column; JAX gives -1
    fn = lambda x: getattr(jnp, name)(x, axis=0)  # noqa: E731
    assert_same(fn(x), want)
    assert_same(tracejit.jit(fn)(x), want)


@pytest.mark.parametrize("name", ["nancumsum", "nancumprod"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_nancumsum_nancumprod(name, axis):
    x = _with_nans()
    check_against_numpy(lambda xp, x: getattr(xp, name)(x, axis=axis), x, reassoc=True)
    check_against_numpy(lambda xp, x: getattr(xp, name)(x, axis=axis), np.arange(1, 13).reshape(3, 4))
    check_against_numpy(lambda xp, x: getattr(xp, name)(x, axis=axis, dtype=np.float32), x, reassoc=True)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.float32, np.float64])
def test_ptp(axis, dtype):
    x = np.random.default_rng(7).integers(0, 100, (4, 5)).astype(dtype)
    check_against_numpy(lambda xp, x: xp.ptp(x, axis=axis), x)
    check_against_numpy(lambda xp, x: xp.ptp(x, axis=axis, keepdims=True), x[::-1, ::-2])
    check_against_numpy(lambda xp, x: xp.ptp(x), np.array([1.0, np.nan, 2.0]))


# --------------------------------------------------------------------------- selection

@pytest.mark.parametrize("mode", ["wrap", "clip"])
def test_choose(mode):
    a = np.array([[0, 3, -1], [2, 1, 5]])
    c0, c2 = np.arange(6).reshape(2, 3) * 10, -np.arange(3.0)
    check_against_numpy(lambda xp, a, c0, c2: xp.choose(a, [c0, 1.5, c2], mode=mode), a, c0, c2)


def test_choose_raise_mode():
    a = np.array([0, 1, 1])
    assert_same(jnp.choose(a, [np.arange(3), np.ones(3)]), np.choose(a, [np.arange(3), np.ones(3)]))
    assert_same(tracejit.jit(lambda c: jnp.choose(a, [c, 1.0]))(np.arange(3.0)), np.choose(a, [np.arange(3.0), 1.0]))
    with pytest.raises(ConcretizationTypeError, match="mode='wrap'"):
        tracejit.jit(lambda a: jnp.choose(a, [1, 2]))(a)
    with pytest.raises(ValueError, match="invalid entry"):
        jnp.choose(np.array([0, 2]), [1, 2])


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress_eager_and_sized(axis):
    x = np.arange(12.0).reshape(3, 4)
    cond = np.array([True, False, True])
    want = np.compress(cond, x, axis=axis)
    assert_same(jnp.compress(cond, x, axis=axis), want)
    n = (x.size if axis is None else x.shape[axis])
    for size in [0, 1, n + 2]:
        ax = 0 if axis is None else axis
        k = want.shape[ax]
        pad = [(0, 0)] * want.ndim
        pad[ax] = (0, max(size - k, 0))
        expected = np.take(np.pad(want, pad, constant_values=-1), np.arange(size), axis=ax)
        for fn in (jnp.compress, tracejit.jit(jnp.compress, static_argnames=("axis", "size", "fill_value"))):
            assert_same(fn(cond, x, axis=axis, size=size, fill_value=-1), expected)
    with pytest.raises(ConcretizationTypeError, match="size="):
        tracejit.jit(lambda c, x: jnp.compress(c, x, axis=axis))(cond, x)


def test_compress_and_extract_vmap():
    x = np.arange(12).reshape(3, 4)
    got = tracejit.vmap(lambda c, r: jnp.compress(c, r, size=4, fill_value=-7))(x % 2 == 0, x)
    np.testing.assert_array_equal(got, [[0, 2, -7, -7], [4, 6, -7, -7], [8, 10, -7, -7]])
    got = tracejit.vmap(lambda c, r: jnp.extract(c, r, size=2))(x % 3 == 0, x)
    np.testing.assert_array_equal(got, [[0, 3], [6, 0], [9, 0]])


def test_extract():
    x = np.arange(12).reshape(3, 4)
    assert_same(jnp.extract(x % 3 == 0, x), np.extract(x % 3 == 0, x))
    assert_same(jnp.extract(x % 3, x), np.extract(x % 3, x))
    got = tracejit.jit(lambda x: jnp.extract(x % 3 == 0, x, size=6, fill_value=-1))(x)
    assert_same(got, np.array([0, 3, 6, 9, -1, -1]))
    with pytest.raises(ConcretizationTypeError):
        tracejit.jit(lambda x: jnp.extract(x > 2, x))(x)


def _numpy_inplace(fn):
    def run(a, *args, **kwargs):
        out = np.array(a, copy=True)
        fn(out, *args, **kwargs)
        return out
    return run


@pytest.mark.parametrize("vals", [np.array([-1, -2]), np.array([9]), np.arange(20) * -1])
def test_place(vals):
    x = np.arange(12).reshape(3, 4)
    mask = (x % 3 == 0)
    want = _numpy_inplace(np.place)(x, mask, vals)
    for fn in (jnp.place, tracejit.jit(lambda x, m, v, inplace: jnp.place(x, m, v, inplace=inplace),
                                       static_argnums=3)):
        assert_same(fn(x, mask, vals, inplace=False), want)
    with pytest.raises(ValueError, match="inplace=False"):
        jnp.place(x, mask, vals)


def test_place_grad_and_vmap():
    x = np.arange(6.0)
    mask = np.array([1, 0, 1, 1, 0, 0], bool)
    g = tracejit.grad(lambda v: jnp.sum(jnp.place(x, mask, v, inplace=False) ** 2))(np.array([1.0, 2.0]))
    np.testing.assert_allclose(g, [2 * 1 + 2 * 1, 2 * 2])          # v[0] lands twice (cyclic)
    rows = tracejit.vmap(lambda r: jnp.place(r, r > 2, np.array([0.0]), inplace=False))(x.reshape(2, 3))
    np.testing.assert_array_equal(rows, np.where(x.reshape(2, 3) > 2, 0.0, x.reshape(2, 3)))


@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_put_modes_match_numpy(mode):
    x = np.arange(12.0).reshape(3, 4)
    ind, v = np.array([0, -1, 40, 5]), np.array([-1.0, -2.0, -3.0])
    want = _numpy_inplace(np.put)(x, ind, v, mode=mode)
    fn = lambda x, i, v: jnp.put(x, i, v, mode=mode, inplace=False)  # noqa: E731
    assert_same(fn(x, ind, v), want)
    assert_same(tracejit.jit(fn)(x, ind, v), want)


def test_put_default_mode_drops_out_of_range_as_jax():
    x = np.arange(6)
    ind, v = np.array([0, -1, 40, -7, 2]), np.array([10, 20, 30])
    want = x.copy()
    want[[0, -1, 2]] = [10, 20, 20]
    for fn in (jnp.put, tracejit.jit(lambda x, i, v, inplace: jnp.put(x, i, v, inplace=inplace), static_argnums=3)):
        assert_same(fn(x, ind, v, inplace=False), want)
    with pytest.raises(ValueError, match="inplace=False"):
        jnp.put(x, ind, v)
    with pytest.raises(NotImplementedError):
        jnp.put(x, ind, v, mode="raise", inplace=False)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 5), (3, 3, 3), (1, 1), (0, 3)])
@pytest.mark.parametrize("val", [7, np.array([1.5, 2.5]), np.arange(10.0), np.array([[4.0]])])
def test_fill_diagonal(shape, val):
    x = np.random.default_rng(8).standard_normal(shape)
    want = _numpy_inplace(np.fill_diagonal)(x, val)
    fn = lambda x, v: jnp.fill_diagonal(x, v, inplace=False)  # noqa: E731
    assert_same(fn(x, val), want)
    assert_same(tracejit.jit(fn)(x, val), want)


def test_fill_diagonal_errors_grad_vmap():
    with pytest.raises(NotImplementedError, match="inplace=False"):
        jnp.fill_diagonal(np.zeros((2, 2)), 1.0)
    with pytest.raises(NotImplementedError, match="wrap"):
        jnp.fill_diagonal(np.zeros((5, 2)), 1.0, wrap=True, inplace=False)
    with pytest.raises(ValueError):
        jnp.fill_diagonal(np.zeros(3), 1.0, inplace=False)
    g = tracejit.grad(lambda x, v: jnp.sum(jnp.fill_diagonal(x, v, inplace=False) * 3.0), argnums=(0, 1))(
        np.ones((3, 3)), 2.0)
    np.testing.assert_array_equal(g[0], 3.0 * (1 - np.eye(3)))
    assert float(g[1]) == 9.0
    got = tracejit.vmap(lambda v: jnp.fill_diagonal(np.zeros((2, 2)), v, inplace=False))(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(got, [np.eye(2), 2 * np.eye(2)])


@pytest.mark.parametrize("trim", ["fb", "f", "b", "FB"])
@pytest.mark.parametrize("x", [[0, 0, 1, 0, 2, 0], [0, 0], [], [3.0, 0.0, -0.0], [1]])
def test_trim_zeros(trim, x):
    x = np.asarray(x)
    assert_same(jnp.trim_zeros(x, trim), np.trim_zeros(x, trim))


def test_trim_zeros_needs_concrete_input():
    with pytest.raises(ConcretizationTypeError):
        tracejit.jit(jnp.trim_zeros)(np.array([0, 1]))


@pytest.mark.parametrize("new_shape", [(2, 4), 7, (0,), (3, 0), (1,), (2, 2, 3)])
def test_resize(new_shape):
    check_against_numpy(lambda xp, x: xp.resize(x, new_shape), np.arange(5.0))
    check_against_numpy(lambda xp, x: xp.resize(x, new_shape), np.arange(12).reshape(3, 4)[::-1])
    check_against_numpy(lambda xp, x: xp.resize(x, new_shape), np.zeros((0,), np.int32))


def test_block():
    a, b, c = np.eye(2), np.zeros((2, 1)), np.arange(3.0)
    check_against_numpy(lambda xp, a, b, c: xp.block([[a, b], [c]]), a, b, c)
    check_against_numpy(lambda xp, a, c: xp.block([a, 2 * a]), a, c)
    check_against_numpy(lambda xp, c: xp.block([c, 5.0, c]), c)
    check_against_numpy(lambda xp, c: xp.block([[[c]], [[c]]]), c)
    with pytest.raises(ValueError):
        jnp.block([[a], b])
    with pytest.raises(ValueError):
        jnp.block((a, b))


@pytest.mark.parametrize("axis,start", [(0, 0), (2, 0), (2, 1), (0, 3), (-1, -2), (1, 2)])
def test_rollaxis(axis, start):
    check_against_numpy(lambda xp, x: xp.rollaxis(x, axis, start), np.arange(24).reshape(2, 3, 4))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unstack_and_matrix_transpose(axis):
    x = np.arange(24.0).reshape(2, 3, 4)
    check_against_numpy(lambda xp, x: xp.unstack(x, axis=axis), x)
    check_against_numpy(lambda xp, x: xp.matrix_transpose(x), x[::-1])
    check_against_numpy(lambda xp, x: xp.matrix_transpose(x), np.ones((0, 3)))
    with pytest.raises(ValueError):
        jnp.unstack(np.float64(1.0))
    with pytest.raises(ValueError):
        jnp.matrix_transpose(np.ones(3))


@pytest.mark.parametrize("b", [np.array([1, 2]), np.array([[1, 2], [1, 2]]), np.array([[1, 2], [1, 3]]),
                               np.array([1, 2, 3]), np.array([1.0, 2.0])])
def test_array_equiv(b):
    check_against_numpy(lambda xp, a, b: xp.array_equiv(a, b), np.array([1, 2]), b, np_protocol=False)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int64, np.float32, np.float64, np.complex64,
                                   np.complex128, np.bool_])
def test_sort_complex(dtype):
    x = np.array([[3, 1, 2, 1], [0, 5, 4, 2]]).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * np.array([[1, -1, 0, 2], [3, 3, -3, 1]])
    check_against_numpy(lambda xp, x: xp.sort_complex(x), x.astype(dtype))


@pytest.mark.parametrize("period", [2 * np.pi, 4.0, 360.0])
@pytest.mark.parametrize("axis", [0, -1])
def test_unwrap(period, axis):
    rng = np.random.default_rng(9)
    phase = np.cumsum(rng.uniform(-0.5, 0.5, (6, 30)) * period, axis=axis)
    wrapped = np.mod(phase, period)
    check_against_numpy(lambda xp, p: xp.unwrap(p, axis=axis, period=period), wrapped, reassoc=True)
    check_against_numpy(lambda xp, p: xp.unwrap(p, discont=period, axis=axis, period=period), wrapped,
                        reassoc=True)
    check_against_numpy(lambda xp, p: xp.unwrap(p, axis=axis, period=period), wrapped.astype(np.float32),
                        reassoc=True)


def test_unwrap_integers_and_edges():
    check_against_numpy(lambda xp, p: xp.unwrap(p, period=4), np.array([0, 3, 6, 1, 9, 2]))
    check_against_numpy(lambda xp, p: xp.unwrap(p, period=5), np.array([0, 3, 6, 1, 9, 2]))
    check_against_numpy(lambda xp, p: xp.unwrap(p), np.array([0, 3, 6, 1, 9, 2]))
    check_against_numpy(lambda xp, p: xp.unwrap(p), np.array([1.0]))
    g = tracejit.grad(lambda p: jnp.sum(jnp.unwrap(p)))(np.array([0.1, 6.0, 0.3]))
    np.testing.assert_allclose(g, [1.0, 1.0, 1.0])


def test_fromfunction():
    check_against_numpy(lambda xp: xp.fromfunction(lambda i, j: i + 10 * j, (3, 4), dtype=int))
    check_against_numpy(lambda xp: xp.fromfunction(lambda i, j, k: i * j - k, (2, 3, 4)))
    check_against_numpy(lambda xp: xp.fromfunction(lambda i: i ** 2, (5,), dtype=np.float32))
    check_against_numpy(lambda xp: xp.fromfunction(lambda i, j: i == j, (3, 3), dtype=int))
    out = jnp.fromfunction(lambda i, j, scale: scale * i + j, (2, 2), scale=3.0)
    np.testing.assert_array_equal(out, [[0.0, 1.0], [3.0, 4.0]])


# --------------------------------------------------------------------------- products, polydiv

@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int32, np.bool_])
def test_vecdot_matvec_vecmat(dtype):
    rng = np.random.default_rng(10)

    def arr(*shape):
        x = rng.standard_normal(shape) * 3
        if np.dtype(dtype).kind == "c":
            x = x + 1j * rng.standard_normal(shape)
        return x.astype(dtype)
    A, v, w, B = arr(2, 3, 4), arr(4), arr(3), arr(5, 1, 1, 4)
    check_against_numpy(lambda xp, A, v: xp.vecdot(A, v), A, v, reassoc=True)
    check_against_numpy(lambda xp, A, B: xp.vecdot(A, B), A, B, reassoc=True)
    check_against_numpy(lambda xp, A, w: xp.vecdot(A, w[:, None], axis=-2), A, w, reassoc=True)
    check_against_numpy(lambda xp, A, v: xp.matvec(A, v), A, v, reassoc=True)
    check_against_numpy(lambda xp, A, B: xp.matvec(A, B), A, B, reassoc=True)
    check_against_numpy(lambda xp, A, w: xp.vecmat(w, A), A, w, reassoc=True)
    check_against_numpy(lambda xp, A: xp.vecmat(A[:, :, 0], A), A, reassoc=True)


def test_vecdot_grad_vmap_and_preferred_type():
    a, b = np.arange(3.0), np.array([1.0, -1.0, 2.0])
    g = tracejit.grad(jnp.vecdot)(a, b)
    np.testing.assert_array_equal(g, b)
    got = tracejit.vmap(jnp.matvec, in_axes=(None, 0))(np.eye(3), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(got, np.arange(6.0).reshape(2, 3))
    out = jnp.vecdot(np.arange(3, dtype=np.int8), np.arange(3, dtype=np.int8), preferred_element_type=np.float32)
    assert out.dtype == np.float32 and float(out) == 5.0


def test_einsum_path():
    ops = (np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5)))
    want = np.einsum_path("ij,jk,kl->il", *ops)
    assert jnp.einsum_path("ij,jk,kl->il", *ops)[0] == want[0]
    seen = []

    def f(a, b, c):
        seen.append(jnp.einsum_path("ij,jk,kl->il", a, b, c, optimize="optimal")[0])
        return jnp.einsum("ij,jk,kl->il", a, b, c)
    tracejit.jit(f)(*ops)
    assert seen[0] == np.einsum_path("ij,jk,kl->il", *ops, optimize="optimal")[0]


@pytest.mark.parametrize("u,v", [([1.0, 3, 5], [1.0, 1]), ([3, 2, 1, 5], [2, 1]), ([1, 2], [1, 2, 3]),
                                 ([1, 2, 3], [4]), ([2.0, 0, -2], [1.0, -1]),
                                 (np.array([1, 2, 3], np.float32), np.array([2, 1], np.float32))])
def test_polydiv(u, v):
    u, v = np.asarray(u), np.asarray(v)
    qn, rn = np.polydiv(u, v)
    for fn in (jnp.polydiv, tracejit.jit(jnp.polydiv)):
        q, r = fn(u, v)
        assert_same(q, qn)
        assert r.shape == u.shape and r.dtype == rn.dtype            # JAX keeps the full-length remainder
        np.testing.assert_allclose(r[r.size - rn.size:], rn, rtol=1e-6 if r.dtype == np.float32 else 1e-15,
                                   atol=1e-12)
        np.testing.assert_allclose(r[: r.size - rn.size], 0, atol=1e-6)
    q, r = jnp.polydiv(u, v, trim_leading_zeros=True)
    assert_same(q, qn)
    assert_same(r, rn)
    with pytest.raises(ConcretizationTypeError):
        tracejit.jit(lambda u, v: jnp.polydiv(u, v, trim_leading_zeros=True))(u, v)


# --------------------------------------------------------------------------- types, printing, io

def test_dtype_aliases_and_predicates():
    assert jnp.bool is np.bool_ and jnp.double is np.float64 and jnp.single is np.float32
    assert jnp.cdouble is np.complex128 and jnp.csingle is np.complex64 and jnp.object_ is np.object_
    assert jnp.character is np.character and jnp.flexible is np.flexible
    assert jnp.ComplexWarning is np.exceptions.ComplexWarning
    for d in [np.bool_, np.int8, np.uint32, np.float16, np.complex64]:
        for kind in ["bool", "signed integer", "unsigned integer", "integral", "real floating",
                     "complex floating", "numeric", ("bool", "real floating"), np.float16]:
            assert jnp.isdtype(d, kind) == np.isdtype(np.dtype(d), kind if not isinstance(kind, type)
                                                      else np.dtype(kind))

    def probe(x):
        assert not jnp.iscomplexobj(x) and jnp.isrealobj(x) and jnp.isscalar(x[0]) and not jnp.isscalar(x)
        assert jnp.iterable(x)
        return x
    tracejit.jit(probe)(np.ones(3))
    assert jnp.iscomplexobj(1j) and jnp.iscomplexobj(np.ones(2, np.complex64)) and not jnp.iscomplexobj(None)
    assert jnp.isscalar(3) and jnp.isscalar(np.float32(1)) and jnp.isscalar(np.array(2.0))
    assert not jnp.isscalar([1]) and jnp.isscalar("s") and not jnp.iterable(3)
    assert type(jnp.isscalar(1)) is bool and type(jnp.iscomplexobj(1)) is bool


def test_broadcast_shapes():
    assert jnp.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert jnp.broadcast_shapes() == ()
    assert jnp.broadcast_shapes(3, (2, 1)) == np.broadcast_shapes(3, (2, 1))
    assert jnp.broadcast_shapes((0, 1), (1, 4)) == (0, 4)
    with pytest.raises(ValueError):
        jnp.broadcast_shapes((2,), (3,))


def test_printing():
    x = np.array([1.123456789, 2.0])
    assert jnp.array_repr(x) == np.array_repr(x) and jnp.array_str(x, precision=2) == np.array_str(x, precision=2)
    with jnp.printoptions(precision=3):
        assert jnp.get_printoptions()["precision"] == 3
        assert jnp.array_str(x) == np.array_str(x)
    with pytest.raises(ConcretizationTypeError):
        tracejit.jit(jnp.array_str)(x)
    assert jnp.set_printoptions is np.set_printoptions


def test_io_functions(tmp_path):
    buf = bytearray(np.arange(4, dtype=np.int16).tobytes())
    out = jnp.frombuffer(buf, dtype=np.int16, count=3, offset=2)
    assert_same(out, np.frombuffer(bytes(buf), dtype=np.int16, count=3, offset=2))
    buf[2] = 99                                                      # a copy, not a view of the bytes
    assert_same(out, np.arange(1, 4, dtype=np.int16))
    assert_same(jnp.fromstring("1, 2, 3", dtype=np.float32, sep=","), np.array([1, 2, 3], np.float32))
    with pytest.raises(NotImplementedError, match="np.fromiter"):
        jnp.fromiter(range(3), int)
    assert_same(jnp.from_dlpack(np.arange(3.0)), np.arange(3.0))
    f = io.BytesIO()
    jnp.save(f, np.arange(3.0))
    f.seek(0)
    assert_same(jnp.load(f), np.arange(3.0))
    path = tmp_path / "z.npz"
    jnp.savez(path, a=np.arange(2), b=np.ones(3))
    with jnp.load(path) as z:
        assert_same(z["b"], np.ones(3))


def test_frompyfunc():
    add = jnp.frompyfunc(lambda x, y: x + y, 2, 1, identity=0)
    assert isinstance(add, jnp.ufunc) and add.nin == 2 and add.nout == 1 and add.identity == 0
    x = np.arange(12).reshape(3, 4)
    for axis in [0, 1, None, (0, 1), -1]:
        for keepdims in [False, True]:
            want = np.add.reduce(x, axis=axis, keepdims=keepdims)
            assert_same(add.reduce(x, axis=axis, keepdims=keepdims), want)
            assert_same(tracejit.jit(lambda x: add.reduce(x, axis=axis, keepdims=keepdims))(x), want)
    assert_same(add.reduce(x, axis=1, initial=100), np.add.reduce(x, axis=1, initial=100))
    assert_same(add.reduce(np.zeros((0, 3)), axis=0), np.zeros(3))
    for axis in [0, 1]:
        assert_same(tracejit.jit(lambda x: add.accumulate(x, axis=axis))(x), np.add.accumulate(x, axis=axis))
    assert_same(add.outer(np.arange(2), np.arange(3)), np.add.outer(np.arange(2), np.arange(3)))
    hyp = jnp.frompyfunc(lambda a, b: jnp.sqrt(a * a + b * b), 2, 1)
    a, b = np.array([3.0, 5.0]), np.array([[4.0], [12.0]])
    np.testing.assert_allclose(tracejit.jit(hyp)(a, b), np.hypot(a, b), rtol=1e-15)
    np.testing.assert_allclose(hyp(a, b), np.hypot(a, b), rtol=1e-15)
    g = tracejit.grad(lambda t: jnp.sum(hyp(t, 4.0)))(np.array([3.0]))
    np.testing.assert_allclose(g, [0.6])
    mx = jnp.frompyfunc(jnp.maximum, 2, 1)
    with pytest.raises(ValueError, match="no identity"):
        mx.reduce(np.zeros((0,)))
    with pytest.raises(ValueError):
        jnp.frompyfunc(jnp.sin, 1, 1).reduce(x)


def test_new_functions_have_examples_docstrings():
    names = ("array_equiv array_repr array_str bartlett bitwise_count blackman block broadcast_shapes choose "
             "compress einsum_path extract fabs fill_diagonal float_power frexp fromfunction gcd hamming hanning "
             "heaviside i0 iscomplex iscomplexobj isdtype isneginf isposinf isreal isrealobj isscalar iterable "
             "kaiser lcm ldexp matrix_transpose matvec vecmat vecdot modf nanargmax nanargmin nancumprod "
             "nancumsum nanstd nanvar packbits unpackbits place put polydiv ptp resize rollaxis sort_complex "
             "spacing trim_zeros unstack unwrap frombuffer fromstring fromiter from_dlpack load frompyfunc").split()
    for n in names:
        doc = getattr(jnp, n).__doc__ or ""
        assert "Examples" in doc, n


def test_jnp_functions_return_strong_numpy_values():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Eager results are 0-d tracejit.Arrays (JAX's array type) of NumPy's strong dtypes.
        for value, dtype in [(jnp.ptp(np.arange(3)), np.int64),
                             (jnp.nanargmax(np.array([1.0, np.nan])), np.int64),
                             # jnp.bool (np.bool_) must not shadow the builtin in the wrapper
                             (jnp.allclose(np.ones(2), np.ones(2)), np.bool_)]:
            assert type(value) is tracejit.Array and value.shape == () and value.dtype == dtype
