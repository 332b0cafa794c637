"""The Program -> Program passes, in order: the first stages of the driver (``compiler/driver.py``).

Each pass takes a Program and returns an equivalent one. The driver runs them
in this order, then the Plan stages (fusion, merge, prune, BLAS epilogues,
memory, bodies); it times, dumps and checks each.
"""
from __future__ import annotations

from tracejit.compiler.passes.cheap_conds import cheap_conds_as_selects
from tracejit.compiler.passes.cse import cse
from tracejit.compiler.passes.dce import dce
from tracejit.compiler.passes.dot_layout import transpose_dots
from tracejit.compiler.passes.inline import inline
from tracejit.compiler.passes.loop_carries import forward_unchanged_carries
from tracejit.compiler.passes.loop_invariants import hoist_loop_invariants
from tracejit.compiler.passes.native_collective_axes import collectives_along_axis_0
from tracejit.compiler.passes.native_pads import pads_as_native_ops
from tracejit.compiler.passes.short_sums import short_sums_as_additions
from tracejit.compiler.passes.simplify import simplify
from tracejit.compiler.passes.small_dots import small_dots_as_kernels
from tracejit.compiler.passes.summed_pads import summed_pads_as_concatenations

PIPELINE = [
    ("inline", inline),        # call equations and decomposable primitives expanded
    ("simplify", simplify),    # constant folding and algebraic identities
    ("cheap_conds", cheap_conds_as_selects),  # two-branch conds of a few safe scalar ops: both sides + select
    ("loop_carries", forward_unchanged_carries),  # results of carries a loop never changes are its operands
    ("loop_invariants", hoist_loop_invariants),  # body work that reads only loop constants runs before the loop
    ("small_dots", small_dots_as_kernels),  # matrix-vector and tiny products as fusible sums
    ("short_sums", short_sums_as_additions),  # sums over an axis of 2-4 elements as additions (map kernels)
    ("native_pads", pads_as_native_ops),  # interior padding and negative edges as concatenations and slices
    ("summed_pads", summed_pads_as_concatenations),  # sums of non-overlapping zero pads (slicing's gradient) as concatenations
    ("native_collective_axes", collectives_along_axis_0),  # MPI gathers/scatters along other axes: axis 0 + transposes
    ("cse", cse),              # one equation per distinct (primitive, inputs, params)
    ("dot_layout", transpose_dots),  # transpose(a @ b) computed as b^T @ a^T (no transposed copy)
    ("dce", dce),              # equations whose results are unused removed
]
