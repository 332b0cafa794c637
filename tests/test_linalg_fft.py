"""tracejit.numpy.linalg and tracejit.numpy.fft against NumPy, eagerly and
under jit: values, shapes and NumPy 2's dtypes, batching, and errors."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from helpers import assert_close, normal_sample

RNG = np.random.default_rng(1)
LINALG_DTYPES = [np.int64, np.float32, np.float64, np.complex64, np.complex128]


def sample(shape, dtype):
    return normal_sample(shape, dtype, RNG, (-4, 5))


def well_conditioned(shape, dtype):
    n = shape[-1]
    a = sample(shape, dtype)
    return (a + np.asarray(3 * n * np.eye(n), dtype=a.dtype)).astype(dtype)


def hermitian_pd(shape, dtype):
    a = sample(shape, dtype).astype(np.result_type(dtype, np.float32))
    h = a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])
    return h.astype(np.result_type(dtype, np.float32)) if np.dtype(dtype).kind in "fc" else h.astype(np.float64)


def tol(dtype):
    single = np.dtype(dtype) in (np.float32, np.complex64)
    return dict(rtol=2e-4 if single else 1e-9, atol=2e-4 if single else 1e-9)


def check(jfn, npfn, *args, rtol=1e-9, atol=1e-9):
    want = npfn(*args)
    assert_close(jfn(*args), want, rtol, atol)
    assert_close(tracejit.jit(jfn)(*args), want, rtol, atol)


# --------------------------------------------------------------------------- solvers

@pytest.mark.parametrize("dtype", LINALG_DTYPES)
def test_solve_inv_det_slogdet(dtype):
    a = well_conditioned((2, 4, 4), dtype)
    b = sample((2, 4, 3), dtype)
    t = tol(dtype)
    check(jnp.linalg.solve, np.linalg.solve, a, b, **t)
    check(jnp.linalg.solve, np.linalg.solve, a[0], b[0, :, 0], **t)      # vector b
    check(jnp.linalg.solve, np.linalg.solve, a, b[0], **t)               # broadcast batch
    check(jnp.linalg.solve, np.linalg.solve, a[0].T, b[1][:, ::2], **t)  # non-contiguous
    check(jnp.linalg.inv, np.linalg.inv, a, **t)
    check(jnp.linalg.det, np.linalg.det, a, **t)
    check(jnp.linalg.det, np.linalg.det, a[0], **t)
    check(lambda x: tuple(jnp.linalg.slogdet(x)), lambda x: tuple(np.linalg.slogdet(x)), a, **t)


def test_mixed_dtypes_and_errors():
    a32 = well_conditioned((3, 3), np.float32)
    b64 = sample((3,), np.float64)
    check(jnp.linalg.solve, np.linalg.solve, a32, b64, rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="float16"):
        tracejit.jit(jnp.linalg.inv)(a32.astype(np.float16))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        tracejit.jit(jnp.linalg.inv)(np.ones((2, 3)))
    with pytest.raises(np.linalg.LinAlgError):
        tracejit.jit(jnp.linalg.inv)(np.zeros((2, 2)))     # singular, raised when the step runs
    with pytest.raises(np.linalg.LinAlgError):
        tracejit.jit(jnp.linalg.cholesky)(-np.eye(2))      # not positive definite
    with pytest.raises(NotImplementedError, match="eigh"):
        tracejit.jit(jnp.linalg.eig)(np.eye(2))
    assert_close(jnp.linalg.eigvals(np.eye(2)), np.linalg.eigvals(np.eye(2)), 0, 0)


@pytest.mark.parametrize("dtype", LINALG_DTYPES)
def test_cholesky_eigh(dtype):
    h = hermitian_pd((2, 3, 3), dtype)
    t = tol(h.dtype)
    check(jnp.linalg.cholesky, np.linalg.cholesky, h, **t)
    check(lambda x: jnp.linalg.cholesky(x, upper=True), lambda x: np.linalg.cholesky(x, upper=True), h, **t)
    check(jnp.linalg.eigvalsh, np.linalg.eigvalsh, h, **t)
    check(lambda x: jnp.linalg.eigvalsh(x, UPLO="U"), lambda x: np.linalg.eigvalsh(x, UPLO="U"), h, **t)
    w, v = tracejit.jit(jnp.linalg.eigh)(h)
    w_np, _ = np.linalg.eigh(h)
    assert w.dtype == w_np.dtype and v.dtype == h.dtype
    np.testing.assert_allclose(w, w_np, **t)
    # Eigenvectors are unique only up to phase: check the decomposition instead.
    np.testing.assert_allclose(v @ (w[..., None] * np.conj(np.swapaxes(v, -1, -2))), h, rtol=1e-3, atol=1e-3)
    assert type(tracejit.jit(jnp.linalg.eigh)(h)).__name__ == "EighResult"


@pytest.mark.parametrize("dtype", LINALG_DTYPES)
@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
def test_qr_svd(dtype, shape):
    a = sample(shape, dtype)
    t = tol(np.result_type(dtype, np.float32) if np.dtype(dtype).kind in "fc" else np.float64)
    for mode in ["reduced", "complete"]:
        q, r = tracejit.jit(lambda x: jnp.linalg.qr(x, mode=mode))(a)
        q_np, r_np = np.linalg.qr(a, mode=mode)
        assert (q.shape, q.dtype, r.shape, r.dtype) == (q_np.shape, q_np.dtype, r_np.shape, r_np.dtype)
        np.testing.assert_allclose(q, q_np, **t)   # same LAPACK call: same signs
        np.testing.assert_allclose(r, r_np, **t)
    check(lambda x: jnp.linalg.qr(x, mode="r"), lambda x: np.linalg.qr(x, mode="r"), a, **t)
    check(lambda x: jnp.linalg.svd(x, compute_uv=False), lambda x: np.linalg.svd(x, compute_uv=False), a, **t)
    check(jnp.linalg.svdvals, np.linalg.svdvals, a, **t)
    for full in (True, False):
        u, s, vh = tracejit.jit(lambda x: jnp.linalg.svd(x, full_matrices=full))(a)
        u_np, s_np, vh_np = np.linalg.svd(a, full_matrices=full)
        assert [x.shape for x in (u, s, vh)] == [x.shape for x in (u_np, s_np, vh_np)]
        assert [x.dtype for x in (u, s, vh)] == [x.dtype for x in (u_np, s_np, vh_np)]
        k = s.shape[-1]
        np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_lstsq_pinv_rank(dtype):
    t = tol(dtype)
    for m, n in [(6, 3), (3, 5), (4, 4)]:
        a, b = sample((m, n), dtype), sample((m, 2), dtype)
        for bb in (b, b[:, 0]):
            want = np.linalg.lstsq(a, bb)
            got = tracejit.jit(jnp.linalg.lstsq)(a, bb)
            assert_close(tuple(got), tuple(want), **t)
            assert_close(tuple(jnp.linalg.lstsq(a, bb)), tuple(want), **t)
        check(jnp.linalg.pinv, np.linalg.pinv, a, **t)
        check(jnp.linalg.matrix_rank, np.linalg.matrix_rank, a, **t)
    low = np.outer(np.arange(1.0, 5.0), np.arange(1.0, 4.0)).astype(dtype)
    check(jnp.linalg.matrix_rank, np.linalg.matrix_rank, low, **t)
    check(jnp.linalg.matrix_rank, np.linalg.matrix_rank, np.stack([low, sample((4, 3), dtype)]), **t)
    check(lambda x: jnp.linalg.pinv(x, hermitian=True), lambda x: np.linalg.pinv(x, hermitian=True),
          hermitian_pd((3, 3), dtype), **t)


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float32, np.float64, np.complex64])
def test_matrix_power_multi_dot(dtype):
    a = sample((2, 3, 3), dtype)
    t = tol(dtype)
    if np.dtype(dtype).kind in "iu":
        t = dict(rtol=0, atol=0)
    for n in [0, 1, 2, 3, 5]:
        check(lambda x: jnp.linalg.matrix_power(x, n), lambda x: np.linalg.matrix_power(x, n), a, **t)
    if np.dtype(dtype).kind in "fc":
        w = well_conditioned((3, 3), dtype)
        check(lambda x: jnp.linalg.matrix_power(x, -2), lambda x: np.linalg.matrix_power(x, -2), w,
              rtol=1e-3, atol=1e-6)
    if dtype != np.bool_:
        xs = [sample((3,), dtype), sample((3, 4), dtype), sample((4, 2), dtype), sample((2,), dtype)]
        check(lambda *v: jnp.linalg.multi_dot(list(v)), lambda *v: np.linalg.multi_dot(list(v)), *xs,
              rtol=1e-4, atol=1e-4)


VECTOR_ORDS = [None, 2, 1, 0, np.inf, -np.inf, 3, 0.5, -1]
MATRIX_ORDS = [None, "fro", "nuc", np.inf, -np.inf, 1, -1, 2, -2]


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64, np.complex64, np.complex128])
def test_norm(dtype):
    x = sample((3, 4), dtype)
    t = dict(rtol=1e-4, atol=1e-5) if np.dtype(dtype) in (np.float32, np.complex64) else dict(rtol=1e-9, atol=1e-9)
    for o in VECTOR_ORDS:
        check(lambda v: jnp.linalg.norm(v, o), lambda v: np.linalg.norm(v, o), x[0], **t)
        check(lambda v: jnp.linalg.norm(v, o, axis=1), lambda v: np.linalg.norm(v, o, axis=1), x, **t)
        check(lambda v: jnp.linalg.norm(v, o, axis=0, keepdims=True),
              lambda v: np.linalg.norm(v, o, axis=0, keepdims=True), x, **t)
    for o in MATRIX_ORDS:
        check(lambda v: jnp.linalg.norm(v, o), lambda v: np.linalg.norm(v, o), x, **t)
        check(lambda v: jnp.linalg.norm(v, o, axis=(1, 0), keepdims=True),
              lambda v: np.linalg.norm(v, o, axis=(1, 0), keepdims=True), x, **t)
    x3 = sample((2, 3, 4), dtype)
    check(lambda v: jnp.linalg.norm(v), lambda v: np.linalg.norm(v), x3, **t)
    check(lambda v: jnp.linalg.norm(v, "nuc", axis=(0, 2)), lambda v: np.linalg.norm(v, "nuc", axis=(0, 2)), x3, **t)
    check(lambda v: jnp.linalg.vector_norm(v, ord=1), lambda v: np.linalg.vector_norm(v, ord=1), x3, **t)
    check(lambda v: jnp.linalg.matrix_norm(v, ord=np.inf), lambda v: np.linalg.matrix_norm(v, ord=np.inf), x3, **t)
    with pytest.raises(ValueError, match="Invalid norm order"):
        tracejit.jit(lambda v: jnp.linalg.norm(v, "fro"))(x[0])


def test_norm_of_empty():
    x = np.ones((0, 4))
    check(jnp.linalg.norm, np.linalg.norm, x)
    check(lambda v: jnp.linalg.norm(v, axis=0), lambda v: np.linalg.norm(v, axis=0), x)


def test_linalg_array_api_helpers():
    a, b = sample((2, 3, 3), np.float64), sample((2, 3, 3), np.float64)
    t = dict(rtol=1e-9, atol=1e-9)
    check(jnp.linalg.matrix_transpose, np.linalg.matrix_transpose, a, **t)
    check(lambda u, v: jnp.linalg.vecdot(u, v), lambda u, v: np.linalg.vecdot(u, v), a, b, **t)
    check(lambda u: jnp.linalg.diagonal(u, offset=1), lambda u: np.linalg.diagonal(u, offset=1), a, **t)
    check(lambda u: jnp.linalg.trace(u), lambda u: np.linalg.trace(u), a, **t)
    check(lambda u, v: jnp.linalg.cross(u, v), lambda u, v: np.linalg.cross(u, v), a, b, **t)
    check(lambda u, v: jnp.linalg.outer(u, v), lambda u, v: np.linalg.outer(u, v), a[0, 0], b[0, 1], **t)
    check(jnp.linalg.cond, np.linalg.cond, well_conditioned((3, 3), np.float64), **t)
    check(lambda u: jnp.linalg.cond(u, "fro"), lambda u: np.linalg.cond(u, "fro"), well_conditioned((3, 3), np.float64),
          rtol=1e-7, atol=1e-9)


def test_numpy_functions_dispatch_on_tracers():
    a = well_conditioned((3, 3), np.float64)
    f = tracejit.jit(lambda x: np.linalg.solve(x, np.fft.ifft(np.fft.fft(x[0])).real))
    np.testing.assert_allclose(f(a), np.linalg.solve(a, a[0]), rtol=1e-9)


# --------------------------------------------------------------------------- fft

FFT_DTYPES = [np.bool_, np.int32, np.float32, np.float64, np.complex64, np.complex128]


def fft_tol(x_dtype):
    single = np.dtype(x_dtype) in (np.float32, np.complex64)
    return dict(rtol=1e-4 if single else 1e-10, atol=1e-4 if single else 1e-10)


@pytest.mark.parametrize("dtype", FFT_DTYPES)
def test_fft_1d(dtype):
    x = sample((3, 8), dtype)
    t = fft_tol(dtype)
    for name in ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]:
        if name in ("rfft", "ihfft") and np.dtype(dtype).kind == "c":
            continue
        jf, nf = getattr(jnp.fft, name), getattr(np.fft, name)
        for n, axis, norm in [(None, -1, None), (5, -1, "ortho"), (12, 0, "forward"), (None, 0, "backward"),
                              (1, -1, None)]:
            if name in ("irfft", "hfft") and n is None and x.shape[axis] == 1:
                continue
            check(lambda v: jf(v, n, axis, norm), lambda v: nf(v, n, axis, norm), x, **t)
    check(jnp.fft.fft, np.fft.fft, x[:, ::2], **t)       # non-contiguous
    check(jnp.fft.fft, np.fft.fft, x.T, **t)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_fft_nd(dtype):
    x = sample((2, 4, 6), dtype)
    t = fft_tol(dtype)
    for name in ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn"]:
        if name.startswith("rfft") and np.dtype(dtype).kind == "c":
            continue
        jf, nf = getattr(jnp.fft, name), getattr(np.fft, name)
        check(jf, nf, x, **t)
        check(lambda v: jf(v, axes=(0, 2)), lambda v: nf(v, axes=(0, 2)), x, **t)
        check(lambda v: jf(v, s=(3, 8), axes=(2, 1), norm="ortho"),
              lambda v: nf(v, s=(3, 8), axes=(2, 1), norm="ortho"), x, **t)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_fft_gradients_under_jit_match_eager_and_finite_differences(name):
    # The derivative of irfft/hfft weighted the spectrum with a (1, .., h) array through lax.mul,
    # which NumPy broadcast eagerly but jit rejected (TypeError: incompatible shapes): every
    # transform's gradient, with cropping, zero padding and each norm, is now checked under jit
    # against the eager gradient and against central differences of the real input.
    w = sample((3, 16), np.float64)

    def loss(v, n, norm):
        y = getattr(jnp.fft, name)(v, n=n, norm=norm)
        return jnp.sum(jnp.abs(y * w[:, :y.shape[1]]) ** 2)
    x = sample((3, 6), np.float64)
    for n, norm in [(None, None), (4, "ortho"), (9, "forward"), (7, "backward")]:
        eager = tracejit.grad(lambda v: loss(v, n, norm))(x)
        jitted = tracejit.jit(tracejit.grad(lambda v: loss(v, n, norm)))(x)
        np.testing.assert_allclose(jitted, eager, rtol=1e-10, atol=1e-12)
        h = 1e-6
        numeric = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            d = np.zeros_like(x)
            d[idx] = h
            numeric[idx] = (float(loss(x + d, n, norm)) - float(loss(x - d, n, norm))) / (2 * h)
        np.testing.assert_allclose(eager, numeric, rtol=1e-5, atol=1e-6 * np.abs(numeric).max())


def test_fft_helpers_and_errors():
    for n in (1, 4, 7):
        assert_close(jnp.fft.fftfreq(n, 0.5), np.fft.fftfreq(n, 0.5), 0, 0)
        assert_close(jnp.fft.rfftfreq(n), np.fft.rfftfreq(n), 0, 0)
    got = tracejit.jit(lambda d: jnp.fft.fftfreq(4, d))(0.25)
    np.testing.assert_allclose(got, np.fft.fftfreq(4, 0.25))
    x = sample((3, 5), np.float64)
    for axes in (None, 0, (1,), (0, 1)):
        check(lambda v: jnp.fft.fftshift(v, axes), lambda v: np.fft.fftshift(v, axes), x)
        check(lambda v: jnp.fft.ifftshift(v, axes), lambda v: np.fft.ifftshift(v, axes), x)
    with pytest.raises(ValueError, match="Invalid number of data points"):
        tracejit.jit(lambda v: jnp.fft.fft(v, 0))(x)
    with pytest.raises(ValueError, match="Invalid norm"):
        tracejit.jit(lambda v: jnp.fft.fft(v, norm="bogus"))(x)
    with pytest.raises(ValueError):
        tracejit.jit(jnp.fft.fft)(np.float64(1.0))
    text = str(tracejit.make_jaxpr(jnp.fft.rfft)(np.ones(8, np.float32)))
    assert "fft[" in text and "c64[5]" in text
