"""NumPy's OpenBLAS computes on the kernels' OpenMP team (tracejit/backends/cpu/openblas_team.py).

The callback's contract with OpenBLAS: every job of a call runs exactly once, and all of a call's jobs
run at the same time (a level-3 product's threads wait for each other). The tests call the compiled
callback directly with jobs that count themselves and wait at a barrier for all the others, on the
team and from inside a parallel region (where it starts POSIX threads), and check products through
NumPy and tracejit against float64 references, from several threads and in a forked child.
"""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import tracejit
from tracejit.backends.cpu import blas, openblas_team, parallel

pytestmark = pytest.mark.skipif(not blas._numpy_openblas_paths() or not sys.platform.startswith("linux")
                                or parallel.runtime() is None
                                or openblas_team._setter(ctypes.CDLL(blas._numpy_openblas_paths()[0])) is None,
                                reason="needs NumPy's bundled OpenBLAS with a threads callback (0.3.27 or "
                                       "later) and an OpenMP runtime (Linux)")

DOJOB = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p,
                            ctypes.c_int)


def _installed_callback():
    path = blas._numpy_openblas_paths()[0]
    assert openblas_team.install(path, ctypes.CDLL(path))
    setter, compiled = openblas_team._installed[path]
    return CALLBACK(compiled.address(openblas_team.CALLBACK))


def _run_jobs(callback, numjobs: int, size: int = 24, arg: int = 7):
    """Call ``callback`` with ``numjobs`` jobs that each record (job, offset, arg, thread) and then
    wait for all the others; returns the records."""
    barrier = threading.Barrier(numjobs, timeout=20)
    records, lock = [], threading.Lock()
    data = (ctypes.c_char * (size * numjobs))()
    base = ctypes.addressof(data)

    def job(t, at, a):
        with lock:
            records.append((t, at - base, a, threading.get_ident()))
        barrier.wait()              # raises (and the count below fails) if the jobs do not run together
    callback(1, ctypes.cast(DOJOB(job), ctypes.c_void_p), numjobs, size, base, arg)
    return records


@pytest.mark.parametrize("numjobs", [1, 2, 3, 5])
def test_every_job_runs_once_all_at_the_same_time(numjobs):
    records = _run_jobs(_installed_callback(), numjobs)
    assert sorted(r[0] for r in records) == list(range(numjobs))
    assert all(offset == 24 * t and arg == 7 for t, offset, arg, _ in records)
    assert len({r[3] for r in records}) == numjobs          # one thread per job


def test_a_call_from_inside_a_parallel_region_still_runs_its_jobs_together():
    callback = _installed_callback()
    inner = []

    def outer_job(t, at, a):          # runs on the team: a nested region there has one thread
        inner.append(_run_jobs(callback, 3))
    callback(1, ctypes.cast(DOJOB(outer_job), ctypes.c_void_p), 2, 8, 0, 0)
    assert len(inner) == 2
    for records in inner:
        assert sorted(r[0] for r in records) == [0, 1, 2] and len({r[3] for r in records}) == 3


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("shape", [(1, 1, 1), (7, 3, 5), (257, 300, 129), (512, 512, 512), (64, 2048, 96)])
def test_products_through_numpy_and_jit_match_a_float64_reference(dtype, shape):
    _installed_callback()
    m, k, n = shape
    rng = np.random.default_rng(m * n + k)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    if np.iscomplexobj(a):
        a = a + 1j * rng.standard_normal((m, k)).astype(dtype)
    ref = np.einsum("ij,jk->ik", a.astype(np.complex128), b.astype(np.complex128))
    tol = 1e-4 * np.sqrt(k) if np.dtype(dtype) in (np.float32, np.complex64) else 1e-11 * np.sqrt(k)
    np.testing.assert_allclose(a @ b, ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(tracejit.jit(lambda x, y: x @ y)(a, b), ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(a[::-1] @ b[:, ::-1], ref[::-1, ::-1], rtol=tol, atol=tol)


def test_products_from_several_threads_at_once():
    _installed_callback()
    rng = np.random.default_rng(1)
    pairs = [(rng.standard_normal((300, 400)), rng.standard_normal((400, 350))) for _ in range(4)]
    f = tracejit.jit(lambda x, y: x @ y)
    wrong = []

    def work(a, b):
        ref = np.einsum("ij,jk->ik", a, b)
        for _ in range(15):
            for got in (a @ b, f(a, b)):
                if not np.allclose(got, ref, rtol=1e-12, atol=1e-11):
                    wrong.append(got)
    threads = [threading.Thread(target=work, args=p) for p in pairs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


_CHILD = r"""
import ctypes, json, os, sys
import numpy as np
import tracejit
from tracejit.backends.cpu import blas, openblas_team
f = tracejit.jit(lambda x, y: x @ y)
rng = np.random.default_rng(0)
a, b = rng.standard_normal((400, 300)), rng.standard_normal((300, 500))
f(a, b)
out = {"parent": openblas_team.installed()}
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    ok = bool(np.allclose(a @ b, np.einsum("ij,jk->ik", a, b)) and np.allclose(f(a, b), a @ b))
    os.write(w, json.dumps({"ok": ok, "installed": openblas_team.installed()}).encode())
    os._exit(0)
os.waitpid(pid, 0)
out["child"] = json.loads(os.read(r, 4096))
print(json.dumps(out))
"""


@pytest.mark.parametrize("env", [{}, {"TRACEJIT_OPENMP": "gomp"}])
def test_a_forked_child_computes_on_openblas_own_threads(env):
    full = dict(os.environ, TRACEJIT_BLAS="numpy", **env)   # (NumPy's OpenBLAS, without timing every provider)
    out = subprocess.run([sys.executable, "-c", _CHILD], env=full, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["parent"] and got["child"] == {"ok": True, "installed": []}, got


def test_turned_off_it_is_not_installed():
    code = ("import numpy as np, tracejit\nfrom tracejit.backends.cpu import openblas_team\n"
            "a = np.ones((300, 300)); assert (tracejit.jit(lambda x: x @ x)(a) == 300).all()\n"
            "print(openblas_team.installed())")
    env = dict(os.environ, TRACEJIT_OPENBLAS_ON_TEAM="0", TRACEJIT_BLAS="numpy")
    out = subprocess.run([sys.executable, "-c", code], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
