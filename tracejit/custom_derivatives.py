"""``jax.custom_derivatives``: the custom-derivative API, gathered as JAX's module of that name.

The names are tracejit's own, defined elsewhere: ``custom_jvp``, ``custom_vjp``, the symbolic-zero
helpers and ``linear_call`` (autodiff machinery, ``tracejit/transforms``), ``closure_convert`` and
``custom_gradient`` (``tracejit/api_misc.py``). JAX's ``*_p`` primitive objects are not provided
(tracejit's primitives have their own rule tables).

Examples
--------
>>> from tracejit import custom_derivatives
>>> custom_derivatives.custom_jvp is __import__("tracejit").custom_jvp
True
"""
from tracejit.api_misc import closure_convert, custom_gradient
from tracejit.transforms.api_ad import custom_jvp, custom_vjp
from tracejit.transforms.linear_call import linear_call
from tracejit.transforms.symbolic_zeros import (CustomVJPPrimal, SymbolicZero, custom_vjp_primal_tree_values,
                                                zero_from_primal)

__all__ = ["CustomVJPPrimal", "SymbolicZero", "closure_convert", "custom_gradient", "custom_jvp", "custom_vjp",
           "custom_vjp_primal_tree_values", "linear_call", "zero_from_primal"]
