"""Native window copies (dynamic_slice / dynamic_update_slice) and in-place loop carries.

``lax.dynamic_slice``, ``lax.dynamic_update_slice`` and ``x.at[i]`` updates with
static or traced scalar indices compile to window steps (row copies at
run-time starts, clamped like XLA). Inside ``fori_loop``/``scan``/``while_loop``
a window update writes straight into its carry, so the array is not copied
per iteration. Every result is compared with NumPy.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.backends.cpu import loops
from tracejit.compiler.plan import NumpyStep, WindowStep

DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.uint16, np.float32, np.float64, np.complex64, np.complex128]
START_DTYPES = [np.int8, np.int32, np.int64, np.uint8, np.uint64]


def _values(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape) * 50
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dtype)


def _clamped(shape, sizes, starts):
    """XLA's rule after one NumPy-style wrap of negative indices (what lax and jnp do)."""
    out = []
    for n, size, s in zip(shape, sizes, starts):
        s = int(s)
        s = s + n if s < 0 else s
        out.append(min(max(s, 0), n - size))
    return out


def _update_expected(x, u, starts):
    lo = _clamped(x.shape, u.shape, starts)
    out = x.copy()
    out[tuple(slice(a, a + s) for a, s in zip(lo, u.shape))] = u
    return out


def _slice_expected(x, sizes, starts):
    lo = _clamped(x.shape, sizes, starts)
    return x[tuple(slice(a, a + s) for a, s in zip(lo, sizes))]


def _steps(fn, *args):
    return tracejit.jit(fn).lower(*args).compile().executable.plan.steps


@pytest.mark.parametrize("dtype", DTYPES)
def test_dynamic_update_slice_all_dtypes_and_clamping(dtype):
    x = _values((5, 7), dtype)
    u = _values((2, 3), dtype, seed=1)
    f = tracejit.jit(lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)))
    for i, j in [(0, 0), (1, 2), (3, 4), (4, 6), (-1, -2), (-9, 100), (2, -100)]:
        got = f(x, u, np.int32(i), np.int64(j))
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, _update_expected(x, u, (i, j)))
    steps = _steps(lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)), x, u, np.int32(0), np.int64(0))
    assert any(isinstance(s, WindowStep) for s in steps) and not any(isinstance(s, NumpyStep) for s in steps)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dynamic_slice_all_dtypes_and_clamping(dtype):
    x = _values((6, 5, 4), dtype)
    f = tracejit.jit(lambda x, i, j: lax.dynamic_slice(x, (i, 1, j), (3, 2, 4)))
    for i, j in [(0, 0), (2, 0), (3, 0), (5, 3), (-2, -1), (100, -100)]:
        np.testing.assert_array_equal(f(x, np.int64(i), np.int16(j)), _slice_expected(x, (3, 2, 4), (i, 1, j)))


@pytest.mark.parametrize("start_dtype", START_DTYPES)
def test_start_index_dtypes_including_huge_unsigned(start_dtype):
    x = np.arange(10.0)
    f = tracejit.jit(lambda x, i: lax.dynamic_slice(x, (i,), (3,)))
    info = np.iinfo(start_dtype)
    for s in [0, 4, info.max, info.min]:
        want = x[min(max(int(s), 0), 7):][:3]        # lax clamps; no negative wrap for these extremes
        if int(s) < 0:
            want = _slice_expected(x, (3,), (int(s),))
        np.testing.assert_array_equal(f(x, start_dtype(s)), want)


def test_scalar_operand_and_empty_windows():
    f0 = tracejit.jit(lambda x, u, i: lax.dynamic_update_slice(x, u, ()))
    np.testing.assert_array_equal(f0(np.float32(1), np.float32(5), np.int32(0)), np.float32(5))
    x = np.arange(12.0).reshape(3, 4)
    g = tracejit.jit(lambda x, i: lax.dynamic_update_slice(x, jnp.zeros((0, 2)), (i, i)))
    np.testing.assert_array_equal(g(x, np.int32(1)), x)
    h = tracejit.jit(lambda x, i: lax.dynamic_slice(x, (i, 0), (0, 4)))
    assert h(x, np.int32(2)).shape == (0, 4)
    e = np.zeros((0, 3))
    k = tracejit.jit(lambda x, i: lax.dynamic_update_slice(x, jnp.zeros((0, 1)), (i, i)))
    assert k(e, np.int32(5)).shape == (0, 3)


def test_non_contiguous_operands():
    base = np.arange(60.0).reshape(6, 10)
    x = base[:, ::2]                       # strided view
    u = base[:2, :2].T                     # transposed view
    f = tracejit.jit(lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 1)))
    np.testing.assert_array_equal(f(x, u, np.int32(3)), _update_expected(np.ascontiguousarray(x), u, (3, 1)))
    np.testing.assert_array_equal(x, base[:, ::2])       # inputs are never written


def test_update_of_a_temporary_is_written_in_place():
    x = np.arange(24.0).reshape(4, 6)
    fn = lambda x, u, i: lax.dynamic_update_slice(x * 2, u, (i, 0)) + 1   # noqa: E731
    u = -np.ones((1, 6))
    c = tracejit.jit(fn).lower(x, u, np.int32(0)).compile()
    plan, offsets = c.executable.plan, c.executable.offsets
    (step,) = [s for s in plan.steps if isinstance(s, WindowStep)]
    assert offsets[step.out] == offsets[step.operand]          # no second 4x6 temporary
    for i in (0, 2, 3, 7):
        np.testing.assert_array_equal(c(x, u, np.int32(i)), _update_expected(x * 2, u, (i, 0)) + 1)


def test_update_does_not_overwrite_an_operand_read_later():
    x = np.arange(8.0)
    fn = lambda x, i: (lax.dynamic_update_slice(x * 3, jnp.ones(2), (i,)), (x * 3).sum())   # noqa: E731
    a, b = tracejit.jit(fn)(x, np.int32(2))
    np.testing.assert_array_equal(a, _update_expected(x * 3, np.ones(2), (2,)))
    assert b == (x * 3).sum()


def test_donated_argument_is_updated_in_place():
    f = tracejit.jit(lambda x, i: lax.dynamic_update_slice(x, np.full(3, 7.0), (i,)), donate_argnums=0)
    x = np.arange(10.0)
    out = f(x, np.int32(4))
    np.testing.assert_array_equal(out, _update_expected(np.arange(10.0), np.full(3, 7.0), (4,)))
    assert np.shares_memory(out, x)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3), data=st.data())
def test_window_steps_match_numpy_property(shape, data):
    shape = tuple(shape)
    sizes = tuple(data.draw(st.integers(0, n)) for n in shape)
    starts = tuple(data.draw(st.integers(-8, 8)) for _ in shape)
    dtype = data.draw(st.sampled_from([np.int32, np.float32, np.float64, np.complex128]))
    x = _values(shape, dtype)
    u = _values(sizes, dtype, seed=2)
    s = [np.int64(v) for v in starts]
    got = tracejit.jit(lambda x, *s: lax.dynamic_slice(x, s, sizes))(x, *s)
    np.testing.assert_array_equal(got, _slice_expected(x, sizes, starts))
    got = tracejit.jit(lambda x, u, *s: lax.dynamic_update_slice(x, u, s))(x, u, *s)
    np.testing.assert_array_equal(got, _update_expected(x, u, starts))


# --------------------------------------------------------------------------- x.at[i] with a traced index

@pytest.mark.parametrize("method", ["set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("mode", [None, "drop", "clip"])
def test_traced_scalar_index_updates_follow_jax(method, mode):
    x = np.array([[1.5, -2.0, 3.0], [4.0, 5.0, -6.0], [0.5, 8.0, 9.0]])
    v = np.array([10.0, -1.0, 2.0])
    f = tracejit.jit(lambda x, i: getattr(x.at[i], method)(v, mode=mode))
    ufunc = {"set": None, "add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}[method]
    for i in [-4, -3, -1, 0, 2, 3, 50]:
        want = x.copy()
        if mode == "clip":
            k = min(max(i + 3 if i < 0 else i, 0), 2)   # negatives wrap once, then clamp
        else:
            k = i if -3 <= i < 3 else None        # out of range: the update is dropped
        if k is not None:
            want[k] = v if ufunc is None else ufunc(want[k], v)
        np.testing.assert_array_equal(f(x, np.int32(i)), want, err_msg=f"{method} {mode} {i}")
    steps = _steps(lambda x, i: getattr(x.at[i], method)(v, mode=mode), x, np.int32(0))
    assert not any(isinstance(s, NumpyStep) for s in steps)


def test_traced_index_mixed_with_slices_and_static_ints():
    x = np.arange(60.0).reshape(3, 4, 5)
    f = tracejit.jit(lambda x, i: x.at[1, i, 1:4].add(100.0))
    for i in (0, 3, -1, 4):
        want = x.copy()
        if -4 <= i < 4:
            want[1, i, 1:4] += 100
        np.testing.assert_array_equal(f(x, np.int64(i)), want)


# --------------------------------------------------------------------------- loops

def _native_loops():
    # Only loops alive (held by an executable) are in the cache.
    return list(loops._cache.values())


def test_fori_at_set_updates_the_carry_in_place():
    n = 5000

    @tracejit.jit
    def fill(x):
        return lax.fori_loop(0, n, lambda i, x: x.at[i].set(i * 2.0), x)
    loops._cache.clear()
    x = np.zeros(n)
    np.testing.assert_array_equal(fill(x), np.arange(n) * 2.0)
    np.testing.assert_array_equal(x, 0)
    (loop,) = _native_loops()
    updates = [s for s in loop.construct.body.plan.steps if isinstance(s, WindowStep) and s.kind == "update"]
    assert len(updates) == 1
    # The update's output is the carry's own memory: no copy of the array per iteration.
    assert loop.construct.body.in_place == {updates[0].out: 1}


def test_zeros_and_empty_then_at_set_in_scan_and_while():
    def build(n):
        def body(buf, i):
            buf = buf.at[i].set(jnp.sin(i * 1.0))
            return buf, buf[i] * 2
        return lax.scan(body, jnp.zeros(n), jnp.arange(n))
    loops._cache.clear()
    built = tracejit.jit(build, static_argnums=0)     # holds its executable, and so the loop
    buf, ys = built(64)
    np.testing.assert_allclose(buf, np.sin(np.arange(64.0)), rtol=1e-14)
    np.testing.assert_allclose(ys, 2 * np.sin(np.arange(64.0)), rtol=1e-14)
    (loop,) = _native_loops()
    assert loop.construct.body.in_place and loop.construct.body.direct_ys

    def squares(n):
        def body(c):
            k, buf = c
            return k + 1, buf.at[k].set(k * k)
        return lax.while_loop(lambda c: c[0] < n, body, (0, jnp.empty(n, jnp.int64)))[1]
    loops._cache.clear()
    sq = tracejit.jit(squares, static_argnums=0)
    np.testing.assert_array_equal(sq(40), np.arange(40) ** 2)
    (loop,) = _native_loops()
    assert loop.construct.body.in_place


def test_rows_read_then_written_in_a_loop():
    @tracejit.jit
    def prefix_rows(m):
        return lax.fori_loop(1, m.shape[0], lambda i, m: m.at[i].add(m[i - 1] * 0.5), m)
    m = np.arange(40.0).reshape(10, 4)
    want = m.copy()
    for i in range(1, 10):
        want[i] += want[i - 1] * 0.5
    np.testing.assert_allclose(prefix_rows(m), want, rtol=1e-15)


def test_carry_swaps_and_passthroughs_stay_correct_with_in_place_updates():
    def body(i, c):
        a, b = c
        return b.at[i].set(-1.0), a          # the updated carry moves to the other slot
    got = tracejit.jit(lambda a, b: lax.fori_loop(0, 4, body, (a, b)))(np.zeros(4), np.ones(4))
    a, b = np.zeros(4), np.ones(4)
    for i in range(4):
        b2 = b.copy()
        b2[i] = -1.0
        a, b = b2, a
    np.testing.assert_array_equal(got[0], a)
    np.testing.assert_array_equal(got[1], b)


def test_large_carry_uses_caller_memory_and_matches():
    n = 20000                                # 160 KB carry: too big for the driver's stack frame
    f = tracejit.jit(lambda x: lax.fori_loop(0, 100, lambda i, x: x.at[i * 7].add(1.0), x))
    loops._cache.clear()
    want = np.zeros(n)
    for i in range(100):
        want[i * 7] += 1
    np.testing.assert_array_equal(f(np.zeros(n)), want)
    (loop,) = _native_loops()
    assert not loop.local


def test_native_loops_from_several_threads():
    from concurrent.futures import ThreadPoolExecutor
    f = tracejit.jit(lambda x, k: lax.fori_loop(0, 50, lambda i, x: x.at[i].set(x[i] + k), x))
    xs = [np.arange(50.0) * j for j in range(8)]
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda j: f(xs[j], np.float64(j)), range(8)))
    for j, out in enumerate(outs):
        np.testing.assert_array_equal(out, xs[j] + j)


# --------------------------------------------------------------------------- pad

@pytest.mark.parametrize("dtype", DTYPES)
def test_pad_is_a_fill_and_a_block_copy(dtype):
    x = _values((2, 3, 4), dtype)
    config = ((1, 0, 0), (0, 2, 0), (3, 1, 0))
    widths = [(lo, hi) for lo, hi, _ in config]
    for value in (0, 1, -3):
        pv = np.asarray(value).astype(dtype)[()]
        f = tracejit.jit(lambda x: lax.pad(x, pv, config))
        got = f(x)
        want = np.pad(x, widths, constant_values=pv)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    g = tracejit.jit(lambda x, v: lax.pad(x, v, config))            # traced padding value
    np.testing.assert_array_equal(g(x, np.asarray(5).astype(dtype)),
                                  np.pad(x, widths, constant_values=np.asarray(5).astype(dtype)))
    steps = _steps(lambda x: lax.pad(x, pv, config), x)
    assert [s.kind for s in steps if isinstance(s, WindowStep)] == ["pad"]
    assert not any(isinstance(s, NumpyStep) for s in steps)


def test_pad_special_values_and_empty_shapes():
    x = np.array([np.nan, -0.0, np.inf])
    np.testing.assert_array_equal(tracejit.jit(lambda x: lax.pad(x, -np.inf, ((2, 1, 0),)))(x),
                                  np.pad(x, (2, 1), constant_values=-np.inf))
    np.testing.assert_array_equal(np.signbit(tracejit.jit(lambda x: lax.pad(x, -0.0, ((1, 1, 0),)))(x)),
                                  np.signbit(np.pad(x, (1, 1), constant_values=-0.0)))
    e = np.zeros((0, 3))
    np.testing.assert_array_equal(tracejit.jit(lambda x: lax.pad(x, 7.0, ((1, 2, 0), (0, 1, 0))))(e),
                                  np.pad(e, ((1, 2), (0, 1)), constant_values=7.0))
    s = np.float32(2.5)
    np.testing.assert_array_equal(tracejit.jit(lambda x: jnp.pad(x.reshape(1), 2))(s), np.pad(s.reshape(1), 2))


def test_pad_with_cropping_or_interior_stays_correct():
    x = np.arange(24.0).reshape(2, 3, 4)
    for config in [((1, -1, 0), (0, 2, 1), (0, 0, 0)), ((0, 0, 2), (1, 1, 0), (-2, 1, 0))]:
        got = tracejit.jit(lambda x: lax.pad(x, -1.0, config))(x)
        want = tracejit.jit(lambda x: lax.pad(x, -1.0, config), backend="reference")(x)
        np.testing.assert_array_equal(got, want)


def test_slice_gradients_pad_natively():
    # d/dx of a sum of disjoint slices (the q/k/v split of attention) is a sum of pads.
    x = np.random.default_rng(5).standard_normal((4, 9))
    loss = lambda x: (x[:, :3] ** 2).sum() + (x[:, 3:6] * 2).sum() + jnp.sin(x[:, 6:]).sum()  # noqa: E731
    g = tracejit.jit(tracejit.grad(loss))
    want = np.concatenate([2 * x[:, :3], np.full((4, 3), 2.0), np.cos(x[:, 6:])], axis=1)
    np.testing.assert_allclose(g(x), want, rtol=1e-14)
    steps = _steps(tracejit.grad(loss), x)
    assert not any(isinstance(s, NumpyStep) for s in steps)


# --------------------------------------------------------------------------- concatenate

@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int8, np.bool_, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_concatenate_is_row_copies(dtype):
    from helpers import check_against_numpy
    a = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
    b = (np.arange(9).reshape(3, 3) - 4).astype(dtype)
    c = (np.arange(4).reshape(2, 2) + 1).astype(dtype)
    check_against_numpy(lambda xp, a, b: xp.concatenate([a, b, a], 0), a, b)
    check_against_numpy(lambda xp, a, c: xp.concatenate([a, c], 1), a, c)
    check_against_numpy(lambda xp, a: (xp.concatenate([a, a[:0], a], 0), xp.stack([a[0], a[1]], 1)), a)
    text = tracejit.jit(lambda a, b: jnp.concatenate([a, b], 0)).lower(a, b).as_text()
    assert "window concatenate" in text


def test_concatenate_in_a_loop_body_runs_natively():
    def shift_columns(t):
        def body(j, t):
            return t.at[:, j].set(jnp.concatenate([t[1:, j], jnp.zeros(1)]) + 1)
        return lax.fori_loop(0, t.shape[1], body, t)
    t = np.arange(25.0).reshape(5, 5)
    want = t.copy()
    for j in range(5):
        want[:, j] = np.concatenate([want[1:, j], [0.0]]) + 1
    f = tracejit.jit(shift_columns)
    np.testing.assert_array_equal(f(t), want)
    assert "native loop" in f.lower(t).compile().as_text()
