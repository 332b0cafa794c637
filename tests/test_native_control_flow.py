"""Control flow compiled into one native driver (backends/cpu/loops.py): conds and loops nested in
loop bodies, top-level conds, carries returned unchanged, and what ``as_text`` says about each loop."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax

import helpers


def _loop_lines(fn, *args):
    text = tracejit.jit(fn).lower(*args).compile().as_text()
    return [line for line in text.splitlines() if " loop " in line]


def _all_native(fn, *args):
    lines = _loop_lines(fn, *args)
    return bool(lines) and all(line.startswith("native loop") for line in lines)


def collatz(n0):
    def body(i, c):
        n, steps = c
        n = lax.cond(n % 2 == 0, lambda n: n // 2, lambda n: 3 * n + 1, n)
        return n, steps + (n != 1)
    return lax.fori_loop(0, 120, body, (n0, 0))


def collatz_py(n0):
    n, steps = n0, 0
    for _ in range(120):
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += n != 1
    return n, steps


@pytest.mark.parametrize("n0", [1, 6, 27, 97])
def test_cond_inside_fori_loop_is_native(n0):
    got = tracejit.jit(collatz)(n0)
    assert tuple(int(v) for v in got) == collatz_py(n0)
    assert _all_native(collatz, n0)


def test_nested_loop_with_trip_count_from_the_outer_index():
    def tri(n):
        return lax.fori_loop(0, n, lambda i, acc: lax.fori_loop(0, i, lambda j, a: a + i * j + 1, acc), 0)
    for n in (0, 1, 7, 40):
        assert int(tracejit.jit(tri)(n)) == sum(i * j + 1 for i in range(n) for j in range(i))
    assert _all_native(tri, 5)


def crc16(data):
    def byte_step(crc, byte):
        crc = crc ^ (byte.astype(np.uint16) << 8)

        def bit(c, _):
            c = jnp.where((c & 0x8000) != 0, (c << 1) ^ 0x1021, c << 1)
            return c, None
        crc, _ = lax.scan(bit, crc, None, length=8)
        return crc, None
    return lax.scan(byte_step, np.uint16(0xFFFF), data)[0]


def test_crc16_nested_scan_matches_python():
    data = np.frombuffer(b"123456789" * 7, np.uint8)
    crc = 0xFFFF
    for byte in data:
        crc ^= int(byte) << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    assert int(tracejit.jit(crc16)(data)) == crc
    assert _all_native(crc16, data)


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 9])
def test_switch_in_scan_clamps_the_index(index):
    branches = [lambda c: c + 1.0, lambda c: c * 2.0, lambda c: c - 3.0]

    def f(xs):
        def body(c, x):
            y = lax.switch(x + index, branches, c)
            return y, y
        return lax.scan(body, 0.5, xs)
    xs = np.array([0, 1, 2, 0, 1])
    got = tracejit.jit(f)(xs)
    c, ys = 0.5, []
    for x in xs:
        c = branches[min(max(int(x) + index, 0), 2)](c)
        ys.append(c)
    np.testing.assert_array_equal(got[1], ys)
    assert float(got[0]) == c
    assert _all_native(f, xs)


def test_top_level_cond_with_bool_and_integer_predicates():
    f = lambda p, x: lax.cond(p, lambda x: x * 2, lambda x: x - 1, x)  # noqa: E731
    x = np.arange(40.0)         # (a cond of a few scalar operations becomes a select: cheap_conds)
    np.testing.assert_array_equal(tracejit.jit(f)(True, x), x * 2)
    np.testing.assert_array_equal(tracejit.jit(f)(False, x), x - 1)
    np.testing.assert_array_equal(tracejit.jit(f)(np.int32(5), x), x * 2)
    assert _all_native(f, True, x)


def test_while_with_nested_cond_and_literal_operands():
    def f(x):
        def body(c):
            i, v = c
            v = lax.cond(i % 3 == 0, lambda v: v * 0.5, lambda v: v + 1.0, v)
            return i + 1, v
        return lax.while_loop(lambda c: c[0] < 10, body, (0, x))
    got = tracejit.jit(f)(np.ones(3))
    v = np.ones(3)
    for i in range(10):
        v = v * 0.5 if i % 3 == 0 else v + 1.0
    np.testing.assert_allclose(got[1], v)
    assert _all_native(f, np.ones(3))


def test_a_carry_returned_unchanged_is_never_copied():
    A = np.arange(12.0).reshape(4, 3)

    def f(A, v):
        return lax.fori_loop(0, 9, lambda i, c: (c[0], c[0][i % 4] + c[1]), (A, v))
    got = tracejit.jit(f)(A, np.zeros(3))
    np.testing.assert_array_equal(got[0], A)
    np.testing.assert_array_equal(got[1], sum(A[i % 4] for i in range(9)))
    (step,) = helpers.control_flow_steps(tracejit.jit(f).lower(A, np.zeros(3)).compile())
    body = step.loop.construct.body
    # The matrix is carry 1 (after the loop counter): the body neither copies it nor saves it.
    assert 1 in body.unchanged and 1 not in body.pass_offsets


@pytest.fixture
def blas_choice():
    saved = tracejit.config.blas
    yield lambda name: tracejit.config.update("blas", name)
    tracejit.config.update("blas", saved)


def test_host_loops_say_why(blas_choice):
    blas_choice("numpy")        # NumPy's matmul has no C entry point: BLAS from Python, per iteration
    big = np.ones((300, 300))

    def f(a):
        return lax.fori_loop(0, 3, lambda i, m: m @ a, a)
    lines = _loop_lines(f, big)
    assert lines and lines[0].startswith("host loop") and "BLAS" in lines[0]
    np.testing.assert_allclose(tracejit.jit(f)(big / 300), np.linalg.matrix_power(big / 300, 4), rtol=1e-12)


def _c_providers():
    from tracejit.backends.cpu import blas
    return [n for n in blas.PROVIDERS if n != "numpy" and blas._instance(n) is not None]


# Bodies whose products go to BLAS (too large for passes/small_dots.py's fused sums).
PRODUCT_BODIES = {
    "A @ x": lambda A, B, x: lax.fori_loop(0, 4, lambda i, v: (A @ v) * 0.01 + v, x),
    "x @ A": lambda A, B, x: lax.fori_loop(0, 4, lambda i, v: (v @ A) * 0.01 + v, x),
    "C @ B": lambda A, B, x: lax.fori_loop(0, 3, lambda i, C: (C @ B) * 0.1, A),
    "A.T @ C": lambda A, B, x: lax.fori_loop(0, 3, lambda i, C: (A.T @ C) * 0.1, B),
    "C @ B.T": lambda A, B, x: lax.fori_loop(0, 3, lambda i, C: (C @ B.T) * 0.1, A),
    "C - 0.01 C @ B": lambda A, B, x: lax.fori_loop(0, 3, lambda i, C: C - 0.01 * (C @ B), A),
    "two products": lambda A, B, x: lax.scan(lambda C, _: ((A @ C) * 0.1, (C @ x).sum()), B, None, length=3),
    "tensordot": lambda A, B, x: lax.fori_loop(
        0, 2, lambda i, T: jnp.tensordot(T, A.reshape(8, 12, 96), axes=([1, 2], [0, 1])).reshape(96, 8, 12) * 0.1,
        B.reshape(96, 8, 12)),
}


@pytest.mark.parametrize("provider", _c_providers())
@pytest.mark.parametrize("case", list(PRODUCT_BODIES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_loop_bodies_call_blas_from_native_code(blas_choice, provider, case, dtype):
    blas_choice(provider)
    rng = np.random.default_rng(5)
    A, B = (rng.standard_normal((96, 96)).astype(dtype) for _ in range(2))
    x = rng.standard_normal(96).astype(dtype)
    fn = PRODUCT_BODIES[case]
    assert _all_native(fn, A, B, x), _loop_lines(fn, A, B, x)
    loop = helpers.control_flow_steps(tracejit.jit(fn).lower(A, B, x).compile())[0].loop
    kinds = [kind for kind, _, _ in loop.construct.body.items]
    # Matrix-vector products are fused sums (an LLVM GEMV); matrix products call BLAS.
    assert ("blas" in kinds) == (case not in ("A @ x", "x @ A")), kinds
    got = tracejit.jit(fn)(A, B, x)
    want = tracejit.jit(fn, backend="reference")(A, B, x)
    for g, w in zip(jax_leaves(got), jax_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-4 if dtype == np.float32 else 1e-11,
                                   atol=1e-4 if dtype == np.float32 else 1e-11)


def jax_leaves(x):
    return [np.asarray(v) for v in tracejit.tree_util.tree_leaves(x)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.complex64])
def test_batched_and_complex_products_call_blas_from_native_code(blas_choice, dtype):
    if not _c_providers():
        pytest.skip("no BLAS with a C entry point loads here")
    blas_choice(_c_providers()[0])
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 64, 64)) / 8
    z = rng.standard_normal((72, 72)) / 9
    if np.dtype(dtype).kind == "c":
        a, z = a + 1j * rng.standard_normal(a.shape) / 8, z - 1j * rng.standard_normal(z.shape) / 9
    a, z = a.astype(dtype), z.astype(dtype)

    def f(a, z):
        batched = lax.fori_loop(0, 2, lambda i, c: jnp.einsum("bij,bjk->bik", c, a), a)
        # c + alpha * (c @ z^T): BLAS's beta = 1 with a transposed operand
        plain = lax.fori_loop(0, 3, lambda i, c: c + 0.5 * (c @ z.T), z)
        return batched, plain
    lines = _loop_lines(f, a, z)
    assert len(lines) == 2 and all(line.startswith("native loop scan") for line in lines), lines
    loops_ = helpers.control_flow_steps(tracejit.jit(f).lower(a, z).compile())
    assert all("blas" in [kind for kind, _, _ in s.loop.construct.body.items] for s in loops_)
    got = tracejit.jit(f)(a, z)
    want_plain = z.astype(np.complex128)
    for _ in range(3):
        want_plain = want_plain + 0.5 * (want_plain @ z.T.astype(np.complex128))
    tol = dict(rtol=2e-5, atol=2e-5) if dtype in (np.float32, np.complex64) else dict(rtol=1e-12)
    np.testing.assert_allclose(got[0], a.astype(np.complex128) @ a @ a, **tol)
    np.testing.assert_allclose(got[1], want_plain, **tol)
    assert got[0].dtype == dtype and got[1].dtype == dtype


@pytest.mark.parametrize("own_gemm", ["1", "0"])
def test_batched_products_whose_batch_does_not_lead_memory_run_natively(blas_choice, own_gemm, monkeypatch):
    # the batch axis is axis 1 of ``a`` in memory: each matrix's rows are 4 * 64 elements apart and
    # matrices 64 apart; the loop's own code reads them in place, as generated products or as one
    # library call per matrix (TRACEJIT_OWN_GEMM=0)
    if not _c_providers():
        pytest.skip("no BLAS with a C entry point loads here")
    blas_choice(_c_providers()[0])
    monkeypatch.setenv("TRACEJIT_OWN_GEMM", own_gemm)
    a = np.random.default_rng(0).standard_normal((64, 4, 64)) / 8

    def f(a):
        return lax.fori_loop(0, 2, lambda i, c: jnp.einsum("ibj,bjk->bik", a, c),
                             jnp.zeros((4, 64, 64)) + jnp.eye(64))
    lines = _loop_lines(f, a)
    assert lines[0].startswith("native loop"), lines
    b = np.transpose(a, (1, 0, 2))
    np.testing.assert_allclose(tracejit.jit(f)(a), b @ b, rtol=1e-12)


def test_a_compiled_function_never_compiles_when_called(monkeypatch, blas_choice):
    # AOT is complete: lower().compile() compiles native loops and host-loop bodies alike.
    from tracejit.backends.cpu import llvm_engine
    blas_choice("numpy")        # the product's BLAS has no C entry point: its loop is a host loop
    big = np.eye(200) * 0.5

    def f(a, x):
        host = lax.fori_loop(0, 3, lambda i, m: m @ a, a)                 # BLAS body: host loop
        native = lax.fori_loop(0, 5, lambda i, v: lax.cond(i % 2 == 0, lambda v: v + 1.0, lambda v: v * 2.0, v), x)
        return host, native
    compiled = tracejit.jit(f).lower(big, np.zeros(3)).compile()
    text = compiled.as_text()
    assert "host loop scan" in text and "native loop scan" in text
    calls = []
    for name in ("compile_ir", "object_code", "object_codes"):
        if hasattr(llvm_engine, name):
            original = getattr(llvm_engine, name)
            monkeypatch.setattr(llvm_engine, name, lambda *a, _o=original, _n=name, **k: calls.append(_n) or _o(*a, **k))
    host, native = compiled(big, np.zeros(3))
    np.testing.assert_allclose(host, np.linalg.matrix_power(big, 4))
    np.testing.assert_allclose(native, [((((0 + 1) * 2) + 1) * 2) + 1] * 3)
    assert calls == []


def test_log_compiles_names_native_and_host_loops(caplog):
    x = np.linspace(0.0, 1.0, 8)
    with _log_on():
        with caplog.at_level("WARNING", logger="tracejit"):
            tracejit.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0, x))(x)
            tracejit.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: c[jnp.argsort(c)][::-1], x))(x)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("compiled")]
    assert "native loops: scan" in lines[0] and "host loops" not in lines[0]
    assert "host loops: scan (body needs a NumPy step (sort))" in lines[1]


class _log_on:
    def __enter__(self):
        self.old = tracejit.config.log_compiles
        tracejit.config.update("log_compiles", True)

    def __exit__(self, *exc):
        tracejit.config.update("log_compiles", self.old)


_LOOP_PROCESS = """
import numpy as np, tracejit, tracejit.numpy as jnp
from tracejit import lax
from tracejit.backends.cpu import loops

def f(x):
    def body(i, c):
        inner = lax.fori_loop(0, i, lambda j, v: v * 0.5 + jnp.sin(v), c)
        return lax.cond(i % 2 == 0, lambda v: v + 1.0, lambda v: v - 0.25, inner)
    return lax.fori_loop(0, 6, body, x)

x = np.linspace(-1.0, 1.0, 5)
g = tracejit.jit(f)         # (keeps its executable, and so its loops, alive)
print(g(x).tolist())
print([l.cache_outcome for l in list(loops._cache.values())])
"""


def test_loop_drivers_go_through_the_persistent_cache(tmp_path):
    import os
    import subprocess
    import sys
    env = dict(os.environ, TRACEJIT_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, "-c", _LOOP_PROCESS], env=env, capture_output=True, text=True,
                           timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    first, second = (r.stdout.splitlines() for r in runs)
    assert first[0] == second[0]            # same results from the loaded object code
    assert "compiled" in first[1] and "persistent-hit" in second[1] and "compiled" not in second[1]


@pytest.mark.parametrize("case", ["fori", "fori_traced", "scan", "while", "partly"])
def test_a_loop_that_changes_nothing_read_is_removed(case):
    x = np.linspace(-1.0, 2.0, 6)
    fns = {
        "fori": lambda x, n: lax.fori_loop(0, 10, lambda i, c: c, x) + n,
        "fori_traced": lambda x, n: lax.fori_loop(0, n, lambda i, c: c, x),
        "scan": lambda x, n: lax.scan(lambda c, _: (c, None), x, None, length=5)[0] * 2.0,
        "while": lambda x, n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1]), (0, x))[1],
        "partly": lambda x, n: lax.fori_loop(0, n, lambda i, c: (c[0], c[1] * 2.0), (x, x))[0],
    }
    f = fns[case]
    compiled = tracejit.jit(f).lower(x, 3).compile()
    assert "loop" not in compiled.as_text()
    want = tracejit.jit(f, backend="reference")(x, 3)
    np.testing.assert_array_equal(compiled(x, 3), want)
    # A carry that does change keeps its loop.
    g = lambda x, n: lax.fori_loop(0, n, lambda i, c: (c[0], c[1] * 2.0), (x, x))   # noqa: E731
    assert "native loop" in tracejit.jit(g).lower(x, 3).compile().as_text()
    np.testing.assert_array_equal(tracejit.jit(g)(x, 3)[1], x * 8.0)


def _host_loops(compiled):
    return [s.loop for s in compiled.executable.plan.steps if getattr(s, "loop", None) is not None
            and not s.loop.native]


@pytest.mark.parametrize("kind", ["fori", "while", "scan"])
def test_host_loop_carries_are_updated_in_place_and_inputs_survive(kind):
    # A body with a NumPy step (a sort of 200 elements) stays a host loop; its carries are donated
    # to the body's executable, so `c.at[i].set(...)` writes one row instead of copying the matrix.
    m = np.random.default_rng(0).standard_normal((6, 200))
    keep = m.copy()
    row_sort = lambda i, c: c.at[i].set(jnp.sort(c[i]))      # noqa: E731
    fns = {
        "fori": lambda m: lax.fori_loop(0, 6, row_sort, m),
        "while": lambda m: lax.while_loop(lambda s: s[0] < 6, lambda s: (s[0] + 1, row_sort(s[0], s[1])), (0, m))[1],
        "scan": lambda m: lax.scan(lambda c, i: (row_sort(i, c), i * 2), m, jnp.arange(6))[0],
    }
    compiled = tracejit.jit(fns[kind]).lower(m).compile()
    (host,) = _host_loops(compiled)
    assert host.body.donated_outputs        # the updated carry is written into the donated one
    for _ in range(2):
        np.testing.assert_array_equal(compiled(m), np.sort(keep, axis=1))
        np.testing.assert_array_equal(m, keep)      # the caller's array is never donated


def test_host_loop_with_a_nested_host_cond_reading_the_carry():
    # Found by the program fuzzer (seed 2010521): the body executable marked its donated carry as
    # deleted while a nested host cond (argsort keeps it on the host) still had to read it.
    def f(x):
        def body(i, c):
            inner = lax.cond(c.min() < 0, lambda c: jnp.argsort(c, axis=2) + c, lambda c: c * 2, c)
            return inner + i
        return lax.fori_loop(0, 3, body, x)
    x = np.arange(-3, 3, dtype=np.int64).reshape(1, 2, 3)
    compiled = tracejit.jit(f).lower(x).compile()
    assert compiled.as_text().startswith("host loop")
    for _ in range(2):
        np.testing.assert_array_equal(compiled(x), tracejit.jit(f, backend="reference")(x))


# ----------------------------------------------------------------- narrowing stores in loop bodies

NARROWING = [(np.uint64, np.int32), (np.int64, np.int8), (np.int64, np.int16), (np.int32, np.int8),
             (np.int32, np.uint16), (np.int16, np.int8), (np.float64, np.float32), (np.int64, np.bool_),
             (np.float64, np.int32), (np.float32, np.float16)]


@pytest.mark.parametrize("source,target", NARROWING, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [1, 9, 17, 33])
def test_scan_rows_of_a_narrowing_conversion_stay_in_their_row(source, target, n):
    # Program fuzzer seed 6036976: in a loop driver, a row of 8k+1 elements ends in a one-lane
    # masked store with a constant mask; LLVM's x86 code generator stored the wide element
    # (8 bytes for int32), writing past the row: heap corruption after the last row. Scanning in
    # reverse makes the overflow visible: it clobbers the row written just before.
    xs = (np.arange(3 * n).reshape(3, n) * 37 - 50).astype(source)

    def f(xs):
        def body(c, x):
            return c + 1, x.astype(target)
        return tracejit.lax.scan(body, np.int32(0), xs, reverse=True)[1]
    with np.errstate(all="ignore"):
        want = xs.astype(target)
    got = tracejit.jit(f)(xs)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype


def _row_sweep(u):
    # A nested loop threading the outer carry: each row updated in place, left to right.
    def row(i, u):
        return lax.fori_loop(1, u.shape[1], lambda j, u: u.at[i, j].set(0.5 * (u[i, j - 1] + u[i, j])), u)
    return lax.fori_loop(0, u.shape[0], row, u)


def _row_sweep_numpy(u):
    u = u.copy()
    for i in range(u.shape[0]):
        for j in range(1, u.shape[1]):
            u[i, j] = 0.5 * (u[i, j - 1] + u[i, j])
    return u


def test_a_nested_loop_runs_on_the_carry_it_threads():
    # The inner loop's carry is the outer body's carry memory: no copy in and out per outer step.
    u = np.random.default_rng(4).standard_normal((70, 70))       # 39 KB: not kept on the stack
    compiled = tracejit.jit(_row_sweep).lower(u).compile()
    np.testing.assert_array_equal(compiled(u), _row_sweep_numpy(u))
    (step,) = helpers.control_flow_steps(compiled)
    body = step.loop.construct.body
    nested = [s for kind, s, _ in body.items if kind == "nested"]
    # (the inner fori_loop's carries are its counter and the grid: the grid is the one in place)
    assert len(nested) == 1 and nested[0].outputs[1] in body.in_place


@pytest.mark.parametrize("variant", ["old_carry_read_after", "carry_also_a_constant", "old_carry_returned"])
def test_a_nested_loop_copies_a_carry_still_needed(variant):
    # Where the old carry is still read (after the inner loop, or by the inner body as a constant),
    # the inner loop must work on a copy: in place, these reads would see the updated values.
    u = np.random.default_rng(5).standard_normal((40, 60))

    def f(u, s):
        def outer(i, c):
            u, s = c
            if variant == "old_carry_read_after":
                new = lax.fori_loop(0, 3, lambda j, v: v.at[i, j].set(v[i, j] + 1.0), u)
                return new, s + u[i, 0]                    # the old u[i, 0], read after the inner loop
            if variant == "old_carry_returned":
                new = lax.fori_loop(0, 3, lambda j, v: v.at[i, j].set(v[i, j] + 1.0), u)
                return new, u                               # (s is a second grid here)
            new = lax.fori_loop(0, 3, lambda j, v: v.at[i, j].set(u[i, 0] + v[i, j]), u)
            return new, s
        return lax.fori_loop(0, 5, outer, (u, s))
    s0 = np.zeros_like(u) if variant == "old_carry_returned" else 0.0
    want = tracejit.jit(f, backend="reference")(u, s0)
    got = tracejit.jit(f)(u, s0)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def _lu(a):
    n = a.shape[0]
    idx = jnp.arange(n)

    def step(k, a):
        below = idx > k
        l = jnp.where(below, a[:, k] / a[k, k], 0.0)
        a = a - jnp.outer(l, jnp.where(idx >= k, a[k, :], 0.0))
        return a.at[:, k].set(jnp.where(below, l, a[:, k]))
    return lax.fori_loop(0, n, step, a)


def test_a_carry_rewritten_then_updated_is_computed_in_place():
    # LU's step rewrites the whole matrix (a temporary) and then sets one column (a window update):
    # both happen in the carry's memory (compiler/memory.donated_temporaries), nothing is copied.
    rng = np.random.default_rng(6)
    a = rng.standard_normal((70, 70)) + 70 * np.eye(70)
    compiled = tracejit.jit(_lu).lower(a).compile()
    np.testing.assert_array_equal(compiled(a), tracejit.jit(_lu, backend="reference")(a))
    (step,) = helpers.control_flow_steps(compiled)
    body = step.loop.construct.body
    assert body.temps_in_carry and set(body.temps_in_carry.values()) <= set(body.in_place.values())


@pytest.mark.parametrize("variant", ["carry_read_after_the_rewrite", "temporary_read_after_the_update"])
def test_a_carry_rewrite_stays_out_of_place_when_the_old_values_are_read(variant):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((50, 50))

    def f(a, s):
        def step(k, c):
            a, s = c
            t = a * 0.5 + 1.0
            if variant == "carry_read_after_the_rewrite":
                return t.at[:, k].set(a[:, k] * 3.0), s        # a[:, k] read after t is computed
            new = t.at[k, :].set(-1.0)
            return new, s + t[k, k]                          # t read after the update
        return lax.fori_loop(0, 7, step, (a, s))
    want = tracejit.jit(f, backend="reference")(a, 0.0)
    got = tracejit.jit(f)(a, 0.0)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("variant", ["chain", "first_read_after_second", "carry_read_after_first"])
def test_a_chain_of_window_updates_of_a_carry_runs_in_its_memory(variant):
    # Cholesky's step: l[j, j] = d, reads of the new l, then l[:, j] = col -- two window updates of
    # the carry with reads between (compiler/memory._update_chains). Only when nothing reads a value
    # after the next update overwrites it.
    rng = np.random.default_rng(8)
    a = rng.standard_normal((40, 40))

    def f(a, s):
        def step(j, c):
            l, s = c
            first = l.at[j, j].set(l[j, j] * 0.5 + 1.0)
            col = first[:, j] * 0.25 + first[j, :].sum() * 1e-3
            second = first.at[:, j].set(col)
            if variant == "first_read_after_second":
                return second, s + first[j, j] + second[0, 0]
            if variant == "carry_read_after_first":
                return second, s + (l[:, j] * first[:, j]).sum()
            return second, s + second[j, j]
        return lax.fori_loop(0, 25, step, (a, s))
    compiled = tracejit.jit(f).lower(a, 0.0).compile()
    want = tracejit.jit(f, backend="reference")(a, 0.0)
    got = compiled(a, 0.0)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)     # sums in another order
    np.testing.assert_allclose(got[1], want[1], rtol=1e-13)
    (step,) = helpers.control_flow_steps(compiled)
    body = step.loop.construct.body
    assert bool(body.temps_in_carry) == (variant == "chain")


def test_cond_branches_write_results_in_place_of_copies():
    # A native cond's branches write their outputs straight into the cond's results (no copy
    # from branch memory afterwards) unless a result is also an operand's memory: branches that
    # return an operand unchanged, the same value twice, a reversal of the operand, and conds
    # nested in loops whose results become the carry.
    x = np.arange(6.0)

    def top(c, flag):
        return lax.cond(flag > 0, lambda c: (c[::-1] * 2, c, c[::-1] * 2, c + 1),
                        lambda c: (c, c * 3, c - 1, c[::-1]), c)
    for flag in (0, 1):
        got = tracejit.jit(top)(x, flag)
        want = (x[::-1] * 2, x, x[::-1] * 2, x + 1) if flag else (x, x * 3, x - 1, x[::-1])
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w)
        assert not any(np.shares_memory(np.asarray(a), np.asarray(b)) for a, b in zip(got, got[1:]))
    assert _all_native(top, x, 1)

    def looped(c0):
        def body(i, c):
            return lax.cond(i % 2 == 0, lambda c: c[::-1] + 1.0, lambda c: jnp.roll(c, 1) * 2.0, c)
        return lax.fori_loop(0, 5, body, c0)
    c = x.copy()
    for i in range(5):
        c = c[::-1] + 1 if i % 2 == 0 else np.roll(c, 1) * 2
    np.testing.assert_array_equal(np.asarray(tracejit.jit(looped)(x)), c)
    assert _all_native(looped, x)
