"""Compiled backward passes: LayerNorm forward+backward (8192x768) and a softmax
cross-entropy MLP training step (784-1024-10, batch 256, SGD), tracejit
jit(grad) vs JAX jit(grad), and PyTorch eager and ``torch.compile`` in a child process (peers
when installed)."""
import sys

import numpy as np

import tracejit
from benchmarks.common import (block, header, jax_cpu, median_time, paired_line, paired_times, row, torch_child,
                               torch_peer, torch_rows)


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


def _inputs():
    """``(layernorm args, (mlp params, x, labels))``, the same in the parent and in the PyTorch child."""
    rng = np.random.default_rng(0)
    ln_args = [rng.standard_normal((8192, 768)).astype(np.float32), np.ones(768, np.float32),
               np.zeros(768, np.float32), rng.standard_normal((8192, 768)).astype(np.float32)]
    params = [rng.standard_normal(s).astype(np.float32) * 0.05 for s in [(784, 1024), (1024,), (1024, 10), (10,)]]
    x = rng.standard_normal((256, 784)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 256)]
    return ln_args, (params, x, labels)


def _torch_cases(torch):
    """Both cases as a PyTorch user writes them: ``autograd.grad`` of the same losses, and the MLP's
    SGD update returning new parameters."""
    F = torch.nn.functional
    ln_args, (params, x, labels) = _inputs()

    def ln_grads(x, g, b, dy):
        return torch.autograd.grad((F.layer_norm(x, (x.shape[-1],), g, b) * dy).sum(), (x, g, b))

    def mlp_step(p, x, y):
        w1, b1, w2, b2 = p
        logp = torch.log_softmax(torch.relu(x @ w1 + b1) @ w2 + b2, -1)
        grads = torch.autograd.grad(-(logp * y).sum() / x.shape[0], p)
        with torch.no_grad():
            return [q - 0.01 * g for q, g in zip(p, grads)]
    ln_t = [torch.tensor(a, requires_grad=i < 3) for i, a in enumerate(ln_args)]
    return {"layernorm": (ln_grads, ln_t),
            "mlp step": (mlp_step, ([torch.tensor(a, requires_grad=True) for a in params], torch.tensor(x),
                                    torch.tensor(labels)))}


def main():
    if "--torch-child" in sys.argv:
        torch_child(_torch_cases)
        return
    torch_report = torch_peer("benchmarks.bench_autodiff")
    args, (params, x, labels) = _inputs()
    jax = jax_cpu()
    jnp_ = __import__("jax.numpy", fromlist=["x"]) if jax is not None else None
    header("LayerNorm forward+backward 8192x768 f32")
    tj = tracejit.jit(tracejit.grad(ln_loss, argnums=(0, 1, 2)))
    out = tj(*args)
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
    torch_rows("LayerNorm forward+backward", out, t_tj, torch_report.get("layernorm", []))

    header("MLP 784-1024-10 training step, batch 256, f32")
    step = tracejit.jit(lambda p, x, y: sgd_step(p, x, y, tracejit.grad(mlp_loss)))
    out = step(params, x, labels)
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
    torch_rows("MLP training step", out, t_tj, torch_report.get("mlp step", []))


if __name__ == "__main__":
    main()
