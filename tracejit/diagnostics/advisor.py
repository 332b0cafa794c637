"""The jit granularity advisor: which functions to jit, measured on your inputs.

``advise(g, x, inner=[f])`` runs ``g`` four ways -- without jit, with only
the outer function jitted, with only the inner functions jitted (each call
of ``f`` inside ``g`` compiles and runs separately), and both -- and reports
trace, compile, first-call and steady per-call times, the number of calls
after which jit pays off, and a recommendation.
"""
from __future__ import annotations

import math
import re
import statistics
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from tracejit.api import Jitted, ShapeDtypeStruct, jit
from tracejit.compile_log import collect_compiles
from tracejit.core.avals import ShapedArray
from tracejit.core.pytree import tree_flatten, tree_map
from tracejit.diagnostics import persistent_cache as pc

__all__ = ["advise", "Advice", "StrategyResult", "parse_aval", "example_args"]

_SHORT = {"f16": "float16", "f32": "float32", "f64": "float64", "bf16": "bfloat16", "i8": "int8",
          "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32",
          "u64": "uint64", "c64": "complex64", "c128": "complex128", "bool": "bool", "pred": "bool"}
_AVAL_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[\s*([0-9,\s]*)\]\s*$")


def parse_aval(text: str):
    """Parse ``'f32[1024,768]'`` (or ``'float32[3]'``, ``'i64[]'``) into a ShapeDtypeStruct.

    Examples
    --------
    >>> parse_aval("f32[1024,768]")
    ShapeDtypeStruct(shape=(1024, 768), dtype=float32)
    >>> parse_aval("bool[]")
    ShapeDtypeStruct(shape=(), dtype=bool)
    """
    m = _AVAL_RE.match(text)
    if not m:
        raise ValueError(f"cannot parse {text!r} as an array type; write dtype[dims], e.g. 'f32[1024,768]', "
                         "'i64[]' or 'float64[3,4]'")
    name = _SHORT.get(m.group(1).lower(), m.group(1).lower())
    try:
        dtype = np.dtype(name)
    except TypeError:
        raise ValueError(f"unknown dtype {m.group(1)!r} in {text!r}; use e.g. f32, f64, i32, i64, bool, c64") from None
    dims = tuple(int(d) for d in m.group(2).replace(" ", "").split(",") if d)
    return ShapeDtypeStruct(dims, dtype)


def _random_array(shape, dtype, rng) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -100
        return rng.integers(lo, 100, size=shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def example_args(args, seed: int = 0):
    """Concrete arrays for ``args``: arrays pass through; ShapeDtypeStructs, ShapedArrays and
    ``'f32[3,4]'`` strings become random data of that shape and dtype.

    Examples
    --------
    >>> example_args(["f32[2]"])[0].dtype
    dtype('float32')
    """
    rng = np.random.default_rng(seed)

    def concrete(a):
        if isinstance(a, str):
            a = parse_aval(a)
        if isinstance(a, ShapedArray) or type(a).__name__ == "ShapeDtypeStruct":
            return _random_array(a.shape, a.dtype, rng)
        return a

    return tree_map(concrete, list(args), is_leaf=lambda a: isinstance(a, (str, ShapedArray)))


# --------------------------------------------------------------------------- measurements

@dataclass
class StrategyResult:
    """Measurements of one way of jitting."""

    key: str                    # none | outer | inner | both
    name: str                   # e.g. "jit g + f"
    trace_ms: float = 0.0       # tracing, summed over compiles in the first call
    compile_ms: float = 0.0     # passes + codegen + LLVM, summed over compiles
    first_call_ms: float = 0.0  # wall time of the first call (trace + compile + run)
    steady_ms: float = 0.0      # median per-call time after the first call
    samples: list = field(default_factory=list)
    compiles: int = 0           # executables compiled by the first call
    kernels: int = 0            # fused kernels in those executables
    break_even_calls: float | None = None   # calls after which this beats no jit (inf: never)
    matches: bool = True        # outputs equal to the no-jit outputs (within dtype tolerance)
    max_rel_error: float = 0.0
    cache: str = ""             # compile outcome (compiled / persistent-hit)

    def total_ms(self, calls: int) -> float:
        """Time for ``calls`` calls: the first call plus steady calls."""
        return self.first_call_ms + max(calls - 1, 0) * self.steady_ms


@dataclass
class Advice:
    """The advisor's result: ``strategies`` (StrategyResult), ``recommended``, ``reason``."""

    function: str
    signature: str
    calls: int
    strategies: list
    recommended: StrategyResult
    reason: str
    warmup_ms: float = 0.0

    def __getitem__(self, key: str) -> StrategyResult:
        for s in self.strategies:
            if s.key == key or s.name == key:
                return s
        raise KeyError(f"no strategy {key!r}; strategies: {[s.key for s in self.strategies]}")

    def as_dict(self) -> dict:
        """The data as plain Python values (for JSON)."""
        from dataclasses import asdict
        return {"function": self.function, "signature": self.signature, "calls": self.calls,
                "recommended": self.recommended.key, "reason": self.reason, "warmup_ms": self.warmup_ms,
                "strategies": [{k: v for k, v in asdict(s).items() if k != "samples"} for s in self.strategies]}

    def __str__(self) -> str:
        head = ["strategy", "trace ms", "compile ms", "first call ms", "per call ms", "break-even calls",
                f"total ms ({self.calls} calls)", "kernels", "outputs"]
        rows = []
        for s in self.strategies:
            be = ("-" if s.key == "none" else "never" if s.break_even_calls == math.inf
                  else f"{s.break_even_calls:.0f}")
            rows.append([("* " if s is self.recommended else "  ") + s.name, f"{s.trace_ms:.1f}",
                         f"{s.compile_ms:.1f}", f"{s.first_call_ms:.2f}", _fmt_ms(s.steady_ms), be,
                         f"{s.total_ms(self.calls):.1f}", str(s.kernels) if s.key != "none" else "-",
                         "same" if s.matches else f"DIFFER ({s.max_rel_error:.1e})"])
        widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
        line = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        out = [f"jit advice for {self.function}{self.signature}", line(head), "  ".join("-" * w for w in widths)]
        out += [line(r) for r in rows]
        out.append(f"recommendation: {self.recommended.name} -- {self.reason}")
        return "\n".join(out)

    __repr__ = __str__


def _fmt_ms(ms: float) -> str:
    return f"{ms:.4f}" if ms < 0.1 else f"{ms:.3f}" if ms < 10 else f"{ms:.1f}"


def _time_steady(call, min_calls: int, budget_s: float, max_calls: int = 1000) -> list:
    samples = []
    start = time.perf_counter()
    while len(samples) < max_calls and (len(samples) < min_calls or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        call()
        samples.append((time.perf_counter() - t0) * 1e3)
    return samples


def _compare(ref, out):
    """(matches, max relative error) between two output pytrees."""
    r_leaves, r_tree = tree_flatten(ref)
    o_leaves, o_tree = tree_flatten(out)
    if r_tree != o_tree or len(r_leaves) != len(o_leaves):
        return False, math.inf
    worst, ok = 0.0, True
    for a, b in zip(r_leaves, o_leaves):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False, math.inf
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            kind = np.result_type(a.dtype, b.dtype)
            rtol = {2: 1e-2, 4: 1e-4, 8: 1e-9, 16: 1e-9}.get(np.dtype(kind).itemsize // (2 if kind.kind == "c" else 1), 1e-6)
            af, bf = a.astype(np.complex128 if kind.kind == "c" else np.float64), b.astype(
                np.complex128 if kind.kind == "c" else np.float64)
            finite = np.isfinite(af) & np.isfinite(bf)
            err = np.abs(af[finite] - bf[finite]) / np.maximum(np.abs(af[finite]), 1.0)
            if err.size:
                worst = max(worst, float(err.max()))
            same_special = np.array_equal(np.isnan(af), np.isnan(bf)) and np.array_equal(af[~finite & ~np.isnan(af)],
                                                                                         bf[~finite & ~np.isnan(bf)])
            ok &= bool(same_special and (err.size == 0 or err.max() <= rtol * 10))
        else:
            ok &= bool(np.array_equal(a, b))
    return ok, worst


class _Binding:
    """A name through which the outer function reaches an inner one (a global or a closure cell)."""

    def __init__(self, get, set_, where):
        self.get, self.set, self.where = get, set_, where


def _inner_bindings(fn, inner) -> list:
    fn_name = getattr(fn, "__name__", "function")
    globs = getattr(fn, "__globals__", None)
    if globs is None:
        raise TypeError(f"advise: {fn_name} is not a Python function; pass inner=[] or a plain function")
    code = fn.__code__
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    out = []
    for f in inner:
        if isinstance(f, Jitted):
            raise TypeError(f"advise: inner function {f._name} is already jitted; pass the plain function "
                            "(the advisor jits it where a strategy calls for it)")
        found = []
        for name, cell in cells.items():
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            if v is f or (isinstance(f, str) and name == f):
                found.append(_Binding(lambda c=cell: c.cell_contents,
                                      lambda v, c=cell: setattr(c, "cell_contents", v), f"closure {name}"))
        for name, v in list(globs.items()):
            if v is f or (isinstance(f, str) and name == f and callable(v)):
                found.append(_Binding(lambda n=name: globs[n], lambda v, n=name: globs.__setitem__(n, v),
                                      f"global {name}"))
        if not found:
            label = f if isinstance(f, str) else getattr(f, "__name__", repr(f))
            raise ValueError(f"advise: inner function {label} is not a global or closure variable of "
                             f"{fn_name}; the advisor swaps the names {fn_name} calls through, so define "
                             f"{label} at module level (or in an enclosing function) and call it by name")
        out.append(found)
    return out


def _inner_names(bindings) -> list:
    return [group[0].where.split(" ", 1)[1] for group in bindings]


def _measure(key, name, fn, args, bindings, ref, min_calls, budget_s) -> tuple:
    saved = [(b, b.get()) for group in bindings for b in group]
    try:
        if key in ("inner", "both"):
            for group in bindings:
                jitted = jit(group[0].get())
                for b in group:
                    b.set(jitted)
        target = jit(fn) if key in ("outer", "both") else fn
        with collect_compiles() as seen:
            t0 = time.perf_counter()
            out = target(*args)
            first = (time.perf_counter() - t0) * 1e3
        samples = _time_steady(lambda: target(*args), min_calls, budget_s)
    finally:
        for b, v in saved:
            b.set(v)
    r = StrategyResult(key, name, first_call_ms=first, samples=samples,
                       steady_ms=statistics.median(samples), compiles=len(seen))
    for _, _, entry in seen:
        t = entry.timings
        r.trace_ms += t.get("trace_ms", 0.0)
        r.compile_ms += sum(t.get(k, 0.0) for k in ("passes_ms", "codegen_ms", "llvm_ms", "compile_ms"))
        r.kernels += len(getattr(entry.executable, "kernels", []) or [])
        r.cache = t.get("cache", "compiled")
    if ref is not None:
        r.matches, r.max_rel_error = _compare(ref, out)
    return r, out


def _break_even(s: StrategyResult, base: StrategyResult) -> float:
    if s.first_call_ms <= base.first_call_ms:
        return 1.0 if s.steady_ms <= base.steady_ms else math.inf
    gain = base.steady_ms - s.steady_ms
    if gain <= 0:
        return math.inf
    return 1.0 + math.ceil((s.first_call_ms - base.first_call_ms) / gain)


def _recommend(strategies, calls):
    by_total = sorted(strategies, key=lambda s: s.total_ms(calls))
    best = by_total[0]
    # Prefer the simpler strategy (order of the list) when it is within 5% of the best.
    for s in strategies:
        if s.matches and s.total_ms(calls) <= best.total_ms(calls) * 1.05:
            choice = s
            break
    else:
        choice = best
    base = strategies[0]
    if choice.key == "none":
        others = [s for s in strategies if s.key != "none"]
        best_jit = min(others, key=lambda s: s.total_ms(calls))
        finite = [s for s in others if s.break_even_calls != math.inf]
        when = ("no jit strategy is faster per call, so jit never pays off" if not finite else
                "the earliest a jit strategy pays off is after {:.0f} calls ({})".format(
                    *min(((s.break_even_calls, s.name) for s in finite))))
        return choice, (f"over {calls} calls plain NumPy takes {choice.total_ms(calls):.1f} ms vs "
                        f"{best_jit.total_ms(calls):.1f} ms for the best jit strategy ({best_jit.name}); {when}")
    speed = base.steady_ms / choice.steady_ms if choice.steady_ms > 0 else math.inf
    reason = (f"over {calls} calls it takes {choice.total_ms(calls):.1f} ms vs {base.total_ms(calls):.1f} ms "
              f"without jit ({speed:.1f}x faster per call: {_fmt_ms(choice.steady_ms)} vs "
              f"{_fmt_ms(base.steady_ms)} ms); it pays off after {choice.break_even_calls:.0f} calls")
    if choice is not best:
        reason += f" (within 5% of {best.name}, and simpler)"
    if choice.key == "inner":
        reason += "; jitting the whole function would fuse across the inner calls, but here it did not pay"
    return choice, reason


def advise(fn: Callable, *args, inner=(), calls: int = 100, min_calls: int = 5, budget_s: float = 0.25,
           persistent_cache: bool = False, seed: int = 0) -> Advice:
    """Measure jit strategies for ``fn`` on these inputs and recommend one.

    Parameters
    ----------
    fn : callable
        The outer function.
    *args
        Its arguments: arrays, or ShapeDtypeStructs / ``'f32[1024,768]'``
        strings, which become random data of that shape and dtype.
    inner : sequence of callables or names
        Functions ``fn`` calls through a global (module-level) name or a
        closure variable; the "inner" strategies replace those names with
        jitted versions for the measurement and restore them afterwards.
    calls : int
        How many calls the recommendation optimizes for (default 100).
    min_calls, budget_s : int, float
        Steady time is the median of at least ``min_calls`` calls, taking
        about ``budget_s`` seconds per strategy.
    persistent_cache : bool
        Let compiles use the on-disk cache. Off by default, so compile times
        are cold compiles.
    seed : int
        Seed of the random inputs.

    Returns
    -------
    Advice
        ``str(advice)`` is a table; ``advice.strategies`` holds the numbers,
        ``advice.recommended`` and ``advice.reason`` the recommendation.

    Notes
    -----
    One-time per-process costs (LLVM start-up, compiling the math library)
    are paid by an unmeasured warm-up compile first (``advice.warmup_ms``),
    so they don't bias whichever strategy happens to compile first.

    Examples
    --------
    >>> import numpy as np
    >>> def f(x):
    ...     return x * 2 + np.sin(x)
    >>> def g(x):
    ...     return np.exp(f(f(x))) - x
    >>> advice = advise(g, "f32[256,256]", inner=[f], calls=1000)  # doctest: +SKIP
    >>> print(advice)                                              # doctest: +SKIP
    """
    concrete = example_args(args, seed)
    fn_name = getattr(fn, "__name__", "function")
    bindings = _inner_bindings(fn, list(inner))
    names = _inner_names(bindings)
    keys = [("none", "no jit"), ("outer", f"jit {fn_name}")]
    if bindings:
        keys += [("inner", f"jit {', '.join(names)}"), ("both", f"jit {fn_name} + {', '.join(names)}")]
    with nullcontext() if persistent_cache else pc.disabled():
        t0 = time.perf_counter()
        jit(fn)(*concrete)   # warm-up: process-wide one-time costs
        warmup_ms = (time.perf_counter() - t0) * 1e3
        results, ref = [], None
        for key, name in keys:
            r, out = _measure(key, name, fn, concrete, bindings, ref, min_calls, budget_s)
            if key == "none":
                ref = out
            results.append(r)
    for r in results:
        r.break_even_calls = None if r.key == "none" else _break_even(r, results[0])
    choice, reason = _recommend(results, calls)
    leaves, _ = tree_flatten(concrete)
    sig = "(" + ", ".join(ShapedArray(np.shape(a), np.asarray(a).dtype).str_short() for a in leaves) + ")"
    return Advice(fn_name, sig, calls, results, choice, reason, warmup_ms)
