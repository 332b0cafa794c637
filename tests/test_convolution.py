"""lax convolutions and reduce_window against a direct NumPy reference written from XLA's definition.

The reference loops over output positions and kernel taps with explicit index arithmetic
(dilate, pad, stride, groups), so it shares no code with the im2col implementation.
"""
import itertools

import numpy as np
import pytest

import tracejit
from tracejit import lax


def _dilate_pad(x, pads, dilation, value):
    """(N, C, S...) with interior dilation then (low, high) padding (negative crops)."""
    n, c, *sizes = x.shape
    dil_sizes = [0 if s == 0 else (s - 1) * d + 1 for s, d in zip(sizes, dilation)]
    y = np.full((n, c, *dil_sizes), value, x.dtype)
    y[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in dilation)] = x
    for ax, (lo, hi) in enumerate(pads, start=2):
        if lo < 0:
            y = np.take(y, range(-lo, y.shape[ax]), axis=ax)
        elif lo > 0:
            y = np.concatenate([np.full(y.shape[:ax] + (lo,) + y.shape[ax + 1:], value, y.dtype), y], ax)
        if hi < 0:
            y = np.take(y, range(0, y.shape[ax] + hi), axis=ax)
        elif hi > 0:
            y = np.concatenate([y, np.full(y.shape[:ax] + (hi,) + y.shape[ax + 1:], value, y.dtype)], ax)
    return y


def reference_conv(x, w, strides, pads, lhs_dil, rhs_dil, groups=1, bgroups=1):
    """x (N, C, S...), w (O, I, K...): XLA's ConvGeneralDilated, by loops (float64 accumulation).

    Only taps on real elements of ``x`` add a term: padding and dilation holes add nothing, even
    against an inf or NaN kernel tap.
    """
    xp = _dilate_pad(x.astype(np.float64), pads, lhs_dil, 0.0)
    real = _dilate_pad(np.ones(x.shape, bool), pads, lhs_dil, False)
    n, c, *sizes = xp.shape
    o, i, *ks = w.shape
    eff = [(k - 1) * d + 1 for k, d in zip(ks, rhs_dil)]
    outs = [max(0, (s - e) // st + 1) if s >= e else 0 for s, e, st in zip(sizes, eff, strides)]
    nb = n // bgroups
    out = np.zeros((nb, o, *outs))
    og_f, og_b = o // groups, o // bgroups
    for b, oc in itertools.product(range(nb), range(o)):
        g = oc // og_f
        bg = oc // og_b
        for pos in itertools.product(*map(range, outs)):
            acc = 0.0
            for ic, taps in itertools.product(range(i), itertools.product(*map(range, ks))):
                idx = tuple(p * st + t * d for p, st, t, d in zip(pos, strides, taps, rhs_dil))
                if real[(bg * nb + b, g * i + ic) + idx]:
                    acc += xp[(bg * nb + b, g * i + ic) + idx] * w[(oc, ic) + taps]
            out[(b, oc) + pos] = acc
    return out


def _to(x, spec):
    """Canonical (N, C, S...) array laid out as ``spec`` (axis numbers of N, C, S... in the result)."""
    return np.transpose(x, np.argsort(spec))


CASES = [
    # (x shape NCS, w shape OIK, strides, padding, lhs_dil, rhs_dil, groups, bgroups)
    ((2, 3, 7), (4, 3, 3), (1,), "VALID", None, None, 1, 1),
    ((2, 3, 7), (4, 3, 3), (2,), "SAME", None, None, 1, 1),
    ((1, 2, 6, 5), (3, 2, 3, 2), (2, 1), [(1, 2), (0, 1)], None, None, 1, 1),
    ((1, 2, 6, 5), (3, 2, 3, 2), (1, 2), [(-1, 2), (1, -1)], (2, 1), (1, 2), 1, 1),
    ((2, 4, 5, 5), (6, 2, 3, 3), (1, 1), "SAME", None, (2, 2), 2, 1),
    ((1, 4, 5, 5), (4, 1, 3, 3), (1, 1), "SAME_LOWER", None, None, 4, 1),    # depthwise
    ((2, 3, 6, 5), (6, 1, 3, 2), (2, 1), [(1, 1), (0, 1)], None, (1, 2), 3, 1),   # depthwise, multiplier 2
    ((1, 2, 7), (2, 1, 3), (1,), [(0, 0)], (2,), None, 2, 1),               # depthwise, input dilation
    ((4, 2, 5), (6, 2, 2), (1,), "VALID", None, None, 1, 2),
    ((1, 1, 4, 4, 3), (2, 1, 2, 2, 2), (1, 2, 1), [(0, 0)] * 3, (1, 1, 2), None, 1, 1),
    ((1, 2, 1), (1, 2, 3), (1,), "VALID", None, None, 1, 1),                  # empty output
    ((0, 2, 5), (3, 2, 2), (1,), "SAME", None, None, 1, 1),                   # empty batch
]


@pytest.mark.parametrize("layout", ["canonical", "nhwc"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}")
def test_conv_general_dilated_matches_definition(case, layout):
    xs, ws, strides, padding, lhs_dil, rhs_dil, groups, bgroups = case
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    nsp = len(xs) - 2
    eff = [(k - 1) * d + 1 for k, d in zip(ws[2:], rhs_dil or (1,) * nsp)]
    pads = lax.padtype_to_pads(xs[2:], eff, strides, padding)
    want = reference_conv(x, w, strides, pads, lhs_dil or (1,) * nsp, rhs_dil or (1,) * nsp, groups, bgroups)
    if layout == "canonical":
        dn, xa, wa, back = None, x, w, lambda y: y
    else:
        sp = "HWD"[:nsp]
        dn = ("N" + sp + "C", sp + "IO", "N" + sp + "C")
        spec = lax.conv_dimension_numbers(xs, ws, dn)
        xa, wa = _to(x, spec.lhs_spec), _to(w, spec.rhs_spec)
        back = lambda y: np.transpose(y, spec.out_spec)  # noqa: E731
    f = lambda a, b: lax.conv_general_dilated(a, b, strides, padding, lhs_dil, rhs_dil, dn,  # noqa: E731
                                              feature_group_count=groups, batch_group_count=bgroups)
    for got in (f(xa, wa), tracejit.jit(f)(xa, wa)):
        got = back(np.asarray(got))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("layout", ["canonical", "nhwc"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}")
def test_conv_gradients_match_the_definition(case, layout):
    # The convolution is bilinear, so the central difference of <ct, conv(x + e dx, w + e dw)> at
    # e = +-1 is its directional derivative exactly (up to rounding): the vjp of both operands,
    # in every layout, checked against the independent reference implementation.
    xs, ws, strides, padding, lhs_dil, rhs_dil, groups, bgroups = case
    rng = np.random.default_rng(1)
    x, w, dx, dw = (rng.standard_normal(s) for s in (xs, ws, xs, ws))
    nsp = len(xs) - 2
    eff = [(k - 1) * d + 1 for k, d in zip(ws[2:], rhs_dil or (1,) * nsp)]
    pads = lax.padtype_to_pads(xs[2:], eff, strides, padding)

    def ref(a, b):
        return reference_conv(a, b, strides, pads, lhs_dil or (1,) * nsp, rhs_dil or (1,) * nsp, groups, bgroups)
    ct = rng.standard_normal(ref(x, w).shape)
    want = (np.sum(ct * ref(x + dx, w + dw)) - np.sum(ct * ref(x - dx, w - dw))) / 2
    if layout == "canonical":
        dn, to_x, to_w, to_out = None, (lambda a: a), (lambda a: a), (lambda a: a)
    else:
        sp = "HWD"[:nsp]
        dn = ("N" + sp + "C", sp + "IO", "N" + sp + "C")
        spec = lax.conv_dimension_numbers(xs, ws, dn)
        to_x, to_w = (lambda a: _to(a, spec.lhs_spec)), (lambda a: _to(a, spec.rhs_spec))
        to_out = lambda a: _to(a, spec.out_spec)  # noqa: E731

    def grads(a, b, c):
        _, pull = tracejit.vjp(lambda u, v: lax.conv_general_dilated(
            u, v, strides, padding, lhs_dil, rhs_dil, dn, feature_group_count=groups, batch_group_count=bgroups), a, b)
        return pull(c)
    for gx, gw in (grads(to_x(x), to_w(w), to_out(ct)), tracejit.jit(grads)(to_x(x), to_w(w), to_out(ct))):
        got = np.sum(np.asarray(gx) * to_x(dx)) + np.sum(np.asarray(gw) * to_w(dw))
        assert got == pytest.approx(want, rel=1e-10, abs=1e-10)


def test_string_padding_with_input_dilation_raises_as_in_jax():
    # Fuzzer finding F2: tracejit accepted it (and chose pads) where JAX raises.
    x, w = np.ones((1, 1, 5)), np.ones((1, 1, 3))
    for padding in ("SAME", "VALID", "SAME_LOWER"):
        with pytest.raises(ValueError, match="String padding"):
            lax.conv_general_dilated(x, w, (1,), padding, lhs_dilation=(2,))
    assert lax.conv_general_dilated(x, w, (1,), [(1, 1)], lhs_dilation=(2,)).shape == (1, 1, 9)
    assert lax.conv_transpose(x, w, (2,), "SAME", dimension_numbers=("NCH", "OIH", "NCH")).shape == (1, 1, 10)


def test_conv_dtypes_and_errors():
    x, w = np.ones((1, 2, 4), np.float32), np.ones((3, 2, 2), np.float32)
    assert lax.conv(x, w, (1,), "VALID").dtype == np.float32
    assert lax.conv(x, w, (1,), "VALID", preferred_element_type=np.float64).dtype == np.float64
    with pytest.raises(TypeError, match="one dtype"):
        lax.conv(x, w.astype(np.float64), (1,), "VALID")
    with pytest.raises(TypeError, match="feature"):
        lax.conv(x, np.ones((3, 3, 2), np.float32), (1,), "VALID")
    with pytest.raises(ValueError, match="padding"):
        lax.conv(x, w, (1,), "FULL")


def test_conv_gradients_match_jax_transpose_identities():
    # JAX's VJP of a convolution is itself a convolution: the lhs cotangent is a conv of the output
    # cotangent with the flipped kernel (strides become lhs dilation); the rhs cotangent with feature
    # groups is a batch-grouped conv. Our gradients come from autodiff of the im2col form.
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 4, 9)), rng.standard_normal((6, 2, 3))
    ct = rng.standard_normal((2, 6, 5))

    def f(x, w):
        return lax.conv_general_dilated(x, w, (2,), [(1, 1)], feature_group_count=2)
    _, vjp = tracejit.vjp(f, x, w)
    gx, gw = vjp(ct)
    # Directional derivatives against central differences (f is bilinear: exact up to rounding).
    dx, dw = rng.standard_normal(x.shape), rng.standard_normal(w.shape)
    h = 1e-3
    fd = (np.asarray(f(x + h * dx, w + h * dw)) - np.asarray(f(x - h * dx, w - h * dw))) / (2 * h)
    np.testing.assert_allclose(np.sum(gx * dx) + np.sum(gw * dw), np.sum(fd * ct), rtol=1e-9)
    # The rhs cotangent as JAX computes it: a conv of x (features as batch) with ct, batch_group_count=2.
    want_gw = lax.conv_general_dilated(np.transpose(x, (1, 0, 2)), np.transpose(ct, (1, 0, 2)), (1,), [(1, 1)],
                                       rhs_dilation=(2,), batch_group_count=2)
    np.testing.assert_allclose(gw, np.transpose(np.asarray(want_gw), (1, 0, 2)), rtol=1e-10, atol=1e-12)
    # jit(grad) equals eager grad.
    loss = lambda x, w: (f(x, w) ** 2).sum()  # noqa: E731
    np.testing.assert_allclose(tracejit.jit(tracejit.grad(loss, argnums=(0, 1)))(x, w)[1],
                               tracejit.grad(loss, argnums=(0, 1))(x, w)[1], rtol=1e-10)


def test_conv_vmap_matches_loop():
    rng = np.random.default_rng(2)
    xs, w = rng.standard_normal((3, 1, 2, 6)), rng.standard_normal((4, 2, 3))
    f = lambda x: lax.conv(x, w, (1,), "SAME")  # noqa: E731
    np.testing.assert_allclose(tracejit.vmap(f)(xs), np.stack([f(x) for x in xs]), rtol=1e-12)


@pytest.mark.parametrize("padding", ["VALID", "SAME", [(1, 0)]])
@pytest.mark.parametrize("strides", [1, 2, 3])
def test_conv_transpose_is_the_lhs_gradient(strides, padding):
    # With transpose_kernel=True, conv_transpose of a cotangent is the gradient of a convolution.
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((1, 9, 2)), rng.standard_normal((3, 2, 4))       # NWC, WIO
    dn = ("NWC", "WIO", "NWC")
    pad = padding if isinstance(padding, str) else padding
    fwd = lambda x: lax.conv_general_dilated(x, w, (strides,), pad, dimension_numbers=dn)  # noqa: E731
    y, vjp = tracejit.vjp(fwd, x)
    ct = rng.standard_normal(np.shape(y))
    if isinstance(padding, str):
        got = lax.conv_transpose(ct, w, (strides,), padding, dimension_numbers=dn, transpose_kernel=True)
        if (padding, strides) == ("SAME", 2):
            # 9 inputs at stride 2 give 5 outputs; transposed, 5 give 10: the gradient is its last 9.
            assert np.shape(got) == (1, 10, 2)
            got = np.asarray(got)[:, 1:]
        np.testing.assert_allclose(got, vjp(ct)[0], rtol=1e-10, atol=1e-12)
    else:
        # Explicit pads: lhs dilation by the stride and the complementary pads of the flipped kernel.
        k = w.shape[0]
        out = (9 + 1 - k) // strides + 1
        before = k - 1 - 1
        after = 9 + k - 1 - ((out - 1) * strides + 1) - before
        got = lax.conv_general_dilated(ct, lax.rev(np.swapaxes(w, 1, 2), (0,)), (1,), [(before, after)],
                                       lhs_dilation=(strides,), dimension_numbers=dn)
        np.testing.assert_allclose(got, vjp(ct)[0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("op,init,npop", [(lax.max, -np.inf, np.max), (lax.min, np.inf, np.min),
                                          (lax.add, 0.0, np.sum), (lax.mul, 1.0, np.prod)])
@pytest.mark.parametrize("window,strides,padding,base,wdil", [
    ((2, 2), (2, 2), "VALID", None, None),
    ((3, 3), (1, 1), "SAME", None, None),
    ((2, 3), (1, 2), [(1, 0), (0, 2)], (1, 2), (2, 1)),
    ((1, 1), (1, 1), "VALID", None, None),
])
def test_reduce_window_matches_definition(op, init, npop, window, strides, padding, base, wdil):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 6))
    base_ = base or (1, 1)
    wdil_ = wdil or (1, 1)
    dilated = [(s - 1) * b + 1 for s, b in zip(x.shape, base_)]
    eff = [(k - 1) * d + 1 for k, d in zip(window, wdil_)]
    pads = lax.padtype_to_pads(dilated, eff, strides, padding)
    xp = _dilate_pad(x[None, None], pads, base_, init)[0, 0]
    outs = [(s - e) // st + 1 for s, e, st in zip(xp.shape, eff, strides)]
    want = np.empty(outs)
    for pos in itertools.product(*map(range, outs)):
        win = xp[tuple(slice(p * st, p * st + e, d) for p, st, e, d in zip(pos, strides, eff, wdil_))]
        want[pos] = npop(win)
    f = lambda x: lax.reduce_window(x, init, op, window, strides, padding, base, wdil)  # noqa: E731
    for got in (f(x), tracejit.jit(f)(x)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_max_pool_gradient_and_avg_pool():
    x = np.arange(16.0).reshape(4, 4)
    pool = lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2), (2, 2), "VALID").sum()  # noqa: E731
    g = tracejit.grad(pool)(x)
    want = np.zeros((4, 4))
    want[1::2, 1::2] = 1.0          # each window's maximum is its bottom-right element
    np.testing.assert_array_equal(g, want)
    avg = lax.reduce_window(x, 0.0, lax.add, (2, 2), (2, 2), "VALID") / 4
    np.testing.assert_array_equal(avg, x.reshape(2, 2, 2, 2).mean(axis=(1, 3)))


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("m,n", [(1, 1), (5, 3), (3, 5), (6, 6), (7, 2), (2, 7)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int32])
def test_jnp_convolve_correlate_match_numpy(m, n, mode, dtype):
    from helpers import check_against_numpy, sample
    a, v = sample((m,), dtype, seed=m), sample((n,), dtype, seed=n + 10)
    check_against_numpy(lambda xp, a, v: (xp.convolve(a, v, mode), xp.correlate(a, v, mode)), a, v, reassoc=True,
                        np_protocol=False)


@pytest.mark.parametrize("case", [c for c in CASES if c[3] != "VALID"], ids=lambda c: f"{c[0]}x{c[1]}")
def test_conv_with_inf_and_nan_kernel_taps_adds_nothing_over_padding(case):
    # Regression (fuzzer seeds 3004xxxx, F1): the im2col multiplied padding zeros and dilation holes
    # by the kernel, so an inf tap gave NaN (inf * 0) where XLA and NumPy sum only real elements.
    xs, ws, strides, padding, lhs_dil, rhs_dil, groups, bgroups = case
    nsp = len(xs) - 2
    lhs_dil, rhs_dil = lhs_dil or (1,) * nsp, rhs_dil or (1,) * nsp
    eff = [(k - 1) * d + 1 for k, d in zip(ws[2:], rhs_dil)]
    pads = lax.padtype_to_pads(xs[2:], eff, strides, padding)
    f = lambda a, b: lax.conv_general_dilated(a, b, strides, padding, lhs_dil, rhs_dil,  # noqa: E731
                                              feature_group_count=groups, batch_group_count=bgroups)
    rng = np.random.default_rng(1)
    for specials in ([np.inf], [-np.inf], [np.nan], [np.inf, -np.inf], [np.inf, 0.0]):
        x, w = rng.standard_normal(xs), rng.standard_normal(ws)
        flat = w.reshape(-1)
        flat[rng.choice(flat.size, len(specials), replace=False)] = specials
        x.reshape(-1)[rng.choice(x.size, min(x.size, 2), replace=False)] = [0.0, -0.0][:min(x.size, 2)]
        want = reference_conv(x, w, strides, pads, lhs_dil, rhs_dil, groups, bgroups)
        for got in (f(x, w), tracejit.jit(f)(x, w)):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    x = np.array([[[1.0, 2.0]]])
    w = np.array([[[1.0, 2.0, np.inf]]])
    np.testing.assert_array_equal(tracejit.jit(lambda a, b: lax.conv(a, b, (1,), "SAME"))(x, w), [[[np.inf, 5.0]]])


@pytest.mark.parametrize("kernel", [[1e-3, -4e-4, np.nan], [np.inf, 1.0], [1.0, -np.inf, 2.0], [np.inf, -np.inf]])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_jnp_convolve_with_non_finite_taps_matches_numpy(kernel, mode):
    a, v = np.array([1.0, 2.0, 3.0, -1.0]), np.array(kernel)
    for xp_fn, np_fn in ((tracejit.numpy.convolve, np.convolve), (tracejit.numpy.correlate, np.correlate)):
        for args in ((a, v), (v, a)):
            want = np_fn(*args, mode)
            np.testing.assert_array_equal(np.asarray(xp_fn(*args, mode)), want)
            np.testing.assert_array_equal(np.asarray(tracejit.jit(lambda p, q: xp_fn(p, q, mode))(*args)), want)


def test_jnp_convolve_gradient():
    a, v = np.array([1.0, -2.0, 0.5, 3.0]), np.array([0.25, 1.0, -1.0])
    g = tracejit.grad(lambda a: (tracejit.numpy.convolve(a, v, "same") ** 2).sum())(a)
    h = 1e-6
    fd = [((np.convolve(a + h * e, v, "same") ** 2).sum() - (np.convolve(a - h * e, v, "same") ** 2).sum()) / (2 * h)
          for e in np.eye(4)]
    np.testing.assert_allclose(g, fd, rtol=1e-7)


def test_max_and_min_pooling_start_from_the_first_tap_with_the_same_values():
    # init -inf (max) / +inf (min) is the identity: the pooling starts from its first tap.
    from numpy.lib.stride_tricks import sliding_window_view
    x = np.array([[np.nan, 1.0, -np.inf, -np.inf, 2.0, -0.0],
                  [3.0, -1.0, -np.inf, -np.inf, 5.0, -0.0]])
    for comp, init, red in ((lax.max, -np.inf, np.max), (lax.min, np.inf, np.min)):
        f = tracejit.jit(lambda x, comp=comp, init=init: lax.reduce_window(x, init, comp, (2, 2), (1, 2), "VALID"))
        want = red(sliding_window_view(x, (2, 2))[:, ::2], axis=(-2, -1))
        got = np.asarray(f(x))
        np.testing.assert_array_equal(got, want)
        assert np.signbit(got[0, 2]) == np.signbit(want[0, 2])          # a window of -0.0 stays -0.0
        padded = tracejit.jit(lambda x, comp=comp, init=init: lax.reduce_window(x, init, comp, (1, 3), (1, 1), "SAME"))
        xp = np.pad(x, ((0, 0), (1, 1)), constant_values=init)
        np.testing.assert_array_equal(np.asarray(padded(x)), red(sliding_window_view(xp, (1, 3)), axis=(-2, -1)))


@pytest.mark.parametrize("strides,groups", [((1, 1), 1), ((2, 1), 1), ((1, 1), 2)])
def test_conv_primitive_second_order_derivatives(strides, groups):
    # conv_general_dilated is a primitive with JAX's transpose rule for the input (itself a
    # convolution) and the decomposition's transpose for the kernel: derivatives of derivatives,
    # forward and reverse, checked against finite differences; vmap of grad against a loop.
    from tracejit.test_util import check_grads
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((2, 5, 4, 4)) * 0.5, rng.standard_normal((3, 3, 4 // groups, 4)) * 0.5

    def f(a, b):
        y = lax.conv_general_dilated(a, b, strides, "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                     feature_group_count=groups)
        return tracejit.numpy.sum(tracejit.numpy.tanh(y))
    check_grads(f, (x, w), order=2, modes=["fwd", "rev"], atol=1e-3, rtol=1e-3)   # finite differences: ~1e-5 noise
    per_example = np.stack([tracejit.grad(f)(x[i:i + 1], w) for i in range(2)])
    np.testing.assert_allclose(tracejit.vmap(tracejit.grad(f), in_axes=(0, None))(x[:, None], w), per_example,
                               rtol=1e-12, atol=1e-12)


def test_conv_derivatives_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 6, 6, 3)), rng.standard_normal((3, 3, 3, 4))
    for strides in ((1, 1), (2, 1)):
        def loss(m):
            return lambda a, b: m.numpy.sum(m.numpy.sin(m.lax.conv_general_dilated(
                a, b, strides, "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))) ** 2)
        pairs = [(tracejit.jit(tracejit.grad(loss(tracejit), argnums=(0, 1))), jax.grad(loss(jax), argnums=(0, 1))),
                 (tracejit.hessian(loss(tracejit)), jax.hessian(loss(jax))),
                 (tracejit.jacrev(tracejit.grad(loss(tracejit), argnums=1), argnums=1),
                  jax.jacrev(jax.grad(loss(jax), argnums=1), argnums=1))]
        for ours, theirs in pairs:
            for a, b in zip(tracejit.tree_util.tree_leaves(ours(x, w)), jax.tree_util.tree_leaves(theirs(x, w))):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)
