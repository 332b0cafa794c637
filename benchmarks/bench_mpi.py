"""Issue 17's MPI benchmarks: allreduce bandwidth of ``lax.psum`` inside ``jit`` vs mpi4py, weak
scaling of a data-parallel MLP step from 1 to 2 processes, and that step on a deeper MLP with its
gradients' allreduces overlapped with the backward pass (compiler/overlap.py) or not.

Run ``python benchmarks/bench_mpi.py``: it starts itself under the venv's ``mpiexec`` (``-n 2`` for the
bandwidth, ``-n 1`` and ``-n 2`` for the scaling), one thread per rank. Rank 0 prints medians.
"""
from __future__ import annotations

import os
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np

MPIEXEC = pathlib.Path(sys.executable).parent / "mpiexec"
SIZES = [1 << k for k in range(10, 27, 2)]          # bytes: 1 KiB .. 64 MiB


def _timed(comm, fn, repeat):
    """Median over ``repeat`` runs of the slowest rank's time of ``fn()`` (ranks start together)."""
    times = []
    for _ in range(repeat):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        times.append(comm.allreduce(time.perf_counter() - t0, op=_max()))
    return statistics.median(times)


def _max():
    from mpi4py import MPI
    return MPI.MAX


def child_allreduce():
    from mpi4py import MPI

    import tracejit as jax
    from tracejit import lax
    from tracejit.ops import mpi_collectives
    from tracejit.sharding import P
    jax.distributed.initialize()
    comm, rank = MPI.COMM_WORLD, jax.process_index()
    mesh = jax.make_mesh((jax.process_count(),), ("i",))
    if rank == 0:
        print(f"allreduce of float64, {jax.process_count()} processes: median seconds (GB/s = bytes / time)")
        print(f"{'bytes':>10} {'mpi4py in-place':>16} {'mpi4py out-of-place':>20} {'psum jit':>10} "
              f"{'psum unchecked':>15} {'psum/mpi4py oop':>16}")
    for nbytes in SIZES:
        x = np.random.default_rng(rank).random(nbytes // 8)
        out = np.empty_like(x)
        buf = x.copy()
        repeat = 30 if nbytes < 1 << 22 else 7
        # (one jitted function per size: one signature each, no "varies in dim 0" warning)
        psum = jax.jit(jax.shard_map(lambda b: lax.psum(b, "i"), mesh=mesh, in_specs=P(), out_specs=P()))
        t_inplace = _timed(comm, lambda: comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM), repeat)
        t_oop = _timed(comm, lambda: comm.Allreduce(x, out, op=MPI.SUM), repeat)
        psum(x)
        t_psum = _timed(comm, lambda: psum(x), repeat)
        mpi_collectives.set_checks(False)
        t_fast = _timed(comm, lambda: psum(x), repeat)
        mpi_collectives.set_checks(True)
        if rank == 0:
            print(f"{nbytes:>10} {t_inplace:>16.2e} {t_oop:>20.2e} {t_psum:>10.2e} {t_fast:>15.2e} "
                  f"{t_psum / t_oop:>16.2f}", flush=True)
    np.testing.assert_allclose(np.asarray(psum(x)), out)


def child_weak():
    import tracejit as jax
    import tracejit.numpy as jnp
    from tracejit import lax
    from tracejit.sharding import P
    jax.distributed.initialize()
    from mpi4py import MPI
    comm, n = MPI.COMM_WORLD, jax.process_count()
    rng = np.random.default_rng(0)
    batch, d, h = 2048, 64, 512                   # per process: weak scaling keeps it fixed
    X, y = rng.normal(size=(batch * n, d)), rng.normal(size=batch * n)
    p = {"w1": rng.normal(size=(d, h)) * 0.1, "b1": np.zeros(h), "w2": rng.normal(size=(h,)) * 0.1, "b2": 0.0}

    def loss(p, X, y):
        return jnp.mean((jnp.tanh(X @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"] - y) ** 2)

    mesh = jax.make_mesh((n,), ("i",))
    step = jax.jit(jax.shard_map(lambda p, X, y: jax.tree_util.tree_map(
        lambda a, g: a - 0.01 * g, p, lax.pmean(jax.grad(loss)(p, X, y), "i")), mesh=mesh,
        in_specs=(P(), P("i"), P("i")), out_specs=P()))
    local = jax.jit(jax.grad(loss))
    Xl, yl = X[:batch], y[:batch]
    step(p, X, y)
    local(p, Xl, yl)
    t_step = _timed(comm, lambda: step(p, X, y), 15)
    t_grad = _timed(comm, lambda: local(p, Xl, yl), 15)
    nbytes = 8 * sum(np.size(v) for v in p.values())
    if jax.process_index() == 0:
        print(f"weak scaling, {n} process(es), {batch} rows each: step {t_step * 1e3:.2f} ms (local gradient "
              f"alone {t_grad * 1e3:.2f} ms; gradient {nbytes} bytes)", flush=True)


def child_overlap():
    """A 4-layer MLP's data-parallel step, each layer's gradient ``pmean`` started while the earlier
    layers' gradients compute (overlap on) or one blocking call each (off); timed interleaved."""
    import tracejit as jax
    import tracejit.numpy as jnp
    from tracejit import lax
    from tracejit.sharding import P
    jax.distributed.initialize()
    from mpi4py import MPI
    comm, n = MPI.COMM_WORLD, jax.process_count()
    rng = np.random.default_rng(0)
    batch, widths = 512, [256, 512, 512, 512, 10]
    X, y = rng.normal(size=(batch * n, widths[0])), rng.normal(size=(batch * n, widths[-1]))
    params = [rng.normal(size=(a, b)) / np.sqrt(a) for a, b in zip(widths[:-1], widths[1:])]

    def loss(ps, X, y):
        h = X
        for w in ps[:-1]:
            h = jnp.tanh(h @ w)
        return jnp.mean((h @ ps[-1] - y) ** 2)

    def local_step(ps, X, y):
        return [w - 0.01 * lax.pmean(g, "i") for w, g in zip(ps, jax.grad(loss)(ps, X, y))]
    mesh = jax.make_mesh((n,), ("i",))
    steps = {}
    for on in (True, False):
        jax.config.update("overlap_collectives", on)
        steps[on] = jax.jit(jax.shard_map(local_step, mesh=mesh, in_specs=(P(), P("i"), P("i")), out_specs=P()))
        steps[on](params, X, y)
        text = steps[on].lower(params, X, y).compile().as_text()
        if jax.process_index() == 0:
            print(f"  overlap {'on ' if on else 'off'}: {text.count('call start')} of "
                  f"{text.count('call start') + text.count('call mpi_psum')} allreduces split", flush=True)
    jax.config.update("overlap_collectives", True)
    for a, b in zip(steps[True](params, X, y), steps[False](params, X, y)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)
    times = {True: [], False: []}
    for _ in range(9):                           # interleaved: the machine's noise hits both alike
        for on in (True, False):
            times[on].append(_timed(comm, lambda: steps[on](params, X, y), 3))
    on, off = statistics.median(times[True]), statistics.median(times[False])
    if jax.process_index() == 0:
        print(f"data-parallel step, {n} processes, {batch} rows each, widths {widths}: overlap on "
              f"{on * 1e3:.2f} ms, off {off * 1e3:.2f} ms (off / on = {off / on:.2f})", flush=True)


def main():
    if not MPIEXEC.exists():
        raise SystemExit(f"{MPIEXEC} is missing: pip install -e .[mpi]")
    env = dict(os.environ, TRACEJIT_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    me = str(pathlib.Path(__file__).resolve())
    for n, what in ((2, "allreduce"), (1, "weak"), (2, "weak"), (2, "overlap")):
        subprocess.run([str(MPIEXEC), "-n", str(n), sys.executable, me, what], env=env, check=True, timeout=600)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        {"allreduce": child_allreduce, "weak": child_weak, "overlap": child_overlap}[sys.argv[1]]()
    else:
        main()
