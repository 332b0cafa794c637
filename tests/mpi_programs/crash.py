"""Rank program of tests/test_mpi.py: rank 1 raises while the others wait in a collective; the
excepthook of tracejit.distributed must abort every rank (mpiexec exits non-zero, no hang)."""
import numpy as np

import tracejit as jax
from tracejit import lax
from tracejit.sharding import P

jax.distributed.initialize()
mesh = jax.make_mesh((jax.process_count(),), ("i",))
if jax.process_index() == 1:
    raise RuntimeError("boom on purpose")
jax.shard_map(lambda x: lax.psum(x, "i"), mesh=mesh, in_specs=P(), out_specs=P())(np.ones(3))
print("UNREACHABLE: a collective finished without rank 1", flush=True)
