"""Per-iteration overhead of a jitted ``fori_loop``: tracejit vs JAX.

The loop runs ``x = x * 0.99 + 0.01`` on an f32[16] carry for 1000 steps,
so nearly all time is per-step overhead (dispatch, interpretation, buffer
handling) rather than arithmetic. Reports the median over several runs of
the per-step time in microseconds, and the ratio tracejit / JAX.

Run: ``.venv/bin/python -m benchmarks.bench_loops``. JAX is measured when
it is importable; otherwise pass ``--jax-python /path/to/python`` (an
interpreter that has jax installed) to measure it in a subprocess, or it is
skipped with a note.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

STEPS = 1000
SIZE = 16


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs (the median is reported)")
    parser.add_argument("--number", type=int, default=5, help="calls per timed run")
    parser.add_argument("--jax-python", default=None, help="interpreter with jax, if not importable")
    args = parser.parse_args(argv)

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
    print(f"  ratio tracejit / jax: {tj['per_step_us'] / jx['per_step_us']:.1f}x")


if __name__ == "__main__":
    main()
