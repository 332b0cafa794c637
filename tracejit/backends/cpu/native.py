"""What the CPU backend compiles to native code: which primitives lower, and the emitter of a step.

Shared by the backend (whole programs) and native loops (bodies), so neither imports the other.
"""
from __future__ import annotations

from tracejit.core import dtypes
from tracejit.compiler.plan import DotStep, WindowStep
from tracejit.compiler.kernel_ir import Kernel
from tracejit.backends.cpu import llvm_engine, lowering
from tracejit.backends.cpu.codegen import KernelEmitter
from tracejit.backends.cpu.conv_gemm import ConvEmitter
from tracejit.backends.cpu.window import WindowEmitter

_NATIVE_REDUCE = {dtypes.bool_, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8,
                  dtypes.uint16, dtypes.uint32, dtypes.uint64, dtypes.float32, dtypes.float64}


def can_lower(eqn) -> bool:
    if len(eqn.outputs) != 1:
        return False
    in_dtypes = [a.aval.dtype for a in eqn.inputs] or [eqn.outputs[0].aval.dtype]
    return lowering.supports(eqn.primitive.name, in_dtypes, eqn.outputs[0].aval.dtype)


# Complex sums accumulate (re, im) vector pairs; see lowering_complex.REDUCE_RULES for the rest.
_COMPLEX_REDUCE = {"reduce_sum"}


def can_reduce(eqn) -> bool:
    d = eqn.inputs[0].aval.dtype
    return d in _NATIVE_REDUCE or (d.kind == "c" and eqn.primitive.name in _COMPLEX_REDUCE)


def vector_bytes() -> int:
    features = llvm_engine.host_cpu_features()
    return 64 if "+avx512f" in features else (32 if "+avx" in features else 16)


CONV_KINDS = ("conv", "conv_wgrad")      # window steps that are generated products (conv_gemm.py)


def native_emitter(module, step, buffers, vector_bytes):
    if isinstance(step, WindowStep) and step.kind in CONV_KINDS:
        return ConvEmitter(module, step, buffers, vector_bytes)
    if isinstance(step, WindowStep):
        return WindowEmitter(module, step, buffers)
    return KernelEmitter(module, step, buffers, vector_bytes)


def splits_over_threads(step) -> bool:
    """The step's function runs a range of units that may be split over threads (fused kernels,
    convolutions and batches of generated products: ``emitter.layout.parallel_size`` units); other
    window steps are one unit."""
    return isinstance(step, (Kernel, DotStep)) or (isinstance(step, WindowStep) and step.kind in CONV_KINDS)


def native_steps(plan) -> list:
    """The steps that become LLVM functions: fused kernels and window copies, in plan order."""
    return [s for s in plan.steps if isinstance(s, (Kernel, WindowStep))]
