"""Convolutions whose input windows are read in place (ops/conv_windows.py, backends/cpu/conv_gemm.py):
the compiled step against a float64 NumPy convolution on random geometries (1-3 spatial dims,
strides, dilations, padding and crops, layouts, feature counts across vector widths), with
non-finite values, on one and two threads (bit-identical: lines are independent), inside a loop
body and the native entry, and the gradients that go through it."""
import numpy as np
import pytest

import tracejit
from tracejit import lax
from tracejit.compiler.plan import NumpyStep, WindowStep
from tracejit.ops import conv_windows


def _padded(x, padding, lhs_dil):
    """``x`` (N, spatial..., C) in float64, dilated by ``lhs_dil`` and padded (negative: cropped),
    with a mask of its real (not padding, not hole) elements."""
    x = x.astype(np.float64)
    n, *in_sizes, c = x.shape
    shape = [n] + [(s - 1) * d + 1 if s else 0 for s, d in zip(in_sizes, lhs_dil)] + [c]
    xd, real = np.zeros(shape), np.zeros(shape, bool)
    holes = (slice(None),) + tuple(slice(None, None, d) for d in lhs_dil)
    xd[holes], real[holes] = x, True
    pads = [(0, 0)] + list(padding) + [(0, 0)]
    crop = tuple(slice(max(-lo, 0), xd.shape[a] - max(-hi, 0)) for a, (lo, hi) in enumerate(pads))
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
    return np.pad(xd[crop], grow), np.pad(real[crop], grow)


def _taps(xp, window, strides, rhs_dil):
    """``(tap, index of its window)`` for each tap, and the output's spatial sizes."""
    out_sizes = [max(0, (xp.shape[1 + a] - ((k - 1) * d + 1)) // s + 1) for a, (k, s, d) in
                 enumerate(zip(window, strides, rhs_dil))]
    taps = [(tap, (slice(None),) + tuple(slice(k * d, k * d + (m - 1) * s + 1, s) if m else slice(0, 0)
                                         for k, d, s, m in zip(tap, rhs_dil, strides, out_sizes)))
            for tap in np.ndindex(*window)]
    return taps, out_sizes


def conv_ref(x, w, strides, padding, lhs_dil, rhs_dil):
    """Channels-last (N, spatial..., C) by (spatial..., I, O) in float64: each output position's sum
    over the taps on real (not padding, not hole) input elements (an infinite tap over padding adds
    nothing, as in XLA)."""
    xp, real = _padded(x, padding, lhs_dil)
    w = w.astype(np.float64)
    taps, out_sizes = _taps(xp, w.shape[:-2], strides, rhs_dil)
    out = np.zeros([x.shape[0]] + out_sizes + [w.shape[-1]])
    for tap, index in taps:
        with np.errstate(invalid="ignore"):
            terms = np.where(real[index][..., None], xp[index][..., None] * w[tap], 0.0)
        out += terms.sum(axis=-2)
    return out


def wgrad_ref(x, g, w_shape, strides, padding, lhs_dil, rhs_dil):
    """The kernel's cotangent of conv_ref for output cotangent ``g`` (finite operands), in float64:
    per tap, its windows of the padded input times ``g``, summed over positions."""
    xp, _ = _padded(x, padding, lhs_dil)
    taps, _ = _taps(xp, w_shape[:-2], strides, rhs_dil)
    out = np.zeros(w_shape)
    for tap, index in taps:
        out[tap] = xp[index].reshape(-1, w_shape[-2]).T @ g.astype(np.float64).reshape(-1, w_shape[-1])
    return out


def _plan_has_step(compiled, kind="conv"):
    """The compiled plan (loop and branch bodies included) holds a window step of ``kind``."""
    def steps(plan):
        for s in plan.steps:
            yield s
            if isinstance(s, NumpyStep):
                for body in getattr(s, "bodies", None) or ():
                    yield from steps(body.plan)
    return any(isinstance(s, WindowStep) and s.kind == kind for s in steps(compiled.executable.plan))


def _random_case(rng, dtype):
    nsp = int(rng.choice([1, 2, 2, 3]))
    n = int(rng.integers(1, 3))
    c = int(rng.choice([1, 2, 3, 6, 8, 9, 16, 19]))      # (from one feature: a window line is one run)
    o = int(rng.choice([1, 5, 16, 17, 40]))
    in_sizes = [int(rng.integers(3, 9 if nsp < 3 else 5)) for _ in range(nsp)]
    window = [int(rng.integers(1, 4)) for _ in range(nsp)]
    strides = tuple(int(rng.choice([1, 1, 2, 3])) for _ in range(nsp))
    rhs_dil = tuple(int(rng.choice([1, 1, 2])) for _ in range(nsp))
    lhs_dil = tuple(int(rng.choice([1, 1, 1, 2])) for _ in range(nsp))
    padding = tuple((int(rng.integers(-1, 3)), int(rng.integers(-1, 3))) for _ in range(nsp))
    x = rng.standard_normal((n, *in_sizes, c)).astype(dtype)
    w = rng.standard_normal((*window, c, o)).astype(dtype)
    return x, w, strides, padding, lhs_dil, rhs_dil


def _spec(nsp):
    sp = "HWD"[:nsp]
    return ("N" + sp + "C", sp + "IO", "N" + sp + "C")


def test_layouts_other_than_channels_last():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 12, 7, 6)).astype(np.float32)          # NCHW
    w = rng.standard_normal((10, 12, 3, 2)).astype(np.float32)         # OIHW
    f = tracejit.jit(lambda a, b: lax.conv_general_dilated(a, b, (2, 1), "SAME", (1, 1), (1, 2),
                                                           dimension_numbers=("NCHW", "OIHW", "NCHW")))
    assert _plan_has_step(f.lower(x, w).compile())
    got = np.asarray(f(x, w))
    eager = np.asarray(lax.conv_general_dilated(x, w, (2, 1), "SAME", (1, 1), (1, 2),
                                                dimension_numbers=("NCHW", "OIHW", "NCHW")))
    assert got.shape == eager.shape
    np.testing.assert_allclose(got, eager, rtol=1e-5, atol=1e-5)


def test_non_finite_values():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 6, 6, 8))
    w = rng.standard_normal((3, 3, 8, 4))
    x[0, 2, 3, 1] = np.nan
    x[0, 4, 0, 5] = np.inf
    w_bad = w.copy()
    w_bad[0, 0, 2, 1] = np.inf          # over the padding: adds nothing there (the exact path)
    f = tracejit.jit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME",
                                                           dimension_numbers=("NHWC", "HWIO", "NHWC")))
    for xx, ww in ((x, w), (np.nan_to_num(x, nan=0.0, posinf=0.0), w_bad)):
        want = conv_ref(xx, ww, (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1))
        got = np.asarray(f(xx, ww))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        finite = np.isfinite(want)
        np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=1e-12)


def test_one_and_two_threads_give_identical_bits():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 30, 30, 16)).astype(np.float32)
    w = rng.standard_normal((3, 3, 16, 24)).astype(np.float32)
    results = []
    saved = tracejit.config.num_threads
    try:
        for threads in (1, 2):
            tracejit.config.update("num_threads", threads)
            f = tracejit.jit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME",
                                                                   dimension_numbers=("NHWC", "HWIO", "NHWC")))
            results.append(np.asarray(f(x, w)))
    finally:
        tracejit.config.update("num_threads", saved)
    np.testing.assert_array_equal(results[0], results[1])
    want = conv_ref(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1))
    np.testing.assert_allclose(results[0], want, rtol=1e-4, atol=1e-4)


def test_in_a_loop_body_and_in_the_native_entry():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 5, 5, 8)).astype(np.float32)
    w = (rng.standard_normal((3, 3, 8, 8)) / 8).astype(np.float32)

    def conv(a):
        return lax.conv_general_dilated(a, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    small = tracejit.jit(conv)
    compiled = small.lower(x).compile()
    assert _plan_has_step(compiled) and compiled.executable.native_entry is not None
    looped = tracejit.jit(lambda a: lax.fori_loop(0, 3, lambda i, v: np.float32(0.5) * conv(v), a))
    want, v = conv_ref(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1)), x.astype(np.float64)
    np.testing.assert_allclose(np.asarray(small(x)), want, rtol=1e-5, atol=1e-5)
    for _ in range(3):
        v = 0.5 * conv_ref(v, w, (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1))
    np.testing.assert_allclose(np.asarray(looped(x)), v, rtol=1e-4, atol=1e-5)


def test_gradients_through_the_windows_match_eager_ones():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 7, 6, 9))
    w = rng.standard_normal((3, 2, 9, 5))

    def loss(a, b):
        y = lax.conv_general_dilated(a, b, (1, 1), ((1, 1), (0, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return (np.float64(0.5) * y * y).sum()
    g_eager = tracejit.grad(loss, argnums=(0, 1))(x, w)
    g_jit = tracejit.jit(tracejit.grad(loss, argnums=(0, 1)))(x, w)
    for a, b in zip(g_jit, g_eager):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("dilation", [1, 2])
def test_single_feature_inputs_read_windows_in_place(dilation):
    # one input feature: each window line (or, dilated, each tap) is one run of the contraction
    rng = np.random.default_rng(dilation)
    x = rng.standard_normal((3, 9, 11, 1)).astype(np.float32)
    w = rng.standard_normal((3, 4, 1, 5)).astype(np.float32)
    f = tracejit.jit(lambda a, b: lax.conv_general_dilated(a, b, (1, 2), "VALID", rhs_dilation=(1, dilation),
                                                           dimension_numbers=("NHWC", "HWIO", "NHWC")))
    assert _plan_has_step(f.lower(x, w).compile())
    want = conv_ref(x.astype(np.float64), w.astype(np.float64), (1, 2), ((0, 0), (0, 0)), (1, 1), (1, dilation))
    np.testing.assert_allclose(np.asarray(f(x, w)), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("features, window, reads", [(7, (1, 1), False), (8, (1, 1), True), (1, (1, 2), True)])
def test_one_tap_windows_need_more_features(features, window, reads):
    # a one-tap window's im2col is the input itself: it reads windows in place only from
    # MIN_FEATURES_ONE_TAP features on; any wider window from one feature on
    rng = np.random.default_rng(features)
    x = rng.standard_normal((2, 5, 6, features)).astype(np.float32)
    w = rng.standard_normal((*window, features, 3)).astype(np.float32)
    f = tracejit.jit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "VALID",
                                                           dimension_numbers=("NHWC", "HWIO", "NHWC")))
    assert _plan_has_step(f.lower(x, w).compile()) == reads
    want = conv_ref(x.astype(np.float64), w.astype(np.float64), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1))
    np.testing.assert_allclose(np.asarray(f(x, w)), want, rtol=1e-5, atol=1e-5)


def test_the_primitive_eagerly_and_its_doctest():
    import doctest
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 9, 8, 10))
    w = rng.standard_normal((2, 3, 10, 3))
    got = np.asarray(conv_windows.conv_windows(x, w, (2, 1), (1, 2)))
    want = conv_ref(x, w, (2, 1), ((0, 0), (0, 0)), (1, 1), (1, 2))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert doctest.testmod(conv_windows).failed == 0


# --------------------------------------------------------------------------- the kernel's cotangent

def test_kernel_cotangent_derivatives_and_batches_match_the_im2col_form(monkeypatch):
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 7, 6, 9))
    w = rng.standard_normal((3, 2, 9, 5))

    def loss(a, b):
        y = lax.conv_general_dilated(a, b, (2, 1), ((1, 1), (0, 1)), (1, 1), (1, 2),
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return (np.float64(0.5) * y * y).sum()

    def derivatives():
        grad_w = tracejit.grad(loss, argnums=1)
        return [tracejit.grad(lambda b: grad_w(x, b).sum())(w),                 # through dw, in w
                tracejit.grad(lambda a: grad_w(a, w).sum())(x),                 # through dw, in x
                tracejit.jvp(lambda b: grad_w(x, b), (w,), (np.ones_like(w),))[1],
                tracejit.vmap(lambda a: grad_w(a, w))(np.stack([x, 2 * x])),
                tracejit.jit(tracejit.grad(lambda b: grad_w(x, b).sum()))(w)]
    windows = derivatives()
    monkeypatch.setattr(conv_windows, "MIN_FEATURES", 10 ** 9)            # the im2col form throughout
    im2col = derivatives()
    for a, b in zip(windows, im2col):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-11, atol=1e-11)


# --------------------------------------------------------------------------- class fuzzer

def _random_layout(rng, nsp):
    """Random dimension-number strings for ``nsp`` spatial dims (and the permutations taking the
    channels-last operands to them)."""
    sp = "HWD"[:nsp]
    lhs = "".join(rng.permutation(list("N" + sp + "C")).tolist())
    out = "".join(rng.permutation(list("N" + sp + "C")).tolist())
    # (the kernel's spatial letters keep their order: it is the order strides and pads are given in)
    rhs = list(sp)
    for letter in "IO":
        rhs.insert(int(rng.integers(0, len(rhs) + 1)), letter)
    return lhs, "".join(rhs), out


def _to_layout(a, canonical, spec):
    """``a`` laid out as ``canonical`` (e.g. 'NHWC'), transposed to ``spec``'s letter order."""
    return np.ascontiguousarray(np.transpose(a, [canonical.index(ch) for ch in spec]))


@pytest.mark.parametrize("dtype, chunk_bytes", [(np.float32, None), (np.float64, None), (np.float32, 1),
                                                (np.float64, 700)])
def test_random_convolutions_and_cotangents(dtype, chunk_bytes, monkeypatch):
    # The class fuzzer of convolutions that read their windows in place: forward, kernel and input
    # cotangents under jit, random geometry and layouts, against float64 references (forward,
    # kernel cotangent) and the im2col form (input cotangent). CONV_WINDOWS_FUZZ_SEEDS=500 runs a
    # campaign. ``chunk_bytes``: the kernel cotangent's chunks of output lines made small (one line
    # each; a few lines, with shorter last chunks), as they are at real sizes.
    import os
    from tracejit.backends.cpu import conv_gemm
    if chunk_bytes is not None:
        monkeypatch.setattr(conv_gemm, "WGRAD_CHUNK_BYTES", chunk_bytes)
    seeds = int(os.environ.get("CONV_WINDOWS_FUZZ_SEEDS", "14"))
    tol = 3e-5 if dtype == np.float32 else 1e-12
    taken = 0
    for seed in range(seeds):
        rng = np.random.default_rng([77, seed])
        x, w, strides, padding, lhs_dil, rhs_dil = _random_case(rng, dtype)
        w = w[..., :int(rng.integers(1, w.shape[-1] + 1))]
        nsp = x.ndim - 2
        y = conv_ref(x, w, strides, padding, lhs_dil, rhs_dil)
        if y.size == 0:
            continue
        g = rng.standard_normal(y.shape).astype(dtype)
        sp = "HWD"[:nsp]
        lhs_spec, rhs_spec, out_spec = _random_layout(rng, nsp)
        xl, wl, gl = _to_layout(x, "N" + sp + "C", lhs_spec), _to_layout(w, sp + "IO", rhs_spec), \
            _to_layout(g, "N" + sp + "C", out_spec)

        def conv(a, b):
            return lax.conv_general_dilated(a, b, strides, padding, lhs_dil, rhs_dil,
                                            dimension_numbers=(lhs_spec, rhs_spec, out_spec))

        def all_three(a, b, gg):
            out, pullback = tracejit.vjp(conv, a, b)
            return (out, *pullback(gg))
        jitted = tracejit.jit(all_three)
        got_y, got_dx, got_dw = (np.asarray(v) for v in jitted(xl, wl, gl))
        compiled = jitted.lower(xl, wl, gl).compile()
        taken += _plan_has_step(compiled, "conv") and _plan_has_step(compiled, "conv_wgrad")
        want_y = _to_layout(y, "N" + sp + "C", out_spec)
        scale_y = _to_layout(conv_ref(np.abs(x), np.abs(w), strides, padding, lhs_dil, rhs_dil), "N" + sp + "C", out_spec)
        assert np.all(np.abs(got_y - want_y) <= tol * (scale_y + 1)), ("forward", seed)
        want_dw = _to_layout(wgrad_ref(x, g, w.shape, strides, padding, lhs_dil, rhs_dil), sp + "IO", rhs_spec)
        scale_dw = _to_layout(wgrad_ref(np.abs(x), np.abs(g), w.shape, strides, padding, lhs_dil, rhs_dil),
                              sp + "IO", rhs_spec)
        assert np.all(np.abs(got_dw - want_dw) <= tol * (scale_dw + 1)), ("kernel cotangent", seed)
        with monkeypatch.context() as m:
            m.setattr(conv_windows, "MIN_FEATURES", 10 ** 9)
            want_dx = np.asarray(tracejit.vjp(conv, xl.astype(np.float64), wl.astype(np.float64))[1](
                gl.astype(np.float64))[0])
        assert got_dx.shape == want_dx.shape
        assert np.allclose(got_dx, want_dx, rtol=tol * 10, atol=tol * 10 * (np.abs(want_dx).max() + 1)), \
            ("input cotangent", seed)
    assert taken >= seeds // 2        # (the others had an empty result: no product at all)


@pytest.mark.parametrize("out_sizes, batch, chunk_bytes", [((5, 7, 3), 2, 2 * 3 * 4 * 4), ((9,), 7, 3 * 9 * 4 * 4),
                                                             ((6, 4), 1, 1), ((6, 4), 3, 10 ** 6)])
def test_kernel_cotangent_chunks_cover_every_line_once(out_sizes, batch, chunk_bytes, monkeypatch):
    """Chunks are runs of lines in order, never across the second-to-last output axis (the batch in
    1-D), at most ``WGRAD_CHUNK_BYTES`` of ``g`` unless one line is more; one or two layouts."""
    from tracejit.backends.cpu import conv_gemm
    monkeypatch.setattr(conv_gemm, "WGRAD_CHUNK_BYTES", chunk_bytes)
    nsp = len(out_sizes)
    conv = conv_gemm.ConvWeightGrad(np.dtype(np.float32), batch, tuple(s + 2 for s in out_sizes), 8, (3,) * nsp,
                                    (1,) * nsp, (1,) * nsp, tuple(out_sizes), 4)
    chunks = conv.chunks()
    assert [line for first, n in chunks for line in range(first, first + n)] == list(range(conv.lines))
    run = out_sizes[-2] if nsp > 1 else batch
    line_bytes = out_sizes[-1] * 4 * 4
    assert all(first // run == (first + n - 1) // run for first, n in chunks)
    assert all(n * line_bytes <= max(chunk_bytes, line_bytes) for _, n in chunks)
    starts = conv.line_starts()
    layouts = {tuple(s - starts[first] for s in starts[first:first + n]) for first, n in chunks}
    assert len(layouts) == (1 if run % max(1, min(run, chunk_bytes // line_bytes)) == 0 else 2)


@pytest.mark.parametrize("x_shape, window, strides, dilation, out_features, lines_per_chunk", [
    ((2, 9, 6, 19), (3, 3), (1, 1), (1, 1), 17, 3),       # runs of 7 lines: chunks of 3, 3 and 1
    ((5, 11, 8), (3,), (2,), (1,), 5, 2),                 # 1-D: a run is the batch (5 lines)
    ((1, 4, 9, 7, 9), (2, 3, 2), (1, 2, 1), (2, 1, 1), 16, 2),
    ((3, 8, 8, 16), (3, 3), (1, 1), (1, 1), 40, 1)])
def test_kernel_cotangent_in_chunks_matches_float64(x_shape, window, strides, dilation, out_features,
                                                     lines_per_chunk, monkeypatch):
    """The compiled kernel cotangent, its positions summed in chunks of a few lines (with a shorter
    last chunk of a run), against the float64 sum over all positions."""
    from tracejit.backends.cpu import conv_gemm
    rng = np.random.default_rng(5)
    x = rng.standard_normal(x_shape).astype(np.float32)
    out_sizes = [(s - (k - 1) * d - 1) // st + 1 for s, k, st, d in zip(x_shape[1:-1], window, strides, dilation)]
    g = rng.standard_normal((x_shape[0], *out_sizes, out_features)).astype(np.float32)
    monkeypatch.setattr(conv_gemm, "WGRAD_CHUNK_BYTES", lines_per_chunk * out_sizes[-1] * out_features * 4)
    fn = tracejit.jit(lambda a, b: conv_windows.conv_windows_wgrad(a, b, window, strides, dilation))
    assert _plan_has_step(fn.lower(x, g).compile(), "conv_wgrad")
    got = np.asarray(fn(x, g))
    want, = conv_windows._wgrad_impl(x.astype(np.float64), g.astype(np.float64), window=window, strides=strides,
                                     dilation=dilation)
    scale, = conv_windows._wgrad_impl(np.abs(x).astype(np.float64), np.abs(g).astype(np.float64), window=window,
                                      strides=strides, dilation=dilation)
    assert np.all(np.abs(got - want) <= 1e-5 * (scale + 1))


def test_empty_and_non_contiguous_operands(monkeypatch):
    rng = np.random.default_rng(13)
    f = tracejit.jit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME",
                                                           dimension_numbers=("NHWC", "HWIO", "NHWC")))
    # non-contiguous views (reversed, strided, transposed) of operands the windows are read from
    x = rng.standard_normal((2, 9, 14, 10))[:, ::-1, ::2, :]
    w = np.ascontiguousarray(rng.standard_normal((10, 3, 3, 12)).transpose(1, 2, 0, 3))[..., ::-1]
    assert _plan_has_step(f.lower(x, w).compile())
    np.testing.assert_allclose(np.asarray(f(x, w)), conv_ref(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1)),
                               rtol=1e-12, atol=1e-12)
    # an empty batch, no output features: empty results of the right shape
    for xs, ws in (((0, 5, 5, 8), (3, 3, 8, 4)), ((1, 5, 5, 8), (3, 3, 8, 0))):
        xe, we = np.ones(xs), np.ones(ws)
        got = np.asarray(f(xe, we))
        assert got.shape == conv_ref(xe, we, (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1)).shape == (xs[0], 5, 5, ws[3])
    # the kernel's cotangent with NaN and inf in the input: as the im2col form gives it
    x = rng.standard_normal((1, 6, 6, 8))
    x[0, 1, 2, 3], x[0, 4, 4, 0] = np.nan, np.inf
    w = rng.standard_normal((3, 3, 8, 5))
    g = rng.standard_normal((1, 6, 6, 5))
    dw = tracejit.jit(lambda a, b, gg: tracejit.vjp(lambda k: f(a, k), b)[1](gg)[0])
    got = np.asarray(dw(x, w, g))
    monkeypatch.setattr(conv_windows, "MIN_FEATURES", 10 ** 9)
    want = np.asarray(tracejit.vjp(lambda k: lax.conv_general_dilated(
        x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")), w)[1](g)[0])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=1e-12)
