"""NumPy's in-place semantics under jit (issue 16, tracejit/functionalize): every case runs the
same function eagerly on copies of the inputs and compares the results and the arguments."""
import inspect

import numpy as np
import pytest

import tracejit as jax
import tracejit.numpy as jnp
import tracejit


def check(f, *args):
    """jit(f) and f on copies: equal results and equal argument arrays afterwards."""
    eager_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    expected = f(*eager_args)
    got = jax.jit(f)(*args)
    for e, g in zip(expected if isinstance(expected, tuple) else (expected,),
                    got if isinstance(got, tuple) else (got,)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))
    for e, g in zip(eager_args, args):
        if isinstance(e, np.ndarray):
            np.testing.assert_array_equal(g, e)
            assert g.dtype == e.dtype


def x23():
    return np.arange(6.0).reshape(2, 3)


# ------------------------------------------------------------------ two semantics
def test_alias_then_iadd_numpy_vs_jax():
    def f(x):
        y = x
        x += 1
        return x + y
    a = np.arange(3.0)
    np.testing.assert_array_equal(jax.jit(f)(a), [2.0, 4.0, 6.0])        # NumPy: y is x
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0])                     # written back
    b = jnp.asarray(np.arange(3.0))
    np.testing.assert_array_equal(jax.jit(f)(b), [1.0, 3.0, 5.0])        # JAX: x rebinds
    np.testing.assert_array_equal(b, [0.0, 1.0, 2.0])


def test_jax_semantics_kept():
    b = jnp.asarray(np.arange(3.0))
    with pytest.raises(TypeError, match="does not support item assignment. JAX arrays are immutable"):
        jax.jit(lambda x: x.__setitem__(0, 1.0))(b)
    with pytest.raises(TypeError, match="immutable"):                     # jnp results too
        def g(x):
            y = jnp.sin(x)
            y[0] = 1.0
        jax.jit(g)(np.arange(3.0))
    # np.* results are NumPy arrays even from JAX values
    def h(x):
        y = np.zeros_like(jnp.sin(x))
        y[1] = 5.0
        return y
    check(h, np.arange(3.0))


# ------------------------------------------------------------------ index forms
@pytest.mark.parametrize("idx", [1, -1, (1, 2), slice(None, None, 2), slice(None, None, -2),
                                 (Ellipsis, 1), (None, 0), (slice(1, None), None),
                                 ([0, 1], [2, 0]), (np.array([1, 1, 0]),), Ellipsis])
def test_setitem_index_forms(idx):
    def f(x):
        x[idx] = 7.0
        return x * 2
    check(f, x23())


def test_setitem_values_and_casting():
    def f(x, v):
        x[0] = v
        x[1, ::-1] = np.array([1.9, 2.9, 3.9])
        return x
    check(f, np.arange(6).reshape(2, 3), np.arange(3.0))
    check(lambda x: x.__setitem__(slice(None), 1.5), np.zeros(3, np.float32))


def test_repeated_indices_set_and_iadd():
    def f(x, v):
        x[np.array([1, 1, 3, 1])] += v
        x[np.array([0, 0])] = np.array([5.0, 6.0])
        return x
    check(f, np.zeros(5), np.array([1.0, 2.0, 3.0, 4.0]))

    def g(x, i):            # traced repeated indices
        x[i] += 10.0
        return x
    check(g, np.zeros(4), np.array([2, 2, 0]))


def test_boolean_masks():
    check(lambda x: x.__setitem__(x > 2, 0.0) or x, np.arange(6.0))
    check(lambda x: x.__setitem__(x[:, 0] > 1, -1.0) or x, x23())
    mask = np.array([True, False, True])
    check(lambda x: x.__setitem__(mask, np.array([8.0, 9.0])) or x, np.arange(3.0))
    with pytest.raises(NotImplementedError, match="traced boolean mask"):
        jax.jit(lambda x: x.__setitem__(x > 2, np.ones(2)))(np.arange(5.0))


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/=", "//=", "%=", "**=", "@="])
def test_augmented_float(op):
    src = f"def f(x, y):\n    z = x\n    x {op} y\n    return z + 0\n"
    ns = {}
    exec(src, ns)
    y = np.eye(3) + 1.0
    check(ns["f"], np.arange(9.0).reshape(3, 3) + 1, y)


@pytest.mark.parametrize("op", ["&=", "|=", "^=", "<<=", ">>="])
def test_augmented_int(op):
    ns = {}
    exec(f"def f(x, y):\n    x {op} y\n    return x\n", ns)
    check(ns["f"], np.arange(6), np.array([1, 2, 1, 2, 1, 2]))


def test_augmented_casting_error():
    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' output"):
        jax.jit(lambda x: x.__iadd__(1.5))(np.arange(3))


# ------------------------------------------------------------------ out= and in-place functions
def test_ufunc_out_and_reductions():
    def f(a, b, c, s):
        np.add(a, b, out=c)
        np.sum(a, axis=0, out=s)
        np.multiply(c[:1], 2, out=c[1:])          # overlapping views of one array
        np.add.reduce(b, axis=1, out=s[::-1][:2])
        return c + 0, s + 0
    check(f, x23(), x23() * 2, np.zeros((2, 3)), np.zeros(3))
    with pytest.raises(TypeError, match="Cannot cast ufunc"):
        jax.jit(lambda a, c: np.add(a, 0.5, out=c))(np.ones(2), np.zeros(2, np.int64))


def test_inplace_functions():
    def f(x, v):
        np.copyto(x[0], v)
        np.copyto(x[1], 3.0, where=v > 1)
        y = np.empty_like(v)
        y.fill(2.5)
        np.put(x, [0, 5, -1], [10.0, 11.0])
        np.place(v, v > 0.5, [7.0, 8.0])
        np.putmask(y, np.array([True, False, True]), np.array([1.0, 2.0]))
        return x, v, y
    check(f, x23(), np.array([0.0, 1.5, 2.0]))

    def g(x):
        x[1].sort()
        np.fill_diagonal(x, -1.0)
        x.sort(axis=0)
        return x
    check(g, np.array([[3.0, 1.0, 2.0], [9.0, 7.0, 8.0], [0.0, 5.0, 4.0]]))
    check(lambda x: np.fill_diagonal(x, [1.0, 2.0], wrap=True) or x, np.zeros((5, 2)))
    with pytest.raises(NotImplementedError, match="mode='wrap'"):
        jax.jit(lambda x, i: np.put(x, i, 1.0))(np.zeros(3), np.array([1]))
    with pytest.raises(IndexError, match="out of bounds"):
        jax.jit(lambda x: x.__setitem__(np.array([5]), 1.0))(np.zeros(3))


# ------------------------------------------------------------------ views alias
def test_views_alias():
    def f(x):
        s = x[:, 1:]
        t = x.T
        r = x.reshape(3, 2)
        s[0, 0] = 100.0           # write through a slice view: base and other views see it
        t[2, 1] = -1.0            # through .T
        r[0] = 55.0               # through reshape
        x[1, 0] = 42.0            # base write seen by views
        return s + 0, t + 0, r + 0, x[::-1][0] + 0
    check(f, x23())

    def g(x):
        row = x[1]
        row += 1                  # in-place on a view changes x
        sub = row[::2]
        sub *= 10
        c = x[[0, 1]]             # advanced indexing: a copy
        c[:] = 0
        return x + 0, c + 0, row + 0
    check(g, x23())


def test_reshape_copy_when_numpy_copies():
    def f(x):
        r = x.T.reshape(-1)       # NumPy copies (non-contiguous)
        r[0] = 99.0
        v = np.transpose(x)[::-1]
        x[0, 0] = -3.0
        return r, v + 0, np.flip(x)
    check(f, x23())


def test_local_buffers_and_creation():
    def f(x):
        out = np.zeros_like(x)
        out[1:] = x[:-1]
        out[0] = x[-1]
        c = np.copy(x)
        c[0] = 100.0
        return out, c, x
    check(f, np.arange(4.0))


# ------------------------------------------------------------------ arguments
def test_write_back_layouts():
    def f(x):
        x[0] += 5
        x *= 2
        return x.sum()
    base = np.arange(12.0)
    strided = base[::2]
    check(f, strided)
    neg = np.arange(6.0)[::-1]
    check(f, neg)
    fortran = np.asfortranarray(x23())
    check(f, fortran)
    ints = np.arange(3, dtype=np.int32)
    check(f, ints)
    # the argument's buffer itself is written (views of it see the result)
    b2 = np.arange(12.0)
    jax.jit(f)(b2[::2])
    np.testing.assert_array_equal(b2[1::2], np.arange(1.0, 12.0, 2))
    np.testing.assert_array_equal(b2[::2], (np.arange(0, 12.0, 2) + np.array([5, 0, 0, 0, 0, 0])) * 2)


def test_scalars_and_empty():
    def f(x, e):
        x[...] = x + 1
        e += 1
        return x, e
    check(f, np.array(3.0), np.zeros((0, 2)))
    check(lambda x: x.fill(4) or x, np.array(1))


def test_read_only_argument():
    a = np.arange(3.0)
    a.flags.writeable = False
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        jax.jit(lambda x: x.__setitem__(0, 1.0))(a)
    np.testing.assert_array_equal(jax.jit(lambda x: x * 2)(a), [0.0, 2.0, 4.0])   # reading is fine


def test_mutated_args_listed_and_cached():
    def f(x, y):
        y[0] = x.sum()
        return x * 2
    jf = jax.jit(f)
    c = jf.lower(np.ones(3), np.zeros(2)).compile()
    assert "mutated arguments" in c.as_text() and "leaf 1" in c.as_text()
    for _ in range(3):            # cached calls write back too
        y = np.zeros(2)
        jf(np.ones(3), y)
        assert y[0] == 3.0
    y = np.zeros(2)
    c(np.ones(3), y)
    assert y[0] == 3.0
    assert "mutated" not in jax.jit(lambda x: x + 1).lower(np.ones(2)).compile().as_text()


def test_nested_jit_writes_caller_array():
    inner = jax.jit(lambda v: v.__setitem__(0, 9.0))

    def f(x):
        inner(x)
        return x + 0
    check(f, np.arange(3.0))


def test_shared_memory_arguments_rejected():
    a = np.arange(4.0)
    with pytest.raises(NotImplementedError, match="share memory"):
        jax.jit(lambda x, y: x.__setitem__(0, 1.0))(a, a[1:])


# ------------------------------------------------------------------ transformations
def _buffered(x):
    buf = np.zeros_like(x)
    buf[1:] = x[:-1] * x[1:]
    buf[0] = x[0]
    buf += 1.0
    return (buf * buf).sum()


def test_grad_and_vmap_of_local_buffers():
    x = np.array([1.0, 2.0, 3.0])
    eps = 1e-6
    num = [(_buffered(x + eps * e) - _buffered(x - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(jax.grad(_buffered)(x), num, rtol=1e-5)
    np.testing.assert_allclose(jax.jit(jax.grad(_buffered))(x), num, rtol=1e-5)
    xs = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(jax.vmap(_buffered)(xs), [_buffered(r) for r in xs])


def test_write_inside_control_flow_body_is_an_error():
    def f(x):
        def body(i, c):
            x[0] = c
            return c
        return jax.lax.fori_loop(0, 2, body, 1.0)
    with pytest.raises(NotImplementedError, match="cannot leave that"):
        jax.jit(f, autograph=False)(np.zeros(3)) if "autograph" in jax.jit.__code__.co_varnames else jax.jit(f)(np.zeros(3))


def test_element_read_is_a_copy_not_a_view():
    # x[1, 2] is a NumPy scalar (a copy): a later write to x does not change it.
    def f(x):
        s = x[1, 2]
        t = x[-1, 0]
        x[1, 2] = 10.0
        x[-1, 0] += 1.0
        return s + 0, t * 1
    check(f, x23())


def test_jnp_results_are_jax_arrays_under_jit():
    # Regression: jnp.asarray(x), jnp.copy(x), jnp.reshape(x, x.shape), np.real(x)... of a NumPy
    # array argument handed x itself back, so `y += 1` on the result wrote into x.
    hits = []

    def probe(x):
        for name in sorted(dir(jnp)):
            fn = getattr(jnp, name)
            if name.startswith("_") or not callable(fn) or inspect.isclass(fn):
                continue
            for args in ((x,), (x, x.shape), (x, x.dtype), (x, 0), (x, None)):
                try:
                    out = fn(*args)
                except Exception:
                    continue
                outs = out if isinstance(out, (tuple, list)) else (out,)
                if any(o is x or getattr(o, "_np", None) is not None for o in outs):
                    hits.append(name)
                break
        return x.sum()
    tracejit.jit(probe)(np.ones((3, 3)))
    assert hits == []

    def others(x):
        outs = [tracejit.lax.bitcast_convert_type(x, x.dtype), tracejit.lax.optimization_barrier(x),
                tracejit.nn.identity(x), tracejit.device_put(x)]
        assert all(o._np is None for o in outs)
        return x.sum()
    tracejit.jit(others)(np.ones(3))

    def g(x):
        y = jnp.asarray(x)
        t = y[:3]
        t += 1.0
        return y
    np.testing.assert_array_equal(tracejit.jit(g)(np.zeros(5)), np.zeros(5))
