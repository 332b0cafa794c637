"""The autodiff API: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``linearize``,
``jacfwd``, ``jacrev``, ``hessian``, ``stop_gradient``, ``custom_vjp``,
``custom_jvp`` and ``checkpoint`` / ``remat``, with JAX's signatures.

Each transformation traces the function once to a Program and differentiates
that program on the current trace (see :mod:`tracejit.transforms.ad`): eagerly
the derivative is computed with NumPy, under ``jit`` it is staged into the
enclosing program, and transformations nest (``grad(grad(f))``,
``jit(grad(f))``, ``grad(jit(f))``).

Applied eagerly (outside ``jit`` / ``vmap``, possibly nested in other eager
transformations) the function is traced with concrete values, as JAX runs it:
Python control flow on values works and the program records the path taken
for these arguments (so it is traced again at each call). The forward values
computed while tracing are reused by the derivative (``saved``).
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from tracejit.array import eager_results, eager_values
from tracejit.config import config
from tracejit.core import dtypes
from tracejit.core.avals import ShapedArray
from tracejit.core.check import check_program
from tracejit.core.interpret import eval_program
from tracejit.core.ir import Literal, Var
from tracejit.core.pytree import tree_flatten, tree_leaves, tree_map, tree_unflatten
from tracejit.core.trace import trace_flat
from tracejit.core.tracer import Tracer
from tracejit.core.values import get_aval, leaf_aval
from tracejit.ops.operands import convert
from tracejit.transforms.api_vmap import vmap
from tracejit.transforms.vjp_accumulators import VJP
from tracejit.transforms import ad
from tracejit.transforms.ad import float0, is_differentiable, stop_gradient_p
from tracejit.ops.binders import reshape, transpose
from tracejit.transforms.ad_custom import checkpoint, checkpoint_policies, custom_jvp, custom_vjp, remat

__all__ = ["checkpoint", "checkpoint_policies", "custom_jvp", "custom_vjp", "float0", "grad", "hessian",
           "jacfwd", "jacobian", "jacrev", "jvp", "linear_transpose", "linearize", "remat", "stop_gradient",
           "value_and_grad", "vjp"]


# --------------------------------------------------------------------------- tracing helpers



def _leaf_value(leaf, aval: ShapedArray):
    if isinstance(leaf, Tracer):
        return leaf
    if isinstance(leaf, np.ndarray) and leaf.dtype == aval.dtype:
        return leaf
    return np.asarray(leaf, dtype=aval.dtype)


class _Traced:
    """A function traced to a Program, with the pytree structures around it."""

    def __init__(self, fun, args: tuple, has_aux: bool, what: str):
        leaves, self.in_tree = tree_flatten(args)
        self.in_avals = [leaf_aval(leaf, f"an argument of {what}") for leaf in leaves]
        self.values = [_leaf_value(leaf, a) for leaf, a in zip(leaves, self.in_avals)]
        self.aux_tree = None
        box = {}

        def flat_fun(*tracers):
            out = fun(*tree_unflatten(self.in_tree, tracers))
            aux_leaves = []
            if has_aux:
                if not (isinstance(out, (tuple, list)) and len(out) == 2):
                    raise TypeError(f"{what} with has_aux=True requires the function to return a pair "
                                    f"(output, auxiliary data), but it returned {type(out).__name__}")
                out, aux = out
                aux_leaves, box["aux_tree"] = tree_flatten(aux)
            out_leaves, box["out_tree"] = tree_flatten(out)
            box["n_out"] = len(out_leaves)
            return list(out_leaves) + list(aux_leaves)

        # Eagerly (see trace_flat) the trace knows the arguments' values: Python control flow on
        # values works, as in JAX. Under jit / vmap the arguments stay abstract.
        self.program = trace_flat(flat_fun, self.in_avals, getattr(fun, "__name__", "function"),
                                  eager_args=self.values)
        if config.enable_checks:
            check_program(self.program)
        # Values the trace computed (for Python control flow), for the derivative to reuse
        # instead of computing them again; only when they are plain values (no enclosing
        # transformation differentiates through them).
        known = self.program.concrete_values
        self.saved = known if known and not any(
            isinstance(x, Tracer) for x in self.values + self.program.const_values) else None
        self.out_tree = box["out_tree"]
        self.aux_tree = box.get("aux_tree")
        self.n_out = box["n_out"]
        self.out_avals = self.program.out_avals[:self.n_out]

    def outputs(self):
        """The program's flat outputs at the arguments (known already when traced eagerly)."""
        p = self.program
        if self.saved is not None:
            env = dict(zip(p.const_vars, p.const_values))
            env.update(zip(p.in_vars, self.values))
            env.update(self.saved)
            if all(type(a) is Literal or a in env for a in p.outputs):
                return [a.val if type(a) is Literal else env[a] for a in p.outputs]
        return eval_program(p, p.const_values, self.values)

    def split(self, outs):
        """(outputs pytree, aux pytree or None) from the flat program outputs."""
        out = tree_unflatten(self.out_tree, outs[:self.n_out])
        aux = tree_unflatten(self.aux_tree, outs[self.n_out:]) if self.aux_tree is not None else None
        return out, aux


def _argnums_tuple(argnums):
    if isinstance(argnums, (tuple, list)):
        return tuple(operator.index(i) for i in argnums)
    return (operator.index(argnums),)


def _bind_argnums(fun, args, kwargs, argnums, what):
    """``fun`` as a function of the differentiated positional arguments only."""
    nums = _argnums_tuple(argnums)
    n = len(args)
    if any(i >= n or i < -n for i in nums):
        need = max(i if i >= 0 else -i - 1 for i in nums) + 1
        raise TypeError(f"differentiating with respect to argnums={argnums} requires at least {need} "
                        f"positional arguments to be passed by the caller, but got only {n} positional "
                        f"arguments.")
    nums = tuple(i % n for i in nums)

    def partial(*dyn):
        full = list(args)
        for i, d in zip(nums, dyn):
            full[i] = d
        return fun(*full, **kwargs)
    partial.__name__ = getattr(fun, "__name__", "function")
    return partial, tuple(args[i] for i in nums)


def _check_input_dtypes(what, diff_args, holomorphic, allow_int, real_only):
    for leaf in tree_leaves(diff_args):
        dtype = leaf_aval(leaf, f"an argument of {what}").dtype
        if holomorphic:
            if dtype.kind != "c":
                raise TypeError(f"{what} with holomorphic=True requires inputs with complex dtype, but got "
                                f"{dtype.name}.")
        elif dtype.kind == "c" and real_only:
            raise TypeError(f"{what} requires real-valued inputs (input dtype that is a sub-dtype of "
                            f"np.floating), but got {dtype.name}. For holomorphic differentiation, pass "
                            "holomorphic=True.")
        elif dtype.kind in "biu" and not allow_int:
            kinds = "real-valued inputs (input dtype that is a sub-dtype of np.floating)" if real_only else \
                "real- or complex-valued inputs (input dtype that is a sub-dtype of np.inexact)"
            raise TypeError(f"{what} requires {kinds}, but got {dtype.name}. If you want to use Boolean- or "
                            "integer-valued inputs, use vjp or set allow_int to True.")


def _check_output_dtype(what, aval, holomorphic):
    if holomorphic:
        if aval.dtype.kind != "c":
            raise TypeError(f"{what} with holomorphic=True requires outputs with complex dtype, but got "
                            f"{aval.dtype.name}.")
    elif aval.dtype.kind == "c":
        raise TypeError(f"{what} requires real-valued outputs (output dtype that is a sub-dtype of "
                        f"np.floating), but got {aval.dtype.name}. For holomorphic differentiation, pass "
                        "holomorphic=True. For non-holomorphic functions with complex outputs, use vjp directly.")
    elif not dtypes.is_float(aval.dtype):
        raise TypeError(f"{what} requires real-valued outputs (output dtype that is a sub-dtype of "
                        f"np.floating), but got {aval.dtype.name}. For functions with integer outputs, use "
                        "vjp directly.")


_instantiate_ct = ad.instantiate_or_float0


def _shape_dtype(x):
    if isinstance(x, Tracer):
        return x.aval.shape, x.aval.dtype, x.aval.weak_type
    if dtypes.is_python_scalar(x):
        return (), dtypes.python_scalar_dtype(x), True
    arr = np.asarray(x)
    return arr.shape, arr.dtype, False


def _as_dtype(x, dtype):
    if isinstance(x, Tracer):
        return convert(x, dtype)
    return np.asarray(x, dtype)


# --------------------------------------------------------------------------- reverse mode

def vjp(fun, *primals, has_aux=False, reduce_axes=()):
    """Evaluate ``fun(*primals)`` and return its vector-Jacobian product function.

    Parameters
    ----------
    fun : callable
        Function of arrays / pytrees of arrays.
    *primals
        The point to linearize at.
    has_aux : bool
        ``fun`` returns ``(output, aux)``; ``aux`` is returned, not differentiated.

    Returns
    -------
    (out, vjp_fn) or (out, vjp_fn, aux)
        ``vjp_fn(cotangent)`` takes a cotangent shaped like ``out`` and returns a
        tuple with one cotangent per primal (float0 zeros for integer primals);
        ``vjp_fn.with_refs(...)`` sends each to a value, a Ref accumulator or nowhere
        (``tracejit.ad``'s markers, transforms/vjp_accumulators.py).

    Examples
    --------
    >>> import numpy as np
    >>> out, f_vjp = vjp(np.sin, np.float64(0.0))
    >>> f_vjp(np.float64(1.0))
    (Array(1.),)
    """
    t = _Traced(fun, tuple(primals), has_aux, "vjp")
    outs, _, backward = ad.vjp_program(t.program, t.program.const_values, t.values, saved=t.saved)
    out_avals = t.out_avals
    n_aux = len(outs) - t.n_out

    def vjp_fn(cotangent):
        ct_leaves, ct_tree = tree_flatten(cotangent)
        if ct_tree != t.out_tree:
            raise TypeError(f"Tree structure of cotangent input {ct_tree}, does not match structure of "
                            f"primal output {t.out_tree}.")
        cts = []
        for ct, a in zip(ct_leaves, out_avals):
            shape, dtype, weak = _shape_dtype(ct)
            if shape != a.shape:
                raise ValueError(f"Shape of cotangent input to vjp pullback function {shape} must be the same "
                                 f"as the shape of corresponding primal output {a.shape}.")
            if not is_differentiable(a.dtype):
                cts.append(None)
                continue
            if dtype != a.dtype and not weak:
                raise TypeError(f"Type of cotangent input to vjp pullback function ({dtype.name}) is not the "
                                f"expected tangent type ({a.dtype.name}) of corresponding primal output with "
                                f"dtype {a.dtype.name}.")
            cts.append(_as_dtype(ct, a.dtype))
        _, in_cts = backward(cts + [None] * n_aux)
        return tree_unflatten(t.in_tree, [_instantiate_ct(ct, a) for ct, a in zip(in_cts, t.in_avals)])

    out, aux = t.split(outs)
    ct_avals = [(tuple(a.shape), a.dtype if is_differentiable(a.dtype) else float0) for a in t.in_avals]
    vjp_fn = VJP(eager_results(vjp_fn), t.in_tree, ct_avals)
    return eager_values((out, vjp_fn, aux) if has_aux else (out, vjp_fn))


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """Like :func:`grad`, but the function returns ``(value, gradient)``.

    Examples
    --------
    >>> import numpy as np
    >>> value_and_grad(lambda x: x ** 2)(3.0)
    (Array(9.), Array(6.))
    """
    _argnums_tuple(argnums)

    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        f, diff_args = _bind_argnums(fun, args, kwargs, argnums, "grad")
        _check_input_dtypes("grad", diff_args, holomorphic, allow_int, real_only=False)
        res = vjp(f, *diff_args, has_aux=has_aux)
        out, f_vjp = res[0], res[1]
        leaves, tree = tree_flatten(out)
        if len(leaves) != 1 or _shape_dtype(leaves[0])[0] != ():
            shape = _shape_dtype(leaves[0])[0] if len(leaves) == 1 else f"a pytree {tree}"
            raise TypeError(f"grad requires scalar output: gradient only defined for scalar-output functions. "
                            f"Output had shape: {shape}.")
        shape, dtype, _ = _shape_dtype(leaves[0])
        _check_output_dtype("grad", ShapedArray(shape, dtype), holomorphic)
        g = f_vjp(tree_unflatten(tree, [np.ones((), dtype)]))
        g = g if isinstance(argnums, (tuple, list)) else g[0]
        return ((out, res[2]), g) if has_aux else (out, g)
    return eager_results(value_and_grad_f)


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """The gradient of a scalar-valued function.

    Parameters
    ----------
    fun : callable
        Returns a real scalar (complex with ``holomorphic=True``).
    argnums : int or sequence of ints
        Which positional arguments to differentiate; a sequence gives a tuple.
    has_aux : bool
        ``fun`` returns ``(value, aux)``; the result is ``(gradient, aux)``.
    holomorphic : bool
        ``fun`` is holomorphic in complex inputs.
    allow_int : bool
        Accept integer / boolean inputs (their gradient is float0 zeros).

    Raises
    ------
    TypeError
        For a non-scalar output ("grad requires scalar output") or integer inputs.

    Examples
    --------
    >>> import numpy as np
    >>> grad(lambda x: np.sum(np.sin(x)))(np.zeros(2))
    Array([1., 1.])
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        res = vg(*args, **kwargs)
        if has_aux:
            (_, aux), g = res
            return g, aux
        return res[1]
    return grad_f


# --------------------------------------------------------------------------- forward mode

def _check_tangents(t: _Traced, tangents):
    tan_leaves, tan_tree = tree_flatten(tuple(tangents))
    if tan_tree != t.in_tree:
        raise TypeError(f"primal and tangent arguments to jvp must have the same tree structure; primals have "
                        f"tree structure {t.in_tree} whereas tangents have tree structure {tan_tree}.")
    out = []
    for tl, a in zip(tan_leaves, t.in_avals):
        shape, dtype, weak = _shape_dtype(tl)
        if shape != a.shape:
            raise ValueError(f"jvp called with different primal and tangent shapes; got primal shape {a.shape} "
                             f"and tangent shape {shape}")
        if not is_differentiable(a.dtype):
            if dtype != float0:
                raise TypeError(f"primal and tangent arguments to jvp do not match; dtypes must be equal, or in "
                                f"case of int/bool primal dtype the tangent dtype must be float0. Got primal "
                                f"dtype {a.dtype.name} and tangent dtype {dtype}.")
            out.append(None)
        elif dtype != a.dtype and not weak:
            raise TypeError(f"primal and tangent arguments to jvp do not match; dtypes must be equal. Got primal "
                            f"dtype {a.dtype.name} and so expected tangent dtype {a.dtype.name}, but got tangent "
                            f"dtype {dtype.name} instead.")
        else:
            out.append(_as_dtype(tl, a.dtype))
    return out


def jvp(fun, primals, tangents, has_aux=False):
    """Jacobian-vector product: ``(fun(*primals), J @ tangents)`` by forward mode.

    Examples
    --------
    >>> import numpy as np
    >>> jvp(np.sin, (np.float64(0.0),), (np.float64(2.0),))
    (Array(0.), Array(2.))
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to jvp must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__}.")
    t = _Traced(fun, tuple(primals), has_aux, "jvp")
    ts = _check_tangents(t, tangents)
    outs, touts = ad.jvp_program(t.program, t.program.const_values, t.values, None, ts, saved=t.saved)
    out, aux = t.split(outs)
    tan = tree_unflatten(t.out_tree, [_instantiate_ct(tt, a) for tt, a in zip(touts[:t.n_out], t.out_avals)])
    return eager_values((out, tan, aux) if has_aux else (out, tan))


def linearize(fun, *primals, has_aux=False):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` is the JVP at ``primals``.

    The function is traced once; each ``f_jvp`` call evaluates the traced
    program's forward mode (under ``jit`` the compiler removes the repeated
    primal work).

    Examples
    --------
    >>> import numpy as np
    >>> y, f_jvp = linearize(np.sin, np.float64(0.0))
    >>> f_jvp(np.float64(3.0))
    Array(3.)
    """
    t = _Traced(fun, tuple(primals), has_aux, "linearize")
    outs = t.outputs()
    out, aux = t.split(outs)

    def f_jvp(*tangents):
        ts = _check_tangents(t, tangents)
        _, touts = ad.jvp_program(t.program, t.program.const_values, t.values, None, ts, saved=t.saved)
        return tree_unflatten(t.out_tree, [_instantiate_ct(tt, a) for tt, a in zip(touts[:t.n_out], t.out_avals)])
    f_jvp = eager_results(f_jvp)
    return eager_values((out, f_jvp, aux) if has_aux else (out, f_jvp))


def linear_transpose(fun, *primals):
    """The transpose of the linear function ``fun`` at the shapes of ``primals``.

    Examples
    --------
    >>> import numpy as np
    >>> f_t = linear_transpose(lambda x: 2 * x, np.zeros(2))
    >>> f_t(np.ones(2))
    (Array([2., 2.]),)
    """
    _, f_vjp = vjp(fun, *primals)
    return f_vjp


# --------------------------------------------------------------------------- Jacobians

def _std_basis(avals):
    """One array per aval, of shape ``(n,) + aval.shape`` with n the total size: together, row k of
    them is the k-th unit vector of all the avals' elements laid end to end."""
    n = sum(a.size for a in avals)
    bases, offset = [], 0
    for a in avals:
        b = np.zeros((n, a.size), a.dtype)
        b[offset:offset + a.size] = np.eye(a.size, dtype=a.dtype)
        bases.append(b.reshape((n,) + a.shape))
        offset += a.size
    return bases


def _column_block(columns, offset, in_aval, out_aval):
    """The Jacobian block ``out.shape + in.shape`` of one input, from jacfwd's per-basis-vector
    results ``columns`` (shape ``(n,) + out.shape``; this input's rows start at ``offset``)."""
    part = columns[offset:offset + in_aval.size]
    return reshape(transpose(part, tuple(range(1, get_aval(part).ndim)) + (0,)), out_aval.shape + in_aval.shape)


def _zero_block(out_aval, in_aval):
    shape = out_aval.shape + in_aval.shape
    if not is_differentiable(in_aval.dtype) or not is_differentiable(out_aval.dtype):
        return np.zeros(shape, float0)
    return np.zeros(shape, np.result_type(out_aval.dtype, in_aval.dtype))


def _jac_tree(t: _Traced, jac, argnums):
    """jac[j][i] (output leaf j, input leaf i) -> out pytree of input pytrees."""
    per_out = []
    for row in jac:
        tree = tree_unflatten(t.in_tree, row)
        per_out.append(tree if isinstance(argnums, (tuple, list)) else tree[0])
    return tree_unflatten(t.out_tree, per_out)


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """Jacobian by reverse mode: the backward pass vmapped over every output element.

    The result for output leaf of shape ``S_out`` and input of shape ``S_in``
    has shape ``S_out + S_in``.

    Examples
    --------
    >>> import numpy as np
    >>> jacrev(lambda x: x ** 2)(np.array([1.0, 2.0]))
    Array([[2., 0.],
           [0., 4.]])
    """
    _argnums_tuple(argnums)

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        f, diff_args = _bind_argnums(fun, args, kwargs, argnums, "jacrev")
        _check_input_dtypes("jacrev", diff_args, holomorphic, allow_int, real_only=True)
        t = _Traced(f, diff_args, has_aux, "jacrev")
        outs, _, backward = ad.vjp_program(t.program, t.program.const_values, t.values, saved=t.saved)
        active = [i for i, ia in enumerate(t.in_avals) if is_differentiable(ia.dtype)]
        jac = []
        for j, oa in enumerate(t.out_avals):
            _check_output_dtype("jacrev", oa, holomorphic)
            row = [_zero_block(oa, ia) for ia in t.in_avals]
            if active and oa.size and is_differentiable(oa.dtype):
                def pull(ct, j=j):
                    cts = [None] * len(outs)
                    cts[j] = ct
                    in_cts = backward(cts)[1]
                    return [_instantiate_ct(in_cts[i], t.in_avals[i]) for i in active]
                # One backward pass for every output element at once: vmap over the cotangent basis.
                pulled = vmap(pull)(_std_basis([oa])[0])
                for i, rows in zip(active, pulled):
                    # Row k of `rows` is the gradient of output element k.
                    row[i] = rows.reshape(oa.shape + t.in_avals[i].shape)
            jac.append(row)
        res = _jac_tree(t, jac, argnums)
        return (res, t.split(outs)[1]) if has_aux else res
    return eager_results(jacfun)


jacobian = jacrev


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """Jacobian by forward mode: the JVP vmapped over every input element (shape ``S_out + S_in``).

    Examples
    --------
    >>> import numpy as np
    >>> jacfwd(lambda x: x ** 2)(np.array([1.0, 2.0]))
    Array([[2., 0.],
           [0., 4.]])
    """
    _argnums_tuple(argnums)

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        f, diff_args = _bind_argnums(fun, args, kwargs, argnums, "jacfwd")
        _check_input_dtypes("jacfwd", diff_args, holomorphic, False, real_only=True)
        t = _Traced(f, diff_args, has_aux, "jacfwd")
        outs = t.outputs()
        if holomorphic:
            for oa in t.out_avals:
                _check_output_dtype("jacfwd", oa, holomorphic)
        jac = [[_zero_block(oa, ia) for ia in t.in_avals] for oa in t.out_avals]
        active = [j for j, oa in enumerate(t.out_avals) if is_differentiable(oa.dtype) and oa.size]
        if active and sum(ia.size for ia in t.in_avals):
            def push(*tangents):
                touts = ad.jvp_program(t.program, t.program.const_values, t.values, None, list(tangents),
                                       saved=t.saved)[1]
                return [_instantiate_ct(touts[j], t.out_avals[j]) for j in active]
            # One JVP for every input element at once: vmap over the tangent basis.
            pushed = vmap(push)(*_std_basis(t.in_avals))
            for j, rows in zip(active, pushed):
                offset = 0
                for i, ia in enumerate(t.in_avals):
                    if ia.size:
                        jac[j][i] = _column_block(rows, offset, ia, t.out_avals[j])
                    offset += ia.size
        res = _jac_tree(t, jac, argnums)
        return (res, t.split(outs)[1]) if has_aux else res
    return eager_results(jacfun)


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Hessian, ``jacfwd(jacrev(fun))`` (shape ``S_out + S_in + S_in``).

    Examples
    --------
    >>> import numpy as np
    >>> hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    Array([[ 6.,  0.],
           [ 0., 12.]])
    """
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)


# --------------------------------------------------------------------------- stop_gradient

def stop_gradient(x):
    """The identity, with zero derivative (applied to every leaf of a pytree).

    Examples
    --------
    >>> import numpy as np
    >>> grad(lambda x: x * stop_gradient(x))(3.0)
    Array(3.)
    """
    def leaf(v):
        if isinstance(v, Tracer) and is_differentiable(v.dtype):
            return stop_gradient_p.bind(v)
        return v
    return tree_map(leaf, x)
