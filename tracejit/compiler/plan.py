"""The Plan: the compiler's second IR, what fusion makes of a Program.

A Plan is numbered buffers (inputs, constants, outputs, arena temporaries,
reshape aliases) and an ordered list of steps that read and write them:
fused kernels (``kernel_ir.Kernel``), BLAS products (``DotStep``), window
copies (``WindowStep``) and NumPy or control-flow steps (``NumpyStep``).
The driver (``driver.py``) builds it, the memory planner places its
temporaries, ``check_plan`` verifies it, and a backend turns it into an
executable. It is data: ``describe()`` prints every step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tracejit.compiler.kernel_ir import Kernel


@dataclass
class Buffer:
    """A materialized value: a C-contiguous array of ``shape`` and ``dtype``."""

    id: int
    shape: tuple
    dtype: np.dtype
    kind: str = "temp"         # input | const | output | temp | alias | external
    alias_of: int = -1         # alias: buffer whose memory this one reinterprets
    index: int = -1            # input/const/output position

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


@dataclass
class DotStep:
    out: int
    lhs: int
    rhs: int
    lhs_perm: tuple            # transposes folded into the operand view (BLAS flags)
    rhs_perm: tuple
    dimension_numbers: tuple
    accumulate: tuple = None   # (buffer c, alpha): out = c + alpha * (lhs . rhs), BLAS's beta = 1
    # A one-phase elementwise Kernel over ``out``'s shape that reads the product as ``load(out)`` at
    # the element it writes, and other buffers (a bias, a residual): ``out = f(lhs . rhs, ...)``,
    # applied as each block of the product is stored (blas_epilogues.fold_epilogues_into_products).
    epilogue: Kernel = None

    def describe(self) -> str:
        acc = f", accumulated into b{self.accumulate[0]} with alpha {self.accumulate[1]:g}" if self.accumulate else ""
        epilogue = f", epilogue b{self.out} = {self.epilogue.phases[0].exprs[0]!r}" if self.epilogue else ""
        return (f"blas dot_general -> b{self.out} (lhs b{self.lhs} perm {self.lhs_perm}, "
                f"rhs b{self.rhs} perm {self.rhs_perm}){acc}{epilogue}")


@dataclass
class WindowStep:
    """``dynamic_slice`` (``out = operand[window]``), ``dynamic_update_slice``
    (``out = operand`` with the window replaced by ``update``) or ``pad`` (``out`` filled
    with the padding value, ``update`` placed at static starts): row copies.

    Starts are clamped into range as in XLA. An update whose ``out`` shares
    memory with ``operand`` (in-place planning, donation, loop carries) writes
    only the window; otherwise it copies the operand first.
    """

    kind: str                  # "slice" | "update" | "pad" | "scatter" | "concat" | "axis" | "call" | "conv"
                               # | "conv_wgrad" | "call_start" | "call_poll" | "call_wait"
    out: int
    operand: int               # pad: the padding value (buffer id or ("lit", value))
    update: int | None         # pad: the array placed inside; scatter: the updates; concat: all operands;
                               # call_start / call_poll / call_wait: the request buffer the start fills, a poll
                               # tests (driving MPI's progress) and the wait completes
    starts: list               # buffer id (integer scalar) or ("lit", value) per operand axis; scatter: [indices];
                               # concat: each operand's offset along the axis
    window: tuple              # window shape (slice_sizes, or the update's shape); scatter: ()
    combine: tuple = ()        # scatter: (kind, mode), e.g. ("add", "drop"); concat: (axis,);
                               # axis: (cumsum|cumprod|cummax|cummin|argmax|argmin|sort, axis, reverse);
                               # call: (primitive name, sorted params) of a library call (core.NATIVE_CALL);
                               # call_start / call_poll / call_wait: the same, of a call split (compiler/overlap.py);
                               # conv: conv_windows's sorted params (operand: the input, update: the kernel);
                               # conv_wgrad: conv_windows_wgrad's (operand: the input, update: the cotangent)
    fused: object = None       # scatter: a one-phase Kernel over the updates' shape computing each update
                               # inside the scatter loop (``update`` is then None: nothing materialized)
    agree: tuple = ()          # call_start: the signatures of the plan's split calls on this one's processes,
                               # which the first start of them checks every rank shares (compiler/overlap.py)

    def reads(self) -> list:
        """Buffers read, the operand first (in-place rules check that nothing after it is the operand).
        A call's wait reads its operand too: MPI reads the send buffer until the call completes,
        so the operand stays live (and unwritten) from the start to the wait."""
        if self.kind == "concat":
            return list(dict.fromkeys(self.update))
        if self.kind == "call_start":
            return [self.operand]
        if self.kind == "call_wait":
            return [self.operand, self.update]
        if self.kind == "call_poll":
            return [self.update]
        ins = [self.operand] + ([self.update] if self.update is not None else [])
        if self.fused is not None:
            ins += list(dict.fromkeys(n.buffer for n in self.fused.loads()))
        return [b for b in ins if isinstance(b, int)] + [s for s in self.starts if isinstance(s, int)]

    def writes(self) -> list:
        """Buffers written: the result, and a split call's start fills its request too (a poll only
        updates the request: MPI sets a completed one to MPI_REQUEST_NULL)."""
        if self.kind == "call_poll":
            return [self.update]
        return [self.out, self.update] if self.kind == "call_start" else [self.out]

    def describe(self) -> str:
        if self.kind == "concat":
            return (f"window concatenate[axis={self.combine[0]}] {', '.join(f'b{b}' for b in self.update)} "
                    f"-> b{self.out}")
        starts = ", ".join(f"b{s}" if isinstance(s, int) else repr(s[1]) for s in self.starts)
        operand = (f"b{self.operand}" if isinstance(self.operand, int)
                   else "" if self.operand is None else repr(self.operand[1]))
        if self.kind in ("call_poll", "call_wait"):
            return f"call {self.kind[5:]} {self.combine[0]} b{self.out} (request b{self.update})"
        if self.kind in ("call", "call_start"):
            name, params = self.combine
            args = ", ".join(f"{k}={v!r}" for k, v in params)
            if self.kind == "call":
                return f"call {name}[{args}] {operand} -> b{self.out}"
            agree = f", checks {len(self.agree)} call{'s' * (len(self.agree) > 1)}" if self.agree else ""
            return f"call start {name}[{args}] {operand} -> b{self.out} (request b{self.update}{agree})"
        if self.kind in ("conv", "conv_wgrad"):
            args = ", ".join(f"{k}={v!r}" for k, v in self.combine)
            what = "conv_windows" if self.kind == "conv" else "conv_windows_wgrad"
            return f"window {what}[{args}] {operand}, b{self.update} -> b{self.out}"
        if self.kind == "scatter":
            update = f"b{self.update}" if self.fused is None else f"({self.fused.phases[0].exprs[0]!r})"
            return (f"window scatter[{self.combine[0]} mode={self.combine[1]}] {update} into "
                    f"{operand}[{starts}] -> b{self.out}")
        if self.kind == "axis":
            op, axis, reverse = self.combine
            return f"window {op}[axis={axis}{' reverse' if reverse else ''}] {operand} -> b{self.out}"
        what = {"slice": "dynamic_slice", "update": f"dynamic_update_slice(update b{self.update})",
                "pad": f"pad(b{self.update}) with"}[self.kind]
        return f"window {what} {operand}[{starts}] {list(self.window)} -> b{self.out}"


CONTROL_FLOW = ("cond", "while", "scan")
# Window step kinds that are library calls: one blocking call, or the parts of a call split to
# overlap independent steps (compiler/overlap.py): its start, polls and wait.
SPLIT_CALL_KINDS = ("call_start", "call_poll", "call_wait")
CALL_KINDS = ("call", *SPLIT_CALL_KINDS)


@dataclass
class NumpyStep:
    """A primitive run by its NumPy implementation, or a control-flow step (``while``/``scan``/``cond``).

    A control-flow step carries its bodies, optimized by the driver (``bodies``, in the order of
    :func:`control_flow_bodies`), and the backend's choice (``loop``): a native loop, or a host
    loop that runs its compiled bodies from Python (``host_reason`` says why it is not native).
    """

    eqn: object
    inputs: list               # buffer id or ("lit", value)
    outputs: list
    bodies: list | None = None
    loop: object = None
    host_reason: str | None = None

    def describe(self) -> str:
        name, outs = self.eqn.primitive.name, ", ".join(f"b{b}" for b in self.outputs)
        if name not in CONTROL_FLOW:
            return f"numpy {name} -> {outs}"
        if self.loop is None:
            return f"loop {name} -> {outs}"       # not built yet: the backend decides native or host
        if getattr(self.loop, "native", True):
            return f"native loop {name} -> {outs}"
        return f"host loop {name} -> {outs}" + (f"  # {self.host_reason}" if self.host_reason else "")


def control_flow_bodies(eqn) -> list:
    """``[(role, program, donated input positions)]`` of a ``while``/``scan``/``cond`` equation.

    Order: a while's cond then body; a scan's body; a cond's branches. A loop body's carries are
    donated to it: the loop owns them, so the body may write its new carries over the old ones.
    """
    p, name = eqn.params, eqn.primitive.name
    if name == "while":
        body, first = p["body_program"], p["body_nconsts"]
        return [("while cond", p["cond_program"], ()),
                ("while body", body, tuple(range(first, len(body.in_vars))))]
    if name == "scan":
        first = p["num_consts"]
        return [("scan body", p["program"], tuple(range(first, first + p["num_carry"])))]
    return [(f"cond branch {i}", b, ()) for i, b in enumerate(p["branches"])]


def step_reads(step) -> list:
    """Buffers a step reads."""
    if isinstance(step, Kernel):
        return sorted({n.buffer for n in step.loads()})
    if isinstance(step, DotStep):
        epilogue = [] if step.epilogue is None else [b for b in dict.fromkeys(n.buffer for n in step.epilogue.loads())
                                                     if b != step.out]
        return [step.lhs, step.rhs] + ([step.accumulate[0]] if step.accumulate else []) + epilogue
    if isinstance(step, WindowStep):
        return step.reads()
    return [b for b in step.inputs if isinstance(b, int)]


def step_writes(step) -> list:
    """Buffers a step writes."""
    if isinstance(step, Kernel):
        return step.buffers_written()
    if isinstance(step, WindowStep):
        return step.writes()
    if isinstance(step, DotStep):
        return [step.out]
    return list(step.outputs)


@dataclass
class Plan:
    buffers: list = field(default_factory=list)
    steps: list = field(default_factory=list)   # Kernel | DotStep | WindowStep | NumpyStep
    inputs: list = field(default_factory=list)  # buffer ids of program inputs
    consts: list = field(default_factory=list)
    outputs: list = field(default_factory=list)  # buffer id or ("lit", value)

    @property
    def kernels(self):
        return [s for s in self.steps if isinstance(s, Kernel)]


def base_buffer(buffers, b):
    """The buffer whose memory ``b`` is: itself, or what its chain of reshape aliases points at."""
    while buffers[b].kind == "alias":
        b = buffers[b].alias_of
    return b
