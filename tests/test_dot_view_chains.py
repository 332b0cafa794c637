"""Class fuzz: contractions whose operands are chains of transposes of stored arrays.

Covers two things the compiler does with such operands: a chain of transposes feeding a
``dot_general`` stays one view of the stored base (``compiler/fusion.py``, composed
permutations), and a batched product whose batch axes do not merge without a copy runs as
one product per index of its leading batch axis (``backends/cpu/runtime.py``). Each seed
builds random axis roles (batch, free, contracted), a random storage order per operand, a
random chain of 1-3 transposes, read by one product, two products, or a product and an
elementwise operation, and random input views (reversed or strided axes), with
sizes that reach both the host's BLAS and the generated products, and compares ``jit``
against NumPy's ``einsum`` in float64 (float32 and complex64 for some seeds).

``DOT_CHAIN_SEEDS=a:b`` runs another range (a campaign).
"""
from __future__ import annotations

import os
import string

import numpy as np
import pytest

import tracejit


def _seeds():
    spec = os.environ.get("DOT_CHAIN_SEEDS", "0:60")
    lo, hi = (int(v) for v in spec.split(":"))
    return range(lo, hi)


def _case(seed):
    rng = np.random.default_rng(seed)
    letters = iter(string.ascii_lowercase)
    sizes = [1, 2, 3, 5, 8, 16, 24, 40, 64, 96]

    def axes(count):
        return [next(letters) for _ in range(count)]

    batch, m_free, n_free, contracted = (axes(int(rng.integers(lo, hi))) for lo, hi in
                                         ((0, 4), (0, 3), (0, 3), (1, 3)))
    size = {c: int(rng.choice(sizes)) for c in batch + m_free + n_free + contracted}
    budget = 1 << 22                    # multiply-adds: keep each case in milliseconds
    while np.prod([size[c] for c in size]) > budget:
        c = max(size, key=size.get)
        size[c] = max(1, size[c] // 2)
    lhs_axes, rhs_axes = batch + m_free + contracted, batch + contracted + n_free
    dtype = rng.choice([np.float64, np.float64, np.float32, np.complex64])

    def operand(logical):
        stored = list(rng.permutation(logical))        # the order the array is stored in
        base = rng.standard_normal([size[c] for c in stored])
        if np.dtype(dtype).kind == "c":
            base = base + 1j * rng.standard_normal(base.shape)
        base = base.astype(dtype)
        view = base
        if base.ndim and rng.random() < 0.4:             # a reversed or strided input view
            ax = int(rng.integers(base.ndim))
            wide = np.concatenate([base, base], axis=ax) if rng.random() < 0.5 else None
            view = np.flip(base, ax) if wide is None else np.take(wide, np.arange(0, wide.shape[ax], 2), axis=ax)
        chain, order = [], stored
        for _ in range(int(rng.integers(1, 4))):
            perm = [int(p) for p in rng.permutation(len(order))]
            chain.append(perm)
            order = [order[p] for p in perm]
        return view, chain, "".join(order)

    lhs, lchain, lspec = operand(lhs_axes)
    rhs, rchain, rspec = operand(rhs_axes)
    out_spec = "".join(batch + m_free + n_free)
    spec = f"{lspec},{rspec}->{out_spec}"
    # how the transposed lhs is read besides the product: not at all, by a second product (it
    # stays a view for both), or by an elementwise operation too (it must be materialized); drawn
    # from its own generator so that the seeds' other choices are unchanged
    reuse = int(np.random.default_rng(seed + 1_000_003).integers(3))

    def fn(x, y, xp=np):
        for perm in lchain:
            x = xp.transpose(x, perm)
        for perm in rchain:
            y = xp.transpose(y, perm)
        out = xp.einsum(spec, x, y)
        if reuse == 1:
            return out, xp.einsum(spec, x, y * 0.5 - 1.0)
        if reuse == 2:
            return out, x * 2.0
        return out

    return fn, lhs, rhs, spec, int(np.prod([size[c] for c in contracted]))


@pytest.mark.parametrize("seed", _seeds())
def test_contraction_of_transpose_chains(seed):
    fn, lhs, rhs, spec, length = _case(seed)
    got = tracejit.jit(fn)(lhs, rhs)
    wide = np.complex128 if lhs.dtype.kind == "c" else np.float64
    want = fn(lhs.astype(wide), rhs.astype(wide))
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    eps = np.finfo(lhs.dtype).eps
    # |sum| bound (the second product's rhs is y / 2 - 1: at most 1.5 times larger)
    scale = np.abs(lhs).max(initial=1.0) * (np.abs(rhs).max(initial=1.0) + 1.0) * length
    tol = 4 * eps * np.sqrt(length) + 1e-2 * eps * length
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == lhs.dtype, (spec, g.shape, w.shape, g.dtype)
        np.testing.assert_allclose(g, w, rtol=0, atol=tol * scale, err_msg=spec)
