"""A GPT-2 small transformer layer (d 768, 12 heads, seq 128, batch 4), forward and
forward+backward, float32: tracejit jit vs NumPy eager vs JAX jit, and PyTorch eager and
``torch.compile`` in a child process (peers when installed)."""
import sys

import numpy as np

import tracejit
from benchmarks.common import (block, header, jax_cpu, median_time, paired_line, paired_times, row, torch_child,
                               torch_peer, torch_rows)

D, H, T, B = 768, 12, 128, 4


def layer(params, x, xp=np):
    (g1, b1, wqkv, bqkv, wo, bo, g2, b2, w1, c1, w2, c2) = params

    def ln(v, g, b):
        m = v.mean(-1, keepdims=True)
        s = ((v - m) ** 2).mean(-1, keepdims=True)
        return (v - m) / xp.sqrt(s + 1e-5) * g + b

    def gelu(v):
        return 0.5 * v * (1 + xp.tanh(0.7978845608028654 * (v + 0.044715 * v ** 3)))

    h = ln(x, g1, b1)
    qkv = h @ wqkv + bqkv                                   # [B, T, 3D]
    q, k, v = qkv[..., :D], qkv[..., D:2 * D], qkv[..., 2 * D:]
    q = q.reshape(B, T, H, D // H).transpose(0, 2, 1, 3)
    k = k.reshape(B, T, H, D // H).transpose(0, 2, 1, 3)
    v = v.reshape(B, T, H, D // H).transpose(0, 2, 1, 3)
    att = q @ k.transpose(0, 1, 3, 2) / (D // H) ** 0.5     # [B, H, T, T]
    causal = np.tril(np.ones((T, T), bool))
    att = xp.where(causal, att, -1e9)
    att = att - att.max(-1, keepdims=True)
    att = xp.exp(att)
    att = att / att.sum(-1, keepdims=True)
    y = (att @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    x = x + y @ wo + bo
    return x + gelu(ln(x, g2, b2) @ w1 + c1) @ w2 + c2


def loss(params, x, xp=np):
    return (layer(params, x, xp) ** 2).mean()


def _inputs():
    """``(params, x)``, the same in the parent and in the PyTorch child."""
    rng = np.random.default_rng(0)
    shapes = [(D,), (D,), (D, 3 * D), (3 * D,), (D, D), (D,), (D,), (D,), (D, 4 * D), (4 * D,), (4 * D, D), (D,)]
    params = [(rng.standard_normal(s) * 0.02 + (1.0 if i in (0, 6) and len(s) == 1 else 0)).astype(np.float32)
              for i, s in enumerate(shapes)]
    return params, rng.standard_normal((B, T, D)).astype(np.float32)


def _torch_cases(torch):
    """The layer as a PyTorch user writes it (``F.layer_norm``, ``F.gelu(approximate="tanh")``, a causal
    ``masked_fill``, ``softmax``): forward, and the gradients of the mean square of its output."""
    F = torch.nn.functional
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))

    def torch_layer(p, x):
        (g1, b1, wqkv, bqkv, wo, bo, g2, b2, w1, c1, w2, c2) = p
        q, k, v = (F.layer_norm(x, (D,), g1, b1) @ wqkv + bqkv).split(D, dim=-1)
        q, k, v = (t.reshape(B, T, H, D // H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2) / (D // H) ** 0.5).masked_fill(~causal, -1e9).softmax(-1)
        x = x + (att @ v).transpose(1, 2).reshape(B, T, D) @ wo + bo
        return x + F.gelu(F.layer_norm(x, (D,), g2, b2) @ w1 + c1, approximate="tanh") @ w2 + c2

    def torch_grad(p, x):
        return torch.autograd.grad((torch_layer(p, x) ** 2).mean(), p)
    params, x = _inputs()
    tx = torch.tensor(x)
    return {"forward": (torch_layer, ([torch.tensor(a) for a in params], tx)),
            "forward+backward": (torch_grad, ([torch.tensor(a, requires_grad=True) for a in params], tx))}


def main():
    if "--torch-child" in sys.argv:
        torch_child(_torch_cases, repeat=5)
        return
    torch_report = torch_peer("benchmarks.bench_gpt2_layer", repeat=5)
    params, x = _inputs()
    jax = jax_cpu()
    jnp_ = __import__("jax.numpy", fromlist=["x"]) if jax is not None else None

    header(f"GPT-2 layer forward, x[{B},{T},{D}] f32")
    t_np = median_time(lambda: layer(params, x), repeat=5)
    fwd = tracejit.jit(layer)
    out = fwd(params, x)
    c = fwd.lower(params, x).compile()
    t_tj = median_time(lambda: fwd(params, x), repeat=5)
    print(row("numpy eager", t_np))
    print(row("tracejit jit", t_tj, t_np, f"vs numpy; {len(c.kernels)} kernels, "
                                          f"{c.memory_analysis()['temp_size_in_bytes'] / 2**20:.1f} MiB temps"))
    if jax is not None:
        jf = jax.jit(lambda p, x: layer(p, x, jnp_))
        jp, jx = [jax.device_put(p) for p in params], jax.device_put(x)
        block(jf(jp, jx))
        (_, t_jax), ratios = paired_times([lambda: fwd(params, x), lambda: block(jf(jp, jx))])
        print(row("jax jit", t_jax, t_np, "vs numpy"))
        print(paired_line("jax", ratios))
    torch_rows("GPT-2 layer forward", out, t_tj, torch_report.get("forward", []))

    header(f"GPT-2 layer forward+backward, x[{B},{T},{D}] f32")
    bwd = tracejit.jit(tracejit.grad(loss))
    out = bwd(params, x)
    t_tj = median_time(lambda: bwd(params, x), repeat=5)
    print(row("tracejit jit(grad)", t_tj, None, f"{len(bwd.lower(params, x).compile().kernels)} kernels"))
    if jax is not None:
        jg = jax.jit(jax.grad(lambda p, x: loss(p, x, jnp_)))
        block(jg(jp, jx))
        (_, t_jax), ratios = paired_times([lambda: bwd(params, x), lambda: block(jg(jp, jx))])
        print(row("jax jit(grad)", t_jax))
        print(paired_line("jax", ratios))
    torch_rows("GPT-2 layer forward+backward", out, t_tj, torch_report.get("forward+backward", []))


if __name__ == "__main__":
    main()
