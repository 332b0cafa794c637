"""BLAS providers chosen by measurement (tracejit/backends/cpu/blas.py).

Every provider that loads here is checked against float64 NumPy references;
the chooser is driven with fake providers and a fake timer, so nothing here
depends on how fast this machine is.
"""
from __future__ import annotations

import glob
import json
import os
import threading

import numpy as np
import pytest

import tracejit
from tracejit.backends.cpu import blas

from test_blas import DTYPES, PROVIDERS as LOADED, _rand


def _wide(x):
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _close(got, want):
    tol = 1e-4 if got.dtype in (np.float32, np.complex64) else 1e-11
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(_wide(got), want, rtol=0, atol=tol * scale)


@pytest.fixture(params=LOADED)
def real(request):
    return blas._instance(request.param)


# --------------------------------------------------------------------------- every loaded provider

def test_numpy_and_its_openblas_load():
    assert "numpy" in LOADED
    if blas._numpy_openblas_paths():
        p = blas._instance("openblas")
        assert p is not None and "OpenBLAS" in p.version
        if "USE64BITINT" in p.version:
            assert p.limit == 2 ** 63        # ILP64: 64-bit integer arguments


@pytest.mark.parametrize("dtype", DTYPES)
def test_products_2d_and_transposed_views(real, dtype):
    a, b = _rand((37, 53), dtype), _rand((53, 29), dtype, 1)
    cases = [(a, b), (np.ascontiguousarray(a.T).T, b), (a, np.ascontiguousarray(b.T).T),
             (np.ascontiguousarray(a.T).T, np.ascontiguousarray(b.T).T), (_rand((60, 53), dtype)[5:42], b),
             (a, _rand((53, 40), dtype, 2)[:, 3:32]), (a[:, ::-1], b[::-1]), (a[::2], b)]
    for x, y in cases:
        out = np.full((x.shape[0], y.shape[1]), np.nan, dtype)
        real.gemm(x, y, out)
        _close(out, _wide(x) @ _wide(y))


@pytest.mark.parametrize("dtype", DTYPES)
def test_products_batched(real, dtype):
    a, b = _rand((4, 9, 11), dtype), _rand((4, 11, 6), dtype, 1)
    cases = [(a, b), (np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1), b),
             (a, np.ascontiguousarray(b.transpose(0, 2, 1)).transpose(0, 2, 1)), (a[:, ::2], b),
             (np.broadcast_to(a[:1], a.shape), b), (a[::-1], b), (a[:1], b[:1])]
    for x, y in cases:
        out = np.full((x.shape[0], x.shape[1], 6), np.nan, dtype)
        real.gemm(x, y, out)
        _close(out, np.matmul(_wide(x), _wide(y)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (-0.5, 1.0), (3.0, 0.0), (-1.0, 0.0)])
@pytest.mark.parametrize("batched", [False, True])
def test_alpha_beta_accumulate(real, dtype, alpha, beta, batched):
    lead = (3,) if batched else ()
    a, b, c = _rand(lead + (13, 8), dtype), _rand(lead + (10, 8), dtype, 1), _rand(lead + (13, 10), dtype, 2)
    b = np.swapaxes(b, -1, -2)            # a transposed operand as well
    out = c.copy()
    real.gemm(a, b, out, alpha, beta)
    _close(out, beta * _wide(c) + alpha * np.matmul(_wide(a), _wide(b)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0, 5, 3), (4, 0, 3), (4, 5, 0), (1, 1, 1), (1, 7, 1), (7, 1, 9), (1, 9, 7)])
def test_empty_and_unit_dims(real, dtype, shape):
    m, k, n = shape
    a, b = _rand((m, k), dtype), _rand((k, n), dtype, 1)
    out = np.full((m, n), np.nan, dtype)
    real.gemm(a, b, out)
    _close(out, _wide(a) @ _wide(b))
    out3 = np.full((2, m, n), np.nan, dtype)
    real.gemm(np.stack([a, a]), np.stack([b, b]), out3)
    _close(out3, np.matmul(_wide(np.stack([a, a])), _wide(np.stack([b, b]))))
    acc = np.ones((m, n), dtype)
    real.gemm(a, b, acc, 2.0, 1.0)
    _close(acc, 1 + 2 * (_wide(a) @ _wide(b)))


def test_loaded_providers_pass_their_check(real):
    assert blas.check_provider(real) is None


# --------------------------------------------------------------------------- the chooser, with fakes

class Fake(blas.NumpyBLAS):
    """NumPy's product under another name; ``wrong`` adds 1 to results, ``raises`` raises."""

    settle_s = 0.0

    def __init__(self, name, wrong=False, raises=False):
        self.name, self.wrong, self.raises, self.pool = name, wrong, raises, "pool-" + name
        self.calls = 0

    def gemm(self, a, b, out, alpha=1.0, beta=0.0):
        self.calls += 1
        if self.raises:
            raise RuntimeError("boom")
        super().gemm(a, b, out, alpha, beta)
        if self.wrong:
            out += 1


# seconds per call each fake takes, by shape class: "skinny" is fastest on skinny products, and so on
SPEED = {"skinny": {"skinny": 1e-4}, "square": {"square": 1e-4}, "wrong": {c: 1e-6 for c in blas.CLASSES},
         "raises": {c: 1e-6 for c in blas.CLASSES}, "numpy": {"batched": 1e-3}}


def _fake_timer(calls):
    def time_gemm(p, a, b, out, repeats):
        calls.append(p.name)
        cls = "batched" if out.ndim == 3 else blas.shape_class(out.shape[0], out.shape[1], a.shape[1])
        return [SPEED.get(p.name, {}).get(cls, 1e-2)] * repeats
    return time_gemm


def isolated_chooser(monkeypatch, tmp_path, providers: dict, time_gemm):
    """A generator for fixtures: PROVIDERS replaced by ``providers``, a private cache directory,
    ``time_gemm`` as the timer, ``auto`` configured; yields the cache directory, then restores."""
    monkeypatch.setattr(blas, "PROVIDERS", {n: (lambda p=p: p) for n, p in providers.items()})
    monkeypatch.setattr(blas, "machine_busy", lambda: False)
    # (the real reading sees whatever else the test machine runs: these tests decide "busy" themselves)
    monkeypatch.setattr(blas, "_others_were_busy", lambda before, wall_s: False)
    monkeypatch.setattr(blas, "_time_gemm", time_gemm)
    monkeypatch.setattr(blas, "PAUSE_S", 0.0)         # (the timer is fake: nothing to rest from)
    saved = tracejit.config.compilation_cache_dir, tracejit.config.blas
    cache = tmp_path / "cache"
    tracejit.config.update("compilation_cache_dir", str(cache))
    tracejit.config.update("blas", "auto")
    blas.reset()
    yield cache
    blas.reset()
    tracejit.config.update("compilation_cache_dir", saved[0])
    tracejit.config.update("blas", saved[1])


@pytest.fixture
def fakes(monkeypatch, tmp_path):
    """PROVIDERS replaced by numpy plus fakes, a private cache directory, a fake timer."""
    numpy = blas.NumpyBLAS()
    numpy.settle_s = 0.0                  # no pause between pools: the timer is fake
    fakes = {"numpy": numpy, "skinny": Fake("skinny"), "square": Fake("square"),
             "wrong": Fake("wrong", wrong=True), "raises": Fake("raises", raises=True)}
    calls = []
    for cache in isolated_chooser(monkeypatch, tmp_path, fakes, _fake_timer(calls)):
        yield fakes, calls, cache


def _choice_files(cache):
    return glob.glob(os.path.join(str(cache), "*", "blas-choice-*.json"))


def test_auto_picks_the_fastest_per_class_and_excludes_bad_providers(fakes):
    providers, calls, _ = fakes
    auto = blas.provider()
    assert auto.name == "auto" and auto.source == "measured"
    for dtype in ("float32", "float64"):
        # (no fake is faster on rank_k or panel products: the tie goes to the first provider, numpy)
        assert auto.table["choice"][dtype] == {"skinny": "skinny", "square": "square", "batched": "numpy",
                                               "rank_k": "numpy", "panel": "numpy"}
    assert set(auto.table["excluded"]) == {"wrong", "raises"}
    assert "error" in auto.table["excluded"]["wrong"] and "boom" in auto.table["excluded"]["raises"]
    assert "wrong" not in calls and "raises" not in calls     # excluded before any timing
    # complex products follow their precision's real choice; each product goes to its class's provider
    assert auto.provider_for(np.complex64, "square").name == "square"
    assert auto.provider_for(np.complex128, "skinny").name == "skinny"
    assert auto.provider_for(np.int32, "square").name == "numpy"
    before = {n: p.calls for n, p in providers.items() if isinstance(p, Fake)}
    for (m, k, n), name in [((8, 100, 100), "skinny"), ((300, 300, 300), "square")]:
        out = np.empty((m, n), np.float32)
        blas.gemm(np.ones((m, k), np.float32), np.ones((k, n), np.float32), out)
        assert providers[name].calls == before[name] + 1
        np.testing.assert_array_equal(out, k)
    out = np.empty((3, 70, 70))
    blas.gemm(np.ones((3, 70, 80)), np.ones((3, 80, 70)), out)      # batched: numpy, no fake called
    assert all(providers[n].calls == before[n] + (n in ("skinny", "square")) for n in before)


def test_another_library_must_beat_the_first_by_the_margin(monkeypatch, tmp_path):
    numpy = blas.NumpyBLAS()
    numpy.settle_s = 0.0
    # "near" is 10% faster than numpy on square products, "far" 50% faster on panel products
    speed = {"near": {"square": 1e-2 / 1.1}, "far": {"panel": 1e-2 / 1.5}}

    def time_gemm(p, a, b, out, repeats):
        cls = "batched" if out.ndim == 3 else blas.shape_class(out.shape[0], out.shape[1], a.shape[1])
        return [speed.get(p.name, {}).get(cls, 1e-2)] * repeats
    assert 1.1 < blas.LIBRARY_MARGIN < 1.5
    for _ in isolated_chooser(monkeypatch, tmp_path, {"numpy": numpy, "near": Fake("near"), "far": Fake("far")},
                              time_gemm):
        choice = blas.provider().table["choice"]["float32"]
        assert choice["square"] == "numpy" and choice["panel"] == "far" and choice["skinny"] == "numpy"


def test_a_library_that_wins_only_without_pauses_is_not_chosen(monkeypatch, tmp_path):
    # "hot" is 2x faster than numpy on batched products timed back to back, but 2x slower when each
    # turn starts after a pause (MKL on the Zen 4 VM); "steady" is 2x faster on panels either way
    def time_gemm(p, a, b, out, repeats):
        cls = "batched" if out.ndim == 3 else blas.shape_class(out.shape[0], out.shape[1], a.shape[1])
        return [{"hot": {"batched": 5e-3}, "steady": {"panel": 5e-3}}.get(p.name, {}).get(cls, 1e-2)] * repeats

    def after_pause(p, a, b, out, repeats):
        return [2e-2 if p.name == "hot" else time_gemm(p, a, b, out, 1)[0]] * repeats
    numpy = blas.NumpyBLAS()
    numpy.settle_s = 0.0
    monkeypatch.setattr(blas, "_after_pause", after_pause)
    for _ in isolated_chooser(monkeypatch, tmp_path, {"numpy": numpy, "hot": Fake("hot"), "steady": Fake("steady")},
                              time_gemm):
        table = blas.provider().table
        for dtype in ("float32", "float64"):
            assert table["gflops"]["hot"][dtype]["batched"] > 1.9 * table["gflops"]["numpy"][dtype]["batched"]
            assert table["choice"][dtype]["batched"] == "numpy" and table["choice"][dtype]["panel"] == "steady"
            confirmed = table["after_pauses"][dtype]
            assert set(confirmed) == {"batched", "panel"}
            assert not confirmed["batched"]["wins"] and confirmed["panel"]["wins"]
            assert confirmed["batched"]["gflops"]["numpy"] > confirmed["batched"]["gflops"]["hot"]


def test_choice_is_stored_and_read_back(fakes, monkeypatch):
    _, calls, cache = fakes
    first = blas.provider("auto")
    files = _choice_files(cache)
    assert len(files) == 1 and os.stat(files[0]).st_mode & 0o077 == 0
    data = json.load(open(files[0]))
    assert data["key"] == blas.host_key() and data["table"]["choice"] == first.table["choice"]
    rates = data["table"]["gflops"]
    assert rates["skinny"]["float32"]["skinny"] > rates["numpy"]["float32"]["skinny"]
    blas.reset()
    n_calls = len(calls)
    second = blas.provider("auto")
    assert second is not first and second.source == files[0] and len(calls) == n_calls   # no timing
    assert second.table["choice"] == first.table["choice"]


@pytest.mark.parametrize("damage", ["garbage", "empty", "json-list", "unknown-provider", "other-key"])
def test_a_damaged_or_foreign_file_is_measured_again(fakes, damage):
    _, calls, cache = fakes
    blas.provider("auto")
    path = _choice_files(cache)[0]
    data = json.load(open(path))
    text = {"garbage": "{not json", "empty": "", "json-list": "[1, 2]"}.get(damage)
    if damage == "unknown-provider":
        data["table"]["choice"]["float32"]["square"] = "vanished"
    if damage == "other-key":
        data["key"]["cpu"]["model"] = "another CPU"
    with open(path, "w") as f:
        f.write(text if text is not None else json.dumps(data))
    blas.reset()
    n_calls = len(calls)
    auto = blas.provider("auto")
    assert auto.source == "measured" and len(calls) > n_calls
    assert json.load(open(path))["table"]["choice"] == auto.table["choice"]       # rewritten whole


def test_a_busy_measurement_is_redone_when_the_machine_is_quiet(fakes, monkeypatch):
    _, calls, cache = fakes
    monkeypatch.setattr(blas, "machine_busy", lambda: True)
    assert blas.provider("auto").table["busy"] is True
    blas.reset()
    n_calls = len(calls)
    assert blas.provider("auto").source != "measured" and len(calls) == n_calls   # still busy: reused
    monkeypatch.setattr(blas, "machine_busy", lambda: False)
    blas.reset()
    auto = blas.provider("auto")
    assert auto.source == "measured" and auto.table["busy"] is False
    assert json.load(open(_choice_files(cache)[0]))["table"]["busy"] is False


def test_cache_off_measures_in_memory_only(fakes):
    _, calls, cache = fakes
    tracejit.config.update("compilation_cache_dir", "off")
    auto = blas.provider("auto")
    assert auto.source == "measured" and not _choice_files(cache)
    n_calls = len(calls)
    assert blas.provider("auto") is auto and len(calls) == n_calls


@pytest.mark.parametrize("name", ["square", "numpy"])
def test_a_forced_provider_serves_everything_without_measuring(fakes, name):
    providers, calls, cache = fakes
    tracejit.config.update("blas", name)
    assert blas.provider() is providers[name]
    out = np.empty((3, 70, 70))
    blas.gemm(np.ones((3, 70, 80)), np.ones((3, 80, 70)), out)
    np.testing.assert_array_equal(out, 80)
    assert not calls and not _choice_files(cache)
    if name == "square":
        assert providers["square"].calls == 1
    rows = blas.report()                    # report() measures, and marks the forced provider's rows
    assert all(r["chosen"] == (r["provider"] == name) for r in rows)


def test_report_rows(fakes):
    rows = blas.report()
    assert {(r["dtype"], r["class"]) for r in rows if r["chosen"]} == {
        (d, c) for d in ("float32", "float64") for c in blas.CLASSES}
    by = {(r["provider"], r["dtype"], r["class"]): r for r in rows}
    assert by["skinny", "float32", "skinny"]["chosen"] and not by["numpy", "float32", "skinny"]["chosen"]
    assert by["wrong", "float64", "square"]["gflops"] is None and "error" in by["wrong", "float64", "square"]["note"]
    text = blas.format_report(rows)
    assert text.splitlines()[0].split() == ["provider", "dtype", "class", "GFLOP/s", "chosen"]
    assert "raised RuntimeError: boom" in text


def test_concurrent_first_use_measures_once(fakes, monkeypatch):
    measured = []
    real_measure = blas.measure

    def counting(providers):
        measured.append(1)
        return real_measure(providers)
    monkeypatch.setattr(blas, "measure", counting)
    got, barrier = [], threading.Barrier(6)

    def worker():
        barrier.wait()
        got.append(blas.provider("auto"))
    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(measured) == 1 and len(got) == 6 and all(g is got[0] for g in got)


def test_only_numpy_is_not_timed(monkeypatch, fakes):
    _, calls, _ = fakes
    monkeypatch.setattr(blas, "PROVIDERS", {"numpy": blas.NumpyBLAS})
    blas.reset()
    auto = blas.provider("auto")
    assert not calls and auto.table["choice"]["float64"]["batched"] == "numpy"


def test_unknown_and_unavailable_providers(fakes, monkeypatch):
    with pytest.raises(ValueError, match="unknown BLAS provider 'fastest'"):
        blas.provider("fastest")
    monkeypatch.setitem(blas.PROVIDERS, "absent", lambda: None)
    with pytest.raises(RuntimeError, match="'absent' is not available"):
        blas.provider("absent")


def test_shape_classes():
    assert blas.shape_class(16, 3072, 768) == "skinny"
    assert blas.shape_class(3072, 16, 768) == "skinny"
    assert blas.shape_class(8, 8, 8, batch=1) == "skinny"
    assert blas.shape_class(64, 4096, 4096) == "skinny"
    assert blas.shape_class(768, 768, 16) == "rank_k"          # a rank-16 update (x.T @ g)
    assert blas.shape_class(65, 65, 64) == "rank_k"
    assert blas.shape_class(65, 65, 65) == "panel"
    assert blas.shape_class(128, 3072, 768) == "panel"
    assert blas.shape_class(3072, 256, 768) == "panel"
    assert blas.shape_class(257, 257, 65) == "square"
    assert blas.shape_class(1000, 1000, 1000, batch=2) == "batched"


def test_every_class_is_timed_on_shapes_of_that_class():
    for cls, shapes in blas.SHAPES.items():
        assert cls in blas.CLASSES and shapes
        for nb, m, k, n in shapes:
            assert blas.shape_class(m, n, k, nb) == cls, (cls, (nb, m, k, n))
    assert set(blas.SHAPES) == set(blas.CLASSES)


def test_host_key_names_cpu_threads_and_libraries():
    key = blas.host_key()
    assert key["format"] == blas.FORMAT and key["threads"] >= 1
    assert set(key["libraries"]) == set(blas.PROVIDERS)
    if os.path.exists("/proc/cpuinfo"):
        assert len(key["cpu"]["flags"]) == 16


def test_doctests(fakes):
    import doctest
    assert doctest.testmod(blas).failed == 0


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="reads /proc/stat (Linux)")
def test_other_processes_cpu_time_during_a_measurement_is_seen():
    import subprocess
    import sys
    import time
    spin = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 1.5: pass"])
    try:
        time.sleep(0.3)                     # (the child is running its loop by now)
        before, t0 = blas._cpu_seconds(), time.perf_counter()
        time.sleep(0.6)
        assert blas._others_were_busy(before, time.perf_counter() - t0)
    finally:
        spin.wait()
    mine = blas._cpu_seconds()[1]
    while blas._cpu_seconds()[1] - mine < 0.05:     # this process's own CPU time is counted as its own
        pass
    assert blas._cpu_seconds()[1] - mine >= 0.05


def test_our_own_cpu_time_is_not_other_processes(monkeypatch):
    # readings (machine CPU seconds, ours): over 1 s of wall time the machine ran 0.6 s of CPU
    readings = iter([(10.6, 1.5), (10.6, 1.0), (10.6, 1.0)])
    monkeypatch.setattr(blas, "_cpu_seconds", lambda: next(readings))
    assert not blas._others_were_busy((10.0, 1.0), 1.0)      # 0.5 s of it ours: others ran 0.1 s
    assert blas._others_were_busy((10.0, 1.0), 1.0)          # none of it ours: others ran 0.6 s
    assert not blas._others_were_busy(None, 1.0)             # no /proc/stat: nothing known


def test_a_measurement_disturbed_by_other_processes_is_marked_busy(fakes, monkeypatch):
    monkeypatch.setattr(blas, "_others_were_busy", lambda before, wall_s: True)
    auto = blas.provider("auto")
    assert auto.source == "measured" and auto.table["busy"] is True


def _same_pool_chooser(monkeypatch, tmp_path, time_gemm):
    """The chooser with NumPy and one fake library on the same thread pool (as on the kernels' team)."""
    numpy = blas.NumpyBLAS()
    numpy.pool, numpy.settle_s = "team", 0.0
    other = Fake("other")
    other.pool = "team"
    return isolated_chooser(monkeypatch, tmp_path, {"numpy": numpy, "other": other}, time_gemm)


def test_providers_on_one_pool_take_turns_on_each_shape(monkeypatch, tmp_path):
    timed = []

    def time_gemm(p, a, b, out, repeats):
        if a.shape != (256, 256):              # (not the warm-up product)
            timed.append((p.name, a.dtype.name, a.shape, b.shape))
        return [1e-3] * repeats
    for _ in _same_pool_chooser(monkeypatch, tmp_path, time_gemm):
        blas.provider()
    per_round = 2 * sum(1 for _ in blas._measured_shapes())
    assert len(timed) == blas.ROUNDS * per_round
    for r in range(blas.ROUNDS):
        turns = timed[r * per_round:(r + 1) * per_round]
        names = [t[0] for t in turns]
        # each shape: one provider's turn, then the other's, in the reverse order every other round
        assert names == (["numpy", "other"] if r % 2 == 0 else ["other", "numpy"]) * (per_round // 2)
        assert all(turns[i][1:] == turns[i + 1][1:] for i in range(0, per_round, 2))


def test_a_load_spike_slows_every_provider_alike(monkeypatch, tmp_path):
    # two equally fast providers; the first quarter of the timed calls run three times slower (another
    # process ran): timed in whole-provider blocks, the spike fell on one provider and made the other
    # look 2x faster
    def timer(calls, spike_until):
        def time_gemm(p, a, b, out, repeats):
            if a.shape == (256, 256):          # the warm-up product
                return [1e-3] * repeats
            calls.append(p.name)
            return [3e-3 if len(calls) <= spike_until else 1e-3] * repeats
        return time_gemm
    counted = []
    for _ in _same_pool_chooser(monkeypatch, tmp_path / "count", timer(counted, 0)):
        blas.provider()
    calls = []
    for _ in _same_pool_chooser(monkeypatch, tmp_path / "spike", timer(calls, len(counted) // 4)):
        table = blas.provider().table
    assert len(calls) == len(counted) and calls[:len(calls) // 4].count("other") > len(calls) // 16
    for dtype in ("float32", "float64"):
        assert set(table["choice"][dtype].values()) == {"numpy"}
        assert table["gflops"]["other"][dtype] == table["gflops"]["numpy"][dtype]
