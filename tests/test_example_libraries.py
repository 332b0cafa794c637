"""tracejit.example_libraries (optimizers, stax) and tracejit.test_util.check_grads: optimizer updates
against NumPy re-implementations of the update rules, schedules, layers against NumPy references,
init/apply shape agreement, and a jitted stax + adam training loop whose loss decreases."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import random
from tracejit.example_libraries import optimizers as opt
from tracejit.example_libraries import stax
from tracejit.test_util import check_grads

RNG = np.random.default_rng(0)


# ------------------------------------------------------------------------------------ optimizers (reference)
def _ref_run(name, hyper, x0, grads):
    """Independent float64 NumPy implementations of the update rules; returns x after all steps."""
    x = x0.copy()
    z = np.zeros_like(x)
    s1, s2 = z.copy(), z.copy()
    lr = hyper["step_size"]
    for i, g in enumerate(grads):
        step = lr(i) if callable(lr) else lr
        if name == "sgd":
            x = x - step * g
        elif name == "momentum":
            s1 = hyper["mass"] * s1 + g
            x = x - step * s1
        elif name == "nesterov":
            s1 = hyper["mass"] * s1 + g
            x = x - step * (hyper["mass"] * s1 + g)
        elif name == "adagrad":
            mom = hyper.get("momentum", 0.9)
            s1 = s1 + g * g
            inv = np.where(s1 > 0, 1 / np.sqrt(np.where(s1 > 0, s1, 1)), 0)
            s2 = (1 - mom) * g * inv + mom * s2
            x = x - step * s2
        elif name == "rmsprop":
            s1 = 0.9 * s1 + 0.1 * g * g
            x = x - step * g / np.sqrt(s1 + 1e-8)
        elif name == "rmsprop_momentum":
            s1 = 0.9 * s1 + 0.1 * g * g
            s2 = 0.9 * s2 + step * g / np.sqrt(s1 + 1e-8)
            x = x - s2
        elif name == "adam":
            b1, b2 = hyper.get("b1", 0.9), hyper.get("b2", 0.999)
            s1 = (1 - b1) * g + b1 * s1
            s2 = (1 - b2) * g * g + b2 * s2
            mhat, vhat = s1 / (1 - b1 ** (i + 1)), s2 / (1 - b2 ** (i + 1))
            x = x - step * mhat / (np.sqrt(vhat) + 1e-8)
        elif name == "adamax":
            s1 = 0.1 * g + 0.9 * s1
            s2 = np.maximum(0.999 * s2, np.abs(g))
            x = x - step / (1 - 0.9 ** (i + 1)) * s1 / (s2 + 1e-8)
        elif name == "sm3":
            mom = hyper.get("momentum", 0.9)
            if i == 0:
                vs = [np.zeros(n) for n in x.shape]
            acc = np.minimum(vs[0][:, None], vs[1][None, :]) + g * g
            inv = np.where(acc > 0, 1 / np.sqrt(np.where(acc > 0, acc, 1)), 0)
            s1 = (1 - mom) * g * inv + mom * s1
            x = x - step * s1
            vs = [acc.max(1), acc.max(0)]
    return x


OPTS = [
    ("sgd", dict(step_size=0.1)),
    ("momentum", dict(step_size=0.1, mass=0.9)),
    ("nesterov", dict(step_size=0.05, mass=0.8)),
    ("adagrad", dict(step_size=0.3)),
    ("adagrad", dict(step_size=0.3, momentum=0.5)),
    ("rmsprop", dict(step_size=0.01)),
    ("rmsprop_momentum", dict(step_size=0.01)),
    ("adam", dict(step_size=0.01)),
    ("adam", dict(step_size=lambda i: 0.01 / (1 + i), b1=0.5, b2=0.9)),
    ("adamax", dict(step_size=0.02)),
    ("sm3", dict(step_size=0.1)),
    ("sm3", dict(step_size=0.1, momentum=0.0)),
]


@pytest.mark.parametrize("name,hyper", OPTS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTS)])
def test_optimizer_matches_reference(name, hyper):
    x0 = {"w": RNG.normal(size=(3, 4)), "b": (RNG.normal(size=(3, 4)),)}
    grads = [{"w": RNG.normal(size=(3, 4)), "b": (RNG.normal(size=(3, 4)),)} for _ in range(5)]
    opt_init, opt_update, get_params = getattr(opt, name)(**hyper)
    state = opt_init(x0)
    jit_state = opt_init(x0)
    jit_update = tracejit.jit(opt_update)
    for i, g in enumerate(grads):
        state = opt_update(i, g, state)
        jit_state = jit_update(i, g, jit_state)
    for key in ("w", "b"):
        want = _ref_run(name, hyper, x0[key] if key == "w" else x0[key][0],
                        [g[key] if key == "w" else g[key][0] for g in grads])
        got = get_params(state)[key]
        got_jit = get_params(jit_state)[key]
        if key == "b":
            got, got_jit = got[0], got_jit[0]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got_jit, want, rtol=1e-10, atol=1e-12)
    assert isinstance(state, opt.OptimizerState)


@pytest.mark.parametrize("name", ["sgd", "momentum", "nesterov", "adagrad", "rmsprop", "rmsprop_momentum", "adam",
                                  "adamax", "sm3"])
def test_optimizers_keep_float32_under_jit_with_schedules(name):
    extra = {"momentum": dict(mass=0.9), "nesterov": dict(mass=0.9)}.get(name, {})
    opt_init, opt_update, get_params = getattr(opt, name)(opt.exponential_decay(0.1, 10, 0.5), **extra)
    params = {"w": np.ones((2, 3), np.float32), "b": np.zeros(3, np.float32)}
    state = opt_init(params)
    update = tracejit.jit(opt_update)
    for i in range(3):
        state = update(i, tracejit.tree_map(lambda p: np.full_like(p, 0.5), params), state)
    for leaf in tracejit.tree_leaves(state):
        assert leaf.dtype == np.float32, (name, leaf.dtype)
    assert get_params(state)["w"].dtype == np.float32


def test_optimizer_state_pytree_and_errors():
    opt_init, opt_update, get_params = opt.adam(0.1)
    params = [np.ones(2), {"k": np.zeros((2, 2))}]
    state = opt_init(params)
    leaves = tracejit.tree_leaves(state)
    assert len(leaves) == 6                                  # x, m, v for each of the two leaves
    # passes through jit as an argument and a result, the step index traced
    step = tracejit.jit(lambda i, s: opt_update(i, tracejit.tree_map(jnp.ones_like, get_params(s)), s))
    s2 = step(np.int32(0), state)
    assert isinstance(s2, opt.OptimizerState)
    np.testing.assert_allclose(get_params(s2)[0], np.ones(2) - 0.1, rtol=1e-7)
    with pytest.raises(TypeError):
        opt_update(0, [np.ones(2)], state)
    # unpack / pack round trip
    marked = opt.unpack_optimizer_state(s2)
    assert isinstance(marked[0], opt.JoinPoint)
    back = opt.pack_optimizer_state(marked)
    np.testing.assert_array_equal(get_params(back)[1]["k"], get_params(s2)[1]["k"])
    assert tracejit.tree_structure(back) == tracejit.tree_structure(s2)
    # sm3 on scalars and vectors keeps the parameter's shape, also through jit
    i3, u3, g3 = opt.sm3(0.1)
    s = tracejit.jit(u3)(0, (np.float64(1.0), np.ones(3)), i3((np.float64(2.0), np.zeros(3))))
    p = g3(s)
    assert np.shape(p[0]) == () and p[1].shape == (3,)


def test_schedules():
    i = np.arange(0, 40)
    np.testing.assert_allclose([opt.exponential_decay(0.5, 10, 0.3)(k) for k in i], 0.5 * 0.3 ** (i / 10))
    np.testing.assert_allclose([opt.inverse_time_decay(0.5, 10, 2.0)(k) for k in i], 0.5 / (1 + 2.0 * i / 10))
    np.testing.assert_allclose([opt.inverse_time_decay(0.5, 10, 2.0, staircase=True)(k) for k in i],
                               0.5 / (1 + 2.0 * np.floor(i / 10)))
    np.testing.assert_allclose([opt.polynomial_decay(1.0, 20, 0.1, power=2.0)(k) for k in i],
                               (1 - np.minimum(i, 20) / 20) ** 2 * 0.9 + 0.1)
    pc = opt.piecewise_constant([5, 15], [1.0, 0.1, 0.01])
    np.testing.assert_allclose([pc(k) for k in i], np.where(i <= 5, 1.0, np.where(i <= 15, 0.1, 0.01)))
    np.testing.assert_allclose(tracejit.jit(pc)(np.int32(16)), 0.01)
    np.testing.assert_allclose(tracejit.jit(opt.exponential_decay(0.5, 10, 0.3))(np.float64(7)), 0.5 * 0.3 ** 0.7)
    with pytest.raises(ValueError):
        opt.piecewise_constant([1, 2], [1.0, 2.0])
    with pytest.raises(ValueError):
        opt.piecewise_constant([[1]], [[1.0, 2.0]])
    assert opt.make_schedule(0.3)(100) == 0.3
    f = lambda k: k  # noqa: E731
    assert opt.make_schedule(f) is f
    with pytest.raises(TypeError):
        opt.make_schedule(np.ones(2))


def test_l2_norm_and_clip_grads():
    tree = {"a": np.array([3.0, 0.0]), "b": [np.array([[4.0]])]}
    assert float(opt.l2_norm(tree)) == pytest.approx(5.0)
    clipped = opt.clip_grads(tree, 1.0)
    np.testing.assert_allclose(clipped["a"], [0.6, 0.0])
    np.testing.assert_allclose(clipped["b"][0], [[0.8]])
    same = tracejit.jit(opt.clip_grads, static_argnums=1)(tree, 10.0)
    np.testing.assert_allclose(same["a"], tree["a"])
    g = tracejit.grad(lambda t: opt.l2_norm(t))(tree)
    np.testing.assert_allclose(g["a"], tree["a"] / 5.0)


# -------------------------------------------------------------------------------------------------- stax
KEY = random.PRNGKey(0)


def _check_layer_shapes(layer, in_shape, *, rng=None, **kw):
    init_fun, apply_fun = layer
    out_shape, params = init_fun(KEY, in_shape)
    x = RNG.normal(size=in_shape)
    y = apply_fun(params, x, rng=rng, **kw) if rng is not None else apply_fun(params, x, **kw)
    y_jit = tracejit.jit(lambda p, v: apply_fun(p, v, rng=rng) if rng is not None else apply_fun(p, v))(params, x)
    assert tuple(np.shape(y)) == tuple(out_shape), (np.shape(y), out_shape)
    np.testing.assert_allclose(y_jit, y, rtol=1e-10, atol=1e-12)
    return params, x, y


def test_dense_and_elementwise():
    params, x, y = _check_layer_shapes(stax.Dense(5), (4, 3))
    W, b = params
    assert W.shape == (3, 5) and b.shape == (5,)
    np.testing.assert_allclose(y, x @ W + b, rtol=1e-12)
    out_shape, _ = stax.Dense(5)[0](KEY, (-1, 7, 3))
    assert out_shape == (-1, 7, 5)
    x = RNG.normal(size=(3, 4))
    refs = {"Tanh": np.tanh(x), "Relu": np.maximum(x, 0), "Sigmoid": 1 / (1 + np.exp(-x)),
            "Softplus": np.log1p(np.exp(x)), "Exp": np.exp(x),
            "LogSoftmax": x - np.log(np.exp(x).sum(-1, keepdims=True)),
            "Softmax": np.exp(x) / np.exp(x).sum(-1, keepdims=True),
            "Elu": np.where(x > 0, x, np.expm1(np.minimum(x, 0))), "LeakyRelu": np.where(x >= 0, x, 0.01 * x),
            "Selu": 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(np.minimum(x, 0))),
            "Gelu": 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
            "Identity": x}
    for name, want in refs.items():
        init_fun, apply_fun = getattr(stax, name)
        assert init_fun(KEY, (3, 4)) == ((3, 4), ())
        np.testing.assert_allclose(apply_fun((), x), want, rtol=1e-12, err_msg=name)


def _ref_conv_nhwc(x, w, strides, pads):
    x = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)])
    N, H, W_, C = x.shape
    kh, kw, _, O = w.shape
    oh, ow = (H - kh) // strides[0] + 1, (W_ - kw) // strides[1] + 1
    out = np.zeros((N, oh, ow, O))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * strides[0]:i * strides[0] + kh, j * strides[1]:j * strides[1] + kw, :]
            out[:, i, j, :] = np.einsum("nhwc,hwco->no", patch, w)
    return out


@pytest.mark.parametrize("strides,padding", [((1, 1), "VALID"), ((2, 1), "SAME"), ((2, 2), ((1, 0), (2, 1)))])
def test_conv(strides, padding):
    layer = stax.Conv(4, (3, 2), strides=strides, padding=padding)
    params, x, y = _check_layer_shapes(layer, (2, 7, 6, 3))
    W, b = params
    assert W.shape == (3, 2, 3, 4) and b.shape == (1, 1, 1, 4)
    if padding == "VALID":
        pads = [(0, 0), (0, 0)]
    elif padding == "SAME":
        pads = tracejit.lax.padtype_to_pads((7, 6), (3, 2), strides, "SAME")
    else:
        pads = list(padding)
    np.testing.assert_allclose(y, _ref_conv_nhwc(x, W, strides, pads) + b, rtol=1e-10, atol=1e-12)
    assert layer[0](KEY, (-1, 7, 6, 3))[0][0] == -1


def test_general_conv_layouts_and_transpose():
    layer = stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 5, (3, 3), padding="SAME")
    params, x, y = _check_layer_shapes(layer, (2, 3, 6, 6))
    W, b = params
    want = _ref_conv_nhwc(x.transpose(0, 2, 3, 1), W.transpose(2, 3, 1, 0), (1, 1), [(1, 1), (1, 1)])
    np.testing.assert_allclose(y, want.transpose(0, 3, 1, 2) + b, rtol=1e-10, atol=1e-12)
    for padding in ("VALID", "SAME"):
        _check_layer_shapes(stax.ConvTranspose(2, (3, 3), strides=(2, 2), padding=padding), (1, 4, 5, 3))
        _check_layer_shapes(stax.Conv1DTranspose(2, (3,), strides=(2,), padding=padding), (2, 5, 3))


def _ref_pool(x, window, strides, reducer, pads=((0, 0), (0, 0)), fill=0.0):
    x = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)], constant_values=fill)
    N, H, W_, C = x.shape
    oh, ow = (H - window[0]) // strides[0] + 1, (W_ - window[1]) // strides[1] + 1
    out = np.zeros((N, oh, ow, C))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * strides[0]:i * strides[0] + window[0], j * strides[1]:j * strides[1] + window[1], :]
            out[:, i, j, :] = reducer(patch, axis=(1, 2))
    return out


def test_pooling():
    x_shape = (2, 6, 5, 3)
    _, x, y = _check_layer_shapes(stax.MaxPool((2, 2), strides=(2, 1)), x_shape)
    np.testing.assert_allclose(y, _ref_pool(x, (2, 2), (2, 1), np.max))
    _, x, y = _check_layer_shapes(stax.SumPool((3, 2)), x_shape)
    np.testing.assert_allclose(y, _ref_pool(x, (3, 2), (1, 1), np.sum), rtol=1e-12)
    _, x, y = _check_layer_shapes(stax.AvgPool((2, 2), strides=(2, 2)), x_shape)
    np.testing.assert_allclose(y, _ref_pool(x, (2, 2), (2, 2), np.mean), rtol=1e-12)
    # SAME padding: the average counts only real positions
    _, x, y = _check_layer_shapes(stax.AvgPool((3, 3), padding="SAME"), x_shape)
    sums = _ref_pool(x, (3, 3), (1, 1), np.sum, pads=((1, 1), (1, 1)))
    counts = _ref_pool(np.ones_like(x), (3, 3), (1, 1), np.sum, pads=((1, 1), (1, 1)))
    np.testing.assert_allclose(y, sums / counts, rtol=1e-12)
    _, x, y = _check_layer_shapes(stax.MaxPool((3, 3), padding="SAME"), x_shape)
    np.testing.assert_allclose(y, _ref_pool(x, (3, 3), (1, 1), np.max, pads=((1, 1), (1, 1)), fill=-np.inf))
    # a channels-first spec
    _, x, y = _check_layer_shapes(stax.MaxPool((2, 2), spec="NCHW"), (2, 3, 6, 5))
    np.testing.assert_allclose(y, _ref_pool(x.transpose(0, 2, 3, 1), (2, 2), (1, 1), np.max).transpose(0, 3, 1, 2))
    assert stax.MaxPool((2, 2), strides=(2, 2))[0](KEY, (-1, 6, 6, 3))[0] == (-1, 3, 3, 3)


def test_batchnorm_flatten_dropout():
    params, x, y = _check_layer_shapes(stax.BatchNorm(), (4, 3, 2, 5))
    beta, gamma = params
    assert beta.shape == gamma.shape == (5,)
    mu = x.mean((0, 1, 2)); var = (x ** 2).mean((0, 1, 2)) - mu ** 2
    np.testing.assert_allclose(y, (x - mu) / np.sqrt(var + 1e-5), rtol=1e-10, atol=1e-12)
    init_fun, apply_fun = stax.BatchNorm(axis=0, center=False, beta_init=stax.zeros)
    _, (b2, g2) = init_fun(KEY, (6, 4))
    assert b2 == () and g2.shape == (4,)
    z = RNG.normal(size=(6, 4))
    np.testing.assert_allclose(apply_fun((b2, 2 * g2), z),
                               2 * (z - z.mean(0)) / np.sqrt((z ** 2).mean(0) - z.mean(0) ** 2 + 1e-5), rtol=1e-10)
    _, x, y = _check_layer_shapes(stax.Flatten, (3, 2, 4))
    np.testing.assert_array_equal(y, x.reshape(3, 8))
    assert stax.Flatten[0](KEY, (-1, 2, 4))[0] == (-1, 8)
    _, x, y = _check_layer_shapes(stax.Dropout(0.7), (50, 40), rng=random.PRNGKey(3))
    kept = y != 0
    assert 0.6 < kept.mean() < 0.8
    np.testing.assert_allclose(y[kept], x[kept] / 0.7)
    with pytest.raises(ValueError):
        stax.Dropout(0.5)[1]((), x)
    np.testing.assert_array_equal(stax.Dropout(0.5, mode="test")[1]((), x, rng=KEY), x)


def test_combinators():
    model = stax.serial(stax.Dense(6), stax.Relu,
                        stax.FanOut(3),
                        stax.parallel(stax.Dense(4), stax.Identity, stax.Dense(2)),
                        stax.FanInConcat(),
                        stax.Dense(3))
    out_shape, params = model[0](KEY, (-1, 5))
    assert out_shape == (-1, 3)
    x = RNG.normal(size=(7, 5))
    y = model[1](params, x)
    assert y.shape == (7, 3)
    (W1, b1), _, _, (pa, _, pc), _, (W4, b4) = params
    h = np.maximum(x @ W1 + b1, 0)
    cat = np.concatenate([h @ pa[0] + pa[1], h, h @ pc[0] + pc[1]], -1)
    np.testing.assert_allclose(y, cat @ W4 + b4, rtol=1e-10)
    np.testing.assert_allclose(tracejit.jit(model[1])(params, x), y, rtol=1e-10)
    res = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(5), stax.Identity), stax.FanInSum)
    shape, p = res[0](KEY, (2, 5))
    assert shape == (2, 5)
    np.testing.assert_allclose(res[1](p, x[:2]), x[:2] @ p[1][0][0] + p[1][0][1] + x[:2], rtol=1e-12)
    sd = stax.shape_dependent(lambda s: stax.Dense(s[-1] * 2))
    shape, p = sd[0](KEY, (3, 4))
    assert shape == (3, 8) and sd[1](p, np.ones((3, 4))).shape == (3, 8)
    # dropout keys are split per layer by serial
    drop = stax.serial(stax.Dropout(0.5), stax.Dropout(0.5))
    _, p = drop[0](KEY, (10,))
    a = drop[1](p, np.ones(100), rng=random.PRNGKey(1))
    b = drop[1](p, np.ones(100), rng=random.PRNGKey(1))
    np.testing.assert_array_equal(a, b)


def test_vmap_over_stax_apply():
    init_fun, apply_fun = stax.serial(stax.Dense(4), stax.Tanh, stax.Dense(2))
    _, params = init_fun(KEY, (-1, 3))
    x = RNG.normal(size=(6, 3))
    per_example = tracejit.vmap(lambda v: apply_fun(params, v[None])[0])(x)
    np.testing.assert_allclose(per_example, apply_fun(params, x), rtol=1e-12)


def test_mlp_training_with_adam_decreases_loss():
    init_fun, apply_fun = stax.serial(stax.Dense(32), stax.Relu, stax.Dense(32), stax.Gelu, stax.Dense(3),
                                      stax.LogSoftmax)
    # three Gaussian blobs
    centers = np.array([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
    labels = RNG.integers(0, 3, size=256)
    x = (centers[labels] + RNG.normal(size=(256, 2)) * 0.6).astype(np.float32)
    y = tracejit.nn.one_hot(labels, 3, dtype=np.float32)
    _, params = init_fun(random.PRNGKey(1), (-1, 2))
    params = tracejit.tree_map(lambda p: p.astype(np.float32), params)

    def loss(params, x, y):
        return -jnp.mean(jnp.sum(apply_fun(params, x) * y, axis=-1))

    opt_init, opt_update, get_params = opt.adam(1e-2)

    @tracejit.jit
    def step(i, state, x, y):
        value, grads = tracejit.value_and_grad(loss)(get_params(state), x, y)
        return value, opt_update(i, grads, state)

    state = opt_init(params)
    losses = []
    for i in range(150):
        value, state = step(i, state, x, y)
        losses.append(float(value))
    assert losses[-1] < 0.25 * losses[0], (losses[0], losses[-1])
    assert np.mean(losses[-10:]) < np.mean(losses[:10])
    final = get_params(state)
    assert final[0][0].dtype == np.float32
    acc = np.mean(np.argmax(apply_fun(final, x), -1) == labels)
    assert acc > 0.9


# ---------------------------------------------------------------------------------------------- check_grads
def test_check_grads_passes_on_correct_derivatives():
    x = RNG.normal(size=(3,))
    check_grads(lambda v: jnp.sin(v) * jnp.exp(v), (x,), order=2)
    check_grads(lambda a, b: {"s": jnp.sum(a * b), "p": [a ** 3]}, (x, x + 1), order=3)
    check_grads(tracejit.nn.softplus, (x,), order=2, modes=("rev",))
    check_grads(tracejit.nn.gelu, (x.astype(np.float32),), order=1)
    _, params = stax.serial(stax.Dense(3), stax.Tanh, stax.Dense(1))[0](KEY, (-1, 2))
    apply_fun = stax.serial(stax.Dense(3), stax.Tanh, stax.Dense(1))[1]
    check_grads(lambda p: apply_fun(p, np.ones((4, 2))), (params,), order=2, atol=1e-4, rtol=1e-4)


def test_check_grads_catches_wrong_derivatives():
    f = tracejit.custom_jvp(lambda v: jnp.sin(v))
    f.defjvps(lambda g, ans, v: 1.01 * jnp.cos(v) * g)
    x = np.array([0.4, 1.3])
    with pytest.raises(AssertionError):
        check_grads(f, (x,), order=1, modes=("fwd",))
    with pytest.raises(AssertionError):
        check_grads(f, (x,), order=1, modes=("rev",))
    # a wrong second derivative only: the first order passes, order 2 fails
    g = tracejit.custom_jvp(lambda v: v ** 3)
    g.defjvps(lambda t, ans, v: 3 * v ** 2 * t + 0 * jnp.sin(v) * t)
    check_grads(g, (x,), order=2)
    with pytest.raises(ValueError):
        check_grads(jnp.sin, (x,), order=1, modes=("sideways",))


def test_doctests():
    import doctest
    import tracejit.example_libraries as el
    import tracejit.test_util as tu
    for mod in (el, opt, stax, tu):
        assert doctest.testmod(mod).failed == 0, mod.__name__
