"""Convolutional networks (issue 15): a LeNet-5-like CNN forward and SGD training step at batch 64, a
ResNet basic block forward+backward at 56x56x64, and a depthwise 3x3 convolution; tracejit vs JAX
vs PyTorch (eager and ``torch.compile``), float32, NHWC (PyTorch: NCHW, its native layout).

Each model is written once against the ``jax.lax`` / ``jax.numpy`` API and run with tracejit's and
JAX's modules, so both compile the same program. Before timing, tracejit's results are checked
against JAX's (and PyTorch's, when installed) on the same inputs. Reported: medians of the run
time (after compiling) per peer, and the ratio peer time / tracejit time (> 1: tracejit faster;
target >= 1.0 on every row). A missing peer is skipped with a note (``pip install -e .[peers]``;
PyTorch is not in that extra: ``pip install torch`` where a CPU build is at hand).

Run: ``.venv/bin/python -m benchmarks.bench_cnn [--repeat N]``. The machine may be shared:
compare ratios, not absolute times.
"""
from __future__ import annotations

import argparse

import numpy as np

import tracejit
from benchmarks.common import block, header, jax_cpu, median_time, row, torch_child, torch_peer, torch_rows

_NHWC = ("NHWC", "HWIO", "NHWC")


# ====================================================================== models (lax/jnp API)

def _conv(lax, x, w, padding="SAME", groups=1):
    return lax.conv_general_dilated(x, w, (1, 1), padding, dimension_numbers=_NHWC,
                                    feature_group_count=groups)


def _max_pool(lax, x):
    return lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def lenet(lax, jnp, params, x):
    """LeNet-5-like: conv5x5(6) relu pool, conv5x5(16) relu pool, dense 120, 84, 10."""
    (w1, b1), (w2, b2), (w3, b3), (w4, b4), (w5, b5) = params
    h = _max_pool(lax, jnp.maximum(_conv(lax, x, w1) + b1, 0.0))                  # 14x14x6
    h = _max_pool(lax, jnp.maximum(_conv(lax, h, w2, "VALID") + b2, 0.0))         # 5x5x16
    h = jnp.reshape(h, (h.shape[0], -1))
    h = jnp.maximum(h @ w3 + b3, 0.0)
    h = jnp.maximum(h @ w4 + b4, 0.0)
    return h @ w5 + b5


def lenet_loss(lax, jnp, params, x, labels):
    logits = lenet(lax, jnp, params, x)
    m = jnp.max(logits, axis=1, keepdims=True)
    logp = logits - m - jnp.log(jnp.sum(jnp.exp(logits - m), axis=1, keepdims=True))
    return -jnp.sum(logp * labels) / x.shape[0]


def lenet_train_step(jax, lax, jnp, params, x, labels, lr=0.01):
    loss, grads = jax.value_and_grad(lambda p: lenet_loss(lax, jnp, p, x, labels))(params)
    return loss, jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


def basic_block(lax, jnp, params, x):
    """ResNet basic block: conv3x3 -> scale/shift -> relu -> conv3x3 -> scale/shift -> + x -> relu
    (the scale/shift stands for an inference-mode batch norm)."""
    w1, s1, t1, w2, s2, t2 = params
    h = jnp.maximum(_conv(lax, x, w1) * s1 + t1, 0.0)
    return jnp.maximum(_conv(lax, h, w2) * s2 + t2 + x, 0.0)


def block_fwd_bwd(jax, lax, jnp, params, x):
    """Forward and backward of the block: the loss and the gradients of parameters and input."""
    def loss(p, xx):
        return jnp.sum(basic_block(lax, jnp, p, xx) ** 2) / xx.size
    return jax.value_and_grad(loss, argnums=(0, 1))(params, x)


def depthwise(lax, jnp, w, x):
    return _conv(lax, x, w, groups=x.shape[-1])


# ====================================================================== PyTorch equivalents (NCHW)

def _torch_params_lenet(torch, params):
    (w1, b1), (w2, b2), (w3, b3), (w4, b4), (w5, b5) = params
    conv_w = lambda w: torch.tensor(np.ascontiguousarray(np.transpose(w, (3, 2, 0, 1))), requires_grad=True)
    dense = lambda a: torch.tensor(np.ascontiguousarray(a), requires_grad=True)
    return [conv_w(w1), dense(b1), conv_w(w2), dense(b2), dense(w3), dense(b3), dense(w4), dense(b4), dense(w5),
            dense(b5)]


def _torch_lenet_step(torch):
    F = torch.nn.functional

    def step(p, x, labels, lr=0.01):
        w1, b1, w2, b2, w3, b3, w4, b4, w5, b5 = p
        h = F.max_pool2d(F.relu(F.conv2d(x, w1, b1, padding=2)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, w2, b2)), 2)
        h = h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)     # flatten in NHWC order, as the lax model
        h = F.relu(h @ w3 + b3)
        h = F.relu(h @ w4 + b4)
        logits = h @ w5 + b5
        loss = -(F.log_softmax(logits, dim=1) * labels).sum() / x.shape[0]
        grads = torch.autograd.grad(loss, p)
        with torch.no_grad():
            return loss, [a - lr * g for a, g in zip(p, grads)]
    return step


def _torch_block_step(torch):
    F = torch.nn.functional

    def step(p, x):
        w1, s1, t1, w2, s2, t2 = p
        h = F.relu(F.conv2d(x, w1, padding=1) * s1 + t1)
        out = F.relu(F.conv2d(h, w2, padding=1) * s2 + t2 + x)
        loss = (out ** 2).sum() / x.numel()
        return (loss,) + torch.autograd.grad(loss, list(p) + [x])
    return step


# ====================================================================== running

def _lenet_inputs(rng, batch=64):
    def w(*s):
        return (rng.standard_normal(s) / np.sqrt(np.prod(s[:-1]))).astype(np.float32)
    params = [(w(5, 5, 1, 6), np.zeros(6, np.float32)), (w(5, 5, 6, 16), np.zeros(16, np.float32)),
              (w(400, 120), np.zeros(120, np.float32)), (w(120, 84), np.zeros(84, np.float32)),
              (w(84, 10), np.zeros(10, np.float32))]
    x = rng.standard_normal((batch, 28, 28, 1)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    return params, x, labels


def _block_inputs(rng, batch=4, hw=56, c=64):
    def w():
        return (rng.standard_normal((3, 3, c, c)) / np.sqrt(9 * c)).astype(np.float32)
    vec = lambda v: np.full(c, v, np.float32)
    params = (w(), vec(1.0), vec(0.1), w(), vec(0.5), vec(0.0))
    return params, rng.standard_normal((batch, hw, hw, c)).astype(np.float32)


def _close(name, got, want, rtol=2e-4, atol=2e-5):
    for g, w in zip(tracejit.tree_util.tree_leaves(got), tracejit.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol, err_msg=name)


def _inputs():
    """The three cases' inputs, the same in the parent and in the PyTorch child process."""
    rng = np.random.default_rng(0)
    lenet_in = _lenet_inputs(rng)
    block_in = _block_inputs(rng)
    dw = (rng.standard_normal((3, 3, 1, 64)) / 3).astype(np.float32)
    dx = rng.standard_normal((8, 56, 56, 64)).astype(np.float32)
    return lenet_in, block_in, (dw, dx)


# ---------------------------------------------------------------------- PyTorch, in its own process

def _torch_cases(torch):
    """The cases as PyTorch runs them in its child process (``common.torch_child``)."""
    F = torch.nn.functional
    (params, x, labels), (bparams, bx), (dw, dx) = _inputs()
    nchw = lambda a: torch.tensor(np.ascontiguousarray(np.transpose(a, (0, 3, 1, 2))))  # noqa: E731
    w1, s1, t1, w2, s2, t2 = bparams
    kernel = lambda w: torch.tensor(np.ascontiguousarray(np.transpose(w, (3, 2, 0, 1))), requires_grad=True)  # noqa
    chan = lambda v: torch.tensor(v.reshape(1, -1, 1, 1), requires_grad=True)  # noqa: E731
    bxt = nchw(bx).requires_grad_(True)
    return {
        "lenet step": (_torch_lenet_step(torch), (_torch_params_lenet(torch, params), nchw(x), torch.tensor(labels))),
        "block": (_torch_block_step(torch), ((kernel(w1), chan(s1), chan(t1), kernel(w2), chan(s2), chan(t2)), bxt)),
        "depthwise": (lambda w, a: F.conv2d(a, w, padding=1, groups=64).permute(0, 2, 3, 1),
                      (torch.tensor(np.ascontiguousarray(np.transpose(dw, (3, 2, 0, 1)))), nchw(dx))),
    }


def _case(title, tj_fn, tj_args, jax, jax_fn, torch_report, repeat):
    """Compile and time tracejit's function, then each peer's; check results against JAX's and
    PyTorch's (by checksum) first."""
    header(title)
    compiled = tracejit.jit(tj_fn).lower(*tj_args).compile()
    out = compiled(*tj_args)
    t_tj = median_time(lambda: compiled(*tj_args), repeat=repeat)
    print(row("tracejit jit", t_tj))
    if jax is not None:
        jargs = jax.tree_util.tree_map(jax.device_put, tj_args)
        jc = jax.jit(jax_fn).lower(*jargs).compile()
        _close(title, out, block(jc(*jargs)))
        t_jax = median_time(lambda: block(jc(*jargs)), repeat=repeat)
        print(row("jax jit", t_jax, None, f"=> tracejit {t_jax / t_tj:.2f}x JAX's speed"))
    torch_rows(title, out, t_tj, torch_report)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--torch-child", action="store_true", help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    if opts.torch_child:
        torch_child(_torch_cases, opts.repeat)
        return
    torch_report = torch_peer("benchmarks.bench_cnn", opts.repeat)
    jax = jax_cpu()
    jlax = __import__("jax.lax", fromlist=["x"]) if jax is not None else None
    jnp_ = __import__("jax.numpy", fromlist=["x"]) if jax is not None else None
    tlax, tnp = tracejit.lax, tracejit.numpy
    (params, x, labels), (bparams, bx), (dw, dx) = _inputs()

    fwd = (lambda lax, jnp: lambda p, xx: lenet(lax, jnp, p, xx))
    _case("LeNet-5-like forward, batch 64, f32", fwd(tlax, tnp), (params, x), jax,
          fwd(jlax, jnp_) if jax else None, [], opts.repeat)
    step = (lambda m, lax, jnp: lambda p, xx, yy: lenet_train_step(m, lax, jnp, p, xx, yy))
    _case("LeNet-5-like training step (loss, grad, SGD), batch 64, f32", step(tracejit, tlax, tnp),
          (params, x, labels), jax, step(jax, jlax, jnp_) if jax else None, torch_report.get("lenet step", []),
          opts.repeat)
    bstep = (lambda m, lax, jnp: lambda p, xx: block_fwd_bwd(m, lax, jnp, p, xx))
    _case("ResNet basic block forward+backward, 4x56x56x64, f32", bstep(tracejit, tlax, tnp), (bparams, bx), jax,
          bstep(jax, jlax, jnp_) if jax else None, torch_report.get("block", []), opts.repeat)
    _case("depthwise conv 3x3, 8x56x56x64, f32", lambda w, xx: depthwise(tlax, tnp, w, xx), (dw, dx), jax,
          (lambda w, xx: depthwise(jlax, jnp_, w, xx)) if jax else None, torch_report.get("depthwise", []),
          opts.repeat)


if __name__ == "__main__":
    main()
