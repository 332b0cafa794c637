"""Rank program of tests/test_mpi_subsets.py: meshes holding only some of the processes.

shard_map over a subset mesh (1-D in rank order, permuted, one process; 2-D of 4 processes when
there are 5 or more): only its processes call it, collectives run on the communicator of just them
(eagerly and as native calls under jit), axis_index is the position; a process outside gets a
ValueError naming its rank and the mesh's processes. Global arrays on subset meshes
(device_put, make_array_from_process_local_data; block-less on the other processes) and
resharding between shardings whose meshes hold different processes, eagerly and under jit.
Values against NumPy on the global data, which every rank builds. Runs with 2 or more processes.
Last line ``OK <rank>/<N>``."""
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
    if a.shape != b.shape or not np.allclose(a, b, rtol=tol, atol=tol):
        raise AssertionError(f"rank {rank}: {what}: got {a!r} want {b!r}")


def raises(exc, fn, *words):
    try:
        fn()
    except exc as e:
        for w in words:
            assert w in str(e), (w, str(e))
        return
    raise AssertionError(f"rank {rank}: expected {exc.__name__} mentioning {words}")


def check_1d(order, label):
    """A 1-D mesh whose position k holds the process order[k] (some of the processes)."""
    mesh = Mesh(devices[order], ("i",))
    k = len(order)
    sm = lambda fn, **kw: jax.shard_map(fn, mesh=mesh, **kw)     # noqa: E731
    if rank not in order:
        # Outside the mesh: defining it is fine, calling it raises (eagerly and under jit), no hang.
        f = sm(lambda: lax.psum(1.0, "i"), in_specs=(), out_specs=P())
        for run in (lambda g: g, jax.jit):
            raises(ValueError, run(f), f"process {rank}", str([int(i) for i in order]))
        return
    pos = order.index(rank)

    def both(fn, *args, in_specs=P(), out_specs=P(), collective=True):
        f = sm(fn, in_specs=in_specs, out_specs=out_specs)
        eager, compiled = f(*args), jax.jit(f)(*args)
        text = jax.jit(f).lower(*args).compile().as_text()
        assert "numpy mpi" not in text and ("call mpi_" in text) == collective, text  # native calls
        close(compiled, eager, f"{label}: jit == eager")
        return eager

    check_collectives_by_position(both, close, pos, k, label)
    G = np.arange(2.0 * k * 3).reshape(2 * k, 3)
    out = both(lambda b: b * 2, G, in_specs=P("i"), out_specs=P("i"), collective=False)
    close(out, 2 * G[2 * pos:2 * pos + 2], f"{label}: this position's block")
    # Derivatives outside shard_map on the subset: the global function's.
    w = np.array([0.5, -1.0, 2.0])
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("i")), G[2 * pos:2 * pos + 2])
    f = sm(lambda w, x: lax.psum(jnp.sum(jnp.tanh(x @ w)), "i"), in_specs=(P(), P("i")), out_specs=P())
    want = G.T @ (1 - np.tanh(G @ w) ** 2)
    close(jax.grad(f)(w, x), want, f"{label}: grad outside")
    close(jax.jit(jax.grad(f))(w, x), want, f"{label}: grad outside, jit")


subsets = [[1], [0]] if n == 2 else [[0, 2], [2, 1], list(range(n - 1))]   # the last: (0..n-2), rank order
for order in subsets:
    check_1d(order, f"mesh of processes {order}")

if n >= 5:
    # A 2-D mesh of 4 of the processes, scrambled: positions (d, m) hold order[2 * d + m].
    order = [3, 0, 4, 1]
    mesh = Mesh(devices[order].reshape(2, 2), ("data", "model"))
    f = jax.shard_map(lambda: jnp.stack([lax.axis_index("data"), lax.axis_index("model"),
                                         lax.psum(lax.axis_index("model") + 1, "model"),
                                         lax.all_gather(lax.axis_index(("data", "model")), "data")[1],
                                         lax.psum(lax.axis_index(("model", "data")), ("model", "data"))]),
                      mesh=mesh, in_specs=(), out_specs=P(None))
    if rank in order:
        d, m = divmod(order.index(rank), 2)
        for run in (lambda g: g, jax.jit):
            close(run(f)(), [d, m, 3, 2 + m, 6], "2-D subset mesh: positions and collectives")
        assert "numpy mpi" not in jax.jit(f).lower().compile().as_text()
    else:
        raises(ValueError, f, f"process {rank}")

# --------------------------------------------------------------------------- global arrays, resharding

G = np.arange(8.0 * n * n).reshape(4 * n, 2 * n)
A = [0, 1] if n >= 3 else [0]                 # mesh A and mesh B share process 1 (n >= 3)
B = [1, 2] if n >= 3 else [1]
mesh_a, mesh_b, world = Mesh(devices[A], ("i",)), Mesh(devices[B[::-1]], ("i",)), Mesh(devices, ("i",))


def expect(g, sharding, what):
    """g is sharding's global array of G: this process's block, or no block outside its mesh."""
    ids = [d.id for d in sharding.mesh.devices.flat]
    if rank not in ids:
        assert isinstance(g, GlobalArray) and g.addressable_shards == [], (what, g)
        raises(ValueError, lambda: g.addressable_data(0), f"process {rank}", "no block")
        assert g.shape == G.shape and g.dtype == G.dtype, (what, g)
        return
    index = sharding.devices_indices_map(G.shape)[jax.Device()]
    close(g, G[index], what)
    if isinstance(g, GlobalArray):
        assert g.addressable_shards[0].index == index, (what, g.addressable_shards[0].index, index)


ga = jax.device_put(G, NamedSharding(mesh_a, P("i")))
expect(ga, NamedSharding(mesh_a, P("i")), "device_put on mesh A")
if rank in A:
    made = jax.make_array_from_process_local_data(NamedSharding(mesh_a, P("i")), np.asarray(ga.addressable_data(0)))
    expect(made, NamedSharding(mesh_a, P("i")), "make_array_from_process_local_data on mesh A")
else:
    raises(ValueError, lambda: jax.make_array_from_process_local_data(NamedSharding(mesh_a, P("i")), G[:6]),
           f"process {rank}", "not in the mesh")

# Every process calls these (those outside both meshes take no part and get block-less arrays).
cases = [(NamedSharding(mesh_a, P("i")), NamedSharding(mesh_b, P(None, "i")), "A rows -> B columns"),
         (NamedSharding(mesh_a, P("i")), NamedSharding(mesh_b, P()), "A rows -> B replicated"),
         (NamedSharding(world, P("i")), NamedSharding(mesh_b, P("i")), "all rows -> B rows"),
         (NamedSharding(mesh_b, P(None, "i")), NamedSharding(world, P(None, "i")), "B columns -> all columns")]
if n >= 4:
    cases.append((NamedSharding(Mesh(devices[[0, 1]], ("i",)), P("i")),
                  NamedSharding(Mesh(devices[[3, 2]], ("i",)), P(None, "i")), "disjoint meshes"))
for source, target, label in cases:
    g = jax.device_put(G, source)
    expect(g, source, f"{label}: source")
    expect(jax.device_put(g, target), target, f"{label}: eager")
    moved = jax.jit(lambda v: jax.device_put(v, target))(g)
    expect(moved, target, f"{label}: jit")
    expect(jax.jit(lambda v: lax.with_sharding_constraint(v, target))(g), target, f"{label}: with_sharding_constraint")
    # Under jit the exchange is the primitive mpi_reshard, a NumPy step calling MPI.
    text = jax.jit(lambda v: jax.device_put(v, target)).lower(g).compile().as_text()
    takes_part = rank in [d.id for d in source.mesh.devices.flat] + [d.id for d in target.mesh.devices.flat]
    assert ("mpi_reshard" in text) == takes_part, text

# shard_map on mesh B of an array on mesh A (processes outside B): a clear error, not a hang.
if rank in B:
    sm_b = jax.shard_map(lambda b: b * 2, mesh=mesh_b, in_specs=P("i"), out_specs=P("i"))
    if set(A) - set(B):
        raises(ValueError, lambda: sm_b(ga), "device_put it")
    gb = jax.device_put(G, NamedSharding(mesh_b, P(None, "i")))       # the same mesh, another spec: resharded
    close(sm_b(gb), 2 * G[NamedSharding(mesh_b, P("i")).devices_indices_map(G.shape)[jax.Device()]],
          "shard_map reshards within its mesh")
    close(jax.jit(sm_b)(gb), 2 * G[NamedSharding(mesh_b, P("i")).devices_indices_map(G.shape)[jax.Device()]],
          "shard_map reshards within its mesh, jit")
    # An array on a mesh inside B (process B[0] alone) passed to shard_map on B: only B's processes
    # take part in resharding it to the in_spec (B[1] only receives).
    inner = jax.device_put(G, NamedSharding(Mesh(devices[B[:1]], ("i",)), P()))
    close(sm_b(inner), 2 * G[NamedSharding(mesh_b, P("i")).devices_indices_map(G.shape)[jax.Device()]],
          "shard_map reshards from a mesh inside its own")
    # grad through a reshard inside jit, on B's own communicator: rows -> columns of mesh B.
    W = np.cos(G)
    cols_b = NamedSharding(mesh_b, P(None, "i"))

    def loss(v):
        f = jax.shard_map(lambda b, w: lax.psum(jnp.sum(jnp.sin(b) * w), "i"), mesh=mesh_b,
                          in_specs=(P(None, "i"), P(None, "i")), out_specs=P())
        return f(jax.device_put(v, cols_b), W)
    rows_b = jax.device_put(G, NamedSharding(mesh_b, P("i")))
    close(jax.jit(loss)(rows_b), np.sum(np.sin(G) * W), "loss through a reshard on B")
    close(jax.jit(jax.grad(loss))(rows_b), (W * np.cos(G))[NamedSharding(mesh_b, P("i")).devices_indices_map(
        G.shape)[jax.Device()]], "jit(grad) through a reshard on B")
print(f"OK {rank}/{n}", flush=True)
jax.distributed.shutdown()
