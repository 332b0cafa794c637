"""Differential check of random programs (issue 12): NumPy vs tracejit.jit (CPU, twice) vs reference.

For each seed, :func:`tests.fuzz.program_gen.generate` writes a program over ``xp``; this module
runs it with NumPy (the oracle), under ``tracejit.jit`` on the ``cpu`` backend twice (the two
results must be bitwise equal, and the inputs unchanged) and on the ``reference`` backend, and
compares every output with NumPy's:

- shapes and dtypes equal (NumPy 2 / NEP 50 promotion);
- integers and booleans exactly;
- floats/complex (each part): NaN positions equal; values bitwise equal and zero signs equal
  where the program is exact, else within the absolute bound the generator derived for that
  value (transcendental functions: a few ULP; reassociated sums: relative to the sum of the
  magnitudes of the summands), infinities equal. NaN signs and payloads are not compared;
- where NumPy raises, tracejit must raise too.

A mismatch is delta-minimized (outputs dropped, statements bypassed, inputs made contiguous and
shrunk while the same kind of mismatch persists) and written as a standalone reproducer.

CLI::

    python -m tests.fuzz.program_check --start 0 --count 2000 --jobs 2 --out /tmp/fuzz_repro

prints the number of programs, throughput and mismatches by class; ``--seed S`` checks and
prints one program. Programs run in worker processes (a crash or hang costs one seed).
``--parallel THREADS`` splits every kernel over a thread team however small it is;
``FUZZ_INJECT=bug1`` puts issue 12's bug 1 back in the workers (to measure what the fuzzer catches);
``FUZZ_CHECKS=1`` also re-checks program types after every pass. Programs and their error bounds
depend only on the seed and the generator's code (``EXCLUSIONS`` included); NumPy is the oracle,
so its version matters (NumPy 2).
"""
from __future__ import annotations

import argparse
import collections
import json
import math
import os
import re
import selectors
import subprocess
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field, replace

import numpy as np

from tests.fuzz import program_gen as pg

BACKENDS = ("cpu", "reference")


# ------------------------------------------------------------------------------------- running

def _load(program: pg.Program):
    ns = dict(pg.prelude_namespace())
    exec(compile(program.function_source(), f"<fuzz program {program.seed}>", "exec"), ns)
    with np.errstate(all="ignore"):
        exec(compile(program.inputs_source(), "<fuzz inputs>", "exec"), ns)
    return ns["f"], [ns[n] for n, _ in program.inputs]


def _quiet(fn, *a):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a)


def _exc(e: BaseException) -> str:
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {msg[:160]}"


@dataclass
class Mismatch:
    backend: str        # cpu | reference | cpu-rerun
    kind: str           # shape dtype value nan zero_sign nondeterministic raises no_raise input_mutated
    output: int         # output index (-1: the whole program)
    detail: str
    op: str = ""        # label of the statement that produced the output
    out_dtype: str = ""

    def key(self) -> str:
        parts = [self.backend, self.kind]
        if self.kind == "raises":
            # Bucket by the message with numbers, dtypes and ids taken out (one cause, many ops).
            exc, _, msg = self.detail.partition(":")
            msg = re.sub(r"\b(bool|u?int\d+|float\d+|complex\d+|[a-z]\d+\[[\d,]*\])\b", "T", msg)
            msg = re.sub(r"-?\d[\d.e+-]*", "N", msg)
            exc = f"{exc}({' '.join(msg.split()[:6])})"
            parts.append(exc)
            if exc.split("(")[0] in ("KeyError", "IndexError", "AttributeError", "AssertionError"):
                parts.append(self.op or "?")     # the message alone says little
            return ":".join(parts)
        parts.append(self.op or "?")
        if self.out_dtype:
            parts.append(self.out_dtype)
        return ":".join(parts)


@dataclass
class Result:
    seed: int
    mismatches: list = field(default_factory=list)
    numpy_raises: str | None = None
    seconds: float = 0.0
    # Differences that are NumPy's own inconsistencies, not tracejit bugs (see NUMPY_SCALAR_DTYPE).
    numpy_quirks: list = field(default_factory=list)
    skipped: str | None = None


def _parts(a):
    return [a.real, a.imag] if a.dtype.kind == "c" else [a]


def _unsigned_beside_nan(g, w):
    """Complex ``g`` and ``w`` with the sign dropped from each part whose other part is NaN in ``w``:
    C99 leaves those signs unspecified (casinh(NaN + i inf) is +-inf + i NaN), and NumPy's and
    compiled code's algorithms pick differently (seed 8166008)."""
    beside = np.isnan(w.real) | np.isnan(w.imag)
    if not beside.any():
        return g, w
    g, w = g.copy(), w.copy()
    for a in (g, w):
        a[beside] = np.abs(a.real[beside]) + 1j * np.abs(a.imag[beside])
    return g, w


def compare(got, want, err) -> tuple[str, str] | None:
    """First difference between ``got`` and NumPy's ``want`` (error bound ``err``: a float or
    per-element bounds), or None."""
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape:
        return "shape", f"shape {g.shape} != numpy {w.shape}"
    if g.dtype != w.dtype:
        return "dtype", f"dtype {g.dtype} != numpy {w.dtype}"
    if w.dtype.kind not in "fc":
        if not np.array_equal(g, w):
            bad = np.argwhere(g != w)[:3].tolist()
            return "value", f"at {bad}: got {g[tuple(np.array(bad).T)] if bad else g} numpy {w[tuple(np.array(bad).T)] if bad else w}"
        return None
    if w.dtype.kind == "c":
        g, w = _unsigned_beside_nan(g, w)
    eps = float(np.finfo(w.dtype).eps)
    err = np.broadcast_to(np.asarray(err, np.float64), w.shape)
    exact = not np.any(err)
    for gp, wp in zip(_parts(g), _parts(w)):
        gn, wn = np.isnan(gp), np.isnan(wp)
        if not np.array_equal(gn, wn):
            bad = np.argwhere(gn != wn)[:3].tolist()
            return "nan", f"NaN positions differ at {bad}: got {gp[gn != wn][:3]} numpy {wp[gn != wn][:3]}"
        m = ~wn
        gv, wv, ev = gp[m], wp[m], err[m]
        if exact:
            if not np.array_equal(gv, wv):
                i = np.flatnonzero(gv != wv)[:3]
                return "value", f"got {gv[i].tolist()} numpy {wv[i].tolist()} (exact expected)"
            z = wv == 0
            if not np.array_equal(np.signbit(gv[z]), np.signbit(wv[z])):
                i = np.flatnonzero(np.signbit(gv[z]) != np.signbit(wv[z]))[:3]
                return "zero_sign", f"zero signs: got {gv[z][i].tolist()} numpy {wv[z][i].tolist()}"
        else:
            inf = np.isinf(wv) | np.isinf(gv)
            if not np.array_equal(gv[inf], wv[inf]):
                return "value", f"infinities differ: got {gv[inf][:3].tolist()} numpy {wv[inf][:3].tolist()}"
            with np.errstate(all="ignore"):
                d = np.abs(gv[~inf].astype(np.float64) - wv[~inf].astype(np.float64))
                tol = ev[~inf] + 4 * eps * np.abs(wv[~inf].astype(np.float64))
            if np.any(d > tol):
                i = np.flatnonzero(d > tol)[:3]
                return "value", (f"got {gv[~inf][i].tolist()} numpy {wv[~inf][i].tolist()} "
                                 f"(|diff| {d[i].max():.3g} > bound {tol[i].max():.3g})")
    return None


def _run_jit(f, inputs, backend, twice):
    import tracejit
    import tracejit.numpy as jnp
    jf = tracejit.jit(lambda *a: f(jnp, *a), backend=backend)
    outs = [_quiet(jf, *inputs)]
    if twice:
        outs.append(_quiet(jf, *inputs))
    return outs


def _flatten(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


# NumPy returns a scalar (np.generic), not a 0-d array, from a reduction of a 0-d array or from
# arithmetic on 0-d arrays (vmap and scan rows too), and scalar arithmetic promotes by other rules
# than its array loops (np.True_ ** 2 is int64, np.array(True) ** 2 is int8). tracejit, as JAX,
# keeps 0-d arrays and follows the array rules (also for special values: np.complex128 ** 0.5 is
# NumPy's cpow, a complex array's ** 0.5 its sqrt). A difference that disappears when NumPy never
# makes scalars (the prelude's NP_ARRAYS) is reported apart, not as a mismatch.
NUMPY_SCALAR_DTYPE = "NumPy scalar semantics (np.generic values)"


def _array_rules_agree(f, inputs, i, got, err) -> bool:
    try:
        xp = f.__globals__["NP_ARRAYS"]
        want = _flatten(_quiet(f, xp, *[xp.wrap(a) for a in inputs]))[i]
    except Exception:
        return False
    return compare(got, np.asarray(want), err) is None


def _array_rules_outputs(f, inputs):
    """The program's outputs when NumPy never makes scalars (None if that raises too): NumPy's
    scalar promotion can change a loop carry's dtype (np.True_ ** 2 is int64, np.array(True) ** 2
    int8), which the oracle's carry check reports as an error tracejit, following the array
    rules, rightly does not raise (fuzz seed 9934809)."""
    try:
        xp = f.__globals__["NP_ARRAYS"]
        return _flatten(_quiet(f, xp, *[xp.wrap(a) for a in inputs]))
    except Exception:
        return None


def _array_rules_errors(program):
    try:
        return analyze_quiet(program)[1]
    except Exception:
        return {}


def check_program(program: pg.Program, backends=BACKENDS) -> Result:
    """All mismatches of ``program`` (empty: it passes)."""
    t0 = time.perf_counter()
    res = Result(program.seed)
    f, inputs = _load(program)
    labels = {s.target: (s.op, "") for s in program.stmts}
    try:
        want = _flatten(_quiet(f, np, *inputs))
        _, errs = analyze_quiet(program)
    except Exception as e:  # NumPy raises: tracejit must too, unless only NumPy's scalars raise
        want, errs = _array_rules_outputs(f, inputs), {}
        if want is None:
            res.numpy_raises = _exc(e)
        else:
            errs = _array_rules_errors(program)
            res.numpy_quirks.append(f"numpy: {NUMPY_SCALAR_DTYPE}: only NumPy's scalars raise {_exc(e)}")
    kept = [np.array(a, copy=True) for a in inputs]
    for backend in backends:
        try:
            outs = _run_jit(f, inputs, backend, twice=(backend == "cpu"))
        except Exception as e:
            if want is not None:
                res.mismatches.append(Mismatch(backend, "raises", -1, _exc(e),
                                               labels.get(program.outputs[0], ("", ""))[0]))
            continue
        if want is None:
            op = program.stmts[-1].op if program.stmts else "?"
            res.mismatches.append(Mismatch(backend, "no_raise", -1, f"numpy raised {res.numpy_raises}", op))
            continue
        for a, b in zip(inputs, kept):
            if np.asarray(a).tobytes() != b.tobytes():
                res.mismatches.append(Mismatch(backend, "input_mutated", -1, "an input changed"))
        got = _flatten(outs[0])
        if len(got) != len(want):
            res.mismatches.append(Mismatch(backend, "structure", -1, f"{len(got)} outputs != {len(want)}"))
            continue
        for i, (g, w) in enumerate(zip(got, want)):
            name = program.outputs[i]
            diff = compare(g, w, errs.get(name, 0.0))
            if diff and _array_rules_agree(f, inputs, i, g, errs.get(name, 0.0)):
                res.numpy_quirks.append(f"{backend}: output {i}: {NUMPY_SCALAR_DTYPE}: {diff[1]}")
                continue
            if diff:
                res.mismatches.append(Mismatch(backend, diff[0], i, diff[1], labels.get(name, ("input", ""))[0],
                                               str(np.asarray(w).dtype)))
        if len(outs) == 2:
            for i, (g1, g2) in enumerate(zip(got, _flatten(outs[1]))):
                g1, g2 = np.asarray(g1), np.asarray(g2)
                if g1.shape != g2.shape or g1.dtype != g2.dtype or g1.tobytes() != g2.tobytes():
                    res.mismatches.append(Mismatch("cpu-rerun", "nondeterministic", i, "second call differs",
                                                   labels.get(program.outputs[i], ("input", ""))[0]))
    res.seconds = time.perf_counter() - t0
    return res


def analyze_quiet(program):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pg.analyze(program)


# ------------------------------------------------------------------------------ bug classes

# Root-cause classes of mismatches seen in campaigns (issue 12), tested in order on the keys of
# the minimized program's mismatches and its source; a summary groups programs by them. A rule
# is a guess from the shape of the reproducer: delete it once its bug is fixed.
BUG_CLASSES = [
    ("crash", lambda k, src: ":crash" in k or ":timeout" in k),
    ("known: Python int scalar outside the dtype (OverflowError)", lambda k, src: "OverflowError(Python integer" in k),
    ("known: int64 vs uint64 comparison (TypeError)", lambda k, src: "requires operands of one dtype" in k),
    ("known: x ** 0.5 at -inf", lambda k, src: ":nan:" in k and "** 0.5" in src),
    ("known: weakly typed Python int argument outside an unsigned dtype (NumPy raises, jit cannot)",
     lambda k, src: ":no_raise:" in k and re.search(r"^a\d+ = -\d+$", src, re.M)),
    ("complex ** with infinite parts (power fast paths vs NumPy's cpow)",
     lambda k, src: ":nan:" in k and "complex" in src and "**" in src),
    ("complex product of a strided view: NumPy's scalar loop rounds without FMA",
     lambda k, src: ":value:" in k and "complex" in src and re.search(r"\[::-?\d\]|\.transpose\(", src)
     and re.search(r"(\w+) \* \1\b", src)),
    ("documented gap: NotImplementedError", lambda k, src: "NotImplementedError" in k),
    ("float16 small product (small_dots) feeding several consumers: wrong value",
     lambda k, src: (":value:" in k or ":nan:" in k) and "float16" in src
     and re.search(r"matmul\(|@|einsum\(|dot\(", src)),
    ("known: complex reciprocal / x**-1", lambda k, src: "complex" in src and ("reciprocal(" in src or "** -1" in src)),
    ("NumPy loop-dependent complex product rounding (ufunc.at / strided loops without FMA)",
     lambda k, src: ":value:" in k and "complex" in src and "'mul'" in src),
    ("known: dtype promotion", lambda k, src: ":dtype:" in k),
]


def classify(keys, src: str) -> str:
    k = " ".join(keys)
    for name, rule in BUG_CLASSES:
        try:
            if rule(k, src):
                return name
        except Exception:
            pass
    return "unclassified: " + (keys[0] if keys else "?")


# ---------------------------------------------------------------------------------- minimizing

def _rename(lines, old, new):
    pat = re.compile(rf"\b{re.escape(old)}\b")
    return [pat.sub(new, ln) for ln in lines]


def _dce(p: pg.Program) -> pg.Program:
    live = set(p.outputs)
    keep = []
    for s in reversed(p.stmts):
        if s.target in live or s.raises:
            keep.append(s)
            live |= set(s.deps)
    keep.reverse()
    inputs = [(n, src) for n, src in p.inputs if n in live]
    return replace(p, stmts=keep, inputs=inputs or p.inputs[:1])


def _bypass(p: pg.Program, i: int, dep: str) -> pg.Program:
    """``p`` without statement ``i``: its uses read ``dep`` instead."""
    s = p.stmts[i]
    stmts = p.stmts[:i]
    for t in p.stmts[i + 1:]:
        if s.target in t.deps:
            t = replace(t, lines=_rename(t.lines, s.target, dep),
                        deps=list(dict.fromkeys(dep if d == s.target else d for d in t.deps)))
        stmts.append(t)
    outputs = list(dict.fromkeys(dep if o == s.target else o for o in p.outputs))
    return _dce(replace(p, stmts=stmts, outputs=outputs))


def literal_input(a: np.ndarray) -> str:
    """``_mk(...)`` source of a contiguous copy of ``a``."""
    a = np.ascontiguousarray(a)
    flat = a.reshape(-1)
    if a.dtype.kind == "c":
        re_, im = [float(x) for x in flat.real], [float(x) for x in flat.imag]
        return f"_mk(np.{a.dtype.name}, {a.shape!r}, {pg._fmt_vals(re_)}, {pg._fmt_vals(im)})"
    if a.dtype.kind == "f":
        vals = [float(x) for x in flat.astype(np.float64)]
    else:
        vals = [bool(x) if a.dtype.kind == "b" else int(x) for x in flat]
    return f"_mk(np.{a.dtype.name}, {a.shape!r}, {pg._fmt_vals(vals)})"


def _input_candidates(p: pg.Program, env):
    for k, (name, src) in enumerate(p.inputs):
        a = env[name]
        if not isinstance(a, np.ndarray):
            continue        # a Python scalar argument stays one
        cands = []
        for ax in range(a.ndim):
            n = a.shape[ax]
            if n > 1:
                for sl in (slice(0, 1), slice(0, (n + 1) // 2), slice(n // 2, n), slice(n - 1, n)):
                    idx = [slice(None)] * a.ndim
                    idx[ax] = sl
                    cands.append(a[tuple(idx)])
        if a.size > 0:
            cands.append(a.reshape(-1)[:1].reshape((1,) * a.ndim))
        if literal_input(a) != src:
            cands.insert(0, a)      # the same values, contiguous
        for c in cands:
            new = list(p.inputs)
            new[k] = (name, literal_input(c))
            if new[k][1] != src:
                yield replace(p, inputs=new)


def _body_candidates(p: pg.Program):
    """``p`` with one statement of a nested body (cond branch, loop or vmap body) removed."""
    for i, s in enumerate(p.stmts):
        for j, ln in enumerate(s.lines):
            m = re.match(r"\s+(v\d+) = ", ln)
            if m:
                rest = s.lines[:j] + s.lines[j + 1:]
                if any(re.search(rf"\b{m.group(1)}\b", r) for r in rest):
                    continue    # still read (maybe in a body NumPy never runs: a zero-trip loop)
                stmts = list(p.stmts)
                stmts[i] = replace(s, lines=rest)
                yield replace(p, stmts=stmts)


def _target(m: Mismatch):
    """What a smaller program must still show: backend, kind, and for a raise the exception type."""
    return (m.backend, m.kind, m.detail.split(":")[0] if m.kind == "raises" else "")


def _mismatch_sig(res: Result):
    return {_target(m) for m in res.mismatches}


def minimize(p: pg.Program, target, budget_s=20.0, backends=BACKENDS):
    """Smaller program with the mismatch ``target`` = (backend, kind, exception type) (greedy delta
    debugging)."""
    t0 = time.perf_counter()
    checks = [0]

    def fails(q):
        if time.perf_counter() - t0 > budget_s:
            raise TimeoutError
        checks[0] += 1
        try:
            _, errs = analyze_quiet(q)
            if any(math.isinf(pg.bound_max(errs[o])) for o in q.outputs):
                return False
        except Exception:
            if target[1] not in ("no_raise",):
                return False
        try:
            r = check_program(q, backends=[b for b in backends if b == target[0].split("-")[0]])
        except Exception:
            return False
        return target in _mismatch_sig(r)

    best = _dce(p)
    try:
        # One output at a time.
        if len(best.outputs) > 1:
            for o in best.outputs:
                q = _dce(replace(best, outputs=[o]))
                if fails(q):
                    best = q
                    break
        changed = True
        while changed:
            changed = False
            for i in range(len(best.stmts) - 1, -1, -1):
                if i >= len(best.stmts):
                    continue
                s = best.stmts[i]
                for dep in s.deps:
                    q = _bypass(best, i, dep)
                    if len(q.stmts) < len(best.stmts) and fails(q):
                        best, changed = q, True
                        break
            for q in _body_candidates(best):
                if fails(q):
                    best, changed = q, True
                    break
            env = pg.eval_numpy([f"{n} = {src}" for n, src in best.inputs], {})
            for q in _input_candidates(best, env):
                if fails(q):
                    best, changed = q, True
                    break
    except TimeoutError:
        pass
    return best, checks[0]


# -------------------------------------------------------------------------------- reproducers

def reproducer(p: pg.Program, res: Result) -> str:
    """A standalone script: the program, its inputs, and the comparisons that fail."""
    try:
        _, errs = analyze_quiet(p)
    except Exception:
        errs = {}
    bounds = [pg.bound_max(errs.get(o, 0.0)) for o in p.outputs]
    head = [f"# tracejit differential fuzzer (tests/fuzz), seed {p.seed}"]
    for m in res.mismatches:
        head.append(f"# {m.backend}: {m.kind} (output {m.output}): {m.detail}")
    head.append(f"# error bounds per output (0 = bitwise exact): {bounds}")
    check = f'''

def _same(g, w, bound):
    """NumPy's shape and dtype; per real/imag part: NaN positions, values (within ``bound``), zero signs."""
    g, w = np.asarray(g), np.asarray(w)
    if g.shape != w.shape or g.dtype != w.dtype:
        return False
    if w.dtype.kind not in "fc":
        return np.array_equal(g, w)
    for gp, wp in ([(g.real, w.real), (g.imag, w.imag)] if w.dtype.kind == "c" else [(g, w)]):
        if not np.array_equal(np.isnan(gp), np.isnan(wp)):
            return False
        m = ~np.isnan(wp)
        if bound == 0:
            z = wp[m] == 0
            if not np.array_equal(gp[m], wp[m]) or not np.array_equal(np.signbit(gp[m][z]), np.signbit(wp[m][z])):
                return False
        elif not np.allclose(gp[m], wp[m], rtol=4 * np.finfo(wp.dtype).eps, atol=bound):
            return False
    return True


inputs = [{', '.join(n for n, _ in p.inputs)}]
try:
    with np.errstate(all="ignore"):
        want = f(np, *inputs)
    print("numpy:    ", want)
except Exception as e:
    want = None
    print("numpy raises", type(e).__name__, e)
for backend in ("cpu", "reference"):
    try:
        got = tracejit.jit(lambda *a: f(jnp, *a), backend=backend)(*inputs)
    except Exception as e:
        print(backend, "raises", type(e).__name__, e, "" if want is None else "MISMATCH")
        continue
    print(backend + ":", " " * (8 - len(backend)), got)
    if want is None:
        print("  MISMATCH: numpy raises, tracejit does not")
        continue
    for i, (g, w, bound) in enumerate(zip(got, want, {bounds!r})):
        g, w = np.asarray(g), np.asarray(w)
        ok = _same(g, w, bound)
        print(f"  output {{i}}: {{'ok' if ok else 'MISMATCH'}} ({{g.dtype}}{{list(g.shape)}} vs numpy {{w.dtype}}{{list(w.shape)}})")
'''
    return "\n".join(head) + "\n" + pg.PRELUDE + "\n\n" + p.function_source() + "\n\n" + p.inputs_source() + check


# ------------------------------------------------------------------------------------ workers

def inject_bug(name: str):
    """Put a fixed bug back, in this process only (to prove the fuzzer finds it; never in CI runs
    that check tracejit). ``bug1``: a reduction whose reduced dims all have size 1 read the outer
    index as the row index (KernelLayout before commit 46ca734)."""
    if name != "bug1":
        raise ValueError(f"unknown bug {name!r}")
    import inspect
    import textwrap
    from tracejit.backends.cpu import codegen
    src = textwrap.dedent(inspect.getsource(codegen.KernelLayout.__init__))
    start = src.index("    if kernel.is_row_kernel and not new_groups[1]:")
    end = src.index("    remap = lambda")
    ns: dict = {}
    exec(compile(src[:start] + src[end:], codegen.__file__, "exec"), codegen.__dict__, ns)
    codegen.KernelLayout.__init__ = ns["__init__"]


def _setup_worker():
    import tracejit
    tracejit.config.update("compilation_cache_dir", "off")
    if os.environ.get("FUZZ_PARALLEL"):
        # Every kernel splits over the thread team, however small (the thresholds are tuning
        # constants): the small programs exercise the parallel ranges, granules and row splits.
        from tracejit.backends.cpu import runtime
        runtime.OPENMP_MIN_WORK = runtime.OPENMP_MIN_WORK_MATH = runtime.PARALLEL_MIN_WORK = 1
    if os.environ.get("FUZZ_INJECT"):
        inject_bug(os.environ["FUZZ_INJECT"])
    if os.environ.get("FUZZ_CHECKS"):
        tracejit.config.update("enable_checks", True)


def check_seed(seed, out_dir=None, minimize_budget=20.0, max_stmts=None):
    """Generate, check and (on a mismatch) minimize one seed; returns a JSON-able dict."""
    t0 = time.perf_counter()
    p = pg.generate(seed, max_stmts=max_stmts)
    t_gen = time.perf_counter() - t0
    res = check_program(p)
    rec = {"seed": seed, "t": round(time.perf_counter() - t0, 4), "t_gen": round(t_gen, 4),
           "ops": p.ops(), "numpy_raises": res.numpy_raises, "mismatches": []}
    if res.numpy_quirks:
        rec["numpy_quirks"] = res.numpy_quirks
    if res.mismatches:
        m0 = res.mismatches[0]
        small, n_checks = p, 0
        if minimize_budget:
            small, n_checks = minimize(p, _target(m0), budget_s=minimize_budget)
        small_res = check_program(small)
        if _target(m0) not in _mismatch_sig(small_res):
            small, small_res = p, res
        rec["mismatches"] = [dict(key=m.key(), backend=m.backend, kind=m.kind, detail=m.detail,
                                  output=m.output) for m in res.mismatches]
        rec["min_keys"] = [m.key() for m in small_res.mismatches]
        rec["class"] = classify(rec["min_keys"] or [m["key"] for m in rec["mismatches"]],
                                small.function_source() + small.inputs_source())
        rec["min_stmts"] = len(small.stmts)
        rec["min_checks"] = n_checks
        if out_dir:
            os.makedirs(out_dir, exist_ok=True)
            path = os.path.join(out_dir, f"seed_{seed}.py")
            with open(path, "w") as fh:
                fh.write(reproducer(small, small_res))
            with open(os.path.join(out_dir, f"seed_{seed}_full.py"), "w") as fh:
                fh.write(reproducer(p, res))
            rec["reproducer"] = path
    return rec


def _worker_main(args):
    _setup_worker()
    for seed in range(args.start, args.start + args.count * args.stride, args.stride):
        print(json.dumps({"begin": seed}), flush=True)
        try:
            rec = check_seed(seed, args.out, args.minimize_budget, args.max_stmts)
        except Exception as e:
            rec = {"seed": seed, "t": 0, "error": _exc(e), "tb": traceback.format_exc()[-2000:],
                   "mismatches": [{"key": "fuzzer:error:" + type(e).__name__, "backend": "fuzzer",
                                   "kind": "error", "detail": _exc(e), "output": -1}]}
        print(json.dumps(rec), flush=True)


class _Worker:
    def __init__(self, seeds, args):
        self.seeds = list(seeds)
        self.args = args
        self.proc = None
        self.current = None
        self.last = time.time()
        self.buf = b""

    def start(self):
        if not self.seeds:
            return False
        # Seeds of one worker form an arithmetic progression (start, stride).
        start, stride = self.seeds[0], (self.seeds[1] - self.seeds[0]) if len(self.seeds) > 1 else 1
        cmd = [sys.executable, "-m", "tests.fuzz.program_check", "--worker", "--start", str(start), "--count",
               str(len(self.seeds)), "--stride", str(stride), "--minimize-budget", str(self.args.minimize_budget)]
        if self.args.out:
            cmd += ["--out", self.args.out]
        if self.args.max_stmts:
            cmd += ["--max-stmts", str(self.args.max_stmts)]
        env = dict(os.environ, TRACEJIT_NUM_THREADS=os.environ.get("TRACEJIT_NUM_THREADS", "1"))
        if getattr(self.args, "parallel", 0):
            env.update(FUZZ_PARALLEL="1", TRACEJIT_NUM_THREADS=str(self.args.parallel))
        err = subprocess.DEVNULL
        if self.args.out:
            os.makedirs(self.args.out, exist_ok=True)
            err = open(os.path.join(self.args.out, f"worker_{start}.stderr"), "ab")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env,
                                     cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.last = time.time()
        self.buf = b""
        return True


def run_campaign(args, emit=print):
    seeds = list(range(args.start, args.start + args.count))
    jobs = max(1, min(args.jobs, len(seeds)))
    workers = [_Worker(seeds[j::jobs], args) for j in range(jobs)]
    sel = selectors.DefaultSelector()
    for w in workers:
        if w.start():
            sel.register(w.proc.stdout, selectors.EVENT_READ, w)
    records = []
    t0 = time.time()
    log = open(args.log, "a") if args.log else None

    def done(w, rec):
        records.append(rec)
        if log:
            log.write(json.dumps(rec) + "\n")
            log.flush()
        if rec["seed"] in w.seeds:
            w.seeds = w.seeds[w.seeds.index(rec["seed"]) + 1:]
        w.current = None
        if rec.get("mismatches") and args.verbose:
            emit(f"seed {rec['seed']}: {[m['key'] for m in rec['mismatches']]}")

    def restart(w, why):
        try:
            sel.unregister(w.proc.stdout)
        except Exception:
            pass
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait()
        if w.current is not None:
            detail = f"{why} (worker exit status {w.proc.returncode})"
            done(w, {"seed": w.current, "t": 0, "mismatches": [
                {"key": f"cpu:{why}", "backend": "cpu", "kind": why, "detail": detail, "output": -1}]})
        if w.start():
            sel.register(w.proc.stdout, selectors.EVENT_READ, w)

    while any(w.proc is not None and (w.seeds or w.current is not None) for w in workers):
        for key, _ in sel.select(timeout=1.0):
            w = key.data
            chunk = w.proc.stdout.read()
            if chunk is None:
                continue
            if chunk == b"":
                sel.unregister(w.proc.stdout)
                w.proc.wait()
                if w.current is not None or w.seeds:
                    restart(w, "crash")
                else:
                    w.proc = None
                continue
            w.buf += chunk
            w.last = time.time()
            while b"\n" in w.buf:
                line, w.buf = w.buf.split(b"\n", 1)
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if "begin" in rec:
                    w.current = rec["begin"]
                else:
                    done(w, rec)
        for w in workers:
            if w.proc is not None and w.current is not None and time.time() - w.last > args.timeout:
                restart(w, "timeout")
    if log:
        log.close()
    return records, time.time() - t0


def summarize(records, seconds):
    by_class = collections.defaultdict(list)
    by_bug = collections.defaultdict(list)
    for r in records:
        keys = list(dict.fromkeys(r.get("min_keys") or [m["key"] for m in r.get("mismatches", [])]))
        for k in keys:
            by_class[k].append(r["seed"])
        if keys:
            by_bug[r.get("class") or classify(keys, "")].append(r["seed"])
    n_bad = sum(1 for r in records if r.get("mismatches"))
    quirks = [r["seed"] for r in records if r.get("numpy_quirks")]
    lines = [f"programs: {len(records)}  with mismatches: {n_bad}  "
             f"NumPy-scalar quirks (not mismatches): {len(quirks)} {quirks[:6]}  "
             f"numpy-raises programs: {sum(1 for r in records if r.get('numpy_raises'))}  "
             f"wall: {seconds:.1f}s  throughput: {len(records) / max(seconds, 1e-9):.1f} programs/s",
             "by class (a guess from the minimized program, see BUG_CLASSES):"]
    for k, seeds in sorted(by_bug.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"  {len(seeds):6d}  {k}  seeds {seeds[:6]}")
    lines.append("by mismatch (backend:kind:op:dtype of the minimized program):")
    for k, seeds in sorted(by_class.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"  {len(seeds):6d}  {k}  seeds {seeds[:6]}")
    return "\n".join(lines), by_class


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--stride", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", default="/tmp/fuzz_repro", help="directory for reproducers")
    ap.add_argument("--log", default=None, help="append one JSON line per program")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per program before a worker restarts")
    ap.add_argument("--minimize-budget", type=float, default=20.0, help="seconds to minimize a mismatch (0: off)")
    ap.add_argument("--max-stmts", type=int, default=None)
    ap.add_argument("--seed", type=int, default=None, help="check one seed and print its program")
    ap.add_argument("--parallel", type=int, default=0, metavar="THREADS",
                    help="split every kernel over THREADS threads, however small (parallel ranges)")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker_main(args)
    if args.seed is not None:
        _setup_worker()
        p = pg.generate(args.seed, max_stmts=args.max_stmts)
        print(p.source())
        rec = check_seed(args.seed, args.out, args.minimize_budget, args.max_stmts)
        print(json.dumps(rec, indent=1))
        return 1 if rec.get("mismatches") else 0
    records, seconds = run_campaign(args)
    text, _ = summarize(records, seconds)
    print(text)
    if args.out:
        print(f"reproducers: {args.out}/seed_<S>.py (minimized), seed_<S>_full.py")
    return 1 if any(r.get("mismatches") for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
