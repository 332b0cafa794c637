"""Rank program of tests/test_mpi.py: derivatives taken outside shard_map are the global function's.

``grad(shard_map(f))`` with a replicated (``P()``) output and replicated or split inputs, eagerly
and under ``jit``, against closed forms on the whole data (each rank builds every rank's block);
forward mode (``jvp``) too. Before the fix every such gradient was ``process_count()`` times too
large. Last line ``OK <rank>/<N>``."""
import numpy as np

import tracejit as jax
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.sharding import NamedSharding, P

jax.distributed.initialize()
rank, n = jax.process_index(), jax.process_count()
mesh = jax.make_mesh((n,), ("i",))


def close(a, b, what, tol=1e-12):
    a = np.asarray(a.addressable_data(0) if hasattr(a, "addressable_data") else a)
    b = np.asarray(b)
    if a.shape != b.shape or not np.allclose(a, b, rtol=tol, atol=tol):
        raise AssertionError(f"rank {rank}: {what}: got {a} want {b}")


blocks = [np.random.default_rng(r).standard_normal((4, 3)) for r in range(n)]   # every rank's rows
targets = [np.random.default_rng(100 + r).standard_normal(4) for r in range(n)]
X, Y = np.concatenate(blocks), np.concatenate(targets)
split = NamedSharding(mesh, P("i"))
xs = jax.make_array_from_process_local_data(split, blocks[rank])
ys = jax.make_array_from_process_local_data(split, targets[rank])
w = np.array([0.5, -1.0, 2.0])

# Data parallel: the mean squared error over all rows; w replicated, the data split.
loss = jax.shard_map(lambda w, x, y: lax.pmean(jnp.mean((x @ w - y) ** 2), "i"), mesh=mesh,
                     in_specs=(P(), P("i"), P("i")), out_specs=P())
want = 2 * X.T @ (X @ w - Y) / len(Y)
close(loss(w, xs, ys), np.mean((X @ w - Y) ** 2), "loss")
close(jax.grad(loss)(w, xs, ys), want, "grad of a replicated input, eager")
close(jax.jit(jax.grad(loss))(w, xs, ys), want, "grad of a replicated input, jit")
_, tangent = jax.jvp(lambda v: loss(v, xs, ys), (w,), (np.array([1.0, 0.0, 0.0]),))
close(tangent, want[0], "jvp: forward mode unchanged")

# A split input: each rank gets the derivative with respect to its own block.
energy = jax.shard_map(lambda x: lax.psum(jnp.sum(jnp.tanh(x) ** 2) * (lax.axis_index("i") + 1), "i"),
                       mesh=mesh, in_specs=P("i"), out_specs=P())
t = np.tanh(blocks[rank])
close(jax.grad(energy)(xs), (rank + 1) * 2 * t * (1 - t ** 2), "grad of a split input, eager")
close(jax.jit(jax.grad(energy))(xs), (rank + 1) * 2 * t * (1 - t ** 2), "grad of a split input, jit")

# Both, and a value_and_grad of two replicated outputs combined outside.
two = jax.shard_map(lambda w, x: (lax.psum(jnp.sum(x @ w), "i"), lax.pmax(jnp.max(x @ w), "i")), mesh=mesh,
                    in_specs=(P(), P("i")), out_specs=(P(), P()))
value, g = jax.value_and_grad(lambda v: two(v, xs)[0] * 3.0)(w)
close(value, 3 * np.sum(X @ w), "value")
close(g, 3 * X.sum(0), "grad through a psum output scaled outside")
# Random compositions (the class of the bug): replicated w, split x, a collective, a replicated
# output; grad outside shard_map against central differences of the global function.
UNARY = [jnp.tanh, jnp.sin, lambda v: v * v, jnp.exp, lambda v: jnp.maximum(v, 0.1 * v)]
COLLECTIVE = [lambda v: lax.psum(v, "i"), lambda v: lax.pmean(v, "i"), lambda v: lax.pmax(v, "i"),
              lambda v: lax.all_gather(v, "i").sum(0), lambda v: lax.psum_scatter(jnp.tile(v, n), "i", tiled=True)]
for seed in range(24):
    rng = np.random.default_rng(seed)                                   # the same program on every rank
    u1, u2 = (UNARY[i] for i in rng.integers(0, len(UNARY), 2))
    coll = COLLECTIVE[rng.integers(0, len(COLLECTIVE))]
    jit_inside = bool(rng.integers(0, 2))

    def local(w, x, u1=u1, u2=u2, coll=coll):
        h = u1(x * w[None, :] + w[::-1][None, :] * 0.3)                 # (4, 3)
        return lax.psum(jnp.sum(u2(coll(h.sum(0)))), "i") / n
    body = jax.jit(local) if jit_inside else local
    g_fn = jax.shard_map(body, mesh=mesh, in_specs=(P(), P("i")), out_specs=P())
    w0 = rng.standard_normal(3) * 0.5
    got = jax.grad(g_fn)(w0, xs)
    eps = 1e-6
    fd = np.array([(float(g_fn(w0 + eps * e, xs)) - float(g_fn(w0 - eps * e, xs))) / (2 * eps) for e in np.eye(3)])
    close(got, fd, f"random composition {seed}", tol=1e-5)

print(f"OK {rank}/{n}", flush=True)
jax.distributed.shutdown()
