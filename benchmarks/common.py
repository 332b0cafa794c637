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


# ---------------------------------------------------------------------- PyTorch, in its own process
#
# PyTorch's OpenMP threads keep spinning after its calls and take the cores from the thread team of
# whatever runs next in the same process (tracejit's, XLA's): measured in-process, every peer's times
# grew up to 8x. So a benchmark runs PyTorch in a child process (``python -m <its module>
# --torch-child``), which reports times and checksums of the results as JSON.

def checksum(out) -> list:
    """What a peer's result is compared by: the sum and absolute sum of its first array (float64)."""
    first = out
    while isinstance(first, (list, tuple)):
        first = first[0]
    if hasattr(first, "detach"):
        first = first.detach().numpy()
    first = np.asarray(first, np.float64)
    return [float(first.sum()), float(np.abs(first).sum())]


def check_checksum(what: str, out, theirs, rtol: float = 2e-4) -> None:
    """Raise if ``out``'s :func:`checksum` differs from a peer's: relative to the absolute sum (a plain
    sum may cancel to near zero)."""
    mine = checksum(out)
    scale = max(abs(mine[1]), abs(theirs[1]), 1e-30)
    if any(abs(a - b) > rtol * scale for a, b in zip(mine, theirs)):
        raise AssertionError(f"{what}: result checksum {mine} differs from the peer's {theirs}")


def torch_child(cases, repeat: int = 7) -> None:
    """In the child: time each case ``name -> (fn, args)`` of ``cases(torch)`` with PyTorch eager, then
    compiled with ``torch.compile``, and print ``{case: [[peer, seconds, checksum], ...], "notes": [...]}``."""
    import json
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")   # no compile workers beside the timing
    import torch
    torch.set_num_threads(os.cpu_count())
    report = {}

    def measure(case, peer, fn, args):
        report.setdefault(case, []).append((peer, median_time(lambda: fn(*args), repeat=repeat),
                                            checksum(fn(*args))))
    cases = cases(torch)
    for case, (fn, args) in cases.items():          # eager first: nothing compiled runs beside it
        measure(case, "pytorch eager", fn, args)
    for case, (fn, args) in cases.items():
        try:
            compiled = torch.compile(fn)
            compiled(*args)
        except Exception as e:  # noqa: BLE001 - a peer that cannot compile here is reported, not fatal
            report.setdefault("notes", []).append(f"torch.compile unavailable for {case} ({type(e).__name__})")
            continue
        measure(case, "pytorch torch.compile", compiled, args)
    print(json.dumps(report))


def torch_peer(module: str, repeat: int = 7) -> dict:
    """In the parent: the report of ``python -m module --torch-child --repeat N`` (:func:`torch_child`),
    or {} with a note where PyTorch is missing or fails."""
    import importlib.util
    import json
    import subprocess
    import sys
    if importlib.util.find_spec("torch") is None:
        print("  [peer torch not installed; skipping it -- `pip install torch` (a CPU build)]")
        return {}
    done = subprocess.run([sys.executable, "-m", module, "--torch-child", "--repeat", str(repeat)],
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        print(f"  [peer torch failed: {done.stderr.strip().splitlines()[-1:]}; skipping it]")
        return {}
    report = json.loads(done.stdout.strip().splitlines()[-1])
    for note in report.pop("notes", []):
        print(f"  [{note}]")
    return report


def torch_rows(what: str, out, t_tj: float, rows) -> None:
    """Print a PyTorch report's rows for one case against tracejit's time ``t_tj``, after checking
    each peer's result against tracejit's ``out``."""
    for peer, t, theirs in rows:
        check_checksum(f"{what}: {peer}", out, theirs)
        print(row(peer + " (own process)", t, None, f"=> tracejit {t / t_tj:.2f}x its speed"))
