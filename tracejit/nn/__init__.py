"""``tracejit.nn``: neural-network activations, softmax/attention helpers and initializers (as ``jax.nn``).

Examples
--------
>>> import numpy as np
>>> import tracejit
>>> tracejit.nn.relu(np.array([-1.0, 2.0]))
Array([0., 2.])
"""
from tracejit.nn.functions import (  # noqa: F401
    celu, dot_product_attention, elu, gelu, glu, hard_sigmoid, hard_silu, hard_swish, hard_tanh, identity,
    leaky_relu, log1mexp, log_sigmoid, log_softmax, logmeanexp, logsumexp, mish, one_hot, relu, relu6, selu,
    sigmoid, silu, soft_sign, softmax, softplus, sparse_plus, sparse_sigmoid, squareplus, standardize, swish,
    tanh)
from tracejit.nn import initializers  # noqa: F401
from tracejit.nn.functions import __all__ as _fn_all

__all__ = list(_fn_all) + ["initializers"]
