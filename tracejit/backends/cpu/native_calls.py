"""Library calls made by compiled code: MPI's collectives on the arena's buffers.

A collective over a process axis (``ops/mpi_collectives.py``) that the compiler turned into a
``call`` window step is one call from the generated code into the MPI library mpi4py loaded:
``psum``/``pmax``/``pmin`` are ``MPI_Allreduce`` from the operand into the result buffer,
``all_gather`` along axis 0 is ``MPI_Allgather``, ``psum_scatter`` along axis 0
``MPI_Reduce_scatter_block``, ``all_to_all`` split and concatenated along axis 0 ``MPI_Alltoall``,
``ppermute`` is one ``MPI_Sendrecv`` (this rank's destination and source looked up by rank in
constant tables, ``MPI_PROC_NULL`` where it has none; a rank nobody sends to keeps the zeros written
first), ``axis_index`` reads the rank. No Python runs,
so a loop whose body exchanges halos runs as a native loop. A collective over part of a multi-axis
mesh (a ``group``) first asks :func:`_group` (a callback) for its sub-communicator and rank.

A call the compiler split to overlap independent steps (``compiler/overlap.py``) is three kinds of
step: ``call_start`` posts the nonblocking form (``MPI_Iallreduce``, ``MPI_Iallgather``,
``MPI_Ireduce_scatter_block``, ``MPI_Ialltoall``, or ``MPI_Irecv`` + ``MPI_Isend`` for ``ppermute``)
with its requests in the step's request buffer, ``call_poll`` tests them (``MPI_Testall``: MPI's
progress engine moves every pending transfer meanwhile) and ``call_wait`` completes them
(``MPI_Waitall``).

MPI's handles are not compiled in: the code reads them (and the rank) from a table the process
fills when it registers the symbols (:func:`register`), so a module from the persistent compile
cache serves every rank and every run. Only MPICH's ABI is called this way (integer handles:
MPICH, Intel MPI, MVAPICH; ``ops.mpi_collectives.mpich_abi``); under another MPI the collectives
stay NumPy steps calling mpi4py.

Before each blocking collective, and at the first start of a plan's split collectives on each
communicator for all of them at once (``WindowStep.agree``), the ranks compare a hash of the
operations, dtypes and shapes with one small ``MPI_Allreduce`` (the maximum and minimum of the
hash); when they differ, every rank prints which
collective disagreed and the job aborts (``MPI_Abort``, then ``_exit``: MPICH's abort returns
while the process manager stops the ranks), instead of MPI reading past a buffer or waiting forever.
The compiled code reads whether to check from the handle table, so
``initialize(check_collectives=False)`` (``mpi_collectives.set_checks``) turns it off at run time.
With one process (a one-device mesh) the calls are copies and MPI is never touched.
"""
from __future__ import annotations

import ctypes
import sys
import threading
import zlib

import numpy as np
from llvmlite import ir

from tracejit.ops import mpi_collectives
from tracejit.backends.cpu import lowering as L

I8, I32, I64, PTR, VOID = ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.PointerType(), ir.VoidType()
HANDLES = ("comm", "rank", "size", "proc_null", "float32", "float64", "int32", "int64", "sum", "max", "min",
           "check")     # check: 1 while ranks compare each collective first (mpi_collectives.set_checks)
_SLOT = {name: k for k, name in enumerate(HANDLES)}
_FUNCTIONS = ("MPI_Allreduce", "MPI_Allgather", "MPI_Reduce_scatter_block", "MPI_Alltoall", "MPI_Sendrecv",
              "MPI_Abort", "MPI_Iallreduce", "MPI_Iallgather", "MPI_Ireduce_scatter_block", "MPI_Ialltoall",
              "MPI_Isend", "MPI_Irecv", "MPI_Waitall", "MPI_Testall")
# Collectives whose nonblocking form the generated code can start and wait for (axis_index is no
# communication). MPICH's MPI_Request is an int: a ppermute holds two (its receive and its send).
SPLIT_CALLS = frozenset({"mpi_psum", "mpi_pmax", "mpi_pmin", "mpi_all_gather", "mpi_psum_scatter",
                         "mpi_all_to_all", "mpi_ppermute"})
_STATUSES_IGNORE = 1        # MPICH's MPI_STATUSES_IGNORE: (MPI_Status *)1
TABLE = "tracejit_mpi_handles"
MISMATCH = "tracejit_mpi_mismatch"
GROUP = "tracejit_mpi_group"
EXIT = "tracejit_mpi_exit"
_TAG = 17
_OPS = {"mpi_psum": "sum", "mpi_pmax": "max", "mpi_pmin": "min"}
_registered: list = []      # the handle table and the mismatch callback, kept alive for the process
_lock = threading.Lock()    # two threads compiling collectives register once


def _library_path() -> str:
    """The MPI library mpi4py loaded (read from this process's memory map)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "/libmpi" in path and ".so" in path:
                return path
    raise RuntimeError("compiled MPI collectives: mpi4py's MPI library is not loaded in this process")


def _mismatch(site: int) -> None:
    from mpi4py import MPI
    rank = MPI.COMM_WORLD.Get_rank()
    print(f"[tracejit rank {rank}] a compiled collective (call site {site:#x}) ran with operands or "
          "operations that differ between the processes (each rank must make the same collective on the "
          "same shape and dtype); aborting every rank", file=sys.stderr, flush=True)


def _group(text: bytes, size: int) -> int:
    """The sub-communicator of a collective over part of a multi-axis mesh (``group``: its repr,
    a constant string of the module) packed with this rank's position in it: ``rank << 32 | handle``.
    Called from compiled code at each such collective; the communicator is made at the first one
    (``MPI_Comm_split``, which every rank reaches together) and its packed value reused."""
    packed = _GROUP_HANDLES.get(text)
    if packed is None:
        import ast
        from mpi4py import MPI
        comm = mpi_collectives._comm(size, ast.literal_eval(text.decode()))
        packed = _GROUP_HANDLES[text] = (comm.Get_rank() << 32) | (MPI._handleof(comm) & 0xFFFFFFFF)
    return packed


_GROUP_HANDLES: dict = {}      # group text -> rank << 32 | communicator handle


def register() -> None:
    """Make MPI's functions, this process's handle table and the mismatch report resolvable by the
    generated code (once per process; before any module calling them is linked)."""
    with _lock:
        if not _registered:
            _register()


def _register() -> None:
    from llvmlite import binding as llvm
    from mpi4py import MPI
    lib = ctypes.CDLL(_library_path())
    for fn in _FUNCTIONS:
        llvm.add_symbol(f"tracejit_{fn}", ctypes.cast(getattr(lib, fn), ctypes.c_void_p).value)
    # MPICH's MPI_Abort returns to its caller (the process manager kills the ranks a moment later):
    # the rank must not go on into the mismatched collective, so it exits right after.
    llvm.add_symbol(EXIT, ctypes.cast(ctypes.CDLL(None)._exit, ctypes.c_void_p).value)
    comm = MPI.COMM_WORLD
    values = {"comm": MPI._handleof(comm), "rank": comm.Get_rank(), "size": comm.Get_size(),
              "proc_null": MPI.PROC_NULL, "float32": MPI._handleof(MPI.FLOAT),
              "float64": MPI._handleof(MPI.DOUBLE), "int32": MPI._handleof(MPI.INT32_T),
              "int64": MPI._handleof(MPI.INT64_T), "sum": MPI._handleof(MPI.SUM),
              "max": MPI._handleof(MPI.MAX), "min": MPI._handleof(MPI.MIN)}
    values["check"] = int(mpi_collectives.CHECK_HEADERS)
    table = (ctypes.c_int64 * len(HANDLES))(*[values[name] for name in HANDLES])
    mpi_collectives.CHECK_HOOKS.append(lambda on: table.__setitem__(_SLOT["check"], int(on)))
    report = ctypes.CFUNCTYPE(None, ctypes.c_int64)(_mismatch)
    group = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_char_p, ctypes.c_int64)(_group)
    llvm.add_symbol(TABLE, ctypes.addressof(table))
    llvm.add_symbol(MISMATCH, ctypes.cast(report, ctypes.c_void_p).value)
    llvm.add_symbol(GROUP, ctypes.cast(group, ctypes.c_void_p).value)
    _registered.extend([table, report, group, lib])


class CallEmitter:
    """Emits one ``call`` window step (the body of a ``WindowEmitter``) at the builder's position."""

    def __init__(self, b: ir.IRBuilder, step, bases, buffers):
        self.b, self.step, self.bases, self.buffers = b, step, bases, buffers
        self.name, params = step.combine
        self.params = dict(params)
        self.size = self.params["size"]
        self.module = b.module
        self._comm = self._rank = None     # a group's communicator and rank, once looked up

    # -- helpers
    def _function(self, name, ret, args):
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
        return fn

    def _handle(self, name):
        table = self.module.globals.get(TABLE)
        if table is None:
            table = ir.GlobalVariable(self.module, ir.ArrayType(I64, len(HANDLES)), TABLE)
            table.linkage = "external"
        at = self.b.gep(table, [ir.Constant(I64, _SLOT[name])], source_etype=I64)
        return self.b.load(at, typ=I64)

    def _h32(self, name):
        if name == "comm" and self.params.get("group") is not None:
            return self._group_lookup()[0]
        return self.b.trunc(self._handle(name), I32)

    def _group_lookup(self):
        """(communicator handle, this rank's position) of the collective's group: one call to
        :func:`_group` per execution, at the step's start."""
        if self._comm is None:
            b = self.b
            text = repr(self.params["group"]).encode() + b"\0"
            arr = ir.ArrayType(I8, len(text))
            g = ir.GlobalVariable(self.module, arr, self.module.get_unique_name("mpi_group"))
            g.initializer = ir.Constant(arr, bytearray(text))
            g.global_constant, g.linkage = True, "private"
            packed = b.call(self._function(GROUP, I64, [PTR, I64]), [g, ir.Constant(I64, self.size)])
            self._comm = b.trunc(packed, I32)
            self._rank = b.lshr(packed, ir.Constant(I64, 32))
        return self._comm, self._rank

    def _rank_value(self):
        """This rank's position along the collective's axes (an i64)."""
        if self.params.get("group") is not None:
            return self._group_lookup()[1]
        return self._handle("rank")

    def _dtype(self, dtype):
        return self._h32(str(np.dtype(dtype)))

    def _nbytes(self, bid):
        return self.buffers[bid].nbytes

    def _copy(self, dst, src, nbytes):
        if nbytes:
            fn = self._function("llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, ir.IntType(1)])
            self.b.call(fn, [dst, src, ir.Constant(I64, nbytes), ir.Constant(ir.IntType(1), 0)])

    def _zero(self, bid):
        if self._nbytes(bid):
            L.zero_bytes(self.b, self.bases[bid], self._nbytes(bid))

    def _check_agreement(self, what=None):
        """Every rank makes this collective on the same shape and dtype (or, given ``what``, the
        same split calls of a plan: ``WindowStep.agree``), or every rank aborts."""
        b = self.b
        if what is None:
            x = self.buffers[self.step.operand] if self.step.operand is not None else None
            what = (self.name, sorted(self.params.items()), x.shape if x else (), str(x.dtype) if x else "")
        site = zlib.crc32(repr(what).encode())
        with b.goto_entry_block():
            pair = b.alloca(I64, size=2)
        first, second = pair, b.gep(pair, [ir.Constant(I64, 1)], source_etype=I64)
        b.store(ir.Constant(I64, site), first)
        b.store(ir.Constant(I64, -site), second)
        allreduce = self._function("tracejit_MPI_Allreduce", I32, [PTR, PTR, I32, I32, I32, I32])
        in_place = b.inttoptr(ir.Constant(I64, -1), PTR)        # MPICH's MPI_IN_PLACE
        b.call(allreduce, [in_place, pair, ir.Constant(I32, 2), self._h32("int64"), self._h32("max"),
                           self._h32("comm")])
        # max(site) == site and max(-site) == -site: every rank has this site.
        same = b.and_(b.icmp_signed("==", b.load(first, typ=I64), ir.Constant(I64, site)),
                      b.icmp_signed("==", b.load(second, typ=I64), ir.Constant(I64, -site)))
        with b.if_then(b.not_(same)):
            b.call(self._function(MISMATCH, VOID, [I64]), [ir.Constant(I64, site)])
            b.call(self._function("tracejit_MPI_Abort", I32, [I32, I32]), [self._h32("comm"), ir.Constant(I32, 1)])
            b.call(self._function(EXIT, VOID, [I32]), [ir.Constant(I32, 1)])

    # -- the collectives
    def emit(self):
        """A blocking call (``call``), a nonblocking one's start (``call_start``: the requests go to
        the step's request buffer), a poll of it (``call_poll``: ``MPI_Testall``, which lets MPI's
        progress engine move every pending transfer) or its completion (``call_wait``: ``MPI_Waitall``)."""
        step, bases = self.step, self.bases
        out = step.out
        if self.name == "mpi_axis_index":
            rank = ir.Constant(I32, 0) if self.size == 1 else self.b.trunc(self._rank_value(), I32)
            self.b.store(rank, bases[out])
            return
        x = step.operand
        if self.size == 1:
            if step.kind != "call_wait":
                self._local(x, out)
            return
        ignore = self.b.inttoptr(ir.Constant(I64, _STATUSES_IGNORE), PTR)
        if step.kind == "call_wait":
            fn = self._function("tracejit_MPI_Waitall", I32, [I32, PTR, PTR])
            self.b.call(fn, [ir.Constant(I32, self._requests()), bases[step.update], ignore])
            return
        if step.kind == "call_poll":
            with self.b.goto_entry_block():
                flag = self.b.alloca(I32)
            fn = self._function("tracejit_MPI_Testall", I32, [I32, PTR, PTR, PTR])
            self.b.call(fn, [ir.Constant(I32, self._requests()), bases[step.update], flag, ignore])
            return
        if self.params.get("group") is not None:
            self._group_lookup()          # before the check's branch: its values serve the whole step
        # A blocking call checks itself; of a plan's split calls, the first start checks them all
        # (a start must not wait for the other ranks: compiler/overlap.py).
        if step.kind == "call" or step.agree:
            with self.b.if_then(self.b.icmp_signed("!=", self._handle("check"), ir.Constant(I64, 0))):
                self._check_agreement(step.agree or None)
        elements = int(np.prod(self.buffers[x].shape, dtype=np.int64))
        count = ir.Constant(I32, elements)
        dt = self._dtype(self.buffers[x].dtype)
        if self.name == "mpi_ppermute":
            self._ppermute(x, out, count, dt)
            return
        # (operand, result, MPI's arguments between and after them) of each collective; the
        # nonblocking form is the same call with an I and a request pointer last.
        if self.name in _OPS:
            name, args = "Allreduce", [bases[x], bases[out], count, dt, self._h32(_OPS[self.name])]
        elif self.name == "mpi_all_gather":
            name, args = "Allgather", [bases[x], count, dt, bases[out], count, dt]
        elif self.name == "mpi_psum_scatter":
            # (along axis 0: rank r's block is the r-th contiguous slice of the operand)
            block = ir.Constant(I32, int(np.prod(self.buffers[out].shape, dtype=np.int64)))
            name, args = "Reduce_scatter_block", [bases[x], bases[out], block, dt, self._h32("sum")]
        elif self.name == "mpi_all_to_all":
            # (split and concatenated along axis 0: chunk r of the operand goes to rank r)
            chunk = ir.Constant(I32, elements // self.size)
            name, args = "Alltoall", [bases[x], chunk, dt, bases[out], chunk, dt]
        else:
            raise NotImplementedError(f"no native call for {self.name}")
        args.append(self._h32("comm"))
        if step.kind == "call_start":
            name, args = "I" + name.lower(), args + [self._request(0)]
        fn = self._function(f"tracejit_MPI_{name}", I32, [a.type for a in args])
        self.b.call(fn, args)

    def _requests(self) -> int:
        return 2 if self.name == "mpi_ppermute" else 1

    def _request(self, k):
        """The address of the step's ``k``-th MPI_Request (an int32 of its request buffer)."""
        return self.b.gep(self.bases[self.step.update], [ir.Constant(I64, k)], source_etype=I32)

    def _local(self, x, out):
        """One process: the collective of a single rank."""
        if self.name == "mpi_ppermute" and (0, 0) not in self.params["perm"]:
            self._zero(out)
        else:
            self._copy(self.bases[out], self.bases[x], self._nbytes(out))

    def _ppermute(self, x, out, count, dt):
        b = self.b
        dest, source = [-1] * self.size, [-1] * self.size
        for src, dst in self.params["perm"]:
            dest[src], source[dst] = dst, src
        rank = self._rank_value()
        null = self._h32("proc_null")

        def lookup(values, name):
            arr = ir.ArrayType(I32, self.size)
            g = ir.GlobalVariable(self.module, arr, self.module.get_unique_name(name))
            g.initializer = ir.Constant(arr, [ir.Constant(I32, v) for v in values])
            g.global_constant, g.linkage = True, "private"
            v = b.load(b.gep(g, [rank], source_etype=I32), typ=I32)
            return b.select(b.icmp_signed("<", v, ir.Constant(I32, 0)), null, v)
        to, frm = lookup(dest, "ppermute_dest"), lookup(source, "ppermute_source")
        self._zero(out)         # a rank nobody sends to keeps zeros, as in JAX
        tag, comm = ir.Constant(I32, _TAG), self._h32("comm")
        if self.step.kind == "call_start":       # the receive first: the matching send may be local
            irecv = self._function("tracejit_MPI_Irecv", I32, [PTR, I32, I32, I32, I32, I32, PTR])
            isend = self._function("tracejit_MPI_Isend", I32, [PTR, I32, I32, I32, I32, I32, PTR])
            b.call(irecv, [self.bases[out], count, dt, frm, tag, comm, self._request(0)])
            b.call(isend, [self.bases[x], count, dt, to, tag, comm, self._request(1)])
            return
        with b.goto_entry_block():
            status = b.alloca(I64, size=32)                # room for any MPI_Status
        fn = self._function("tracejit_MPI_Sendrecv", I32,
                            [PTR, I32, I32, I32, I32, PTR, I32, I32, I32, I32, I32, PTR])
        b.call(fn, [self.bases[x], count, dt, to, tag, self.bases[out], count, dt, frm, tag, comm, status])


def uses_mpi(step) -> bool:
    """Whether a ``call`` step calls MPI (more than one process), so :func:`register` must run before
    its module is linked -- also when the module comes from the persistent cache."""
    return dict(step.combine[1])["size"] > 1


def emit_call(b, step, bases, buffers) -> None:
    """The code of ``call`` window step ``step``."""
    CallEmitter(b, step, bases, buffers).emit()


__all__ = ["register", "emit_call", "uses_mpi", "CallEmitter", "HANDLES", "SPLIT_CALLS"]
