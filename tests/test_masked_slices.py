"""Loops whose slices depend on the loop index, compiled as one loop with masked windows
(tracejit/autograph/masked.py), against NumPy running the same function; and the fixed seed
range of their fuzzer (tests/fuzz/masked_loops.py)."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit.autograph import runtime
from tests.fuzz import masked_loops


def _loops(fn, *args) -> int:
    text = str(tracejit.make_jaxpr(fn)(*[np.array(a, copy=True) for a in args]))
    return sum(text.count(p) for p in ("scan[", "while["))


def _check(fn, *args, rtol=1e-12, loops=1):
    want = fn(*[np.array(a, copy=True) for a in args])
    got_args = [np.array(a, copy=True) for a in args]
    got = tracejit.jit(fn)(*got_args)
    want, got = (want if isinstance(want, tuple) else (want,)), (got if isinstance(got, tuple) else (got,))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=rtol, atol=rtol)
    if loops is not None:
        assert _loops(fn, *args) >= loops, "the loop was unrolled"


# ------------------------------------------------------------------- programs as scientists write them
def trisolve(L, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def cholesky(a):
    n = a.shape[0]
    l = np.zeros_like(a)
    for j in range(n):
        l[j, j] = np.sqrt(a[j, j] - l[j, :j] @ l[j, :j])
        l[j + 1:, j] = (a[j + 1:, j] - l[j + 1:, :j] @ l[j, :j]) / l[j, j]
    return l


def lu(a):
    n = a.shape[0]
    for k in range(n - 1):
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return a


def gauss(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            A[j, i:] -= A[j, i] / A[i, i] * A[i, i:]
    return A


def prefix_sums(x):
    n = x.shape[0]
    out = np.zeros_like(x)
    for i in range(n):
        for j in range(i):
            out[i] += x[j:i].sum()
    return out


def backward(U, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - U[i, i + 1:] @ x[i + 1:]) / U[i, i]
    return x


@pytest.fixture
def spd():
    rng = np.random.default_rng(0)
    m = rng.standard_normal((40, 40))
    return m @ m.T / 40 + np.eye(40)


def test_triangular_programs_compile_to_one_loop(spd):
    rng = np.random.default_rng(1)
    L = np.tril(rng.standard_normal((40, 40))) / 40 + 2 * np.eye(40)
    b = rng.standard_normal(40)
    _check(trisolve, L, b)
    _check(backward, L.T.copy(), b)
    _check(cholesky, spd)
    _check(lu, spd + 40 * np.eye(40))
    _check(gauss, spd + 40 * np.eye(40), loops=2)
    _check(prefix_sums, b, loops=2)


def test_float32_and_strided_views(spd):
    a = spd.astype(np.float32)
    _check(cholesky, a, rtol=1e-5)
    big = np.zeros((80, 80))
    big[::2, ::2] = spd
    view = big[::2, ::2]                       # a non-contiguous argument
    _check(cholesky, view)
    _check(cholesky, spd[::-1, ::-1].copy()[::-1, ::-1])


def test_values_outside_the_window_never_leak(spd):
    # NaN and inf outside what each slice reads (the upper triangle Cholesky never touches):
    # a masked contraction that multiplied them by zero would give NaN.
    a = spd.copy()
    a[np.triu_indices(40, 1)] = np.nan
    a[0, 39] = np.inf
    _check(cholesky, a)
    rng = np.random.default_rng(2)
    L = np.tril(rng.standard_normal((40, 40))) / 40 + 2 * np.eye(40)
    L[np.triu_indices(40, 1)] = -np.inf
    _check(trisolve, L, rng.standard_normal(40))


def test_nan_inside_a_window_propagates_as_in_numpy(spd):
    a = spd.copy()
    a[20, 5] = np.nan                          # read by column 5's update: NaN from there on
    want = cholesky(a.copy())
    got = tracejit.jit(cholesky)(a.copy())
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=1e-12)


# ------------------------------------------------------------------------------- NumPy semantics
def view_written_through(A):
    s = 0.0
    for i in range(A.shape[0]):
        t = A[i, :i]
        t *= 0.5                              # writes A, as NumPy's view does
        s = s + t.sum() + A[i, :i].sum()
    return s, A


def derived_array_alias(A):
    out = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        u = A[i, :i] * 2
        w = u
        u += 1                                # the same array object: w sees it
        out[i] = w.sum()
    return out


def reductions_and_where(A, v):
    s = 0.0
    x = np.zeros_like(v)
    for i in range(1, A.shape[0]):
        s = s + np.max(A[:i, i]) - A[i, :i].min() + np.prod(np.tanh(v[:i]) + 1.0)
        s = s + (A[:i, :i] * v[:i]).sum() + A[i:, :i].sum(axis=0).sum()
        x[:i] = np.where(A[:i, i] > 0, A[:i, i], -v[:i])
        x[n_minus(i):] += 1.0
    return s, x


def n_minus(i):
    return -i


def test_numpy_semantics_in_masked_bodies(spd):
    rng = np.random.default_rng(3)
    _check(view_written_through, spd)
    _check(derived_array_alias, spd)
    _check(reductions_and_where, spd, rng.standard_normal(40), loops=None)


def jax_style(x):
    y = jnp.asarray(x)
    s = 0.0
    for i in range(y.shape[0]):
        t = y[:i]
        t += 1.0                              # JAX: rebinds t, y is unchanged
        s = s + t.sum() + y[:i].sum()
    return s


def test_jax_semantics_in_masked_bodies():
    x = np.random.default_rng(4).standard_normal(30)
    want = sum(2 * x[:i].sum() + i for i in range(30))
    np.testing.assert_allclose(jax_style(x), want, rtol=1e-12)
    np.testing.assert_allclose(tracejit.jit(jax_style)(x), want, rtol=1e-12)


def immutable(x):
    y = jnp.asarray(x)
    for i in range(y.shape[0]):
        y[:i] = 0.0
    return y


def test_jax_arrays_stay_immutable():
    with pytest.raises(TypeError, match="immutable"):
        tracejit.jit(immutable)(np.ones(20))


# ----------------------------------------------------------------------- what is not converted
def clamped_bounds(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i - 3:i + 5].sum()          # i - 3 wraps around, i + 5 is clamped: unrolled
    return s


def non_affine(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[: i // 2].sum()
    return s


def maybe_empty_max(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[:i].max()                   # NumPy raises at i = 0
    return s


def test_unconverted_slices_unroll_with_numpy_values():
    x = np.random.default_rng(5).standard_normal(24)
    _check(clamped_bounds, x, loops=None)
    _check(non_affine, x, loops=None)
    with pytest.raises(ValueError):
        maybe_empty_max(x)
    with pytest.raises(ValueError):
        tracejit.jit(maybe_empty_max)(x)


def test_masked_slices_can_be_switched_off(monkeypatch, spd):
    monkeypatch.setattr(runtime, "MASKED_SLICES", False)
    assert _loops(cholesky, spd[:20, :20]) == 0
    _check(cholesky, spd[:20, :20], loops=None)


def view_of_outer_array_written_in_body(A):
    s = 0.0
    for i in range(A.shape[0]):
        t = A[:, i]                           # A itself is not assigned in the loop
        t *= 0.5
        s = s + t.sum()
    return s, A


def test_view_of_enclosing_array_written_in_a_compiled_body(spd):
    # Regression (masked-slice fuzzer, seed 12): the write through t went into A's buffer from
    # inside the loop body's trace and leaked a tracer out of it.
    _check(view_of_outer_array_written_in_body, spd[:20, :20], loops=None)


# ------------------------------------------------------------------------------------ the fuzzer
def test_masked_loop_fuzzer_fixed_seeds():
    masked, findings = masked_loops.campaign(0, 40, unrolled=False, verbose=False)
    assert findings == []
    assert masked >= 8, f"only {masked} of 40 programs ran as masked loops: the fuzzer tests little"
