"""tracejit: a JAX-style tracing JIT for NumPy-style Python, compiling to native CPU code.

Examples
--------
>>> import numpy as np
>>> import tracejit
>>> f = tracejit.jit(lambda x: np.sin(x) * 2)
>>> f(np.zeros(3))
Array([0., 0., 0.])
"""
from tracejit import ops as _ops  # noqa: F401  (registers every primitive)
from tracejit.api import Compiled, Jitted, Lowered, ShapeDtypeStruct, block_until_ready, eval_shape, make_jaxpr
from tracejit.config import config
from tracejit.core.avals import ShapedArray
from tracejit.core.errors import (ConcretizationTypeError, DeletedArrayError, NonConcreteBooleanIndexError,
                                  ProgramTypeError, TracerArrayConversionError, TracerBoolConversionError,
                                  TracerIntegerConversionError, UnexpectedTracerError)
from tracejit.core.pytree import (register_pytree_node, tree_flatten, tree_leaves, tree_map, tree_structure,
                                  tree_unflatten)
from tracejit.core.check import check_program
from tracejit.core.ir import Program
from tracejit.transforms.api_ad import (checkpoint, checkpoint_policies, custom_jvp, custom_vjp, float0, grad, hessian,
                             jacfwd, jacobian, jacrev, jvp, linear_transpose, linearize, remat, stop_gradient,
                             value_and_grad, vjp)
from tracejit.transforms.api_vmap import vmap
from tracejit.diagnostics.advisor import advise
from tracejit.diagnostics.report import report
from tracejit.buckets import bucketed_jit, jit, pad_to_bucket  # tracejit.jit: api.jit plus buckets=
from tracejit.jit_cache import clear_caches
from tracejit import numpy, lax, random  # noqa: F401
from tracejit import tree_util, tree, nn  # noqa: F401
from tracejit import scipy  # noqa: F401
from tracejit import errors, dtypes, typing, stages, version  # noqa: F401
from tracejit.config_flags import (check_tracer_leaks, checking_leaks, debug_infs, debug_key_reuse, debug_nans,
                                   default_device, default_prng_impl, disable_jit, enable_checks,
                                   enable_custom_prng, enable_x64, explain_cache_misses, legacy_prng_key,
                                   log_compiles, make_user_context, no_execution, no_tracing, numpy_dtype_promotion,
                                   numpy_rank_promotion, thread_guard)
from tracejit.device_api import (Device, default_backend, device_count, device_get, device_put, devices,
                              local_device_count, local_devices, process_count, process_index, process_indices)
from tracejit.api_misc import (closure_convert, custom_gradient, effects_barrier, ensure_compile_time_eval,
                               named_call, named_scope, print_environment_info, typeof)
from tracejit.api_callback import pure_callback
from tracejit.fwd_and_bwd import fwd_and_bwd
from tracejit import ref  # noqa: F401  (jax.ref)
from tracejit import ad  # noqa: F401  (jax.ad: vjp(...).with_refs markers)
from tracejit.ref import Ref, empty_ref, free_ref, freeze, new_ref
from tracejit.numpy.dynamic_slices import ds
from tracejit import debug  # noqa: F401
# issue 17: multi-process SPMD over MPI (mpi4py is imported only by initialize() and the collectives).
from tracejit import distributed, sharding  # noqa: F401
from tracejit.sharding import NamedSharding, P, make_array_from_process_local_data, make_mesh
from tracejit.shard_map import shard_map

import numpy as _np

from tracejit.backends import get_backend as _get_backend

# Load the LLVM backend with the package, so a function's first call pays for
# tracing and compiling only (not for importing llvmlite), and start its
# one-time set-up in the background (backends/cpu/warmup.py).
if _get_backend("cpu") is not _get_backend("reference"):
    from tracejit.backends.cpu import warmup as _warmup
    _warmup.start()
from tracejit.diagnostics import persistent_cache as _persistent_cache  # noqa: E402,F401
from tracejit.compiler import analysis as _analysis  # noqa: E402,F401

from tracejit.array import Array, wrap_package_faces as _wrap_package_faces  # noqa: E402
from tracejit.numpy import fft as _jnp_fft, linalg as _jnp_linalg  # noqa: E402
from tracejit.scipy import linalg as _sp_linalg, signal as _sp_signal, special as _sp_special, stats as _sp_stats  # noqa: E402

# Public functions called outside a trace return tracejit.Arrays (jax.numpy is wrapped in its own package).
# Functions defined with custom_jvp/custom_vjp (jax.nn.relu, ...) are wrapped too; those types are
# named here, above tracejit.transforms, since tracejit.array is below it.
_wrap_package_faces([lax, random, nn, nn.initializers, _jnp_fft, _jnp_linalg, _sp_linalg, _sp_signal, _sp_special,
                     _sp_stats] + [getattr(_sp_stats, _name) for _name in _sp_stats.__all__
                                   if isinstance(getattr(_sp_stats, _name), type(_sp_stats))],
                    extra_types=(custom_jvp, custom_vjp))
# jax.ops: the segment reductions exported by tracejit.ops (the primitives package) return Arrays too.
from tracejit.array import wrap_module_functions as _wrap_module_functions  # noqa: E402
_wrap_module_functions(vars(_ops), ["segment_sum", "segment_prod", "segment_max", "segment_min"])

from tracejit import image, custom_batching, custom_derivatives, dlpack, ad_checkpoint  # noqa: E402,F401  (jax submodules)

from tracejit.version import __version__, __version_info__  # noqa: E402

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
    # issue 14: devices, config flags, smaller top-level functions and submodules
    "Device", "devices", "local_devices", "device_count", "local_device_count", "default_backend", "device_put",
    "device_get", "process_count", "process_index", "process_indices", "default_device", "disable_jit",
    "enable_x64", "numpy_dtype_promotion", "numpy_rank_promotion", "debug_nans", "debug_infs", "log_compiles",
    "enable_checks", "check_tracer_leaks", "checking_leaks", "default_prng_impl", "explain_cache_misses",
    "legacy_prng_key", "enable_custom_prng", "debug_key_reuse", "no_tracing", "no_execution", "thread_guard",
    "make_user_context", "typeof", "named_call", "named_scope", "ensure_compile_time_eval", "custom_gradient",
    "closure_convert", "effects_barrier", "print_environment_info", "errors", "dtypes", "typing", "stages",
    "version",
    # host callbacks
    "pure_callback", "debug",
    # issue 17: SPMD over MPI
    "distributed", "sharding", "shard_map", "make_mesh", "make_array_from_process_local_data", "NamedSharding",
    "P",
]
