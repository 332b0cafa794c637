"""The persistent cache's size cap: least-recently-used eviction, and a ledger of the total size.

A store must know whether the directory has grown past its cap. Listing it to find out (a ``stat``
per entry) took 60-100 ms for the 9,200 entries of one user cache on this project's machines, and a
256 MiB cache holds about 30,000: every compile that missed the cache paid that on top of LLVM's
work (tens of milliseconds), and a test process whose private cache grows to thousands of entries
spent a tenth of its time there. So the directory keeps a ledger, ``.size`` (a JSON object: the
total bytes and when they were last counted), which a store reads and updates, and the directory is
listed only

* when the ledger says the total is over the cap: the listing counts it exactly and, when it really
  is over, removes the least-recently-used entries down to :data:`EVICT_TO` of the cap -- not to the
  cap itself, so that the next stores do not list the directory again one by one;
* when the ledger is missing, unreadable, or last counted more than :data:`RECOUNT_S` ago.

The ledger is updated without a lock (a lock file held across a ``fork`` could block the parent):
two processes storing at the same instant can lose one of their additions, and files removed by
hand are still counted. Both only move the next exact count earlier or later; neither lets the
cache grow without bound, because every store past :data:`RECOUNT_S` counts again.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
import time

logger = logging.getLogger("tracejit.cache")

SUFFIX = ".tjc"
TMP_PREFIX = ".tmp-"
LEDGER = ".size"
EVICT_TO = 0.9            # an over-full cache is trimmed to this fraction of its cap
RECOUNT_S = 3600.0        # the ledger's count is trusted this long, then the directory is listed again
STALE_TMP_S = 3600.0      # temporary files older than this belong to writers that died mid-write


def remove_file(path: str) -> None:
    """Unlink ``path``; a file already gone (or not removable) is not an error."""
    try:
        os.unlink(path)
    except OSError:
        pass


def entries(directory: str) -> list:
    """``(path, size, mtime)`` of every entry in ``directory``, oldest first (stale temporary files
    are removed on the way).

    Examples
    --------
    >>> entries("/nonexistent-dir")
    []
    """
    out = []
    now = time.time()
    try:
        with os.scandir(directory) as it:
            for e in it:
                try:
                    st = e.stat()
                except OSError:
                    continue
                if e.name.endswith(SUFFIX):
                    out.append((e.path, st.st_size, st.st_mtime))
                elif e.name.startswith(TMP_PREFIX) and now - st.st_mtime > STALE_TMP_S:
                    remove_file(e.path)
    except OSError:
        return []
    out.sort(key=lambda t: t[2])
    return out


def evict(directory: str, max_size: int, keep: str | None = None) -> int:
    """Remove least-recently-used entries until the total is at most ``max_size`` (never ``keep``);
    returns the bytes freed and records the remaining total in the ledger.

    Examples
    --------
    >>> evict("/nonexistent-dir", 0)
    0
    """
    freed, total = _trim(entries(directory), max_size, keep)
    _write_ledger(directory, total)
    return freed


def account(directory: str, added: int, max_size: int, keep: str | None = None) -> None:
    """Record that a store changed the directory's total by ``added`` bytes, and evict when the
    total passes ``max_size`` (down to ``EVICT_TO * max_size``; never ``keep``, the new entry).

    Examples
    --------
    >>> account("/nonexistent-dir", 100, 1 << 20)
    """
    now = time.time()
    total, counted = _read_ledger(directory)
    if total is None or not 0 <= now - counted <= RECOUNT_S:
        items = entries(directory)            # the new entry is on disk already: ``added`` is in it
        total, counted = sum(size for _, size, _ in items), now
    else:
        items, total = None, total + added
    if total > max_size:
        if items is None:
            items = entries(directory)
            total, counted = sum(size for _, size, _ in items), now
        if total > max_size:
            _, total = _trim(items, int(max_size * EVICT_TO), keep)
    _write_ledger(directory, total, counted)


def clear(directory: str) -> None:
    """Remove every entry and the ledger."""
    for path, _, _ in entries(directory):
        remove_file(path)
    remove_file(os.path.join(directory, LEDGER))


def _trim(items: list, max_size: int, keep: str | None) -> tuple:
    """Remove the oldest of ``items`` until their total is at most ``max_size``: ``(freed, total)``."""
    total = sum(size for _, size, _ in items)
    freed = 0
    for path, size, _ in items:
        if total <= max_size:
            break
        if path == keep:
            continue
        remove_file(path)
        total -= size
        freed += size
        logger.debug("evicted persistent cache entry %s (%d bytes)", path, size)
    return freed, total


def _read_ledger(directory: str) -> tuple:
    """``(total bytes, time counted)``, or ``(None, 0.0)`` when the ledger is missing or malformed."""
    try:
        with open(os.path.join(directory, LEDGER)) as f:
            data = json.load(f)
        total, counted = data["bytes"], data["counted"]
        if isinstance(total, int) and total >= 0 and isinstance(counted, (int, float)):
            return total, float(counted)
    except (OSError, ValueError, TypeError, KeyError):
        pass
    return None, 0.0


def _write_ledger(directory: str, total: int, counted: float | None = None) -> None:
    """Publish the ledger atomically (a temporary file, then ``os.replace``); errors are ignored: a
    missing ledger only means the next store lists the directory."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=".size", dir=directory)
        with os.fdopen(fd, "w") as f:
            json.dump({"bytes": int(max(total, 0)), "counted": time.time() if counted is None else counted}, f)
        os.replace(tmp, os.path.join(directory, LEDGER))
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            remove_file(tmp)
