"""Reduction primitives over a static tuple of axes, plus argmax/argmin and
cumulative reductions. The output dtype is the input dtype:
``tracejit.numpy`` converts first where NumPy widens (e.g. int32 sums)."""
from __future__ import annotations

import numpy as np

from tracejit.core.avals import ShapedArray
from tracejit.core.primitive import Primitive, def_rules


def _check_axes(name, x, axes):
    if len(set(axes)) != len(axes) or any(not 0 <= a < x.ndim for a in axes):
        raise TypeError(f"{name}: axes {axes} are invalid for an operand of shape {x.shape}")


def _reduce_abstract_eval(name, kinds):
    def rule(x, *, axes):
        _check_axes(name, x, axes)
        if x.dtype.kind not in kinds:
            raise TypeError(f"{name} does not accept dtype {x.dtype.name}")
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return [ShapedArray(shape, x.dtype, x.weak_type)]
    return rule


def _reduce_impl(fn, empty_error=None):
    def impl(x, *, axes):
        if empty_error and any(x.shape[a] == 0 for a in axes):
            raise ValueError(empty_error)
        with np.errstate(all="ignore"):
            out = fn(x, axis=tuple(axes))
        return [np.asarray(out, dtype=x.dtype)]
    return impl


def _reduce_cost(in_avals, out_avals, **_):
    return {"flops": in_avals[0].size, "transcendentals": 0}


_EMPTY_MAX = "zero-size array to reduction operation maximum which has no identity"
_EMPTY_MIN = "zero-size array to reduction operation minimum which has no identity"

REDUCE_SPECS = {
    "reduce_sum": (np.sum, "biufc", None),
    "reduce_prod": (np.prod, "biufc", None),
    "reduce_max": (np.max, "biuf", _EMPTY_MAX),
    "reduce_min": (np.min, "biuf", _EMPTY_MIN),
    "reduce_and": (np.all, "b", None),
    "reduce_or": (np.any, "b", None),
}

reduce_prims: dict[str, Primitive] = {}
for _name, (_fn, _kinds, _empty) in REDUCE_SPECS.items():
    reduce_prims[_name] = def_rules(Primitive(_name), abstract_eval=_reduce_abstract_eval(_name, _kinds),
                                    impl=_reduce_impl(_fn, _empty), cost=_reduce_cost)

reduce_sum_p = reduce_prims["reduce_sum"]
reduce_max_p = reduce_prims["reduce_max"]
reduce_min_p = reduce_prims["reduce_min"]
reduce_prod_p = reduce_prims["reduce_prod"]
reduce_and_p = reduce_prims["reduce_and"]
reduce_or_p = reduce_prims["reduce_or"]


def _arg_abstract_eval(name):
    def rule(x, *, axes, index_dtype):
        _check_axes(name, x, axes)
        if len(axes) != 1:
            raise TypeError(f"{name} reduces exactly one axis, got {axes}")
        if x.shape[axes[0]] == 0:
            raise ValueError(f"attempt to get {name[3:]} of an empty sequence (axis {axes[0]} of "
                             f"shape {x.shape} has size 0)")
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return [ShapedArray(shape, index_dtype)]
    return rule


argmax_p = def_rules(Primitive("argmax"), abstract_eval=_arg_abstract_eval("argmax"),
                     impl=lambda x, *, axes, index_dtype: [np.asarray(np.argmax(x, axis=axes[0]), index_dtype)],
                     cost=_reduce_cost)
argmin_p = def_rules(Primitive("argmin"), abstract_eval=_arg_abstract_eval("argmin"),
                     impl=lambda x, *, axes, index_dtype: [np.asarray(np.argmin(x, axis=axes[0]), index_dtype)],
                     cost=_reduce_cost)


def _cumulative_abstract_eval(name):
    def rule(x, *, axis, reverse):
        if not 0 <= axis < x.ndim:
            raise TypeError(f"{name}: axis {axis} out of range for shape {x.shape}")
        return [x]
    return rule


def _cumulative_impl(fn):
    def impl(x, *, axis, reverse):
        if reverse:
            x = np.flip(x, axis)
        with np.errstate(all="ignore"):
            out = np.asarray(fn(x, axis=axis), dtype=x.dtype)
        return [np.flip(out, axis) if reverse else out]
    return impl


cumulative_prims = {
    name: def_rules(Primitive(name), abstract_eval=_cumulative_abstract_eval(name),
                    impl=_cumulative_impl(fn), cost=_reduce_cost)
    for name, fn in (("cumsum", np.cumsum), ("cumprod", np.cumprod),
                     ("cummax", np.maximum.accumulate), ("cummin", np.minimum.accumulate))
}
REDUCTIONS = set(reduce_prims.values()) | {argmax_p, argmin_p}
