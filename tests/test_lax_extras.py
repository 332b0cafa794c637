"""tracejit.lax extras (approx_max_k/approx_min_k, fft, platform_dependent,
conv_general_dilated_patches, ragged_dot(_general), reduce_precision) and
tracejit.lax.linalg.eig / schur.

Each is checked against a NumPy / SciPy reference eagerly, under jit, vmap and grad, and against
JAX 0.10 itself when it is installed (values, dtypes and shapes; eig and schur bit for bit).
"""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax
from tracejit.lax import extras as extras_mod
from tracejit.lax import linalg as L

RNG = np.random.default_rng(20240711)


def _modes(f, *args):
    """``f(*args)`` eagerly and under jit."""
    return [f(*args), tracejit.jit(f)(*args)]


def _bits(x):
    x = np.asarray(x)
    return x.view(f"u{x.itemsize}")


def _float_values(dt, n=400):
    """Specials, random bit patterns (NaNs, subnormals, huge values) and values of every magnitude."""
    info = np.finfo(dt)
    u = np.dtype(f"u{np.dtype(dt).itemsize}")
    with np.errstate(all="ignore"):
        special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -np.nan, info.max, -info.max, info.tiny,
                            info.tiny / 2, info.smallest_subnormal, 65504, 65520, 65519.99, 1e-5, 6e-8, 3e-8, 1.5,
                            2.5, 0.1, 1 / 3, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11], dt)
        raw = RNG.integers(0, 2 ** 63, size=n, dtype=np.uint64) >> np.uint64(64 - 8 * u.itemsize)
        scaled = (RNG.standard_normal(n) * 10.0 ** RNG.integers(-40, 40, n)).astype(dt)
    return np.concatenate([special, raw.astype(u).view(dt), scaled])


# --------------------------------------------------------------------------- approx_max_k / approx_min_k

def test_approx_top_k_exact_on_cpu():
    x = RNG.integers(-3, 4, size=(3, 17)).astype(np.float32)       # many ties
    x[0, :4] = [0.0, -0.0, np.inf, -np.inf]
    want_max = np.argsort(-x, axis=-1, kind="stable")[:, :5]
    want_min = np.argsort(x, axis=-1, kind="stable")[:, :5]
    for v, i in _modes(lambda x: lax.approx_max_k(x, 5), x):
        assert v.dtype == np.float32 and i.dtype == np.int32 and v.shape == (3, 5)
        np.testing.assert_array_equal(i, want_max)
        np.testing.assert_array_equal(v, np.take_along_axis(x, want_max, -1))
    for v, i in _modes(lambda x: lax.approx_min_k(x, 5), x):
        np.testing.assert_array_equal(i, want_min)
    # along another axis, and aggregate_to_topk=False keeps the whole sorted axis up to 128 entries
    v, i = lax.approx_min_k(x, 2, reduction_dimension=0)
    np.testing.assert_array_equal(i, np.argsort(x, axis=0, kind="stable")[:2])
    v, i = lax.approx_max_k(x, 3, aggregate_to_topk=False)
    assert v.shape == (3, 17)
    np.testing.assert_array_equal(i, np.argsort(-x, axis=-1, kind="stable"))
    # vmap and grad (the values' derivative gathers the tangents)
    vb, ib = tracejit.vmap(lambda r: lax.approx_max_k(r, 5))(x)
    np.testing.assert_array_equal(ib, want_max)
    y = np.array([3.0, 1.0, 2.0, 0.0])
    np.testing.assert_array_equal(tracejit.grad(lambda y: lax.approx_min_k(y, 2)[0].sum())(y), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="floating"):
        lax.approx_max_k(np.arange(5), 2)
    with pytest.raises(ValueError, match="positive"):
        lax.approx_max_k(y, 0)
    with pytest.raises(ValueError, match="smaller"):
        lax.approx_max_k(y, 5)


def test_approx_top_k_output_size():
    size = extras_mod._approx_output_size
    assert size(10, 2, 3, 0.95, False, -1) == 10
    assert size(1000, 2, 3, 0.95, False, -1) == 256
    assert size(5000, 1, 1, 0.95, False, -1) == 1024
    assert size(5000, 1, 100, 0.95, False, -1) == 3072
    assert size(5000, 2, 7, 1.0, False, -1) == 5000
    assert size(5000, 2, 7, 0.9, True, -1) == 7
    x = RNG.standard_normal((2, 1000)).astype(np.float32)
    v, i = tracejit.jit(lambda x: lax.approx_max_k(x, 3, aggregate_to_topk=False))(x)
    assert v.shape == (2, 256)
    np.testing.assert_array_equal(i, np.argsort(-x, axis=-1, kind="stable")[:, :256])


# --------------------------------------------------------------------------- fft

def test_fft():
    x = RNG.standard_normal((3, 4, 6))
    z = x + 1j * RNG.standard_normal((3, 4, 6))
    cases = [(z, "FFT", (6,), np.fft.fftn), (z.astype(np.complex64), lax.FftType.IFFT, (4, 6), np.fft.ifftn),
             (x, "fft", (4, 6), np.fft.fftn), (x.astype(np.float32), "RFFT", (6,), np.fft.rfftn),
             (x, lax.FftType.RFFT, (4, 6), np.fft.rfftn), (z[..., :4], "IRFFT", (4, 6), np.fft.irfftn),
             (z[..., :4].astype(np.complex64), "irfft", (7,), np.fft.irfftn)]
    for arg, typ, lengths, ref in cases:
        want = ref(arg, lengths, tuple(range(-len(lengths), 0)))
        for out in _modes(lambda a: lax.fft(a, typ, lengths), arg):
            assert out.shape == want.shape and out.dtype == want.dtype, (typ, out.dtype, want.dtype)
            np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    assert lax.fft(np.arange(6), "FFT", (6,)).dtype == np.complex128
    assert lax.fft(x, "FFT", ()).dtype == np.complex128
    g = tracejit.grad(lambda x: jnp.real(lax.fft(x, "RFFT", (6,))).sum())(x)
    np.testing.assert_allclose(g[0, 0], [4, 0, 1, 0, 1, 0], atol=1e-12)
    for bad, err in [((z, "RFFT", (6,)), ValueError), ((x, "FFT", (5,)), ValueError),
                     ((z, "IRFFT", (3, 6)), ValueError), ((x, "bogus", (6,)), ValueError), ((x, 0, (6,)), TypeError),
                     ((x.astype(np.float16), "RFFT", (6,)), ValueError), ((x, "FFT", (1, 2, 3, 4)), ValueError)]:
        with pytest.raises(err):
            lax.fft(*bad)


# --------------------------------------------------------------------------- platform_dependent

def test_platform_dependent():
    assert lax.platform_dependent(1.0, cpu=lambda x: x + 2, default=lambda x: x + 1) == 3.0
    assert lax.platform_dependent(1.0, tpu=lambda x: x, default=lambda x: x + 1) == 2.0
    f = tracejit.jit(lambda y: lax.platform_dependent(y, y, cuda=lambda a, b: a, cpu=lambda a, b: a * b))
    assert float(f(3.0)) == 9.0
    with pytest.raises(NotImplementedError):
        lax.platform_dependent(1.0, tpu=lambda x: x)
    with pytest.raises(ValueError, match="cuda"):
        lax.platform_dependent(1.0, gpu=lambda x: x)
    with pytest.raises(TypeError):
        lax.platform_dependent(1.0, cpu=3)


# --------------------------------------------------------------------------- conv_general_dilated_patches

def _patches_reference(x, window, strides, pads, lhs_dil=None, rhs_dil=None):
    """NCHW patches by loops: out[n, c * S + s, i, j] = padded x at the tap s of window (i, j)."""
    n, c, h, w = x.shape
    lhs_dil = lhs_dil or (1, 1)
    rhs_dil = rhs_dil or (1, 1)
    xd = np.zeros((n, c, (h - 1) * lhs_dil[0] + 1, (w - 1) * lhs_dil[1] + 1), x.dtype)
    xd[:, :, ::lhs_dil[0], ::lhs_dil[1]] = x
    xp = np.pad(xd, ((0, 0), (0, 0), pads[0], pads[1]))
    kh, kw = window
    eh, ew = (kh - 1) * rhs_dil[0] + 1, (kw - 1) * rhs_dil[1] + 1
    oh, ow = (xp.shape[2] - eh) // strides[0] + 1, (xp.shape[3] - ew) // strides[1] + 1
    out = np.zeros((n, c, kh * kw, oh, ow), x.dtype)
    for a in range(kh):
        for b in range(kw):
            out[:, :, a * kw + b] = xp[:, :, a * rhs_dil[0]::strides[0], b * rhs_dil[1]::strides[1]][:, :, :oh, :ow]
    return out.reshape(n, c * kh * kw, oh, ow)


def test_conv_general_dilated_patches():
    x = RNG.standard_normal((2, 3, 6, 5))
    want = _patches_reference(x, (3, 2), (2, 1), [(1, 1), (0, 1)], (1, 2), (2, 1))
    f = lambda x: lax.conv_general_dilated_patches(x, (3, 2), (2, 1), [(1, 1), (0, 1)], (1, 2), (2, 1))
    for out in _modes(f, x):
        np.testing.assert_array_equal(out, want)
    # NHWC in, CNHW out: the same patches, transposed
    xh = np.transpose(x, (0, 2, 3, 1))
    out = lax.conv_general_dilated_patches(xh, (3, 2), (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "CNHW"))
    ref = _patches_reference(x, (3, 2), (1, 1), lax.padtype_to_pads((6, 5), (3, 2), (1, 1), "SAME"))
    np.testing.assert_array_equal(out, np.transpose(ref, (1, 0, 2, 3)))
    # contracting the patches with a kernel is the convolution
    k = RNG.standard_normal((4, 3, 3, 2))
    p = lax.conv_general_dilated_patches(x, (3, 2), (1, 1), "VALID")
    np.testing.assert_allclose(np.einsum("nphw,op->nohw", p, k.reshape(4, -1)),
                               lax.conv_general_dilated(x, k, (1, 1), "VALID"), rtol=1e-12, atol=1e-12)
    # preferred_element_type, vmap, grad (each input entry counted once per patch it lands in)
    assert lax.conv_general_dilated_patches(x.astype(np.float32), (2, 2), (1, 1), "VALID",
                                            preferred_element_type=np.float64).dtype == np.float64
    vm = tracejit.vmap(lambda xi: lax.conv_general_dilated_patches(xi[None], (2, 2), (1, 1), "VALID")[0])(x)
    np.testing.assert_array_equal(vm, lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID"))
    g = tracejit.grad(lambda x: lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID").sum())(x[:1, :1, :3, :3])
    np.testing.assert_array_equal(g[0, 0], [[1, 2, 1], [2, 4, 2], [1, 2, 1]])
    # exact copies (JAX's identity-kernel convolution turns inf's neighbours into NaN and -0.0 into 0.0)
    special = np.array([[[1.0, np.inf, -0.0, 2.0]]])
    np.testing.assert_array_equal(_bits(lax.conv_general_dilated_patches(special, (2,), (1,), "VALID")),
                                  _bits(np.stack([special[0, 0, :3], special[0, 0, 1:]])[None]))
    with pytest.raises(ValueError, match="String padding"):
        lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "SAME", lhs_dilation=(2, 1))


# --------------------------------------------------------------------------- ragged_dot

def _ragged_dot_reference(lhs, rhs, gs):
    out = np.zeros((lhs.shape[0], rhs.shape[-1]), np.result_type(lhs, rhs))
    ends = np.cumsum(gs)
    for g, (s, e) in enumerate(zip(ends - gs, ends)):
        rows = np.arange(lhs.shape[0])
        sel = (rows >= s) & (rows < e)
        out[sel] = lhs[sel] @ rhs[g]
    return out


def test_ragged_dot():
    lhs, rhs = RNG.standard_normal((7, 3)), RNG.standard_normal((3, 3, 2))
    for gs in (np.array([2, 0, 4], np.int32), np.array([5, 5, 5]), np.array([-1, 3, 2])):
        want = _ragged_dot_reference(lhs, rhs, gs)
        for out in _modes(lax.ragged_dot, lhs, rhs, gs):
            np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    gs = np.array([2, 0, 4], np.int32)
    assert lax.ragged_dot(lhs.astype(np.float32), rhs.astype(np.float32), gs).dtype == np.float32
    assert lax.ragged_dot(lhs.astype(np.float32), rhs.astype(np.float32), gs,
                          preferred_element_type=np.float64).dtype == np.float64
    # grad: d/dlhs of the sum is each row's group kernel summed over its outputs
    gl, gr = tracejit.grad(lambda a, b: lax.ragged_dot(a, b, gs).sum(), (0, 1))(lhs, rhs)
    group = np.array([0, 0, 2, 2, 2, 2, -1])
    np.testing.assert_allclose(gl, [rhs[g].sum(-1) if g >= 0 else np.zeros(3) for g in group], atol=1e-12)
    np.testing.assert_allclose(gr[2], np.repeat(lhs[2:6].sum(0)[:, None], 2, axis=1), atol=1e-12)
    np.testing.assert_allclose(gr[1], 0)
    # vmap over a batch of problems (the group sizes batched too)
    gsb = np.array([[2, 0, 4], [1, 1, 1]], np.int32)
    outb = tracejit.vmap(lax.ragged_dot)(np.stack([lhs, lhs]), np.stack([rhs, rhs]), gsb)
    for b in range(2):
        np.testing.assert_allclose(outb[b], _ragged_dot_reference(lhs, rhs, gsb[b]), atol=1e-12)
    with pytest.raises(TypeError, match="integer"):
        lax.ragged_dot(lhs, rhs, gs.astype(float))
    with pytest.raises(NotImplementedError):
        lax.ragged_dot(lhs, rhs, gs, group_offset=np.array([1]))
    with pytest.raises(TypeError, match="group dimension size"):
        lax.ragged_dot(lhs, rhs[:2], gs)


def test_ragged_dot_general_modes():
    dn_c = lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])        # ragged contracting k
    lhs, rhs, gs = RNG.standard_normal((3, 6)), RNG.standard_normal((6, 2)), np.array([2, 3, 1])
    ends = np.cumsum(gs)
    want = np.stack([lhs[:, s:e] @ rhs[s:e] for s, e in zip(ends - gs, ends)])
    for out in _modes(lambda a, b: lax.ragged_dot_general(a, b, gs, dn_c), lhs, rhs):
        np.testing.assert_allclose(out, want, atol=1e-12)
    dn_b = lax.RaggedDotDimensionNumbers((([2], [1]), ([0], [0])), [0], [])      # ragged batch: plain dot
    a, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 4, 5))
    np.testing.assert_allclose(lax.ragged_dot_general(a, b, np.array([1, 1]), dn_b), a @ b, atol=1e-12)
    # batched non-contracting with per-batch group sizes [b, g]
    dn_n = lax.RaggedDotDimensionNumbers((([2], [2]), ([0], [1])), [1], [0])
    a, r, gsb = RNG.standard_normal((2, 5, 3)), RNG.standard_normal((2, 2, 3, 4)), np.array([[2, 3], [4, 0]])
    out = lax.ragged_dot_general(a, r, gsb, dn_n)
    for bi in range(2):
        np.testing.assert_allclose(out[bi], _ragged_dot_reference(a[bi], r[:, bi], gsb[bi]), atol=1e-12)
    assert lax.RaggedDotDimensionNumbers([[[1], [1]], [[], []]], [0], [0]).dot_dimension_numbers == \
        (((1,), (1,)), ((), ()))


# --------------------------------------------------------------------------- reduce_precision

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_reduce_precision(dtype):
    x = _float_values(dtype)
    pairs = [(5, 10), (8, 7), (4, 3), (1, 0), (11, 52), (3, 1)]
    fns = {p: tracejit.jit(lambda x, p=p: lax.reduce_precision(x, *p)) for p in pairs}
    for e, m in pairs:
        eager = np.asarray(lax.reduce_precision(x, e, m))
        assert eager.dtype == dtype
        np.testing.assert_array_equal(_bits(eager), _bits(extras_mod._reduce_precision_bits(x, e, m)))
        jitted = np.asarray(fns[(e, m)](x))
        same = (_bits(jitted) == _bits(eager)) | (np.isnan(jitted) & np.isnan(eager))
        assert same.all(), (e, m, x[~same][:3], eager[~same][:3], jitted[~same][:3])
    # (5, 10) is float16 on its normal range: NumPy's rounding to float16, overflow to inf
    with np.errstate(all="ignore"):
        f16 = x.astype(np.float16).astype(dtype)
        normal = np.isfinite(x) & (np.abs(f16) >= np.finfo(np.float16).tiny)
    got = np.asarray(lax.reduce_precision(x, 5, 10))
    np.testing.assert_array_equal(got[normal], f16[normal])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got[np.isnan(x)], x[np.isnan(x)])    # NaNs pass
        tiny = np.isfinite(x) & (np.abs(x) < 2.0 ** -15)
    if dtype != np.float16:     # a smaller exponent range flushes its subnormals to signed zeros
        np.testing.assert_array_equal(_bits(got[tiny]), _bits(np.copysign(0.0, x[tiny]).astype(dtype)))


def test_reduce_precision_transforms():
    # linear: the derivative is reduce_precision of the tangent / cotangent, as in JAX
    f = lambda x: lax.reduce_precision(x, 5, 2)
    assert float(tracejit.grad(f)(1.3)) == 1.0
    out, t = tracejit.jvp(f, (1.3,), (1.3,))
    assert float(out) == 1.25 and float(t) == 1.25
    (ct,) = tracejit.vjp(f, 1.3)[1](1.3)
    assert float(ct) == 1.25
    assert float(tracejit.jit(tracejit.grad(lambda x: f(x * x)))(1.0)) == 2.0
    x = np.array([[1.3, 1e6], [3e-5, -2.6]], np.float32)
    np.testing.assert_array_equal(tracejit.vmap(lambda r: lax.reduce_precision(r, 5, 10))(x),
                                  lax.reduce_precision(x, 5, 10))
    with pytest.raises(TypeError):
        lax.reduce_precision(np.arange(3), 5, 10)
    with pytest.raises(ValueError, match="exponent_bits"):
        lax.reduce_precision(x, 0, 10)
    with pytest.raises(ValueError, match="mantissa_bits"):
        lax.reduce_precision(x, 5, -1)


# --------------------------------------------------------------------------- eig / schur

EIG_DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _rand(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", EIG_DTYPES)
def test_eig_matches_lapack(dtype):
    sl = pytest.importorskip("scipy.linalg")
    a = _rand((2, 5, 5), dtype)
    w_ref, vl_ref, vr_ref = (np.stack(r) for r in zip(*(sl.eig(m, left=True, right=True) for m in a)))
    cdt = np.complex64 if dtype in (np.float32, np.complex64) else np.complex128
    for w, vl, vr in _modes(L.eig, a):
        assert w.dtype == vl.dtype == vr.dtype == cdt and vr.shape == (2, 5, 5)
        np.testing.assert_array_equal(w, w_ref)
        np.testing.assert_array_equal(vl, vl_ref)
        np.testing.assert_array_equal(vr, vr_ref)
    w_only = tracejit.jit(lambda a: L.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False))(a)
    assert isinstance(w_only, list) and len(w_only) == 1
    np.testing.assert_array_equal(w_only[0], np.stack([sl.eigvals(m) for m in a]))
    w, vr = tracejit.vmap(lambda m: L.eig(m, compute_left_eigenvectors=False))(a)
    np.testing.assert_array_equal(vr, vr_ref)
    # the definitions: x vr = vr w, vl^H x = w vl^H, unit columns
    tol = 1e-3 if cdt == np.complex64 else 1e-10
    np.testing.assert_allclose(a @ vr_ref, vr_ref * w_ref[:, None, :], atol=tol)
    np.testing.assert_allclose(np.linalg.norm(vr_ref, axis=-2), 1, atol=tol)
    # schur: gees
    t_ref, q_ref = (np.stack(r) for r in zip(*(sl.schur(m, output="complex" if a.dtype.kind == "c" else "real")
                                                for m in a)))
    for t, q in _modes(L.schur, a):
        assert t.dtype == q.dtype == dtype
        np.testing.assert_array_equal(t, t_ref)
        np.testing.assert_array_equal(q, q_ref)
    np.testing.assert_array_equal(tracejit.jit(lambda a: L.schur(a, compute_schur_vectors=False))(a)[0], t_ref)


def test_eig_special_inputs_and_errors():
    pytest.importorskip("scipy")
    a = RNG.standard_normal((2, 3, 3))
    a[1, 0, 0] = np.nan
    w, vl, vr = tracejit.jit(L.eig)(a)
    assert np.isnan(w[1]).all() and np.isnan(vr[1]).all() and np.isfinite(w[0]).all()
    t, q = L.schur(a)
    assert np.isnan(t[1]).all() and np.isfinite(t[0]).all()
    assert L.eig(np.zeros((2, 0, 0)))[0].shape == (2, 0)
    with pytest.raises(ValueError, match="lapack"):
        L.eig(a, implementation=L.EigImplementation.MAGMA)
    assert L.eig(a[0], implementation=L.EigImplementation.LAPACK)[0].shape == (3,)
    with pytest.warns(DeprecationWarning):
        L.eig(a[0], use_magma=False)
    with pytest.raises(ValueError):
        L.eig(np.ones((2, 3)))
    with pytest.raises(TypeError):
        L.eig(np.eye(2, dtype=np.int32))
    with pytest.raises(NotImplementedError, match="sort"):
        L.schur(a[0], sort_eig_vals=True)


def test_eig_derivatives():
    pytest.importorskip("scipy")
    a = np.array([[1.0, 2.0, 0.5], [3.0, 4.0, -1.0], [0.2, 0.1, 2.0]])
    w, vl, vr = L.eig(a)
    # d(lambda_i) = vl_i^H dA vr_i / (vl_i^H vr_i): the gradient of sum(re(lambda)) is sum_i re(conj(vl_i) vr_i^T / ...)
    want = np.real(sum(np.outer(np.conj(vl[:, i]), vr[:, i]) / (np.conj(vl[:, i]) @ vr[:, i]) for i in range(3)))
    f = lambda a: jnp.real(L.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]).sum()
    np.testing.assert_allclose(tracejit.grad(f)(a), np.conj(want), atol=1e-10)
    np.testing.assert_allclose(tracejit.jit(tracejit.grad(f))(a), np.conj(want), atol=1e-10)
    # eigenvectors (opt-in): central differences of a real function of them
    g = lambda a: jnp.abs(L.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)[1][0]).sum()
    d = RNG.standard_normal((3, 3))
    eps = 1e-6
    fd = (float(g(a + eps * d)) - float(g(a - eps * d))) / (2 * eps)
    np.testing.assert_allclose(np.sum(np.asarray(tracejit.grad(g)(a)) * d), fd, rtol=1e-6)
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
        tracejit.grad(lambda a: jnp.real(L.eig(a)[0]).sum())(a)
    with pytest.raises(NotImplementedError, match="schur"):
        tracejit.grad(lambda a: L.schur(a)[0].sum())(a)


def test_eig_without_scipy(monkeypatch):
    monkeypatch.setattr(L, "_scipy_linalg", lambda: None)
    a = RNG.standard_normal((3, 3))
    w, vr = tracejit.jit(lambda a: L.eig(a, compute_left_eigenvectors=False))(a)
    w_ref, vr_ref = np.linalg.eig(a)
    np.testing.assert_array_equal(w, w_ref)
    np.testing.assert_array_equal(vr, vr_ref)
    with pytest.raises(NotImplementedError, match="SciPy"):
        L.eig(a)
    with pytest.raises(NotImplementedError, match="SciPy"):
        L.schur(a)


# --------------------------------------------------------------------------- against JAX

def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def _same(got, want, exact=True, tol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_against_jax_topk_fft_platform():
    jax = _jax()
    from jax._src.lib import _jax as xla_ext
    # JAX's order among equal values is unspecified on longer axes: with ties only the values are
    # compared, without ties the indices too.
    ties = RNG.integers(-3, 4, size=(3, 40)).astype(np.float32)
    ties[0, :4] = [0.0, -0.0, np.inf, -np.inf]
    distinct = RNG.standard_normal((3, 300)).astype(np.float32)
    for x, exact_idx in [(ties, False), (distinct, True)]:
        for k, dim, agg in [(5, -1, True), (2, 0, True), (3, -1, False), (1, -1, False)]:
            for tj, jf in [(lax.approx_max_k, jax.lax.approx_max_k), (lax.approx_min_k, jax.lax.approx_min_k)]:
                (v, i), (jv, ji) = tj(x, k, dim, aggregate_to_topk=agg), jf(x, k, dim, aggregate_to_topk=agg)
                _same(v, jv)
                _same(i, ji) if exact_idx else _same(np.take_along_axis(x, np.asarray(i), dim), jv)
    for n in (5, 128, 129, 1000, 5000, 70000):
        for rank in (1, 2):
            for k in (1, 2, 7, 100):
                for recall in (0.5, 0.9, 0.95, 0.999, 1.0):
                    for override in (-1, 2 * n):
                        if k <= n:
                            assert extras_mod._approx_output_size(n, rank, k, recall, False, override) == \
                                xla_ext.approx_top_k_reduction_output_size(n, rank, k, recall, False, override)[0]
    xr = RNG.standard_normal((3, 4, 6))
    z = xr + 1j * RNG.standard_normal((3, 4, 6))
    for arg, typ, lengths in [(z, "FFT", (6,)), (xr.astype(np.float32), "fft", (4, 6)), (z, "IFFT", (4, 6)),
                              (xr, "RFFT", (4, 6)), (xr.astype(np.float32), "RFFT", (6,)),
                              (z[..., :4], "IRFFT", (4, 6)), (z[..., :4], "IRFFT", (7,)), (np.arange(6), "FFT", (6,))]:
        _same(lax.fft(arg, typ, lengths), jax.lax.fft(arg, typ, lengths), exact=False, tol=1e-5)
    gj = jax.grad(lambda x: jax.lax.fft(x, "IRFFT", (6,)).sum())(z[..., :4])
    gt = tracejit.grad(lambda x: lax.fft(x, "IRFFT", (6,)).sum())(z[..., :4])
    _same(gt, gj, exact=False)
    # the fft primitive's derivative (numpy/ad_rules.py) with cropping, zero padding and norms
    for name, arg, n, norm in [("fft", z, 4, "ortho"), ("rfft", xr, 9, None), ("irfft", z, 14, "forward"),
                               ("ifft", xr, 8, "backward")]:
        w = RNG.standard_normal(np.shape(getattr(np.fft, name)(arg, n=n)))
        gj = jax.grad(lambda a: jax.numpy.abs(getattr(jax.numpy.fft, name)(a, n=n, norm=norm) * w).sum())(arg)
        gt = tracejit.grad(lambda a: jnp.abs(getattr(jnp.fft, name)(a, n=n, norm=norm) * w).sum())(arg)
        _same(gt, gj, exact=False, tol=1e-10)
    for kw in [dict(cpu=lambda v: v + 2, default=lambda v: v + 1), dict(tpu=lambda v: v, default=lambda v: v * 3)]:
        assert float(lax.platform_dependent(1.5, **kw)) == float(jax.lax.platform_dependent(1.5, **kw))


def test_against_jax_patches_and_ragged_dot():
    jax = _jax()
    x = RNG.standard_normal((2, 3, 7, 6))
    xh = np.transpose(x, (0, 2, 3, 1))
    cases = [(x, (3, 2), (2, 1), [(1, 1), (0, 2)], (1, 2), (2, 1), None),
             (xh, (2, 3), (1, 2), "SAME", None, None, ("NHWC", "HWIO", "NHWC")),
             (xh, (3, 2), (1, 1), "VALID", None, (1, 2), ("NHWC", "OIHW", "CNHW")),
             (x, (2, 3), (1, 1), "VALID", None, None, lax.ConvDimensionNumbers((0, 1, 2, 3), (0, 1, 3, 2),
                                                                                (0, 1, 2, 3)))]
    for args in cases:
        dn = args[-1]
        jdn = jax.lax.ConvDimensionNumbers(*dn) if isinstance(dn, lax.ConvDimensionNumbers) else dn
        want = jax.lax.conv_general_dilated_patches(*args[:-1], jdn)
        _same(lax.conv_general_dilated_patches(*args), want, exact=False)
    lhs, rhs = RNG.standard_normal((9, 3)), RNG.standard_normal((3, 3, 2))
    for gs in (np.array([2, 0, 4], np.int32), np.array([5, 5, 5], np.int32), np.array([-1, 3, 2], np.int32)):
        _same(lax.ragged_dot(lhs, rhs, gs), jax.lax.ragged_dot(lhs, rhs, gs), exact=False)
        gj = jax.grad(lambda a, b: (jax.lax.ragged_dot(a, b, gs) ** 2).sum(), (0, 1))(lhs, rhs)
        gt = tracejit.grad(lambda a, b: (lax.ragged_dot(a, b, gs) ** 2).sum(), (0, 1))(lhs, rhs)
        for got, want in zip(gt, gj):
            _same(got, want, exact=False)
    _same(lax.ragged_dot(lhs.astype(np.float32), rhs, gs), jax.lax.ragged_dot(lhs.astype(np.float32), rhs, gs),
          exact=False)
    gen = [(lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], []), (3, 6), (6, 2), np.array([2, 3, 1])),
           (lax.RaggedDotDimensionNumbers((([2], [2]), ([0], [1])), [1], [0]), (2, 5, 3), (2, 2, 3, 4),
            np.array([[2, 3], [4, 0]])),
           (lax.RaggedDotDimensionNumbers((([2], [1]), ([0], [0])), [0], []), (2, 3, 4), (2, 4, 5), np.array([1, 1]))]
    for dn, ls, rs, gs in gen:
        jdn = jax.lax.RaggedDotDimensionNumbers(dn.dot_dimension_numbers, dn.lhs_ragged_dimensions,
                                                dn.rhs_group_dimensions)
        a, b = RNG.standard_normal(ls), RNG.standard_normal(rs)
        _same(lax.ragged_dot_general(a, b, gs, dn), jax.lax.ragged_dot_general(a, b, gs, jdn), exact=False)


def test_against_jax_reduce_precision():
    jax = _jax()
    for dt in (np.float16, np.float32, np.float64):
        x = _float_values(dt, 300)
        for e, m in [(5, 10), (8, 7), (4, 3), (1, 0), (2, 0), (8, 0), (11, 52), (6, 30), (3, 1)]:
            want = np.asarray(jax.lax.reduce_precision(x, e, m))
            got = np.asarray(lax.reduce_precision(x, e, m))
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=f"{dt.__name__} {e} {m}")
    f = lambda x: jax.lax.reduce_precision(x, 5, 2)
    assert float(tracejit.grad(lambda x: lax.reduce_precision(x, 5, 2))(1.3)) == float(jax.grad(f)(1.3))
    assert float(tracejit.jvp(lambda x: lax.reduce_precision(x, 5, 2), (1.3,), (1.3,))[1]) == \
        float(jax.jvp(f, (1.3,), (1.3,))[1])


def test_against_jax_eig_schur():
    jax = _jax()
    jl = jax.lax.linalg
    flags = [dict(compute_left_eigenvectors=False), dict(compute_right_eigenvectors=False),
             dict(compute_left_eigenvectors=False, compute_right_eigenvectors=False)]
    for dt in EIG_DTYPES:
        a = _rand((2, 4, 4), dt)
        for kw in [{}] + (flags if dt in (np.float32, np.complex128) else []):     # JAX compiles are slow
            got, want = L.eig(a, **kw), jl.eig(a, **kw)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                _same(g, w)
        for got, want in zip(L.schur(a), jl.schur(a)):
            _same(got, want)
    a = np.array([[1.0, 2.0, 0.5], [3.0, 4.0, -1.0], [0.2, 0.1, 2.0]])
    fj = lambda a: jax.numpy.abs(jl.eig(a, compute_left_eigenvectors=True, enable_eigvec_derivs=True)[1] ** 2).sum()
    ft = lambda a: jnp.abs(L.eig(a, compute_left_eigenvectors=True, enable_eigvec_derivs=True)[1] ** 2).sum()
    _same(tracejit.grad(ft)(a), jax.grad(fj)(a), exact=False)
    c = (a + 1j * a[::-1]).astype(np.complex128)
    hj = lambda a: jl.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0].imag.sum()
    ht = lambda a: jnp.imag(L.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]).sum()
    _same(tracejit.grad(ht)(c), jax.grad(hj)(c), exact=False)
    hj = lambda a: jl.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)[1].real
    ht = lambda a: jnp.real(L.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)[1])
    _same(tracejit.jacfwd(ht)(a), jax.jacfwd(hj)(a), exact=False)
