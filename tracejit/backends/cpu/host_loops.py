"""Host loops: control flow whose bodies need BLAS or NumPy steps, driven from Python.

The backend builds every body (cond and body of a ``while``, a ``scan``'s
body, each branch of a ``cond``; the driver optimized them with the program)
into an executable when it builds the program that holds the loop, so an executable never compiles at run time
(``jit(f).lower(x).compile()`` is complete). Each iteration calls the body's
executable with the current carry: one Python-level call per iteration, with
the body's kernels running threaded and its products in BLAS. Loops whose
bodies compile to native steps do not come here (``loops.py``).
"""
from __future__ import annotations

import numpy as np


class HostLoop:
    """A ``while``, ``scan`` or ``cond`` equation run from Python over compiled sub-programs.

    ``build(optimized) -> executable`` is the backend's build function, applied to the step's
    bodies (optimized by the driver, carries donated); ``reason`` says why the loop is not native
    (shown by ``as_text``).

    A body's carries are donated to its executable, so an update of a carry (``c.at[i].set(v)``)
    writes in place instead of copying the whole carry every iteration. The loop donates only
    arrays it made: the initial carries are copied once, and the body's results are fresh arrays
    (an executable copies an output that is one of its inputs)."""

    native = False

    def __init__(self, step, build, reason: str | None = None):
        eqn = step.eqn
        self.kind = eqn.primitive.name
        self.params = eqn.params
        self.reason = reason
        executables = [build(body) for body in step.bodies]     # order: plan.control_flow_bodies
        if self.kind == "while":
            self.cond, self.body = executables
        elif self.kind == "scan":
            (self.body,) = executables
        else:
            self.branches = executables
        if self.kind != "cond":
            # The loop owns the carries it donates; the body's own steps (a nested host loop) may
            # still read them during the call, so they are not marked as deleted.
            self.body.marks_donations = False
        self.out_avals = [v.aval for v in eqn.outputs]

    def run_prepared(self, ins):
        """Run with operands that are arrays of the operand types; returns fresh result arrays."""
        # Never an operand itself: loops copy their initial carries, and an executable copies an
        # output that is one of its inputs (a cond branch passing an operand through).
        return getattr(self, f"_run_{self.kind}")(list(ins))

    def _run_cond(self, ins):
        index = min(max(int(ins[0]), 0), len(self.branches) - 1)
        return list(self.branches[index](*ins[1:]))

    def _run_while(self, ins):
        p = self.params
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        cconsts, bconsts, carry = ins[:cn], ins[cn:cn + bn], [c.copy() for c in ins[cn + bn:]]
        while bool(self.cond(*cconsts, *carry)[0]):
            carry = list(self.body(*bconsts, *carry))
        return carry

    def _run_scan(self, ins):
        p = self.params
        nc, ncarry, length = p["num_consts"], p["num_carry"], p["length"]
        consts, carry, xs = ins[:nc], [c.copy() for c in ins[nc:nc + ncarry]], ins[nc + ncarry:]
        ys = [np.empty(a.shape, a.dtype) for a in self.out_avals[ncarry:]]
        for i in range(length):
            idx = length - 1 - i if p["reverse"] else i
            outs = self.body(*consts, *carry, *[np.asarray(x[idx]) for x in xs])
            carry = list(outs[:ncarry])
            for y, v in zip(ys, outs[ncarry:]):
                y[idx] = v
        return [np.asarray(c) for c in carry] + ys
