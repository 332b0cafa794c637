"""One first call of seed ``g`` in a fresh process (run by bench_fusion, a few times over).

``python -m benchmarks.first_call_child tracejit|jax N`` imports only that
library, builds the input, then times the first call of ``jit(g)`` (trace,
compile, run) and prints a JSON line: ``{"seconds": ..., "timings": {...}}``.
This is what a user's script sees: imports at the top, then data, then the
call.  tracejit's persistent
compile cache points at a new, empty directory; JAX's is off by default.
"""
import json
import sys
import tempfile
import time

import numpy as np


def _tracejit(x):
    import tracejit         # imported at start-up, in main()
    tracejit.config.update("compilation_cache_dir", tempfile.mkdtemp(prefix="tracejit-cold-cache-"))

    def f(v):
        return v * 2 + np.sin(v)

    def g(v):
        return np.exp(f(f(v))) - v
    jitted = tracejit.jit(g)
    t0 = time.perf_counter()
    jitted(x)
    seconds = time.perf_counter() - t0
    timings = jitted.lower(x).compile().timings
    return seconds, {k: v for k, v in timings.items() if isinstance(v, float)}


def _jax(x):
    import jax              # imported at start-up, in main()
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    xj = jax.device_put(x)     # starts JAX's CPU backend, as a user's first array does

    def f(v):
        return v * 2 + jnp.sin(v)

    def g(v):
        return jnp.exp(f(f(v))) - v
    t0 = time.perf_counter()
    jax.jit(g)(xj).block_until_ready()
    return time.perf_counter() - t0, {}


def main(which: str, n: int) -> None:
    __import__({"tracejit": "tracejit", "jax": "jax.numpy"}[which])
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    seconds, timings = {"tracejit": _tracejit, "jax": _jax}[which](x)
    print(json.dumps({"seconds": seconds, "timings": timings}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
