"""Compiled backward passes: LayerNorm forward+backward (8192x768) and a softmax
cross-entropy MLP training step (784-1024-10, batch 256, SGD), tracejit
jit(grad) vs JAX jit(grad) (and PyTorch eager when installed)."""
import numpy as np

import tracejit
from benchmarks.common import block, header, jax_cpu, median_time, optional, paired_line, paired_times, row


def layernorm(x, g, b, xp=np):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / xp.sqrt(v + 1e-5) * g + b


def ln_loss(x, g, b, dy, xp=np):
    return (layernorm(x, g, b, xp) * dy).sum()


def mlp_loss(params, x, labels, xp=np):
    w1, b1, w2, b2 = params
    h = xp.maximum(x @ w1 + b1, 0)
    logits = h @ w2 + b2
    m = logits.max(-1, keepdims=True)
    logp = logits - m - xp.log(xp.exp(logits - m).sum(-1, keepdims=True))
    return -(logp * labels).sum() / x.shape[0]


def sgd_step(params, x, labels, grad_fn):
    grads = grad_fn(params, x, labels)
    return [p - 0.01 * g for p, g in zip(params, grads)]


def main():
    rng = np.random.default_rng(0)
    jax = jax_cpu()
    jnp_ = __import__("jax.numpy", fromlist=["x"]) if jax is not None else None
    header("LayerNorm forward+backward 8192x768 f32")
    args = [rng.standard_normal((8192, 768)).astype(np.float32), np.ones(768, np.float32),
            np.zeros(768, np.float32), rng.standard_normal((8192, 768)).astype(np.float32)]
    tj = tracejit.jit(tracejit.grad(ln_loss, argnums=(0, 1, 2)))
    tj(*args)
    kernels = len(tj.lower(*args).compile().kernels)
    t_tj = median_time(lambda: tj(*args))
    print(row("tracejit jit(grad)", t_tj, None, f"{kernels} kernels"))
    if jax is not None:
        jj = jax.jit(jax.grad(lambda *a: ln_loss(*a, xp=jnp_), argnums=(0, 1, 2)))
        jargs = [jax.device_put(a) for a in args]
        block(jj(*jargs))
        t_jax = median_time(lambda: block(jj(*jargs)))
        print(row("jax jit(grad)", t_jax))
        print(f"  => tracejit vs jax: {t_jax / t_tj:.2f}x faster")
    torch = optional("torch")
    if torch is not None:
        xt = [torch.tensor(a, requires_grad=i < 3) for i, a in enumerate(args)]

        def torch_step():
            for t in xt[:3]:
                t.grad = None
            m = xt[0].mean(-1, keepdim=True)
            v = ((xt[0] - m) ** 2).mean(-1, keepdim=True)
            (((xt[0] - m) / torch.sqrt(v + 1e-5) * xt[1] + xt[2]) * xt[3]).sum().backward()
        t_torch = median_time(torch_step)
        print(row("pytorch eager", t_torch, None, f"tracejit {t_torch / t_tj:.2f}x faster"))

    header("MLP 784-1024-10 training step, batch 256, f32")
    params = [rng.standard_normal(s).astype(np.float32) * 0.05 for s in [(784, 1024), (1024,), (1024, 10), (10,)]]
    x = rng.standard_normal((256, 784)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 256)]
    step = tracejit.jit(lambda p, x, y: sgd_step(p, x, y, tracejit.grad(mlp_loss)))
    step(params, x, labels)
    t_tj = median_time(lambda: step(params, x, labels))
    print(row("tracejit jit(step)", t_tj))
    if jax is not None:
        jstep = jax.jit(lambda p, x, y: sgd_step(p, x, y, jax.grad(lambda p, x, y: mlp_loss(p, x, y, jnp_))))
        jp, jx, jy = [jax.device_put(p) for p in params], jax.device_put(x), jax.device_put(labels)
        block(jstep(jp, jx, jy))
        # (issue 15's row: timed in alternating rounds, as the machine moves between two medians)
        _, ratios = paired_times([lambda: step(params, x, labels), lambda: block(jstep(jp, jx, jy))], rounds=8)
        t_jax = median_time(lambda: block(jstep(jp, jx, jy)))
        print(row("jax jit(step)", t_jax))
        print(paired_line("jax", ratios))


if __name__ == "__main__":
    main()
