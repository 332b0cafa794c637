"""The pass pipeline: named passes, per-pass timings, dumps, checker after each pass."""
import numpy as np

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.compiler.driver import STAGE_NAMES, optimize_program
from tracejit.compiler.passes import PIPELINE


def g(x):
    y = x * 2 + np.sin(x)
    return np.exp(y * 2 + np.sin(y)) - x


def test_pipeline_is_one_named_ordered_list():
    assert [n for n, _ in PIPELINE] == ["inline", "simplify", "cheap_conds", "loop_carries", "loop_invariants", "small_dots", "short_sums",
                                       "native_pads", "summed_pads", "native_collective_axes", "cse", "dot_layout", "dce"]
    assert STAGE_NAMES == [n for n, _ in PIPELINE] + ["fusion", "merge", "prune", "blas_epilogues", "overlap", "memory",
                                                      "bodies"]


def test_transposed_products_are_computed_transposed():
    rng = np.random.default_rng(2)
    # Large enough for BLAS (small products become fused sums: passes/small_dots.py).
    a, b = rng.standard_normal((40, 30)), rng.standard_normal((30, 50))
    fn = lambda a, b: (a @ b).T * 2          # noqa: E731
    c = tracejit.jit(fn).lower(a, b).compile()
    assert "transpose" not in str(c.executable.program)      # b^T @ a^T: no transposed copy
    # (BLAS may sum in another order for b^T @ a^T: a few ULPs of the largest term.)
    np.testing.assert_allclose(c(a, b), (a @ b).T * 2, rtol=1e-13, atol=1e-12)
    # A product also used untransposed keeps its layout (one product, not two).
    both = tracejit.jit(lambda a, b: ((a @ b).T, a @ b)).lower(a, b).compile()
    assert str(both.executable.program).count("dot_general") == 1
    x, y = rng.standard_normal((2, 3, 24, 25)), rng.standard_normal((2, 3, 25, 26))
    got = tracejit.jit(lambda x, y: np.swapaxes(x @ y, -1, -2))(x, y)
    np.testing.assert_allclose(got, np.swapaxes(x @ y, -1, -2), rtol=1e-13)


def test_compile_timings_cover_every_stage():
    x = np.ones(16, np.float32)
    t = tracejit.jit(g).lower(x).compile().timings
    for key in ("trace_ms", "passes_ms", "codegen_ms", "llvm_ms", "pass_inline_ms", "pass_cse_ms",
                *(f"pass_{name}_ms" for name in STAGE_NAMES)):
        assert key in t and t[key] >= 0, key


def test_dump_prints_program_before_and_after(capsys):
    tracejit.config.update("dump_passes", "cse,fusion")
    try:
        tracejit.jit(lambda x: np.sin(x) + np.sin(x))(np.ones(4))
    finally:
        tracejit.config.update("dump_passes", "")
    err = capsys.readouterr().err
    assert "--- before cse ---" in err and "--- after cse ---" in err
    after = err.split("--- after cse ---")[1].split("---")[0]
    assert after.count("sin") == 1          # CSE merged the two sin equations
    assert "--- after fusion ---" in err and "kernel" in err


def test_constant_folding_and_dce():
    def f(x):
        unused = np.exp(x) * 3          # dead
        c = np.float64(2.0) * 3.0 + 1.0  # folds at trace time / in simplify
        return x * c
    program = tracejit.make_jaxpr(f)(np.ones(3))
    optimized = optimize_program(program)
    names = [e.primitive.name for e in optimized.eqns]
    assert "exp" not in names and names == ["mul"]
    np.testing.assert_allclose(tracejit.jit(f)(np.ones(3)), np.full(3, 7.0))


def test_log_compiles_line(capsys, caplog):
    tracejit.config.update("log_compiles", True)
    try:
        tracejit.jit(g)(np.ones(8, np.float32))
    finally:
        tracejit.config.update("log_compiles", False)
    out = capsys.readouterr().out + caplog.text
    assert "compiled g" in out and "f32[8]" in out and "LLVM" in out and "1 kernel" in out


def test_reshaped_view_of_a_materialized_value_is_an_alias_not_a_copy():
    # The im2col matrix of a convolution (a concatenation) gets a leading group dim before its
    # product: the same bytes, so the plan aliases it instead of copying it with a kernel.
    a, b = np.arange(4096.0).reshape(64, 64) / 100, np.arange(4096.0).reshape(64, 64) / 7
    f = tracejit.jit(lambda a, b: jnp.concatenate([a, a * 2]).reshape(1, 128, 64) @ b)
    text = f.lower(a, b).compile().as_text()
    assert "blas" in text and ": copy" not in text, text
    np.testing.assert_allclose(f(a, b), (np.concatenate([a, a * 2]) @ b)[None], rtol=1e-13)


def test_concatenation_operands_are_stored_straight_into_their_slabs():
    a, b = np.arange(12.0).reshape(3, 4), np.arange(8.0).reshape(2, 4) - 3
    cases = [
        lambda a, b: jnp.concatenate([a * 2, jnp.sin(b), a]) * 1.5,             # computed, computed, an input
        lambda a, b: jnp.concatenate([a * 2, b + 1])[:3] * 3,                   # a read of the first slab
        lambda a, b: jnp.concatenate([a * 2, a + 1])[:3] * 3,                   # ... when both slabs are one pass
        lambda a, b: (jnp.concatenate([a * 2, b + 1]), a * 2),                  # the result is an output
        lambda a, b: jnp.concatenate([a.T * 2, b.T - 1], axis=1) + 0.5,        # slabs along the last axis
        lambda a, b: jnp.stack([a[:2] + b, a[1:] * b]) - 1,                     # a new leading axis
        lambda a, b: jnp.stack([a[:2] + b, a[1:] * b]),                         # the result is an output
    ]
    for f in cases:
        got, ref = tracejit.jit(f)(a, b), tracejit.jit(f, backend="reference")(a, b)
        for g, r in zip(*(v if isinstance(v, tuple) else (v,) for v in (got, ref))):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(r))
    text = tracejit.jit(cases[0]).lower(a, b).compile().as_text()
    assert "window concatenate[axis=0] b0 ->" in text, text          # only the input is copied

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    x, w = np.random.default_rng(0).standard_normal((2, 6, 6, 3)), np.random.default_rng(1).standard_normal((3, 3, 3, 4))
    assert "window concatenate" not in tracejit.jit(conv).lower(x, w).compile().as_text()
    np.testing.assert_allclose(tracejit.jit(conv)(x, w), tracejit.jit(conv, backend="reference")(x, w), rtol=1e-12)
