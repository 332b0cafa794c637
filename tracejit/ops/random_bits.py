"""Primitives behind ``tracejit.random``: the threefry2x32 hash, ``erf_inv``,
and the sampling loops of gamma / poisson / a stable key sort.

``threefry2x32`` has a vectorized NumPy implementation and a decomposition
into elementwise uint32 primitives (add, xor, shift_left, shift_right, or),
so the compiler expands it and fuses it with its consumers into one loop.
``erf_inv`` likewise decomposes into elementwise float primitives (Giles'
polynomials, the ones XLA uses). The gamma and poisson samplers are
rejection loops with a data-dependent trip count; they are primitives with
a NumPy implementation (like JAX's ``random_gamma_p``), which the compiler
runs as a NumPy step.
"""
from __future__ import annotations

import math

import numpy as np

from tracejit.core import dtypes
from tracejit.core.avals import ShapedArray
from tracejit.core.primitive import Primitive, decomposition_rules, def_rules
from tracejit.ops.elementwise import binary_prims, select_n_p, unary_prims

_U32 = np.dtype(np.uint32)

# ----------------------------------------------------------------------------- threefry2x32

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


def _common_shape(name, avals):
    shapes = {a.shape for a in avals if a.shape != ()}
    if len(shapes) > 1:
        raise TypeError(f"{name} operands must have equal shapes (rank-0 operands broadcast), got "
                        + ", ".join(a.str_short() for a in avals))
    return shapes.pop() if shapes else ()


def _threefry_abstract_eval(k0, k1, x0, x1):
    avals = (k0, k1, x0, x1)
    if any(a.dtype != _U32 for a in avals):
        raise TypeError("threefry2x32 requires uint32 operands, got "
                        + ", ".join(a.str_short() for a in avals))
    shape = _common_shape("threefry2x32", avals)
    return [ShapedArray(shape, _U32), ShapedArray(shape, _U32)]


def _threefry_rounds(k0, k1, x0, x1, ops):
    """The 20-round Threefry-2x32 hash written once over an ops table, so the
    NumPy impl and the primitive decomposition are the same computation."""
    add, xor, rotl, const = ops["add"], ops["xor"], ops["rotl"], ops["const"]
    ks = (k0, k1, xor(xor(k0, k1), const(_PARITY)))
    x0 = add(x0, ks[0])
    x1 = add(x1, ks[1])
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = add(x0, x1)
            x1 = xor(x0, rotl(x1, r))
        x0 = add(x0, ks[(i + 1) % 3])
        x1 = add(add(x1, ks[(i + 2) % 3]), const(i + 1))
    return x0, x1


def _np_rotl(x, r):
    return (x << _U32.type(r)) | (x >> _U32.type(32 - r))


_NP_OPS = {"add": np.add, "xor": np.bitwise_xor, "rotl": _np_rotl, "const": _U32.type}


def threefry2x32_np(k0, k1, x0, x1):
    """Threefry-2x32 on NumPy uint32 arrays (rank-0 operands broadcast)."""
    args = [np.asarray(a, dtype=_U32) for a in (k0, k1, x0, x1)]
    shape = np.broadcast_shapes(*(a.shape for a in args))
    # Full-shape counters first, so every add below is an array op that wraps silently.
    x0 = np.array(np.broadcast_to(args[2], shape), dtype=_U32)
    x1 = np.array(np.broadcast_to(args[3], shape), dtype=_U32)
    with np.errstate(over="ignore"):
        y0, y1 = _threefry_rounds(args[0], args[1], x0, x1, _NP_OPS)
    return [np.asarray(y0, dtype=_U32).reshape(shape), np.asarray(y1, dtype=_U32).reshape(shape)]


def _prim_rotl(x, r):
    return binary_prims["or"].bind(binary_prims["shift_left"].bind(x, _U32.type(r)),
                                   binary_prims["shift_right"].bind(x, _U32.type(32 - r)))


_PRIM_OPS = {"add": binary_prims["add"].bind, "xor": binary_prims["xor"].bind, "rotl": _prim_rotl,
             "const": _U32.type}


def _threefry_decomposition(k0, k1, x0, x1):
    # Binary primitives broadcast rank-0 operands only; counters carry the full shape.
    y0, y1 = _threefry_rounds(k0, k1, x0, x1, _PRIM_OPS)
    return [y0, y1]


threefry2x32_p = def_rules(
    Primitive("threefry2x32", multiple_results=True), abstract_eval=_threefry_abstract_eval,
    impl=threefry2x32_np,
    cost=lambda i, o, **_: {"flops": 20 * 6 * o[0].size, "transcendentals": 0})
decomposition_rules[threefry2x32_p] = _threefry_decomposition


# ----------------------------------------------------------------------------- erf_inv

# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): the
# single-precision pair (w < 5, else) and double-precision triple
# (w < 6.25, w < 16, else), evaluated in Horner form, as XLA does.
_GILES_F32 = (
    (5.0, 2.5, False, (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                       -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)),
    (math.inf, 3.0, True, (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                           0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)),
)
_GILES_F64 = (
    (6.25, 3.125, False, (
        -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
        1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
        6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
        2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
        1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
        4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
        0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
        0.24015818242558961693, 1.6536545626831027356)),
    (16.0, 3.25, True, (
        2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
        1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
        2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
        6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
        0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
        -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
        3.0838856104922207635)),
    (math.inf, 5.0, True, (
        -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
        -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
        2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
        -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
        7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
        1.0103004648645343977, 4.8499064014085844221)),
)


def _erf_inv_table(dtype):
    if dtype == np.float64:
        return _GILES_F64
    if dtype in (np.float32, np.float16):
        return _GILES_F32
    raise TypeError(f"erf_inv does not accept dtype {np.dtype(dtype).name} (allowed: float16, float32, float64)")


def _erf_inv_generic(x, dtype, ops):
    """erf_inv over an ops table (NumPy or primitives): one computation, two evaluators.

    Every branch is evaluated and selected, exactly like XLA's expansion, so
    the NumPy result and the decomposed program agree bit for bit."""
    c, add, mul, sqrt, select, lt = ops["c"], ops["add"], ops["mul"], ops["sqrt"], ops["select"], ops["lt"]
    # w = -log1p(-x*x); the float16 version runs in float32 like XLA's upcast.
    w = ops["neg"](ops["log1p"](ops["neg"](mul(x, x))))
    sw = sqrt(w)
    result = None
    for bound, shift, use_sqrt, coeffs in reversed(_erf_inv_table(dtype)):
        t = add(sw if use_sqrt else w, c(-shift))
        p = c(coeffs[0])
        for k in coeffs[1:]:
            p = add(c(k), mul(p, t))
        result = p if result is None else select(lt(w, c(bound)), p, result)
    result = mul(result, x)
    # erf_inv(+-1) = +-inf; the polynomial is indeterminate there.
    return select(ops["eq"](ops["abs"](x), c(1.0)), mul(x, c(math.inf)), result)


def _np_erf_inv_ops(dtype):
    t = np.dtype(dtype).type
    return {"c": t, "add": np.add, "mul": np.multiply, "sqrt": np.sqrt, "neg": np.negative,
            "log1p": np.log1p, "abs": np.abs, "lt": np.less, "eq": np.equal,
            "select": lambda pred, on_true, on_false: np.where(pred, on_true, on_false).astype(dtype)}


def _erf_inv_impl(x):
    x = np.asarray(x)
    compute = np.float32 if x.dtype == np.float16 else x.dtype
    with np.errstate(all="ignore"):
        out = _erf_inv_generic(x.astype(compute), compute, _np_erf_inv_ops(compute))
    return [np.asarray(out, dtype=compute).astype(x.dtype)]


def _erf_inv_decomposition(x):
    from tracejit.ops.elementwise import convert_element_type_p
    in_dtype = x.dtype
    compute = np.dtype(np.float32) if in_dtype == np.float16 else in_dtype
    if compute != in_dtype:
        x = convert_element_type_p.bind(x, new_dtype=compute, weak_type=False)
    t = compute.type
    b = binary_prims
    ops = {"c": t, "add": b["add"].bind, "mul": b["mul"].bind, "sqrt": unary_prims["sqrt"].bind,
           "neg": unary_prims["neg"].bind, "log1p": unary_prims["log1p"].bind, "abs": unary_prims["abs"].bind,
           "lt": b["lt"].bind, "eq": b["eq"].bind,
           "select": lambda pred, on_true, on_false: _select_full(pred, on_true, on_false)}
    out = _erf_inv_generic(x, compute, ops)
    if compute != in_dtype:
        out = convert_element_type_p.bind(out, new_dtype=in_dtype, weak_type=False)
    return [out]


def _select_full(pred, on_true, on_false):
    # select_n broadcasts rank-0 cases, so polynomial constants need no broadcast.
    return select_n_p.bind(pred, on_false, on_true)


def _erf_inv_abstract_eval(x):
    if x.dtype.kind != "f":
        raise TypeError(f"erf_inv does not accept dtype {x.dtype.name} (allowed: floating)")
    return [ShapedArray(x.shape, x.dtype, x.weak_type)]


erf_inv_p = def_rules(Primitive("erf_inv"), abstract_eval=_erf_inv_abstract_eval, impl=_erf_inv_impl,
                      cost=lambda i, o, **_: {"flops": 30 * o[0].size, "transcendentals": 2 * o[0].size})
decomposition_rules[erf_inv_p] = _erf_inv_decomposition


# ----------------------------------------------------------------------------- NumPy sampling helpers
# The NumPy implementations of the loop primitives below reproduce jax.random's
# algorithms key for key, so their streams follow JAX's up to rounding of log/pow.

def np_split(keys, num: int):
    """keys: uint32[..., 2] -> uint32[..., num, 2] (JAX's partitionable split)."""
    keys = np.asarray(keys, dtype=_U32)
    k0 = keys[..., 0, None]
    k1 = keys[..., 1, None]
    lo = np.arange(num, dtype=_U32)
    b0, b1 = threefry2x32_np(k0, k1, np.zeros_like(lo), lo)
    return np.stack([b0, b1], axis=-1)


def np_bits(keys, bit_width: int, shape=()):
    """Random bits for each key in ``keys`` (uint32[..., 2]) of per-key ``shape``."""
    keys = np.asarray(keys, dtype=_U32)
    size = math.prod(shape)
    idx = np.arange(size, dtype=np.uint64).reshape(shape)
    pad = (1,) * len(shape)
    k0 = keys[..., 0].reshape(keys.shape[:-1] + pad)
    k1 = keys[..., 1].reshape(keys.shape[:-1] + pad)
    b0, b1 = threefry2x32_np(k0, k1, (idx >> np.uint64(32)).astype(_U32), idx.astype(_U32))
    return combine_bits_np(b0, b1, bit_width)


def combine_bits_np(b0, b1, bit_width):
    if bit_width == 64:
        return (b0.astype(np.uint64) << np.uint64(32)) | b1.astype(np.uint64)
    bits = b0 ^ b1
    return bits if bit_width == 32 else bits.astype(np.dtype(f"uint{bit_width}"))


def np_uniform(keys, dtype, shape=(), minval=0.0, maxval=1.0):
    """jax.random.uniform for each key, in NumPy (the mantissa-bits construction)."""
    dtype = np.dtype(dtype)
    nbits, nmant = dtype.itemsize * 8, np.finfo(dtype).nmant
    bits = np_bits(keys, nbits, shape)
    floats = (bits >> bits.dtype.type(nbits - nmant)).astype(dtype) * dtype.type(2.0 ** -nmant)
    lo, hi = dtype.type(minval), dtype.type(maxval)
    return np.maximum(lo, floats * (hi - lo) + lo).astype(dtype)


def np_normal(keys, dtype, shape=()):
    dtype = np.dtype(dtype)
    lo = np.nextafter(dtype.type(-1.0), dtype.type(0.0))
    u = np_uniform(keys, dtype, shape, lo, 1.0)
    return (dtype.type(np.sqrt(2.0)) * _erf_inv_impl(u)[0]).astype(dtype)


def _gamma_impl(keys, alpha, *, log_space):
    """Marsaglia-Tsang for each (key, alpha) pair, vectorized with masks.

    keys: uint32[..., 2] (one key per alpha), alpha: float[...]."""
    dtype = alpha.dtype
    t = dtype.type
    flat_keys = np.asarray(keys, _U32).reshape(-1, 2)
    a = np.asarray(alpha).reshape(-1)
    with np.errstate(all="ignore"):
        boost_mask = a >= 1
        alpha_b = np.where(boost_mask, a, a + t(1))
        d = alpha_b - t(1.0 / 3.0)
        c = t(1.0 / 3.0) / np.sqrt(d)
        ks = np_split(flat_keys, 2)
        key, subkey = ks[:, 0], ks[:, 1]
        X = np.zeros_like(a)
        V = np.ones_like(a)
        U = np.full_like(a, 2)

        def rejected(X, V, U, d):
            return ((U >= t(1) - t(0.0331) * (X * X))
                    & (np.log(U) >= X * t(0.5) + d * ((t(1) - V) + np.log(V))))

        active = rejected(X, V, U, d) & ~np.isnan(a)
        while active.any():
            idx = np.nonzero(active)[0]
            k3 = np_split(key[idx], 3)
            key[idx], x_key, u_key = k3[:, 0], k3[:, 1], k3[:, 2]
            # Inner loop: draw normals until v = 1 + x c > 0.
            x = np.zeros(len(idx), dtype)
            v = np.full(len(idx), -1, dtype)
            ci = c[idx]
            inner = np.ones(len(idx), bool)
            while inner.any():
                j = np.nonzero(inner)[0]
                k2 = np_split(x_key[j], 2)
                x_key[j] = k2[:, 0]
                x[j] = np_normal(k2[:, 1], dtype)
                v[j] = t(1) + x[j] * ci[j]
                inner = v <= 0
            X[idx] = x * x
            V[idx] = v * v * v
            U[idx] = np_uniform(u_key, dtype)
            active[idx] = rejected(X[idx], V[idx], U[idx], d[idx])
        if log_space:
            log_samples = np.log1p(-np_uniform(subkey, dtype))
            log_boost = np.where(boost_mask | (log_samples == 0), t(0), log_samples * (t(1) / a))
            out = np.log(d) + np.log(V) + log_boost
        else:
            samples = t(1) - np_uniform(subkey, dtype)
            boost = np.where(boost_mask, t(1), samples ** (t(1) / a))
            out = d * V * boost
        out = np.where(np.isnan(a), a, out)
    return [np.asarray(out, dtype).reshape(alpha.shape)]


def _random_gamma_impl(key, alpha, *, log_space):
    keys = np_split(key, max(alpha.size, 1))[: alpha.size]
    return _gamma_impl(keys, np.asarray(alpha), log_space=log_space)


def _random_gamma_abstract_eval(key, alpha, *, log_space):
    if key.shape != (2,) or key.dtype != _U32:
        raise TypeError(f"random_gamma needs a uint32[2] key, got {key.str_short()}")
    if alpha.dtype.kind != "f":
        raise TypeError(f"random_gamma needs a floating alpha, got {alpha.str_short()}")
    return [ShapedArray(alpha.shape, alpha.dtype)]


random_gamma_p = def_rules(Primitive("random_gamma"), abstract_eval=_random_gamma_abstract_eval,
                           impl=_random_gamma_impl,
                           cost=lambda i, o, **_: {"flops": 100 * o[0].size, "transcendentals": 8 * o[0].size})


def _lgamma_np(x):
    # math.lgamma raises at the poles (0, -1, ...); XLA returns inf there.
    out = np.full(x.shape, np.inf)
    ok = np.isfinite(x) & ~((x <= 0) & (x == np.floor(x)))
    out[ok] = [math.lgamma(v) for v in x[ok].astype(np.float64)]
    out[np.isnan(x)] = np.nan
    return out.astype(x.dtype)


def _poisson_knuth_np(key, lam):
    k = np.zeros(lam.shape, np.int64)
    log_prod = np.zeros(lam.shape, np.float32)
    rng = key
    with np.errstate(all="ignore"):
        while (log_prod > -lam).any():
            rng, subkey = np_split(rng, 2)
            k = np.where(log_prod > -lam, k + 1, k)
            log_prod = log_prod + np.log(np_uniform(subkey, np.float32, lam.shape))
    return k - 1


def _poisson_rejection_np(key, lam):
    t = np.float32
    with np.errstate(all="ignore"):
        log_lam = np.log(lam)
        b = t(0.931) + t(2.53) * np.sqrt(lam)
        a = t(-0.059) + t(0.02483) * b
        inv_alpha = t(1.1239) + t(1.1328) / (b - t(3.4))
        v_r = t(0.9277) - t(3.6224) / (b - t(2))
        k_out = np.full(lam.shape, -1, np.float32)
        accepted = np.zeros(lam.shape, bool)
        while not accepted.all():
            key, s0, s1 = np_split(key, 3)
            u = np_uniform(s0, np.float32, lam.shape) - t(0.5)
            v = np_uniform(s1, np.float32, lam.shape)
            u_shifted = t(0.5) - np.abs(u)
            k = np.floor((t(2) * a / u_shifted + b) * u + lam + t(0.43))
            s = np.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
            tt = -lam + k * log_lam - _lgamma_np(k + t(1))
            accept1 = (u_shifted >= t(0.07)) & (v <= v_r)
            reject = (k < 0) | ((u_shifted < t(0.013)) & (v > u_shifted))
            accept = accept1 | (~reject & (s <= tt))
            k_out = np.where(accept, k, k_out)
            accepted |= accept
    return k_out


def _random_poisson_impl(key, lam, *, dtype):
    """JAX's poisson: Knuth below lam=10, Hormann's transformed rejection above."""
    lam = np.asarray(lam, np.float32)
    use_knuth = np.isnan(lam) | (lam < 10)
    knuth = _poisson_knuth_np(key, np.where(use_knuth, lam, np.float32(0)))
    rejection = _poisson_rejection_np(key, np.where(use_knuth, np.float32(1e5), lam))
    with np.errstate(invalid="ignore"):
        out = np.where(use_knuth, knuth, rejection.astype(np.int64))
    out = np.where(lam == 0, 0, out)
    return [np.asarray(out).astype(dtype)]


def _random_poisson_abstract_eval(key, lam, *, dtype):
    if key.shape != (2,) or key.dtype != _U32:
        raise TypeError(f"random_poisson needs a uint32[2] key, got {key.str_short()}")
    if lam.dtype != np.float32:
        raise TypeError(f"random_poisson needs a float32 rate, got {lam.str_short()}")
    if not dtypes.is_integer(dtype):
        raise TypeError(f"random_poisson needs an integer dtype, got {dtype}")
    return [ShapedArray(lam.shape, dtype)]


random_poisson_p = def_rules(Primitive("random_poisson"), abstract_eval=_random_poisson_abstract_eval,
                             impl=_random_poisson_impl,
                             cost=lambda i, o, **_: {"flops": 50 * o[0].size, "transcendentals": 10 * o[0].size})


# ----------------------------------------------------------------------------- stable key sort
# permutation / top-k need a stable sort of values by random keys. It is a
# private primitive until ``tracejit.lax.sort_key_val`` exists; random.py
# prefers the lax one when it is available.

def _sort_key_val_abstract_eval(keys, values, *, dimension):
    if keys.shape != values.shape:
        raise TypeError(f"random_sort_key_val needs equal shapes, got {keys.str_short()}, {values.str_short()}")
    if not 0 <= dimension < len(keys.shape):
        raise TypeError(f"random_sort_key_val dimension {dimension} out of range for {keys.str_short()}")
    return [ShapedArray(keys.shape, keys.dtype), ShapedArray(values.shape, values.dtype)]


def _sort_key_val_impl(keys, values, *, dimension):
    order = np.argsort(keys, axis=dimension, kind="stable")
    return [np.take_along_axis(keys, order, dimension), np.take_along_axis(values, order, dimension)]


sort_key_val_p = def_rules(Primitive("random_sort_key_val", multiple_results=True),
                           abstract_eval=_sort_key_val_abstract_eval, impl=_sort_key_val_impl,
                           cost=lambda i, o, **_: {"flops": 20 * o[0].size, "transcendentals": 0})
