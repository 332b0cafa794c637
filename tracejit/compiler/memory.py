"""Memory planning: liveness-based reuse of temporary buffers in one arena.

Temporaries of an executable live in one arena reused across calls, so a
call allocates only its outputs (plus the results of per-op NumPy steps).
Two temporaries share arena bytes only when their lifetimes don't overlap;
a step's inputs stay alive through the step, so it never overwrites what it
reads.
"""
from __future__ import annotations

from tracejit.compiler.fusion import DotStep, NumpyStep, Plan
from tracejit.compiler.kernel_ir import Kernel

ALIGN = 64


def step_reads(step) -> list:
    if isinstance(step, Kernel):
        return sorted({n.buffer for n in step.loads()})
    if isinstance(step, DotStep):
        return [step.lhs, step.rhs]
    return [b for b in step.inputs if isinstance(b, int)]


def step_writes(step) -> list:
    if isinstance(step, Kernel):
        return step.buffers_written()
    if isinstance(step, DotStep):
        return [step.out]
    return list(step.outputs)


def plan_memory(plan: Plan) -> tuple[dict, int]:
    """Arena offsets for temp buffers; returns ``(offsets, arena_bytes)``."""
    bufs = plan.buffers
    root = {}

    def base(b):
        while bufs[b].kind == "alias":
            b = bufs[b].alias_of
        return b

    first, last = {}, {}
    for i, step in enumerate(plan.steps):
        for b in step_writes(step):
            first.setdefault(base(b), i)
            last[base(b)] = max(last.get(base(b), i), i)
        for b in step_reads(step):
            last[base(b)] = max(last.get(base(b), i), i)
    for b in plan.outputs:
        if isinstance(b, int):
            last[base(b)] = len(plan.steps)
    temps = sorted((b for b in first if bufs[b].kind == "temp"), key=lambda b: first[b])
    offsets: dict[int, int] = {}
    free: list[tuple[int, int]] = []      # (offset, size) blocks
    active: list[tuple[int, int, int]] = []  # (last_use, offset, size)
    top = 0
    for b in temps:
        start = first[b]
        still = []
        for end, off, size in active:
            (free.append((off, size)) if end < start else still.append((end, off, size)))
        active = still
        need = -(-max(bufs[b].nbytes, 1) // ALIGN) * ALIGN
        choice = None
        for k, (off, size) in enumerate(sorted(free)):
            if size >= need:
                choice = (off, size)
                break
        if choice is not None:
            free.remove(choice)
            off, size = choice
            if size > need:
                free.append((off + need, size - need))
        else:
            off, top = top, top + need
        offsets[b] = off
        active.append((last.get(b, start), off, need))
    root.update(offsets)
    return root, top
