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
    inplace = in_place_pairs(plan, first, last)
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
        src = inplace.get(b)
        if src is not None and src in offsets:
            # Written in place over an input this elementwise kernel reads for the last time.
            offsets[b] = offsets[src]
            active = [(max(e, last.get(b, start)), o, sz) if o == offsets[src] else (e, o, sz)
                      for e, o, sz in active]
            continue
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


def _identity_only_reads(kernel, bid) -> bool:
    from tracejit.compiler.kernel_ir import IndexMap
    nd = len(kernel.shape)
    return all(n.map.terms == IndexMap.identity(nd).terms for n in kernel.loads() if n.buffer == bid)


def _phase_loads(phase):
    from tracejit.compiler.kernel_ir import Kernel as _K
    return _K("p", (), 0, [phase]).loads()


def in_place_pairs(plan: Plan, first=None, last=None) -> dict:
    """Temporaries a kernel may write over one of its inputs.

    Safe when every read of that input in the kernel is at exactly the
    element being written (same index map as the store), no later phase
    reads it, and no later step reads it at all.
    """
    bufs = plan.buffers
    pairs = {}
    for i, step in enumerate(plan.steps):
        if not isinstance(step, Kernel):
            continue
        used = set()
        for pi, phase in enumerate(step.phases):
            if phase.reduce_op:
                continue
            later = {n.buffer for p in step.phases[pi + 1:] for n in _phase_loads(p)}
            for out, omap in zip(phase.outputs, phase.out_maps):
                ob = bufs[out]
                if ob.kind != "temp":
                    continue
                for n in _phase_loads(phase):
                    r = n.buffer
                    rb = bufs[r]
                    if (r in used or r in later or rb.kind != "temp" or rb.nbytes != ob.nbytes
                            or rb.shape != ob.shape or last.get(r) != i):
                        continue
                    if all(m.map == omap for m in step.loads() if m.buffer == r):
                        pairs[out] = r
                        used.add(r)
                        break
    return pairs


def donation_pairs(plan: Plan, donated_inputs) -> dict:
    """Outputs that may be written into a donated input's buffer: ``{output buffer: input position}``."""
    bufs = plan.buffers
    pairs = {}
    last_read = {}
    for i, step in enumerate(plan.steps):
        for b in step_reads(step):
            last_read[b] = i
    for i, step in enumerate(plan.steps):
        if not isinstance(step, Kernel) or step.is_row_kernel or len(step.phases) != 1:
            continue
        phase = step.phases[0]
        for out in phase.outputs:
            ob = bufs[out]
            if ob.kind != "output" or out in pairs:
                continue
            for pos in donated_inputs:
                ib = bufs[plan.inputs[pos]]
                if (pos not in pairs.values() and ib.shape == ob.shape and ib.dtype == ob.dtype
                        and last_read.get(ib.id, -1) <= i and _identity_only_reads(step, ib.id)
                        and ib.id not in [b for b in plan.outputs if isinstance(b, int)]):
                    pairs[out] = pos
                    break
    return pairs
