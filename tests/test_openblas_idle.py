"""OpenBLAS's idle threads poll briefly (tracejit/backends/cpu/openblas_idle.py).

Each case runs in a fresh interpreter: the change is made once per process, at import, and
depends on the environment the process started with.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tracejit.backends.cpu import blas

_PROBE = r"""
import ctypes, glob, json, os, sys, threading
import numpy as np
paths = glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs", "lib*openblas*.so*"))
lib = ctypes.CDLL(paths[0])
timeout = lib.openblas_thread_timeout
timeout.restype = ctypes.c_int
for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads"):
    if hasattr(lib, name):
        count = getattr(lib, name)
        break
rng = np.random.default_rng(0)
a = rng.standard_normal((300, 300))
a @ a                                     # the library's threads are up and have worked
before = count()
if sys.argv[1] == "thread":
    stop = threading.Event()
    threading.Thread(target=stop.wait).start()
import tracejit
from tracejit.backends.cpu import openblas_idle
b = rng.standard_normal((400, 500))
c = rng.standard_normal((500, 300))
ok = bool(np.allclose(b @ c, np.einsum("ij,jk->ik", b, c), rtol=1e-12, atol=1e-12))
f = tracejit.jit(lambda x, y: x @ y)
ok = ok and bool(np.allclose(f(b, c), np.einsum("ij,jk->ik", b, c), rtol=1e-12, atol=1e-12))
if sys.argv[1] == "thread":
    stop.set()
print(json.dumps({"timeout": timeout(), "threads_before": before, "threads_after": count(), "ok": ok,
                  "variable": os.environ.get("OPENBLAS_THREAD_TIMEOUT"), "done": sorted(openblas_idle._done)}))
"""

pytestmark = pytest.mark.skipif(not blas._numpy_openblas_paths() or not sys.platform.startswith("linux"),
                                reason="NumPy's wheel bundles no OpenBLAS here (the change applies to no library)")


def _probe(mode="plain", **env):
    full = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_THREAD_TIMEOUT", "TRACEJIT_OPENBLAS_SHORT_POLL")}
    full.update(env, TRACEJIT_BLAS="numpy")        # (NumPy's OpenBLAS, without timing every provider first)
    out = subprocess.run([sys.executable, "-c", _PROBE, mode], env=full, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_idle_threads_poll_briefly_after_import():
    from tracejit.backends.cpu import openblas_idle
    # (2^16 ticks let the threads fall asleep between a loop's products: 10-20 ms wake-ups, see the module)
    assert 20 <= openblas_idle.POLL_LOG2_TICKS < 28
    got = _probe()
    assert got["timeout"] == openblas_idle.POLL_LOG2_TICKS and got["done"], got
    assert got["threads_after"] == got["threads_before"], got      # the restarted threads: as many
    assert got["ok"], got                                          # products stay right, NumPy's and ours
    assert got["variable"] is None, got                            # the environment is left as it was


@pytest.mark.parametrize("env,timeout", [({"OPENBLAS_THREAD_TIMEOUT": "22"}, 22),
                                         ({"TRACEJIT_OPENBLAS_SHORT_POLL": "0"}, 0)])
def test_the_users_choice_is_kept(env, timeout):
    got = _probe(**env)
    assert got["timeout"] == timeout and not got["done"] and got["ok"], got


def test_nothing_changes_while_another_thread_runs():
    got = _probe("thread")
    assert got["timeout"] == 0 and not got["done"] and got["ok"], got


def test_a_library_not_loaded_is_not_loaded():
    from tracejit.backends.cpu import openblas_idle
    assert not openblas_idle.shorten_idle_polling("/nonexistent/libopenblas.so")
    assert np.isfinite(np.ones((3, 3)) @ np.ones(3)).all()
