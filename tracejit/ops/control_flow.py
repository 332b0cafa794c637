"""Structured control flow primitives: ``cond``, ``while`` and ``scan``.

Each primitive holds its body as closed sub-programs in its params. A
sub-program has *no* constant variables: whatever the traced body closed over
(arrays, tracers of an enclosing trace) is turned into leading explicit inputs
by :func:`closure_convert`, and the values are passed as operands of the
equation. That keeps every sub-program a pure function of its inputs, so the
checker, the printer and later passes see all data flow in the equation.

Operand layouts (what ``eqn.inputs`` holds):

* ``cond[branches]``: ``index, *operands``; every branch takes ``operands``
  (constants of all branches first, then the user's operands) and the branch
  ``branches[clamp(index)]`` runs.
* ``while[cond_nconsts, cond_program, body_nconsts, body_program]``:
  ``*cond_consts, *body_consts, *carry``; ``cond_program(*cond_consts,
  *carry) -> [bool]``, ``body_program(*body_consts, *carry) -> carry``.
* ``scan[length, reverse, num_consts, num_carry, unroll, program]``:
  ``*consts, *carry, *xs``; ``program(*consts, *carry, *x_slices) ->
  [*carry, *y_slices]``; outputs are the final carry and the stacked ``ys``.

The impl rules run sub-programs with the reference interpreter (:func:`run_program`);
compiled backends compile the sub-programs themselves.
"""
from __future__ import annotations

import numpy as np

from tracejit.core.avals import ShapedArray
from tracejit.core.interpret import interpret
from tracejit.core.ir import Program
from tracejit.core.primitive import Primitive, cost_rules, def_rules

__all__ = ["cond_p", "while_p", "scan_p", "closure_convert", "run_program", "program_cost"]


# --------------------------------------------------------------------------- sub-program helpers

def closure_convert(program: Program) -> tuple[Program, list]:
    """Turn a traced program's constants into leading explicit inputs.

    Returns ``(program_without_consts, const_values)``: the new program takes
    ``(*const_values, *original_inputs)``. Constant values may be NumPy arrays
    or tracers of an enclosing trace; the caller passes them as operands.

    Examples
    --------
    >>> from tracejit.core.trace import trace_flat
    >>> from tracejit.core.avals import ShapedArray
    >>> c = np.ones(3)
    >>> p = trace_flat(lambda x: [x + c], [ShapedArray((3,), np.float64)])
    >>> q, consts = closure_convert(p)
    >>> len(q.const_vars), len(q.in_vars), consts[0] is c
    (0, 2, True)
    """
    if not program.const_vars:
        return program, []
    closed = Program([], [], list(program.const_vars) + list(program.in_vars), program.eqns,
                     program.outputs)
    return closed, list(program.const_values)


def run_program(program: Program, consts, args) -> list:
    """Run a closed (constant-free) sub-program on NumPy values with the reference interpreter.

    ``consts`` are the sub-program's leading inputs (the closure-converted
    constants), ``args`` the rest. (Compiled backends never come here: they
    compile sub-programs themselves, see ``backends/cpu/loops.py``.)

    Examples
    --------
    >>> from tracejit.core.trace import trace_flat
    >>> p = trace_flat(lambda x: [x * 2], [ShapedArray((), np.float64)])
    >>> [float(v) for v in run_program(p, [], [np.float64(3.0)])]
    [6.0]
    """
    return interpret(program, (), [*consts, *args])


def _as_values(vals, avals) -> list:
    # Python scalars (weak operands of an eager call) have no dtype; impl rules need one.
    return [v if isinstance(v, (np.ndarray, np.generic)) and v.dtype == a.dtype
            else np.asarray(v, dtype=a.dtype) for v, a in zip(vals, avals)]


def _short(avals) -> str:
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def _check_inputs(what: str, program: Program, avals) -> None:
    if program.const_vars:
        raise TypeError(f"{what}: sub-programs must be closure-converted (no constants); "
                        "use closure_convert")
    expected = [a.strip_weak() for a in program.in_avals]
    got = [a.strip_weak() for a in avals]
    if expected != got:
        raise TypeError(f"{what}: operands {_short(got)} do not match the sub-program's inputs "
                        f"{_short(expected)}")


def _zero_cost() -> dict:
    return {"flops": 0, "transcendentals": 0}


def program_cost(program: Program) -> dict:
    """Sum of ``cost_rules`` over a program's equations (missing rules count 0).

    Examples
    --------
    >>> from tracejit.core.trace import trace_flat
    >>> p = trace_flat(lambda x: [x * 2 + 1], [ShapedArray((4,), np.float64)])
    >>> program_cost(p)["flops"]
    8
    """
    total = _zero_cost()
    for eqn in program.eqns:
        rule = cost_rules.get(eqn.primitive)
        if rule is None:
            continue
        c = rule([a.aval for a in eqn.inputs], [v.aval for v in eqn.outputs], **eqn.params)
        for k, v in c.items():
            total[k] = total.get(k, 0) + v
    return total


def _scaled(cost: dict, factor: int) -> dict:
    return {k: v * factor for k, v in cost.items()}


def _added(*costs: dict) -> dict:
    total = _zero_cost()
    for c in costs:
        for k, v in c.items():
            total[k] = total.get(k, 0) + v
    return total


def _pp_in_order(*names):
    def pp(params):
        return {k: params[k] for k in names if k in params}
    return pp


# --------------------------------------------------------------------------- cond

def _cond_abstract_eval(index, *operands, branches):
    if not branches:
        raise TypeError("cond needs at least one branch")
    if index.shape != () or not (index.dtype.kind in "iu"):
        raise TypeError(f"cond index must be an integer scalar, got {index.str_short()}")
    for i, b in enumerate(branches):
        _check_inputs(f"cond branch {i}", b, operands)
    outs0 = branches[0].out_avals
    for i, b in enumerate(branches[1:], 1):
        outs = b.out_avals
        if [a.strip_weak() for a in outs] != [a.strip_weak() for a in outs0]:
            raise TypeError(f"cond branch {i} outputs {_short(outs)} do not match branch 0 outputs "
                            f"{_short(outs0)}")
    # An output is weak only if every branch produces it weakly.
    return [a.update(weak_type=all(b.out_avals[k].weak_type for b in branches))
            for k, a in enumerate(outs0)]


def _cond_impl(index, *operands, branches):
    i = min(max(int(index), 0), len(branches) - 1)
    program = branches[i]
    return run_program(program, (), _as_values(operands, program.in_avals))


def _cond_cost(in_avals, out_avals, *, branches):
    # Only one branch runs: the most expensive branch bounds the cost.
    costs = [program_cost(b) for b in branches]
    keys = set().union(*costs)
    return {k: max(c.get(k, 0) for c in costs) for k in keys}


cond_p = def_rules(Primitive("cond", multiple_results=True, pp_params=_pp_in_order("branches")),
                   abstract_eval=_cond_abstract_eval, impl=_cond_impl, cost=_cond_cost)


# --------------------------------------------------------------------------- while

def _split(seq, *sizes):
    out, start = [], 0
    for n in sizes:
        out.append(list(seq[start:start + n]))
        start += n
    out.append(list(seq[start:]))
    return out


def _while_abstract_eval(*avals, cond_program, body_program, cond_nconsts, body_nconsts):
    cond_consts, body_consts, carry = _split(avals, cond_nconsts, body_nconsts)
    _check_inputs("while cond_program", cond_program, cond_consts + carry)
    _check_inputs("while body_program", body_program, body_consts + carry)
    out = cond_program.out_avals
    if len(out) != 1 or out[0].shape != () or out[0].dtype != np.bool_:
        raise TypeError(f"while cond_program must return one bool scalar, got {_short(out)}")
    body_out = body_program.out_avals
    if [a.strip_weak() for a in body_out] != [a.strip_weak() for a in carry]:
        raise TypeError(f"while body_program output carry {_short(body_out)} does not match "
                        f"input carry {_short(carry)}")
    return list(carry)


def _while_impl(*args, cond_program, body_program, cond_nconsts, body_nconsts):
    cond_consts, body_consts, carry = _split(args, cond_nconsts, body_nconsts)
    carry_avals = body_program.in_avals[body_nconsts:]
    carry = _as_values(carry, carry_avals)
    while bool(run_program(cond_program, cond_consts, carry)[0]):
        carry = run_program(body_program, body_consts, carry)
    return _as_values(carry, carry_avals)


def _while_cost(in_avals, out_avals, *, cond_program, body_program, cond_nconsts, body_nconsts):
    # The trip count is unknown statically: report the cost of one iteration.
    return _added(program_cost(cond_program), program_cost(body_program))


while_p = def_rules(
    Primitive("while", multiple_results=True,
              pp_params=_pp_in_order("cond_nconsts", "cond_program", "body_nconsts", "body_program")),
    abstract_eval=_while_abstract_eval, impl=_while_impl, cost=_while_cost)


# --------------------------------------------------------------------------- scan

def _scan_abstract_eval(*avals, program, length, reverse, num_consts, num_carry, unroll=1):
    consts, carry, xs = _split(avals, num_consts, num_carry)
    for x in xs:
        if x.ndim == 0 or x.shape[0] != length:
            raise TypeError(f"scan of length {length}: scanned operand {x.str_short()} needs a "
                            f"leading axis of size {length}")
    x_slices = [x.update(shape=x.shape[1:]) for x in xs]
    _check_inputs("scan program", program, consts + carry + x_slices)
    outs = program.out_avals
    carry_out, ys = outs[:num_carry], outs[num_carry:]
    if [a.strip_weak() for a in carry_out] != [a.strip_weak() for a in carry]:
        raise TypeError(f"scan program output carry {_short(carry_out)} does not match input "
                        f"carry {_short(carry)}")
    return list(carry) + [y.update(shape=(length,) + y.shape) for y in ys]


def _scan_impl(*args, program, length, reverse, num_consts, num_carry, unroll=1):
    consts, carry, xs = _split(args, num_consts, num_carry)
    in_avals = program.in_avals
    carry_avals = in_avals[num_consts:num_consts + num_carry]
    consts = _as_values(consts, in_avals[:num_consts])
    carry = _as_values(carry, carry_avals)
    xs = [np.asarray(x) for x in xs]
    ys = [np.empty((length,) + a.shape, a.dtype) for a in program.out_avals[num_carry:]]
    for i in (range(length - 1, -1, -1) if reverse else range(length)):
        outs = run_program(program, consts, carry + [x[i] for x in xs])
        carry = outs[:num_carry]
        for y, v in zip(ys, outs[num_carry:]):
            y[i] = v
    return _as_values(carry, carry_avals) + ys


def _scan_cost(in_avals, out_avals, *, program, length, reverse, num_consts, num_carry, unroll=1):
    return _scaled(program_cost(program), length)


scan_p = def_rules(
    Primitive("scan", multiple_results=True,
              pp_params=_pp_in_order("length", "reverse", "num_consts", "num_carry", "unroll",
                                     "program")),
    abstract_eval=_scan_abstract_eval, impl=_scan_impl, cost=_scan_cost)
