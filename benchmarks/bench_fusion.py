"""Seed example g(x) = exp(f(f(x))) - x with f(x) = x*2 + sin(x) on 10M float32:
tracejit jit vs NumPy eager vs JAX jit vs the memory-bandwidth floor; plus
first-call (trace + compile + run) time against JAX's.

First calls are measured in fresh processes (benchmarks/first_call_child.py),
each importing one library, building the input and calling ``jit(g)`` once:
what a user's program sees.  tracejit's persistent compile cache points at a
new, empty directory, so nothing compiled earlier is reused (JAX's persistent
cache is off by default).  The medians of FIRST_CALL_RUNS processes each are
compared; the two libraries take turns.  A first call inside this process
(after other compiles warmed both libraries up) is shown too."""
import json
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import tracejit
from benchmarks.common import SETTLE_SECONDS, block, first_call_time, header, jax_cpu, median_time, row

FIRST_CALL_RUNS = 7


def f(x):
    return x * 2 + np.sin(x)


def g(x):
    return np.exp(f(f(x))) - x


def main(n=10_000_000):
    header(f"seed g on {n:,} float32")
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    # First, before NumPy's eager g churns through 40 MB temporaries: on this VM, memory the
    # process gets back from the OS right after that faults in ~10x slower for a while, which
    # would be charged to whichever library allocates next.
    cache_setting = tracejit.config.compilation_cache_dir
    with tempfile.TemporaryDirectory(prefix="tracejit-cold-cache-") as cold_cache:
        tracejit.config.update("compilation_cache_dir", cold_cache)
        j_first = tracejit.jit(g)
        t_first = first_call_time(lambda: j_first(x))
        tracejit.config.update("compilation_cache_dir", cache_setting)
    out = np.empty_like(x)
    t_floor = median_time(lambda: np.copyto(out, x))
    t_np = median_time(lambda: g(x), repeat=5)
    jg = tracejit.jit(g)
    jg(x)
    t_tj = median_time(lambda: jg(x))
    print(row("bandwidth floor (np.copyto)", t_floor))
    print(row("numpy eager", t_np))
    print(row("tracejit jit", t_tj, t_np, f"vs numpy; {t_tj / t_floor:.2f}x the bandwidth floor"))
    jax = jax_cpu()
    fresh = _first_calls_in_new_processes(["tracejit"] + (["jax"] if jax is not None else []), n)
    if fresh.get("tracejit"):
        t_fresh = statistics.median(s for s, _ in fresh["tracejit"])
        print(row("tracejit first call, new process", t_fresh, extra=f"median of {len(fresh['tracejit'])} processes"))
        print("    " + _first_call_stages(min(fresh["tracejit"], key=lambda r: abs(r[0] - t_fresh))[1], t_fresh))
    print(row("tracejit first call, this process", t_first, extra="cold compile cache"))
    print("    " + _first_call_stages(j_first.lower(x).compile().timings, t_first))
    if jax is not None:
        import jax.numpy as jjnp

        def jf(x):
            return x * 2 + jjnp.sin(x)

        def jgf(x):
            return jjnp.exp(jf(jf(x))) - x
        xj = jax.device_put(x)
        t_jfirst = first_call_time(lambda: block(jax.jit(jgf)(xj)))
        jj = jax.jit(jgf)
        block(jj(xj))
        t_jax = median_time(lambda: block(jj(xj)))
        print(row("jax jit", t_jax, t_np, "vs numpy"))
        print(row("jax first call, this process", t_jfirst))
        summary = f"  => tracejit vs jax steady: {t_jax / t_tj:.2f}x faster"
        if fresh.get("tracejit") and fresh.get("jax"):
            t_jax_fresh = statistics.median(s for s, _ in fresh["jax"])
            print(row("jax first call, new process", t_jax_fresh, extra=f"median of {len(fresh['jax'])} processes"))
            summary += f"; first call in a new process: {t_jax_fresh / t_fresh:.2f}x faster"
        print(summary + f"; first call in this process: {t_jfirst / t_first:.2f}x faster")


def _first_calls_in_new_processes(libraries: list, n: int) -> dict:
    """``{library: [(seconds, timings)]}`` from FIRST_CALL_RUNS fresh processes each
    (benchmarks/first_call_child.py), the libraries taking turns so that both meet the same
    machine: after heavy allocation, this VM faults pages in slowly for a while."""
    results = {lib: [] for lib in libraries}
    time.sleep(SETTLE_SECONDS)
    for _ in range(FIRST_CALL_RUNS):
        for lib in libraries:
            proc = subprocess.run([sys.executable, "-m", "benchmarks.first_call_child", lib, str(n)],
                                  capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                print(f"  [first call in a new process ({lib}) failed: {proc.stderr.strip()[-300:]}]")
                results[lib] = []
                libraries = [x for x in libraries if x != lib]
                continue
            data = json.loads(proc.stdout.strip().splitlines()[-1])
            results[lib].append((data["seconds"], data["timings"]))
    return results


def _first_call_stages(timings, t_first) -> str:
    """Where the first call went: tracing, passes, IR emission, LLVM, and the rest (mostly the run)."""
    stages = {"trace": timings.get("trace_ms", 0.0), "passes": timings.get("passes_ms", 0.0),
              "IR": timings.get("codegen_ms", 0.0), "LLVM": timings.get("llvm_ms", 0.0)}
    llvm = ", ".join(f"{k[5:-3]} {v:.1f}" for k, v in timings.items()
                     if k.startswith("llvm_") and k != "llvm_ms" and isinstance(v, float))
    rest = t_first * 1e3 - sum(stages.values())
    return ("first call ms: " + ", ".join(f"{k} {v:.1f}" for k, v in stages.items())
            + f" ({llvm}), run+dispatch {rest:.1f}")


if __name__ == "__main__":
    main()
