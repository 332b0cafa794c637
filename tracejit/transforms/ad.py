"""Automatic differentiation as an interpretation of Programs.

A function is traced to a :class:`~tracejit.core.ir.Program` once; then

* **reverse mode** (:func:`vjp_program`) evaluates the program equation by
  equation on the *current* trace -- NumPy eagerly, staged equations under
  ``jit`` or an enclosing ``grad`` -- and records, per equation, a backward
  closure made by the primitive's VJP rule. The backward pass walks the
  recorded equations in reverse. Rules only bind ordinary primitives, so the
  backward pass is itself traceable: ``jit(grad(f))`` is one program and
  ``grad(grad(f))`` works by construction.
* **forward mode** (:func:`jvp_program`) evaluates the program with a
  tangent alongside every primal value, using JVP rules.

Zero cotangents and tangents are ``None`` everywhere (symbolic zeros): an
output nobody differentiates costs nothing, and rules skip inputs whose
cotangent is not needed. Only floating and complex values carry derivatives
("active" values); integers and booleans never do.

Rule tables (keyed by primitive)
--------------------------------
``vjp_rules[p](needed, *primals, **params) -> (primal_outs, backward)``
    ``needed[i]`` says whether input ``i`` needs a cotangent; ``backward(cts)``
    maps output cotangents (``None`` = zero) to input cotangents (``None`` for
    zero or not needed). The rule computes the primal outputs itself, so rules
    such as ``custom_vjp`` or ``checkpoint`` choose what to save.
``tracejit.core.primitive.jvp_rules[p](primals, tangents, **params) -> (primal_outs, tangent_outs)``
    Rules registered through :func:`def_jvp` accept ``None`` tangents; other
    rules found in the table get instantiated zeros.

Primitives without a VJP rule are differentiated through their JVP rule
(the JVP is linear in the tangents, so its VJP is the transpose) or, failing
that, through their ``decomposition_rules`` entry.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from tracejit.config import config
from tracejit.core import dtypes
from tracejit.core.avals import ShapedArray
from tracejit.core.ir import Literal, Program, Var
from tracejit.core.primitive import Primitive, decomposition_rules, def_rules, jvp_rules
from tracejit.core.trace import NO_VALUE, bind, is_eager, trace_flat
from tracejit.core.tracer import Tracer
from tracejit.core.values import get_aval

# JAX's dtype of integer-input cotangents: a zero-size structured dtype.
float0 = np.dtype([("float0", np.void, 0)])

vjp_rules: dict[Primitive, Callable] = {}
# jvp rules (in primitive.jvp_rules) known to accept None (zero) tangents.
_ZERO_AWARE_JVP: set[Primitive] = set()


def is_differentiable(dtype) -> bool:
    """Floating and complex values carry derivatives; integers and booleans do not."""
    return dtypes.is_inexact(np.dtype(dtype))


aval_of = get_aval


# --------------------------------------------------------------------------- helpers for rules

def zeros(aval: ShapedArray):
    """An array of zeros of ``aval`` (NumPy eagerly, a broadcast scalar when staged)."""
    if is_eager():
        return np.zeros(aval.shape, aval.dtype)
    from tracejit.ops.structural import broadcast_in_dim_p
    return broadcast_in_dim_p.bind(np.zeros((), aval.dtype)[()], shape=aval.shape, broadcast_dimensions=())


def instantiate(t, aval: ShapedArray):
    """``t``, or zeros of ``aval`` when ``t`` is the symbolic zero ``None``."""
    return zeros(aval) if t is None else t


def instantiate_or_float0(t, aval: ShapedArray):
    """What users see for a (co)tangent: zeros for ``None``, float0 zeros for integers."""
    if not is_differentiable(aval.dtype):
        return np.zeros(aval.shape, float0)
    return zeros(aval.strip_weak()) if t is None else t


def add_any(a, b):
    """Sum of two (co)tangents where ``None`` means zero."""
    if a is None:
        return b
    if b is None:
        return a
    from tracejit.ops.elementwise import binary_prims
    return binary_prims["add"].bind(a, b)


def def_vjp(prim: Primitive, rule: Callable) -> None:
    """Register ``rule(needed, *primals, **params) -> (outs, backward)``."""
    vjp_rules[prim] = rule


def def_jvp(prim: Primitive, rule: Callable) -> None:
    """Register a JVP rule that accepts ``None`` (zero) tangents."""
    jvp_rules[prim] = rule
    _ZERO_AWARE_JVP.add(prim)


def def_simple_vjp(prim: Primitive, backward: Callable) -> None:
    """A VJP rule whose forward just binds ``prim``.

    ``backward(cts, needed, ins, outs, **params) -> list of input cotangents``.
    Multi-output primitives get the full list of ``cts``; single-output ones
    get ``cts[0]`` (never ``None``: equations without cotangents are skipped).
    """
    multi = prim.multiple_results

    def make_bwd(needed, ins, outs, params):
        def bwd(cts):
            return backward(cts if multi else cts[0], needed, ins, outs, **params)
        return bwd

    def rule(needed, *ins, **params):
        outs = bind(prim, ins, params)
        return outs, make_bwd(needed, ins, outs, params)
    vjp_rules[prim] = rule
    _backward_from_saved[prim] = make_bwd


# prim -> make_bwd(needed, ins, outs, params): rebuilds a simple rule's backward
# from saved outputs (checkpoint policies save some outputs instead of recomputing).
_backward_from_saved: dict[Primitive, Callable] = {}


# --------------------------------------------------------------------------- rule lookup

def _ensure_rules():
    # Importing the rule modules registers them; the optional ones look up
    # primitives by name because their files may be added after this module.
    from tracejit.transforms import ad_rules_elementwise, ad_rules_structural, ad_rules_extra  # noqa: F401
    ad_rules_extra.register_available()


_decomp_cache: dict = {}


def _decomposed_program(prim, params, in_avals, rule=None) -> Program:
    """Trace ``rule`` (default: the primitive's decomposition) into a cached Program."""
    key = (prim, rule, tuple(sorted(params.items(), key=lambda kv: kv[0])), tuple(in_avals))
    try:
        hash(key)
    except TypeError:
        key = None
    prog = _decomp_cache.get(key) if key is not None else None
    if prog is None:
        rule = rule or decomposition_rules[prim]
        prog = trace_flat(lambda *xs: list(rule(*xs, **params)), in_avals, f"{prim.name}_decomposition")
        if key is not None and not any(isinstance(c, Tracer) for c in prog.const_values):
            _decomp_cache[key] = prog
    return prog


def _no_rule(prim, mode):
    return NotImplementedError(
        f"{mode}-mode differentiation of primitive {prim.name!r} is not implemented (it has no "
        f"{'VJP' if mode == 'reverse' else 'JVP'} rule, JVP rule or decomposition). Wrap the computation "
        "in tracejit.custom_vjp / custom_jvp to give it a derivative, or apply stop_gradient to its inputs "
        "if it does not need one.")


def def_rules_by_function(prim: Primitive, fn: Callable) -> None:
    """Differentiate ``prim`` in both modes by differentiating ``fn(*args, **params) -> list``,
    the same computation written with differentiable primitives."""
    def jvp(primals, tangents, **params):
        prog = _decomposed_program(prim, params, [aval_of(p) for p in primals], fn)
        return jvp_program(prog, prog.const_values, primals, None, tangents)

    def vjp(needed, *ins, **params):
        prog = _decomposed_program(prim, params, [aval_of(x) for x in ins], fn)
        outs, _, bwd = vjp_program(prog, prog.const_values, ins, None, needed)
        return outs, lambda cts: bwd(cts)[1]
    def_jvp(prim, jvp)
    def_vjp(prim, vjp)


def get_jvp_rule(prim: Primitive) -> Callable:
    """A JVP rule for ``prim`` that accepts ``None`` tangents."""
    _ensure_rules()
    rule = jvp_rules.get(prim)
    if rule is not None:
        if prim in _ZERO_AWARE_JVP:
            return rule

        def instantiating(primals, tangents, **params):
            tangents = [instantiate(t, aval_of(p)) for p, t in zip(primals, tangents)]
            return rule(primals, tangents, **params)
        return instantiating
    if prim in decomposition_rules:
        def via_decomposition(primals, tangents, **params):
            prog = _decomposed_program(prim, params, [aval_of(p) for p in primals])
            return jvp_program(prog, prog.const_values, primals, None, tangents)
        return via_decomposition
    raise _no_rule(prim, "forward")


def get_vjp_rule(prim: Primitive) -> Callable:
    """A VJP rule for ``prim`` (direct, through its JVP, or through its decomposition)."""
    _ensure_rules()
    rule = vjp_rules.get(prim)
    if rule is not None:
        return rule
    if prim in jvp_rules:
        return lambda needed, *ins, **params: vjp_via_jvp(prim, needed, ins, params)
    if prim in decomposition_rules:
        def via_decomposition(needed, *ins, **params):
            prog = _decomposed_program(prim, params, [aval_of(x) for x in ins])
            outs, _, bwd = vjp_program(prog, prog.const_values, ins, None, needed)
            return outs, lambda cts: bwd(cts)[1]
        return via_decomposition
    raise _no_rule(prim, "reverse")


_transposing: set = set()


def vjp_via_jvp(prim, needed, ins, params, jvp_rule=None):
    """Reverse mode from a JVP rule: the JVP is linear in the tangents, so the
    VJP is the backward pass of the traced tangent map (at zero tangents)."""
    jvp_rule = jvp_rule or get_jvp_rule(prim)
    outs = bind(prim, ins, params)
    idx = [i for i, n in enumerate(needed) if n]

    def tangent_map(*ts):
        tangents = [None] * len(ins)
        for i, t in zip(idx, ts):
            tangents[i] = t
        _, touts = jvp_rule(list(ins), tangents, **params)
        return [instantiate(t, aval_of(o)) for t, o in zip(touts, outs)]

    def bwd(cts):
        in_avals = [aval_of(ins[i]).strip_weak() for i in idx]
        if prim in _transposing:
            raise NotImplementedError(
                f"reverse-mode differentiation of primitive {prim.name!r}: its JVP applies {prim.name} to "
                "the tangents, so it cannot be transposed automatically; it needs a VJP rule (def_vjp)")
        _transposing.add(prim)
        try:
            # The tangents are unknown, but under an eager grad the primals are concrete: a custom
            # JVP rule may branch on them (also when they are tracers of an enclosing eager grad).
            prog = trace_flat(tangent_map, in_avals, f"{prim.name}_linear", eager_args=[NO_VALUE] * len(in_avals))
        finally:
            _transposing.discard(prim)
        prog = _without_tangent_effects(prog)
        _, _, inner = vjp_program(prog, prog.const_values, [zeros(a) for a in in_avals], None, None)
        _, in_cts = inner(list(cts))
        res = [None] * len(ins)
        for i, c in zip(idx, in_cts):
            res[i] = c
        return res
    return outs, bwd


def _without_tangent_effects(prog: Program) -> Program:
    """``prog`` (a traced tangent map) without the debug callbacks that read tangents: the map is
    only evaluated at zero tangents to be transposed, and JAX's transpose drops such callbacks too."""
    from tracejit.core.primitive import EFFECTFUL
    if not any(e.primitive in EFFECTFUL for e in prog.eqns):
        return prog
    tangent = set(prog.in_vars)
    eqns = []
    for e in prog.eqns:
        reads = any(type(a) is Var and a in tangent for a in e.inputs)
        if reads and e.primitive in EFFECTFUL:
            continue
        if reads:
            tangent.update(e.outputs)
        eqns.append(e)
    return prog.replace(eqns=eqns)


# --------------------------------------------------------------------------- reverse mode

def _check_ct(eqn_name, var, ct):
    a = aval_of(ct)
    if a.shape != var.aval.shape or a.dtype != var.aval.dtype:
        raise AssertionError(f"VJP rule of {eqn_name} produced a cotangent {a.str_short()} for a value "
                             f"of type {var.aval.str_short()}")


def vjp_program(program: Program, const_values, args, active_consts=None, active_args=None, saved=None):
    """Evaluate ``program`` on the current trace and prepare its backward pass.

    Parameters
    ----------
    program : Program
    const_values, args : sequences
        Values of the program's constants and inputs.
    active_consts, active_args : sequences of bool, optional
        Which constants / inputs are differentiated (default: no constants,
        every input). Non-floating values are never active.
    saved : dict, optional
        Values of some equations' outputs (keyed by Var) computed earlier:
        those equations are not evaluated again (used by ``checkpoint``).

    Returns
    -------
    outs : list
        The program's outputs.
    out_active : list of bool
        Which outputs depend on an active input.
    backward : callable
        ``backward(cts) -> (const_cts, arg_cts)``; ``None`` is a zero
        cotangent, both in ``cts`` and in the results. It may be called many
        times (``jacrev`` does).

    Examples
    --------
    >>> prog = make_jaxpr(lambda x: x * x)(3.0)        # doctest: +SKIP
    >>> outs, _, bwd = vjp_program(prog, [], [3.0])    # doctest: +SKIP
    >>> bwd([1.0])[1]                                  # doctest: +SKIP
    [array(6.)]
    """
    _ensure_rules()
    if active_consts is None:
        active_consts = [False] * len(program.const_vars)
    if active_args is None:
        active_args = [True] * len(program.in_vars)
    if len(args) != len(program.in_vars) or len(const_values) != len(program.const_vars):
        raise TypeError(f"program takes {len(program.const_vars)} constants and {len(program.in_vars)} "
                        f"arguments, got {len(const_values)} and {len(args)}")
    env: dict = {}
    active: set = set()

    def read(a):
        return a.val if type(a) is Literal else env[a]

    for vs, vals, acts in ((program.const_vars, const_values, active_consts),
                           (program.in_vars, args, active_args)):
        for v, val, act in zip(vs, vals, acts):
            env[v] = val
            if act and is_differentiable(v.aval.dtype):
                active.add(v)
    tape = []
    for eqn in program.eqns:
        ins = [read(a) for a in eqn.inputs]
        needed = tuple(type(a) is Var and a in active for a in eqn.inputs)
        # Equations with only integer/boolean results (comparisons, argmax) carry no derivative.
        have = saved is not None and all(v in saved for v in eqn.outputs)
        # stop_gradient's output is inactive, so nothing upstream of it is differentiated.
        if (any(needed) and eqn.primitive is not stop_gradient_p
                and any(is_differentiable(v.aval.dtype) for v in eqn.outputs)):
            if have and eqn.primitive in _backward_from_saved:
                outs = [saved[v] for v in eqn.outputs]
                bwd = _backward_from_saved[eqn.primitive](needed, ins, outs, eqn.params)
            else:
                outs, bwd = get_vjp_rule(eqn.primitive)(needed, *ins, **eqn.params)
            tape.append((eqn, needed, bwd))
            for v in eqn.outputs:
                if is_differentiable(v.aval.dtype):
                    active.add(v)
        elif have:
            outs = [saved[v] for v in eqn.outputs]
        else:
            outs = bind(eqn.primitive, ins, eqn.params)
        for v, val in zip(eqn.outputs, outs):
            env[v] = val
    outs = [read(a) for a in program.outputs]
    out_active = [type(a) is Var and a in active for a in program.outputs]
    checks = config.enable_checks

    def backward(cts):
        if len(cts) != len(program.outputs):
            raise TypeError(f"backward pass expects {len(program.outputs)} cotangents, got {len(cts)}")
        ct_env: dict = {}

        def accumulate(v, ct):
            ct_env[v] = add_any(ct_env.get(v), ct)

        for a, ct, act in zip(program.outputs, cts, out_active):
            if act and ct is not None:
                accumulate(a, ct)
        for eqn, needed, bwd in reversed(tape):
            cts_out = [ct_env.pop(v, None) for v in eqn.outputs]
            if all(c is None for c in cts_out):
                continue
            in_cts = bwd(cts_out)
            for a, n, ct in zip(eqn.inputs, needed, in_cts):
                if n and ct is not None:
                    if checks:
                        _check_ct(eqn.primitive.name, a, ct)
                    accumulate(a, ct)
        return ([ct_env.get(v) for v in program.const_vars], [ct_env.get(v) for v in program.in_vars])

    return outs, out_active, backward


# --------------------------------------------------------------------------- forward mode

def jvp_program(program: Program, const_values, args, const_tangents=None, arg_tangents=None, saved=None):
    """Evaluate ``program`` and its directional derivative on the current trace.

    ``None`` tangents are zeros; returns ``(outs, tangent_outs)`` with ``None``
    for outputs whose tangent is zero. ``saved`` (optional) maps variables to their
    primal values, known already (an eagerly traced program's ``concrete_values``, valid
    only when no input or constant is a tracer): equations without tangents are not
    evaluated again, and rules see those values as their primals.

    Examples
    --------
    >>> prog = make_jaxpr(lambda x: x * x)(3.0)             # doctest: +SKIP
    >>> jvp_program(prog, [], [3.0], None, [1.0])           # doctest: +SKIP
    ([array(9.)], [array(6.)])
    """
    if const_tangents is None:
        const_tangents = [None] * len(program.const_vars)
    if arg_tangents is None:
        arg_tangents = [None] * len(program.in_vars)
    env: dict = {}
    tenv: dict = {}

    def read(a):
        return a.val if type(a) is Literal else env[a]

    for vs, vals, ts in ((program.const_vars, const_values, const_tangents),
                         (program.in_vars, args, arg_tangents)):
        for v, val, t in zip(vs, vals, ts):
            env[v] = val
            if t is not None and is_differentiable(v.aval.dtype):
                tenv[v] = t
    for eqn in program.eqns:
        ins = [read(a) for a in eqn.inputs]
        tins = [tenv.get(a) if type(a) is Var else None for a in eqn.inputs]
        have = saved is not None and all(v in saved for v in eqn.outputs)
        if all(t is None for t in tins) or not any(is_differentiable(v.aval.dtype) for v in eqn.outputs):
            outs = [saved[v] for v in eqn.outputs] if have else bind(eqn.primitive, ins, eqn.params)
        else:
            outs, touts = get_jvp_rule(eqn.primitive)(ins, tins, **eqn.params)
            for v, t in zip(eqn.outputs, touts):
                if t is not None and is_differentiable(v.aval.dtype):
                    tenv[v] = t
            if have:
                # Same values, but concrete (under jacfwd's vmap the rule's outputs are staged).
                outs = [saved[v] for v in eqn.outputs]
        for v, val in zip(eqn.outputs, outs):
            env[v] = val
    return ([read(a) for a in program.outputs],
            [tenv.get(a) if type(a) is Var else None for a in program.outputs])


# --------------------------------------------------------------------------- stop_gradient

stop_gradient_p = def_rules(Primitive("stop_gradient"), abstract_eval=lambda x: [x], impl=lambda x: [x],
                            cost=lambda i, o, **_: {"flops": 0, "transcendentals": 0})
# The compiler sees an identity: stop_gradient only matters to differentiation.
decomposition_rules[stop_gradient_p] = lambda x: [x]
# Re-binding stop_gradient in the forward keeps it visible to an enclosing grad.
def_vjp(stop_gradient_p, lambda needed, x: ([stop_gradient_p.bind(x)], lambda cts: [None]))
def_jvp(stop_gradient_p, lambda primals, tangents: ([stop_gradient_p.bind(primals[0])], [None]))

__all__ = ["add_any", "aval_of", "def_jvp", "def_rules_by_function", "def_simple_vjp", "def_vjp", "float0", "get_jvp_rule",
           "get_vjp_rule", "instantiate", "instantiate_or_float0", "is_differentiable", "jvp_program", "stop_gradient_p",
           "vjp_program", "vjp_rules", "vjp_via_jvp", "zeros"]
