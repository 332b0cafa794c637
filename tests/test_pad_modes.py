"""``jnp.pad`` on traced arrays (``jit``, ``vmap``, ``grad``) in every NumPy mode, against ``np.pad``.

The value modes -- mean, median, maximum, minimum (with ``stat_length``), linear_ramp (with
``end_values``, static or traced), reflect/symmetric with ``reflect_type='odd'`` and 'empty' --
are swept over dtypes, shapes (1-D to 3-D, size-1 axes), widths (0, narrower and wider than the
axis) with seeded loops. Integer and bool results must match NumPy bitwise (rounded means and
medians, floored ramps, wrapping ``2*edge - x``); floats to rounding.
"""
from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tests.helpers import central_difference

STAT_MODES = ["mean", "median", "maximum", "minimum"]
DTYPES = [np.float64, np.float32, np.int32, np.int8, np.uint8, np.bool_, np.complex128]
SHAPES = [(5,), (1,), (2,), (3, 4), (1, 3), (4, 1), (2, 3, 2), (1, 1, 3), (3, 1, 2)]


def _sample(rng, shape, dtype):
    d = np.dtype(dtype)
    if d.kind == "b":
        return rng.random(shape) < 0.5
    if d.kind == "u":
        return rng.integers(0, 256, shape).astype(d)
    if d == np.int8:
        return rng.integers(-128, 128, shape).astype(d)
    if d.kind == "i":
        return rng.integers(-1000, 1000, shape).astype(d)
    if d.kind == "c":
        # Few distinct real parts, so lexicographic ties on the real part occur.
        return (rng.integers(-3, 4, shape) + 1j * rng.standard_normal(shape)).astype(d)
    return rng.standard_normal(shape).astype(d) * 10


def _seed(key):
    return zlib.crc32(repr(key).encode())


def _widths(rng, nd, wide=True):
    hi = 9 if wide else 3
    return tuple((int(rng.integers(0, hi)), int(rng.integers(0, hi))) for _ in range(nd))


def _check(got, want):
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        rtol = 2e-6 if want.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * max(1.0, np.abs(want).max(initial=0)),
                                   equal_nan=True)


def _np_pad(x, w, mode, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.pad(x, w, mode, **kw)


def _jit_pad(x, w, mode, **kw):
    return tracejit.jit(lambda a: jnp.pad(a, w, mode, **kw))(x)


def _check_cases(x, cases):
    """Each (widths, mode, kwargs) case against NumPy, all padded in one jitted program: one
    compile per sample instead of one per case (the sweeps below compile ~2,500 programs)."""
    got = tracejit.jit(lambda a: [jnp.pad(a, w, mode, **kw) for w, mode, kw in cases])(x)
    for g, (w, mode, kw) in zip(got, cases):
        _check(g, _np_pad(x, w, mode, **kw))


def _stat_lengths(rng, nd):
    """None, a scalar, a pair, per-axis pairs (some longer than the axis)."""
    return [None, int(rng.integers(1, 4)), (int(rng.integers(1, 3)), int(rng.integers(1, 7))),
            tuple((int(rng.integers(1, 5)), int(rng.integers(1, 5))) for _ in range(nd))]


# --------------------------------------------------------------------------- statistic modes

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("mode", STAT_MODES)
def test_stat_modes_match_numpy(mode, dtype):
    rng = np.random.default_rng(_seed((mode, np.dtype(dtype).name)))
    for shape in SHAPES:
        x = _sample(rng, shape, dtype)
        widths = [0, 2, _widths(rng, len(shape))]
        pairs = zip(widths + [_widths(rng, len(shape))] * 4, [None] * 3 + _stat_lengths(rng, len(shape)))
        _check_cases(x, [(w, mode, {"stat_length": sl}) for w, sl in pairs])


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8])
@pytest.mark.parametrize("mode", ["mean", "median"])
def test_integer_statistics_round_half_to_even(mode, dtype):
    # Means/medians of 1.5, 2.5, 3.5 ... round half to even before the cast, as NumPy's np.around.
    x = np.array([1, 2, 3, 4, 5, 6, 8, 9], dtype)
    for sl in [(2, 2), (2, 4), (4, 2), (6, 3), (8, 8), (1, 2)]:
        _check(_jit_pad(x, (3, 2), mode, stat_length=sl), _np_pad(x, (3, 2), mode, stat_length=sl))
    x2 = np.array([[1, 2], [4, 3], [7, 9]], dtype)
    _check(_jit_pad(x2, ((1, 2), (2, 1)), mode), _np_pad(x2, ((1, 2), (2, 1)), mode))


def test_later_axes_see_earlier_padding():
    # Axis 1's statistics include the rows padded along axis 0 (NumPy pads axis by axis).
    x = np.array([[1.0, 10.0], [3.0, 5.0]])
    got = np.asarray(_jit_pad(x, ((1, 0), (0, 1)), "maximum", stat_length=((1, 1), (1, 1))))
    np.testing.assert_array_equal(got, [[1.0, 10.0, 10.0], [1.0, 10.0, 10.0], [3.0, 5.0, 5.0]])
    for mode in STAT_MODES:
        x3 = np.random.default_rng(0).standard_normal((2, 3, 4))
        w = ((1, 2), (2, 0), (3, 1))
        _check(_jit_pad(x3, w, mode, stat_length=((1, 2), (2, 1), (3, 3))),
               _np_pad(x3, w, mode, stat_length=((1, 2), (2, 1), (3, 3))))


def test_stat_length_forms_and_rounding():
    x = np.arange(1.0, 8.0) ** 2
    for sl in [1, 2.6, 3.5, (1, 9), [[2, 5]], np.array([4]), np.array([[3], ]), 100]:
        for mode in STAT_MODES:
            _check(_jit_pad(x, (4, 3), mode, stat_length=sl), _np_pad(x, (4, 3), mode, stat_length=sl))
    x2 = np.arange(12.0).reshape(3, 4) ** 2
    for sl in [((1, 2), (3, 4)), [[1], [3]], ((2, 2),)]:
        for mode in STAT_MODES:
            _check(_jit_pad(x2, 2, mode, stat_length=sl), _np_pad(x2, 2, mode, stat_length=sl))


def test_statistics_propagate_nan():
    x = np.array([1.0, np.nan, 3.0, 4.0, 5.0])
    for mode in STAT_MODES:
        for sl in [None, 2, (1, 3)]:
            _check(_jit_pad(x, 2, mode, stat_length=sl), _np_pad(x, 2, mode, stat_length=sl))


def test_mean_and_median_of_nothing_are_nan():
    # stat_length=0: NumPy's mean/median of an empty slice is NaN (a warning, not an error).
    x = np.arange(5.0)
    for mode in ["mean", "median"]:
        for sl in [0, (0, 2), (3, 0)]:
            _check(_jit_pad(x, 2, mode, stat_length=sl), _np_pad(x, 2, mode, stat_length=sl))


# --------------------------------------------------------------------------- linear_ramp

def _end_values(rng, nd, dtype):
    d = np.dtype(dtype)
    lo, hi = (0, 256) if d.kind in "ub" else (-100, 100)
    if d == np.int8:
        lo, hi = -128, 128
    if d.kind == "b":
        lo, hi = 0, 2
    ints = lambda *s: rng.integers(lo, hi, s)  # noqa: E731
    vals = [0, int(ints(1)[0]), tuple(int(v) for v in ints(2)), ints(nd, 2).tolist(), ints(1, 2), ints(nd, 1),
            np.asarray(ints(2), np.int32)]
    if d.kind in "fc":
        vals += [float(rng.standard_normal()) * 7, np.float32(2.5), (rng.standard_normal(2) * 5).tolist(),
                 (rng.standard_normal((nd, 2)) * 5).tolist()]
    if d.kind == "c":
        vals += [1 - 2j, [[1 + 1j, -2j]] * nd]
    return vals


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_linear_ramp_matches_numpy(dtype):
    rng = np.random.default_rng(_seed(("ramp", np.dtype(dtype).name)))
    for shape in SHAPES:
        x = _sample(rng, shape, dtype)
        cases = [(2, "linear_ramp", {})]
        for i, ev in enumerate(_end_values(rng, len(shape), dtype)):
            w = [3, _widths(rng, len(shape)), _widths(rng, len(shape))][i % 3]
            cases.append((w, "linear_ramp", {"end_values": ev}))
        _check_cases(x, cases)


def test_linear_ramp_integer_floor_and_zero_steps():
    # Ramps that land on integers (floor of exact values) and sides where some step is 0 (NumPy
    # then divides before multiplying, for the whole side).
    x = np.array([[7, 3, 0, -5], [10, 10, 10, 10], [1, 2, 3, 4]], np.int32)
    for ev in [0, 10, ((7, 1), (10, 4)), -3, ((0, 0), (1, 2))]:
        for w in [((3, 5), (4, 7)), ((10, 6), (12, 3)), 1]:
            _check(_jit_pad(x, w, "linear_ramp", end_values=ev), _np_pad(x, w, "linear_ramp", end_values=ev))
            _check(_jit_pad(x.astype(np.float32), w, "linear_ramp", end_values=ev),
                   _np_pad(x.astype(np.float32), w, "linear_ramp", end_values=ev))


@pytest.mark.parametrize("ev_shape", [(), (2,), (1, 2), (2, 2), (2, 1)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8])
def test_linear_ramp_traced_end_values(dtype, ev_shape):
    rng = np.random.default_rng(3)
    x = _sample(rng, (3, 4), dtype)
    ev = rng.integers(0, 100, ev_shape).astype(np.dtype(dtype) if np.dtype(dtype).kind == "u" else np.float64)
    w = ((2, 5), (4, 1))
    f = tracejit.jit(lambda a, e: jnp.pad(a, w, "linear_ramp", end_values=e))
    _check(f(x, ev), _np_pad(x, w, "linear_ramp", end_values=ev))
    # A list holding traced scalars is stacked, as an array would be.
    g = tracejit.jit(lambda a, e0, e1: jnp.pad(a, w, "linear_ramp", end_values=(e0, e1)))
    _check(g(x, np.float64(5.0), np.float64(-2.0)), _np_pad(x, w, "linear_ramp", end_values=np.array([5.0, -2.0])))


def test_linear_ramp_traced_end_values_bad_shape():
    f = tracejit.jit(lambda a, e: jnp.pad(a, 2, "linear_ramp", end_values=e))
    with pytest.raises(ValueError):
        np.pad(np.ones((3, 4)), 2, "linear_ramp", end_values=np.ones((3, 2)))
    with pytest.raises(ValueError):
        f(np.ones((3, 4)), np.ones((3, 2)))


# --------------------------------------------------------------------------- odd reflection

@pytest.mark.parametrize("reflect_type", ["odd", "even"])
@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_reflect_modes_match_numpy(dtype, mode, reflect_type):
    rng = np.random.default_rng(_seed((mode, reflect_type, np.dtype(dtype).name)))
    for shape in SHAPES:
        x = _sample(rng, shape, dtype)
        # Widths up to several periods of the axis (NumPy reflects the growing array repeatedly).
        widths = [0, 1, 4, 13, _widths(rng, len(shape)), _widths(rng, len(shape))]
        _check_cases(x, [(w, mode, {"reflect_type": reflect_type}) for w in widths])


def test_odd_reflection_many_periods_integers_wrap():
    for dtype in [np.int8, np.uint8, np.int32]:
        x = np.array([3, 100, 7, 120], dtype) if dtype != np.int32 else np.array([3, -9, 4], dtype)
        for mode in ["reflect", "symmetric"]:
            for w in [(0, 17), (23, 0), (11, 30)]:
                _check(_jit_pad(x, w, mode, reflect_type="odd"), _np_pad(x, w, mode, reflect_type="odd"))


def test_odd_reflection_floats_long_pads():
    x = np.array([0.1, 0.7, -0.3])
    for mode in ["reflect", "symmetric"]:
        _check(_jit_pad(x, (40, 25), mode, reflect_type="odd"), _np_pad(x, (40, 25), mode, reflect_type="odd"))
        x2 = np.arange(6.0).reshape(2, 3) ** 2
        w = ((5, 7), (9, 4))
        _check(_jit_pad(x2, w, mode, reflect_type="odd"), _np_pad(x2, w, mode, reflect_type="odd"))


# --------------------------------------------------------------------------- empty

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_empty_mode(dtype):
    rng = np.random.default_rng(5)
    for shape in SHAPES:
        x = _sample(rng, shape, dtype)
        w = _widths(rng, len(shape))
        got = np.asarray(_jit_pad(x, w, "empty"))
        want = np.pad(x, w, "empty")
        assert got.shape == want.shape and got.dtype == want.dtype
        inner = tuple(slice(lo, lo + n) for (lo, _), n in zip(w, shape))
        np.testing.assert_array_equal(got[inner], x)
        # Defined values: the same on every call.
        np.testing.assert_array_equal(got, np.asarray(_jit_pad(x, w, "empty")))


# --------------------------------------------------------------------------- degenerate shapes

@pytest.mark.parametrize("mode", STAT_MODES + ["linear_ramp", "empty", "reflect", "symmetric"])
def test_zero_d_and_empty_arrays(mode):
    kw = {"reflect_type": "odd"} if mode in ("reflect", "symmetric") else {}
    x0 = np.array(2.5)
    _check(_jit_pad(x0, 3, mode, **kw), np.pad(x0, 3, mode, **kw))
    for shape, w in [((0, 3), ((0, 0), (2, 1))), ((2, 0), ((1, 3), (0, 0))), ((0,), 0)]:
        x = np.zeros(shape)
        got, want = _jit_pad(x, w, mode, **kw), np.pad(x, w, mode, **kw)
        assert np.asarray(got).shape == want.shape


# --------------------------------------------------------------------------- vmap

@pytest.mark.parametrize("mode,kw", [
    ("mean", {}), ("mean", {"stat_length": (1, 3)}), ("median", {"stat_length": ((2, 1), (3, 2))}),
    ("maximum", {}), ("minimum", {"stat_length": 2}), ("linear_ramp", {"end_values": ((1, -2), (3, 4))}),
    ("reflect", {"reflect_type": "odd"}), ("symmetric", {"reflect_type": "odd"}),
])
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_vmap_matches_per_example_numpy(mode, kw, dtype):
    rng = np.random.default_rng(11)
    xs = _sample(rng, (4, 3, 5), dtype)
    w = ((2, 1), (4, 7))
    for in_axes in [0, 1]:
        batch = np.moveaxis(xs, 0, in_axes)
        got = tracejit.vmap(lambda a: jnp.pad(a, w, mode, **kw), in_axes=in_axes)(batch)
        _check(got, np.stack([_np_pad(x, w, mode, **kw) for x in xs]))
        got = tracejit.jit(tracejit.vmap(lambda a: jnp.pad(a, w, mode, **kw), in_axes=in_axes))(batch)
        _check(got, np.stack([_np_pad(x, w, mode, **kw) for x in xs]))


def test_vmap_over_traced_end_values():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((3, 4))
    evs = rng.standard_normal((5, 2))
    f = tracejit.vmap(lambda e: jnp.pad(x, ((1, 2), (3, 1)), "linear_ramp", end_values=e))
    _check(f(evs), np.stack([np.pad(x, ((1, 2), (3, 1)), "linear_ramp", end_values=e) for e in evs]))


# --------------------------------------------------------------------------- gradients

_numeric_grad = central_difference


@pytest.mark.parametrize("mode,kw", [
    ("mean", {}), ("mean", {"stat_length": ((1, 2), (3, 1))}), ("median", {}), ("median", {"stat_length": 2}),
    ("median", {"stat_length": 3}), ("maximum", {}), ("maximum", {"stat_length": (2, 1)}), ("minimum", {}),
    ("minimum", {"stat_length": ((2, 3), (1, 2))}), ("linear_ramp", {}), ("linear_ramp", {"end_values": (1.5, -2.0)}),
    ("reflect", {"reflect_type": "odd"}), ("symmetric", {"reflect_type": "odd"}), ("empty", {}),
])
def test_grad_matches_central_differences(mode, kw):
    rng = np.random.default_rng(21)
    x = rng.standard_normal((3, 4))          # distinct values: no ties for max/min/median
    w = ((2, 5), (3, 1)) if mode != "empty" else ((2, 0), (0, 3))
    cot = rng.standard_normal(np.pad(x, w, "constant").shape)
    if mode == "empty":
        cot[:2], cot[:, -3:] = 0, 0          # only the defined part
    loss = lambda a: jnp.sum(jnp.pad(a, w, mode, **kw) * cot)  # noqa: E731
    got = np.asarray(tracejit.grad(loss)(x))
    want = _numeric_grad(lambda a: float(np.sum(np.pad(a, w, mode, **kw) * cot)), x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(tracejit.jit(tracejit.grad(loss))(x)), want, rtol=1e-6, atol=1e-6)


def test_grad_wrt_end_values():
    rng = np.random.default_rng(22)
    x = rng.standard_normal((3, 4))
    w = ((2, 3), (4, 1))
    cot = rng.standard_normal(np.pad(x, w).shape)
    ev = np.array([[0.5, -1.0], [2.0, 3.0]])
    loss = lambda e: jnp.sum(jnp.pad(x, w, "linear_ramp", end_values=e) * cot)  # noqa: E731
    want = _numeric_grad(lambda e: float(np.sum(np.pad(x, w, "linear_ramp", end_values=e) * cot)), ev)
    np.testing.assert_allclose(np.asarray(tracejit.grad(loss)(ev)), want, rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("mode", STAT_MODES + ["linear_ramp", "edge", "wrap", "reflect", "symmetric"])
def test_empty_axis_cannot_be_extended(mode):
    x = np.zeros((0, 3))
    with pytest.raises(ValueError, match="can't extend empty axis 0"):
        np.pad(x, 1, mode)
    with pytest.raises(ValueError, match="can't extend empty axis 0"):
        _jit_pad(x, 1, mode)


@pytest.mark.parametrize("mode", ["maximum", "minimum"])
def test_stat_length_zero_for_extrema(mode):
    x = np.arange(5.0)
    for sl in [0, (0, 2), ((3, 0),)]:
        with pytest.raises(ValueError, match="stat_length of 0"):
            np.pad(x, 2, mode, stat_length=sl)
        with pytest.raises(ValueError, match="stat_length of 0"):
            _jit_pad(x, 2, mode, stat_length=sl)
    # NumPy checks every axis, padded or not.
    with pytest.raises(ValueError, match="stat_length of 0"):
        _jit_pad(np.ones((2, 3)), ((0, 0), (1, 1)), mode, stat_length=((0, 0), (1, 1)))


@pytest.mark.parametrize("mode", STAT_MODES)
def test_negative_or_traced_stat_length(mode):
    x = np.arange(5.0)
    with pytest.raises(ValueError, match="negative"):
        _jit_pad(x, 2, mode, stat_length=-1)
    with pytest.raises(ValueError, match="negative"):
        _jit_pad(x, 2, mode, stat_length=(1, -2))
    with pytest.raises(TypeError, match="stat_length"):
        tracejit.jit(lambda a, s: jnp.pad(a, 2, mode, stat_length=s))(x, 2)


def test_invalid_arguments():
    x = np.arange(5.0)
    for mode in ["mean", "linear_ramp", "reflect", "empty"]:
        with pytest.raises(ValueError, match="index can't contain negative values"):
            _jit_pad(x, (-1, 2), mode)
    with pytest.raises(ValueError, match="mode 'bogus' is not supported"):
        _jit_pad(x, 2, "bogus")
    for mode, kw in [("mean", {"reflect_type": "odd"}), ("linear_ramp", {"stat_length": 2}),
                     ("empty", {"constant_values": 1}), ("constant", {"end_values": 1}),
                     ("reflect", {"end_values": 1})]:
        with pytest.raises(ValueError, match="unsupported keyword arguments"):
            np.pad(x, 2, mode, **kw)
        with pytest.raises(ValueError, match="unsupported keyword arguments"):
            _jit_pad(x, 2, mode, **kw)
