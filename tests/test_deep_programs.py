"""Programs whose dependency chains are hundreds of operations deep (an unrolled loop's
``s = f(s)``) compile: fusion stores every MAX_FUSED_DEPTH-th value of a chain and merging
stops before code generation's recursion would overflow (found by the masked-slice fuzzer)."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit


def chain(x, n):
    s = x[0]
    v = x
    for k in range(n):
        s = np.sqrt(np.abs(s * 1.0001 + x[k % 5]))       # a scalar chain
        v = np.tanh(v * 0.9 + s)                           # a vector chain reading it
    return s, v


@pytest.mark.parametrize("n", [200, 700])
def test_long_unrolled_chains_compile_and_match_numpy(n):
    x = np.random.default_rng(0).random(5)
    got = tracejit.jit(chain, static_argnums=1, autograph=False)(x, n)
    want = chain(x, n)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
