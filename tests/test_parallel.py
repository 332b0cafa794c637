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
