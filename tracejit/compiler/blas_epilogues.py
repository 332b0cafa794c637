"""BLAS epilogues: elementwise work a GEMM call can do itself.

``c + alpha * (a @ b)`` is what ``?gemm`` computes with ``beta = 1``: an SGD
update ``w - lr * (x^T @ g)`` then needs no kernel that reads the product
back, and the product is never stored on its own.

Any other elementwise function of the product (a bias and an activation, a
residual add, a scale: ``tanh(x @ w + b)``) becomes the product's *epilogue*
(``DotStep.epilogue``): generated products apply it to each block of results
in registers before the block is stored, so the product is never stored and
read back; a library's product is followed by the epilogue over its result,
in place.
"""
from __future__ import annotations

import dataclasses

from tracejit.compiler.plan import DotStep, Plan, base_buffer, step_reads, step_writes
from tracejit.compiler.kernel_ir import IndexMap, Kernel, Node, Phase, is_gather, walk


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


def _rhs_free_dims(step: DotStep, bufs) -> int:
    (_, rc), (_, rb) = step.dimension_numbers
    return len(bufs[step.rhs].shape) - len(rc) - len(rb)


def _epilogue_of(plan: Plan, i: int, readers: dict):
    """``(index of the consumer kernel, its output)`` when the kernel after product ``i`` can become
    its epilogue, else None.

    The product must be a float temporary read only by that kernel, through no alias, at the element
    the kernel writes; the kernel one map over the product's shape into a buffer of its dtype that no
    other step writes; its columns (the product's last axis, its one free axis of the right operand)
    more than one; and nothing between the two steps may write what the kernel reads or touch what it
    writes (the epilogue runs at the product's place in the plan)."""
    step, bufs = plan.steps[i], plan.buffers
    product = bufs[step.out]
    if (step.accumulate is not None or step.epilogue is not None or product.kind != "temp"
            or product.dtype.kind != "f" or product.dtype.itemsize not in (4, 8) or readers.get(step.out) != 1
            or step.out in plan.outputs or any(b.kind == "alias" and b.alias_of == step.out for b in bufs)
            or _rhs_free_dims(step, bufs) != 1 or len(product.shape) < 2 or product.shape[-1] < 2):
        return None
    k = next((j for j in range(i + 1, len(plan.steps)) if step.out in step_reads(plan.steps[j])), None)
    kernel = plan.steps[k] if k is not None else None
    if not isinstance(kernel, Kernel) or len(kernel.phases) != 1:
        return None
    phase = kernel.phases[0]
    identity = IndexMap.identity(len(product.shape))
    if phase.reduce_op or phase.per_row or len(phase.outputs) != 1 or phase.out_maps[0] != identity \
            or tuple(kernel.shape) != tuple(product.shape):
        return None
    out = phase.outputs[0]
    if bufs[out].kind not in ("temp", "output") or bufs[out].dtype != product.dtype \
            or tuple(bufs[out].shape) != tuple(product.shape):
        return None
    loads = [n for n in walk(phase.exprs) if n.kind == "load"]
    if any(is_gather(n) or (n.buffer == step.out and n.map != identity) for n in loads):
        return None
    read = {base_buffer(bufs, n.buffer) for n in loads if n.buffer != step.out}
    if base_buffer(bufs, out) in read:
        return None
    for j, other in enumerate(plan.steps):
        written = {base_buffer(bufs, b) for b in step_writes(other)}
        if j != k and base_buffer(bufs, out) in written:
            return None
        if i <= j < k and (written & read or (j > i and base_buffer(bufs, out) in
                                              {base_buffer(bufs, b) for b in step_reads(other)})):
            return None
    return k, out


def _reading(expr, product: int, out: int, dims: int):
    """``expr`` with every load of ``product`` made a load of ``out`` (the epilogue runs in place)."""
    made: dict = {}

    def copy(n):
        if id(n) not in made:
            if n.kind == "load" and n.buffer == product:
                made[id(n)] = Node("load", n.dtype, buffer=out, map=IndexMap.identity(dims))
            else:
                made[id(n)] = dataclasses.replace(n, args=tuple(copy(a) for a in n.args))
        return made[id(n)]
    return copy(expr)


def fold_epilogues_into_products(plan: Plan) -> None:
    """An elementwise kernel that only reads a product (``gelu(x @ w + b)``, ``x + y @ w``) becomes
    the product's epilogue: the product writes the kernel's output and the kernel leaves the plan."""
    readers: dict[int, int] = {}
    for step in plan.steps:
        for b in set(step_reads(step)):
            readers[b] = readers.get(b, 0) + 1
    i = 0
    while i < len(plan.steps):
        step = plan.steps[i]
        found = _epilogue_of(plan, i, readers) if isinstance(step, DotStep) else None
        if found is not None:
            k, out = found
            kernel = plan.steps[k]
            expr = _reading(kernel.phases[0].exprs[0], step.out, out, len(kernel.shape))
            step.epilogue = Kernel(f"{kernel.name}_epilogue", tuple(kernel.shape), kernel.n_outer,
                                   [Phase(None, [expr], [out], [IndexMap.identity(len(kernel.shape))])],
                                   list(kernel.eqn_names))
            step.out = out
            del plan.steps[k]
        i += 1
