"""A whole program in one native call (backends/cpu/entry.py): the same results as running its
steps one by one (TRACEJIT_NATIVE_ENTRY=0), for the programs that take it, and the step-by-step
executable, with its reason, for those that cannot."""
import threading

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax


def _compiled(fn, *args, **jit_kwargs):
    return tracejit.jit(fn, **jit_kwargs).lower(*args).compile()


def _both(monkeypatch, fn, *args):
    """(results with the entry, results step by step); asserts the first took the entry."""
    c = _compiled(fn, *args)
    assert c.executable.native_entry is not None, c.executable.entry_reason
    assert "native entry" in c.as_text()
    with_entry = c(*args)
    monkeypatch.setenv("TRACEJIT_NATIVE_ENTRY", "0")
    c2 = _compiled(fn, *args)
    assert c2.executable.native_entry is None
    assert c2.executable.entry_reason == "TRACEJIT_NATIVE_ENTRY=0"
    monkeypatch.delenv("TRACEJIT_NATIVE_ENTRY")
    return with_entry, c2(*args)


def _same(a, b):
    for x, y in zip(tracejit.tree_util.tree_leaves(a), tracejit.tree_util.tree_leaves(b)):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


def collatz(n0):
    def step(_, s):
        k, peak, count = s
        moving = k > 1
        k = lax.cond(moving, lambda k: lax.cond(k % 2 == 0, lambda k: k // 2, lambda k: 3 * k + 1, k),
                     lambda k: k, k)
        return k, jnp.maximum(peak, k), count + moving.astype(count.dtype)
    return lax.fori_loop(0, 200, step, (n0, n0, jnp.zeros_like(n0)))


def _collatz_python(n):
    k = peak = n
    count = 0
    for _ in range(200):
        if k > 1:
            k = k // 2 if k % 2 == 0 else 3 * k + 1
            peak, count = max(peak, k), count + 1
    return k, peak, count


CONST = np.linspace(-2.0, 3.0, 7)


PROGRAMS = {
    "kernels": (lambda x, y: (jnp.sin(x) * y + 1.0, jnp.sum(x * y, axis=0), x.T @ y),
                lambda: (np.random.default_rng(0).standard_normal((7, 5)),
                         np.random.default_rng(1).standard_normal((7, 5)))),
    "loop and kernels": (lambda x: (lax.fori_loop(0, 9, lambda i, c: c * 0.5 + x[i % 7], x[0]) + 1.0, x.sum()),
                         lambda: (np.arange(35.0).reshape(7, 5),)),
    "captured constant and scan": (lambda x: lax.scan(lambda c, r: (c + r * CONST[:5], c.sum()), x[0], x * 2.0),
                                   lambda: (np.arange(35.0).reshape(7, 5),)),
    "while with literal operands": (lambda x: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 3, c[1] * 2),
                                                             (0, x)), lambda: (np.float32(1.5),)),
    "int and bool kernels": (lambda a, m: (jnp.where(m, a >> 1, a * 3), jnp.cumsum(a)),
                             lambda: (np.arange(-20, 20, dtype=np.int32), np.arange(40) % 3 == 0)),
    "small products": (lambda a, b, c: (jnp.maximum(a @ b + 1.0, 0.0), a.T @ a, c - 0.01 * (a @ b),
                                        jnp.einsum("bij,bkj->bik", c[None] * 1.5, c[None] + a[:, :5][None])),
                       lambda: (np.random.default_rng(2).standard_normal((9, 6)),
                                np.random.default_rng(3).standard_normal((6, 5)),
                                np.random.default_rng(4).standard_normal((9, 5)))),
    "small complex and float32 products": (
        lambda a, b: (a @ b, (a.real.astype(np.float32) @ b.real.astype(np.float32)).T, a.conj().T @ a),
        lambda: ((np.arange(12.0) - 3j * np.arange(12.0)[::-1]).reshape(4, 3).astype(np.complex64),
                 (np.arange(6.0) + 0.5j).reshape(3, 2).astype(np.complex64))),
    "empty and size-1": (lambda a, b: (a * 2.0, b.sum(axis=1), b.max(axis=0)),
                         lambda: (np.zeros((0, 3)), np.arange(6.0).reshape(6, 1))),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_entry_matches_the_steps_one_by_one(monkeypatch, name):
    fn, inputs = PROGRAMS[name]
    args = inputs()
    with_entry, stepwise = _both(monkeypatch, fn, *args)
    _same(with_entry, stepwise)
    if "products" in name:      # (BLAS: NumPy's sums in another order)
        for got, want in zip(with_entry, fn(*[np.asarray(a) for a in args])):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)
    _same(with_entry, tracejit.jit(fn, backend="reference")(*args) if name == "int and bool kernels" else with_entry)


@pytest.mark.parametrize("n0", [1, 2, 27, 837799])
def test_collatz_runs_as_one_call(monkeypatch, n0):
    with_entry, stepwise = _both(monkeypatch, collatz, np.int64(n0))
    _same(with_entry, stepwise)
    assert tuple(int(v) for v in with_entry) == _collatz_python(n0)


def test_non_contiguous_and_negative_stride_inputs():
    x = np.arange(60.0).reshape(6, 10)
    f = tracejit.jit(lambda a, b: (a * 2.0 + b, (a * b).sum()))
    a, b = x[:, ::2], x[::-1, 1::2]
    assert f.lower(a, b).compile().executable.native_entry is not None
    got = f(a, b)
    np.testing.assert_array_equal(got[0], a * 2.0 + b)
    np.testing.assert_allclose(got[1], (a * b).sum(), rtol=1e-15)
    np.testing.assert_array_equal(x, np.arange(60.0).reshape(6, 10))     # inputs untouched


def test_outputs_are_fresh_and_read_only_each_call():
    f = tracejit.jit(lambda a: (a + 1.0, a * 2.0))
    a = np.arange(4.0)
    r1, r2 = f(a), f(a)
    assert not np.shares_memory(r1[0], r2[0]) and not np.shares_memory(r1[0], r1[1])
    with pytest.raises(TypeError, match="immutable"):
        r1[0][0] = 5.0
    np.testing.assert_array_equal(r1[0], a + 1.0)


@pytest.mark.parametrize("case, reason", [
    ("passthrough", "an output is an input"),
    ("repeated", "an output is an input"),
    ("donated", "donated arguments"),
    ("large output", "output pool"),
    ("blas", "is a large product"),
])
def test_programs_that_keep_the_steps_say_why(case, reason):
    x = np.ones((4, 4))
    fn, args, kw = {
        "passthrough": (lambda a: (a, a + 1.0), (x,), {}),
        "repeated": (lambda a: (a + 1.0, a + 1.0), (x,), {}),
        "donated": (lambda a: a + 1.0, (x.copy(),), {"donate_argnums": 0}),
        "large output": (lambda a: jnp.broadcast_to(a[0, 0], (512, 512)) + 1.0, (x,), {}),
        "blas": (lambda a: jnp.ones((300, 300)) @ jnp.ones((300, 300)) + a[0, 0], (x,), {}),
    }[case]
    exe = _compiled(fn, *args, **kw).executable
    assert exe.native_entry is None
    assert reason in exe.entry_reason
    tracejit.jit(fn, **kw)(*args)       # and still runs


def test_concurrent_calls_each_get_their_own_arena():
    def f(x):
        t = jnp.exp(x) * 0.5           # temporaries and a loop: arena memory in every call
        return lax.fori_loop(0, 50, lambda i, c: c * 0.99 + t.sum() * 1e-3, t)
    jf = tracejit.jit(f)
    inputs = [np.full(64, float(k) / 10) for k in range(8)]
    want = [np.asarray(jf(x)) for x in inputs]
    assert jf.lower(inputs[0]).compile().executable.native_entry is not None
    errors = []

    def worker(k):
        for _ in range(200):
            got = jf(inputs[k])
            if not np.array_equal(got, want[k]):
                errors.append(k)
                return

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
