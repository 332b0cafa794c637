"""zeta(s, q) for q < 0 (and polygamma there), poch / comb with a large first argument.

References are mpmath at 40 digits. mpmath's own ``zeta(s, q)`` is wrong for q below about
-100 (zeta(6, -157.01) gives -2e-12, true 2.9e11), so the zeta reference is the explicit sum of
the negative terms plus mpmath's zeta at a positive argument.

Measured worst relative errors (seeded sweeps below, eager and under jit alike):
zeta, q in (-200, -9.5), s = 2..6: 6.4e-15 relative, 8.3e-16 relative to sum |q + k|^-s (odd s
cancels: zeta(3, -20.5) = 1.1e-3 from terms up to 8, 5.6e-13 relative); q in (-9.5, 0): 3.1e-15; poch, z in (1e6, 1e15): 4.4e-16;
comb, N in (1e6, 1e15): 6.7e-16 (integers), 2.7e-15 (non-integers).
Before the fix: zeta(2, -20.5) = -0.048 (true 9.82), poch(1e15, 0.5) = 8.9e6 (true 3.2e7),
comb(1e10, 1) = 9999974587.
"""
import mpmath as mp
import numpy as np
import pytest

import tracejit
from tracejit.scipy import special as sp

mp.mp.dps = 40


def _zeta_ref(s, q, absolute=False):
    """sum (q + k)^-s, or with ``absolute`` sum |q + k|^-s (the scale of the rounding error:
    for odd s the terms cancel, e.g. zeta(3, -20.5) = 1.1e-3 from terms up to 8)."""
    q = mp.mpf(float(q))
    n = int(mp.ceil(-q)) + 2
    f = abs if absolute else (lambda x: x)
    return float(mp.fsum(f(q + k) ** (-int(s)) for k in range(n)) + mp.zeta(int(s), q + n))


def _check_zeta(got, ref, scale, tol=4e-15):
    err = np.abs(np.asarray(got) - ref) / scale
    assert err.max() <= tol, (err.max(), np.argmax(err))


def _run(f, jit, *args):
    return np.asarray(tracejit.jit(f)(*args) if jit else f(*args))


@pytest.mark.parametrize("jit", [False, True])
def test_zeta_polygamma_known_values(jit):
    got = _run(lambda s, q: sp.zeta(s, q), jit, np.array([2.0, 2.0]), np.array([-20.5, -11.7]))
    np.testing.assert_allclose(got, [9.821994344649879, 14.997492274579644], rtol=1e-14)
    got = _run(lambda x: sp.polygamma(np.array([1.0, 3.0]), x), jit, np.array([-10.3, -10.3]))
    np.testing.assert_allclose(got, [14.98688706572264, 769.0193334243987], rtol=1e-14)


@pytest.mark.parametrize("jit", [False, True])
def test_zeta_negative_q_sweep(jit):
    rng = np.random.default_rng(0)
    q = np.concatenate([rng.uniform(-200.0, -9.5, 60), rng.uniform(-9.5, -0.01, 20)])
    s = rng.integers(2, 7, q.size).astype(float)
    ref = np.array([_zeta_ref(a, b) for a, b in zip(s, q)])
    scale = np.array([_zeta_ref(a, b, True) for a, b in zip(s, q)])
    _check_zeta(_run(lambda a, b: sp.zeta(a, b), jit, s, q), ref, scale)
    np.testing.assert_allclose(_run(lambda a, b: sp.zeta(a, b), jit, s, q)[s % 2 == 0], ref[s % 2 == 0],
                               rtol=4e-15)
    # polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x)
    n = s - 1.0
    fact = np.array([float(mp.factorial(int(k))) for k in n])
    _check_zeta(_run(lambda a, b: sp.polygamma(a, b), jit, n, q), (-1.0) ** (n + 1) * fact * ref, fact * scale)


def test_zeta_negative_q_vmap_grad_and_far():
    q = np.array([-20.5, -57.3, -150.9])
    ref = np.array([_zeta_ref(3, x) for x in q])
    _check_zeta(tracejit.vmap(lambda x: sp.zeta(3.0, x))(q), ref, np.array([_zeta_ref(3, x, True) for x in q]))
    # d/dq zeta(s, q) = -s zeta(s + 1, q)
    g = np.asarray(tracejit.vmap(tracejit.grad(lambda x: sp.zeta(3.0, x)))(q))
    np.testing.assert_allclose(g, [-3.0 * _zeta_ref(4, x) for x in q], rtol=4e-15)
    # far out (no loop over the 1e6 terms): zeta(2, -1e6 - 1/2) = 2 zeta(2, 1/2) - zeta(2, 1e6 + 3/2)
    far = float(sp.zeta(2.0, -1e6 - 0.5))
    want = float(2 * mp.zeta(2, mp.mpf(0.5)) - mp.zeta(2, mp.mpf(1e6) + mp.mpf(1.5)))
    assert abs(far / want - 1) < 1e-14
    # positive q, poles and non-integer s for q < 0 are unchanged
    got = np.asarray(sp.zeta(np.array([2.0, 2.0, 2.5]), np.array([1.0, -3.0, -3.5])))
    assert got[0] == pytest.approx(np.pi ** 2 / 6, rel=1e-15) and got[1] == np.inf and np.isnan(got[2])


@pytest.mark.parametrize("jit", [False, True])
def test_poch_large_z(jit):
    z = np.array([1e15, 1e15, 1e10])
    m = np.array([0.5, 3.0, 1e-10])
    got = _run(lambda a, b: sp.poch(a, b), jit, z, m)
    np.testing.assert_allclose(got, [31622776.601683788, 1.000000000000003e45, 1.000000002302585], rtol=2e-15)
    rng = np.random.default_rng(1)
    z = 10 ** rng.uniform(6, 15, 80)
    m = np.concatenate([10 ** rng.uniform(-12, 0, 30), rng.uniform(0, 20, 30), -rng.uniform(0, 50, 20)])
    ref = np.array([float(mp.rf(mp.mpf(a), mp.mpf(b))) for a, b in zip(z, m)])
    np.testing.assert_allclose(_run(lambda a, b: sp.poch(a, b), jit, z, m), ref, rtol=4e-15)


@pytest.mark.parametrize("jit", [False, True])
def test_comb_large_n(jit):
    got = _run(lambda a, b: sp.comb(a, b), jit, np.array([1e10, 1e10]), np.array([1.0, 3.0]))
    assert got[0] == 1e10
    np.testing.assert_allclose(got[1], 1.6666666661666667e29, rtol=2e-15)
    rng = np.random.default_rng(2)
    n = np.concatenate([np.round(10 ** rng.uniform(6, 15, 40)), 10 ** rng.uniform(6, 15, 40)])
    k = np.concatenate([rng.integers(0, 12, 40).astype(float), rng.uniform(0, 12, 40)])
    ref = np.array([float(mp.binomial(mp.mpf(a), mp.mpf(b))) for a, b in zip(n, k)])
    np.testing.assert_allclose(_run(lambda a, b: sp.comb(a, b), jit, n, k), ref, rtol=1e-14)
