"""bfloat16 programs (stored in 16 bits, computed in float32): tracejit vs NumPy (ml_dtypes) vs JAX.

Rows: softmax over 2048x4096, a GELU chain on 4M elements, and an MLP layer relu(x @ W + b) at
(1024, 768) x (768, 3072), all in bfloat16; medians, ratios against peers of the same run.
"""
import numpy as np

import tracejit.numpy as tnp
from benchmarks.bench_norms import compare
from benchmarks.common import jax_cpu

BF16 = tnp.bfloat16


def softmax(x, xp):
    e = xp.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def gelu(x, xp):
    return 0.5 * x * (1 + xp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def mlp(x, w, b, xp):
    return xp.maximum(x @ w + b, 0)


def _bench(name, fn, args, jnp_):
    # The NumPy row runs ml_dtypes' loops; under tracejit.jit the same NumPy calls dispatch to tracejit.
    compare(name, lambda *a: fn(*a, np), args, (lambda *a: fn(*a, jnp_)) if jnp_ else None)


def main():
    rng = np.random.default_rng(0)
    jnp_ = __import__("jax.numpy", fromlist=["x"]) if jax_cpu() is not None else None
    _bench("softmax 2048x4096 bf16", softmax, (rng.standard_normal((2048, 4096)).astype(BF16),), jnp_)
    _bench("gelu 4M bf16", gelu, (rng.standard_normal(4 * 1024 * 1024).astype(BF16),), jnp_)
    x = rng.standard_normal((1024, 768)).astype(BF16)
    w = (rng.standard_normal((768, 3072)) * 0.03).astype(BF16)
    b = rng.standard_normal(3072).astype(BF16)
    _bench("mlp layer (1024,768)x(768,3072) bf16", mlp, (x, w, b), jnp_)


if __name__ == "__main__":
    main()
