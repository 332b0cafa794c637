"""custom_batching, custom_derivatives, dlpack and
conv_general_dilated_local (issue 14)."""
import numpy as np
import pytest

import tracejit as tj
from tracejit import custom_batching, custom_derivatives, dlpack, lax


def _f_with_rule(calls):
    @custom_batching.custom_vmap
    def f(x, y):
        return x * 2.0 + y

    @f.def_vmap
    def rule(n, in_batched, x, y):
        calls.append((n, list(in_batched)))
        return f(x, y) + 100.0, in_batched[0] or in_batched[1]
    return f


def test_custom_vmap_rule_runs_under_vmap_only():
    calls = []
    f = _f_with_rule(calls)
    np.testing.assert_array_equal(f(np.ones(2), 1.0), [3.0, 3.0])
    assert calls == []
    out = tj.vmap(f, in_axes=(0, None))(np.ones((3, 2)), 1.0)
    np.testing.assert_array_equal(out, np.full((3, 2), 103.0))
    assert calls == [(3, [True, False])]
    np.testing.assert_array_equal(tj.jit(tj.vmap(f, in_axes=(0, None)))(np.ones((3, 2)), 1.0), 103.0)
    np.testing.assert_array_equal(tj.jit(lambda x: f(x, 1.0))(np.ones(2)), [3.0, 3.0])
    np.testing.assert_array_equal(tj.grad(lambda x: f(x, 1.0).sum())(np.ones(2)), [2.0, 2.0])
    assert tj.vmap(tj.vmap(f, in_axes=(0, None)), in_axes=(0, None))(np.ones((4, 3, 2)), 1.0).shape == (4, 3, 2)


def test_custom_vmap_errors():
    @custom_batching.custom_vmap
    def g(x):
        return x

    with pytest.raises(AttributeError, match="def_vmap"):
        tj.jit(g)(np.ones(2))

    @g.def_vmap
    def bad(n, in_batched, x):
        return x[0], True                                # claims batched, lost the batch axis
    with pytest.raises(ValueError, match="shape"):
        tj.vmap(g)(np.ones((3, 2)))


def test_sequential_vmap():
    seen = []

    def body(x, y):
        seen.append(np.shape(x))
        return x.sum() + y
    g = custom_batching.sequential_vmap(body)
    np.testing.assert_array_equal(tj.vmap(g, in_axes=(0, None))(np.arange(6.0).reshape(3, 2), 1.0), [2, 6, 10])
    assert all(s == (2,) for s in seen)                   # the body only ever sees one example
    np.testing.assert_array_equal(g(np.ones(2), 0.0), 2.0)


def test_custom_derivatives_module():
    assert custom_derivatives.custom_jvp is tj.custom_jvp
    assert custom_derivatives.custom_vjp is tj.custom_vjp
    assert custom_derivatives.closure_convert is tj.closure_convert


def test_dlpack():
    x = np.arange(6.0).reshape(2, 3)
    a = dlpack.from_dlpack(x)
    assert isinstance(a, tj.Array)
    np.testing.assert_array_equal(a, x)
    b = dlpack.from_dlpack(a)                               # Array exports __dlpack__ (ndarray subclass)
    np.testing.assert_array_equal(b, x)
    assert a.__dlpack_device__()[0] == 1                  # kDLCPU
    c = dlpack.from_dlpack(x, copy=True)
    x[0, 0] = 7.0
    assert c[0, 0] == 0.0
    assert dlpack.is_supported_dtype(np.int32) and not dlpack.is_supported_dtype(np.str_)
    with pytest.raises(TypeError, match="__dlpack__"):
        dlpack.from_dlpack([1, 2])


@pytest.mark.parametrize("dn", [None, ("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NHWC")])
def test_conv_general_dilated_local_vs_jax(dn):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(0)
    dnn = jax.lax.conv_dimension_numbers((1,) * 4, (1,) * 4, dn)
    for pad in ["VALID", "SAME", [(1, 0), (2, 1)]]:
        x = rng.normal(size=(2, 7, 6, 3) if dn and dn[0] == "NHWC" else (2, 3, 7, 6))
        pat = jax.lax.conv_general_dilated_patches(x, (3, 2), (2, 1), pad, dimension_numbers=dn)
        std = np.transpose(np.asarray(pat), dnn.out_spec).shape
        k = np.transpose(rng.normal(size=(4,) + std[1:]), np.argsort(dnn.rhs_spec))
        want = jax.lax.conv_general_dilated_local(x, k, (2, 1), pad, (3, 2), dimension_numbers=dn)
        got = lax.conv_general_dilated_local(x, k, (2, 1), pad, (3, 2), dimension_numbers=dn)
        np.testing.assert_allclose(got, np.asarray(want), atol=1e-12)
    gj = jax.grad(lambda k: jax.lax.conv_general_dilated_local(x, k, (2, 1), pad, (3, 2),
                                                               dimension_numbers=dn).sum())(k)
    g = tj.grad(lambda k: lax.conv_general_dilated_local(x, k, (2, 1), pad, (3, 2), dimension_numbers=dn).sum())(k)
    np.testing.assert_allclose(g, np.asarray(gj), atol=1e-12)


def test_conv_general_dilated_local_small():
    out = lax.conv_general_dilated_local(np.arange(4.0).reshape(1, 1, 4), np.ones((1, 2, 3)), (1,), "VALID", (2,))
    np.testing.assert_array_equal(out, [[[1.0, 3.0, 5.0]]])
    with pytest.raises(TypeError, match="I = C"):
        lax.conv_general_dilated_local(np.ones((1, 1, 4)), np.ones((1, 3, 3)), (1,), "VALID", (2,))
