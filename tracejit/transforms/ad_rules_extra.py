"""Differentiation rules of primitives defined in modules that other parts of
the project own (control flow, indexing, sorting, linear algebra).

The primitives are looked up by name when differentiation is first used
(:func:`register_available`), so a primitive that does not exist is simply
skipped. Rules are written with the control-flow functions or ``prim.bind``, so
they are themselves differentiable. Rules written with ``tracejit.numpy`` (sorting,
linear algebra) are in ``tracejit/numpy/ad_rules.py``.
"""
from __future__ import annotations

import numpy as np

from tracejit.core.interpret import eval_program
from tracejit.core.primitive import abstract_eval_rules
from tracejit.ops.control_flow_functions import scan, switch, while_loop
from tracejit.transforms.ad import (add_any, aval_of, def_jvp, def_simple_vjp, def_vjp, instantiate, is_differentiable,
                                    jvp_program, vjp_program, zeros)
from tracejit.ops.binders import add, binary, c, convert, div, mul, select

_registered: set = set()
RULE_MAKERS: dict = {}
_seen = [None]      # (primitives, rule makers) when the rules were last registered


def primitives_by_name() -> dict:
    return {p.name: p for p in abstract_eval_rules}


def register_available() -> None:
    """Register the rules whose primitive exists now (cheap once done)."""
    # Makers may be added later too (tracejit/numpy/ad_rules.py, when tracejit.numpy is imported).
    seen = (len(abstract_eval_rules), len(RULE_MAKERS))
    if len(_registered) == len(RULE_MAKERS) or _seen[0] == seen:
        return
    _seen[0] = seen
    prims = primitives_by_name()
    for name, make in RULE_MAKERS.items():
        if name not in _registered and name in prims:
            make(prims[name], prims)
            _registered.add(name)


def rules_for(*names):
    """Decorator: ``fn(prim, prims)`` registers the rules of the primitives named ``names`` once they exist."""
    def deco(fn):
        for n in names:
            RULE_MAKERS[n] = fn
        return fn
    return deco


def _nz(seq):
    return [i for i, t in enumerate(seq) if t is not None]


def _scatter_positions(seq, positions, n):
    out = [None] * n
    for i, v in zip(positions, seq):
        out[i] = v
    return out


def instantiate_like(t, x):
    """Tangent ``t`` (None: zeros) as an array of ``x``'s type, strong."""
    return instantiate(t, aval_of(x).strip_weak())


# --------------------------------------------------------------------------- indexing

_GATHER_MODE_FOR_SCATTER = {"clip": "clip", "drop": "fill"}
_SCATTER_MODE_FOR_GATHER = {"clip": "clip", "fill": "drop"}


@rules_for("gather")
def _gather_rules(gather_p, prims):
    scatter_p = prims["scatter"]

    def jvp(primals, tangents, *, mode, fill_value):
        (x, idx), (t, _) = primals, tangents
        out = gather_p.bind(x, idx, mode=mode, fill_value=fill_value)
        return [out], [None if t is None else gather_p.bind(t, idx, mode=mode, fill_value=0)]

    def bwd(ct, needed, ins, outs, *, mode, fill_value):
        x, idx = ins
        # Filled (out-of-range) elements did not come from the operand: drop them.
        return [scatter_p.bind(zeros(aval_of(x).strip_weak()), idx, ct, kind="add",
                               mode=_SCATTER_MODE_FOR_GATHER[mode]), None]
    def_jvp(gather_p, jvp)
    def_simple_vjp(gather_p, bwd)


@rules_for("scatter")
def _scatter_rules(scatter_p, prims):
    gather_p = prims["gather"]

    def gather(x, idx, mode, fill=0):
        return gather_p.bind(x, idx, mode=_GATHER_MODE_FOR_SCATTER[mode], fill_value=fill)

    def winners(x, idx, updates, mode):
        """Which operand elements survive and which updates land (set: last one wins)."""
        ua = aval_of(updates)
        ids = np.arange(ua.size, dtype=np.int64).reshape(ua.shape)
        owner = scatter_p.bind(np.full(aval_of(x).shape, -1, np.int64), idx, ids, kind="set", mode=mode)
        return binary("eq", owner, c(-1, owner)), binary("eq", gather(owner, idx, mode, -2), ids)

    def extremum_parts(x, idx, updates, out, mode):
        at_x = convert(binary("eq", x, out), aval_of(x).dtype)
        at_u = convert(binary("eq", updates, gather(out, idx, mode)), aval_of(x).dtype)
        counts = add(at_x, scatter_p.bind(zeros(aval_of(x).strip_weak()), idx, at_u, kind="add", mode=mode))
        return at_x, at_u, counts

    def jvp(primals, tangents, *, kind, mode):
        (x, idx, u), (tx, _, tu) = primals, tangents
        out = scatter_p.bind(x, idx, u, kind=kind, mode=mode)
        if kind in ("set", "add"):
            return [out], [scatter_p.bind(instantiate_like(tx, x), idx, instantiate_like(tu, u), kind=kind, mode=mode)]
        if kind in ("min", "max"):
            at_x, at_u, counts = extremum_parts(x, idx, u, out, mode)
            num = scatter_p.bind(mul(instantiate_like(tx, x), at_x), idx, mul(instantiate_like(tu, u), at_u), kind="add", mode=mode)
            return [out], [div(num, counts)]
        if tu is not None:
            raise NotImplementedError("differentiating scatter-multiply (x.at[i].multiply(u)) with respect to "
                                      "the updates is not supported; only the operand's derivative is")
        return [out], [scatter_p.bind(tx, idx, u, kind="mul", mode=mode)]

    def bwd(ct, needed, ins, outs, *, kind, mode):
        x, idx, u = ins
        if kind == "add":
            return [ct, None, gather(ct, idx, mode) if needed[2] else None]
        if kind == "set":
            keep_x, keep_u = winners(x, idx, u, mode)
            zero = c(0, ct)
            return [select(keep_x, ct, zero) if needed[0] else None, None,
                    select(keep_u, gather(ct, idx, mode), zero) if needed[2] else None]
        if kind in ("min", "max"):
            at_x, at_u, counts = extremum_parts(x, idx, u, outs[0], mode)
            share = div(ct, counts)
            return [mul(share, at_x), None, mul(gather(share, idx, mode), at_u)]
        if needed[2]:
            raise NotImplementedError("differentiating scatter-multiply (x.at[i].multiply(u)) with respect to "
                                      "the updates is not supported; only the operand's derivative is")
        return [scatter_p.bind(ct, idx, u, kind="mul", mode=mode), None, None]
    def_jvp(scatter_p, jvp)
    def_simple_vjp(scatter_p, bwd)


@rules_for("scatter_apply")
def _scatter_apply_rules(prim, prims):
    def no(*args, **params):
        raise NotImplementedError("x.at[i].apply(f) is not differentiable (as in JAX); write the update with "
                                  "x.at[i].set(f(x[i])) instead")
    def_jvp(prim, no)
    def_vjp(prim, no)


@rules_for("dynamic_slice")
def _dynamic_slice_rules(ds_p, prims):
    dus_p = prims["dynamic_update_slice"]

    def jvp(primals, tangents, *, slice_sizes):
        x, *starts = primals
        out = ds_p.bind(x, *starts, slice_sizes=slice_sizes)
        t = tangents[0]
        return [out], [None if t is None else ds_p.bind(t, *starts, slice_sizes=slice_sizes)]

    def bwd(ct, needed, ins, outs, *, slice_sizes):
        x, *starts = ins
        return [dus_p.bind(zeros(aval_of(x).strip_weak()), ct, *starts)] + [None] * len(starts)
    def_jvp(ds_p, jvp)
    def_simple_vjp(ds_p, bwd)


@rules_for("dynamic_update_slice")
def _dynamic_update_slice_rules(dus_p, prims):
    ds_p = prims["dynamic_slice"]

    def jvp(primals, tangents):
        x, u, *starts = primals
        out = dus_p.bind(x, u, *starts)
        return [out], [dus_p.bind(instantiate_like(tangents[0], x), instantiate_like(tangents[1], u), *starts)]

    def bwd(ct, needed, ins, outs):
        x, u, *starts = ins
        ua = aval_of(u).strip_weak()
        ct_x = dus_p.bind(ct, zeros(ua), *starts) if needed[0] else None
        ct_u = ds_p.bind(ct, *starts, slice_sizes=ua.shape) if needed[1] else None
        return [ct_x, ct_u] + [None] * len(starts)
    def_jvp(dus_p, jvp)
    def_simple_vjp(dus_p, bwd)


# --------------------------------------------------------------------------- sorting

# --------------------------------------------------------------------------- control flow

@rules_for("cond")
def _cond_rules(cond_p, prims):

    def jvp(primals, tangents, *, branches):
        index, *ops = primals
        nz = _nz(tangents[1:])
        n = len(ops)

        def make(branch):
            def f(*args):
                ts = _scatter_positions(args[n:], nz, n)
                outs, touts = jvp_program(branch, [], list(args[:n]), None, ts)
                return list(outs) + [instantiate_like(t, o) for t, o in zip(touts, outs) if is_differentiable(aval_of(o).dtype)]
            return f
        res = switch(index, [make(b) for b in branches], *ops, *[tangents[1 + i] for i in nz])
        n_out = len(branches[0].outputs)
        outs, t_diff = list(res[:n_out]), iter(res[n_out:])
        touts = [next(t_diff) if is_differentiable(a.dtype) else None for a in branches[0].out_avals]
        return outs, touts

    def vjp(needed, index, *ops, branches):
        # Only the taken branch runs: its forward is recomputed inside the backward cond.
        outs = cond_p.bind(index, *ops, branches=branches)
        n = len(ops)
        need = [i for i in range(n) if needed[1 + i]]

        def bwd(cts):
            nzc = _nz(cts)

            def make(branch):
                def f(*args):
                    xs, cs = list(args[:n]), _scatter_positions(args[n:], nzc, len(cts))
                    _, _, inner = vjp_program(branch, [], xs, None, list(needed[1:]))
                    in_cts = inner(cs)[1]
                    return [instantiate_like(in_cts[i], xs[i]) for i in need]
                return f
            res = switch(index, [make(b) for b in branches], *ops, *[cts[k] for k in nzc])
            return [None] + _scatter_positions(list(res), need, n)
        return outs, bwd
    def_jvp(cond_p, jvp)
    def_vjp(cond_p, vjp)


def _split3(seq, a, b):
    return list(seq[:a]), list(seq[a:a + b]), list(seq[a + b:])


@rules_for("scan")
def _scan_rules(scan_p, prims):

    def jvp(primals, tangents, *, program, length, reverse, num_consts, num_carry, unroll=1):
        consts, carry, xs = _split3(primals, num_consts, num_carry)
        t_consts, t_carry, t_xs = _split3(tangents, num_consts, num_carry)
        diff_carry = [i for i, v in enumerate(carry) if is_differentiable(aval_of(v).dtype)]
        # Every differentiable carry gets a tangent: the body may make a zero one nonzero.
        carry_t0 = [instantiate_like(t_carry[i], carry[i]) for i in diff_carry]
        nz_x = _nz(t_xs)
        n_out = len(program.outputs)

        def body(c, x):
            vals, ts = c
            x_vals, x_ts = x
            tangents_in = (t_consts + _scatter_positions(ts, diff_carry, num_carry)
                           + _scatter_positions(x_ts, nz_x, len(xs)))
            outs, touts = jvp_program(program, [], consts + list(vals) + list(x_vals), None, tangents_in)
            new_t = [instantiate_like(touts[i], outs[i]) for i in diff_carry]
            ys = outs[num_carry:]
            y_t = [instantiate_like(touts[num_carry + j], y) for j, y in enumerate(ys) if is_differentiable(aval_of(y).dtype)]
            return (list(outs[:num_carry]), new_t), (list(ys), y_t)
        (carry_out, carry_t), (ys, ys_t) = scan(body, (list(carry), carry_t0), (list(xs), [t_xs[i] for i in nz_x]),
                                                    length=length, reverse=reverse, unroll=unroll)
        ys_t = iter(ys_t)
        y_avals = program.out_avals[num_carry:n_out]
        touts = (_scatter_positions(carry_t, diff_carry, num_carry)
                 + [next(ys_t) if is_differentiable(a.dtype) else None for a in y_avals])
        return list(carry_out) + list(ys), touts

    def vjp(needed, *ins, program, length, reverse, num_consts, num_carry, unroll=1):
        # Residuals: each iteration's input carry, stacked as extra ys. The backward
        # scan (in the opposite direction) recomputes the body from them.
        consts, carry, xs = _split3(ins, num_consts, num_carry)

        def fwd_body(c, x):
            outs = eval_program(program, [], consts + list(c) + list(x))
            return list(outs[:num_carry]), (list(outs[num_carry:]), list(c))
        carry_out, (ys, saved) = scan(fwd_body, list(carry), list(xs), length=length, reverse=reverse,
                                          unroll=unroll)
        outs = list(carry_out) + list(ys)
        diff_carry = [i for i, v in enumerate(carry) if is_differentiable(aval_of(v).dtype)]
        need_consts = [i for i in range(num_consts) if needed[i]]
        need_xs = [i for i in range(len(xs)) if needed[num_consts + num_carry + i]]
        active = ([bool(needed[i]) for i in range(num_consts)] + [i in diff_carry for i in range(num_carry)]
                  + [bool(needed[num_consts + num_carry + i]) for i in range(len(xs))])

        def bwd(cts):
            ct_carry0 = [instantiate_like(cts[i], carry[i]) for i in diff_carry]
            ct_ys = cts[num_carry:]
            nz_y = _nz(ct_ys)
            acc0 = [zeros(aval_of(consts[i]).strip_weak()) for i in need_consts]

            def body(c, x):
                ct_c, acc = c
                carry_in, x_vals, ct_y = x
                _, _, inner = vjp_program(program, [], consts + list(carry_in) + list(x_vals), None, active)
                in_cts = inner(_scatter_positions(ct_c, diff_carry, num_carry)
                               + _scatter_positions(ct_y, nz_y, len(ct_ys)))[1]
                c_cts, k_cts, x_cts = _split3(in_cts, num_consts, num_carry)
                new_acc = [add_any(a, c_cts[i]) for a, i in zip(acc, need_consts)]
                return ([instantiate_like(k_cts[i], carry_in[i]) for i in diff_carry], new_acc), \
                    [instantiate_like(x_cts[i], x_vals[i]) for i in need_xs]
            (ct_carry, ct_consts), ct_xs = scan(body, (ct_carry0, acc0), (list(saved), list(xs),
                                                                             [ct_ys[k] for k in nz_y]),
                                                    length=length, reverse=not reverse, unroll=unroll)
            res = (_scatter_positions(ct_consts, need_consts, num_consts)
                   + _scatter_positions(ct_carry, diff_carry, num_carry)
                   + _scatter_positions(list(ct_xs), need_xs, len(xs)))
            return [r if n else None for r, n in zip(res, needed)]
        return outs, bwd
    def_jvp(scan_p, jvp)
    def_vjp(scan_p, vjp)


@rules_for("while")
def _while_rules(while_p, prims):

    def jvp(primals, tangents, *, cond_program, body_program, cond_nconsts, body_nconsts):
        cc, bc, carry = _split3(primals, cond_nconsts, body_nconsts)
        _, t_bc, t_carry = _split3(tangents, cond_nconsts, body_nconsts)
        diff = [i for i, v in enumerate(carry) if is_differentiable(aval_of(v).dtype)]
        n = len(carry)

        def cond_fun(c):
            return eval_program(cond_program, [], cc + list(c[0]))[0]

        def body_fun(c):
            vals, ts = c
            outs, touts = jvp_program(body_program, [], bc + list(vals), None,
                                      t_bc + _scatter_positions(ts, diff, n))
            return list(outs), [instantiate_like(touts[i], outs[i]) for i in diff]
        vals, ts = while_loop(cond_fun, body_fun, (list(carry), [instantiate_like(t_carry[i], carry[i]) for i in diff]))
        return list(vals), _scatter_positions(ts, diff, n)

    def vjp(needed, *ins, **params):
        raise TypeError("Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
                        "traced (dynamic) bounds: the trip count is unknown. Use lax.fori_loop with static "
                        "(Python int) bounds, which becomes a scan, or lax.scan; forward mode (jvp, jacfwd) "
                        "works with while_loop.")
    def_jvp(while_p, jvp)
    def_vjp(while_p, vjp)
