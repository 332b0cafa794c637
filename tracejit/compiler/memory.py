"""Memory planning: liveness-based reuse of temporary buffers in one arena.

Temporaries of an executable live in one arena reused across calls, so a
call allocates only its outputs (plus the results of per-op NumPy steps).
Two temporaries share arena bytes only when their lifetimes don't overlap;
a step's inputs stay alive through the step, so it never overwrites what it
reads.
"""
from __future__ import annotations

from tracejit.compiler.plan import Plan, WindowStep, base_buffer, step_reads, step_writes
from tracejit.compiler.kernel_ir import Kernel, walk, is_gather

ALIGN = 64


def plan_memory(plan: Plan) -> tuple[dict, int]:
    """Arena offsets for temp buffers; returns ``(offsets, arena_bytes)``."""
    bufs = plan.buffers
    root = {}

    def base(b):
        return base_buffer(bufs, b)

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


def _expr_loads(expr) -> list:
    return [n for n in walk([expr]) if n.kind == "load"]


def _readers(step, bufs) -> dict:
    """base buffer id -> {(phase index, output index)} of the expressions that load it, directly or
    through a reshape alias (an alias shares its base's memory: a write over the base changes it)."""
    readers: dict[int, set] = {}
    for pi, phase in enumerate(step.phases):
        for j, e in enumerate(phase.exprs):
            for n in _expr_loads(e):
                readers.setdefault(base_buffer(bufs, n.buffer), set()).add((pi, j))
    return readers


def _reads_only_at(loads, bufs, r, omap) -> bool:
    """Whether every load of ``r``'s memory among ``loads`` reads ``r`` itself (not through an
    alias, whose indices differ) at the element the store map ``omap`` writes, without a gather."""
    return all(m.buffer == r and m.map == omap and not is_gather(m) for m in loads if base_buffer(bufs, m.buffer) == r)


def _map_outputs(plan: Plan):
    """Every map-phase output of every kernel, with what in-place decisions need:
    ``(step index, step, readers, phase index, output index, buffer, store map, expression)``."""
    for i, step in enumerate(plan.steps):
        if not isinstance(step, Kernel):
            continue
        readers = _readers(step, plan.buffers)
        for pi, phase in enumerate(step.phases):
            if phase.reduce_op:
                continue
            for j, (out, omap, e) in enumerate(zip(phase.outputs, phase.out_maps, phase.exprs)):
                yield i, step, readers, pi, j, out, omap, e


def in_place_pairs(plan: Plan, first=None, last=None) -> dict:
    """Temporaries a kernel may write over one of its inputs.

    Safe when only the expression producing that output reads the input,
    every such read is at exactly the element being written (same index map
    as the store), and no later step reads the input. (Another output of
    the same pass reading it would see the overwritten value.)
    """
    bufs = plan.buffers
    pairs = {}
    for i, step, readers, pi, j, out, omap, e in _map_outputs(plan):
        ob = bufs[out]
        if ob.kind != "temp":
            continue
        for n in _expr_loads(e):
            r = n.buffer
            rb = bufs[r]
            # Earlier phases finished with this row before this one writes it.
            others = {(p2, j2) for p2, j2 in readers.get(r, ()) if p2 >= pi and (p2, j2) != (pi, j)}
            if (others or rb.kind != "temp" or rb.nbytes != ob.nbytes
                    or rb.shape != ob.shape or last.get(r) != i or r in pairs.values()):
                continue
            if _reads_only_at(step.loads(), bufs, r, omap):
                pairs[out] = r
                break
    for i, step in _window_updates(plan):
        r = base_buffer(bufs, step.operand)
        if (bufs[step.out].kind == "temp" and bufs[r].kind == "temp" and bufs[r].nbytes == bufs[step.out].nbytes
                and last.get(r) == i and r not in pairs.values()
                and all(base_buffer(bufs, b) != r for b in step.reads()[1:])):
            pairs[step.out] = r     # only the window is written; the rest of the operand is already there
    return pairs


def last_reads(plan: Plan) -> dict:
    """``{buffer: index of the last step that reads it}``, by base buffer (a read through a reshape
    alias reads the aliased buffer too)."""
    bufs = plan.buffers
    last = {}
    for i, step in enumerate(plan.steps):
        for b in step_reads(step):
            last[base_buffer(bufs, b)] = i
    return last


def _window_updates(plan: Plan):
    for i, step in enumerate(plan.steps):
        if isinstance(step, WindowStep) and step.kind in ("update", "scatter"):
            yield i, step


def donation_pairs(plan: Plan, donated_inputs) -> dict:
    """Outputs that may be written into a donated input's buffer: ``{output buffer: input position}``.

    The same rules as in-place temporaries: only the expression producing the
    output reads the input, at the element it writes, and nothing later does.
    """
    bufs = plan.buffers
    pairs = {}
    last_read = last_reads(plan)
    outputs = {b for b in plan.outputs if isinstance(b, int)}
    alias_bases = {base_buffer(bufs, b) for b in outputs}
    for i, step, readers, pi, j, out, omap, e in _map_outputs(plan):
        ob = bufs[out]
        if ob.kind != "output" or out in pairs:
            continue
        for pos in donated_inputs:
            ib = bufs[plan.inputs[pos]]
            if (pos in pairs.values() or ib.shape != ob.shape or ib.dtype != ob.dtype
                    or ib.id in alias_bases or last_read.get(ib.id, -1) > i
                    or readers.get(ib.id, {(pi, j)}) != {(pi, j)}):
                continue
            if _reads_only_at(_expr_loads(e), bufs, ib.id, omap):
                pairs[out] = pos
                break
    for i, step in _window_updates(plan):
        ob = bufs[step.out]
        if ob.kind != "output" or step.out in pairs:
            continue
        r = base_buffer(bufs, step.operand)
        for pos in donated_inputs:
            ib = bufs[plan.inputs[pos]]
            if (ib.id == r and pos not in pairs.values() and ib.nbytes == ob.nbytes and ib.dtype == ob.dtype
                    and ib.id not in alias_bases and last_read.get(ib.id, -1) <= i
                    and all(base_buffer(bufs, b) != r for b in step.reads()[1:])):
                pairs[step.out] = pos
                break
    return pairs


def donated_temporaries(plan: Plan, donated_inputs, donated_outputs) -> dict:
    """Temporaries that may be computed in a donated input's memory: ``{temp: (input position, output)}``.

    The pattern of a loop body that rewrites a whole carry and then updates part of it,
    ``a = a - outer(l, row); a = a.at[:, k].set(col)`` (LU): a kernel computes temporary ``T``
    from the input (the donation rules: only the expression producing ``T`` reads the input, at
    the element written, and nothing reads the input later), and one window update turns ``T``
    into ``output`` in place (nothing reads ``T`` after it). Both then live in the input's memory:
    no temporary written, no copy into the output.
    """
    bufs = plan.buffers
    last_read, first_write = last_reads(plan), {}
    for i, step in enumerate(plan.steps):
        for b in step_writes(step):
            first_write.setdefault(base_buffer(bufs, b), i)
    outputs = [b for b in plan.outputs if isinstance(b, int)]
    alias_bases = {base_buffer(bufs, b) for b in outputs}
    used = set(donated_outputs.values())
    producers = {out: (i, readers, pi, j, omap, e) for i, step, readers, pi, j, out, omap, e in _map_outputs(plan)}
    pairs = {}
    for u, step in _window_updates(plan):
        out, temp = step.out, base_buffer(bufs, step.operand)
        if (bufs[out].kind != "output" or outputs.count(out) != 1 or out in donated_outputs
                or bufs[temp].kind != "temp" or bufs[temp].nbytes != bufs[out].nbytes
                or last_read.get(temp) != u or temp not in producers
                or any(base_buffer(bufs, b) == temp for b in step.reads()[1:])):
            continue
        k, readers, pi, j, omap, e = producers[temp]
        if first_write.get(temp) != k:
            continue
        for pos in donated_inputs:
            ib = bufs[plan.inputs[pos]]
            if (pos in used or ib.shape != bufs[temp].shape or ib.dtype != bufs[temp].dtype
                    or ib.id in alias_bases or last_read.get(ib.id, -1) > k
                    or readers.get(ib.id) != {(pi, j)}):
                continue
            if _reads_only_at(_expr_loads(e), bufs, ib.id, omap):
                pairs[temp] = (pos, out)
                used.add(pos)
                break
    _update_chains(plan, donated_inputs, donated_outputs, pairs, used, last_read, first_write, alias_bases)
    return pairs


def _update_chains(plan, donated_inputs, donated_outputs, pairs, used, last_read, first_write, alias_bases):
    """Add to ``pairs`` the temporaries of a chain of window updates that starts from a donated
    input and ends in an output, ``c = c.at[j, j].set(d); (reads of c); c = c.at[:, j].set(col)``
    (Cholesky's step): each update writes its window over the previous value, which nothing reads
    afterwards, so the whole chain runs in the input's memory with no copy."""
    bufs = plan.buffers
    outputs = [b for b in plan.outputs if isinstance(b, int)]
    updates = list(_window_updates(plan))
    consumers: dict[int, list] = {}
    for u, step in updates:
        consumers.setdefault(base_buffer(bufs, step.operand), []).append((u, step))

    def reads_operand_elsewhere(step, b):
        return any(base_buffer(bufs, r) == b for r in step.reads()[1:])

    for u, step in updates:
        src = base_buffer(bufs, step.operand)
        if bufs[src].kind != "input" or src in alias_bases or last_read.get(src, -1) > u \
                or reads_operand_elsewhere(step, src):
            continue
        pos = next((p for p in donated_inputs if plan.inputs[p] == src), None)
        if pos is None or pos in used:
            continue
        chain, cur_u, cur = [], u, step
        while bufs[cur.out].kind == "temp":
            t = cur.out
            nxt = [(u2, s2) for u2, s2 in consumers.get(t, ()) if u2 > cur_u]
            if (bufs[t].nbytes != bufs[src].nbytes or first_write.get(t) != cur_u or len(nxt) != 1
                    or last_read.get(t) != nxt[0][0] or reads_operand_elsewhere(nxt[0][1], t)):
                break
            chain.append(t)
            cur_u, cur = nxt[0]
        out = cur.out
        if (chain and bufs[out].kind == "output" and outputs.count(out) == 1 and out not in donated_outputs
                and bufs[out].nbytes == bufs[src].nbytes and not any(t in pairs for t in chain)):
            for t in chain:
                pairs[t] = (pos, out)
            used.add(pos)
