"""Loops: per-step overhead, and ten loop-heavy JAX programs, tracejit vs JAX vs NumPy.

Part 1 (per-step overhead): ``x = x * 0.99 + 0.01`` on an f32[16] carry for
1000 ``fori_loop`` steps, so nearly all time is per-step overhead (dispatch,
interpretation, buffer handling) rather than arithmetic.

Part 2 (programs, issue 13): ten programs written the way JAX programs are
written, each a function of ``(jnp, lax, ...)`` so the identical source runs
under ``tracejit.jit`` and ``jax.jit``, plus a NumPy eager equivalent written
the way a NumPy user would (vectorized where the algorithm allows it):

 1. LU factorization, no pivoting, fori_loop of masked rank-1 updates (n=128)
 2. Cholesky, fori_loop of masked dot products, column by column (n=128)
 3. forward triangular solve, ``x.at[i].set((b[i] - L[i] @ x) / L[i, i])`` (n=512)
 4. Gauss-Seidel sweeps, nested fori_loop over rows and columns (n=64, 4 sweeps)
 5. Nussinov RNA folding DP, nested fori_loop, inner trip count = n - outer index (n=64)
 6. CRC-16/CCITT over 10k bytes, nested scan (bytes, then 8 bits)
 7. CSR sparse mat-vec (gather + scatter-add), power iteration in a fori_loop
    (10k rows, nnz ~100k, 10 iterations). tracejit has no ``jax.ops.segment_sum``,
    so both run ``jnp.zeros(n).at[rows].add(vals * x[cols])`` (what segment_sum lowers to)
 8. n-body, pairwise broadcasts, 10 steps in a fori_loop (256 bodies)
 9. Newton's method in a while_loop until convergence (Kepler's equation, 10k values)
10. lax.cond inside a fori_loop (Collatz trajectory of one number, 1000 steps)

Every tracejit (and JAX) result is checked against NumPy first. Reported per
program: medians of tracejit, JAX and NumPy after warm-up, the speed ratios
(>= 1: tracejit faster), the cost per innermost loop iteration, tracejit's
first call (trace + compile + run, cold compile cache), and whether each of
tracejit's loops ran as one native loop or from Python once per iteration
("host loop"), with the steps that kept it on the host. A case whose tracejit
steady-state call would take longer than ``--guard`` seconds at full size is
scaled down (for every peer alike) and marked.

Run: ``.venv/bin/python -m benchmarks.bench_loops [--only NAME ...] [--skip-overhead]``.
JAX is measured when importable (``pip install -e .[peers]``); otherwise skipped with a note.
For part 1, ``--jax-python /path/to/python`` measures JAX in a subprocess.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

STEPS = 1000
SIZE = 16


# ====================================================================== part 1: per-step overhead

def _median_seconds(fn, arg, runs: int, number: int) -> float:
    fn(arg)  # compile and warm up
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(number):
            fn(arg)
        samples.append((time.perf_counter() - t0) / number)
    return statistics.median(samples)


def _check(out, x0):
    expected = x0.copy()
    for _ in range(STEPS):
        expected = expected * np.float32(0.99) + np.float32(0.01)
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-4)


def bench_tracejit(runs: int, number: int) -> dict:
    import tracejit
    from tracejit import lax

    @tracejit.jit
    def loop(x):
        return lax.fori_loop(0, STEPS, lambda i, v: v * np.float32(0.99) + np.float32(0.01), x)
    x0 = np.linspace(0, 1, SIZE, dtype=np.float32)
    _check(loop(x0), x0)
    t = _median_seconds(loop, x0, runs, number)
    backend = getattr(loop._cache[next(iter(loop._cache))].executable, "backend", "?")
    return {"per_step_us": t / STEPS * 1e6, "per_call_ms": t * 1e3, "backend": backend}


def bench_jax(runs: int, number: int) -> dict:
    import jax
    from jax import lax

    @jax.jit
    def loop(x):
        return lax.fori_loop(0, STEPS, lambda i, v: v * np.float32(0.99) + np.float32(0.01), x)
    x0 = np.linspace(0, 1, SIZE, dtype=np.float32)
    _check(loop(x0), x0)
    t = _median_seconds(lambda x: loop(x).block_until_ready(), x0, runs, number)
    return {"per_step_us": t / STEPS * 1e6, "per_call_ms": t * 1e3, "version": jax.__version__}


def _jax_result(args) -> tuple[dict | None, str]:
    try:
        import jax  # noqa: F401
    except ImportError:
        if not args.jax_python:
            return None, ("JAX is not importable here; skipped (pass --jax-python PATH to an "
                          "interpreter with jax installed to compare)")
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        cmd = [args.jax_python, "-c",
               f"import json, sys; sys.path.insert(0, {root!r});"
               "from benchmarks.bench_loops import bench_jax;"
               f"print(json.dumps(bench_jax({args.runs}, {args.number})))"]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as e:
            return None, f"JAX run with {args.jax_python} failed: {e}"
        return json.loads(out.stdout.strip().splitlines()[-1]), f"JAX measured with {args.jax_python}"
    return bench_jax(args.runs, args.number), "JAX measured in-process"


def overhead(args):
    tj = bench_tracejit(args.runs, args.number)
    print(f"fori_loop, {STEPS} steps, x = x * 0.99 + 0.01 on f32[{SIZE}], median of {args.runs} runs")
    print(f"  tracejit (backend {tj['backend']}): {tj['per_step_us']:8.3f} us/step "
          f"({tj['per_call_ms']:.3f} ms/call)")
    jx, note = _jax_result(args)
    if jx is None:
        print(f"  jax: {note}")
        return
    print(f"  jax {jx['version']}:               {jx['per_step_us']:8.3f} us/step "
          f"({jx['per_call_ms']:.3f} ms/call)  [{note}]")
    print(f"  speed ratio jax / tracejit time: {jx['per_step_us'] / tj['per_step_us']:.2f}x (>= 1: tracejit faster)")


# ====================================================================== part 2: programs
# Each program is written once against (jnp, lax) and jitted by both libraries; static sizes
# (trip counts) are Python ints bound with functools.partial.

# ---- 1. LU factorization without pivoting (Doolittle, L and U packed in one matrix)

def lu_program(jnp, lax, a):
    n = a.shape[0]
    idx = jnp.arange(n)

    def step(k, a):
        col, row = a[:, k], a[k, :]
        below = idx > k
        l = jnp.where(below, col / a[k, k], 0.0)
        a = a - jnp.outer(l, jnp.where(idx >= k, row, 0.0))   # trailing rank-1 update
        return a.at[:, k].set(jnp.where(below, l, a[:, k]))   # multipliers below the diagonal
    return lax.fori_loop(0, n, step, a)


def lu_numpy(a):
    a = a.copy()
    n = a.shape[0]
    for k in range(n - 1):
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return a


def lu_inputs(n, rng):
    a = rng.standard_normal((n, n))
    return (a + n * np.eye(n),)     # diagonally dominant: no pivoting needed


# ---- 2. Cholesky (column by column, masked dot products)

def cholesky_program(jnp, lax, a):
    n = a.shape[0]
    idx = jnp.arange(n)

    def column(j, l):
        lj = jnp.where(idx < j, l[j], 0.0)            # L[j, :j], zero-padded
        d = jnp.sqrt(a[j, j] - jnp.dot(lj, lj))
        c = (a[:, j] - l @ lj) / d                    # L[i, :j] . L[j, :j] for every i
        return l.at[:, j].set(jnp.where(idx > j, c, jnp.where(idx == j, d, 0.0)))
    return lax.fori_loop(0, n, column, jnp.zeros_like(a))


def cholesky_numpy(a):
    n = a.shape[0]
    l = np.zeros_like(a)
    for j in range(n):
        l[j, j] = np.sqrt(a[j, j] - l[j, :j] @ l[j, :j])
        l[j + 1:, j] = (a[j + 1:, j] - l[j + 1:, :j] @ l[j, :j]) / l[j, j]
    return l


def spd_inputs(n, rng):
    m = rng.standard_normal((n, n))
    return (m @ m.T / n + np.eye(n),)


# ---- 3. forward substitution

def trisolve_program(jnp, lax, l, b):
    def row(i, x):
        return x.at[i].set((b[i] - jnp.dot(l[i], x)) / l[i, i])
    return lax.fori_loop(0, b.shape[0], row, jnp.zeros_like(b))


def trisolve_numpy(l, b):
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - l[i, :i] @ x[:i]) / l[i, i]
    return x


def trisolve_inputs(n, rng):
    l = np.tril(rng.standard_normal((n, n))) / np.sqrt(n) + 2 * np.eye(n)
    return l, rng.standard_normal(n)


# ---- 4. Gauss-Seidel for -laplace(u) = f, lexicographic order

def gauss_seidel_program(jnp, lax, u, f, sweeps):
    n = u.shape[0]
    h2 = 1.0 / (n - 1) ** 2

    def point(i, j, u):
        v = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] + h2 * f[i, j])
        return u.at[i, j].set(v)

    def row(i, u):
        return lax.fori_loop(1, n - 1, lambda j, u: point(i, j, u), u)

    def sweep(_, u):
        return lax.fori_loop(1, n - 1, row, u)
    return lax.fori_loop(0, sweeps, sweep, u)


def gauss_seidel_numpy(u, f, sweeps):
    # Lexicographic Gauss-Seidel, vectorized along anti-diagonals (a wavefront): point (i, j)
    # reads new values on diagonal i+j-1 and old ones on i+j+1, so this is the same iteration.
    u = u.copy()
    n = u.shape[0]
    h2 = 1.0 / (n - 1) ** 2
    diagonals = []
    for d in range(2, 2 * n - 3):
        i = np.arange(max(1, d - n + 2), min(n - 2, d - 1) + 1)
        diagonals.append((i, d - i))
    for _ in range(sweeps):
        for i, j in diagonals:
            u[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] + h2 * f[i, j])
    return u


def gauss_seidel_inputs(n, rng):
    u = np.zeros((n, n))
    u[0, :] = 1.0      # a hot edge (boundary values stay fixed)
    return u, rng.standard_normal((n, n))


# ---- 5. Nussinov RNA folding (maximum base pairs), cells filled diagonal by diagonal

MIN_LOOP = 3    # a pair (i, j) needs j - i > MIN_LOOP


def nussinov_program(jnp, lax, seq):
    n = seq.shape[0]
    ks = jnp.arange(n)

    def cell(d, i, t):
        j = i + d
        split = t[i] + jnp.concatenate([t[1:, j], jnp.zeros(1, t.dtype)])   # t[i, k] + t[k + 1, j]
        best_split = jnp.max(jnp.where((ks >= i) & (ks < j), split, 0))
        pairs = (seq[i] + seq[j] == 3) & (d > MIN_LOOP)                     # A-U, C-G
        v = jnp.maximum(jnp.maximum(t[i + 1, j], t[i, j - 1]),
                        jnp.maximum(t[i + 1, j - 1] + pairs.astype(t.dtype), best_split))
        return t.at[i, j].set(v)

    def diagonal(d, t):
        return lax.fori_loop(0, n - d, functools.partial(cell, d), t)    # trip count depends on d
    return lax.fori_loop(1, n, diagonal, jnp.zeros((n, n), jnp.int32))


def nussinov_numpy(seq):
    # Every cell of a diagonal depends only on earlier diagonals: vectorized over the diagonal.
    n = seq.shape[0]
    t = np.zeros((n, n), np.int32)
    for d in range(1, n):
        i = np.arange(n - d)
        j = i + d
        k = i[:, None] + np.arange(d)[None, :]                              # i <= k < j
        best_split = (t[i[:, None], k] + t[k + 1, j[:, None]]).max(axis=1)
        pairs = ((seq[i] + seq[j]) == 3) & (d > MIN_LOOP)
        t[i, j] = np.maximum(np.maximum(t[i + 1, j], t[i, j - 1]),
                             np.maximum(t[i + 1, j - 1] + pairs, best_split))
    return t


def nussinov_inputs(n, rng):
    return (rng.integers(0, 4, n).astype(np.int32),)    # A, C, G, U = 0, 1, 2, 3


# ---- 6. CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF), bit by bit

def crc16_program(jnp, lax, data):
    def byte(crc, b):
        crc = crc ^ (b.astype(jnp.uint32) << 8)

        def bit(crc, _):
            shifted = (crc << 1) & 0xFFFF
            return jnp.where((crc & 0x8000) != 0, shifted ^ 0x1021, shifted), None
        crc, _ = lax.scan(bit, crc, None, length=8)
        return crc, None
    crc, _ = lax.scan(byte, jnp.uint32(0xFFFF), data)
    return crc


def _crc16_table():
    crc = np.arange(256, dtype=np.uint32) << 8
    for _ in range(8):
        crc = np.where(crc & 0x8000, (crc << 1) ^ 0x1021, crc << 1) & 0xFFFF
    return crc.tolist()


_CRC_TABLE = _crc16_table()


def crc16_numpy(data):
    # Table-driven, a byte per step (a CRC is sequential in its bytes): how a NumPy user writes it.
    crc, table = 0xFFFF, _CRC_TABLE
    for b in data.tolist():
        crc = ((crc << 8) & 0xFFFF) ^ table[(crc >> 8) ^ b]
    return np.uint32(crc)


def crc16_inputs(n, rng):
    return (rng.integers(0, 256, n).astype(np.uint8),)


# ---- 7. CSR mat-vec (gather + scatter-add), power iteration

def power_iteration_program(jnp, lax, rows, cols, vals, x0, iters):
    n = x0.shape[0]

    def step(_, x):
        y = jnp.zeros(n, x.dtype).at[rows].add(vals * x[cols])    # = jax.ops.segment_sum(vals * x[cols], rows, n)
        return y / jnp.sqrt(jnp.sum(y * y))
    return lax.fori_loop(0, iters, step, x0)


def power_iteration_numpy(rows, cols, vals, x0, iters):
    x = x0
    for _ in range(iters):
        y = np.bincount(rows, weights=vals * x[cols], minlength=x.shape[0])
        x = y / np.sqrt(y @ y)
    return x


def csr_inputs(n, rng, per_row=10):
    counts = rng.poisson(per_row, n)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    rows = np.repeat(np.arange(n), counts).astype(np.int32)          # CSR row pointer, expanded
    cols = rng.integers(0, n, indptr[-1]).astype(np.int32)
    vals = rng.random(indptr[-1])
    return rows, cols, vals, np.ones(n) / np.sqrt(n)


# ---- 8. n-body (softened gravity, semi-implicit Euler)

def nbody_program(jnp, lax, pos, vel, mass, steps, dt=1e-3, eps2=1e-2):
    def accel(pos):
        d = pos[None, :, :] - pos[:, None, :]                  # all pairs: d[i, j] = pos[j] - pos[i]
        w = mass[None, :] * (jnp.sum(d * d, axis=-1) + eps2) ** -1.5
        return jnp.sum(d * w[:, :, None], axis=1)

    def step(_, state):
        pos, vel = state
        vel = vel + dt * accel(pos)
        return pos + dt * vel, vel
    return lax.fori_loop(0, steps, step, (pos, vel))


def nbody_numpy(pos, vel, mass, steps, dt=1e-3, eps2=1e-2):
    for _ in range(steps):
        d = pos[None, :, :] - pos[:, None, :]
        w = mass[None, :] * ((d * d).sum(-1) + eps2) ** -1.5
        vel = vel + dt * (d * w[:, :, None]).sum(1)
        pos = pos + dt * vel
    return pos, vel


def nbody_inputs(n, rng):
    return rng.standard_normal((n, 3)), 0.1 * rng.standard_normal((n, 3)), rng.random(n) / n


# ---- 9. Newton's method in a while_loop: Kepler's equation E - e sin E = M

def kepler_program(jnp, lax, m, e, tol=1e-12, max_iter=50):
    def not_done(state):
        _, delta, it = state
        return (delta > tol) & (it < max_iter)

    def newton(state):
        ecc, _, it = state
        step = (ecc - e * jnp.sin(ecc) - m) / (1.0 - e * jnp.cos(ecc))
        return ecc - step, jnp.max(jnp.abs(step)), it + 1
    init = (m + e * jnp.sin(m), jnp.asarray(jnp.inf, m.dtype), jnp.asarray(0, jnp.int32))
    ecc, _, it = lax.while_loop(not_done, newton, init)
    return ecc, it


def kepler_numpy(m, e, tol=1e-12, max_iter=50):
    ecc, it = m + e * np.sin(m), 0
    while it < max_iter:
        step = (ecc - e * np.sin(ecc) - m) / (1.0 - e * np.cos(ecc))
        ecc, it = ecc - step, it + 1
        if np.max(np.abs(step)) <= tol:
            break
    return ecc, np.int32(it)


def kepler_inputs(n, rng):
    return rng.uniform(0, 2 * np.pi, n), np.float64(0.9)


# ---- 10. lax.cond inside a fori_loop: a Collatz trajectory

def collatz_program(jnp, lax, n0, steps):
    def collatz(k):
        return lax.cond(k % 2 == 0, lambda k: k // 2, lambda k: 3 * k + 1, k)

    def step(_, state):
        k, peak, count = state
        moving = k > 1
        k = lax.cond(moving, collatz, lambda k: k, k)
        return k, jnp.maximum(peak, k), count + moving.astype(count.dtype)
    return lax.fori_loop(0, steps, step, (n0, n0, jnp.zeros_like(n0)))


def collatz_numpy(n0, steps):
    # One scalar trajectory has nothing to vectorize: a Python loop, as a NumPy user writes it.
    k = peak = int(n0)
    count = 0
    for _ in range(steps):
        if k > 1:
            k = k // 2 if k % 2 == 0 else 3 * k + 1
            count += 1
            peak = max(peak, k)
    return np.int64(k), np.int64(peak), np.int64(count)


def collatz_inputs(n, rng):
    return (np.int64(n),)


# ---------------------------------------------------------------------- the cases

@dataclass
class Case:
    name: str
    what: str
    program: object                 # program(jnp, lax, *args, **static)
    numpy_fn: object                # numpy_fn(*args, **static)
    inputs: object                  # inputs(size, rng) -> tuple of arrays
    sizes: tuple                    # full size first, then the scaled-down fallbacks
    iterations: object              # size -> innermost loop iterations per call (for us/iteration)
    static: dict = field(default_factory=dict)
    rtol: float = 1e-9
    atol: float = 1e-9
    size_label: str = "n"


CASES = [
    Case("lu", "LU no pivoting, fori_loop masked rank-1", lu_program, lu_numpy, lu_inputs,
         (128, 64, 32), lambda n: n, rtol=1e-8, atol=1e-10),
    Case("cholesky", "Cholesky, fori_loop masked dots", cholesky_program, cholesky_numpy, spd_inputs,
         (128, 64, 32), lambda n: n),
    Case("trisolve", "forward subst., x.at[i].set", trisolve_program, trisolve_numpy, trisolve_inputs,
         (512, 256, 128, 64), lambda n: n),
    Case("gauss_seidel", "Gauss-Seidel, 3 nested fori_loops", gauss_seidel_program, gauss_seidel_numpy,
         gauss_seidel_inputs, (64, 32, 16), lambda n: 4 * (n - 2) ** 2, static={"sweeps": 4}),
    Case("nussinov", "Nussinov DP, inner trips = n - d", nussinov_program, nussinov_numpy, nussinov_inputs,
         (64, 32, 16), lambda n: n * (n - 1) // 2, rtol=0, atol=0),
    Case("crc16", "CRC-16, nested scan (bytes x 8 bits)", crc16_program, crc16_numpy, crc16_inputs,
         (10_000, 1000, 100), lambda n: 8 * n, rtol=0, atol=0, size_label="bytes"),
    Case("csr_power", "CSR SpMV gather+scatter-add, 10 iters", power_iteration_program, power_iteration_numpy,
         csr_inputs, (10_000, 1000), lambda n: 10, static={"iters": 10}, size_label="rows"),
    Case("nbody", "n-body pairwise, 10 steps", nbody_program, nbody_numpy, nbody_inputs,
         (256, 128, 64), lambda n: 10, static={"steps": 10}, rtol=1e-8, atol=1e-10, size_label="bodies"),
    Case("newton", "Newton while_loop (Kepler, e=0.9)", kepler_program, kepler_numpy, kepler_inputs,
         (10_000, 1000), None, rtol=1e-9, atol=1e-9, size_label="values"),
    Case("collatz", "lax.cond in fori_loop (Collatz)", collatz_program, collatz_numpy, collatz_inputs,
         (837_799,), lambda n: 1000, static={"steps": 1000}, rtol=0, atol=0, size_label="n0"),
]


# ---------------------------------------------------------------------- measuring

def _leaves(x):
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [np.asarray(x)]


def _assert_close(got, want, case, who):
    g, w = _leaves(got), _leaves(want)
    assert len(g) == len(w), f"{case.name}: {who} returned {len(g)} arrays, NumPy {len(w)}"
    for a, b in zip(g, w):
        assert a.shape == b.shape, f"{case.name}: {who} shape {a.shape} != NumPy's {b.shape}"
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=case.rtol, atol=case.atol,
                                   err_msg=f"{case.name}: {who} differs from NumPy")


def _timed(fn, budget: float):
    """Median seconds of fn() after one warm-up call, taking about ``budget`` seconds in all."""
    from benchmarks.common import median_time
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    repeat = int(max(3, min(7, budget / once)))
    return median_time(fn, repeat=repeat, warmup=0, min_time=min(0.05, budget / (repeat * 4)))


def loop_modes(jitted, args) -> list[str]:
    """How tracejit runs each loop of ``jitted(*args)``: one line per loop, nested ones indented.

    The compiled plan records the backend's choice on each control-flow step (``step.loop``: a
    native loop is one LLVM function running every iteration; a host loop runs its compiled
    bodies once per iteration from Python, ``step.host_reason`` says why) and the bodies the
    compile driver optimized (``step.bodies``), whose own loops are listed under it. Loops in the
    body of a native loop are emitted inline into it; those in a host loop's body have their own
    choice, made when the body was built.
    """
    from tracejit.compiler.plan import CONTROL_FLOW, NumpyStep

    out = []

    def visit(steps, depth, inside_native=False):
        for step in steps:
            if not isinstance(step, NumpyStep) or step.eqn.primitive.name not in CONTROL_FLOW:
                continue
            prim = step.eqn.primitive.name
            native = inside_native or (step.loop is not None and getattr(step.loop, "native", False))
            if native:
                mode = "native"
            elif prim == "cond":
                mode = "host: runs the chosen branch's compiled body from Python"
            else:
                mode = "host loop: " + (step.host_reason or "?")
            out.append("  " * depth + f"{prim}: {mode}")
            for body in step.bodies or ():
                visit(body.plan.steps, depth + 1, native)

    visit(jitted.lower(*args).compile().executable.plan.steps, 0)
    return out


def summary_mode(modes: list[str]) -> str:
    loops_ = [m.strip() for m in modes if m.strip().split(":")[0] in ("scan", "while")]
    native = [m for m in loops_ if m.endswith(": native")]
    if not loops_:
        return "no loop"
    if len(native) == len(loops_):
        return "native"
    if not native:
        return "host loop"
    return "host loop (inner native)"


def run_case(case: Case, guard: float, budget: float, first_size: int = 0, with_jax: bool = True) -> dict:
    """Measure one program: a JSON-able dict (sizes from ``case.sizes[first_size:]``)."""
    import tracejit
    import tracejit.numpy as tnp
    from tracejit import lax as tlax

    res = {"name": case.name, "notes": []}
    for k in range(first_size, len(case.sizes)):
        size = case.sizes[k]
        args = case.inputs(size, np.random.default_rng(0))
        t0 = time.perf_counter()
        want = case.numpy_fn(*args, **case.static)
        t_np_once = time.perf_counter() - t0
        jitted = tracejit.jit(functools.partial(case.program, tnp, tlax, **case.static))
        t0 = time.perf_counter()
        got = jitted(*args)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        got = jitted(*args)
        second = time.perf_counter() - t0
        if second > guard and k + 1 < len(case.sizes):
            res["notes"].append(f"{case.size_label}={size}: a tracejit call took {second:.1f} s "
                                f"(> --guard {guard:g} s): scaled down")
            continue
        break
    res.update(size=size, scaled=size != case.sizes[0], first=first)
    _assert_close(got, want, case, "tracejit")
    res["modes"] = loop_modes(jitted, args)
    res["mode"] = summary_mode(res["modes"])
    res["iterations"] = int(case.iterations(size) if case.iterations else _leaves(want)[-1])
    res["tracejit"] = _timed(lambda: jitted(*args), budget)
    res["numpy"] = _timed(lambda: case.numpy_fn(*args, **case.static), min(budget, max(t_np_once * 5, 0.2)))
    from benchmarks.common import jax_cpu
    jax = jax_cpu() if with_jax else None
    if jax is None:
        return res
    import jax.numpy as jnp_jax
    from jax import lax as lax_jax
    res["jax_version"] = jax.__version__
    jj = jax.jit(functools.partial(case.program, jnp_jax, lax_jax, **case.static))
    jargs = [jax.device_put(a) for a in args]
    t0 = time.perf_counter()
    jax.block_until_ready(jj(*jargs))
    res["jax_first"] = time.perf_counter() - t0
    _assert_close(jj(*jargs), want, case, "JAX")
    res["jax"] = _timed(lambda: jax.block_until_ready(jj(*jargs)), budget)
    return res


def _child(args) -> None:
    """``--child NAME``: one case in this (fresh) process; prints one JSON line."""
    import tracejit
    tracejit.config.update("compilation_cache_dir", tempfile.mkdtemp(prefix="tracejit-bench-loops-"))
    case = next(c for c in CASES if c.name == args.child)
    print("RESULT " + json.dumps(run_case(case, args.guard, args.budget, args.first_size)), flush=True)


def _run_isolated(case: Case, args) -> dict:
    """Run a case in a child process; on a timeout or crash try the next smaller size."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    notes = []
    for k in range(len(case.sizes)):
        cmd = [sys.executable, "-m", "benchmarks.bench_loops", "--child", case.name, "--first-size", str(k),
               "--guard", str(args.guard), "--budget", str(args.budget)]
        label = f"{case.size_label}={case.sizes[k]}"
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, cwd=root, timeout=args.case_timeout)
        except subprocess.TimeoutExpired:
            notes.append(f"{label}: no result within --case-timeout {args.case_timeout:g} s: scaled down")
            continue
        lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
        if out.returncode == 0 and lines:
            res = json.loads(lines[-1][len("RESULT "):])
            res["notes"] = notes + res["notes"]
            return res
        # A wrong result, a Python error or a crash (a signal): a smaller size would not change it.
        err = (out.stderr.strip().splitlines() or ["?"])[-1][:300]
        return {"name": case.name, "notes": notes, "error": f"{label}: exit status {out.returncode}: {err}"}
    return {"name": case.name, "notes": notes, "error": "timed out at every size"}


def _fmt_ms(s):
    return "        -" if s is None else (f"{s * 1e3:9.3f}" if s < 10 else f"{s:8.1f}s")


def programs(args):
    cases = [c for c in CASES if not args.only or c.name in args.only]
    by_name = {c.name: c for c in CASES}
    results = []
    if not args.in_process:
        print(f"  (each program in a fresh process: first calls are cold; --in-process to share one)")
    else:
        import tracejit
        tracejit.config.update("compilation_cache_dir", tempfile.mkdtemp(prefix="tracejit-bench-loops-"))
    for case in cases:
        t0 = time.perf_counter()
        r = run_case(case, args.guard, args.budget) if args.in_process else _run_isolated(case, args)
        results.append(r)
        status = "error" if "error" in r else "checked against NumPy"
        print(f"  [{case.name}: {status}, {time.perf_counter() - t0:.1f} s]", flush=True)

    ok = [r for r in results if "error" not in r]
    version = next((r["jax_version"] for r in ok if "jax_version" in r), None)
    print(f"\n  medians in ms after warm-up; 'vs jax' = jax time / tracejit time, 'vs np' = numpy time / "
          f"tracejit time (>= 1: tracejit faster); us/it = time per innermost loop iteration; "
          f"1st call = tracejit trace+compile+run{'; jax ' + version if version else ''}")
    head = (f"  {'program':<13}{'size':>13} {'tracejit':>9} {'jax':>9} {'numpy':>9} {'vs jax':>7} "
            f"{'vs np':>7} {'iters':>7} {'us/it tj':>9} {'us/it jax':>9} {'1st call':>8}  loops")
    print(head)
    print("  " + "-" * (len(head) + 8))
    for r in results:
        c = by_name[r["name"]]
        if "error" in r:
            print(f"  {c.name:<13} FAILED: {r['error']}")
            continue
        tj, jx, npt, it = r["tracejit"], r.get("jax"), r["numpy"], r["iterations"]
        size = f"{c.size_label}={r['size']}" + ("*" if r["scaled"] else "")
        vs_jax = f"{jx / tj:7.2f}" if jx else "      -"
        jit_us = f"{jx / it * 1e6:9.2f}" if jx else "        -"
        print(f"  {c.name:<13}{size:>13} {_fmt_ms(tj)} {_fmt_ms(jx)} {_fmt_ms(npt)} {vs_jax} "
              f"{npt / tj:7.2f} {it:7d} {tj / it * 1e6:9.2f} {jit_us} {r['first']:7.2f}s  {r['mode']}")
    if any(r["scaled"] for r in ok):
        print("  * scaled down from the full size (see the notes below)")
    if ok and version is None:
        print("  [peer jax not installed; skipping it — `pip install -e .[peers]`]")
    elif ok:
        print("  jax first call (trace+compile+run): " +
              ", ".join(f"{r['name']} {r['jax_first']:.2f}s" for r in ok if "jax_first" in r))
    print("\n  loops, as tracejit runs them (nested ones indented; a host loop lists its body's non-native steps):")
    for r in results:
        print(f"  {r['name']}: {by_name[r['name']].what}")
        for line in r.get("modes", []):
            print(f"      {line}")
        for note in r["notes"]:
            print(f"      * {note}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="part 1: timed runs (the median is reported)")
    parser.add_argument("--number", type=int, default=5, help="part 1: calls per timed run")
    parser.add_argument("--jax-python", default=None, help="part 1: interpreter with jax, if not importable")
    parser.add_argument("--only", nargs="*", default=None, help="part 2: these programs only")
    parser.add_argument("--skip-overhead", action="store_true", help="skip part 1")
    parser.add_argument("--guard", type=float, default=2.0,
                        help="part 2: scale a case down while a tracejit call takes longer (seconds)")
    parser.add_argument("--budget", type=float, default=1.5, help="part 2: seconds of timing per peer and case")
    parser.add_argument("--case-timeout", type=float, default=60.0,
                        help="part 2: a program's process gets this long before it is retried smaller")
    parser.add_argument("--in-process", action="store_true",
                        help="part 2: run every program in this process (no per-case timeout)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--first-size", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args)
        return
    if not args.skip_overhead:
        print("== per-step overhead ==")
        overhead(args)
    print("\n== loop programs (issue 13) ==")
    programs(args)


if __name__ == "__main__":
    main()
