"""Products with an epilogue (compiler/blas_epilogues.py, backends/cpu/gemm_epilogue.py): an
elementwise function of a product (bias, activation, residual, scale) applied as the product's
blocks are stored (generated products in native code), or over the stored result (after a library
call, in native code or from Python). Each case runs on every path -- the native entry with
generated code and with a library's product, a native loop body, a large product called from
Python -- in float32 and float64, against a float64 NumPy reference, and against the same program
compiled without epilogues."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit.compiler.plan import DotStep


def _gelu(v, xp):
    return 0.5 * v * (1 + xp.tanh(0.7978845608028654 * (v + 0.044715 * v ** 3)))


# name -> f(x, w, b, r, s, rt, xp): b a bias over the columns, r a residual of the product's shape, s a
# per-row scale (rows, 1), rt a residual stored transposed (its loads are not vectors along a row)
CASES = {
    "bias_tanh": lambda x, w, b, r, s, rt, xp: xp.tanh(x @ w + b),
    "residual_relu": lambda x, w, b, r, s, rt, xp: r + xp.maximum(x @ w + b, 0.0),
    "row_scale": lambda x, w, b, r, s, rt, xp: (x @ w) * s + 1.0,
    "leaky_relu": lambda x, w, b, r, s, rt, xp: xp.where(x @ w > 0, x @ w, 0.125 * (x @ w)),
    "gelu": lambda x, w, b, r, s, rt, xp: _gelu(x @ w + b, xp),
    "transposed_residual": lambda x, w, b, r, s, rt, xp: (x @ w) - rt.T,
}
SHAPES = {"entry": (13, 20, 33), "native": (24, 64, 80), "python": (300, 160, 400)}


def _operands(m, k, n, dtype, rng, special=False):
    x = rng.standard_normal((m, k)).astype(dtype)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    r = rng.standard_normal((m, n)).astype(dtype)
    s = rng.standard_normal((m, 1)).astype(dtype)
    rt = rng.standard_normal((n, m)).astype(dtype)
    if special and m >= 3 and n >= 6:    # NaN and inf reach whole rows of the product, one column's bias
        x[1, 3], x[2, 0], b[5] = np.nan, np.inf, -np.inf
    return x, w, b, r, s, rt


def _check(got, f, args, dtype):
    x, w, b, r, s, rt = (a.astype(np.float64) for a in args)
    want = f(x, w, b, r, s, rt, np)
    scale = np.abs(x) @ np.abs(w) * (np.abs(s) + 1) + np.abs(b) + np.abs(r) + np.abs(rt.T) + 1
    tol = 5e-5 if dtype == np.float32 else 1e-12
    assert got.shape == want.shape and got.dtype == dtype
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    with np.errstate(invalid="ignore"):
        assert np.all(np.abs(got - want)[finite] <= tol * scale[finite])


def _epilogues(compiled):
    return [s for s in compiled.executable.plan.steps if isinstance(s, DotStep) and s.epilogue is not None]


@pytest.mark.parametrize("path", sorted(SHAPES))
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_epilogues_on_every_path(case, path, dtype):
    rng = np.random.default_rng([len(case), len(path), np.dtype(dtype).itemsize])
    args = _operands(*SHAPES[path], dtype, rng, special=case in ("bias_tanh", "residual_relu"))
    f = CASES[case]
    jitted = tracejit.jit(lambda *a: f(*a, jnp))
    got = np.asarray(jitted(*args))
    _check(got, f, args, dtype)
    compiled = jitted.lower(*args).compile()
    assert len(_epilogues(compiled)) == 1, compiled.as_text()
    assert (compiled.executable.native_entry is not None) == (path != "python")


@pytest.mark.parametrize("own_gemm", ["1", "0"])
@pytest.mark.parametrize("case", ["bias_tanh", "gelu", "row_scale", "transposed_residual"])
def test_epilogues_in_a_loop_body_and_after_a_library_product(case, own_gemm, monkeypatch):
    """In a native loop body, generated code applies the epilogue as it stores; a library's product
    (``TRACEJIT_OWN_GEMM=0``) is followed by it in place. The loop reuses the product's operands."""
    monkeypatch.setenv("TRACEJIT_OWN_GEMM", own_gemm)
    rng = np.random.default_rng(7)
    x, w, b, r, s, rt = _operands(12, 40, 40, np.float32, rng)
    w *= 0.5
    f = CASES[case]

    def body(i, carry):
        return f(carry, w, b, r, s, rt, jnp) * 0.5
    jitted = tracejit.jit(lambda x0: tracejit.lax.fori_loop(0, 6, body, x0))
    got = np.asarray(jitted(x))
    want = x.astype(np.float64)
    for _ in range(6):
        want = f(want, *(a.astype(np.float64) for a in (w, b, r, s, rt)), np) * 0.5
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * (np.abs(want).max() + 1))


def test_batched_and_three_dimensional_products():
    """The epilogue indexes its other operands by the element's place in the whole result: the matrix
    of a batch, the (batch, row) of a 3-D left operand."""
    rng = np.random.default_rng(3)
    for path_shape in [(2, 7, 24, 33), (3, 40, 96, 200)]:
        nb, m, k, n = path_shape
        x = rng.standard_normal((nb, m, k)).astype(np.float32)
        w = (rng.standard_normal((nb, k, n)) / np.sqrt(k)).astype(np.float32)
        w2 = w[0]
        b = rng.standard_normal(n).astype(np.float32)
        r = rng.standard_normal((nb, m, n)).astype(np.float32)
        batched = tracejit.jit(lambda x, w, b, r: jnp.tanh(jnp.einsum("bij,bjk->bik", x, w) + b) * r)
        got = np.asarray(batched(x, w, b, r))
        want = np.tanh(np.einsum("bij,bjk->bik", x.astype(np.float64), w.astype(np.float64)) + b) * r
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        assert len(_epilogues(batched.lower(x, w, b, r).compile())) == 1
        rows = tracejit.jit(lambda x, w, b, r: jnp.maximum(x @ w + b, 0.0) - r)
        got = np.asarray(rows(x, w2, b, r))
        want = np.maximum(x.astype(np.float64) @ w2.astype(np.float64) + b, 0.0) - r
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        assert len(_epilogues(rows.lower(x, w2, b, r).compile())) == 1


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_results_as_without_epilogues(case, monkeypatch):
    """The epilogue computes what the kernel reading the stored product computed (float64: the same
    operations in the same order, so up to the product's own rounding)."""
    rng = np.random.default_rng(11)
    args = _operands(50, 70, 90, np.float64, rng)
    f = CASES[case]
    with_epilogue = np.asarray(tracejit.jit(lambda *a: f(*a, jnp))(*args))
    monkeypatch.setenv("TRACEJIT_GEMM_EPILOGUES", "0")
    jitted = tracejit.jit(lambda *a: f(*a, jnp))
    without = np.asarray(jitted(*args))
    assert not _epilogues(jitted.lower(*args).compile())
    np.testing.assert_allclose(with_epilogue, without, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("shape", [SHAPES["native"], SHAPES["python"]])
def test_an_epilogue_reading_temporaries(shape):
    """The epilogue's other operands computed in the program (arena temporaries) stay live until the
    product has used them: its output (a temporary too, read by a second product) never takes their
    memory."""
    rng = np.random.default_rng(2)
    x, w, b, r, s, _ = _operands(*shape, np.float32, rng)
    w2 = rng.standard_normal((shape[2], 48)).astype(np.float32)

    def f(x, w, b, r, w2):
        bias, residual = jnp.sort(b), jnp.cumsum(r, axis=1)     # temporaries, read only by the epilogue
        return (jnp.tanh(x @ w + bias) * residual) @ w2
    jitted = tracejit.jit(f)
    got = np.asarray(jitted(x, w, b, r, w2))
    x64, w64, b64, r64, w264 = (a.astype(np.float64) for a in (x, w, b, r, w2))
    want = (np.tanh(x64 @ w64 + np.sort(b64)) * np.cumsum(r64, axis=1)) @ w264
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    assert len(_epilogues(jitted.lower(x, w, b, r, w2).compile())) == 1


def _not_folded(f, *args):
    compiled = tracejit.jit(f).lower(*args).compile()
    return not _epilogues(compiled)


def test_what_stays_a_kernel():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((20, 30)).astype(np.float32)
    w = rng.standard_normal((30, 40)).astype(np.float32)
    b = rng.standard_normal(40).astype(np.float32)
    # the product read twice, or returned too
    assert _not_folded(lambda x, w, b: (jnp.tanh(x @ w), (x @ w).sum(axis=0)), x, w, b)
    assert _not_folded(lambda x, w, b: (x @ w, jnp.tanh(x @ w + b)), x, w, b)
    # a reduction of the product, another dtype, another shape
    assert _not_folded(lambda x, w, b: (x @ w + b).sum(axis=1), x, w, b)
    assert _not_folded(lambda x, w, b: (x @ w > b).astype(jnp.int32), x, w, b)
    assert _not_folded(lambda x, w, b: (x @ w[:, :20]) + (x @ w[:, :20]).T, x, w, b)    # read transposed
    # an SGD update stays BLAS's beta = 1, not an epilogue
    g = rng.standard_normal((20, 40)).astype(np.float32)
    assert _not_folded(lambda x, w, g: w - 0.1 * (x.T @ g), x, w, g)
    # one column: a matrix-vector product
    assert _not_folded(lambda x, w, b: jnp.tanh(x @ w[:, :1] + b[:1]), x, w, b)
    # and one that folds, for contrast
    assert not _not_folded(lambda x, w, b: jnp.tanh(x @ w + b), x, w, b)


def test_the_plan_says_so():
    x, w, b = np.ones((16, 64), np.float32), np.ones((64, 64), np.float32), np.ones(64, np.float32)
    text = tracejit.jit(lambda x, w, b: jnp.tanh(x @ w + b)).lower(x, w, b).compile().as_text()
    assert "epilogue" in text and "tanh" in text and "kernel" not in text.split("epilogue")[0]


_GUARDED = r"""
import sys
import numpy as np
import tracejit, tracejit.numpy as jnp
from helpers import at_page_end       # (tests/ is on the child's path)

rng = np.random.default_rng(0)
m, k, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
x = rng.standard_normal((m, k)).astype(np.float32)
w = rng.standard_normal((k, n)).astype(np.float32)
keep = []
s = at_page_end(rng.standard_normal((m, 1)).astype(np.float32), keep)
got = np.asarray(tracejit.jit(lambda x, w, s: jnp.tanh(x @ w) * s)(x, w, s))
np.testing.assert_allclose(got, np.tanh(x.astype(np.float64) @ w) * s, rtol=1e-4, atol=1e-4)
print("ok")
"""


@pytest.mark.parametrize("own_gemm", ["1", "0"])
def test_epilogue_reads_nothing_past_its_operands(own_gemm, tmp_path):
    """A per-row scale at the very end of readable memory: the last row's vectors past the last
    column (33 columns: the last block's second vector has no column at all) read no further."""
    import os
    import subprocess
    import sys
    script = tmp_path / "guarded.py"
    script.write_text(_GUARDED)
    tests = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, TRACEJIT_OWN_GEMM=own_gemm,
               PYTHONPATH=os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, str(script), "13", "24", "33"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-2000:])


# --------------------------------------------------------------------------- the class fuzzer

_LEAVES = ["p", "p", "p", "b", "r", "s", "rt.T", "2.5", "-0.75"]
_UNARY = ["xp.tanh({})", "xp.abs({})", "xp.sin({})", "-({})", "xp.square({}) * 0.25", "xp.exp(xp.minimum({}, 3.0))",
          "xp.maximum({}, 0.0)"]
_BINARY = ["({} + {})", "({} - {})", "({} * {})", "xp.maximum({}, {})", "xp.minimum({}, {})",
           "xp.where({0} > {1}, {0}, {1} * 0.5)"]


def _random_epilogue(rng, depth=0):
    """A random elementwise expression over the product ``p`` and the other operands, as source."""
    r = rng.random()
    if depth >= 3 or r < 0.25:
        return str(rng.choice(_LEAVES))
    if r < 0.55:
        return str(rng.choice(_UNARY)).format(_random_epilogue(rng, depth + 1))
    return str(rng.choice(_BINARY)).format(_random_epilogue(rng, depth + 1), _random_epilogue(rng, depth + 1))


def test_random_epilogues_match_the_unfused_program(monkeypatch):
    # Random epilogues (the product used once or several times, with biases, residuals, per-row scales,
    # transposed residuals, scalars) on random shapes and paths (the native entry, a large product
    # from Python, a loop body; generated or library products), float32 and float64, with NaN and
    # inf in some operands: the same results as the program compiled without epilogues, whose kernel
    # reads the stored product. GEMM_EPILOGUE_FUZZ_SEEDS=500 runs a campaign.
    import os
    import re
    seeds = int(os.environ.get("GEMM_EPILOGUE_FUZZ_SEEDS", "10"))
    taken = 0
    for seed in range(seeds):
        rng = np.random.default_rng([91, seed])
        dtype = [np.float32, np.float64][seed % 2]
        path = str(rng.choice(["entry", "python", "loop"]))
        monkeypatch.setenv("TRACEJIT_OWN_GEMM", str(rng.choice(["1", "0"])))
        m = int(rng.integers(2, 40)) if path != "python" else int(rng.integers(100, 300))
        k = int(rng.integers(16, 90)) if path != "python" else int(rng.integers(100, 200))
        n = k if path == "loop" else int(rng.integers(2, 70)) if path != "python" else int(rng.integers(100, 300))
        source = _random_epilogue(rng)
        if not re.search(r"\bp\b", source):
            source = f"({source}) + p"
        x, w, b, r, s, rt = _operands(m, k, n, dtype, rng, special=rng.random() < 0.3)
        ns = {"xp": jnp}
        # (a constant-only subexpression is a strong float64 scalar, as in NumPy: the cast keeps the carry's
        # dtype, and leaves a conversion in the epilogue)
        exec(f"def epilogue(p, b, r, s, rt):\n    return ({source}).astype(p.dtype)", ns)
        epilogue = ns["epilogue"]
        if path == "loop":
            w = (w * 0.5).astype(dtype)

            def f(x, w, b, r, s, rt):
                return tracejit.lax.fori_loop(0, 3, lambda i, c: epilogue(c @ w, b, r, s, rt) * 0.25, x)
        else:
            def f(x, w, b, r, s, rt):
                return epilogue(x @ w, b, r, s, rt)
        args = (x, w, b, r, s, rt)
        monkeypatch.setenv("TRACEJIT_GEMM_EPILOGUES", "1")
        with np.errstate(all="ignore"):
            jitted = tracejit.jit(f)
            fused = np.asarray(jitted(*args))
            taken += path != "loop" and bool(_epilogues(jitted.lower(*args).compile()))
            monkeypatch.setenv("TRACEJIT_GEMM_EPILOGUES", "0")
            plain = np.asarray(tracejit.jit(f)(*args))
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(fused, plain, rtol=tol, atol=tol * (np.nanmax(np.abs(plain[np.isfinite(plain)]),
                                                                              initial=0) + 1),
                                   err_msg=f"seed {seed} path {path} {m}x{k}x{n} {np.dtype(dtype)}: {source}")
    assert taken >= seeds // 4      # (the others: loops, products small enough to be kernels)
