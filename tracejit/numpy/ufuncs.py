"""NumPy's ufuncs on traced arrays.

Each :class:`Ufunc` resolves dtypes exactly as NumPy 2 does (through the
NumPy ufunc's own ``resolve_dtypes``, with Python scalars weak), converts
operands to the loop dtypes, broadcasts, and binds the matching primitive.
Called eagerly on concrete values it simply runs the NumPy ufunc.
"""
from __future__ import annotations

import numpy as np

from tracejit.array import arrays_in, operand_result

from tracejit.core import dtypes
from tracejit.core.trace import note_weak_int_cast
from tracejit.core.tracer import jax_value
from tracejit.ops.binders import select
from tracejit.ops.composites import complex_from_parts
from tracejit.ops.elementwise import binary_prims, select_n_p, unary_prims
from tracejit.numpy._util import (aval, broadcast_operands, broadcast_shapes, broadcast_to_shape, convert,
                                  eager, is_tracer, numpy_type_arg, shape_of, to_operand)
from tracejit.transforms.api_ad import jvp as jvp_, stop_gradient
from tracejit.transforms.ad_custom import custom_jvp
from tracejit.transforms.ad_rules_elementwise import BINARY_PARTIALS


def _resolve(np_ufunc, ops):
    try:
        # All-weak operands resolve at their default dtypes: NumPy picks object loops for
        # comparisons of two Python ints (arbitrary precision), which tracejit cannot run.
        all_weak = all(aval(o).weak_type for o in ops)
        args = tuple(aval(o).dtype if all_weak else numpy_type_arg(o) for o in ops)
        resolved = np_ufunc.resolve_dtypes(args + (None,) * np_ufunc.nout)
    except (TypeError, np.exceptions.DTypePromotionError) as e:
        names = ", ".join(aval(o).dtype.name for o in ops)
        raise TypeError(f"ufunc {np_ufunc.__name__!r} not supported for the input types ({names}): {e}") from None
    if dtypes.float32 in resolved and _all_strong_bfloat16(ops):
        # ml_dtypes has no bfloat16 loop for a few ufuncs (degrees, radians), so NumPy picks
        # float32; a function of bfloat16 values is bfloat16, as in JAX.
        resolved = tuple(dtypes.bfloat16 if d == dtypes.float32 else d for d in resolved)
    return resolved[:np_ufunc.nin], resolved[np_ufunc.nin:]


def _all_strong_bfloat16(ops):
    strong = [aval(o).dtype for o in ops if not aval(o).weak_type]
    return bool(strong) and all(d == dtypes.bfloat16 for d in strong)


class Ufunc:
    """A NumPy-compatible ufunc that also works on traced arrays.

    ``__call__`` applies it; ``reduce``, ``accumulate`` and ``outer`` follow
    NumPy's methods of the same name.
    """

    def __init__(self, np_ufunc, traced_impl, name=None):
        self._np = np_ufunc
        self._impl = traced_impl  # (*ops converted to loop dtypes) -> result
        self.__name__ = name or np_ufunc.__name__
        self.nin = np_ufunc.nin
        self.nout = np_ufunc.nout
        self.__doc__ = (f"NumPy's ``{np_ufunc.__name__}``, traceable.\n\nExamples\n--------\n"
                        f">>> import tracejit.numpy as jnp\n>>> jnp.{self.__name__}(...)  # doctest: +SKIP\n")

    def __repr__(self):
        return f"<tracejit ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, where=None, dtype=None, **kwargs):
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} positional arguments, got {len(args)}")
        if eager(*args) and out is None:
            kw = {"dtype": dtype} if dtype is not None else {}
            if where is not None:
                kw["where"] = where
            return arrays_in(self._np(*args, **kw, **kwargs))
        if out is not None:
            raise TypeError(f"{self.__name__}(..., out=...) is not supported on traced arrays; "
                            "use the returned value")
        if where is not None or kwargs:
            raise NotImplementedError(f"{self.__name__}: arguments {sorted(kwargs) + (['where'] if where is not None else [])} "
                                      "are not supported on traced arrays")
        # ``positive(x)`` hands back its operand: under jit the call's result is a JAX array all the
        # same, from a tracer of a NumPy array or from a concrete NumPy array (a constant).
        return operand_result(jax_value(self._apply(args, dtype, weak_result=False)))

    def _operator(self, *args):
        """The ufunc as a Python operator on a tracer (``t + 1``, ``-t``): Python scalars
        combine into a weak result, as Python numbers do. A call (``add(t, 1)``) returns
        a strong value even for Python-scalar operands, as NumPy's ufuncs return NumPy
        scalars (``np.conj(7)`` is ``np.int64(7)``)."""
        if eager(*args):
            return self._np(*args)
        return self._apply(args, None, weak_result=True)

    def _apply(self, args, dtype, weak_result):
        ops = [to_operand(a) for a in args]
        in_dtypes, out_dtypes = _resolve(self._np, ops)
        if dtype is not None:
            in_dtypes = (dtypes.canonical(dtype),) * self.nin
        weak = all(aval(o).weak_type for o in ops)
        if self._np in _COMPARISONS and dtype is None:
            exact = _exact_integer_comparison(self._np, ops, in_dtypes)
            if exact is not None:
                return exact if weak_result or not weak else convert(exact, dtypes.bool_)
        for o, d in zip(ops, in_dtypes):
            if _is_weak_int_tracer(o) and dtypes.kind(d) in "iu" and d != dtypes.int64:
                note_weak_int_cast(o, d)      # NumPy: a Python int out of d's range raises
        ops = [convert(o, d, weak_type=weak) for o, d in zip(ops, in_dtypes)]
        try:
            ops, _ = broadcast_operands(*ops)
        except ValueError as e:
            raise ValueError(f"{self.__name__}: {e}") from None
        if self._np is np.power:
            result = _power_with_scalar_exponent(*ops)
        else:
            result = self._impl(*ops)
        weak = weak and weak_result
        if self.nout == 1:
            return convert(result, out_dtypes[0], weak_type=weak)
        return tuple(convert(r, d, weak_type=weak) for r, d in zip(result, out_dtypes))

    # ---------------------------------------------------------------- methods
    def reduce(self, a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
        """Reduce ``a`` along ``axis`` with this (binary) ufunc."""
        if eager(a):
            kw = {} if initial is None else {"initial": initial}
            return arrays_in(self._np.reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, **kw))
        from tracejit.numpy import reductions as R
        fn = _REDUCERS.get(self.__name__)
        if fn is None:
            raise NotImplementedError(f"{self.__name__}.reduce is not supported on traced arrays")
        out = getattr(R, fn)(a, axis=axis, keepdims=keepdims, **({"dtype": dtype} if dtype is not None and fn in ("sum", "prod") else {}))
        if initial is not None:
            out = self(out, initial)
        return out

    def accumulate(self, a, axis=0, dtype=None):
        """Cumulative application along ``axis`` (add -> cumsum, multiply -> cumprod, ...)."""
        if eager(a):
            return arrays_in(self._np.accumulate(a, axis=axis, dtype=dtype))
        from tracejit.numpy import reductions as R
        fn = _ACCUMULATORS.get(self.__name__)
        if fn is None:
            raise NotImplementedError(f"{self.__name__}.accumulate is not supported on traced arrays")
        return getattr(R, fn)(a, axis=axis, **({"dtype": dtype} if dtype is not None else {}))

    def outer(self, a, b):
        """Apply to all pairs: ``out[i..., j...] = f(a[i...], b[j...])``."""
        if eager(a, b):
            return arrays_in(self._np.outer(a, b))
        from tracejit.numpy.shape import reshape
        a, b = to_operand(a), to_operand(b)
        sa, sb = aval(a).shape, aval(b).shape
        return self(reshape(a, sa + (1,) * len(sb)), b)



# ----------------------------------------------------------------------------- NumPy 2 special cases

_COMPARISONS = {np.equal: "eq", np.not_equal: "ne", np.less: "lt", np.less_equal: "le",
                np.greater: "gt", np.greater_equal: "ge"}


def _is_weak_int_tracer(x):
    return is_tracer(x) and x.aval.weak_type and dtypes.kind(x.aval.dtype) == "i"


def _left_is_less(np_ufunc, left_is_less, shape):
    """``a op b`` when every ``a`` is below every ``b`` (or above, ``left_is_less=False``)."""
    value = {"eq": False, "ne": True, "lt": left_is_less, "le": left_is_less,
             "gt": not left_is_less, "ge": not left_is_less}[_COMPARISONS[np_ufunc]]
    return broadcast_to_shape(np.bool_(value), shape)


def _exact_integer_comparison(np_ufunc, ops, in_dtypes):
    """NumPy 2 compares integer arrays with Python ints of any size, and int64 with uint64,
    by value: ``uint8 < -2`` is all False, ``int8 == 1000`` all False, ``int64(-1) < uint64(0)``
    True. Returns the result, or None where the ordinary loop is exact."""
    if not all(dtypes.kind(d) in "iu" for d in in_dtypes):
        return None
    shape = broadcast_shapes(*(shape_of(o) for o in ops))
    prim = binary_prims[_COMPARISONS[np_ufunc]].bind
    for i, o in enumerate(ops):
        other = ops[1 - i]
        other_dtype = aval(other).dtype
        if type(o) is int and not aval(other).weak_type and dtypes.kind(other_dtype) in "iu":
            # A Python int outside the array's dtype is below or above all of its values.
            info = np.iinfo(in_dtypes[1 - i])
            if not info.min <= o <= info.max:
                return _left_is_less(np_ufunc, (o < info.min) == (i == 0), shape)
        if _is_weak_int_tracer(o) and not aval(other).weak_type and dtypes.kind(other_dtype) in "iu":
            # A traced Python int (int64) holds any int64 value: compare in int64, or signed
            # against unsigned for uint64 arrays.
            if other_dtype != dtypes.uint64:
                (a, b), _ = broadcast_operands(*(convert(x, dtypes.int64) for x in ops))
                return prim(a, b)
            return _signed_unsigned(np_ufunc, ops, i, shape)
    if set(in_dtypes) == {dtypes.int64, dtypes.uint64}:
        return _signed_unsigned(np_ufunc, [convert(o, d) for o, d in zip(ops, in_dtypes)],
                                in_dtypes.index(dtypes.int64), shape)
    return None


def _signed_unsigned(np_ufunc, ops, signed_pos, shape):
    """int64 (at ``signed_pos``) against uint64 by value: a negative signed value is below
    every unsigned one; otherwise compare as uint64."""
    prim = binary_prims[_COMPARISONS[np_ufunc]].bind
    s = ops[signed_pos]
    as_unsigned = [convert(o, dtypes.uint64) for o in ops]
    (a, b), _ = broadcast_operands(*as_unsigned)
    negative = binary_prims["lt"].bind(convert(s, dtypes.int64), np.int64(0))
    below = _left_is_less(np_ufunc, signed_pos == 0, shape)
    (negative, below, by_value), _ = broadcast_operands(negative, below, prim(a, b))
    if shape_of(negative) != shape:
        negative = broadcast_to_shape(negative, shape)
    return select_n_p.bind(negative, by_value, below)


# NumPy's float32/float64 power loops special-case an exponent that is the same for the whole loop
# (a scalar: stride 0): 0.5 is sqrt (so (-inf) ** 0.5 is nan, (-0.0) ** 0.5 is -0.0, not C pow's
# inf and +0.0), -1 is 1/x, 1 is x, 2 is x*x.
_SCALAR_EXPONENTS = ((0.5, "sqrt"), (2.0, "square"), (-1.0, "reciprocal"), (1.0, "identity"))


def _exact_powers(x):
    """NumPy's exact values of ``x ** y`` per name of :data:`_SCALAR_EXPONENTS`, built on demand."""
    d = aval(x).dtype
    return {"sqrt": lambda: _prim("sqrt")(x), "square": lambda: _prim("mul")(x, x),
            "reciprocal": lambda: _prim("div")(np.asarray(1, d)[()], x), "identity": lambda: x}


def _power_with_scalar_exponent(x, y):
    d = aval(x).dtype
    if d not in (dtypes.float32, dtypes.float64) or shape_of(y) != ():
        return _prim("pow")(x, y)
    fast = _exact_powers(x)
    if not is_tracer(y):
        for value, name in _SCALAR_EXPONENTS:
            if y == value:
                return fast[name]()
        return _prim("pow")(x, y)
    return _traced_scalar_power(x, y)


@custom_jvp
def _traced_scalar_power(x, y):
    """x ** y for a traced scalar exponent, with NumPy's values at y in {0.5, 2, -1, 1} (sqrt,
    x * x, 1 / x, x). The selects would cut the derivative in y (zero where y is one of those
    values: d/dy 0.3 ** y at y = 2 came out 0), so the derivative is pow's own."""
    d = aval(x).dtype
    fast = _exact_powers(x)
    out = _prim("pow")(x, y)
    for value, name in _SCALAR_EXPONENTS:
        pick, case = broadcast_operands(_prim("eq")(y, np.asarray(value, d)[()]), fast[name]())[0]
        if shape_of(pick) != shape_of(out):
            pick = broadcast_to_shape(pick, shape_of(out))
        if shape_of(case) != shape_of(out):
            case = broadcast_to_shape(case, shape_of(out))
        out = select_n_p.bind(pick, out, case)
    return out


@_traced_scalar_power.defjvp
def _traced_scalar_power_jvp(primals, tangents):
    # pow's partial derivatives, one term per differentiated argument: a tangent is None where its
    # argument is not differentiated (an instantiated zero tangent of a constant base 0 times
    # d/dx = y * 0 ** (y - 1) = inf made forward-mode d/dy NaN for 0 < y < 1, where it is 0).
    x, y = primals
    out = _traced_scalar_power(x, y)
    value = _prim("pow")(x, y)
    tangent = None
    for partial, t in zip(BINARY_PARTIALS["pow"], tangents):
        if t is not None:
            term = broadcast_to_shape(partial(t, x, y, value), shape_of(out))
            tangent = term if tangent is None else _prim("add")(tangent, term)
    return out, tangent


_traced_scalar_power._none_for_zero_tangents = True


def power_operator(x, y):
    """``x ** y`` on a tracer, as ``ndarray.__pow__``: an exact Python ``2`` is ``square``
    (``bool_array ** 2`` is int8), for float and complex arrays ``-1`` is ``reciprocal`` and
    ``0.5`` is ``sqrt``; anything else is ``power``."""
    if is_tracer(x) and not x.aval.weak_type:
        d = x.aval.dtype
        if type(y) is int and y == 2:
            return UFUNCS["square"]._operator(x)
        if type(y) is int and y == -1 and dtypes.is_inexact(d):
            return UFUNCS["reciprocal"]._operator(x)
        if type(y) is float and y == 0.5 and dtypes.is_inexact(d):
            return UFUNCS["sqrt"]._operator(x)
    return UFUNCS["power"]._operator(x, y)


def operator(name, *args):
    """Python operator ``name`` (a ufunc name) on tracer operands: see ``Ufunc._operator``."""
    return UFUNCS[name]._operator(*args)


_REDUCERS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
             "logical_and": "all", "logical_or": "any", "fmax": "nanmax", "fmin": "nanmin"}
_ACCUMULATORS = {"add": "cumsum", "multiply": "cumprod", "maximum": "cummax", "minimum": "cummin"}


def _prim(name):
    p = unary_prims.get(name) or binary_prims[name]
    return p.bind


def _identity(x):
    return x


def _make(np_ufunc, impl, name=None):
    return Ufunc(np_ufunc, impl, name)


def _rounding(prim_name, name=None):
    def impl(x):
        if dtypes.is_complex(aval(x).dtype):
            raise NotImplementedError(f"{name or prim_name} of complex traced arrays is not supported; round "
                                      "the real and imaginary parts separately")
        return x if not dtypes.is_float(aval(x).dtype) else _prim(prim_name)(x)
    return impl


def _ordered(prim_name):
    # NumPy orders complex numbers lexicographically (real part first); a NaN
    # imaginary part makes the real-part test false, as in NumPy's CLT/CLE macros.
    def impl(x, y):
        if not dtypes.is_complex(aval(x).dtype):
            return _prim(prim_name)(x, y)
        re, im, bind = unary_prims["real"].bind, unary_prims["imag"].bind, _prim
        xr, xi, yr, yi = re(x), im(x), re(y), im(y)
        no_nan = bind("and")(bind("not")(bind("is_nan")(xi)), bind("not")(bind("is_nan")(yi)))
        first = bind("and")(bind({"le": "lt", "ge": "gt"}.get(prim_name, prim_name))(xr, yr), no_nan)
        return bind("or")(first, bind("and")(bind("eq")(xr, yr), bind(prim_name)(xi, yi)))
    return impl


def _conj(x):
    return _prim("conj")(x) if dtypes.is_complex(aval(x).dtype) else x


def _reciprocal(x):
    d = aval(x).dtype
    if dtypes.is_complex(d):
        return _complex_reciprocal()(x)
    if dtypes.is_inexact(d):
        return _prim("div")(np.asarray(1, d)[()], x)
    # NumPy's integer loop is the C cast (T)(1.0 / x): 1, -1 or 0, and at x == 0 the x86 cast of inf
    # (INT_MIN for int32/int64, 0 for the others; bools arrive as int8).
    return convert(_prim("div")(np.float64(1.0), convert(x, dtypes.float64)), d)


_RECIPROCAL: list = []


def _complex_reciprocal():
    """NumPy's complex reciprocal loop (its own formula: ``reciprocal(0j)`` is nan+nanj, where
    ``1 / 0j`` is inf+nanj), differentiated as ``1 / z``."""
    if not _RECIPROCAL:

        def reciprocal(z):
            return unary_prims["reciprocal"].bind(z)
        fn = custom_jvp(reciprocal)

        @fn.defjvp
        def _reciprocal_jvp(primals, tangents):
            return fn(*primals), jvp_(lambda z: _prim("div")(np.asarray(1, aval(z).dtype)[()], z), primals,
                                      tangents)[1]
        _RECIPROCAL.append(fn)
    return _RECIPROCAL[0]


def _sign(x):
    d = aval(x).dtype
    if dtypes.is_complex(d):
        return _complex_sign(x)
    return _prim("sign")(x)


def _complex_sign(z):
    """NumPy 2's complex sign ``z / |z|``, as its loop computes it: ``|z|`` by hypot; 0 at 0; an
    infinite part gives its own unit direction (``inf + 1j`` is ``1``, ``1 - inf j`` is ``-1j``),
    both infinite or any NaN gives NaN + NaN j."""
    re, im = _prim("real")(z), _prim("imag")(z)
    part = aval(re).dtype
    zero, one, minus_one, nan = (np.asarray(v, part)[()] for v in (0.0, 1.0, -1.0, np.nan))
    mag = _prim("hypot")(re, im)
    unit = lambda v: select(_prim("gt")(v, zero), one, minus_one)   # noqa: E731
    inf_re, inf_im = _prim("is_inf")(re), _prim("is_inf")(im)
    finite = _prim("and")(_prim("is_finite")(mag), _prim("ne")(mag, zero))
    safe = select(finite, mag, one)
    out_re = select(finite, _prim("div")(re, safe), zero)
    out_im = select(finite, _prim("div")(im, safe), zero)
    out_re = select(inf_re, select(inf_im, nan, unit(re)), out_re)
    out_im = select(inf_re, select(inf_im, nan, zero), select(inf_im, unit(im), out_im))
    is_nan = _prim("ne")(mag, mag)
    out_re, out_im = select(is_nan, nan, out_re), select(is_nan, nan, out_im)
    return stop_gradient(complex_from_parts(out_re, out_im))     # sign's derivative is zero, as JAX's


def _logaddexp_value(x, y):
    # As NumPy: equal arguments (infinities included) give x + log(2); otherwise
    # max + log1p(exp(-|x - y|)), which never overflows and propagates NaN.
    U = UFUNCS
    ln2 = np.asarray(np.log(2), aval(x).dtype)[()]
    spread = U["add"](U["maximum"](x, y),
                      U["log1p"](U["exp"](U["negative"](U["absolute"](U["subtract"](x, y))))))
    return select_n_p.bind(U["equal"](x, y), spread, U["add"](x, ln2))


def _logaddexp2_value(x, y):
    U = UFUNCS
    ln2 = np.asarray(np.log(2), aval(x).dtype)[()]
    return U["true_divide"](_logaddexp_value(U["multiply"](x, ln2), U["multiply"](y, ln2)), ln2)


_CUSTOM_LOGADDEXP: dict = {}


def _with_jax_derivative(name, value_fn, weight):
    """``value_fn`` with JAX's custom JVP of ``logaddexp``/``logaddexp2``:
    ``t1 * weight(r(x1) - r(out)) + t2 * weight(r(x2) - r(out))``, where ``r``
    replaces +inf by 0. The weights are the softmax weights, so ties split the
    derivative 0.5 / 0.5 (the select on ``x == y`` in the value carries none)."""
    fn = _CUSTOM_LOGADDEXP.get(name)
    if fn is None:
        U = UFUNCS

        def replace_posinf(v):
            zero = np.asarray(0, aval(v).dtype)[()]
            return select_n_p.bind(U["equal"](v, np.asarray(np.inf, aval(v).dtype)[()]), v, zero)

        def jvp(primals, tangents):
            x1, x2 = primals
            t1, t2 = tangents
            out = fn(x1, x2)
            ro = replace_posinf(out)
            w1 = weight(U["subtract"](replace_posinf(x1), ro))
            w2 = weight(U["subtract"](replace_posinf(x2), ro))
            return out, U["add"](U["multiply"](t1, w1), U["multiply"](t2, w2))
        def primal(x1, x2):
            return value_fn(x1, x2)
        primal.__name__ = primal.__qualname__ = name
        fn = custom_jvp(primal)
        fn.defjvp(jvp)
        _CUSTOM_LOGADDEXP[name] = fn
    return fn


def _logaddexp(x, y):
    if not dtypes.is_inexact(aval(x).dtype) or dtypes.is_complex(aval(x).dtype):
        return _logaddexp_value(x, y)
    return _with_jax_derivative("logaddexp", _logaddexp_value, UFUNCS["exp"])(x, y)


def _logaddexp2(x, y):
    if not dtypes.is_inexact(aval(x).dtype) or dtypes.is_complex(aval(x).dtype):
        return _logaddexp2_value(x, y)
    return _with_jax_derivative("logaddexp2", _logaddexp2_value, UFUNCS["exp2"])(x, y)


def _scale(num, den):
    def impl(x):
        # NumPy's loops compute the factor in the loop dtype: float32(180) / float32(pi).
        d = aval(x).dtype
        if d in dtypes.HALF_FLOATS:  # NumPy's half loops compute in float32
            return convert(impl(convert(x, dtypes.float32)), d)
        return _prim("mul")(x, np.asarray(num, d)[()] / np.asarray(den, d)[()])
    return impl


def _divmod(x, y):
    return _prim("floordiv")(x, y), _prim("rem")(x, y)


def _logical(prim_name):
    def impl(*xs):
        return _prim(prim_name)(*[convert(x, dtypes.bool_) for x in xs])
    return impl


def _positive(x):
    return x


def _absolute(x):
    # NumPy's absolute is the identity on bool (the abs primitive takes numbers only).
    return x if dtypes.is_bool(aval(x).dtype) else _prim("abs")(x)


_UNARY_DIRECT = {
    # jnp name: (numpy ufunc, primitive name)
    "negative": (np.negative, "neg"), "absolute": (np.absolute, "abs"),
    "exp": (np.exp, "exp"), "exp2": (np.exp2, "exp2"), "expm1": (np.expm1, "expm1"),
    "log": (np.log, "log"), "log1p": (np.log1p, "log1p"), "log2": (np.log2, "log2"),
    "log10": (np.log10, "log10"), "sin": (np.sin, "sin"), "cos": (np.cos, "cos"),
    "tan": (np.tan, "tan"), "tanh": (np.tanh, "tanh"), "sinh": (np.sinh, "sinh"),
    "cosh": (np.cosh, "cosh"), "arcsin": (np.arcsin, "asin"), "arccos": (np.arccos, "acos"),
    "arctan": (np.arctan, "atan"), "arcsinh": (np.arcsinh, "asinh"), "arccosh": (np.arccosh, "acosh"),
    "arctanh": (np.arctanh, "atanh"), "sqrt": (np.sqrt, "sqrt"), "cbrt": (np.cbrt, "cbrt"),
    "square": (np.square, "square"), "invert": (np.invert, "not"),
    "isnan": (np.isnan, "is_nan"), "isinf": (np.isinf, "is_inf"), "isfinite": (np.isfinite, "is_finite"),
    "signbit": (np.signbit, "signbit"),
}
_BINARY_DIRECT = {
    "add": (np.add, "add"), "subtract": (np.subtract, "sub"), "multiply": (np.multiply, "mul"),
    "true_divide": (np.true_divide, "div"), "floor_divide": (np.floor_divide, "floordiv"),
    "remainder": (np.remainder, "rem"), "fmod": (np.fmod, "fmod"), "power": (np.power, "pow"),
    "maximum": (np.maximum, "max"), "minimum": (np.minimum, "min"), "fmax": (np.fmax, "fmax"),
    "fmin": (np.fmin, "fmin"), "arctan2": (np.arctan2, "atan2"), "hypot": (np.hypot, "hypot"),
    "copysign": (np.copysign, "copysign"), "nextafter": (np.nextafter, "nextafter"),
    "bitwise_and": (np.bitwise_and, "and"), "bitwise_or": (np.bitwise_or, "or"),
    "bitwise_xor": (np.bitwise_xor, "xor"), "left_shift": (np.left_shift, "shift_left"),
    "right_shift": (np.right_shift, "shift_right"), "equal": (np.equal, "eq"),
    "not_equal": (np.not_equal, "ne"), "less": (np.less, "lt"), "less_equal": (np.less_equal, "le"),
    "greater": (np.greater, "gt"), "greater_equal": (np.greater_equal, "ge"),
}

UFUNCS: dict[str, Ufunc] = {}
for _n, (_np_u, _p) in {**_UNARY_DIRECT, **_BINARY_DIRECT}.items():
    UFUNCS[_n] = _make(_np_u, _prim(_p), _n)

UFUNCS.update({
    "less": _make(np.less, _ordered("lt")), "less_equal": _make(np.less_equal, _ordered("le")),
    "greater": _make(np.greater, _ordered("gt")), "greater_equal": _make(np.greater_equal, _ordered("ge")),
    "positive": _make(np.positive, _positive),
    "absolute": _make(np.absolute, _absolute),
    "sign": _make(np.sign, _sign),
    "floor": _make(np.floor, _rounding("floor")),
    "ceil": _make(np.ceil, _rounding("ceil")),
    "trunc": _make(np.trunc, _rounding("trunc")),
    "rint": _make(np.rint, _rounding("round", "rint")),
    "conjugate": _make(np.conjugate, _conj),
    "reciprocal": _make(np.reciprocal, _reciprocal),
    "logaddexp": _make(np.logaddexp, _logaddexp),
    "logaddexp2": _make(np.logaddexp2, _logaddexp2),
    "deg2rad": _make(np.deg2rad, _scale(np.pi, 180)),
    "rad2deg": _make(np.rad2deg, _scale(180, np.pi)),
    "divmod": _make(np.divmod, _divmod),
    "logical_and": _make(np.logical_and, _logical("and")),
    "logical_or": _make(np.logical_or, _logical("or")),
    "logical_xor": _make(np.logical_xor, _logical("xor")),
    "logical_not": _make(np.logical_not, _logical("not")),
})
UFUNCS["radians"] = _make(np.radians, _scale(np.pi, 180), "radians")
UFUNCS["degrees"] = _make(np.degrees, _scale(180, np.pi), "degrees")
UFUNCS["conj"] = _make(np.conjugate, _conj, "conj")
UFUNCS["abs"] = _make(np.absolute, _absolute, "abs")
UFUNCS["divide"] = _make(np.true_divide, _prim("div"), "divide")
UFUNCS["mod"] = _make(np.remainder, _prim("rem"), "mod")
UFUNCS["bitwise_not"] = _make(np.invert, _prim("not"), "bitwise_not")
UFUNCS["bitwise_invert"] = UFUNCS["bitwise_not"]
UFUNCS["pow"] = _make(np.power, _prim("pow"), "pow")
for _alias, _target in (("asin", "arcsin"), ("acos", "arccos"), ("atan", "arctan"), ("asinh", "arcsinh"),
                        ("acosh", "arccosh"), ("atanh", "arctanh"), ("atan2", "arctan2"),
                        ("bitwise_left_shift", "left_shift"), ("bitwise_right_shift", "right_shift")):
    UFUNCS[_alias] = UFUNCS[_target]

globals().update(UFUNCS)
