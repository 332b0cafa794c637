"""Rank program of tests/test_mpi.py: meshes whose devices are the processes in another order than
their ranks, and resharding global arrays (device_put to another sharding, shard_map of a global
array passed with another spec).

On a mesh, a process's axis index is its *position* in the mesh, not its rank: blocks, collectives
(on a sub-communicator ranked by position), outputs and derivatives follow positions. Checked
eagerly and under jit against NumPy on the global data, which every rank builds. Runs with any
number of processes (2-D meshes when it is even). Last line ``OK <rank>/<N>``."""
import numpy as np

import tracejit as jax
import tracejit.numpy as jnp
from tracejit import lax
from position_checks import check_collectives_by_position
from tracejit.sharding import GlobalArray, Mesh, NamedSharding, P

jax.distributed.initialize()
rank, n = jax.process_index(), jax.process_count()
devices = np.array(jax.devices(), dtype=object)


def close(a, b, what, tol=1e-12):
    a, b = (np.asarray(v.addressable_data(0) if isinstance(v, GlobalArray) else v) for v in (a, b))
    if a.shape != b.shape or a.dtype.kind != b.dtype.kind and b.dtype.kind != "f" \
            or not np.allclose(a, b, rtol=tol, atol=tol):
        raise AssertionError(f"rank {rank}: {what}: got {a!r} want {b!r}")


def check_1d(order, label):
    """A 1-D mesh whose position k holds the process order[k]."""
    mesh = Mesh(devices[order], ("i",))
    pos = list(order).index(rank)

    def both(fn, *args, in_specs=P(), out_specs=P()):
        sm = jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
        eager, compiled = sm(*args), jax.jit(sm)(*args)
        assert "numpy mpi" not in jax.jit(sm).lower(*args).compile().as_text()
        close(compiled, eager, f"{label}: jit == eager")
        return eager

    check_collectives_by_position(both, close, pos, n, label)
    G = np.arange(2.0 * n * 3).reshape(2 * n, 3)
    out = both(lambda b: b * 2 + lax.axis_index("i") * 0, G, in_specs=P("i"), out_specs=P("i"))
    close(out, 2 * G[2 * pos:2 * pos + 2], f"{label}: the block at this position")
    assert out.addressable_shards[0].index[0] == slice(2 * pos, 2 * pos + 2), out.addressable_shards[0].index
    close(both(lambda b: lax.all_gather(b, "i", tiled=True), G, in_specs=P("i")), G, f"{label}: gathered back")
    # Derivatives outside shard_map: a replicated weight, blocks split by position.
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("i")), G[2 * pos:2 * pos + 2])
    w = np.array([0.5, -1.0, 2.0])
    f = jax.shard_map(lambda w, x: lax.psum(jnp.sum(jnp.tanh(x @ w) * (1 + lax.axis_index("i"))), "i"),
                      mesh=mesh, in_specs=(P(), P("i")), out_specs=P())
    want = sum((1 + k) * G[2 * k:2 * k + 2].T @ (1 - np.tanh(G[2 * k:2 * k + 2] @ w) ** 2) for k in range(n))
    close(jax.grad(f)(w, x), want, f"{label}: grad outside")
    close(jax.jit(jax.grad(f))(w, x), want, f"{label}: grad outside, jit")


check_1d(list(range(n))[::-1], "reversed")
check_1d([(k + 1) % n for k in range(n)], "rotated")

# Resharding: rows split in rank order -> rows split in reversed order -> columns -> replicated.
G = np.arange(4.0 * n * 2 * n).reshape(4 * n, 2 * n)
forward, backward = Mesh(devices, ("i",)), Mesh(devices[::-1], ("i",))
rows = jax.device_put(G, NamedSharding(forward, P("i")))
close(rows, G[4 * rank:4 * rank + 4], "device_put: rows")
rev = jax.device_put(rows, NamedSharding(backward, P("i")))
pos = n - 1 - rank
close(rev, G[4 * pos:4 * pos + 4], "reshard: rows in reversed order")
cols = jax.device_put(rev, NamedSharding(forward, P(None, "i")))
close(cols, G[:, 2 * rank:2 * rank + 2], "reshard: rows -> columns")
assert cols.addressable_shards[0].index == (slice(None), slice(2 * rank, 2 * rank + 2))
whole = jax.device_put(cols, NamedSharding(forward, P()))
assert not isinstance(whole, GlobalArray)
close(whole, G, "reshard: columns -> replicated")
ints = jax.device_put(np.arange(6 * n, dtype=np.int32).reshape(6 * n, 1) - 5, NamedSharding(forward, P("i")))
back = jax.device_put(ints, NamedSharding(backward, P(None)))
close(back, np.arange(6 * n, dtype=np.int32).reshape(6 * n, 1) - 5, "reshard int32 to replicated")
assert np.asarray(back).dtype == np.int32
# shard_map of a global array passed with another sharding: resharded to its in_spec first.
sm = jax.shard_map(lambda b: b.sum(0), mesh=forward, in_specs=P(None, "i"), out_specs=P("i"))
close(sm(rows), G[:, 2 * rank:2 * rank + 2].sum(0), "shard_map reshards its input")
close(jax.jit(sm)(rows), G[:, 2 * rank:2 * rank + 2].sum(0), "jit(shard_map) reshards its input inside jit")

if n % 2 == 0 and n >= 4:
    # A 2-D mesh in a scrambled order: positions (d, m) hold order[d * M + m].
    D, M = 2, n // 2
    order = list(np.random.default_rng(0).permutation(n))
    mesh = Mesh(devices[order].reshape(D, M), ("data", "model"))
    d, m = divmod(order.index(rank), M)
    sm = lambda fn, **kw: jax.shard_map(fn, mesh=mesh, **kw)   # noqa: E731
    for run in (lambda g: g, jax.jit):
        got = run(sm(lambda: jnp.stack([lax.axis_index("data"), lax.axis_index("model"),
                                        lax.psum(lax.axis_index("model"), "model"),
                                        lax.all_gather(lax.axis_index(("data", "model")), "data")[1]]),
                     in_specs=(), out_specs=P(None)))()
        close(got, [d, m, M * (M - 1) // 2, M + m], "2-D scrambled mesh: positions and collectives")
    H = np.arange(6.0 * (D * M) ** 2).reshape(2 * D * M, 3 * D * M)
    blocks = sm(lambda b: b + 0, in_specs=P("data", "model"), out_specs=P("data", "model"))(H)
    close(blocks, H[2 * M * d:2 * M * (d + 1), 3 * D * m:3 * D * (m + 1)], "2-D scrambled mesh: blocks")
    swapped = jax.device_put(blocks, NamedSharding(mesh, P("model", "data")))
    close(swapped, H[2 * D * m:2 * D * (m + 1), 3 * M * d:3 * M * (d + 1)], "2-D reshard to (model, data)")
    ranked = jax.device_put(swapped, NamedSharding(jax.make_mesh((D, M), ("data", "model")), P(("data", "model"))))
    rows = 2 * D * M // n
    close(ranked, H[rows * rank:rows * (rank + 1)], "2-D reshard to a rank-order mesh, rows over both axes")
print(f"OK {rank}/{n}", flush=True)
jax.distributed.shutdown()
