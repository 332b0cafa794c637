"""Persistent compile cache: object code of compiled modules, kept on disk across processes.

The public face of the CPU backend's object-code cache,
:mod:`tracejit.backends.cpu.object_cache`, which holds the implementation,
its state and the full description (location, entries, keys, integrity).
The names here are that module's functions, not copies, so
``persistent_cache.disabled()`` and ``persistent_cache.clear()`` act on the
cache the backend compiles through.

Examples
--------
>>> from tracejit.diagnostics import persistent_cache as pc
>>> key = pc.cache_key({"program": "{ lambda ; a:f32[3]. ... }", "name": "f"})
>>> len(key)
64
>>> with pc.disabled():
...     pc.enabled()
False
"""
from tracejit.backends.cpu.object_cache import (DEFAULT_MAX_BYTES, FORMAT, cache_dir, cache_key, clear,
                                                compile_module, component_hashes, default_components, disabled,
                                                enabled, entries, evict, load, max_bytes, program_fingerprint,
                                                source_hash, store)

__all__ = ["DEFAULT_MAX_BYTES", "FORMAT", "cache_dir", "cache_key", "clear", "compile_module", "component_hashes",
           "default_components", "disabled", "enabled", "entries", "evict", "load", "max_bytes",
           "program_fingerprint", "source_hash", "store"]
