"""Peak memory of a GPT-2 layer (d 768, 12 heads, seq 128, batch 4, float32), forward and
forward+backward: tracejit jit vs JAX jit (when installed), each in a fresh process.

What is measured is the peak resident memory *of running the program* above what the process
holds before: each child builds the inputs and compiles the function ahead of time
(``jit(f).lower(...).compile()``, so compiler memory is not counted), resets the kernel's
peak-RSS mark (``/proc/self/clear_refs``, Linux) and reads ``VmRSS``; after the first call it
reads ``VmHWM`` (the new peak). The difference is what running needed: temporaries, arenas
(tracejit keeps its arena between calls), saved activations and outputs.
Without ``clear_refs`` (not Linux, or not permitted) the peak since process start is reported
instead, and the table says so.

The whole peak includes compiling: with a warm persistent compile cache tracejit loads its code
instead (``TRACEJIT_CACHE_DIR=off`` measures a cold LLVM compile). tracejit's BLAS choice (a
one-time timing of the installed libraries, then cached) is made before measuring.

Run: ``python -m benchmarks.bench_memory`` (peers from the ``peers`` extra; JAX skipped when missing).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

CASES = ("forward", "forward+backward")


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def child(library: str, case: str) -> dict:
    """Run in a fresh process: peak MiB of one call above the process's memory before it."""
    import numpy as np
    from benchmarks.bench_gpt2_layer import B, D, T, layer, loss
    rng = np.random.default_rng(0)
    shapes = [(D,), (D,), (D, 3 * D), (3 * D,), (D, D), (D,), (D,), (D,), (D, 4 * D), (4 * D,), (4 * D, D), (D,)]
    params = [(rng.standard_normal(s) * 0.02).astype(np.float32) for s in shapes]
    x = rng.standard_normal((B, T, D)).astype(np.float32)
    if library == "tracejit":
        import tracejit
        xp, jit, grad = __import__("tracejit.numpy", fromlist=["x"]), tracejit.jit, tracejit.grad
        # The BLAS provider is chosen by timing the installed ones once per machine (then read from
        # the compile cache): made here, before measuring, so its test products are not counted.
        square = np.ones((256, 256), np.float32)
        tracejit.jit(lambda a, b: a @ b)(square, square)

        def done(r):
            return r
    else:
        import jax
        jax.config.update("jax_platforms", "cpu")
        xp, jit, grad = jax.numpy, jax.jit, jax.grad
        params = [jax.device_put(p) for p in params]
        x = jax.device_put(x)

        def done(r):
            return jax.block_until_ready(r)
    if case == "forward":
        fn = jit(lambda p, x: layer(p, x, xp))
    else:
        fn = jit(grad(lambda p, x: loss(p, x, xp)))
    reset = _reset_peak()
    inputs = _status_kib("VmRSS")
    # Compiled ahead of time, then one call: the whole peak above the inputs (the measure),
    # and the call's own peak above what the process held after compiling.
    compiled = fn.lower(params, x).compile()
    peak_compile = _status_kib("VmHWM")
    _reset_peak()
    before_call = _status_kib("VmRSS")
    out = done(compiled(params, x))
    peak_call = _status_kib("VmHWM")
    del out
    return {"peak_mib": (max(peak_compile, peak_call) - inputs) / 1024,
            "call_mib": (peak_call - before_call) / 1024, "reset": reset}


def run_child(library: str, case: str):
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", "benchmarks.bench_memory", "--child", library, case],
                          capture_output=True, text=True, timeout=600, env=env)
    if proc.returncode != 0:
        return None, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


def main():
    try:
        import jax  # noqa: F401
        libraries = ("tracejit", "jax")
    except ImportError:
        print("  (JAX not installed: install the peers extra to compare; tracejit only)")
        libraries = ("tracejit",)
    print("Peak RSS above the inputs, MiB, fresh process each (compile ahead of time + one call), and in "
          "brackets the call's own peak above the compiled state; GPT-2 layer d 768, 12 heads, seq 128, "
          "batch 4, float32")
    print(f"  {'case':<18} " + " ".join(f"{lib:>18}" for lib in libraries) + "   tracejit / jax (whole)")
    no_reset = False
    for case in CASES:
        cells, values = [], {}
        for lib in libraries:
            res, err = run_child(lib, case)
            if res is None:
                cells.append(f"{'failed':>18}")
                print(f"  ({lib} {case}: {err})")
                continue
            values[lib] = res["peak_mib"]
            no_reset |= not res["reset"]
            cells.append(f"{res['peak_mib']:>9.1f} [{res['call_mib']:5.1f}]")
        ratio = f"{values['tracejit'] / values['jax']:.2f}" if len(values) == 2 and values["jax"] > 0 else "-"
        print(f"  {case:<18} " + " ".join(cells) + f"   {ratio}")
    if no_reset:
        print("  (/proc/self/clear_refs was not available: peaks are since process start)")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], sys.argv[3])))
    else:
        main()
