"""A result, or anything that can still see its memory, keeps its values across later calls.

Large outputs come from a per-executable pool (backends/cpu/runtime.py: OutputPool) and a
donated argument's memory becomes an output. These tests hold results in every way a user
can (views, transposes, slices kept in containers, memoryviews, np.frombuffer, ctypes, outputs
of a tuple or dict) while later calls run on other inputs, and check that reusing a donated
array raises instead of silently changing the result that now owns its memory.
"""
from __future__ import annotations

import ctypes
import gc
import os
import threading
import time

import numpy as np
import pytest

import tracejit
from tracejit.backends.cpu import runtime
from tracejit.core.errors import DeletedArrayError

ROWS = COLS = 512                 # float64: 2 MiB, above RECYCLE_MIN_BYTES


def _input(value):
    return np.full((ROWS, COLS), float(value))


def _later_calls(f, *values):
    # Several calls whose results are dropped at once and some kept for a while: every pooled
    # buffer that is free gets rewritten.
    kept = []
    for v in values:
        f(_input(v))
        kept.append(f(_input(v + 0.5)))
        del kept[:-1]
        gc.collect()


HOLDERS = {
    "slice": lambda y: y[:3],
    "row": lambda y: y[5],
    "transpose": lambda y: y.T,
    "reshape": lambda y: y.reshape(-1),
    "strided": lambda y: y[::2, ::3],
    "reinterpreted": lambda y: y.view(np.int64),
    "asarray of a slice": lambda y: np.asarray(y[1:]),
    "memoryview of a slice": lambda y: memoryview(y[1:]),
    "frombuffer": lambda y: np.frombuffer(y[1:]),
    "slices in a list": lambda y: [y[0], y[1:3]],
    "slice in a dict": lambda y: {"head": y[:2]},
}


def test_results_are_read_only_so_no_writable_export_can_hold_them():
    # ctypes.from_buffer needs writable memory: a result (a read-only tracejit.Array) refuses it,
    # so the only holders are the read-only ones above.
    f = tracejit.jit(lambda x: x * 2.0)
    y = f(np.ones((ROWS, COLS)))
    with pytest.raises(TypeError):
        (ctypes.c_double * 4).from_buffer(y[2])
    with pytest.raises(TypeError):
        (ctypes.c_double * 4).from_buffer(np.asarray(y)[2])


def _values(held):
    # A copy of what the holder sees, in a form that compares.
    if isinstance(held, list):
        return [_values(h) for h in held]
    if isinstance(held, dict):
        return {k: _values(v) for k, v in held.items()}
    if isinstance(held, memoryview):
        return np.array(np.asarray(held))
    if isinstance(held, ctypes.Array):
        return np.array(held[:])
    return np.array(held)


def _assert_same(a, b):
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _assert_same(a[k], b[k])
    else:
        np.testing.assert_array_equal(a, b)


class _Box:
    pass


@pytest.mark.parametrize("how", [*HOLDERS, "attribute of an object"])
def test_what_sees_a_dropped_result_keeps_its_values(how):
    f = tracejit.jit(lambda a: a * 2.0 + np.arange(COLS))
    f(_input(0))
    y = f(_input(1))
    if how == "attribute of an object":
        box = _Box()
        box.v = y[7]
        held = box.__dict__
    else:
        held = HOLDERS[how](y)
    expected = _values(held)
    assert np.all(np.asarray(y)[:, 0] == 2.0)
    del y
    gc.collect()
    _later_calls(f, 3, 4, 5)
    _assert_same(_values(held), expected)


def test_outputs_of_a_tuple_and_a_dict_keep_their_values():
    f = tracejit.jit(lambda a: {"double": a * 2.0, "pair": (a + 1.0, a - 1.0), "sum": a.sum()})
    f(_input(0))
    out = f(_input(1))
    held = [out["double"][:4], out["pair"][0].T, out["pair"][1][3]]
    total = out["sum"]
    del out
    gc.collect()
    _later_calls(f, 7, 8, 9)
    np.testing.assert_array_equal(held[0], np.full((4, COLS), 2.0))
    np.testing.assert_array_equal(held[1], np.full((COLS, ROWS), 2.0))
    np.testing.assert_array_equal(held[2], np.full(COLS, 0.0))
    assert total == ROWS * COLS


def test_several_outputs_each_keep_their_values():
    f = tracejit.jit(lambda a, b: (a * b, a + b, a - b))
    one = np.full((ROWS, COLS), 1.0)
    f(_input(3), one)
    p, q, r = f(_input(3), one)
    views = (p[1:], q.T, r.reshape(-1)[:10])
    del p, q, r
    gc.collect()
    for v in (5, 6, 7):
        f(_input(v), one)
        f(_input(v), one)
    np.testing.assert_array_equal(views[0], np.full((ROWS - 1, COLS), 3.0))
    np.testing.assert_array_equal(views[1], np.full((COLS, ROWS), 4.0))
    np.testing.assert_array_equal(views[2], np.full(10, 2.0))


def test_memory_is_reused_only_once_nothing_sees_it():
    f = tracejit.jit(lambda a: a * 2.0)
    (pool,) = [p for *_, p in f.lower(_input(0)).compile().executable._fresh_outputs if p is not None]
    f(_input(0))
    y = f(_input(1))
    head = y[:1]
    del y
    z = f(_input(2))
    assert not np.shares_memory(z, head)        # a view still sees the first result's memory
    np.testing.assert_array_equal(head, np.full((1, COLS), 2.0))
    del head, z
    gc.collect()
    # Nothing sees either buffer now: the pool hands them out again (the fast path stays).
    addresses = {b.ctypes.data for b in pool.buffers}     # addresses only: a reference would be a use
    assert len(addresses) == 2
    w = f(_input(3))
    assert w.ctypes.data in addresses
    np.testing.assert_array_equal(w, np.full((ROWS, COLS), 6.0))


def test_results_of_calls_from_two_threads_are_distinct_and_kept():
    f = tracejit.jit(lambda a: a * 2.0 + 1.0)
    f(_input(0))
    errors = []
    start = threading.Barrier(2)

    def worker(k):
        try:
            start.wait()
            held = []
            for i in range(12):
                v = 10 * k + i
                held.append((v, f(_input(v))[::1]))      # only a view is kept
                gc.collect()
            for v, view in held:
                np.testing.assert_array_equal(view, np.full((ROWS, COLS), 2.0 * v + 1.0))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def _wait_child(pid, seconds=60.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return "hung"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_keeps_the_views_it_inherited():
    f = tracejit.jit(lambda a: a * 2.0)
    f(_input(0))
    y = f(_input(1))
    view = y[2:]
    del y
    gc.collect()
    pid = os.fork()
    if pid == 0:        # pragma: no cover - the child
        code = 1
        try:
            f(_input(5))
            f(_input(6))
            code = 0 if np.array_equal(view, np.full((ROWS - 2, COLS), 2.0)) else 2
        finally:
            os._exit(code)
    assert _wait_child(pid) == 0
    f(_input(7))
    f(_input(8))
    np.testing.assert_array_equal(view, np.full((ROWS - 2, COLS), 2.0))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_wait_for_the_parents_output_priming():
    # A pool whose priming thread (prime_in_background) was still running at the fork: the
    # child has no such thread, so its first call must not wait for it.
    pending = runtime.OutputPool(1 << 20)
    pending.priming = threading.Event()
    pid = os.fork()
    if pid == 0:        # pragma: no cover - the child
        code = 1
        try:
            code = 0 if pending.take((1 << 17,), np.float64).shape == (1 << 17,) else 2
        finally:
            os._exit(code)
    try:
        assert _wait_child(pid, seconds=20) == 0
    finally:
        pending.priming.set()


# ------------------------------------------------------------------ donation

def test_a_donated_array_passed_again_raises_and_the_result_keeps_its_values():
    f = tracejit.jit(lambda x: x * 2.0 + 1.0, donate_argnums=0)
    x = np.arange(6.0)
    y = f(x)
    np.testing.assert_array_equal(y, np.arange(6.0) * 2 + 1)
    assert np.shares_memory(y, x)                   # the output took the donated memory
    with pytest.raises(DeletedArrayError, match="deleted.*donated"):
        f(x)
    with pytest.raises(RuntimeError, match="donated"):      # what JAX raises too
        tracejit.jit(lambda a: a + 1)(x)            # any jitted function: x no longer holds its value
    np.testing.assert_array_equal(y, np.arange(6.0) * 2 + 1)
    # The result itself may be donated in turn: the usual `params = step(params)` loop.
    z = f(y)
    np.testing.assert_array_equal(z, (np.arange(6.0) * 2 + 1) * 2 + 1)
    with pytest.raises(DeletedArrayError):
        f(y)
    # The marks leave with the arrays: nothing leaks, and a new array at a reused address is fine.
    marked = {id(x), id(y)}
    del x, y, z
    gc.collect()
    assert not marked & set(runtime._donated)
    for _ in range(3):
        np.testing.assert_array_equal(f(np.arange(6.0)), np.arange(6.0) * 2 + 1)


def test_a_donated_pytree_leaf_and_a_large_donated_array_raise_when_reused():
    step = tracejit.jit(lambda params, g: {"w": params["w"] - 0.5 * g, "b": params["b"] + 1.0},
                        donate_argnames="params")
    w = np.full((ROWS, COLS), 3.0)
    params = {"w": w, "b": np.zeros(4)}
    g = np.ones((ROWS, COLS))
    new = step(params, g)
    np.testing.assert_array_equal(new["w"], np.full((ROWS, COLS), 2.5))
    with pytest.raises(DeletedArrayError, match="donated"):
        step(params, g)
    np.testing.assert_array_equal(new["w"], np.full((ROWS, COLS), 2.5))
    newer = step(new, g)
    np.testing.assert_array_equal(newer["w"], np.full((ROWS, COLS), 2.0))


def test_a_donated_array_that_another_argument_reads_is_not_written_in_place():
    f = tracejit.jit(lambda x, y: x * 2.0 + y.T, donate_argnums=0)
    x = np.arange(16.0).reshape(4, 4)
    expected = x * 2 + x.T
    out = f(x, x)
    np.testing.assert_array_equal(out, expected)
    g = tracejit.jit(lambda x, y: x * 2.0 + y[::-1], donate_argnums=0)
    x = np.arange(16.0)
    expected = x * 2 + x[::-1]
    np.testing.assert_array_equal(g(x, x[:]), expected)
    np.testing.assert_array_equal(x, np.arange(16.0))      # not consumed: still usable
    np.testing.assert_array_equal(g(x, np.zeros(16)), np.arange(16.0) * 2)
