"""Issue 17: SPMD over MPI. The multi-process checks run the rank programs of ``tests/mpi_programs``
under ``mpiexec -n 2`` and ``-n 3`` (the MPICH wheel of the ``test`` extra puts ``mpiexec`` in the
venv; a missing one is a failure, not a skip); the rest are single-process checks."""
import os
import pathlib
import re
import subprocess
import sys
import time

import numpy as np
import pytest

import tracejit
from tracejit import lax
from tracejit.sharding import GlobalArray, Mesh, NamedSharding, P, PartitionSpec

PROGRAMS = pathlib.Path(__file__).parent / "mpi_programs"
MPIEXEC = pathlib.Path(sys.executable).parent / "mpiexec"


def run_mpi(n, program, *args, timeout=120):
    """(returncode, stdout, stderr, seconds) of ``mpiexec -n n python program args``."""
    assert MPIEXEC.exists(), f"{MPIEXEC} is missing: install the test extra (pip install -e .[test]) for MPICH"
    env = dict(os.environ)
    # Several ranks share this machine's cores: one thread each keeps them from oversubscribing it
    # (MPICH's blocking waits spin, so an oversubscribed rank starves the one it waits for).
    env.update(TRACEJIT_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    # The ranks use the tests' private persistent compile cache (conftest.py), never the user's.
    env["TRACEJIT_CACHE_DIR"] = str(tracejit.config.compilation_cache_dir)
    start = time.perf_counter()
    proc = subprocess.run([str(MPIEXEC), "-n", str(n), sys.executable, str(PROGRAMS / program), *args],
                          capture_output=True, text=True, timeout=timeout, env=env)
    return proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - start


@pytest.mark.parametrize("n", [2, 3])
def test_collectives_gradients_and_examples_under_mpiexec(n):
    # Every collective (eager, jit inside and outside shard_map) against vmap's, all_to_all, global
    # arrays, gradients, mismatched shapes, the SGD and heat-equation examples: tests/mpi_programs/collectives.py.
    rc, out, err, _ = run_mpi(n, "collectives.py", str(n))
    assert rc == 0, f"mpiexec -n {n} failed:\n{out}\n{err[-4000:]}"
    # (the ranks' lines may interleave on the shared stdout)
    assert sorted(re.findall(r"OK \d+/\d+", out)) == [f"OK {r}/{n}" for r in range(n)]


def test_a_failing_rank_aborts_every_rank():
    rc, out, err, seconds = run_mpi(2, "crash.py", timeout=60)
    assert rc != 0 and "UNREACHABLE" not in out
    assert "[tracejit rank 1] uncaught exception" in err and "boom on purpose" in err
    assert seconds < 30


# --------------------------------------------------------------------------- one process

def test_single_process_initialize_is_a_no_op():
    tracejit.distributed.initialize()
    try:
        assert not tracejit.distributed.is_initialized()
        assert tracejit.process_count() == 1 and tracejit.process_index() == 0
        assert tracejit.devices() == [tracejit.Device()] and tracejit.devices()[0].process_index == 0
    finally:
        tracejit.distributed._state["initialized"] = False
    code = "import sys, tracejit; assert 'mpi4py' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_reprs():
    mesh = tracejit.make_mesh((1,), ("i",))
    assert repr(mesh) == "Mesh('i': 1)" and mesh.shape == {"i": 1} and mesh.axis_names == ("i",)
    assert repr(P("i")) == "PartitionSpec('i',)" and repr(P()) == "PartitionSpec()" and P is PartitionSpec
    assert repr(P(None, "i")) == "PartitionSpec(None, 'i')"
    s = NamedSharding(mesh, P("i"))
    assert repr(s) == "NamedSharding(mesh=Mesh('i': 1), spec=PartitionSpec('i',))"
    assert s == NamedSharding(Mesh(np.array(tracejit.devices()), "i"), P("i", None))
    with pytest.raises(ValueError, match="not in the mesh"):
        NamedSharding(mesh, P("j"))
    with pytest.raises(ValueError, match="needs 2 devices"):
        tracejit.make_mesh((2,), ("i",))


def test_shard_map_on_one_device_runs_f_on_the_whole_array():
    mesh = tracejit.make_mesh((1,), ("i",))
    x = np.arange(12.0).reshape(4, 3)
    seen = []

    def f(b):
        seen.append(b.shape)
        return (lax.psum(b, "i") * (lax.axis_index("i") + lax.axis_size("i")), lax.all_gather(b, "i", tiled=True),
                lax.ppermute(b, "i", [(0, 0)]), lax.pmax(b, "i"), lax.all_to_all(b, "i", 0, 1, tiled=True))
    for g in (tracejit.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i")),
              tracejit.jit(tracejit.shard_map(f, mesh=mesh, in_specs=(P("i"),), out_specs=P()))):
        for out in g(x):
            assert isinstance(out, tracejit.Array)
            np.testing.assert_array_equal(out, x)
    assert seen[0] == (4, 3)
    grad = tracejit.shard_map(tracejit.grad(lambda v: (lax.psum(v, "i") ** 2).sum()), mesh=mesh, in_specs=P(),
                              out_specs=P())
    np.testing.assert_allclose(grad(x), 2 * x)
    from tracejit.experimental.shard_map import shard_map
    assert shard_map is tracejit.shard_map


def test_collectives_not_made_natively_are_numpy_steps_under_jit():
    # psum_scatter / all_to_all / all_gather along any axis are native calls (other axes through
    # transposes: compiler/passes/native_collective_axes.py); dtypes MPI has no type for (float16,
    # bfloat16) call mpi4py from a NumPy step.
    mesh = tracejit.make_mesh((1,), ("i",))
    x = np.arange(8.0).reshape(2, 4)
    for fn, kind in [(lambda b: lax.psum_scatter(b, "i", scatter_dimension=1, tiled=True) + 1, "call"),
                     (lambda b: lax.psum_scatter(b, "i", tiled=True) + 1, "call"),
                     (lambda b: lax.all_to_all(b, "i", 1, 0, tiled=True) + 1, "call"),
                     (lambda b: lax.all_to_all(b, "i", 0, 0, tiled=True) + 1, "call"),
                     (lambda b: lax.all_gather(b.astype(np.float16), "i", axis=1, tiled=True) + 1, "numpy")]:
        f = tracejit.jit(tracejit.shard_map(fn, mesh=mesh, in_specs=P(), out_specs=P()))
        text = f.lower(x).compile().as_text()
        assert f"{kind} mpi_" in text, text
        np.testing.assert_array_equal(f(x), x + 1)


def test_global_arrays_on_one_process():
    s = NamedSharding(tracejit.make_mesh((1,), ("i",)), P("i"))
    a = tracejit.make_array_from_process_local_data(s, np.arange(4.0))
    assert isinstance(a, tracejit.Array) and a.shape == (4,)
    b = tracejit.device_put(np.arange(4.0), s)
    np.testing.assert_array_equal(b, np.arange(4.0))
    g = GlobalArray(np.ones((2, 2)), (2, 2), s)
    assert g.addressable_data(0).shape == (2, 2) and g.addressable_shards[0].index == (slice(0, 2), slice(None))
    with pytest.raises(ValueError, match="does not match"):
        tracejit.make_array_from_process_local_data(s, np.ones(3), (4,))


def test_unsupported_meshes_raise_not_implemented():
    mesh2 = Mesh(np.array(tracejit.devices()).reshape(1, 1), ("a", "b"))
    f = tracejit.shard_map(lambda x: lax.psum(x, ("a", "b")) + lax.axis_index("b"), mesh=mesh2,
                           in_specs=P("a", "b"), out_specs=P("a"))
    np.testing.assert_array_equal(f(np.ones((2, 2))), np.ones((2, 2)))     # a 2-D mesh of one process
    np.testing.assert_array_equal(tracejit.shard_map(lambda x: x * 2, mesh=mesh2, in_specs=P(("a", "b")),
                                                     out_specs=P(("a", "b")))(np.ones(2)), 2 * np.ones(2))
    with pytest.raises(ValueError, match="more than one dimension"):
        tracejit.shard_map(lambda x: x, mesh=mesh2, in_specs=P("a", ("b", "a")), out_specs=P())(np.ones((2, 2)))


# --------------------------------------------------------------------------- native calls

@pytest.mark.parametrize("n", [4, 6])
def test_two_dimensional_meshes(n):
    # A (2, n/2) mesh ('data', 'model'): collectives over one axis, both, both reversed (MPI
    # sub-communicators), blocks and outputs over both axes, grads outside: tests/mpi_programs/mesh2d.py.
    rc, out, err, _ = run_mpi(n, "mesh2d.py", timeout=240)
    assert rc == 0, f"mpiexec -n {n} failed:\n{out}\n{err[-4000:]}"
    assert sorted(re.findall(r"OK \d+/\d+", out)) == [f"OK {r}/{n}" for r in range(n)]


@pytest.mark.parametrize("n", [2, 3, 4])
def test_meshes_in_any_process_order_and_resharding(n):
    # Meshes holding the processes reversed, rotated and (n=4) scrambled in 2-D: axis indices,
    # blocks, collectives and grads follow positions; device_put and shard_map move blocks between
    # shardings (tests/mpi_programs/permuted_mesh.py).
    rc, out, err, _ = run_mpi(n, "permuted_mesh.py", timeout=240)
    assert rc == 0, f"mpiexec -n {n} failed:\n{out}\n{err[-4000:]}"
    assert sorted(re.findall(r"OK \d+/\d+", out)) == [f"OK {r}/{n}" for r in range(n)]


@pytest.mark.parametrize("n", [2, 3])
def test_grad_outside_shard_map_is_the_global_functions(n):
    # grad(shard_map(f)): replicated outputs' cotangents divided by the process count, replicated
    # inputs' summed (tests/mpi_programs/grad_outside.py); they were n times too large before.
    rc, out, err, _ = run_mpi(n, "grad_outside.py")
    assert rc == 0, f"mpiexec -n {n} failed:\n{out}\n{err[-4000:]}"
    assert sorted(re.findall(r"OK \d+/\d+", out)) == [f"OK {r}/{n}" for r in range(n)]


@pytest.mark.parametrize("n", [2, 3])
def test_compiled_collectives_are_native_calls_and_loops_stay_native(n):
    # Halo exchange in a fori_loop, psum in a loop, pmax/pmin/ppermute/all_gather/axis_index as calls
    # into MPI from compiled code (backends/cpu/native_calls.py): tests/mpi_programs/native_calls.py.
    rc, out, err, _ = run_mpi(n, "native_calls.py")
    assert rc == 0, f"mpiexec -n {n} failed:\n{out}\n{err[-4000:]}"
    assert sorted(re.findall(r"OK \d+/\d+", out)) == [f"OK {r}/{n}" for r in range(n)]


@pytest.mark.parametrize("n", [2, 3])
def test_collectives_overlap_independent_kernels(n):
    # compiler/overlap.py: every collective kind split into a start and a wait around independent
    # kernels, data-parallel gradients, halos in a native loop, and random programs: each equal to
    # the eager collectives, to overlap off and to NumPy (tests/mpi_programs/overlap.py).
    # (seed 35 compiles a loop body with and without overlap: the two once shared a cache entry)
    rc, out, err, _ = run_mpi(n, "overlap.py", "0", "16" if n == 3 else "40")
    assert rc == 0, f"mpiexec -n {n} failed:\n{out}\n{err[-4000:]}"
    assert sorted(re.findall(r"OK \d+/\d+", out)) == [f"OK {r}/{n}" for r in range(n)]


@pytest.mark.parametrize("program", ["native_calls.py", "overlap.py"])
def test_compiled_collective_on_mismatched_shapes_aborts_every_rank(program):
    # a blocking call checks itself; split calls are checked at their plan's first start
    rc, out, err, seconds = run_mpi(3, program, "mismatch", timeout=60)
    assert rc != 0 and "UNREACHABLE" not in out, (out, err)
    assert "differ between the processes" in err and seconds < 30


def test_one_process_mesh_compiles_collectives_as_copies():
    mesh = tracejit.make_mesh((1,), ("i",))
    f = tracejit.shard_map(lambda b: (lax.psum(b, "i") + lax.axis_index("i"), lax.ppermute(b, "i", [(0, 0)]),
                                      lax.all_gather(b, "i", tiled=True)),
                           mesh=mesh, in_specs=P("i"), out_specs=(P("i"), P("i"), P()))
    x = np.arange(6.0)
    text = tracejit.jit(f).lower(x).compile().as_text()
    assert "call mpi_psum" in text and "call mpi_ppermute" in text and "numpy mpi" not in text, text
    got = tracejit.jit(f)(x)
    for g in got:
        np.testing.assert_array_equal(np.asarray(g.addressable_data(0) if hasattr(g, "addressable_data") else g), x)


def assert_plan_delivers(plan, src, dst, G):
    """Simulate a reshard ``plan`` of the global array ``G`` from block map ``src`` to ``dst``: every
    receiver gets exactly its new block, each piece from a sender holding it, none twice, and a
    receiver holding a piece itself takes it from itself (no message)."""
    from tracejit.ops.mpi_reshard import _bounds, _relative
    for q in dst:
        new = _bounds(dst[q], G.shape)
        got = np.full([hi - lo for lo, hi in new], np.nan)
        for sender, receiver, region in plan:
            if receiver != q:
                continue
            held = _bounds(src[sender], G.shape)
            assert all(h0 <= r0 and r1 <= h1 for (r0, r1), (h0, h1) in zip(region, held))
            assert np.isnan(got[_relative(region, new)]).all()        # nothing delivered twice
            got[_relative(region, new)] = G[src[sender]][_relative(region, held)]
            if q in src and _bounds(src[q], G.shape) == held:
                assert sender == q                                     # its own copy, no message
        np.testing.assert_array_equal(got, G[dst[q]])


def test_reshard_plan_delivers_every_new_block_exactly_once():
    # ops/mpi_reshard.transfer_plan, simulated in one process for random pairs of block layouts
    # (splits of either dim, replicated ones, uneven holders): every receiver gets exactly its
    # new block, each piece from a process that holds it, a replica's pieces spread over holders.
    import itertools
    from tracejit.ops.mpi_reshard import transfer_plan
    rng = np.random.default_rng(0)
    shape = (12, 6)
    G = np.arange(72.0).reshape(shape)

    def layout(ranks, split):
        # split: (blocks along dim 0, blocks along dim 1); the rest of the ranks are replicas
        b0, b1 = split
        blocks = [(slice(i * shape[0] // b0, (i + 1) * shape[0] // b0), slice(j * shape[1] // b1, (j + 1) * shape[1] // b1))
                  for i in range(b0) for j in range(b1)]
        order = rng.permutation(ranks)
        return {int(r): blocks[k % len(blocks)] for k, r in enumerate(order)}

    for n, (s1, s2) in itertools.product((2, 3, 4, 6), itertools.product([(1, 1), (2, 1), (1, 2), (2, 3), (3, 2)],
                                                                          repeat=2)):
        if n % (s1[0] * s1[1]) or n % (s2[0] * s2[1]):
            continue
        src, dst = layout(n, s1), layout(n, s2)
        plan = transfer_plan(src, dst, shape)
        assert_plan_delivers(plan, src, dst, G)
        replicated = {q: (slice(None), slice(None)) for q in range(n)}
        senders = {s for s, r, _ in transfer_plan(replicated, dst, shape) if s != r}
        assert not senders          # every process holds it all: nothing is sent
