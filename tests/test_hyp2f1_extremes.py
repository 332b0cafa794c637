"""hyp2f1 outside its usual ranges: large ``c`` against ``a`` and ``b`` (the 1 - z transformation
overflowed to NaN there; the power series converges fast) and ``x < 0`` with ``b`` large (Pfaff's
transformation with ``a`` and ``b`` swapped, whose terms have one sign). Against mpmath (50 digits),
eagerly, under ``jit`` and ``vmap``, and ``jit(grad)`` in ``x`` against central differences.
"""
import mpmath as mp
import numpy as np
import pytest

import tracejit
from tracejit.scipy import special as sp

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

RNG = np.random.default_rng(20261206)


def _ref(a, b, c, x):
    with mp.workdps(50):
        return float(mp.hyp2f1(a, b, c, x, maxterms=10 ** 6))


def _rel(got, ref):
    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    return np.abs(got - ref) / np.abs(ref)


CASES = [  # (a, b, c, x), mpmath's value
    (0.5, -3.3, 10000.0, 0.9, 0.9998515230500726),
    (-0.5, 0.5, 10000.0, 0.9, 0.9999774992406155),
    (1.0, 1.0, 100000.0, 0.99, 1.0000099001960239),
    (1.0, 500.0, 1.5, -0.5, 0.0020080566673217),
    (0.5, 500.0, 1.5, -1.0, 0.0396630289268305),
]


def _large_c(n):
    a, b = RNG.uniform(-10, 10, n), RNG.uniform(-10, 10, n)
    c = np.exp(RNG.uniform(np.log(256.0), np.log(1e6), n))
    x = RNG.uniform(-1, 0.999, n)
    return a, b, c, x


def _large_b(n):
    a, b = RNG.uniform(-10, 10, n), RNG.uniform(50, 1000, n)
    c = RNG.uniform(0.1, 10, n)
    c = np.where(c > a, c, a + 0.5)
    x = RNG.uniform(-1, 0, n)
    return a, b, c, x


@pytest.mark.parametrize("jit", [False, True])
def test_cases(jit):
    a, b, c, x, ref = (np.array(v) for v in zip(*CASES))
    f = tracejit.jit(sp.hyp2f1) if jit else sp.hyp2f1
    err = _rel(f(a, b, c, x), ref)
    assert err.max() < 1e-13, err      # measured: 1.3e-14 (2F1(1, 500; 1.5; -0.5))
    one = float(f(0.5, -3.3, 10000.0, 0.9))
    assert one == pytest.approx(CASES[0][4], rel=1e-14)


# measured worst relative errors (1000 random points each): large c 2.3e-16, large b 2.4e-13
@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("kind,rtol", [("large_c", 1e-14), ("large_b", 2e-12)])
def test_sweep_vs_mpmath(kind, rtol, jit):
    a, b, c, x = (_large_c if kind == "large_c" else _large_b)(25)
    f = tracejit.jit(sp.hyp2f1) if jit else sp.hyp2f1
    ref = np.array([_ref(*p) for p in zip(a, b, c, x)])
    err = _rel(f(a, b, c, x), ref)
    assert np.all(np.isfinite(err)) and err.max() < rtol, (err.max(), np.argmax(err))


def test_vmap_matches_eager():
    a, b, c, x, ref = (np.array(v) for v in zip(*CASES))
    v = tracejit.vmap(sp.hyp2f1)(a, b, c, x)
    assert _rel(v, ref).max() < 1e-13
    np.testing.assert_array_equal(np.asarray(v), np.asarray(sp.hyp2f1(a, b, c, x)))


@pytest.mark.parametrize("a,b,c,x", [p[:4] for p in CASES])
def test_grad_x_vs_central_differences(a, b, c, x):
    g = float(tracejit.jit(tracejit.grad(lambda t: sp.hyp2f1(a, b, c, t)))(x))
    h = 1e-5 * max(1.0, abs(x))
    with mp.workdps(50):
        fd = float((mp.hyp2f1(a, b, c, x + h) - mp.hyp2f1(a, b, c, x - h)) / (2 * h))
    assert np.isfinite(g) and g == pytest.approx(fd, rel=1e-7, abs=1e-12)


# Large |a| or |b| (> 20) with x < 1: the series at z = x/(x-1), its 1 - z transformation and the
# terminating forms all cancel or overflow there; the hypergeometric equation is now integrated from
# 0 to x by Taylor steps. Old values: 2F1(1000, 500; 10; -0.5) inf (true 1.27e-152),
# 2F1(100.5, 50.2; 3.3; -0.9) 2.5e-15 (true 2.6e-27), 2F1(-150.5, 80; 2.5; -2) 1.0989e123 (true
# 1.0977e123), 2F1(264.6, -179.1; 0.544; -1.82) inf (true 1.37e191). Measured (jit, 120 random points,
# a, b in [-300, 300], c in [0.5, 100], x in [-3, 0.95]): worst 1.2e-13 relative.
LARGE = [(1000.0, 500.0, 10.0, -0.5), (100.5, 50.2, 3.3, -0.9), (-150.5, 80.0, 2.5, -2.0),
         (264.6005851455611, -179.10304315111097, 0.5442934656993261, -1.8247356124129537),
         (20.5, 30.2, 1.5, -5.0)]


def test_large_parameters_points():
    a, b, c, x = (np.array(v) for v in zip(*LARGE))
    ref = np.array([_ref(*p) for p in LARGE])
    err = _rel(tracejit.jit(sp.hyp2f1)(a, b, c, x), ref)
    assert np.all(np.isfinite(err)) and err.max() < 1e-12, err


def test_large_parameters_sweep():
    rng = np.random.default_rng(77)
    n = 16
    a, b = np.abs(rng.uniform(-300, 300, n)) + 20, rng.uniform(-300, 300, n)
    c = 10 ** rng.uniform(-0.3, 2, n)
    x = rng.uniform(-3, 0.95, n)
    ref = np.array([_ref(*p) for p in zip(a, b, c, x)])
    keep = np.isfinite(ref) & (np.abs(ref) > 1e-300) & (np.abs(ref) < 1e300)
    err = _rel(tracejit.jit(sp.hyp2f1)(a, b, c, x), ref)[keep]
    assert np.all(np.isfinite(err)) and err.max() < 1e-11, (err.max(), np.argmax(err))


def test_large_parameters_grad_x():
    a, b, c, x = 1000.0, 500.0, 10.0, -0.5          # old: NaN
    g = float(tracejit.jit(tracejit.grad(lambda t: sp.hyp2f1(a, b, c, t)))(x))
    with mp.workdps(50):
        ref = float(mp.diff(lambda t: mp.hyp2f1(a, b, c, t), mp.mpf(x)))
    assert g == pytest.approx(ref, rel=1e-11)
