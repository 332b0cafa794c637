"""NumPy 2 (NEP 50) type promotion with weak Python scalars: tracejit's result
dtypes (abstract and computed) must equal NumPy's for array (+) Python
scalar, array (+) NumPy scalar and array (+) array."""
import itertools
import warnings

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit.core import dtypes
from tracejit.core.avals import ShapedArray, aval_of_value
from helpers import PROMOTION_DTYPES, assert_same

IDS = [np.dtype(d).name for d in PROMOTION_DTYPES]
PY_SCALARS = [True, 2, -3, 2.5, 1j]
OPS = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
       "max": lambda a, b: np.maximum(a, b), "eq": lambda a, b: a == b}


def _numpy(fn, *args):
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args)
    except (TypeError, OverflowError, np.exceptions.DTypePromotionError) as e:
        return e


def _compare(fn, x, other, *, traced_other=False, backend="reference"):
    expected = _numpy(fn, x, other)
    jitted = tracejit.jit(fn, backend=backend) if traced_other else tracejit.jit(lambda a: fn(a, other),
                                                                                backend=backend)
    args = (x, other) if traced_other else (x,)
    if isinstance(expected, OverflowError) and traced_other:
        return  # value-dependent: a traced Python int's value is unknown, so it wraps like JAX's
    if isinstance(expected, Exception):
        with pytest.raises((TypeError, OverflowError, NotImplementedError)):
            jitted(*args)
        return
    with np.errstate(all="ignore"):
        got = jitted(*args)
    assert_same(got, expected, backend=backend)


# The full matrices run on the reference backend (the result dtype is fixed when tracing); a sample
# of them runs on the default (compiled) backend below.
@pytest.mark.parametrize("dtype", PROMOTION_DTYPES, ids=IDS)
@pytest.mark.parametrize("scalar", PY_SCALARS, ids=repr)
@pytest.mark.parametrize("op", sorted(OPS))
def test_array_with_python_scalar(dtype, scalar, op):
    x = np.array([1, 0, 3], dtype=dtype)
    fn = OPS[op]
    _compare(fn, x, scalar)                                       # scalar closed over: a literal
    _compare(lambda a, b: fn(b, a), x, scalar)                   # scalar on the left
    _compare(fn, x, scalar, traced_other=True)                    # scalar passed as a (weak) argument


@pytest.mark.parametrize("dtype", PROMOTION_DTYPES, ids=IDS)
@pytest.mark.parametrize("other", PROMOTION_DTYPES, ids=IDS)
def test_array_with_numpy_scalar_and_array(dtype, other):
    x = np.array([1, 0, 3], dtype=dtype)
    y = np.array([2, 1, 1], dtype=other)
    for op in ("add", "div", "max"):
        fn = OPS[op]
        _compare(fn, x, y)                        # array constant
        _compare(fn, x, y, traced_other=True)     # two traced arrays
        _compare(fn, x, y[0])                     # NumPy scalar (strong)
        _compare(fn, x, y[0], traced_other=True)  # NumPy scalar argument


SAMPLE = [(np.bool_, np.int32), (np.int8, np.uint8), (np.int32, np.float32), (np.int64, np.float16),
          (np.uint32, np.int32), (np.float32, np.float64), (np.float32, np.complex64), (np.int64, np.complex128),
          (np.float16, np.float32), (np.uint8, np.bool_)]


@pytest.mark.parametrize("dtype,other", SAMPLE, ids=lambda d: np.dtype(d).name)
def test_promotion_sample_on_default_backend(dtype, other):
    x = np.array([1, 0, 3], dtype=dtype)
    y = np.array([2, 1, 1], dtype=other)
    for op in ("add", "div"):
        _compare(OPS[op], x, y, traced_other=True, backend=None)
        _compare(OPS[op], x, y[0], backend=None)
    for scalar in (True, 2, 2.5, 1j):
        _compare(OPS["mul"], x, scalar, backend=None)
        _compare(OPS["add"], x, scalar, traced_other=True, backend=None)


def test_abstract_result_types_match_numpy():
    for a, b in itertools.product(PROMOTION_DTYPES, repeat=2):
        got, weak = dtypes.result_type((np.dtype(a), False), (np.dtype(b), False))
        assert got == np.result_type(a, b) and not weak
    for a in PROMOTION_DTYPES:
        for s in (True, 1, 1.0, 1j):
            d_s = dtypes.python_scalar_dtype(s)
            got, weak = dtypes.result_type((np.dtype(a), False), (d_s, True))
            try:
                ref = np.result_type(np.dtype(a), s)
            except TypeError:
                continue
            # np.result_type keeps value-based logic for bool + python int; use the ufunc instead.
            ref = (np.ones(1, a) + s).dtype if isinstance(s, (bool, int)) else ref
            assert got == ref and not weak, (a, s)


def test_weak_combinations_stay_weak():
    assert dtypes.result_type((dtypes.int64, True), (dtypes.float64, True)) == (dtypes.float64, True)
    assert dtypes.result_type((dtypes.bool_, True), (dtypes.int64, True)) == (dtypes.int64, True)
    assert dtypes.result_type((dtypes.float64, True), (dtypes.complex128, True)) == (dtypes.complex128, True)
    # A weak value inside a traced program: Python scalar argument -> weak aval.
    program = tracejit.make_jaxpr(lambda a, b: a * b)(np.ones(2, np.float32), 2.0)
    assert program.in_avals[1] == ShapedArray((), np.float64, weak_type=True)
    assert program.out_avals[0].dtype == np.float32


def test_python_scalar_arguments_and_outputs():
    # Two Python scalars give a weak result, which takes the float32 of a later operand.
    f = tracejit.jit(lambda a, b, x: (a * b) + x)
    assert_same(f(2, 3.0, np.ones(2, np.float32)), np.full(2, 7.0, np.float32))
    assert_same(tracejit.jit(lambda a, b: a + b)(1, 2), np.asarray(3))
    assert_same(tracejit.jit(lambda a, b: a + b)(1, 2.5), np.asarray(3.5))
    assert_same(tracejit.jit(lambda a: a / 2)(3), np.asarray(1.5))


def test_avals():
    a = ShapedArray((2, 3), np.float32)
    assert (a.shape, a.dtype, a.weak_type, a.ndim, a.size, a.nbytes) == ((2, 3), np.float32, False, 2, 6, 24)
    assert a.str_short() == "f32[2,3]" and repr(a) == "ShapedArray(f32[2,3])"
    w = ShapedArray((), float, weak_type=True)
    assert w.dtype == np.float64 and repr(w) == "ShapedArray(f64[]{weak})"
    assert a == ShapedArray([2, 3], "float32") and a != a.update(weak_type=True)
    assert hash(a) == hash(ShapedArray((2, 3), np.float32)) and w.strip_weak() == ShapedArray((), np.float64)
    assert a.update(shape=(4,)).str_short() == "f32[4]"
    assert aval_of_value(3) == ShapedArray((), np.int64, True)
    assert aval_of_value(np.float32(3)) == ShapedArray((), np.float32, False)
    assert ShapedArray((0,), np.bool_).str_short() == "bool[0]"
    for d, name in [(np.int8, "i8"), (np.uint32, "u32"), (np.float16, "f16"), (np.complex64, "c64"),
                    (np.complex128, "c128"), (np.int64, "i64")]:
        assert ShapedArray((), d).str_short() == f"{name}[]"
    with pytest.raises(ValueError, match="negative"):
        ShapedArray((-1,), np.float32)
    with pytest.raises(TypeError, match="does not support dtype"):
        ShapedArray((1,), np.float128 if hasattr(np, "float128") else "U3")
    with pytest.raises(TypeError):
        aval_of_value("abc")


def test_unsupported_dtype_argument_is_clear():
    with pytest.raises(TypeError, match="dtype"):
        tracejit.jit(lambda a: a)(np.array(["a", "b"]))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.float16])
def test_to_inexact_like_numpy_loops(dtype):
    x = np.array([1, 2, 3], dtype)
    for fn in (np.sin, np.sqrt, np.exp):
        assert_same(tracejit.jit(lambda a: fn(a))(x), fn(x), transcendental=True)
        assert tracejit.eval_shape(lambda a: getattr(jnp, fn.__name__)(a), x).dtype == fn(x).dtype


def test_out_of_range_python_int_errors_like_numpy():
    x = np.ones(3, np.int8)
    with pytest.raises(OverflowError):
        x + 300
    with pytest.raises(OverflowError):
        tracejit.jit(lambda a: a + 300)(x)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.float16, np.float32, np.complex64, np.bool_])
@pytest.mark.parametrize("other", [1, 2.5, 1j, True, np.float64, np.int32])
def test_result_type_of_traced_arrays_matches_numpy_on_the_values(dtype, other):
    # jnp.result_type of a tracer used to recurse forever (Tracer.__array_function__ -> np.result_type).
    x = np.ones(2, dtype)
    want = np.result_type(x, other)
    seen = []
    tracejit.jit(lambda a: seen.append(jnp.result_type(a, other)) or a)(x)
    assert seen == [want] and jnp.result_type(x, other) == want
    # A traced Python scalar (weakly typed) promotes as the Python scalar it stands for.
    if not isinstance(other, type):
        got = []
        tracejit.jit(lambda a, s: got.append(jnp.result_type(a, s)) or a)(x, other)
        assert got == [want]
