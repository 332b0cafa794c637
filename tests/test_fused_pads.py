"""Pads read in place by their users' kernels (``fusion._pad_expr``): guarded loads of the operand,
through the operand's own views, instead of a padded copy. Checked against a NumPy definition of
``lax.pad`` on random ranks, edges (negative ones too), interior padding, dtypes and fill values,
read through slices, transposes and unit reshapes, and summed as a col2im and a pool gradient do."""
import numpy as np
import pytest

import tracejit
from tracejit import lax
from tracejit.lax import convolution as lax_convolution
from tests.test_convolution import CASES, _to


def numpy_pad(x, value, config):
    """``lax.pad`` from its definition: element ``j`` of a dim lands at ``lo + j * (interior + 1)``
    of the dim extended by positive edges; negative edges crop afterwards."""
    shape = [lo_pos + hi_pos + n + max(n - 1, 0) * it
             for n, (lo_pos, hi_pos, it) in zip(x.shape, ((max(lo, 0), max(hi, 0), it) for lo, hi, it in config))]
    out = np.full(shape, value, dtype=x.dtype)
    out[tuple(slice(max(lo, 0), max(lo, 0) + (n - 1) * (it + 1) + 1 if n else 0, it + 1)
              for n, (lo, _, it) in zip(x.shape, config))] = x
    return out[tuple(slice(max(-lo, 0), s - max(-hi, 0)) for s, (lo, hi, _) in zip(shape, config))]


def _random_config(rng, shape):
    config = []
    for s in shape[:-1]:
        it = int(rng.integers(0, 3))
        full = s + max(s - 1, 0) * it
        lo = int(rng.integers(-min(full, 3), 4))
        hi = int(rng.integers(max(-full - lo, -3), 4))
        config.append((lo, hi, it))
    return config + [(0, 0, 0)]         # the last dim unpadded: what kernels read in place


def _plan(f, *args):
    return f.lower(*args).compile().as_text()


DTYPES = [np.float64, np.float32, np.int32, np.uint8, np.bool_, np.complex64, tracejit.numpy.bfloat16]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_random_fused_pads_match_numpy(dtype):
    rng = np.random.default_rng(3)
    value = np.asarray(True if dtype is np.bool_ else 3, dtype)[()]
    for _ in range(25):
        shape = tuple(int(s) for s in rng.integers(1, 5, rng.integers(2, 5)))
        config = _random_config(rng, shape)
        x = (np.abs(rng.standard_normal(shape)) * 4).astype(dtype)
        f = tracejit.jit(lambda a: lax.pad(a, value, config))
        want = numpy_pad(x, value, config)
        got = np.asarray(f(x))
        assert got.dtype == want.dtype
        assert got.shape == want.shape, (shape, config)
        np.testing.assert_array_equal(got, want, err_msg=f"{shape} {config}")
        assert "window pad" not in _plan(f, x) and "numpy" not in _plan(f, x)


def test_pads_read_through_views_of_one_stored_array():
    # A col2im reshapes a slice of one product per tap before padding it: the pad reads the product.
    rng = np.random.default_rng(4)
    for _ in range(40):
        base_shape = tuple(int(s) for s in rng.integers(2, 6, 4))
        b = rng.standard_normal(base_shape)
        starts = [int(rng.integers(0, s)) for s in base_shape]
        stops = [int(rng.integers(st + 1, s + 1)) for st, s in zip(starts, base_shape)]
        steps = [int(rng.integers(1, 3)) for _ in base_shape]
        perm = tuple(int(p) for p in rng.permutation(3)) + (3,)

        def view(a):
            v = lax.slice(a * 1.5, starts, stops, steps)
            v = lax.transpose(v, perm)
            return lax.rev(v, (int(rng_dim),)) if rng_dim >= 0 else v
        rng_dim = int(rng.integers(-1, 3))
        vshape = view(b).shape
        config = _random_config(rng, vshape)

        def f(a):
            return lax.pad(view(a), 0.25, config) + 1

        def want_of(a):
            v = (a * 1.5)[tuple(slice(s, e, k) for s, e, k in zip(starts, stops, steps))].transpose(perm)
            v = np.flip(v, rng_dim) if rng_dim >= 0 else v
            return numpy_pad(v, 0.25, config) + 1
        jf = tracejit.jit(f)
        np.testing.assert_array_equal(np.asarray(jf(b)), want_of(b), err_msg=f"{base_shape} {config}")


def test_pad_of_a_broadcast_along_a_padded_dim():
    # the padded dim repeats the operand: no element of the stored array tells the padding apart
    x = np.arange(6.0).reshape(1, 6)
    config = [(2, 1, 1), (0, 0, 0)]
    f = tracejit.jit(lambda a: lax.pad(lax.broadcast_in_dim(a * 2, (3, 6), (0, 1)), -1.0, config) * 1)
    np.testing.assert_array_equal(np.asarray(f(x)), numpy_pad(np.broadcast_to(x * 2, (3, 6)), -1.0, config))


def test_sum_of_padded_taps_is_one_kernel_and_exact():
    # A pool gradient: four interior-padded strided taps summed, no copies or concatenations.
    x = np.random.default_rng(1).standard_normal((3, 9, 8, 5))

    def loss(a):
        return tracejit.numpy.sum(lax.reduce_window(a, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") ** 3)
    g = tracejit.jit(tracejit.grad(loss))
    text = _plan(g, x)
    assert "window" not in text and "concatenate" not in text and "numpy" not in text
    np.testing.assert_array_equal(g(x), tracejit.grad(loss)(x))


@pytest.mark.parametrize("case", [c for c in CASES if c[6] == 1 and c[7] == 1 and all(s == 1 for s in c[2])],
                         ids=lambda c: f"{c[0]}x{c[1]}")
def test_col2im_input_gradient_equals_the_transposed_convolution_rule(case, monkeypatch):
    # Where the input has fewer features than the output the input gradient is the im2col's
    # transpose (col2im); it must equal JAX's rule (a convolution of g with the flipped kernel).
    xs, ws, strides, padding, lhs_dil, rhs_dil, _, _ = case
    rng = np.random.default_rng(2)
    dn = ("NHWC"[:1] + "HWD"[:len(xs) - 2] + "C", "HWD"[:len(xs) - 2] + "IO", "N" + "HWD"[:len(xs) - 2] + "C")
    spec = lax.conv_dimension_numbers(xs, ws, dn)
    x, w = _to(rng.standard_normal(xs), spec.lhs_spec), _to(rng.standard_normal(ws), spec.rhs_spec)

    def conv(a, b):
        return lax.conv_general_dilated(a, b, strides, padding, lhs_dil, rhs_dil, dn)
    ct = rng.standard_normal(np.shape(conv(x, w)))

    def dx(a, b, c):
        return tracejit.vjp(lambda u: conv(u, b), a)[1](c)[0]
    results = {}
    for use_col2im in (True, False):
        monkeypatch.setattr(lax_convolution, "_col2im_smaller", lambda *a, _v=use_col2im: _v)
        results[use_col2im] = [np.asarray(dx(x, w, ct)), np.asarray(tracejit.jit(dx)(x, w, ct))]
    for got, want in zip(results[True], results[False]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_col2im_is_chosen_where_the_input_has_fewer_features():
    dn = ("NHWC", "HWIO", "NHWC")
    params = dict(window_strides=(1, 1), padding=((2, 2), (2, 2)), lhs_dilation=(1, 1), rhs_dilation=(1, 1),
                  dimension_numbers=lax.conv_dimension_numbers((8, 14, 14, 6), (5, 5, 6, 16), dn),
                  feature_group_count=1, batch_group_count=1)
    x, w, g = np.zeros((8, 14, 14, 6)), np.zeros((5, 5, 6, 16)), np.zeros((8, 14, 14, 16))
    assert lax_convolution._col2im_smaller(x, w, g, params)
    params["dimension_numbers"] = lax.conv_dimension_numbers((8, 14, 14, 16), (5, 5, 16, 6), dn)
    assert not lax_convolution._col2im_smaller(np.zeros((8, 14, 14, 16)), np.zeros((5, 5, 16, 6)),
                                               np.zeros((8, 14, 14, 6)), params)


def _uncached_ir(f, *args):
    saved = tracejit.config.compilation_cache_dir
    tracejit.config.update("compilation_cache_dir", "off")
    try:
        return f.lower(*args).compile().as_text(llvm_ir=True)
    finally:
        tracejit.config.update("compilation_cache_dir", saved)


def test_gathered_rows_shorter_than_the_prefetch_distance_are_not_prefetched():
    # A vector loop prefetches its streamed inputs PREFETCH_BYTES ahead. Ahead of a gathered row shorter
    # than that lies what the next indices may not pick (and a padded convolution's taps of three rows
    # issued nine prefetches): only rows longer than the distance are prefetched.
    from tracejit.backends.cpu import codegen
    rng = np.random.default_rng(7)
    short = rng.standard_normal((4096, 128)).astype(np.float32)             # 512-byte rows, 2 MiB
    long_ = rng.standard_normal((64, 4096)).astype(np.float32)              # 16 KiB rows, 1 MiB
    assert 128 * 4 <= codegen.PREFETCH_BYTES < 4096 * 4
    assert min(short.nbytes, long_.nbytes) > codegen.PREFETCH_MIN_BYTES
    idx = rng.integers(-5, 4100, 300)
    f = tracejit.jit(lambda t, i: t[i] * 2.0)
    for table in (short, long_):
        got = f(table, idx)
        np.testing.assert_array_equal(got, table[np.clip(idx, -len(table), len(table) - 1)] * 2.0)
    assert "llvm.prefetch" not in _uncached_ir(f, short, idx)
    assert "llvm.prefetch" in _uncached_ir(f, long_, idx)
    assert "llvm.prefetch" in _uncached_ir(tracejit.jit(lambda t: t * 2.0), short)     # a plain stream still is


def test_stencil_taps_prefetch_once_per_stream():
    # Loads of one buffer with the same coefficients a few elements (or rows) apart read what the
    # leading one read a few steps before: only it prefetches. Far apart (two halves), each streams.
    from tracejit.backends.cpu import codegen
    rng = np.random.default_rng(8)
    x = rng.standard_normal(1 << 20).astype(np.float32)
    img = rng.standard_normal((1024, 1024)).astype(np.float32)
    x[5], img[0, 3], img[7, 0] = np.inf, np.nan, -0.0
    cases = [
        (lambda x: x[2:] + x[1:-1] * 2.0 + x[:-2], x, 1),
        (lambda a: a[1:-1, 2:] + a[1:-1, :-2] + a[2:, 1:-1] + a[:-2, 1:-1] - 4.0 * a[1:-1, 1:-1], img, 1),
        (lambda x: x[:1 << 19] - x[1 << 19:], x, 2),
        (lambda x: x[::-1][1:] + x[::-1][:-1], x, None),     # negative strides: no vector loads to prefetch
    ]
    assert (1 << 19) * 4 > codegen.PREFETCH_TRAIL_BYTES >= 2 * 1024 * 4
    for fn, a, prefetches in cases:
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(tracejit.jit(fn)(a), fn(a))
        if prefetches is not None:
            assert _uncached_ir(tracejit.jit(fn), a).count("call void @llvm.prefetch") == prefetches


def test_gathers_with_int64_indices_keep_the_datas_vector_width():
    # A padded 3x3 depthwise convolution reads its taps as gathers from the unpadded input, whose
    # indices are int64 iotas; a row picked by a traced int64 index is a gather too. Those indices
    # are scalars (the same in every lane), so float32 data runs float32's lanes: it ran half of
    # them before (the indices' width), and the index arithmetic ran per vector.
    import re
    from tracejit.backends.cpu.native import vector_bytes
    from tracejit.ops import convolution as conv
    lanes = vector_bytes() // 4
    rng = np.random.default_rng(5)
    for h, w_, c in [(7, 9, 24), (1, 1, 8), (5, 3, 13)]:
        x = rng.standard_normal((2, h, w_, c)).astype(np.float32)
        w = rng.standard_normal((3, 3, 1, c)).astype(np.float32)
        x[0, 0, 0, 0], x[1, h - 1, w_ - 1, c - 1] = np.inf, np.nan        # at the borders the pads touch
        dn = lax.conv_dimension_numbers(x.shape, w.shape, ("NHWC", "HWIO", "NHWC"))
        f = tracejit.jit(lambda w, x: conv.conv_product(
            x, w, window_strides=(1, 1), padding=((1, 1), (1, 1)), lhs_dilation=(1, 1), rhs_dilation=(1, 1),
            dimension_numbers=dn, feature_group_count=c, batch_group_count=1))
        xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
        with np.errstate(invalid="ignore"):
            want = sum(xp[:, i:i + h, j:j + w_, :] * w[i, j, 0].astype(np.float64) for i in range(3) for j in range(3))
        np.testing.assert_allclose(f(w, x), want, rtol=2e-5, atol=2e-5)
        if c == 24:
            assert re.search(rf"load <{lanes} x float>", _uncached_ir(f, w, x))
    rows = rng.standard_normal((6, 64)).astype(np.float32)
    g = tracejit.jit(lambda r, i: r[i] * 2.0 + r[i - 1])
    for i in (0, 5, -1):
        np.testing.assert_array_equal(g(rows, np.int64(i)), rows[i] * 2.0 + rows[i - 1])
    assert re.search(rf"load <{lanes} x float>", _uncached_ir(g, rows, np.int64(0)))
