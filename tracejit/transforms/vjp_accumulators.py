"""Where ``vjp`` puts each input's cotangent: JAX's ``VJP.with_refs`` and its ``jax.ad`` markers.

``out, f_vjp = vjp(f, x, y)`` returns a :class:`VJP`. ``f_vjp(ct)`` gives every input's cotangent
as a value. ``f_vjp.with_refs(dest_x, dest_y)`` gives a function of ``ct`` that sends each
input's cotangent to its destination, a pytree matching the primals whose leaves are:

- :class:`GradValue`: return the cotangent as a value (what ``f_vjp(ct)`` does for every input);
- a ``Ref`` (``new_ref``) of the cotangent's shape and dtype: add the cotangent into it (so calls
  accumulate, as gradient accumulators do); the result holds :class:`GradRef` there;
- :class:`DontWant`: the cotangent is not wanted; the result holds :class:`DidntWant` there.

``GradRef`` and ``DidntWant`` are pytrees with no leaves, so a result tree maps over the values only.

Examples
--------
>>> import numpy as np, tracejit
>>> out, f_vjp = tracejit.vjp(lambda x, y: x * y, np.float64(2.0), np.float64(3.0))
>>> acc = tracejit.new_ref(np.float64(1.0))
>>> f_vjp.with_refs(acc, DontWant())(np.float64(1.0))
(GradRef(), DidntWant())
>>> float(acc[...])
4.0
"""
from __future__ import annotations

import dataclasses

from tracejit.core.avals import ShapedArray
from tracejit.core.pytree import register_pytree_node, tree_flatten, tree_unflatten

# (is_ref(x), inner_aval(ref), add(ref, value)) for mutable references, registered by
# tracejit/functionalize/refs.py (a layer above this one).
REF_ACCUMULATORS: list = []


@dataclasses.dataclass(frozen=True)
class GradValue:
    """Destination marker of :meth:`VJP.with_refs`: return this input's cotangent as a value."""


@dataclasses.dataclass(frozen=True)
class DontWant:
    """Destination marker of :meth:`VJP.with_refs`: this input's cotangent is not wanted."""


@dataclasses.dataclass(frozen=True)
class GradRef:
    """Result marker of :meth:`VJP.with_refs`: the cotangent was added into the given Ref."""


@dataclasses.dataclass(frozen=True)
class DidntWant:
    """Result marker of :meth:`VJP.with_refs`: the cotangent was not wanted (:class:`DontWant`)."""


for _marker in (GradRef, DidntWant):   # no leaves: a tree of results maps over the values only
    register_pytree_node(_marker, lambda m: ((), None), lambda aux, children, cls=_marker: cls())


def _short(shape, dtype) -> str:
    try:
        return ShapedArray(shape, dtype).str_short()
    except TypeError:        # float0, the cotangent type of integer inputs
        return f"float0{list(shape)}"


def _ref_rule(x):
    for rule in REF_ACCUMULATORS:
        if rule[0](x):
            return rule
    return None


class VJP:
    """The pullback of :func:`tracejit.vjp`: call it with the output cotangent for the input
    cotangents, or use :meth:`with_refs` to choose where each goes."""

    def __init__(self, pullback, in_tree, ct_avals):
        self._pullback = pullback         # output cotangent -> tuple of input cotangents
        self.in_tree = in_tree
        self._ct_avals = ct_avals          # (shape, dtype) of each input leaf's cotangent

    def __call__(self, out_ct, *extra_args):
        if extra_args:
            raise TypeError(f"the function returned by vjp takes one argument (the output cotangent, "
                            f"a tuple if the function returns several values); got {1 + len(extra_args)}")
        return self._pullback(out_ct)

    def with_refs(self, *maybe_ct_refs):
        """A function of the output cotangent that sends each input's cotangent to its destination
        (:class:`GradValue`, a Ref to add it into, or :class:`DontWant`), one per primal leaf as in
        JAX; no destinations means :class:`GradValue` for all.

        Examples
        --------
        >>> import numpy as np, tracejit
        >>> _, f_vjp = tracejit.vjp(lambda x: 3 * x, np.float64(1.0))
        >>> f_vjp.with_refs(GradValue())(np.float64(1.0))
        (Array(3.),)
        """
        if not maybe_ct_refs:
            dests = [GradValue()] * len(self._ct_avals)
        else:
            dests, tree = tree_flatten(maybe_ct_refs, is_leaf=lambda x: isinstance(x, (GradValue, DontWant))
                                       or _ref_rule(x) is not None)
            if tree != self.in_tree:
                raise ValueError(f"with_refs: the destinations' structure {tree} does not match the "
                                 f"primals' {self.in_tree}")
        for d, (shape, dtype) in zip(dests, self._ct_avals):
            rule = _ref_rule(d)
            if rule is not None:
                have = rule[1](d)
                if (tuple(have.shape), have.dtype) != (shape, dtype):
                    raise ValueError(f"Accumulator aval mismatch: expected {_short(shape, dtype)}, "
                                     f"got {_short(tuple(have.shape), have.dtype)}")
            elif not isinstance(d, (GradValue, DontWant)):
                raise TypeError(f"with_refs: a destination must be GradValue(), DontWant() or a Ref, "
                                f"got {type(d).__name__}")

        def backward(out_ct):
            cts, _ = tree_flatten(self._pullback(out_ct))
            results = []
            for d, ct in zip(dests, cts):
                rule = _ref_rule(d)
                if rule is not None:
                    rule[2](d, ct)
                    results.append(GradRef())
                else:
                    results.append(DidntWant() if isinstance(d, DontWant) else ct)
            return tree_unflatten(self.in_tree, results)
        return backward
