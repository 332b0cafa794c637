"""Two-branch conds of a few safe scalar operations become both sides and a select
(compiler/passes/cheap_conds.py): same values as the cond, no trap from the untaken side."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax


def _conds(fn, *args) -> int:
    # The plan's conds (the program text above it shows loop bodies as traced, before their passes).
    return tracejit.jit(fn).lower(*args).as_text().count("loop cond ->")


def _same(fn, *args):
    got = tracejit.jit(fn)(*args)
    want = tracejit.jit(fn, backend="reference")(*args)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    return got


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 7])
def test_scalar_switch_becomes_a_select_with_conds_clamping(index):
    def f(i, x):
        return lax.switch(i, [lambda x: x * 2.0 + 1.0, lambda x: jnp.sqrt(jnp.abs(x)) - 3.0], x)
    x = np.float64(-2.5)
    _same(f, np.int32(index), x)
    assert _conds(f, np.int32(index), x) == 0


def test_untaken_side_cannot_trap_or_read_out_of_bounds():
    table = np.arange(10, dtype=np.int64)

    def f(k, d, t):
        # Only taken when d != 0 and k is a valid index; the other side divides by d and reads t[k].
        safe = (d != 0) & (k >= 0) & (k < 10)
        return lax.cond(safe, lambda k, d: t[k] // d + t[k] % d, lambda k, d: k * 0 - 1, k, d)
    for k, d in ((3, 2), (3, 0), (-50, 3), (99, 0), (0, -1)):
        got = _same(f, np.int64(k), np.int64(d), table)
        assert int(got) == (table[k] // d + table[k] % d if d != 0 and 0 <= k < 10 else -1)
    assert _conds(f, np.int64(1), np.int64(1), table) == 0


def test_values_of_each_side_are_kept_exactly():
    def f(p, x):
        return lax.cond(p, lambda x: (x * np.nan, -x), lambda x: (x / 0.0, x - 0.0), x)
    for p in (True, False):
        for x in (np.float64(-0.0), np.float64(np.inf), np.float64(3.0)):
            got = tracejit.jit(f)(p, x)
            want = tracejit.jit(f, backend="reference")(p, x)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
                assert np.signbit(g) == np.signbit(w)


def test_large_or_unsafe_branches_stay_conds():
    big = np.arange(40.0)

    def large(p, x):
        return lax.cond(p, lambda x: x * 2, lambda x: x - 1, x)

    def with_loop(p, x):
        return lax.cond(p, lambda x: lax.fori_loop(0, 3, lambda i, v: v * 2, x), lambda x: x, x)

    def with_scatter(p, x, i):
        return lax.cond(p, lambda x: x.at[i].set(0.0), lambda x: x, x)
    assert _conds(large, True, big) == 1
    assert _conds(with_loop, True, np.float64(1.0)) == 1
    assert _conds(with_scatter, True, np.arange(3.0), 1) == 1
    _same(large, False, big)
    _same(with_scatter, True, np.arange(3.0), 1)


def test_nussinov_style_body_is_one_kernel_per_iteration():
    # The if-statements of a DP cell update (autograph conds) fuse with the cell's reads.
    def dp(seq):
        n = seq.shape[0]
        t = np.zeros((n, n), dtype=np.int64)
        for i in range(n - 1, -1, -1):
            for j in range(i + 1, n):
                best = t[i, j - 1]
                if i + 1 < n:
                    best = max(best, t[i + 1, j])
                if seq[i] + seq[j] == 3:
                    best = max(best, t[i + 1, j - 1] + 1)
                t[i, j] = best
        return t
    seq = np.random.default_rng(0).integers(0, 4, 40)
    np.testing.assert_array_equal(tracejit.jit(dp)(seq), dp(seq))
    assert _conds(dp, seq) == 0
