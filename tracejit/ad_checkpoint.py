"""``jax.ad_checkpoint``: naming values for checkpoint policies, and what a VJP saves.

``checkpoint`` (``remat``), ``checkpoint_policies`` and ``checkpoint_name`` are defined with
the autodiff machinery (``tracejit/transforms/ad_custom.py``); a policy there is
``policy(prim, *in_avals, **params)`` whose truth value says "save". ``print_saved_residuals``
traces the function's VJP and lists the values its backward pass closes over: the residuals a
compiled ``grad`` keeps in memory between the forward and the backward pass.

Examples
--------
>>> import numpy as np
>>> from tracejit import ad_checkpoint
>>> ad_checkpoint.print_saved_residuals(lambda x: np.sin(np.sin(x)), np.ones(3))
f64[3] from the argument x
f64[3] output of sin

(JAX lists two ``cos`` outputs here: its forward pass computes the derivatives' factors, while
tracejit's backward pass computes them from the saved inputs of each ``sin``.)
"""
from __future__ import annotations

from dataclasses import dataclass

from tracejit.core.pytree import tree_flatten, tree_leaves, tree_unflatten
from tracejit.core.trace import trace_flat
from tracejit.core.values import get_aval, leaf_aval
from tracejit.transforms.ad_custom import checkpoint, checkpoint_name, checkpoint_policies, remat
from tracejit.transforms.api_ad import vjp

__all__ = ["Offloadable", "Recompute", "Saveable", "checkpoint", "checkpoint_name", "checkpoint_policies",
           "print_saved_residuals", "remat", "saved_residuals"]


class _Decision:
    """A policy's answer by name (JAX's ``Saveable`` / ``Recompute``): true means save."""

    def __init__(self, name, save):
        self._name, self._save = name, save

    def __bool__(self):
        return self._save

    def __repr__(self):
        return self._name


Saveable = _Decision("Saveable", True)
Recompute = _Decision("Recompute", False)


@dataclass(frozen=True)
class Offloadable:
    """Save by moving to another memory (JAX's offloading); on the CPU the value stays where it is,
    so an ``Offloadable`` answer saves."""

    src: str
    dst: str

    def __bool__(self):
        return True


def saved_residuals(f, *args, **kwargs) -> list:
    """``[(aval, description)]`` of the values ``vjp(f, *args)``'s backward pass keeps.

    Parameters
    ----------
    f : callable
        Differentiated in all positional arguments.
    *args, **kwargs
        Example arguments (arrays or pytrees of them); only shapes and dtypes matter.

    Examples
    --------
    >>> import numpy as np
    >>> [d for _, d in saved_residuals(lambda x, y: x * y, np.ones(2), np.ones(2))]
    ['from the argument x', 'from the argument y']
    """
    leaves, tree = tree_flatten(args)
    box = {}

    def forward(*flat):
        out, pull = vjp(lambda *a: f(*a, **kwargs), *tree_unflatten(tree, list(flat)))
        out_leaves, out_tree = tree_flatten(out)

        def backward(*cts):
            return tree_leaves(pull(tree_unflatten(out_tree, list(cts))))
        # Traced inside the forward's trace: what it closes over becomes its constants.
        box["backward"] = trace_flat(backward, [get_aval(o) for o in out_leaves], "backward")
        return out_leaves
    fwd = trace_flat(forward, [leaf_aval(x, "an argument of print_saved_residuals") for x in leaves], "forward")
    arg_names = _argument_names(f, tree, len(leaves))
    produced = {id(v): (k, f"named {eqn.params['name']!r}" if eqn.primitive.name == "name"
                        else f"output of {eqn.primitive.name}")
                for k, eqn in enumerate(fwd.eqns) for v in eqn.outputs}
    inputs = {id(v): i for i, v in enumerate(fwd.in_vars)}
    found = []          # (order key, aval, description): arguments first, then in program order
    for k, value in enumerate(box["backward"].const_values):
        var = getattr(value, "_v", None)
        if var is not None and id(var) in inputs:
            i = inputs[id(var)]
            found.append(((0, i), get_aval(value), f"from the argument {arg_names[i]}"))
        elif var is not None and id(var) in produced:
            at, what = produced[id(var)]
            found.append(((1, at), get_aval(value), what))
        else:
            found.append(((2, k), get_aval(value), "from a constant"))
    return [(aval, what) for _, aval, what in sorted(found, key=lambda t: t[0])]


def _argument_names(f, tree, n):
    """A name per flattened argument: the parameter's name, with its position in a pytree."""
    import inspect
    try:
        params = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        params = []
    positions = tree_unflatten(tree, list(range(n)))
    names = [""] * n
    for k, arg in enumerate(positions):
        base = params[k] if k < len(params) else f"args[{k}]"
        idx = tree_leaves(arg)
        for j, i in enumerate(idx):
            names[i] = base if len(idx) == 1 else f"{base}[{j}]"
    return names


def print_saved_residuals(f, *args, **kwargs) -> None:
    """Print the shape, dtype and origin of every residual ``vjp(f, *args)`` saves
    (``jax.ad_checkpoint.print_saved_residuals``).

    Examples
    --------
    >>> import numpy as np
    >>> print_saved_residuals(lambda x: np.exp(x).sum(), np.ones(4))
    f64[4] output of exp
    """
    for aval, what in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {what}")
