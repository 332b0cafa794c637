"""Breadth of tracejit.numpy against NumPy: array manipulation (roll, pad, tile,
...), sorting/searching/counting, and the existing ufuncs/contractions/creation
functions, each eagerly and under jit."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracejit
import tracejit.numpy as jnp
from tracejit.core.errors import ConcretizationTypeError
from helpers import assert_close, normal_sample

RNG = np.random.default_rng(0)
DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex128]
REAL_DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64]


def sample(shape, dtype, rng=RNG):
    return normal_sample(shape, dtype, rng, (-5, 6))


def check(jfn, npfn, *args, rtol=1e-6, atol=0.0):
    """jnp eagerly, jnp under jit, and NumPy agree (values, shapes, dtypes)."""
    with np.errstate(all="ignore"):
        want = npfn(*args)
        eager_result = jfn(*args)
    assert_close(eager_result, want, rtol, atol)
    assert_close(tracejit.jit(jfn)(*args), want, rtol, atol)


# --------------------------------------------------------------------------- manipulation

@pytest.mark.parametrize("dtype", DTYPES)
def test_roll_flip_rot90(dtype):
    x = sample((3, 4), dtype)
    for shift, axis in [(1, None), (-2, 1), (5, 0), ((1, 2), (0, 1)), (0, 0), (7, -1)]:
        check(lambda v: jnp.roll(v, shift, axis), lambda v: np.roll(v, shift, axis), x)
    for k in range(-1, 5):
        check(lambda v: jnp.rot90(v, k), lambda v: np.rot90(v, k), x)
    check(lambda v: jnp.rot90(v, 1, (1, 0)), lambda v: np.rot90(v, 1, (1, 0)), x)
    check(lambda v: jnp.flip(v), np.flip, x)
    check(lambda v: jnp.roll(v, 2), lambda v: np.roll(v, 2), x[::2, ::-1])  # non-contiguous


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [-2, -1, 0, 1, 3])
def test_triangles_and_diagonals(dtype, k):
    x = sample((2, 3, 4), dtype)
    check(lambda v: jnp.triu(v, k), lambda v: np.triu(v, k), x)
    check(lambda v: jnp.tril(v, k), lambda v: np.tril(v, k), x)
    check(lambda v: jnp.diagonal(v, k, 1, 2), lambda v: np.diagonal(v, k, 1, 2), x)
    check(lambda v: jnp.diagonal(v, k, 2, 0), lambda v: np.diagonal(v, k, 2, 0), x)
    m = x[0]
    check(lambda v: jnp.diag(v, k), lambda v: np.diag(v, k), m)
    check(lambda v: jnp.diag(v, k), lambda v: np.diag(v, k), m[0])
    check(lambda v: jnp.diag(v, k), lambda v: np.diag(v, k), m.T[1])
    if dtype != np.bool_ and k < 3:
        check(lambda v: jnp.trace(v, k), lambda v: np.trace(v, k), m.T)
    check(lambda v: jnp.triu(v, k), lambda v: np.triu(v, k), x[0, 0])  # 1-D input


@pytest.mark.parametrize("dtype", REAL_DTYPES)
def test_repeat_tile(dtype):
    x = sample((2, 3), dtype)
    for reps, axis in [(2, None), (3, 0), (0, 1), ([1, 0, 2], 1), ([2, 1], 0), (1, -1)]:
        check(lambda v: jnp.repeat(v, reps, axis), lambda v: np.repeat(v, reps, axis), x)
    for reps in [2, (2, 1), (1, 2, 3), (0, 2)]:
        check(lambda v: jnp.tile(v, reps), lambda v: np.tile(v, reps), x)
    check(lambda v: jnp.tile(v, 3), lambda v: np.tile(v, 3), x[0, 0])  # scalar
    for reps, axis in [(2, 0), (2, -1), (3, None), ([2], 0)]:       # a 0-d operand repeats as 1-D
        check(lambda v: jnp.repeat(v, reps, axis), lambda v: np.repeat(v, reps, axis), x[0, 0])
    for axis in (1, -2):
        with pytest.raises(np.exceptions.AxisError):
            tracejit.jit(lambda v: jnp.repeat(v, 2, axis))(x[0, 0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
def test_pad_modes(dtype, mode):
    x = sample((3, 4), dtype)
    for widths in [1, (2, 0), ((1, 2), (3, 0)), ((0, 0), (7, 9)), 0]:
        check(lambda v: jnp.pad(v, widths, mode=mode), lambda v: np.pad(v, widths, mode=mode), x)
    check(lambda v: jnp.pad(v, 5, mode=mode), lambda v: np.pad(v, 5, mode=mode), x[0])
    check(lambda v: jnp.pad(v, 2, mode=mode), lambda v: np.pad(v, 2, mode=mode), x.T[::2])


def test_pad_constant_values():
    x = np.arange(6.0).reshape(2, 3)
    check(lambda v: jnp.pad(v, 1, constant_values=7), lambda v: np.pad(v, 1, constant_values=7), x)
    cv = ((1, 2), (3, 4))
    check(lambda v: jnp.pad(v, 2, constant_values=cv), lambda v: np.pad(v, 2, constant_values=cv), x)
    got = tracejit.jit(lambda v, c: jnp.pad(v, 1, constant_values=c))(x, 9.0)
    assert_close(got, np.pad(x, 1, constant_values=9.0))
    # Traced per-side and per-axis values follow NumPy's pairs rule; later axes fill the corners.
    for cv in (np.array([[1.5, -2.0], [3.0, np.inf]]), np.array([4.0, -0.0]), np.array([[5.0], [6.0]]),
               np.array([7.0])):
        for widths in (1, ((1, 0), (0, 2)), ((0, 0), (2, 1))):
            got = tracejit.jit(lambda v, c: jnp.pad(v, widths, constant_values=c))(x, cv)
            np.testing.assert_array_equal(got, np.pad(x, widths, constant_values=cv))
    widths = ((1, 2), (3, 0))
    g = tracejit.grad(lambda c: jnp.pad(x, widths, constant_values=c).sum())(np.ones((2, 2)))
    marks = np.pad(np.full(x.shape, -1), widths, constant_values=np.arange(4).reshape(2, 2))
    np.testing.assert_array_equal(g.ravel(), np.bincount(marks[marks >= 0], minlength=4))  # cells each fills
    # Every NumPy mode runs traced now (tests/test_pad_modes.py); an unknown one is NumPy's ValueError.
    assert_close(tracejit.jit(lambda v: jnp.pad(v, 1, mode="mean"))(x), np.pad(x, 1, mode="mean"))
    with pytest.raises(ValueError, match="mode 'bogus' is not supported"):
        tracejit.jit(lambda v: jnp.pad(v, 1, mode="bogus"))(x)


def test_split_and_array_split():
    x = np.arange(24).reshape(4, 6)
    for ios, axis in [(2, 0), (3, 1), ([1, 4], 1), ([-2], 0), ([2, 2, 9], 1)]:
        check(lambda v: jnp.split(v, ios, axis), lambda v: np.split(v, ios, axis), x)
    for ios in [4, 5, [1, 3]]:
        check(lambda v: jnp.array_split(v, ios, 1), lambda v: np.array_split(v, ios, 1), x)
    check(lambda v: jnp.hsplit(v, 2), lambda v: np.hsplit(v, 2), x)
    check(lambda v: jnp.vsplit(v, 2), lambda v: np.vsplit(v, 2), x)
    with pytest.raises(ValueError, match="equal division"):
        tracejit.jit(lambda v: jnp.split(v, 5, 1))(x)


def test_meshgrid_mgrid_ogrid():
    a, b, c = np.arange(3.0), np.arange(4, dtype=np.int32), np.array([1.0, 2.0])
    for indexing in ["xy", "ij"]:
        for sparse in [False, True]:
            check(lambda *v: jnp.meshgrid(*v, indexing=indexing, sparse=sparse),
                  lambda *v: np.meshgrid(*v, indexing=indexing, sparse=sparse), a, b, c)
    check(lambda v: jnp.meshgrid(v), lambda v: np.meshgrid(v), a)
    assert_close(jnp.mgrid[0:3, 0:4:2], np.mgrid[0:3, 0:4:2])
    assert_close(jnp.ogrid[0:1:5j, 0:2], np.ogrid[0:1:5j, 0:2])
    got = tracejit.jit(lambda v: v + jnp.mgrid[0:2, 0:3][0])(np.ones((2, 3)))
    assert_close(got, np.ones((2, 3)) + np.mgrid[0:2, 0:3][0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_diff_cumsum_cumprod(dtype):
    x = sample((3, 5), dtype)
    for n, axis in [(1, -1), (2, 0), (0, 1), (4, 1), (6, 1)]:
        check(lambda v: jnp.diff(v, n, axis), lambda v: np.diff(v, n, axis), x)
    if dtype != np.bool_:
        check(lambda v: jnp.diff(v, prepend=0, append=x[:, :1]),
              lambda v: np.diff(v, prepend=0, append=x[:, :1]), x)
        check(lambda v: jnp.ediff1d(v, to_begin=[1, 2]), lambda v: np.ediff1d(v, to_begin=[1, 2]), x)
    for axis in [None, 0, 1]:
        check(lambda v: jnp.cumsum(v, axis), lambda v: np.cumsum(v, axis), x, rtol=1e-5)
        check(lambda v: jnp.cumprod(v, axis), lambda v: np.cumprod(v, axis), x, rtol=1e-5)


def test_cross_and_append():
    a, b = sample((4, 3), np.float64), sample((4, 3), np.float64)
    check(jnp.cross, np.cross, a, b)
    check(jnp.cross, np.cross, a[0], b)
    check(lambda u, v: jnp.cross(u, v, axis=0), lambda u, v: np.cross(u, v, axis=0), a.T, b.T)
    ai, bi = sample((2, 3), np.int32), sample((2, 3), np.int64)
    check(jnp.cross, np.cross, ai, bi)
    check(lambda u, v: jnp.append(u, v), np.append, a, b)
    check(lambda u, v: jnp.append(u, v, axis=1), lambda u, v: np.append(u, v, axis=1), a, b)


def test_trace_of_empty_diagonal():
    # An offset past the matrix gives an empty diagonal, whose sum is 0.
    x = np.arange(12.0).reshape(4, 3)
    check(lambda v: jnp.trace(v, 3), lambda v: np.trace(v, 3), x)
    check(lambda v: jnp.diagonal(v, -5), lambda v: np.diagonal(v, -5), x)


def test_trace_next_to_another_reduction():
    x = np.array([3.0, 1.0, 2.0, 1.0])
    check(lambda v: (jnp.min(v), jnp.trace(jnp.outer(v, v))), lambda v: (np.min(v), np.trace(np.outer(v, v))), x)


# --------------------------------------------------------------------------- sorting

SORT_DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex64]


def with_specials(x):
    x = x.copy()
    if x.dtype.kind in "fc":
        flat = x.reshape(-1)
        flat[::4] = np.nan
        flat[1::7] = np.inf
        flat[2::9] = -np.inf
        flat[3::5] = -0.0
    return x


@pytest.mark.parametrize("dtype", SORT_DTYPES)
def test_sort_argsort(dtype):
    x = with_specials(sample((4, 7), dtype))
    x[1, :3] = x[1, 3:6]  # ties
    for axis in [-1, 0, None]:
        check(lambda v: jnp.sort(v, axis), lambda v: np.sort(v, axis), x)
        check(lambda v: jnp.argsort(v, axis), lambda v: np.argsort(v, axis, kind="stable"), x)
    check(lambda v: jnp.sort(v), np.sort, x.T[::2])
    check(lambda v: jnp.sort(v, axis=0), lambda v: np.sort(v, axis=0), x[:0])
    check(lambda v: jnp.argsort(v, axis=None), lambda v: np.argsort(v, axis=None), x[0, 0])


def test_sort_nan_last_and_descending():
    x = np.array([3.0, np.nan, -1.0, np.inf, np.nan, -np.inf, 0.0, -0.0, 3.0], np.float32)
    got = tracejit.jit(jnp.sort)(x)
    assert_close(got, np.sort(x))
    assert np.isnan(got[-2:]).all()
    idx = tracejit.jit(lambda v: jnp.argsort(v, descending=True))(x)
    assert np.isnan(x[idx[:2]]).all()
    # Descending keeps ties in their original order (stable), as jax.numpy.
    assert idx.tolist()[2:5] == [3, 0, 8]
    assert_close(tracejit.jit(lambda v: jnp.sort(v, descending=True))(x), np.sort(x)[::-1])


@given(st.lists(st.integers(-3, 3), min_size=0, max_size=20))
@settings(max_examples=25, deadline=None)
def test_argsort_stable_hypothesis(values):
    x = np.array(values, np.int32)
    assert_close(tracejit.jit(jnp.argsort)(x), np.argsort(x, kind="stable"))


def test_lexsort_partition():
    a, b = np.array([1, 5, 1, 4, 3, 4, 4]), np.array([9, 4, 0, 4, 0, 2, 1])
    check(lambda u, v: jnp.lexsort((u, v)), lambda u, v: np.lexsort((u, v)), a, b)
    x = sample((10,), np.float64)
    for kth in [0, 4, 9]:
        for fn in (jnp.partition, tracejit.jit(lambda v, k=kth: jnp.partition(v, k))):
            out = np.asarray(fn(x, kth) if fn is jnp.partition else fn(x))
            assert out[kth] == np.sort(x)[kth] and (out[:kth] <= out[kth]).all() and (out[kth:] >= out[kth]).all()
        idx = np.asarray(tracejit.jit(lambda v: jnp.argpartition(v, kth))(x))
        assert x[idx][kth] == np.sort(x)[kth]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_digitize(dtype, side):
    a = np.sort(sample((9,), dtype))
    v = with_specials(sample((3, 4), dtype))
    check(lambda s, q: jnp.searchsorted(s, q, side=side), lambda s, q: np.searchsorted(s, q, side=side), a, v)
    check(lambda s, q: jnp.searchsorted(s, q, side=side), lambda s, q: np.searchsorted(s, q, side=side), a, v[0, 0])
    if dtype == np.float64:
        a = with_specials(a)
        a.sort()
        check(lambda s, q: jnp.searchsorted(s, q, side=side), lambda s, q: np.searchsorted(s, q, side=side), a, v)
    bins = np.array([-1.0, 0.0, 0.5, 2.0])
    for bb in (bins, bins[::-1]):
        for right in (False, True):
            check(lambda q, b: jnp.digitize(q, b, right), lambda q, b: np.digitize(q, b, right), v, bb)


# --------------------------------------------------------------------------- nonzero / unique / counting

@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_family_with_size(dtype):
    x = sample((3, 4), dtype)
    x.reshape(-1)[::3] = 0
    n = int(np.count_nonzero(x))
    assert_close(jnp.nonzero(x), np.nonzero(x))
    for size in [n, n + 3, max(n - 2, 0)]:
        want = tuple(i[:size] for i in np.nonzero(x))
        pad = size - want[0].size
        want_f = tuple(np.concatenate([w, np.full(pad, -1, np.int64)]) for w in want)
        want_0 = tuple(np.concatenate([w, np.zeros(pad, np.int64)]) for w in want)
        check(lambda v: jnp.nonzero(v, size=size, fill_value=-1), lambda v: want_f, x)
        check(lambda v: jnp.nonzero(v, size=size), lambda v: want_0, x)
        check(lambda v: jnp.argwhere(v, size=size, fill_value=-1), lambda v: np.stack(want_f, 1), x)
        check(lambda v: jnp.flatnonzero(v, size=size, fill_value=-1),
              lambda v: np.concatenate([np.flatnonzero(v)[:size], np.full(pad, -1, np.int64)]), x)
        check(lambda v: jnp.where(v, size=size, fill_value=-1), lambda v: want_f, x)
    check(jnp.count_nonzero, np.count_nonzero, x)
    check(lambda v: jnp.count_nonzero(v, axis=0), lambda v: np.count_nonzero(v, axis=0), x)
    # Per-axis fill values, and a traced fill value.
    got = tracejit.jit(lambda v, f: jnp.nonzero(v, size=n + 1, fill_value=(f, -f)))(x, 7)
    assert got[0][-1] == 7 and got[1][-1] == -7


def test_data_dependent_shapes_raise_under_jit():
    x = np.array([0, 1, 2, 2])
    cases = [(jnp.nonzero, "size="), (jnp.argwhere, "size="), (jnp.flatnonzero, "size="),
             (jnp.unique, "size="), (jnp.bincount, "length="), (lambda v: jnp.where(v), "size=")]
    for fn, hint in cases:
        with pytest.raises(ConcretizationTypeError, match=hint):
            tracejit.jit(fn)(x)
    with pytest.raises(ValueError, match="0d"):
        tracejit.jit(lambda v: jnp.nonzero(v, size=1))(np.float64(1.0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique(dtype):
    x = sample((3, 5), dtype)
    if x.dtype.kind in "fc":
        x = with_specials(x)
    flags = dict(return_index=True, return_inverse=True, return_counts=True)
    assert_close(jnp.unique(x, **flags), np.unique(x, **flags))
    vals, index, inverse, counts = np.unique(x, **flags)
    n = vals.size
    for size in [n, n + 2, max(n - 1, 1)]:
        k = min(size, n)

        def padded(a, fill):
            return np.concatenate([a[:k], np.full(size - k, fill, a.dtype)])

        check(lambda v: jnp.unique(v, size=size), lambda v: padded(vals, vals[0]), x)
        check(lambda v: jnp.unique(v, size=size, fill_value=0), lambda v: padded(vals, 0), x)
        check(lambda v: jnp.unique(v, size=size, **flags),
              lambda v: (padded(vals, vals[0]), padded(index, index[0]), inverse, padded(counts, 0)), x)


def test_unique_nan_handling():
    x = np.array([np.nan, 1.0, np.nan, 1.0, -0.0, 0.0])
    for equal_nan in (True, False):
        want = np.unique(x, equal_nan=equal_nan)
        got = tracejit.jit(lambda v: jnp.unique(v, size=want.size, equal_nan=equal_nan))(x)
        assert_close(got, want)


def test_bincount():
    x = np.array([0, 1, 1, 3, 2, 1, 7], np.int32)
    w = np.linspace(0, 1, 7, dtype=np.float32)
    assert_close(jnp.bincount(x), np.bincount(x))
    check(lambda v: jnp.bincount(v, length=8), lambda v: np.bincount(v, minlength=8), x)
    check(lambda v, u: jnp.bincount(v, u, length=8), lambda v, u: np.bincount(v, u, minlength=8), x, w)
    check(lambda v: jnp.bincount(v, length=10), lambda v: np.bincount(v, minlength=10), x)
    # As jax.numpy: values >= length are dropped.
    check(lambda v: jnp.bincount(v, length=3), lambda v: np.bincount(v)[:3], x)
    check(lambda v: jnp.bincount(v, length=3), lambda v: np.zeros(3, np.int64), x[:0])
    check(lambda v: jnp.bincount(v, length=2), lambda v: np.bincount(v, minlength=2), np.array([True, False, True]))
    with pytest.raises(TypeError, match="cannot cast"):
        tracejit.jit(lambda v: jnp.bincount(v, length=2))(np.ones(3))


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
def test_histogram(dtype):
    x = sample((50,), dtype) * 3
    w = np.abs(sample((50,), np.float32))
    for kw in [dict(), dict(bins=7), dict(bins=5, range=(-2, 2)), dict(bins=[-3, -1, 0, 0.5, 4]),
               dict(bins=4, density=True), dict(bins=6, range=(-1.0, 1.0), density=True)]:
        check(lambda v: jnp.histogram(v, **kw), lambda v: np.histogram(v, **kw), x)
        check(lambda v, u: jnp.histogram(v, weights=u, **kw), lambda v, u: np.histogram(v, weights=u, **kw), x, w,
              rtol=1e-5)
    check(lambda v: jnp.histogram(v, bins=3), lambda v: np.histogram(v, bins=3), np.full(4, 2, dtype))  # min == max
    check(lambda v: jnp.histogram(v, bins=3), lambda v: np.histogram(v, bins=3), x[:0])
    check(lambda v: jnp.histogram_bin_edges(v, bins=4), lambda v: np.histogram_bin_edges(v, bins=4), x)
    if dtype != np.int32:
        y = with_specials(x.astype(dtype))
        check(lambda v: jnp.histogram(v, bins=4, range=(-1, 1)), lambda v: np.histogram(v, bins=4, range=(-1, 1)), y)


# --------------------------------------------------------------------------- existing elementwise / ufuncs

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_binary_ufuncs(dtype):
    x = with_specials(sample((4, 5), dtype) * 3)
    y = with_specials(sample((4, 5), dtype))[::-1]
    for name in ["copysign", "hypot", "arctan2", "mod", "floor_divide", "remainder", "logaddexp", "fmod"]:
        check(getattr(jnp, name), getattr(np, name), x, y, rtol=2e-6)
    check(jnp.divmod, np.divmod, x, y)
    check(lambda a: jnp.nan_to_num(a), np.nan_to_num, x)
    check(lambda a: jnp.nan_to_num(a, nan=1.0, posinf=2.0, neginf=-2.0),
          lambda a: np.nan_to_num(a, nan=1.0, posinf=2.0, neginf=-2.0), x)
    for name in ["isnan", "isinf", "isfinite"]:
        check(getattr(jnp, name), getattr(np, name), x)
    check(lambda a, b: jnp.isclose(a, b, equal_nan=True), lambda a, b: np.isclose(a, b, equal_nan=True), x, x + 1e-9)
    check(jnp.isclose, np.isclose, x, y)
    check(jnp.allclose, np.allclose, x[1:2, 1:2], x[1:2, 1:2])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_ufuncs(dtype):
    x = sample((3, 4), dtype) * 7
    y = sample((3, 4), dtype)
    y[y == 0] = 3
    for name in ["mod", "floor_divide", "remainder", "bitwise_and", "bitwise_or", "bitwise_xor"]:
        check(getattr(jnp, name), getattr(np, name), x, y)
    check(jnp.divmod, np.divmod, x, y)
    check(jnp.invert, np.invert, x)
    s = np.abs(y) % 5
    check(jnp.left_shift, np.left_shift, x, s.astype(dtype))
    check(jnp.right_shift, np.right_shift, x, s.astype(dtype))
    check(lambda a: jnp.left_shift(a, 2), lambda a: np.left_shift(a, 2), x)
    check(lambda a: jnp.bitwise_and(a, True), lambda a: np.bitwise_and(a, True), x)


def test_ufunc_methods():
    a = sample((3, 4), np.float64)
    b = sample((5,), np.int32)
    check(jnp.add.outer, np.add.outer, a, b)
    check(jnp.multiply.outer, np.multiply.outer, b, b)
    for axis in [0, 1, None, (0, 1)]:
        check(lambda v: jnp.multiply.reduce(v, axis=axis), lambda v: np.multiply.reduce(v, axis=axis), a)
        check(lambda v: jnp.maximum.reduce(v, axis=axis), lambda v: np.maximum.reduce(v, axis=axis), a)
    check(lambda v: jnp.add.reduce(v, axis=1, keepdims=True), lambda v: np.add.reduce(v, axis=1, keepdims=True), a)
    check(lambda v: jnp.add.reduce(v), lambda v: np.add.reduce(v), b)
    for axis in [0, 1]:
        check(lambda v: jnp.add.accumulate(v, axis=axis), lambda v: np.add.accumulate(v, axis=axis), a)
        check(lambda v: jnp.maximum.accumulate(v, axis=axis), lambda v: np.maximum.accumulate(v, axis=axis), a)
    check(lambda v: jnp.add.accumulate(v), lambda v: np.add.accumulate(v), b)
    check(lambda v: jnp.multiply.accumulate(v), lambda v: np.multiply.accumulate(v), b)


def _logsumexp_ref(a, axis=None, b=None, keepdims=False, return_sign=False):
    """scipy.special.logsumexp's algorithm in plain NumPy (scipy is not a dependency)."""
    a = np.asarray(a)
    a = a if a.dtype.kind == "f" else a.astype(np.float64)
    if b is not None:
        a = np.where(np.asarray(b) == 0, -np.inf, a)
    m = np.max(a, axis=axis, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0).astype(a.dtype)
    with np.errstate(all="ignore"):
        t = np.exp(a - m)
        if b is not None:
            t = t * b
        s = np.sum(t, axis=axis, keepdims=keepdims)
        mm = m if keepdims else m.reshape(np.shape(s))
        if return_sign:
            return np.log(np.abs(s)) + mm, np.sign(s)
        return np.log(s) + mm


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
def test_logsumexp_matches_reference(dtype):
    x = sample((3, 4), dtype) * 10
    b = sample((3, 4), np.float64)
    for axis in [None, 0, 1, (0, 1)]:
        for keepdims in (False, True):
            check(lambda v: jnp.logsumexp(v, axis=axis, keepdims=keepdims),
                  lambda v: _logsumexp_ref(v, axis=axis, keepdims=keepdims), x, rtol=1e-5)
        check(lambda v, w: jnp.logsumexp(v, axis=axis, b=w, return_sign=True),
              lambda v, w: _logsumexp_ref(v, axis=axis, b=w, return_sign=True), x, b, rtol=1e-5)
    # Hand-checked values: log(e^0 + e^0) = log 2; all -inf stays -inf; inf dominates; NaN propagates.
    assert np.isclose(jnp.logsumexp(np.zeros(2)), np.log(2))
    assert tracejit.jit(jnp.logsumexp)(np.array([-np.inf, -np.inf])) == -np.inf
    assert tracejit.jit(jnp.logsumexp)(np.array([np.inf, 1.0])) == np.inf
    assert np.isnan(tracejit.jit(jnp.logsumexp)(np.array([np.nan, 1.0])))
    assert np.isclose(tracejit.jit(jnp.logsumexp)(np.array([1000.0, 1000.0])), 1000 + np.log(2))
    assert "logsumexp" in jnp.__dict__


# --------------------------------------------------------------------------- contractions / creation / complex

@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64, np.complex128])
def test_contractions(dtype):
    a, b = sample((2, 3, 4), dtype), sample((4, 3, 2), dtype)
    check(lambda u, v: jnp.tensordot(u, v, 1), lambda u, v: np.tensordot(u, v, 1), a, b, rtol=1e-5)
    check(lambda u, v: jnp.tensordot(u, v, ([1, 2], [1, 0])), lambda u, v: np.tensordot(u, v, ([1, 2], [1, 0])),
          a, b, rtol=1e-5)
    check(jnp.kron, np.kron, a[0], b[0], rtol=1e-5)
    check(jnp.kron, np.kron, a[0, 0], b[:, 0], rtol=1e-5)
    check(jnp.vdot, np.vdot, a, b.transpose(2, 1, 0), rtol=1e-5)
    check(jnp.inner, np.inner, a, b[:, :, 0].T, rtol=1e-5)
    check(jnp.inner, np.inner, a[0, 0], b[:, 0, 0], rtol=1e-5)


def test_creation():
    for args in [(0, 1, 5), (1.0, 2.0, 4, False), (-1, 1, 1), (0, 1, 0)]:
        check(lambda: jnp.linspace(*args), lambda: np.linspace(*args))
        check(lambda: jnp.logspace(*args), lambda: np.logspace(*args))
    check(lambda: jnp.geomspace(1, 1000, 4), lambda: np.geomspace(1, 1000, 4))
    check(lambda a, b: jnp.linspace(a, b, 5), lambda a, b: np.linspace(a, b, 5), np.float32(0), np.float32(2))
    check(lambda a: jnp.full_like(a, 3), lambda a: np.full_like(a, 3), np.ones((2, 3), np.int32))
    check(lambda a: jnp.full_like(a, 0.5, dtype=np.float32), lambda a: np.full_like(a, 0.5, dtype=np.float32),
          np.ones(3))
    check(lambda: jnp.identity(3), lambda: np.identity(3))
    check(lambda: jnp.identity(2, dtype=np.int32), lambda: np.identity(2, dtype=np.int32))
    for k in (-1, 0, 2):
        check(lambda: jnp.tri(3, 4, k), lambda: np.tri(3, 4, k))
    # creation inside a traced function (not a constant)
    check(lambda x: x + jnp.tri(2, 3, dtype=np.int32), lambda x: x + np.tri(2, 3, dtype=np.int32),
          np.ones((2, 3), np.int32))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_parts(dtype):
    z = sample((3, 4), dtype)
    z[0, 0] = complex(-1, 0)
    z[0, 1] = complex(-0.0, -0.0)
    for name in ["real", "imag", "conj", "abs", "angle", "conjugate", "absolute"]:
        check(getattr(jnp, name), getattr(np, name), z, rtol=2e-6)
    check(lambda v: jnp.angle(v, deg=True), lambda v: np.angle(v, deg=True), z, rtol=2e-6)
    check(jnp.real, np.real, z.real)
    check(jnp.imag, np.imag, z.real)
