"""``jax.custom_derivatives``: the custom-derivative API, gathered as JAX's module of that name.

The names are tracejit's own, defined elsewhere: ``custom_jvp``, ``custom_vjp`` (autodiff
machinery, ``tracejit/transforms``), ``closure_convert`` and ``custom_gradient``
(``tracejit/api_misc.py``). JAX's ``linear_call``, ``SymbolicZero``, ``CustomVJPPrimal``,
``zero_from_primal`` and the ``*_p`` primitives are not provided (symbolic-zero rules are not
supported: ``defjvp(symbolic_zeros=True)`` raises).

Examples
--------
>>> from tracejit import custom_derivatives
>>> custom_derivatives.custom_jvp is __import__("tracejit").custom_jvp
True
"""
from tracejit.api_misc import closure_convert, custom_gradient
from tracejit.transforms.api_ad import custom_jvp, custom_vjp

__all__ = ["closure_convert", "custom_gradient", "custom_jvp", "custom_vjp"]
