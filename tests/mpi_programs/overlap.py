"""Rank program of tests/test_mpi.py: compiled collectives overlapped with independent kernels
(compiler/overlap.py). A collective whose neighbours in the plan do not depend on it becomes a
nonblocking start and a wait with those steps between; results must equal the eager collectives,
the compiled program with overlap off, and NumPy. Includes a small random-program fuzzer (seeds from
argv, default 0..24). Last line ``OK <rank>/<N>``; with the argument ``mismatch`` the ranks make a
split psum on different shapes and must abort."""
import re
import sys

import numpy as np

import tracejit as jax
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.sharding import P

jax.config.update("enable_checks", True)        # the plan checker verifies every split
jax.distributed.initialize()
rank, n = jax.process_index(), jax.process_count()
mesh = jax.make_mesh((n,), ("i",))
seeds = range(int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else range(25)


def close(a, b, what, tol=1e-12):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or not np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True):
        raise AssertionError(f"rank {rank}: {what}: got {a} want {b}")


def compiled(f, *args, overlap=True):
    """(result, plan text) of jit(f) with overlap on or off (a fresh jit: the option is read at compile)."""
    jax.config.update("overlap_collectives", overlap)
    try:
        c = jax.jit(f).lower(*args).compile()
        return c(*args), c.as_text()
    finally:
        jax.config.update("overlap_collectives", True)


def split_around_kernels(text, name):
    """Whether the plan starts collective ``name`` and has a kernel or product before its wait."""
    lines = text.splitlines()
    starts = [k for k, line in enumerate(lines) if line.startswith(f"call start {name}[")]
    for k in starts:
        request = re.search(r"\(request (b\d+)", lines[k]).group(1)
        wait = next(j for j, line in enumerate(lines) if line.startswith("call wait") and f"(request {request})" in line)
        if any(line.startswith(("kernel", "blas")) for line in lines[k + 1:wait]):
            return True
    return False


if sys.argv[-1] == "mismatch":
    # Split calls check together, at the plan's first start: ranks whose psums differ in shape must
    # abort there, before MPI runs the mismatched collective.
    bad = jax.shard_map(lambda v, w: (lax.psum(v * 2, "i"), jnp.tanh(w @ w).sum()), mesh=mesh,
                        in_specs=(P(), P()), out_specs=(P(), P()))
    w = np.ones((64, 64))
    assert "checks 1 call" in jax.jit(bad).lower(np.ones(rank + 3), w).compile().as_text()
    jax.jit(bad)(np.ones(rank + 3), w)
    print("UNREACHABLE", flush=True)
    sys.exit(0)

# --- every collective kind, each with an independent computation to overlap -------------------
rng = np.random.default_rng(7)
x_all = rng.standard_normal((n, 4 * n, 3))                 # every rank builds the global data
y = rng.standard_normal((64, 64))
mine = x_all[rank]
collectives = {
    "mpi_psum": (lambda v: lax.psum(v, "i"), x_all.sum(0)),
    "mpi_pmax": (lambda v: lax.pmax(v, "i"), x_all.max(0)),
    "mpi_pmin": (lambda v: lax.pmin(v, "i"), x_all.min(0)),
    "mpi_all_gather": (lambda v: lax.all_gather(v, "i"), x_all),
    "mpi_psum_scatter": (lambda v: lax.psum_scatter(v, "i", tiled=True),
                         x_all.sum(0)[4 * rank:4 * rank + 4]),
    "mpi_all_to_all": (lambda v: lax.all_to_all(v, "i", 0, 0, tiled=True),
                       np.concatenate([x_all[r][4 * rank:4 * rank + 4] for r in range(n)])),
    "mpi_ppermute": (lambda v: lax.ppermute(v, "i", [(k, (k + 1) % n) for k in range(n)]), x_all[(rank - 1) % n]),
}
for name, (collective, want) in collectives.items():
    def local(v, w, collective=collective):
        other = jnp.tanh(w @ w) @ w                      # independent of the collective
        return collective(v * 1.0), other.sum()
    f = jax.shard_map(local, mesh=mesh, in_specs=(P(), P()), out_specs=(P(), P()))
    (got, other), text = compiled(f, mine, y)
    assert split_around_kernels(text, name), (name, text)
    close(got, want, f"{name} overlapped")
    close(other, (np.tanh(y @ y) @ y).sum(), f"{name}: the independent work", tol=1e-9)
    (blocking, _), text_off = compiled(f, mine, y, overlap=False)
    assert "call start" not in text_off and f"call {name}[" in text_off, text_off
    close(got, blocking, f"{name}: overlap on == off")
    eager = f(mine, y)
    close(got, eager[0], f"{name}: compiled == eager")

# --- data-parallel gradients: each layer's psum starts while the earlier layers' grads compute --
widths = [16, 32, 32, 8]
params = [rng.standard_normal((a, b)) / np.sqrt(a) for a, b in zip(widths[:-1], widths[1:])]
X, Y = rng.standard_normal((8 * n, 16)), rng.standard_normal((8 * n, 8))


def loss(ps, xb, yb):
    h = xb
    for w in ps[:-1]:
        h = jnp.tanh(h @ w)
    return jnp.mean((h @ ps[-1] - yb) ** 2)


def local_grads(ps, xb, yb):
    return [lax.pmean(g, "i") for g in jax.grad(loss)(ps, xb, yb)]


step = jax.shard_map(local_grads, mesh=mesh, in_specs=(P(), P("i"), P("i")), out_specs=P())
grads, text = compiled(step, params, X, Y)
assert split_around_kernels(text, "mpi_psum"), text
whole = jax.grad(loss)(params, X, Y)                        # one process on the whole batch
for g, w in zip(grads, whole):
    close(g, w, "data-parallel gradient == whole-batch gradient", tol=1e-10)

# --- a halo exchange in a native loop: the interior update runs while the halos move ----------
N, alpha, steps = 40 * n, 0.2, 25
u0 = np.cos(np.linspace(0, 2 * np.pi, N, endpoint=False)) + np.linspace(0, 1, N) ** 2


def heat_local(u):
    def body(_, u):
        left = lax.ppermute(u[-1:], "i", [(k, (k + 1) % n) for k in range(n)])
        right = lax.ppermute(u[:1], "i", [(k, (k - 1) % n) for k in range(n)])
        inner = u[1:-1] + alpha * (u[:-2] - 2 * u[1:-1] + u[2:])      # needs no halo
        first = u[:1] + alpha * (left - 2 * u[:1] + u[1:2])
        last = u[-1:] + alpha * (u[-2:-1] - 2 * u[-1:] + right)
        return jnp.concatenate([first, inner, last])
    return lax.all_gather(lax.fori_loop(0, steps, body, u), "i", tiled=True)


heat = jax.shard_map(heat_local, mesh=mesh, in_specs=P("i"), out_specs=P())
got, text = compiled(heat, u0)
assert "native loop" in text and "host loop" not in text, text
u = u0.copy()
for _ in range(steps):
    u = u + alpha * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
close(got, u, "heat equation with overlapped halos")
close(compiled(heat, u0, overlap=False)[0], got, "heat equation: overlap on == off")


# --- random programs: chains of elementwise steps, products, collectives and loops holding them --
# Two sizes (6x6, and 96x96 whose steps are large enough to be followed by polls), float64 and
# float32; a "loop" is a fori_loop whose body makes a collective beside independent work (a native
# loop body planned with overlap too).
def random_program(seed):
    r = np.random.default_rng(seed)
    ops = []
    for _ in range(r.integers(4, 12)):
        kind = r.choice(["ew", "dot", "psum", "pmax", "gather", "ppermute", "scatter", "reuse", "loop"])
        ops.append((str(kind), int(r.integers(0, 1000))))

    def step(kind, pick, v, w):
        if kind == "ew":
            return jnp.sin(v) * 0.5 + jnp.cos(w) * 0.25
        if kind == "dot":
            return jnp.tanh(v @ w.T @ v / v.shape[0])
        if kind == "psum":
            return lax.psum(v, "i") / n
        if kind == "pmax":
            return lax.pmax(v * (1 + lax.axis_index("i")).astype(v.dtype), "i")
        if kind == "gather":
            return lax.all_gather(v, "i", tiled=True)[:v.shape[0]] * 0.5
        if kind == "ppermute":
            return lax.ppermute(v, "i", [(k, (k + pick) % n) for k in range(n)])
        if kind == "scatter":
            return lax.all_gather(lax.psum_scatter(jnp.tile(v, (n, 1)), "i", tiled=True), "i", tiled=True)[:v.shape[0]]
        if kind == "loop":
            inner = ["psum", "ppermute", "pmax"][pick % 3]
            def body(i, c):
                return ((step(inner, pick, c[0], c[1]) * 0.5).astype(c[0].dtype),
                        jnp.tanh(c[1] @ c[1] / c[1].shape[0]).astype(c[1].dtype))
            return lax.fori_loop(0, 2 + pick % 3, body, (v, w))[0]
        return v + w                    # values used again later keep their buffers alive

    def local(a, b):
        values = [a, b]
        for kind, pick in ops:
            values.append(step(kind, pick, values[pick % len(values)], values[(pick // 7) % len(values)]))
        return sum(jnp.sum(v) for v in values[2:]) + values[-1]
    return local


split = 0
for seed in seeds:
    size, dtype = [(6, np.float64), (96, np.float64), (6, np.float32), (96, np.float32)][seed % 4]
    a0 = (rng.standard_normal((size, size)) + rank).astype(dtype)
    b0 = (rng.standard_normal((size, size)) - rank).astype(dtype)
    tol = 1e-9 if dtype == np.float64 else 2e-4
    f = jax.shard_map(random_program(seed), mesh=mesh, in_specs=(P(), P()), out_specs=P())
    got, text = compiled(f, a0, b0)
    split += "call start" in text
    close(got, compiled(f, a0, b0, overlap=False)[0], f"random program {seed}: overlap on == off", tol=tol)
    close(got, f(a0, b0), f"random program {seed}: compiled == eager", tol=tol)
assert split >= len(seeds) // 3, f"only {split} of {len(seeds)} random programs overlapped a collective"

print(f"OK {rank}/{n}", flush=True)
jax.distributed.shutdown()
