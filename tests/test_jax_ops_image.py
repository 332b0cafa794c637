"""jax.ops segment reductions (tracejit.ops.segment_*) and jax.image (tracejit.image), issue 14."""
import numpy as np
import pytest

import tracejit as tj
from tracejit import image, ops

KINDS = {"segment_sum": (np.add, 0), "segment_prod": (np.multiply, 1),
         "segment_max": (np.maximum, None), "segment_min": (np.minimum, None)}


def _reference(name, data, ids, n):
    ufunc, ident = KINDS[name]
    data = np.asarray(data)
    if ident is None:
        if data.dtype == bool:
            ident = name == "segment_min"
        elif data.dtype.kind in "iu":
            info = np.iinfo(data.dtype)
            ident = info.max if name == "segment_min" else info.min
        else:
            ident = np.inf if name == "segment_min" else -np.inf
    out = np.full((n,) + data.shape[1:], ident, data.dtype)
    keep = (ids >= 0) & (ids < n)
    ufunc.at(out, ids[keep], data[keep])
    return out


@pytest.mark.parametrize("name", list(KINDS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_segment_matches_numpy(name, dtype):
    rng = np.random.default_rng(0)
    data = rng.integers(-3, 4, size=(9, 2)).astype(dtype)
    ids = np.array([0, 0, 2, 2, 2, 5, -1, 9, 1])          # segment 3, 4 empty; -1 and 9 dropped
    fn = getattr(ops, name)
    want = _reference(name, data, ids, 6)
    for got in (fn(data, ids, 6), tj.jit(lambda d, i: fn(d, i, num_segments=6))(data, ids),
                fn(data, ids, 6, bucket_size=2)):
        assert got.dtype == want.dtype and got.shape == (6, 2)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    assert isinstance(fn(data, ids, 6), tj.Array)


def test_segment_edges():
    x = np.array([1.0, np.nan, 3.0])
    np.testing.assert_array_equal(ops.segment_sum(x, np.array([0, 0, 1]), 2), [np.nan, 3.0])
    assert ops.segment_max(np.zeros((0, 3)), np.zeros(0, int), 2).shape == (2, 3)
    np.testing.assert_array_equal(ops.segment_max(np.zeros((0,)), np.zeros(0, int), 2), [-np.inf, -np.inf])
    np.testing.assert_array_equal(ops.segment_min(np.array([True, False]), np.array([0, 0]), 2), [False, True])
    np.testing.assert_array_equal(ops.segment_sum(np.ones(3), np.array([0, 1, 2])), [1, 1, 1])  # default n
    np.testing.assert_array_equal(ops.segment_sum(np.ones(3), np.array([0, -1, 7]), 3, mode="clip"), [2, 0, 1])
    assert ops.segment_sum(np.ones((3, 1)), np.array([0, 1, 1]), 2).shape == (2, 1)
    with pytest.raises(tj.ConcretizationTypeError, match="num_segments"):
        tj.jit(lambda d, i: ops.segment_sum(d, i))(np.ones(2), np.array([0, 1]))
    with pytest.raises(TypeError, match="integer"):
        ops.segment_sum(np.ones(2), np.array([0.0, 1.0]), 2)
    with pytest.raises(ValueError, match="non-negative"):
        ops.segment_sum(np.ones(2), np.array([0, 1]), -1)


def test_segment_grad_and_vmap():
    x = np.array([1.0, 1.0, 3.0, 2.0])
    ids = np.array([0, 0, 1, 7])
    g = tj.grad(lambda v: ops.segment_sum(v, ids, 3).sum())(x)
    np.testing.assert_array_equal(g, [1, 1, 1, 0])
    g = tj.grad(lambda v: ops.segment_max(v, ids, 2).sum())(x)
    np.testing.assert_allclose(g, [0.5, 0.5, 1, 0])                 # ties share, as JAX
    g = tj.grad(lambda v: ops.segment_prod(v, np.array([0, 2, 1]), 3, unique_indices=True).sum())(x[:3])
    np.testing.assert_array_equal(g, [1, 1, 1])
    xs = np.stack([x, x + 1])
    np.testing.assert_array_equal(tj.vmap(lambda v: ops.segment_min(v, ids, 2))(xs), [[1, 3], [2, 4]])


def test_segment_vs_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(1)
    data = rng.normal(size=(20, 3))
    ids = rng.integers(-2, 8, size=20)
    for name in KINDS:
        for kw in ({}, {"bucket_size": 3}, {"mode": "clip"}):
            want = np.asarray(getattr(jax.ops, name)(data, ids, 6, **kw))
            np.testing.assert_allclose(getattr(ops, name)(data, ids, 6, **kw), want, rtol=1e-13)
    gj = jax.grad(lambda v: jax.ops.segment_max(v, ids, 6).sum())(data)
    np.testing.assert_allclose(tj.grad(lambda v: ops.segment_max(v, ids, 6).sum())(data), np.asarray(gj))


# --------------------------------------------------------------------------- image

def test_resize_basics():
    np.testing.assert_allclose(image.resize(np.array([0., 1., 2., 3.]), (2,), "linear", antialias=False), [0.5, 2.5])
    np.testing.assert_array_equal(image.resize(np.array([0, 1]), (4,), "nearest"), [0, 0, 1, 1])
    assert image.resize(np.array([0, 1]), (4,), "nearest").dtype == np.int64
    assert image.resize(np.ones((2, 3), np.float32), (4, 5), "cubic").dtype == np.float32
    # a constant image stays constant for every interpolating method (weights sum to 1)
    for m in ["linear", "cubic", "lanczos3", "lanczos5", "area"]:
        np.testing.assert_allclose(image.resize(np.full((5, 4), 2.0), (3, 9), m), 2.0, rtol=1e-12)
    assert image.resize(np.ones((1, 4)), (0, 4), "linear").shape == (0, 4)
    assert image.ResizeMethod.from_string("trilinear") is image.ResizeMethod.LINEAR
    with pytest.raises(ValueError, match="Unknown resize method"):
        image.resize(np.ones(3), (4,), "spline")
    with pytest.raises(ValueError, match="length"):
        image.resize(np.ones(3), (4, 2), "linear")
    with pytest.raises(ValueError, match="Nearest"):
        image.scale_and_translate(np.ones(3), (3,), (0,), np.ones(1), np.zeros(1), "nearest")


@pytest.mark.parametrize("method", ["nearest", "linear", "cubic", "lanczos3", "lanczos5", "area", "cubic-pytorch"])
def test_resize_vs_jax(method):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    x = np.random.default_rng(0).normal(size=(2, 7, 5, 3))
    for aa in (True, False):
        for shape in [(2, 4, 9, 3), (1, 13, 1, 3), (2, 0, 5, 3)]:
            got, want = image.resize(x, shape, method, aa), np.asarray(jax.image.resize(x, shape, method, aa))
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    if method != "nearest":
        s, t = np.array([0.7, 1.6]), np.array([0.3, -1.2])
        got = tj.jit(lambda s, t: image.scale_and_translate(x, (2, 6, 8, 3), (1, 2), s, t, method))(s, t)
        want = jax.image.scale_and_translate(x, (2, 6, 8, 3), (1, 2), s, t, method)
        np.testing.assert_allclose(got, np.asarray(want), rtol=0, atol=1e-12)


def test_resize_grads_vs_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    x = np.random.default_rng(2).normal(size=(6, 5))
    g = tj.grad(lambda v: (image.resize(v, (4, 9), "cubic") ** 2).sum())(x)
    gj = jax.grad(lambda v: (jax.image.resize(v, (4, 9), "cubic") ** 2).sum())(x)
    np.testing.assert_allclose(g, np.asarray(gj), atol=1e-12)
    s, t = np.array([0.7, 1.6]), np.array([0.3, -1.2])
    f = lambda mod: lambda s, t: (mod.scale_and_translate(x, (7, 8), (0, 1), s, t, "linear") ** 2).sum()
    g = tj.grad(f(image), argnums=(0, 1))(s, t)
    gj = jax.grad(f(jax.image), argnums=(0, 1))(s, t)
    for a, b in zip(g, gj):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-10)
