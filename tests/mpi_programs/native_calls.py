"""Rank program of tests/test_mpi.py: compiled collectives are native calls into MPI
(backends/cpu/native_calls.py), so loops holding them run as native loops. Last line ``OK <rank>/<N>``;
with the argument ``mismatch`` the ranks make a compiled psum on different shapes and must abort."""
import re
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
# (a call may be split into a start and a wait around independent steps: compiler/overlap.py)
assert re.search(r"call (start )?mpi_psum_scatter", text) and re.search(r"call (start )?mpi_all_to_all", text) \
    and "numpy mpi" not in text, text
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
    assert re.search(rf"call (start )?{name}\[", text), (name, text)
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

# Along other axes than 0 they are native calls too (compiler/passes/native_collective_axes.py:
# axis-0 calls between transposes), in loops, gradients and vmaps; values from NumPy on every rank's
# operand.
every = [np.random.default_rng(r).standard_normal((2, 3 * n, 2 * n, n)) for r in range(n)]
xa = every[rank]
cat = lambda parts, axis: np.concatenate(parts, axis=axis)            # noqa: E731
want = {}
for a in range(4):
    want[f"all_gather {a}"] = (lambda b, a=a: lax.all_gather(b, "i", axis=a), np.stack(every, axis=a))
for a in range(1, 4):
    want[f"all_gather tiled {a}"] = (lambda b, a=a: lax.all_gather(b, "i", axis=a, tiled=True), cat(every, a))
total = sum(every)
for d in (1, 2, 3):
    k = total.shape[d] // n
    want[f"psum_scatter tiled {d}"] = (lambda b, d=d: lax.psum_scatter(b, "i", scatter_dimension=d, tiled=True),
                                       np.take(total, range(rank * k, rank * k + k), axis=d))
want["psum_scatter 3"] = (lambda b: lax.psum_scatter(b, "i", scatter_dimension=3), np.take(total, rank, axis=3))
for sp in (1, 2):
    k = xa.shape[sp] // n
    mine = [np.take(e, range(rank * k, rank * k + k), axis=sp) for e in every]   # chunk `rank` of each rank
    for c in range(4):
        want[f"all_to_all tiled {sp}->{c}"] = (
            lambda b, sp=sp, c=c: lax.all_to_all(b, "i", sp, c, tiled=True), cat(mine, c))
for c in range(3):
    want[f"all_to_all 3->{c}"] = (lambda b, c=c: lax.all_to_all(b, "i", 3, c),
                                  np.stack([np.take(e, rank, axis=3) for e in every], axis=c))
for what, (fn, value) in want.items():
    g = jax.shard_map(lambda b, fn=fn: fn(b) * 2, mesh=mesh, in_specs=P(), out_specs=P())
    text = compiled_text(g, xa)
    assert re.search(r"call (start )?mpi_", text) and "numpy mpi" not in text, (what, text)
    close(jax.jit(g)(xa), 2 * value, f"{what}, compiled")
    close(g(xa), 2 * value, f"{what}, eager")
xb = np.arange(4.0 * n).reshape(2, 2 * n) + 10 * rank
looped = jax.shard_map(lambda b: lax.fori_loop(0, 3, lambda i, u: lax.psum_scatter(
    lax.all_gather(u, "i", axis=1, tiled=True), "i", scatter_dimension=1, tiled=True) / n + 1, b),
    mesh=mesh, in_specs=P(), out_specs=P())
assert "numpy mpi" not in compiled_text(looped, xb)
close(jax.jit(looped)(xb), looped(xb), "gather + scatter along axis 1 in a loop: compiled == eager")
weights = np.arange(4.0 * n).reshape(2 * n, 2)
swap_grad = jax.shard_map(jax.grad(lambda b: (lax.all_to_all(b, "i", 1, 0, tiled=True) ** 2 * weights).sum()),
                          mesh=mesh, in_specs=P(), out_specs=P())
assert "numpy mpi" not in compiled_text(swap_grad, xb)
close(jax.jit(swap_grad)(xb), swap_grad(xb), "grad of all_to_all 1->0: compiled == eager")
# vmap inside shard_map (the batching rule moves the gathered axis to 1); it raised a TypeError
# ("multiple values for argument 'size'") before.
rows = jax.shard_map(jax.vmap(lambda r: lax.all_gather(r, "i", tiled=True)), mesh=mesh, in_specs=P(), out_specs=P())
assert "numpy mpi" not in compiled_text(rows, xb)
close(jax.jit(rows)(xb), np.stack([cat([xb[i] - 10 * rank + 10 * r for r in range(n)], 0) for i in range(2)]),
      "vmap of all_gather inside shard_map")

print(f"OK {rank}/{n}", flush=True)
jax.distributed.shutdown()
