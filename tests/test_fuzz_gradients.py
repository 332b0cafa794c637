"""Gradient fuzzer over a fixed seed range (tests/fuzz/grad_check.py).

Each seed is a random differentiable program checked in forward and reverse mode
against central differences, and jacfwd/jacrev, vmap and jit(grad) against each
other. A failure prints a minimal standalone reproducer. The long campaign is
``python -m tests.fuzz.grad_check --start S --count N``.
"""
import numpy as np
import pytest

from tests.fuzz import grad_check
from tests.fuzz.grad_gen import generate

SEEDS = range(0, 600)
CHUNK = 20


@pytest.mark.parametrize("start", range(SEEDS.start, SEEDS.stop, CHUNK))
def test_gradient_fuzz(start):
    totals, findings = grad_check.campaign(start, CHUNK, verbose=False)
    if findings:
        fnd = findings[0]
        pytest.fail(f"{len(findings)} finding(s); first: seed {fnd.seed}, check {fnd.check} ({fnd.kind}): "
                    f"{fnd.message}\n\nReproducer:\n{fnd.reproducer}")
    assert totals.get("ok", 0) > 0


def test_generator_is_deterministic_and_varied():
    a, b = generate(123), generate(123)
    assert a.function_source() == b.function_source()
    assert all(np.array_equal(x, y) for x, y in zip(a.inputs, b.inputs))
    tags = set()
    shapes = set()
    for seed in range(200):
        p = generate(seed)
        tags |= p.tags
        shapes |= {np.shape(x) for x in p.inputs}
    assert {"unary", "binary", "reduce", "structural", "contraction", "cumulative", "where", "cond", "fori",
            "scan", "while", "indexing", "linalg"} <= tags
    assert () in shapes and any(1 in s for s in shapes)


def test_checker_catches_a_wrong_rule(monkeypatch):
    """A derivative rule off by 1% is reported, with a reproducer that fails on its own."""
    from tracejit.core.primitive import jvp_rules
    from tracejit.ops.elementwise import unary_prims
    from tracejit.transforms import ad
    from tracejit.ops.binders import c, mul
    ad._ensure_rules()
    prim = unary_prims["sin"]
    good_jvp, good_vjp = jvp_rules[prim], ad.vjp_rules[prim]

    def bad_jvp(primals, tangents):
        outs, touts = good_jvp(primals, tangents)
        return outs, [None if t is None else mul(t, c(1.01, t)) for t in touts]
    monkeypatch.setitem(jvp_rules, prim, bad_jvp)
    seed = next(s for s in range(1000) if "jnp.sin(" in generate(s).function_source()
                and not generate(s).forward_only)
    counts, findings = grad_check.check_program(seed)
    assert findings and any(f.check == "jvp_fd" for f in findings)
    repro = next(f.reproducer for f in findings if f.check == "jvp_fd")
    with pytest.raises(AssertionError, match="mismatch"):
        exec(compile(repro, "<reproducer>", "exec"), {})
    monkeypatch.setitem(jvp_rules, prim, good_jvp)
    assert ad.vjp_rules[prim] is good_vjp


def test_checker_skips_inputs_next_to_a_kink():
    """Finite differences across a kink disagree between the steps H and 2H: reported as a kink."""
    from tests.fuzz.grad_gen import GradProgram
    prog = GradProgram(0, [("v0", "jnp.abs(x0 - 0.05)", ["x0"])], {"W_OUT": np.array([1.0, 1.0])},
                       [np.array([0.05 + 3e-6, 0.7])], "v0")
    setup, _ = grad_check.setup_source(prog, prog.inputs)
    assert grad_check.run_check(setup, "jvp_fd")[0] == "kink"
    assert grad_check.run_check(setup, "jit_grad")[0] == "ok"
    far = GradProgram(0, prog.lines, prog.consts, [np.array([0.3, 0.7])], "v0")
    assert grad_check.run_check(grad_check.setup_source(far, far.inputs)[0], "jvp_fd")[0] == "ok"


# Found by the gradient campaign (seed 118587, jit(grad) of mean(reshape(transpose(maximum(x, 0.1))))):
# a fused kernel read a reshape view of a value it wrote itself, at other (unwritten) elements.
def test_campaign_seed_118587_broadcast_reshape_transpose_under_jit():
    import tracejit
    import tracejit.numpy as jnp
    w = np.array([-0.135, 0.763])

    def h(w):
        return jnp.transpose(jnp.reshape(jnp.broadcast_to(w, (3, 2)), (2, 3)))
    np.testing.assert_array_equal(tracejit.jit(h)(w), np.reshape(np.broadcast_to(w, (3, 2)), (2, 3)).T)
