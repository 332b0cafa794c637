"""OpenBLAS's idle threads: asleep a fraction of a millisecond after a call, not a tenth of a second.

When an OpenBLAS call returns, its worker threads keep polling for the next one (``sched_yield``
in a loop) for 2^28 time-stamp ticks, about 0.1 s, before they sleep. A compiled program calls
BLAS every few milliseconds, so on a 2-core machine those threads never sleep: every kernel of our
OpenMP team between two products shares its cores with them. On the GPT-2 layer forward
(``benchmarks/bench_gpt2_layer.py``) the eight kernels between its GEMMs took 2.8 ms with the
default and 1.6 ms with a 2^16-tick poll (about 20 us), while the GEMMs kept their speed
(measured in one process, switching back and forth, three times each).

Too short a poll costs more than it saves, though. With 2^16 ticks the workers are asleep again
before the next product of a loop of calls starts, and on the 2-core Zen 3 VM waking them
sometimes cost 10-20 ms: ``jit(a @ b)`` for a 512^3 float32 product took 12-16 ms instead of 2 in
12 of 18 timed rounds (0 of 18 with 2^20 ticks and with the default), NumPy's own 512^3 product
after a pause stalled 6-19 times in 48 calls (worst 15-20 ms); in one process, alternating,
the GPT-2-style MLP at (128, 768) ran 14.6 ms with 2^16 and 10.9 ms with 2^20, at (1024, 768)
87 and 79 ms, while the GPT-2 layer forward and backward and the MLP training step stayed the
same within 2%. Hence 2^20 ticks (about 0.4 ms at 2.45 GHz): a program's next product finds the
workers awake, and they still leave the cores a fraction of a millisecond after the last one.

The poll length is ``OPENBLAS_THREAD_TIMEOUT`` (a power of two, 4 to 30), which OpenBLAS reads
when it is loaded -- NumPy loads it before tracejit is imported -- and uses when it starts its
threads. :func:`shorten_idle_polling` therefore sets the variable, has the library read its
environment again (``openblas_read_env``), and stops its threads (``blas_thread_shutdown_``: what
OpenBLAS itself does before a ``fork``); the next call starts them again, with the short poll
and the same thread count. The variable is then put back as it was.

Nothing is changed when the user set ``OPENBLAS_THREAD_TIMEOUT`` (OpenBLAS already uses theirs),
when ``TRACEJIT_OPENBLAS_SHORT_POLL=0``, or when another Python thread exists: stopping the threads
while another thread is inside an OpenBLAS call could leave that call waiting forever.
"""
from __future__ import annotations

import ctypes
import logging
import os
import threading

from tracejit.config import env_flag

logger = logging.getLogger("tracejit.blas")

POLL_LOG2_TICKS = 20        # ~0.4 ms: the next product of a program or a loop finds them awake
_VARIABLE = "OPENBLAS_THREAD_TIMEOUT"
_done: set = set()          # library paths already shortened (once per process per library)


def _loaded(path: str) -> bool:
    """Whether the library file ``path`` is mapped into this process (Linux); never loads it."""
    try:
        real = os.path.realpath(path)
        with open("/proc/self/maps") as f:
            return any(line.rstrip().endswith(real) for line in f)
    except OSError:
        return False


def shorten_idle_polling(path: str, lib: ctypes.CDLL | None = None) -> bool:
    """Make the OpenBLAS at ``path`` poll ``2**POLL_LOG2_TICKS`` ticks before its idle threads
    sleep; returns whether it did (see the module's docstring). ``lib``: the library, loaded by the
    caller; without it, only a library this process has already loaded is changed.

    Examples
    --------
    >>> from tracejit.backends.cpu.openblas_idle import shorten_idle_polling
    >>> shorten_idle_polling("/nonexistent/libopenblas.so")
    False
    """
    if path in _done or os.environ.get(_VARIABLE, "").strip() or not env_flag("TRACEJIT_OPENBLAS_SHORT_POLL", True):
        return False
    if threading.active_count() > 1 or (lib is None and not _loaded(path)):
        return False
    try:
        lib = lib if lib is not None else ctypes.CDLL(path)
        read_env, shutdown = lib.openblas_read_env, lib.blas_thread_shutdown_
    except (OSError, AttributeError):
        return False        # not an OpenBLAS that exports these (other builds keep their default)
    read_env.restype = shutdown.restype = None
    read_env.argtypes = shutdown.argtypes = []
    os.environ[_VARIABLE] = str(POLL_LOG2_TICKS)
    try:
        read_env()
    finally:
        del os.environ[_VARIABLE]
    shutdown()
    _done.add(path)
    logger.debug("OpenBLAS %s: idle threads poll 2^%d ticks", path, POLL_LOG2_TICKS)
    return True
