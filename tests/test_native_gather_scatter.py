"""Gathers compiled inside kernels (compiler/fusion.py ``_gather_expr``, codegen ``_gather``) and
scatters compiled as serial native loops (window.py ``_scatter``).

Every index form reaches the same ``gather``/``scatter`` primitives; these tests pin JAX's
out-of-bounds modes (clip, fill, drop), integer index dtypes including uint64 above 2**63,
repeated indices (set: last wins; add/mul/min/max combine in order, as NumPy's ufunc.at),
gathers fused with the arithmetic that computes their indices, and both inside native loops.
"""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
import helpers
from helpers import assert_same, check_against_numpy, sample


def _plan_text(fn, *args):
    return tracejit.jit(fn).lower(*args).as_text().split("# kernels")[1]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8, np.bool_, np.complex64],
                         ids=lambda d: np.dtype(d).name)
def test_gathers_are_kernel_loads(dtype):
    x = sample((7, 5), dtype, seed=0)
    rows = np.array([6, 0, 3, 3, 1])
    cols = np.array([4, 0, 2, 1, 4])
    check_against_numpy(lambda xp, x, r, c: (x[r], x[r, c], x[:, c], x[r[:, None], c[None, :]]), x, rows, cols)
    assert "numpy gather" not in _plan_text(lambda x, r: x[r] , x, rows)


@pytest.mark.parametrize("idx_dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32, np.uint64])
def test_index_dtypes_and_out_of_bounds_modes(idx_dtype):
    # Native gathers agree with the reference backend (the NumPy interpreter) and with eager calls.
    x = np.arange(10.0) * 1.5
    vals = [0, 3, 9, 10, 12, 127]
    if np.dtype(idx_dtype).kind == "i":
        vals += [-1, -10, -11, -100]
    idx = np.array(vals).astype(idx_dtype)
    for f in (lambda x, i: jnp.take(x, i, mode="clip"), lambda x, i: jnp.take(x, i, mode="fill", fill_value=-7.0),
              lambda x, i: x[i]):
        want = tracejit.jit(f, backend="reference")(x, idx)
        assert_same(tracejit.jit(f)(x, idx), want)
    # NumPy's clip mode clamps negative indices to 0.
    assert_same(tracejit.jit(lambda x, i: jnp.take(x, i, mode="clip"))(x, idx), np.take(x, idx, mode="clip"))
    norm = idx.astype(np.int64)
    norm = np.where((norm < 0) & (norm >= -10), norm + 10, norm)
    valid = (norm >= 0) & (norm < 10)
    assert_same(tracejit.jit(lambda x, i: jnp.take(x, i, mode="fill", fill_value=-7.0))(x, idx),
                np.where(valid, np.take(x, np.where(valid, norm, 0)), -7.0))


def test_uint64_indices_above_two_to_the_63_are_out_of_range():
    x = np.arange(4.0)
    idx = np.array([2**63, 2**64 - 1, 1], np.uint64)
    assert_same(tracejit.jit(lambda x, i: jnp.take(x, i, mode="fill", fill_value=np.nan))(x, idx),
                np.array([np.nan, np.nan, 1.0]))
    assert_same(tracejit.jit(lambda x, i: jnp.take(x, i, mode="clip"))(x, idx), np.array([3.0, 3.0, 1.0]))


def test_gather_from_empty_axis_and_computed_indices():
    assert_same(tracejit.jit(lambda x, i: jnp.take(x, i, mode="fill", fill_value=2.0))(np.zeros(0), np.arange(3)),
                np.full(3, 2.0))
    x = np.arange(11.0)
    check_against_numpy(lambda xp, x: x[(xp.arange(11) * 7) % 11] * 2 + x, x)
    check_against_numpy(lambda xp, x: xp.sum(x[(xp.arange(11) * 3) % 11] ** 2), x)


def test_take_along_axis_and_segment_style_reads():
    x = sample((4, 6), np.float64, seed=2)
    idx = np.argsort(x, axis=1)
    check_against_numpy(lambda xp, x, i: xp.take_along_axis(x, i, axis=1), x, idx)


def test_gather_inside_a_native_loop():
    # x[(i * 7) % n] inside fori_loop: the body is kernels only, so the loop runs natively.
    n = 101
    x = np.sin(np.arange(n))

    def f(x):
        return lax.fori_loop(0, 500, lambda i, acc: acc + x[(i * 7) % n] * x[(i * 3) % n], 0.0)
    want = sum(x[(i * 7) % n] * x[(i * 3) % n] for i in range(500))
    np.testing.assert_allclose(tracejit.jit(f)(x), want, rtol=1e-12)
    steps = helpers.control_flow_steps(tracejit.jit(f).lower(x).compile())
    assert steps and steps[0].loop.native


def test_gather_grad_and_vmap():
    x = np.linspace(-1, 1, 9)
    idx = np.array([0, 8, 3, 3])
    g = tracejit.jit(tracejit.grad(lambda x: jnp.sum(jnp.sin(x[idx]))))(x)
    want = np.zeros(9)
    np.add.at(want, idx, np.cos(x[idx]))
    np.testing.assert_allclose(g, want, rtol=1e-14)
    xs = np.stack([x, 2 * x])
    out = tracejit.jit(tracejit.vmap(lambda x, i: x[i]))(xs, np.array([[1, 2], [3, 4]]))
    np.testing.assert_array_equal(out, [[x[1], x[2]], [2 * x[3], 2 * x[4]]])


# ----------------------------------------------------------------------------- scatters

SCATTER_DTYPES = [np.float64, np.float32, np.int32, np.int64, np.uint8, np.bool_]


@pytest.mark.parametrize("kind", ["set", "add", "mul", "min", "max"])
@pytest.mark.parametrize("dtype", SCATTER_DTYPES, ids=lambda d: np.dtype(d).name)
def test_scatter_kinds_match_reference_and_numpy(kind, dtype):
    x = sample((9,), dtype, seed=1, low=-3, high=4)
    idx = np.array([3, 3, -1, 12, 0, 5, 8, 3])
    u = sample((8,), dtype, seed=2, low=-3, high=4)
    if np.dtype(dtype).kind == "f":
        x[2], u[4] = np.nan, -0.0
    f = lambda x, i, u: getattr(x.at[i], kind)(u)  # noqa: E731
    got = tracejit.jit(f)(x, idx, u)
    assert_same(got, tracejit.jit(f, backend="reference")(x, idx, u))
    assert "numpy scatter" not in _plan_text(f, x, idx, u)
    # NumPy's own semantics for the in-range, normalized indices.
    norm = np.where(idx < 0, idx + 9, idx)
    keep = (norm >= 0) & (norm < 9)
    want = x.copy()
    if kind == "set":
        for i, v in zip(norm[keep], u[keep]):
            want[i] = v
    else:
        ufunc = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[kind]
        with np.errstate(all="ignore"):
            ufunc.at(want, norm[keep], u[keep])
    assert_same(got, want)


def test_scatter_blocks_modes_and_index_dtypes():
    x = sample((5, 4), np.float64, seed=3)
    rows = np.array([4, 0, 4, 7], np.int32)
    upd = sample((4, 4), np.float64, seed=4)
    for f in (lambda x, r, u: x.at[r].add(u), lambda x, r, u: x.at[r].set(u, mode="clip"),
              lambda x, r, u: x.at[r, 1].max(u[:, 0]), lambda x, r, u: x.at[:, r % 4].mul(x * 0 + 2.0)):
        assert_same(tracejit.jit(f)(x, rows, upd), tracejit.jit(f, backend="reference")(x, rows, upd))
    big = np.array([2**63, 1, 2**64 - 1], np.uint64)
    f = lambda x, i: x.at[i].add(1.0)  # noqa: E731
    assert_same(tracejit.jit(f)(np.zeros(3), big), np.array([0.0, 1.0, 0.0]))


def test_segment_sum_and_histogram_in_a_native_loop():
    rng = np.random.default_rng(6)
    seg = rng.integers(0, 10, 200)
    vals = rng.standard_normal(200)
    got = tracejit.jit(lambda s, v: jnp.zeros(10).at[s].add(v))(seg, vals)
    want = np.zeros(10)
    np.add.at(want, seg, vals)
    assert_same(got, want)

    def hist(data):
        def body(i, h):
            return h.at[data[i] % 16].add(1)
        return lax.fori_loop(0, data.shape[0], body, jnp.zeros(16, np.int64))
    data = rng.integers(0, 1000, 300)
    np.testing.assert_array_equal(tracejit.jit(hist)(data), np.bincount(data % 16, minlength=16))
    steps = helpers.control_flow_steps(tracejit.jit(hist).lower(data).compile())
    assert steps and steps[0].loop.native


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.complex128])
def test_rows_and_elements_picked_by_traced_indices_are_kernel_loads(dtype):
    # x[i] and x[i, j] with traced i, j (dynamic_slice windows 1 wide in their leading dims) are
    # clamped loads inside the consuming kernel, vectorized along the row (the indices are the same
    # in every lane). Row lengths that are no multiple of the vector width take the masked tail.
    rng = np.random.default_rng(11)
    for n in (1, 7, 37, 64):
        x = (rng.standard_normal((5, n)) * 10).astype(dtype)
        f = tracejit.jit(lambda x, i, j: (x[i] * 2 + x[i, j], x[i, j] - x[i - 1]))
        text = f.lower(x, 0, 0).compile().as_text()
        assert "dynamic_slice" not in text and "gather[clip]" in text
        if dtype == np.float64 and n == 64:     # the row is read with vector loads
            import re
            ir_text = tracejit.jit(lambda x, i: x[i] * 2.0).lower(x, 0).compile().as_text(llvm_ir=True)
            assert re.search(r"load <\d+ x double>", ir_text), ir_text[:2000]
        for i, j in [(0, 0), (4, n - 1), (-1, -1), (2, n // 2)]:
            got = f(x, i, j)
            want = (x[i] * 2 + x[i, j], x[i, j] - x[i - 1])
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w.astype(dtype))


def test_traced_indices_past_the_ends_clamp_as_dynamic_slice_does():
    # lax.dynamic_slice (as JAX's) adds the dim's size to a negative start once, then clamps the
    # start into range; a 1-wide window clamps the index itself.
    x = np.arange(24.0).reshape(4, 6)
    f = tracejit.jit(lambda x, i, j: lax.dynamic_slice(x, (i, j), (1, 1))[0, 0] + lax.dynamic_slice(x, (i, 0), (1, 6)))
    ref = tracejit.jit(lambda x, i, j: lax.dynamic_slice(x, (i, j), (1, 1))[0, 0] + lax.dynamic_slice(x, (i, 0), (1, 6)),
                       backend="reference")
    for i, j in [(-3, -9), (9, 17), (2, -1), (3, 5), (np.int64(2) ** 40, 0)]:
        np.testing.assert_array_equal(f(x, i, j), ref(x, i, j))
        ci, cj = (min(max(int(v) + (n if v < 0 else 0), 0), n - 1) for v, n in ((i, 4), (j, 6)))
        np.testing.assert_array_equal(f(x, i, j), x[ci, cj] + x[ci:ci + 1])


def test_a_row_read_before_its_in_place_update_keeps_its_old_value():
    # The row is read by a gather fused into a kernel that runs after the update: memory planning
    # must see that read and not update the carry in place under it.
    def f(x, i):
        row = x[i]
        y = x.at[i].set(-1.0)
        return y, row * 2
    x = np.arange(12.0).reshape(3, 4)
    for i in (0, 2):
        y, r = tracejit.jit(f)(x, i)
        want = x.copy()
        want[i] = -1.0
        np.testing.assert_array_equal(y, want)
        np.testing.assert_array_equal(r, x[i] * 2)
    def loop(x):
        return lax.fori_loop(0, 3, lambda i, c: (c[0].at[i].set(c[0][i] + 1.0), c[1] + c[0][i] * 2.0),
                             (x, np.zeros(4)))
    got = tracejit.jit(loop)(x)
    np.testing.assert_array_equal(got[0], x + 1.0)
    np.testing.assert_array_equal(got[1], x.sum(0) * 2.0)
