"""Loop-invariant code motion: work in a loop body that reads only the loop's constants runs once,
before the loop.

A ``scan`` or ``while`` body receives the values it closes over as leading *constant* inputs. An
equation of the body whose operands are all constants (or literals, or results of equations
hoisted already) computes the same value in every iteration: a sparse mat-vec's index
normalization ``where(rows < 0, rows + n, rows)`` inside a power iteration wrote and read 800 KB
per step for nothing. Such equations move to the enclosing program, in front of the loop, and
their results become new constants of the body.

Moved: elementwise math, reductions and products -- compiled code that cannot raise, so a loop
that runs zero times only spends the time of computing them once. Not moved: callbacks and other
NumPy steps (an effect must run once per iteration, and a NumPy step may raise on values the
loop never reaches), control flow (compiled as loops of their own), structural ops (broadcasts,
slices, transposes: free index maps inside a kernel, where a hoisted copy would be a
materialized array), and any equation whose results have more elements than its array operands.
A value only fused into the body's kernels is moved when storing it takes no more bytes than
what it is computed from (:func:`_worth_moving`).

The pass runs on every program the driver compiles, bodies included, so an invariant of an
inner loop rises through every loop it does not depend on, one level per driver recursion.
"""
from __future__ import annotations

from tracejit.core.ir import Literal, Var, has_effects, subprograms
from tracejit.core.primitive import ELEMENTWISE
from tracejit.ops.dot import dot_general_p
from tracejit.ops.indexing import dynamic_slice_p, gather_p
from tracejit.ops.structural import (broadcast_in_dim_p, concatenate_p, pad_p, reshape_p, rev_p, slice_p, squeeze_p,
                                     transpose_p)

# A value this small (a cache line) costs nothing to load: always worth computing once.
SMALL_BYTES = 64
# Readers whose array operand a kernel loads in place, computing its indices in the expression.
_FUSED_READERS = {gather_p, dynamic_slice_p}
_VIEWS = {broadcast_in_dim_p, reshape_p, rev_p, slice_p, squeeze_p, transpose_p, concatenate_p, pad_p}


def _const_positions(eqn):
    """(body program, body params key, number of body constants, position of the first body
    constant among the loop's operands), or None for other equations."""
    p = eqn.params
    if eqn.primitive.name == "scan":
        return p["program"], "program", "num_consts", 0
    if eqn.primitive.name == "while":
        return p["body_program"], "body_program", "body_nconsts", p["cond_nconsts"]
    return None


def _movable(eqn, invariant) -> bool:
    p = eqn.primitive
    # Only compiled math: a NumPy step may raise on values a loop that runs zero times never sees.
    if not (p in ELEMENTWISE or p is dot_general_p or p.name.startswith("reduce_")) \
            or has_effects(eqn) or list(subprograms(eqn)):
        return False
    if not all(isinstance(a, Literal) or id(a) in invariant for a in eqn.inputs):
        return False
    in_size = sum(a.aval.size for a in eqn.inputs if isinstance(a, Var))
    return sum(v.aval.size for v in eqn.outputs) <= max(in_size, 1)


def _reads_in_memory(eqn) -> bool:
    """``eqn`` reads its operands from memory, not fused into a kernel's expression (a scatter's
    indices, a product's operands): an invariant it reads is materialized in every iteration."""
    p = eqn.primitive
    return not (p in ELEMENTWISE or p in _VIEWS or p in _FUSED_READERS or p.name.startswith("reduce_"))


def _worth_moving(moved, kept, body):
    """The moved equations that pay off, with what they need.

    A value the loop materializes anyway (read by a scatter, a product, ...) is always worth
    computing once. A value only fused into the body's kernels is worth it when storing it is no
    bigger than what it is computed from: the iteration then loads no more bytes than before
    (an int32 index widened to int64 for a gather would double its loads)."""
    producer = {id(v): e for e in moved for v in e.outputs}
    sources: dict[int, frozenset] = {}      # a moved value -> the loop constants and literals it is computed from
    size_of: dict[int, int] = {}
    for e in moved:
        found = frozenset()
        for a in e.inputs:
            if id(a) in sources:
                found |= sources[id(a)]
            elif isinstance(a, Var):        # a literal is a scalar inside the kernel, never a load
                found |= {id(a)}
                size_of[id(a)] = a.aval.size * a.aval.dtype.itemsize
        for v in e.outputs:
            sources[id(v)] = found
    source_bytes = {k: sum(size_of[r] for r in found) for k, found in sources.items()}
    in_memory = {id(a) for e in kept if _reads_in_memory(e) for a in e.inputs if isinstance(a, Var)}
    in_memory.update(id(a) for a in body.outputs if isinstance(a, Var))
    readers = {id(a) for e in kept for a in e.inputs if isinstance(a, Var)}
    needed: set[int] = set()
    stack = [producer[k] for k in readers | in_memory if k in producer]
    stack = [e for e in stack if any(
        id(v) in in_memory or v.aval.size * v.aval.dtype.itemsize <= max(source_bytes[id(v)], SMALL_BYTES)
        for v in e.outputs)]
    while stack:
        e = stack.pop()
        if id(e) in needed:
            continue
        needed.add(id(e))
        stack.extend(producer[id(a)] for a in e.inputs if isinstance(a, Var) and id(a) in producer)
    return [e for e in moved if id(e) in needed]


def _hoist(eqn):
    """(equations to run before the loop, the loop equation without them) or None."""
    found = _const_positions(eqn)
    if found is None:
        return None
    body, key, count_key, first = found
    # Inner loops first: what they hoist into this body may then leave this loop too.
    body = hoist_loop_invariants(body)
    n_consts = eqn.params[count_key]
    outer_of = {id(v): eqn.inputs[first + k] for k, v in enumerate(body.in_vars[:n_consts])}
    invariant = set(outer_of)
    moved, kept = [], []
    for e in body.eqns:
        if _movable(e, invariant):
            moved.append(e)
            invariant.update(id(v) for v in e.outputs)
        else:
            kept.append(e)
    moved = _worth_moving(moved, kept, body)
    if not moved:
        return None if body is found[0] else ([], eqn.replace(params=dict(eqn.params, **{key: body})))
    moved_ids = {id(e) for e in moved}
    kept = [e for e in body.eqns if id(e) not in moved_ids]
    # The moved equations' results are the loop's new constants where the rest of the body reads them.
    still_read = {id(a) for e in kept for a in e.inputs if isinstance(a, Var)}
    still_read.update(id(a) for a in body.outputs if isinstance(a, Var))
    produced = [v for e in moved for v in e.outputs if id(v) in still_read]
    inner = {id(v): Var(v.aval) for v in produced}
    # Fresh variables outside as well: a body program may be shared by several loops.
    outer_of.update((id(v), Var(v.aval)) for e in moved for v in e.outputs)

    def in_body(a):
        return a if isinstance(a, Literal) else inner.get(id(a), a)

    def outside(a):
        return a if isinstance(a, Literal) else outer_of.get(id(a), a)

    before = [e.replace(inputs=[outside(a) for a in e.inputs], outputs=[outside(v) for v in e.outputs])
              for e in moved]
    kept = [e.replace(inputs=[in_body(a) for a in e.inputs]) for e in kept]
    in_vars = body.in_vars[:n_consts] + [inner[id(v)] for v in produced] + body.in_vars[n_consts:]
    new_body = body.replace(in_vars=in_vars, eqns=kept, outputs=[in_body(a) for a in body.outputs])
    at = first + n_consts
    inputs = list(eqn.inputs[:at]) + [outside(v) for v in produced] + list(eqn.inputs[at:])
    params = dict(eqn.params, **{key: new_body, count_key: n_consts + len(produced)})
    return before, eqn.replace(inputs=inputs, params=params)


def hoist_loop_invariants(program):
    """Move loop-invariant equations of every ``scan``/``while`` body in ``program`` before the loop."""
    eqns, changed = [], False
    for eqn in program.eqns:
        result = _hoist(eqn)
        if result is None:
            eqns.append(eqn)
            continue
        before, loop = result
        eqns.extend(before)
        eqns.append(loop)
        changed = True
    return program.replace(eqns=eqns) if changed else program
