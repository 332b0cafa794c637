"""Random programs over an array module ``xp``, written as Python source (issue 12).

``generate(seed)`` returns a :class:`Program`: a list of statements ``vN = <expression of xp>``
(a statement that wraps a sub-graph in ``cond`` / ``fori_loop`` / ``scan`` / ``while_loop`` /
``vmap`` carries its nested ``def`` lines), the inputs as source (exact literals, then an optional
view: steps, negative steps, transposes) and the outputs. The same text runs with ``xp = numpy``
(the oracle: the ``_cond``/``_fori``/... helpers of :data:`PRELUDE` are plain Python loops there)
and with ``xp = tracejit.numpy`` under ``tracejit.jit`` (the helpers call ``tracejit.lax`` /
``tracejit.vmap``), so a reproducer is the program itself.

The generator evaluates every candidate statement with NumPy while it builds the program, so
programs are well-formed (a candidate NumPy rejects is dropped, or, rarely, kept as the last
statement of a program that must raise). Each statement records an *error model*; :func:`analyze`
re-derives from the NumPy values, for every variable, the absolute error a correct compiler may
add (0: bitwise exact; ``inf``: not comparable). Transcendental functions (a few ULP) and
reassociated sums (matmul, einsum, float reductions and cumulative sums: relative to the sum of
the magnitudes of the summands) are the only sources of error; the generator feeds such
*approximate* values only into ops whose error it can bound (add, mul, structural ops,
max/min, Lipschitz-1 functions, ...), never into comparisons, rounding, integer casts or
predicates, so integer and boolean results are always compared exactly.

Seeds from :data:`PAD_CONV_SEEDS` on also generate ``lax.pad`` (crops, interior padding, any dtype,
the padding value a literal or a value of the program), ``lax.conv_general_dilated`` (1-3 spatial
dims, layouts, strides, string or explicit pads, dilations, groups, under ``vmap``) and
``xp.convolve``; their oracles are the prelude's ``_pad`` (each output index mapped back to its
input) and ``_conv_ref`` (a direct float64 sum per output position), and a convolution's bound is
per element, from the same convolution of the operands' magnitudes (``_conv_bound``). Seeds from
:data:`WIDE_CONV_SEEDS` on give some of those convolutions 8 to 17 input features (the compiler's
implicit GEMM). Seeds below each threshold generate exactly the programs they did.

Exclusions for known open bugs (delete when fixed) are named in :data:`EXCLUSIONS`; each is off
unless listed there.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

# Narrow, named exclusions of known open bug classes (see /tmp/fuzz_findings.md). Empty: everything
# is generated. Known names: "pyint_out_of_range" (Python int literals outside an unsigned dtype).
EXCLUSIONS: set[str] = {
    # (Was "pyint_out_of_range" from ffb4656 until 61a6e3c fixed Python ints outside the dtype:
    # int literals clamped into the dtype's range. The switch stays in lit_for/op_binary.)
    # tracejit raises NotImplementedError("sign of complex traced arrays is not supported"): a
    # documented gap, not a wrong answer; it would fill the report.
    "complex_sign",
    # (Was "conv_nonfinite_kernel": a non-finite kernel tap times padding zeros / dilation holes
    # gave NaN where NumPy and XLA add nothing; fixed by ops.convolution.exact_zero_padded_product.
    # The switch stays in op_convolve/op_conv.)
}

PRELUDE = '''\
import numpy as np
import tracejit
import tracejit.numpy as jnp
from tracejit import lax


class _Array0d(np.ndarray):
    """An ndarray whose operations keep 0-d results as arrays (NumPy returns scalars)."""

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        return arr.view(_Array0d)

    def __getitem__(self, key):
        r = super().__getitem__(key)
        return np.asarray(r).view(_Array0d) if isinstance(r, np.generic) else r


class _ArrayNumPy:
    """NumPy on arrays that never become NumPy scalars (np.generic): a second oracle that tells
    NumPy's scalar promotion quirks (np.True_ ** 2 is int64, np.array(True) ** 2 int8) from real
    dtype mismatches. tracejit, as JAX, follows the array rules. ``wrap`` the inputs first."""

    @staticmethod
    def wrap(x):
        return np.asarray(x).view(_Array0d) if isinstance(x, (np.ndarray, np.generic)) else x

    def __getattr__(self, name):
        fn = getattr(np, name)
        if not callable(fn) or isinstance(fn, type):
            return fn
        return _ArrayCall(fn, self.wrap)


class _ArrayCall:
    """A NumPy function (or ufunc, with its methods: ``np.maximum.accumulate``) whose results
    are wrapped by ``wrap``."""

    def __init__(self, fn, wrap):
        self.fn, self.wrap = fn, wrap

    def __call__(self, *args, **kwargs):
        r = self.fn(*args, **kwargs)
        return tuple(map(self.wrap, r)) if isinstance(r, tuple) else self.wrap(r)

    def __getattr__(self, name):
        return _ArrayCall(getattr(self.fn, name), self.wrap)


NP_ARRAYS = _ArrayNumPy()


def _numpy(xp):
    return xp is np or xp is NP_ARRAYS


def _mk(dtype, shape, re, im=None):
    """An exact array from Python literals (floats go through float64, which holds every value)."""
    d = np.dtype(dtype)
    if d.kind == "c":
        a = np.empty(len(re), d)
        a.real = np.array(re, np.float64)
        a.imag = np.array(im, np.float64)
    elif d.kind == "f":
        a = np.array(re, np.float64).astype(d)
    else:
        a = np.array(re, dtype=d)
    return a.reshape(shape)


def _same_type(what, new, old):
    """lax's rule, applied to the NumPy oracle too: a carry keeps its shape and dtype."""
    new, old = np.asarray(new), np.asarray(old)
    if new.shape != old.shape or new.dtype != old.dtype:
        raise TypeError(f"{what}: {new.dtype}{list(new.shape)} != {old.dtype}{list(old.shape)}")


def _cond(xp, p, t, f, *ops):
    if _numpy(xp):
        a, b = t(*ops), f(*ops)
        _same_type("cond branches", a, b)
        return a if p else b
    return lax.cond(p, t, f, *ops)


def _fori(xp, lo, hi, body, init):
    if _numpy(xp):
        v = init
        for i in range(lo, hi):
            v, old = body(np.int64(i), v), v
            _same_type("fori_loop carry", v, old)
        return v
    return lax.fori_loop(lo, hi, body, init)


def _while(xp, n, body, init, pred=None):
    """``v = body(v)`` while fewer than ``n`` steps ran (and ``pred(v)``)."""
    if _numpy(xp):
        i, v = 0, init
        while i < n and (pred is None or pred(v)):
            i, v, old = i + 1, body(v), v
            _same_type("while_loop carry", v, old)
        return v
    if pred is None:
        c = lambda s: s[0] < n
    else:
        c = lambda s: (s[0] < n) & pred(s[1])
    return lax.while_loop(c, lambda s: (s[0] + 1, body(s[1])), (0, init))[1]


def _scan(xp, body, init, xs, reverse=False):
    if _numpy(xp):
        c, ys = init, []
        idx = range(xs.shape[0])
        for i in (reversed(idx) if reverse else idx):
            (c, y), old = body(c, xs[i, ...]), c     # a 0-d array, not a NumPy scalar
            _same_type("scan carry", c, old)
            ys.append(y)
        if reverse:
            ys = ys[::-1]
        return c, np.stack(ys)
    return lax.scan(body, init, xs, reverse=reverse)


def _vmap(xp, fn, x, axis=0):
    if _numpy(xp):
        x = np.moveaxis(x, axis, 0)
        out = np.stack([fn(x[i, ...]) for i in range(x.shape[0])])   # rows are arrays, never scalars
        # the array oracle keeps its 0-d arrays past the stack (a reduction of a plain ndarray gives a
        # NumPy scalar, and scalar promotion: seed 568215, np.True_ ** 2 is int64)
        return xp.wrap(out) if xp is NP_ARRAYS else out
    return tracejit.vmap(fn, in_axes=axis)(x)


def _u32(xp, x):
    """float/complex -> uint32 as tracejit defines it: NumPy's scalar C cast (the low 32 bits of the
    int64 conversion). NumPy's own SIMD loop gives 2**31 instead for NaN and values below -2**31 in
    some positions of a contiguous array (docs/compiler.md), so the oracle spells the cast out."""
    if _numpy(xp):
        x = np.asarray(x)
        return (x.real if x.dtype.kind == "c" else x).astype(np.int64).astype(np.uint32)
    return x.astype(np.uint32)


def _contiguous_operands(fn, *operands):
    """``fn(*operands)``, broadcast to the result's shape as contiguous copies: NumPy's complex
    loops for negative strides and for scalars round each product (no FMA), so an overflowing
    product is nan there and -inf in the contiguous SIMD loop, which tracejit follows (docs/compiler.md)."""
    r = fn(*operands)
    shape = np.shape(r)

    def contiguous(v):      # Python scalars stay weak
        if not isinstance(v, (np.ndarray, np.generic)):
            return v
        return np.ascontiguousarray(np.broadcast_to(v, shape)).reshape(-1)
    out = fn(*map(contiguous, operands)).reshape(shape)
    return out[()] if isinstance(r, np.generic) else out


def _cmul(xp, a, b):
    """``a * b``; for complex results NumPy's contiguous SIMD loop (re = fma(ar, br, -(ai*bi)), as
    tracejit computes it)."""
    r = a * b
    if not _numpy(xp) or np.asarray(r).dtype.kind != "c":
        return r
    return _contiguous_operands(lambda a, b: a * b, a, b)


def _cpow(xp, a, e):
    """Complex ``a ** e`` (a Python number): ``** 2`` is NumPy's square loop, contiguous as in _cmul."""
    if not _numpy(xp):
        return a ** e
    return _contiguous_operands(lambda a: a ** e, a)


def _cpow_traced(xp, a, b):
    """Complex ``a ** b`` with a variable exponent. NumPy's ``**`` takes value-dependent fast paths
    when the exponent is a Python scalar (square for 2, sqrt for 0.5); under jit the exponent is
    traced, so the oracle is the power ufunc (NumPy's cpow), which never looks at the value."""
    return xp.power(a, b) if _numpy(xp) else a ** b


def _fminmax(xp, op, a, b):
    """``fmax``/``fmin`` returning the first operand on ties (+0.0 vs -0.0), as tracejit defines
    it; NumPy's loop returns either operand's zero depending on the element's position."""
    r = getattr(xp, op)(a, b)
    if not _numpy(xp):
        return r
    tie = np.equal(a, b)
    if not np.any(tie):
        return r
    out = np.where(tie, np.asarray(a).astype(np.asarray(r).dtype), r)
    if xp is NP_ARRAYS:
        # keep the array oracle's 0-d arrays (np.where's plain ndarray decays to NumPy scalars
        # later and brings scalar promotion back: seed 20028106)
        return xp.wrap(out)
    return out[()] if isinstance(r, np.generic) else out


def _at(xp, x, idx, how, u):
    """``x.at[idx].<how>(u)`` (NumPy: a copy updated with ``ufunc.at``, so duplicates accumulate)."""
    if _numpy(xp):
        r = x.copy()
        u = np.asarray(u, dtype=x.dtype)   # as JAX: the update takes x's dtype first
        if how == "set":
            r[idx] = u
        else:
            {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[how].at(r, idx, u)
        return r
    return getattr(x.at[idx], {"mul": "multiply"}.get(how, how))(u)


def _pad(xp, x, value, config):
    """``lax.pad(x, value, config)``: per axis (low, high, interior); negative edges crop. The
    oracle maps every output index back to the input index it shows (or to the padding value),
    axis by axis, instead of padding and slicing."""
    if not _numpy(xp):
        return lax.pad(x, value, config)
    x = np.asarray(x)
    if isinstance(value, (np.ndarray, np.generic)):
        value = np.asarray(value)
        if value.shape != () or value.dtype != x.dtype:
            raise TypeError(f"pad: padding value {value.dtype}{list(value.shape)} for a {x.dtype} array")
    else:
        value = np.asarray(value, dtype=x.dtype)   # a Python scalar takes the array's dtype
    if len(config) != x.ndim:
        raise ValueError(f"pad: {len(config)} (low, high, interior) triples for rank {x.ndim}")
    out = x
    for ax, (lo, hi, interior) in enumerate(config):
        if interior < 0:
            raise ValueError("pad: negative interior padding")
        n, step = x.shape[ax], interior + 1
        size = lo + hi + ((n - 1) * step + 1 if n else 0)
        if size < 0:
            raise ValueError(f"pad: negative size {size} on axis {ax}")
        j = np.arange(size) - lo               # position in the interior-padded axis
        hit = (j >= 0) & (j % step == 0) & (j // step < n)
        shape = [1] * x.ndim
        shape[ax] = size
        if n:
            taken = np.take(out, np.where(hit, j // step, 0), axis=ax)
        else:
            full = list(out.shape)
            full[ax] = size
            taken = np.zeros(full, x.dtype)
        out = np.where(hit.reshape(shape), taken, value)
    out = np.array(out, dtype=x.dtype)
    return xp.wrap(out) if xp is NP_ARRAYS else out


def _conv_ref(lhs, rhs, strides, padding, lhs_dil, rhs_dil, dn, groups=1, batch_groups=1):
    """``lax.conv_general_dilated`` computed directly in float64: the input dilated by ``lhs_dil``
    (holes between its elements), then padded (negative pads crop); each output element the sum,
    over the input features of its group and the kernel's taps (dilated by ``rhs_dil``), of input
    times kernel, one output position at a time. Only taps that land on input elements count
    (XLA's and NumPy's convolve: an infinite kernel tap over padding or a hole adds nothing, not
    inf * 0 = NaN; JAX's lax_reference, which pads with zeros, would say NaN). Spatial dims are
    numbered in the kernel spec's order (matched by letter)."""
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    if lhs.dtype != rhs.dtype or lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise TypeError(f"conv: operands {lhs.dtype}{list(lhs.shape)} and {rhs.dtype}{list(rhs.shape)}")
    lhs_spec, rhs_spec, out_spec = dn
    for s, pair in ((lhs_spec, "NC"), (rhs_spec, "OI"), (out_spec, "NC")):
        if len(s) != lhs.ndim or len(set(s)) != len(s) or any(s.count(c) != 1 for c in pair):
            raise TypeError(f"conv: bad dimension spec {s!r}")
    sp = [c for c in rhs_spec if c not in "OI"]
    if sorted(sp) != sorted(c for c in lhs_spec if c not in "NC") or \
            sorted(sp) != sorted(c for c in out_spec if c not in "NC"):
        raise TypeError(f"conv: specs {dn!r} name different spatial dims")
    x = np.transpose(lhs, [lhs_spec.index(c) for c in ["N", "C"] + sp]).astype(np.float64)
    w = np.transpose(rhs, [rhs_spec.index(c) for c in ["O", "I"] + sp]).astype(np.float64)
    (N, C), (O, I), G, B = x.shape[:2], w.shape[:2], int(groups), int(batch_groups)
    if G < 1 or B < 1 or (G > 1 and B > 1) or C != I * G or O % G or O % B or N % B:
        raise TypeError(f"conv: groups {G}/{B} for N={N} C={C} O={O} I={I}")
    nsp = len(sp)
    if len(strides) != nsp or len(lhs_dil) != nsp or len(rhs_dil) != nsp or \
            min(tuple(strides) + tuple(lhs_dil) + tuple(rhs_dil) + (1,)) < 1:
        raise ValueError("conv: strides and dilations need one positive int per spatial dim")
    ksz = w.shape[2:]
    eff = [(k - 1) * d + 1 if k else 0 for k, d in zip(ksz, rhs_dil)]
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dil):
            raise ValueError("conv: string padding with lhs_dilation (JAX raises)")
        pads = []
        for n, e, s in zip(x.shape[2:], eff, strides):
            total = max(0, (-(-n // s) - 1) * s + e - n) if padding in ("SAME", "SAME_LOWER") else 0
            small, big = total // 2, total - total // 2
            pads.append((small, big) if padding != "SAME_LOWER" else (big, small))
    else:
        pads = [(int(lo), int(hi)) for lo, hi in padding]
    if len(pads) != nsp:
        raise ValueError(f"conv: {len(pads)} (low, high) pads for {nsp} spatial dims")
    on = np.ones(x.shape, bool)                # where the dilated, padded input holds an element
    for a, (d, (lo, hi)) in enumerate(zip(lhs_dil, pads), start=2):
        n = x.shape[a]
        if ((n - 1) * d + 1 if n else 0) + lo + hi < 0:
            raise ValueError("conv: negative padding larger than the (dilated) input (JAX raises)")
        grown = []
        for arr in (x, on):
            shape = list(arr.shape)
            shape[a] = (n - 1) * d + 1 if n else 0
            z = np.zeros(shape, arr.dtype)
            idx = [slice(None)] * arr.ndim
            idx[a] = slice(None, None, d)
            z[tuple(idx)] = arr
            shape[a] = max(lo, 0)
            before = np.zeros(shape, arr.dtype)
            shape[a] = max(hi, 0)
            z = np.concatenate([before, z, np.zeros(shape, arr.dtype)], axis=a)
            idx[a] = slice(max(-lo, 0), max(z.shape[a] - max(-hi, 0), max(-lo, 0)))
            grown.append(z[tuple(idx)])
        x, on = grown
    outs = [(P - e) // s + 1 if P >= e else 0 for P, e, s in zip(x.shape[2:], eff, strides)]
    y = np.zeros((N // B, O) + tuple(outs))
    for o in range(O):
        g, b = o // (O // G), o // (O // B)
        rows = (slice(b * (N // B), (b + 1) * (N // B)), slice(g * I, (g + 1) * I))
        for pos in np.ndindex(*outs):
            win = rows + tuple(slice(p * s, p * s + e, d) for p, s, e, d in zip(pos, strides, eff, rhs_dil))
            with np.errstate(all="ignore"):
                terms = np.where(on[win], x[win] * w[o], 0.0)
            y[(slice(None), o) + pos] = terms.sum(axis=tuple(range(1, terms.ndim)))
    canon = {"N": 0, "C": 1, **{c: 2 + i for i, c in enumerate(sp)}}
    return np.transpose(y, [canon[c] for c in out_spec])


def _conv(xp, lhs, rhs, strides, padding, lhs_dil, rhs_dil, dn, groups=1, batch_groups=1, vmap_axes=None):
    """``lax.conv_general_dilated`` (``vmap_axes``: under ``vmap`` with these in_axes); the
    oracle is :func:`_conv_ref` rounded once to the operands' dtype."""
    if not _numpy(xp):
        def f(a, b):
            return lax.conv_general_dilated(a, b, strides, padding, lhs_dil, rhs_dil, dn,
                                            feature_group_count=groups, batch_group_count=batch_groups)
        return f(lhs, rhs) if vmap_axes is None else tracejit.vmap(f, in_axes=vmap_axes)(lhs, rhs)
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)

    def f(a, b):
        return _conv_ref(a, b, strides, padding, lhs_dil, rhs_dil, dn, groups, batch_groups).astype(a.dtype)
    if vmap_axes is None:
        out = f(lhs, rhs)
    else:
        la, ra = vmap_axes
        n = lhs.shape[la] if la is not None else rhs.shape[ra]
        out = np.stack([f(lhs if la is None else np.take(lhs, i, la), rhs if ra is None else np.take(rhs, i, ra))
                        for i in range(n)])
    return xp.wrap(out) if xp is NP_ARRAYS else out
'''

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
FLOATS = ["float16", "float32", "float64"]
MAX_SIZE = 4096

SPECIAL_F = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-30,
             65504.0, 1e38, -1e300]

# Transcendental functions: name -> (Lipschitz-1, so an approximate input's error passes through).
TRANS = {"exp": False, "expm1": False, "log": False, "log1p": False, "log2": False, "log10": False,
         "exp2": False, "sin": True, "cos": True, "tan": False, "tanh": True, "sinh": False, "cosh": False,
         "arcsin": False, "arccos": False, "arctan": True, "arcsinh": True, "arccosh": False,
         "arctanh": False, "cbrt": False}
TRANS_ULP = 4


@dataclass
class Stmt:
    target: str
    lines: list            # source lines (nested defs first, then the assignment), unindented
    deps: list             # variable names read (inputs or earlier targets)
    model: tuple           # error model, see analyze()
    op: str                # a short label for bucketing
    raises: bool = False   # NumPy raises here: the program must raise


@dataclass
class Program:
    seed: int
    inputs: list           # [(name, source expression)]
    stmts: list
    outputs: list          # variable names
    exclusions: list = field(default_factory=list)

    def function_source(self, name="f") -> str:
        args = ", ".join(n for n, _ in self.inputs)
        out = [f"def {name}(xp, {args}):"]
        for s in self.stmts:
            out += ["    " + ln for ln in s.lines]
        out.append(f"    return ({', '.join(self.outputs)},)")
        return "\n".join(out) + "\n"

    def inputs_source(self) -> str:
        return "".join(f"{n} = {src}\n" for n, src in self.inputs)

    def source(self) -> str:
        """Prelude, the function and the inputs: exec it, then call ``f(np, *inputs)``."""
        return PRELUDE + "\n\n" + self.function_source() + "\n\n" + self.inputs_source()

    @property
    def must_raise(self) -> bool:
        return any(s.raises for s in self.stmts)

    def ops(self) -> list:
        return [s.op for s in self.stmts]


# ------------------------------------------------------------------------- evaluation + error models

_PRELUDE_NS: dict = {}


def prelude_namespace() -> dict:
    if not _PRELUDE_NS:
        ns: dict = {}
        exec(compile(PRELUDE, "<prelude>", "exec"), ns)
        _PRELUDE_NS.update(ns)
    return _PRELUDE_NS


def eval_numpy(lines, env):
    """Run statement ``lines`` with ``xp = numpy`` in a copy of ``env``; returns the new env."""
    ns = dict(prelude_namespace())
    ns.update(env)
    ns["xp"] = np
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec("\n".join(lines), ns)
    return ns


def _eps(d) -> float:
    d = np.dtype(d)
    if d.kind in "fc":
        return float(np.finfo(d).eps)
    return 0.0


def _abs_parts(x):
    """|x| of the finite values (for complex, of each finite part: an infinite real part must not
    hide the imaginary part's magnitude)."""
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        if x.dtype.kind == "c":
            a = np.abs(np.concatenate([x.real.ravel(), x.imag.ravel()]).astype(np.float64))
        else:
            a = np.abs(x.astype(np.float64)).ravel()
    return a[np.isfinite(a)]


def _maxabs(x) -> float:
    x = np.asarray(x)
    if x.dtype.kind not in "fciu" or x.size == 0:
        return 1.0 if x.dtype.kind == "b" else 0.0
    a = _abs_parts(x)
    return float(a.max()) if a.size else 0.0


def _sumabs(x) -> float:
    a = _abs_parts(x)
    return float(a.sum()) if a.size else 0.0


def bound_max(err) -> float:
    """The largest entry of an error bound (a float, or an array of per-element bounds)."""
    if isinstance(err, np.ndarray):
        return float(err.max()) if err.size else 0.0
    return float(err)


def error_bound(model, out, dep_vals, dep_errs):
    """Absolute error a correct compiler may add to ``out`` (0: exact, inf: not comparable).

    A float, or for a transcendental function of exact inputs an array of per-element bounds
    (a few ULP of each element, so a huge element does not loosen the bound of a small one)."""
    kind = model[0]
    out = np.asarray(out)
    dep_errs = [bound_max(e) for e in dep_errs]
    exact_in = all(e == 0 for e in dep_errs)
    E = max(dep_errs) if dep_errs else 0.0
    if kind == "raises":
        return 0.0
    eps = _eps(out.dtype)
    M = _maxabs(out)
    if kind == "disc":                       # needs exact inputs (comparisons, rounding, int ops...)
        err = 0.0 if exact_in else math.inf
    elif kind == "pass":                     # structural ops, max/min, where, neg, abs
        err = E
    elif kind == "sort":
        # -0.0 == 0.0: their order in a sort is unspecified, and NumPy's SIMD sort (x86-simd-sort)
        # writes +0.0 for -0.0 in larger arrays: zero signs of a sort of any -0.0 are not compared.
        err = E
        x = np.asarray(dep_vals[0]) if dep_vals else out
        if out.dtype.kind in "fc" and x.size:
            z = x[x == 0] if x.dtype.kind == "f" else x.real[x.real == 0]
            if z.size and np.signbit(z).any():
                err = max(err, float(np.finfo(out.dtype).smallest_subnormal))
    elif kind == "add":
        err = 0.0 if exact_in else sum(dep_errs) + 2 * eps * M
    elif kind == "at_mul":                   # x.at[i].multiply(u): the product where updated, x elsewhere
        err = max(dep_errs[0] if dep_errs else 0.0, error_bound(("mul",), out, dep_vals, dep_errs))
    elif kind == "mul":
        if exact_in and out.dtype.kind != "c":
            err = 0.0
        elif exact_in:
            # A complex product rounds each part of a sum of two products: NumPy's ufunc.at loop and
            # its vector loop already differ by an ULP there (seed 9663149).
            err = 2 * eps * M
        else:
            ms = [_maxabs(v) for v in dep_vals] + [1.0, 1.0]
            ea, eb = (list(dep_errs) + [0.0, 0.0])[:2]
            if len(dep_vals) == 1:        # x * x
                eb, ms[1] = ea, ms[0]
            err = ea * ms[1] + eb * ms[0] + ea * eb + 2 * eps * M
    elif kind == "scale":                    # ("scale", |c|): x * c for an exact literal c
        err = 0.0 if exact_in else E * model[1] + 2 * eps * M
    elif kind == "cast":                     # to a float/complex dtype
        err = 0.0 if exact_in else E + 2 * eps * M
    elif kind == "trans":                    # ("trans", lipschitz1)
        if exact_in:
            if out.dtype.kind in "fc" and out.size:
                real = np.finfo(out.dtype)
                with np.errstate(all="ignore"):
                    a = np.abs(out.astype(np.complex128 if out.dtype.kind == "c" else np.float64))
                if len(model) > 2 and model[2] == "inputs" and out.dtype.kind == "f":
                    for v in dep_vals:
                        with np.errstate(all="ignore"):
                            a = np.maximum(a, np.abs(np.broadcast_to(np.asarray(v, np.float64), out.shape)))
                a = np.where(np.isfinite(a), a, 0.0)
                return TRANS_ULP * (float(real.eps) * a + float(real.smallest_subnormal))
            err = TRANS_ULP * eps * M
        elif model[1]:
            err = E + TRANS_ULP * eps * M
        else:
            err = math.inf
    elif kind in ("sum", "mean", "cum"):    # ("sum", n): reassociated sum of n terms per result
        n = max(int(model[1]), 1)
        if out.dtype.kind not in "fc":
            return 0.0 if exact_in else math.inf
        s = _sumabs(dep_vals[0]) if dep_vals else M
        if s > float(np.finfo(out.dtype).max):
            return math.inf   # partial sums may overflow in one order and not in another
        err = (n / 4 + 8) * eps * s + n * E
        if kind == "mean":
            err = err / n + 2 * eps * M
    elif kind == "prod":
        n = max(int(model[1]), 1)
        if out.dtype.kind not in "fc":
            return 0.0 if exact_in else math.inf
        if dep_vals and out.dtype.kind in "fc":
            fin = np.asarray(dep_vals[0])
            with np.errstate(all="ignore"):
                a = np.abs(fin.astype(np.complex128) if fin.dtype.kind == "c" else fin.astype(np.float64))
            a = a[np.isfinite(a) & (a != 0)]
            fi = np.finfo(out.dtype)
            if a.size and (n * math.log(max(a.max(), 1.0)) > math.log(float(fi.max)) or
                           n * math.log(min(a.min(), 1.0)) < math.log(float(fi.tiny))):
                return math.inf   # partial products may overflow/underflow in one order and not another
        err = (2 * n + 2) * eps * M if exact_in else math.inf
    elif kind == "dot":                      # ("dot", k)
        k = max(int(model[1]), 1)
        if out.dtype.kind not in "fc":
            return 0.0 if exact_in else math.inf
        if not exact_in:
            return math.inf
        if out.dtype.kind == "c" and not all(np.isfinite(np.asarray(v)).all() for v in dep_vals):
            return math.inf   # complex products of infinities: NaN or inf depends on the order
        ma = _maxabs(dep_vals[0])
        mb = _maxabs(dep_vals[1]) if len(dep_vals) > 1 else ma
        if k * ma * mb * (2 if out.dtype.kind == "c" else 1) > float(np.finfo(out.dtype).max):
            return math.inf   # products or partial sums may overflow in one order and not in another
        err = (k / 4 + 8) * k * eps * ma * mb + 2 * eps * M
    elif kind == "conv":                     # ("conv", k, spec): _conv's arguments; k products per output
        return _conv_bound(model, out, dep_vals, exact_in)
    elif kind == "fixed":                    # a sub-graph whose bound was measured when generated
        err = max(model[1], E) if model[1] else (0.0 if exact_in else math.inf)
    else:
        raise ValueError(model)
    if out.dtype.kind not in "fc" and err:
        return math.inf
    if (kind in ("sum", "mean", "cum", "prod", "dot") or not exact_in) and out.dtype.kind in "fc":
        # Reassociated (or computed from such a value): the sign of a zero depends on the order,
        # so it is not compared; the tiny bound keeps the value marked approximate downstream.
        err = max(err, float(np.finfo(out.dtype).smallest_subnormal))
    if math.isnan(err):
        return math.inf
    return err


def _conv_bound(model, out, dep_vals, exact_in):
    """Per-element bound of a float convolution of exact operands with ``k`` products per output:
    any summation order is within ``(k + 2) * eps * S`` of the exact sum, where ``S`` is the same
    convolution of the magnitudes (the finite ones: an infinite term makes the result inf or NaN
    in every order) computed by the float64 reference; products that underflow lose up to a
    subnormal each. Twice that, plus two ULPs of the result for the oracle's own rounding."""
    if not exact_in or out.dtype.kind != "f":
        return math.inf
    _, k, spec = model
    lhs, rhs = (np.asarray(dep_vals[0]), np.asarray(dep_vals[-1]))
    with np.errstate(all="ignore"):
        mag = [np.where(np.isfinite(a), np.abs(a.astype(np.float64)), 0.0) for a in (lhs, rhs)]
        S = np.asarray(prelude_namespace()["_conv"](np, *mag, **spec), np.float64)
        fi = np.finfo(out.dtype)
        if S.size and float(S.max()) > float(fi.max) / 4:
            return math.inf   # partial sums may overflow in one order and not in another
        a = np.abs(out.astype(np.float64))
        a = np.where(np.isfinite(a), a, 0.0)
    k = max(int(k), 1)
    return (2 * (k + 2) * float(fi.eps) * S + 2 * float(fi.eps) * a
            + (k + 2) * float(fi.smallest_subnormal)).reshape(out.shape)


def analyze(program: Program, env=None):
    """NumPy values and error bounds of every variable: ``(env, errs)``; raises what NumPy raises."""
    if env is None:
        env = eval_numpy([f"{n} = {src}" for n, src in program.inputs], {})
    env = {k: v for k, v in env.items() if k in {n for n, _ in program.inputs}}
    errs = {n: 0.0 for n, _ in program.inputs}
    for s in program.stmts:
        ns = eval_numpy(s.lines, env)
        env[s.target] = ns[s.target]
        errs[s.target] = error_bound(s.model, env[s.target], [env[d] for d in s.deps], [errs[d] for d in s.deps])
    return env, errs


# ----------------------------------------------------------------------------------------- generator

class _Var:
    __slots__ = ("name", "val", "err")

    def __init__(self, name, val, err):
        self.name, self.val, self.err = name, val, err

    @property
    def dtype(self):
        return self.val.dtype

    @property
    def shape(self):
        return self.val.shape

    @property
    def kind(self):
        return self.val.dtype.kind

    @property
    def ndim(self):
        return self.val.ndim

    @property
    def size(self):
        return self.val.size


def _lit_float(x: float) -> str:
    if math.isnan(x):
        return "np.nan"
    if math.isinf(x):
        return "np.inf" if x > 0 else "-np.inf"
    return repr(float(x))


class Gen:
    """Builds one (sub-)program. ``exact_only``: no ops that add rounding error (loop/vmap bodies)."""

    def __init__(self, rng, prefix="v", exact_only=False, depth=0, counter=None, closures=False, pad_conv=False,
                 wide_conv=False):
        self.rng = rng
        self.closures = closures    # loop bodies may read values of the enclosing program (CLOSURE_SEEDS)
        self.pad_conv = pad_conv    # lax.pad, convolutions (PAD_CONV_SEEDS)
        self.wide_conv = wide_conv  # convolutions with 8+ input features too (WIDE_CONV_SEEDS)
        self.prefix = prefix
        self.exact_only = exact_only
        self.depth = depth
        self.vars: list[_Var] = []
        self.stmts: list[Stmt] = []
        self.counter = counter if counter is not None else [0]
        self.raised = False
        self.scalars: list = []   # Python scalar inputs [(name, value)]: weakly typed operands

    # -- helpers
    def r(self):
        return self.rng.random()

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def new_name(self, prefix=None):
        self.counter[0] += 1
        return f"{prefix or self.prefix}{self.counter[0]}"

    def pick(self, pred=lambda v: True, exact=False):
        cands = [v for v in self.vars if pred(v) and (not exact or v.err == 0)]
        if not cands:
            return None
        # Prefer recent values: deeper graphs.
        w = np.arange(1, len(cands) + 1, dtype=float) ** 1.5
        return cands[int(self.rng.choice(len(cands), p=w / w.sum()))]

    def _value_of(self, name_or_literal):
        """The NumPy value of a variable, scalar or literal written in the program."""
        env = self.env()
        if name_or_literal in env:
            return np.asarray(env[name_or_literal])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(eval(name_or_literal, {"np": np}))

    def env(self):
        env = {v.name: v.val for v in self.vars}
        env.update(self.scalars)
        return env

    def emit(self, expr, deps, model, op, pre_lines=(), allow_raise=True):
        """Evaluate ``target = expr`` with NumPy; keep it if it works (or, rarely, if it raises)."""
        target = self.new_name()
        lines = list(pre_lines) + [f"{target} = {expr}"]
        env = self.env()
        try:
            ns = eval_numpy(lines, env)
            val = ns[target]
        except (ValueError, TypeError, IndexError, OverflowError) as e:  # noqa: F841
            if allow_raise and self.depth == 0 and not self.raised and self.r() < 0.1:
                self.stmts.append(Stmt(target, lines, list(deps), ("raises",), op, raises=True))
                self.raised = True
                return None
            return None
        except Exception:
            return None
        if not isinstance(val, (np.ndarray, np.generic)) or np.asarray(val).dtype == object:
            return None
        val = np.asarray(val) if isinstance(val, np.generic) else val
        if val.size > MAX_SIZE:
            return None
        sc = dict(self.scalars)
        dep_vars = [_Var(d, np.asarray(sc[d]), 0.0) if d in sc else self.var(d) for d in deps]
        err = bound_max(error_bound(model, val, [d.val for d in dep_vars], [d.err for d in dep_vars]))
        if math.isinf(err) or (self.exact_only and err):
            return None
        v = _Var(target, val, err)
        self.vars.append(v)
        self.stmts.append(Stmt(target, lines, list(deps), model, op))
        return v

    def var(self, name):
        for v in self.vars:
            if v.name == name:
                return v
        raise KeyError(name)

    # -- literals
    def lit_for(self, v: _Var) -> str:
        """A Python scalar literal to combine with ``v`` (weakly typed under NEP 50)."""
        k = v.kind
        r = self.r()
        if k == "b" or (k in "iu" and r < 0.8):
            x = self.choice([0, 1, 2, 3, 7, -1, -2, 5, 100, -128, 127])
            if k in "iu" and "pyint_out_of_range" in EXCLUSIONS:
                info = np.iinfo(v.dtype)
                x = min(max(x, int(info.min)), int(info.max))
            return str(x)
        if k in "iu":
            return self.choice(["True", "2.5", "-0.5"])
        if r < 0.1:
            return self.choice(["True", "1", "-3", "2"])
        if r < 0.15 and k == "c":
            return self.choice(["1j", "(2-0.5j)", "-1j"])
        return _lit_float(self.choice([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.25, 1e-310, 1e30,
                                       float("nan"), float("inf"), -float("inf"), 7.0, 1e-5]))

    # -- ops
    def op_unary(self):
        v = self.pick()
        if v is None:
            return None
        k = v.kind
        opts = []
        if k in "fc":
            trans = [t for t in TRANS if not (k == "c" and t in ("cbrt", "exp2", "log2", "log10", "expm1", "log1p"))]
            if not self.exact_only:
                opts += [("trans", t) for t in trans] * 1
            opts += [("disc", "sqrt"), ("disc", "reciprocal")]
        if k in "f":
            opts += [("disc", f) for f in ("floor", "ceil", "trunc", "rint", "signbit", "sign", "isnan",
                                           "isinf", "isfinite")]
            opts += [("disc", "fix")]
        if k == "c":
            opts += [("pass", "conj"), ("pass", "real"), ("pass", "imag"), ("disc", "isnan"),
                     ("disc", "isfinite")]
            if "complex_sign" not in EXCLUSIONS:
                opts += [("disc", "sign")]
            if not self.exact_only:
                opts += [("trans1", "abs")]
        else:
            opts += [("pass", "abs"), ("pass", "negative"), ("pass", "positive")]
        if k in "iub":
            opts += [("disc", "invert"), ("disc", "logical_not")]
        if k in "iu":
            opts += [("disc", "sign"), ("disc", "square")]
        if k in "f":
            opts += [("mul1", "square")]
        model, fn = self.choice(opts)
        if model == "trans":
            # Lipschitz-1 on the real line only: complex sin/cos/tanh grow like e^|Im z|.
            m = ("trans", TRANS[fn] and k != "c")
        elif model == "trans1":
            m = ("trans", True)
        elif model == "mul1":
            m = ("mul",)
        else:
            m = (model,)
        if fn in ("negative",) and self.r() < 0.5:
            return self.emit(f"-{v.name}", [v.name], m, "neg")
        if fn == "invert" and self.r() < 0.5:
            return self.emit(f"~{v.name}", [v.name], m, "invert")
        if fn == "signbit" and np.isnan(self._value_of(v.name)).any():
            # A NaN's sign is not specified (as for copysign below): NumPy's 0.0 // 0.0 is x86's
            # default NaN (sign set), compiled code may make the NaN another way (seed 8138836).
            return None
        return self.emit(f"xp.{fn}({v.name})", [v.name], m, fn)

    def _partner(self, v):
        """A second operand broadcastable against ``v`` (another value, a slice of it, or ``v``)."""
        def bc(w):
            try:
                np.broadcast_shapes(v.shape, w.shape)
                return True
            except ValueError:
                return False
        if self.r() < 0.1:
            return None  # any value: may not broadcast (NumPy raises: tracejit must too)
        return self.pick(bc)

    def op_binary(self):
        a = self.pick()
        if a is None:
            return None
        scalar = self.r() < 0.3
        if scalar:
            b_name, b_deps = self.lit_for(a), []
            if self.scalars and self.r() < 0.5:
                b_name = self.choice([n for n, _ in self.scalars])
                b_deps = [b_name]
                val = dict(self.scalars)[b_name]
                if ("pyint_out_of_range" in EXCLUSIONS and a.kind == "u" and type(val) is int and val < 0):
                    b_name, b_deps = self.lit_for(a), []
            if self.r() < 0.3:
                a_name, b_name = b_name, a.name
            else:
                a_name = a.name
            b = None
        else:
            b = self._partner(a) or self.pick()
            a_name, b_name, b_deps = a.name, b.name, [b.name]
        deps = [a.name] + b_deps
        kinds = {a.kind} | ({b.kind} if b is not None else set())
        ints = kinds <= set("iub")
        opts = [("add", "+"), ("add", "-"), ("mul", "*"), ("pass", "maximum"), ("pass", "minimum"),
                ("disc", "=="), ("disc", "!=")]
        if "c" not in kinds:
            opts += [("disc", "<"), ("disc", "<="), ("disc", ">"), ("disc", ">="), ("pass", "fmax"),
                     ("pass", "fmin"), ("disc", "//"), ("disc", "%"), ("disc", "fmod")]
            if not ints:
                opts += [("disc", "copysign"), ("disc", "nextafter")]
                if not self.exact_only:
                    opts += [("trans", "arctan2"), ("trans", "hypot")]
        if "c" in kinds or not ints:
            opts += [("disc", "/")]
        if ints:
            opts += [("disc", "&"), ("disc", "|"), ("disc", "^"), ("disc", "<<"), ("disc", ">>"),
                     ("disc", "/"), ("disc", "**")]
        if not ints and not self.exact_only:
            opts += [("trans", "**"), ("trans", "logaddexp")]
        opts += [("disc", "logical_and"), ("disc", "logical_xor")]
        model, op = self.choice(opts)
        if model == "trans":
            # logaddexp(a, b) = max + log1p(exp(-|a - b|)): a result near 0 cancels, its rounding
            # error is a few ULPs of the larger input, not of the result.
            m = ("trans", False, "inputs") if op == "logaddexp" else ("trans", False)
        else:
            m = (model,)
        if model == "mul" and b is None and not b_deps:
            # x * literal: the literal scales x's error (the one-operand "mul" bound is x * x's).
            lit = b_name if a_name == a.name else a_name
            with np.errstate(all="ignore"):
                m = ("scale", float(np.abs(np.asarray(self._value_of(lit))).max()))
        if op in ("<<", ">>") and ints:
            if self.r() < 0.5 or b is None:
                sh = self.choice([0, 1, 3, 7, 8, 15, 16, 31, 32, 63])
                return self.emit(f"{a.name} {op} {sh}", [a.name], m, "shift")
            return self.emit(f"{a_name} {op} ({b_name} & 7)", deps, m, "shift")
        if op == "**":
            if ints:
                # uint64 ** int64 is float64 (a pow of an integer-valued exponent: a few ULP).
                m = ("trans", False)
                if b is None or self.r() < 0.5:
                    return self.emit(f"{a.name} ** {self.choice([0, 1, 2, 3, 5])}", [a.name], m, "ipow")
                return self.emit(f"{a_name} ** ({b_name} & 3)", deps, m, "ipow")
            if self.r() < 0.5:
                e = self.choice(["0.5", "2", "3", "-1", "1.5", "0", "-0.5", "2.0", "0.25"])
                # Real x**2, x**0, x**-1 are exact (x*x, 1, 1/x); complex powers are NumPy's own loops.
                if "c" not in kinds:
                    m = ("mul",) if e in ("2",) else (("disc",) if e in ("0", "-1") else m)
                    return self.emit(f"{a.name} ** {e}", [a.name], m, "pow")
                return self.emit(f"_cpow(xp, {a.name}, {e})", [a.name], m, "pow")
            if "c" in kinds and b_name in deps:
                return self.emit(f"_cpow_traced(xp, {a_name}, {b_name})", deps, m, op)
        if op in ("copysign", "nextafter", "arctan2", "hypot", "fmax", "fmin", "fmod", "maximum", "minimum",
                  "logaddexp", "logical_and", "logical_xor"):
            if op in ("fmax", "fmin"):
                return self.emit(f"_fminmax(xp, {op!r}, {a_name}, {b_name})", deps, m, op)
            if op == "copysign" and np.isnan(self._value_of(b_name)).any():
                # The sign of a NaN is not specified (x86 keeps an operand's, -nan*-nan is -nan;
                # compiled code may compute the same NaN another way): copysign would expose it
                # as a zero sign (seed 6036258).
                return None
            return self.emit(f"xp.{op}({a_name}, {b_name})", deps, m, op)
        if op == "*" and "c" in kinds:
            return self.emit(f"_cmul(xp, {a_name}, {b_name})", deps, m, op)
        return self.emit(f"{a_name} {op} {b_name}", deps, m, op)

    def op_where(self):
        c = self.pick(lambda v: v.kind == "b", exact=True)
        if c is None:
            c0 = self.pick(lambda v: v.kind in "iuf", exact=True)
            if c0 is None:
                return None
            cond = f"({c0.name} > 0)"
            cdeps = [c0.name]
        else:
            cond, cdeps = c.name, [c.name]
        a = self.pick()
        b = self.pick() if self.r() < 0.7 else None
        if b is None:
            return self.emit(f"xp.where({cond}, {a.name}, {self.lit_for(a)})", cdeps + [a.name], ("pass",), "where")
        return self.emit(f"xp.where({cond}, {a.name}, {b.name})", cdeps + [a.name, b.name], ("pass",), "where")

    def op_cast(self):
        v = self.pick()
        if v is None:
            return None
        d = self.choice(DTYPES)
        dk = np.dtype(d).kind
        if dk in "fc":
            m = ("cast",)
            if v.kind == "c" and dk == "f":
                m = ("disc",)   # drops the imaginary part (NumPy warns)
        else:
            m = ("disc",)
        if d == "uint32" and v.kind in "fc":
            return self.emit(f"_u32(xp, {v.name})", [v.name], m, "astype")
        if self.r() < 0.5:
            return self.emit(f"{v.name}.astype(np.{d})", [v.name], m, "astype")
        return self.emit(f"xp.asarray({v.name}, dtype=np.{d})", [v.name], m, "astype")

    def _axis_choice(self, ndim, allow_tuple=True, allow_none=True):
        opts = []
        if allow_none:
            opts.append(None)
        if ndim:
            opts += list(range(ndim)) + [-1]
        if allow_tuple and ndim >= 2:
            ax = sorted(self.rng.choice(ndim, size=2, replace=False).tolist())
            opts.append(tuple(ax))
            if ndim >= 3:
                opts.append(tuple(range(ndim)))
        if not opts:
            return None
        return self.choice(opts)

    def op_reduce(self):
        v = self.pick()
        if v is None:
            return None
        k = v.kind
        names = ["sum", "max", "min", "all", "any", "prod", "mean", "argmax", "argmin", "count_nonzero"]
        if k == "c":
            names = ["sum", "all", "any", "prod", "mean", "count_nonzero"]
        name = self.choice(names)
        arg = name in ("argmax", "argmin")
        axis = self._axis_choice(v.val.ndim, allow_tuple=not arg and name != "count_nonzero")
        keep = self.r() < 0.5 and name != "count_nonzero"
        kw = [] if axis is None and self.r() < 0.5 else [f"axis={axis!r}"]
        if keep:
            kw.append("keepdims=True")
        if axis is None:
            n = v.val.size
        else:
            axes = axis if isinstance(axis, tuple) else (axis,)
            n = math.prod(v.shape[a] for a in axes)
        if name in ("sum", "mean"):
            m = (name, n)
        elif name == "prod":
            m = ("prod", n)
        elif name in ("max", "min"):
            # Which zero a max/min over both +0.0 and -0.0 returns depends on NumPy's SIMD order
            # (documented): zero signs compared as for a sort.
            m = ("sort",)
        else:
            m = ("disc",)
        if name in ("sum", "prod") and self.r() < 0.15 and k in "iub":
            kw.append(f"dtype=np.{self.choice(['int32', 'uint8', 'int64', 'float32'])}")
        if self.r() < 0.2 and name in ("sum", "max", "min", "prod", "all", "any"):
            expr = f"{v.name}.{name}({', '.join(kw)})"
        else:
            expr = f"xp.{name}({', '.join([v.name] + kw)})"
        if m == ("sort",):
            expr, m = self._zero_signs_dropped(expr, k, m)
        return self.emit(expr, [v.name], m, name)

    def _zero_signs_dropped(self, expr, kind, model):
        """In a loop or vmap body, a sort's or max/min's ``-0.0`` as ``+0.0`` (``+ 0.0``; exact
        otherwise): which zero they give is unspecified, and the body was generated from one row or
        iteration's values only, so the ``sort`` model cannot see the ``-0.0`` of the others (seed
        30071856)."""
        if self.depth == 0 or kind != "f":
            return expr, model
        return f"({expr} + 0.0)", ("pass",)

    def op_cumulative(self):
        v = self.pick(lambda v: v.val.ndim >= 1)
        if v is None:
            return None
        name = self.choice(["cumsum", "cumprod", "maximum.accumulate", "minimum.accumulate"])
        if v.kind == "c" and "accumulate" in name:
            name = "cumsum"
        axis = int(self.rng.integers(-v.val.ndim, v.val.ndim))
        n = v.shape[axis]
        m = ("cum", n) if name == "cumsum" else (("prod", n) if name == "cumprod" else ("pass",))
        return self.emit(f"xp.{name}({v.name}, axis={axis})", [v.name], m, name.split(".")[0])

    def _slice(self, n):
        r = self.r()
        if r < 0.15:
            return ":"
        step = self.choice([1, 1, 2, 3, -1, -1, -2])
        a = int(self.rng.integers(-n - 1, n + 2)) if self.r() < 0.5 else None
        b = int(self.rng.integers(-n - 1, n + 2)) if self.r() < 0.5 else None
        s = f"{'' if a is None else a}:{'' if b is None else b}"
        if step != 1:
            s += f":{step}"
        return s

    def op_struct(self):
        v = self.pick()
        if v is None:
            return None
        nd = v.val.ndim
        r = self.r()
        if r < 0.3 and nd:
            idx = [self._slice(n) for n in v.shape]
            if self.r() < 0.2:
                j = int(self.rng.integers(nd))
                n = v.shape[j]
                idx[j] = str(int(self.rng.integers(-n, n))) if n else ":"
            if self.r() < 0.15:
                idx.insert(int(self.rng.integers(len(idx) + 1)), "None")
            return self.emit(f"{v.name}[{', '.join(idx)}]", [v.name], ("pass",), "slice")
        if r < 0.45 and nd >= 2:
            perm = self.rng.permutation(nd).tolist()
            if self.r() < 0.3:
                return self.emit(f"{v.name}.T", [v.name], ("pass",), "transpose")
            return self.emit(f"xp.transpose({v.name}, {tuple(perm)!r})", [v.name], ("pass",), "transpose")
        if r < 0.6:
            size = v.val.size
            shapes = _factorizations(size, self.rng)
            shp = self.choice(shapes)
            if shp and self.r() < 0.3:
                shp = list(shp)
                shp[int(self.rng.integers(len(shp)))] = -1
                shp = tuple(shp)
            return self.emit(f"xp.reshape({v.name}, {shp!r})", [v.name], ("pass",), "reshape")
        if r < 0.7:
            ax = int(self.rng.integers(-nd - 1, nd + 1))
            return self.emit(f"xp.expand_dims({v.name}, {ax})", [v.name], ("pass",), "expand_dims")
        if r < 0.75 and 1 in v.shape:
            return self.emit(f"xp.squeeze({v.name})", [v.name], ("pass",), "squeeze")
        if r < 0.82 and nd:
            ax = int(self.rng.integers(nd))
            return self.emit(f"xp.flip({v.name}, axis={ax})", [v.name], ("pass",), "flip")
        if r < 0.9:
            w = self.pick(lambda w: w.val.ndim == nd)
            if w is None:
                return None
            ax = int(self.rng.integers(nd)) if nd else 0
            fn = self.choice(["concatenate", "stack"])
            return self.emit(f"xp.{fn}([{v.name}, {w.name}], axis={ax})", [v.name, w.name], ("pass",), fn)
        shp = list(v.shape)
        if self.r() < 0.5:
            shp = [self.choice([2, 3])] + shp
        shp = [n if n != 1 else self.choice([1, 3]) for n in shp]
        return self.emit(f"xp.broadcast_to({v.name}, {tuple(shp)!r})", [v.name], ("pass",), "broadcast_to")

    def op_contract(self):
        if self.exact_only:
            return None
        a = self.pick(lambda v: v.val.ndim >= 1 and v.kind != "b")
        if a is None:
            return None
        nd = a.val.ndim
        r = self.r()
        if nd == 1:
            b = self.pick(lambda w: w.shape == a.shape and w.kind != "b") or a
            k = a.shape[0]
            fn = self.choice(["xp.dot({a}, {b})", "{a} @ {b}", "xp.einsum('i,i->', {a}, {b})",
                              "xp.einsum('i,j->ij', {a}, {b})"])
            if "i,j->ij" in fn:
                k = 1
            return self.emit(fn.format(a=a.name, b=b.name), list(dict.fromkeys([a.name, b.name])), ("dot", k),
                             "dot")
        k = a.shape[-1]
        b = self.pick(lambda w: w.val.ndim == 2 and w.shape[0] == k and w.kind != "b")
        if b is not None and r < 0.5:
            return self.emit(f"{a.name} @ {b.name}", list(dict.fromkeys([a.name, b.name])), ("dot", k), "matmul")
        if nd == 2 and r < 0.7:
            spec = self.choice(["ij,kj->ik", "ij,ij->i", "ij->j", "ij,ij->", "ji,jk->ik"])
            kk = {"ij,kj->ik": a.shape[1], "ij,ij->i": a.shape[1], "ij->j": a.shape[0],
                  "ij,ij->": a.val.size, "ji,jk->ik": a.shape[0]}[spec]
            args = a.name if spec == "ij->j" else f"{a.name}, {a.name}"
            m = ("sum", kk) if spec == "ij->j" else ("dot", kk)
            return self.emit(f"xp.einsum('{spec}', {args})", [a.name], m, "einsum")
        return self.emit(f"xp.matmul({a.name}, xp.swapaxes({a.name}, -1, -2))", [a.name], ("dot", k), "matmul")

    def op_index(self):
        v = self.pick(lambda v: v.val.ndim >= 1 and v.shape[0] > 0)
        if v is None:
            return None
        n = v.shape[0]
        r = self.r()
        m = int(self.rng.integers(1, 5))
        idx = self.rng.integers(-n, n, size=m).tolist()
        if r < 0.35:
            if self.r() < 0.5:
                return self.emit(f"{v.name}[np.array({idx!r})]", [v.name], ("pass",), "gather")
            ax = int(self.rng.integers(v.val.ndim))
            na = v.shape[ax]
            if na == 0:
                return None
            idx = self.rng.integers(-na, na, size=m).tolist()
            return self.emit(f"xp.take({v.name}, np.array({idx!r}), axis={ax})", [v.name], ("pass",), "take")
        if r < 0.45:
            # A traced index: the position of an exact value's maximum.
            w = self.pick(lambda w: w.val.ndim >= 1 and w.val.size > 0 and w.kind in "iuf", exact=True)
            if w is None:
                return None
            return self.emit(f"{v.name}[xp.argmax({w.name}) % {n}]", [v.name, w.name], ("pass",), "dynamic_index")
        how = self.choice(["set", "add", "min", "max", "mul"])
        if how == "set":
            idx = sorted(set(i % n for i in idx))
        if self.r() < 0.3:
            key = f"{int(self.rng.integers(-n, n))}"
        elif self.r() < 0.3 and v.val.ndim >= 2:
            key = f"np.array({idx!r}), ::{self.choice([1, 2, -1])}"
        else:
            key = f"np.array({idx!r})"
        u = self.pick(lambda w: w.val.ndim == 0 or w.shape == v.shape[1:]) if self.r() < 0.5 else None
        if v.kind == "c" and how in ("min", "max"):
            how = "add"
        if u is not None:
            upd, deps = f"{u.name}.astype({v.name}.dtype)", [v.name, u.name]
            if v.val.dtype == np.uint32 and u.kind in "fc":
                # NumPy's own float -> uint32 cast is position-dependent out of range (see _u32;
                # campaign seed 10889041: -inf became 2**31 in its vector loop, 0 as a scalar)
                upd = f"_u32(xp, {u.name})"
            if u.err or (u.kind in "fc" and v.kind not in "fc") or (u.kind == "c" and v.kind != "c"):
                if u.err:
                    return None
        else:
            upd, deps = self.lit_for(v), [v.name]
            if v.kind in "iu" and "." in upd:
                upd = "3"
        # (a multiplied element's bound is the product's; the others keep x's own error: seed 30117164,
        # x * 0.0 at four indices was given the bound of 0 * x everywhere)
        m = {"set": ("pass",), "min": ("pass",), "max": ("pass",), "add": ("add",), "mul": ("at_mul",)}[how]
        if how == "mul" and u is None:
            # One dependency: not x * x (the "mul" model's reading) but x times a literal (seed 7031022).
            with np.errstate(all="ignore"):
                scale = float(np.max(np.abs(self._value_of(upd))))
                m = ("scale", math.inf if math.isnan(scale) else max(scale, 1.0))
        return self.emit(f"_at(xp, {v.name}, ({key},), {how!r}, {upd})", deps, m, f"at_{how}")

    # -- control flow around sub-graphs
    def _subgraph(self, params, exact_only, n_ops, out_like=None):
        """A nested generator over ``params`` [(name, value)]; returns (gen, output var)."""
        g = Gen(self.rng, prefix=self.prefix, exact_only=exact_only, depth=self.depth + 1, counter=self.counter,
                closures=self.closures, pad_conv=self.pad_conv, wide_conv=self.wide_conv)
        for name, val, *err in params:
            g.vars.append(_Var(name, val, err[0] if err else 0.0))
        for _ in range(n_ops):
            g.step()
        if out_like is not None:
            cands = [v for v in g.vars[len(params):] if v.shape == out_like.shape] or \
                    [v for v in g.vars[len(params):] if _broadcastable(v.shape, out_like.shape)]
            if not cands:
                return g, g.vars[0]
            return g, cands[-1]
        return g, g.vars[-1]

    def _closed_over(self, v) -> list:
        """With ``closures``: sometimes one exact value of this program, read by a loop body as a
        closure (work on it alone is loop-invariant: compiler/passes/loop_invariants.py)."""
        if not self.closures or self.r() < 0.4:
            return []
        # Not a value named like a body parameter: the body's own ``c``/``x``/``i`` hides it (the
        # body's ops were generated for the closure's value and ran on the parameter: seed 30070017).
        w = self.pick(lambda w: w is not v and w.val.size > 0 and w.kind in "biuf" and w.name not in ("c", "x", "i"),
                      exact=True)
        return [] if w is None else [(w.name, w.val)]

    def _body_lines(self, header, g, ret):
        return [header] + ["    " + ln for s in g.stmts for ln in s.lines] + ["    return " + ret]

    def op_control(self):
        if self.depth >= 2:
            return None
        v = self.pick(lambda v: v.val.size > 0 or self.r() < 0.2)
        if v is None:
            return None
        kind = self.choice(["cond", "fori", "while", "scan", "vmap", "cond", "fori", "vmap"])
        fname = self.new_name("body")
        n_ops = int(self.rng.integers(1, 4))
        dt = f"{v.name}.dtype"
        if kind == "cond":
            p = self.pick(lambda w: w.kind in "biuf" and w.val.size > 0, exact=True)
            if p is None:
                return None
            pred = f"xp.any({p.name})" if p.kind == "b" else self.choice(
                [f"xp.max({p.name}) > 0", f"xp.sum({p.name} > 1) > 1", f"xp.min({p.name}) < 0"])
            gt, ot = self._subgraph([("c", v.val, v.err)], False, n_ops, out_like=v)
            gf, of = self._subgraph([("c", v.val, v.err)], False, n_ops, out_like=v)
            tl = self._body_lines(f"def {fname}_t(c):", gt, _cast_to(ot, v, "c"))
            fl = self._body_lines(f"def {fname}_f(c):", gf, _cast_to(of, v, "c"))
            err = max(ot.err, of.err, v.err)
            if err:
                err = err * 4 + 4 * _eps(v.dtype) * _maxabs(v.val)
            return self.emit(f"_cond(xp, {pred}, {fname}_t, {fname}_f, {v.name})", [v.name, p.name],
                             ("fixed", err), "cond", pre_lines=tl + fl)
        if kind == "fori":
            g, o = self._subgraph([("c", v.val)] + self._closed_over(v), True, n_ops, out_like=v)
            body = self._body_lines(f"def {fname}(i, c):", g, _cast_to(o, v, "c", use_i=v.kind in "iuf"))
            lo, hi = int(self.rng.integers(0, 2)), int(self.rng.integers(0, 5))
            return self.emit(f"_fori(xp, {lo}, {hi}, {fname}, {v.name})", [v.name], ("fixed", 0.0), "fori_loop",
                             pre_lines=body)
        if kind == "while":
            g, o = self._subgraph([("c", v.val)] + self._closed_over(v), True, n_ops, out_like=v)
            body = self._body_lines(f"def {fname}(c):", g, _cast_to(o, v, "c"))
            n = int(self.rng.integers(0, 5))
            if v.kind in "iuf" and self.r() < 0.5:
                body += [f"def {fname}_p(c):", f"    return xp.sum(c > 0) < {int(self.rng.integers(0, 5))}"]
                return self.emit(f"_while(xp, {n}, {fname}, {v.name}, {fname}_p)", [v.name], ("fixed", 0.0),
                                 "while_loop", pre_lines=body)
            return self.emit(f"_while(xp, {n}, {fname}, {v.name})", [v.name], ("fixed", 0.0), "while_loop",
                             pre_lines=body)
        if v.val.ndim == 0 or v.shape[0] == 0:
            return None
        row = v.val[0, ...]
        if kind == "scan":
            c0 = self.pick(lambda w: w.shape == row.shape and w.err == 0) or None
            init = c0.name if c0 is not None else f"{v.name}[0]"
            cval = c0.val if c0 is not None else row
            cvar = _Var("c", cval, 0.0)
            g, o = self._subgraph([("c", cval), ("x", row)] + self._closed_over(v), True, n_ops, out_like=cvar)
            y = g.vars[-1]
            body = self._body_lines(f"def {fname}(c, x):", g, f"({_cast_to(o, cvar, 'c')}, {y.name})")
            which = int(self.rng.integers(2))
            rev = ", reverse=True" if self.r() < 0.3 else ""
            deps = [v.name] + ([c0.name] if c0 is not None else [])
            return self.emit(f"_scan(xp, {fname}, {init}, {v.name}{rev})[{which}]", deps, ("fixed", 0.0),
                             "scan", pre_lines=body)
        # vmap over the leading axis (or another one)
        axis = 0
        if v.val.ndim >= 2 and self.r() < 0.3 and v.shape[1] > 0:
            axis = 1
            row = np.take(v.val, 0, axis=1)
        g, o = self._subgraph([("x", row)], True, n_ops)
        body = self._body_lines(f"def {fname}(x):", g, o.name)
        ax = f", {axis}" if axis else ""
        return self.emit(f"_vmap(xp, {fname}, {v.name}{ax})", [v.name], ("fixed", 0.0), "vmap", pre_lines=body)

    def op_misc(self):
        """clip, round(decimals), sort/argsort, diff, roll, tile/repeat, tril/triu."""
        v = self.pick()
        if v is None:
            return None
        nd, k = v.ndim, v.kind
        ax = int(self.rng.integers(-nd, nd)) if nd else None
        r = self.r()
        if r < 0.2 and k in "iuf":
            lo, hi = sorted([self.choice([-1, 0, 2, 5]), self.choice([-1, 0, 2, 5])])
            if k == "f" and self.r() < 0.3:
                lo, hi = self.choice([("np.nan", "2.0"), ("-0.0", "0.0"), ("-np.inf", "1.5")])
            if k == "u":
                lo, hi = abs(int(lo)) if not isinstance(lo, str) else 0, abs(int(hi)) + 1 if not isinstance(hi, str) else 3
            return self.emit(f"xp.clip({v.name}, {lo}, {hi})", [v.name], ("pass",), "clip")
        if r < 0.3 and k == "f":
            return self.emit(f"xp.round({v.name}, {self.choice([0, 1, 2, -1])})", [v.name], ("disc",), "round")
        if r < 0.45 and nd and k != "c":
            if self.r() < 0.5:
                expr, m = self._zero_signs_dropped(f"xp.sort({v.name}, axis={ax})", k, ("sort",))
                return self.emit(expr, [v.name], m, "sort")
            return self.emit(f"xp.argsort({v.name}, axis={ax}, kind='stable')", [v.name], ("disc",), "argsort")
        if r < 0.55 and nd:
            return self.emit(f"xp.diff({v.name}, axis={ax})", [v.name], ("add",) if k != "b" else ("disc",), "diff")
        if r < 0.7 and nd:
            return self.emit(f"xp.roll({v.name}, {int(self.rng.integers(-4, 5))}, axis={ax})", [v.name], ("pass",),
                             "roll")
        if r < 0.8:
            return self.emit(f"xp.tile({v.name}, {(self.choice([1, 2]),) * max(nd, 1)!r})", [v.name], ("pass",), "tile")
        if r < 0.9 and nd:
            return self.emit(f"xp.repeat({v.name}, {self.choice([0, 1, 2, 3])}, axis={ax})", [v.name], ("pass",),
                             "repeat")
        if nd >= 2:
            fn = self.choice(["tril", "triu"])
            return self.emit(f"xp.{fn}({v.name}, {int(self.rng.integers(-2, 3))})", [v.name], ("pass",), fn)
        return None

    # -- pads and convolutions (PAD_CONV_SEEDS)
    def _pad_literal(self, d) -> str:
        """A Python scalar that ``np.asarray(x, d)`` holds exactly (lax.pad's weak padding value)."""
        d = np.dtype(d)
        if d.kind == "b":
            return self.choice(["True", "False"])
        if d.kind in "iu":
            info = np.iinfo(d)
            return str(self.choice([x for x in (0, 1, -1, 7, 100, -128, 127, int(info.max), int(info.min))
                                    if info.min <= x <= info.max]))
        if d.kind == "c" and self.r() < 0.5:
            return self.choice(["(1-2j)", "1j", "complex(np.nan, 0.0)", "(-0.0-0j)", "complex(np.inf, 1.0)"])
        return _lit_float(self.choice([0.0, -0.0, 1.0, -2.5, 0.5, 3.0, float("nan"), float("inf"),
                                       -float("inf"), 1e-5, 1e30]))

    def op_pad(self):
        """``lax.pad`` (edges, crops, interior padding on any axis, any dtype; the value a literal
        or a value of the program), sometimes ``xp.pad`` (NumPy's constant mode)."""
        v = self.pick(lambda v: v.val.ndim >= 1 or self.r() < 0.1)
        if v is None:
            return None
        if self.r() < 0.15 and v.val.ndim:
            widths = tuple((int(self.rng.integers(0, 3)), int(self.rng.integers(0, 3))) for _ in v.shape)
            lit = self._pad_literal(v.dtype) if v.kind != "c" else "0"
            return self.emit(f"xp.pad({v.name}, {widths!r}, constant_values={lit})", [v.name], ("pass",), "np_pad")
        cfg = []
        for n in v.shape:
            if self.r() < 0.25:
                cfg.append((0, 0, 0))
                continue
            lo, hi = int(self.rng.integers(-3, 4)), int(self.rng.integers(-3, 4))
            interior = self.choice([0, 0, 1, 1, 2, 3]) if n <= 64 else self.choice([0, 1])
            if self.r() < 0.1:
                lo, hi = -n - int(self.rng.integers(0, 3)), int(self.rng.integers(0, 4))   # crops past the data
            cfg.append((lo, hi, interior))
        deps = [v.name]
        r = self.r()
        same = self.pick(lambda w: w.dtype == v.dtype and w.val.size > 0)
        if r < 0.45 and same is not None:
            deps.append(same.name)
            value = same.name if same.val.ndim == 0 else f"xp.ravel({same.name})[{int(self.rng.integers(same.size))}]"
        elif r < 0.5 and self.pick(lambda w: w.val.size > 0) is not None:
            w = self.pick(lambda w: w.val.size > 0)       # maybe another dtype: lax.pad raises (TypeError)
            deps.append(w.name)
            value = f"xp.ravel({w.name})[0]"
        else:
            value = self._pad_literal(v.dtype)
        deps = list(dict.fromkeys(deps))
        return self.emit(f"_pad(xp, {v.name}, {value}, {tuple(cfg)!r})", deps, ("pass",), "pad")

    def _operand(self, src, n, shape, dtype):
        """Emit ``reshape(first n values of src, repeated as needed)`` as ``dtype``, or a literal."""
        if src is None:
            vals = [float(x) for x in (self.rng.integers(-4, 5, size=n) / self.choice([1, 2, 4]))]
            return self.emit(f"xp.asarray(_mk(np.{dtype}, {tuple(shape)!r}, {_fmt_vals(vals)}))", [], ("pass",),
                             "literal", allow_raise=False)
        flat = f"xp.ravel({src.name})"
        if self.r() < 0.2:
            flat += "[::-1]"
        if src.size < n:
            flat = f"xp.tile({flat}, {-(-n // src.size)})"
        expr = f"xp.reshape({flat}[:{n}], {tuple(shape)!r})"
        m = ("pass",)
        if src.dtype != np.dtype(dtype):
            expr += f".astype(np.{dtype})"
            m = ("cast",)
        return self.emit(expr, [src.name], m, "reshape", allow_raise=False)

    def op_conv(self):
        mark = (len(self.vars), len(self.stmts))
        out = self._convolve() if self.r() < 0.3 else self._conv_general()
        if out is None and not self.raised:
            del self.vars[mark[0]:]       # the operands built for it go too
            del self.stmts[mark[1]:]
        return out

    def _convolve(self):
        """``xp.convolve`` of two 1-D values (any numeric dtype, the three modes)."""
        a = self.pick(lambda v: v.val.size > 0 and (v.kind != "c" or self.r() < 0.3), exact=True)
        b = self.pick(lambda v: v.val.size > 0 and (v.kind != "c" or self.r() < 0.3), exact=True)
        if a is None or b is None:
            return None
        ops = []
        for v in (a, b):
            if v.val.ndim == 1 and 0 < v.size <= 24 and self.r() < 0.5:
                ops.append(v)
            else:
                n = int(self.rng.integers(1, 9))
                ops.append(self._operand(v, n, (n,), v.dtype))
            if ops[-1] is None:
                return None
        if "conv_nonfinite_kernel" in EXCLUSIONS and not np.isfinite(ops[1].val).all():
            return None
        mode = self.choice(["", "", ", 'full'", ", 'same'", ", 'valid'", ", mode='same'"])
        k = min(ops[0].size, ops[1].size)
        deps = list(dict.fromkeys([ops[0].name, ops[1].name]))
        return self.emit(f"xp.convolve({ops[0].name}, {ops[1].name}{mode})", deps, ("dot", k), "convolve")

    def _conv_general(self):
        """``lax.conv_general_dilated`` of small operands built from the program's values (or
        literals): 1-3 spatial dims, any layout letters, strides, 'SAME'/'SAME_LOWER'/'VALID' or
        explicit pads (negative: crops), input/kernel dilation, feature or batch groups, sometimes
        under ``vmap``. Float dtypes only."""
        if self.exact_only:
            return None
        nsp = self.choice([1, 1, 2, 2, 2, 3])
        sp = "HWD"[:nsp]

        def perm(s):
            return "".join(self.rng.permutation(list(s)).tolist()) if self.r() < 0.25 else s
        rsp = perm(sp)
        lhs_spec = self.choice(["NC" + perm(sp), "N" + perm(sp) + "C", "NC" + perm(sp), "C" + perm(sp) + "N"])
        rhs_spec = self.choice(["OI" + rsp, rsp + "IO", "OI" + rsp, "I" + rsp + "O"])
        out_spec = self.choice(["NC" + perm(sp), "N" + perm(sp) + "C", "NC" + perm(sp), "C" + perm(sp) + "N"])
        G = self.choice([1, 1, 1, 2, 3])
        B = self.choice([1, 1, 1, 1, 2]) if G == 1 else 1
        I = self.choice([1, 1, 2, 3])
        O = G * B * self.choice([1, 2])
        if self.wide_conv and G == 1 and B == 1 and self.r() < 0.8:
            # (what the compiler reads in place, ops/conv_windows.py: 8+ features; O across vector widths)
            I, O = self.choice([8, 9, 16, 17]), self.choice([1, 3, 16, 17, 33])
        N = B * self.choice([1, 1, 2])
        small = nsp == 3
        ins = [self.choice([0, 1, 2, 3, 4] if small else [1, 2, 3, 4, 5, 6, 7]) if self.r() > 0.03 else 0
               for _ in sp]
        ks = [self.choice([1, 2] if small else [1, 2, 3]) for _ in sp]
        strides = tuple(self.choice([1, 1, 2, 3]) for _ in sp)
        rd = tuple(self.choice([1, 1, 1, 2]) for _ in sp)
        ld = tuple(self.choice([1, 1, 1, 1, 2]) for _ in sp)
        if any(d > 1 for d in ld) or self.r() < 0.35:
            padding = tuple((int(self.rng.integers(-2, 4)), int(self.rng.integers(-2, 4))) for _ in sp)
        else:
            padding = self.choice(["SAME", "SAME", "VALID", "SAME_LOWER"])
        dims = {"N": N, "C": G * I, **dict(zip(sp, ins))}
        lshape = [dims[c] for c in lhs_spec]
        kdims = {"O": O, "I": I, **dict(zip(sp, ks))}
        rshape = [kdims[c] for c in rhs_spec]
        vmap_axes = None
        if self.r() < 0.15:
            la = self.choice([0, len(lshape)])
            ra = self.choice([None, 0])
            V = self.choice([2, 3])
            lshape.insert(la, V)
            if ra is not None:
                rshape.insert(ra, V)
            vmap_axes = (la, ra)
        src = self.pick(lambda v: v.val.size > 0 and v.kind in "biuf", exact=True)
        dtype = src.dtype.name if src is not None and src.kind == "f" and self.r() < 0.7 else self.choice(FLOATS)
        lhs = self._operand(src if self.r() < 0.85 else None, math.prod(lshape), lshape, dtype)
        if lhs is None:
            return None
        ksrc = self.pick(lambda v: v.val.size > 0 and v.kind in "biuf", exact=True) if self.r() < 0.55 else None
        rhs = self._operand(ksrc, math.prod(rshape), rshape, dtype)
        if rhs is None:
            return None
        padded = padding in ("SAME", "SAME_LOWER") or any(d > 1 for d in ld) or (
            not isinstance(padding, str) and any(lo > 0 or hi > 0 for lo, hi in padding))
        if "conv_nonfinite_kernel" in EXCLUSIONS and padded and not np.isfinite(rhs.val).all():
            return None
        dn = (lhs_spec, rhs_spec, out_spec)
        args = f"{strides!r}, {padding!r}, {ld!r}, {rd!r}, {dn!r}, {G}, {B}"
        if vmap_axes is not None:
            args += f", vmap_axes={vmap_axes!r}"
        spec = dict(strides=strides, padding=padding, lhs_dil=ld, rhs_dil=rd, dn=dn, groups=G, batch_groups=B,
                    vmap_axes=vmap_axes)
        return self.emit(f"_conv(xp, {lhs.name}, {rhs.name}, {args})", [lhs.name, rhs.name],
                         ("conv", math.prod(ks) * I, spec), "conv")

    def op_invalid(self):
        """A statement NumPy rejects for its shapes or dtypes (tracejit must raise as well)."""
        if self.depth:
            return None
        v = self.pick()
        if v is None:
            return None
        nd = v.val.ndim
        opts = [f"xp.reshape({v.name}, ({v.val.size + 1},))", f"xp.sum({v.name}, axis={nd})",
                f"xp.transpose({v.name}, {tuple(range(nd + 1))!r})", f"{v.name}[{', '.join([':'] * (nd + 1))}]"]
        if nd:
            opts += [f"{v.name} + xp.ones({tuple(n + 1 for n in v.shape)!r})",
                     f"xp.concatenate([{v.name}, xp.zeros({(v.shape[0],) * (nd + 1)!r})])",
                     f"xp.matmul({v.name}, xp.ones(({v.shape[-1] + 1}, 2)))",
                     f"{v.name}[{v.shape[0]}]", f"xp.expand_dims({v.name}, {nd + 2})"]
        if v.val.size == 0:
            opts += [f"xp.max({v.name})", f"xp.argmin({v.name})", f"{v.name}.min()"]
        if v.kind in "fc":
            opts += [f"{v.name} << 1", f"{v.name} & {v.name}", f"xp.invert({v.name})"]
        if v.kind == "c":
            opts += [f"{v.name} < 1", f"{v.name} // 2", f"xp.floor({v.name})", f"xp.maximum.accumulate({v.name})"]
        if v.kind in "iu":
            opts += [f"{v.name} + {int(np.iinfo(v.dtype).max) + 1}", f"{v.name} * {int(np.iinfo(v.dtype).min) - 1}"]
        if v.kind == "b":
            opts += [f"{v.name} - {v.name}", f"-{v.name}"]
        expr = self.choice(opts)
        target = self.new_name()
        lines = [f"{target} = {expr}"]
        try:
            eval_numpy(lines, self.env())
        except Exception:
            self.stmts.append(Stmt(target, lines, [v.name], ("raises",), "invalid:" + expr.split("(")[0].replace(v.name, "x"),
                                   raises=True))
            self.raised = True
            return True
        return None

    def step(self):
        ops = [(self.op_invalid, 0.12 if self.depth == 0 else 0), (self.op_misc, 1.2), (self.op_unary, 3), (self.op_binary, 4), (self.op_where, 1), (self.op_cast, 1.5),
               (self.op_reduce, 2.5), (self.op_cumulative, 0.7), (self.op_struct, 3), (self.op_contract, 0.8),
               (self.op_index, 1.2), (self.op_control, 1.2 if self.depth == 0 else 0.3)]
        if self.pad_conv:
            # Appended (seeds below PAD_CONV_SEEDS draw from the list above, as they always did).
            ops += [(self.op_pad, 1.5), (self.op_conv, (0.3 if self.exact_only else 1.2) * (4 if self.wide_conv else 1))]
        w = np.array([x[1] for x in ops])
        for _ in range(6):
            f = ops[int(self.rng.choice(len(ops), p=w / w.sum()))][0]
            if f() is not None or self.raised:
                return True
        return False


def _cast_to(o: _Var, like: _Var, fallback: str, use_i=False) -> str:
    """Source that turns ``o`` into ``like``'s shape and dtype (a loop carry, a branch result)."""
    expr = o.name
    if o.shape != like.shape:
        expr = f"xp.broadcast_to({expr}, {tuple(like.shape)!r})" if _broadcastable(o.shape, like.shape) \
            else fallback
    if use_i:
        expr = f"({expr} + xp.asarray(i).astype({expr}.dtype))"
    if like.dtype == np.uint32 and o.kind in "fc":
        return f"_u32(xp, xp.asarray({expr}))"
    return f"xp.asarray({expr}).astype(np.{like.dtype.name})"


def _broadcastable(src, dst) -> bool:
    try:
        return np.broadcast_shapes(src, dst) == tuple(dst)
    except ValueError:
        return False


def _factorizations(size, rng):
    out = [(size,), (1, size), (size, 1)]
    for a in range(2, size + 1):
        if size % a == 0:
            out.append((a, size // a))
            for b in range(2, size // a + 1):
                if (size // a) % b == 0:
                    out.append((a, b, size // a // b))
    if size == 0:
        out += [(0, 3), (2, 0, 1)]
    if size == 1:
        out += [(), (1, 1, 1)]
    return out


# --------------------------------------------------------------------------------------------- inputs

def _values(rng, dtype, n):
    d = np.dtype(dtype)
    profile = rng.choice(["small", "normal", "special", "mixed"])
    if d.kind == "b":
        return [bool(x) for x in rng.random(n) < 0.5], None
    if d.kind in "iu":
        info = np.iinfo(d)
        lo = 0 if d.kind == "u" else -6
        vals = rng.integers(lo, 7, size=n).tolist()
        if profile in ("special", "mixed"):
            extremes = [int(info.max), int(info.min), int(info.max) - 1, int(info.min) + 1, int(info.max) // 2]
            for i in range(n):
                r = rng.random()
                if r < 0.2:
                    vals[i] = extremes[int(rng.integers(len(extremes)))]
                elif r < 0.35:
                    vals[i] = int(rng.integers(int(info.min), int(info.max), endpoint=True, dtype=np.int64)
                                  if d != np.uint64 else rng.integers(0, 2**63)) * (1 if d != np.uint64 else 2)
        return vals, None

    fdt = np.dtype(d.char.lower()) if d.kind == "c" else d

    def part():
        if profile == "small":
            v = (rng.integers(-6, 7, size=n) / rng.choice([1, 2, 4], size=n)).tolist()
        else:
            v = (rng.standard_normal(n) * rng.choice([1.0, 100.0, 1e-3])).tolist()
        if profile in ("special", "mixed"):
            fi = np.finfo(fdt)
            specials = SPECIAL_F + [float(fi.smallest_subnormal), -float(fi.smallest_subnormal),
                                    float(fi.tiny), float(fi.max), -float(fi.max)]
            p = 0.4 if profile == "special" else 0.15
            for i in range(n):
                if rng.random() < p:
                    v[i] = specials[int(rng.integers(len(specials)))]
        # The exact value the dtype holds, as a float64 literal.
        with np.errstate(all="ignore"):
            return [float(x) for x in np.array(v, np.float64).astype(fdt).astype(np.float64)]
    re = part()
    return re, (part() if d.kind == "c" else None)


def _fmt_vals(vals) -> str:
    return "[" + ", ".join(_lit_float(x) if isinstance(x, float) else repr(x) for x in vals) + "]"


def make_input(rng, dtype, shape):
    """Source of an exact input of ``shape`` (maybe a non-contiguous or reversed view of a larger one)."""
    view = ""
    base = list(shape)
    r = rng.random()
    if len(shape) >= 1 and r < 0.35:
        # A step or negative-step slice of a larger base.
        ax = int(rng.integers(len(shape)))
        step = int(rng.choice([2, -1, -2]))
        n = shape[ax]
        base[ax] = n * abs(step)       # [::step] of it has exactly n elements
        idx = [":"] * len(shape)
        idx[ax] = f"::{step}"
        view = f"[{', '.join(idx)}]"
    elif len(shape) >= 2 and r < 0.55:
        perm = rng.permutation(len(shape)).tolist()
        inv = np.argsort(perm).tolist()
        base = [shape[i] for i in inv]
        view = f".transpose({tuple(perm)!r})"
    n = math.prod(base)
    re, im = _values(rng, dtype, n)
    args = f"np.{np.dtype(dtype).name}, {tuple(base)!r}, {_fmt_vals(re)}"
    if im is not None:
        args += f", {_fmt_vals(im)}"
    src = f"_mk({args}){view}"
    return src


def _random_shape(rng):
    if rng.random() < 0.2:
        # Medium sizes: past the kernels' vector width (full vector steps, then a masked tail).
        rank = int(rng.choice([1, 2, 2, 3]))
        if rank == 1:
            return (int(rng.integers(60, 1500)),)
        if rank == 2:
            return (int(rng.integers(1, 24)), int(rng.integers(17, 90)))
        return (int(rng.integers(2, 5)), int(rng.integers(1, 8)), int(rng.integers(17, 70)))
    rank = int(rng.choice([0, 1, 1, 2, 2, 2, 3, 3]))
    dims = [int(rng.choice([1, 1, 2, 3, 4, 5, 7, 0], p=[.2, .1, .2, .2, .12, .08, .06, .04])) for _ in range(rank)]
    return tuple(dims)


def _related_shape(rng, shape):
    s = list(shape)
    r = rng.random()
    if r < 0.3:
        return tuple(s)
    if r < 0.6 and s:
        return tuple(1 if rng.random() < 0.5 else n for n in s)
    if r < 0.8 and s:
        return tuple(s[int(rng.integers(len(s))):])
    return _random_shape(rng)


# Seeds from here on also let loop bodies read the enclosing program's values (closures): seeds below
# keep generating exactly the programs they always did (pinned campaign findings stay reproducible).
CLOSURE_SEEDS = 20_000_000
# Seeds from here on (closures too) also generate lax.pad (crops, interior padding: the native_pads
# pass), lax.conv_general_dilated (oracle: _conv_ref, a direct float64 reference) and xp.convolve.
PAD_CONV_SEEDS = 30_000_000
# Seeds from here on (pads and convolutions too) also give convolutions of one group 8 to 17 input
# and 1 to 33 output features: the compiler reads their input's windows in place (ops/conv_windows.py).
WIDE_CONV_SEEDS = 40_000_000


def generate(seed: int, max_stmts: int | None = None) -> Program:
    """The random program of ``seed`` (the same on every run, machine and process)."""
    rng = np.random.default_rng([12, seed])
    n_in = int(rng.choice([1, 1, 2, 2, 3]))
    shape0 = _random_shape(rng)
    inputs, gen = [], Gen(rng, closures=seed >= CLOSURE_SEEDS, pad_conv=seed >= PAD_CONV_SEEDS,
                          wide_conv=seed >= WIDE_CONV_SEEDS)
    for i in range(n_in):
        shape = shape0 if i == 0 else _related_shape(rng, shape0)
        dt = str(rng.choice(DTYPES)) if i == 0 or rng.random() < 0.6 else inputs[0][2]
        src = make_input(rng, dt, shape)
        inputs.append((f"a{i}", src, dt))
    if rng.random() < 0.12:
        # A Python scalar argument: weakly typed under NEP 50 (and under jit).
        lit = str(rng.choice(["2", "-3", "0", "7", "True", "2.5", "-0.0", "np.nan", "np.inf", "1e-310",
                              "0.1", "(1-2j)", "1j"]))
        inputs.append((f"a{n_in}", lit, "scalar"))
    env = eval_numpy([f"{n} = {s}" for n, s, _ in inputs], {})
    for n, _, dt in inputs:
        if dt == "scalar":
            gen.scalars.append((n, env[n]))
        else:
            gen.vars.append(_Var(n, env[n], 0.0))
    n_stmts = max_stmts or int(rng.integers(2, 15))
    for _ in range(n_stmts):
        gen.step()
        if gen.raised:
            break
    prog_inputs = [(n, s) for n, s, _ in inputs]
    if gen.raised:
        outputs = [gen.stmts[-1].target]
    else:
        produced = [v for v in gen.vars[n_in - len(gen.scalars):]]
        if not produced:
            produced = gen.vars[:1]
        used = {d for s in gen.stmts for d in s.deps}
        leaves = [v.name for v in produced if v.name not in used]
        outputs = list(dict.fromkeys((leaves or [produced[-1].name])[-3:]))
    return Program(seed, prog_inputs, gen.stmts, outputs, sorted(EXCLUSIONS))
