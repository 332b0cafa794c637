"""The CPU backend's object-code cache: compiled modules kept on disk across processes.

This is the persistent compile cache. It lives with the backend because its
keys and entries are the backend's (LLVM versions, target CPU, kernel plans,
relocatable object code); :mod:`tracejit.diagnostics.persistent_cache` is its
public face. Importing this module does not load llvmlite: the on-disk store
(keys, :func:`load`, :func:`store`, :func:`disabled`, ...) works without it,
and only the functions that compile or describe the host import LLVM.

Where
-----
``config.compilation_cache_dir`` (env ``TRACEJIT_CACHE_DIR``):

* ``""`` (the default): ON, under the user cache directory,
  ``$XDG_CACHE_HOME/tracejit`` or ``~/.cache/tracejit``;
* ``"off"`` (also ``"0"``, ``"false"``, ``"no"``, ``"none"``, ``"disabled"``): OFF;
* any other value: that directory.

Entries live in a ``v1`` sub-directory (the file format version). The
directories are created private to the user (mode 0o700). Loading a cache
entry runs its machine code, so a directory that another user could write to
(not owned by us, or group/other-writable) is refused with a warning and the
cache stays off: otherwise anyone with write access could plant code.

Entries
-------
One file per key, ``<key>.tjc``: a magic line, a JSON header (the full key,
the component hashes it was made from, metadata, the sha256 and size of the
object code) and the raw object code. Nothing is pickled. The file name is
not trusted: on load the header's key must be the requested one and must be
the hash of the header's component hashes, so an entry copied or renamed
under another key's name is never run. Any entry that fails a check -- filed
under another key, truncated or corrupt (bad magic, bad JSON, wrong size,
checksum mismatch), or whose object code lacks a symbol the entry lists or
the caller needs (:func:`compile_module`), or fails to load -- is removed
with a warning and reported as a miss, so the caller simply compiles again
(and stores a good entry).

Writes go to a temporary file in the same directory and are published with
``os.replace``, so readers in other processes see either the old entry or the
new one, never a partial file; two processes storing the same key both write
complete files and the last one wins. The total size is capped
(``config.compilation_cache_max_bytes`` if that option exists, else env
``TRACEJIT_CACHE_MAX_BYTES``, else 256 MiB) with least-recently-used
eviction: a hit touches the entry's mtime, and a store that takes the total past
the cap evicts the oldest entries. The total is kept in a ledger file, so a
store does not list the directory (:mod:`~tracejit.backends.cpu.cache_eviction`).

Keys
----
:func:`cache_key` hashes named components (each hashed on its own, so a miss
can say which one changed). :func:`default_components` adds what every entry
depends on: the cache format, a hash of tracejit's own source files (the
version number does not change while the compiler is developed, the sources
do), the llvmlite and LLVM versions, the target triple, CPU name and
features. Set the logger ``tracejit.cache`` to DEBUG to see every component
hash on a miss, and which components differ from the entries of the same
function that are on disk.

Examples
--------
>>> from tracejit.backends.cpu import object_cache as pc
>>> key = pc.cache_key({"program": "{ lambda ; a:f32[3]. ... }", "name": "f"})
>>> len(key)
64
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import struct
import tempfile
import threading
import time
from collections import OrderedDict

import numpy as np

from tracejit.backends.cpu import cache_eviction
from tracejit.backends.cpu.cache_eviction import SUFFIX, TMP_PREFIX
from tracejit.backends.cpu.cache_eviction import remove_file as _remove_file
from tracejit.compiler.kernel_ir import Kernel, exact_text
from tracejit.compiler.plan import DotStep, WindowStep
from tracejit.config import config
from tracejit.version import __version__

logger = logging.getLogger("tracejit.cache")

FORMAT = 1
_MAGIC = b"TRACEJIT-CACHE-1\n"
DEFAULT_MAX_BYTES = 256 << 20
_OFF = ("off", "0", "false", "no", "none", "disabled")

_lock = threading.Lock()
_recent: "OrderedDict[str, dict]" = OrderedDict()   # key -> component hashes, for miss explanations
_checked_dirs: dict = {}                            # path -> usable (bool)
_source_hash: str | None = None
# tracejit/, three levels above this file (tracejit/backends/cpu/object_cache.py).
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# --------------------------------------------------------------------------- configuration

def cache_dir() -> str | None:
    """The directory entries are stored in, or None when the cache is off.

    Examples
    --------
    >>> import tracejit
    >>> from tracejit.backends.cpu.object_cache import cache_dir
    >>> tracejit.config.update("compilation_cache_dir", "off")
    >>> cache_dir() is None
    True
    >>> tracejit.config.update("compilation_cache_dir", "")
    """
    value = config.compilation_cache_dir
    if value is None or value is False:
        return None
    value = str(value).strip()
    if value.lower() in _OFF:
        return None
    if not value:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        value = os.path.join(base, "tracejit")
    return os.path.join(os.path.abspath(os.path.expanduser(value)), f"v{FORMAT}")


@contextlib.contextmanager
def disabled():
    """Within this block compiles skip the persistent cache (e.g. to measure cold compiles).

    Examples
    --------
    >>> with disabled():
    ...     enabled()
    False
    """
    old = config.compilation_cache_dir
    config.update("compilation_cache_dir", "off")
    try:
        yield
    finally:
        config.update("compilation_cache_dir", old)


def enabled() -> bool:
    """True when entries can be loaded and stored (the directory exists or was created, and is private)."""
    return _usable_dir() is not None


def max_bytes() -> int:
    """The size cap of the cache directory in bytes."""
    try:
        value = getattr(config, "compilation_cache_max_bytes")
    except AttributeError:
        value = os.environ.get("TRACEJIT_CACHE_MAX_BYTES", "")
    try:
        return int(value) if value not in ("", None) else DEFAULT_MAX_BYTES
    except (TypeError, ValueError):
        return DEFAULT_MAX_BYTES


def _usable_dir() -> str | None:
    path = cache_dir()
    if path is None:
        return None
    ok = _checked_dirs.get(path)
    if ok is None or (ok and not os.path.isdir(path)):
        ok = _prepare_dir(path)
        _checked_dirs[path] = ok
    return path if ok else None


def _prepare_dir(path: str) -> bool:
    try:
        parent = os.path.dirname(path)
        for d in (parent, path):
            if not os.path.isdir(d):
                os.makedirs(d, mode=0o700, exist_ok=True)
                os.chmod(d, 0o700)   # makedirs' mode is filtered by the umask
            st = os.stat(d)
            if hasattr(os, "getuid") and st.st_uid != os.getuid():
                logger.warning("persistent compile cache disabled: %s is owned by another user", d)
                return False
            if st.st_mode & 0o022:
                logger.warning("persistent compile cache disabled: %s is writable by other users "
                               "(mode %o); chmod it to 0700 or choose another "
                               "tracejit.config.compilation_cache_dir", d, st.st_mode & 0o777)
                return False
        return True
    except OSError as e:
        logger.warning("persistent compile cache disabled: cannot use %s: %s", path, e)
        return False


# --------------------------------------------------------------------------- keys

def _canonical(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return json.dumps({str(k): _canonical(v) for k, v in value.items()}, sort_keys=True)
    return repr(value)


def _sha(text) -> str:
    return hashlib.sha256(text if isinstance(text, bytes) else text.encode()).hexdigest()


def component_hashes(components: dict) -> dict:
    """sha256 of each component's canonical text (str as is, dicts as sorted JSON, others by repr)."""
    return {str(k): _sha(_canonical(v)) for k, v in components.items()}


def cache_key(components: dict) -> str:
    """A hex sha256 key combining named components (hashed separately, then together).

    Parameters
    ----------
    components : dict
        Name -> value; values are strings, bytes, dicts or anything with a
        stable ``repr`` (tuples, ints, dtypes).

    Examples
    --------
    >>> cache_key({"a": 1, "b": "x"}) == cache_key({"b": "x", "a": 1})
    True
    >>> cache_key({"a": 1}) == cache_key({"a": 2})
    False
    """
    hashes = component_hashes(components)
    key = _key_of(hashes)
    with _lock:
        _recent[key] = hashes
        _recent.move_to_end(key)
        while len(_recent) > 256:
            _recent.popitem(last=False)
    return key


def source_hash() -> str:
    """sha256 over tracejit's own ``.py`` sources (computed once per process)."""
    global _source_hash
    if _source_hash is None:
        root = _PACKAGE_DIR
        h = hashlib.sha256()
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for fn in sorted(filenames):
                if fn.endswith(".py"):
                    p = os.path.join(dirpath, fn)
                    h.update(os.path.relpath(p, root).encode() + b"\0")
                    with open(p, "rb") as f:
                        h.update(f.read())
        _source_hash = h.hexdigest()
    return _source_hash


def default_components() -> dict:
    """Components every entry depends on: format, tracejit sources, llvmlite/LLVM, target CPU."""
    # Local: importing this module must not load llvmlite (see the module docstring).
    import llvmlite
    import llvmlite.binding as llvm
    from tracejit.backends.cpu import llvm_engine
    return {
        "format": FORMAT,
        "tracejit_version": __version__,
        "tracejit_sources": source_hash(),
        "llvmlite_version": llvmlite.__version__,
        "llvm_version": tuple(llvm.llvm_version_info),
        "triple": llvm_engine.triple,
        "cpu_name": llvm_engine.host_cpu_name(),
        "cpu_features": llvm_engine.host_cpu_features(),
    }


def program_fingerprint(program, plan=None) -> str:
    """sha256 of an optimized program: its text, constant values, and the kernel plan.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> p = tracejit.make_jaxpr(lambda x: x + 1)(np.zeros(3))
    >>> program_fingerprint(p) == program_fingerprint(p)
    True
    """
    h = hashlib.sha256(str(program).encode())
    for c in getattr(program, "const_values", ()) or ():
        a = np.ascontiguousarray(c)
        h.update(f"\nconst {a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    if plan is not None:
        for b in plan.buffers:
            h.update(f"\nbuffer {b.id} {b.shape} {b.dtype.str} {b.kind} {b.alias_of} {b.index}".encode())
        for s in plan.steps:
            if isinstance(s, Kernel):
                h.update(("\n" + exact_text(s)).encode())
            elif isinstance(s, DotStep):
                h.update(f"\ndot {s.out} {s.lhs} {s.rhs} {s.lhs_perm} {s.rhs_perm} {s.dimension_numbers} "
                         f"{s.accumulate}".encode())
                if s.epilogue is not None:
                    h.update(("\n" + exact_text(s.epilogue)).encode())
            elif isinstance(s, WindowStep):
                h.update(("\n" + s.describe()).encode())
                for n in s.fused.loads() if s.fused is not None else ():
                    h.update(f"\nload b{n.buffer} {n.map}".encode())
            else:
                h.update(f"\nnumpy {s.eqn.primitive.name} {s.inputs} {s.outputs}".encode())
                # A native loop's code holds its bodies' plans and arena layouts: compile options
                # (config.overlap_collectives, say) change them without changing the program text.
                for body in getattr(s, "bodies", None) or ():
                    h.update(f"\nbody {program_fingerprint(body.program, body.plan)} arena {body.arena_bytes} "
                             f"{sorted((body.offsets or {}).items())}".encode())
    return h.hexdigest()


# --------------------------------------------------------------------------- entries

def _path(directory: str, key: str) -> str:
    if not key or any(c not in "0123456789abcdef" for c in key):
        raise ValueError(f"persistent cache keys are lowercase hex strings (from cache_key), got {key!r}")
    return os.path.join(directory, key + SUFFIX)


def _read_entry(path: str, header_only: bool = False):
    """``(header, obj_bytes)``; raises ValueError on a malformed entry, OSError when unreadable."""
    with open(path, "rb") as f:
        data = f.read(len(_MAGIC) + 8) if header_only else f.read()
        if data[:len(_MAGIC)] != _MAGIC or len(data) < len(_MAGIC) + 8:
            raise ValueError("bad magic")
        (hlen,) = struct.unpack("<Q", data[len(_MAGIC):len(_MAGIC) + 8])
        start = len(_MAGIC) + 8
        if header_only:
            data = data + f.read(hlen)
    raw = data[start:start + hlen]
    if len(raw) != hlen:
        raise ValueError("truncated header")
    try:
        header = json.loads(raw.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"bad header: {e}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError("unknown entry format")
    if header_only:
        return header, None
    obj = data[start + hlen:]
    if len(obj) != header.get("object_size"):
        raise ValueError(f"object code has {len(obj)} bytes, header says {header.get('object_size')}")
    if hashlib.sha256(obj).hexdigest() != header.get("object_sha256"):
        raise ValueError("object code checksum mismatch")
    if _sha(json.dumps(header.get("metadata"), sort_keys=True)) != header.get("metadata_sha256"):
        raise ValueError("metadata checksum mismatch")
    return header, obj


def _key_of(hashes: dict) -> str:
    return _sha("".join(f"{k}={h}\n" for k, h in sorted(hashes.items())))


def _check_key(header: dict, key: str) -> None:
    """Raise ValueError unless the entry was stored under ``key`` (never trust the file name)."""
    stored = header.get("key")
    if stored != key:
        raise ValueError(f"entry is filed under {key[:16]} but was stored for key {str(stored)[:16]} "
                         "(copied or renamed file)")
    comps = header.get("components")
    if not isinstance(comps, dict):
        raise ValueError("header has no component hashes")
    if comps and _key_of(comps) != key:
        raise ValueError("the header's component hashes do not give its key")


def load(key: str, *, directory: str | None = None):
    """The stored ``(object_bytes, metadata)`` for ``key``, or None (missing, corrupt or cache off).

    A corrupt entry is removed. A hit marks the entry recently used.

    Examples
    --------
    >>> load("00" * 32, directory="/nonexistent-dir") is None
    True
    """
    directory = directory or _usable_dir()
    if directory is None:
        return None
    path = _path(directory, key)
    try:
        header, obj = _read_entry(path)
        _check_key(header, key)
    except FileNotFoundError:
        _log_miss(directory, key)
        return None
    except (OSError, ValueError) as e:
        logger.warning("removing corrupt persistent cache entry %s: %s", path, e)
        _remove_file(path)
        return None
    try:
        os.utime(path, None)   # LRU: a hit is a use
    except OSError:
        pass
    logger.debug("persistent cache hit %s (%s)", key[:16], header.get("metadata", {}).get("name", ""))
    return obj, header.get("metadata", {})


def store(key: str, obj_bytes: bytes, metadata: dict | None = None, *, directory: str | None = None,
          max_size: int | None = None) -> bool:
    """Write an entry atomically, then evict least-recently-used entries above the size cap.

    ``metadata`` must be JSON-serializable. Returns True when the entry was
    written; I/O errors are logged and return False (a cache never breaks a compile).

    Examples
    --------
    >>> store("00" * 32, b"", {}, directory="/nonexistent-dir")
    False
    """
    directory = directory or _usable_dir()
    if directory is None:
        return False
    path = _path(directory, key)
    obj_bytes = bytes(obj_bytes)
    metadata = dict(metadata or {})
    header = {
        "format": FORMAT,
        "key": key,
        "object_size": len(obj_bytes),
        "object_sha256": hashlib.sha256(obj_bytes).hexdigest(),
        "metadata": metadata,
        "metadata_sha256": _sha(json.dumps(metadata, sort_keys=True)),
        "components": _recent.get(key, {}),
        "created": time.time(),
    }
    raw = json.dumps(header, sort_keys=True).encode()
    data = _MAGIC + struct.pack("<Q", len(raw)) + raw
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=".part", dir=directory)  # mode 0o600
        with os.fdopen(fd, "wb") as f:
            f.write(data + obj_bytes)
        replaced = _file_size(path)
        os.replace(tmp, path)
        tmp = None
    except (OSError, TypeError, ValueError) as e:
        logger.warning("could not store persistent cache entry %s: %s", path, e)
        return False
    finally:
        if tmp is not None:
            _remove_file(tmp)
    cache_eviction.account(directory, len(data) + len(obj_bytes) - replaced,
                           max_bytes() if max_size is None else max_size, keep=path)
    return True


def _file_size(path: str) -> int:
    """The size of the file at ``path``, 0 when there is none."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def entries(directory: str | None = None) -> list:
    """``(path, size, mtime)`` of every entry, oldest first."""
    directory = directory or _usable_dir()
    return [] if directory is None else cache_eviction.entries(directory)


def evict(*, directory: str | None = None, max_size: int | None = None, keep: str | None = None) -> int:
    """Remove least-recently-used entries until the total is at most ``max_size``; returns bytes freed."""
    directory = directory or _usable_dir()
    if directory is None:
        return 0
    return cache_eviction.evict(directory, max_bytes() if max_size is None else max_size, keep)


def clear(directory: str | None = None) -> None:
    """Remove every entry."""
    directory = directory or _usable_dir()
    if directory is not None:
        cache_eviction.clear(directory)


def _log_miss(directory: str, key: str) -> None:
    if not logger.isEnabledFor(logging.DEBUG):
        return
    mine = _recent.get(key, {})
    logger.debug("persistent cache miss %s; components: %s", key[:16],
                 ", ".join(f"{k}={h[:12]}" for k, h in sorted(mine.items())) or "(unknown key)")
    name = mine.get("name")
    if not name:
        return
    # Which components differ from stored entries of the same function (newest few)?
    for path, _, _ in reversed(entries(directory)[-200:]):
        try:
            header, _ = _read_entry(path, header_only=True)
        except (OSError, ValueError):
            continue
        theirs = header.get("components", {})
        if theirs.get("name") == name:
            diff = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
            logger.debug("  closest stored entry %s differs in: %s", os.path.basename(path), ", ".join(diff))
            return


# --------------------------------------------------------------------------- compiling through the cache

def compile_module(module, *, name: str = "module", components: dict | None = None, vectorize: bool = True,
                   speed_level: int = 3, extra_metadata=None, before_load=None, symbols=(), cacheable: bool = True):
    """Compile an llvmlite module like ``llvm_engine.compile_ir``, through the persistent cache.

    Returns ``(CompiledModule, outcome)`` with outcome ``"persistent-hit"``
    (object code loaded from disk; no LLVM parse/optimize/codegen) or
    ``"compiled"``. On a miss the module is optimized once, emitted as a
    relocatable object, stored, and loaded from those same bytes, so a miss
    costs about what ``compile_ir`` does. ``components`` must identify
    ``module`` (e.g. ``{"program": program_fingerprint(program, plan), "name":
    name, ...}``); :func:`default_components` and the compile options are added.
    With the cache off, or ``cacheable=False``, this is ``compile_ir`` (outcome ``"compiled"``):
    nothing is loaded or stored (the backend passes it for programs holding host callbacks,
    whose Python functions no key can identify across processes).

    ``module`` may also be a zero-argument callable returning the module (or
    IR text): it is called only on a miss, so a hit skips building the IR too.
    It may return a list of modules: they compile in parallel
    (``llvm_engine.object_codes``), are stored as one entry, and the result
    is the first one's CompiledModule with the others, loaded before it, as
    its ``parts``.

    ``extra_metadata()`` (called after building, on a miss) adds JSON data to
    the entry; ``before_load(metadata)`` runs before a hit's object code is
    loaded — e.g. to register the external symbols the object refers to.

    A hit is checked before it is returned: every function the entry was
    stored with (its ``symbols`` metadata, per part) and every name in
    ``symbols`` (a name in the first module, or ``(part index, name)``) must
    resolve in the loaded code. An entry that fails this or fails to load is
    removed and the module compiled again.
    """
    from tracejit.backends.cpu import llvm_engine
    key = None
    if cacheable and enabled():
        comps = {**default_components(), **(components or {}), "vectorize": vectorize, "speed_level": speed_level}
        comps.setdefault("name", name)
        key = cache_key(comps)
        t0 = time.perf_counter()
        hit = load(key)
        if hit is not None:
            try:
                if before_load is not None:
                    before_load(hit[1] or {})
                compiled = _load_parts(_split_parts(hit[0], hit[1] or {}), name)
                _check_symbols(compiled, hit[1] or {}, symbols)
                compiled.timings = {"load": (time.perf_counter() - t0) * 1e3}
                return compiled, "persistent-hit"
            except Exception as e:  # noqa: BLE001 - a bad entry must never break a compile
                logger.warning("removing persistent cache entry %s: it failed to load (%s); recompiling",
                               key[:16], e)
                directory = _usable_dir()
                if directory is not None:
                    _remove_file(_path(directory, key))
    if callable(module):
        module = module()
    modules = module if isinstance(module, list) else [module]
    if key is None and len(modules) == 1:
        return llvm_engine.compile_ir(modules[0], name=name, vectorize=vectorize, speed_level=speed_level), "compiled"
    with llvm_engine.COMPILE_LOCK:
        t1 = time.perf_counter()
        built, steps = llvm_engine.object_codes(modules, _part_names(name, len(modules)), speed_level, vectorize)
        t4 = time.perf_counter()
    objs = [obj for _, obj in built]
    compiled = _load_parts(objs, name)
    # Keep the optimized modules so as_text(llvm_ir=True) still shows the IR.
    for part, (mod, _) in zip([compiled] + compiled.parts, built):
        part._module_ref = mod
    t5 = time.perf_counter()
    meta = {"name": name, "object_bytes": sum(map(len, objs)), "symbols": [_exported(mod) for mod, _ in built]}
    if len(objs) > 1:
        meta["parts"] = [len(obj) for obj in objs]
    if extra_metadata is not None:
        meta.update(extra_metadata())
    if key is not None:
        store(key, b"".join(objs), meta)
    compiled.timings = {**steps, "codegen": (t4 - t1) * 1e3 - sum(steps.values()),
                        "load": (t5 - t4) * 1e3, "store": (time.perf_counter() - t5) * 1e3}
    return compiled, "compiled"


def _exported(mod) -> list:
    """Names of the functions a module defines with external linkage (what its object code exports)."""
    import llvmlite.binding as llvm
    return sorted(f.name for f in mod.functions if not f.is_declaration and f.linkage == llvm.Linkage.external)


def _check_symbols(compiled, metadata: dict, symbols) -> None:
    """Raise KeyError unless every symbol the entry lists, and every requested one, resolves."""
    parts = [compiled] + list(compiled.parts)
    listed = metadata.get("symbols")
    if listed is not None and (not isinstance(listed, list) or len(listed) != len(parts)):
        raise ValueError(f"entry lists symbols for {len(listed) if isinstance(listed, list) else '?'} "
                         f"parts, has {len(parts)}")
    wanted = [(i, n) for i, names in enumerate(listed or []) for n in names]
    wanted += [(0, s) if isinstance(s, str) else tuple(s) for s in symbols]
    for i, symbol in wanted:
        if not 0 <= i < len(parts):
            raise KeyError(f"symbol {symbol!r} wanted in part {i}; the entry has {len(parts)}")
        parts[i].address(symbol)      # KeyError when missing


def _part_names(name: str, count: int) -> list:
    return [name] + [f"{name}.part{i}" for i in range(1, count)]


def _split_parts(obj: bytes, metadata: dict) -> list:
    sizes = metadata.get("parts") or [len(obj)]
    if sum(sizes) != len(obj):
        raise ValueError(f"object parts {sizes} do not add up to {len(obj)} bytes")
    offsets = [sum(sizes[:i]) for i in range(len(sizes) + 1)]
    return [obj[a:b] for a, b in zip(offsets, offsets[1:])]


def _load_parts(objs: list, name: str):
    """The first object's CompiledModule, with the others (loaded before it) as its ``parts``."""
    from tracejit.backends.cpu import llvm_engine
    names = _part_names(name, len(objs))
    parts = [llvm_engine.load_object(obj, name=n) for obj, n in zip(objs[1:], names[1:])]
    compiled = llvm_engine.load_object(objs[0], name=name)
    compiled.parts = parts
    return compiled
