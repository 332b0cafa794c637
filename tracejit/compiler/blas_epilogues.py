"""BLAS epilogues: elementwise work a GEMM call can do itself.

``c + alpha * (a @ b)`` is what ``?gemm`` computes with ``beta = 1``: an SGD
update ``w - lr * (x^T @ g)`` then needs no kernel that reads the product
back, and the product is never stored on its own.
"""
from __future__ import annotations

from tracejit.compiler.plan import DotStep, Plan, step_reads, step_writes
from tracejit.compiler.kernel_ir import IndexMap, Kernel, is_gather


def _scaled_load(node, buffer):
    """``k`` when ``node`` is ``load(buffer)`` (k = 1) or ``k * load(buffer)`` with a constant k."""
    if node.kind == "load" and node.buffer == buffer and not is_gather(node):
        return 1.0
    if node.kind == "op" and node.prim.name == "mul" and len(node.args) == 2:
        k, d = node.args if node.args[0].kind == "const" else node.args[::-1]
        if k.kind == "const" and d.kind == "load" and d.buffer == buffer and not is_gather(d):
            return float(k.value)
    return None


def _axpy_terms(expr, dot_buffer):
    """``(c buffer, alpha)`` when ``expr`` is ``c + k*D`` / ``k*D + c`` / ``c - k*D`` (k = 1 allowed)
    with ``D = load(dot_buffer)`` and ``c`` a load, both at the element written; else None."""
    if expr.kind != "op" or expr.prim.name not in ("add", "sub") or len(expr.args) != 2:
        return None
    x, y = expr.args
    candidates = [(x, y, 1.0)] if expr.prim.name == "sub" else [(x, y, 1.0), (y, x, 1.0)]
    for c, term, sign in candidates:
        k = _scaled_load(term, dot_buffer)
        if k is None or c.kind != "load" or is_gather(c) or c.buffer == dot_buffer:
            continue
        loads = [c] + ([term] if term.kind == "load" else [a for a in term.args if a.kind == "load"])
        if any(n.map.terms != IndexMap.identity(len(n.map.terms)).terms for n in loads):
            return None
        return c.buffer, (-k if expr.prim.name == "sub" else k) * sign
    return None


def fold_axpy_into_products(plan: Plan) -> None:
    """``c - lr * (a @ b)`` (an SGD update) becomes one BLAS call with ``beta = 1``: the product
    accumulates into a copy of ``c``, so it is never stored and read back."""
    readers: dict[int, int] = {}
    for step in plan.steps:
        for b in set(step_reads(step)):
            readers[b] = readers.get(b, 0) + 1
    outputs = {b for b in plan.outputs if isinstance(b, int)}
    written_at = {b: i for i, step in enumerate(plan.steps) for b in step_writes(step)}
    for i, step in enumerate(list(plan.steps)):
        if not isinstance(step, DotStep) or step.accumulate is not None or readers.get(step.out) != 1 \
                or step.out in outputs or plan.buffers[step.out].kind != "temp" \
                or plan.buffers[step.out].dtype.kind != "f":
            continue
        consumer = next((k for k in plan.steps if isinstance(k, Kernel) and step.out in {n.buffer for n in k.loads()}),
                        None)
        if consumer is None or len(consumer.phases) != 1 or consumer.phases[0].reduce_op \
                or len(consumer.phases[0].outputs) != 1:
            continue
        phase = consumer.phases[0]
        out = phase.outputs[0]
        terms = _axpy_terms(phase.exprs[0], step.out)
        if terms is None or phase.out_maps[0].terms != IndexMap.identity(len(phase.out_maps[0].terms)).terms:
            continue
        c, alpha = terms
        cb, ob = plan.buffers[c], plan.buffers[out]
        if (cb.shape, cb.dtype) != (ob.shape, ob.dtype) or ob.dtype != plan.buffers[step.out].dtype \
                or written_at.get(c, -1) >= i:
            continue
        step.out, step.accumulate = out, (c, alpha)
        plan.steps.remove(consumer)
