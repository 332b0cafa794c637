"""Rank program of tests/test_mpi_subsets.py: resharding global arrays inside jit (the primitive
``mpi_reshard``): device_put and lax.with_sharding_constraint to another sharding under jit, a
jitted shard_map whose in_spec differs from its argument's sharding, forward- and reverse-mode
derivatives through the reshard (against the same math without resharding and a central
difference), replicated targets, vmap of the primitive, and with_sharding_constraint of a global
value. Values against NumPy on the global data, which every rank builds. Runs with any number of
processes. Last line ``OK <rank>/<N>``."""
import numpy as np

import tracejit as jax
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.ops.mpi_reshard import mpi_reshard_p
from tracejit.sharding import GlobalArray, Mesh, NamedSharding, P

jax.distributed.initialize()
rank, n = jax.process_index(), jax.process_count()
devices = np.array(jax.devices(), dtype=object)
mesh, backward = Mesh(devices, ("i",)), Mesh(devices[::-1], ("i",))
rows, cols = NamedSharding(mesh, P("i")), NamedSharding(mesh, P(None, "i"))
rev_rows, whole = NamedSharding(backward, P("i")), NamedSharding(mesh, P())


def close(a, b, what, tol=1e-9):
    a, b = (np.asarray(v.addressable_data(0) if isinstance(v, GlobalArray) else v) for v in (a, b))
    if a.shape != b.shape or not np.allclose(a, b, rtol=tol, atol=tol):
        raise AssertionError(f"rank {rank}: {what}: got {a!r} want {b!r}")


def block(sharding, value):
    return value[sharding.devices_indices_map(value.shape)[jax.Device()]]


rng = np.random.default_rng(0)                      # the same global data on every rank
G = rng.standard_normal((4 * n, 2 * n))
W = rng.standard_normal((4 * n, 2 * n))
g = jax.device_put(G, rows)

# device_put / with_sharding_constraint inside jit: the primitive, a NumPy step of the program.
for target, label in ((cols, "rows -> columns"), (rev_rows, "rows -> reversed rows")):
    for put in (jax.device_put, lax.with_sharding_constraint):
        f = jax.jit(lambda v: put(v, target))
        out = f(g)
        assert isinstance(out, GlobalArray) and out.sharding == target, out
        close(out, block(target, G), f"{label} in jit ({put.__name__})")
    text = jax.jit(lambda v: jax.device_put(v, target)).lower(g).compile().as_text()
    assert "mpi_reshard" in text, text
replicated = jax.jit(lambda v: jax.device_put(v, whole) * 2)(g)
assert not isinstance(replicated, GlobalArray)
close(replicated, 2 * G, "rows -> replicated in jit")

# A jitted shard_map whose in_spec is not its argument's sharding reshards on entry.
sm = jax.shard_map(lambda b: lax.psum(jnp.sum(b, 0), "i"), mesh=mesh, in_specs=P(None, "i"), out_specs=P("i"))
close(jax.jit(sm)(g), sm(g), "jit(shard_map) reshards its argument == eager")
close(jax.jit(sm)(g), sum(G[:, 2 * k:2 * k + 2].sum(0) for k in range(n)), "jit(shard_map) reshards: values")

# with_sharding_constraint of a global value (no global array) keeps this process's block.
close(jax.jit(lambda v: lax.with_sharding_constraint(v + 1, cols))(G), block(cols, G + 1),
      "with_sharding_constraint of a global value")


# Derivatives. loss_cols: a weighted sum over the column blocks after resharding rows -> columns;
# loss_whole: the same over the whole array after resharding rows -> replicated (each process's
# copy gives the same value; the cotangent goes back from one copy, not the sum over them).
def loss_cols(v):
    c = jax.device_put(v, cols)
    f = jax.shard_map(lambda b, w: lax.psum(jnp.sum(jnp.tanh(b) * w), "i"), mesh=mesh,
                      in_specs=(P(None, "i"), P(None, "i")), out_specs=P())
    return f(c, W)


def loss_whole(v):
    return jnp.sum(jnp.tanh(jax.device_put(v, whole)) * W)


want_loss = np.sum(np.tanh(G) * W)
want_grad = W * (1 - np.tanh(G) ** 2)              # the same math without resharding
dot = jax.jit(jax.shard_map(lambda a, b: lax.psum(jnp.sum(a * b), "i"), mesh=mesh, in_specs=(P("i"), P("i")),
                            out_specs=P()))     # the global inner product of two row-split arrays
E = rng.standard_normal(G.shape)
eps = 1e-6
for loss, label in ((loss_cols, "through rows -> columns"), (loss_whole, "through rows -> replicated")):
    close(jax.jit(loss)(g), want_loss, f"loss {label}")
    grad = jax.jit(jax.grad(loss))(g)
    assert isinstance(grad, GlobalArray) and grad.sharding == rows, grad
    close(grad, block(rows, want_grad), f"jit(grad) {label}")
    close(jax.grad(jax.jit(loss))(g), block(rows, want_grad), f"grad(jit) {label}")
    close(jax.grad(loss)(g), block(rows, want_grad), f"eager grad {label}")
    central = (jax.jit(loss)(jax.device_put(G + eps * E, rows)) - jax.jit(loss)(jax.device_put(G - eps * E, rows))) \
        / (2 * eps)
    close(dot(grad, jax.device_put(E, rows)), central, f"grad {label} vs a central difference", tol=1e-5)
    _, tangent = jax.jvp(jax.jit(loss), (g,), (jax.device_put(E, rows),))
    close(tangent, np.sum(want_grad * E), f"jvp {label}")

# vmap of the primitive: the batch axis rides along whole; per example the same exchange.
sources, targets = rows._block_map(G.shape), cols._block_map(G.shape)
stack = np.stack([G, 2 * G, -G])
local = np.stack([block(rows, x) for x in stack])
swap = lambda b: mpi_reshard_p.bind(b, sources=sources, targets=targets, shape=G.shape)   # noqa: E731
want = np.stack([block(cols, x) for x in stack])
for run in (jax.vmap(swap), jax.jit(jax.vmap(swap))):
    close(run(local), want, "vmap of mpi_reshard")
close(jax.jit(jax.vmap(swap, in_axes=1, out_axes=2))(np.moveaxis(local, 0, 1)), np.moveaxis(want, 0, 2),
      "vmap of mpi_reshard, batch axis 1")
print(f"OK {rank}/{n}", flush=True)
jax.distributed.shutdown()
