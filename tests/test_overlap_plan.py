"""compiler/overlap.py in one process: where collectives between processes are started and waited
for in the plan (the compiler only plans here; the collectives run under mpiexec in
tests/mpi_programs/overlap.py). The primitives are bound with ``size=2``, as shard_map over two
processes binds them, so the plans are those two ranks would compile."""
import numpy as np
import pytest

import tracejit
from tracejit.backends import get_backend
from tracejit.compiler import driver
from tracejit.compiler.check_plan import PlanError, check_plan
from tracejit.compiler.kernel_ir import Kernel
from tracejit.compiler.plan import DotStep, WindowStep, base_buffer, step_reads, step_writes
from tracejit.ops.mpi_collectives import mpi_allgather_p, mpi_ppermute_p, mpi_psum_p


def psum(v):
    return mpi_psum_p.bind(v, axis_name="i", size=2)


def plan_of(f, *args, overlap=True):
    saved = tracejit.config.overlap_collectives
    tracejit.config.update("overlap_collectives", overlap)
    try:
        with tracejit.enable_checks(True):
            return driver.optimize(tracejit.make_jaxpr(f)(*args), get_backend("cpu")).plan
    finally:
        tracejit.config.update("overlap_collectives", saved)


def kinds(plan):
    """One letter per step: S start, P poll, W wait, C blocking call, K kernel, D product, . other."""
    def letter(s):
        if isinstance(s, WindowStep) and s.kind.startswith("call"):
            return {"call": "C", "call_start": "S", "call_poll": "P", "call_wait": "W"}[s.kind]
        return "K" if isinstance(s, Kernel) else "D" if isinstance(s, DotStep) else "."
    return "".join(letter(s) for s in plan.steps)


x, y = np.linspace(-1, 1, 64 * 64).reshape(64, 64), np.linspace(0, 2, 64 * 64).reshape(64, 64)


def two_gradients(a, b):
    g1 = psum(np.tanh(a) * 2)             # its operand is ready first
    g2 = psum(np.sin(b @ b) @ b)          # independent of g1
    return g1 + g2


def test_each_gradient_psum_starts_before_the_next_layers_work_and_waits_at_its_use():
    f = two_gradients
    plan = plan_of(f, x, y)
    order = kinds(plan)
    # g1's start comes right after its operand's kernel, g2's work runs while it is in flight, both
    # waits come just before the sum that reads them; g2's own call has nothing to overlap after it.
    assert order.index("S") < order.index("D") < order.index("W"), (order, driver.plan_text(plan))
    # a poll after each product run while the call is in flight lets MPI move its data meanwhile
    assert order[order.index("S"):order.index("W")].count("D") == order.count("P") == 2, order
    start = next(s for s in plan.steps if getattr(s, "kind", "") == "call_start")
    wait = next(s for s in plan.steps if getattr(s, "kind", "") == "call_wait")
    assert (start.update, start.out, start.operand) == (wait.update, wait.out, wait.operand)
    assert plan.buffers[start.update].dtype == np.int64 and plan.buffers[start.update].shape == (2,)
    assert kinds(plan_of(f, x, y, overlap=False)).count("S") == 0


def test_a_collective_with_nothing_independent_stays_one_blocking_call():
    plan = plan_of(lambda a: psum(np.tanh(a)) * 3, x)
    assert "S" not in kinds(plan) and "C" in kinds(plan), driver.plan_text(plan)
    # the request buffers of joined splits are gone: buffers stay numbered in order
    assert [b.id for b in plan.buffers] == list(range(len(plan.buffers)))


def test_starts_and_waits_keep_every_dependency():
    # A chain where each collective feeds the next step and independent work sits between them:
    # every read of a result comes after its wait, every operand is written before its start.
    def f(a, b):
        h = psum(a * 2)
        k = np.cos(b) @ b
        g = mpi_allgather_p.bind(h + 1, axis_name="i", size=2, axis=0, tiled=True)
        m = np.exp(k) @ k
        p = mpi_ppermute_p.bind(g[:64] * k, axis_name="i", size=2, perm=((0, 1), (1, 0)))
        return p + m, h
    plan = plan_of(f, x, y)
    assert kinds(plan).count("S") >= 2, driver.plan_text(plan)
    # the first start checks that every rank makes all the plan's split calls; the others check nothing
    starts = [s for s in plan.steps if getattr(s, "kind", "") == "call_start"]
    assert len(starts[0].agree) == len(starts) and all(not s.agree for s in starts[1:])
    assert [a[0] for a in starts[0].agree] == [s.combine[0] for s in starts]
    written_at, waited = {}, set()
    bufs = plan.buffers
    for i, s in enumerate(plan.steps):
        for r in step_reads(s):
            b = base_buffer(bufs, r)
            assert bufs[b].kind in ("input", "const") or b in written_at, (i, r, driver.plan_text(plan))
        if getattr(s, "kind", "") == "call_wait":
            waited.add(base_buffer(bufs, s.out))
        for w in step_writes(s):
            written_at.setdefault(base_buffer(bufs, w), i)
        started = {base_buffer(bufs, t.out) for t in plan.steps[:i] if getattr(t, "kind", "") == "call_start"}
        for r in step_reads(s):
            b = base_buffer(bufs, r)
            if b in started and getattr(s, "kind", "") != "call_wait":
                assert b in waited, f"step {i} reads b{b} before its wait:\n{driver.plan_text(plan)}"


def test_the_plan_checker_rejects_a_step_touching_a_call_in_flight():
    plan = plan_of(two_gradients, x, y)
    text = driver.plan_text(plan)
    start = next(i for i, s in enumerate(plan.steps) if getattr(s, "kind", "") == "call_start")
    wait = next(i for i, s in enumerate(plan.steps) if getattr(s, "kind", "") == "call_wait")
    assert wait > start + 1, text
    check_plan(plan)
    reader = next(i for i, s in enumerate(plan.steps) if i > wait and plan.steps[start].out in step_reads(s))
    # the reader of the result moved before the wait: the checker must object
    original = list(plan.steps)
    steps = list(plan.steps)
    steps.insert(wait, steps.pop(reader))
    plan.steps = steps
    with pytest.raises(PlanError, match="in flight|before step .* writes part of it"):
        check_plan(plan)
    # and a start without its wait (nor the step reading its result)
    plan.steps = [s for k, s in enumerate(original) if getattr(s, "kind", "") != "call_wait" and k != reader]
    with pytest.raises(PlanError, match="never waited for"):
        check_plan(plan)
    # and a wait without its start
    plan.steps = [s for s in original if getattr(s, "kind", "") != "call_start"]
    with pytest.raises(PlanError, match=r"not started|reads b\d+ before any step writes it"):
        check_plan(plan)
