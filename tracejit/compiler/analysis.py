"""Cost and memory analysis of a compiled executable (estimates, as in JAX)."""
from __future__ import annotations

from tracejit.core.primitive import cost_rules
from tracejit.core.ir import subprograms
from tracejit.compiler.plan import step_reads, step_writes


def _program_cost(program) -> tuple[float, float]:
    flops = trans = 0.0
    for eqn in program.eqns:
        rule = cost_rules.get(eqn.primitive)
        if rule is not None:
            c = rule([a.aval for a in eqn.inputs], [v.aval for v in eqn.outputs], **eqn.params)
            flops += c.get("flops", 0)
            trans += c.get("transcendentals", 0)
        for sub in subprograms(eqn):
            f, t = _program_cost(sub)
            flops, trans = flops + f, trans + t
    return flops, trans


def cost_analysis(program, executable) -> dict:
    """``flops``, ``transcendentals`` and ``bytes accessed`` per call.

    Bytes count what the executable's steps read and write: each buffer a
    kernel loads or stores once, BLAS and NumPy steps their operands.
    """
    exe_program = getattr(executable, "program", program)
    flops, trans = _program_cost(exe_program)
    plan = getattr(executable, "plan", None)
    if plan is None:
        nbytes = sum(v.aval.nbytes for v in program.in_vars) + sum(a.aval.nbytes for a in program.outputs)
    else:
        nbytes = 0
        for step in plan.steps:
            for b in set(step_reads(step)) | set(step_writes(step)):
                nbytes += plan.buffers[b].nbytes
    return {"flops": float(flops), "transcendentals": float(trans), "bytes accessed": float(nbytes)}


def memory_analysis(program, executable) -> dict:
    """Argument, output and temporary bytes, and allocations made per call."""
    plan = getattr(executable, "plan", None)
    arg_bytes = sum(v.aval.nbytes for v in program.in_vars)
    out_bytes = sum(a.aval.nbytes for a in program.outputs)
    if plan is None:
        temp = sum(v.aval.nbytes for e in program.eqns for v in e.outputs)
        return {"argument_size_in_bytes": arg_bytes, "output_size_in_bytes": out_bytes,
                "temp_size_in_bytes": temp, "allocations_per_call": len(program.eqns)}
    external = sum(1 for b in plan.buffers if b.kind == "external")
    outputs = sum(1 for b in plan.buffers if b.kind == "output")
    return {"argument_size_in_bytes": arg_bytes, "output_size_in_bytes": out_bytes,
            "temp_size_in_bytes": executable.arena_bytes,
            "external_temp_size_in_bytes": sum(b.nbytes for b in plan.buffers if b.kind == "external"),
            "allocations_per_call": outputs + external, "kernels": len(plan.kernels)}
