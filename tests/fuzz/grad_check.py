"""Gradient fuzzer: random differentiable programs (``grad_gen``) checked in every mode.

For a program ``f`` (array output), ``g = sum(f * W_OUT)`` (scalar) and a random
direction ``D`` (one array per input), each check is a snippet of Python that
runs on its own (the reproducer is the program, its inputs and the snippet):

===================  ==========================================================  ==========
check                compares                                                    tolerance
===================  ==========================================================  ==========
``jvp_fd``           ``jvp(f)(D)`` with central differences of ``f`` along ``D``  1e-6
``grad_fd``          ``<grad(g), D>`` with central differences of ``g``          1e-6
``vjp_jvp_identity`` ``<vjp(f)(CT), D>`` with ``<CT, jvp(f)(D)>``                1e-10
``jacfwd_jvp``       ``jacfwd(f)`` contracted with ``D`` with ``jvp(f)(D)``         1e-10
``jacrev_jacfwd``    ``jacrev(f)`` with ``jacfwd(f)``                            1e-10
``vmap_grad``        ``vmap(grad(g))`` over two inputs with per-example ``grad``  1e-12
``vmap_jvp``         ``vmap(jvp(f))`` with per-example ``jvp``                     1e-12
``jit_grad``         ``jit(grad(g))`` with eager ``grad(g)``                      1e-9
``jit_jvp``          ``jit(jvp(f))`` with eager ``jvp(f)``                         1e-9
``jit_vmap_grad``    ``jit(vmap(grad(g)))`` with ``vmap(grad(g))``                1e-9
``grad_of_jit``      ``grad(jit(g))`` with ``grad(g)``                           1e-9
``remat_grad``       ``grad(checkpoint(g))`` with ``grad(g)``                    1e-12
``linearize``        ``linearize(f)`` with ``jvp(f)``                            1e-12
``hvp_fd``           ``jvp(grad(g))(D)`` with central differences of ``grad(g)``  1e-5
===================  ==========================================================  ==========

Errors are max-norm errors relative to ``max(1, max|expected|)``.

*Finite differences* use the step ``H = 1e-5`` along ``D ~ N(0, 1)`` (inputs lie in
[-1.5, 1.5] and intermediate values are kept below 1e3 by the generator). In float64
the central difference has truncation error ``H**2 |f'''| / 6 ~ 2e-11 |f'''|`` and
rounding error ``~ eps |f| / H <= 2e-16 * 1e3 / 1e-5 = 2e-8``; the tolerance 1e-6
leaves a margin of 50x over the worst case, while a wrong derivative rule is off
by O(1). The difference between the estimates at ``H`` and ``2H`` measures the
truncation error; above 1e-6 the input sits near a kink (a ``max`` tie, an ``abs`` at
0, a data-dependent ``cond``) where finite differences mean nothing, so the check
draws new inputs (up to 3 times) and otherwise counts the program as skipped.
The second-order check ``hvp_fd`` differences gradients (rounding ~ eps |g'| / H),
hence 1e-5.

*Exact identities* (vjp/jvp transposition, jacfwd/jacrev, vmap) compare two
derivative computations that differ only by summation order, so 1e-10 to 1e-12;
``jit`` compiles its own vectorized transcendental functions (a few ulp from
NumPy's), so jit against eager is 1e-9.

``while_loop`` has no reverse mode (as in JAX): programs containing one get the
forward-mode checks only.

Command line (a campaign)::

    python -m tests.fuzz.grad_check --start 0 --count 20000 [--out DIR] [--jobs N]

prints one line per finding, with a minimal standalone reproducer (the shortest
prefix of the program that still fails, dead lines removed), and a summary.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from dataclasses import dataclass

import numpy as np

from tests.fuzz.grad_gen import GradProgram, generate, new_inputs

H = 1e-5
FD_RTOL = 1e-6
KINK_RTOL = 1e-6

PRE = '''
import numpy as np
import tracejit
import tracejit.numpy as jnp
from tracejit.transforms.api_ad import grad, jvp, vjp, jacfwd, jacrev

ARGS = tuple(range(len(X)))


def g(*xs):
    return jnp.sum(f(*xs) * W_OUT)


def fd(fun, h):
    plus = fun(*[x + h * d for x, d in zip(X, D)])
    minus = fun(*[x - h * d for x, d in zip(X, D)])
    return (cat(plus) - cat(minus)) / (2 * h)


def cat(vs):
    vs = vs if isinstance(vs, (list, tuple)) else [vs]
    return np.concatenate([np.ravel(np.asarray(v, dtype=np.float64)) for v in vs])

SMOOTH = None
'''

CHECKS = {
    "jvp_fd": '''
want, want2 = fd(f, H), fd(f, 2 * H)
got = cat(jvp(f, tuple(X), tuple(D))[1])
RTOL, SMOOTH = 1e-6, np.max(np.abs(want - want2), initial=0.0)
''',
    "grad_fd": '''
want, want2 = fd(g, H), fd(g, 2 * H)
got = np.array([np.sum(cat(grad(g, argnums=ARGS)(*X)) * cat(D))])
RTOL, SMOOTH = 1e-6, float(np.max(np.abs(want - want2)))
''',
    "vjp_jvp_identity": '''
out, pull = vjp(f, *X)
got = np.sum(cat(pull(CT)) * cat(D))
want = np.sum(cat(CT) * cat(jvp(f, tuple(X), tuple(D))[1]))
RTOL = 1e-10
''',
    "jacfwd_jvp": '''
J = jacfwd(f, argnums=ARGS)(*X)
got = cat(sum(np.tensordot(np.asarray(j), d, axes=np.ndim(d)) for j, d in zip(J, D)))
want = cat(jvp(f, tuple(X), tuple(D))[1])
RTOL = 1e-10
''',
    "jacrev_jacfwd": '''
got = cat(jacrev(f, argnums=ARGS)(*X))
want = cat(jacfwd(f, argnums=ARGS)(*X))
RTOL = 1e-10
''',
    "vmap_grad": '''
XB = [np.stack([x, x + 0.01 * d]) for x, d in zip(X, D)]
got = cat(tracejit.vmap(grad(g, argnums=ARGS))(*XB))
per_example = [grad(g, argnums=ARGS)(*[xb[i] for xb in XB]) for i in range(2)]
want = cat([np.stack(p) for p in zip(*per_example)])
RTOL = 1e-12
''',
    "vmap_jvp": '''
XB = [np.stack([x, x + 0.01 * d]) for x, d in zip(X, D)]
DB = [np.stack([d, np.cos(d)]) for d in D]
got = cat(tracejit.vmap(lambda xs, ds: jvp(f, tuple(xs), tuple(ds))[1])(XB, DB))
want = cat(np.stack([np.asarray(jvp(f, tuple(xb[i] for xb in XB), tuple(db[i] for db in DB))[1])
                     for i in range(2)]))
RTOL = 1e-12
''',
    "jit_grad": '''
got = cat(tracejit.jit(grad(g, argnums=ARGS))(*X))
want = cat(grad(g, argnums=ARGS)(*X))
RTOL = 1e-9
''',
    "jit_jvp": '''
got = cat(tracejit.jit(lambda xs, ds: jvp(f, tuple(xs), tuple(ds))[1])(list(X), list(D)))
want = cat(jvp(f, tuple(X), tuple(D))[1])
RTOL = 1e-9
''',
    "jit_vmap_grad": '''
XB = [np.stack([x, x + 0.01 * d]) for x, d in zip(X, D)]
got = cat(tracejit.jit(tracejit.vmap(grad(g, argnums=ARGS)))(*XB))
want = cat(tracejit.vmap(grad(g, argnums=ARGS))(*XB))
RTOL = 1e-9
''',
    "grad_of_jit": '''
got = cat(grad(tracejit.jit(g), argnums=ARGS)(*X))
want = cat(grad(g, argnums=ARGS)(*X))
RTOL = 1e-9
''',
    "remat_grad": '''
got = cat(grad(tracejit.checkpoint(g), argnums=ARGS)(*X))
want = cat(grad(g, argnums=ARGS)(*X))
RTOL = 1e-12
''',
    "linearize": '''
out, f_jvp = tracejit.linearize(f, *X)
got = cat(f_jvp(*D))
want = cat(jvp(f, tuple(X), tuple(D))[1])
RTOL = 1e-12
''',
    "hvp_fd": '''
gfun = lambda *xs: grad(g, argnums=ARGS)(*xs)
want, want2 = fd(gfun, H), fd(gfun, 2 * H)
got = cat(jvp(gfun, tuple(X), tuple(D))[1])
RTOL, SMOOTH = 1e-5, np.max(np.abs(want - want2), initial=0.0)
''',
}

POST = '''
got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
assert got.shape == want.shape, (got.shape, want.shape)
scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
err = float(np.max(np.abs(got - want), initial=0.0)) / scale
print("relative error", err, "tolerance", RTOL)
assert err <= RTOL, ("mismatch", got, want)
'''



def checks_for(program: GradProgram, seed: int) -> list:
    names = ["jvp_fd", "jacfwd_jvp", "vmap_jvp"] + (["linearize"] if seed % 3 == 0 else [])
    if program.forward_only:
        names.append("jit_jvp")
    else:
        names += ["grad_fd", "vjp_jvp_identity", "vmap_grad", "jit_grad"]
        names.append(["jacrev_jacfwd", "jit_vmap_grad", "grad_of_jit", "remat_grad"][seed % 4])
        if seed % 5 == 0:
            names.append("hvp_fd")
    return names


@dataclass
class Finding:
    seed: int
    check: str
    kind: str            # "mismatch" or "error"
    message: str
    reproducer: str


def _aux_values(program: GradProgram, inputs, out_shape, attempt=0):
    rng = np.random.default_rng([program.seed, 7, attempt])
    D = [rng.normal(size=np.shape(x)) for x in inputs]
    CT = rng.normal(size=out_shape)
    return D, CT


def _w_out(program: GradProgram, output, shape):
    if output == program.output:
        return program.consts["W_OUT"]
    rng = np.random.default_rng([program.seed, 5, len(output)])
    return np.round(rng.normal(size=shape), 3)


def setup_source(program: GradProgram, inputs, output=None) -> tuple[str, np.ndarray]:
    """Standalone source defining f, W_OUT, X, D, CT and H; and f's value on the inputs."""
    output = output or program.output
    ns: dict = {}
    exec(program.function_source(output), ns)
    with np.errstate(all="ignore"):
        y = np.asarray(ns["f"](*inputs))
    if not np.all(np.isfinite(y)):
        raise FloatingPointError("non-finite program value")
    src = program.function_source(output, w_out=_w_out(program, output, y.shape))
    D, CT = _aux_values(program, inputs, y.shape)
    extra = (program.inputs_source(inputs) + f"D = [{', '.join(_lit(d) for d in D)}]\n" + f"CT = {_lit(CT)}\n"
             + f"H = {H!r}\n")
    return src + "\n" + extra, y


def _lit(a):
    from tests.fuzz.grad_gen import _array_literal
    return _array_literal(a)


def run_check(setup: str, check: str):
    """Run one check; returns (status, message): ok / kink / mismatch / error / nonfinite."""
    ns: dict = {}
    code = setup + PRE + CHECKS[check]
    try:
        with np.errstate(all="ignore"):
            exec(code, ns)
    except Exception as e:  # a crash in a derivative is a finding
        return "error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}"
    got = np.asarray(ns["got"], dtype=np.float64)
    want = np.asarray(ns["want"], dtype=np.float64)
    if not np.all(np.isfinite(want)):
        return "nonfinite", "expected value is not finite"
    if got.shape != want.shape:
        return "mismatch", f"shape {got.shape} != {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    smooth = ns.get("SMOOTH")
    if smooth is not None and float(smooth) / scale > KINK_RTOL:
        return "kink", f"finite differences at H and 2H differ by {float(smooth) / scale:.2e}"
    if not np.all(np.isfinite(got)):
        return "mismatch", f"non-finite derivative {got} (expected {want})"
    err = float(np.max(np.abs(got - want), initial=0.0)) / scale
    if err > ns["RTOL"]:
        return "mismatch", f"relative error {err:.3e} > {ns['RTOL']:g}\n got={got}\nwant={want}"
    return "ok", ""


def reproducer(setup: str, check: str) -> str:
    return ("# Gradient fuzzer reproducer (tests/fuzz/grad_check.py): check " + check + "\n"
            + setup + PRE + CHECKS[check] + POST)


def minimize(program: GradProgram, inputs, check: str, status: str):
    """The shortest prefix of the program (dead lines removed) that still fails ``check``."""
    candidates = [t for t, _, _ in program.lines if t != program.output] + [program.output]
    for out in candidates:
        if out not in {t for t, _, _ in program.live_lines()} and out != program.output:
            continue
        try:
            setup, _ = setup_source(program, inputs, out)
        except Exception:
            continue
        if run_check(setup, check)[0] == status:
            return setup
    return setup_source(program, inputs)[0]


def check_program(seed: int, quick_jit=True):
    """All checks of program ``seed``: (counts per status, findings)."""
    program = generate(seed)
    counts: dict = {}
    findings = []
    for check in checks_for(program, seed):
        for attempt in range(4):
            inputs = program.inputs if attempt == 0 else new_inputs(program, attempt)
            try:
                setup, _ = setup_source(program, inputs)
            except Exception:
                status, msg = "nonfinite", "program fails on the new inputs"
                continue
            status, msg = run_check(setup, check)
            if status != "kink" and status != "nonfinite":
                break
        counts[status] = counts.get(status, 0) + 1
        if status in ("mismatch", "error"):
            small = minimize(program, inputs, check, status)
            findings.append(Finding(seed, check, status, msg, reproducer(small, check)))
    return counts, findings


def campaign(start: int, count: int, out_dir=None, verbose=True):
    totals: dict = {}
    findings = []
    t0 = time.time()
    for seed in range(start, start + count):
        try:
            counts, found = check_program(seed)
        except Exception as e:
            counts, found = {"generator_error": 1}, [Finding(seed, "generate", "error", repr(e), "")]
        for k, v in counts.items():
            totals[k] = totals.get(k, 0) + v
        for fnd in found:
            findings.append(fnd)
            if verbose:
                print(f"[seed {fnd.seed}] {fnd.check}: {fnd.kind}: {fnd.message.splitlines()[0] if fnd.message else ''}",
                      flush=True)
            if out_dir:
                os.makedirs(out_dir, exist_ok=True)
                with open(os.path.join(out_dir, f"repro_{fnd.seed}_{fnd.check}.py"), "w") as fh:
                    fh.write(fnd.reproducer)
        done = seed - start + 1
        if verbose and done % 500 == 0:
            print(f"... {done} programs, {time.time() - t0:.0f}s, {totals}", flush=True)
    return totals, findings


def _campaign_chunk(start_count_out):
    start, count, out_dir = start_count_out
    return campaign(start, count, out_dir, verbose=False)


def parallel_campaign(start: int, count: int, out_dir=None, jobs: int = 2, chunk: int = 200):
    """``campaign`` over ``jobs`` worker processes (chunks of ``chunk`` seeds, in seed order)."""
    import concurrent.futures
    import multiprocessing
    chunks = [(s, min(chunk, start + count - s), out_dir) for s in range(start, start + count, chunk)]
    totals: dict = {}
    findings = []
    t0 = time.time()
    done = 0
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for (s, c, _), (counts, found) in zip(chunks, pool.map(_campaign_chunk, chunks)):
            for k, v in counts.items():
                totals[k] = totals.get(k, 0) + v
            for fnd in found:
                findings.append(fnd)
                print(f"[seed {fnd.seed}] {fnd.check}: {fnd.kind}: "
                      f"{fnd.message.splitlines()[0] if fnd.message else ''}", flush=True)
            done += c
            print(f"... {done} programs, {time.time() - t0:.0f}s, {totals}", flush=True)
    return totals, findings


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--out", default=None, help="directory for reproducer files")
    ap.add_argument("--show", action="store_true", help="print each reproducer")
    args = ap.parse_args(argv)
    t0 = time.time()
    if args.jobs > 1:
        totals, findings = parallel_campaign(args.start, args.count, args.out, args.jobs)
    else:
        totals, findings = campaign(args.start, args.count, args.out)
    if args.show:
        for fnd in findings:
            print(f"\n# ---- seed {fnd.seed} check {fnd.check} ({fnd.kind})\n{fnd.reproducer}")
    print(f"programs {args.count} (seeds {args.start}..{args.start + args.count - 1}), checks {totals}, "
          f"findings {len(findings)}, {time.time() - t0:.0f}s")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
