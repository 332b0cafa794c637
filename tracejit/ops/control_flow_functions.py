"""Structured control flow: cond, switch, while_loop, fori_loop, scan, map.

Under ``jit`` Python ``if`` / ``while`` on traced values cannot work (the
values are abstract); these functions stage the control flow into the
program instead. Bodies are traced once into sub-programs (see
``tracejit/ops/control_flow.py``, where their primitives are defined) and the same primitives run eagerly, so a
function behaves identically with and without ``jit``.
"""
from __future__ import annotations

import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.core.avals import ShapedArray
from tracejit.core.ir import Eqn, Literal, Var
from tracejit.core.pytree import tree_flatten, tree_unflatten
from tracejit.core.trace import trace_flat
from tracejit.core.tracer import Tracer
from tracejit.core.values import get_aval as aval
from tracejit.ops.control_flow import closure_convert, cond_p, scan_p, while_p
from tracejit.ops.elementwise import binary_prims, convert_element_type_p
from tracejit.ops.operands import concrete_operand, convert

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map"]


# --------------------------------------------------------------------------- tracing helpers

def _aval_text(a: ShapedArray) -> str:
    return a.str_short() + ("{weak}" if a.weak_type else "")


def _leaf_operand(x, what: str):
    if isinstance(x, Tracer) or dtypes.is_python_scalar(x):
        return x
    try:
        return concrete_operand(x)
    except TypeError:
        raise TypeError(f"{what} is a {type(x).__name__}, which is not an array; control-flow "
                        "operands and results must be pytrees of arrays or scalars") from None


def _flatten_operands(tree, what: str):
    leaves, treedef = tree_flatten(tree)
    return [_leaf_operand(x, f"{what} leaf {i}") for i, x in enumerate(leaves)], treedef


class _Traced:
    """A function traced to a closed sub-program: ``program(*consts, *args)``."""

    __slots__ = ("program", "consts", "out_tree")

    def __init__(self, program, consts, out_tree):
        self.program, self.consts, self.out_tree = program, consts, out_tree

    @property
    def out_avals(self):
        return self.program.out_avals


def _trace(fun, in_avals, name: str) -> _Traced:
    """Trace ``fun(*leaves) -> pytree`` over ``in_avals`` and closure-convert it."""
    box = []

    def flat_fun(*tracers):
        out = fun(*tracers)
        leaves, out_tree = _flatten_operands(out, f"output of {name}")
        box.append(out_tree)
        return leaves

    program, consts = closure_convert(trace_flat(flat_fun, in_avals, name))
    return _Traced(program, consts, box[0])


def _with_unused_inputs(program, avals, position: int):
    """Insert inputs of ``avals`` (ignored) at ``position`` of the program's inputs."""
    ins = list(program.in_vars)
    ins[position:position] = [Var(a) for a in avals]
    return program.replace(in_vars=ins)


def _cast_outputs(program, targets):
    """Convert outputs whose dtype differs from ``targets`` (weak-type promotion)."""
    eqns, outs = list(program.eqns), []
    for atom, target in zip(program.outputs, targets):
        if atom.aval.dtype == target.dtype:
            outs.append(atom)
        elif isinstance(atom, Literal):
            outs.append(Literal(atom.val, target))
        else:
            v = Var(target)
            eqns.append(Eqn(convert_element_type_p, [atom], [v],
                            dict(new_dtype=target.dtype, weak_type=target.weak_type)))
            outs.append(v)
    return program.replace(eqns=eqns, outputs=outs)


def _check_tree(what_a, tree_a, what_b, tree_b):
    if tree_a != tree_b:
        raise TypeError(f"{what_a} and {what_b} must have the same pytree structure, got "
                        f"{tree_a} and {tree_b}")


# --------------------------------------------------------------------------- cond / switch

def _join_output(k, labelled_avals):
    """The common type of output leaf ``k`` across branches (weak values adapt)."""
    (name0, a0) = labelled_avals[0]
    if dtypes.x64_off():      # JAX's 32-bit mode: a 64-bit branch output joins its 32-bit type
        labelled_avals = [(n, a.update(dtype=dtypes.narrow(a.dtype))) for n, a in labelled_avals]
    for name, a in labelled_avals[1:]:
        if a.shape != a0.shape:
            raise TypeError(f"{name} output {_aval_text(a)} does not match {name0} output "
                            f"{_aval_text(a0)} (output leaf {k}): branch outputs must have identical "
                            "shapes and dtypes")
    strong = [(n, a) for n, a in labelled_avals if not a.weak_type]
    if strong:
        n_s, s = strong[0]
        for name, a in labelled_avals:
            if a.dtype == s.dtype:
                continue
            joined, _ = dtypes.result_type((a.dtype, a.weak_type), (s.dtype, False))
            if not a.weak_type or joined != s.dtype:
                raise TypeError(f"{name} output {_aval_text(a)} does not match {n_s} output "
                                f"{_aval_text(s)} (output leaf {k}): branch outputs must have "
                                "identical shapes and dtypes; cast one of them with .astype()")
        return ShapedArray(a0.shape, s.dtype, False)
    dtype, weak = dtypes.result_type(*((a.dtype, True) for _, a in labelled_avals))
    return ShapedArray(a0.shape, dtype, weak)


def _branches_call(index, funs, names, operands, primitive_name: str):
    """Trace every branch over ``operands`` and bind one ``cond`` on them."""
    op_leaves, op_tree = _flatten_operands(tuple(operands), f"{primitive_name} operand")
    op_avals = [aval(x) for x in op_leaves]
    traced = [_trace(lambda *leaves, f=f: f(*tree_unflatten(op_tree, leaves)), op_avals,
                     f"{primitive_name} {n}") for f, n in zip(funs, names)]
    for t, n in zip(traced[1:], names[1:]):
        _check_tree(f"{primitive_name} {names[0]}", traced[0].out_tree, n, t.out_tree)
    n_out = len(traced[0].out_avals)
    targets = [_join_output(k, [(n, t.out_avals[k]) for t, n in zip(traced, names)])
               for k in range(n_out)]
    # Each branch takes every branch's constants (ignoring the others'), then the operands.
    programs, all_consts = [], []
    for t in traced:
        all_consts.extend(t.consts)
    offset = 0
    for t in traced:
        n = len(t.consts)
        before = [aval(c) for c in all_consts[:offset]]
        after = [aval(c) for c in all_consts[offset + n:]]
        p = _with_unused_inputs(t.program, before, 0)
        p = _with_unused_inputs(p, after, len(before) + n)
        programs.append(_cast_outputs(p, targets))
        offset += n
    outs = cond_p.bind(index, *all_consts, *op_leaves, branches=tuple(programs))
    return tree_unflatten(traced[0].out_tree, outs)


def _scalar_operand(x, what: str):
    x = _leaf_operand(x, what)
    a = aval(x)
    if a.shape != ():
        raise TypeError(f"{what} must be a scalar, got an array of shape {a.shape}")
    return x, a


def cond(pred, true_fun, false_fun, *operands):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, staged.

    Both branches are traced (so both must return the same pytree structure
    with identical shapes and dtypes) and only the selected one runs. A
    Python-scalar (weakly typed) result of one branch takes the dtype of the
    other branch's result. Branches may close over outer values instead of
    taking operands (``cond(p, lambda: x, lambda: 0.0)``).

    Parameters
    ----------
    pred : bool or integer scalar
        Nonzero selects ``true_fun``.
    true_fun, false_fun : callable
        Functions of ``*operands`` returning pytrees of arrays.
    *operands : pytrees
        Arguments passed to the selected branch.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit import lax
    >>> f = tracejit.jit(lambda x: lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: -v, x))
    >>> f(np.array([1.0, 2.0]))
    Array([2., 4.])
    >>> float(lax.cond(False, lambda: 1.0, lambda: np.float32(3.0)))
    3.0
    """
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("cond(pred, true_fun, false_fun, *operands): true_fun and false_fun must be "
                        "callable")
    pred, a = _scalar_operand(pred, "cond pred")
    if a.dtype.kind not in "biu":
        raise TypeError(f"cond pred must be a boolean or integer scalar, got {a.dtype.name}; "
                        "compare it explicitly, e.g. `x != 0`")
    if a.dtype.kind != "b":
        pred = binary_prims["ne"].bind(pred, np.asarray(0, a.dtype)[()]) if isinstance(pred, Tracer) \
            else bool(pred)
    index = convert(pred, np.int32) if isinstance(pred, Tracer) else np.int32(bool(pred))
    return _branches_call(index, (false_fun, true_fun), ("false_fun", "true_fun"), operands, "cond")


def switch(index, branches, *operands):
    """``branches[index](*operands)``, staged; ``index`` is clamped into range.

    A negative index selects ``branches[0]`` and one past the end selects the
    last branch, like ``jax.lax.switch``. All branches are traced and must
    return the same pytree structure with identical shapes and dtypes.

    Parameters
    ----------
    index : integer scalar
    branches : sequence of callables
    *operands : pytrees passed to the selected branch

    Examples
    --------
    >>> from tracejit import lax
    >>> fs = [lambda x: x + 1, lambda x: x * 10, lambda x: -x]
    >>> [int(lax.switch(i, fs, 5)) for i in (-3, 0, 1, 2, 7)]
    [6, 6, 50, -5, -5]
    """
    branches = tuple(branches)
    if not branches:
        raise ValueError("switch needs at least one branch")
    if not all(callable(b) for b in branches):
        raise TypeError("switch: every element of branches must be callable")
    index, a = _scalar_operand(index, "switch index")
    if a.dtype.kind not in "iu":
        raise TypeError(f"switch index must be an integer scalar, got {a.dtype.name}")
    n = len(branches)
    if n == 1:
        return branches[0](*operands)
    if isinstance(index, Tracer):
        lo, hi = np.asarray(0, a.dtype)[()], np.asarray(n - 1, a.dtype)[()]
        index = binary_prims["min"].bind(binary_prims["max"].bind(index, lo), hi)
        index = convert(index, np.int32)
    else:
        index = np.int32(min(max(int(index), 0), n - 1))
    names = tuple(f"branch {i}" for i in range(n))
    return _branches_call(index, branches, names, operands, "switch")


# --------------------------------------------------------------------------- loops

def _carry_types(fun_name, in_avals, out_avals, allow_weak: bool = True):
    """New carry avals after weak-type promotion, or None if the carry is stable.

    Raises TypeError when an output carry's shape or dtype differs from the
    input carry's (other than a weak input adopting the body's dtype).
    """
    changed, new = False, []
    for i, (a, b) in enumerate(zip(in_avals, out_avals)):
        if a.shape == b.shape and a.dtype == b.dtype:
            new.append(a)
            continue
        if a.shape == b.shape and a.weak_type and allow_weak:
            dtype, weak = dtypes.result_type((a.dtype, True), (b.dtype, b.weak_type))
            new.append(ShapedArray(a.shape, dtype, weak))
            changed = True
            continue
        raise TypeError(f"{fun_name} output carry {_aval_text(b)} does not match input carry "
                        f"{_aval_text(a)} (carry leaf {i}); the loop carry must keep its shape and "
                        "dtype, e.g. cast the initial value or the body's result with .astype()")
    return new if changed else None


def _trace_loop(fun_name, trace_fn, carry_leaves, carry_tree):
    """Trace a loop body, retracing once if weak initial carries must adopt a dtype.

    ``trace_fn(carry_avals) -> (_Traced, out_carry_avals, out_carry_tree)``.
    Returns ``(traced, carry_leaves)`` with the leaves converted as needed.
    """
    carry_avals = [aval(x) for x in carry_leaves]
    for attempt in range(2):
        traced, out_avals, out_tree = trace_fn(carry_avals)
        _check_tree(f"{fun_name} output carry", out_tree, "the input carry", carry_tree)
        if dtypes.x64_off():
            out_avals = _narrowed_carries(traced, carry_avals, out_avals)
        # Promote weak carries once; after that any difference is an error.
        new = _carry_types(fun_name, carry_avals, out_avals, allow_weak=attempt == 0)
        if new is None:
            return traced, carry_leaves
        carry_leaves = [x if a == b else convert(x, b.dtype, weak_type=b.weak_type)
                        for x, a, b in zip(carry_leaves, carry_avals, new)]
        carry_avals = new
    raise AssertionError("unreachable")


def _narrowed_carries(traced, carry_avals, out_avals):
    """JAX's 32-bit mode: a body result that is the 64-bit type of its 32-bit carry (a float64 made
    inside the body from a default dtype) is converted to the carry's type, as JAX's body would
    have computed it in 32 bits. Returns the carry outputs' avals after that."""
    narrowed = [a if (b.shape == a.shape and b.dtype != a.dtype and dtypes.narrow(b.dtype) == a.dtype) else b
                for a, b in zip(carry_avals, out_avals)]
    if narrowed != list(out_avals):
        traced.program = _cast_outputs(traced.program, narrowed + list(traced.out_avals[len(narrowed):]))
    return narrowed


def while_loop(cond_fun, body_fun, init_val):
    """Repeat ``val = body_fun(val)`` while ``cond_fun(val)``; returns ``val``.

    The carry ``val`` is any pytree of arrays; ``body_fun`` must return the
    same structure, shapes and dtypes (a Python-scalar initial value takes the
    dtype the body produces). ``cond_fun`` must return a boolean scalar.

    Examples
    --------
    >>> from tracejit import lax
    >>> int(lax.while_loop(lambda i: i < 10, lambda i: i + 3, 0))
    12
    """
    carry_leaves, carry_tree = _flatten_operands(init_val, "while_loop init_val")

    def trace_body(carry_avals):
        t = _trace(lambda *leaves: body_fun(tree_unflatten(carry_tree, leaves)), carry_avals,
                   "body_fun")
        return t, t.out_avals, t.out_tree

    body, carry_leaves = _trace_loop("body_fun", trace_body, carry_leaves, carry_tree)
    carry_avals = [aval(x) for x in carry_leaves]
    cond_t = _trace(lambda *leaves: cond_fun(tree_unflatten(carry_tree, leaves)), carry_avals,
                    "cond_fun")
    out = cond_t.out_avals
    if cond_t.out_tree.num_leaves != 1 or out[0].shape != () or out[0].dtype != np.bool_:
        raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                        f"{[_aval_text(a) for a in out]}")
    outs = while_p.bind(*cond_t.consts, *body.consts, *carry_leaves,
                        cond_nconsts=len(cond_t.consts), cond_program=cond_t.program,
                        body_nconsts=len(body.consts), body_program=body.program)
    return tree_unflatten(carry_tree, outs)


def _static_int(x):
    """``x`` as a Python int if it is a concrete integer, else None."""
    if isinstance(x, Tracer):
        return None
    if isinstance(x, (bool, np.bool_)):
        raise TypeError("fori_loop bounds must be integers, got a bool")
    try:
        return operator.index(x)
    except TypeError:
        arr = np.asarray(x)
        if arr.shape == () and arr.dtype.kind in "iu":
            return int(arr)
        raise TypeError(f"fori_loop bounds must be integer scalars, got {x!r}") from None


def fori_loop(lower, upper, body_fun, init_val, unroll=None):
    """``for i in range(lower, upper): val = body_fun(i, val)``; returns ``val``.

    With concrete (Python or NumPy integer) bounds the trip count is static
    and the loop is a ``scan`` (so reverse-mode autodiff can work on it);
    traced bounds give a ``while``. ``unroll`` needs static bounds.

    Examples
    --------
    >>> from tracejit import lax
    >>> int(lax.fori_loop(0, 5, lambda i, s: s + i, 0))
    10
    """
    lo, hi = _static_int(lower), _static_int(upper)
    if lo is not None and hi is not None:
        if type(lower) is int and type(upper) is int:
            i0 = lower  # a weak Python int, like JAX
        else:
            d, _ = dtypes.result_type((aval(concrete_operand(lower)).dtype, type(lower) is int),
                                      (aval(concrete_operand(upper)).dtype, type(upper) is int))
            i0 = np.asarray(lo, d)[()]

        def step(carry, _):
            i, val = carry
            return (i + 1, body_fun(i, val)), None
        (_, result), _ = scan(step, (i0, init_val), None, length=max(0, hi - lo),
                              unroll=1 if unroll is None else unroll, _name="fori_loop body_fun")
        return result
    if unroll is not None:
        raise ValueError("fori_loop: `unroll` can only be used when the loop bounds are static "
                         "(Python or NumPy integers)")
    lower, upper = _leaf_operand(lower, "fori_loop lower"), _leaf_operand(upper, "fori_loop upper")
    for name, b in (("lower", lower), ("upper", upper)):
        a = aval(b)
        if a.shape != () or a.dtype.kind not in "iu":
            raise TypeError(f"fori_loop {name} bound must be an integer scalar, got {_aval_text(a)}")
    d, weak = dtypes.result_type((aval(lower).dtype, aval(lower).weak_type),
                                 (aval(upper).dtype, aval(upper).weak_type))
    lower, upper = (b if aval(b).dtype == d else convert(b, d, weak) for b in (lower, upper))

    def body(carry):
        i, val = carry
        return i + 1, body_fun(i, val)
    _, result = while_loop(lambda c: c[0] < upper, body, (lower, init_val))
    return result


def _normalize_unroll(unroll, length):
    if isinstance(unroll, (bool, np.bool_)):
        return max(length, 1) if unroll else 1
    try:
        unroll = operator.index(unroll)
    except TypeError:
        raise TypeError(f"scan unroll must be an int or bool, got {unroll!r}") from None
    if unroll < 1:
        raise ValueError(f"scan unroll must be >= 1, got {unroll}")
    return unroll


def scan(f, init, xs=None, length=None, reverse=False, unroll=1, *, _name="scan body"):
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``.

    Returns ``(final_carry, ys)`` with the ``y``'s stacked along a new leading
    axis. ``xs`` is a pytree of arrays with equal leading dimension, or
    ``None`` with an explicit ``length`` (``f`` then receives ``None``).
    ``reverse=True`` runs from the last element to the first (``ys[i]``
    still belongs to ``xs[i]``). ``unroll`` is recorded for the compiler; the
    reference interpreter ignores it.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> total, partial = lax.scan(lambda c, x: (c + x, c + x), 0.0, np.arange(4.0))
    >>> float(total), partial.tolist()
    (6.0, [0.0, 1.0, 3.0, 6.0])
    """
    carry_leaves, carry_tree = _flatten_operands(init, "scan init")
    x_leaves, x_tree = _flatten_operands(xs, "scan xs")
    lengths = set()
    for i, x in enumerate(x_leaves):
        s = aval(x).shape
        if not s:
            raise ValueError(f"scan got a scalar in xs (leaf {i}); scanned values need a leading axis")
        lengths.add(s[0])
    if length is not None:
        length = operator.index(length)
        if length < 0:
            raise ValueError(f"scan length must be non-negative, got {length}")
        lengths.add(length)
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` was not provided")
    if len(lengths) > 1:
        raise ValueError("scan got values with different leading axis sizes (and/or `length`): "
                         f"{sorted(lengths)}")
    (length,) = lengths
    unroll = _normalize_unroll(unroll, length)
    x_avals = [aval(x) for x in x_leaves]
    slice_avals = [a.update(shape=a.shape[1:]) for a in x_avals]
    n_carry = len(carry_leaves)

    def body_of_leaves(*leaves):
        out = f(tree_unflatten(carry_tree, leaves[:n_carry]), tree_unflatten(x_tree, leaves[n_carry:]))
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(f"scan body f must return a pair (carry, y), got {type(out).__name__}")
        return tuple(out)

    def trace_body(carry_avals):
        t = _trace(body_of_leaves, carry_avals + slice_avals, _name)
        out_carry_tree = t.out_tree.children[0]
        return t, t.out_avals[:n_carry] if out_carry_tree.num_leaves == n_carry else [], out_carry_tree

    body, carry_leaves = _trace_loop(_name, trace_body, carry_leaves, carry_tree)
    outs = scan_p.bind(*body.consts, *carry_leaves, *x_leaves, program=body.program, length=length,
                       reverse=bool(reverse), num_consts=len(body.consts), num_carry=n_carry,
                       unroll=unroll)
    y_tree = body.out_tree.children[1]
    return tree_unflatten(carry_tree, outs[:n_carry]), tree_unflatten(y_tree, outs[n_carry:])


def map(f, xs, *, batch_size=None):  # noqa: A001  (jax.lax.map's name)
    """``stack([f(x) for x in xs])`` as a ``scan`` over the leading axis.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import lax
    >>> lax.map(lambda x: x * x, np.arange(4)).tolist()
    [0, 1, 4, 9]
    """
    if batch_size is not None:
        raise NotImplementedError("lax.map(batch_size=...) is not supported; use vmap inside "
                                  "lax.map over a reshaped array instead")
    _, ys = scan(lambda _, x: ((), f(x)), (), xs)
    return ys
