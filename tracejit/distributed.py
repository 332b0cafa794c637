"""Multi-process SPMD over MPI (``jax.distributed``): one tracejit process per MPI rank.

Run a program with ``mpiexec -n 4 python train.py``; the program calls :func:`initialize` first::

    import tracejit as jax
    jax.distributed.initialize()          # rank / size from MPI (mpi4py)
    jax.process_index(), jax.process_count(), jax.devices()   # 0..3, 4, [CpuDevice(id=0), ...]

after which ``shard_map`` over a mesh of the processes (``tracejit/shard_map.py``) runs each
rank's block, and ``lax.psum`` & co. inside it are MPI collectives (``ops/mpi_collectives.py``).

Installing: ``pip install tracejit[mpi]`` brings mpi4py and the MPICH wheel (``libmpi`` and
``mpiexec`` in the environment's ``bin``). On a cluster use the system's MPI instead, so jobs use
its launcher (``srun``, ``mpirun``) and its interconnect (InfiniBand, Slingshot): load the MPI
module, then build mpi4py against it without the wheel's MPI, e.g.
``pip install --no-binary=mpi4py mpi4py`` (``MPICC=mpicc`` selects the compiler wrapper), and
do not install the ``mpich`` wheel; ``MPI.Get_library_version()`` shows which library is in use.

Without MPI (no mpiexec, or mpi4py missing, or one process) :func:`initialize` is a no-op that
leaves one process with one device. ``import tracejit`` never imports mpi4py.

Failures: after :func:`initialize` an uncaught exception on any rank prints the rank and the
traceback and calls ``MPI.COMM_WORLD.Abort(1)``, which ends every rank (mpiexec exits non-zero)
instead of leaving the others blocked in a collective forever. Collectives themselves are plain
blocking MPI calls: no timeouts and no polling loops of ours.

Examples
--------
>>> import tracejit
>>> tracejit.distributed.initialize()      # one process (no mpiexec): a no-op
>>> tracejit.process_count(), tracejit.distributed.is_initialized()
(1, False)
"""
from __future__ import annotations

import os
import sys
import traceback

from tracejit.device_types import _set_process
from tracejit.ops import mpi_collectives

__all__ = ["initialize", "is_initialized", "shutdown"]

_state = {"initialized": False, "excepthook": None}

# Environment variables MPI launchers set in the processes they start (MPICH/hydra, Open MPI,
# Slurm's PMI): without one, this is a plain single process and MPI is left alone.
_LAUNCHER_VARS = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS",
                  "HYDI_CONTROL_FD")


def _launched_by_mpi() -> bool:
    return any(v in os.environ for v in _LAUNCHER_VARS)


def initialize(coordinator_address=None, num_processes=None, process_id=None, local_device_ids=None, *,
               check_collectives: bool = True, **kwargs) -> None:
    """Join the MPI program: set :func:`tracejit.process_index`/``process_count``/``devices`` from MPI.

    Parameters
    ----------
    coordinator_address, num_processes, process_id, local_device_ids :
        JAX's parameters; MPI's launcher already decides them, so they must be None or agree with
        MPI (``num_processes`` == size, ``process_id`` == rank), else ValueError.
    check_collectives : bool
        Exchange a small (operation, shape, dtype) header before each collective so mismatched
        ranks raise a ValueError instead of hanging (default True; False saves one small
        ``Allgather`` per collective).
    **kwargs :
        Other ``jax.distributed.initialize`` options (``cluster_detection_method``, ...) are ignored:
        MPI has its own cluster discovery.

    Notes
    -----
    Without an MPI launcher in the environment (no ``mpiexec``), or with a single process, it is a
    no-op and :func:`is_initialized` stays False. Under ``mpiexec`` mpi4py must be installed
    (ImportError otherwise). It installs a ``sys.excepthook`` that aborts every rank when one
    raises (see the module docstring).

    Examples
    --------
    >>> import tracejit
    >>> tracejit.distributed.initialize()
    >>> tracejit.process_index()
    0
    """
    if _state["initialized"]:
        raise RuntimeError("tracejit.distributed.initialize() should only be called once")
    mpi_collectives.set_checks(check_collectives)
    if not _launched_by_mpi():
        return
    from mpi4py import MPI      # lazily, here only: importing tracejit must not start MPI
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if num_processes is not None and int(num_processes) != size:
        raise ValueError(f"initialize: num_processes={num_processes} but MPI started {size} processes")
    if process_id is not None and int(process_id) != rank:
        raise ValueError(f"initialize: process_id={process_id} but this is MPI rank {rank}")
    if size == 1:
        return
    _set_process(rank, size)
    _state["initialized"] = True
    _state["excepthook"] = sys.excepthook
    sys.excepthook = _abort_all_ranks


def _abort_all_ranks(exc_type, exc, tb) -> None:
    """Print this rank's uncaught exception and abort the MPI program, so no rank waits forever."""
    from mpi4py import MPI
    rank = MPI.COMM_WORLD.Get_rank()
    text = "".join(traceback.format_exception(exc_type, exc, tb))
    sys.stderr.write(f"[tracejit rank {rank}] uncaught exception; aborting all "
                     f"{MPI.COMM_WORLD.Get_size()} processes:\n{text}")
    sys.stderr.flush()
    MPI.COMM_WORLD.Abort(1)


def is_initialized() -> bool:
    """Whether :func:`initialize` joined a multi-process MPI program.

    Examples
    --------
    >>> import tracejit
    >>> tracejit.distributed.is_initialized()
    False
    """
    return _state["initialized"]


def shutdown() -> None:
    """Leave the multi-process program: back to one process with one device (``jax.distributed.shutdown``).

    The ranks synchronise with a barrier first; MPI itself is finalised by mpi4py at exit. A no-op
    when not initialised.

    Examples
    --------
    >>> import tracejit
    >>> tracejit.distributed.shutdown()
    >>> tracejit.process_count()
    1
    """
    if not _state["initialized"]:
        return
    from mpi4py import MPI
    MPI.COMM_WORLD.Barrier()
    sys.excepthook = _state["excepthook"] or sys.__excepthook__
    _set_process(0, 1)
    _state["initialized"] = False
