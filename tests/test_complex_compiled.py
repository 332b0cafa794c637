"""Complex arithmetic compiled into fused LLVM kernels, compared with NumPy.

Every supported operation must compile (the plan has no NumPy step), so a silent
fallback to NumPy fails these tests. Accuracy bounds:
- exact, including the sign of zero: add, sub, neg, conj, real, imag, eq, ne,
  isnan/isinf/isfinite, casts, where;
- mul, square, div, abs: within ``ULPS`` units in the last place of the result's
  natural magnitude (|x||y|, |z|^2, |x|/|y|, |z|), with NaN and inf exactly where
  NumPy has them. The kernels use NumPy's own formulas (FMA products as in its
  SIMD loops, Smith's division, ``larger*sqrt(1+ratio^2)``), so on x86-64 with
  NumPy 2 they are bit-identical; the bound allows NumPy builds that round
  differently (e.g. without FMA);
- angle: atan2 of the parts, with the transcendental tolerance of ``helpers``;
- sum/mean: reassociated across vector lanes, ``REASSOC_TOL`` of the largest value.
"""
import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from helpers import COMPLEX_DTYPES, TRANSCENDENTAL_RTOL, assert_same, normal_sample, views

ULPS = 4
CDTYPES = [np.dtype(d) for d in COMPLEX_DTYPES]
IDS = [d.name for d in CDTYPES]


def _part(d):
    return np.dtype(d.char.lower()) if d.kind == "c" else d


def numpy_steps(fn, *args):
    """The primitives of ``jit(fn)``'s plan that run as NumPy steps (and the kernel count)."""
    lines = tracejit.jit(fn).lower(*args).as_text().split("# kernels and steps")[1].splitlines()
    return [ln.split()[1] for ln in lines if ln.startswith("numpy ")], sum(ln.startswith("kernel ") for ln in lines)


def assert_compiled(fn, *args):
    steps, _ = numpy_steps(fn, *args)
    assert not steps, f"fell back to NumPy steps: {steps}"


def run(fn, *args):
    """(jit result, NumPy result), quietly: NumPy warns on inf/NaN arithmetic, kernels do not."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tracejit.jit(fn)(*args), fn(*args)


def assert_rounded_close(got, want, scale, ulps=ULPS):
    """NaN and +-inf parts exactly where NumPy has them; finite parts within ``ulps`` of ``scale``."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    real = _part(want.dtype)
    eps, floor = float(np.finfo(real).eps), float(np.finfo(real).smallest_subnormal)
    with np.errstate(all="ignore"):
        bound = ulps * (eps * np.abs(np.asarray(scale, np.float64)) + floor)
    parts = [(got.real, want.real), (got.imag, want.imag)] if want.dtype.kind == "c" else [(got, want)]
    for g, w in parts:
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg="NaN positions")
        np.testing.assert_array_equal(np.where(np.isinf(w), w, 0), np.where(np.isinf(g), g, 0), err_msg="infinities")
        finite = np.isfinite(w)
        err = np.abs(g[finite].astype(np.float64) - w[finite].astype(np.float64))
        over = err > np.broadcast_to(bound, w.shape)[finite]
        assert not over.any(), f"beyond {ulps} ULP: got {g[finite][over][:5]}, want {w[finite][over][:5]}"


def _abs64(z):
    with np.errstate(all="ignore"):
        return np.abs(np.asarray(z).astype(np.complex128))


# name -> (function, natural magnitude of the result for the rounding bound, or None when exact)
BINARY = {
    "add": (lambda x, y: x + y, None),
    "sub": (lambda x, y: x - y, None),
    "mul": (lambda x, y: x * y, lambda x, y: _abs64(x) * _abs64(y)),
    "div": (lambda x, y: x / y, lambda x, y: _abs64(x) / _abs64(y)),
    "eq": (lambda x, y: x == y, None),
    "ne": (lambda x, y: x != y, None),
    "where": (lambda x, y: np.where(x.real > y.real, x, y), None),
}
UNARY = {
    "neg": (lambda z: -z, None),
    "conj": (np.conj, None),
    "real": (np.real, None),
    "imag": (np.imag, None),
    "isnan": (np.isnan, None),
    "isinf": (np.isinf, None),
    "isfinite": (np.isfinite, None),
    "square": (np.square, lambda z: _abs64(z) ** 2),
    "pow2": (lambda z: z ** 2, lambda z: _abs64(z) ** 2),
    "abs": (np.abs, lambda z: _abs64(z)),
    "to_c64": (lambda z: z.astype(np.complex64), None),
    "to_c128": (lambda z: z.astype(np.complex128), None),
    "to_bool": (lambda z: z.astype(bool), None),
    "to_f64": (lambda z: z.astype(np.float64), None),
}


def check(fn, scale, *args):
    assert_compiled(fn, *args)
    got, want = run(fn, *args)
    if scale is None:
        assert_same(got, want, what="jit")
    else:
        with np.errstate(all="ignore"):
            assert_rounded_close(got, want, scale(*args))


def special_grid(dtype):
    """Every complex number whose parts are special: ±0, ±1.5, NaN, ±inf, huge, tiny, denormal."""
    real = _part(dtype)
    fi = np.finfo(real)
    parts = [0.0, -0.0, 1.0, -1.5, np.nan, np.inf, -np.inf, float(fi.max) / 3, -float(fi.max),
             float(fi.smallest_subnormal) * 3, float(fi.tiny), 1e-20, 3.0, 1e30 if real == np.float32 else 1e300]
    return np.array([complex(r, i) for r, i in itertools.product(parts, repeat=2)], dtype=dtype)


# ----------------------------------------------------------------------------- special values

@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_special_values(name, dtype):
    vals = special_grid(dtype)
    x, y = np.repeat(vals, len(vals)), np.tile(vals, len(vals))
    check(*BINARY[name], x, y)


@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_special_values(name, dtype):
    check(*UNARY[name], special_grid(dtype))


@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
def test_angle_special_values(dtype):
    z = special_grid(dtype)
    assert_compiled(np.angle, z)
    got, want = run(np.angle, z)
    np.testing.assert_allclose(got, want, rtol=TRANSCENDENTAL_RTOL[_part(dtype)], atol=0, equal_nan=True)
    assert got.dtype == want.dtype


@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
def test_no_overflow_for_huge_or_underflow_for_tiny_operands(dtype):
    big = 1e38 if dtype == np.complex64 else 1e300
    x = np.array([big + 1j * big, big - 1j * big, -big + 0.5j * big, 1 / big + 1j / big], dtype)
    y = np.array([big + 1j * big, big * 0.5 + 1j * big, 1j * big, 1 / big - 1j / big], dtype)
    got, want = run(lambda x, y: (x / y, np.abs(x), np.abs(y)), x, y)
    assert all(np.isfinite(g).all() for g in got)
    for g, w, scale in zip(got, want, (_abs64(x) / _abs64(y), _abs64(x), _abs64(y))):
        assert_rounded_close(g, w, scale)
    np.testing.assert_allclose(got[0][:2], [1, (1 - 1j) / (0.5 + 1j)], rtol=1e-6)


# ----------------------------------------------------------------------------- shapes and views

SHAPES = [(), (0,), (1,), (7,), (33,), (4, 17), (100_003,)]


@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_fused_expression_across_shapes(shape, dtype):
    rng = np.random.default_rng(len(shape) * 7 + 1)
    z, w = normal_sample(shape, dtype, rng), normal_sample(shape, dtype, rng)
    fn = lambda z, w: (z * w + z / w).real + abs(z)    # noqa: E731
    steps, kernels = numpy_steps(fn, z, w)
    assert not steps and kernels == 1
    got, want = run(fn, z, w)
    scale = _abs64(z) * _abs64(w) + _abs64(z) / _abs64(w) + _abs64(z)
    assert_rounded_close(got, want, scale)


@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
def test_complex_output_kernel_tail_lengths(dtype):
    # Lengths around the vector width exercise the masked tail's interleaved loads and stores.
    for n in range(1, 40):
        z = normal_sample((n,), dtype, np.random.default_rng(n))
        check(lambda z: np.conj(z) * (2 - 1j) - z, lambda z: 4 * _abs64(z), z)


@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
def test_non_contiguous_views(dtype):
    z = normal_sample((6, 9), dtype, np.random.default_rng(3))
    for v in views(z).values():
        check(lambda v: -v * v + np.conj(v), lambda v: 2 * _abs64(v) ** 2 + _abs64(v), v)
    check(lambda z: z[::2] / (z[1::2] + 1), lambda z: _abs64(z[::2]) / _abs64(z[1::2] + 1), z)


@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
def test_structural_ops_are_index_maps(dtype):
    z = normal_sample((5, 8), dtype, np.random.default_rng(4))
    fns = [lambda z: z.T, lambda z: z[::-1, 1::3], lambda z: np.broadcast_to(z[:1], (3, 5, 8)) + 0,
           lambda z: z.reshape(5, 1, 8)[:, :, ::2] * 1j, lambda z: z[:, :1] * z,
           lambda z: z[:, None, :] * z[None, :, :],
           lambda z: np.moveaxis(z.reshape(5, 2, 4), 0, 2).conj()]
    for fn in fns:
        assert_compiled(fn, z)
        got, want = run(fn, z)
        assert_same(got, want)


@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
def test_size_one_broadcast_and_scalars(dtype):
    rng = np.random.default_rng(5)
    z, one, s = normal_sample((5, 3), dtype, rng), normal_sample((1,), dtype, rng), normal_sample((), dtype, rng)
    check(lambda z, one, s: z * one - s, lambda z, one, s: _abs64(z) * _abs64(one) + _abs64(s), z, one, s)
    check(lambda z, s: z / s + z[0, 0], lambda z, s: _abs64(z) / _abs64(s) + _abs64(z[0, 0]), z, s)
    # s * s - 1j is the same for every element: computed once before the loop and splatted.
    check(lambda z, s: z * (s * s - 1j), lambda z, s: _abs64(z) * (_abs64(s) ** 2 + 1), z, s)


# ----------------------------------------------------------------------------- mixing with real operands

REAL_OPERANDS = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_]


@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
@pytest.mark.parametrize("real", REAL_OPERANDS, ids=lambda d: np.dtype(d).name)
def test_nep50_promotion_with_real_arrays(real, dtype):
    rng = np.random.default_rng(6)
    z, x = normal_sample((4, 6), dtype, rng), normal_sample((4, 6), real, rng)
    check(lambda z, x: z + x - x * z, lambda z, x: 2 * _abs64(z) * (1 + np.abs(x.astype(np.float64))), z, x)
    check(lambda z, x: z / (x + 3.0), lambda z, x: _abs64(z) / np.abs(x.astype(np.float64) + 3), z, x)


@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
def test_python_scalars_are_weak(dtype):
    z = normal_sample((9,), dtype, np.random.default_rng(7))
    check(lambda z: z * 2 + 3.5 - (1 + 2j), lambda z: 4 * _abs64(z) + 6, z)
    check(lambda z: (z == 0j) | (z != 1) | (z == z), None, z)


@pytest.mark.parametrize("src", [np.float32, np.float64, np.int8, np.int64, np.uint16, np.bool_],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
def test_casts_to_and_from_complex(dtype, src):
    rng = np.random.default_rng(8)
    x = normal_sample((11,), src, rng)
    check(lambda x: x.astype(dtype), None, x)
    z = (normal_sample((11,), dtype, rng) * 50)
    check(lambda z: z.astype(src), None, z)


@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
def test_lax_complex_real_imag_angle(dtype):
    part = _part(dtype)
    rng = np.random.default_rng(9)
    x, y = normal_sample((13,), part, rng), normal_sample((13,), part, rng)
    fn = lambda x, y: lax.complex(x, y) * (1 - 1j)     # noqa: E731
    assert_compiled(fn, x, y)
    got, want = run(fn, x, y)
    assert_rounded_close(got, (x + 1j * y) * (1 - 1j), 2 * _abs64(x + 1j * y))
    z = x + 1j * y
    fn = lambda z: (jnp.real(z) + jnp.imag(z), jnp.angle(z))    # noqa: E731
    assert_compiled(fn, z)
    (parts, angle), (want_parts, want_angle) = run(fn, z)
    assert_same(parts, want_parts)
    np.testing.assert_allclose(angle, want_angle, rtol=TRANSCENDENTAL_RTOL[part], atol=0)


# ----------------------------------------------------------------------------- fusion with reductions and NumPy steps

@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
def test_row_kernels_read_complex(dtype):
    z = normal_sample((7, 130), dtype, np.random.default_rng(10))
    fns = [lambda z: np.abs(z).sum(axis=1), lambda z: np.abs(z).max(axis=0), lambda z: (z * z).real.sum(axis=0),
           lambda z: z / np.abs(z).max(axis=1, keepdims=True)]
    for fn in fns:
        assert_compiled(fn, z)
        got, want = run(fn, z)
        real = _part(dtype)
        np.testing.assert_allclose(got, want, rtol=10 * float(np.finfo(real).eps) * 130, atol=0)


REDUCTIONS = {
    "sum": lambda z: np.sum(z),
    "sum_last": lambda z: np.sum(z * (1 - 2j), axis=-1),
    "sum_first": lambda z: np.conj(z).sum(axis=0),
    "mean": lambda z: np.mean(z, axis=-1),
    "vdot": lambda z: np.sum(z * np.conj(z)).real,
    "centered": lambda z: z - z.mean(axis=-1, keepdims=True),
}


@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
@pytest.mark.parametrize("shape", [(1,), (37,), (5, 130), (130, 5), (2, 3, 17), (0, 3), (3, 0)], ids=str)
def test_sums_and_products_compile(shape, dtype):
    # Vector-lane accumulation reassociates sums and products: REASSOC_TOL of the largest value.
    z = normal_sample(shape, dtype, np.random.default_rng(12))
    for name, fn in REDUCTIONS.items():
        assert_compiled(fn, z)
        got, want = run(fn, z)
        assert_same(got, want, reassoc=True, what=name)


@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
def test_sums_propagate_nan_and_inf(dtype):
    z = np.array([[1 + 1j, np.inf + 0j, 2 - 1j], [np.nan + 1j, 1j, 0j], [np.inf + 1j, -np.inf + 0j, 1 + 1j],
                  [1 + 1j, 1j * np.inf, 2j]], dtype)
    fn = lambda z: (z.sum(axis=1), z.T.sum(axis=0))     # noqa: E731
    assert_compiled(fn, z)
    for g, w in zip(*run(fn, z)):
        assert_rounded_close(g, w, _abs64(w))


@pytest.mark.parametrize("dtype", CDTYPES, ids=IDS)
def test_unsupported_complex_ops_split_into_numpy_steps(dtype):
    z = normal_sample((6, 5), dtype, np.random.default_rng(11))
    # Products start from 1+0j, which is not exact for infinite factors: they stay NumPy steps too.
    def fn(z):
        return np.abs(np.exp(z * 0.5) + z) + np.sqrt(z * 1j).real + np.prod(z - 1, axis=1)[:, None].imag
    steps, kernels = numpy_steps(fn, z)
    assert set(steps) == {"exp", "sqrt", "reduce_prod"} and kernels >= 1
    got, want = run(fn, z)
    np.testing.assert_allclose(got, want, rtol=100 * float(np.finfo(_part(dtype)).eps))


# ----------------------------------------------------------------------------- properties

def _complex_arrays(dtype):
    width = 64 if dtype == np.complex64 else 128
    elements = st.complex_numbers(width=width, allow_nan=True, allow_infinity=True, allow_subnormal=True)
    return hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=2, max_side=9), elements=elements)


@settings(deadline=None, max_examples=40)
@given(data=st.data(), dtype=st.sampled_from(CDTYPES), name=st.sampled_from(list(BINARY)))
def test_binary_property(data, dtype, name):
    x = data.draw(_complex_arrays(dtype), label="x")
    y = data.draw(hnp.arrays(dtype, x.shape, elements=st.complex_numbers(width=dtype.itemsize * 8)), label="y")
    check(*BINARY[name], x, y)


@settings(deadline=None, max_examples=40)
@given(data=st.data(), dtype=st.sampled_from(CDTYPES), name=st.sampled_from(list(UNARY)))
def test_unary_property(data, dtype, name):
    check(*UNARY[name], data.draw(_complex_arrays(dtype), label="z"))
