"""Tracing: Tracer metadata, operators, methods, basic indexing and the NumPy
protocols; errors that say how to fix them (concretization, leaked tracers,
bad arguments, shape errors, unsupported NumPy functions)."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import jit, make_jaxpr
from tracejit.core.tracer import Tracer
from helpers import assert_same, check_against_numpy, sample


# ----------------------------------------------------------------------------- Tracer basics

def test_tracer_metadata():
    seen = {}

    def f(x):
        seen.update(shape=x.shape, dtype=x.dtype, ndim=x.ndim, size=x.size, T=x.T.shape, len=len(x),
                    weak=x.weak_type, repr=repr(x), is_tracer=isinstance(x, Tracer))
        return x
    jit(f)(np.ones((2, 3), np.float32))
    assert seen == dict(shape=(2, 3), dtype=np.float32, ndim=2, size=6, T=(3, 2), len=2, weak=False,
                        repr="Traced<f32[2,3]>with<f>", is_tracer=True)
    # Static metadata can steer Python code freely.
    check_against_numpy(lambda xp, a: a * a.shape[0] + a.ndim + a.size, np.ones((2, 3)))
    check_against_numpy(lambda xp, a: a.reshape(a.size), np.ones((2, 3)))


def test_scalar_tracer_len_and_iteration():
    with pytest.raises(TypeError, match="len"):
        jit(lambda x: len(x))(np.float64(1.0))
    with pytest.raises(TypeError, match="iteration"):
        jit(lambda x: [v for v in x])(np.float64(1.0))
    check_against_numpy(lambda xp, a: [v * 2 for v in a], np.arange(3.0))
    check_against_numpy(lambda xp, a: tuple(a), np.ones((2, 2), np.int32))


BINARY_OPERATORS = ["a + b", "a - b", "a * b", "a / b", "a // b", "a % b", "a ** b", "a @ b.T", "a << b",
                    "a >> b", "a & b", "a | b", "a ^ b", "a < b", "a <= b", "a > b", "a >= b", "a == b",
                    "a != b", "divmod(a, b)"]


@pytest.mark.parametrize("op", BINARY_OPERATORS)
def test_binary_operators_between_tracers_and_reflected(op):
    a = np.array([[1, 5, -3], [7, 2, 4]], np.int32)
    b = np.array([[2, 1, 3], [1, 2, 2]], np.int32)
    f = eval("lambda a, b: " + op)
    # Tracer (op) tracer, a concrete NumPy array on the left and on the right of a tracer, Python ints.
    check_against_numpy(lambda xp, x, y: (f(x, y), f(a, y), f(x, b)) + ((f(x, 2), f(3, y)) if "@" not in op else ()),
                        a, b)


def test_float_operators_and_unary():
    x = np.array([[1.5, -2.0], [0.0, 4.0]], np.float32)
    for fn in (lambda xp, a: -a, lambda xp, a: +a, lambda xp, a: abs(a), lambda xp, a: ~(a > 0),
               lambda xp, a: 1 / a, lambda xp, a: 2.0 ** a, lambda xp, a: a ** 2, lambda xp, a: 7.0 // a,
               lambda xp, a: 7.0 % a, lambda xp, a: a @ a, lambda xp, a: a.T @ a, lambda xp, a: ~a.astype(bool)):
        check_against_numpy(fn, x, transcendental=True)
    check_against_numpy(lambda xp, a: ~a, np.array([0, 1, -2], np.int64))


def test_methods():
    x = sample((2, 3, 4), np.float64, seed=1)
    for fn in (lambda xp, a: a.sum(), lambda xp, a: a.sum(axis=(0, 2)), lambda xp, a: a.mean(axis=1),
               lambda xp, a: a.max(0), lambda xp, a: a.min(keepdims=True), lambda xp, a: a.prod(-1),
               lambda xp, a: a.argmax(axis=2), lambda xp, a: a.argmin(), lambda xp, a: a.var(axis=0),
               lambda xp, a: a.std(), lambda xp, a: a.reshape(6, 4), lambda xp, a: a.reshape((4, -1)),
               lambda xp, a: a.reshape(-1), lambda xp, a: a.astype(np.float32), lambda xp, a: a.transpose(),
               lambda xp, a: a.transpose(2, 0, 1), lambda xp, a: a.transpose((1, 2, 0)),
               lambda xp, a: a.swapaxes(0, 1), lambda xp, a: a[:, :1].squeeze(1), lambda xp, a: a.ravel(),
               lambda xp, a: a.flatten(), lambda xp, a: a.clip(-1, 1), lambda xp, a: a.round(1),
               lambda xp, a: a.conj(), lambda xp, a: a[0].dot(a[1].T), lambda xp, a: a.cumsum(axis=1),
               lambda xp, a: a.copy(), lambda xp, a: (a > 0).all(axis=0), lambda xp, a: (a > 0).any(),
               lambda xp, a: a.block_until_ready() if isinstance(a, Tracer) else a, lambda xp, a: a.real,
               lambda xp, a: a.imag):
        check_against_numpy(fn, x, transcendental=True)


INDICES = [0, -1, 1, slice(None), slice(1, None), slice(None, None, 2), slice(None, None, -1), slice(-1, 0, -1),
           slice(3, 0, -2), slice(5, 100), slice(-100, 2), (0, 1), (-1, slice(None, None, -2)), (Ellipsis, 0),
           (None,), (None, 0, None), (Ellipsis, None), (slice(None), None, 1), (1, Ellipsis, slice(1, 3)), (),
           Ellipsis, (0, 0, 0), (slice(2, 2),), (slice(None), slice(None, None, -3), 3)]


@pytest.mark.parametrize("idx", INDICES, ids=repr)
def test_basic_indexing(idx):
    x = sample((3, 4, 5), np.float32, seed=2)
    check_against_numpy(lambda xp, a: a[idx], x)


def test_indexing_errors():
    x = np.ones((3, 4))
    with pytest.raises(IndexError, match="out of bounds"):
        jit(lambda a: a[3])(x)
    with pytest.raises(IndexError, match="too many indices"):
        jit(lambda a: a[0, 0, 0])(x)
    with pytest.raises(IndexError, match="single ellipsis"):
        jit(lambda a: a[..., 0, ...])(x)
    with pytest.raises(ValueError, match="zero"):
        jit(lambda a: a[::0])(x)
    with pytest.raises(TypeError, match="immutable.*at\\["):
        jit(lambda a: a.__setitem__(0, 1.0))(tracejit.numpy.asarray(x))   # JAX arrays: immutable (issue 16)


def test_numpy_protocols_are_traced():
    x = np.array([[1.0, -2.0], [3.0, 0.5]])
    fns = {"sin": lambda a: np.sin(a), "sum_axis0": lambda a: np.sum(a, axis=0),
           "where": lambda a: np.where(a > 0, a, 0.0), "add": lambda a: np.add(a, 1),
           "ndarray_left": lambda a: np.arange(2.0) + a, "mean": lambda a: np.mean(a),
           "reshape": lambda a: np.reshape(a, -1), "concatenate": lambda a: np.concatenate([a, a]),
           "matmul": lambda a: np.matmul(a, a), "maximum_reduce": lambda a: np.maximum.reduce(a, axis=1)}
    for name, fn in fns.items():
        program = make_jaxpr(fn)(x)
        assert program.eqns, name  # recorded as equations, not computed on concrete values
        with np.errstate(all="ignore"):
            assert_same(jit(fn)(x), fn(x), what=name, transcendental=True)


# ----------------------------------------------------------------------------- concretization errors

def test_if_on_traced_value():
    def f(x):
        if x.sum() > 0:
            return x
        return -x
    with pytest.raises(tracejit.ConcretizationTypeError) as info:
        jit(f)(np.ones(3))
    msg = str(info.value)
    assert "lax.cond" in msg and "static_argnums" in msg and "bool[]" in msg
    assert isinstance(info.value, tracejit.TracerBoolConversionError)
    # Marking the argument static is the suggested fix and works.
    assert_same(jit(lambda x, flag: x if flag > 0 else -x, static_argnums=1)(np.ones(3), 1), np.ones(3))


def test_conditional_expression_and_boolean_operators():
    with pytest.raises(tracejit.TracerBoolConversionError, match="bool"):
        jit(lambda x: x if x > 0 else 0)(np.float64(1.0))
    with pytest.raises(tracejit.TracerBoolConversionError):
        jit(lambda x: (x > 0) and (x < 1))(np.ones(2))
    with pytest.raises(tracejit.TracerBoolConversionError):
        jit(lambda x: not x)(np.float64(1.0))
    with pytest.raises(tracejit.TracerBoolConversionError):
        jit(lambda x: 1.0 in [x])(np.float64(1.0))


def test_integer_conversion():
    with pytest.raises(tracejit.TracerIntegerConversionError) as info:
        jit(lambda n: sum(range(n)))(3)
    assert "range" in str(info.value) and "static_argnums" in str(info.value)
    with pytest.raises(tracejit.TracerIntegerConversionError):
        jit(lambda x, i: [1, 2, 3][i])(np.ones(2), 1)
    with pytest.raises(tracejit.TracerIntegerConversionError):
        jit(lambda x: int(x))(np.float64(2.0))
    assert jit(lambda n: sum(range(n)), static_argnums=0)(4) == 6


def test_float_item_tolist_conversion():
    for fn in (lambda x: float(x), lambda x: x.item(), lambda x: x.tolist(), lambda x: complex(x)):
        with pytest.raises(tracejit.ConcretizationTypeError, match="concrete value"):
            jit(fn)(np.float64(2.0))


def test_array_conversion():
    with pytest.raises(tracejit.TracerArrayConversionError) as info:
        jit(lambda x: np.asarray(x))(np.ones(3))
    assert "__array__" in str(info.value) and "tracejit.numpy" in str(info.value)
    with pytest.raises(tracejit.TracerArrayConversionError):
        jit(lambda x: np.array(x))(np.ones(3))
    with pytest.raises(TypeError, match="unhashable"):
        jit(lambda x: {x: 1})(np.ones(3))


# ----------------------------------------------------------------------------- leaked tracers

def _leak():
    leaked = []

    def f(x):
        leaked.append(x)
        return x * 2
    jit(f)(np.ones(3))
    assert isinstance(leaked[0], Tracer)
    return leaked[0]


def test_leaked_tracer_used_eagerly():
    t = _leak()
    for use in (lambda: t + 1, lambda: np.sin(t), lambda: jnp.sum(t), lambda: t.reshape(3, 1), lambda: t[0]):
        with pytest.raises(tracejit.UnexpectedTracerError) as info:
            use()
        assert "leaked" in str(info.value) and "'f'" in str(info.value)


def test_leaked_tracer_used_in_another_jit():
    t = _leak()
    with pytest.raises(tracejit.UnexpectedTracerError, match="already finished"):
        jit(lambda y: y + t)(np.ones(3))
    with pytest.raises(tracejit.UnexpectedTracerError):
        jit(lambda y: y)(t)
    with pytest.raises(tracejit.UnexpectedTracerError):
        make_jaxpr(lambda y: jnp.concatenate([y, t]))(np.ones(3))


def test_outer_tracer_in_inner_trace_is_captured_not_leaked():
    def outer(x):
        return jit(lambda y: y + x, inline=False)(x * 2)
    assert_same(jit(outer)(np.ones(3)), np.full(3, 3.0))


# ----------------------------------------------------------------------------- bad input

def test_wrong_arity():
    f = jit(lambda x, y: x + y)
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        f(np.ones(2))
    with pytest.raises(TypeError, match="positional argument"):
        f(np.ones(2), np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match="unexpected keyword"):
        f(np.ones(2), z=np.ones(2))


@pytest.mark.parametrize("bad", ["hello", object(), {1, 2}, lambda: 0, b"bytes"], ids=lambda b: type(b).__name__)
def test_non_array_argument(bad):
    with pytest.raises(TypeError, match="static_argnums") as info:
        jit(lambda x, s: x)(np.ones(2), bad)
    assert type(bad).__name__ in str(info.value)


def test_shape_errors_name_shapes_and_operation():
    with pytest.raises(ValueError, match=r"add.*\(3,\).*\(4,\)"):
        jit(lambda x, y: x + y)(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match=r"multiply.*\(2, 3\).*\(3, 2\)"):
        jit(lambda x, y: np.multiply(x, y))(np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"matmul.*\(2, 3\).*\(4, 2\)"):
        jit(lambda x, y: x @ y)(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match=r"reshape.*6.*\(4,\)"):
        jit(lambda x: x.reshape(4))(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"concatenat.*\(2, 3\).*\(2, 4\)|concatenat.*shapes"):
        jit(lambda x, y: jnp.concatenate([x, y], axis=0))(np.ones((2, 3)), np.ones((2, 4)))


def test_unsupported_numpy_function_on_tracer():
    with pytest.raises(NotImplementedError, match="is_busday"):
        jit(lambda x: np.is_busday(x))(np.ones(3))
    with pytest.raises(NotImplementedError, match="isnat"):
        jit(lambda x: np.isnat(x))(np.ones(3))
    with pytest.raises(TypeError, match="out="):
        jit(lambda x: np.add(x, 1, out=x))(tracejit.numpy.asarray(np.ones(3)))   # JAX arrays (issue 16)


def test_unsupported_ufunc_kwargs_and_dtype_errors():
    with pytest.raises(NotImplementedError, match="where"):
        jit(lambda x: jnp.add(x, 1, where=x > 0))(np.ones(3))
    with pytest.raises(TypeError, match="left_shift"):
        jit(lambda x: x << 1.5)(np.ones(3, np.int32))
    with pytest.raises(TypeError, match="takes 2 positional"):
        jit(lambda x: jnp.add(x))(np.ones(3))
