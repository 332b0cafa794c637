"""Shared benchmark helpers: medians of repeated runs, optional peers.

Machines are shared and noisy, so every benchmark reports *ratios* against
peers measured in the same run, from medians of several repetitions.
"""
from __future__ import annotations

import importlib
import os
import statistics
import time

import numpy as np


SETTLE_SECONDS = 0.3


def median_time(fn, *, repeat: int = 7, warmup: int = 1, min_time: float = 0.0, setup=None,
                settle: float = SETTLE_SECONDS) -> float:
    """Median wall time of ``fn()`` in seconds over ``repeat`` runs (after warm-up).

    With ``setup``, each run times ``fn(*setup())`` and not ``setup()`` itself (fresh copies of
    arguments a program writes: copying a large array costs as much as the program, and how much
    depends on the allocator's state, not on the peer). ``min_time`` does not apply then.

    Starts with a short pause (``settle`` seconds): idle worker threads of the peer measured before
    (OpenBLAS's and OpenMP's spin for a while after their last call) would otherwise share the cores
    with this one.
    """
    time.sleep(settle)
    for _ in range(warmup):
        fn(*setup()) if setup is not None else fn()
    times = []
    for _ in range(repeat):
        if setup is not None:
            args = setup()
            t0 = time.perf_counter()
            fn(*args)
            times.append(time.perf_counter() - t0)
            continue
        t0 = time.perf_counter()
        n = 0
        while True:
            fn()
            n += 1
            el = time.perf_counter() - t0
            if el >= min_time:
                break
        times.append(el / n)
    return statistics.median(times)


def turn_times(fns, *, rounds: int, repeat: int, warmup: int = 0, settle: float = SETTLE_SECONDS,
               min_time: float = 0.0) -> list:
    """Per-round times of ``fns`` (callables) timed in turn, ``rounds`` times over: ``times[i][r]`` is
    ``fns[i]``'s median of ``repeat`` calls in round ``r`` (each call repeated until ``min_time``).

    Every other round runs in the reverse order: what runs second ran ~5-13% slower or faster on this
    VM (the order's bias, measured with identical functions), which alternation cancels. Each turn
    starts after ``settle`` seconds (the previous peer's idle threads stop spinning), then makes
    ``warmup`` untimed calls.
    """
    per_round = [[] for _ in fns]
    for fn in fns:
        fn()                                            # warm-up
    for r in range(rounds):
        for k in (range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))):
            per_round[k].append(median_time(fns[k], repeat=repeat, warmup=warmup, min_time=min_time, settle=settle))
    return per_round


def paired_times(fns, *, rounds: int = 6, repeat: int = 3) -> tuple:
    """Medians of ``fns`` (callables) timed in turn (:func:`turn_times`), ``rounds`` times over:
    ``(medians, ratios)`` where ``medians[i]`` is the median over rounds of ``fns[i]``'s per-round
    median of ``repeat`` calls, and ``ratios`` each round's ``fns[1]`` time over ``fns[0]``'s.

    Measured one after the other, a peer can land in a slow minute of a shared machine and the other
    not (the same MLP gave 0.60x and 1.37x JAX's speed in two runs): alternating puts both in the same
    minutes, and the per-round ratios show how much the machine moved.
    """
    per_round = turn_times(fns, rounds=rounds, repeat=repeat)
    ratios = [b / a for a, b in zip(per_round[0], per_round[1])] if len(fns) > 1 else []
    return [statistics.median(r) for r in per_round], ratios


def paired_line(what: str, ratios) -> str:
    """``=> tracejit vs <what>: median ratio (the rounds' range)``."""
    return (f"  => tracejit vs {what}: {statistics.median(ratios):.2f}x its speed "
            f"(alternating rounds: {min(ratios):.2f}-{max(ratios):.2f}x)")


def first_call_time(make_and_call) -> float:
    t0 = time.perf_counter()
    make_and_call()
    return time.perf_counter() - t0


def optional(module: str):
    """Import a peer if installed; return None (and say so) otherwise."""
    try:
        return importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 - any import failure means "peer missing"
        print(f"  [peer {module} not installed ({type(e).__name__}); skipping it — `pip install -e .[peers]`]")
        return None


def jax_cpu():
    jax = optional("jax")
    if jax is None:
        return None
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    return jax


def block(x):
    """Wait for (JAX's asynchronous) results, including pytrees of them."""
    if isinstance(x, (list, tuple)):
        for item in x:
            block(item)
        return x
    if isinstance(x, dict):
        block(list(x.values()))
        return x
    return x.block_until_ready() if hasattr(x, "block_until_ready") else x


def row(name: str, seconds: float, ref: float | None = None, extra: str = "") -> str:
    ratio = f"{ref / seconds:6.2f}x" if ref else "      "
    return f"  {name:<34} {seconds * 1e3:10.3f} ms  {ratio}  {extra}"


def header(title: str):
    print(f"\n== {title} ==  (median of runs; ratio = reference time / this time, higher is faster)")
    print(f"  threads: {os.cpu_count()}  numpy {np.__version__}")
