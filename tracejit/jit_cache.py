"""The in-process compile cache: a byte budget over every jitted function's executables.

Each :class:`~tracejit.api.Jitted` keeps the executables of the signatures it
compiled.  Those hold native code (an LLVM engine and its memory), arenas and
recycled output buffers, so a program that compiles many distinct functions
or shapes grows without bound unless something lets go.  This module keeps
the sum of their estimated sizes (:func:`entry_nbytes`) under
``config.jit_cache_max_bytes`` (env ``TRACEJIT_JIT_CACHE_MAX_BYTES``; bytes,
or with a ``K``/``M``/``G`` suffix; ``0`` = no bound; default 512M).  Above
the budget the least recently used executables (a CLOCK approximation: a
call marks its entry used, eviction passes over used entries once) are
dropped from their function's cache; their native code is freed as soon as
nothing else (a ``Compiled`` object, a running call) refers to them, and a
later call with that signature compiles again (a persistent-cache hit when
that cache is on).

:func:`clear_caches` (``tracejit.clear_caches()``, like ``jax.clear_caches``)
empties every function's cache and returns freed memory to the operating
system where the C library allows (glibc ``malloc_trim``).

Fork safety: a forked child re-initializes every function's lock (another
thread may have held one at the fork); ``llvm_engine`` does the same for the
compiler's locks.

Examples
--------
>>> import numpy as np, tracejit
>>> f = tracejit.jit(lambda x: x + 1)
>>> _ = f(np.zeros(3))
>>> stats()["entries"] >= 1
True
>>> clear_caches()
>>> stats()["entries"]
0
"""
from __future__ import annotations

import ctypes
import gc
import os
import sys
import threading
import weakref
from collections import OrderedDict

from tracejit.config import config

DEFAULT_MAX_BYTES = 512 << 20
# What an executable costs beyond its object code and buffers: its engine, target machine and
# code pages, the plan, launches and program (~120 KB of RSS for a one-kernel function).
ENTRY_OVERHEAD_BYTES = 112 << 10

_registry: "weakref.WeakSet" = weakref.WeakSet()      # every Jitted, for clear_caches and fork
_lock = threading.Lock()
# id(entry) -> (weakref to its Jitted, cache key, weakref to the entry, nbytes), oldest first. Nothing
# here holds an executable: it lives exactly as long as its function's cache (or a Compiled) holds it.
_resident: "OrderedDict[int, tuple]" = OrderedDict()
_by_owner: dict = {}                                   # weakref to a Jitted -> ids of its entries
_dead_owners: list = []                                # weakrefs whose Jitted is gone (set by GC callbacks)
_total = 0


def parse_bytes(value) -> int:
    """``"512M"`` -> 536870912; ints pass through; ``""``/None -> the default.

    >>> parse_bytes("64k"), parse_bytes(10), parse_bytes("1G") == 1 << 30
    (65536, 10, True)
    """
    if value is None or value == "":
        return DEFAULT_MAX_BYTES
    if isinstance(value, (int, float)):
        return max(0, int(value))
    text = str(value).strip().lower().rstrip("b").rstrip("i")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(text[-1:], 1)
    if scale != 1:
        text = text[:-1]
    try:
        return max(0, int(float(text) * scale))
    except ValueError:
        raise ValueError(f"jit_cache_max_bytes must be a number of bytes (e.g. 512M), got {value!r}") from None


def max_bytes() -> int:
    """The budget in bytes (0: unbounded)."""
    return parse_bytes(getattr(config, "jit_cache_max_bytes", None))


def entry_nbytes(entry) -> int:
    """Estimated memory an executable holds: object code, arena, recycled outputs, constants, overhead."""
    exe = entry.executable
    total = ENTRY_OVERHEAD_BYTES
    module = getattr(exe, "llvm_ir", None)            # the CPU backend's CompiledModule
    for m in [module] + list(getattr(module, "parts", []) or []):
        total += int(getattr(m, "nbytes", 0) or 0)
    total += int(getattr(exe, "arena_bytes", 0) or 0)
    for pool in (getattr(exe, "pools", None) or {}).values():
        total += int(getattr(pool, "nbytes", 0) or 0) * int(getattr(pool, "keep", 1) or 1)
    for c in getattr(entry.program, "const_values", ()) or ():
        total += int(getattr(c, "nbytes", 0) or 0)
    return total


def register(jitted) -> None:
    """Note a new jitted function (for :func:`clear_caches` and fork)."""
    _registry.add(jitted)


def _owner_gone(ref) -> None:
    # A GC callback: may run on any thread at any moment, even inside this module with _lock held.
    _dead_owners.append(ref)


def _owner_ref(jitted):
    ref = getattr(jitted, "_budget_ref", None)
    if ref is None:
        ref = jitted._budget_ref = weakref.ref(jitted, _owner_gone)
    return ref


def _drop(entry_id) -> None:
    global _total
    record = _resident.pop(entry_id, None)
    if record is not None:
        _total -= record[3]
        ids = _by_owner.get(record[0])
        if ids is not None:
            ids.discard(entry_id)


def _reap_dead_owners() -> None:
    while _dead_owners:
        ref = _dead_owners.pop()
        for entry_id in list(_by_owner.pop(ref, ())):
            _drop(entry_id)


def added(jitted, key, entry) -> None:
    """Account for ``entry`` (just stored under ``key`` in ``jitted``'s cache), then evict above budget."""
    nbytes = entry_nbytes(entry)
    entry.nbytes = nbytes
    evicted = []
    with _lock:
        global _total
        _reap_dead_owners()
        ref = _owner_ref(jitted)
        _drop(id(entry))
        _resident[id(entry)] = (ref, key, weakref.ref(entry), nbytes)
        _by_owner.setdefault(ref, set()).add(id(entry))
        _total += nbytes
        limit = max_bytes()
        if limit:
            evicted = _evict_locked(limit, keep=id(entry))
    for owner, key, old in evicted:   # outside the lock: dropping an executable runs finalizers
        owner._forget(key, old)
    del evicted


def _evict_locked(limit, keep):
    out = []
    passes = 0
    while _total > limit and len(_resident) > 1 and passes < 2 * len(_resident):
        passes += 1
        entry_id, (ref, key, entry_ref, nbytes) = next(iter(_resident.items()))
        entry = entry_ref()
        if entry is not None and (entry_id == keep or entry.used):
            entry.used = False
            _resident.move_to_end(entry_id)
            continue
        _drop(entry_id)
        owner = ref()
        if owner is not None and entry is not None:
            out.append((owner, key, entry))
    return out


def removed(entries) -> None:
    """Stop accounting for entries a function dropped (``clear_cache``)."""
    with _lock:
        _reap_dead_owners()
        for entry in entries:
            _drop(id(entry))


def stats() -> dict:
    """``{"entries", "bytes", "max_bytes"}`` of the in-process compile cache."""
    with _lock:
        _reap_dead_owners()
        return {"entries": len(_resident), "bytes": _total, "max_bytes": max_bytes()}


def clear_caches() -> None:
    """Forget every compiled executable of every jitted function, and return the memory.

    Functions compile again on their next call (from the persistent cache when it is on).
    Executables the program still holds (``Compiled`` objects) stay valid.
    """
    for jitted in list(_registry):
        jitted.clear_cache()
    stats()                        # forget the entries of functions that are gone
    for name in ("tracejit.backends.cpu.loops",):
        module = sys.modules.get(name)
        clear = getattr(module, "clear_cache", None)
        if clear is not None:
            clear()
    gc.collect()
    trim_malloc()


def trim_malloc() -> bool:
    """Give free heap memory back to the OS (glibc's ``malloc_trim``); False where unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(ctypes.CDLL(None).malloc_trim(0))
    except (OSError, AttributeError):
        return False


def _after_fork_in_child() -> None:
    global _lock
    _lock = _reinit(_lock)
    for jitted in list(_registry):
        jitted._lock = _reinit(jitted._lock)


def _reinit(lock):
    reinit = getattr(lock, "_at_fork_reinit", None)
    if reinit is not None:
        reinit()
        return lock
    return type(lock)()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
