"""Rank program of tests/test_mpi.py: shard_map over a 2-D mesh of processes ('data', 'model').

Collectives over one axis, both axes and both in the other order (sub-communicators), axis_index
per axis, blocks of arrays split over both axes, outputs assembled over one or both, derivatives
taken outside shard_map; eagerly and under jit (native calls, on sub-communicators too); values
against NumPy on the global data, which every rank builds. Run with 4 or 6 processes. Last line ``OK <rank>/<N>``."""
import numpy as np

import tracejit as jax
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.sharding import NamedSharding, P

jax.distributed.initialize()
rank, n = jax.process_index(), jax.process_count()
D, M = 2, n // 2
mesh = jax.make_mesh((D, M), ("data", "model"))
d, m = divmod(rank, M)                      # this rank's coordinates (row-major, rank order)


def close(a, b, what, tol=1e-12):
    a = np.asarray(a.addressable_data(0) if hasattr(a, "addressable_data") else a)
    b = np.asarray(b)
    if a.shape != b.shape or not np.allclose(a, b, rtol=tol, atol=tol):
        raise AssertionError(f"rank {rank} ({d}, {m}): {what}: got {a} want {b}")


def both(fn, *args, in_specs=P(), out_specs=P()):
    """fn under shard_map, eagerly and jitted (the same result)."""
    sm = jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
    eager, compiled = sm(*args), jax.jit(sm)(*args)
    text = jax.jit(sm).lower(*args).compile().as_text()
    assert "numpy mpi" not in text, text        # native calls on the groups' sub-communicators too
    close(compiled, eager.addressable_data(0) if hasattr(eager, "addressable_data") else eager, "jit == eager")
    return eager


val = lambda dd, mm: np.arange(3.0) + 10 * dd + 100 * mm      # noqa: E731  (rank (dd, mm)'s value)
mine = lambda: jnp.asarray(val(0, 0)) + 10 * lax.axis_index("data") + 100 * lax.axis_index("model")  # noqa: E731

close(both(lambda: lax.axis_index("data") * 0 + jnp.stack([lax.axis_index("data"), lax.axis_index("model"),
                                                           lax.axis_index(("data", "model")),
                                                           lax.axis_index(("model", "data"))]), out_specs=P(None)),
      [d, m, d * M + m, m * D + d], "axis_index")
close(both(lambda: lax.psum(mine(), "data")), sum(val(k, m) for k in range(D)), "psum over data")
close(both(lambda: lax.psum(mine(), "model")), sum(val(d, k) for k in range(M)), "psum over model")
total = sum(val(a, b) for a in range(D) for b in range(M))
close(both(lambda: lax.psum(mine(), ("data", "model"))), total, "psum over both")
close(both(lambda: lax.psum(mine(), ("model", "data"))), total, "psum over both, other order")
close(both(lambda: lax.pmax(mine(), "model")), val(d, M - 1), "pmax over model")
close(both(lambda: lax.all_gather(mine(), "model")), np.stack([val(d, k) for k in range(M)]), "all_gather model")
close(both(lambda: lax.all_gather(mine(), ("model", "data"), axis=1)),
      np.stack([val(a, b) for b in range(M) for a in range(D)], axis=1), "all_gather (model, data), axis 1")
close(both(lambda: lax.psum_scatter(jnp.tile(mine(), D), "data", tiled=True)),
      sum(val(k, m) for k in range(D)), "psum_scatter over data")
close(both(lambda: lax.all_to_all(jnp.stack([mine() + j for j in range(M)]), "model", 0, 0)),
      np.stack([val(d, k) + m for k in range(M)]), "all_to_all over model")
close(both(lambda: lax.ppermute(mine(), "model", [(k, (k + 1) % M) for k in range(M)])),
      val(d, (m - 1) % M), "ppermute along model")

# Blocks of a global array split over both axes, and outputs assembled over one or both.
G = np.arange(4.0 * D * 3 * M).reshape(4 * D, 3 * M)
block = G[4 * d:4 * d + 4, 3 * m:3 * m + 3]
out = both(lambda b: b * 2, G, in_specs=P("data", "model"), out_specs=P("data", "model"))
assert out.shape == G.shape and out.addressable_shards[0].index == (slice(4 * d, 4 * d + 4), slice(3 * m, 3 * m + 3))
close(out, 2 * block, "a block of both axes")
rows = both(lambda b: lax.psum(b.sum(1), "model"), G, in_specs=P("data", "model"), out_specs=P("data"))
close(rows, G[4 * d:4 * d + 4].sum(1), "row sums: split over data, reduced over model")
close(both(lambda b: b.T, G, in_specs=P(None, "model"), out_specs=P("model")), G[:, 3 * m:3 * m + 3].T,
      "replicated over data, split over model")

# One dimension split over both axes (blocks row-major over ('data', 'model'), or the other order).
H = np.arange(2.0 * n * 3).reshape(2 * n, 3)
flat = both(lambda b: b + lax.axis_index(("data", "model")) * 0, H, in_specs=P(("data", "model")),
            out_specs=P(("data", "model")))
close(flat, H[2 * rank:2 * rank + 2], "rows split over (data, model)")
assert flat.addressable_shards[0].index[0] == slice(2 * rank, 2 * rank + 2)
close(both(lambda b: lax.all_gather(b, ("data", "model"), tiled=True), H, in_specs=P(("data", "model"))), H,
      "gathered back over (data, model)")
other = 2 * (m * D + d)
close(both(lambda b: b, H, in_specs=P(("model", "data")), out_specs=P(("model", "data"))),
      H[other:other + 2], "rows split over (model, data)")
close(both(lambda b: lax.all_gather(b, ("model", "data"), tiled=True), H, in_specs=P(("model", "data"))), H,
      "gathered back over (model, data)")

# Derivatives outside shard_map: w replicated over both axes, v split over model only.
x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data", "model")), block)
w = np.array([0.5, -1.0, 2.0])
f = jax.shard_map(lambda w, x: lax.psum(jnp.sum(jnp.tanh(x @ w)), ("data", "model")), mesh=mesh,
                  in_specs=(P(), P("data", "model")), out_specs=P())
per_block = lambda a, b: G[4 * a:4 * a + 4, 3 * b:3 * b + 3]      # noqa: E731
want = sum(per_block(a, b).T @ (1 - np.tanh(per_block(a, b) @ w) ** 2) for a in range(D) for b in range(M))
close(jax.grad(f)(w, x), want, "grad of a replicated input over a 2-D mesh")
close(jax.jit(jax.grad(f))(w, x), want, "grad, jit")
v = np.arange(3.0 * M) / 10
vs = jax.make_array_from_process_local_data(NamedSharding(mesh, P("model")), v[3 * m:3 * m + 3])
g = jax.shard_map(lambda v, x: lax.pmean(jnp.sum((x * v) ** 2), ("data", "model")), mesh=mesh,
                  in_specs=(P("model"), P("data", "model")), out_specs=P())
want_v = sum(2 * (per_block(a, m) ** 2).sum(0) * v[3 * m:3 * m + 3] for a in range(D)) / (D * M)
close(jax.grad(g)(vs, x), want_v, "grad of an input split over model, replicated over data")
close(jax.jit(jax.grad(g))(vs, x), want_v, "grad of an input split over model, jit")
print(f"OK {rank}/{n}", flush=True)
jax.distributed.shutdown()
