"""Regressions for miscompiles found by users and by the differential fuzzer (issue 12).

Each test names the bug it pins; all compare against NumPy under jit, eagerly and on the
reference backend through ``check_against_numpy``.
"""
import itertools

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from helpers import check_against_numpy, sample

# ----------------------------------------------------------------- bool products


@pytest.mark.parametrize("k", [0, 1, 127, 128, 255, 256, 257, 700])
def test_bool_matmul_does_not_count_in_eight_bits(k):
    # A product of booleans is "any of the ands"; it was computed as an int8 count that wrapped.
    a = np.ones(k, bool)
    check_against_numpy(lambda xp, a: a @ a, a)
    m, n = np.ones((2, k), bool), np.ones((k, 3), bool)
    check_against_numpy(lambda xp, m, n: xp.matmul(m, n), m, n)
    check_against_numpy(lambda xp, m, n: xp.einsum("ij,jk->ik", m, n), m, n)


# ----------------------------------------------------------------- signed zeros

ZEROS = np.array([1.0, -1.0, 0.0, -0.0, np.inf, -np.inf, np.nan])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_signed_zero_literals_stay_distinct_in_a_kernel(dtype):
    # 0.0 and -0.0 compare equal as Python floats: a kernel's constants keyed by value merged them.
    x = ZEROS.astype(dtype)
    check_against_numpy(lambda xp, x: (x + 0.0) / -0.0, x)
    check_against_numpy(lambda xp, x: xp.where(x > 0.0, x, -0.0), x)
    check_against_numpy(lambda xp, x: (x * 0.0, x * -0.0, x + -0.0, x - 0.0), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_subtracting_negative_zero_is_not_an_identity(dtype):
    # x - (-0.0) is x + 0.0: it turns -0.0 into +0.0, so the simplifier may not drop it.
    x = ZEROS.astype(dtype)
    check_against_numpy(lambda xp, x: x - (-0.0), x)
    check_against_numpy(lambda xp, x: x - xp.zeros_like(x) * -1.0, x)


BOUNDS = [None, -0.0, 0.0, np.nan, -1.0, 1.0, np.inf]


@pytest.mark.parametrize("lo,hi", [(lo, hi) for lo, hi in itertools.product(BOUNDS, BOUNDS)
                                   if lo is not None or hi is not None], ids=repr)
def test_clip_ties_nans_and_zero_signs_as_numpy(lo, hi):
    # NumPy's two-bound clip keeps x on ties (clip(-0.0, 0, 1) is -0.0); one bound is maximum/minimum.
    x = np.array([-0.0, 0.0, np.nan, np.inf, -np.inf, 0.5, -2.0, 3.0, 1.0, -1.0])
    check_against_numpy(lambda xp, x: xp.clip(x, lo, hi), x)


def test_clip_integers():
    x = np.arange(-5, 6, dtype=np.int32)
    check_against_numpy(lambda xp, x: (xp.clip(x, 0, 2), xp.clip(x, 3, 1), xp.clip(x, -2, None)), x)


# ----------------------------------------------------------------- contractions over size-1 dims

EINSUMS = [("ij,jk->ik", (3, 1), (1, 4)), ("ij,jk->ik", (1, 1), (1, 1)), ("bij,bjk->bik", (2, 3, 1), (2, 1, 4)),
           ("ij,kj->ik", (3, 1), (4, 1)), ("i,i->", (1,), (1,)), ("ij,j->i", (3, 1), (1,)),
           ("ij,jk->ik", (0, 1), (1, 4)), ("ij,jk->ik", (3, 0), (0, 4))]


@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.complex64, np.bool_])
@pytest.mark.parametrize("spec,s1,s2", EINSUMS, ids=repr)
def test_einsum_with_size_one_contracted_dims(spec, s1, s2, dtype):
    a, b = sample(s1, dtype, seed=1), sample(s2, dtype, seed=2)
    check_against_numpy(lambda xp, a, b: xp.einsum(spec, a, b), a, b, reassoc=True)


@pytest.mark.parametrize("y", [-0.0, 0.0, complex(0, -0.0), complex(-0.0, 0)], ids=repr)
def test_complex_minus_signed_zero(y):
    # Found by the program fuzzer: the x - (-0.0) rule asked np.signbit of a complex literal.
    c = np.array([1 + 1j, complex(0, np.nan), complex(-0.0, 0.0), complex(-0.0, -0.0)])
    check_against_numpy(lambda xp, a: a - y, c)


def test_reshape_of_a_literal_in_a_float16_program():
    # Found by the program fuzzer: reshape(inf) of a literal (float16 keeps structural ops unfused)
    # was planned as an alias of a buffer the literal does not have.
    a = np.array([[0.2795], [0.537]], np.float16)
    got = tracejit.jit(lambda a: jnp.max(a, axis=1).at[1].min(1e30))(a)
    np.testing.assert_array_equal(got, np.max(a, axis=1))


VIEW_CHAIN_OPS = {
    "reshape": lambda xp, v: xp.reshape(v, v.shape[::-1]),
    "T": lambda xp, v: v.T,
    "flip": lambda xp, v: v[::-1],
    "affine": lambda xp, v: v * 2 + 1,
    "col0": lambda xp, v: v + v[..., :1],
}


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.complex64])
@pytest.mark.parametrize("chain", list(itertools.product(VIEW_CHAIN_OPS, repeat=3)), ids="-".join)
def test_reshape_view_of_a_kernels_own_output_is_not_fused(chain, dtype):
    # Found by the gradient fuzzer: broadcast_to -> reshape -> transpose fused into one kernel that
    # read the reshape view of its own output at other elements (before they were written).
    # The class: every 3-op chain of reshapes, transposes, flips and elementwise ops after a
    # broadcast, only the last value returned (so intermediate reshapes stay views).
    def f(xp, w):
        v = xp.broadcast_to(w, (3, 2))
        for name in chain:
            v = VIEW_CHAIN_OPS[name](xp, v)
        return v
    check_against_numpy(f, sample((2,), dtype, seed=1))


@pytest.mark.parametrize("pick", [0.25, -0.25])
def test_zero_d_results_of_numpy_steps_stay_zero_d(pick):
    # Found by the program fuzzer (seed 3018): a 0-d value made by a NumPy step (float16 stays
    # unfused) became shape (1,) (np.ascontiguousarray), and a host cond passing it through
    # returned shape (1,) instead of ().
    from tracejit import lax
    a = np.array([pick], np.float16).reshape(1, 1, 1)
    m = np.mean(a)
    want = m.min() if a.max() > 0 else m ** 2
    got = tracejit.jit(lambda a: lax.cond(jnp.max(a) > 0, lambda c: c.min(), lambda c: c ** 2, jnp.mean(a)))(a)
    assert got.shape == () and got.dtype == np.float16
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fn", ["sum", "prod", "mean", "nansum", "nanprod"])
@pytest.mark.parametrize("value", [-0.0, complex(-np.inf, -4.4e-4), complex(-0.0, -0.0), complex(np.inf, np.inf), 3.0])
def test_reductions_over_no_axes_combine_with_the_identity(fn, value):
    # Found by the program fuzzer (seed 1000329): NumPy reduces a 0-d array (or axis=()) by
    # combining with the identity (0 + -0.0 is +0.0; (1+0j) * (-inf-4e-4j) has a NaN part);
    # tracejit returned the operand itself.
    dtypes_ = [np.complex64, np.complex128] if isinstance(value, complex) else [np.float16, np.float32, np.float64]
    for dtype in dtypes_:
        a = np.array(value, dtype)
        for kw in ({}, {"axis": ()}):
            with np.errstate(all="ignore"):
                want = getattr(np, fn)(a, **kw)
            got = tracejit.jit(lambda a: getattr(jnp, fn)(a, **kw))(a)
            assert np.asarray(got).dtype == np.asarray(want).dtype
            assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (dtype, kw, got, want)


@pytest.mark.parametrize("backend", ["cpu", "reference"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_fmax_fmin_ties_give_the_first_operand(dtype, backend):
    # Found by the program fuzzer (seed 1002743): llvm.maxnum chose between +0.0 and -0.0 by code
    # shape (an operand converted from uint16 gave +0.0); NumPy's loop by element position.
    x = np.array([-0.0, 0.0, -0.0, np.nan, 1.0, np.nan, 2.0] * 5, dtype)
    y = np.array([0.0, -0.0, -0.0, 1.0, np.nan, np.nan, 1.0] * 5, dtype)
    for name in ("fmax", "fmin"):
        got = tracejit.jit(getattr(jnp, name), backend=backend)(x, y)
        want = np.where(x == y, x, getattr(np, name)(x, y))
        assert got.tobytes() == want.tobytes()
        got = tracejit.jit(lambda a: getattr(jnp, name)(a, np.zeros((), np.uint16)), backend=backend)(x)
        assert np.array_equal(np.signbit(got[:3]), np.signbit(x[:3]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["fmod", "remainder"])
def test_fmod_invalid_cases_give_the_default_nan(name, dtype):
    # Found by the program fuzzer (seed 1068875): fmod(inf, -1.0) with a literal divisor was +NaN
    # (LLVM's frem expansion); C's fmod and NumPy give the x86 default NaN, sign bit set.
    vals = np.array([np.inf, -np.inf, 1.0, 5.0, -3.0, 0.0, -0.0, 2.5], dtype)
    x, y = np.repeat(vals, len(vals)), np.tile(vals, len(vals))
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x, y)
        got = tracejit.jit(getattr(jnp, name))(x, y)
        assert np.array_equal(np.signbit(got), np.signbit(want)) and np.array_equal(np.isnan(got), np.isnan(want))
        for c in (-1.0, 0.0, 2.0, np.inf):
            want = getattr(np, name)(vals, dtype(c))
            got = tracejit.jit(lambda v: getattr(jnp, name)(v, c))(vals)
            assert np.array_equal(np.signbit(got), np.signbit(want)), c
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("view", ["broadcast", "reshape", "transpose", "tile", "squeeze"])
def test_numpy_step_views_of_arena_temporaries_are_copied(view):
    # Found by the program fuzzer (seed 3012032): float16 keeps structural ops as NumPy steps;
    # broadcast_to returned a view of an arena temporary (a float16 product) whose memory the
    # planner then gave to a later kernel, so the result read garbage (-512).
    a = np.array([[1.0068359375, -0.5], [0.25, 2.0]], np.float16)
    views = {
        "broadcast": lambda xp, p: xp.broadcast_to(p, (3,) + p.shape),
        "reshape": lambda xp, p: xp.reshape(p, (-1,)),
        "transpose": lambda xp, p: p.T,
        "tile": lambda xp, p: xp.tile(xp.broadcast_to(p[0, 0], ()), (1,)),
        "squeeze": lambda xp, p: xp.squeeze(p[:1]),
    }

    def f(xp, a):
        p = xp.einsum("ij,kj->ik", a, a)           # a temporary in the arena
        v = views[view](xp, p)                      # a NumPy step; its result may be a view of p
        later = xp.mean(a.astype(np.float32) * 3)   # a kernel that may reuse p's memory
        return xp.reshape(v, (-1,)), later          # v read after that kernel
    check_against_numpy(f, a)
    for shape in [(1, 1), (1, 2), (3, 1)]:
        check_against_numpy(f, np.full(shape, 1.0068359375, np.float16))


def test_maximum_tie_after_float32_to_float64_convert():
    # Program fuzzer seed 4054491: LLVM's InstCombine read select(a < 0, 0.0, fpext(a)) as a
    # maximum and rewrote it with <= (llvm/llvm-project#157254), so -0.0 came out +0.0.
    a = np.array([[-0.0]], np.float32)
    got = tracejit.jit(lambda a: jnp.maximum(0.0, a.astype(np.float64)))(a)
    assert np.signbit(got).tolist() == [[True]]
    check_against_numpy(lambda xp, a: xp.where(a < 0, 0.0, a.astype(np.float64)), a)


# The class: a select with a constant zero arm, its other arm a float cast of the compared value.
SELECTS_AROUND_A_CONSTANT = {
    "maximum(c, x)": lambda xp, x, a, c: xp.maximum(c, x),
    "maximum(x, c)": lambda xp, x, a, c: xp.maximum(x, c),
    "minimum(c, x)": lambda xp, x, a, c: xp.minimum(c, x),
    "minimum(x, c)": lambda xp, x, a, c: xp.minimum(x, c),
    "where(x < c, c, x)": lambda xp, x, a, c: xp.where(x < c, c, x),
    "where(x > c, x, c)": lambda xp, x, a, c: xp.where(x > c, x, c),
    "where(a < c, c, x)": lambda xp, x, a, c: xp.where(a < c, c, x),
    "where(a >= c, x, c)": lambda xp, x, a, c: xp.where(a >= c, x, c),
    "clip(x, c, 1)": lambda xp, x, a, c: xp.clip(x, c, 1.0),
    "clip(x, -1, c)": lambda xp, x, a, c: xp.clip(x, -1.0, c),
}
FLOAT_CASTS = [(np.float32, np.float64), (np.float16, np.float32), (np.float16, np.float64),
               (np.float64, np.float32), (np.float32, np.float16), (np.float64, np.float64)]


@pytest.mark.parametrize("op", list(SELECTS_AROUND_A_CONSTANT))
@pytest.mark.parametrize("cast", FLOAT_CASTS, ids=lambda c: f"{c[0].__name__}->{c[1].__name__}")
def test_selects_around_a_zero_constant_keep_the_sign_of_zero(op, cast):
    source, target = cast
    fn = SELECTS_AROUND_A_CONSTANT[op]
    values = np.array([-0.0, 0.0, -1.0, 1.0, np.nan, -np.inf, np.inf, 1e-40], np.float64)
    for c in (0.0, -0.0):
        for n in (8, 67):  # one vector, and vectors plus a remainder
            a = np.resize(values, n).astype(source)
            check_against_numpy(lambda xp, a: fn(xp, a.astype(target), a, target(c)), a, np_protocol=False)


@pytest.mark.parametrize("op", list(SELECTS_AROUND_A_CONSTANT))
@pytest.mark.parametrize("int_dtype", [np.int64, np.int8])
def test_selects_around_a_zero_that_llvm_folds_keep_the_sign_of_zero(op, int_dtype):
    # Program fuzzer seed 9602661: minimum(zeros(int64) -> float64, x) is no constant when the
    # kernel's IR is built; LLVM folds the converted zeros into 0.0 and then its signed-zero
    # max/min fold (the test above) turned -0.0 into +0.0. The zero here is computed in the
    # program, so it becomes a constant only inside LLVM.
    fn = SELECTS_AROUND_A_CONSTANT[op]
    values = np.array([-0.0, 0.0, -1.0, 1.0, np.nan, -np.inf, np.inf, 1e-40], np.float32)
    for n in (1, 8, 67):
        a = np.resize(values, (n, 1))
        check_against_numpy(lambda xp, a: fn(xp, a, a, xp.zeros((n, 1), int_dtype)), a, np_protocol=False)
        check_against_numpy(lambda xp, a: fn(xp, a, a, xp.fmod(xp.asarray(a, int_dtype), 1)), a, np_protocol=False)


# ----------------------------------------------------------------- row kernels stored transposed

def test_slogdet_gradient_after_a_column_max_under_jit():
    # Gradient fuzzer seed 6004547: the row kernel of max(x, axis=0) iterates columns and stores
    # x - max in the buffer's layout through a transposed map; the transpose that slogdet's
    # backward solve needs joined that kernel and read the buffer at the element of another
    # row, not yet written (uninitialized memory in the gradient).
    x = np.array([[0.63, -0.90], [-0.42, 0.12]])

    def f(x):
        centred = x - tracejit.lax.stop_gradient(jnp.max(x, axis=0, keepdims=True))
        logdet = jnp.linalg.slogdet(centred + 6.0 * jnp.eye(2))[1]
        return jnp.amax(jnp.broadcast_to(logdet, (1,)), axis=0)
    want = np.linalg.inv(np.asarray(x - x.max(0)) + 6.0 * np.eye(2)).T
    np.testing.assert_allclose(tracejit.grad(f)(x), want, rtol=1e-12)
    np.testing.assert_allclose(tracejit.jit(tracejit.grad(f))(x), want, rtol=1e-12)


# The class: a reduction over a non-last axis (a row kernel iterating in permuted order), a map
# of its result stored in layout order, then a permuted view of that map read in the same kernel.
PERMUTED_READS = {
    "T": lambda xp, y: y.T,
    "swapaxes(0, -1)": lambda xp, y: xp.swapaxes(y, 0, -1),
    "moveaxis(0, -1)": lambda xp, y: xp.moveaxis(y, 0, -1),
    "transpose reversed + 1": lambda xp, y: xp.transpose(y, tuple(range(y.ndim))[::-1]) + 1.0,
}


@pytest.mark.parametrize("view", list(PERMUTED_READS))
@pytest.mark.parametrize("shape,axis", [((2, 2), 0), ((3, 5), 0), ((5, 3), 0), ((4, 3, 2), 0), ((4, 3, 2), 1),
                                        ((2, 3, 4), (0, 1))])
@pytest.mark.parametrize("reduce", ["max", "sum"])
def test_permuted_read_of_a_row_kernel_output(view, shape, axis, reduce):
    x = sample(shape, np.float64, seed=len(shape) * 7 + shape[0])

    def centred(xp, x):
        return x - getattr(xp, reduce)(x, axis=axis, keepdims=True) + 3.0
    # The permuted view as an output, as the operand of a NumPy step (sort, a matrix inverse),
    # and inside arithmetic.
    check_against_numpy(lambda xp, x: PERMUTED_READS[view](xp, centred(xp, x)), x, reassoc=True)
    check_against_numpy(lambda xp, x: xp.sort(PERMUTED_READS[view](xp, centred(xp, x)), axis=0), x, reassoc=True)
    check_against_numpy(lambda xp, x: PERMUTED_READS[view](xp, centred(xp, x)) * 2.0, x, reassoc=True)
    # The map also stored for itself (another NumPy step reads it): this is the failing shape.
    check_against_numpy(lambda xp, x: (xp.sort(centred(xp, x), axis=-1),
                                       xp.sort(PERMUTED_READS[view](xp, centred(xp, x)), axis=-1)), x, reassoc=True)
    if len(shape) == 2 and shape[0] == shape[1]:
        check_against_numpy(lambda xp, x: xp.linalg.inv(PERMUTED_READS[view](xp, centred(xp, x)) + 9 * xp.eye(shape[0])),
                            x, reassoc=True)


@pytest.mark.parametrize("build", [
    lambda xp, y: xp.roll(y, 2),
    lambda xp, y: xp.concatenate([y[2:], y[:2]]),
    lambda xp, y: xp.concatenate([y[:1] * 3, y[1:]]),
    lambda xp, y: xp.hstack([y[-1:], y[:-1] + 1]),
], ids=["roll", "concat-1-then-2", "concat-scaled-head", "hstack"])
@pytest.mark.parametrize("value", [True, 7])
def test_reader_of_a_concatenation_runs_after_its_last_slab(build, value):
    # Fuzzer seed 30040299: the one-element slab joined the scalar kernel, the fusion pass
    # then took the buffer as complete and fused its reader before the other slab's kernel,
    # which read memory not yet written (nondeterministic values). The plan checker
    # (enabled for the suite) rejects a read before a later partial write.
    def f(xp, x):
        x = xp.take(xp.expand_dims(x < 5, -1), np.array([-1, -1, 0]), axis=0)
        y = x.astype(np.int8)
        return y <= x, xp.flip(build(xp, y), axis=0)

    for _ in range(3):
        check_against_numpy(f, np.array(value))
