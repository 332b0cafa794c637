"""User-defined derivatives (``custom_vjp``, ``custom_jvp``) and rematerialization
(``checkpoint`` / ``remat``).

Each is a call-like primitive holding the traced primal Program (so ``jit``
without differentiation runs the primal: the impl interprets it and the
compiler inlines it through ``decomposition_rules``) plus the user's rules as
Python callables in its params; the differentiation rules call them.
"""
from __future__ import annotations

import functools
import inspect
import operator

import numpy as np

from tracejit.core.interpret import eval_program, interpret
from tracejit.core.primitive import Primitive, batching_rules, decomposition_rules, def_rules
from tracejit.core.pytree import tree_flatten, tree_unflatten
from tracejit.core.trace import is_eager, trace_flat
from tracejit.core.tracer import Tracer
from tracejit.core.values import leaf_aval
from tracejit.transforms import ad
from tracejit.transforms import batching
from tracejit.transforms.ad import aval_of, instantiate_or_float0, is_differentiable
from tracejit.transforms.symbolic_zeros import CustomVJPPrimal, SymbolicZero, tangent_aval, to_none
from tracejit.transforms.api_vmap import vmap


def _call_abstract_eval(*in_avals, program, num_consts, **_):
    return program.out_avals


def _call_impl(*args, program, num_consts, **_):
    return interpret(program, args[:num_consts], args[num_consts:])


def _call_decomposition(*args, program, num_consts, **_):
    return eval_program(program, args[:num_consts], args[num_consts:])


def _call_primitive(name):
    prim = Primitive(name, multiple_results=True, pp_params=lambda p: {"name": p["name"], "program": p["program"]})
    def_rules(prim, abstract_eval=_call_abstract_eval, impl=_call_impl)
    decomposition_rules[prim] = _call_decomposition
    return prim


custom_vjp_call_p = _call_primitive("custom_vjp_call")
custom_jvp_call_p = _call_primitive("custom_jvp_call")
remat_p = _call_primitive("checkpoint")


# --------------------------------------------------------------------------- shared plumbing

def _leaf_aval(leaf):
    return leaf_aval(leaf, "an argument of a custom-derivative function")


def _positional(fun, args, kwargs):
    if not kwargs:
        return tuple(args)
    bound = inspect.signature(fun).bind(*args, **kwargs)
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(f"{getattr(fun, '__name__', 'function')}: keyword-only arguments are not supported by "
                        "custom_vjp / custom_jvp functions; pass them positionally")
    return tuple(bound.args)


class _Split:
    """Arguments split into the differentiated ones (flattened) and nondiff_argnums."""

    def __init__(self, args, nondiff_argnums):
        self.n = len(args)
        self.nondiff = {i % self.n: args[i] for i in nondiff_argnums} if self.n else {}
        self.diff_idx = [i for i in range(self.n) if i not in self.nondiff]
        self.leaves, self.in_tree = tree_flatten(tuple(args[i] for i in self.diff_idx))
        self.in_avals = [_leaf_aval(x) for x in self.leaves]
        self.arg_trees = [tree_flatten(args[i])[1] for i in self.diff_idx]

    def full_args(self, diff_leaves):
        diff = iter(tree_unflatten(self.in_tree, list(diff_leaves)))
        return [self.nondiff[i] if i in self.nondiff else next(diff) for i in range(self.n)]

    def diff_args(self, diff_leaves):
        return tuple(tree_unflatten(self.in_tree, list(diff_leaves)))

    def nondiff_args(self):
        return [self.nondiff[i] for i in sorted(self.nondiff)]


def _trace_primal(fun, split: _Split, name):
    box = {}

    def primal_flat(*xs):
        leaves, box["tree"] = tree_flatten(fun(*split.full_args(xs)))
        return leaves
    # Under an eager transformation the primal sees concrete values (it may branch on them). Its debug
    # callbacks are recorded, not run: under differentiation the rules run instead of the primal.
    program = trace_flat(primal_flat, split.in_avals, name, eager_args=split.leaves, effects_now=False)
    return program, box["tree"]


def _check_values(what, name, values, avals):
    """Check user-returned leaves against ``avals``; converts Python scalars."""
    out = []
    for v, a in zip(values, avals):
        if v is None:
            out.append(None)
            continue
        va = aval_of(v if not isinstance(v, (list, tuple)) else np.asarray(v))
        if va.shape != a.shape:
            raise ValueError(f"{name}: {what} has shape {va.shape} where shape {a.shape} was expected")
        if is_differentiable(a.dtype) and va.dtype != a.dtype:
            if not va.weak_type:
                raise TypeError(f"{name}: {what} has dtype {va.dtype.name} where {a.dtype.name} was expected")
            v = np.asarray(v, a.dtype) if not hasattr(v, "aval") else v.astype(a.dtype)
        out.append(v)
    return out


def _closed_over_error(kind, name):
    return TypeError(f"{kind} function {name} closes over a traced value that is being differentiated; "
                     "pass that value as an explicit argument instead")


# --------------------------------------------------------------------------- custom_vjp

class custom_vjp:
    """A function with a user-defined reverse-mode derivative (``jax.custom_vjp``).

    Define ``fwd(*args) -> (out, residuals)`` and ``bwd(*nondiff_args,
    residuals, out_cotangent) -> tuple of cotangents`` (one per
    differentiated argument, ``None`` for zero) and register them with
    :meth:`defvjp`. Forward-mode differentiation of such a function raises
    TypeError, as in JAX.

    Examples
    --------
    >>> import numpy as np
    >>> @custom_vjp
    ... def clip_gradient(x):
    ...     return x
    >>> clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (np.clip(g, -1, 1),))
    >>> from tracejit.transforms.api_ad import grad
    >>> float(grad(lambda x: 5 * clip_gradient(x))(2.0))
    1.0
    """

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(operator.index(i) for i in nondiff_argnums)
        self.fwd = self.bwd = None
        self.symbolic_zeros = False

    def defvjp(self, fwd, bwd, symbolic_zeros=False):
        """Register the forward rule (primal output + residuals) and the backward rule.

        With ``symbolic_zeros=True`` the forward rule receives each differentiable argument leaf as
        a :class:`~tracejit.custom_derivatives.CustomVJPPrimal` (``value``, ``perturbed``), and the
        backward rule a :class:`~tracejit.custom_derivatives.SymbolicZero` for each output whose
        cotangent is zero; it may return ``None`` or a ``SymbolicZero`` for a zero cotangent.
        """
        self.fwd, self.bwd, self.symbolic_zeros = fwd, bwd, bool(symbolic_zeros)

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "function")
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        args = _positional(self.fun, args, kwargs)
        if is_eager():
            return self.fun(*args)
        split = _Split(args, self.nondiff_argnums)
        program, out_tree = _trace_primal(self.fun, split, name)
        user_fwd, user_bwd, symbolic = self.fwd, self.bwd, self.symbolic_zeros

        def fwd(xs, perturbed):
            if symbolic:
                xs = [CustomVJPPrimal(x, bool(p)) for x, p in zip(xs, perturbed)]
            res = user_fwd(*split.full_args(xs))
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise TypeError(f"Custom VJP fwd rule {getattr(user_fwd, '__name__', 'fwd')} must produce a pair "
                                "(list or tuple of length two) of primal outputs and residuals")
            out, residuals = res
            leaves, tree = tree_flatten(out)
            if tree != out_tree:
                raise TypeError(f"Custom VJP fwd rule of {name} must produce primal outputs with the same "
                                f"pytree structure as the primal function: got {tree}, expected {out_tree}")
            return _check_values("fwd rule output", name, leaves, program.out_avals), residuals

        def bwd(residuals, ct_leaves):
            if symbolic:
                ct_leaves = [SymbolicZero(tangent_aval(a)) if ct is None else ct
                             for ct, a in zip(ct_leaves, program.out_avals)]
            else:
                ct_leaves = [instantiate_or_float0(ct, a) for ct, a in zip(ct_leaves, program.out_avals)]
            cts = user_bwd(*split.nondiff_args(), residuals, tree_unflatten(out_tree, ct_leaves))
            if not isinstance(cts, (tuple, list)) or len(cts) != len(split.diff_idx):
                raise TypeError(f"Custom VJP bwd rule of {name} must produce a tuple of length equal to the "
                                f"number of differentiated arguments ({len(split.diff_idx)}), got "
                                f"{type(cts).__name__} of length {len(cts) if isinstance(cts, (tuple, list)) else '-'}")
            flat = []
            for ct, tree in zip(cts, split.arg_trees):
                if ct is None:
                    flat.extend([None] * tree.num_leaves)
                    continue
                leaves, ct_tree = tree_flatten(ct, is_leaf=lambda x: x is None or isinstance(x, SymbolicZero))
                if len(leaves) != tree.num_leaves:
                    raise TypeError(f"Custom VJP bwd rule of {name} returned a cotangent with structure "
                                    f"{ct_tree} for an argument with structure {tree}")
                flat.extend(map(to_none, leaves))
            return _check_values("bwd rule cotangent", name, flat, split.in_avals)

        outs = custom_vjp_call_p.bind(*program.const_values, *split.leaves, program=program,
                                      num_consts=len(program.const_values), fwd=fwd, bwd=bwd, name=name)
        return tree_unflatten(out_tree, outs)


def _custom_vjp_vjp(needed, *ins, program, num_consts, fwd, bwd, name):
    if any(needed[:num_consts]):
        raise _closed_over_error("custom_vjp", name)
    outs, residuals = fwd(ins[num_consts:], needed[num_consts:])

    def backward(cts):
        return [None] * num_consts + list(bwd(residuals, list(cts)))
    return list(outs), backward


def _custom_vjp_jvp(primals, tangents, *, name, **_):
    raise TypeError(f"can't apply forward-mode autodiff (jvp) to a custom_vjp function ({name}); use "
                    "custom_jvp, or reverse mode (grad / vjp / jacrev)")


ad.def_vjp(custom_vjp_call_p, _custom_vjp_vjp)
ad.def_jvp(custom_vjp_call_p, _custom_vjp_jvp)


# --------------------------------------------------------------------------- custom_jvp

class custom_jvp:
    """A function with a user-defined forward-mode derivative (``jax.custom_jvp``).

    Register ``jvp(*nondiff_args, primals, tangents) -> (primal_out,
    tangent_out)`` with :meth:`defjvp` (or per-argument rules with
    :meth:`defjvps`). Reverse mode transposes the (linear) custom JVP.

    Examples
    --------
    >>> import numpy as np
    >>> @custom_jvp
    ... def log1pexp(x):
    ...     return np.log(1. + np.exp(x))
    >>> @log1pexp.defjvp
    ... def log1pexp_jvp(primals, tangents):
    ...     x, = primals; t, = tangents
    ...     return log1pexp(x), t * (1 - 1 / (1 + np.exp(x)))
    >>> from tracejit.transforms.api_ad import grad
    >>> grad(log1pexp)(100.0)
    Array(1.)
    """

    # Private (tracejit's own rules): the JVP rule receives None, not instantiated zeros, for the
    # tangents of arguments that are not differentiated, so it can leave their terms out (an
    # instantiated zero tangent times an infinite partial derivative would be NaN).
    _none_for_zero_tangents = False

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(operator.index(i) for i in nondiff_argnums)
        self.jvp = None
        self.symbolic_zeros = False

    def defjvp(self, jvp, symbolic_zeros=False):
        """Register ``jvp(primals, tangents) -> (primal_out, tangent_out)``; returns ``jvp``.

        With ``symbolic_zeros=True`` the tangent of an argument that is not differentiated arrives
        as a :class:`~tracejit.custom_derivatives.SymbolicZero` (not an array of zeros), and the
        rule may return ``SymbolicZero`` tangents for outputs whose tangent is zero.
        """
        self.jvp, self.symbolic_zeros = jvp, bool(symbolic_zeros)
        return jvp

    def defjvps(self, *jvps):
        """One rule per argument: ``jvps[i](tangent_i, primal_out, *primals)``; ``None`` = zero."""
        if self.nondiff_argnums:
            raise TypeError("custom_jvp.defjvps does not support nondiff_argnums; use defjvp")

        def jvp(primals, tangents):
            out = self(*primals)
            total = None
            for rule, t in zip(jvps, tangents):
                if rule is None:
                    continue
                contribution = rule(t, out, *primals)
                total = contribution if total is None else total + contribution
            if total is None:
                total = np.zeros(np.shape(out), aval_of(out).dtype) if not hasattr(out, "aval") else out * 0
            return out, total
        self.defjvp(jvp)

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "function")
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        args = _positional(self.fun, args, kwargs)
        if is_eager():
            return self.fun(*args)
        split = _Split(args, self.nondiff_argnums)
        program, out_tree = _trace_primal(self.fun, split, name)
        user_jvp, symbolic = self.jvp, self.symbolic_zeros

        def jvp(primal_leaves, tangent_leaves):
            if symbolic:
                tangent_leaves = [SymbolicZero(tangent_aval(aval_of(x))) if t is None else t
                                  for x, t in zip(primal_leaves, tangent_leaves)]
            res = user_jvp(*split.nondiff_args(), split.diff_args(primal_leaves), split.diff_args(tangent_leaves))
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise TypeError(f"Custom JVP rule of {name} must produce a pair (list or tuple of length two) "
                                "of primal and tangent outputs")
            out, tan = res
            out_leaves, tree = tree_flatten(out)
            tan_leaves, tan_tree = tree_flatten(tan, is_leaf=lambda x: isinstance(x, SymbolicZero))
            tan_leaves = [to_none(t) for t in tan_leaves]
            if tree != out_tree or tan_tree != out_tree:
                raise TypeError(f"Custom JVP rule of {name} must produce primal and tangent outputs with the "
                                f"pytree structure of the primal output {out_tree}; got {tree} and {tan_tree}")
            return (_check_values("custom JVP primal output", name, out_leaves, program.out_avals),
                    _check_values("custom JVP tangent output", name, tan_leaves, program.out_avals))

        jvp.none_for_zero_tangents = self._none_for_zero_tangents or symbolic
        jvp.symbolic_zeros = symbolic
        outs = custom_jvp_call_p.bind(*program.const_values, *split.leaves, program=program,
                                      num_consts=len(program.const_values), jvp=jvp, name=name)
        return tree_unflatten(out_tree, outs)


def _custom_jvp_jvp(primals, tangents, *, program, num_consts, jvp, name):
    if any(t is not None for t in tangents[:num_consts]):
        raise _closed_over_error("custom_jvp", name)
    args = primals[num_consts:]
    keep_none = getattr(jvp, "none_for_zero_tangents", False)
    symbolic = getattr(jvp, "symbolic_zeros", False)      # every zero stays None, integers' too
    ts = [None if t is None and (symbolic or (keep_none and is_differentiable(aval_of(x).dtype)))
          else instantiate_or_float0(t, aval_of(x)) for t, x in zip(tangents[num_consts:], args)]
    outs, touts = jvp(list(args), ts)
    return list(outs), [t if is_differentiable(a.dtype) else None for t, a in zip(touts, program.out_avals)]


ad.def_jvp(custom_jvp_call_p, _custom_jvp_jvp)


def _custom_jvp_batch(args, dims, size, *, program, num_consts, jvp, name):
    """vmap of a custom_jvp call: the primal program and the JVP rule are both batched
    (the rule through ``vmap``), so the call stays one equation over the whole batch."""
    if (any(d is not None for d in dims[:num_consts])
            or not all(is_differentiable(aval_of(x).dtype) for x in args[num_consts:])):
        return batching._one_example_at_a_time(custom_jvp_call_p, args, dims, size,
                                               dict(program=program, num_consts=num_consts, jvp=jvp, name=name))
    ins = [batching.with_batch(x, d, size) for x, d in zip(args[num_consts:], dims[num_consts:])]
    new_program, _ = batching.batched_program(program, [aval_of(x) for x in ins], [0] * len(ins), size)

    def batched_jvp(primals, tangents):
        outs, touts = vmap(lambda p, t: tuple(map(list, jvp(list(p), list(t)))))(list(primals), list(tangents))
        return list(outs), list(touts)
    batched_jvp.none_for_zero_tangents = getattr(jvp, "none_for_zero_tangents", False)
    batched_jvp.symbolic_zeros = getattr(jvp, "symbolic_zeros", False)
    outs = custom_jvp_call_p.bind(*new_program.const_values, *ins, program=new_program,
                                  num_consts=len(new_program.const_values), jvp=batched_jvp, name=name)
    return outs, [0] * len(outs)


batching_rules[custom_jvp_call_p] = _custom_jvp_batch
# Reverse mode: the custom JVP is linear in the tangents; vjp_via_jvp transposes it.
ad.def_vjp(custom_jvp_call_p, lambda needed, *ins, **params: ad.vjp_via_jvp(custom_jvp_call_p, needed, ins, params))


# --------------------------------------------------------------------------- checkpoint / remat

def _name_jvp(primals, tangents, *, name):
    return [name_p.bind(primals[0], name=name)], [tangents[0]]


# ``checkpoint_name(x, name)``: the identity, as an equation policies can select by ``name``.
name_p = def_rules(Primitive("name"), abstract_eval=lambda x, *, name: [x], impl=lambda x, *, name: [x])
decomposition_rules[name_p] = lambda x, *, name: [x]
ad.def_jvp(name_p, _name_jvp)
# A simple VJP rule: when a policy saved the named value, the backward pass takes it as saved.
ad.def_simple_vjp(name_p, lambda ct, needed, ins, outs, *, name: [ct])
batching_rules[name_p] = lambda args, dims, size, *, name: ([name_p.bind(args[0], name=name)], [dims[0]])


def checkpoint_name(x, name):
    """Name the value ``x`` (any pytree of arrays) for checkpoint policies (``jax.ad_checkpoint.checkpoint_name``).

    The identity; inside ``checkpoint``, policies such as
    ``checkpoint_policies.save_only_these_names(name)`` decide whether it is saved for the backward
    pass or recomputed.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.transforms.api_ad import grad
    >>> f = checkpoint(lambda x: np.sin(checkpoint_name(np.sin(x), "h")),
    ...                policy=checkpoint_policies.save_only_these_names("h"))
    >>> round(float(grad(f)(0.5)), 6)
    0.778644
    """
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [name_p.bind(v, name=name) if isinstance(v, Tracer) else v for v in leaves])


def _is_named(prim, params, names):
    return prim is name_p and params.get("name") in names


class checkpoint_policies:
    """Which intermediate values ``checkpoint`` saves instead of recomputing (``jax.checkpoint_policies``).

    A policy is ``policy(prim, *in_avals, **params) -> bool`` (True = save). Offloading to host
    memory means keeping the value on this CPU-only backend: the offloading policies save.
    """

    @staticmethod
    def everything_saveable(prim, *avals, **params):
        return True

    @staticmethod
    def nothing_saveable(prim, *avals, **params):
        return False

    @staticmethod
    def dots_saveable(prim, *avals, **params):
        return prim.name in ("dot_general", "conv_general_dilated")    # as JAX's: convolutions too

    checkpoint_dots = dots_saveable

    @staticmethod
    def dots_with_no_batch_dims_saveable(prim, *avals, **params):
        return prim.name == "dot_general" and not params["dimension_numbers"][1][0]

    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable

    @staticmethod
    def offload_dot_with_no_batch_dims(offload_src, offload_dst):
        return checkpoint_policies.dots_with_no_batch_dims_saveable

    @staticmethod
    def save_only_these_names(*names_which_can_be_saved):
        names = frozenset(names_which_can_be_saved)
        return lambda prim, *avals, **params: _is_named(prim, params, names)

    @staticmethod
    def save_any_names_but_these(*names_not_to_save):
        names = frozenset(names_not_to_save)
        return lambda prim, *avals, **params: prim is name_p and not _is_named(prim, params, names)

    @staticmethod
    def save_anything_except_these_names(*names_not_to_save):
        names = frozenset(names_not_to_save)
        return lambda prim, *avals, **params: not _is_named(prim, params, names)

    @staticmethod
    def save_from_both_policies(policy_1, policy_2):
        return lambda prim, *avals, **params: bool(policy_1(prim, *avals, **params) or
                                                   policy_2(prim, *avals, **params))

    @staticmethod
    def save_and_offload_only_these_names(*, names_which_can_be_saved, names_which_can_be_offloaded,
                                          offload_src, offload_dst):
        names = frozenset(names_which_can_be_saved) | frozenset(names_which_can_be_offloaded)
        return lambda prim, *avals, **params: _is_named(prim, params, names)


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=()):
    """Recompute ``fun``'s intermediates in the backward pass instead of saving them.

    Parameters
    ----------
    fun : callable
    prevent_cse : bool
        Accepted for JAX compatibility (the recomputation is emitted in the backward pass).
    policy : callable, optional
        ``policy(prim, *in_avals, **params) -> bool``: outputs of equations for
        which it is True are saved in the forward pass (see
        :class:`checkpoint_policies`); default: save nothing but the inputs.
    static_argnums : int or tuple
        Positional arguments that are Python values, not arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.transforms.api_ad import grad
    >>> grad(checkpoint(lambda x: np.sin(np.sin(x))))(0.0)
    Array(1.)
    """
    static = {static_argnums} if isinstance(static_argnums, int) else set(static_argnums)
    name = getattr(fun, "__name__", "function")

    @functools.wraps(fun)
    def remat_f(*args, **kwargs):
        if is_eager():
            return fun(*args, **kwargs)
        dyn = [a for i, a in enumerate(args) if i not in static]
        leaves, in_tree = tree_flatten((dyn, kwargs))
        box = {}

        def flat(*xs):
            dyn_vals, kw = tree_unflatten(in_tree, list(xs))
            it = iter(dyn_vals)
            full = [a if i in static else next(it) for i, a in enumerate(args)]
            out_leaves, box["tree"] = tree_flatten(fun(*full, **kw))
            return out_leaves
        program = trace_flat(flat, [leaf_aval(x, f"an argument of checkpointed {name}") for x in leaves], name)
        outs = remat_p.bind(*program.const_values, *leaves, program=program, num_consts=len(program.const_values),
                            policy=policy, prevent_cse=prevent_cse, name=name)
        return tree_unflatten(box["tree"], outs)
    return remat_f


remat = checkpoint


def _saved_by_policy(program, consts, args, policy):
    """Evaluate the forward, keeping the outputs of equations ``policy`` marks saveable."""
    from tracejit.core.ir import Literal
    from tracejit.core.trace import bind
    env = dict(zip(program.const_vars, consts))
    env.update(zip(program.in_vars, args))
    saved = {}
    for eqn in program.eqns:
        outs = bind(eqn.primitive, [a.val if type(a) is Literal else env[a] for a in eqn.inputs], eqn.params)
        env.update(zip(eqn.outputs, outs))
        if policy(eqn.primitive, *[a.aval for a in eqn.inputs], **eqn.params):
            saved.update(zip(eqn.outputs, outs))
    return [a.val if type(a) is Literal else env[a] for a in program.outputs], saved


def _remat_vjp(needed, *ins, program, num_consts, policy, prevent_cse, name):
    consts, args = ins[:num_consts], ins[num_consts:]
    if policy is checkpoint_policies.everything_saveable:
        outs, _, bwd = ad.vjp_program(program, consts, args, needed[:num_consts], needed[num_consts:])
        return outs, lambda cts: sum(bwd(cts), [])
    if policy is None or policy is checkpoint_policies.nothing_saveable:
        # Re-binding checkpoint keeps the forward rematerializable for an enclosing grad.
        outs, saved = remat_p.bind(*ins, program=program, num_consts=num_consts, policy=policy,
                                   prevent_cse=prevent_cse, name=name), None
    else:
        outs, saved = _saved_by_policy(program, consts, args, policy)

    def backward(cts):
        # The forward runs again here, in the backward pass: only inputs (and
        # what the policy saved) were kept.
        _, _, bwd = ad.vjp_program(program, consts, args, needed[:num_consts], needed[num_consts:], saved=saved)
        const_cts, arg_cts = bwd(cts)
        return const_cts + arg_cts
    return outs, backward


def _remat_jvp(primals, tangents, *, program, num_consts, **_):
    return ad.jvp_program(program, primals[:num_consts], primals[num_consts:], tangents[:num_consts],
                          tangents[num_consts:])


ad.def_vjp(remat_p, _remat_vjp)
ad.def_jvp(remat_p, _remat_jvp)


def closure_convert(fun, *example_args):
    """Hoist the traced values ``fun`` closes over into arguments (``jax.closure_convert``).

    ``fun`` is traced once with arguments shaped like ``example_args``. Traced values of
    enclosing transformations that it uses (for example a variable being differentiated)
    become the hoisted constants; concrete values stay inside. Use it to pass a closure
    to a function such as a ``custom_vjp`` that must not close over traced values.

    Parameters
    ----------
    fun : callable
    *example_args
        Arrays, scalars or ShapeDtypeStructs (pytrees) with the argument types.

    Returns
    -------
    (converted, consts)
        ``converted(*args, *consts)`` computes ``fun(*args)``; ``consts`` is a list.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> def outer(c):
    ...     g, consts = tracejit.closure_convert(lambda x: x * c, 1.0)
    ...     assert len(consts) == 1                # c is traced by grad: hoisted
    ...     return g(2.0, *consts)
    >>> float(tracejit.grad(outer)(3.0))
    2.0
    >>> g, consts = tracejit.closure_convert(lambda x: x + np.ones(2), np.zeros(2))
    >>> consts, g(np.ones(2))
    ([], array([2., 2.]))
    """
    flat, in_tree = tree_flatten(example_args)
    in_avals = [leaf_aval(leaf, f"example argument {i} of closure_convert") for i, leaf in enumerate(flat)]
    out_trees = []

    def flat_fun(*tracers):
        out = fun(*tree_unflatten(in_tree, list(tracers)))
        leaves, out_tree = tree_flatten(out)
        out_trees.append(out_tree)
        return leaves

    program = trace_flat(flat_fun, in_avals, getattr(fun, "__name__", "function"))
    out_tree = out_trees[0]
    consts = list(program.const_values)
    hoisted_at = [i for i, c in enumerate(consts) if isinstance(c, Tracer)]
    hoisted = [consts[i] for i in hoisted_at]

    @functools.wraps(fun)
    def converted(*args_and_consts):
        n = len(args_and_consts) - len(hoisted)
        if n < 0:
            raise TypeError(f"closure_convert: the converted function takes its arguments followed by "
                            f"{len(hoisted)} hoisted constants, got {len(args_and_consts)} values")
        values = list(consts)
        for i, v in zip(hoisted_at, args_and_consts[n:]):
            values[i] = v
        leaves, tree = tree_flatten(tuple(args_and_consts[:n]))
        if tree != in_tree:
            raise TypeError(f"closure_convert: the converted function was traced for arguments {in_tree}, "
                            f"got {tree}")
        return tree_unflatten(out_tree, eval_program(program, values, leaves))

    return converted, hoisted
