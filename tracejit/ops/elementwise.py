"""Elementwise primitives: unary math, binary arithmetic, comparisons, select.

Operands of a binary primitive have equal shapes, except that a rank-0
operand broadcasts (so ``max a 0.0`` needs no broadcast equation). Dtypes
must already agree: ``tracejit.numpy`` applies NumPy's promotion first.
"""
from __future__ import annotations

import math

import numpy as np

from tracejit.core import dtypes
from tracejit.core.avals import ShapedArray
from tracejit.core import storage_dtypes
from tracejit.core.primitive import ELEMENTWISE, Primitive, def_rules
from tracejit.core.storage_dtypes import STORAGE_TRANSPARENT

_ignore_fp = np.errstate(all="ignore")


def _quiet(fn):
    """NumPy warns on 1/0 or log(0); compiled code returns the same values silently."""
    def impl(*args, **params):
        with np.errstate(all="ignore"):
            return [np.asarray(fn(*args, **params))]
    impl.__name__ = getattr(fn, "__name__", "impl")
    return impl


def _shape_of_operands(name, *avals) -> tuple:
    shapes = {a.shape for a in avals if a.shape != ()}
    if len(shapes) > 1:
        raise TypeError(f"{name} got incompatible shapes {', '.join(str(a.shape) for a in avals)}; "
                        "operands must have equal shapes (rank-0 operands broadcast)")
    return shapes.pop() if shapes else ()


def _check_same_dtype(name, *avals):
    ds = {a.dtype for a in avals}
    if len(ds) > 1:
        raise TypeError(f"{name} requires operands of one dtype, got {', '.join(a.dtype.name for a in avals)}")


_KIND_NAMES = {"b": "bool", "i": "signed integer", "u": "unsigned integer", "f": "floating", "c": "complex"}


def _check_kinds(name, aval, kinds):
    if aval.dtype.kind not in kinds:
        allowed = ", ".join(_KIND_NAMES[k] for k in kinds)
        raise TypeError(f"{name} does not accept dtype {aval.dtype.name} (allowed: {allowed})")


def _weak(*avals):
    return all(a.weak_type for a in avals)


# ----------------------------------------------------------------------------- unary

# name -> (numpy implementation, accepted dtype kinds, output dtype rule)
def _same(d):
    return d


def _real_of(d):
    return np.dtype(np.float32) if d == dtypes.complex64 else (
        np.dtype(np.float64) if d == dtypes.complex128 else d)


def _to_bool(d):
    return dtypes.bool_


def _logistic(x):
    # Split by sign so exp never overflows: sigmoid(x) = e^x/(1+e^x) for x<0.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


def _erf(x):
    out = np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64))
    return np.asarray(out, dtype=np.float64).astype(x.dtype)


def _not(x):
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def _complex_on_contiguous(fn):
    """``fn`` whose complex operands are contiguous copies, so every element takes NumPy's SIMD
    loop (products as re = fma(xr, yr, -(xi*yi)), as compiled code computes them): NumPy's loop
    for negative strides and scalars rounds each product, and an overflowing product is nan
    there, -inf here."""
    def impl(*args):
        args = [np.asarray(v) for v in args]
        if args[0].dtype.kind != "c" or all(v.flags.c_contiguous and v.shape == args[0].shape and v.ndim
                                            for v in args):
            return fn(*args)
        shape = np.broadcast_shapes(*(v.shape for v in args))
        flat = [np.ascontiguousarray(np.broadcast_to(v, shape)).reshape(-1) for v in args]
        return fn(*flat).reshape(shape)
    return impl


_FLOAT, _INEXACT, _NUMERIC, _INT_BOOL, _ANY = "f", "fc", "iufc", "biu", "biufc"

UNARY_SPECS = {
    # name:      (impl, kinds, out dtype)
    "neg": (np.negative, "iufc", _same),
    "sign": (np.sign, "iufc", _same),
    "floor": (np.floor, _FLOAT, _same),
    "ceil": (np.ceil, _FLOAT, _same),
    "round": (np.rint, _FLOAT, _same),  # half to even, as numpy.round
    "trunc": (np.trunc, _FLOAT, _same),
    "abs": (np.abs, "iufc", _real_of),
    "exp": (np.exp, _INEXACT, _same),
    "exp2": (np.exp2, _INEXACT, _same),
    "expm1": (np.expm1, _INEXACT, _same),
    "log": (np.log, _INEXACT, _same),
    "log1p": (np.log1p, _INEXACT, _same),
    "log2": (np.log2, _INEXACT, _same),
    "log10": (np.log10, _INEXACT, _same),
    "sin": (np.sin, _INEXACT, _same),
    "cos": (np.cos, _INEXACT, _same),
    "tan": (np.tan, _INEXACT, _same),
    "tanh": (np.tanh, _INEXACT, _same),
    "sinh": (np.sinh, _INEXACT, _same),
    "cosh": (np.cosh, _INEXACT, _same),
    "asin": (np.arcsin, _INEXACT, _same),
    "acos": (np.arccos, _INEXACT, _same),
    "atan": (np.arctan, _INEXACT, _same),
    "asinh": (np.arcsinh, _INEXACT, _same),
    "acosh": (np.arccosh, _INEXACT, _same),
    "atanh": (np.arctanh, _INEXACT, _same),
    "sqrt": (np.sqrt, _INEXACT, _same),
    "cbrt": (np.cbrt, _FLOAT, _same),
    "logistic": (_logistic, _FLOAT, _same),
    "erf": (_erf, _FLOAT, _same),
    "not": (_not, _INT_BOOL, _same),
    "is_finite": (np.isfinite, _ANY, _to_bool),
    "is_nan": (np.isnan, _ANY, _to_bool),
    "is_inf": (np.isinf, _ANY, _to_bool),
    "real": (np.real, "c", _real_of),
    "imag": (np.imag, "c", _real_of),
    "conj": (np.conjugate, "c", _same),
    "reciprocal": (np.reciprocal, "c", _same),   # complex only (real floats use div): NumPy's own loop
    "square": (_complex_on_contiguous(np.square), "iufc", _same),
    "signbit": (np.signbit, _FLOAT, _to_bool),
}


def _unary_abstract_eval(name, kinds, out_dtype):
    def rule(x):
        _check_kinds(name, x, kinds)
        return [ShapedArray(x.shape, out_dtype(x.dtype), x.weak_type)]
    return rule


def _unary_cost(in_avals, out_avals, **_):
    n = out_avals[0].size
    return {"flops": n, "transcendentals": 0}


_TRANSCENDENTAL = {"exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
                   "tanh", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh",
                   "logistic", "erf", "cbrt", "pow", "atan2"}


def _make_cost(name):
    def cost(in_avals, out_avals, **_):
        n = out_avals[0].size
        return {"flops": n, "transcendentals": n if name in _TRANSCENDENTAL else 0}
    return cost


unary_prims: dict[str, Primitive] = {}
for _name, (_impl, _kinds, _out) in UNARY_SPECS.items():
    _p = Primitive(_name)
    def_rules(_p, abstract_eval=_unary_abstract_eval(_name, _kinds, _out), impl=_quiet(_impl),
              cost=_make_cost(_name))
    ELEMENTWISE.add(_p)
    unary_prims[_name] = _p


# ----------------------------------------------------------------------------- binary

def _floordiv(x, y):
    return np.floor_divide(x, y)


_multiply = _complex_on_contiguous(np.multiply)


def _first_on_ties(fn):
    """``fmax``/``fmin`` whose ties (+0.0 vs -0.0) give the first operand, as compiled code does
    (NumPy's own loop picks either zero depending on the element's position)."""
    def impl(x, y):
        return np.where(np.equal(x, y), x, fn(x, y))
    return impl


BINARY_SPECS = {
    # name: (impl, kinds, result is bool)
    "add": (np.add, _ANY, False),
    "sub": (np.subtract, "iufc", False),
    "mul": (_multiply, _ANY, False),
    "div": (np.true_divide, _INEXACT, False),
    "floordiv": (_floordiv, "iuf", False),
    "rem": (np.remainder, "iuf", False),    # Python/NumPy modulo: result has the divisor's sign
    "fmod": (np.fmod, "iuf", False),        # C fmod: result has the dividend's sign
    "pow": (np.power, "iufc", False),
    "max": (np.maximum, _ANY, False),       # NaN-propagating, as numpy.maximum
    "min": (np.minimum, _ANY, False),
    "fmax": (_first_on_ties(np.fmax), _ANY, False),
    "fmin": (_first_on_ties(np.fmin), _ANY, False),
    "atan2": (np.arctan2, _FLOAT, False),
    "hypot": (np.hypot, _FLOAT, False),
    "copysign": (np.copysign, _FLOAT, False),
    "nextafter": (np.nextafter, _FLOAT, False),
    "and": (np.bitwise_and, _INT_BOOL, False),
    "or": (np.bitwise_or, _INT_BOOL, False),
    "xor": (np.bitwise_xor, _INT_BOOL, False),
    "shift_left": (np.left_shift, "iu", False),
    "shift_right": (np.right_shift, "iu", False),  # arithmetic for signed, as numpy.right_shift
    "eq": (np.equal, _ANY, True),
    "ne": (np.not_equal, _ANY, True),
    "lt": (np.less, "biuf", True),
    "le": (np.less_equal, "biuf", True),
    "gt": (np.greater, "biuf", True),
    "ge": (np.greater_equal, "biuf", True),
}


def _binary_abstract_eval(name, kinds, is_comparison):
    def rule(x, y):
        shape = _shape_of_operands(name, x, y)
        _check_same_dtype(name, x, y)
        _check_kinds(name, x, kinds)
        dtype = dtypes.bool_ if is_comparison else x.dtype
        return [ShapedArray(shape, dtype, _weak(x, y))]
    return rule


def _binary_impl(fn, name):
    def impl(x, y):
        with np.errstate(all="ignore"):
            out = fn(x, y)
        return [np.asarray(out)]
    impl.__name__ = f"{name}_impl"
    return impl


binary_prims: dict[str, Primitive] = {}
for _name, (_impl, _kinds, _cmp) in BINARY_SPECS.items():
    _p = Primitive(_name)
    def_rules(_p, abstract_eval=_binary_abstract_eval(_name, _kinds, _cmp),
              impl=_binary_impl(_impl, _name), cost=_make_cost(_name))
    ELEMENTWISE.add(_p)
    binary_prims[_name] = _p


# ----------------------------------------------------------------------------- select / convert

def _check_select_n_predicate(which, cases):
    if not cases:
        raise TypeError("select_n needs at least one case")
    if which.dtype != dtypes.bool_ and not dtypes.is_integer(which.dtype):
        raise TypeError(f"select_n predicate must be bool or integer, got {which.dtype.name}")


def _select_n_abstract_eval(which, *cases):
    _check_select_n_predicate(which, cases)
    shape = _shape_of_operands("select_n", which, *cases)
    _check_same_dtype("select_n", *cases)
    return [ShapedArray(shape, cases[0].dtype, _weak(*cases))]


def _select_n_impl(which, *cases):
    # (eager calls reach the impl without the abstract rule: the same check, as under jit and in JAX)
    which = np.asarray(which)
    _check_select_n_predicate(which, cases)
    if len(cases) == 2 and which.dtype == np.bool_:
        return [np.asarray(np.where(which, cases[1], cases[0]))]
    idx = np.clip(np.asarray(which, dtype=np.int64), 0, len(cases) - 1)
    shape = np.broadcast_shapes(idx.shape, *(np.shape(c) for c in cases))
    return [np.asarray(np.choose(np.broadcast_to(idx, shape), [np.broadcast_to(c, shape) for c in cases]))]


select_n_p = def_rules(Primitive("select_n"), abstract_eval=_select_n_abstract_eval,
                       impl=_select_n_impl, cost=lambda i, o, **_: {"flops": o[0].size, "transcendentals": 0})
ELEMENTWISE.add(select_n_p)


def _convert_abstract_eval(x, *, new_dtype, weak_type=False):
    return [ShapedArray(x.shape, new_dtype, weak_type)]


def _convert_impl(x, *, new_dtype, weak_type=False):
    # A literal operand of an interpreted program (a custom rule's body run eagerly) is a Python scalar.
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        # complex -> bool is "either part nonzero" (NumPy); other real targets take the real part.
        if dtypes.is_complex(x.dtype) and not dtypes.is_complex(new_dtype) and not dtypes.is_bool(new_dtype):
            x = np.real(x)
        x = np.asarray(x)
        if x.dtype == dtypes.bfloat16 and np.dtype(new_dtype) != x.dtype:
            x = x.astype(np.float32)  # exact; other targets then convert as from float32
        if np.dtype(new_dtype) == np.uint32 and x.dtype.kind == "f":
            # NumPy's float -> uint32 loop gives 2**31 for NaN and values below -2**31 in its SIMD
            # blocks but the C cast (low 32 bits of the int64 conversion) elsewhere; tracejit
            # always gives the C cast, as its compiled kernels do (docs/compiler.md).
            return [x.astype(np.int64).astype(np.uint32)]
        return [x.astype(new_dtype)]


convert_element_type_p = def_rules(
    Primitive("convert_element_type"), abstract_eval=_convert_abstract_eval, impl=_convert_impl,
    cost=lambda i, o, **_: {"flops": 0, "transcendentals": 0})
ELEMENTWISE.add(convert_element_type_p)
storage_dtypes.register_convert(convert_element_type_p)
STORAGE_TRANSPARENT.add(select_n_p)


def _iota_abstract_eval(*, dtype, shape, dimension):
    if not 0 <= dimension < max(len(shape), 1):
        raise TypeError(f"iota dimension {dimension} out of range for shape {shape}")
    return [ShapedArray(shape, dtype)]


def _iota_impl(*, dtype, shape, dimension):
    ramp = np.arange(shape[dimension], dtype=dtype) if shape else np.zeros((), dtype)
    view = [1] * len(shape)
    if shape:
        view[dimension] = shape[dimension]
    return [np.ascontiguousarray(np.broadcast_to(ramp.reshape(view), shape))]


iota_p = def_rules(Primitive("iota"), abstract_eval=_iota_abstract_eval, impl=_iota_impl,
                   cost=lambda i, o, **_: {"flops": 0, "transcendentals": 0})
ELEMENTWISE.add(iota_p)
