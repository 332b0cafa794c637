"""User-defined batching rules (``jax.custom_batching``): :class:`custom_vmap` and :func:`sequential_vmap`.

A ``custom_vmap`` function called under a trace binds one call primitive, ``custom_vmap_call``,
holding the traced program of the function and the user's rule. The primitive's batching rule
(registered here in ``tracejit.core.primitive.batching_rules``, the table ``vmap``'s interpreter in
``tracejit/transforms/batching.py`` consults; no change to ``transforms/`` was needed) calls the
user's rule ``rule(axis_size, in_batched, *args)`` with the batched arguments' batch axis moved to
the front, and the rule's ``(out, out_batched)`` says which outputs carry that axis.

Everywhere else the primitive is its program: eagerly the function just runs, ``jit`` inlines the
program (a decomposition rule) and differentiation differentiates the program. So under ``grad``
or ``jvp`` the derivative is the function's own, not one derived from the rule, and ``vmap`` of a
derivative batches the derivative program generically (JAX would batch it with the rule's JVP).
"""
from __future__ import annotations

import functools
import inspect

from tracejit.array import arrays_in
from tracejit.core.interpret import eval_program, interpret
from tracejit.core.primitive import Primitive, batching_rules, decomposition_rules, def_rules
from tracejit.core.pytree import tree_flatten, tree_map, tree_unflatten
from tracejit.core.trace import is_eager, trace_flat
from tracejit.core.values import get_aval, leaf_aval
from tracejit.lax import map as lax_map
from tracejit.transforms import batching

__all__ = ["custom_vmap", "sequential_vmap"]


def _abstract_eval(*in_avals, program, num_consts, **_):
    return program.out_avals


def _impl(*args, program, num_consts, **_):
    return interpret(program, args[:num_consts], args[num_consts:])


def _decomposition(*args, program, num_consts, **_):
    return eval_program(program, args[:num_consts], args[num_consts:])


custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True,
                               pp_params=lambda p: {"name": p["name"], "program": p["program"]})
def_rules(custom_vmap_call_p, abstract_eval=_abstract_eval, impl=_impl)
decomposition_rules[custom_vmap_call_p] = _decomposition   # jit inlines it; autodiff differentiates it


def _batch_rule(args, dims, size, *, program, num_consts, rule, in_tree, out_tree, name):
    consts, xs, xdims = args[:num_consts], args[num_consts:], dims[num_consts:]
    if any(d is not None for d in dims[:num_consts]):
        # The function closes over a value of the enclosing vmap: the rule cannot see it as an argument.
        return batching._one_example_at_a_time(
            custom_vmap_call_p, args, dims, size,
            dict(program=program, num_consts=num_consts, rule=rule, in_tree=in_tree, out_tree=out_tree,
                 name=name))
    leaves = [batching.to_front(x, d) for x, d in zip(xs, xdims)]
    in_batched = tree_unflatten(in_tree, [d is not None for d in xdims])
    res = rule(size, list(in_batched), *tree_unflatten(in_tree, leaves))
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise TypeError(f"the custom_vmap rule of {name} must return a pair (out, out_batched), got {res!r}")
    out, out_batched = res
    out_leaves, tree = tree_flatten(out)
    if tree != out_tree:
        raise TypeError(f"the custom_vmap rule of {name} returned an output of structure {tree}; the function "
                        f"returns {out_tree}")
    flags, ftree = tree_flatten(out_batched)
    if len(flags) == 1 and len(out_leaves) != 1:
        flags = flags * len(out_leaves)      # one bool for the whole output
    elif ftree != out_tree:
        raise TypeError(f"the custom_vmap rule of {name}: out_batched has structure {ftree}, the output "
                            f"{out_tree}")
    outs, out_dims = [], []
    for v, b, a in zip(out_leaves, flags, program.out_avals):
        want = ((size,) if b else ()) + a.shape
        got = get_aval(v)
        if got.shape != want:
            raise ValueError(f"the custom_vmap rule of {name} returned an output of shape {got.shape} with "
                             f"out_batched={bool(b)}; expected shape {want}")
        outs.append(v)
        out_dims.append(0 if b else None)
    return outs, out_dims


batching_rules[custom_vmap_call_p] = _batch_rule


class custom_vmap:
    """A function with a user-defined ``vmap`` rule (``jax.custom_batching.custom_vmap``).

    Register the rule with :meth:`def_vmap`: ``rule(axis_size, in_batched, *args) -> (out,
    out_batched)``. ``in_batched`` is a list (one entry per argument, each a pytree of bools like the
    argument) saying which inputs carry the batch axis, always in front (axis 0); ``out_batched``
    says the same of the rule's outputs (a pytree of bools like ``out``). Outside ``vmap`` the
    function itself runs; differentiation differentiates the function itself.

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit
    >>> from tracejit.custom_batching import custom_vmap
    >>> @custom_vmap
    ... def f(x):
    ...     return x * 2.0
    >>> @f.def_vmap
    ... def f_rule(axis_size, in_batched, x):
    ...     return x * 2.0 + 1.0, in_batched[0]       # marks that the rule ran
    >>> f(np.array(1.0)), tracejit.vmap(f)(np.array([1.0, 2.0]))
    (Array(2.), Array([3., 5.]))
    """

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule = None

    def def_vmap(self, vmap_rule):
        """Register ``vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)``; returns it."""
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "function")
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function {name} using def_vmap.")
        if kwargs:
            bound = inspect.signature(self.fun).bind(*args, **kwargs)
            bound.apply_defaults()
            if bound.kwargs:
                raise TypeError(f"{name}: keyword-only arguments are not supported by custom_vmap functions")
            args = bound.args
        args = tuple(args)
        if is_eager():
            return arrays_in(self.fun(*args))
        leaves, in_tree = tree_flatten(args)
        in_avals = [leaf_aval(x, "an argument of a custom_vmap function") for x in leaves]
        box = {}

        def flat(*xs):
            out_leaves, box["tree"] = tree_flatten(self.fun(*tree_unflatten(in_tree, list(xs))))
            return out_leaves
        program = trace_flat(flat, in_avals, name)
        outs = custom_vmap_call_p.bind(*program.const_values, *leaves, program=program,
                                       num_consts=len(program.const_values), rule=self.vmap_rule,
                                       in_tree=in_tree, out_tree=box["tree"], name=name)
        return tree_unflatten(box["tree"], outs)


def sequential_vmap(f):
    """``f`` with a ``vmap`` rule that maps it over the batch one example at a time
    (``jax.custom_batching.sequential_vmap``).

    For functions without a batching rule of their own (host callbacks, code that must see
    unbatched shapes). Under ``vmap`` the examples run in a loop (``lax.map``), the unbatched
    arguments shared; outside ``vmap`` it is ``f``.

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit
    >>> from tracejit.custom_batching import sequential_vmap
    >>> g = sequential_vmap(lambda x, y: x.sum() + y)
    >>> tracejit.vmap(g, in_axes=(0, None))(np.ones((3, 2)), 1.0)
    Array([3., 3., 3.])
    """
    f_vmapped = custom_vmap(f)

    @f_vmapped.def_vmap
    def rule(axis_size, in_batched, *args):
        flags, _ = tree_flatten(list(in_batched))
        leaves, tree = tree_flatten(args)
        batched = [x for x, b in zip(leaves, flags) if b]

        def one(xs):
            it = iter(xs)
            full = [next(it) if b else x for x, b in zip(leaves, flags)]
            return f(*tree_unflatten(tree, full))
        out = lax_map(one, batched)
        return out, tree_map(lambda _: True, out)

    return f_vmapped
