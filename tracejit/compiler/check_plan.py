"""The plan checker: what must hold of a Plan for any backend to run it safely.

``check_program`` verifies the first IR (types); this verifies the second (memory).
The driver runs it after every Plan stage when ``config.enable_checks`` is set
(the test suite sets it), so a stage that breaks an invariant is caught at the
stage that broke it, not as a wrong number later. It checks:

- buffers are numbered in order, of known kinds, and aliases reinterpret a buffer
  of the same byte size;
- the plan's inputs, constants and outputs name buffers of the matching kinds;
- every buffer a step reads (directly or through an alias) is an input or a
  constant, or was written by an earlier step; every output exists at the end;
- a buffer written in parts (a concatenation's slabs) is read only once complete:
  no step that neither reads it nor is the reader writes it after a read;
- window starts are integer scalars;
- a split call's start has one wait after it, polls only between them, and no step between them
  touches its result or writes its operand (MPI reads and writes them meanwhile);
- once memory is planned: every arena temporary has an aligned range inside the
  arena, and two temporaries whose ranges overlap are never live at once (the
  only shared step allowed is an in-place write: one read for the last time by
  the kernel or window update that writes the other; a kernel then reads it only
  in the expression storing the other, directly and at the element stored).
"""
from __future__ import annotations

import numpy as np

from tracejit.compiler.kernel_ir import Kernel, is_gather, walk
from tracejit.compiler.plan import CALL_KINDS, WindowStep, step_reads, step_writes
from tracejit.core.errors import ProgramTypeError

KINDS = ("input", "const", "output", "temp", "alias", "external")
ARENA_ALIGN = 64


class PlanError(ProgramTypeError):
    """A Plan breaks an invariant its backend relies on (a compiler bug)."""


def check_plan(plan, offsets: dict | None = None, arena_bytes: int = 0) -> None:
    """Raise :class:`PlanError` if ``plan`` (with its arena ``offsets``, once planned) is not sound."""
    bufs = plan.buffers
    _check_buffers(bufs)
    for role, ids, kind in (("input", plan.inputs, "input"), ("constant", plan.consts, "const")):
        for pos, b in enumerate(ids):
            if not (0 <= b < len(bufs)) or bufs[b].kind != kind or bufs[b].index != pos:
                raise PlanError(f"plan {role} {pos} is b{b}, not a {kind} buffer at that position")
    ready = set(plan.inputs) | set(plan.consts)
    first, last = {}, {}
    reads_at: dict[int, list] = {}        # base buffer -> steps that read it (not their own output)
    for i, step in enumerate(plan.steps):
        # A kernel's later phases read what its earlier phases wrote (a reduction, then its users).
        own = {_base(bufs, b, f"step {i}") for b in step_writes(step)} if isinstance(step, Kernel) else set()
        for b in step_reads(step):
            base = _base(bufs, b, f"step {i}")
            if base not in ready and base not in own:
                raise PlanError(f"step {i} ({step.describe()}) reads b{b} before any step writes it")
            if base not in own:
                reads_at.setdefault(base, []).append(i)
            last[base] = i
        if isinstance(step, WindowStep):
            _check_window(bufs, step, i)
        read_bases = {_base(bufs, b, "") for b in step_reads(step)}
        for b in step_writes(step):
            base = _base(bufs, b, f"step {i}")
            # A write that does not read the buffer completes it (another slab): every
            # earlier reader ran too soon. (An in-place update reads what it rewrites.)
            early = [r for r in reads_at.get(base, ()) if r < i] if base not in read_bases else []
            if early and bufs[base].kind != "input":
                raise PlanError(f"step {early[0]} reads b{base} before step {i} "
                                f"({step.describe()}) writes part of it")
            ready.add(base)
            first.setdefault(base, i)
            last[base] = max(last.get(base, i), i)
    _check_split_calls(plan)
    for k, b in enumerate(plan.outputs):
        if isinstance(b, tuple):
            if b[0] != "lit":
                raise PlanError(f"output {k} is {b!r}, neither a buffer nor a literal")
            continue
        if _base(bufs, b, f"output {k}") not in ready:
            raise PlanError(f"output {k} (b{b}) is never written")
        last[_base(bufs, b, "")] = len(plan.steps)
    if offsets is not None:
        _check_arena(plan, offsets, arena_bytes, first, last)


def _check_buffers(bufs) -> None:
    for i, b in enumerate(bufs):
        if b.id != i:
            raise PlanError(f"buffer at position {i} has id {b.id}")
        if b.kind not in KINDS:
            raise PlanError(f"b{i} has unknown kind {b.kind!r}")
        if b.kind == "alias":
            if not (0 <= b.alias_of < len(bufs)) or b.alias_of == i:
                raise PlanError(f"alias b{i} reinterprets b{b.alias_of}, which does not exist")
            src = bufs[b.alias_of]
            if src.nbytes != b.nbytes or src.dtype != b.dtype:
                raise PlanError(f"alias b{i} ({b.dtype}{list(b.shape)}) reinterprets b{src.id} "
                                f"({src.dtype}{list(src.shape)}) of another size or type")


def _base(bufs, b, where) -> int:
    if not isinstance(b, int) or not (0 <= b < len(bufs)):
        raise PlanError(f"{where}: b{b} is not a buffer of the plan")
    seen = set()
    while bufs[b].kind == "alias":
        if b in seen:
            raise PlanError(f"{where}: aliases form a cycle through b{b}")
        seen.add(b)
        b = bufs[b].alias_of
    return b


def _check_window(bufs, step, i) -> None:
    if step.kind not in ("slice", "update"):
        return                                 # scatter indices are arrays; pad and concat starts static
    for s in step.starts:
        if isinstance(s, tuple):
            if s[0] != "lit" or not isinstance(s[1], (int, np.integer)):
                raise PlanError(f"step {i} ({step.describe()}): start {s!r} is not an integer literal")
        elif bufs[s].shape != () or bufs[s].dtype.kind not in "iu":
            raise PlanError(f"step {i} ({step.describe()}): start b{s} is not an integer scalar "
                            f"({bufs[s].dtype}{list(bufs[s].shape)})")


def _check_split_calls(plan) -> None:
    """Every ``call_start`` has its ``call_wait`` later, and nothing between them reads or writes the
    call's result or writes its operand (by base buffer)."""
    bufs = plan.buffers
    open_calls = {}            # request buffer -> (step index, result base, operand base)
    for i, step in enumerate(plan.steps):
        kind = getattr(step, "kind", None)
        if kind in ("call_poll", "call_wait"):
            if step.update not in open_calls:
                raise PlanError(f"step {i} ({step.describe()}) waits for or polls a call that is not in flight")
            if kind == "call_wait":
                del open_calls[step.update]
            continue
        written = {_base(bufs, b, f"step {i}") for b in step_writes(step)}
        touched = written | {_base(bufs, b, f"step {i}") for b in step_reads(step)}
        for k, out, operand in open_calls.values():
            if out in touched or operand in written:
                raise PlanError(f"step {i} ({step.describe()}) touches b{out} or writes b{operand} while "
                                f"the call started at step {k} is in flight")
        if kind == "call_start":
            if step.update in open_calls:
                raise PlanError(f"step {i} ({step.describe()}) reuses request b{step.update} of a call in flight")
            open_calls[step.update] = (i, _base(bufs, step.out, f"step {i}"), _base(bufs, step.operand, f"step {i}"))
    if open_calls:
        k = min(k for k, _, _ in open_calls.values())
        raise PlanError(f"the call started at step {k} ({plan.steps[k].describe()}) is never waited for")


def _check_in_place(bufs, kernel, i, dying, born) -> None:
    """A kernel writing ``born`` over ``dying`` (read there for the last time) reads ``dying``, from
    the phase storing ``born`` on, only in the expression that stores it, directly (not through a
    view) and at the element stored: any other read would see an overwritten element. (Earlier
    phases, a row's reductions, finish with the row before a later phase writes it.)"""
    stores = [k for k, phase in enumerate(kernel.phases) if born in phase.outputs]
    for phase in kernel.phases[min(stores, default=0):]:
        for out, omap, expr in zip(phase.outputs, phase.out_maps or [None] * len(phase.outputs), phase.exprs):
            for n in walk([expr]):
                if n.kind != "load" or _base(bufs, n.buffer, f"step {i}") != dying:
                    continue
                if out != born or n.buffer != dying or n.map != omap or is_gather(n):
                    raise PlanError(f"step {i} ({kernel.describe()}) writes b{born} over b{dying} but reads b{dying} "
                                    f"elsewhere (as b{n.buffer}, for b{out})")


def _check_arena(plan, offsets, arena_bytes, first, last) -> None:
    bufs = plan.buffers
    ranges = []
    for b in first:
        if bufs[b].kind != "temp":
            continue
        if b not in offsets:
            raise PlanError(f"temporary b{b} has no place in the arena")
        off, n = offsets[b], max(bufs[b].nbytes, 1)
        if off % ARENA_ALIGN or off < 0 or off + n > arena_bytes:
            raise PlanError(f"temporary b{b} at [{off}, {off + n}) lies outside the {arena_bytes}-byte arena "
                            "or is misaligned")
        ranges.append((off, off + n, first[b], last.get(b, first[b]), b))
    ranges.sort()
    for k, (lo, hi, start, end, b) in enumerate(ranges):
        for lo2, hi2, start2, end2, b2 in ranges[k + 1:]:
            if lo2 >= hi:
                break
            if end < start2 or end2 < start:
                continue                       # never live at the same time
            touch = start2 if end == start2 else start if end2 == start else None
            if touch is not None and isinstance(plan.steps[touch], Kernel):
                dying, born = (b, b2) if end == start2 else (b2, b)
                _check_in_place(bufs, plan.steps[touch], touch, dying, born)
                continue                       # an in-place write at the last read
            if touch is not None and isinstance(plan.steps[touch], WindowStep) \
                    and plan.steps[touch].kind not in CALL_KINDS:
                continue                       # a window update over the operand it reads
            raise PlanError(f"temporaries b{b} (steps {start}-{end}) and b{b2} (steps {start2}-{end2}) "
                            f"share arena bytes [{max(lo, lo2)}, {min(hi, hi2)}) while both are live")
