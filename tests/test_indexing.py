"""Advanced indexing, x.at[...] updates, take/take_along_axis/put_along_axis and
lax.dynamic_slice & co., against NumPy (with JAX's out-of-bounds rules)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.numpy.advanced_indexing import IndexUpdateRef

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex128]
IDX_DTYPES = [np.int32, np.int64]


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    d = np.dtype(dtype)
    if d.kind == "b":
        return rng.random(shape) > 0.5
    if d.kind in "iu":
        return rng.integers(-9, 10, size=shape).astype(d)
    if d.kind == "c":
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(d)
    return rng.normal(size=shape).astype(d)


def assert_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


def at(x, idx):
    """``x.at[idx]`` that also works on NumPy arrays (the eager path)."""
    return IndexUpdateRef(x, idx)


# --------------------------------------------------------------------------- getitem

X = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
GETITEM_CASES = [
    ([1, 0, 1],),
    (np.array([[0, 1], [1, 0]]),),
    (slice(None), [2, 0, 2]),
    ([0, 1], [2, 1]),
    ([0, 1], slice(None), [1, 2]),                    # separated: broadcast dims to the front
    (slice(None), [0, 2], slice(None), [1, 3]),       # separated by a slice
    (slice(None), [0, 2], [1, 3]),                    # adjacent: stay in place
    (Ellipsis, [4, 0]),
    ([1], Ellipsis, [0]),                             # separated by an Ellipsis
    (None, [1], None, slice(1, 3), [0]),
    (slice(None), [1], None, [0]),                    # separated by None
    (1, slice(None), [0, 1]),                         # int + array, separated -> front
    (slice(None), 1, slice(None), [0, 1]),
    (slice(None), [[0], [1]], [1, 2]),
    (slice(None, None, -1), [0, 2], slice(1, None, 2)),
    (-1, [-1, -3], slice(None, 2)),
    ([],),
    (slice(None), np.array([], np.int64), 0),
    (X[..., 0] > 30,),                                # concrete boolean masks
    (np.array([True, False]), slice(None), 0),
    (slice(None), np.array([True, False, True]), [1, 3]),
    (True,),
    (False, 1),
    (Ellipsis, None),
    (np.array(1), [0, 1]),                            # 0-d integer array
    (np.int32(1), np.array([[0, 1, 2]], np.int32)),
]


def test_getitem_concrete_index_matches_numpy():
    outs = tracejit.jit(lambda x: [x[idx] for idx in GETITEM_CASES])(X)
    for idx, got in zip(GETITEM_CASES, outs):
        try:
            assert_same(got, X[idx])
        except AssertionError as e:
            raise AssertionError(f"index {idx!r}: {e}") from None


def _split_traced(idx):
    """Integer array entries become traced arguments; returns (template, arrays)."""
    arrays, template = [], []
    for e in idx:
        if isinstance(e, (list, np.ndarray)) and np.asarray(e).dtype != bool and np.ndim(e) > 0:
            template.append(len(arrays))
            arrays.append(np.asarray(e, dtype=np.int64))
        else:
            template.append(e if not isinstance(e, int) else ("int", e))
    return template, arrays


def _rebuild(template, arrays):
    return tuple(arrays[t] if isinstance(t, int) else (t[1] if isinstance(t, tuple) and t and t[0] == "int" else t)
                 for t in template)


TRACEABLE_CASES = [c for c in GETITEM_CASES if any(
    isinstance(e, (list, np.ndarray)) and np.asarray(e).dtype != bool and np.ndim(e) > 0 for e in c)]


@pytest.mark.parametrize("idx_dtype", IDX_DTYPES)
def test_getitem_traced_index_matches_numpy(idx_dtype):
    splits = [_split_traced(c) for c in TRACEABLE_CASES]
    arrays = [[a.astype(idx_dtype) for a in arrs] for _, arrs in splits]

    def f(x, arrays):
        return [x[_rebuild(t, arrs)] for (t, _), arrs in zip(splits, arrays)]
    for (t, _), arrs, got in zip(splits, arrays, tracejit.jit(f)(X, arrays)):
        assert_same(got, X[_rebuild(t, arrs)])


@pytest.mark.parametrize("dtype,layout", [(d, "contiguous") for d in DTYPES]
                         + [(d, lay) for d in (np.bool_, np.float64) for lay in ("strided", "transposed")])
def test_getitem_dtypes_and_layouts(dtype, layout):
    base = sample((6, 5), dtype)
    x = {"contiguous": base, "strided": base[::2, ::-1], "transposed": base.T}[layout]
    idx = np.array([2, 0, -1, 1, 2])
    f = tracejit.jit(lambda x, i: (x[i], x[:, i[:2]], x[i[:2], 1:], x[1, i]))
    for got, want in zip(f(x, idx), (x[idx], x[:, idx[:2]], x[idx[:2], 1:], x[1, idx])):
        assert_same(got, want)


def test_index_dtype_is_kept_in_the_program():
    text = str(tracejit.make_jaxpr(lambda x, i: x[i])(np.zeros(4), np.array([1, 2], np.int32)))
    assert "gather" in text and "i32[2,1]" in text
    text64 = str(tracejit.make_jaxpr(lambda x, i: x[i])(np.zeros(4), np.array([1, 2], np.int64)))
    assert "i64[2,1]" in text64


@pytest.mark.parametrize("idx_dtype", IDX_DTYPES)
def test_traced_scalar_index_uses_dynamic_slice(idx_dtype):
    x = sample((4, 5, 3), np.float64)
    f = tracejit.jit(lambda x, i, j: x[i, 1:, j])
    assert "dynamic_slice" in str(tracejit.make_jaxpr(lambda x, i, j: x[i, 1:, j])(x, idx_dtype(1), idx_dtype(2)))
    for i, j in [(0, 0), (3, 2), (-1, -3), (-4, 1)]:
        assert_same(f(x, idx_dtype(i), idx_dtype(j)), x[i, 1:, j])
    # Out of range (after wrapping negatives once) clamps, as JAX's gather.
    assert_same(f(x, idx_dtype(7), idx_dtype(-9)), x[3, 1:, 0])
    assert_same(tracejit.jit(lambda x, i: x[i])(x, idx_dtype(2)), x[2])


def test_getitem_out_of_bounds_clamps_and_fill_mode():
    x = np.arange(5.0)
    idx = np.array([0, 4, 5, 100, -1, -5, -6, -100])
    clamped = x[np.clip(np.where(idx < 0, idx + 5, idx), 0, 4)]
    assert_same(tracejit.jit(lambda x, i: x[i])(x, idx), clamped)
    assert_same(tracejit.jit(lambda x: x[idx])(x), clamped)           # concrete index array, too
    valid = (idx >= -5) & (idx < 5)
    want = np.where(valid, clamped, np.nan)
    f = tracejit.jit(lambda x, i: x.at[i].get(mode="fill"))
    assert_same(f(x, idx), want)
    assert_same(at(x, idx).get(mode="fill"), want)
    assert_same(at(x, idx).get(mode="fill", fill_value=-7.0), np.where(valid, clamped, -7.0))
    xi = np.arange(5, dtype=np.int32)
    assert_same(at(xi, idx).get(mode="fill"), np.where(valid, xi[np.clip(np.where(idx < 0, idx + 5, idx), 0, 4)],
                                                      np.iinfo(np.int32).min).astype(np.int32))


def test_static_int_out_of_bounds_raises():
    with pytest.raises(IndexError):
        tracejit.jit(lambda x: x[5, [0]])(np.zeros((3, 2)))
    with pytest.raises(IndexError):
        tracejit.jit(lambda x: x.at[3].set(1.0))(np.zeros(3))


def test_traced_boolean_mask_getitem_raises():
    with pytest.raises(tracejit.NonConcreteBooleanIndexError, match="jnp.where"):
        tracejit.jit(lambda x: x[x > 0])(np.arange(3.0))
    with pytest.raises(tracejit.NonConcreteBooleanIndexError):
        tracejit.jit(lambda x: x.at[x > 0].get())(np.arange(3.0))
    with pytest.raises(IndexError):
        tracejit.jit(lambda x: x[np.array([True, False])])(np.arange(3.0))   # wrong mask length


def test_invalid_indices_raise():
    with pytest.raises(IndexError):
        tracejit.jit(lambda x: x[np.array([0.5])])(np.zeros(3))
    with pytest.raises(IndexError):
        tracejit.jit(lambda x: x[[0], [0]])(np.zeros(3))
    with pytest.raises(tracejit.ConcretizationTypeError):   # traced slice bounds: use lax.dynamic_slice
        tracejit.jit(lambda x, i: x[i:])(np.zeros(3), 1)


# --------------------------------------------------------------------------- x.at[idx] updates

def np_update(x, idx, v, kind):
    """NumPy reference: in-bounds indices only (the caller filters)."""
    y = np.array(x, copy=True)
    if kind == "set":
        y[idx] = v
    elif kind == "add":
        np.add.at(y, idx, v)
    elif kind == "multiply":
        np.multiply.at(y, idx, v)
    elif kind == "min":
        np.minimum.at(y, idx, v)
    elif kind == "max":
        np.maximum.at(y, idx, v)
    elif kind == "subtract":
        np.subtract.at(y, idx, v)
    return y


UPDATE_CASES = [
    np.array([0, 2, 2, 5]),                           # repeated index
    (slice(1, 3), [0, 2]),
    ([0, 2], slice(None), [1, 1]),                    # separated advanced indices
    (slice(None), [[2], [0]], [1, 0, 1]),             # adjacent, broadcast
    (slice(None), 1),
    (Ellipsis, [2, 0, 2]),
    (1, slice(None, None, 2)),
    (np.array([[0, 1], [1, 1]]), slice(1, 3)),
    (slice(None, None, -2), [1]),
    (np.arange(6) % 2 == 0,),                         # concrete boolean mask
    ([],),
    (None, 2),
    (slice(None), [3, 3, 0], None, 1),
]


KINDS = ["set", "add", "multiply", "min", "max", "subtract"]


@pytest.mark.parametrize("idx", UPDATE_CASES, ids=lambda c: repr(c)[:40])
def test_updates_match_numpy(idx):
    x = sample((6, 4, 3), np.float64, seed=1)
    v = sample(x[idx].shape, np.float64, seed=2)
    # A scalar and a trailing-axes row broadcast to the indexed shape.
    row = (v.reshape(-1, v.shape[-1])[0] if v.size else np.ones(v.shape[-1])) if v.ndim else v
    values = [v, 1.5, row]
    f = tracejit.jit(lambda x, v, row: [getattr(x.at[idx], k)(u) for k in KINDS for u in (v, 1.5, row)])
    got = iter(f(x, v, row))
    for kind in KINDS:
        for u in values:
            want = np_update(x, idx, u, kind)
            assert_same(next(got), want)
        assert_same(getattr(at(x, idx), kind)(v), np_update(x, idx, v, kind))   # eager


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idx_dtype", IDX_DTYPES)
def test_updates_dtypes(dtype, idx_dtype):
    x = sample((5, 3), dtype, seed=3)
    v = sample((4, 3), dtype, seed=4)
    idx = np.array([4, 0, 4, -1], idx_dtype)
    kinds = ["set", "add", "max", "multiply"] + (["min"] if dtype != np.complex128 else [])
    f = tracejit.jit(lambda x, i, v: [getattr(x.at[i], kind)(v) for kind in kinds])
    xs, vs = np.asfortranarray(x)[::-1], v[:, ::-1]          # non-contiguous operand and updates
    for xx, vv in [(x, v), (xs, vs)]:
        for kind, got in zip(kinds, f(xx, idx, vv)):
            want = np_update(xx, np.where(idx < 0, idx + 5, idx), vv, kind)
            assert_same(got, want)
            assert_same(getattr(at(xx, idx), kind)(vv), want)


def test_set_with_repeated_indices_is_deterministic_last_wins():
    idx = np.array([1, 3, 1, 1, 3])
    v = np.array([10., 20., 30., 40., 50.])
    want = np.array([0., 40., 0., 50.])
    f = tracejit.jit(lambda x, i, v: x.at[i].set(v))
    assert_same(f(np.zeros(4), idx, v), want)
    assert_same(at(np.zeros(4), idx).set(v), want)


def test_divide_power_apply():
    x = np.array([1., 2., 3., 4.])
    idx = np.array([0, 2, 2])
    f = tracejit.jit(lambda x: (x.at[idx].divide(2.0), x.at[idx].power(2.0), x.at[idx].apply(lambda t: t * 3 + 1)))
    d, p, a = f(x)
    np.testing.assert_array_equal(d, [0.5, 2., 0.75, 4.])
    np.testing.assert_array_equal(p, [1., 2., 81., 4.])
    np.testing.assert_array_equal(a, [4., 2., 31., 4.])           # applied once per occurrence, like ufunc.at
    ref = x.copy()
    np.negative.at(ref, idx)
    assert_same(tracejit.jit(lambda x, i: x.at[i].apply(jnp.negative))(x, idx), ref)
    assert_same(at(x, idx).apply(jnp.negative), ref)
    # Integer divide is true division (as JAX): the result is float.
    assert_same(at(np.array([4, 6]), 1).divide(4), np.array([4., 1.5]))


def test_update_out_of_bounds_drops_or_clips():
    x = np.zeros(5)
    idx = np.array([0, 5, -1, -6, 100, 2])
    v = np.arange(1., 7.)
    valid = (idx >= -5) & (idx < 5)
    norm = np.where(idx < 0, idx + 5, idx)
    want = np_update(x, norm[valid], v[valid], "add")
    for fn in (tracejit.jit(lambda x, i, v: x.at[i].add(v)), lambda x, i, v: at(x, i).add(v)):
        assert_same(fn(x, idx, v), want)
    assert_same(tracejit.jit(lambda x, v: x.at[idx].set(v))(x, v), np_update(x, norm[valid], v[valid], "set"))
    clipped = np_update(x, np.clip(norm, 0, 4), v, "add")
    assert_same(tracejit.jit(lambda x, i, v: x.at[i].add(v, mode="clip"))(x, idx, v), clipped)
    # A traced scalar index out of range is dropped as well.
    assert_same(tracejit.jit(lambda x, i: x.at[i].set(9.0))(x, 7), x)
    assert_same(tracejit.jit(lambda x, i: x.at[i].set(9.0))(x, -2), np.array([0., 0., 0., 9., 0.]))


def test_traced_boolean_mask_update_is_a_select():
    x = sample((4, 3), np.float64, seed=5)
    for kind in ["set", "add", "multiply", "min", "max"]:
        f = tracejit.jit(lambda x: getattr(x.at[x > 0], kind)(2.0))
        assert_same(f(x), np_update(x, x > 0, 2.0, kind))
    row = np.array([1., 2., 3.])
    g = tracejit.jit(lambda x, m: x.at[m].set(row))
    m = np.array([True, False, True, False])
    assert_same(g(x, m), np_update(x, m, row, "set"))
    h = tracejit.jit(lambda x, m: x.at[:, m].add(1.0))
    m2 = np.array([False, True, True])
    assert_same(h(x, m2), np_update(x, (slice(None), m2), 1.0, "add"))
    with pytest.raises(ValueError, match="number of selected"):
        tracejit.jit(lambda x, m: x.at[m].set(np.ones((4, 3))))(x, m)


def test_empty_index_arrays():
    x = sample((3, 2), np.float64)
    e = np.zeros(0, np.int32)
    assert_same(tracejit.jit(lambda x, i: x[i])(x, e), x[e])
    assert_same(tracejit.jit(lambda x, i: x.at[i].add(1.0))(x, e), x)
    assert_same(tracejit.jit(lambda x, i: x[:, i])(x, e), x[:, e])
    assert_same(jnp.take(x, e, axis=1), np.take(x, e, axis=1))
    empty = np.zeros((0, 2))
    assert_same(tracejit.jit(lambda x, i: x[i])(empty, e), empty[e])


def test_at_inside_fori_loop():
    if not hasattr(tracejit.lax, "fori_loop"):
        pytest.skip("tracejit.lax.fori_loop is not available yet")

    def f(v):
        return lax.fori_loop(0, 5, lambda i, acc: acc.at[i].set(v * i), jnp.zeros(5))

    assert_same(tracejit.jit(f)(2.0), np.arange(5) * 2.0)

    def g(n):
        def body(i, acc):
            return jnp.zeros(4).at[i % 4].set(1.0) + acc
        return lax.fori_loop(0, n, body, jnp.zeros(4))
    assert_same(tracejit.jit(g)(6), np.array([2., 2., 1., 1.]))


# --------------------------------------------------------------------------- take & friends

@pytest.mark.parametrize("dtype", DTYPES)
def test_take_matches_numpy(dtype):
    a = sample((4, 5), dtype)
    for idx, axis in [([0, 3, -1], 0), (np.array([[1, 4], [0, -5]]), 1), (2, 1), (np.array([7, 0, 19]), None),
                      (np.array([], np.int64), 0)]:
        want = np.take(a, idx, axis=axis)
        assert_same(jnp.take(a, idx, axis=axis), want)
        assert_same(tracejit.jit(lambda a, i: jnp.take(a, i, axis=axis))(a, np.asarray(idx)), want)
        assert_same(tracejit.jit(lambda a: jnp.take(a.T, idx, axis=axis))(a.T.copy()), np.take(a, idx, axis=axis))


def test_take_modes():
    a = np.array([10., 20., 30.])
    idx = np.array([0, 3, -1, -4, 9])
    for mode in ["clip", "wrap"]:
        want = np.take(a, idx, mode=mode)
        assert_same(jnp.take(a, idx, mode=mode), want)
        assert_same(tracejit.jit(lambda a, i: jnp.take(a, i, mode=mode))(a, idx), want)
    want = np.array([10., np.nan, 30., np.nan, np.nan])
    assert_same(jnp.take(a, idx), want)
    assert_same(tracejit.jit(lambda a, i: jnp.take(a, i))(a, idx), want)
    assert_same(jnp.take(a, idx, fill_value=0.0), np.nan_to_num(want))
    assert_same(jnp.take(np.array([True, False]), np.array([5]), mode="fill"), np.array([True]))
    with pytest.raises(NotImplementedError):
        jnp.take(a, idx, mode="raise")


@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.complex128])
def test_take_along_axis(dtype):
    a = sample((3, 4, 2), dtype)
    for axis in [0, 1, -1]:
        idx = np.argsort(np.real(a), axis=axis)
        want = np.take_along_axis(a, idx, axis=axis)
        assert_same(jnp.take_along_axis(a, idx, axis=axis), want)
        assert_same(tracejit.jit(lambda a, i: jnp.take_along_axis(a, i, axis=axis))(a, idx.astype(np.int32)), want)
    idx = np.array([[[0]], [[2]], [[-1]]])                   # broadcasts over the other axes
    assert_same(jnp.take_along_axis(a, idx, axis=1), np.take_along_axis(a, idx, axis=1))
    flat_idx = np.array([0, 23, 5])
    assert_same(jnp.take_along_axis(a, flat_idx, axis=None), np.take_along_axis(a, flat_idx, axis=None))
    oob = np.array([[[0, 9]]])
    got = tracejit.jit(lambda a: jnp.take_along_axis(a.astype(np.float64), oob, axis=2))(a)
    assert np.isnan(got[0, 0, 1]) and got[0, 0, 0] == np.real(a[0, 0, 0])


def test_put_along_axis():
    a = sample((3, 4), np.float64)
    idx = np.array([[1], [3], [0]])
    want = a.copy()
    np.put_along_axis(want, idx, -1.0, axis=1)
    assert_same(jnp.put_along_axis(a, idx, -1.0, axis=1, inplace=False), want)
    assert_same(tracejit.jit(lambda a, i: jnp.put_along_axis(a, i, -1.0, axis=1, inplace=False))(a, idx), want)
    with pytest.raises(ValueError, match="inplace=False"):
        jnp.put_along_axis(a, idx, -1.0, axis=1)


# --------------------------------------------------------------------------- lax.dynamic_slice & co.

def ref_start(s, n, size):
    s = s + n if s < 0 else s
    return min(max(s, 0), n - size)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dynamic_slice_and_update(dtype):
    x = sample((5, 6), dtype)
    upd = sample((2, 3), dtype, seed=9)
    ds = tracejit.jit(lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 3)))
    dus = tracejit.jit(lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)))
    for i, j in [(0, 0), (3, 3), (4, 5), (-1, -2), (-7, 100), (2, -6)]:
        a, b = ref_start(i, 5, 2), ref_start(j, 6, 3)
        want = x[a:a + 2, b:b + 3]
        assert_same(ds(x, np.int32(i), np.int64(j)), want)
        assert_same(lax.dynamic_slice(x, (i, j), (2, 3)), want)
        w = x.copy()
        w[a:a + 2, b:b + 3] = upd
        assert_same(dus(x, upd, np.int64(i), np.int32(j)), w)
        assert_same(lax.dynamic_update_slice(x, upd, (i, j)), w)
    # Start indices given as one array, non-contiguous operand.
    xt = x.T
    assert_same(tracejit.jit(lambda x, s: lax.dynamic_slice(x, s, (3, 2)))(xt, np.array([4, 1])), xt[3:6, 1:3])


def test_dynamic_in_dim_variants():
    x = sample((4, 5), np.float64)
    f = tracejit.jit(lambda x, i: (lax.dynamic_slice_in_dim(x, i, 2, axis=1),
                                   lax.dynamic_index_in_dim(x, i, axis=0, keepdims=False),
                                   lax.dynamic_index_in_dim(x, i, axis=1),
                                   lax.dynamic_update_slice_in_dim(x, np.ones((4, 2)), i, axis=1)))
    for i in [0, 2, 4, -1, 9]:
        s, r, c, u = f(x, i)
        b = ref_start(i, 5, 2)
        assert_same(s, x[:, b:b + 2])
        assert_same(r, x[ref_start(i, 4, 1)])
        assert_same(c, x[:, ref_start(i, 5, 1)][:, None])
        w = x.copy()
        w[:, b:b + 2] = 1.0
        assert_same(u, w)
    assert_same(lax.index_in_dim(x, -1, axis=1, keepdims=False), x[:, -1])


def test_primitive_programs_type_check():
    f = lambda x, i: (x[i], x.at[i].add(1.0), lax.dynamic_slice(x, (i[0],), (2,)))  # noqa: E731
    prog = tracejit.make_jaxpr(f)(np.zeros(4), np.array([1, 2]))
    tracejit.check_program(getattr(prog, "program", prog))


# --------------------------------------------------------------------------- property-based

@settings(max_examples=15, deadline=None)
@given(st.data())
def test_random_mixed_indices_match_numpy(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    n_idx = data.draw(st.integers(1, len(shape)))
    bshape = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    idx = []
    for d in range(n_idx):
        kind = data.draw(st.sampled_from(["arr", "slice", "int", "none"]))
        n = shape[d]
        if kind == "arr":
            idx.append(np.asarray(data.draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(bshape)),
                                                     max_size=int(np.prod(bshape))))).reshape(bshape).astype(np.int64))
        elif kind == "slice":
            idx.append(slice(data.draw(st.integers(-n, n)), data.draw(st.integers(-n, n)),
                             data.draw(st.sampled_from([1, 2, -1]))))
        elif kind == "int":
            idx.append(data.draw(st.integers(-n, n - 1)))
        else:
            idx.append(None)
            idx.append(slice(None))
    idx = tuple(idx)
    want = x[idx]
    v = np.arange(want.size, dtype=np.float64).reshape(want.shape) + 100
    got, added = tracejit.jit(lambda x, v: (x[idx], x.at[idx].add(v)))(x, v)
    assert_same(got, want)
    assert_same(added, np_update(x, idx, v, "add"))
    ref = x.copy()
    ref[idx] = v
    if not any(isinstance(e, np.ndarray) for e in idx):      # set with duplicates is order-dependent in NumPy
        assert_same(at(x, idx).set(v), ref)
