"""``linear_call``: a function linear in some arguments, with a user-given transpose
(``jax.custom_derivatives.linear_call``).

``linear_call(fun, fun_transpose, residual_args, linear_args)`` is ``fun(residual_args,
linear_args)``; reverse mode sends the output cotangent through ``fun_transpose(residual_args,
cotangent)`` instead of transposing ``fun``'s operations (the transpose is again a ``linear_call``,
with ``fun`` as its transpose, so higher orders work). The primitive holds ``fun`` traced to a
program, which ``jit`` compiles inline like any call. Forward mode is ``fun`` itself on the
tangents (it is linear in them); ``vmap`` maps both functions. The residual arguments cannot be
differentiated: ``fun`` need not be linear in them, and no rule for them is given.
"""
from __future__ import annotations

from tracejit.core.primitive import batching_rules
from tracejit.core.pytree import tree_flatten, tree_leaves, tree_unflatten
from tracejit.core.trace import is_eager, trace_flat
from tracejit.core.values import leaf_aval
from tracejit.transforms import ad, batching
from tracejit.transforms.ad import aval_of, instantiate
from tracejit.transforms.ad_custom import _call_primitive
from tracejit.transforms.api_vmap import vmap

linear_call_p = _call_primitive("linear_call")


def linear_call(fun, fun_transpose, residual_args, linear_args):
    """Call ``fun(residual_args, linear_args)``, linear in ``linear_args``, whose transpose is
    ``fun_transpose(residual_args, cotangent)`` (``jax.custom_derivatives.linear_call``).

    Parameters
    ----------
    fun : callable
        ``fun(r, a) -> b``, linear in ``a`` (a pytree of arrays).
    fun_transpose : callable
        ``fun_transpose(r, b) -> a``, the transpose of ``fun`` in its linear argument: it must
        return a pytree of ``linear_args``' structure.
    residual_args, linear_args : pytrees of arrays

    Returns
    -------
    The pytree ``fun(residual_args, linear_args)``.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.transforms.api_ad import grad
    >>> def f(r, x):
    ...     return x / r
    >>> def t(r, ct):                      # deliberately not f's true transpose, to show it is used
    ...     return 10 * ct / r
    >>> float(grad(lambda x: linear_call(f, t, 2.0, x))(1.0))
    5.0
    """
    if is_eager():
        return fun(residual_args, linear_args)
    res_leaves, res_tree = tree_flatten(residual_args)
    lin_leaves, lin_tree = tree_flatten(linear_args)
    n_res = len(res_leaves)
    box = {}

    def flat(*xs):
        out = fun(tree_unflatten(res_tree, xs[:n_res]), tree_unflatten(lin_tree, xs[n_res:]))
        leaves, box["tree"] = tree_flatten(out)
        return leaves
    leaves = res_leaves + lin_leaves
    avals = [leaf_aval(x, "an argument of linear_call") for x in leaves]
    program = trace_flat(flat, avals, getattr(fun, "__name__", "linear_call"), eager_args=leaves,
                         effects_now=False)
    outs = linear_call_p.bind(*program.const_values, *leaves, program=program,
                              num_consts=len(program.const_values), num_res=n_res, fun=fun,
                              fun_transpose=fun_transpose, trees=(res_tree, lin_tree, box["tree"]),
                              name="linear_call")
    return tree_unflatten(box["tree"], outs)


def _split(ins, num_consts, num_res):
    return ins[num_consts:num_consts + num_res], ins[num_consts + num_res:]


def _residuals_not_differentiable():
    return TypeError("linear_call: its residual arguments cannot be differentiated (the function need "
                     "not be linear in them); pass what is differentiated as a linear argument")


def _linear_call_vjp(needed, *ins, program, num_consts, num_res, fun, fun_transpose, trees, name):
    if any(needed[:num_consts + num_res]):
        raise _residuals_not_differentiable()
    params = dict(program=program, num_consts=num_consts, num_res=num_res, fun=fun,
                  fun_transpose=fun_transpose, trees=trees, name=name)
    outs = linear_call_p.bind(*ins, **params)
    res, lin = _split(ins, num_consts, num_res)
    res_tree, lin_tree, out_tree = trees

    def backward(cts):
        cts = [instantiate(ct, aval_of(o).strip_weak()) for ct, o in zip(cts, outs)]
        ct_lin = linear_call(fun_transpose, fun, tree_unflatten(res_tree, res), tree_unflatten(out_tree, cts))
        leaves, tree = tree_flatten(ct_lin)
        if tree != lin_tree:
            raise TypeError(f"linear_call: the transpose returned structure {tree}, but the linear inputs "
                            f"have structure {lin_tree}")
        for x, ct in zip(lin, leaves):
            if aval_of(ct).shape != aval_of(x).shape:
                raise TypeError(f"linear_call: the transpose returned shape {aval_of(ct).shape} for a linear "
                                f"input of shape {aval_of(x).shape}")
        return [None] * (num_consts + num_res) + leaves
    return list(outs), backward


def _linear_call_jvp(primals, tangents, *, num_consts, num_res, **params):
    if any(t is not None for t in tangents[:num_consts + num_res]):
        raise _residuals_not_differentiable()
    outs = linear_call_p.bind(*primals, num_consts=num_consts, num_res=num_res, **params)
    lin_tangents = tangents[num_consts + num_res:]
    if all(t is None for t in lin_tangents):
        return list(outs), [None] * len(outs)
    lin = primals[num_consts + num_res:]
    ts = [instantiate(t, aval_of(x).strip_weak()) for t, x in zip(lin_tangents, lin)]
    touts = linear_call_p.bind(*primals[:num_consts + num_res], *ts, num_consts=num_consts, num_res=num_res,
                               **params)
    return list(outs), list(touts)


def _linear_call_batch(args, dims, size, *, num_consts, num_res, fun, fun_transpose, trees, **_):
    # The user's functions close over what the program holds as consts: both are mapped anew.
    res_tree, lin_tree, _ = trees
    ins = [batching.with_batch(x, d, size) for x, d in zip(args[num_consts:], dims[num_consts:])]
    res, lin = tree_unflatten(res_tree, ins[:num_res]), tree_unflatten(lin_tree, ins[num_res:])
    outs = tree_leaves(linear_call(vmap(fun), vmap(fun_transpose), res, lin))
    return outs, [0] * len(outs)


ad.def_vjp(linear_call_p, _linear_call_vjp)
ad.def_jvp(linear_call_p, _linear_call_jvp)
batching_rules[linear_call_p] = _linear_call_batch

__all__ = ["linear_call", "linear_call_p"]
