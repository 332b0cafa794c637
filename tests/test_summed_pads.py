"""Sums of non-overlapping zero pads as concatenations (compiler/passes/summed_pads.py).

The gradient of slicing one array into pieces is the sum of the pieces' cotangents, each padded
back to the array's shape. Where the pieces do not overlap the pass writes the sum as one
concatenation (zero blocks in the gaps). The result must be the sum exactly: values bit for bit
(a piece's -0.0 becomes +0.0, as adding a zero pad makes it), every dtype, and no rewrite where
pieces overlap, pad different axes, or a pad is used twice.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind in "fc":
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(got[ok], want[ok])
        np.testing.assert_array_equal(np.signbit(got.real[ok]), np.signbit(want.real[ok]))
    else:
        np.testing.assert_array_equal(got, want)


def _pads(pieces, widths, n, axis, dtype):
    """The sum of ``pieces`` zero-padded to ``n`` along ``axis`` at ``widths`` (start offsets), in NumPy."""
    total = None
    for p, start in zip(pieces, widths):
        cfg = [(0, 0)] * p.ndim
        cfg[axis] = (start, n - start - p.shape[axis])
        padded = np.pad(p, cfg)
        total = padded if total is None else total + padded
    return total.astype(dtype)


def _lax_sum(pieces, starts, n, axis):
    total = None
    for p, start in zip(pieces, starts):
        cfg = [(0, 0, 0)] * p.ndim
        cfg[axis] = (start, n - start - p.shape[axis], 0)
        padded = lax.pad(p, jnp.zeros((), p.dtype), cfg)
        total = padded if total is None else total + padded
    return total


CASES = [   # (piece widths, starts, n)
    ((4, 4, 4), (0, 4, 8), 12),      # tiles the axis: q, k, v
    ((3, 2), (1, 6), 10),            # gaps before, between and after
    ((5,), (2,), 9),                 # one pad alone is not a sum (kept)
    ((4, 4), (0, 2), 8),             # overlapping: not rewritten
    ((1, 1, 1, 1), (3, 0, 2, 1), 4),   # unordered starts
]


@pytest.mark.parametrize("widths,starts,n", CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("axis", [0, 1])
def test_sum_of_pads_is_exact(widths, starts, n, dtype, axis):
    rng = np.random.default_rng(len(widths) + n)
    other = 3
    pieces = []
    for w in widths:
        shape = (w, other) if axis == 0 else (other, w)
        v = rng.standard_normal(shape) * 4
        if np.dtype(dtype).kind == "c":
            v = v + 1j * rng.standard_normal(shape)
        v = v.astype(dtype)
        if np.dtype(dtype).kind in "fc":
            v.flat[0] = -0.0                      # the pad's addition makes it +0.0
            v.flat[-1] = np.nan if v.size > 1 else v.flat[-1]
        pieces.append(v)
    f = tracejit.jit(lambda *ps: _lax_sum(ps, starts, n, axis))
    _same_bits(f(*pieces), _pads(pieces, starts, n, axis, dtype))


def test_slicing_gradient_writes_no_pads():
    def loss(x):
        q, k, v = x[:, :4], x[:, 4:8], x[:, 8:]
        return (jnp.sin(q) * jnp.cos(k) * v).sum()

    x = np.random.default_rng(0).standard_normal((64, 12))
    g = tracejit.jit(tracejit.grad(loss))
    text = g.lower(x).compile().as_text()
    assert "pad(" not in text, text
    q, k, v = x[:, :4], x[:, 4:8], x[:, 8:]
    want = np.concatenate([np.cos(q) * np.cos(k) * v, -np.sin(q) * np.sin(k) * v, np.sin(q) * np.cos(k)], axis=1)
    np.testing.assert_allclose(g(x), want, rtol=1e-14, atol=1e-15)


def test_pads_of_different_axes_or_shared_pads_are_kept():
    a, b = np.ones((2, 3)), np.full((2, 3), 2.0)
    f = tracejit.jit(lambda a, b: lax.pad(a, 0.0, [(0, 2, 0), (0, 0, 0)]) + lax.pad(b, 0.0, [(2, 0, 0), (0, 0, 0)])
                     + lax.pad(a[:, :1], 0.0, [(0, 0, 0), (0, 2, 0)]).sum())
    want = np.pad(a, [(0, 2), (0, 0)]) + np.pad(b, [(2, 0), (0, 0)]) + np.pad(a[:, :1], [(0, 0), (0, 2)]).sum()
    _same_bits(f(a, b), want)

    def shared(a, b):
        pa = lax.pad(a, 0.0, [(0, 2, 0), (0, 0, 0)])
        return pa + lax.pad(b, 0.0, [(2, 0, 0), (0, 0, 0)]), pa * 3
    got = tracejit.jit(shared)(a, b)
    pa = np.pad(a, [(0, 2), (0, 0)])
    _same_bits(got[0], pa + np.pad(b, [(2, 0), (0, 0)]))
    _same_bits(got[1], pa * 3)


def test_long_chains_of_additions_compile():
    # 3,000 chained additions: the pass walks them iteratively (a recursive walk raised RecursionError)
    def chain(x):
        return functools.reduce(lambda s, i: s + x * i, range(3000), x)

    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_array_equal(tracejit.jit(chain)(x), x * (1 + sum(range(3000))))
