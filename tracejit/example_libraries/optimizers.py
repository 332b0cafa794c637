"""Functional optimizers (as ``jax.example_libraries.optimizers``).

An optimizer is a triple ``(init_fun, update_fun, get_params)``::

    opt_init, opt_update, get_params = optimizers.adam(step_size=1e-3)
    opt_state = opt_init(params)                  # params: any pytree of arrays
    opt_state = opt_update(i, grads, opt_state)   # i: the step number (int or traced)
    params = get_params(opt_state)

The state is an :class:`OptimizerState`, a registered pytree, so ``opt_update`` can run under
``jit`` and the state can cross ``jit``, ``vmap`` and ``lax.scan`` boundaries.  ``step_size``
is a number or a schedule ``i -> step size`` (:func:`exponential_decay`, :func:`piecewise_constant`, ...).

Examples
--------
>>> import numpy as np
>>> from tracejit.example_libraries import optimizers
>>> opt_init, opt_update, get_params = optimizers.sgd(0.1)
>>> state = opt_update(0, {"w": np.array([1.0])}, opt_init({"w": np.array([2.0])}))
>>> get_params(state)
{'w': array([1.9])}
"""
from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import numpy as np
from tracejit.core import dtypes

import tracejit.numpy as jnp
from tracejit.core.pytree import register_pytree_node, tree_flatten, tree_leaves, tree_map, tree_unflatten

__all__ = [
    "JoinPoint", "Optimizer", "OptimizerState", "adagrad", "adam", "adamax", "clip_grads", "constant",
    "exponential_decay", "inverse_time_decay", "l2_norm", "make_schedule", "momentum", "nesterov", "optimizer",
    "pack_optimizer_state", "piecewise_constant", "polynomial_decay", "rmsprop", "rmsprop_momentum", "sgd", "sm3",
    "unpack_optimizer_state", "Array", "Params", "State", "Updates", "Step", "InitFn", "UpdateFn", "ParamsFn",
]

Schedule = Callable[[Any], Any]


class OptimizerState(NamedTuple):
    """Optimizer state for a pytree of parameters.

    ``packed_state`` holds, per parameter leaf, the flat leaves of that leaf's state; ``tree_def``
    is the parameters' structure and ``subtree_defs`` the structure of each leaf's state.  Only
    ``packed_state`` is pytree data (``tree_def`` and ``subtree_defs`` are static).
    """
    packed_state: Any
    tree_def: Any
    subtree_defs: Any


register_pytree_node(OptimizerState,
                     lambda s: ((s.packed_state,), (s.tree_def, tuple(s.subtree_defs))),
                     lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))

# JAX's typing aliases of this module (annotations only).
Array = Any
Params = Any
State = Any
Updates = Any
Step = int
InitFn = Callable[[Params], OptimizerState]
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]


class Optimizer(NamedTuple):
    """``(init_fn, update_fn, params_fn)`` of an optimizer over pytrees."""
    init_fn: Callable
    update_fn: Callable
    params_fn: Callable


def optimizer(opt_maker):
    """Decorator lifting an optimizer defined on single arrays to pytrees of arrays.

    ``opt_maker(*args)`` returns ``(init, update, get_params)`` acting on one array (``init(x0)``
    returns any pytree state, ``update(i, g, state)`` a new state of the same structure); the
    decorated maker returns an :class:`Optimizer` acting leafwise on parameter pytrees.

    Examples
    --------
    >>> @optimizer
    ... def halve():
    ...     return (lambda x0: x0), (lambda i, g, x: x / 2), (lambda x: x)
    >>> init, update, get = halve()
    >>> get(update(0, (1.0, 1.0), init((4.0, 8.0))))
    (2.0, 4.0)
    """
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            x0_flat, tree = tree_flatten(x0_tree)
            flat = [tree_flatten(init(x0)) for x0 in x0_flat]
            return OptimizerState([f[0] for f in flat], tree, tuple(f[1] for f in flat))

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            states_flat, tree, subtrees = opt_state
            grad_flat, tree2 = tree_flatten(grad_tree)
            if tree2 != tree:
                raise TypeError("optimizer update function was passed a gradient tree that did not match the "
                                f"parameter tree structure with which it was initialized: parameter tree {tree} "
                                f"and grad tree {tree2}.")
            states = [tree_unflatten(s, f) for s, f in zip(subtrees, states_flat)]
            new_flat = [tree_flatten(update(i, g, s)) for g, s in zip(grad_flat, states)]
            for subtree, (_, subtree2) in zip(subtrees, new_flat):
                if subtree2 != subtree:
                    raise TypeError("optimizer update function produced an output structure that did not match "
                                    f"its input structure: input {subtree} and output {subtree2}.")
            return OptimizerState([f[0] for f in new_flat], tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            states_flat, tree, subtrees = opt_state
            states = [tree_unflatten(s, f) for s, f in zip(subtrees, states_flat)]
            return tree_unflatten(tree, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker


# ------------------------------------------------------------------------------------------------ optimizers
@optimizer
def sgd(step_size):
    """Stochastic gradient descent: ``x -= step_size(i) * g``.

    Examples
    --------
    >>> init, update, get = sgd(0.5)
    >>> float(get(update(0, 2.0, init(1.0))))
    0.0
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0

    def update(i, g, x):
        return x - _lr(step_size, i, x) * g

    def get_params(x):
        return x
    return init, update, get_params


@optimizer
def momentum(step_size, mass: float):
    """Heavy-ball momentum: ``v = mass * v + g``; ``x -= step_size(i) * v``.

    Examples
    --------
    >>> init, update, get = momentum(1.0, 0.5)
    >>> s = update(1, 1.0, update(0, 1.0, init(0.0)))
    >>> float(get(s))
    -2.5
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - _lr(step_size, i, x) * velocity, velocity

    def get_params(state):
        return state[0]
    return init, update, get_params


@optimizer
def nesterov(step_size, mass: float):
    """Nesterov momentum: ``v = mass * v + g``; ``x -= step_size(i) * (mass * v + g)``.

    Examples
    --------
    >>> init, update, get = nesterov(1.0, 0.5)
    >>> float(get(update(0, 1.0, init(0.0))))
    -1.5
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - _lr(step_size, i, x) * (mass * velocity + g), velocity

    def get_params(state):
        return state[0]
    return init, update, get_params


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad with momentum: ``G += g**2``; ``m = (1 - momentum) * g / sqrt(G) + momentum * m``; ``x -= step * m``.

    Examples
    --------
    >>> init, update, get = adagrad(1.0, momentum=0.0)
    >>> float(get(update(0, 3.0, init(0.0))))
    -1.0
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        g_sq_inv_sqrt = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - _lr(step_size, i, x) * m, g_sq, m

    def get_params(state):
        return state[0]
    return init, update, get_params


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: ``a = gamma * a + (1 - gamma) * g**2``; ``x -= step * g / sqrt(a + eps)``.

    Examples
    --------
    >>> init, update, get = rmsprop(0.1, gamma=0.0, eps=0.0)
    >>> float(get(update(0, 4.0, init(1.0))))
    0.9
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        return x - _lr(step_size, i, x) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad

    def get_params(state):
        return state[0]
    return init, update, get_params


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum: ``m = momentum * m + step * g / sqrt(a + eps)``; ``x -= m``.

    Examples
    --------
    >>> init, update, get = rmsprop_momentum(0.1, gamma=0.0, eps=0.0)
    >>> float(get(update(0, 4.0, init(1.0))))
    0.9
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + _lr(step_size, i, x) * g / jnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    def get_params(state):
        return state[0]
    return init, update, get_params


def _float_dtype(like):
    dtype = jnp.asarray(like).dtype
    return dtype if dtypes.is_inexact(np.dtype(dtype)) else np.dtype(np.float64)


def _power(base, i, like):
    """``base ** (i + 1)`` in ``like``'s float dtype (``i`` may be traced; an int64 exponent must not
    promote float32 state to float64, as JAX's weakly typed step index does not)."""
    dtype = _float_dtype(like)
    return jnp.asarray(base, dtype) ** (jnp.asarray(i) + 1).astype(dtype)


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam: bias-corrected first and second moments; ``x -= step * mhat / (sqrt(vhat) + eps)``.

    Examples
    --------
    >>> init, update, get = adam(0.1)
    >>> round(float(get(update(0, 5.0, init(1.0)))), 6)   # first step moves by ~step_size
    0.9
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        mhat = m / (1 - _power(b1, i, m))
        vhat = v / (1 - _power(b2, i, m))
        return x - _lr(step_size, i, x) * mhat / (jnp.sqrt(vhat) + eps), m, v

    def get_params(state):
        return state[0]
    return init, update, get_params


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """AdaMax (Adam with the infinity norm): ``u = max(b2 * u, |g|)``; ``x -= step / (1 - b1**(i+1)) * m / (u + eps)``.

    Examples
    --------
    >>> init, update, get = adamax(0.1)
    >>> round(float(get(update(0, 5.0, init(1.0)))), 6)
    0.9
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        return x - (_lr(step_size, i, x) / (1 - _power(b1, i, m))) * m / (u + eps), m, u

    def get_params(state):
        return state[0]
    return init, update, get_params


class _Shape(tuple):
    """A parameter's original shape kept in sm3's state as static pytree data (no leaves), so the state
    crosses ``jit`` without the shape becoming traced."""


register_pytree_node(_Shape, lambda s: ((), tuple(s)), lambda aux, _: _Shape(aux))


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (memory-efficient adaptive optimizer, Anil et al. 2019): one accumulator vector per axis.

    The accumulator of an entry is the minimum over its axes' vectors plus ``g**2``; each axis vector
    keeps the maximum of the accumulators over the other axes.

    Examples
    --------
    >>> import numpy as np
    >>> init, update, get = sm3(1.0, momentum=0.0)
    >>> get(update(0, np.array([[3.0, -4.0]]), init(np.zeros((1, 2)))))
    Array([[-1.,  1.]])
    """
    step_size = make_schedule(step_size)

    def broadcast_into(ndim, v, axis):
        idx = [None] * ndim
        idx[axis] = slice(None)
        return v[tuple(idx)]

    def init(x0):
        x_shape = _Shape(np.shape(x0))
        x0 = jnp.atleast_1d(x0)
        vs = [jnp.zeros(sz, dtype=x0.dtype) for sz in x0.shape]
        return x0, jnp.zeros_like(x0), vs, x_shape

    def update(i, g, state):
        x, m, vs, x_shape = state
        g = jnp.reshape(g, x.shape)
        vs = [broadcast_into(g.ndim, v, j) for j, v in enumerate(vs)]
        accum = functools.reduce(jnp.minimum, vs) + jnp.square(g)
        accum_inv_sqrt = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
        m = (1.0 - momentum) * (g * accum_inv_sqrt) + momentum * m
        x = x - _lr(step_size, i, x) * m
        vs = [jnp.max(accum, axis=tuple(a for a in range(x.ndim) if a != j)) for j in range(x.ndim)]
        return x, m, vs, x_shape

    def get_params(state):
        x, _, _, x_shape = state
        return jnp.reshape(x, tuple(x_shape))
    return init, update, get_params


# ------------------------------------------------------------------------------------------------ schedules
def constant(step_size) -> Schedule:
    """Schedule returning ``step_size`` at every step.

    Examples
    --------
    >>> constant(0.1)(100)
    0.1
    """
    def schedule(i):
        return step_size
    return schedule


def exponential_decay(step_size, decay_steps, decay_rate) -> Schedule:
    """``step_size * decay_rate ** (i / decay_steps)``.

    Examples
    --------
    >>> float(exponential_decay(1.0, 10, 0.5)(20))
    0.25
    """
    def schedule(i):
        return step_size * decay_rate ** (i / decay_steps)
    return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False) -> Schedule:
    """``step_size / (1 + decay_rate * i / decay_steps)`` (``floor(i / decay_steps)`` with ``staircase``).

    Examples
    --------
    >>> float(inverse_time_decay(1.0, 10, 1.0)(5)), float(inverse_time_decay(1.0, 10, 1.0, staircase=True)(5))
    (0.6666666666666666, 1.0)
    """
    if staircase:
        def schedule(i):
            return step_size / (1 + decay_rate * jnp.floor(jnp.asarray(i) / decay_steps))
    else:
        def schedule(i):
            return step_size / (1 + decay_rate * i / decay_steps)
    return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0) -> Schedule:
    """``(1 - min(i, decay_steps) / decay_steps) ** power * (step_size - final) + final``.

    Examples
    --------
    >>> sched = polynomial_decay(1.0, 10, 0.1)
    >>> float(sched(5)), float(sched(50))
    (0.55, 0.1)
    """
    def schedule(step_num):
        step_num = jnp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries, values) -> Schedule:
    """``values[k]`` where ``k`` is the number of ``boundaries`` strictly below ``i``.

    Examples
    --------
    >>> sched = piecewise_constant([10, 20], [1.0, 0.5, 0.1])
    >>> float(sched(10)), float(sched(11)), float(sched(25))
    (1.0, 0.5, 0.1)
    """
    boundaries = np.asarray(boundaries)
    values = np.asarray(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")

    def schedule(i):
        return jnp.take(values, jnp.sum(jnp.asarray(i) > boundaries))
    return schedule


def _lr(step_size, i, like):
    """``step_size(i)`` in ``like``'s float dtype when the schedule returns an array (a schedule of a traced
    int64 step is a float64 array, which would otherwise promote float32 parameters)."""
    lr = step_size(i)
    if isinstance(lr, (int, float)) or not hasattr(lr, "dtype"):
        return lr
    return jnp.asarray(lr).astype(_float_dtype(like))


def make_schedule(scalar_or_schedule) -> Schedule:
    """A schedule from a callable (returned as is) or a scalar (a :func:`constant` schedule).

    Examples
    --------
    >>> make_schedule(0.5)(3)
    0.5
    """
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if np.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


# ------------------------------------------------------------------------------------------------ utilities
def l2_norm(tree):
    """The l2 norm of all the leaves of ``tree`` together (as one flat vector).

    Examples
    --------
    >>> import numpy as np
    >>> float(l2_norm({"a": np.array([3.0]), "b": np.array([4.0])}))
    5.0
    """
    leaves = tree_leaves(tree)
    total = sum(jnp.vdot(x, x) for x in leaves)
    return jnp.sqrt(total)


def clip_grads(grad_tree, max_norm):
    """Scale ``grad_tree`` down so that its :func:`l2_norm` is at most ``max_norm``.

    Examples
    --------
    >>> import numpy as np
    >>> clip_grads([np.array([3.0, 4.0])], 1.0)
    [Array([0.6, 0.8])]
    """
    norm = l2_norm(grad_tree)

    def normalize(g):
        return jnp.where(norm < max_norm, g, g * (max_norm / norm))
    return tree_map(normalize, grad_tree)


class JoinPoint:
    """Marks the boundary between the parameter pytree and each leaf's state pytree (a leaf itself)."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree

    def __repr__(self):
        return f"JoinPoint({self.subtree!r})"


def unpack_optimizer_state(opt_state):
    """An :class:`OptimizerState` as a plain pytree: the parameter tree with a :class:`JoinPoint` of each
    leaf's state at the leaf (e.g. to pickle it).

    Examples
    --------
    >>> init, update, get = momentum(0.1, 0.9)
    >>> marked = unpack_optimizer_state(init({"w": 1.0}))
    >>> marked["w"].subtree
    (1.0, Array(0.))
    >>> get(pack_optimizer_state(marked))
    {'w': 1.0}
    """
    states_flat, tree_def, subtree_defs = opt_state
    subtrees = [tree_unflatten(d, s) for d, s in zip(subtree_defs, states_flat)]
    return tree_unflatten(tree_def, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree):
    """Inverse of :func:`unpack_optimizer_state`."""
    sentinels, tree_def = tree_flatten(marked_pytree)
    if not all(isinstance(s, JoinPoint) for s in sentinels):
        raise TypeError("pack_optimizer_state: every leaf must be a JoinPoint")
    flat = [tree_flatten(s.subtree) for s in sentinels]
    return OptimizerState([f[0] for f in flat], tree_def, [f[1] for f in flat])
