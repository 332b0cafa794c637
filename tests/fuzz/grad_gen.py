"""Random differentiable programs for the gradient fuzzer (``grad_check``).

:func:`generate(seed)` writes a seeded, reproducible program as Python source::

    def f(x0, x1):
        v0 = jnp.sin(x1) * x0
        v1 = jnp.max(v0, axis=(0,), keepdims=True)
        ...
        return v5

over float64 inputs of random shapes (scalars and size-1 axes included). Each line
is drawn from a family of smooth building blocks: elementwise functions (the
transcendental ones included, their arguments kept inside their domains),
broadcasting binary operations, reductions over every axis / keepdims
combination, reshape / transpose / slices / concatenate, dot / matmul / einsum,
``where`` (on constant masks and, rarely, on the data), cumulative sums and
products, logsumexp, softmax, indexing (take, sort, ``.at[]`` updates), linear
algebra on well-conditioned matrices (solve, inv, det, slogdet, cholesky,
eigvalsh, qr, svd, pinv, norm), and control flow around small sub-graphs
(``cond``, ``fori_loop`` and ``scan`` with static trip counts, ``while_loop``
with a fixed trip count, which makes the program forward-mode only, as in JAX).

Lines are generated one at a time and evaluated eagerly on the inputs as they
are drawn (eager ``tracejit.numpy`` is NumPy), so every line is known to run,
shapes are exact, and values stay finite and moderate. Inputs avoid
non-differentiable points by construction (kinks such as ``max`` ties or an
``abs`` at 0 are measure-zero for random inputs); the checker also detects a
kink near the input from finite differences at two steps and draws new inputs.

A program is a :class:`GradProgram`; ``source()`` is standalone Python.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

import numpy as np

HEADER = '''import numpy as np
import tracejit
import tracejit.numpy as jnp
from tracejit import lax


def softmax(x, axis):
    e = jnp.exp(x - lax.stop_gradient(jnp.max(x, axis=axis, keepdims=True)))
    return e / jnp.sum(e, axis=axis, keepdims=True)
'''


@dataclass
class GradProgram:
    seed: int
    lines: list          # (target var, expression, deps)
    consts: dict         # name -> np.ndarray (rounded, printed exactly)
    inputs: list         # np.ndarray inputs
    output: str          # returned variable
    tags: set = field(default_factory=set)

    @property
    def n_inputs(self) -> int:
        return len(self.inputs)

    @property
    def forward_only(self) -> bool:
        """``while_loop`` (JAX: no reverse mode) in a live line."""
        return any("lax.while_loop" in expr for _, expr, _ in self.live_lines())

    def live_lines(self, output=None):
        """The lines the output depends on (dead ones dropped)."""
        output = output or self.output
        needed, keep = {output}, []
        for target, expr, deps in reversed(self.lines):
            if target in needed:
                keep.append((target, expr, deps))
                needed |= set(deps)
        return keep[::-1]

    def function_source(self, output=None, lines=None, w_out=None) -> str:
        lines = self.live_lines(output) if lines is None else lines
        output = output or self.output
        used = set(itertools.chain.from_iterable(d for _, _, d in lines)) | {output}
        consts = [k for k in self.consts if k in used or k == "W_OUT"]
        out = [HEADER]
        for k in consts:
            value = w_out if (k == "W_OUT" and w_out is not None) else self.consts[k]
            out.append(f"{k} = {_array_literal(value)}")
        args = ", ".join(f"x{i}" for i in range(self.n_inputs))
        out.append(f"\n\ndef f({args}):")
        for target, expr, _ in lines:
            out.append(f"    {target} = {expr}")
        out.append(f"    return {output}\n")
        return "\n".join(out)

    def inputs_source(self, inputs=None) -> str:
        xs = self.inputs if inputs is None else inputs
        return "X = [" + ", ".join(_array_literal(x) for x in xs) + "]\n"


def _array_literal(a) -> str:
    a = np.asarray(a)
    if a.dtype == bool:
        return f"np.array({a.tolist()!r}, dtype=bool)"
    if a.ndim == 0:
        return f"np.float64({float(a)!r})"
    return f"np.array({a.tolist()!r})"


# --------------------------------------------------------------------------- building blocks

UNARY = [
    "jnp.sin({a})", "jnp.cos({a})", "jnp.tanh({a})", "jnp.exp(jnp.tanh({a}))", "jnp.log(2.0 + jnp.sin({a}))",
    "jnp.sqrt(1.5 + jnp.cos({a}))", "jnp.log1p({a} * {a})", "jnp.arctan({a})", "jnp.sinh(jnp.tanh({a}))",
    "jnp.expm1(0.5 * jnp.tanh({a}))", "1.0 / (2.0 + jnp.tanh({a}))", "{a} ** 2", "jnp.square({a})", "-{a}",
    "jnp.arcsinh({a})", "jnp.cbrt(2.0 + jnp.tanh({a}))", "jnp.power(1.5 + jnp.tanh({a}), 1.3)",
    "jnp.exp2(jnp.tanh({a}))", "jnp.log2(2.0 + jnp.cos({a}))", "jnp.log10(2.0 + jnp.cos({a}))",
    "jnp.cosh(jnp.tanh({a}))", "jnp.tan(0.5 * jnp.tanh({a}))", "jnp.arcsin(0.5 * jnp.tanh({a}))",
    "jnp.arccos(0.5 * jnp.tanh({a}))", "jnp.arctanh(0.5 * jnp.tanh({a}))", "lax.logistic({a})",
    "jnp.reciprocal(2.0 + jnp.sin({a}))", "jnp.arctan2({a}, 1.5)", "jnp.hypot({a}, 0.7)",
    "jnp.logaddexp({a}, 0.3)", "jnp.logaddexp2(0.3, {a})", "jnp.abs({a} - 0.05)", "jnp.maximum({a}, 0.1)",
    "jnp.minimum(0.2, {a})", "jnp.clip({a}, -0.7, 0.8)", "jnp.where({a} > 0.15, {a}, 0.3 * {a})",
    "{a} * 1.7 + 0.2", "jnp.sqrt({a} * {a} + 0.5)", "jnp.fmax({a}, -0.2)", "lax.rsqrt(1.2 + jnp.sin({a}))",
]
BINARY = [
    "{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / (2.0 + jnp.tanh({b}))", "jnp.maximum({a}, {b})",
    "jnp.minimum({a}, {b})", "jnp.logaddexp({a}, {b})", "jnp.arctan2({a}, 2.0 + jnp.cos({b}))",
    "jnp.hypot({a}, {b})", "jnp.power(1.5 + jnp.tanh({a}), jnp.tanh({b}))", "jnp.where({a} > {b}, {a}, 0.5 * {b})",
    "jnp.fmin({a}, {b})", "{a} * jnp.sin({b})", "jnp.tanh({a} * {b})",
]
REDUCERS = ["jnp.sum", "jnp.mean", "jnp.max", "jnp.min", "jnp.prod", "jnp.logsumexp", "jnp.var", "jnp.amax"]


class _Gen:
    def __init__(self, seed: int, max_lines: int):
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.max_lines = max_lines
        self.lines: list = []
        self.consts: dict = {}
        self.env: dict = {}
        self.pool: list = []          # variable names usable as operands
        self.tags: set = set()
        import tracejit.numpy as jnp
        from tracejit import lax
        ns: dict = {"np": np, "jnp": jnp, "lax": lax}
        exec(HEADER.split("\n\n\n", 1)[1], ns)
        self.env.update(ns)

    # ------------------------------------------------------------------ helpers
    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def shape(self, name):
        return np.shape(self.env[name])

    def const(self, shape, kind="normal"):
        name = f"C{len(self.consts)}"
        if kind == "mask":
            value = self.rng.random(shape) < 0.5
        elif kind[0] == "index":
            value = self.rng.integers(0, kind[1], size=shape)
        else:
            value = np.round(self.rng.normal(size=shape), 3)
        self.consts[name] = np.asarray(value)
        self.env[name] = self.consts[name]
        return name

    def try_line(self, expr, deps, tag):
        target = f"v{len(self.lines)}"
        try:
            with np.errstate(all="raise"):
                value = eval(expr, self.env)
        except Exception:
            return None
        if isinstance(value, tuple):
            return None
        value = np.asarray(value)
        if value.dtype != np.float64 or not np.all(np.isfinite(value)) or (value.size and np.max(np.abs(value)) > 1e3):
            return None
        if value.size == 0:
            return None
        self.env[target] = value
        names = set(self.pool) | set(self.consts)
        deps = sorted(set(re.findall(r"\b[xvC]\d+\b", expr)) & names)
        self.lines.append((target, expr, deps))
        self.pool.append(target)
        self.tags.add(tag)
        return target

    def operand(self):
        # Recent values are more likely (longer chains).
        k = len(self.pool)
        weights = np.arange(1, k + 1, dtype=float) ** 3
        return self.pool[int(self.rng.choice(k, p=weights / weights.sum()))]

    def partner(self, a, into=False):
        """A pool value broadcast-compatible with ``a`` (whose broadcast is ``a``'s shape if ``into``)."""
        sa = self.shape(a)
        cands = []
        for b in self.pool:
            try:
                s = np.broadcast_shapes(sa, self.shape(b))
            except ValueError:
                continue
            if not into or s == sa:
                cands.append(b)
        return self.choice(cands) if cands else None

    def axes(self, ndim):
        """None, an int (maybe negative), or a tuple of axes."""
        r = self.rng.random()
        if ndim == 0 or r < 0.2:
            return None
        if r < 0.6:
            ax = int(self.rng.integers(ndim))
            return ax - ndim if self.rng.random() < 0.3 else ax
        k = int(self.rng.integers(0, ndim + 1))
        return tuple(sorted(int(a) for a in self.rng.choice(ndim, size=k, replace=False)))

    # ------------------------------------------------------------------ op families
    def unary(self):
        a = self.operand()
        return self.try_line(self.choice(UNARY).format(a=a), [a], "unary")

    def binary(self):
        a = self.operand()
        b = self.partner(a)
        if b is None or (b == a and self.rng.random() < 0.7):
            c = self.const(self.broadcastable_shape(self.shape(a)))
            b = c
        tmpl = self.choice(BINARY)
        if self.rng.random() < 0.5:
            a, b = b, a
        return self.try_line(tmpl.format(a=a, b=b), [a, b], "binary")

    def broadcastable_shape(self, shape):
        """A shape that broadcasts against ``shape`` (size-1 axes, fewer leading axes)."""
        dims = [1 if self.rng.random() < 0.35 else d for d in shape]
        drop = int(self.rng.integers(0, len(dims) + 1)) if self.rng.random() < 0.3 else 0
        return tuple(dims[drop:])

    def masked_where(self):
        a = self.operand()
        b = self.partner(a)
        if b is None:
            return None
        mask = self.const(self.broadcastable_shape(np.broadcast_shapes(self.shape(a), self.shape(b))), "mask")
        return self.try_line(f"jnp.where({mask}, {a}, {b})", [a, b, mask], "where")

    def reduction(self):
        a = self.operand()
        nd = len(self.shape(a))
        red = self.choice(REDUCERS)
        ax = self.axes(nd)
        keep = bool(self.rng.random() < 0.5)
        if red == "jnp.prod":
            expr = f"jnp.prod(1.0 + 0.3 * jnp.tanh({a}), axis={ax!r}, keepdims={keep})"
        else:
            expr = f"{red}({a}, axis={ax!r}, keepdims={keep})"
        return self.try_line(expr, [a], "reduce")

    def structural(self):
        a = self.operand()
        s = self.shape(a)
        nd = len(s)
        opts = []
        opts.append(f"jnp.reshape({a}, (-1,))")
        opts.append(f"jnp.reshape({a}, {tuple(self._regroup(s))!r})")
        opts.append(f"jnp.expand_dims({a}, {int(self.rng.integers(0, nd + 1))})")
        if nd >= 2:
            perm = tuple(int(p) for p in self.rng.permutation(nd))
            opts += [f"jnp.transpose({a}, {perm!r})", f"{a}.T", f"jnp.swapaxes({a}, 0, -1)",
                     f"jnp.moveaxis({a}, 0, -1)"]
        if any(d == 1 for d in s):
            opts.append(f"jnp.squeeze({a})")
        if nd >= 1:
            ax = int(self.rng.integers(nd))
            idx = [":"] * nd
            n = s[ax]
            idx[ax] = self.choice(["1:", "::-1", "::2", ":-1", "None:", f"{max(n - 2, 0)}:"] if n > 1 else ["::-1", ":"])
            opts.append(f"{a}[{', '.join(idx)}]")
            opts.append(f"{a}[..., None]")
            opts.append(f"jnp.flip({a}, axis={ax})")
            opts.append(f"jnp.roll({a}, 1, axis={ax})")
            b = self.partner(a)
            if b is not None and self.shape(b) == s:
                opts.append(f"jnp.concatenate([{a}, {b}], axis={ax - nd if self.rng.random() < 0.3 else ax})")
                opts.append(f"jnp.stack([{a}, {b}], axis={int(self.rng.integers(0, nd + 1))})")
            else:
                opts.append(f"jnp.concatenate([{a}, jnp.sin({a})], axis={ax})")
        target = tuple(self._grow(s))
        opts.append(f"jnp.broadcast_to({a}, {target!r})")
        return self.try_line(self.choice(opts), [], "structural")

    def _regroup(self, s):
        size = int(np.prod(s)) if s else 1
        dims = []
        rest = size
        for p in (2, 3):
            while rest % p == 0 and self.rng.random() < 0.6:
                dims.append(p)
                rest //= p
        if rest > 1:
            dims.append(rest)
        self.rng.shuffle(dims)
        if self.rng.random() < 0.5:
            dims.insert(int(self.rng.integers(0, len(dims) + 1)), 1)
        return dims

    def _grow(self, s):
        s = list(s)
        s = [self.choice([2, 3]) if d == 1 and self.rng.random() < 0.6 else d for d in s]
        if self.rng.random() < 0.5 or not s:
            s.insert(0, self.choice([1, 2]))
        return s

    def contraction(self):
        a = self.operand()
        s = self.shape(a)
        nd = len(s)
        opts = []
        if nd >= 1:
            k = s[-1]
            p = self.choice([1, 2, 3])
            w = self.const((k, p))
            opts.append((f"{a} @ {w}", [a, w]))
            opts.append((f"jnp.matmul({a}, {self.const((k,))})", [a, f"C{len(self.consts) - 1}"]))
            opts.append((f"jnp.einsum('...i,...i->...', {a}, jnp.cos({a}))", [a]))
        if nd >= 2:
            opts.append((f"jnp.matmul({a}, jnp.swapaxes({a}, -1, -2))", [a]))
            opts.append((f"jnp.einsum('...ij,...kj->...ik', {a}, jnp.tanh({a}))", [a]))
        if nd == 2:
            opts.append((f"jnp.dot({a}.T, {a})", [a]))
            opts.append((f"jnp.tensordot({a}, {a}, axes=([0], [0]))", [a]))
            b = self.partner(a, into=True)
            if b is not None and self.shape(b) == s:
                opts.append((f"jnp.einsum('ij,ik->jk', {a}, {b})", [a, b]))
        if nd == 1:
            b = self.partner(a, into=True)
            if b is not None and self.shape(b) == s:
                opts.append((f"jnp.dot({a}, {b})", [a, b]))
            opts.append((f"jnp.outer({a}, jnp.sin({a}))", [a]))
        if not opts:
            return None
        expr, deps = self.choice(opts)
        return self.try_line(expr, [d for d in deps if d in expr], "contraction")

    def cumulative(self):
        a = self.operand()
        nd = len(self.shape(a))
        if nd == 0:
            return None
        ax = int(self.rng.integers(nd))
        opts = [f"jnp.cumsum({a}, axis={ax})", f"jnp.cumprod(1.0 + 0.3 * jnp.tanh({a}), axis={ax})",
                f"lax.cumsum({a}, axis={ax}, reverse=True)", f"lax.cummax({a}, axis={ax})",
                f"softmax({a}, axis={ax})", f"jnp.logsumexp({a}, axis={ax}, keepdims=True)",
                f"jnp.diff({a}, axis={ax})"]
        return self.try_line(self.choice(opts), [a], "cumulative")

    def control_flow(self):
        a = self.operand()
        s = self.shape(a)
        kind = self.choice(["cond", "cond_data", "fori", "scan", "while", "fori_closure"])
        if kind == "cond":
            pred = bool(self.rng.random() < 0.5)
            expr = f"lax.cond({pred}, lambda u: jnp.sin(u) * 1.5, lambda u: jnp.cos(u) + u, {a})"
            deps = [a]
        elif kind == "cond_data":
            thr = float(np.round(np.sum(self.env[a]) + self.choice([-0.5, 0.5]), 2))
            expr = (f"lax.cond(jnp.sum({a}) > {thr}, lambda u: jnp.tanh(u) * u, "
                    f"lambda u: jnp.exp(0.3 * jnp.sin(u)), {a})")
            deps = [a]
        elif kind in ("fori", "fori_closure"):
            n = int(self.rng.integers(1, 4))
            b = self.partner(a, into=True) if kind == "fori_closure" else None
            extra = f" * {b}" if b is not None else ""
            expr = f"lax.fori_loop(0, {n}, lambda i, c: 0.8 * c + 0.2 * jnp.sin(c + i){extra}, {a})"
            deps = [a, b]
        elif kind == "scan":
            if not s:
                return None
            rev = bool(self.rng.random() < 0.3)
            expr = (f"lax.scan(lambda c, xi: (0.7 * c + jnp.tanh(xi), c * xi), 0.1 * jnp.sum({a}, axis=0), "
                    f"{a}, reverse={rev})[{self.choice([0, 1])}]")
            deps = [a]
        else:
            n = int(self.rng.integers(1, 4))
            expr = (f"lax.while_loop(lambda s: s[0] < {n}, lambda s: (s[0] + 1, 0.9 * s[1] + 0.1 * jnp.cos(s[1])), "
                    f"(0, {a}))[1]")
            deps = [a]
            return self.try_line(expr, deps, "while")
        return self.try_line(expr, deps, kind.split("_")[0])

    def indexing(self):
        a = self.operand()
        s = self.shape(a)
        nd = len(s)
        if nd == 0:
            return None
        ax = int(self.rng.integers(nd))
        n = s[ax]
        idx = self.const((int(self.rng.integers(1, 4)),), ("index", n))
        i = int(self.rng.integers(n))
        opts = [f"jnp.take({a}, {idx}, axis={ax})", f"jnp.sort({a}, axis={ax})",
                f"{a}.at[{i}].set(jnp.sin({a}[{i}]))", f"{a}.at[{idx}].add(0.5 * {a}[{idx}])",
                f"{a}.at[{idx}].multiply(1.5)", f"{a}[{idx}]",
                f"jnp.take_along_axis({a}, jnp.argsort({a}, axis={ax}), axis={ax})",
                f"lax.dynamic_slice_in_dim({a}, {i}, {n - i}, axis={ax})"]
        return self.try_line(self.choice(opts), [], "indexing")

    def linalg(self):
        a = self.operand()
        s = self.shape(a)
        if len(s) < 2:
            return None
        m, n = s[-2:]
        # A dominant diagonal keeps the matrices far from rank deficiency, where QR, pinv and the
        # singular values are not differentiable (JAX's rules give inf/nan there too); its entries
        # differ, so singular values stay distinct even when the operand is identically zero
        # (x - mean(x, axis=()) is; the second derivatives of repeated ones are inf: seed 7000015).
        full = f"({a} + {3.0 * max(m, n)!r} * jnp.eye({m}, {n}) * (1.0 + 0.25 * jnp.arange({n})))"
        opts = [f"jnp.linalg.svd({full}, compute_uv=False)", f"jnp.linalg.norm({full}, axis=(-2, -1))",
                f"jnp.linalg.pinv({full})"]
        if m >= n:
            opts.append(f"jnp.linalg.qr({full})[{self.choice([0, 1])}]")
        if m == n:
            eye = f"{3.0 * n!r} * jnp.eye({n})"
            sym = f"({a} @ jnp.swapaxes({a}, -1, -2) + jnp.eye({n}))"
            opts += [f"jnp.linalg.solve({a} + {eye}, jnp.sin({a}))", f"jnp.linalg.inv({a} + {eye})",
                     f"jnp.linalg.det({a} + {eye})", f"jnp.linalg.slogdet({a} + {eye})[1]",
                     f"jnp.linalg.cholesky({sym})", f"jnp.linalg.eigvalsh({a} + jnp.swapaxes({a}, -1, -2) + jnp.diag(3.0 * jnp.arange({n})))",
                     f"jnp.linalg.matrix_power({a}, 2)"]
        return self.try_line(self.choice(opts), [], "linalg")

    FAMILIES = [("unary", 5), ("binary", 5), ("reduction", 3), ("structural", 3), ("contraction", 2),
                ("cumulative", 2), ("masked_where", 1), ("control_flow", 1.5), ("indexing", 1.5), ("linalg", 1)]

    def run(self, n_inputs, base_shape):
        inputs = []
        for i in range(n_inputs):
            shape = self.broadcastable_shape(base_shape) if i else tuple(base_shape)
            x = self.rng.uniform(-1.5, 1.5, size=shape)
            inputs.append(np.asarray(x, np.float64))
            self.env[f"x{i}"] = inputs[-1]
            self.pool.append(f"x{i}")
        names = [f for f, _ in self.FAMILIES]
        weights = np.array([w for _, w in self.FAMILIES], float)
        attempts = 0
        while len(self.lines) < self.max_lines and attempts < 20 * self.max_lines:
            attempts += 1
            fam = names[int(self.rng.choice(len(names), p=weights / weights.sum()))]
            getattr(self, fam)()
        # The output depends on every input when it can: fold unused inputs in.
        out = self.pool[-1] if self.lines else None
        if out is None:
            out = self.try_line("jnp.sin(x0)", ["x0"], "unary")
        for i in range(n_inputs):
            live = {d for _, _, deps in GradProgram(0, self.lines, {}, [], out).live_lines() for d in deps}
            if f"x{i}" not in live and f"x{i}" != out:
                xi = f"x{i}"
                so, si = self.shape(out), self.shape(xi)
                try:
                    np.broadcast_shapes(so, si)
                    expr = f"{out} + 0.5 * jnp.sin({xi})"
                except ValueError:
                    expr = f"{out} + 0.5 * jnp.sum(jnp.sin({xi}))"
                new = self.try_line(expr, [out, xi], "fold")
                out = new or out
        w = self.const(self.shape(out))
        self.consts["W_OUT"] = self.consts.pop(w)
        self.env["W_OUT"] = self.consts["W_OUT"]
        return GradProgram(self.seed, self.lines, self.consts, inputs, out, self.tags)


def generate(seed: int, max_lines: int | None = None) -> GradProgram:
    """The program of ``seed`` (deterministic)."""
    rng = np.random.default_rng([seed, 12])
    if max_lines is None:
        max_lines = int(rng.integers(2, 11))
    rank = int(rng.choice([0, 1, 1, 2, 2, 3]))
    base = tuple(int(rng.choice([1, 2, 3])) for _ in range(rank))
    n_inputs = int(rng.choice([1, 1, 2, 2, 3]))
    gen = _Gen(seed, max_lines)
    return gen.run(n_inputs, base)


def new_inputs(program: GradProgram, attempt: int):
    """Fresh inputs of the same shapes (used when the first ones sit near a kink)."""
    rng = np.random.default_rng([program.seed, 99, attempt])
    return [rng.uniform(-1.5, 1.5, size=np.shape(x)).astype(np.float64) for x in program.inputs]
