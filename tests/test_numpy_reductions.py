"""Reductions (sum, mean, max, min, prod, argmax, argmin, var, std, all, any,
cumulative and NaN-aware ones) vs NumPy, eagerly and under jit."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from helpers import ALL_DTYPES, check_against_numpy, sample, special_values, views

AXES = [None, 0, 1, -1, (0, 1), (0, 2), ()]
DTYPE_IDS = [np.dtype(d).name for d in ALL_DTYPES]
ORDERED = [d for d in ALL_DTYPES if np.dtype(d).kind != "c"]


def _x(dtype, shape=(2, 3, 4), seed=0):
    return sample(shape, dtype, seed=seed, low=-3, high=4)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=repr)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_sum_prod_mean(dtype, axis, keepdims):
    x = _x(dtype)
    # Float sums may differ in the last bits if the compiled backend reassociates.
    check_against_numpy(lambda xp, a: tuple(getattr(xp, name)(a, axis=axis, keepdims=keepdims)
                                            for name in ("sum", "prod", "mean")), x,
                        transcendental=np.dtype(dtype).kind in "fc")


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=repr)
@pytest.mark.parametrize("dtype", ORDERED, ids=[np.dtype(d).name for d in ORDERED])
def test_max_min_all_any(dtype, axis, keepdims):
    x = _x(dtype)
    check_against_numpy(lambda xp, a: tuple(getattr(xp, name)(a, axis=axis, keepdims=keepdims)
                                            for name in ("max", "min", "all", "any")), x)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("dtype", ORDERED, ids=[np.dtype(d).name for d in ORDERED])
def test_argmax_argmin(dtype, axis):
    x = _x(dtype, (3, 5), seed=4)
    for name in ("argmax", "argmin"):
        check_against_numpy(lambda xp, a: getattr(xp, name)(a, axis=axis), x)
        check_against_numpy(lambda xp, a: getattr(xp, name)(a, axis=axis, keepdims=True), x)


@pytest.mark.parametrize("ddof", [0, 1])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)], ids=repr)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_var_std(dtype, axis, ddof):
    x = _x(dtype, (4, 5), seed=2)
    for name in ("var", "std"):
        check_against_numpy(lambda xp, a: getattr(xp, name)(a, axis=axis, ddof=ddof), x, transcendental=True)
        check_against_numpy(lambda xp, a: getattr(xp, name)(a, axis=axis, ddof=ddof, keepdims=True), x,
                            transcendental=True)


def test_methods_and_protocol():
    x = _x(np.float64, (3, 4), seed=1)
    for fn in (lambda xp, a: a.sum(), lambda xp, a: a.sum(axis=0), lambda xp, a: a.mean(1, keepdims=True),
               lambda xp, a: a.max(axis=1), lambda xp, a: a.min(), lambda xp, a: a.prod(0),
               lambda xp, a: a.argmax(), lambda xp, a: a.argmin(axis=0), lambda xp, a: a.var(ddof=1),
               lambda xp, a: a.std(0), lambda xp, a: (a > 0).all(0), lambda xp, a: (a > 0).any(),
               lambda xp, a: xp.sum(a, axis=0), lambda xp, a: xp.amax(a, 1)):
        check_against_numpy(fn, x, transcendental=True)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int32, np.uint8, np.uint32, np.float16, np.float32],
                         ids=lambda d: np.dtype(d).name)
def test_accumulator_dtypes_follow_numpy(dtype):
    # int32 sums widen to int64, bool sums to int64, uint32 to uint64, float16 means stay float16.
    x = _x(dtype, (3, 4), seed=7)
    # NumPy's float16 var rounds intermediates to float16; tracejit keeps them in float32.
    f16 = np.dtype(dtype) == np.float16
    for name in ("sum", "prod", "mean", "max", "var"):
        check_against_numpy(lambda xp, a: getattr(xp, name)(a), x, transcendental=True, reassoc=f16 and name == "var")
    check_against_numpy(lambda xp, a: xp.sum(a, dtype=np.float32), x, transcendental=True)
    check_against_numpy(lambda xp, a: xp.mean(a, axis=0, dtype=np.float64), x, transcendental=True)


def test_empty_reductions():
    e = np.zeros((0, 3))
    for fn in (lambda xp, a: xp.sum(a), lambda xp, a: xp.sum(a, axis=0), lambda xp, a: xp.sum(a, axis=1),
               lambda xp, a: xp.prod(a, axis=0), lambda xp, a: xp.all(a), lambda xp, a: xp.any(a, axis=1),
               lambda xp, a: xp.mean(a), lambda xp, a: xp.mean(a, axis=0), lambda xp, a: xp.var(a, axis=0),
               lambda xp, a: xp.max(a, axis=1), lambda xp, a: xp.max(a, axis=0, initial=-1.0),
               lambda xp, a: xp.argmax(a, axis=1)):
        check_against_numpy(fn, e)
    for name in ("max", "min"):
        with pytest.raises(ValueError, match="zero-size array"):
            tracejit.jit(getattr(jnp, name))(e)
        with pytest.raises(ValueError, match="zero-size array"):
            getattr(jnp, name)(e)
    for name in ("argmax", "argmin"):
        with pytest.raises(ValueError, match="empty"):
            tracejit.jit(lambda a: getattr(jnp, name)(a, axis=0))(e)


def test_nan_and_inf_in_reductions():
    x = np.array([[1.0, np.nan, 3.0], [np.inf, -np.inf, 2.0], [-0.0, 0.0, -1.0]])
    for name in ("sum", "prod", "max", "min", "mean", "argmax", "argmin", "nansum", "nanmax", "nanmin",
                 "nanprod", "nanmean"):
        check_against_numpy(lambda xp, a: tuple(getattr(xp, name)(a, axis=axis) for axis in (None, 0, 1)), x,
                            check_zero_sign=False)
    # NaN wins in max/min and argmax/argmin picks the first NaN.
    assert np.isnan(tracejit.jit(jnp.max)(x))
    assert tracejit.jit(jnp.argmin)(x) == 1
    all_nan = np.full((2, 2), np.nan)
    check_against_numpy(lambda xp, a: xp.nanmax(a, axis=0), all_nan)


def test_signed_zero_max_min():
    # NumPy's max/min return the first of equal-comparing zeros; the result is zero either way.
    x = np.array([-0.0, 0.0])
    check_against_numpy(lambda xp, a: xp.sum(a), x)
    got = tracejit.jit(jnp.max)(x)
    assert got == 0.0


def test_noncontiguous_inputs():
    x = _x(np.float64, (6, 4), seed=9)
    for name, v in views(x).items():
        for fn in (lambda xp, a: xp.sum(a, axis=0), lambda xp, a: xp.max(a, axis=1), lambda xp, a: xp.argmax(a),
                   lambda xp, a: xp.mean(a, axis=-1, keepdims=True)):
            check_against_numpy(fn, v, transcendental=True)


def test_scalar_and_size_one():
    for x in (np.float64(3.5), np.array(2, np.int32), np.ones((1, 1)), np.array([True])):
        for name in ("sum", "prod", "max", "min", "mean", "all", "any", "argmax"):
            check_against_numpy(lambda xp, a: getattr(xp, name)(a), x)
    check_against_numpy(lambda xp, a: xp.sum(a, axis=0), np.float64(3.5))
    check_against_numpy(lambda xp, a: xp.sum(a, axis=-1, keepdims=True), np.float64(3.5))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_cumulative(name, axis, dtype):
    check_against_numpy(lambda xp, a: getattr(xp, name)(a, axis=axis), _x(dtype, (3, 4), seed=3),
                        transcendental=np.dtype(dtype).kind == "f")


def test_initial_and_where():
    x = _x(np.float64, (3, 4))
    check_against_numpy(lambda xp, a: xp.sum(a, initial=10.0), x, transcendental=True)
    check_against_numpy(lambda xp, a: xp.max(a, axis=0, initial=2.0), x)
    # where= masks are supported (tests/test_reduction_where.py), a traced mask too
    np.testing.assert_allclose(np.asarray(tracejit.jit(lambda a: jnp.sum(a, where=a > 0))(x)), np.sum(x, where=x > 0))


def test_axis_errors():
    x = np.ones((2, 3))
    with pytest.raises(np.exceptions.AxisError):
        tracejit.jit(lambda a: jnp.sum(a, axis=2))(x)
    with pytest.raises(ValueError, match="duplicate"):
        tracejit.jit(lambda a: jnp.sum(a, axis=(0, 0)))(x)


def test_large_and_special_values_sum():
    x = special_values(np.float64)
    finite = x[np.isfinite(x)]
    check_against_numpy(lambda xp, a: (xp.max(a), xp.min(a), xp.argmax(a), xp.argmin(a)), finite)
    ints = special_values(np.int64)
    check_against_numpy(lambda xp, a: (xp.max(a), xp.min(a), xp.sum(a), xp.argmax(a)), ints)


# Regression (issue 12, bug 1): a reduction whose reduced dims all have size 1 read the outer
# index as the row index and returned garbage under jit.
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape,axis", [((5, 1), -1), ((3, 1, 2), 1), ((1, 1), None), ((4, 1, 3, 1), (1, 3)),
                                        ((1, 4), 0), ((2, 1, 1), (1, 2)), ((1,), 0)], ids=repr)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_reductions_over_size_one_axes(dtype, shape, axis, keepdims):
    x = sample(shape, dtype, seed=3, low=-3, high=4)
    names = ("sum", "prod", "mean", "all", "any") + (("max", "min") if np.dtype(dtype).kind != "c" else ())
    check_against_numpy(lambda xp, a: tuple(getattr(xp, n)(a, axis=axis, keepdims=keepdims) for n in names), x)
    # Fused after elementwise ops, too.
    check_against_numpy(lambda xp, a: xp.sum(a * 2 + 1, axis=axis, keepdims=keepdims), x)


@pytest.mark.filterwarnings("ignore:.*compiled .* distinct signatures")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_row_sums_every_chain_split(dtype):
    # A float sum over a row of several vectors runs 2 or 4 independent vector accumulators,
    # then single vectors, then a masked tail: row lengths next to the multiples of 8 and 16 (the
    # float64 and float32 lanes of 512-bit vectors) where a split changes -- 1, 2 and 4 chains,
    # with and without single vectors and a tail -- cross each of those splits.
    f = tracejit.jit(lambda a, m: (jnp.sum(a, axis=-1), jnp.sum(jnp.where(m, a, 0.0) * a, axis=-1)))
    for n in sorted({1, 3} | {k * 8 + r for k in (1, 2, 3, 4, 5, 6, 8, 9, 12, 16, 40) for r in (-1, 0, 1)}):
        a = sample((3, n), dtype, seed=n, low=-1, high=1)
        m = np.arange(n) % 3 != 1
        s, sm = f(a, m)
        want = np.array([sum(map(float, r)) for r in a.astype(np.float64)])
        want_m = np.array([sum(float(v) * float(v) for v, k in zip(r, m) if k) for r in a.astype(np.float64)])
        tol = 8 * n * np.finfo(dtype).eps
        np.testing.assert_allclose(s, want, rtol=0, atol=tol, err_msg=f"n={n}")
        np.testing.assert_allclose(sm, want_m, rtol=0, atol=tol, err_msg=f"n={n}")
        assert s.dtype == dtype


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_extremum_of_a_0d_array_along_axis_0_is_its_element(name):
    # NumPy takes axis 0 (or -1) of a 0-d array as its one element (fuzz seed 20004509: argmax of a
    # scalar scan carry); other axes raise NumPy's AxisError.
    for axis in (0, -1):
        for keepdims in (False, True):
            f = lambda x, axis=axis, keepdims=keepdims: getattr(np, name)(x, axis=axis, keepdims=keepdims)  # noqa: E731
            for x in (np.array(3.0), np.array(np.nan), np.array(7, np.int32)):
                got, want = tracejit.jit(f)(x), f(x)
                assert np.asarray(got).shape == np.shape(want) and int(got) == int(want)
    with pytest.raises(np.exceptions.AxisError):
        tracejit.jit(lambda x: getattr(np, name)(x, axis=1))(np.array(3.0))


def test_cumulative_sum_and_prod_as_numpy_2():
    # include_initial raised TypeError (cumulative_sum was cumsum's alias), and a 2-D array
    # without axis was flattened where NumPy 2 raises.
    x = np.arange(1.0, 7.0).reshape(2, 3)
    cases = [(lambda xp, a: xp.cumulative_sum(a, axis=1, include_initial=True)),
             (lambda xp, a: xp.cumulative_prod(a, axis=0, include_initial=True, dtype=np.float32)),
             (lambda xp, a: xp.cumulative_sum(a[0].astype(np.int32))),
             (lambda xp, a: xp.cumulative_prod(a[:, :0], axis=1, include_initial=True)),
             (lambda xp, a: xp.cumulative_sum(a[0, 0]))]
    for case in cases:
        want = case(np, x)
        for got in (case(jnp, x), tracejit.jit(lambda a, case=case: case(jnp, a))(x)):
            assert np.asarray(got).dtype == want.dtype and np.asarray(got).shape == want.shape
            np.testing.assert_array_equal(np.asarray(got), want)
    with pytest.raises(ValueError, match="axis"):
        tracejit.jit(jnp.cumulative_sum)(x)


def test_cummax_flattens_without_axis_eagerly_as_under_jit_and_empty_is_zeros():
    x = np.array([[1.0, 3.0, 2.0], [0.0, 5.0, 4.0]])
    want = np.maximum.accumulate(x.ravel())
    for f in (jnp.cummax, tracejit.jit(jnp.cummax)):
        np.testing.assert_array_equal(np.asarray(f(x)), want)
    np.testing.assert_array_equal(np.asarray(jnp.cummin(x, axis=0)), np.minimum.accumulate(x, axis=0))
    # jnp.empty / empty_like are zeros, eagerly as under jit (JAX's values; no unwritten memory read)
    for f in (lambda a: (jnp.empty((2, 3)), jnp.empty_like(a)), tracejit.jit(lambda a: (jnp.empty((2, 3)), jnp.empty_like(a)))):
        for v in f(x):
            np.testing.assert_array_equal(np.asarray(v), np.zeros((2, 3)))
