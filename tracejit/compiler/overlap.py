"""Collectives overlapped with independent steps: a library call split into a start and a wait.

A compiled MPI collective (a ``call`` window step, ``backends/cpu/native_calls.py``) blocks until
MPI has moved its data. When steps that neither feed it nor use its result sit around it, the plan
instead starts the nonblocking form as soon as its operand is ready and waits for it just before
the first step that needs its result (or would overwrite its operand): the kernels in between run
while the data is in flight. Data-parallel training is the typical case: each layer's gradient
starts its ``psum`` while the next layer's gradient is computed.

- The start (``call_start``) reads the operand and writes the result and a request buffer
  (int64[2]: room for MPI's request handles); the wait (``call_wait``) reads the operand and the request
  and writes the result. So the memory planner keeps the operand and the result alive, and their
  bytes unshared, from the start to the wait, and no step between them may touch the result or
  write the operand (``check_plan`` verifies it).
- A step moves past another only when neither writes a buffer the other reads or writes, compared
  by base buffer (reshape aliases share memory). Only kernels, BLAS products and window steps
  move; NumPy and control-flow steps (host loops, callbacks, collectives made by mpi4py) stay
  barriers.
- Every rank holds the same plan, so collectives start in the same order on every rank, as MPI
  requires; a blocking collective made while another is in flight progresses both.
- A blocking call first checks that every rank makes the same collective (one small allreduce).
  A start must not wait for the other ranks -- that would make each a synchronisation point -- so
  the first start on each set of processes checks, once per run of the plan, the signatures of
  all the plan's split calls on them (``WindowStep.agree``), and the others check nothing.
- A split with no computing step between its start and its wait is joined back into one
  blocking call: the request would only add cost.
- MPI moves data only while the process is inside an MPI call (unless the network moves it
  alone): after each computing step of some size (:data:`POLL_BYTES` written, or a product) that
  runs while a call is in flight, a poll (``call_poll``, ``MPI_Testall``) lets MPI's progress engine
  advance every pending transfer -- a large message's rendezvous, say -- instead of leaving it all
  to the wait.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tracejit.compiler.kernel_ir import Kernel
from tracejit.compiler.plan import (CALL_KINDS, SPLIT_CALL_KINDS, Buffer, DotStep, Plan, WindowStep, base_buffer,
                                    step_reads, step_writes)

REQUEST_SLOTS = 2           # room for a split call's MPI requests (a ppermute's receive and send), each of
                            # up to 8 bytes whatever the MPI's handle type (MPICH's: an int)
POLL_BYTES = 1 << 16        # a computing step writing at least this much is followed by a poll


def overlap_collectives(plan: Plan, can_split) -> int:
    """Split every ``call`` step ``can_split(step)`` accepts, move its start up and its wait down
    past independent steps, and join back the splits that enclose no computation; returns the
    number of splits kept.

    Examples
    --------
    >>> from tracejit.compiler.plan import Plan
    >>> overlap_collectives(Plan(), lambda step: True)
    0
    """
    first_request = len(plan.buffers)
    steps = []
    for step in plan.steps:
        if isinstance(step, WindowStep) and step.kind == "call" and can_split(step):
            request = len(plan.buffers)
            plan.buffers.append(Buffer(request, (REQUEST_SLOTS,), np.dtype(np.int64)))
            steps += [replace(step, kind="call_start", update=request), replace(step, kind="call_wait", update=request)]
        else:
            steps.append(step)
    if len(steps) == len(plan.steps):
        return 0
    access = [_access(plan, s) for s in steps]
    _slide(steps, access, "call_start", -1)      # starts up, in program order
    _slide(steps, access, "call_wait", +1)       # waits down, the last first
    steps = _with_polls(plan, _join_idle_splits(steps))
    plan.steps = _with_agreement_checks(plan, _renumber_requests(plan, steps, first_request))
    return sum(1 for s in plan.steps if isinstance(s, WindowStep) and s.kind == "call_start")


def _with_polls(plan: Plan, steps: list) -> list:
    """A poll after each substantial computing step run while a call is in flight: of the call
    waited for last (the one most likely still moving; MPI's progress engine serves them all)."""
    wait_at = {s.update: i for i, s in enumerate(steps) if isinstance(s, WindowStep) and s.kind == "call_wait"}
    out, in_flight = [], {}
    for step in steps:
        out.append(step)
        if isinstance(step, WindowStep) and step.kind == "call_start":
            in_flight[step.update] = step
        elif isinstance(step, WindowStep) and step.kind == "call_wait":
            del in_flight[step.update]
        elif in_flight and _computes(step) and (isinstance(step, DotStep) or _bytes_written(plan, step) >= POLL_BYTES):
            last = max(in_flight, key=wait_at.__getitem__)
            out.append(replace(in_flight[last], kind="call_poll"))
    return out


def _with_agreement_checks(plan: Plan, steps: list) -> list:
    """The first start on each set of processes (a call's ``group``, None for all of them) carries
    the signatures (operation, parameters, operand shape and dtype) of every split call on it."""
    def group(step):
        return dict(step.combine[1]).get("group")

    starts = [s for s in steps if isinstance(s, WindowStep) and s.kind == "call_start"]
    signatures: dict = {}
    for s in starts:
        operand = plan.buffers[s.operand]
        signatures.setdefault(group(s), []).append((*s.combine, operand.shape, str(operand.dtype)))
    first = {}
    for s in starts:
        first.setdefault(group(s), s.update)
    return [replace(s, agree=tuple(signatures[group(s)])) if isinstance(s, WindowStep) and s.kind == "call_start"
            and first[group(s)] == s.update else s for s in steps]


def _bytes_written(plan: Plan, step) -> int:
    return sum(plan.buffers[b].nbytes for b in step_writes(step))


def _renumber_requests(plan: Plan, steps: list, first: int) -> list:
    """Drop the request buffers of joined splits (buffers are numbered in order: the kept ones are
    renumbered from ``first``)."""
    kept = {}
    for step in steps:
        if isinstance(step, WindowStep) and step.kind == "call_start":
            kept[step.update] = first + len(kept)
    del plan.buffers[first:]
    plan.buffers.extend(Buffer(new, (REQUEST_SLOTS,), np.dtype(np.int64)) for new in kept.values())
    return [replace(s, update=kept[s.update]) if isinstance(s, WindowStep) and s.kind in SPLIT_CALL_KINDS
            else s for s in steps]


def _access(plan: Plan, step) -> tuple:
    """(bases read, bases written) of a step."""
    return ({base_buffer(plan.buffers, b) for b in step_reads(step)},
            {base_buffer(plan.buffers, b) for b in step_writes(step)})


def _movable(step) -> bool:
    return isinstance(step, (Kernel, DotStep, WindowStep))


def _independent(a, b) -> bool:
    (ra, wa), (rb, wb) = a, b
    return not (wa & (rb | wb) or wb & ra)


def _slide(steps: list, access: list, kind: str, direction: int) -> None:
    """Each step of ``kind`` moves past the independent movable steps next to it, towards the
    start (``direction`` -1) or the end (+1) of the plan; the steps nearest that end move first."""
    order = range(len(steps)) if direction < 0 else reversed(range(len(steps)))
    for i in order:
        if not (isinstance(steps[i], WindowStep) and steps[i].kind == kind):
            continue
        j = i
        while 0 <= j + direction < len(steps) and _movable(steps[j + direction]) \
                and _independent(access[j], access[j + direction]):
            k = j + direction
            steps[j], steps[k] = steps[k], steps[j]
            access[j], access[k] = access[k], access[j]
            j = k


def _computes(step) -> bool:
    return isinstance(step, (Kernel, DotStep)) or isinstance(step, WindowStep) and step.kind not in CALL_KINDS


def _join_idle_splits(steps: list) -> list:
    """Splits whose start and wait enclose no computing step become one blocking call again, where
    the start stood (nothing between them touches its buffers, so the wait's work can move there)."""
    start_at = {}
    idle = set()
    for i, step in enumerate(steps):
        if isinstance(step, WindowStep) and step.kind == "call_start":
            start_at[step.update] = i
        elif isinstance(step, WindowStep) and step.kind == "call_wait":
            k = start_at[step.update]
            if not any(_computes(s) for s in steps[k + 1:i]):
                idle.add(step.update)
    out = []
    for step in steps:
        if isinstance(step, WindowStep) and step.update in idle and step.kind in ("call_start", "call_wait"):
            if step.kind == "call_start":
                out.append(replace(step, kind="call", update=None))
            continue
        out.append(step)
    return out
