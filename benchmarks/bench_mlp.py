"""GPT-2-style MLP gelu(x@W1+b1)@W2+b2 at (128,768), (1024,768), (128,3072):
compile time and run time per shape, tracejit vs JAX vs NumPy, and PyTorch eager and
``torch.compile`` (in a child process) where installed.

BLAS note: OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE may be set on these machines; for
this benchmark `make bench` unsets both in this command alone (see Makefile).
"""
import sys
import tempfile
import time

import numpy as np

import tracejit
from tracejit.backends.cpu import blas
from benchmarks.common import (block, header, jax_cpu, median_time, paired_line, paired_times, row, torch_child,
                               torch_peer, torch_rows)


def gelu(x, xp=np):
    return 0.5 * x * (1 + xp.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def mlp(x, w1, b1, w2, b2, xp=np):
    return gelu(x @ w1 + b1, xp) @ w2 + b2


SHAPES = [(128, 768), (1024, 768), (128, 3072)]      # (rows, model width): the hidden layer is 4x wider


def _inputs() -> dict:
    """``(rows, d) -> [x, w1, b1, w2, b2]``, the same in the parent and in the PyTorch child."""
    rng = np.random.default_rng(0)
    return {(rows, d): [rng.standard_normal(s).astype(np.float32) * 0.05 for s in
                        [(rows, d), (d, 4 * d), (4 * d,), (4 * d, d), (d,)]] for rows, d in SHAPES}


def _torch_cases(torch):
    return {f"{rows}x{d}": (lambda *a: mlp(*a, xp=torch), [torch.tensor(a) for a in args])
            for (rows, d), args in _inputs().items()}


def main():
    if "--torch-child" in sys.argv:
        torch_child(_torch_cases)
        return
    torch_report = torch_peer("benchmarks.bench_mlp")
    inputs = _inputs()
    jax = jax_cpu()
    jnp_ = __import__("jax.numpy", fromlist=["x"]) if jax is not None else None
    # The BLAS choice is measured once per machine (and stored), not per program: done here, so the
    # compile times below are the programs' own.
    t0 = time.perf_counter()
    auto = blas.provider()
    print(f"  BLAS choice ({getattr(auto, 'source', auto.name)}): {time.perf_counter() - t0:.2f} s, "
          "once per machine, not counted in the compile times below")
    for rows, d in SHAPES:
        header(f"MLP x[{rows},{d}] -> {4 * d} -> {d}, f32")
        args = inputs[rows, d]
        t_np = median_time(lambda: mlp(*args), repeat=5)
        saved = tracejit.config.compilation_cache_dir
        with tempfile.TemporaryDirectory(prefix="tracejit-cold-cache-") as cold_cache:
            tracejit.config.update("compilation_cache_dir", cold_cache)    # compile times are cold
            t0 = time.perf_counter()
            compiled = tracejit.jit(mlp).lower(*args).compile()
            t_compile = time.perf_counter() - t0
            tracejit.config.update("compilation_cache_dir", saved)
        out = compiled(*args)
        t_tj = median_time(lambda: compiled(*args))
        print(row("numpy eager", t_np))
        print(row("tracejit jit", t_tj, t_np, f"vs numpy; compile {t_compile * 1e3:.0f} ms (cold cache)"))
        if jnp_ is not None:
            jargs = [jax.device_put(a) for a in args]
            t0 = time.perf_counter()
            jc = jax.jit(lambda *a: mlp(*a, xp=jnp_)).lower(*jargs).compile()
            t_jcompile = time.perf_counter() - t0
            block(jc(*jargs))
            (_, t_jax), ratios = paired_times([lambda: compiled(*args), lambda: block(jc(*jargs))])
            print(row("jax jit", t_jax, t_np, f"vs numpy; compile {t_jcompile * 1e3:.0f} ms"))
            print(paired_line("jax (run time)", ratios) + f"; compile: {t_jcompile / t_compile:.2f}x faster")
        torch_rows(f"MLP {rows}x{d}", out, t_tj, torch_report.get(f"{rows}x{d}", []))


if __name__ == "__main__":
    main()
