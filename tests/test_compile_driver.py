"""The compile driver (compiler/driver.py): one list of stages, bodies at compile time, the plan
checker, and the one-way import direction (the compiler never imports a backend)."""
import ast
import copy
import pathlib

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.backends import get_backend
from tracejit.compiler import driver
from tracejit.compiler.check_plan import PlanError, check_plan
from tracejit.compiler.plan import NumpyStep, WindowStep, step_reads, step_writes

PACKAGE = pathlib.Path(tracejit.__file__).parent


def _imports(path):
    """Every module a file imports, at top level or inside a function."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
        elif isinstance(node, ast.ImportFrom):
            yield "(relative)"


@pytest.mark.parametrize("upper", ["tracejit.backends", "tracejit.api", "tracejit.diagnostics"])
def test_the_compiler_imports_nothing_above_it(upper):
    found = [(str(p.relative_to(PACKAGE)), m) for p in (PACKAGE / "compiler").rglob("*.py")
             for m in _imports(p) if m == upper or m.startswith(upper + ".") or m == "(relative)"]
    assert found == []


def _program(fn, *args):
    return tracejit.make_jaxpr(fn)(*args)


def test_stages_are_one_named_list_each_timed():
    opt = driver.optimize(_program(lambda x: jnp.exp(x) * 2 + 1, np.ones(4)), get_backend("cpu"))
    assert list(opt.timings) == driver.STAGE_NAMES
    assert all(ms >= 0 for ms in opt.timings.values())
    assert len(opt.plan.kernels) == 1 and opt.offsets is not None


def test_the_reference_target_runs_the_program_as_traced():
    program = _program(lambda x: jnp.sin(x) + jnp.sin(x), np.ones(3))
    opt = driver.optimize(program, get_backend("reference"))
    assert opt.plan is None and opt.program is program and opt.timings == {}


def _nested(x):
    def outer(i, c):
        inner = lax.fori_loop(0, i, lambda j, v: v * 0.5 + jnp.sin(v), c)
        return lax.cond(i % 2 == 0, lambda v: v + 1.0, lambda v: v * 2.0, inner)
    return lax.fori_loop(0, 5, outer, x)


def test_loop_bodies_are_optimized_by_the_driver_at_compile_time(capsys):
    x = np.linspace(0, 1, 40)      # (a cond over a few elements would become a select: cheap_conds)
    opt = driver.optimize(_program(_nested, x), get_backend("cpu"))
    (loop,) = [s for s in opt.plan.steps if isinstance(s, NumpyStep)]
    (body,) = loop.bodies
    assert body.plan is not None and body.offsets is not None and body.donated      # carries donated
    nested = [s for s in body.plan.steps if isinstance(s, NumpyStep)]
    assert {s.eqn.primitive.name for s in nested} == {"while", "cond"}
    assert all(s.bodies and all(b.plan is not None for b in s.bodies) for s in nested)
    # Dumps of a body say whose body it is; the built program runs as one native loop.
    tracejit.config.update("dump_passes", "fusion")
    try:
        compiled = tracejit.jit(_nested).lower(x).compile()
    finally:
        tracejit.config.update("dump_passes", "")
    err = capsys.readouterr().err
    assert "--- after fusion ---" in err and "--- after fusion (scan body in program) ---" in err
    assert "(while body in scan body in program)" in err
    assert compiled.as_text().startswith("native loop scan")
    want = x.copy()
    for i in range(5):
        for _ in range(i):
            want = want * 0.5 + np.sin(want)
        want = want + 1.0 if i % 2 == 0 else want * 2.0
    np.testing.assert_allclose(compiled(x), want, rtol=1e-14)


def test_lowered_as_text_shows_each_body_under_its_loop():
    text = tracejit.jit(_nested).lower(np.ones(40)).as_text()
    plan_part = text.split("# kernels and steps")[1]
    assert "  scan body:" in plan_part and "      while body:" in plan_part and "cond branch 1:" in plan_part


# --------------------------------------------------------------------------- the plan checker

def _optimized():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((40, 30)), rng.standard_normal((30, 40))

    def f(a, b, i):
        t = jnp.exp(a) @ b                      # two temporaries: exp(a), and the product
        u = jnp.tanh(t) @ t
        return lax.dynamic_slice(u + t, (i, 0), (2, 40))
    return driver.optimize(_program(f, a, b, 3), get_backend("cpu"))


def test_check_plan_accepts_what_the_driver_makes():
    opt = _optimized()
    check_plan(opt.plan, opt.offsets, opt.arena_bytes)


def test_check_plan_finds_a_read_before_its_write():
    opt = _optimized()
    plan = copy.deepcopy(opt.plan)
    plan.steps.reverse()
    with pytest.raises(PlanError, match="before any step writes it"):
        check_plan(plan)


def test_check_plan_finds_live_temporaries_sharing_memory():
    opt = _optimized()
    plan, offsets = opt.plan, dict(opt.offsets)
    temps = [b.id for b in plan.buffers if b.kind == "temp" and b.id in offsets]
    live = {}
    for i, step in enumerate(plan.steps):
        for b in list(step_writes(step)) + list(step_reads(step)):
            if b in temps:
                live.setdefault(b, [i, i])[1] = i
    # Two temporaries live over a common step that is not where one ends and the other starts.
    pair = next((p, q) for p in temps for q in temps
                if p < q and p in live and q in live and live[p][0] < live[q][0] < live[p][1])
    offsets[pair[1]] = offsets[pair[0]]
    with pytest.raises(PlanError, match="while both are live"):
        check_plan(plan, offsets, opt.arena_bytes)
    with pytest.raises(PlanError, match="outside the"):
        check_plan(plan, dict(opt.offsets), 64)


def test_check_plan_finds_bad_aliases_and_window_starts():
    opt = _optimized()
    plan = copy.deepcopy(opt.plan)
    window = next(s for s in plan.steps if isinstance(s, WindowStep))
    float_buffer = next(b.id for b in plan.buffers if b.dtype.kind == "f")
    window.starts[0] = float_buffer
    with pytest.raises(PlanError, match="not an integer scalar"):
        check_plan(plan)
    plan = copy.deepcopy(opt.plan)
    temp = next(b for b in plan.buffers if b.kind == "temp")
    temp.kind, temp.alias_of = "alias", plan.inputs[2]       # an f64[40,40] over an int scalar
    with pytest.raises(PlanError, match="another size or type"):
        check_plan(plan)
