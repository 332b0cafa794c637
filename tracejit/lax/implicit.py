"""``lax.custom_root`` and ``lax.custom_linear_solve``: solvers differentiated implicitly.

Both are JAX's (``jax.lax.custom_root`` / ``jax.lax.custom_linear_solve``), built on tracejit's
``custom_jvp`` / ``custom_vjp`` instead of JAX's ``linear_solve_p``:

- The user functions are traced once with ``closure_convert``, so the traced values they close over
  (the parameters being differentiated) become explicit arguments.
- The solver itself is never differentiated. A root ``x*(p)`` of ``f(x, p) = 0`` gets
  ``dx = -(df/dx)^{-1} df/dp dp`` (``tangent_solve`` on ``f`` linearized at the root); a solution of
  ``A x = b`` gets ``dx = A^{-1} (db - dA x)``, with ``A^{-1}`` applied by ``solve`` again.
- Reverse mode transposes that JVP. For the linear solve, the ``A^{-1}`` in the tangent is then a
  ``custom_vjp`` whose backward pass is ``transpose_solve`` on the transposed operator (found with
  ``linear_transpose``), as JAX's transpose rule; in forward mode it stays the ``custom_jvp``. Any
  solver, even a ``while_loop``, works in both modes, and derivatives nest (``grad(grad)``,
  ``jacfwd(jacrev)``, ``jacfwd(jacfwd)``, ``grad`` of a ``jvp``).
"""
from __future__ import annotations

import numpy as np
from tracejit.core import dtypes

from tracejit.array import eager_results
from tracejit.core.pytree import tree_flatten, tree_map, tree_structure
from tracejit.core.trace import EVAL_TRACE, current_trace
from tracejit.numpy._util import aval
from tracejit.transforms.ad_custom import closure_convert, custom_jvp, custom_vjp
from tracejit.transforms.api_ad import jvp
from tracejit.transforms.api_ad import linearize
from tracejit.transforms import ad
from tracejit.transforms.ad_custom import custom_jvp_call_p
from tracejit.transforms.api_ad import vjp
from tracejit.transforms.api_ad import linear_transpose

__all__ = ["custom_root", "custom_linear_solve"]

_CUSTOM = {}


def _custom(name):
    """The ``custom_jvp`` / ``custom_vjp`` functions, made on first use (``ad_custom`` imports
    ``tracejit.numpy``, which imports ``lax``)."""
    if not _CUSTOM:
        root = custom_jvp(_root, nondiff_argnums=(0,))
        root.defjvp(_root_jvp)
        linear = custom_jvp(_linear_solve, nondiff_argnums=(0,))
        linear.defjvp(_linear_solve_jvp)
        inverse = custom_vjp(_inverse, nondiff_argnums=(0,))
        inverse.defvjp(_inverse_fwd, _inverse_bwd)
        _CUSTOM.update(root=root, linear=linear, inverse=inverse)
    return _CUSTOM[name]


def _zeros_like(tree):
    import tracejit.numpy as jnp
    return tree_map(jnp.zeros_like, tree)


def _check_tree(what, out, like, has_aux):
    if has_aux:
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(f"{what} with has_aux=True must return a pair (solution, aux), got {type(out).__name__}")
        out = out[0]
    if tree_structure(out) != tree_structure(like):
        raise TypeError(f"{what}() output pytree structure must match, got {tree_structure(out)} and "
                        f"{tree_structure(like)}")
    shapes = [np.shape(x) for x in tree_flatten(out)[0]]
    expected = [np.shape(x) for x in tree_flatten(like)[0]]
    if shapes != expected:
        raise ValueError(f"{what}() output shapes must match, got {shapes} and {expected}")


def _converted(fun, *example_args):
    """``fun`` as a function of its arguments followed by the traced values it closes over."""
    conv, consts = closure_convert(fun, *example_args)
    return conv, tuple(consts)


def _sub(x, y):
    return tree_map(lambda a, b: a - b, x, y)


def _tangent_of(fun, consts, dconsts):
    """The change of ``fun(*consts)`` along ``dconsts`` (a JVP in the closed-over values)."""
    return jvp(fun, tuple(consts), tuple(dconsts))[1]


# --------------------------------------------------------------------------- custom_root

class _Root:
    """The traced pieces of one ``custom_root`` call (a static ``nondiff_argnums`` argument)."""

    def __init__(self, f, solve, lin_solve, has_aux):
        self.f, self.solve, self.lin_solve, self.has_aux = f, solve, lin_solve, has_aux


def _root(system, consts, guess):
    return system.solve(guess, *consts[1])


def _root_jvp(system, primals, tangents):
    consts, guess = primals
    out = _custom("root")(system, consts, guess)
    sol = out[0] if system.has_aux else out
    # f(x*(p), p) = 0  =>  dx* = -(df/dx)^{-1} (df/dp dp)
    if consts[0]:
        rhs = _tangent_of(lambda *c: system.f(sol, *c), consts[0], tangents[0][0])
        sol_dot = tree_map(lambda t: -t, system.lin_solve(sol, rhs, *consts[2]))
    else:                   # f closes over nothing that is differentiated
        sol_dot = _zeros_like(sol)
    return out, ((sol_dot, _zeros_like(out[1])) if system.has_aux else sol_dot)


@eager_results
def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """Find a root of ``f`` with ``solve``, differentiated by the implicit function theorem
    (``jax.lax.custom_root``).

    Derivatives are taken with respect to the values ``f`` closes over, assuming
    ``f(solution) == 0``; ``solve`` is never differentiated (it may use ``while_loop``).

    Parameters
    ----------
    f : callable
        ``f(x)`` returns a pytree shaped like ``x``.
    initial_guess : pytree of arrays
    solve : callable
        ``solve(f, initial_guess)`` returns the root (with ``has_aux``: ``(root, aux)``).
    tangent_solve : callable
        ``tangent_solve(g, y)`` solves the linear ``g(x) = y``, ``g`` being ``f`` linearized at
        the root, e.g. ``lambda g, y: y / g(1.0)`` for a scalar.
    has_aux : bool
        ``solve`` also returns auxiliary data (given zero derivative).

    Returns
    -------
    ``solve(f, initial_guess)``.

    Examples
    --------
    >>> import tracejit
    >>> from tracejit import lax
    >>> def newton(f, x0):
    ...     def step(_, x):
    ...         return x - f(x) / tracejit.grad(f)(x)
    ...     return lax.fori_loop(0, 20, step, x0)
    >>> def sqrt(a):
    ...     return lax.custom_root(lambda x: x ** 2 - a, 1.0, newton, lambda g, y: y / g(1.0))
    >>> round(float(sqrt(2.0)), 12), round(float(tracejit.grad(sqrt)(4.0)), 12)
    (1.414213562373, 0.25)
    """
    if current_trace() is EVAL_TRACE:       # nothing is being differentiated
        out = solve(f, initial_guess)
        _check_tree("solve", out, initial_guess, has_aux)
        return out
    f_conv, f_consts = _converted(f, initial_guess)
    solve_conv, solve_consts = _converted(lambda x: solve(f, x), initial_guess)

    def lin_solve(x, y):
        return tangent_solve(linearize(f, x)[1], y)
    lin_conv, lin_consts = _converted(lin_solve, initial_guess, initial_guess)
    out = _custom("root")(_Root(f_conv, solve_conv, lin_conv, has_aux), (f_consts, solve_consts, lin_consts),
                          initial_guess)
    _check_tree("solve", out, initial_guess, has_aux)
    return out


# --------------------------------------------------------------------------- custom_linear_solve

class _Linear:
    """The traced operator and solvers of one ``custom_linear_solve`` call (static)."""

    def __init__(self, matvec, vecmat, solve, transpose_solve, has_aux):
        self.matvec, self.vecmat = matvec, vecmat
        self.solve, self.transpose_solve, self.has_aux = solve, transpose_solve, has_aux

    def transposed(self):
        """The system of ``A^T``, solution only."""
        return _Linear(self.vecmat, self.matvec, self.transpose_solve, self.solve, False)

    def solution_only(self):
        if not self.has_aux:
            return self
        return _Linear(self.matvec, self.vecmat, lambda *a: self.solve(*a)[0],
                       None if self.transpose_solve is None else lambda *a: self.transpose_solve(*a)[0], False)


def _swap(consts):
    mv, vm, s, ts = consts
    return vm, mv, ts, s


def _linear_solve(system, consts, b):
    return system.solve(b, *consts[2])


def _linear_solve_jvp(system, primals, tangents):
    consts, b = primals
    dconsts, db = tangents
    out = _custom("linear")(system, consts, b)
    x = out[0] if system.has_aux else out
    # A x = b  =>  dx = A^{-1} (db - dA x)
    rhs = _sub(db, _tangent_of(lambda *c: system.matvec(x, *c), consts[0], dconsts[0])) if consts[0] else db
    # The tangent's A^{-1}: reverse mode transposes this rule (ad.vjp_via_jvp) and needs the custom_vjp,
    # whose backward pass is transpose_solve; forward mode keeps the custom_jvp (so jvp-of-jvp works).
    inverse = _custom("inverse" if _being_transposed() else "linear")
    x_dot = inverse(system.solution_only(), consts, rhs)
    return out, ((x_dot, _zeros_like(out[1])) if system.has_aux else x_dot)


def _being_transposed():
    """True while reverse mode traces a custom JVP rule's tangent map to transpose it."""
    return custom_jvp_call_p in ad._transposing


def _inverse(system, consts, y):
    """``A^{-1} y`` in a tangent: reverse mode applies ``A^{-T}`` with ``transpose_solve``."""
    return system.solve(y, *consts[2])


def _inverse_fwd(system, consts, y):
    x = _custom("linear")(system, consts, y)
    return x, (consts, x)


def _inverse_bwd(system, residuals, ct):
    consts, x = residuals
    if system.transpose_solve is None:
        raise TypeError("transpose_solve required for backwards mode automatic differentiation of "
                        "custom_linear_solve")
    lam = _custom("linear")(system.transposed(), _swap(consts), ct)     # A^{-T} ct
    mv = consts[0]
    ct_mv = [None] * len(mv)
    active = [i for i, c in enumerate(mv) if dtypes.is_inexact(aval(c).dtype)]
    if active:
        # x = A(p)^{-1} y  =>  ct_p = -(d(A(p) x)/dp)^T lam
        def apply(*cs):
            full = list(mv)
            for i, c in zip(active, cs):
                full[i] = c
            return system.matvec(x, *full)
        _, pull = vjp(apply, *(mv[i] for i in active))
        for i, c in zip(active, pull(lam)):
            ct_mv[i] = -c
    none = [tuple(None for _ in group) for group in consts[1:]]
    return (tuple(ct_mv), *none), lam


@eager_results
def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False, has_aux=False):
    """Solve the linear system ``matvec(x) = b`` with ``solve``, differentiated implicitly
    (``jax.lax.custom_linear_solve``).

    The derivative assumes ``matvec(solve(matvec, b)) == b``: ``dx = A^{-1} (db - dA x)``
    (``solve`` applies ``A^{-1}``; reverse mode uses ``transpose_solve`` on the transposed operator).
    ``solve`` and ``transpose_solve`` are never differentiated.

    Parameters
    ----------
    matvec : callable
        The linear operator ``A``: ``matvec(x)`` is shaped like ``b``. Differentiable in the
        values it closes over.
    b : pytree of arrays
    solve : callable
        ``solve(matvec, b)`` returns ``x`` (with ``has_aux``: ``(x, aux)``).
    transpose_solve : callable, optional
        ``transpose_solve(vecmat, b)`` solves with the transposed operator ``vecmat`` (built with
        ``linear_transpose``). Needed for reverse mode unless ``symmetric``.
    symmetric : bool
        ``A`` is symmetric: ``matvec`` is its own transpose and ``solve`` the default ``transpose_solve``.
    has_aux : bool
        The solvers also return auxiliary data (given zero derivative).

    Returns
    -------
    ``solve(matvec, b)``.

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit, tracejit.numpy as jnp
    >>> from tracejit import lax
    >>> a = np.array([[2.0, 1.0], [1.0, 3.0]])
    >>> def f(a, b):
    ...     return lax.custom_linear_solve(lambda x: a @ x, b, lambda mv, y: jnp.linalg.solve(a, y),
    ...                                    symmetric=True)
    >>> f(a, np.array([3.0, 4.0]))
    Array([1., 1.])
    >>> tracejit.grad(lambda b: f(a, b).sum())(np.array([3.0, 4.0]))
    Array([0.4, 0.2])
    """
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    if current_trace() is EVAL_TRACE:       # nothing is being differentiated
        out = solve(matvec, b)
        _check_tree("solve", out, b, has_aux)
        return out
    mv, mv_consts = _converted(matvec, b)
    sv, sv_consts = _converted(lambda y: solve(matvec, y), b)
    vm = tsv = None
    vm_consts = tsv_consts = ()
    if transpose_solve is not None:
        if symmetric:
            vecmat, vm, vm_consts = matvec, mv, mv_consts
        else:
            transpose = linear_transpose(matvec, b)

            def vecmat(y):
                return transpose(y)[0]
            vm, vm_consts = _converted(vecmat, b)
        tsv, tsv_consts = _converted(lambda y: transpose_solve(vecmat, y), b)
    out = _custom("linear")(_Linear(mv, vm, sv, tsv, has_aux), (mv_consts, vm_consts, sv_consts, tsv_consts), b)
    _check_tree("solve", out, b, has_aux)
    return out
