"""Common-subexpression elimination keyed on (primitive, inputs, params); equations with side
effects (``core.ir.has_effects``: a debug callback, a loop holding one) are never merged."""
from __future__ import annotations

import numpy as np

from tracejit.core.ir import Literal, Program, has_effects


def _atom_key(a, rename):
    if isinstance(a, Literal):
        return ("lit", a.aval.dtype.str, a.val.tobytes() if hasattr(a.val, "tobytes") else repr(a.val))
    return ("var", id(rename.get(id(a), a)))


def _exact(v):
    """A key for a param value that tells apart what ``==`` merges: 0.0 and -0.0, 1 and 1.0 and True."""
    if isinstance(v, (float, complex, np.floating, np.complexfloating)):
        return (type(v).__name__, np.asarray(v).tobytes())
    if isinstance(v, (tuple, list)):
        return (type(v).__name__,) + tuple(_exact(x) for x in v)
    return (type(v).__name__, v)


def _params_key(params):
    try:
        key = tuple(sorted((k, _exact(v)) for k, v in params.items()))
        hash(key)
        return key
    except TypeError:
        return None


def cse(program: Program) -> Program:
    from tracejit.core.primitive import EFFECTFUL
    rename: dict[int, object] = {}
    seen: dict = {}
    eqns = []
    changed = False
    for eqn in program.eqns:
        inputs = [rename.get(id(a), a) if not isinstance(a, Literal) else a for a in eqn.inputs]
        pk = _params_key(eqn.params)
        key = None
        if pk is not None and eqn.primitive not in EFFECTFUL:
            key = (eqn.primitive, tuple(_atom_key(a, rename) for a in inputs), pk)
        if key is not None and key in seen and not has_effects(eqn):
            prior = seen[key]
            for old, new in zip(eqn.outputs, prior.outputs):
                rename[id(old)] = new
            changed = True
            continue
        new_eqn = eqn if inputs == eqn.inputs else eqn.replace(inputs=inputs)
        changed |= new_eqn is not eqn
        if key is not None:
            seen[key] = new_eqn
        eqns.append(new_eqn)
    if not changed:
        return program
    outputs = [rename.get(id(a), a) if not isinstance(a, Literal) else a for a in program.outputs]
    return program.replace(eqns=eqns, outputs=outputs)

