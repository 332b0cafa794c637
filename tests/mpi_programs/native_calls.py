"""Rank program of tests/test_mpi.py: compiled collectives are native calls into MPI
(backends/cpu/native_calls.py), so loops holding them run as native loops. Last line ``OK <rank>/<N>``;
with the argument ``mismatch`` the ranks make a compiled psum on different shapes and must abort."""
import sys

import numpy as np

import tracejit as jax
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.sharding import P

jax.distributed.initialize()
rank, n = jax.process_index(), jax.process_count()
mesh = jax.make_mesh((n,), ("i",))


def close(a, b, what, tol=1e-12):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or not np.allclose(a, b, rtol=tol, atol=tol):
        raise AssertionError(f"rank {rank}: {what}: got {a} want {b}")


def compiled_text(f, *args):
    return jax.jit(f).lower(*args).compile().as_text()


if sys.argv[-1] == "mismatch":
    bad = jax.jit(jax.shard_map(lambda b: lax.psum(b, "i"), mesh=mesh, in_specs=P(), out_specs=P()))
    bad(np.ones(rank + 1))
    print("UNREACHABLE", flush=True)
    sys.exit(0)

# A halo exchange in a fori_loop: the loop is native, its ppermutes are MPI_Sendrecv calls.
N, alpha, steps = 6 * n, 0.25, 30
u0 = np.sin(np.linspace(0, 2 * np.pi, N, endpoint=False)) + np.linspace(0, 1, N)


def heat_local(u):
    def step(_, u):
        left = lax.ppermute(u[-1:], "i", [(k, (k + 1) % n) for k in range(n)])
        right = lax.ppermute(u[:1], "i", [(k, (k - 1) % n) for k in range(n)])
        ext = jnp.concatenate([left, u, right])
        return u + alpha * (ext[:-2] - 2 * u + ext[2:])
    return lax.all_gather(lax.fori_loop(0, steps, step, u), "i", tiled=True)


heat = jax.shard_map(heat_local, mesh=mesh, in_specs=P("i"), out_specs=P())
text = compiled_text(heat, u0)
assert "native loop" in text and "host loop" not in text and "call mpi_all_gather" in text, text
u = u0.copy()
for _ in range(steps):
    u = u + alpha * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
close(jax.jit(heat)(u0), u, "heat equation, native loop")

# psum_scatter (axis 0, tiled or not) and all_to_all (axes 0, 0, tiled or not) are native calls too.
xs = (np.arange(3.0 * n * 2).reshape(3 * n, 2) + 10 * rank)[None]    # this rank's block of (n, 3n, 2)
def scatter_and_swap(b):
    v = b[0]                                                          # (3n, 2) on each rank
    st = lax.psum_scatter(v, "i", tiled=True)                         # (3, 2): the sum of block r
    su = lax.psum_scatter(v.reshape(n, 3, 2), "i")                    # (3, 2), untiled
    at = lax.all_to_all(v, "i", 0, 0, tiled=True)                     # (3n, 2): chunk r from rank r
    au = lax.all_to_all(v.reshape(n, 3, 2), "i", 0, 0)                # (n, 3, 2)
    return st[None], su[None], at[None], au[None]
sw = jax.shard_map(scatter_and_swap, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
block = jax.make_array_from_process_local_data(jax.sharding.NamedSharding(mesh, P("i")), xs)
text = compiled_text(sw, block)
assert "call mpi_psum_scatter" in text and "call mpi_all_to_all" in text and "numpy mpi" not in text, text
got = [np.asarray(o.addressable_data(0))[0] for o in jax.jit(sw)(block)]
every = [np.arange(3.0 * n * 2).reshape(3 * n, 2) + 10 * r for r in range(n)]      # each rank's v
total = sum(every)
close(got[0], total[3 * rank:3 * rank + 3], "native psum_scatter tiled")
close(got[1], total[3 * rank:3 * rank + 3], "native psum_scatter")
close(got[2], np.concatenate([every[r][3 * rank:3 * rank + 3] for r in range(n)]), "native all_to_all tiled")
close(got[3], np.stack([every[r][3 * rank:3 * rank + 3] for r in range(n)]), "native all_to_all")

# psum / pmax / pmin / axis_index / untiled all_gather / a partial ppermute, in a native loop and not.
def local(b):
    v = b[0] * (lax.axis_index("i") + 1)

    def body(k, c):
        return lax.psum(c, "i") * 0.5 + k
    s = lax.fori_loop(0, 5, body, v)
    shifted = lax.ppermute(v, "i", [(0, n - 1)])           # only the last rank receives
    stacked = lax.all_gather(v.astype(np.int32), "i")
    return (s, lax.pmax(v, "i"), lax.pmin(v, "i"), shifted, stacked)[0:5]


def local_out(b):
    s, mx, mn, sh, st = local(b)
    return s[None], mx[None], mn[None], sh[None], st[None]


x = np.arange(4.0 * n).reshape(n, 4) - 3
f = jax.shard_map(local_out, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
text = compiled_text(f, x)
for name in ("mpi_pmax", "mpi_pmin", "mpi_ppermute", "mpi_axis_index", "mpi_all_gather"):
    assert f"call {name}" in text, (name, text)
# (the psum is in the loop's body: the loop is native, so it is a call too)
assert "native loop" in text and "numpy mpi" not in text and "host loop" not in text, text
assert "native entry" in text, text      # the whole program is one native call
got = [np.asarray(o.addressable_data(0))[0] for o in jax.jit(f)(x)]
vs = np.stack([x[r] * (r + 1) for r in range(n)])
s = vs.copy()
for k in range(5):
    s = np.broadcast_to(s.sum(0), s.shape) * 0.5 + k
close(got[0], s[rank], "psum in a native loop")
close(got[1], vs.max(0), "pmax")
close(got[2], vs.min(0), "pmin")
close(got[3], vs[0] if rank == n - 1 else np.zeros(4), "partial ppermute")
close(got[4], vs.astype(np.int32), "all_gather")
# The same program eagerly (mpi4py from Python) agrees.
eager = [np.asarray(o.addressable_data(0))[0] for o in f(x)]
for a, b, what in zip(got, eager, ("psum", "pmax", "pmin", "ppermute", "all_gather")):
    close(a, b, f"{what}: compiled == eager")

print(f"OK {rank}/{n}", flush=True)
jax.distributed.shutdown()
