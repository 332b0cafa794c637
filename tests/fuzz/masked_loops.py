"""Fuzzer for loops whose slices depend on the loop index (tracejit/autograph/masked.py).

Each seed gives a NumPy function with one ``for i in range(...)`` loop of more than 16
iterations (so autograph compiles it) whose body reads, reduces, contracts and writes in place
slices such as ``A[i, :i]``, ``A[i + 1:, i]``, ``v[2:n - i]``: bounds drawn from ints, ``i``,
``i +- c``, ``n - i``, ``-c``, ``i // 2`` (not affine: unrolled), some leaving the axis in some
iterations (Python clamps or wraps them: unrolled). A third of the programs nest an inner loop
``for j in range(i + 1, n)`` (or ``range(i)``, ``range(0, n - i)``) whose slices use ``i`` and
``j``; its trip count is traced, so it is compiled or raises ``AutographError`` (counted as a
limitation, not a finding, when NumPy runs the program). Three runs must agree:

* the function as NumPy runs it (the reference; a NumPy error there must be an error under jit),
* ``tracejit.jit`` with masked windows (``runtime.MASKED_SLICES = True``),
* ``tracejit.jit`` with the loop unrolled (``MASKED_SLICES = False``; ``--no-unrolled`` skips it).

Inputs hold NaN, inf and -0.0 now and then, so values outside a window that leaked into a
result would show. Float results are compared with a relative tolerance of 1e-9 (sums run in
another order), NaN positions exactly; integer results exactly.

Command line (a campaign)::

    python -m tests.fuzz.masked_loops --start 0 --count 2000

prints each finding with its program, and a summary (how many programs ran as masked loops).
"""
from __future__ import annotations

import argparse
import linecache
import sys

import numpy as np

_counter = [0]


class _Gen:
    def __init__(self, rng):
        self.rng = rng
        self.n = int(rng.integers(17, 27))
        self.m = self.n + int(rng.choice([0, 0, 3]))
        self.dtype = str(rng.choice(["float64", "float64", "float32", "int64"]))
        self.reverse = rng.random() < 0.2
        self.k = "i"              # the index the statements use (j inside the inner loop)
        self.vars = ["i"]         # the indices bounds may use

    def pick(self, options, p=None):
        return options[int(self.rng.choice(len(options), p=p))]

    def bound(self):
        """A slice bound: mostly inside the axis in every iteration (converted); now and then one
        Python clamps or wraps in some iteration, or one that is not affine (unrolled)."""
        v = self.pick(self.vars)
        if self.rng.random() < 0.12:
            c = int(self.rng.integers(2, 5))
            return self.pick([f"{v} + {c}", f"{v} - {c - 1}", f"{v} // 2", f"2 * {v} - n", f"-{c + 30}"])
        return self.pick(["None", "None", v, v, f"{v} + 1", "0", "1", "2", f"n - {v}", "-1", "-2"])

    def slice(self):
        return f"{self.bound()}:{self.bound()}".replace("None", "")

    def vec(self, axis, sl):
        """A 1-D read over an axis of length n ('n') or m ('m') with slice ``sl``."""
        if axis == "n":
            src = self.pick([f"A[{sl}, {self.k}]", f"v[{sl}]", f"x[{sl}]", f"A[{sl}, 0]"])
        else:
            src = self.pick([f"A[{self.k}, {sl}]", f"w[{sl}]", f"y[{sl}]", f"A[-1, {sl}]"])
        r = self.rng.random()
        if r < 0.45:
            return src
        if self.dtype == "int64":
            return self.pick([f"({src} * 2 - 1)", f"np.abs({src})", f"({src} % 5)", f"-{src}"])
        return self.pick([f"({src} * 0.5 + 1.0)", f"np.abs({src})", f"np.sqrt(np.abs({src}))",
                          f"-{src}", f"np.exp(-np.abs({src}))", f"({src} / (1.0 + np.abs({src})))"])

    def axis_slice(self):
        axis = self.pick(["n", "m"])
        return axis, self.slice()

    def pair(self):
        axis, sl = self.axis_slice()
        sl2 = sl if self.rng.random() < 0.8 else self.slice()
        return axis, sl, self.vec(axis, sl), self.vec(axis, sl2)

    def stmt(self):
        kind = self.rng.integers(0, 11)
        floaty = self.dtype != "int64"
        if kind == 0:
            axis, sl = self.axis_slice()
            red = self.pick(["sum", "sum", "max", "min", "prod"] if floaty else ["sum", "max", "min"])
            e = self.vec(axis, sl)
            if red == "prod":
                e = f"np.tanh({e}) + 1.0"
            return [f"s = s + np.{red}({e})"]
        if kind == 1:
            axis, sl, a, b = self.pair()
            return [f"s = s + {a} @ {b}"]
        if kind == 2:
            axis, sl, a, b = self.pair()
            op = self.pick(["+", "-", "*"])
            tgt = "x" if axis == "n" else "y"
            return [f"{tgt}[{sl}] = {a} {op} {b}"]
        if kind == 3:
            axis, sl = self.axis_slice()
            tgt = "x" if axis == "n" else "y"
            op = self.pick(["+=", "-=", "*="] + (["/="] if floaty else []))
            rhs = self.pick(["2", f"A[{self.k}, {self.k}]", self.vec(axis, sl)])
            if op == "/=":
                rhs = f"(np.abs({rhs}) + 1.0)"
            return [f"{tgt}[{sl}] {op} {rhs}"]
        if kind == 4:
            _, sr = ("n", self.slice())
            op = "/=" if floaty else "-="
            rhs = f"(A[{self.k}, {self.k}] + 3.0)" if floaty else f"A[{self.k}, {self.k}]"
            return [f"A[{sr}, {self.k}] {op} {rhs}"]
        if kind == 5:
            sr, sc = self.slice(), self.slice()
            scale = " * 0.01" if floaty else ""
            return [f"A[{sr}, {sc}] -= np.outer(A[{sr}, {self.k}], A[{self.k}, {sc}]){scale}"]
        if kind == 6:
            sr, sc = self.slice(), self.slice()
            scale = " * 0.1" if floaty else ""
            sc2 = sc if self.rng.random() < 0.85 else self.slice()
            return [f"x[{sr}] += A[{sr}, {sc}] @ w[{sc2}]{scale}"]
        if kind == 7:
            axis, sl = self.axis_slice()
            t = self.vec(axis, sl)
            return [f"t = {'A[' + sl + ', ' + self.k + ']' if axis == 'n' else 'A[' + self.k + ', ' + sl + ']'}",
                    f"t {'*= 2' if not floaty else '*= 0.5'}",
                    f"s = s + t.sum()"]
        if kind == 8:
            axis, sl, a, b = self.pair()
            tgt = "x" if axis == "n" else "y"
            return [f"{tgt}[{sl}] = np.where({a} > 0, {a}, {b})"]
        if kind == 9:
            axis, sl = self.axis_slice()
            tgt = "x" if axis == "n" else "y"
            return [f"{tgt}[{sl}] = {self.pick(['0', '1', 'i', 's'])}"]
        sr, sc = self.slice(), self.slice()
        return [f"s = s + (A[{sr}, {sc}] * w[{sc}]).sum()" if self.rng.random() < 0.5
                else f"s = s + A[{sr}, {sc}].sum(axis={self.pick(['0', '1'])}).sum()"]


def generate(seed: int):
    """(source, inputs) of the program of ``seed``; the function is named ``f``."""
    rng = np.random.default_rng([31, seed])
    g = _Gen(rng)
    n, m, dt = g.n, g.m, g.dtype
    loop = (f"range(n - 1, {int(rng.integers(-1, 2))}, -1)" if g.reverse
            else f"range({int(rng.integers(0, 3))}, n - {int(rng.integers(0, 2))})")
    body = [line for _ in range(int(rng.integers(1, 5))) for line in g.stmt()]
    if rng.random() < 0.3:
        # An inner loop whose bounds depend on i (a traced trip count: compiled, never unrolled).
        g.k, g.vars = "j", ["i", "j"]
        inner = g.pick(["range(i + 1, n)", "range(i)", "range(0, n - i)"])
        body += [f"for j in {inner}:"] + ["    " + line for _ in range(int(rng.integers(1, 3)))
                                          for line in g.stmt()]
    src = ["def f(A, v, w):",
           "    n = A.shape[0]",
           "    x = np.zeros_like(v)",
           "    y = np.zeros_like(w)",
           "    s = 0" if dt == "int64" else "    s = 0.0",
           f"    for i in {loop}:"]
    src[4] = "    " + src[4].strip()
    src += ["        " + line for line in body]
    src += ["    return s, x, y, A"]
    if dt == "int64":
        vals = lambda shape: rng.integers(-5, 6, size=shape)
    else:
        vals = lambda shape: rng.standard_normal(shape)
    A, v, w = vals((n, m)), vals(n), vals(m)
    if dt == "int64":
        inputs = [A.astype(dt), v.astype(dt), w.astype(dt)]
    else:
        A = A + (n if rng.random() < 0.5 else 0) * np.eye(n, m)
        inputs = [A.astype(dt), v.astype(dt), w.astype(dt)]
        if rng.random() < 0.3:
            for arr in inputs:
                flat = arr.reshape(-1)
                k = int(rng.integers(0, flat.size))
                flat[k] = rng.choice([np.nan, np.inf, -np.inf, -0.0])
    return "\n".join(src) + "\n", inputs


def _load(src):
    _counter[0] += 1
    filename = f"<masked-fuzz-{_counter[0]}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    env = {"np": np}
    exec(compile(src, filename, "exec"), env)
    return env["f"]


def _run(fn, inputs):
    args = [a.copy() for a in inputs]
    try:
        with np.errstate(all="ignore"):
            out = fn(*args)
    except Exception as e:          # (under jit, any failure: a RecursionError in the compiler was one)
        return "error", f"{type(e).__name__}: {e}"
    return "ok", [np.asarray(o) for o in out]


def _same(got, want, dtype):
    for g, w in zip(got, want):
        if g.shape != w.shape:
            return False
        if np.issubdtype(w.dtype, np.integer):
            if not np.array_equal(g, w):
                return False
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        if not np.array_equal(np.isnan(g64), np.isnan(w64)):
            return False
        ok = ~np.isnan(w64)
        inf = np.isinf(w64) & ok
        if not np.array_equal(g64[inf], w64[inf]):
            return False
        fin = ok & ~inf
        rtol = 1e-9 if dtype == "float64" else 2e-4
        scale = max(1.0, float(np.max(np.abs(w64[fin]), initial=0.0)))
        if np.any(np.abs(g64[fin] - w64[fin]) > rtol * scale + rtol * np.abs(w64[fin])):
            return False
    return True


def check(seed: int, unrolled: bool = True):
    """(masked_loop, finding or None) for one seed; masked_loop: the jit ran a compiled loop."""
    import tracejit
    from tracejit.autograph import runtime

    src, inputs = generate(seed)
    fn = _load(src)
    dtype = str(inputs[0].dtype)
    want = _run(fn, inputs)
    runs = [("masked", True)] + ([("unrolled", False)] if unrolled else [])
    compiled = False
    for name, flag in runs:
        saved = runtime.MASKED_SLICES
        runtime.MASKED_SLICES = flag
        try:
            got = _run(tracejit.jit(fn), inputs)
            if flag and got[0] == "ok":
                text = str(tracejit.make_jaxpr(fn)(*[a.copy() for a in inputs]))
                compiled = any(p in text for p in ("scan[", "while[", "fori_loop["))
        finally:
            runtime.MASKED_SLICES = saved
        if got[0] == "error" and want[0] == "ok" and got[1].startswith("AutographError"):
            return compiled, None     # a traced-bound inner loop autograph cannot compile: a clear error
        if got[0] != want[0]:
            return compiled, f"seed {seed} ({name}): NumPy {want[0]} {want[1] if want[0] == 'error' else ''}, " \
                             f"jit {got[0]} {got[1] if got[0] == 'error' else ''}\n{src}"
        if want[0] == "ok" and not _same(got[1], want[1], dtype):
            return compiled, f"seed {seed} ({name}): values differ\n{src}\njit: {got[1]}\nNumPy: {want[1]}"
    return compiled, None


def campaign(start, count, unrolled=True, verbose=True):
    """(programs run as masked loops, findings) over seeds ``start .. start + count - 1``."""
    findings, masked = [], 0
    for seed in range(start, start + count):
        compiled, finding = check(seed, unrolled)
        masked += compiled
        if finding:
            findings.append(finding)
            if verbose:
                print(finding, flush=True)
    return masked, findings


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--no-unrolled", action="store_true", help="skip the unrolled run")
    ap.add_argument("--seed", type=int, help="print and check one seed")
    a = ap.parse_args(argv)
    if a.seed is not None:
        print(generate(a.seed)[0])
        print(check(a.seed, not a.no_unrolled))
        return 0
    masked, findings = campaign(a.start, a.count, not a.no_unrolled)
    print(f"{a.count} programs, {masked} ran as masked loops, {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
