"""Scatters whose updates are an expression: computed inside the scatter loop, never stored
(compiler/fusion.py ``_update_kernel``, backends/cpu/window.py ``_fused_updates``), and scalar
combining scatters that keep a run of equal indices in a register (``_Run``)."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from helpers import assert_same, sample

DTYPES = [np.float64, np.float32, np.int32, np.int64, np.uint8, np.bool_]
INDEX_PATTERNS = {
    "sorted runs": np.array([0, 0, 0, 2, 2, 5, 5, 5, 5, 8]),
    "unsorted repeats": np.array([3, 7, 3, 3, 0, 7, 1, 3, 8, 3]),
    "runs cut by dropped": np.array([4, 4, -40, 4, 4, 40, 4, 6, 6, -1]),
    "negative": np.array([-1, -1, -9, -9, -5, 0, 8, -2, -2, -2]),
}


def _reference(kind, x, idx, u, mode):
    n = x.shape[0]
    norm = np.where(idx < 0, idx + n, idx)
    if mode == "clip":
        norm, keep = np.clip(norm, 0, n - 1), np.ones(len(idx), bool)
    else:
        keep = (norm >= 0) & (norm < n)
    want = x.copy()
    if kind == "set":
        for i, v in zip(norm[keep], u[keep]):
            want[i] = v
        return want
    ufunc = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[kind]
    if want.dtype == np.bool_:
        ufunc = {"add": np.logical_or, "mul": np.logical_and, "min": np.logical_and, "max": np.logical_or}[kind]
    with np.errstate(all="ignore"):
        ufunc.at(want, norm[keep], u[keep])
    return want


def _plan(fn, *args):
    return tracejit.jit(fn).lower(*args).compile().as_text()


@pytest.mark.parametrize("mode", ["drop", "clip"])
@pytest.mark.parametrize("kind", ["add", "mul", "min", "max", "set"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_fused_update_expression_matches_numpy(dtype, kind, mode):
    x = sample((9,), dtype, seed=1, low=-3, high=4)
    a = sample((12,), dtype, seed=2, low=-3, high=4)
    if np.dtype(dtype).kind == "f":
        x[2], a[4], a[7] = np.nan, -0.0, np.inf
    pick = np.array([5, 0, 11, 3, 3, 7, 1, 4, 9, 2])

    def f(x, idx, a):
        upd = a[pick] if dtype == np.bool_ else a[pick] * 2 - a[:10]     # a gather in the update
        return getattr(x.at[idx], kind)(upd, mode=mode)
    for name, idx in INDEX_PATTERNS.items():
        got = tracejit.jit(f)(x, idx, a)
        assert_same(got, tracejit.jit(f, backend="reference")(x, idx, a))
        u = a[pick] if dtype == np.bool_ else (a[pick] * 2 - a[:10]).astype(dtype)
        assert_same(got, _reference(kind, x, idx, u, mode)), name
    text = _plan(f, x, INDEX_PATTERNS["sorted runs"], a)
    assert f"window scatter[{kind} mode={mode}] (" in text, text


def test_block_updates_and_csr_matvec_in_a_loop():
    x = sample((6, 5), np.float64, seed=3)
    rows = np.array([5, 0, 5, 5, 2, -1])
    f = lambda x, r: x.at[r].add(jnp.tanh(x[::-1]) * 3)   # noqa: E731  a 5-element block per index
    want = x.copy()
    np.add.at(want, np.where(rows < 0, rows + 6, rows), np.tanh(x[::-1]) * 3)
    np.testing.assert_allclose(tracejit.jit(f)(x, rows), want, rtol=1e-14)
    assert "window scatter[add mode=" in _plan(f, x, rows) and "] (" in _plan(f, x, rows)

    rng = np.random.default_rng(0)
    n, nnz = 40, 300
    r, c = np.sort(rng.integers(0, n, nnz)).astype(np.int32), rng.integers(0, n, nnz).astype(np.int32)
    v = rng.standard_normal(nnz)

    def power(x0):
        def step(_, x):
            y = jnp.zeros(n).at[r].add(v * x[c])
            return y / jnp.linalg.norm(y)
        return lax.fori_loop(0, 5, step, x0)
    x = np.ones(n)
    for _ in range(5):
        y = np.zeros(n)
        np.add.at(y, r, v * x[c])        # the same order of additions: bit-identical sums
        x = y / np.sqrt(y @ y)
    np.testing.assert_allclose(tracejit.jit(power)(np.ones(n)), x, rtol=1e-13)


def test_update_reading_the_carry_it_scatters_into():
    # x.at[i].add(x[j]) in a loop: the update reads the old carry while the scatter writes the new
    # one, so the scatter must not run in the carry's memory.
    idx, src = np.array([1, 1, 3, 0, 3]), np.array([0, 3, 1, 1, 2])

    def f(x):
        return lax.fori_loop(0, 4, lambda k, x: x.at[idx].add(x[src] * 0.5 + k), x)
    x0 = np.arange(5.0)
    want = x0.copy()
    for k in range(4):
        u = want[src] * 0.5 + k
        np.add.at(want, idx, u)
    np.testing.assert_array_equal(tracejit.jit(f)(x0), want)
    g = tracejit.jit(lambda x: x.at[idx].add(x[src] * 0.5), donate_argnums=0)
    want = x0.copy()
    np.add.at(want, idx, x0[src] * 0.5)
    np.testing.assert_array_equal(g(x0.copy()), want)


def test_runs_keep_nan_and_signed_zero_semantics():
    x = np.array([0.0, -0.0, 1.0, np.nan])
    idx = np.array([0, 0, 1, 1, 2, 2, 2, 3])
    u = np.array([-0.0, -0.0, 0.0, -0.0, np.nan, 5.0, -np.inf, 1.0])
    for kind in ("add", "min", "max", "mul"):
        f = lambda x, i, u, kind=kind: getattr(x.at[i], kind)(u + 0.0 * x[0])   # noqa: E731  a fused update
        got = tracejit.jit(f)(x, idx, u)
        assert_same(got, _reference(kind, x, idx, u + 0.0 * x[0], "drop"))
        assert_same(got, tracejit.jit(f, backend="reference")(x, idx, u))
