"""Benchmark: 10M float32 standard normals.

tracejit.random.normal under tracejit.jit, jax.random.normal under jax.jit
(skipped when JAX is not importable), and NumPy's
``Generator.standard_normal(dtype=float32)``. Prints the median of several
runs and the ratios to NumPy.

Run: ``.venv/bin/python -m benchmarks.bench_random [--n N] [--repeats R] [--backend cpu|reference]``
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _median_seconds(fn, repeats: int) -> float:
    fn()  # warm up: compile, first-touch allocation
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--backend", default=None, help="tracejit backend (default: tracejit.config.backend)")
    args = ap.parse_args(argv)
    n, shape = args.n, (args.n,)
    results = {}

    gen = np.random.default_rng(0)
    results["numpy Generator.standard_normal"] = _median_seconds(
        lambda: gen.standard_normal(n, dtype=np.float32), args.repeats)

    import tracejit
    from tracejit import random as trandom
    key = trandom.PRNGKey(0)
    f = tracejit.jit(lambda k: trandom.normal(k, shape, np.float32), backend=args.backend)
    results["tracejit.random.normal (jit)"] = _median_seconds(lambda: f(key), args.repeats)

    try:
        import jax
        from jax import random as jrandom
    except ImportError:
        print("jax is not importable: skipping jax.random.normal (install jax in a separate venv to compare)")
    else:
        jkey = jrandom.PRNGKey(0)
        g = jax.jit(lambda k: jrandom.normal(k, shape, np.float32))
        results["jax.random.normal (jax.jit)"] = _median_seconds(lambda: g(jkey).block_until_ready(),
                                                                 args.repeats)

    base = results["numpy Generator.standard_normal"]
    print(f"{n:,} float32 standard normals, median of {args.repeats} runs")
    for name, t in results.items():
        print(f"  {name:36s} {t * 1e3:9.2f} ms   {t / base:6.2f}x numpy")


if __name__ == "__main__":
    main()
