"""bfloat16 programs (stored in 16 bits, computed in float32): tracejit vs NumPy (ml_dtypes) vs JAX.

Rows: softmax over 2048x4096, a GELU chain on 4M elements, and an MLP layer relu(x @ W + b) at
(1024, 768) x (768, 3072), all in bfloat16; medians, ratios against peers of the same run.
"""
import numpy as np

import tracejit
import tracejit.numpy as tnp
from benchmarks.common import block, header, jax_cpu, median_time, row

BF16 = tnp.bfloat16


def softmax(x, xp):
    e = xp.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def gelu(x, xp):
    return 0.5 * x * (1 + xp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def mlp(x, w, b, xp):
    return xp.maximum(x @ w + b, 0)


def compare(name, fn, args):
    header(name)
    t_np = median_time(lambda: fn(*args, np), repeat=3)
    jf = tracejit.jit(lambda *a: fn(*a, tnp))
    jf(*args)
    t_tj = median_time(lambda: jf(*args))
    print(row("numpy (ml_dtypes) eager", t_np))
    print(row("tracejit jit", t_tj, t_np, "vs numpy"))
    jax = jax_cpu()
    if jax is not None:
        import jax.numpy as jjnp
        jargs = [jax.device_put(a) for a in args]
        jj = jax.jit(lambda *a: fn(*a, jjnp))
        block(jj(*jargs))
        t_jax = median_time(lambda: block(jj(*jargs)))
        print(row("jax jit", t_jax, t_np, "vs numpy"))
        print(f"  => tracejit vs jax: {t_jax / t_tj:.2f}x faster")


def main():
    rng = np.random.default_rng(0)
    compare("softmax 2048x4096 bf16", softmax, (rng.standard_normal((2048, 4096)).astype(BF16),))
    compare("gelu 4M bf16", gelu, (rng.standard_normal(4 * 1024 * 1024).astype(BF16),))
    x = rng.standard_normal((1024, 768)).astype(BF16)
    w = (rng.standard_normal((768, 3072)) * 0.03).astype(BF16)
    b = rng.standard_normal(3072).astype(BF16)
    compare("mlp layer (1024,768)x(768,3072) bf16", mlp, (x, w, b))


if __name__ == "__main__":
    main()
