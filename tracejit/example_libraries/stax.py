"""Stax, a small neural-network layer library (as ``jax.example_libraries.stax``).

A layer is a pair ``(init_fun, apply_fun)``:

* ``init_fun(rng, input_shape) -> (output_shape, params)`` (a ``-1`` in ``input_shape``, usually the
  batch size, passes through);
* ``apply_fun(params, inputs, **kwargs) -> outputs`` (``rng=key`` for :func:`Dropout`).

Combinators (:func:`serial`, :func:`parallel`, :func:`FanOut`, :func:`FanInSum`,
:func:`FanInConcat`, :func:`shape_dependent`) build models from layers.  Params are plain
tuples/lists, so they work with ``jit``, ``grad``, ``vmap`` and the optimizers.

Examples
--------
>>> import numpy as np
>>> from tracejit import random
>>> from tracejit.example_libraries import stax
>>> init, apply = stax.serial(stax.Dense(8), stax.Relu, stax.Dense(2), stax.LogSoftmax)
>>> out_shape, params = init(random.PRNGKey(0), (-1, 3))
>>> out_shape, apply(params, np.ones((5, 3))).shape
((-1, 2), (5, 2))
"""
from __future__ import annotations

import functools
import operator

import numpy as np

import tracejit.numpy as jnp
from tracejit import lax, random
from tracejit.nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax, softplus,  # noqa: F401
                         standardize)
from tracejit.nn.initializers import glorot_normal, he_normal, normal, ones, zeros  # noqa: F401

logsoftmax = log_softmax
glorot = glorot_normal
randn = normal

__all__ = [
    "AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense", "Dropout", "Elu", "Exp",
    "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu", "GeneralConv", "GeneralConvTranspose", "Identity",
    "LeakyRelu", "LogSoftmax", "MaxPool", "Relu", "Selu", "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh",
    "elementwise", "parallel", "serial", "shape_dependent",
]


# ---------------------------------------------------------------------------------------------------- layers
def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
    """Fully connected layer ``inputs @ W + b`` (``W``: ``(in, out_dim)``, ``b``: ``(out_dim,)``).

    Examples
    --------
    >>> init, apply = Dense(4)
    >>> shape, (W, b) = init(random.PRNGKey(0), (2, 3))
    >>> shape, W.shape, b.shape
    ((2, 4), (3, 4), (4,))
    """
    def init_fun(rng, input_shape):
        output_shape = tuple(input_shape[:-1]) + (out_dim,)
        k1, k2 = random.split(rng)
        W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return output_shape, (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return jnp.dot(inputs, W) + b
    return init_fun, apply_fun


def _conv_out_dim(size, k, stride, pad, dilation=1):
    if size < 0:
        return size
    return (size + pad[0] + pad[1] - (dilation * (k - 1) + 1)) // stride + 1


def _conv_output_shape(lhs_shape, rhs_shape, strides, padding, dimension_numbers):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    spatial = [c for c in lhs_spec if c not in "NC"]
    in_sizes = [lhs_shape[lhs_spec.index(c)] for c in spatial]
    k_sizes = [rhs_shape[rhs_spec.index(c)] for c in spatial]
    if isinstance(padding, str):
        pads = lax.padtype_to_pads(in_sizes, k_sizes, strides, padding)
    else:
        pads = [tuple(p) for p in padding]
    out_sizes = {c: _conv_out_dim(n, k, s, p) for c, n, k, s, p in zip(spatial, in_sizes, k_sizes, strides, pads)}
    out_sizes["N"] = lhs_shape[lhs_spec.index("N")]
    out_sizes["C"] = rhs_shape[rhs_spec.index("O")]
    return tuple(out_sizes[c] for c in out_spec)


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID", W_init=None,
                b_init=normal(1e-6)):
    """Convolution layer with layouts given by ``dimension_numbers = (lhs_spec, rhs_spec, out_spec)``,
    e.g. ``("NHWC", "HWIO", "NHWC")``; ``lax.conv_general_dilated`` plus a bias.

    Examples
    --------
    >>> init, apply = GeneralConv(("NCHW", "OIHW", "NCHW"), 6, (3, 3), padding="SAME")
    >>> init(random.PRNGKey(0), (2, 3, 8, 8))[0]
    (2, 6, 8, 8)
    """
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = tuple(strides) if strides else one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        filter_iter = iter(filter_shape)
        kernel_shape = tuple(out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
                             else next(filter_iter) for c in rhs_spec)
        output_shape = _conv_output_shape(input_shape, kernel_shape, strides, padding, dimension_numbers)
        bias_shape = tuple(out_chan if c == "C" else 1 for c in out_spec)
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                        dimension_numbers=dimension_numbers) + b
    return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv.__doc__ = "2-D convolution in NHWC/HWIO layout: ``GeneralConv(('NHWC', 'HWIO', 'NHWC'), ...)``."


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID", W_init=None,
                         b_init=normal(1e-6)):
    """Transposed convolution layer (``lax.conv_transpose`` plus a bias), layouts as :func:`GeneralConv`.

    Examples
    --------
    >>> init, apply = GeneralConvTranspose(("NHWC", "HWIO", "NHWC"), 2, (3, 3), strides=(2, 2))
    >>> init(random.PRNGKey(0), (1, 4, 4, 3))[0]
    (1, 9, 9, 2)
    """
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = tuple(strides) if strides else one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def out_size(n, k, s):
        if n < 0:
            return n
        if padding == "VALID":
            return n * s + max(k - s, 0)
        if padding == "SAME":
            return n * s
        raise ValueError(f"GeneralConvTranspose: padding must be 'SAME' or 'VALID', got {padding!r}")

    def init_fun(rng, input_shape):
        filter_iter = iter(filter_shape)
        kernel_shape = tuple(out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
                             else next(filter_iter) for c in rhs_spec)
        spatial = [c for c in lhs_spec if c not in "NC"]
        sizes = {c: out_size(input_shape[lhs_spec.index(c)], kernel_shape[rhs_spec.index(c)], s)
                 for c, s in zip(spatial, strides)}
        sizes["N"] = input_shape[lhs_spec.index("N")]
        sizes["C"] = out_chan
        output_shape = tuple(sizes[c] for c in out_spec)
        bias_shape = tuple(out_chan if c == "C" else 1 for c in out_spec)
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers) + b
    return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros, gamma_init=ones):
    """Batch normalization over ``axis`` (no running statistics, as stax): ``gamma * standardize(x) + beta``.

    Examples
    --------
    >>> import numpy as np
    >>> init, apply = BatchNorm(axis=(0,))
    >>> _, params = init(random.PRNGKey(0), (4, 3))
    >>> np.round(apply(params, np.arange(12.0).reshape(4, 3)).mean(0), 6)
    array([0., 0., 0.])
    """
    axis = (axis,) if np.isscalar(axis) else tuple(axis)

    def init_fun(rng, input_shape):
        axes = tuple(a % len(input_shape) for a in axis)
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axes)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        ndim = jnp.ndim(x)
        axes = tuple(a % ndim for a in axis)
        ed = tuple(None if i in axes else slice(None) for i in range(ndim))
        z = standardize(x, axes, epsilon=epsilon)
        if center and scale:
            return gamma[ed] * z + beta[ed]
        if center:
            return z + beta[ed]
        if scale:
            return gamma[ed] * z
        return z
    return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
    """Layer applying ``fun(inputs, **fun_kwargs)`` (no parameters).

    Examples
    --------
    >>> import numpy as np
    >>> init, apply = elementwise(np.abs)
    >>> apply((), np.array([-1.0]))
    array([1.])
    """
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)
    return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _pool_output_shape(input_shape, window, strides, padding):
    if isinstance(padding, str):
        pads = lax.padtype_to_pads([max(d, 1) for d in input_shape], window, strides, padding)
    else:
        pads = [tuple(p) for p in padding]
    return tuple(_conv_out_dim(n, k, s, p) for n, k, s, p in zip(input_shape, window, strides, pads))


def _pooling_layer(reducer, init_val, rescaler=None):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
        window_shape = tuple(window_shape)
        strides = tuple(strides) if strides else (1,) * len(window_shape)
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        non_spatial = (0, len(window_shape) + 1) if spec is None else (spec.index("N"), spec.index("C"))
        full_window, full_strides = window_shape, strides
        for i in sorted(non_spatial):
            full_window = full_window[:i] + (1,) + full_window[i:]
            full_strides = full_strides[:i] + (1,) + full_strides[i:]

        def init_fun(rng, input_shape):
            return _pool_output_shape(tuple(input_shape), full_window, full_strides, padding), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, full_window, full_strides, padding)
            return rescale(out, inputs, spec) if rescale else out
        return init_fun, apply_fun
    return PoolingLayer


def _normalize_by_window_size(dims, strides, padding):
    def rescale(outputs, inputs, spec):
        non_spatial = (0, inputs.ndim - 1) if spec is None else (spec.index("N"), spec.index("C"))
        spatial_shape = tuple(inputs.shape[i] for i in range(inputs.ndim) if i not in non_spatial)
        one = np.ones(spatial_shape, dtype=inputs.dtype)
        window_sizes = lax.reduce_window(one, 0.0, lax.add, dims, strides, padding)
        for i in sorted(non_spatial):
            window_sizes = jnp.expand_dims(window_sizes, i)
        return outputs / window_sizes
    return rescale


MaxPool = _pooling_layer(lax.max, -np.inf)
MaxPool.__doc__ = """Max pooling over spatial dims (``NHWC`` unless ``spec``); ``(window_shape, strides, padding, spec)``.

Examples
--------
>>> import numpy as np
>>> init, apply = MaxPool((2, 2), strides=(2, 2))
>>> apply((), np.arange(16.0).reshape(1, 4, 4, 1))[0, :, :, 0]
Array([[ 5.,  7.],
       [13., 15.]])
"""
SumPool = _pooling_layer(lax.add, 0.0)
SumPool.__doc__ = "Sum pooling over spatial dims (arguments as :func:`MaxPool`)."
AvgPool = _pooling_layer(lax.add, 0.0, _normalize_by_window_size)
AvgPool.__doc__ = "Average pooling over spatial dims; padded positions do not count (arguments as :func:`MaxPool`)."


def _flatten_shape(input_shape):
    return input_shape[0], functools.reduce(operator.mul, input_shape[1:], 1)


def _make_flatten():
    def init_fun(rng, input_shape):
        return _flatten_shape(input_shape), ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.reshape(inputs, (inputs.shape[0], -1))
    return init_fun, apply_fun


Flatten = _make_flatten()
"""Layer flattening all but the leading (batch) dimension."""


def _make_identity():
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return inputs
    return init_fun, apply_fun


Identity = _make_identity()
"""Layer returning its inputs."""


def FanOut(num):
    """Layer copying its input ``num`` times (a list), e.g. before :func:`parallel`.

    Examples
    --------
    >>> FanOut(2)[0](None, (3,))
    ([(3,), (3,)], ())
    """
    def init_fun(rng, input_shape):
        return [input_shape] * num, ()

    def apply_fun(params, inputs, **kwargs):
        return [inputs] * num
    return init_fun, apply_fun


def _make_fan_in_sum():
    def init_fun(rng, input_shape):
        return input_shape[0], ()

    def apply_fun(params, inputs, **kwargs):
        return sum(inputs[1:], inputs[0])
    return init_fun, apply_fun


FanInSum = _make_fan_in_sum()
"""Layer summing a list of inputs."""


def FanInConcat(axis=-1):
    """Layer concatenating a list of inputs along ``axis``.

    Examples
    --------
    >>> FanInConcat()[0](None, [(2, 3), (2, 4)])
    ((2, 7), ())
    """
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        concat_size = sum(shape[ax] for shape in input_shape)
        out_shape = tuple(input_shape[0][:ax]) + (concat_size,) + tuple(input_shape[0][ax + 1:])
        return out_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.concatenate(inputs, axis)
    return init_fun, apply_fun


def Dropout(rate, mode="train"):
    """Dropout. As in stax, ``rate`` is the probability of *keeping* a unit; kept units are divided by it.

    ``apply_fun`` needs ``rng=key`` in ``"train"`` mode; any other mode is the identity.

    Examples
    --------
    >>> import numpy as np
    >>> init, apply = Dropout(0.5)
    >>> out = apply((), np.ones(1000), rng=random.PRNGKey(0))
    >>> sorted(set(out.tolist()))
    [0.0, 2.0]
    """
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError("Dropout layer requires apply_fun to be called with a PRNG key argument. That is, "
                             "instead of `apply_fun(params, inputs)`, call it like `apply_fun(params, inputs, "
                             "rng)` where `rng` is a PRNG key (e.g. from `tracejit.random.key`).")
        if mode == "train":
            keep = random.bernoulli(rng, rate, jnp.shape(inputs))
            return jnp.where(keep, inputs / rate, 0)
        return inputs
    return init_fun, apply_fun


# ----------------------------------------------------------------------------------------------- combinators
def serial(*layers):
    """Compose layers in sequence; params are a list (one entry per layer).

    Examples
    --------
    >>> init, apply = serial(Dense(3), Relu)
    >>> init(random.PRNGKey(0), (1, 2))[0]
    (1, 3)
    """
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
        for fun, param, r in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=r, **kwargs)
        return inputs
    return init_fun, apply_fun


def parallel(*layers):
    """Apply layers side by side to a list of inputs (one each), e.g. between :func:`FanOut` and a fan-in.

    Examples
    --------
    >>> init, apply = parallel(Dense(2), Identity)
    >>> init(random.PRNGKey(0), [(1, 3), (1, 5)])[0]
    ((1, 2), (1, 5))
    """
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        rngs = random.split(rng, nlayers)
        results = [init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)]
        return tuple(r[0] for r in results), tuple(r[1] for r in results)

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]
    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built by ``make_layer(input_shape)`` from the shape it is initialized or applied with.

    Examples
    --------
    >>> init, apply = shape_dependent(lambda shape: Dense(shape[-1]))
    >>> init(random.PRNGKey(0), (1, 4))[0]
    (1, 4)
    """
    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)
    return init_fun, apply_fun
