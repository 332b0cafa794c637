"""The pass pipeline: one named, ordered list (see :data:`PIPELINE`).

Each pass is ``Program -> Program``. ``run_pipeline`` times every pass, runs
the checker after each one when ``config.enable_checks`` is set, and prints
the program before and after the passes named in ``config.dump_passes``
(env ``TRACEJIT_DUMP=simplify,cse`` or ``TRACEJIT_DUMP=all``).
"""
from __future__ import annotations

import sys
import time

from tracejit.compiler.passes.cse import cse
from tracejit.compiler.passes.dce import dce
from tracejit.compiler.passes.dot_layout import transpose_dots
from tracejit.compiler.passes.inline import inline
from tracejit.compiler.passes.loop_carries import forward_unchanged_carries
from tracejit.compiler.passes.simplify import simplify
from tracejit.compiler.passes.small_dots import small_dots_as_kernels

PIPELINE = [
    ("inline", inline),        # call equations and decomposable primitives expanded
    ("simplify", simplify),    # constant folding and algebraic identities
    ("loop_carries", forward_unchanged_carries),  # results of carries a loop never changes are its operands
    ("small_dots", small_dots_as_kernels),  # matrix-vector and tiny products as fusible sums
    ("cse", cse),              # one equation per distinct (primitive, inputs, params)
    ("dot_layout", transpose_dots),  # transpose(a @ b) computed as b^T @ a^T (no transposed copy)
    ("dce", dce),              # equations whose results are unused removed
]
# The stages after these turn the program into kernels and buffers, so they are
# not Program -> Program; the backend runs them in this order and times each:
PLAN_STAGES = [
    "layout",    # transposes/broadcasts/slices folded into index maps and BLAS flags (fusion.py)
    "fusion",    # loop and row kernels, sibling and phase merging (fusion.py)
    "memory",    # liveness-based arena reuse, in-place writes, donation (memory.py)
]
PASS_NAMES = [name for name, _ in PIPELINE] + PLAN_STAGES


def run_pipeline(program, *, backend_supports=None):
    """Run every pass; returns ``(program, {pass_name: ms})``."""
    from tracejit.config import config
    from tracejit.core.check import check_program
    dump = {p.strip() for p in (config.dump_passes or "").split(",") if p.strip()}
    timings = {}
    for name, fn in PIPELINE:
        if name in dump or "all" in dump:
            print(f"--- before {name} ---\n{program}", file=sys.stderr)
        t0 = time.perf_counter()
        program = fn(program, backend_supports) if name == "inline" else fn(program)
        timings[name] = (time.perf_counter() - t0) * 1e3
        if config.enable_checks:
            check_program(program)
        if name in dump or "all" in dump:
            print(f"--- after {name} ---\n{program}", file=sys.stderr)
    return program, timings
