"""``fwd_and_bwd``: a function's forward and backward passes as two separately jitted functions
(``jax.fwd_and_bwd``).

``fwd(*args)`` is ``vjp``'s forward pass; what it returns for the backward pass is a
:class:`Residuals` pytree: the saved values as leaves and the traced backward program as static
data. ``bwd(residuals, cotangent)`` evaluates that program on them, so under ``jit`` each compiles
once per argument signature (a ``vjp`` function passed to ``jit`` would be traced anew each time).
"""
from __future__ import annotations

import operator

from tracejit.api import jit
from tracejit.core.interpret import eval_program
from tracejit.core.pytree import register_pytree_node, tree_flatten, tree_leaves, tree_structure, tree_unflatten
from tracejit.core.trace import trace_flat
from tracejit.core.values import get_aval
from tracejit.transforms.api_ad import vjp


class _Backward:
    """The backward pass of one forward trace: its program and the pytree structures around it.
    Static pytree data of :class:`Residuals` (compared by identity)."""

    def __init__(self, program, out_tree, cotangent_tree):
        self.program, self.out_tree, self.cotangent_tree = program, out_tree, cotangent_tree


class Residuals:
    """What ``fwd`` saved for ``bwd``: a pytree whose leaves are the saved arrays.

    Calling it with the output cotangent runs the backward pass, as the function ``vjp`` returns.
    """

    def __init__(self, values, backward: _Backward):
        self.values, self.backward = list(values), backward

    def __call__(self, cotangent):
        leaves, tree = tree_flatten(cotangent)
        if tree != self.backward.out_tree:
            raise TypeError(f"bwd: the cotangent has structure {tree}, the function's output {self.backward.out_tree}")
        outs = eval_program(self.backward.program, self.values, leaves)
        return tree_unflatten(self.backward.cotangent_tree, outs)

    def __repr__(self):
        return f"Residuals({len(self.values)} arrays)"


register_pytree_node(Residuals, lambda r: (r.values, r.backward), lambda backward, values: Residuals(values, backward))


def fwd_and_bwd(fun, argnums, has_aux: bool = False, jitted: bool = True):
    """The forward and backward passes of ``fun`` as two functions (``jax.fwd_and_bwd``).

    Parameters
    ----------
    fun : callable
    argnums : int or sequence of int
        The positional arguments differentiated.
    has_aux : bool
        ``fun`` returns ``(output, aux)``; ``aux`` is not differentiated.
    jitted : bool
        Compile both functions with ``jit`` (default): each compiles once per signature.

    Returns
    -------
    fwd, bwd
        ``fwd(*args)`` returns ``(output, residuals)`` (``(output, residuals, aux)`` with
        ``has_aux``); ``bwd(residuals, cotangent)`` returns the tuple of cotangents of the
        ``argnums`` arguments, as the function ``vjp`` returns would.

    Examples
    --------
    >>> import numpy as np
    >>> fwd, bwd = fwd_and_bwd(lambda x, w: (x @ w).sum(), argnums=(0, 1))
    >>> y, res = fwd(np.ones((2, 3)), np.ones((3, 4)))
    >>> float(y), [c.shape for c in bwd(res, 1.0)]
    (24.0, [(2, 3), (3, 4)])
    """
    nums = (operator.index(argnums),) if not isinstance(argnums, (tuple, list)) else tuple(map(operator.index, argnums))

    def fwd(*args):
        n = len(args)
        idx = [i % n if -n <= i < n else _bad_argnum(i, n) for i in nums]
        diff = [args[i] for i in idx]

        def partial(*d):
            full = list(args)
            for i, v in zip(idx, d):
                full[i] = v
            return fun(*full)
        res = vjp(partial, *diff, has_aux=has_aux)
        out, pull = res[0], res[1]
        out_leaves, out_tree = tree_flatten(out)

        def backward(*cts):
            return tree_leaves(pull(tree_unflatten(out_tree, list(cts))))
        # Traced inside the forward's trace: what the backward closes over are the residuals.
        program = trace_flat(backward, [get_aval(o).strip_weak() for o in out_leaves], "bwd")
        residuals = Residuals(program.const_values, _Backward(program, out_tree, tree_structure(tuple(diff))))
        return (out, residuals, res[2]) if has_aux else (out, residuals)

    def bwd(residuals, cotangent):
        if not isinstance(residuals, Residuals):
            raise TypeError(f"bwd: expected the residuals fwd returned, got {type(residuals).__name__}")
        return residuals(cotangent)

    return (jit(fwd), jit(bwd)) if jitted else (fwd, bwd)


def _bad_argnum(i, n):
    raise ValueError(f"fwd_and_bwd: argnums {i} out of range for a function called with {n} positional arguments")


__all__ = ["Residuals", "fwd_and_bwd"]
