"""The jax.lax names composed in tracejit/lax/{special,elementwise,shapes,sorting,reductions,
dimension_numbers,shape_tuples}.py: values against NumPy/SciPy (eager and under jit),
edge cases, derivatives, vmap, and a direct comparison with jax.lax when JAX is installed."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
from tracejit import lax

from tests.helpers import assert_close, central_difference


def both(fn, *args, static_argnums=()):
    """``fn(*args)`` eagerly and under jit; the two results (pytrees of arrays)."""
    eager = fn(*args)
    jitted = tracejit.jit(fn, static_argnums=static_argnums)(*args)
    return eager, jitted


def check(fn, want, *args, rtol=0.0, atol=0.0):
    want_leaves, want_tree = tracejit.tree_flatten(want)
    for got in both(fn, *args):
        got_leaves, got_tree = tracejit.tree_flatten(got)
        assert got_tree == want_tree, (got_tree, want_tree)
        for g, w in zip(got_leaves, want_leaves):
            assert_close(g, w, rtol=rtol, atol=atol)


num_grad = central_difference


# --------------------------------------------------------------------------- special functions

SPECIAL_CASES = [
    ("erfc", "erfc", [np.array([-3.0, -0.5, 0.0, 0.5, 5.0, 30.0, np.inf, -np.inf, np.nan])]),
    ("erf_inv", "erfinv", [np.array([-1.0, -0.99, -0.3, 0.0, 0.3, 0.999999, 1.0, 1.5, np.nan])]),
    ("lgamma", "gammaln", [np.array([0.5, 1.0, 2.5, 10.0, 171.5, -0.5, -2.5, 1e-300, np.inf, np.nan])]),
    ("digamma", "digamma", [np.array([0.25, 1.0, 3.5, 20.0, -0.5, -1.5, 1e6, np.nan])]),
    ("igamma", "gammainc", [np.array([0.5, 1.0, 3.0, 20.0, 2.0]), np.array([0.1, 2.0, 3.0, 25.0, 0.0])]),
    ("igammac", "gammaincc", [np.array([0.5, 1.0, 3.0, 20.0, 2.0]), np.array([0.1, 2.0, 3.0, 25.0, 0.0])]),
    ("polygamma", "polygamma", [np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.5, 1.0, 2.5, 7.0])]),
    ("zeta", "zeta", [np.array([2.0, 3.0, 4.5, 1.5]), np.array([1.0, 2.0, 0.5, 3.0])]),
    ("bessel_i0e", "i0e", [np.array([0.0, 0.5, -2.0, 20.0, -50.0, 1e3, np.inf, np.nan])]),
    ("bessel_i1e", "i1e", [np.array([0.0, 0.5, -2.0, 20.0, -50.0, 1e3, np.nan])]),
    ("betainc", "betainc", [np.array([0.5, 1.0, 2.0, 5.0]), np.array([0.5, 1.0, 3.0, 0.7]),
                            np.array([0.3, 0.25, 0.9, 0.0])]),
]


@pytest.mark.parametrize("name,scipy_name,args", SPECIAL_CASES, ids=[c[0] for c in SPECIAL_CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_against_scipy(name, scipy_name, args, dtype):
    sp = pytest.importorskip("scipy.special")
    args = [a.astype(dtype) for a in args]
    with np.errstate(all="ignore"):
        want = getattr(sp, scipy_name)(*[a.astype(np.float64) for a in args]).astype(dtype)
    rtol = 1e-5 if dtype == np.float32 else 1e-11
    check(getattr(lax, name), want, *args, rtol=rtol, atol=1e-300)


def test_special_dtype_rules():
    assert lax.lgamma(np.float32(3.0)).dtype == np.float32
    assert lax.igamma(np.float32(1.0), 2.0).dtype == np.float32      # a Python scalar is weak
    with pytest.raises(TypeError, match="floating"):
        lax.lgamma(np.array([1, 2]))
    with pytest.raises(TypeError, match="same dtypes"):
        lax.igamma(np.float32(1.0), np.float64(2.0))


def test_special_grads():
    sp = pytest.importorskip("scipy.special")
    g = tracejit.grad(lambda x: lax.lgamma(x))(3.5)
    assert g == pytest.approx(sp.digamma(3.5), rel=1e-12)
    g = tracejit.grad(lambda x: lax.erfc(x))(0.7)
    assert g == pytest.approx(-2 / np.sqrt(np.pi) * np.exp(-0.49), rel=1e-12)
    g = tracejit.grad(lambda x: lax.erf_inv(x))(0.3)
    assert g == pytest.approx(np.sqrt(np.pi) / 2 * np.exp(sp.erfinv(0.3) ** 2), rel=1e-10)
    _, ga = tracejit.jvp(lambda a: lax.igamma(a, 1.5), (2.5,), (1.0,))
    _, gx = tracejit.jvp(lambda x: lax.igamma(2.5, x), (1.5,), (1.0,))
    assert gx == pytest.approx(num_grad(lambda x: sp.gammainc(2.5, x), 1.5), rel=1e-6)
    assert ga == pytest.approx(num_grad(lambda a: sp.gammainc(a, 1.5), 2.5), rel=1e-6)
    g = tracejit.grad(lambda x: lax.bessel_i0e(x))(1.3)
    assert g == pytest.approx(num_grad(sp.i0e, 1.3), rel=1e-6)


def test_igamma_reverse_mode():
    sp = pytest.importorskip("scipy.special")
    gx = tracejit.grad(lambda x: lax.igamma(2.5, x))(1.5)
    assert gx == pytest.approx(num_grad(lambda x: sp.gammainc(2.5, x), 1.5), rel=1e-6)


def test_special_vmap():
    sp = pytest.importorskip("scipy.special")
    a = np.array([[0.5, 1.0], [2.0, 4.0]])
    x = np.array([[1.0, 2.0], [0.5, 3.0]])
    got = tracejit.vmap(lax.igammac)(a, x)
    np.testing.assert_allclose(got, sp.gammaincc(a, x), rtol=1e-12)


# --------------------------------------------------------------------------- integer bit functions

INT_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def _int_sample(dt):
    info = np.iinfo(dt)
    vals = [0, 1, 2, 3, 7, 100, info.max, info.min, info.max // 3, info.max - 1]
    if info.min < 0:
        vals += [-1, -2, -100, info.min + 1]
    return np.array(vals, dtype=dt)


def _bits(x):
    """Python ints of the two's-complement bits of each element."""
    n = 8 * x.dtype.itemsize
    return [int(v) % (1 << n) for v in x.tolist()], n


@pytest.mark.parametrize("dt", INT_DTYPES)
def test_population_count_and_clz(dt):
    x = _int_sample(dt)
    bits, n = _bits(x)
    pop = np.array([bin(b).count("1") for b in bits], dtype=dt)
    lead = np.array([n - b.bit_length() for b in bits], dtype=dt)
    check(lax.population_count, pop, x)
    check(lax.clz, lead, x)


def test_bit_functions_empty_and_scalar():
    check(lax.population_count, np.zeros((0, 3), np.uint32), np.zeros((0, 3), np.uint32))
    check(lax.clz, np.array(8, np.int64).astype(np.int64) * 0 + 63, np.int64(1))
    with pytest.raises(TypeError, match="integer"):
        lax.population_count(np.array([1.0]))


@pytest.mark.parametrize("dt", INT_DTYPES)
def test_shift_right_logical(dt):
    x = _int_sample(dt)
    bits, n = _bits(x)
    shifts = np.array([(3 * i) % (n + 3) for i in range(len(x))], dtype=dt)
    want = np.array([(b >> s) if s < n else 0 for b, s in zip(bits, shifts.tolist())], dtype=np.uint64)
    want = want.astype(np.dtype(f"uint{n}")).astype(dt)
    check(lax.shift_right_logical, want, x, shifts)
    if np.dtype(dt).kind == "i":      # a negative shift amount is huge as unsigned: 0
        check(lax.shift_right_logical, np.zeros(len(x), dt), x, np.full(len(x), -1, dt))


@pytest.mark.parametrize("dt", INT_DTYPES)
def test_mulhi(dt):
    x = _int_sample(dt)
    y = np.roll(x, 3)
    n = 8 * np.dtype(dt).itemsize
    want = np.array([((int(a) * int(b)) >> n) for a, b in zip(x.tolist(), y.tolist())], dtype=object)
    want = np.array([int(w) % (1 << n) for w in want], dtype=np.uint64).astype(np.dtype(f"uint{n}")).astype(dt)
    check(lax.mulhi, want, x, y)


def test_bitcast_convert_type_integers_jit_and_eager():
    x = np.array([[258, 65535], [0, 4660]], np.uint16)
    for new in (np.uint8, np.int8, np.int16):
        check(lambda v, new=new: lax.bitcast_convert_type(v, new), x.reshape(x.shape + (1,)).view(new).reshape(
            x.shape + ((2,) if np.dtype(new).itemsize == 1 else ())), x)
    y = np.array([[1, 2, 3, 4], [255, 255, 255, 255]], np.uint8)
    check(lambda v: lax.bitcast_convert_type(v, np.int32), y.view(np.int32).reshape(2), y)
    z = np.array([-1, 2**40 + 7], np.int64)
    check(lambda v: lax.bitcast_convert_type(v, np.uint16), z.reshape(2, 1).view(np.uint16), z)


def test_bitcast_convert_type_floats():
    x = np.array([1.0, -0.0, np.inf, 1e-45, -3.4e38, np.nan], np.float32)
    check(lambda v: lax.bitcast_convert_type(v, np.uint32), x.view(np.uint32), x)
    check(lambda v: lax.bitcast_convert_type(v, np.float32), x, x.view(np.uint32))
    assert_close(lax.bitcast_convert_type(np.array([1.0]), np.uint32), np.array([1.0]).reshape(1, 1).view(np.uint32))
    check(lambda v: lax.bitcast_convert_type(v, np.uint32), np.array([1.0, -2.5]).reshape(2, 1).view(np.uint32),
          np.array([1.0, -2.5]))
    with pytest.raises(ValueError, match="last axis"):       # JAX raises ValueError here
        lax.bitcast_convert_type(np.zeros(3, np.uint8), np.uint16)


def test_bit_functions_vmap():
    x = np.arange(12, dtype=np.uint32).reshape(3, 4) * 1000
    assert_close(tracejit.vmap(lax.population_count)(x), lax.population_count(x))
    assert_close(tracejit.vmap(lax.clz, in_axes=1, out_axes=1)(x), lax.clz(x))


# --------------------------------------------------------------------------- clamp / reciprocal

def test_clamp_values():
    x = np.array([-2.0, 0.0, 0.3, 1.0, 5.0, np.nan, -np.inf])
    want = np.array([0.0, 0.0, 0.3, 1.0, 1.0, np.nan, 0.0])
    check(lambda v: lax.clamp(0.0, v, 1.0), want, x)
    lo, hi = np.array([0.0, 1.0, 0.0]), np.array([1.0, 2.0, 0.5])
    check(lax.clamp, np.array([0.0, 1.5, 0.5]), lo, np.array([-1.0, 1.5, 3.0]), hi)
    check(lambda v: lax.clamp(np.int8(-3), v, np.int8(3)), np.array([-3, 0, 3], np.int8), np.array([-100, 0, 100], np.int8))
    with pytest.raises(TypeError):
        lax.clamp(np.zeros(2), np.zeros(3), 1.0)


def test_clamp_grads_follow_jax():
    g = tracejit.grad(lambda x: lax.clamp(0.0, x, 1.0))
    assert [float(g(v)) for v in (-1.0, 0.0, 0.5, 1.0, 2.0)] == [0.0, 0.0, 1.0, 0.0, 0.0]
    g_lo = tracejit.grad(lambda lo: lax.clamp(lo, 0.5, 1.0))
    assert [float(g_lo(v)) for v in (0.0, 0.5, 0.7)] == [0.0, 0.0, 1.0]
    g_hi = tracejit.grad(lambda hi: lax.clamp(0.0, 0.5, hi))
    assert [float(g_hi(v)) for v in (0.3, 0.5, 0.9)] == [1.0, 0.0, 0.0]


def test_reciprocal():
    x = np.array([2.0, -4.0, 0.0, -0.0, np.inf, np.nan], np.float32)
    with np.errstate(divide="ignore"):
        check(lax.reciprocal, np.reciprocal(x), x)
    assert float(tracejit.grad(lambda v: lax.reciprocal(v))(2.0)) == -0.25
    with pytest.raises(TypeError, match="inexact"):
        lax.reciprocal(np.array([1, 2]))


# --------------------------------------------------------------------------- creation and shapes

def test_full_family():
    check(lambda: lax.full((2, 3), 1.5), np.full((2, 3), 1.5))
    check(lambda v: lax.full((3,), v), np.full(3, np.float32(2.5)), np.float32(2.5))
    check(lambda v: lax.full((2, 0), v, np.int8), np.zeros((2, 0), np.int8), 3)
    check(lambda v: lax.full_like(v, 7), np.full((2,), 7, np.int32), np.zeros(2, np.int32))
    check(lambda v: lax.full_like(v, 1, np.float32, (1, 2)), np.ones((1, 2), np.float32), np.zeros(2))
    assert_close(lax.full_like(tracejit.ShapeDtypeStruct((2,), np.float32), 3.0), np.full(2, 3.0, np.float32))
    e = lax.empty((2, 2), np.float32)
    assert e.shape == (2, 2) and e.dtype == np.float32
    with pytest.raises(TypeError, match="scalar"):
        lax.full((2,), np.ones(2))


def test_broadcast_helpers():
    assert lax.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert lax.broadcast_shapes((), (1,), (4, 1)) == (4, 1)
    assert lax.broadcast_shapes((5,)) == (5,)
    with pytest.raises(ValueError):
        lax.broadcast_shapes((2,), (3,))
    check(lambda v: lax.broadcast_to_rank(v, 3), np.ones((1, 1, 3)), np.ones(3))
    check(lambda v, w: lax.broadcast_like(v, w), np.broadcast_to(np.arange(3.0)[:, None], (2, 3, 4)),
          np.arange(3.0)[:, None], np.zeros((2, 3, 4)))


def test_collapse_split_tile_stack():
    x = np.arange(24.0).reshape(2, 3, 4)
    check(lambda v: lax.collapse(v, 1), x.reshape(2, 12), x)
    check(lambda v: lax.collapse(v, 0, 2), x.reshape(6, 4), x)
    check(lambda v: lax.collapse(v, -2, None), x.reshape(2, 12), x)
    check(lambda v: tuple(lax.split(v, (1, 0, 3), axis=-1)), tuple(np.split(x, [1, 1], axis=-1)), x)
    with pytest.raises(ValueError):
        lax.split(x, (1, 1), axis=1)
    check(lambda v: lax.tile(v, (2, 1, 3)), np.tile(x, (2, 1, 3)), x)
    check(lambda v: lax.tile(v, (0, 2, 1)), np.tile(x, (0, 2, 1)), x)
    check(lambda a, b: lax.stack([a, b], axis=-1), np.stack([x, -x], axis=-1), x, -x)
    check(lambda v: lax.unstack(v, axis=1), tuple(x[:, i] for i in range(3)), x)
    g = tracejit.grad(lambda v: (lax.tile(v, (3,)) * np.arange(6.0)).sum())(np.ones(2))
    assert_close(g, np.array([0 + 2 + 4, 1 + 3 + 5], np.float64))


def test_batch_matmul_and_index_updates():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 2, 3)), rng.standard_normal((4, 3, 5))
    check(lax.batch_matmul, a @ b, a, b, rtol=1e-12)
    with pytest.raises(ValueError):
        lax.batch_matmul(np.ones(3), np.ones((3, 3)))
    x = np.zeros((4, 3))
    want = x.copy()
    want[3] = [1.0, 2.0, 3.0]
    check(lambda v, i: lax.dynamic_update_index_in_dim(v, np.array([1.0, 2.0, 3.0]), i, 0), want, x, 10)
    want = x.copy()
    want[:, 1] = 5.0
    check(lambda v, i: lax.dynamic_update_index_in_dim(v, np.full((4, 1), 5.0), i, axis=1), want, x, -2)


def test_index_take():
    x = np.arange(24.0).reshape(2, 3, 4)
    i0, i2 = np.array([0, 1, -1, 5]), np.array([3, 0, 2, -5])
    want = np.stack([x[a % 2, :, b % 4] for a, b in zip(i0, i2)])
    check(lambda v, a, b: lax.index_take(v, (a, b), (0, 2)), want, x, i0, i2)
    check(lambda v, a: lax.index_take(v, (a,), (1,)), np.moveaxis(x[:, i2 % 3], 1, 0), x, i2)
    check(lambda v, a: lax.index_take(v, (a,), (0,)), np.zeros((0, 3, 4)), x, np.zeros(0, np.int32))
    g = tracejit.grad(lambda v: lax.index_take(v, (np.array([0, 0, 2]),), (0,)).sum())(np.arange(3.0))
    assert_close(g, np.array([2.0, 0.0, 1.0]))
    assert_close(tracejit.vmap(lambda r: lax.index_take(r, (np.array([2, 0]),), (0,)))(x[0]), x[0][:, [2, 0]])


def test_optimization_barrier_dtype_shape_as_value():
    tree = {"a": np.ones(2), "b": (np.int8(3), 2.0)}
    out = tracejit.jit(lax.optimization_barrier)(tree)
    assert_close(out["a"], np.ones(2))
    assert float(tracejit.grad(lambda v: lax.optimization_barrier(v * v))(3.0)) == 6.0
    assert lax.dtype(1.0) == np.float64 and lax.dtype(np.int8(1)) == np.int8 and lax.dtype("float32") == np.float32
    assert lax.dtype(np.zeros(2, np.complex64)) == np.complex64
    assert_close(lax.shape_as_value((2, 3)), np.array([2, 3], np.int32))
    assert lax.shape_as_value(()).shape == (0,)


# --------------------------------------------------------------------------- sorting

def test_sort_single_and_multi():
    x = np.array([3.0, np.nan, -0.0, 1.0, 0.0, -np.inf, 1.0])
    check(lax.sort, np.sort(x, kind="stable"), x)
    got = tracejit.jit(lax.sort)(x)
    assert np.signbit(got[1]) and not np.signbit(got[2])      # -0.0 and 0.0 keep their order
    k1 = np.array([1, 0, 1, 0, 1])
    k2 = np.array([5, 5, 2, 1, 2])
    v = np.arange(5.0)
    order = np.lexsort((k2, k1))
    check(lambda a, b, c: lax.sort((a, b, c), num_keys=2), (k1[order], k2[order], v[order]), k1, k2, v)
    order1 = np.argsort(k1, kind="stable")
    check(lambda a, b, c: lax.sort([a, b, c], num_keys=1), (k1[order1], k2[order1], v[order1]), k1, k2, v)
    m = np.random.default_rng(1).integers(0, 4, (3, 5))
    check(lambda a: lax.sort(a, dimension=0), np.sort(m, axis=0), m)
    check(lax.sort, np.zeros((2, 0)), np.zeros((2, 0)))
    with pytest.raises(ValueError):
        lax.sort((k1, k2), num_keys=3)


def test_sort_key_val_grad_vmap():
    keys = np.array([3.0, 1.0, 2.0])
    vals = np.array([30.0, 10.0, 20.0])
    check(lax.sort_key_val, (np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])), keys, vals)
    g = tracejit.grad(lambda v: (lax.sort_key_val(keys, v)[1] * np.array([1.0, 2.0, 3.0])).sum())(vals)
    assert_close(g, np.array([3.0, 1.0, 2.0]))
    m = np.array([[2.0, 1.0, 3.0], [0.0, 5.0, -1.0]])
    assert_close(tracejit.vmap(lax.sort)(m), np.sort(m, axis=1))


def _top_k_reference(x, k):
    """Descending IEEE total order, ties by lower index."""
    def key(i):
        v = x[i]
        if np.isnan(v):
            cls = 0 if np.signbit(v) else 2
            return (-cls, 0.0, 0, i)
        return (-1, -v, 0 if np.signbit(v) else -1, i)
    order = sorted(range(len(x)), key=key)[:k]
    return x[order], np.array(order, np.int32)


def test_top_k():
    x = np.array([1.0, 3.0, 2.0, 3.0, -0.0, 0.0, np.nan, -np.inf, -np.nan])
    for k in (0, 1, 4, len(x)):
        check(lambda v, k=k: lax.top_k(v, k), _top_k_reference(x, k), x)
    ints = np.array([[5, 1, 5, 7], [0, 0, 0, 0]], np.uint8)
    check(lambda v: lax.top_k(v, 2), (np.array([[7, 5], [0, 0]], np.uint8), np.array([[3, 0], [0, 1]], np.int32)), ints)
    check(lambda v: lax.top_k(v, 1, axis=0), (np.array([[5, 1, 5, 7]], np.uint8), np.zeros((1, 4), np.int32)), ints)
    g = tracejit.grad(lambda v: lax.top_k(v, 2)[0].sum())(np.array([1.0, 3.0, 2.0]))
    assert_close(g, np.array([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError):
        lax.top_k(x, len(x) + 1)


# --------------------------------------------------------------------------- scans and reductions

def _sequential_scan(fn, xs, reverse=False):
    xs = list(xs[::-1] if reverse else xs)
    out = [xs[0]]
    for v in xs[1:]:
        out.append(fn(out[-1], v))
    out = np.array(out)
    return out[::-1] if reverse else out


@pytest.mark.parametrize("n", [0, 1, 2, 5, 8, 13])
@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_matches_sequential(n, reverse):
    x = np.arange(1, n + 1, dtype=np.int64) * 7 % 11
    check(lambda v: lax.associative_scan(lax.add, v, reverse=reverse), _sequential_scan(np.add, x, reverse)
          if n else x, x)
    # A non-commutative associative operation: 2x2 matrix products, as a pytree of entries.
    rng = np.random.default_rng(n)
    m = rng.integers(-2, 3, size=(n, 2, 2)).astype(np.int64)

    def matmul(a, b):
        if reverse:
            a, b = b, a
        return {"a": a["a"] * b["a"] + a["b"] * b["c"], "b": a["a"] * b["b"] + a["b"] * b["d"],
                "c": a["c"] * b["a"] + a["d"] * b["c"], "d": a["c"] * b["b"] + a["d"] * b["d"]}
    tree = {"a": m[:, 0, 0], "b": m[:, 0, 1], "c": m[:, 1, 0], "d": m[:, 1, 1]}
    if n:
        want = _sequential_scan(lambda p, q: q @ p if reverse else p @ q, m, reverse)
        want = {"a": want[:, 0, 0], "b": want[:, 0, 1], "c": want[:, 1, 0], "d": want[:, 1, 1]}
    else:
        want = tree
    check(lambda t: lax.associative_scan(matmul, t, reverse=reverse), want, tree)


def test_associative_scan_axis_grad_vmap():
    x = np.arange(12.0).reshape(3, 4)
    check(lambda v: lax.associative_scan(lax.mul, v, axis=1), np.cumprod(x, axis=1), x)
    check(lambda v: lax.associative_scan(lax.max, v, axis=-2, reverse=True),
          np.maximum.accumulate(x[::-1], axis=0)[::-1], x)
    g = tracejit.grad(lambda v: lax.associative_scan(lax.add, v).sum())(np.ones(5))
    assert_close(g, np.array([5.0, 4.0, 3.0, 2.0, 1.0]))
    assert_close(tracejit.vmap(lambda r: lax.associative_scan(lax.add, r))(x), np.cumsum(x, axis=1))
    with pytest.raises(ValueError):
        lax.associative_scan(lax.add, (np.ones(3), np.ones(4)))


def test_cumlogsumexp():
    x = np.array([[0.5, -1.0, 3.0, -np.inf], [700.0, 710.0, -np.inf, 1.0]])
    with np.errstate(over="ignore"):
        want = np.logaddexp.accumulate(x, axis=1)
    check(lambda v: lax.cumlogsumexp(v, axis=1), want, x, rtol=1e-14)
    want_rev = np.logaddexp.accumulate(x[:, ::-1], axis=1)[:, ::-1]
    check(lambda v: lax.cumlogsumexp(v, axis=1, reverse=True), want_rev, x, rtol=1e-14)
    check(lambda v: lax.cumlogsumexp(v), np.full(3, -np.inf), np.full(3, -np.inf))
    check(lambda v: lax.cumlogsumexp(v), np.array([np.inf, np.inf]), np.array([np.inf, 1.0]))
    v = np.array([0.3, -0.2, 1.1], np.float32)
    g = tracejit.grad(lambda t: lax.cumlogsumexp(t)[-1])(v)
    assert_close(g, (np.exp(v) / np.exp(v).sum()).astype(np.float32), rtol=1e-6)
    with pytest.raises(TypeError):
        lax.cumlogsumexp(np.arange(3))


def test_reduce_monoids_and_general():
    x = np.arange(1.0, 13.0).reshape(3, 4)
    check(lambda v: lax.reduce(v, 0.0, lax.add, (1,)), x.sum(axis=1), x)
    check(lambda v: lax.reduce(v, 1.0, lax.mul, (0, 1)), np.prod(x), x)
    check(lambda v: lax.reduce(v, -np.inf, lax.max, (0,)), x.max(axis=0), x)
    check(lambda v: lax.reduce(v, 10.0, lax.add, (0,)), x.sum(axis=0) + 10.0, x)      # not the identity
    check(lambda v: lax.reduce(v, 5.0, lax.min, (1,)), np.minimum(x.min(axis=1), 5.0), x)
    i = np.array([[6, 3, 5], [12, 10, 7]], np.int32)
    check(lambda v: lax.reduce(v, np.int32(-1), lax.bitwise_and, (1,)), np.bitwise_and.reduce(i, axis=1), i)
    check(lambda v: lax.reduce(v, np.int32(0), lax.bitwise_or, (0, 1)), np.bitwise_or.reduce(i.ravel()), i)
    b = np.array([[True, False], [True, True]])
    check(lambda v: lax.reduce(v, True, lax.bitwise_and, (1,)), b.all(axis=1), b)
    # A general callable: the variadic argmax of JAX's docs.
    vals = np.array([[3.0, 7.0, 5.0, 7.0, 1.0], [0.0, -1.0, 4.0, 2.0, 4.0]])
    idx = np.broadcast_to(np.arange(5), vals.shape).copy()

    def argmax_step(a, b):
        take_a = (a[0] > b[0]) | ((a[0] == b[0]) & (a[1] < b[1]))
        return lax.select(take_a, a[0], b[0]), lax.select(take_a, a[1], b[1])
    check(lambda v, j: lax.reduce((v, j), (-np.inf, 0), argmax_step, (1,)),
          (vals.max(axis=1), np.argmax(vals, axis=1)), vals, idx)
    # Empty reductions give the init value.
    check(lambda v: lax.reduce(v, 0.0, lambda a, b: a + b, (0,)), np.zeros(3), np.zeros((0, 3)))
    g = tracejit.grad(lambda v: lax.reduce(v, 0.0, lambda a, b: a + b, (0, 1)))(x)
    assert_close(g, np.ones_like(x))
    g = tracejit.grad(lambda v: lax.reduce(v, 1.0, lambda a, b: a * b, (0,)).sum())(np.array([[2.0], [3.0], [4.0]]))
    assert_close(g, np.array([[12.0], [8.0], [6.0]]))
    with pytest.raises(ValueError):
        lax.reduce((x, x), (0.0,), lax.add, (0,))


def test_reduce_xor():
    rng = np.random.default_rng(3)
    for dt in (np.uint8, np.int16, np.int64):
        x = rng.integers(0, 100, (4, 5)).astype(dt)
        check(lambda v: lax.reduce_xor(v, (1,)), np.bitwise_xor.reduce(x, axis=1), x)
        check(lambda v: lax.reduce_xor(v, (0, 1)), np.bitwise_xor.reduce(x.ravel()), x)
    b = np.array([[True, True, False], [True, False, False]])
    check(lambda v: lax.reduce_xor(v, (1,)), np.array([False, True]), b)
    check(lambda v: lax.reduce_xor(v, (0,)), np.zeros(2, np.int32), np.zeros((0, 2), np.int32))
    with pytest.raises(TypeError):
        lax.reduce_xor(np.ones(3), (0,))


# --------------------------------------------------------------------------- enums and shape tuples

def test_enums_and_dimension_numbers():
    assert lax.Precision("highest") is lax.Precision.HIGHEST
    assert lax.Precision("tensorfloat32") is lax.Precision.HIGH
    assert lax.Precision(None) is lax.Precision.DEFAULT
    assert str(lax.Precision.HIGH) == "HIGH" and repr(lax.Precision.HIGH) == "Precision.HIGH"
    with pytest.raises(ValueError):
        lax.Precision("ultra")
    assert lax.GatherScatterMode.from_any(None) is lax.GatherScatterMode.FILL_OR_DROP
    assert lax.GatherScatterMode.from_any("promise_in_bounds") is lax.GatherScatterMode.PROMISE_IN_BOUNDS
    with pytest.raises(ValueError):
        lax.GatherScatterMode.from_any("wrap")
    dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    assert dn.operand_batching_dims == () and dn.start_indices_batching_dims == ()
    assert lax.ScatterDimensionNumbers((1,), (0,), (0,)).scatter_indices_batching_dims == ()
    assert [m.name for m in lax.FftType] == ["FFT", "IFFT", "RFFT", "IRFFT"]
    assert int(lax.RoundingMethod.AWAY_FROM_ZERO) == 0 and str(lax.RandomAlgorithm.RNG_PHILOX) == "RNG_PHILOX"
    # The precision argument of the contractions accepts them.
    assert_close(lax.batch_matmul(np.ones((1, 2, 2)), np.ones((1, 2, 2)), precision=lax.Precision.HIGHEST),
                 np.full((1, 2, 2), 2.0))


def test_shape_tuples():
    assert lax.conv_shape_tuple((1, 3, 10, 10), (8, 3, 3, 3), (2, 2), "SAME") == (1, 8, 5, 5)
    assert lax.conv_shape_tuple((4, 3, 10, 9), (8, 3, 3, 2), (1, 2), [(1, 0), (2, 2)], 2) == (2, 8, 9, 6)
    assert lax.conv_general_permutations(("NCWH", "IOHW", "NWHC")) == ((0, 1, 3, 2), (1, 0, 2, 3), (0, 3, 2, 1))
    assert lax.conv_general_shape_tuple((2, 10, 9, 3), (3, 3, 3, 8), (2, 3), "SAME",
                                        ("NHWC", "HWIO", "NCHW")) == (2, 8, 5, 3)
    assert lax.conv_transpose_shape_tuple((1, 4, 5, 3), (3, 2, 3, 8), (2, 3), "VALID",
                                          ("NHWC", "HWIO", "NHWC")) == (1, 9, 15, 8)
    assert lax.reduce_window_shape_tuple((10, 7), (3, 3), (2, 1), ((0, 0), (1, 1)), (2, 1), (1, 3)) == (9, 3)
    # The conv shape agrees with an actual convolution.
    lhs, rhs = np.ones((1, 7, 6, 2)), np.ones((3, 2, 2, 4))
    out = lax.conv_general_dilated(lhs, rhs, (2, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    assert out.shape == lax.conv_general_shape_tuple(lhs.shape, rhs.shape, (2, 1), "SAME", ("NHWC", "HWIO", "NHWC"))


# --------------------------------------------------------------------------- against jax.lax itself

def test_against_jax_lax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    J = jax.lax
    rng = np.random.default_rng(7)
    f = rng.standard_normal((3, 6))
    f[0, :3] = [np.nan, -0.0, 0.0]
    i32 = rng.integers(-2**31, 2**31 - 1, (3, 6)).astype(np.int32)
    u64 = rng.integers(0, 2**63, (3, 6), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    pos = np.abs(f[1:]) + 0.5
    cases = [
        ("population_count", (i32,)), ("population_count", (u64,)), ("clz", (i32,)), ("clz", (u64,)),
        ("shift_right_logical", (i32, (np.abs(i32) % 40).astype(np.int32))),
        ("mulhi", (i32, np.roll(i32, 1))), ("mulhi", (u64, np.roll(u64, 2))),
        ("mulhi", (i32.astype(np.int64) * 3_000_000_000, np.roll(i32.astype(np.int64), 1) * 5)),
        ("top_k", (f, 4)), ("sort", (f,)), ("cumlogsumexp", (f[1:],)),
        ("lgamma", (pos,)), ("digamma", (pos,)), ("igamma", (pos, pos[::-1])), ("bessel_i1e", (f[1:],)),
        ("erf_inv", (np.tanh(f[1:]),)), ("reduce_xor", (i32, (1,))),
        ("tile", (f, (2, 1))), ("collapse", (f, 0)), ("clamp", (-0.5, f, 0.5)),
    ]
    for name, args in cases:
        want = getattr(J, name)(*args)
        want = tuple(np.asarray(w) for w in want) if isinstance(want, (tuple, list)) else np.asarray(want)
        for got in both(lambda *a, name=name: getattr(lax, name)(*a), *args,
                        static_argnums=tuple(i for i, a in enumerate(args) if isinstance(a, (int, tuple)))):
            assert_close(got, want, rtol=1e-12, atol=1e-300)
    # associative_scan combines in JAX's order: a non-associative function gives JAX's numbers.
    x = rng.standard_normal(11)
    assert_close(lax.associative_scan(lambda a, b: 2 * a + b, x),
                 np.asarray(J.associative_scan(lambda a, b: 2 * a + b, x)), rtol=1e-15)
    assert_close(lax.associative_scan(lambda a, b: 2 * a + b, x, reverse=True),
                 np.asarray(J.associative_scan(lambda a, b: 2 * a + b, x, reverse=True)), rtol=1e-15)
    x3 = np.arange(24.0).reshape(2, 3, 4)
    idx = (np.array([0, 1, -1, 5]), np.array([3, 0, 2, -5]))
    assert_close(tracejit.jit(lambda v, a, b: lax.index_take(v, (a, b), (0, 2)))(x3, *idx),
                 np.asarray(J.index_take(x3, idx, (0, 2))))
    b16 = np.array([258, 65535, 7], np.uint16)
    assert_close(lax.bitcast_convert_type(b16, np.uint8), np.asarray(J.bitcast_convert_type(b16, np.uint8)))
    assert_close(tracejit.jit(lambda v: lax.bitcast_convert_type(v, np.uint8))(b16),
                 np.asarray(J.bitcast_convert_type(b16, np.uint8)))
    for g_t, g_j in ((tracejit.grad(lambda v: lax.clamp(0.0, v, 1.0)), jax.grad(lambda v: J.clamp(0.0, v, 1.0))),):
        for v in (0.0, 0.5, 1.0, 2.0):
            assert float(g_t(v)) == float(g_j(v))
    assert lax.broadcast_shapes((2, 1), (1, 3), (3,)) == tuple(J.broadcast_shapes((2, 1), (1, 3), (3,)))
    assert lax.conv_transpose_shape_tuple((1, 4, 5, 3), (3, 2, 3, 8), (2, 3), [(1, 2), (0, 1)],
                                          ("NHWC", "HWIO", "NHWC")) == \
        tuple(int(d) for d in J.conv_transpose_shape_tuple((1, 4, 5, 3), (3, 2, 3, 8), (2, 3), [(1, 2), (0, 1)],
                                                          ("NHWC", "HWIO", "NHWC")))
    assert [(m.name, m.value) for m in lax.GatherScatterMode] == [(m.name, m.value) for m in J.GatherScatterMode]
    assert [(m.name, m.value) for m in lax.Precision] == [(m.name, m.value) for m in J.Precision]
