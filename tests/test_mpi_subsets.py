"""Issue 17: meshes of only some of the processes, and resharding inside jit.

The multi-process checks run the rank programs ``tests/mpi_programs/subset_mesh.py`` and
``reshard_in_jit.py`` under ``mpiexec`` (``run_mpi`` of tests/test_mpi.py, with a timeout, so a
hang fails); the rest are single-process checks of the pure helpers (the transfer plan between
different process sets, block maps), of the primitive ``mpi_reshard`` and of global arrays on a
process outside their mesh, simulated by setting this process's (rank, count)."""
import doctest
import itertools
import re
import subprocess
import sys

import numpy as np
import pytest

import tracejit
from tracejit import device_types, lax
from tracejit.ops import mpi_collectives, mpi_reshard
from tracejit.ops.mpi_reshard import block_map, block_shape, exchange_blocks, mpi_reshard_p, transfer_plan
from tracejit.sharding import GlobalArray, Mesh, NamedSharding, P
from tests.test_mpi import assert_plan_delivers, run_mpi


def _all_ranks_ok(n, program):
    rc, out, err, _ = run_mpi(n, program, timeout=120)
    assert rc == 0, f"mpiexec -n {n} {program} failed:\n{out}\n{err[-4000:]}"
    # (the ranks' lines may interleave on the shared stdout)
    assert sorted(re.findall(r"OK \d+/\d+", out)) == [f"OK {r}/{n}" for r in range(n)]


@pytest.mark.parametrize("n", [2, 3, 5])
def test_subset_meshes_under_mpiexec(n):
    # 1-D subset meshes (one process, permuted, (0..n-2) in rank order), a 2-D mesh of 4 of 5:
    # collectives eager and native under jit, axis_index = position, grads outside; the ValueError
    # of a process outside; global arrays on subset meshes and resharding between meshes of
    # different processes (overlapping, disjoint, all <-> some), eagerly and under jit.
    _all_ranks_ok(n, "subset_mesh.py")


@pytest.mark.parametrize("n", [2, 3, 4])
def test_resharding_inside_jit_under_mpiexec(n):
    # device_put / with_sharding_constraint / jit(shard_map) resharding inside jit, grad (jit and
    # eager) and jvp through it against the global math and a central difference, replicated
    # targets, vmap of mpi_reshard.
    _all_ranks_ok(n, "reshard_in_jit.py")


# --------------------------------------------------------------------------- pure helpers

def _layout(rng, ranks, split, shape):
    """{rank: index}: ``split`` = (blocks along dim 0, along dim 1) dealt to ``ranks`` in a random
    order (ranks beyond the number of blocks hold replicas)."""
    b0, b1 = split
    blocks = [(slice(i * shape[0] // b0, (i + 1) * shape[0] // b0), slice(j * shape[1] // b1, (j + 1) * shape[1] // b1))
              for i in range(b0) for j in range(b1)]
    order = rng.permutation(ranks)
    return {int(r): blocks[k % len(blocks)] for k, r in enumerate(order)}


def test_transfer_plan_between_meshes_of_different_processes():
    # Sources on one set of processes, targets on another (overlapping, disjoint, one inside the
    # other): every target process gets exactly its block, each piece from a source process
    # holding it, and a process holding the piece itself sends it to itself (no message).
    rng = np.random.default_rng(1)
    shape = (12, 6)
    G = np.arange(72.0).reshape(shape)
    sets = [(0, 1), (1, 2), (2, 3), (0, 1, 2, 3), (3, 0, 2), (4, 5, 0, 1, 2, 3)]
    splits = [(1, 1), (2, 1), (1, 2), (2, 3), (3, 2)]
    checked = 0
    for (src_set, s1), (dst_set, s2) in itertools.product(itertools.product(sets, splits), repeat=2):
        if len(src_set) % (s1[0] * s1[1]) or len(dst_set) % (s2[0] * s2[1]):
            continue
        src, dst = _layout(rng, src_set, s1, shape), _layout(rng, dst_set, s2, shape)
        plan = transfer_plan(src, dst, shape)
        assert {s for s, _, _ in plan} <= set(src_set) and {r for _, r, _ in plan} == set(dst_set)
        assert_plan_delivers(plan, src, dst, G)
        # The hashable block maps give the same plan.
        assert transfer_plan(block_map(src, shape), block_map(dst, shape), shape) == plan
        checked += 1
    assert checked > 100


def test_block_maps():
    rows = {1: (slice(2, 4), slice(None)), 0: (slice(0, 2), slice(None))}
    m = block_map(rows, (4, 3))
    assert m == ((0, ((0, 2), (0, 3))), (1, ((2, 4), (0, 3)))) and hash(m) == hash(block_map(m, (4, 3)))
    assert block_shape(m) == (2, 3)
    with pytest.raises(ValueError, match="one shape"):
        block_shape(block_map({0: (slice(0, 1),), 1: (slice(1, 4),)}, (4,)))


def test_exchange_blocks_and_the_primitive_in_one_process_never_touch_mpi():
    # One process taking part: a local copy, no mpi4py import (a fresh interpreter checks it).
    code = """if True:
        import sys, numpy as np, tracejit
        from tracejit.ops.mpi_reshard import block_map, exchange_blocks, mpi_reshard_p
        from tracejit.sharding import NamedSharding, P, make_mesh
        from tracejit import lax
        x = np.arange(12.0).reshape(4, 3)
        got = exchange_blocks(x, {0: (slice(None), slice(None))}, {0: (slice(None), slice(None))}, (4, 3))
        assert (got == x).all() and got is not x
        m = block_map({0: (slice(None), slice(None))}, (4, 3))
        f = tracejit.jit(lambda v: mpi_reshard_p.bind(v * 2, sources=m, targets=m, shape=(4, 3)))
        assert (f(x) == 2 * x).all() and "mpi_reshard" in f.lower(x).compile().as_text()
        s = NamedSharding(make_mesh((1,), ("i",)), P("i"))
        assert (tracejit.jit(lambda v: lax.with_sharding_constraint(v, s))(x) == x).all()
        assert "mpi4py" not in sys.modules
    """
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_exchange_blocks_checks_its_block():
    whole = {0: (slice(None),)}
    with pytest.raises(ValueError, match="is not its block"):
        exchange_blocks(np.ones(3), whole, whole, (4,))
    np.testing.assert_array_equal(exchange_blocks(np.arange(4.0), whole, {0: (slice(1, 3),)}, (4,)), [1.0, 2.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.complex64])
def test_a_reshard_moves_every_value_exactly(dtype):
    # Special values (NaN, +-inf, -0.0, extremes), empty arrays and non-contiguous (reversed,
    # strided, transposed) operands, eagerly and under jit: a reshard in one process is a copy of
    # the new block, bit for bit (the multi-process values are checked under mpiexec).
    info = np.finfo(dtype) if np.dtype(dtype).kind in "fc" else np.iinfo(dtype)
    special = [np.nan, np.inf, -np.inf, -0.0, info.max, info.min, info.tiny, 1.0] \
        if np.dtype(dtype).kind in "fc" else [info.max, info.min, 0, -1, 1, 7, -7, 3]
    base = np.array(special * 3, dtype).reshape(4, 6)
    for x in (base, base[::-1], base[:, ::2], base.T, base[:0]):
        whole = {0: (slice(None),) * x.ndim}
        rows = {0: (slice(1, 3),) + (slice(None),) * (x.ndim - 1)} if x.shape[0] >= 3 else whole
        want = x[rows[0]]
        got = exchange_blocks(x, whole, rows, x.shape)
        np.testing.assert_array_equal(got.view(np.uint8), np.ascontiguousarray(want).view(np.uint8))
        sources, targets = block_map(whole, x.shape), block_map(rows, x.shape)
        f = tracejit.jit(lambda v: mpi_reshard_p.bind(v, sources=sources, targets=targets, shape=x.shape))
        np.testing.assert_array_equal(np.asarray(f(x)).view(np.uint8), np.ascontiguousarray(want).view(np.uint8))


def test_mpi_reshard_is_linear_and_batches_in_one_process():
    # One process: the identity map, through jit, grad, jvp and vmap (the rules run; the
    # multi-process values are checked under mpiexec).
    m = block_map({0: (slice(None), slice(None))}, (2, 3))
    reshard = lambda v: mpi_reshard_p.bind(v, sources=m, targets=m, shape=(2, 3))   # noqa: E731
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(tracejit.jit(tracejit.grad(lambda v: (reshard(v) ** 2).sum()))(x), 2 * x)
    np.testing.assert_array_equal(tracejit.jvp(reshard, (x,), (np.ones_like(x),))[1], np.ones_like(x))
    xs = np.stack([x, -x])
    np.testing.assert_array_equal(tracejit.jit(tracejit.vmap(reshard, in_axes=1, out_axes=1))(np.moveaxis(xs, 0, 1)),
                                  np.moveaxis(xs, 0, 1))
    with pytest.raises(ValueError, match="not a block"):
        tracejit.jit(reshard)(np.ones((3, 3)))


def test_with_sharding_constraint_in_one_process():
    mesh = tracejit.make_mesh((1,), ("i",))
    s = NamedSharding(mesh, P("i"))
    tree = {"a": np.float32(2.0), "b": [np.ones((2, 2)), np.arange(3.0)]}
    for run in (lambda f: f, tracejit.jit):
        out = run(lambda t: lax.with_sharding_constraint(t, NamedSharding(mesh, P())))(tree)   # one for all
        np.testing.assert_array_equal(out["a"], tree["a"])
        np.testing.assert_array_equal(out["b"][0], tree["b"][0])
        out = run(lambda t: lax.with_sharding_constraint(t, {"a": tracejit.devices()[0], "b": s}))(tree)
        np.testing.assert_array_equal(out["a"], 2.0)
        np.testing.assert_array_equal(out["b"][1], tree["b"][1])
    assert tracejit.grad(lambda v: (lax.with_sharding_constraint(v, s) ** 2).sum())(np.arange(3.0)).tolist() == \
        [0.0, 2.0, 4.0]
    with pytest.raises(TypeError, match="PartitionSpec needs NamedSharding"):
        lax.with_sharding_constraint(np.ones(2), P("i"))


# --------------------------------------------------------------------------- outside the mesh, simulated

@pytest.fixture
def rank0_of_3():
    """This process plays rank 0 of 3 (no communication may happen: every check raises or stays local)."""
    saved = list(device_types._PROCESS)
    device_types._PROCESS[1] = 3
    try:
        yield [tracejit.Device(i) for i in range(3)]
    finally:
        device_types._PROCESS[:] = saved


def test_a_process_outside_a_subset_mesh(rank0_of_3):
    d0, d1, d2 = rank0_of_3
    mesh = Mesh(np.array([d2, d1], dtype=object), ("i",))
    f = tracejit.shard_map(lambda x: lax.psum(x, "i"), mesh=mesh, in_specs=P("i"), out_specs=P())   # defining: fine
    for run in (lambda g: g, tracejit.jit):
        with pytest.raises(ValueError, match=r"process 0 called a shard_map over a mesh of processes \[2, 1\]"):
            run(f)(np.ones(4))
    s = NamedSharding(mesh, P("i"))
    g = tracejit.device_put(np.arange(8.0).reshape(4, 2), s)
    assert isinstance(g, GlobalArray) and g.addressable_shards == [] and g.shape == (4, 2) and g.dtype == np.float64
    assert "no block here" in repr(g)
    with pytest.raises(ValueError, match=r"process 0 holds no block .* processes \[1, 2\]"):
        g.addressable_data(0)
    with pytest.raises(RuntimeError, match="non-addressable"):
        np.asarray(g)
    # Through jit it stays block-less (its leaf is a zero-size placeholder).
    h = tracejit.jit(lambda v: v)(g)
    assert isinstance(h, GlobalArray) and h.addressable_shards == [] and h.dtype == np.float64
    # A reshard between two meshes without this process: it takes no part (no MPI), block-less again.
    other = NamedSharding(Mesh(np.array([d1, d2], dtype=object), ("i",)), P(None, "i"))
    for moved in (tracejit.device_put(g, other), tracejit.jit(lambda v: tracejit.device_put(v, other))(g)):
        assert moved.sharding == other and moved.addressable_shards == []
    with pytest.raises(ValueError, match="process 0 is not in the mesh"):
        tracejit.make_array_from_process_local_data(s, np.ones((2, 2)))
    # Replicated over some of the processes: a global array, not a plain value.
    assert isinstance(tracejit.device_put(np.ones(2), NamedSharding(mesh, P())), GlobalArray)


def test_mesh_members_are_checked(rank0_of_3):
    d0, d1, _ = rank0_of_3
    with pytest.raises(ValueError, match="distinct processes of the 3"):
        tracejit.shard_map(lambda x: x, mesh=Mesh(np.array([d0, d1, d1], dtype=object), ("i",)), in_specs=P(),
                           out_specs=P())
    with pytest.raises(ValueError, match="distinct processes of the 3"):
        tracejit.shard_map(lambda x: x, mesh=Mesh(np.array([d0, tracejit.Device(7)], dtype=object), ("i",)),
                           in_specs=P(), out_specs=P())
    # A mesh of this process alone among 3: f runs on the whole value, no communication.
    alone = Mesh(np.array([d0], dtype=object), ("i",))
    f = tracejit.shard_map(lambda x: lax.psum(x, "i") + lax.axis_index("i"), mesh=alone, in_specs=P("i"),
                           out_specs=P("i"))
    np.testing.assert_array_equal(tracejit.jit(f)(np.arange(3.0)), np.arange(3.0))


def test_doctests():
    import tracejit.lax.sharding_constraint
    import tracejit.sharding
    shard_map_module = sys.modules["tracejit.shard_map"]
    for mod in (mpi_reshard, mpi_collectives, tracejit.sharding, shard_map_module, tracejit.lax.sharding_constraint):
        assert doctest.testmod(mod).failed == 0, mod.__name__
