"""Compile log, recompile explanations, the jit advisor, bucketing, and the CLI."""
import json
import logging
import math
import types
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracejit
from tracejit.buckets import bucketed_jit, next_bucket, pad_to_bucket
from tracejit import compile_log
from tracejit.diagnostics.advisor import (StrategyResult, _break_even, _compare, _recommend, advise,
                                          example_args, parse_aval)


@pytest.fixture
def cfg():
    saved = {k: getattr(tracejit.config, k) for k in
             ("log_compiles", "explain_cache_misses", "recompile_warning_threshold", "compilation_cache_dir")}
    tracejit.config.update("compilation_cache_dir", "off")
    yield tracejit.config
    for k, v in saved.items():
        tracejit.config.update(k, v)


# --------------------------------------------------------------------------- seed functions (module level)

def f(x):
    return x * 2 + np.sin(x)


def g(x):
    return np.exp(f(f(x))) - x


def g_raises(x):
    f(x)
    raise RuntimeError("boom")


def process_sequences(seqs, masks):
    return np.maximum(seqs, 0) * masks[:, :, None]


# --------------------------------------------------------------------------- compile log

def test_log_line(cfg, caplog):
    cfg.update("log_compiles", True)

    def logged_fn(x):
        return np.exp(x) + 1

    with caplog.at_level(logging.WARNING, logger="tracejit"):
        tracejit.jit(logged_fn)(np.ones((4, 3), np.float32))
    line = [r.getMessage() for r in caplog.records if "compiled logged_fn" in r.getMessage()]
    assert len(line) == 1
    text = line[0]
    assert __file__ in text and "(f32[4,3])" in text
    for part in ("trace ", "passes ", "LLVM ", " ms", "1 kernel", "; compiled"):
        assert part in text, (part, text)


def test_log_line_outcome_and_kernels():
    jitted = types.SimpleNamespace(_name="h", _location="m.py:3")
    sig = types.SimpleNamespace(avals=(tracejit.ShapedArray((2,), np.float32),), statics=())
    entry = types.SimpleNamespace(timings={"trace_ms": 1.0, "passes_ms": 2.0, "codegen_ms": 3.0, "llvm_ms": 0.5,
                                           "pass_cse_ms": 9.0, "cache": "persistent-hit"},
                                  executable=types.SimpleNamespace(kernels=[1, 2]))
    line = compile_log.compile_line(jitted, sig, entry)
    assert line == ("compiled h at m.py:3 for (f32[2]): trace 1.0 ms, passes 2.0 ms, codegen 3.0 ms, "
                    "LLVM 0.5 ms; 2 kernels; persistent-cache hit")


def _explain(fun, calls, **jit_kw):
    j = tracejit.jit(fun, **jit_kw)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for args, kwargs in calls:
            j(*args, **kwargs)
    return [str(x.message) for x in w if "recompiling" in str(x.message)], j


def test_explain_cache_misses(cfg):
    cfg.update("explain_cache_misses", True)

    def gx(x, y=None):
        return x * 2

    msgs, j = _explain(gx, [((np.ones((128, 8), np.float32),), {}), ((np.ones((1024, 8), np.float32),), {})])
    assert msgs == [f"recompiling gx at {j._location} because argument x changed f32[128,8] -> f32[1024,8]"]
    assert j._location.startswith(__file__)
    msgs, _ = _explain(gx, [((np.ones(3, np.float32),), {}), ((np.ones(3, np.float64),), {})])
    assert "argument x changed f32[3] -> f64[3]" in msgs[0]
    msgs, _ = _explain(gx, [((np.float64(1.0),), {}), ((1.0,), {})])
    assert "weak type" in msgs[0]
    msgs, _ = _explain(lambda x, n: x * n, [((np.ones(2), 2), {}), ((np.ones(2), 3), {})], static_argnums=1)
    assert "static argument 1 changed 2 -> 3" in msgs[0]
    msgs, _ = _explain(lambda t: t[0], [(((np.ones(2), np.ones(2)),), {}), (((np.ones(2),),), {})])
    assert "argument structure changed" in msgs[0]


def test_recompile_warning_names_varying_argument(cfg):
    cfg.update("recompile_warning_threshold", 3)

    def varying(x, w):
        return x.sum(0) + w

    j = tracejit.jit(varying)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for n in (5, 9, 17, 33, 40):
            j(np.ones((n, 4)), np.ones(4))
    hits = [x for x in w if "distinct signatures" in str(x.message)]
    assert len(hits) == 1
    msg = str(hits[0].message)
    assert "varying" in msg and "argument x varies in dim 0" in msg and "w " not in msg.split("sizes seen")[0]
    assert "5, 9, 17, 33" in msg and "buckets={'x': (0, (8, 16, 32, 64))}" in msg and "pad_to_bucket" in msg
    assert hits[0].filename == __file__   # attributed to the user's call, not tracejit internals


def test_varying_arguments_dtype_and_statics(cfg):
    j = tracejit.jit(lambda x, k: x * k, static_argnums=1)
    j(np.ones(2, np.float32), 1)
    j(np.ones(2, np.float64), 2)
    found = compile_log.varying_arguments(j)
    assert ("x", None, ["f32[2]", "f64[2]"]) in found
    assert any(name == "static argument 1" for name, _, _ in found)


def test_collect_compiles():
    with compile_log.collect_compiles() as seen:
        tracejit.jit(lambda x: x - 1)(np.zeros(3))
    with compile_log.collect_compiles() as nothing:
        pass
    assert len(seen) == 1 and nothing == []
    assert "llvm_ms" in seen[0][2].timings or "compile_ms" in seen[0][2].timings


# --------------------------------------------------------------------------- advisor

def test_advise_seed_example(cfg):
    x = np.random.default_rng(1).standard_normal((64, 48)).astype(np.float32)
    a = advise(g, x, inner=[f], calls=500, budget_s=0.02, min_calls=3)
    assert [s.key for s in a.strategies] == ["none", "outer", "inner", "both"]
    assert [s.name for s in a.strategies] == ["no jit", "jit g", "jit f", "jit g + f"]
    assert g.__globals__["f"] is f                     # restored
    none = a["none"]
    assert none.compiles == 0 and none.compile_ms == 0
    assert a["outer"].compiles == 1 and a["inner"].compiles == 1 and a["both"].compiles == 1
    for s in a.strategies:
        assert s.matches, s
        assert s.first_call_ms > 0 and s.steady_ms > 0 and len(s.samples) >= 3
        assert s.steady_ms == pytest.approx(float(np.median(s.samples)))
    for s in a.strategies[1:]:
        assert s.compile_ms > 0 and s.first_call_ms >= s.compile_ms
        be = s.break_even_calls
        if be != math.inf:   # at the break-even count jit is no slower; one call earlier it was
            assert s.total_ms(be) <= none.total_ms(be) + 1e-9
            if be > 1:
                assert s.total_ms(be - 1) > none.total_ms(be - 1)
    best = min(s.total_ms(500) for s in a.strategies)
    assert a.recommended.total_ms(500) <= best * 1.05
    text = str(a)
    assert "jit g + f" in text and "recommendation:" in text and a.reason in text
    d = json.loads(json.dumps(a.as_dict(), default=str))
    assert d["recommended"] == a.recommended.key and len(d["strategies"]) == 4


def test_advise_from_shapes_and_without_inner(cfg):
    a = advise(lambda x, y: x @ y + 1, "f32[8,4]", tracejit.ShapeDtypeStruct((4, 3), np.float32),
               budget_s=0.01, min_calls=2)
    assert [s.key for s in a.strategies] == ["none", "outer"]
    assert a.signature == "(f32[8,4], f32[4,3])"


def test_advise_restores_on_error_and_checks_inner(cfg):
    with pytest.raises(RuntimeError, match="boom"):
        advise(g_raises, np.ones(3), inner=[f], budget_s=0.01)
    assert g_raises.__globals__["f"] is f

    def not_called(x):
        return x

    with pytest.raises(ValueError, match="not_called is not a global or closure variable of g"):
        advise(g, np.ones(3), inner=[not_called])
    with pytest.raises(TypeError, match="already jitted"):
        advise(g, np.ones(3), inner=[tracejit.jit(f)])


def test_advise_closure_inner(cfg):
    def local_inner(x):
        return np.tanh(x) * 3

    def outer(x):
        return local_inner(x) + local_inner(x * 2)

    a = advise(outer, np.linspace(-1, 1, 50), inner=[local_inner], budget_s=0.01, min_calls=2)
    assert a["inner"].compiles == 1 and all(s.matches for s in a.strategies)
    assert outer.__closure__[0].cell_contents is local_inner


def test_recommendation_logic():
    def s(key, first, steady):
        return StrategyResult(key, key, first_call_ms=first, steady_ms=steady)

    none, outer, inner = s("none", 1.0, 10.0), s("outer", 101.0, 1.0), s("inner", 60.0, 5.0)
    for r in (outer, inner):
        r.break_even_calls = _break_even(r, none)
    assert outer.break_even_calls == 1 + math.ceil(100 / 9) == 13
    assert inner.break_even_calls == 1 + math.ceil(59 / 5) == 13
    assert _recommend([none, outer, inner], 5)[0] is none
    choice, reason = _recommend([none, outer, inner], 1000)
    assert choice is outer and "pays off after 13 calls" in reason
    slower = s("outer", 50.0, 20.0)
    slower.break_even_calls = _break_even(slower, none)
    assert slower.break_even_calls == math.inf
    choice, reason = _recommend([none, slower], 10 ** 6)
    assert choice is none and "never pays off" in reason
    assert _break_even(s("outer", 0.5, 1.0), none) == 1.0


def test_compare_outputs():
    a = np.array([1.0, np.nan, np.inf], np.float32)
    assert _compare(a, a.copy())[0]
    assert not _compare(a, np.array([1.1, np.nan, np.inf], np.float32))[0]
    assert not _compare(a, np.array([1.0, 0.0, np.inf], np.float32))[0]
    assert not _compare((a,), [a])[0]
    assert _compare(np.arange(3), np.arange(3))[0] and not _compare(np.arange(3), np.arange(1, 4))[0]


def test_parse_aval_and_example_args():
    assert parse_aval("f32[1024,768]").shape == (1024, 768)
    assert parse_aval(" float64[ 3 , 4 ] ").dtype == np.float64
    assert parse_aval("i64[]").shape == () and parse_aval("bool[2]").dtype == np.bool_
    for bad in ("f32", "f32[a]", "nope[3]", "[3]"):
        with pytest.raises(ValueError):
            parse_aval(bad)
    arrs = example_args(["i32[5]", "c64[2]", "bool[3]", np.arange(2), tracejit.ShapeDtypeStruct((2,), np.uint8)])
    assert [a.dtype for a in arrs] == [np.int32, np.complex64, np.bool_, np.arange(2).dtype, np.uint8]
    assert np.array_equal(example_args(["f32[4]"])[0], example_args(["f32[4]"])[0])   # seeded


# --------------------------------------------------------------------------- bucketing

@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex64])
def test_pad_to_bucket_dtypes(dtype):
    x = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    p, m = pad_to_bucket(x, 1, (2, 6, 8))
    assert p.shape == (3, 6) and p.dtype == x.dtype
    assert np.array_equal(p[:, :4], x) and not p[:, 4:].any()
    assert m.dtype == np.bool_ and m.tolist() == [True] * 4 + [False] * 2


def test_pad_to_bucket_cases():
    x = np.arange(10.0).reshape(2, 5)
    p, m = pad_to_bucket(x.T, -1, [4, 2])            # non-contiguous view, negative axis, unsorted buckets
    assert p.shape == (5, 2) and np.array_equal(p, x.T) and m.all()
    p, m = pad_to_bucket(x[:, ::2], 1, (4,), pad_value=-1)
    assert np.array_equal(p, [[0, 2, 4, -1], [5, 7, 9, -1]])
    p, m = pad_to_bucket(np.zeros((0, 3)), 0, (1, 2))
    assert p.shape == (1, 3) and m.tolist() == [False]
    with pytest.raises(ValueError, match="exceeds the largest bucket 8"):
        pad_to_bucket(np.ones(9), 0, (4, 8))
    with pytest.raises(ValueError, match="out of bounds"):
        pad_to_bucket(np.ones(3), 1, (4,))
    with pytest.raises(ValueError, match="scalar"):
        pad_to_bucket(np.float64(1), 0, (4,))
    with pytest.raises(ValueError, match="positive"):
        pad_to_bucket(np.ones(3), 0, ())
    assert next_bucket(5, (8, 4, 16)) == 8


@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 40), buckets=st.lists(st.integers(1, 50), min_size=1, max_size=5))
def test_pad_to_bucket_property(n, buckets):
    x = np.arange(n, dtype=np.float64) + 1
    if n > max(buckets):
        with pytest.raises(ValueError, match=f"largest bucket {max(buckets)}"):
            pad_to_bucket(x, 0, buckets)
        return
    p, m = pad_to_bucket(x, 0, buckets)
    assert len(p) == min(b for b in buckets if b >= n)
    assert np.array_equal(p[m], x) and not p[~m].any()


def test_pad_to_bucket_under_jit():
    @tracejit.jit
    def masked_mean(x):
        p, m = pad_to_bucket(x, 1, (8, 16))
        return (p * m).sum(1) / m.sum(), p

    x = np.random.default_rng(0).standard_normal((3, 5))
    mean, p = masked_mean(x)
    assert p.shape == (3, 8)
    np.testing.assert_allclose(mean, x.mean(1))


def test_bucketed_jit_seed_example():
    rng = np.random.default_rng(0)
    sizes = (8, 16, 32)
    fb = bucketed_jit(process_sequences, {"seqs": (1, sizes), "masks": (1, sizes)})
    lengths = [3, 5, 7, 8, 9, 12, 17, 30, 31, 32]
    for n in lengths:
        seqs = rng.standard_normal((2, n, 4)).astype(np.float32)
        masks = (rng.random((2, n)) < 0.7).astype(np.float32)
        out = fb(seqs, masks)
        assert out.shape == (2, n, 4)
        np.testing.assert_array_equal(out, process_sequences(seqs, masks))
    assert len(fb.signatures_compiled) == len(sizes)
    with pytest.raises(ValueError, match="argument 'seqs' along axis 1: length 33 exceeds the largest bucket 32"):
        fb(np.ones((2, 33, 4), np.float32), np.ones((2, 33), np.float32))
    assert fb.lower(np.ones((1, 3, 4), np.float32), np.ones((1, 3), np.float32)).in_avals[0].shape == (1, 8, 4)


def test_bucketed_jit_reductions_and_options():
    def masked_stats(x, mask, scale):
        m = mask.astype(x.dtype)
        total = (x * m[:, None]).sum(0)
        mx = np.where(mask[:, None], x, -np.inf).max(0)
        return total / m.sum() * scale, mx, x * scale

    fb = bucketed_jit(masked_stats, {0: (0, (4, 8)), "mask": (0, (4, 8))}, static_argnums=2)
    for n in (1, 3, 5, 6):
        x = np.arange(n * 2, dtype=np.float64).reshape(n, 2) - 3
        mean, mx, scaled = fb(x, np.ones(n, bool), 2.0)
        np.testing.assert_allclose(mean, x.mean(0) * 2)
        np.testing.assert_array_equal(mx, x.max(0))
        assert scaled.shape == (n, 2)   # sliced back along axis 0; the reductions were not padded
    assert len(fb.signatures_compiled) == 2
    fb(np.ones((3, 2)), np.ones(3, bool), 3.0)            # a new static value compiles again
    assert len(fb.signatures_compiled) == 3
    with pytest.raises(ValueError, match="'nope' is not a parameter"):
        bucketed_jit(masked_stats, {"nope": (0, (4,))})
    with pytest.raises(ValueError, match="static"):
        bucketed_jit(masked_stats, {"scale": (0, (4,))}, static_argnames="scale")
    with pytest.raises(TypeError, match="spec"):
        bucketed_jit(masked_stats, {"x": 4})
    with pytest.raises(ValueError, match="index 5"):
        bucketed_jit(masked_stats, {5: (0, (4,))})


def test_bucketed_jit_pytree_argument():
    def summed(xs):
        return [x * 2 for x in xs]

    fb = bucketed_jit(summed, {"xs": (0, (4,))})
    out = fb([np.ones(2), np.ones(3)])
    assert [o.shape for o in out] == [(4,), (4,)]   # two real lengths padded to 4: ambiguous, not sliced
    out = fb([np.ones(3), np.ones(3)])
    assert [o.shape for o in out] == [(3,), (3,)]


def test_jit_with_buckets_is_bucketed_jit():
    """tracejit.jit(f, buckets=...) (also as a decorator) pads like bucketed_jit; without buckets it is api.jit."""
    from tracejit.api import Jitted
    from tracejit.buckets import BucketedJitted
    f = tracejit.jit(lambda x, k: x * k, buckets={"x": (0, (4, 8))}, static_argnums=1, keep_unused=True)
    assert isinstance(f, BucketedJitted)
    for n in (1, 3, 4, 6):
        np.testing.assert_array_equal(f(np.ones(n), 2.0), np.full(n, 2.0))
    assert len(f.signatures_compiled) == 2

    @tracejit.jit(buckets={0: (0, (4,))})
    def g(x):
        return x + 1
    assert isinstance(g, BucketedJitted) and g(np.zeros(3)).shape == (3,)
    assert isinstance(tracejit.jit(lambda x: x), Jitted)
    assert isinstance(tracejit.jit(static_argnums=0)(lambda x: x), Jitted)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        tracejit.jit(lambda x: x, buckets={"x": (0, (4,))}, bogus=1)


# --------------------------------------------------------------------------- CLI

def test_cli_advise_and_report(cfg, tmp_path, capsys):
    from tracejit.__main__ import main
    mod = tmp_path / "cli_mod.py"
    mod.write_text("import numpy as np\n\ndef f(x):\n    return x * 2 + np.sin(x)\n\n"
                   "def g(x):\n    return np.exp(f(f(x))) - x\n")
    main(["advise", f"{mod}:g", "--arg", "f32[16,8]", "--inner", "f", "--calls", "10", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert [s["key"] for s in data["strategies"]] == ["none", "outer", "inner", "both"]
    assert data["calls"] == 10 and data["signature"] == "(f32[16,8])"
    out = tmp_path / "g.html"
    main(["report", f"{mod}:g", "--arg", "f32[16,8]", "--out", str(out)])
    assert "wrote" in capsys.readouterr().out and "<svg" in out.read_text()
    with pytest.raises(SystemExit, match="cannot parse"):
        main(["advise", f"{mod}:g", "--arg", "f32(3)"])
    with pytest.raises(SystemExit, match="no attribute"):
        main(["advise", f"{mod}:missing", "--arg", "f32[3]"])
