"""The tracejit showcase (`make demo`): the seed examples end to end."""
import os
import time

import numpy as np

import tracejit
import tracejit.numpy as jnp
from tracejit import lax, random


def relu(x):
    return np.maximum(x, 0)


def f(x):
    return x * 2 + np.sin(x)


def g(x):
    return np.exp(f(f(x))) - x


def median_ms(fn, n=5):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * sorted(times)[len(times) // 2]


def main():
    print("1. relu traced to a program (jaxpr form):")
    print("  ", tracejit.make_jaxpr(relu)(np.array([-1., 0., 1.], np.float32)))

    print("\n2. Python control flow on a traced value fails with a helpful error:")
    try:
        tracejit.jit(lambda x: x if x.sum() > 0 else -x)(np.ones(3))
    except tracejit.ConcretizationTypeError as e:
        print("  ", type(e).__name__ + ":", str(e)[:150], "...")
    fixed = tracejit.jit(lambda x: lax.cond(x.sum() > 0, lambda: x, lambda: -x))
    print("   fixed with lax.cond:", fixed(np.array([1., -3.])))

    print("\n3. Fusion: g(x) = exp(f(f(x))) - x with f(x) = x*2 + sin(x)")
    x = np.random.default_rng(0).standard_normal(4_000_000).astype(np.float32)
    t0 = time.perf_counter()
    compiled = tracejit.jit(g).lower(x).compile()
    compile_ms = (time.perf_counter() - t0) * 1e3
    np.testing.assert_allclose(compiled(x), g(x), rtol=2e-5, atol=1e-5)
    print(f"   {len(compiled.kernels)} kernel after fusion (trace+compile {compile_ms:.0f} ms):")
    print("  ", compiled.as_text().splitlines()[0])
    t_np, t_jit = median_ms(lambda: g(x)), median_ms(lambda: compiled(x))
    print(f"   NumPy {t_np:.1f} ms, tracejit {t_jit:.1f} ms per call on {x.size:,} float32 "
          f"({t_np / t_jit:.1f}x)")
    print("   memory:", compiled.memory_analysis())

    print("\n4. Static argument + dynamic slice:")
    dyn = tracejit.jit(lambda x, start, size: lax.dynamic_slice(x, (start,), (size,)), static_argnums=(2,))
    print("  ", dyn(np.arange(10.), 3, 4))

    print("\n5. Padding + masking for variable lengths (3 buckets, any length):")
    seqs = tracejit.jit(lambda s, m: np.maximum(s, 0) * m[:, :, None])
    padded, mask = tracejit.pad_to_bucket(np.random.default_rng(1).standard_normal((2, 5, 3)), 1, (8, 16))
    print("   padded", padded.shape, "->", seqs(padded, mask.astype(padded.dtype)[None].repeat(2, 0)).shape)

    print("\n6. Functional random numbers: dropout(x, key)")
    key = random.PRNGKey(42)

    def dropout(x, key):
        mask = random.bernoulli(key, 0.8, x.shape)
        return x * mask / 0.8
    k1, k2 = random.split(key)
    print("  ", tracejit.jit(dropout)(np.ones(6), k1), "(new key ->)", tracejit.jit(dropout)(np.ones(6), k2))

    print("\n7. Gradients compile with the forward pass: grad of LayerNorm")
    def layernorm_loss(x):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return ((x - m) / np.sqrt(v + 1e-5)).sum() * 0 + (((x - m) / np.sqrt(v + 1e-5)) ** 3).sum()
    xg = np.random.default_rng(2).standard_normal((64, 128))
    grad_fn = tracejit.jit(tracejit.grad(layernorm_loss))
    print("   grad shape", grad_fn(xg).shape, "kernels:", len(grad_fn.lower(xg).compile().kernels))

    print("\n8. Where to put jit? The advisor measures it:")
    small = np.random.default_rng(3).standard_normal(1_000_000).astype(np.float32)
    print(tracejit.advise(g, small, inner=[f], calls=1000))

    path = os.path.abspath("report_g.html")
    tracejit.report(g, small, path=path)
    print(f"\n9. HTML report of jit(g) written to {path}")


if __name__ == "__main__":
    main()
