"""Kernels split over an OpenMP team (tracejit/backends/cpu/parallel.py) give the same results as one thread."""
from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import tracejit
from tracejit.backends.cpu import parallel


@pytest.fixture
def threads():
    saved = tracejit.config.num_threads

    def use(n):
        tracejit.config.update("num_threads", n)
    yield use
    tracejit.config.update("num_threads", saved)


def test_an_openmp_runtime_is_found_here():
    # libgomp comes with gcc, libiomp5 with the mkl extra: one of them is on every machine we test on.
    team = parallel.runtime()
    assert team is not None and team.kind in ("iomp5", "gomp")


CASES = [
    ("map", lambda a: np.sin(a) * 2 + a, (1 << 17) + 3),
    ("map-large", lambda a: np.maximum(a, 0) - a, (1 << 19) + 17),
    ("rows", lambda a: np.exp(a - a.max(-1, keepdims=True)).sum(-1), (1031, 257)),
    ("columns", lambda a: (a * 3).sum(0), (4099, 67)),
    ("layernorm", lambda a: (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5),
     (2049, 129)),
]


@pytest.mark.parametrize("name,fn,shape", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_threaded_kernels_match_one_thread(threads, name, fn, shape, dtype):
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    threads(1)
    one = tracejit.jit(fn)(x)
    threads(2)
    f = tracejit.jit(fn)
    launches = f.lower(x).compile().executable.launches
    assert any(l.work >= l.openmp_min_work and l.team is not None for l in launches)  # OpenMP path taken
    np.testing.assert_array_equal(f(x), one)


def test_many_python_threads_share_the_team():
    f = tracejit.jit(lambda a, k: np.tanh(a * k) + k)
    xs = [np.random.default_rng(j).standard_normal(1 << 18).astype(np.float32) for j in range(6)]
    want = [np.tanh(x * np.float32(j)) + np.float32(j) for j, x in enumerate(xs)]
    with ThreadPoolExecutor(6) as pool:
        for _ in range(3):
            outs = list(pool.map(lambda j: f(xs[j], np.float32(j)), range(6)))
            for got, w in zip(outs, want):
                np.testing.assert_allclose(got, w, rtol=2e-6, atol=1e-6)


def _run_python(code: str, **env) -> list:
    """Run ``code`` in a fresh interpreter with extra environment variables; its stdout lines."""
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().splitlines()


@pytest.mark.parametrize("preloaded", ["libgomp.so.1", None])
def test_a_runtime_loaded_before_tracejit_is_the_team_and_mkls(preloaded):
    """PyTorch loads its libgomp (globally) when imported. Kernels then run on that team, and MKL computes
    on it too (its GNU layer): MKL on libiomp5 beside it ran each product whole on both threads, and
    a second team beside MKL's spun against it (an MLP training step: 15-17 ms instead of 7.3-8.6)."""
    code = ("import ctypes, os, sys, numpy as np\n"
            f"pre = {preloaded!r}\n"
            "if pre:\n"
            "    try:\n"
            "        ctypes.CDLL(pre, mode=ctypes.RTLD_GLOBAL)\n"
            "    except OSError:\n"
            "        print('no libgomp'); sys.exit()\n"
            "import tracejit\n"
            "from tracejit.backends.cpu import blas, parallel\n"
            "x = np.arange(1 << 20, dtype=np.float64) / (1 << 20)\n"
            "assert np.allclose(tracejit.jit(lambda a: np.sin(a) + 1)(x), np.sin(x) + 1)\n"
            "print(parallel.runtime().kind)\n"
            "mkl = blas._instance('mkl')\n"
            "if mkl is not None:\n"
            "    rng = np.random.default_rng(0)\n"
            "    a, b = rng.standard_normal((300, 200)), rng.standard_normal((200, 500))\n"
            "    out = np.empty((300, 500))\n"
            "    mkl.gemm(a, b, out)\n"
            "    assert np.allclose(out, a @ b)\n"
            "    maps = open('/proc/self/maps').read()\n"
            "    print('gnu' if 'libmkl_gnu_thread' in maps else 'intel' if 'libmkl_intel_thread' in maps else '?')\n")
    out = _run_python(code, TRACEJIT_NUM_THREADS="2")
    if out == ["no libgomp"]:
        pytest.skip("this machine has no libgomp.so.1 to load")
    kind = out[0]
    assert kind == ("gomp" if preloaded else parallel.runtime().kind)
    if len(out) > 1:                                            # MKL is installed: its layer is the team's
        assert out[1] == {"gomp": "gnu", "iomp5": "intel"}[kind]


def test_without_openmp_the_python_pool_is_used():
    code = ("import numpy as np, tracejit\n"
            "from tracejit.backends.cpu import parallel\n"
            "x = np.arange(1 << 21, dtype=np.float64)\n"
            "out = tracejit.jit(lambda a: np.sqrt(a) + 1)(x)\n"
            "assert parallel.runtime() is None\n"
            "assert np.array_equal(out, np.sqrt(x) + 1)\n"
            "print('ok')\n")
    assert _run_python(code, TRACEJIT_OPENMP="0", TRACEJIT_NUM_THREADS="2") == ["ok"]


def test_threaded_kernels_load_from_the_persistent_cache(tmp_path):
    code = ("import numpy as np, tracejit\n"
            "x = np.linspace(-3, 3, 1 << 20).astype(np.float32)\n"
            "j = tracejit.jit(lambda a: np.tanh(a) * 2)\n"
            "out = j(x)\n"
            "c = j.lower(x).compile()\n"
            "assert c.executable.launches[0].team is not None\n"
            "assert np.allclose(out, np.tanh(x) * 2, rtol=1e-6, atol=1e-6)\n"
            "print(c.timings['cache'])\n")
    outcomes = [_run_python(code, TRACEJIT_CACHE_DIR=str(tmp_path / "cache"), TRACEJIT_NUM_THREADS="2")[-1]
                for _ in range(2)]
    assert outcomes[1] == "persistent-hit", outcomes


def _fork_after_use(expression: str, size_expr: str, **env) -> tuple:
    """A parent checks ``jit(lambda a: expression)`` on ``np.arange(size)/size`` against NumPy and forks;
    the child runs it again. Returns (the parent's OpenMP runtime kind or 'None', whether the child's
    result matched NumPy's)."""
    code = ("import multiprocessing as mp, numpy as np, tracejit\n"
            "from tracejit.backends.cpu import parallel\n"
            f"f = tracejit.jit(lambda a: {expression})\n"
            f"x = np.arange({size_expr}, dtype=np.float64) / ({size_expr})\n"
            f"want = (lambda a: {expression})(x)\n"        # NumPy's result
            "assert np.allclose(f(x), want)\n"
            "def child(q):\n"
            "    q.put(bool(np.allclose(f(x), want)))\n"
            "ctx = mp.get_context('fork')\n"
            "q = ctx.Queue()\n"
            "p = ctx.Process(target=child, args=(q,))\n"
            "p.start()\n"
            "ok = q.get(timeout=60)\n"
            "p.join(60)\n"
            "print(parallel.runtime().kind if parallel.runtime() else None, ok)\n")
    kind, ok = _run_python(code, TRACEJIT_NUM_THREADS="2", **env)[-1].split()
    return kind, ok


@pytest.mark.parametrize("choice", ["iomp5", "gomp"])
def test_forked_children_run_threaded_kernels(choice, tmp_path):
    # A parent that used the team forks; the child must not hang in its first parallel region.
    kind, ok = _fork_after_use("np.sin(a) + 1", "1 << 20", TRACEJIT_OPENMP=choice,
                               TRACEJIT_CACHE_DIR=str(tmp_path / "cache"))
    assert ok == "True"
    assert kind in (choice, "None")     # iomp5 is absent where MKL is not installed


def test_forked_children_after_the_python_pool():
    kind, ok = _fork_after_use("np.sqrt(a) * 2", "1 << 21", TRACEJIT_OPENMP="0")
    assert (kind, ok) == ("None", "True")


def test_startup_work_runs_in_the_background_and_a_compile_waits_for_it():
    code = ("import numpy as np, tracejit\n"
            "from tracejit.backends.cpu import warmup, llvm_engine\n"
            "assert warmup._thread is not None\n"
            "f = tracejit.jit(lambda a: np.exp(np.sin(a)) - a)\n"
            "x = np.linspace(-4, 4, 1 << 18, dtype=np.float32)\n"
            "assert np.allclose(f(x), np.exp(np.sin(x)) - x, rtol=1e-6, atol=1e-6)\n"
            "assert not warmup._thread.is_alive()\n"     # the compile waited for (or stopped) it
            "warmup.wait()\n"                             # again: returns at once
            "print(f.lower(x).compile().timings['warmup_wait_ms'] >= 0.0)\n")
    assert _run_python(code)[-1] == "True"
    off = ("import tracejit\n"
           "from tracejit.backends.cpu import warmup\n"
           "print(warmup._thread)\n")
    assert _run_python(off, TRACEJIT_WARMUP="0")[-1] == "None"


@pytest.mark.parametrize("choice", ["iomp5", "gomp"])
def test_fork_right_after_import(choice):
    # The start-up thread may be in LLVM or OpenMP when the program forks: the fork waits for it,
    # and the child compiles and runs threaded kernels.
    code = ("import os, numpy as np, tracejit\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    x = np.arange(1 << 20, dtype=np.float64) / (1 << 20)\n"
            "    ok = np.allclose(tracejit.jit(lambda a: np.sin(a) + 1)(x), np.sin(x) + 1)\n"
            "    os._exit(0 if ok else 1)\n"
            "_, status = os.waitpid(pid, 0)\n"
            "print(os.waitstatus_to_exitcode(status))\n")
    assert _run_python(code, TRACEJIT_OPENMP=choice, TRACEJIT_NUM_THREADS="2")[-1] == "0"


# ------------------------------------------------------------------ loops whose body kernels are large

LOOP_CASES = [
    # A large elementwise body: the loop's native code forks the team for it every iteration.
    ("map", lambda a: tracejit.lax.fori_loop(0, 3, lambda i, c: np.sin(c) * 0.5 + c, a), (1 << 17) + 3),
    # Row reductions feeding the next iteration (softmax-like), and a scan with stacked outputs.
    ("rows", lambda a: tracejit.lax.fori_loop(
        0, 2, lambda i, c: c - np.log(np.exp(c).sum(-1, keepdims=True)), a), (1031, 257)),
    ("scan", lambda a: tracejit.lax.scan(lambda c, x: (c * 0.5 + x, (c * x).sum()), a[0], a)[0], (4, 1 << 17)),
    # Large and small kernels in one body (the small one stays on the calling thread).
    ("mixed", lambda a: tracejit.lax.fori_loop(
        0, 3, lambda i, c: (np.tanh(c[0]) + c[1].sum(), c[1] * 1.5), (a, a[:7].copy())), (1 << 18)),
]


def _loop_of(f, x):
    from helpers import control_flow_steps
    return control_flow_steps(f.lower(x).compile())[0].loop


@pytest.mark.parametrize("name,fn,shape", LOOP_CASES, ids=[c[0] for c in LOOP_CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_loop_bodies_with_large_kernels_fork_the_team_from_native_code(threads, name, fn, shape, dtype):
    x = np.random.default_rng(2).standard_normal(shape).astype(dtype)
    threads(1)
    one = tracejit.jit(fn)(x)
    threads(2)
    f = tracejit.jit(fn)
    loop = _loop_of(f, x)
    assert loop.native and loop.team is not None      # one native loop that forks the team
    got = f(x)
    for g, o in zip(np.atleast_1d(got) if not isinstance(got, tuple) else got,
                    np.atleast_1d(one) if not isinstance(one, tuple) else one):
        np.testing.assert_array_equal(g, o)           # the split changes no value
    want = fn(x)                                      # NumPy, eagerly
    np.testing.assert_allclose(np.asarray(got[0] if isinstance(got, tuple) else got),
                               np.asarray(want[0] if isinstance(want, tuple) else want),
                               rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-5)


def test_a_small_loop_body_does_not_fork():
    f = tracejit.jit(lambda a: tracejit.lax.fori_loop(0, 3, lambda i, c: np.sin(c) + 1, a))
    x = np.ones(1000)
    loop = _loop_of(f, x)
    assert loop.native and loop.team is None


def test_without_openmp_large_loop_bodies_run_from_python():
    code = ("import numpy as np, tracejit\n"
            "x = np.linspace(0, 1, 1 << 17)\n"
            "f = tracejit.jit(lambda a: tracejit.lax.fori_loop(0, 3, lambda i, c: np.sin(c) + 1, a))\n"
            "text = f.lower(x).compile().as_text()\n"
            "assert 'host loop' in text and 'large enough to run threaded' in text, text\n"
            "c = x\n"
            "for _ in range(3): c = np.sin(c) + 1\n"
            "assert np.allclose(f(x), c)\n"
            "print('ok')\n")
    assert _run_python(code, TRACEJIT_OPENMP="0", TRACEJIT_NUM_THREADS="2") == ["ok"]


def test_threaded_loops_load_from_the_persistent_cache(tmp_path):
    code = ("import numpy as np, tracejit\n"
            "x = np.linspace(-3, 3, 1 << 18)\n"
            "j = tracejit.jit(lambda a: tracejit.lax.fori_loop(0, 4, lambda i, c: np.tanh(c) * 2, a))\n"
            "out = j(x)\n"
            "c = x\n"
            "for _ in range(4): c = np.tanh(c) * 2\n"
            "assert np.allclose(out, c)\n"
            "step = [s for s in j.lower(x).compile().executable.plan.steps if hasattr(s, 'loop')][0]\n"
            "assert step.loop.team is not None\n"
            "print(step.loop.cache_outcome)\n")
    outcomes = [_run_python(code, TRACEJIT_CACHE_DIR=str(tmp_path / "cache"), TRACEJIT_NUM_THREADS="2")[-1]
                for _ in range(2)]
    assert outcomes[1] == "persistent-hit", outcomes


@pytest.mark.parametrize("choice", ["iomp5", "gomp"])
def test_forked_children_run_loops_that_fork_the_team(choice, tmp_path):
    kind, ok = _fork_after_use("tracejit.lax.fori_loop(0, 3, lambda i, c: np.sin(c) + 1, a)", "1 << 18",
                               TRACEJIT_OPENMP=choice, TRACEJIT_CACHE_DIR=str(tmp_path / "cache"))
    assert ok == "True"
    assert kind in (choice, "None")


def test_fuzz_programs_with_every_kernel_threaded(monkeypatch, threads):
    # The fuzzer's arrays are small, so its programs never reach the team; with the thresholds at 2
    # elements every kernel with two or more rows forks it (also in native loops), which checks the
    # splitting code on every kind of kernel and loop the generator writes.
    from tests.fuzz import program_check as pc
    from tests.fuzz import program_gen as pg
    from tracejit.backends.cpu import runtime
    monkeypatch.setattr(runtime, "OPENMP_MIN_WORK", 2)
    monkeypatch.setattr(runtime, "OPENMP_MIN_WORK_MATH", 2)
    threads(2)
    bad = {}
    for seed in range(20_000, 20_300):
        res = pc.check_program(pg.generate(seed), backends=("cpu",))
        if res.mismatches:
            bad[seed] = res.mismatches
    assert not bad
