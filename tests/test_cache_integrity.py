"""Persistent compile cache integrity: an entry is loaded only for the key it was stored under.

The file name of an entry is not trusted. An entry copied or renamed under another key's name, a
truncated or corrupt entry, or one whose object code lacks the symbols it should define is a miss:
it is removed, the function is compiled again, and the results are right.
"""
import ctypes
import logging
import os
import shutil

import numpy as np
import pytest
from llvmlite import ir

import tracejit
from tracejit.backends.cpu import object_cache as pc


@pytest.fixture
def cache_dir(tmp_path):
    old = tracejit.config.compilation_cache_dir
    root = tmp_path / "cache"
    tracejit.config.update("compilation_cache_dir", str(root))
    yield root / f"v{pc.FORMAT}"
    tracejit.config.update("compilation_cache_dir", old)


def _entries(d):
    return {n for n in os.listdir(d) if n.endswith(".tjc")} if d.exists() else set()


def _compile_new(fun, x):
    """A fresh jit of ``fun`` (nothing in memory): ``(result, cache outcome)``."""
    compiled = tracejit.jit(fun).lower(x).compile()
    return compiled(x), compiled.timings["cache"]


def _two_entries(cache_dir, fa, fb, x):
    before = _entries(cache_dir)
    ra, oa = _compile_new(fa, x)
    a_files = _entries(cache_dir) - before
    rb, ob = _compile_new(fb, x)
    b_files = _entries(cache_dir) - before - a_files
    assert oa == ob == "compiled" and len(a_files) == 1 and len(b_files) == 1, (a_files, b_files)
    return ra, rb, cache_dir / a_files.pop(), cache_dir / b_files.pop()


def _header(path):
    header, _ = pc._read_entry(str(path), header_only=True)
    return header


def _kernel_a(x):
    return x * 2.0 + 1.0


def _kernel_b(x):
    return x * 3.0 - 5.0


def _kernel_b_named_a(x):
    return x * 3.0 - 5.0


_kernel_b_named_a.__name__ = "_kernel_a"      # the same kernel symbols as _kernel_a


@pytest.mark.parametrize("same_name", [True, False])
def test_entry_copied_over_another_key_is_not_loaded(cache_dir, same_name, caplog):
    """Entry A's file copied over B's name: B still returns B's results, and the bad file goes.

    With the same function name the kernels have the same symbols, so the old code ran A's code
    for B (wrong results, every run); with different names it raised "symbol not found" every run.
    """
    x = np.linspace(-1, 1, 64)
    fa = _kernel_a
    fb = _kernel_b_named_a if same_name else _kernel_b
    ra, rb, path_a, path_b = _two_entries(cache_dir, fa, fb, x)
    np.testing.assert_allclose(rb, x * 3.0 - 5.0)
    key_b = path_b.name[:-len(".tjc")]
    shutil.copyfile(path_a, path_b)
    with caplog.at_level(logging.WARNING, logger="tracejit.cache"):
        out, outcome = _compile_new(fb, x)
    np.testing.assert_allclose(out, x * 3.0 - 5.0)
    assert outcome == "compiled"
    assert "stored for key" in caplog.text
    # The bad file was removed and a good entry stored in its place.
    assert _header(path_b)["key"] == key_b
    assert path_b.read_bytes() != path_a.read_bytes()
    out, outcome = _compile_new(fb, x)
    assert outcome == "persistent-hit"
    np.testing.assert_allclose(out, x * 3.0 - 5.0)
    out, outcome = _compile_new(fa, x)                     # A's entry is untouched
    assert outcome == "persistent-hit"
    np.testing.assert_allclose(out, x * 2.0 + 1.0)


def test_load_checks_the_key_in_the_header(cache_dir):
    ka, kb = pc.cache_key({"t": "a"}), pc.cache_key({"t": "b"})
    pc.store(ka, b"\x7fELF-a" * 10, {"name": "a"})
    pc.store(kb, b"\x7fELF-b" * 10, {"name": "b"})
    header = _header(cache_dir / f"{ka}.tjc")
    assert header["key"] == ka and pc._key_of(header["components"]) == ka
    shutil.copyfile(cache_dir / f"{ka}.tjc", cache_dir / f"{kb}.tjc")
    assert pc.load(kb) is None
    assert not (cache_dir / f"{kb}.tjc").exists()
    assert pc.load(ka) == (b"\x7fELF-a" * 10, {"name": "a"})
    # A renamed file (no copy left under its own name) is refused too.
    os.rename(cache_dir / f"{ka}.tjc", cache_dir / f"{kb}.tjc")
    assert pc.load(kb) is None and pc.load(ka) is None
    assert _entries(cache_dir) == set()


def test_header_key_must_match_its_components(cache_dir):
    """A header whose key was edited to the requested one, but whose components give another key."""
    ka, kb = pc.cache_key({"t": "a2"}), pc.cache_key({"t": "b2"})
    pc.store(ka, b"obj-a", {"name": "a"})
    path = cache_dir / f"{ka}.tjc"
    data = path.read_bytes().replace(ka.encode(), kb.encode())   # the key appears only in the header
    (cache_dir / f"{kb}.tjc").write_bytes(data)
    assert pc.load(kb) is None
    assert not (cache_dir / f"{kb}.tjc").exists()


def _module(fn_name, c):
    m = ir.Module(name=fn_name)
    d = ir.DoubleType()
    fn = ir.Function(m, ir.FunctionType(d, [d]), name=fn_name)
    b = ir.IRBuilder(fn.append_basic_block())
    b.ret(b.fadd(b.fmul(fn.args[0], d(2.0)), d(c)))
    return m


def _call(compiled, symbol, x):
    return ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(compiled.address(symbol))(x)


def test_entry_without_its_symbols_is_recompiled(cache_dir, caplog):
    """An entry under the right key whose object code lacks the symbols it lists: removed, recompiled
    (the old code returned it, and every later lookup raised KeyError: symbol not found)."""
    comps = {"program": "integrity symbols"}
    c1, o1 = pc.compile_module(lambda: _module("tj_integrity_f", 1.0), name="f", components=comps, vectorize=False)
    assert o1 == "compiled" and _call(c1, "tj_integrity_f", 1.0) == 3.0
    [path] = [cache_dir / n for n in _entries(cache_dir)]
    header = _header(path)
    assert header["metadata"]["symbols"] == [["tj_integrity_f"]]
    key = path.name[:-len(".tjc")]
    # Same key, same metadata, a valid object that defines another function.
    pc.compile_module(lambda: _module("tj_integrity_other", 5.0), name="g", components={"program": "other"},
                      vectorize=False)
    other_obj, _ = pc.load(pc.cache_key({**pc.default_components(), "program": "other", "vectorize": False,
                                         "speed_level": 3, "name": "g"}))
    pc.store(key, other_obj, header["metadata"])
    with caplog.at_level(logging.WARNING, logger="tracejit.cache"):
        c2, o2 = pc.compile_module(lambda: _module("tj_integrity_f", 1.0), name="f", components=comps,
                                   vectorize=False)
    assert o2 == "compiled" and _call(c2, "tj_integrity_f", 1.0) == 3.0
    assert "tj_integrity_f" in caplog.text
    c3, o3 = pc.compile_module(lambda: _module("tj_integrity_f", 1.0), name="f", components=comps, vectorize=False)
    assert o3 == "persistent-hit" and _call(c3, "tj_integrity_f", 2.0) == 5.0


def test_symbols_requested_by_the_caller_are_checked(cache_dir):
    comps = {"program": "integrity requested"}
    build = lambda: _module("tj_integrity_h", 0.5)   # noqa: E731
    pc.compile_module(build, name="h", components=comps, vectorize=False)
    c, o = pc.compile_module(build, name="h", components=comps, vectorize=False, symbols=["tj_integrity_h"])
    assert o == "persistent-hit"
    # A caller that needs a symbol the entry does not have gets a fresh compile, not a KeyError later.
    c, o = pc.compile_module(build, name="h", components=comps, vectorize=False, symbols=[(0, "tj_missing")])
    assert o == "compiled" and _call(c, "tj_integrity_h", 1.0) == 2.5


def test_multi_part_entry_copied_or_missing_parts(cache_dir):
    """Entries of two modules (object_codes parts): a part-swapped or copied entry is a miss."""
    def build(c):
        return lambda: [_module("tj_parts_main", c), _module("tj_parts_side", c + 1)]

    ca, oa = pc.compile_module(build(1.0), name="pa", components={"program": "parts a"}, vectorize=False)
    cb, ob = pc.compile_module(build(10.0), name="pb", components={"program": "parts b"}, vectorize=False)
    assert oa == ob == "compiled" and len(ca.parts) == 1
    assert _call(ca.parts[0], "tj_parts_side", 0.0) == 2.0
    paths = {pc._read_entry(str(cache_dir / n), header_only=True)[0]["metadata"]["name"]: cache_dir / n
             for n in _entries(cache_dir)}
    assert _header(paths["pa"])["metadata"]["symbols"] == [["tj_parts_main"], ["tj_parts_side"]]
    shutil.copyfile(paths["pa"], paths["pb"])
    cb2, ob2 = pc.compile_module(build(10.0), name="pb", components={"program": "parts b"}, vectorize=False)
    assert ob2 == "compiled"
    assert _call(cb2, "tj_parts_main", 0.0) == 10.0 and _call(cb2.parts[0], "tj_parts_side", 0.0) == 11.0
    # The parts swapped inside an entry (right key, right checksums): the symbols are in the wrong part.
    header = _header(paths["pb"])
    _, obj = pc._read_entry(str(paths["pb"]))
    n0, n1 = header["metadata"]["parts"]
    meta = dict(header["metadata"], parts=[n1, n0])
    key = paths["pb"].name[:-len(".tjc")]
    pc.store(key, obj[n0:] + obj[:n0], meta)
    cb3, ob3 = pc.compile_module(build(10.0), name="pb", components={"program": "parts b"}, vectorize=False)
    assert ob3 == "compiled" and _call(cb3.parts[0], "tj_parts_side", 0.0) == 11.0
    cb4, ob4 = pc.compile_module(build(10.0), name="pb", components={"program": "parts b"}, vectorize=False)
    assert ob4 == "persistent-hit" and _call(cb4, "tj_parts_main", 1.0) == 12.0


@pytest.mark.parametrize("damage", ["truncate-header", "truncate-object", "garbage", "empty", "object-bits"])
def test_corrupt_jit_entries_are_recompiled(cache_dir, damage):
    x = np.linspace(-1, 1, 32)
    before = _entries(cache_dir)
    _compile_new(_kernel_b, x)
    [name] = _entries(cache_dir) - before
    path = cache_dir / name
    data = path.read_bytes()
    if damage == "truncate-header":
        data = data[:40]
    elif damage == "truncate-object":
        data = data[:-100]
    elif damage == "garbage":
        data = os.urandom(len(data))
    elif damage == "empty":
        data = b""
    else:
        data = bytearray(data)
        data[-200] ^= 0x55
        data = bytes(data)
    path.write_bytes(data)
    out, outcome = _compile_new(_kernel_b, x)
    assert outcome == "compiled"
    np.testing.assert_allclose(out, x * 3.0 - 5.0)
    assert _header(path)["key"] == name[:-len(".tjc")]
    out, outcome = _compile_new(_kernel_b, x)
    assert outcome == "persistent-hit"
    np.testing.assert_allclose(out, x * 3.0 - 5.0)
