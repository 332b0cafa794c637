"""``enable_x64(False)``: JAX's default 32-bit mode as a porting switch (docs/porting.md, "Dtypes").

Results and jit arguments are 32-bit, values agree with JAX's own 32-bit mode to float32
rounding, and the random samplers give JAX's 32-bit streams. JAX runs in a subprocess with
``JAX_ENABLE_X64=0`` (the other tests of this suite turn JAX's x64 on in-process)."""
import json
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
import tracejit.random as jr
from tracejit import lax

X = np.linspace(0.1, 2.0, 7)            # float64 data, as NumPy makes it
I = np.arange(-3, 5)                    # int64 data

# name -> expression over (jnp, lax, x, i); the same text runs under JAX.
EXPRESSIONS = {
    "scale": "x * 2.0",
    "int_plus_int": "i + 1",
    "sum": "x.sum()",
    "int_sum": "jnp.sum(i)",
    "int_mean": "jnp.mean(i)",
    "true_divide": "i / 3",
    "argmax": "jnp.argmax(x)",
    "linspace": "jnp.linspace(0, 1, 5)",
    "ones": "jnp.ones(3)",
    "arange": "jnp.arange(4)",
    "explicit_float64": "jnp.zeros(2, jnp.float64)",
    "sin_of_int": "jnp.sin(i)",
    "softmax_like": "jnp.exp(x) / jnp.exp(x).sum()",
    "cumsum": "jnp.cumsum(i)",
    "dot": "x @ x",
    "norm": "jnp.linalg.norm(x)",
    "where": "jnp.where(x > 1, x, 0)",
    "complex": "x * 1j",
    "fori": "lax.fori_loop(0, 3, lambda k, c: c * 0.5 + k, x)",
    # bodies that make default-dtype values (64-bit inside tracejit) keep the 32-bit carry
    "fori_default_dtype": "lax.fori_loop(0, 3, lambda k, c: c + jnp.ones(7) / (k + 1), x)",
    "while_arange": "lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + jnp.arange(7) / 3), (0, x))[1]",
    "cond_mixed": "lax.cond(x[0] > 0, lambda v: v * 2, lambda v: jnp.arange(7) / 3, x)",
    "scan_ys": "lax.scan(lambda c, v: (c + v * jnp.ones(()), c * 2.0), 0.0, x)[1]",
    "astype": "i.astype(jnp.float64) / 7",
}

# name -> sampler call over (random, key): integers and booleans compared exactly, floats to a few
# float32 ULPs (log, exp and erf_inv are tracejit's own, not XLA's; loggamma's log of a small gamma
# variate magnifies them): a sampler on another path than JAX's gives different numbers altogether.
SAMPLERS = {
    "uniform": "random.uniform(key, (5,))",
    "normal": "random.normal(key, (4,))",
    "randint": "random.randint(key, (5,), 0, 100)",
    "bits": "random.bits(key, (3,))",
    "bernoulli": "random.bernoulli(key, 0.3, (6,))",
    "gamma": "random.gamma(key, 2.0, (3,))",
    "exponential": "random.exponential(key, (3,))",
    "permutation": "random.permutation(key, 6)",
    "choice": "random.choice(key, 10, (3,))",
    "truncated_normal": "random.truncated_normal(key, -1.0, 1.0, (3,))",
    "beta": "random.beta(key, 2.0, 3.0, (3,))",
    "dirichlet": "random.dirichlet(key, jnp.ones(3), (2,))",
    "categorical": "random.categorical(key, jnp.zeros(5), shape=(4,))",
    "poisson": "random.poisson(key, 3.0, (4,))",
    "laplace": "random.laplace(key, (3,))",
    "t": "random.t(key, 3.0, (3,))",
    "rademacher": "random.rademacher(key, (5,))",
    "geometric": "random.geometric(key, 0.3, (4,))",
    "binomial": "random.binomial(key, 10, 0.3, (4,))",
    "multivariate_normal": "random.multivariate_normal(key, jnp.zeros(2), jnp.eye(2), (3,))",
    "gumbel": "random.gumbel(key, (3,))",
    "loggamma": "random.loggamma(key, 2.0, (3,))",
    "split": "random.split(key, 3)",
    "fold_in": "random.fold_in(key, 5)",
}

_JAX_SIDE = r"""
import json, sys, warnings
import numpy as np
import jax, jax.numpy as jnp
from jax import lax, random
warnings.simplefilter("ignore")
exprs, samplers, x, i = json.loads(sys.stdin.read())
x, i = jnp.asarray(np.asarray(x)), jnp.asarray(np.asarray(i, np.int64))
out = {}

def put(name, r):
    r = np.asarray(r)
    out[name] = [str(r.dtype), r.real.ravel().tolist(), r.imag.ravel().tolist() if r.dtype.kind == "c" else []]
for name, src in exprs.items():
    put(f"{name}/eager", eval(src))
# One compile each for the jitted expressions and for the samplers.
jitted = jax.jit(lambda x, i: {name: eval(src, globals(), {"x": x, "i": i}) for name, src in exprs.items()})(
    np.asarray(x, np.float64), i)
for name, r in jitted.items():
    put(f"{name}/jit", r)
drawn = jax.jit(lambda key: {name: eval(src, globals(), {"key": key}) for name, src in samplers.items()})(
    random.PRNGKey(7))
for name, r in drawn.items():
    put("random/" + name, r)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def jax_32bit():
    pytest.importorskip("jax")
    env = dict(os.environ, JAX_ENABLE_X64="0", JAX_PLATFORMS="cpu")
    payload = json.dumps([EXPRESSIONS, SAMPLERS, X.tolist(), I.tolist()])
    out = subprocess.run([sys.executable, "-c", _JAX_SIDE], input=payload, capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _ours(src, mode):
    """``src`` on X and I as JAX programs hold them: jnp arrays eagerly, NumPy arguments to jit."""
    fn = (lambda x, i: eval(src, {"jnp": jnp, "lax": lax}, {"x": x, "i": i}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if mode == "jit":
            return tracejit.jit(fn)(X, I)
        return fn(jnp.asarray(X), jnp.asarray(I))


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_results_match_jax_32bit_mode(jax_32bit, name, mode):
    with tracejit.enable_x64(False):
        got = _ours(EXPRESSIONS[name], mode)
    dtype, real, imag = jax_32bit[f"{name}/{mode}"]
    assert str(got.dtype) == dtype
    np.testing.assert_allclose(np.asarray(got).real.ravel(), real, rtol=2e-6, atol=1e-6)
    if imag:
        np.testing.assert_allclose(np.asarray(got).imag.ravel(), imag, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_random_streams_match_jax_32bit_mode(jax_32bit, name):
    with tracejit.enable_x64(False):
        got = np.asarray(eval(SAMPLERS[name], {"random": jr, "jnp": jnp}, {"key": jr.PRNGKey(7)}))
    dtype, values, _ = jax_32bit["random/" + name]
    assert str(got.dtype) == dtype
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got.ravel(), np.asarray(values, got.dtype), rtol=4e-6, atol=0)
    else:
        np.testing.assert_array_equal(got.ravel(), np.asarray(values, got.dtype))


def test_no_64_bit_value_leaves_and_x64_comes_back():
    with tracejit.enable_x64(False):
        assert not tracejit.config.x64_enabled and not tracejit.config.jax_enable_x64
        for src in EXPRESSIONS.values():
            for mode in ("eager", "jit"):
                r = _ours(src, mode)
                assert r.dtype.itemsize <= 8 and r.dtype not in (np.float64, np.int64, np.uint64), (src, mode)
    assert tracejit.config.x64_enabled
    assert _ours("x * 2.0", "jit").dtype == np.float64 and jnp.ones(2).dtype == np.float64


def test_one_jitted_function_in_both_modes():
    # The compile cache and jit's fast call path are keyed by the mode: float64 arguments become
    # float32 only while x64 is off.
    f = tracejit.jit(lambda x: x * 3.0)
    x = np.arange(4.0)
    assert f(x).dtype == np.float64
    with tracejit.enable_x64(False):
        assert f(x).dtype == np.float32 and f(x).dtype == np.float32
        np.testing.assert_array_equal(f(x), (x * 3.0).astype(np.float32))
    assert f(x).dtype == np.float64
    tracejit.config.update("jax_enable_x64", False)
    try:
        assert f(x).dtype == np.float32
    finally:
        tracejit.config.update("jax_enable_x64", True)
    assert f(x).dtype == np.float64


def test_the_switch_is_per_thread():
    seen = {}
    ready, done = threading.Event(), threading.Event()

    def other():
        ready.wait()
        seen["other"] = jnp.ones(2).dtype
        done.set()
    t = threading.Thread(target=other)
    t.start()
    with tracejit.enable_x64(False):
        ready.set()
        done.wait()
        seen["here"] = jnp.ones(2).dtype
    t.join()
    assert seen == {"other": np.dtype(np.float64), "here": np.dtype(np.float32)}


def test_environment_variable_sets_the_default():
    code = "import tracejit, tracejit.numpy as jnp; print(tracejit.config.x64_enabled, jnp.arange(3).dtype)"
    for value, want in (("0", "False int32"), ("1", "True int64")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                             env=dict(os.environ, JAX_ENABLE_X64=value, TRACEJIT_WARMUP="0"))
        assert out.stdout.split() == want.split(), out.stderr[-1000:]
