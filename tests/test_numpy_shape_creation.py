"""Shape manipulation, joining, creation functions, contractions, astype and
dtype names of tracejit.numpy vs NumPy, eagerly and under jit."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from helpers import ALL_DTYPES, assert_same, check_against_numpy, sample, views

DTYPE_IDS = [np.dtype(d).name for d in ALL_DTYPES]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_reshape_transpose_family(dtype):
    x = sample((2, 3, 4), dtype, seed=1)
    fns = [lambda xp, a: xp.reshape(a, (6, 4)), lambda xp, a: xp.reshape(a, (-1,)), lambda xp, a: a.reshape(4, -1),
           lambda xp, a: a.reshape((2, -1, 2)), lambda xp, a: xp.reshape(a, (2, 3, 4)), lambda xp, a: xp.ravel(a),
           lambda xp, a: a.flatten(), lambda xp, a: xp.transpose(a), lambda xp, a: xp.transpose(a, (1, 0, 2)),
           lambda xp, a: a.transpose(2, 0, 1), lambda xp, a: a.T, lambda xp, a: xp.swapaxes(a, 0, 2),
           lambda xp, a: a.swapaxes(-1, 1), lambda xp, a: xp.moveaxis(a, 0, -1),
           lambda xp, a: xp.expand_dims(a, 0), lambda xp, a: xp.expand_dims(a, -1),
           lambda xp, a: xp.expand_dims(a, (0, 2)), lambda xp, a: xp.squeeze(xp.expand_dims(a, 1)),
           lambda xp, a: xp.squeeze(a[:, :1], axis=1), lambda xp, a: xp.broadcast_to(a[:, :1], (2, 3, 4)),
           lambda xp, a: xp.broadcast_to(a, (5, 2, 3, 4)), lambda xp, a: xp.flip(a, 1), lambda xp, a: xp.flip(a),
           lambda xp, a: xp.atleast_2d(a[0, 0, 0]), lambda xp, a: xp.atleast_3d(a[0, 0])]
    for fn in fns:
        check_against_numpy(fn, x)


def test_reshape_errors():
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match="cannot reshape"):
        tracejit.jit(lambda a: a.reshape(4, 2))(x)
    with pytest.raises(ValueError, match="one unknown"):
        tracejit.jit(lambda a: a.reshape(-1, -1))(x)
    with pytest.raises(ValueError, match="squeeze"):
        tracejit.jit(lambda a: jnp.squeeze(a, 0))(x)
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(4, 3\)"):
        tracejit.jit(lambda a: jnp.broadcast_to(a, (4, 3)))(x)
    with pytest.raises(TypeError, match="static"):
        tracejit.jit(lambda a, n: jnp.reshape(a, (n, 3)))(x, 2)


def test_scalars_empty_and_views():
    check_against_numpy(lambda xp, a: xp.reshape(a, (1, 1)), np.float32(2.0))
    check_against_numpy(lambda xp, a: xp.broadcast_to(a, (2, 3)), np.float64(1.5))
    check_against_numpy(lambda xp, a: xp.expand_dims(a, 0), np.int32(4))
    check_against_numpy(lambda xp, a: xp.reshape(a, (3, 0)), np.zeros((0, 3)))
    check_against_numpy(lambda xp, a: xp.transpose(a), np.zeros((0, 3)))
    check_against_numpy(lambda xp, a: xp.concatenate([a, a], axis=0), np.zeros((0, 3)))
    x = sample((6, 4), np.float64, seed=2)
    for name, v in views(x).items():
        for fn in (lambda xp, a: a.reshape(-1), lambda xp, a: a.T, lambda xp, a: xp.swapaxes(a, 0, 1),
                   lambda xp, a: xp.concatenate([a, a], axis=1), lambda xp, a: xp.stack([a, a])):
            check_against_numpy(fn, v)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate_stack(axis):
    a = sample((2, 3), np.float32, seed=1)
    b = sample((2, 3), np.float32, seed=2)
    check_against_numpy(lambda xp, x, y: xp.concatenate([x, y], axis=axis), a, b)
    check_against_numpy(lambda xp, x, y: xp.concatenate((x, y, x), axis=axis), a, b)
    check_against_numpy(lambda xp, x, y: xp.stack([x, y], axis=axis), a, b)
    check_against_numpy(lambda xp, x, y: xp.stack([x, y, x], axis=axis), a, b)


def test_concatenate_promotes_and_flattens():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.ones((1, 3), np.float32)
    check_against_numpy(lambda xp, x, y: xp.concatenate([x, y]), a, b)
    check_against_numpy(lambda xp, x, y: xp.concatenate([x, y], axis=None), a, b)
    check_against_numpy(lambda xp, x, y: xp.concatenate([x, y], dtype=np.float64), a, b)
    check_against_numpy(lambda xp, x: xp.concatenate([x, np.arange(3.0)[None]]), a)
    with pytest.raises(ValueError, match="dimension"):
        tracejit.jit(lambda x: jnp.concatenate([x, x[0]]))(a)


def test_hstack_vstack():
    v = np.arange(3.0)
    m = sample((2, 3), np.int32, seed=4)
    check_against_numpy(lambda xp, x: xp.hstack([x, x]), v)
    check_against_numpy(lambda xp, x: xp.vstack([x, x]), v)
    check_against_numpy(lambda xp, x: xp.hstack([x, x]), m)
    check_against_numpy(lambda xp, x: xp.vstack([x, x[:1]]), m)
    check_against_numpy(lambda xp, x, y: xp.vstack([x, y]), v, m)
    check_against_numpy(lambda xp, x: xp.hstack([x[0], x[1]]), m)
    check_against_numpy(lambda xp, x: xp.column_stack([x, x]), v)


# ----------------------------------------------------------------------------- creation

@pytest.mark.parametrize("dtype", [None, np.float32, np.int32, np.bool_, np.complex64, int, float],
                         ids=lambda d: getattr(d, "__name__", str(d)))
def test_filled_creation(dtype):
    for name in ("zeros", "ones"):
        check_against_numpy(lambda xp, a: getattr(xp, name)((2, 3), dtype) + a, np.float32(0), eager=True)
        check_against_numpy(lambda xp, a: (getattr(xp, name)(4, dtype=dtype), a), np.float32(0))
        check_against_numpy(lambda xp, a: getattr(xp, name + "_like")(a, dtype=dtype), np.ones((2, 2), np.int32))
    check_against_numpy(lambda xp, a: xp.full((2, 3), 7, dtype=dtype), np.float32(0))
    check_against_numpy(lambda xp, a: xp.full_like(a, 3, dtype=dtype), np.ones((2, 2), np.int32))
    # empty: only shape and dtype are defined.
    for got in (tracejit.jit(lambda a: jnp.empty((2, 3), dtype))(np.float32(0)),
                tracejit.jit(lambda a: jnp.empty_like(a, dtype=dtype))(np.ones((2, 3)))):
        ref = np.empty((2, 3), dtype)
        assert got.shape == ref.shape and got.dtype == ref.dtype


def test_full_with_traced_value():
    # np.full converts its fill value with asarray, so only the tracejit.numpy path can trace it.
    check_against_numpy(lambda xp, a: xp.full((2, 3), a), np.float32(2.5), np_protocol=False)
    check_against_numpy(lambda xp, a: xp.full((2, 3), a, dtype=np.int64), np.float32(2.5), np_protocol=False)
    check_against_numpy(lambda xp, a: xp.full((2, 3), a[0]), np.array([1, 2], np.int32), np_protocol=False)
    check_against_numpy(lambda xp, a: xp.full_like(a, a[0]), np.array([1.5, 2.0]))
    check_against_numpy(lambda xp, a: xp.full((2, 3), a), np.array([1.0, 2.0, 3.0]), np_protocol=False)
    with pytest.raises(tracejit.TracerArrayConversionError):
        tracejit.jit(lambda a: np.full((2, 3), a))(np.float32(2.5))


@pytest.mark.parametrize("args", [(5,), (2, 7), (1, 2, 0.25), (0,), (5, 2), (3, -4, -2), (0.5, 2.0, 0.5),
                                  (-3, 3), (10, 0, -3)], ids=repr)
def test_arange(args):
    check_against_numpy(lambda xp, a: (xp.arange(*args), a), np.float32(0))
    for dtype in (np.int32, np.float32, np.float64):
        check_against_numpy(lambda xp, a: xp.arange(*args, dtype=dtype), np.float32(0))
    check_against_numpy(lambda xp, a: xp.arange(*args) * a, np.float32(2))


@pytest.mark.parametrize("kw", [dict(num=5), dict(num=1), dict(num=0), dict(num=7, endpoint=False),
                                dict(num=4, dtype=np.float32), dict(num=6, dtype=np.int32)], ids=repr)
def test_linspace(kw):
    check_against_numpy(lambda xp, a: xp.linspace(0, 1, **kw), np.float32(0), transcendental=True)
    check_against_numpy(lambda xp, a: xp.linspace(-2.5, 10, **kw), np.float32(0), transcendental=True)
    # Traced bounds.
    check_against_numpy(lambda xp, a, b: xp.linspace(a, b, **kw), np.float64(-1.0), np.float64(3.0),
                        transcendental=True)
    check_against_numpy(lambda xp, a, b: xp.linspace(a, b, **kw), np.float32(-1.0), np.float32(3.0),
                        transcendental=True)


def test_linspace_retstep_and_vector_bounds():
    check_against_numpy(lambda xp, a: xp.linspace(0.0, a, 5, retstep=True), np.float64(2.0), transcendental=True)
    check_against_numpy(lambda xp, a, b: xp.linspace(a, b, 4), np.zeros(2), np.array([1.0, 3.0]),
                        transcendental=True)


@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 3, 1), (3, 3, -1), (3, None, 5)], ids=repr)
def test_eye(args):
    for dtype in (float, np.int32, np.bool_, np.float32):
        check_against_numpy(lambda xp, a: xp.eye(*args, dtype=dtype), np.float32(0))
    check_against_numpy(lambda xp, a: xp.eye(*args) * a, np.float32(3))
    check_against_numpy(lambda xp, a: xp.identity(3) + a, np.float32(3))


def test_array_and_asarray():
    check_against_numpy(lambda xp, a: xp.array([a, a * 2]), np.float32(1.5), np_protocol=False)
    check_against_numpy(lambda xp, a: xp.asarray(a, dtype=np.float64), np.arange(3, dtype=np.int32), np_protocol=False)
    check_against_numpy(lambda xp, a: xp.array(a, ndmin=2), np.arange(3.0), np_protocol=False)
    check_against_numpy(lambda xp, a: xp.asarray([1, 2, 3]) + a, np.int32(1))


# ----------------------------------------------------------------------------- contractions

@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64, np.complex128, np.bool_],
                         ids=lambda d: np.dtype(d).name)
def test_dot_matmul(dtype):
    a = sample((3, 4), dtype, seed=1)
    b = sample((4, 2), dtype, seed=2)
    v = sample((4,), dtype, seed=3)
    w = sample((3,), dtype, seed=4)
    tr = np.dtype(dtype).kind in "fc"
    for fn, args in [(lambda xp, x, y: xp.dot(x, y), (a, b)), (lambda xp, x, y: x @ y, (a, b)),
                     (lambda xp, x, y: xp.matmul(x, y), (a, b)), (lambda xp, x, y: x @ y, (a, v)),
                     (lambda xp, x, y: x @ y, (w, a)), (lambda xp, x, y: x @ y, (v, v)),
                     (lambda xp, x, y: xp.dot(x, y), (v, v)), (lambda xp, x, y: xp.dot(x, y), (a, v)),
                     (lambda xp, x, y: x.dot(y), (w, a)), (lambda xp, x, y: xp.outer(x, y), (v, w)),
                     (lambda xp, x, y: xp.outer(x, y), (a, b)), (lambda xp, x, y: xp.dot(x, 2), (a, b)),
                     (lambda xp, x, y: xp.inner(x, y), (a, v)), (lambda xp, x, y: xp.vdot(x, y), (v, v))]:
        check_against_numpy(fn, *args, reassoc=tr)


def test_matmul_batched_and_broadcast():
    a = sample((5, 3, 4), np.float64, seed=1)
    b = sample((5, 4, 2), np.float64, seed=2)
    c = sample((4, 2), np.float64, seed=3)
    d = sample((2, 1, 3, 4), np.float32, seed=4)
    e = sample((6, 4, 2), np.float32, seed=5)
    v = sample((4,), np.float64, seed=6)
    for fn, args in [(lambda xp, x, y: x @ y, (a, b)), (lambda xp, x, y: x @ y, (a, c)),
                     (lambda xp, x, y: x @ y, (c.T, a.transpose(0, 2, 1))), (lambda xp, x, y: x @ y, (d, e)),
                     (lambda xp, x, y: x @ y, (a, v)), (lambda xp, x, y: y @ x, (b, v)),
                     (lambda xp, x, y: xp.dot(x, y), (a, c))]:
        check_against_numpy(fn, *args, reassoc=True)


def test_matmul_errors():
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(4, 2\)"):
        tracejit.jit(lambda x, y: x @ y)(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="scalar"):
        tracejit.jit(lambda x: jnp.matmul(x, 2.0))(np.ones((2, 3)))
    with pytest.raises(ValueError, match="not aligned"):
        tracejit.jit(lambda x, y: jnp.dot(x, y))(np.ones((2, 3)), np.ones(2))


@pytest.mark.parametrize("spec,shapes", [("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
                                         ("i,i->", [(4,), (4,)]), ("ij->ji", [(3, 4)]), ("ij->", [(3, 4)]),
                                         ("ij,j->i", [(3, 4), (4,)]), ("i,j->ij", [(3,), (4,)]),
                                         ("ij,jk", [(3, 4), (4, 2)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
                                         ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]), ("ij->i", [(3, 4)])])
def test_einsum(spec, shapes):
    args = [sample(s, np.float64, seed=i) for i, s in enumerate(shapes)]
    check_against_numpy(lambda xp, *ops: xp.einsum(spec, *ops), *args, reassoc=True)
    ints = [a.astype(np.int32) for a in args]
    check_against_numpy(lambda xp, *ops: xp.einsum(spec, *ops), *ints)


def test_tensordot_kron():
    a = sample((2, 3, 4), np.float64, seed=1)
    b = sample((3, 4, 5), np.float64, seed=2)
    check_against_numpy(lambda xp, x, y: xp.tensordot(x, y), a, b, reassoc=True)
    check_against_numpy(lambda xp, x, y: xp.tensordot(x, y, axes=([1], [0])), a, b, reassoc=True)
    check_against_numpy(lambda xp, x, y: xp.kron(x, y), a[0], b[0, :2])


# ----------------------------------------------------------------------------- astype and dtype names

@pytest.mark.parametrize("src", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("dst", ALL_DTYPES, ids=DTYPE_IDS)
def test_astype(src, dst):
    from helpers import special_values
    x = special_values(src)
    if np.dtype(src).kind in "fc" and np.dtype(dst).kind in "iub":
        x = x[np.isfinite(x)]
        x = x[np.abs(x) < 1e9] if np.dtype(dst).kind != "b" else x  # out-of-range float->int is undefined
    check_against_numpy(lambda xp, a: a.astype(dst), x)
    check_against_numpy(lambda xp, a: xp.astype(a, dst), x, np_protocol=False)


def test_dtype_names_and_constants():
    for name in ("float32", "float64", "int32", "int64", "bool_", "complex64", "complex128", "int8", "uint8",
                 "float16", "uint32"):
        assert np.dtype(getattr(jnp, name)) == np.dtype(getattr(np, name))
    for name in ("pi", "e", "inf", "nan"):
        assert np.asarray(getattr(jnp, name)).tobytes() == np.asarray(getattr(np, name)).tobytes()
    assert jnp.newaxis is None
    check_against_numpy(lambda xp, a: a * xp.pi + xp.e, np.arange(3, dtype=np.float32))
    check_against_numpy(lambda xp, a: xp.where(a > 1, xp.inf, xp.nan), np.arange(3.0))
    got = tracejit.jit(lambda a: jnp.zeros(3, jnp.int32) + a)(np.int32(1))
    assert_same(got, np.ones(3, np.int32))


@pytest.mark.parametrize("shape", [(4, 6), (24,), (2, 12), (4, 3, 2), (-1, 2), (2, 3, 4)])
def test_reshape_and_ravel_in_fortran_order_on_traced_arrays(shape):
    # order='F' raised NotImplementedError under jit; JAX supports it. Values, the array methods,
    # a strided input and the gradient (the inverse permutation of elements).
    x = np.arange(24.0).reshape(2, 3, 4)[:, ::-1]
    want = np.reshape(x, shape, order="F")
    for f in (lambda a: jnp.reshape(a, shape, order="F"), tracejit.jit(lambda a: jnp.reshape(a, shape, order="F")),
              tracejit.jit(lambda a: a.reshape(shape, order="F"))):
        np.testing.assert_array_equal(np.asarray(f(x)), want)
    np.testing.assert_array_equal(np.asarray(tracejit.jit(lambda a: jnp.ravel(a, order="F"))(x)), np.ravel(x, order="F"))
    w = np.arange(24.0).reshape(want.shape)
    g = tracejit.grad(lambda a: (jnp.reshape(a, shape, order="F") * w).sum())(x)
    np.testing.assert_array_equal(np.asarray(g), np.reshape(w, x.shape, order="F"))
    with pytest.raises(NotImplementedError, match="order='A'"):
        tracejit.jit(lambda a: jnp.reshape(a, shape, order="A"))(x)


@pytest.mark.parametrize("case", [
    (np.float32(1), np.float32(1000), 4, {}), (-1.0, -1000.0, 5, {}),
    (np.array([2.0, -1.0, 1.0], np.float32), np.array([-0.4, -8.0, 100.0], np.float32), 4, {}),
    (1.0, 256.0, 9, {"endpoint": False}), (1 + 1j, 100.0 + 0j, 5, {}),
    (np.array([1.0, 2.0]), np.array([10.0, 20.0]), 3, {"axis": 1}), (1.0, 8.0, 4, {"dtype": np.int32}),
    (2.0, 3.0, 1, {}), (2.0, 3.0, 0, {}), (np.float32(3), 9.0, 3, {"dtype": np.float32})], ids=str)
def test_geomspace_under_jit_matches_numpy(case):
    # Under jit it was log10 + logspace: NaN for negative ends, float32 where NumPy gives float64,
    # inexact end points; it now follows NumPy's algorithm (sign factored out, ends set exactly).
    a, b, n, kw = case
    with np.errstate(all="ignore"):
        want = np.geomspace(a, b, n, **kw)
    got = np.asarray(tracejit.jit(lambda a, b: jnp.geomspace(a, b, n, **kw))(a, b))
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)
    if n > 1 and kw.get("endpoint", True) and "dtype" not in kw and want.dtype.kind == "f":   # (complex: 1 ulp)
        np.testing.assert_array_equal(np.take(got, [0, -1], axis=kw.get("axis", 0)),
                                      np.take(want, [0, -1], axis=kw.get("axis", 0)))


def test_complex_sign_on_traced_arrays_matches_numpy():
    # NumPy 2's z / |z| with its special values; it raised NotImplementedError under jit.
    z = np.array([0j, -0.0 + 0j, 3 + 4j, complex(np.inf, 1), complex(np.inf, np.inf), complex(1, np.nan),
                  complex(-np.inf, 0), complex(0, -np.inf), complex(1e-320, 1e-320), complex(1e308, 1e308),
                  complex(np.nan, np.inf), complex(-2, 0)])
    for zz in (z, z.astype(np.complex64)):
        with np.errstate(all="ignore"):
            want = np.sign(zz)
        got = np.asarray(tracejit.jit(jnp.sign)(zz))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-15 if zz.dtype == np.complex128 else 1e-6)
    assert float(tracejit.grad(lambda x: jnp.sign(x * (1 + 1j)).real)(2.0)) == 0.0    # as JAX: zero derivative
