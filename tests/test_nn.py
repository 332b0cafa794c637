"""tracejit.nn (jax.nn): activations, softmax family, standardize, one_hot, dot_product_attention and
initializers, checked against float64 NumPy formulas written here, eagerly, under jit, vmap and grad
(finite differences), plus JAX's derivative conventions at kinks."""
import math

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import nn, random
from tracejit.nn import initializers as init

RNG = np.random.default_rng(0)
X = np.concatenate([np.linspace(-6, 6, 25) + 0.013, [-0.7, 0.3, 1.7, 4.2]])   # avoids the kinks


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


_erfc = np.vectorize(math.erfc)
SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

# name -> (tracejit function, independent float64 reference)
ACTIVATIONS = {
    "relu": (nn.relu, lambda x: np.where(x > 0, x, 0.0)),
    "relu6": (nn.relu6, lambda x: np.clip(x, 0, 6)),
    "sigmoid": (nn.sigmoid, _sig),
    "softplus": (nn.softplus, _softplus),
    "sparse_plus": (nn.sparse_plus, lambda x: np.piecewise(x, [x <= -1, (x > -1) & (x < 1), x >= 1],
                                                            [0.0, lambda v: (v + 1) ** 2 / 4, lambda v: v])),
    "sparse_sigmoid": (nn.sparse_sigmoid, lambda x: np.piecewise(x, [x <= -1, (x > -1) & (x < 1), x >= 1],
                                                                  [0.0, lambda v: (v + 1) / 2, 1.0])),
    "soft_sign": (nn.soft_sign, lambda x: x / (1 + np.abs(x))),
    "silu": (nn.silu, lambda x: x * _sig(x)),
    "swish": (nn.swish, lambda x: x * _sig(x)),
    "log_sigmoid": (nn.log_sigmoid, lambda x: np.log(_sig(x))),
    "leaky_relu": (nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x)),
    "leaky_relu_0.2": (lambda x: nn.leaky_relu(x, 0.2), lambda x: np.where(x >= 0, x, 0.2 * x)),
    "hard_sigmoid": (nn.hard_sigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    "hard_silu": (nn.hard_silu, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "hard_swish": (nn.hard_swish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "hard_tanh": (nn.hard_tanh, lambda x: np.clip(x, -1, 1)),
    "elu": (nn.elu, lambda x: np.where(x > 0, x, np.exp(np.minimum(x, 0)) - 1)),
    "elu_2": (lambda x: nn.elu(x, 2.0), lambda x: np.where(x > 0, x, 2 * (np.exp(np.minimum(x, 0)) - 1))),
    "celu_0.5": (lambda x: nn.celu(x, 0.5), lambda x: np.where(x > 0, x, 0.5 * (np.exp(np.minimum(x, 0) / 0.5) - 1))),
    "selu": (nn.selu, lambda x: SELU_S * np.where(x > 0, x, SELU_A * (np.exp(np.minimum(x, 0)) - 1))),
    "gelu": (nn.gelu, lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    "gelu_exact": (lambda x: nn.gelu(x, approximate=False), lambda x: 0.5 * x * _erfc(-x / np.sqrt(2))),
    "squareplus": (nn.squareplus, lambda x: (x + np.sqrt(x * x + 4)) / 2),
    "squareplus_1": (lambda x: nn.squareplus(x, 1.0), lambda x: (x + np.sqrt(x * x + 1)) / 2),
    "mish": (nn.mish, lambda x: x * np.tanh(_softplus(x))),
    "tanh": (nn.tanh, np.tanh),
    "identity": (nn.identity, lambda x: x),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_values_eager_jit_vmap(name):
    fn, ref = ACTIVATIONS[name]
    want = ref(X)
    np.testing.assert_allclose(fn(X), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tracejit.jit(fn)(X), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tracejit.vmap(fn)(X.reshape(29, 1)).ravel(), want, rtol=1e-12, atol=1e-14)
    x32 = X.astype(np.float32)
    out32 = tracejit.jit(fn)(x32)
    assert out32.dtype == np.float32, out32.dtype
    np.testing.assert_allclose(out32, want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_grads_finite_differences(name):
    fn, ref = ACTIVATIONS[name]
    eps = 1e-6
    fd = (ref(X + eps) - ref(X - eps)) / (2 * eps)
    g = tracejit.vmap(tracejit.grad(fn))(X)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)
    g_jit = tracejit.jit(tracejit.vmap(tracejit.grad(fn)))(X)
    np.testing.assert_allclose(g_jit, fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tracejit.grad(lambda x: jnp.sum(fn(x)))(X), fd, rtol=1e-6, atol=1e-7)


def test_kink_derivatives_follow_jax():
    d = lambda f, x: float(tracejit.grad(f)(x))  # noqa: E731
    assert d(nn.relu, 0.0) == 0.0 and d(nn.relu, 1e-9) == 1.0
    assert float(tracejit.jit(tracejit.grad(nn.relu))(0.0)) == 0.0
    assert d(nn.relu6, 0.0) == 0.0 and d(nn.relu6, 6.0) == 0.0 and d(nn.relu6, 3.0) == 1.0
    assert d(nn.leaky_relu, 0.0) == 1.0                      # x >= 0 branch
    assert d(nn.hard_tanh, 1.0) == 1.0 and d(nn.hard_tanh, -1.0) == 1.0
    assert d(nn.elu, 0.0) == 1.0                              # where(x > 0, ...): the expm1 branch at 0
    np.testing.assert_allclose(d(nn.hard_sigmoid, -3.0), 0.0)  # relu6's rule at its kink
    # relu's jvp in forward mode and under vmap
    _, t = tracejit.jvp(nn.relu, (np.array([-1.0, 0.0, 2.0]),), (np.ones(3),))
    np.testing.assert_array_equal(t, [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(tracejit.vmap(tracejit.grad(nn.relu))(np.array([-1.0, 0.0, 2.0])), [0, 0, 1])


def test_gelu_exact_far_tail():
    x = np.array([-30.0, -12.0, -8.0])
    want = 0.5 * x * _erfc(-x / np.sqrt(2))
    np.testing.assert_allclose(nn.gelu(x, approximate=False), want, rtol=1e-12)
    np.testing.assert_allclose(tracejit.jit(lambda v: nn.gelu(v, approximate=False))(x), want, rtol=1e-12)


def test_relu_nan_and_integers():
    out = nn.relu(np.array([np.nan, -1.0]))
    assert np.isnan(out[0]) and out[1] == 0
    np.testing.assert_array_equal(nn.relu(np.array([-2, 3])), [0, 3])
    np.testing.assert_allclose(nn.sigmoid(np.array([0, 1])), [0.5, _sig(1.0)])


def test_glu():
    x = RNG.normal(size=(3, 4, 6))
    np.testing.assert_allclose(nn.glu(x), x[..., :3] * _sig(x[..., 3:]), rtol=1e-13)
    np.testing.assert_allclose(tracejit.jit(lambda v: nn.glu(v, axis=1))(x), x[:, :2] * _sig(x[:, 2:]), rtol=1e-13)
    with pytest.raises(ValueError):
        nn.glu(np.ones(3))


def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0, (0, 2), None])
def test_softmax_log_softmax(axis):
    x = RNG.normal(size=(3, 4, 5)) * 3
    want = _np_softmax(x, axis)
    for f in (nn.softmax, tracejit.jit(nn.softmax, static_argnums=1)):
        np.testing.assert_allclose(f(x, axis), want, rtol=1e-12)
    np.testing.assert_allclose(nn.log_softmax(x, axis), np.log(want), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(tracejit.jit(nn.log_softmax, static_argnums=1)(x, axis), np.log(want), rtol=1e-12,
                               atol=1e-13)


def test_softmax_stability_where_and_grad():
    big = np.array([1000.0, 1000.0, -1000.0])
    np.testing.assert_allclose(nn.softmax(big), [0.5, 0.5, 0.0], atol=1e-300)
    np.testing.assert_allclose(nn.log_softmax(big)[:2], [-np.log(2)] * 2)
    x = RNG.normal(size=(2, 5))
    mask = np.array([[True, False, True, True, False], [True, True, True, True, True]])
    got = tracejit.jit(lambda v, m: nn.softmax(v, where=m))(x, mask)
    want0 = np.where(mask[0], np.exp(x[0]), 0) / np.exp(x[0][mask[0]]).sum()
    np.testing.assert_allclose(got[0], want0, rtol=1e-12)
    np.testing.assert_allclose(got[1], _np_softmax(x[1], -1), rtol=1e-12)
    lsm = nn.log_softmax(x, where=mask)
    assert np.all(np.isneginf(lsm[0][~mask[0]]))
    np.testing.assert_allclose(lsm[0][mask[0]], np.log(want0[mask[0]]), rtol=1e-12)
    # gradient of a weighted softmax output vs finite differences
    w = RNG.normal(size=(2, 5))

    def loss(v):
        return jnp.sum(nn.softmax(v) * w) + jnp.sum(nn.log_softmax(v, axis=0) * w)

    def loss_np(v):
        return np.sum(_np_softmax(v, -1) * w) + np.sum(np.log(_np_softmax(v, 0)) * w)

    g = tracejit.jit(tracejit.grad(loss))(x)
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x); e[i] = 1e-6
        fd[i] = (loss_np(x + e) - loss_np(x - e)) / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    # vmap over rows
    np.testing.assert_allclose(tracejit.vmap(nn.softmax)(x), _np_softmax(x, -1), rtol=1e-12)


def test_logsumexp_logmeanexp_log1mexp():
    x = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(nn.logsumexp(x, axis=1), np.log(np.exp(x).sum(1)), rtol=1e-13)
    b = RNG.uniform(size=(3, 4))
    np.testing.assert_allclose(tracejit.jit(lambda v, w: nn.logsumexp(v, axis=0, b=w))(x, b),
                               np.log((b * np.exp(x)).sum(0)), rtol=1e-13)
    m = x > 0
    np.testing.assert_allclose(nn.logsumexp(x, axis=1, where=m),
                               np.log(np.where(m, np.exp(x), 0).sum(1)), rtol=1e-13)
    np.testing.assert_allclose(nn.logmeanexp(x, axis=1), np.log(np.exp(x).mean(1)), rtol=1e-13)
    np.testing.assert_allclose(nn.logmeanexp(x), np.log(np.exp(x).mean()), rtol=1e-13)
    v = np.array([1e-8, 0.3, 1.0, 5.0, 40.0])
    want = np.array([math.log(-math.expm1(-t)) if t < 1 else math.log1p(-math.exp(-t)) for t in v])
    np.testing.assert_allclose(nn.log1mexp(v), want, rtol=1e-13)


def test_standardize():
    x = RNG.normal(size=(4, 6)) * 2 + 1
    mu = x.mean(-1, keepdims=True)
    var = (x ** 2).mean(-1, keepdims=True) - mu ** 2
    np.testing.assert_allclose(nn.standardize(x), (x - mu) / np.sqrt(var + 1e-5), rtol=1e-10)
    np.testing.assert_allclose(tracejit.jit(lambda v: nn.standardize(v, axis=0, epsilon=0.1))(x),
                               (x - x.mean(0)) / np.sqrt((x ** 2).mean(0) - x.mean(0) ** 2 + 0.1), rtol=1e-10)
    np.testing.assert_allclose(nn.standardize(x, mean=1.0, variance=4.0, epsilon=0.0), (x - 1) / 2, rtol=1e-14)
    m = x > 0.5
    got = nn.standardize(x, where=m)
    for r in range(4):
        sel = x[r][m[r]]
        mu_r = sel.mean(); var_r = (sel ** 2).mean() - mu_r ** 2
        np.testing.assert_allclose(got[r], (x[r] - mu_r) / np.sqrt(var_r + 1e-5), rtol=1e-10)


def test_one_hot():
    idx = np.array([0, 2, 1, -1, 3])
    want = np.zeros((5, 3)); want[[0, 1, 2], [0, 2, 1]] = 1
    out = nn.one_hot(idx, 3)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(tracejit.jit(lambda i: nn.one_hot(i, 3, axis=0))(idx), want.T)
    o32 = nn.one_hot(idx, 3, dtype=np.float32)
    assert o32.dtype == np.float32
    ob = nn.one_hot(idx.reshape(5, 1), 4, dtype=np.bool_, axis=1)
    assert ob.shape == (5, 4, 1) and ob.dtype == np.bool_ and ob[1, 2, 0] and not ob[3].any()
    np.testing.assert_array_equal(tracejit.vmap(lambda i: nn.one_hot(i, 3))(idx), want)


# ----------------------------------------------------------------------------------------- attention
def _ref_attention(q, k, v, bias=None, mask=None, scale=None, is_causal=False, q_len=None, kv_len=None,
                   window=None):
    B, T, N, H = q.shape
    S, K = k.shape[1], k.shape[2]
    G = N // K
    scale = 1 / np.sqrt(H) if scale is None else scale
    out = np.zeros_like(q)
    for b in range(B):
        for n in range(N):
            kh = n // G
            logits = (q[b, :, n, :] @ k[b, :, kh, :].T) * scale
            if bias is not None:
                logits = logits + np.broadcast_to(bias, (B, N, T, S))[b, n]
            ok = np.ones((T, S), bool)
            if mask is not None:
                ok &= np.broadcast_to(mask, (B, N, T, S))[b, n]
            for t in range(T):
                for s in range(S):
                    if is_causal and s > t:
                        ok[t, s] = False
                    if window is not None and not (t - window[0] <= s <= t + window[1]):
                        ok[t, s] = False
                    if q_len is not None and t >= q_len[b]:
                        ok[t, s] = False
                    if kv_len is not None and s >= kv_len[b]:
                        ok[t, s] = False
            logits = np.where(ok, logits, -0.7 * np.finfo(np.float64).max)
            out[b, :, n, :] = _np_softmax(logits, -1) @ v[b, :, kh, :]
            if q_len is not None and kv_len is not None:
                out[b, q_len[b]:, n, :] = 0
    return out


@pytest.mark.parametrize("N,K", [(4, 4), (4, 2), (4, 1)])
def test_dot_product_attention_basic_and_gqa(N, K):
    B, T, S, H = 2, 3, 5, 4
    q = RNG.normal(size=(B, T, N, H)); k = RNG.normal(size=(B, S, K, H)); v = RNG.normal(size=(B, S, K, H))
    want = _ref_attention(q, k, v)
    np.testing.assert_allclose(nn.dot_product_attention(q, k, v), want, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(tracejit.jit(nn.dot_product_attention)(q, k, v), want, rtol=1e-11, atol=1e-12)
    # unbatched (T, N, H) inputs
    np.testing.assert_allclose(nn.dot_product_attention(q[0], k[0], v[0]), want[0], rtol=1e-11, atol=1e-12)
    # vmap over the batch of unbatched calls
    np.testing.assert_allclose(tracejit.vmap(nn.dot_product_attention)(q, k, v), want, rtol=1e-11, atol=1e-12)


def test_dot_product_attention_masks_bias_lengths():
    B, T, S, N, K, H = 2, 4, 4, 2, 1, 3
    q = RNG.normal(size=(B, T, N, H)); k = RNG.normal(size=(B, S, K, H)); v = RNG.normal(size=(B, S, K, H))
    bias = RNG.normal(size=(1, N, T, S))
    mask = RNG.uniform(size=(B, 1, T, S)) > 0.3
    mask[..., 0] = True
    q_len, kv_len = np.array([4, 2], np.int32), np.array([3, 4], np.int32)
    cases = [
        dict(bias=bias), dict(mask=mask), dict(is_causal=True), dict(scale=0.7, bias=bias, is_causal=True),
        dict(kv_len=kv_len), dict(q_len=q_len, kv_len=kv_len), dict(window=(1, 0)), dict(window=(1, 1), mask=mask),
    ]
    for c in cases:
        kw = dict(bias=c.get("bias"), mask=c.get("mask"), scale=c.get("scale"), is_causal=c.get("is_causal", False),
                  query_seq_lengths=c.get("q_len"), key_value_seq_lengths=c.get("kv_len"),
                  local_window_size=c.get("window"))
        want = _ref_attention(q, k, v, c.get("bias"), c.get("mask"), c.get("scale"), c.get("is_causal", False),
                              c.get("q_len"), c.get("kv_len"), c.get("window"))
        np.testing.assert_allclose(nn.dot_product_attention(q, k, v, **kw), want, rtol=1e-11, atol=1e-12,
                                   err_msg=str(sorted(c)))
        f = tracejit.jit(lambda q, k, v: nn.dot_product_attention(q, k, v, **kw))
        np.testing.assert_allclose(f(q, k, v), want, rtol=1e-11, atol=1e-12, err_msg=str(sorted(c)))
    assert np.allclose(nn.dot_product_attention(q, k, v, local_window_size=1),
                       _ref_attention(q, k, v, window=(1, 1)))
    with pytest.raises(ValueError):
        nn.dot_product_attention(q, k, v, mask=mask.astype(np.float64))
    with pytest.raises(ValueError):
        nn.dot_product_attention(RNG.normal(size=(B, T, 3, H)), RNG.normal(size=(B, S, 2, H)),
                                 RNG.normal(size=(B, S, 2, H)))


def test_dot_product_attention_grad_and_float32():
    B, T, S, N, K, H = 1, 3, 4, 2, 1, 2
    q = RNG.normal(size=(B, T, N, H)); k = RNG.normal(size=(B, S, K, H)); v = RNG.normal(size=(B, S, K, H))

    def loss(q, k, v):
        return jnp.sum(nn.dot_product_attention(q, k, v, is_causal=True) ** 2)

    def loss_np(q, k, v):
        return np.sum(_ref_attention(q, k, v, is_causal=True) ** 2)

    grads = tracejit.jit(tracejit.grad(loss, argnums=(0, 1, 2)))(q, k, v)
    args = [q, k, v]
    for which in range(3):
        fd = np.zeros_like(args[which])
        for i in np.ndindex(fd.shape):
            plus = [a.copy() for a in args]; minus = [a.copy() for a in args]
            plus[which][i] += 1e-6; minus[which][i] -= 1e-6
            fd[i] = (loss_np(*plus) - loss_np(*minus)) / 2e-6
        np.testing.assert_allclose(grads[which], fd, rtol=1e-5, atol=1e-7)
    out32 = nn.dot_product_attention(q.astype(np.float32), k.astype(np.float32), v.astype(np.float32))
    assert out32.dtype == np.float32
    np.testing.assert_allclose(out32, _ref_attention(q, k, v), rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------------------- initializers
KEY = random.PRNGKey(42)


def test_simple_initializers():
    np.testing.assert_array_equal(init.zeros(KEY, (2, 3)), np.zeros((2, 3)))
    o = init.ones(KEY, (2,), np.float32)
    assert o.dtype == np.float32 and (o == 1).all()
    c = init.constant(3.5)(KEY, (4,))
    assert c.dtype == np.float64 and (c == 3.5).all()
    assert init.constant(2, dtype=np.float32)(KEY, (1,)).dtype == np.float32
    u = init.uniform(0.5)(KEY, (4000,))
    assert u.min() >= 0 and u.max() < 0.5 and abs(u.mean() - 0.25) < 0.01
    n = init.normal(2.0)(KEY, (20000,), np.float32)
    assert n.dtype == np.float32 and abs(n.std() - 2.0) < 0.05
    t = init.truncated_normal(1.5)(KEY, (20000,))
    assert np.abs(t).max() < 3.0 and 1.0 < t.std() < 1.5
    t2 = init.truncated_normal(1.0, lower=0.0, upper=1.0)(KEY, (1000,))
    assert t2.min() > 0 and t2.max() < 1
    # deterministic in the key, and the same under jit
    np.testing.assert_array_equal(init.normal()(KEY, (5,)), init.normal()(KEY, (5,)))
    np.testing.assert_allclose(tracejit.jit(lambda k: init.normal(1.0)(k, (5,)))(KEY), init.normal(1.0)(KEY, (5,)),
                               rtol=1e-15)


@pytest.mark.parametrize("name,scale,mode,dist", [
    ("glorot_uniform", 1.0, "fan_avg", "uniform"), ("glorot_normal", 1.0, "fan_avg", "truncated_normal"),
    ("xavier_uniform", 1.0, "fan_avg", "uniform"), ("xavier_normal", 1.0, "fan_avg", "truncated_normal"),
    ("lecun_uniform", 1.0, "fan_in", "uniform"), ("lecun_normal", 1.0, "fan_in", "truncated_normal"),
    ("he_uniform", 2.0, "fan_in", "uniform"), ("he_normal", 2.0, "fan_in", "truncated_normal"),
    ("kaiming_uniform", 2.0, "fan_in", "uniform"), ("kaiming_normal", 2.0, "fan_in", "truncated_normal"),
])
def test_variance_scaling_family(name, scale, mode, dist):
    shape = (3, 3, 40, 60)                       # conv kernel HWIO: receptive field 9
    fan_in, fan_out = 40 * 9, 60 * 9
    n = {"fan_in": fan_in, "fan_avg": (fan_in + fan_out) / 2}[mode]
    w = getattr(init, name)()(KEY, shape)
    assert w.shape == shape and w.dtype == np.float64
    np.testing.assert_allclose(w.var(), scale / n, rtol=0.05)
    if dist == "uniform":
        assert np.abs(w).max() <= np.sqrt(3 * scale / n)
    else:
        assert np.abs(w).max() < 2 * np.sqrt(scale / n) / 0.87962566103423978
    # the same as variance_scaling with those arguments
    np.testing.assert_array_equal(w, init.variance_scaling(scale, mode, dist)(KEY, shape))
    assert getattr(init, name)(dtype=np.float32)(KEY, (4, 5)).dtype == np.float32


def test_variance_scaling_modes_axes_errors():
    w = init.variance_scaling(1.0, "fan_out", "normal")(KEY, (50, 400))
    np.testing.assert_allclose(w.var(), 1 / 400, rtol=0.05)
    w = init.variance_scaling(1.0, "fan_geo_avg", "normal")(KEY, (100, 400))
    np.testing.assert_allclose(w.var(), 1 / 200, rtol=0.05)
    w = init.variance_scaling(1.0, "fan_in", "normal", in_axis=0, out_axis=1)(KEY, (100, 400))
    np.testing.assert_allclose(w.var(), 1 / 100, rtol=0.05)
    w = init.variance_scaling(1.0, "fan_in", "normal", batch_axis=0)(KEY, (7, 100, 40))
    np.testing.assert_allclose(w.var(), 1 / 100, rtol=0.06)
    with pytest.raises(ValueError):
        init.variance_scaling(1.0, "fan_bad", "normal")
    with pytest.raises(ValueError):
        init.variance_scaling(1.0, "fan_in", "cauchy")
    with pytest.raises(ValueError):
        init.glorot_normal()(KEY, (5,))


@pytest.mark.parametrize("shape,axis", [((6, 4), -1), ((3, 8), -1), ((2, 3, 5), -1), ((5, 2, 3), 0)])
def test_orthogonal(shape, axis):
    w = init.orthogonal(scale=2.0, column_axis=axis)(KEY, shape)
    assert w.shape == shape
    m = np.moveaxis(w, axis, -1).reshape(-1, shape[axis])
    if m.shape[0] >= m.shape[1]:
        np.testing.assert_allclose(m.T @ m, 4 * np.eye(m.shape[1]), atol=1e-12)
    else:
        np.testing.assert_allclose(m @ m.T, 4 * np.eye(m.shape[0]), atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 2, 4), (3, 5, 2, 2), (1, 3, 3, 2, 3)])
def test_delta_orthogonal(shape):
    w = init.delta_orthogonal()(KEY, shape)
    assert w.shape == shape
    centre = tuple((k - 1) // 2 for k in shape[:-2])
    c = w[centre]
    np.testing.assert_allclose(c @ c.T, np.eye(shape[-2]), atol=1e-12)
    assert np.abs(w).sum() == pytest.approx(np.abs(c).sum())
    with pytest.raises(ValueError):
        init.delta_orthogonal()(KEY, (3, 3, 4, 2))
    with pytest.raises(ValueError):
        init.delta_orthogonal()(KEY, (4, 2))


def test_namespace_and_doctests():
    import doctest
    import tracejit.nn.functions as fmod
    assert tracejit.nn is nn and nn.initializers is init
    for mod in (fmod, init, nn):
        assert doctest.testmod(mod).failed == 0, mod.__name__
