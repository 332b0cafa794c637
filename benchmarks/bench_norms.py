"""Softmax (4096x4096) and LayerNorm forward (8192x768), float32: tracejit vs NumPy vs JAX."""
import numpy as np

import tracejit
from benchmarks.common import block, header, jax_cpu, median_time, row


def softmax(x, xp=np):
    m = x.max(-1, keepdims=True)
    e = xp.exp(x - m)
    return e / e.sum(-1, keepdims=True)


def layernorm(x, g, b, xp=np):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / xp.sqrt(v + 1e-5) * g + b


def compare(name, fn, args, jax_fn=None):
    header(name)
    t_np = median_time(lambda: fn(*args), repeat=5)
    jf = tracejit.jit(fn)
    jf(*args)
    kernels = len(jf.lower(*args).compile().kernels)
    t_tj = median_time(lambda: jf(*args))
    print(row("numpy eager", t_np))
    print(row("tracejit jit", t_tj, t_np, f"vs numpy; {kernels} kernel(s)"))
    jax = jax_cpu()
    if jax is not None and jax_fn is not None:
        jargs = [jax.device_put(a) for a in args]
        jj = jax.jit(jax_fn)
        block(jj(*jargs))
        t_jax = median_time(lambda: block(jj(*jargs)))
        print(row("jax jit", t_jax, t_np, "vs numpy"))
        print(f"  => tracejit vs jax: {t_jax / t_tj:.2f}x faster")


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4096, 4096)).astype(np.float32)
    jax = jax_cpu()
    jnp_ = __import__("jax.numpy", fromlist=["x"]) if jax is not None else None
    compare("softmax 4096x4096 f32", softmax, (x,),
            (lambda x: softmax(x, jnp_)) if jnp_ else None)
    x = rng.standard_normal((8192, 768)).astype(np.float32)
    g, b = rng.standard_normal(768).astype(np.float32), rng.standard_normal(768).astype(np.float32)
    compare("layernorm 8192x768 f32", layernorm, (x, g, b),
            (lambda x, g, b: layernorm(x, g, b, jnp_)) if jnp_ else None)


if __name__ == "__main__":
    main()
