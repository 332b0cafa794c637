"""Executing a compiled plan: buffers, kernel launches, threads.

Kernels are called through ctypes, which releases the GIL, so a kernel's
range can be split across a thread pool. Temporaries live in arenas taken
from a per-executable pool, so concurrent calls from several threads each
get their own arena.
"""
from __future__ import annotations

import ctypes
import math
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from tracejit.config import config
from tracejit.backends.cpu import blas
from tracejit.backends.cpu.codegen import ELEMENTWISE_GRANULE
from tracejit.backends.cpu.pointers import data_address
# Donation and deletion marks belong to the arrays (tracejit/array.py); a call checks and sets them.
from tracejit.array import _donated, mark_donated_to
from tracejit.core.primitive import impl_rules
from tracejit.compiler.plan import DotStep, NumpyStep, WindowStep, step_writes
from tracejit.compiler.kernel_ir import Kernel
from tracejit.ops.dot import _free_dims

KERNEL_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
# Below this many elements of work a kernel runs on the calling thread: a
# thread hand-off costs more than it saves. An OpenMP fork/join (parallel.py)
# costs a few microseconds; Python's pool 100 or more.
OPENMP_MIN_WORK = 1 << 17
OPENMP_MIN_WORK_MATH = 1 << 14      # kernels calling transcendental helpers: ~10x the work per element
PARALLEL_MIN_WORK = 1 << 20

_pool = None
_pool_lock = threading.Lock()


_CPU_COUNT = os.cpu_count() or 1


def num_threads() -> int:
    return max(1, config.num_threads or _CPU_COUNT)


def _forget_pool_in_child() -> None:
    # A forked child has none of the pool's threads: work submitted to it would never run.
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def thread_pool():
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=num_threads(), thread_name_prefix="tracejit")
    return _pool


def openmp_min_work(emitter) -> int:
    """The work (elements) from which a kernel is split over the OpenMP team."""
    return OPENMP_MIN_WORK_MATH if emitter.math_calls else OPENMP_MIN_WORK


def team_granule(layout, emitter) -> int:
    """The block a thread's share of a kernel's range is a multiple of."""
    if emitter.outer_vector:
        return emitter.lanes     # thread chunks keep whole vector blocks
    return ELEMENTWISE_GRANULE if layout.elementwise_1d else 1


class KernelLaunch:
    """A compiled kernel plus how to call it."""

    def __init__(self, kernel: Kernel, layout, slots, address: int, emitter):
        self.kernel = kernel
        self.slots = slots
        self.fn = KERNEL_FN(address)
        self.address = address
        self.team = None          # (OpenMP runtime, trampoline address) when its module has one
        self.openmp_min_work = openmp_min_work(emitter)
        self.parallel_size = layout.parallel_size
        self.work = emitter.work     # elements, or a convolution's multiply-adds
        self.granule = team_granule(layout, emitter)
        self.ptr_array = ctypes.c_void_p * len(slots)

    def __call__(self, env):
        n = self.parallel_size
        if n == 0 or (self.work == 0 and not self.kernel.is_row_kernel):
            # (A reduction over an empty axis still writes its identity for every row.)
            return
        ptrs = self.ptr_array(*[data_address(env[b]) for b in self.slots])
        if self.work < self.openmp_min_work or n < 2:    # the common case for small inputs: no lookups
            self.fn(ptrs, 0, n)
            return
        threads = num_threads()
        if threads > 1 and self.team is not None and self.team[0].usable:
            runtime, trampoline = self.team
            runtime.run(trampoline, self.address, ptrs, n, self.granule, threads)
            return
        if self.work < PARALLEL_MIN_WORK or threads == 1:
            self.fn(ptrs, 0, n)
            return
        chunks = min(threads, n)
        step = -(-n // chunks)
        step = -(-step // self.granule) * self.granule
        bounds = [(lo, min(n, lo + step)) for lo in range(0, n, step)]
        futures = [thread_pool().submit(self.fn, ptrs, lo, hi) for lo, hi in bounds[1:]]
        self.fn(ptrs, *bounds[0])
        for f in futures:
            f.result()


class WindowLaunch:
    """A compiled window copy (dynamic_slice / dynamic_update_slice): one call, one thread."""

    def __init__(self, step: WindowStep, layout, slots, address: int, emitter=None):
        self.kernel = step
        self.slots = slots
        self.fn = KERNEL_FN(address)
        self.ptr_array = ctypes.c_void_p * len(slots)

    def __call__(self, env):
        self.fn(self.ptr_array(*[data_address(env[b]) for b in self.slots]), 0, 1)


def run_dot(step: DotStep, env):
    alpha, beta = 1.0, 0.0
    out = env[step.out]
    if step.accumulate is not None:
        c, alpha = step.accumulate
        if not np.shares_memory(out, env[c]):
            np.copyto(out, env[c])
        beta = 1.0
    lhs = env[step.lhs].transpose(step.lhs_perm) if step.lhs_perm != tuple(range(env[step.lhs].ndim)) else env[step.lhs]
    rhs = env[step.rhs].transpose(step.rhs_perm) if step.rhs_perm != tuple(range(env[step.rhs].ndim)) else env[step.rhs]
    (lc, rc), (lb, rb) = step.dimension_numbers
    if not lb and len(lc) == 1 and lhs.ndim == 2 and rhs.ndim == 2:
        # Transposed views reach BLAS as transpose flags: no copy.
        a = lhs if lc == (1,) else lhs.T
        bm = rhs if rc == (0,) else rhs.T
        blas.gemm(a, bm, out, alpha, beta)
        return
    lf, rf = _free_dims(lhs.ndim, lc, lb), _free_dims(rhs.ndim, rc, rb)
    m = math.prod(lhs.shape[d] for d in lf)
    n = math.prod(rhs.shape[d] for d in rf)
    k = math.prod(lhs.shape[d] for d in lc)
    batch = tuple(lhs.shape[d] for d in lb)
    _batched_gemm(np.transpose(lhs, list(lb) + lf + list(lc)), np.transpose(rhs, list(rb) + list(rc) + rf),
                  out.reshape(batch + (m, n)), m, n, k, alpha, beta)


def _batched_gemm(a, b, out, m, n, k, alpha, beta):
    """``out = alpha * a @ b + beta * out`` over the leading batch axes of ``a`` (..., M.., K..),
    ``b`` (..., K.., N..) and ``out`` (..., m, n), as 3-D products of views: where the batch axes
    cannot merge into one without a copy (heads split off a model axis: ``(B, T, H, D)`` read as
    ``(B, H, T, D)``), one product per index of the first batch axis. Only operands that are not
    (batch, matrix) views at all are copied."""
    nb = out.ndim - 2
    size = math.prod(out.shape[:nb])
    try:
        a3, b3 = np.reshape(a, (size, m, k), copy=False), np.reshape(b, (size, k, n), copy=False)
    except ValueError:
        if nb > 1:
            for i in range(out.shape[0]):
                _batched_gemm(a[i], b[i], out[i], m, n, k, alpha, beta)
            return
        a3, b3 = a.reshape(size, m, k), b.reshape(size, k, n)
    blas.gemm(a3, b3, out.reshape(size, m, n), alpha, beta)




def make_numpy_step(step: NumpyStep, buffers):
    rule = impl_rules[step.eqn.primitive]
    if step.loop is not None:
        # Control flow, compiled by the backend: a native loop, or a host loop of compiled bodies.
        return _loop_step(step.loop, step)
    params = step.eqn.params
    ins = step.inputs
    outs = step.outputs

    def run(env):
        args = [env[b] if isinstance(b, int) else b[1] for b in ins]
        results = rule(*args, **params)
        for bid, r in zip(outs, results):
            buf = buffers[bid]
            if buf.kind == "external":
                r = np.asarray(r, dtype=buf.dtype, order="C")   # (0-d stays 0-d)
                # An impl may return a view of its operand (broadcast_to, reshape): the planner
                # reuses an operand's arena memory after its last reader, so keep a copy.
                if r.base is not None and any(isinstance(a, np.ndarray) and np.may_share_memory(r, a)
                                              for a in args):
                    r = r.copy()
                env[bid] = r
            else:
                np.copyto(env[bid], np.reshape(np.asarray(r), buf.shape), casting="unsafe")
    return run


def _loop_step(loop, step: NumpyStep):
    """A loop's results are fresh arrays of the right type: they become the buffers (no copy).

    Its operands are buffers of the plan (C-contiguous, of the operand's dtype) or literals,
    made arrays of the operand's type once here, so the call skips every check."""
    outs = step.outputs
    sources = [(b, None if isinstance(b, int) else np.asarray(b[1], a.aval.dtype).reshape(a.aval.shape))
               for b, a in zip(step.inputs, step.eqn.inputs)]

    def run(env):
        results = loop.run_prepared([env[b] if f is None else f for b, f in sources])
        for bid, r in zip(outs, results):
            env[bid] = r
    run.allocates = set(outs)      # the executable need not allocate these outputs itself
    return run


# Outputs at least this large are carved from recycled memory (see OutputPool).
RECYCLE_MIN_BYTES = 1 << 20
# A compile pre-faults at most this much output memory for the first call (see prime_in_background).
PRIME_MAX_BYTES = 256 << 20


def _claim_refs() -> int:
    # What sys.getrefcount reports for a buffer that OutputPool.take has popped off its list when
    # nothing else refers to it: measured with the same bytecode, so it holds on any CPython.
    buffers = [np.empty(1, np.uint8)]
    candidate = buffers.pop(0)
    return sys.getrefcount(candidate)


_UNSHARED_REFS = _claim_refs()


class OutputPool:
    """Recycles the memory of large outputs once nothing outside the pool can see it.

    A fresh multi-megabyte ``np.empty`` comes from ``mmap`` and pays a page
    fault on first touch of every page, which costs about as much as the
    kernel's own write. Each large output is a view of a base buffer the pool
    keeps (the ``keep`` most recent). A call reuses a base only when its
    reference count says the pool holds the only reference: every view of an
    output (slices, transposes, ``np.asarray``, reshapes) keeps the base itself
    as its ``.base``, and memoryviews, ``np.frombuffer`` arrays and ctypes
    objects keep the array they were made from, so as long as the user can
    reach the memory in any of these ways the base counts as in use and the
    call takes another buffer. (Only a raw address, e.g. ``ctypes.data`` kept as
    an int, escapes this; NumPy gives no protection there either.)

    Taking a buffer pops it off the list first (atomic under the GIL, and in
    free-threaded builds), so two threads can never claim the same one, and
    no lock is needed (nothing to leave held across a fork).
    """

    def __init__(self, nbytes: int, keep: int = 2):
        self.nbytes = nbytes
        self.keep = keep
        self.buffers: list = []     # the tracked bases, oldest first: some lent out, some free
        self.priming: threading.Event | None = None     # set once a pending prime() is done
        self._priming_pid = os.getpid()

    def take(self, shape, dtype):
        buffers = self.buffers
        lent = []
        base = None
        for _ in range(self.keep):
            try:
                candidate = buffers.pop(0)
            except IndexError:
                break
            if sys.getrefcount(candidate) <= _UNSHARED_REFS:
                base = candidate
                break
            lent.append(candidate)
        candidate = None
        if base is None:
            base = self._primed()
            if base is None:
                base = np.empty(self.nbytes, np.uint8)
        out = base.view(dtype).reshape(shape)
        if lent:
            buffers.extend(lent)
        buffers.append(base)
        if len(buffers) > self.keep:
            # Forget the oldest: a base still lent out lives on in its views and is freed with them.
            del buffers[:-self.keep]
        return out

    def _primed(self):
        # A buffer still being faulted in is ready sooner than a fresh one, whose faults would
        # compete with it for the same (sometimes slow) page allocation.
        priming = self.priming
        if priming is None:
            return None
        if self._priming_pid != os.getpid():
            self.priming = None         # forked while priming: the thread filling it is not here
            return None
        priming.wait()
        buffers = self.buffers
        for _ in range(len(buffers)):
            try:
                candidate = buffers.pop(0)
            except IndexError:
                return None
            if sys.getrefcount(candidate) <= _UNSHARED_REFS:
                return candidate
            buffers.append(candidate)
        return None

    def prime(self) -> None:
        """Add one buffer whose pages are already faulted in."""
        try:
            base = np.empty(self.nbytes, np.uint8)
            base.fill(0)            # NumPy drops the GIL for this: it runs beside the compile
            self.buffers.append(base)
        finally:
            if self.priming is not None:
                self.priming.set()
                self.priming = None


def output_pools(plan, donated_outputs) -> dict:
    """``{buffer id: OutputPool}`` for the large outputs a call allocates itself (not those written
    into donated inputs: ``donated_outputs``, from memory planning)."""
    return {b.id: OutputPool(b.nbytes) for b in plan.buffers
            if b.kind == "output" and b.nbytes >= RECYCLE_MIN_BYTES and b.id not in donated_outputs}


def prime_in_background(pools) -> None:
    """Fault in the first call's large outputs on another thread while LLVM compiles.

    A first call used to spend 4-10 ms (up to ~50 ms on a VM slow to fault
    in memory the process freed shortly before) faulting in fresh output pages;
    later calls reuse pooled memory.  LLVM's code generator drops the GIL,
    so on a machine with a second core this costs the compile nothing.
    At most PRIME_MAX_BYTES are primed, so an executable compiled ahead of
    time and never called holds little memory.
    """
    todo, total = [], 0
    for pool in pools:
        if total + pool.nbytes <= PRIME_MAX_BYTES:
            todo.append(pool)
            total += pool.nbytes
    if todo:
        for pool in todo:
            pool.priming = threading.Event()
            pool._priming_pid = os.getpid()
        threading.Thread(target=lambda: [pool.prime() for pool in todo], name="tracejit-prime-outputs",
                         daemon=True).start()


def _writable_view(a):
    """A view through which a donated array's memory can be written, or None.

    A writable array is written in place. A read-only one is written only when its type says
    its memory belongs to tracejit (``tracejit.Array``: immutable to its users, so donating it
    hands the memory over) and the memory under it is writable (not a read-only mapping).
    """
    if a.flags.writeable:
        return a.view()
    if not getattr(type(a), "_tracejit_owns_memory", False):
        return None
    v = a.view(np.ndarray)
    try:
        v.flags.writeable = True
    except ValueError:
        return None
    return v


def _shares_with_others(a, pos, args) -> bool:
    # A kernel writing the donated memory must not be reading it through another argument.
    for j, other in enumerate(args):
        if j != pos and np.may_share_memory(a, other):
            return True
    return False


def _check_not_donated(args) -> None:
    for i, a in enumerate(args):
        ref = _donated.get(id(a))
        if ref is not None and ref() is a:
            from tracejit.core.errors import DeletedArrayError
            raise DeletedArrayError(
                f"Array has been deleted with shape={a.dtype}{list(a.shape)} (flattened argument {i}): "
                f"{ref.why}, and it cannot be passed to a jitted function again. {ref.advice}")


class CPUExecutable:
    """The compiled program: call it with NumPy arrays matching its input avals."""

    backend = "cpu"

    def __init__(self, program, plan, launches, offsets, arena_bytes, timings, module_ir, kernel_asm=None,
                 donated=(), donated_outputs=None, pools=None, name: str = "function", native_entry=None,
                 entry_reason=None):
        self.program = program
        # Every step in one native call (backends/cpu/entry.py), or why the steps run one by one.
        self.native_entry = native_entry
        self.entry_reason = entry_reason
        self.name = name
        self.plan = plan
        self.launches = launches
        self.kernels = [l.kernel for l in launches if isinstance(l.kernel, Kernel)]
        self.offsets = offsets
        self.arena_bytes = arena_bytes
        self.timings = timings
        self.llvm_ir = module_ir
        self.const_arrays = [np.asarray(c, order="C") for c in program.const_values]
        self._arenas: list = []
        self._steps = []
        self._donated = set(donated)
        # A donated argument is marked so passing it again raises (JAX's deleted-array error). A host
        # loop, which owns its carries and may still pass them to nested loops inside the body, turns
        # this off for its body executables.
        self.marks_donations = True
        launch_of = {id(l.kernel): l for l in launches}
        aliases = [b for b in plan.buffers if b.kind == "alias"]
        for step in plan.steps:
            if isinstance(step, (Kernel, WindowStep)):
                self._steps.append(launch_of[id(step)])
            elif isinstance(step, DotStep) and step.epilogue is not None and id(step.epilogue) in launch_of:
                product = launch_of.get(id(step), lambda env, s=step: run_dot(s, env))
                self._steps.append(lambda env, product=product, epilogue=launch_of[id(step.epilogue)]: (
                    product(env), epilogue(env)))
            elif isinstance(step, DotStep) and id(step) in launch_of:    # a generated product
                self._steps.append(launch_of[id(step)])
            elif isinstance(step, DotStep):
                self._steps.append(lambda env, s=step: run_dot(s, env))
            else:
                self._steps.append(make_numpy_step(step, plan.buffers))
        allocated_by_steps = set().union(*[getattr(s, "allocates", set()) for s in self._steps])
        self._aliases = [(b.id, b.alias_of, b.shape) for b in aliases]
        self._alias_after = self._alias_schedule(plan, allocated_by_steps)
        self._out_buffers = [plan.buffers[b] if isinstance(b, int) else None for b in plan.outputs]
        self.donated_outputs = donated_outputs or {}
        pools = output_pools(plan, self.donated_outputs) if pools is None else pools
        self._fresh_outputs = [(b.id, b.shape, b.dtype, pools.get(b.id))
                               for b in plan.buffers if b.kind == "output" and b.id not in self.donated_outputs
                               and b.id not in allocated_by_steps]
        self._donated_outputs = [(bid, pos, plan.buffers[bid].dtype) for bid, pos in self.donated_outputs.items()]
        self.n_inputs = len(plan.inputs)
        self._n_buffers = len(plan.buffers)

    def _alias_schedule(self, plan, allocated_by_steps):
        # An alias becomes valid once its source exists: after the step that produces the source
        # (an output a step allocates itself, e.g. a loop's result, exists only after that step).
        ready = {b.id for b in plan.buffers if b.kind in ("input", "const", "temp", "output")} - allocated_by_steps
        schedule = {-1: []}
        pending = [(b.id, b.alias_of, b.shape) for b in plan.buffers if b.kind == "alias"]
        produced = set(ready)
        for i in range(-1, len(plan.steps)):
            if i >= 0:
                produced.update(step_writes(plan.steps[i]))
            now = []
            changed = True
            while changed:
                changed = False
                for a in list(pending):
                    if a[1] in produced and a[0] not in produced:
                        now.append(a)
                        produced.add(a[0])
                        pending.remove(a)
                        changed = True
            schedule[i] = now
        return schedule

    def _new_arena(self):
        arena = np.empty(max(self.arena_bytes, 1), dtype=np.uint8)
        views = [None] * len(self.plan.buffers)
        for bid, off in self.offsets.items():
            b = self.plan.buffers[bid]
            views[bid] = arena[off:off + b.nbytes].view(b.dtype).reshape(b.shape)
        return arena, views

    def __call__(self, *args):
        plan = self.plan
        if len(args) != self.n_inputs:
            raise TypeError(f"executable takes {self.n_inputs} arguments, got {len(args)}")
        if _donated:
            for a in args:
                if id(a) in _donated:
                    _check_not_donated(args)
        if self.native_entry is not None:
            return self._call_entry(args)
        if not self.offsets:
            # Nothing lives in an arena: skip the pool.
            env = [None] * self._n_buffers
            arena = None
        else:
            try:
                arena = self._arenas.pop()
            except IndexError:
                arena = self._new_arena()
            env = arena[1].copy()
        try:
            for bid, a in zip(plan.inputs, args):
                env[bid] = a if a.flags.c_contiguous else np.ascontiguousarray(a)
            for bid, c in zip(plan.consts, self.const_arrays):
                env[bid] = c
            for bid, shape, dtype, pool in self._fresh_outputs:
                env[bid] = np.empty(shape, dtype) if pool is None else pool.take(shape, dtype)
            for bid, pos, dtype in self._donated_outputs:
                a = args[pos]
                # A donated argument's memory becomes the output (when it can be written in place and
                # no other argument reads that memory). The output is a new view, so the donated array
                # itself is marked: passing it again raises (see _check_not_donated).
                out = None
                if (a.flags.c_contiguous and a.dtype == dtype and env[plan.inputs[pos]] is a
                        and not _shares_with_others(a, pos, args)):
                    out = _writable_view(a)
                if out is not None:
                    env[bid] = out
                    if self.marks_donations:
                        mark_donated_to(a, self.name)
                else:
                    b = plan.buffers[bid]
                    env[bid] = np.empty(b.shape, b.dtype)
            if self._aliases:
                for a in self._alias_after[-1]:
                    env[a[0]] = env[a[1]].reshape(a[2])
                for i, step in enumerate(self._steps):
                    step(env)
                    for a in self._alias_after.get(i, ()):
                        env[a[0]] = env[a[1]].reshape(a[2])
            else:
                for step in self._steps:
                    step(env)
            return self._collect(env, args)
        finally:
            if arena is not None:
                self._arenas.append(arena)

    def _call_entry(self, args):
        entry = self.native_entry
        ins = [a if a.flags.c_contiguous else np.ascontiguousarray(a) for a in args]
        outs = [np.empty(shape, dtype) for shape, dtype in entry.out_specs]
        try:
            arena = self._arenas.pop()
        except IndexError:
            arena = (np.empty(max(entry.arena_bytes, 1), np.uint8),)
        try:
            io = entry.io_type(*[data_address(a) for a in ins], *[data_address(o) for o in outs],
                               *[data_address(c) for c in self.const_arrays])
            entry.fn(io, entry.loop_table_address, data_address(arena[0]))
        finally:
            self._arenas.append(arena)
        return outs

    def _collect(self, env, args):
        outs = []
        seen = set()
        for b, spec in zip(self.plan.outputs, self._out_buffers):
            if spec is None:
                outs.append(np.array(b[1]))
                continue
            arr = env[b]
            if spec.kind != "output" or b in seen:
                arr = np.array(arr, copy=True)
            seen.add(b)
            outs.append(arr)
        return outs

    # ------------------------------------------------------------- inspection
    def as_text(self, llvm_ir: bool = False) -> str:
        generated = {id(launch.kernel): launch.parallel_size for launch in self.launches
                     if isinstance(launch.kernel, DotStep)}
        text = "\n".join(step.describe() + (f"; generated code, a kernel over {generated[id(step)]} matrices"
                                            if id(step) in generated else "") for step in self.plan.steps)
        if self.native_entry is not None:
            text += "\nnative entry: the steps above run in one native call"
        if llvm_ir:
            module = self.llvm_ir
            ir_text = getattr(module, "llvm_ir", module)
            text += "\n\n" + (ir_text or "; LLVM IR unavailable: the object code came from the persistent "
                                          "compile cache (set config.compilation_cache_dir='off' to see it)")
        return text
