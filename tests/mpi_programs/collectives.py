"""Rank program of tests/test_mpi.py: run under ``mpiexec -n N``; every check raises on failure
(the excepthook of tracejit.distributed then aborts all ranks) and the last line is ``OK <rank>/<N>``."""
import sys

import numpy as np

import tracejit as jax
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.sharding import NamedSharding, P

jax.distributed.initialize()
rank, n = jax.process_index(), jax.process_count()
assert jax.distributed.is_initialized() and n == int(sys.argv[1]), (n, sys.argv)
assert jax.devices() == [jax.Device(i) for i in range(n)] and [d.process_index for d in jax.devices()] == list(range(n))
assert jax.local_devices() == [jax.devices()[rank]] and jax.device_count() == n and jax.local_device_count() == 1
mesh = jax.make_mesh((n,), ("i",))
row = NamedSharding(mesh, P("i"))


def close(a, b, what, tol=1e-12):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or not np.allclose(a, b, rtol=tol, atol=tol):
        raise AssertionError(f"rank {rank}: {what}: got {a} want {b}")


def per_rank(f, make, jit_inner=False, jit_outer=False):
    """f on this rank's make(rank) through shard_map, three ways, checked against vmap's collectives."""
    want = np.asarray(jax.vmap(f, axis_name="i")(np.stack([make(r) for r in range(n)])))[rank]
    g = jax.make_array_from_process_local_data(row, make(rank)[None])
    assert g.shape == (n,) + make(rank).shape and np.array_equal(g.addressable_data(0)[0], make(rank))
    inner = jax.jit(f) if jit_inner else f
    sm = jax.shard_map(lambda b: inner(b[0])[None], mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    out = (jax.jit(sm) if jit_outer else sm)(g)
    assert out.shape == (n,) + want.shape, (out.shape, want.shape)
    return np.asarray(out.addressable_data(0))[0], want


x_of = lambda r: np.arange(6.0).reshape(2, 3) * (r + 1) + r
cases = {
    "psum": lambda x: lax.psum(x, "i"),
    "pmean": lambda x: lax.pmean(x, "i"),
    "pmax": lambda x: lax.pmax(np.sin(x), "i"),
    "pmin": lambda x: lax.pmin(np.sin(x), "i"),
    "all_gather": lambda x: lax.all_gather(x, "i"),
    "all_gather axis 1": lambda x: lax.all_gather(x, "i", axis=1),
    "all_gather tiled": lambda x: lax.all_gather(x, "i", tiled=True, axis=1),
    "psum_scatter tiled": lambda x: lax.psum_scatter(jnp.tile(x, (n, 1)), "i", tiled=True),
    "psum_scatter": lambda x: lax.psum_scatter(jnp.stack([x * k for k in range(n)], 1), "i", scatter_dimension=1),
    "ppermute ring": lambda x: lax.ppermute(x, "i", [(k, (k + 1) % n) for k in range(n)]),
    "ppermute back": lambda x: lax.ppermute(x, "i", [(k, (k - 1) % n) for k in range(n)]),
    "ppermute partial": lambda x: lax.ppermute(x, "i", [(0, n - 1)]),
    "axis_index": lambda x: x * lax.axis_index("i") + lax.axis_size("i"),
}
for name, f in cases.items():
    for ji, jo in ((False, False), (True, False), (False, True)):
        got, want = per_rank(f, x_of, ji, jo)
        close(got, want, f"{name} jit_inner={ji} jit_outer={jo}")

# all_to_all (no vmap oracle): rank r's chunk j goes to rank j.
blocks = lambda r: np.arange(n * 2.0 * n).reshape(n, 2 * n) + 100 * r
a2a = jax.shard_map(lambda b: lax.all_to_all(b[0], "i", 0, 0)[None], mesh=mesh, in_specs=P("i"), out_specs=P("i"))
out = np.asarray(jax.jit(a2a)(jax.make_array_from_process_local_data(row, blocks(rank)[None])).addressable_data(0))[0]
close(out, np.stack([blocks(j)[rank] for j in range(n)]), "all_to_all")
a2at = jax.shard_map(lambda b: lax.all_to_all(b, "i", 1, 0, tiled=True), mesh=mesh, in_specs=P("i"), out_specs=P("i"))
out = np.asarray(a2at(jax.make_array_from_process_local_data(row, blocks(rank))).addressable_data(0))
close(out, np.concatenate([blocks(j)[:, 2 * rank:2 * rank + 2] for j in range(n)], 0), "all_to_all tiled")
# its derivative is the swapped all_to_all: the gradient of sum(all_to_all(b) * w) is w sent back
wt = np.arange(2.0 * n * n).reshape(n * n, 2)
ga = jax.shard_map(jax.grad(lambda b: jnp.sum(lax.all_to_all(b, "i", 1, 0, tiled=True) * wt)), mesh=mesh,
                   in_specs=P("i"), out_specs=P("i"))(jax.make_array_from_process_local_data(row, blocks(rank)))
# rank j's block feeds rows j*n:(j+1)*n of every rank's output, so each rank's cotangent wt sends those back
close(ga.addressable_data(0), np.tile(wt[rank * n:(rank + 1) * n], (1, n)), "grad all_to_all")

# recycled result buffers: a result still referenced is never overwritten by a later psum
keep = jax.shard_map(jax.jit(lambda b: lax.psum(b, "i")), mesh=mesh, in_specs=P(), out_specs=P())
first = keep(np.full(1000, 1.0 + rank))
np.asarray(keep(np.full(1000, 5.0)))     # dropped at once: its buffer may be reused next
second = keep(np.full(1000, 2.0 + rank))
close(first, np.full(1000, n * (n + 1) / 2.0), "first psum result kept")
close(second, np.full(1000, n * (n + 3) / 2.0), "second psum result")

# checks off (initialize(check_collectives=False)): compiled and NumPy-step collectives skip the
# rank agreement exchange and still reduce correctly; then back on
from tracejit.ops import mpi_collectives  # noqa: E402
mpi_collectives.set_checks(False)
close(keep(np.full(7, 1.0 + rank)), np.full(7, n * (n + 1) / 2.0), "psum with checks off")
close(jax.jit(jax.shard_map(lambda b: lax.psum_scatter(jnp.tile(b, n), "i", tiled=True), mesh=mesh,
                            in_specs=P(), out_specs=P("i")))(np.full(2, 1.0 + rank)).addressable_data(0),
      np.full(2, n * (n + 1) / 2.0), "psum_scatter with checks off")
mpi_collectives.set_checks(True)

# global values and global arrays
x = np.arange(12.0 * n).reshape(4 * n, 3)
total = jax.shard_map(lambda b: lax.psum(b.sum(0), "i"), mesh=mesh, in_specs=P("i"), out_specs=P())
close(total(x), x.sum(0), "P('i') in, P() out")
close(jax.jit(total)(x), x.sum(0), "P('i') in, P() out, jit")
put = jax.device_put(x, row)
close(put.addressable_data(0), x[4 * rank:4 * rank + 4], "device_put block")
assert put.addressable_shards[0].index[0] == slice(4 * rank, 4 * rank + 4)
try:
    np.asarray(put)
    raise AssertionError("np.asarray of a global array spanning processes should raise")
except RuntimeError as e:
    assert "non-addressable" in str(e)
gathered = jax.shard_map(lambda b: lax.all_gather(b, "i", tiled=True), mesh=mesh, in_specs=P("i"), out_specs=P())
close(gathered(put), x, "all_gather of a device_put global array")

# derivatives inside shard_map, against vmap's collectives (JAX's semantics) and analytic values
grad_cases = {
    "psum": lambda v: jnp.sum(lax.psum(v, "i") ** 2 * np.arange(1.0, 4.0)),
    "all_gather": lambda v: jnp.sum(lax.all_gather(v, "i") ** 2 * np.arange(1.0, 1.0 + 3 * n).reshape(n, 3)),
    "ppermute": lambda v: jnp.sum(lax.ppermute(v, "i", [(k, (k + 1) % n) for k in range(n)]) ** 3),
    "psum_scatter": lambda v: jnp.sum(lax.psum_scatter(jnp.tile(v, n), "i", tiled=True) ** 2),
}
v_of = lambda r: np.array([1.0, -2.0, 0.5]) * (r + 1)
for name, f in grad_cases.items():
    for ji in (False, True):
        got, want = per_rank(jax.grad(f), v_of, jit_inner=ji)
        close(got, want, f"grad {name} jit={ji}", 1e-10)
# pmax: the cotangents of every rank go to the rank holding the maximum
got, _ = per_rank(lambda v: v, v_of)
g = jax.shard_map(lambda b: jax.grad(lambda u: jnp.sum(lax.pmax(u, "i")))(b[0])[None], mesh=mesh, in_specs=P("i"),
                  out_specs=P("i"))(jax.make_array_from_process_local_data(row, v_of(rank)[None]))
allv = np.stack([v_of(r) for r in range(n)])
close(np.asarray(g.addressable_data(0))[0], n * (v_of(rank) == allv.max(0)), "grad pmax")
# finite differences of the global function sum_r sum(psum(v)^2 * w): d/dv_r = 2 n psum(v) w
w = np.arange(1.0, 4.0)
close(per_rank(jax.grad(grad_cases["psum"]), v_of)[0], 2 * n * allv.sum(0) * w, "grad psum analytic", 1e-10)

# mismatched shapes: every rank raises a ValueError naming the ranks' shapes (no hang)
bad = jax.shard_map(lambda b: lax.psum(b, "i"), mesh=mesh, in_specs=P(), out_specs=P())
try:
    bad(np.ones(rank + 1))
    raise AssertionError("mismatched shapes did not raise")
except ValueError as e:
    assert "rank 0: shape (1,)" in str(e) and f"rank {n - 1}: shape ({n},)" in str(e), str(e)

# EXAMPLE 1: data-parallel SGD of an MLP (pmean of gradients) == one process on the whole batch
rng = np.random.default_rng(0)
X, y = rng.normal(size=(12, 4)), rng.normal(size=12)
params0 = {"w1": rng.normal(size=(4, 8)) * 0.5, "b1": np.zeros(8), "w2": rng.normal(size=(8,)) * 0.5, "b2": 0.0}


def loss(p, X, y):
    h = jnp.tanh(X @ p["w1"] + p["b1"])
    return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)


def sgd(p, g):
    return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)


local_step = lambda p, X, y: sgd(p, lax.pmean(jax.grad(loss)(p, X, y), "i"))
dp_step = jax.jit(jax.shard_map(local_step, mesh=mesh, in_specs=(P(), P("i"), P("i")), out_specs=P()))
one_step = jax.jit(lambda p, X, y: sgd(p, jax.grad(loss)(p, X, y)))
p_dp, p_one = params0, params0
for _ in range(20):
    p_dp, p_one = dp_step(p_dp, X, y), one_step(p_one, X, y)
for k in params0:
    close(p_dp[k], p_one[k], f"SGD parameter {k}")

# EXAMPLE 2: 1-D periodic heat equation, halo exchange by ppermute == one process
N, alpha, steps = 24, 0.25, 40
u0 = np.sin(np.linspace(0, 2 * np.pi, N, endpoint=False)) + np.linspace(0, 1, N)


def heat_local(u):
    def step(_, u):
        left = lax.ppermute(u[-1:], "i", [(k, (k + 1) % n) for k in range(n)])    # from the left neighbour
        right = lax.ppermute(u[:1], "i", [(k, (k - 1) % n) for k in range(n)])    # from the right neighbour
        ext = jnp.concatenate([left, u, right])
        return u + alpha * (ext[:-2] - 2 * u + ext[2:])
    return lax.all_gather(lax.fori_loop(0, steps, step, u), "i", tiled=True)


u = u0.copy()
for _ in range(steps):
    u = u + alpha * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
heat = jax.shard_map(heat_local, mesh=mesh, in_specs=P("i"), out_specs=P())
close(jax.jit(heat)(u0), u, "heat equation, jit")
close(heat(u0), u, "heat equation, eager")

print(f"OK {rank}/{n}", flush=True)
jax.distributed.shutdown()
