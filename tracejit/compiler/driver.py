"""The compile driver: every stage from a traced Program to the Plan a backend builds, in one list.

``optimize(program, target)`` runs :data:`STAGES` in order. The first stages
are Program -> Program passes (``passes/``); from ``fusion`` on, the stages
work on the Plan (``plan.py``): kernels and steps over numbered buffers, then
the arena layout of its temporaries. The last stage optimizes the bodies of
``while``/``scan``/``cond`` steps by the same driver, recursively, so a loop
body gets the same passes, checks, dumps and timings as a whole program, at
compile time. Each stage is

- timed (``Optimized.timings``; ``compile().timings`` has ``pass_<stage>_ms``),
- dumped when named in ``config.dump_passes`` (``TRACEJIT_DUMP=cse,fusion`` or
  ``all``; a body's dumps say whose body it is),
- checked when ``config.enable_checks`` is set: ``check_program`` after a Program
  pass, ``check_plan`` after a Plan stage.

A *target* (a backend) is handed in, never imported: the driver asks it
``can_lower(eqn)`` / ``can_reduce(eqn)`` (what its kernels can compute) and
whether it ``plans`` at all (the reference interpreter runs the Program as
traced, so it can check every pass). The caller then gives the result to
``target.build(optimized, name=...)``.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

from tracejit.compiler.blas_epilogues import fold_axpy_into_products, fold_epilogues_into_products
from tracejit.compiler.check_plan import check_plan
from tracejit.compiler.fusion import Planner, merge_kernels, prune_dead_stores
from tracejit.compiler.memory import donated_temporaries, donation_pairs, plan_memory
from tracejit.compiler.overlap import overlap_collectives
from tracejit.compiler.passes import PIPELINE
from tracejit.compiler.plan import CONTROL_FLOW, NumpyStep, Plan, control_flow_bodies
from tracejit.core.check import check_program
from tracejit.core.ir import Program


@dataclass
class Optimized:
    """A program after the driver: what a backend's ``build`` turns into an executable.

    ``plan`` is None for a target that does not plan (it runs ``program`` as traced).
    ``offsets``/``arena_bytes`` place the plan's temporaries in one arena;
    ``donated_outputs`` maps an output buffer to the donated input position whose
    memory it is written into; ``donated_temps`` names temporaries a native loop may compute in a
    donated carry's memory, with the output they become (``memory.donated_temporaries``). A control-flow step of the plan carries its bodies,
    optimized the same way, in ``step.bodies`` (order: ``plan.control_flow_bodies``).
    """

    program: Program
    plan: Plan | None = None
    offsets: dict | None = None
    arena_bytes: int = 0
    donated: tuple = ()
    donated_outputs: dict = field(default_factory=dict)
    donated_temps: dict = field(default_factory=dict)   # {temp: (input position, output)}
    timings: dict = field(default_factory=dict)     # {stage name: ms}
    label: str = "program"                          # whose body, in dumps

    def describe(self) -> str:
        """The program after the passes, then the plan's steps (bodies indented under their loop)."""
        if self.plan is None:
            return str(self.program)
        return f"{self.program}\n\n# kernels and steps\n" + plan_text(self.plan)

    def timing_summary(self) -> dict:
        """``passes_ms`` (the whole driver) and ``pass_<stage>_ms`` per stage."""
        return {"passes_ms": sum(self.timings.values()),
                **{f"pass_{name}_ms": ms for name, ms in self.timings.items()}}


# --------------------------------------------------------------------------- the stages

def _program_pass(fn):
    def run(c: Optimized, target) -> None:
        c.program = fn(c.program)
    run.works_on = "program"
    return run


def _plan_stage(fn):
    fn.works_on = "plan"
    return fn


@_plan_stage
def fuse(c: Optimized, target) -> None:
    """Program -> Plan: structural ops folded into index maps (layout), then kernels and steps."""
    c.plan = Planner(c.program, target.can_lower, target.can_reduce, c.donated).build()


@_plan_stage
def merge(c: Optimized, target) -> None:
    """Kernels over the same space join (siblings share a pass; row kernels absorb per-row readers)."""
    merge_kernels(c.plan)


@_plan_stage
def prune(c: Optimized, target) -> None:
    """Stores nothing reads any more (after merging) removed."""
    prune_dead_stores(c.plan)


@_plan_stage
def blas_epilogues(c: Optimized, target) -> None:
    """``c + alpha * (a @ b)`` folded into the product (BLAS's beta = 1), then other elementwise
    functions of a product (bias, activation, residual) made its epilogue."""
    from tracejit.config import env_flag
    fold_axpy_into_products(c.plan)
    if env_flag("TRACEJIT_GEMM_EPILOGUES", True):      # (=0: products store, kernels read back; to compare)
        fold_epilogues_into_products(c.plan)


@_plan_stage
def overlap(c: Optimized, target) -> None:
    """Collectives the target can split start before, and finish after, the steps independent of them."""
    from tracejit.config import config
    can_split = getattr(target, "can_split_call", None)
    if can_split is not None and config.overlap_collectives:
        overlap_collectives(c.plan, can_split)


@_plan_stage
def memory(c: Optimized, target) -> None:
    """Arena offsets by liveness, in-place writes, and outputs written into donated inputs."""
    c.offsets, c.arena_bytes = plan_memory(c.plan)
    c.donated_outputs = donation_pairs(c.plan, c.donated) if c.donated else {}
    c.donated_temps = donated_temporaries(c.plan, c.donated, c.donated_outputs) if c.donated else {}


@_plan_stage
def bodies(c: Optimized, target) -> None:
    """Every ``while``/``scan``/``cond`` body through this same driver, recursively."""
    for step in c.plan.steps:
        if isinstance(step, NumpyStep) and step.eqn.primitive.name in CONTROL_FLOW:
            step.bodies = [optimize(program, target, donate_argnums=donated, label=f"{role} in {c.label}")
                           for role, program, donated in control_flow_bodies(step.eqn)]


STAGES = [
    *((name, _program_pass(fn)) for name, fn in PIPELINE),
    ("fusion", fuse),
    ("merge", merge),
    ("prune", prune),
    ("blas_epilogues", blas_epilogues),
    ("overlap", overlap),
    ("memory", memory),
    ("bodies", bodies),
]
STAGE_NAMES = [name for name, _ in STAGES]
# Old dump names that still select a stage: layout folding happens inside fusion.
_DUMP_ALIASES = {"layout": "fusion"}


# --------------------------------------------------------------------------- the driver

def optimize(program: Program, target, *, donate_argnums=(), label: str = "") -> Optimized:
    """Run every stage of :data:`STAGES` on ``program`` for ``target``; returns an :class:`Optimized`.

    Parameters
    ----------
    program : Program
        A traced program (``make_jaxpr`` / ``jit(f).lower(x).program``).
    target : backend
        Answers ``can_lower(eqn)``, ``can_reduce(eqn)`` and ``plans``; see the module docstring.
    donate_argnums : tuple of int
        Input positions whose memory outputs may be written into.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> from tracejit.backends import get_backend
    >>> from tracejit.compiler import driver
    >>> program = tracejit.make_jaxpr(lambda x: np.exp(x) * 2 + 1)(np.ones(4))
    >>> opt = driver.optimize(program, get_backend("cpu"))
    >>> len(opt.plan.kernels), sorted(opt.timings)[:3]
    (1, ['blas_epilogues', 'bodies', 'cse'])
    """
    from tracejit.config import config
    c = Optimized(program, donated=tuple(donate_argnums), label=label or "program")
    if not getattr(target, "plans", True):
        return c
    dump = {_DUMP_ALIASES.get(p.strip(), p.strip()) for p in (config.dump_passes or "").split(",") if p.strip()}
    heading = f" ({label})" if label else ""
    for name, stage in STAGES:
        dumped = name in dump or "all" in dump
        if dumped and stage.works_on == "program":
            print(f"--- before {name}{heading} ---\n{c.program}", file=sys.stderr)
        t0 = time.perf_counter()
        stage(c, target)
        c.timings[name] = (time.perf_counter() - t0) * 1e3
        if config.enable_checks and stage.works_on == "program":
            check_program(c.program)
        elif config.enable_checks:
            check_plan(c.plan, c.offsets, c.arena_bytes)
        if dumped:
            text = c.program if stage.works_on == "program" else plan_text(c.plan)
            extra = f"\narena {c.arena_bytes} bytes, offsets {c.offsets}" if name == "memory" else ""
            print(f"--- after {name}{heading} ---\n{text}{extra}", file=sys.stderr)
    return c


def optimize_program(program: Program) -> Program:
    """Only the Program -> Program stages (what every target's plan starts from)."""
    c = Optimized(program)
    for name, stage in STAGES:
        if stage.works_on == "program":
            stage(c, None)
    return c.program


def plan_text(plan: Plan, indent: str = "") -> str:
    """One line per step; a control-flow step's bodies follow it, indented."""
    lines = []
    for step in plan.steps:
        lines.extend(indent + line for line in step.describe().splitlines())
        bodies = getattr(step, "bodies", None) or ()
        for body, (role, _, _) in zip(bodies, control_flow_bodies(step.eqn) if bodies else ()):
            lines.append(f"{indent}  {role}:")
            lines.append(plan_text(body.plan, indent + "    "))
    return "\n".join(lines)
