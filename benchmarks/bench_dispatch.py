"""Per-call dispatch overhead on a tiny input: tracejit jit vs JAX jit vs NumPy."""
import numpy as np

import tracejit
from benchmarks.common import block, header, jax_cpu, median_time, row


def tiny(x):
    return x * 2.0 + 1.0


def main():
    header("dispatch overhead, f32[8]")
    x = np.ones(8, np.float32)
    jt = tracejit.jit(tiny)
    jt(x)
    t_np = median_time(lambda: tiny(x), min_time=0.05)
    t_tj = median_time(lambda: jt(x), min_time=0.05)
    print(row("numpy eager (2 ufunc calls)", t_np))
    print(row("tracejit jit call", t_tj, t_np))
    xa = tracejit.device_put(x)             # a tracejit.Array argument (the result of an earlier call)
    t_tj_array = median_time(lambda: jt(xa), min_time=0.05)
    print(row("tracejit jit call (Array in)", t_tj_array, t_np))
    jax = jax_cpu()
    if jax is not None:
        xj = jax.device_put(x)
        jj = jax.jit(tiny)
        block(jj(xj))
        t_jax = median_time(lambda: block(jj(xj)), min_time=0.05)
        t_jax_np = median_time(lambda: np.asarray(jj(x)), min_time=0.05)
        print(row("jax jit call (device array in)", t_jax, t_np))
        print(row("jax jit call (numpy in, numpy out)", t_jax_np, t_np))
        print(f"  => tracejit dispatch vs jax: {t_jax / t_tj:.2f}x faster (numpy in/out: {t_jax_np / t_tj:.2f}x)")


if __name__ == "__main__":
    main()
