"""Differentiation rules of primitives defined in modules that other parts of
the project own (control flow, indexing, sorting, linear algebra).

The primitives are looked up by name when differentiation is first used
(:func:`register_available`), so a primitive that does not exist is simply
skipped. Rules are written with ``tracejit.lax`` / ``tracejit.numpy`` calls
or ``prim.bind``, so they are themselves differentiable.
"""
from __future__ import annotations

import numpy as np

from tracejit.core.interpret import eval_program
from tracejit.core.primitive import abstract_eval_rules
from tracejit.transforms.ad import (add_any, aval_of, def_jvp, def_simple_vjp, def_vjp, instantiate, is_differentiable,
                                    jvp_program, vjp_program, zeros)
from tracejit.transforms.ad_ops import add, binary, c, convert, div, mul, neg, select, sub

_registered: set = set()
RULE_MAKERS: dict = {}
_seen_count = [-1]


def primitives_by_name() -> dict:
    return {p.name: p for p in abstract_eval_rules}


def register_available() -> None:
    """Register the rules whose primitive exists now (cheap once done)."""
    if len(_registered) == len(RULE_MAKERS) or _seen_count[0] == len(abstract_eval_rules):
        return
    _seen_count[0] = len(abstract_eval_rules)
    prims = primitives_by_name()
    for name, make in RULE_MAKERS.items():
        if name not in _registered and name in prims:
            make(prims[name], prims)
            _registered.add(name)


def _rules_for(*names):
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


def _inst(t, x):
    return instantiate(t, aval_of(x).strip_weak())


# --------------------------------------------------------------------------- indexing

_GATHER_MODE_FOR_SCATTER = {"clip": "clip", "drop": "fill"}
_SCATTER_MODE_FOR_GATHER = {"clip": "clip", "fill": "drop"}


@_rules_for("gather")
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


@_rules_for("scatter")
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
            return [out], [scatter_p.bind(_inst(tx, x), idx, _inst(tu, u), kind=kind, mode=mode)]
        if kind in ("min", "max"):
            at_x, at_u, counts = extremum_parts(x, idx, u, out, mode)
            num = scatter_p.bind(mul(_inst(tx, x), at_x), idx, mul(_inst(tu, u), at_u), kind="add", mode=mode)
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


@_rules_for("scatter_apply")
def _scatter_apply_rules(prim, prims):
    def no(*args, **params):
        raise NotImplementedError("x.at[i].apply(f) is not differentiable (as in JAX); write the update with "
                                  "x.at[i].set(f(x[i])) instead")
    def_jvp(prim, no)
    def_vjp(prim, no)


@_rules_for("dynamic_slice")
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


@_rules_for("dynamic_update_slice")
def _dynamic_update_slice_rules(dus_p, prims):
    ds_p = prims["dynamic_slice"]

    def jvp(primals, tangents):
        x, u, *starts = primals
        out = dus_p.bind(x, u, *starts)
        return [out], [dus_p.bind(_inst(tangents[0], x), _inst(tangents[1], u), *starts)]

    def bwd(ct, needed, ins, outs):
        x, u, *starts = ins
        ua = aval_of(u).strip_weak()
        ct_x = dus_p.bind(ct, zeros(ua), *starts) if needed[0] else None
        ct_u = ds_p.bind(ct, *starts, slice_sizes=ua.shape) if needed[1] else None
        return [ct_x, ct_u] + [None] * len(starts)
    def_jvp(dus_p, jvp)
    def_simple_vjp(dus_p, bwd)


# --------------------------------------------------------------------------- sorting

@_rules_for("sort")
def _sort_rules(sort_p, prims):
    iota_p = prims["iota"]

    def jvp(primals, tangents, *, dimension, is_stable, num_keys):
        import tracejit.numpy as jnp
        shape = aval_of(primals[0]).shape
        perm_in = iota_p.bind(dtype=np.dtype(np.int64), shape=shape, dimension=dimension)
        outs = sort_p.bind(*primals, perm_in, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
        perm = outs[-1]
        touts = [None if t is None else jnp.take_along_axis(t, perm, axis=dimension) for t in tangents]
        return outs[:-1], touts
    def_jvp(sort_p, jvp)  # reverse mode transposes the gather (vjp_via_jvp)


# --------------------------------------------------------------------------- control flow

@_rules_for("cond")
def _cond_rules(cond_p, prims):
    from tracejit import lax

    def jvp(primals, tangents, *, branches):
        index, *ops = primals
        nz = _nz(tangents[1:])
        n = len(ops)

        def make(branch):
            def f(*args):
                ts = _scatter_positions(args[n:], nz, n)
                outs, touts = jvp_program(branch, [], list(args[:n]), None, ts)
                return list(outs) + [_inst(t, o) for t, o in zip(touts, outs) if is_differentiable(aval_of(o).dtype)]
            return f
        res = lax.switch(index, [make(b) for b in branches], *ops, *[tangents[1 + i] for i in nz])
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
                    return [_inst(in_cts[i], xs[i]) for i in need]
                return f
            res = lax.switch(index, [make(b) for b in branches], *ops, *[cts[k] for k in nzc])
            return [None] + _scatter_positions(list(res), need, n)
        return outs, bwd
    def_jvp(cond_p, jvp)
    def_vjp(cond_p, vjp)


def _split3(seq, a, b):
    return list(seq[:a]), list(seq[a:a + b]), list(seq[a + b:])


@_rules_for("scan")
def _scan_rules(scan_p, prims):
    from tracejit import lax

    def jvp(primals, tangents, *, program, length, reverse, num_consts, num_carry, unroll=1):
        consts, carry, xs = _split3(primals, num_consts, num_carry)
        t_consts, t_carry, t_xs = _split3(tangents, num_consts, num_carry)
        diff_carry = [i for i, v in enumerate(carry) if is_differentiable(aval_of(v).dtype)]
        # Every differentiable carry gets a tangent: the body may make a zero one nonzero.
        carry_t0 = [_inst(t_carry[i], carry[i]) for i in diff_carry]
        nz_x = _nz(t_xs)
        n_out = len(program.outputs)

        def body(c, x):
            vals, ts = c
            x_vals, x_ts = x
            tangents_in = (t_consts + _scatter_positions(ts, diff_carry, num_carry)
                           + _scatter_positions(x_ts, nz_x, len(xs)))
            outs, touts = jvp_program(program, [], consts + list(vals) + list(x_vals), None, tangents_in)
            new_t = [_inst(touts[i], outs[i]) for i in diff_carry]
            ys = outs[num_carry:]
            y_t = [_inst(touts[num_carry + j], y) for j, y in enumerate(ys) if is_differentiable(aval_of(y).dtype)]
            return (list(outs[:num_carry]), new_t), (list(ys), y_t)
        (carry_out, carry_t), (ys, ys_t) = lax.scan(body, (list(carry), carry_t0), (list(xs), [t_xs[i] for i in nz_x]),
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
        carry_out, (ys, saved) = lax.scan(fwd_body, list(carry), list(xs), length=length, reverse=reverse,
                                          unroll=unroll)
        outs = list(carry_out) + list(ys)
        diff_carry = [i for i, v in enumerate(carry) if is_differentiable(aval_of(v).dtype)]
        need_consts = [i for i in range(num_consts) if needed[i]]
        need_xs = [i for i in range(len(xs)) if needed[num_consts + num_carry + i]]
        active = ([bool(needed[i]) for i in range(num_consts)] + [i in diff_carry for i in range(num_carry)]
                  + [bool(needed[num_consts + num_carry + i]) for i in range(len(xs))])

        def bwd(cts):
            ct_carry0 = [_inst(cts[i], carry[i]) for i in diff_carry]
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
                return ([_inst(k_cts[i], carry_in[i]) for i in diff_carry], new_acc), \
                    [_inst(x_cts[i], x_vals[i]) for i in need_xs]
            (ct_carry, ct_consts), ct_xs = lax.scan(body, (ct_carry0, acc0), (list(saved), list(xs),
                                                                             [ct_ys[k] for k in nz_y]),
                                                    length=length, reverse=not reverse, unroll=unroll)
            res = (_scatter_positions(ct_consts, need_consts, num_consts)
                   + _scatter_positions(ct_carry, diff_carry, num_carry)
                   + _scatter_positions(list(ct_xs), need_xs, len(xs)))
            return [r if n else None for r, n in zip(res, needed)]
        return outs, bwd
    def_jvp(scan_p, jvp)
    def_vjp(scan_p, vjp)


@_rules_for("while")
def _while_rules(while_p, prims):
    from tracejit import lax

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
            return list(outs), [_inst(touts[i], outs[i]) for i in diff]
        vals, ts = lax.while_loop(cond_fun, body_fun, (list(carry), [_inst(t_carry[i], carry[i]) for i in diff]))
        return list(vals), _scatter_positions(ts, diff, n)

    def vjp(needed, *ins, **params):
        raise TypeError("Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
                        "traced (dynamic) bounds: the trip count is unknown. Use lax.fori_loop with static "
                        "(Python int) bounds, which becomes a scan, or lax.scan; forward mode (jvp, jacfwd) "
                        "works with while_loop.")
    def_jvp(while_p, jvp)
    def_vjp(while_p, vjp)


# --------------------------------------------------------------------------- linear algebra
#
# JVP rules (reverse mode transposes them). Complex inputs follow JAX's rules in
# jax/_src/lax/linalg.py and jax/_src/numpy/linalg.py: factorizations of
# Hermitian matrices use conjugate transposes, and cholesky/eigh differentiate
# along the Hermitian part (t + t^H) / 2 of the direction (JAX symmetrizes
# their input).

def _mT(x):
    import tracejit.numpy as jnp
    return jnp.swapaxes(x, -1, -2)


def _H(x):
    """Conjugate transpose of the last two axes."""
    import tracejit.numpy as jnp
    t = _mT(x)
    return jnp.conj(t) if aval_of(t).dtype.kind == "c" else t


def _matmul(a, b):
    import tracejit.numpy as jnp
    return jnp.matmul(a, b)


def _symmetrized(t):
    # The input is assumed Hermitian (as in JAX): differentiate along (t + t^H) / 2.
    return mul(add(t, _H(t)), c(0.5, t))


def _real_part(x):
    """``real(x)`` kept in ``x``'s dtype."""
    import tracejit.numpy as jnp
    return convert(jnp.real(x), aval_of(x).dtype) if aval_of(x).dtype.kind == "c" else x


def _right_solve(a, b, solve_p):
    """``b @ inv(a)``."""
    return _mT(solve_p.bind(_mT(a), _mT(b)))


@_rules_for("solve")
def _solve_rules(solve_p, prims):
    def jvp(primals, tangents):
        (a, b), (ta, tb) = primals, tangents
        x = solve_p.bind(a, b)
        rhs = tb
        if ta is not None:
            rhs = sub(_inst(tb, b), _matmul(ta, x))
        return [x], [solve_p.bind(a, rhs)]

    def bwd(ct, needed, ins, outs):
        a, b = ins
        ct_b = solve_p.bind(_mT(a), ct)
        ct_a = neg(_matmul(ct_b, _mT(outs[0]))) if needed[0] else None
        return [ct_a, ct_b if needed[1] else None]
    def_jvp(solve_p, jvp)
    def_simple_vjp(solve_p, bwd)


@_rules_for("inv")
def _inv_rules(inv_p, prims):
    def jvp(primals, tangents):
        (a,), (t,) = primals, tangents
        y = inv_p.bind(a)
        return [y], [neg(_matmul(_matmul(y, t), y))]

    def bwd(ct, needed, ins, outs):
        yt = _mT(outs[0])
        return [neg(_matmul(_matmul(yt, ct), yt))]
    def_jvp(inv_p, jvp)
    def_simple_vjp(inv_p, bwd)


@_rules_for("cholesky")
def _cholesky_rules(chol_p, prims):
    solve_p = prims["solve"]

    def jvp(primals, tangents, *, upper):
        # L' = L phi(L^-1 S L^-H), phi = lower triangle with the diagonal halved (JAX's rule).
        (a,), (t,) = primals, tangents
        out = chol_p.bind(a, upper=upper)
        low = _H(out) if upper else out
        n = aval_of(a).shape[-1]
        x = solve_p.bind(low, _H(solve_p.bind(low, _symmetrized(t))))
        phi = x * (np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)).astype(aval_of(a).dtype)
        t_low = _matmul(low, phi)
        return [out], [_H(t_low) if upper else t_low]
    def_jvp(chol_p, jvp)


def _adjugate(a, det_p, svd_p):
    """``adj(a)`` (``det(a) inv(a)`` when invertible), well defined for singular ``a``:
    with ``a = U S V^H``, ``adj(a) = det(U) det(V^H) V diag(prod_{j != i} s_j) U^H``."""
    import tracejit.numpy as jnp
    u, s, vh = svd_p.bind(a, full_matrices=False, compute_uv=True, hermitian=False)
    n = aval_of(s).shape[-1]
    ones = jnp.ones(aval_of(s).shape[:-1] + (1,), aval_of(s).dtype)
    left = jnp.concatenate([ones, jnp.cumprod(s, axis=-1)[..., :n - 1]], axis=-1)
    right = jnp.flip(jnp.concatenate([ones, jnp.cumprod(jnp.flip(s, -1), axis=-1)[..., :n - 1]], axis=-1), -1)
    others = convert(left * right, aval_of(a).dtype)
    phase = det_p.bind(u) * det_p.bind(vh)
    return jnp.expand_dims(phase, (-2, -1)) * _matmul(_H(vh) * jnp.expand_dims(others, -2), _H(u))


@_rules_for("det")
def _det_rules(det_p, prims):
    svd_p = prims["svd"]

    def jvp(primals, tangents):
        # det' = tr(adj(A) A') (JAX's cofactor rule: defined for singular A too).
        import tracejit.numpy as jnp
        (a,), (t,) = primals, tangents
        d = det_p.bind(a)
        if aval_of(a).shape[-1] == 0:
            return [d], [zeros(aval_of(d))]
        return [d], [jnp.trace(_matmul(_adjugate(a, det_p, svd_p), t), axis1=-2, axis2=-1)]
    def_jvp(det_p, jvp)


@_rules_for("slogdet")
def _slogdet_rules(slogdet_p, prims):
    solve_p = prims["solve"]

    def jvp(primals, tangents):
        import tracejit.numpy as jnp
        (a,), (t,) = primals, tangents
        sign, logdet = slogdet_p.bind(a)
        d = jnp.trace(solve_p.bind(a, t), axis1=-2, axis2=-1)
        if aval_of(a).dtype.kind == "c":
            # JAX: sign' = i Im(tr(A^-1 A')) sign, logabsdet' = Re(tr(A^-1 A'))
            return [sign, logdet], [mul(sub(d, _real_part(d)), sign), jnp.real(d)]
        return [sign, logdet], [None, d]
    def_jvp(slogdet_p, jvp)


@_rules_for("eigh")
def _eigh_rules(eigh_p, prims):
    def jvp(primals, tangents, *, UPLO, compute_v):
        import tracejit.numpy as jnp
        (a,), (t,) = primals, tangents
        w, v = eigh_p.bind(a, UPLO=UPLO, compute_v=True)
        n = aval_of(a).shape[-1]
        dtype = aval_of(a).dtype
        vh_t_v = _matmul(_H(v), _matmul(_symmetrized(t), v))
        dw = jnp.real(jnp.diagonal(vh_t_v, axis1=-2, axis2=-1))
        eye = np.eye(n, dtype=aval_of(w).dtype)
        gap = jnp.expand_dims(w, -2) - jnp.expand_dims(w, -1)   # w_j - w_i
        f = convert((1 - eye) / (gap + eye), dtype)
        dv = _matmul(v, f * vh_t_v)
        return ([w, v], [dw, dv]) if compute_v else ([w], [dw])
    def_jvp(eigh_p, jvp)


@_rules_for("qr")
def _qr_rules(qr_p, prims):
    solve_p = prims["solve"]

    def jvp(primals, tangents, *, mode):
        # JAX's rule (j-towns.github.io/papers/qr-derivative.pdf), for m >= n.
        import tracejit.numpy as jnp
        (a,), (t,) = primals, tangents
        outs = qr_p.bind(a, mode=mode)
        *_, m, n = aval_of(a).shape
        if m < n or (mode == "complete" and m != n):
            raise NotImplementedError("Unimplemented case of QR decomposition derivative (as in JAX: "
                                      "it needs m >= n, and m == n for mode='complete')")
        q, r = outs if mode != "r" else qr_p.bind(a, mode="reduced")
        dx_rinv = _right_solve(r, t, solve_p)
        qt_dx_rinv = _matmul(_H(q), dx_rinv)
        low = jnp.tril(qt_dx_rinv, -1)
        do = sub(low, _H(low))   # skew-Hermitian
        if aval_of(a).dtype.kind == "c":
            eye = np.eye(n, dtype=aval_of(a).dtype)
            do = add(do, eye * sub(qt_dx_rinv, _real_part(qt_dx_rinv)))
        dq = add(_matmul(q, sub(do, qt_dx_rinv)), dx_rinv)
        dr = _matmul(sub(qt_dx_rinv, do), r)
        return outs, ([dr] if mode == "r" else [dq, dr])
    def_jvp(qr_p, jvp)


@_rules_for("svd")
def _svd_rules(svd_p, prims):
    def jvp(primals, tangents, *, full_matrices, compute_uv, hermitian):
        # JAX's rule (jax/_src/lax/linalg.py, _svd_jvp_rule).
        import tracejit.numpy as jnp
        (a,), (t,) = primals, tangents
        outs = svd_p.bind(a, full_matrices=full_matrices, compute_uv=compute_uv, hermitian=hermitian)
        *_, m, n = aval_of(a).shape
        if compute_uv and full_matrices and m != n:
            raise NotImplementedError("Singular value decomposition JVP not implemented for full matrices "
                                      "(as in JAX); use full_matrices=False")
        u, s, vt = svd_p.bind(a, full_matrices=False, compute_uv=True, hermitian=hermitian)
        dtype = aval_of(a).dtype
        ut, v = _H(u), _H(vt)
        s_dim = jnp.expand_dims(s, -2)
        ds_mat = _matmul(_matmul(ut, t), v)
        ds = jnp.real(jnp.diagonal(ds_mat, axis1=-2, axis2=-1))
        if not compute_uv:
            return outs, [ds]
        k = aval_of(s).shape[-1]
        s_t = _mT(s_dim)
        s_diffs = (s_dim + s_t) * (s_dim - s_t)
        eye = np.eye(k, dtype=aval_of(s).dtype)
        f = convert(1 / (s_diffs + eye) - eye, dtype)
        s_c = convert(s_dim, dtype)
        dss = s_c * ds_mat
        sds = _mT(s_c) * ds_mat
        s_zeros = convert(binary("eq", s, c(0, s)), aval_of(s).dtype)
        s_inv = 1 / (s + s_zeros) - s_zeros
        s_inv_mat = convert(jnp.expand_dims(s_inv, -1) * eye, dtype)
        du_dv_diag = mul(c(0.5, ds_mat), sub(ds_mat, _H(ds_mat))) * s_inv_mat
        du = _matmul(u, add(f * add(dss, _H(dss)), du_dv_diag))
        dv = _matmul(v, f * add(sds, _H(sds)))
        if m > n:
            dav = _matmul(t, v)
            du = add(du, jnp.divide(sub(dav, _matmul(u, _matmul(ut, dav))), s_c))
        if n > m:
            dahu = _matmul(_H(t), u)
            dv = add(dv, jnp.divide(sub(dahu, _matmul(v, _matmul(vt, dahu))), s_c))
        return outs, [du, ds, _H(dv)]
    def_jvp(svd_p, jvp)


def _pinv_tangent(a, a_dot, p):
    """JAX's pinv JVP (Golub & Pereyra 1973):
    ``-p a' p + s - s a p + t - p a t`` with ``s = p p^H a'^H``, ``t = a'^H p^H p``."""
    m, n = aval_of(a).shape[-2:]
    mm = _matmul
    if m >= n:
        s = mm(mm(p, _H(p)), _H(a_dot))
        t = mm(mm(_H(a_dot), _H(p)), p)
        terms = [neg(mm(mm(p, a_dot), p)), s, neg(mm(mm(s, a), p)), t, neg(mm(mm(p, a), t))]
    else:
        s = mm(p, mm(_H(p), _H(a_dot)))
        t = mm(_H(a_dot), mm(_H(p), p))
        terms = [neg(mm(p, mm(a_dot, p))), s, neg(mm(s, mm(a, p))), t, neg(mm(p, mm(a, t)))]
    out = terms[0]
    for term in terms[1:]:
        out = add(out, term)
    return out


@_rules_for("pinv")
def _pinv_rules(pinv_p, prims):
    def jvp(primals, tangents, *, rcond, hermitian):
        (a,), (t,) = primals, tangents
        p = pinv_p.bind(a, rcond=rcond, hermitian=hermitian)
        if hermitian:
            # svd(..., hermitian=True) reads the matrix as Hermitian; the JVP must match (as in JAX).
            a, t = _symmetrized(a), _symmetrized(t)
        return [p], [_pinv_tangent(a, t, p)]
    def_jvp(pinv_p, jvp)


@_rules_for("lstsq")
def _lstsq_rules(lstsq_p, prims):
    pinv_p, svd_p = prims["pinv"], prims["svd"]

    def jvp(primals, tangents, *, rcond):
        # x = pinv(a) b (the minimum-norm solution), as JAX's SVD-based lstsq differentiates.
        import tracejit.numpy as jnp
        (a, b), (ta, tb) = primals, tangents
        outs = lstsq_p.bind(a, b, rcond=rcond)
        x, resid, rank, s = outs
        m, n = aval_of(a).shape
        # NumPy's lstsq cutoff is rcond * max(s) (rcond None: eps * max(m, n)).
        cut = float(np.finfo(aval_of(s).dtype).eps) * max(m, n) if rcond is None else rcond
        if rcond is not None and rcond < 0:
            cut = float(np.finfo(aval_of(s).dtype).eps)
        p = pinv_p.bind(a, rcond=cut, hermitian=False)
        ta, tb = _inst(ta, a), _inst(tb, b)
        dx = add(_matmul(_pinv_tangent(a, ta, p), b), _matmul(p, tb))
        r = sub(b, _matmul(a, x))
        dr = sub(sub(tb, _matmul(ta, x)), _matmul(a, dx))
        dres = mul(c(2, resid), jnp.sum(jnp.real(mul(jnp.conj(r), dr)), axis=0))
        ds = _svd_ds(svd_p, a, ta)
        return outs, [dx, dres, None, ds]
    def_jvp(lstsq_p, jvp)


def _svd_ds(svd_p, a, t):
    import tracejit.numpy as jnp
    u, s, vt = svd_p.bind(a, full_matrices=False, compute_uv=True, hermitian=False)
    return jnp.real(jnp.diagonal(_matmul(_matmul(_H(u), t), _H(vt)), axis1=-2, axis2=-1))
