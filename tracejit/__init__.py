"""tracejit: a JAX-style tracing JIT for NumPy-style Python, compiling to native CPU code.

Examples
--------
>>> import numpy as np
>>> import tracejit
>>> f = tracejit.jit(lambda x: np.sin(x) * 2)
>>> f(np.zeros(3))
array([0., 0., 0.])
"""
from tracejit import ops as _ops  # noqa: F401  (registers every primitive)
from tracejit.api import Compiled, Jitted, Lowered, ShapeDtypeStruct, block_until_ready, eval_shape, jit, make_jaxpr
from tracejit.config import config
from tracejit.core.avals import ShapedArray
from tracejit.core.errors import (ConcretizationTypeError, DeletedArrayError, NonConcreteBooleanIndexError,
                                  ProgramTypeError, TracerArrayConversionError, TracerBoolConversionError,
                                  TracerIntegerConversionError, UnexpectedTracerError)
from tracejit.core.pytree import (register_pytree_node, tree_flatten, tree_leaves, tree_map, tree_structure,
                                  tree_unflatten)
from tracejit.core.check import check_program
from tracejit.core.ir import Program
from tracejit.api_ad import (checkpoint, checkpoint_policies, custom_jvp, custom_vjp, float0, grad, hessian,
                             jacfwd, jacobian, jacrev, jvp, linear_transpose, linearize, remat, stop_gradient,
                             value_and_grad, vjp)
from tracejit.api_vmap import vmap
from tracejit.diagnostics.advisor import advise
from tracejit.diagnostics.report import report
from tracejit.buckets import bucketed_jit, pad_to_bucket
from tracejit.jit_cache import clear_caches
from tracejit import numpy, lax, random  # noqa: F401
from tracejit import tree_util, tree, nn  # noqa: F401
from tracejit import scipy  # noqa: F401

import numpy as _np

from tracejit.backends import get_backend as _get_backend

# Load the LLVM backend with the package, so a function's first call pays for
# tracing and compiling only (not for importing llvmlite), and start its
# one-time set-up in the background (backends/cpu/warmup.py).
if _get_backend("cpu") is not _get_backend("reference"):
    from tracejit.backends.cpu import warmup as _warmup
    _warmup.start()
from tracejit.diagnostics import compile_log as _compile_log, persistent_cache as _persistent_cache  # noqa: E402,F401
from tracejit.compiler import analysis as _analysis  # noqa: E402,F401

Array = _np.ndarray
"""Type of the arrays tracejit returns (NumPy arrays); use it in type hints like ``jax.Array``."""

__version__ = "0.1.0"

__all__ = [
    "Array", "Compiled", "ConcretizationTypeError", "DeletedArrayError", "Jitted", "Lowered",
    "NonConcreteBooleanIndexError", "Program", "ProgramTypeError", "ShapeDtypeStruct", "ShapedArray", "TracerArrayConversionError",
    "TracerBoolConversionError", "TracerIntegerConversionError", "UnexpectedTracerError",
    "block_until_ready", "check_program", "config", "eval_shape", "jit", "lax", "make_jaxpr", "numpy",
    "register_pytree_node", "tree_flatten", "tree_leaves", "tree_map", "tree_structure", "tree_unflatten",
    "tree_util", "grad", "value_and_grad", "vjp", "jvp", "linearize", "linear_transpose", "jacfwd", "jacrev",
    "jacobian", "hessian", "stop_gradient", "custom_vjp", "custom_jvp", "checkpoint", "remat",
    "checkpoint_policies", "float0", "vmap", "advise", "report", "bucketed_jit", "pad_to_bucket", "random", "tree",
    "nn",
    "clear_caches",
]
