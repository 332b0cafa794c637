"""Regenerate ``jax_random_golden.json``: reference streams from ``jax.random``.

Run with a Python that has JAX installed (not the project venv), e.g.::

    python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax numpy
    /tmp/jaxenv/bin/python tests/data/make_random_golden.py

x64 is enabled so the default dtypes are float64 / int64 like NumPy 2; the
float32 / int32 streams are requested with explicit dtypes. The
``jax_threefry_partitionable`` setting is JAX's current default and is
recorded in the file (tracejit implements the partitionable streams).
Values are stored exactly: integers as ints, floats as Python floats (an
exact round trip for float32 and float64).
"""
import json
import os

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import random  # noqa: E402

CASES = []


def rec(name, fn, args, kwargs, value, exact=True):
    v = np.asarray(value)
    CASES.append({"name": name, "fn": fn, "args": args, "kwargs": kwargs, "exact": exact,
                  "dtype": v.dtype.name, "shape": list(v.shape), "value": v.ravel().tolist()})


def kd(k):
    return np.asarray(random.key_data(k) if jnp.issubdtype(k.dtype, jax.dtypes.prng_key) else k).tolist()


# Seeds -> key data (legacy uint32[2] keys and typed keys agree).
for seed in [0, 42, 2**40 + 7, -1, 2**63 - 1]:
    rec(f"PRNGKey({seed})", "PRNGKey", [seed], {}, random.PRNGKey(seed))
rec("key(42) data", "key", [42], {}, random.key_data(random.key(42)))
rec("PRNGKey(int32(-5))", "PRNGKey_int32", [-5], {}, random.PRNGKey(np.int32(-5)))
rec("PRNGKey(uint32(4000000000))", "PRNGKey_uint32", [4000000000], {},
    random.PRNGKey(np.uint32(4000000000)))

K = random.PRNGKey(42)
KEY = [int(x) for x in kd(K)]
K2 = random.PRNGKey(7)
KEY2 = [int(x) for x in kd(K2)]

for num in [2, 3, (2, 3)]:
    rec(f"split {num}", "split", [KEY], {"num": num}, random.split(K, num))
for data in [0, 12345, 2**32 - 1]:
    rec(f"fold_in {data}", "fold_in", [KEY], {"data": data}, random.fold_in(K, data))

for shape, dt in [((7,), "uint32"), ((3, 4), "uint32"), ((5,), "uint64"), ((6,), "uint8"),
                  ((6,), "uint16"), ((), None), ((0,), "uint32")]:
    rec(f"bits {shape} {dt}", "bits", [KEY], {"shape": list(shape), "dtype": dt},
        random.bits(K, shape, dt))

for shape, dt, lo, hi in [((10,), None, 0.0, 1.0), ((10,), "float32", 0.0, 1.0),
                          ((2, 3), "float32", -2.0, 3.0), ((7,), "float64", -2.5, 4.0),
                          ((), "float32", 0.0, 1.0), ((4,), "float16", 0.0, 1.0)]:
    rec(f"uniform {shape} {dt} [{lo},{hi})", "uniform", [KEY2],
        {"shape": list(shape), "dtype": dt, "minval": lo, "maxval": hi},
        random.uniform(K2, shape, dt, lo, hi))

for shape, lo, hi, dt in [((10,), 0, 10, None), ((8,), -5, 17, "int32"), ((6,), 0, 2**40, "int64"),
                          ((6,), 0, 256, "uint8"), ((5,), 3, 3, None), ((4,), -2**31, 2**31 - 1, "int32")]:
    rec(f"randint {shape} [{lo},{hi}) {dt}", "randint", [KEY],
        {"shape": list(shape), "minval": lo, "maxval": hi, "dtype": dt},
        random.randint(K, shape, lo, hi, dt))

rec("bernoulli 0.3 (16,)", "bernoulli", [KEY], {"p": 0.3, "shape": [16]}, random.bernoulli(K, 0.3, (16,)))
p32 = [0.1, 0.5, 0.9, 0.25, 0.75, 0.0, 1.0, 0.6]
rec("bernoulli f32 array p", "bernoulli_f32", [KEY2], {"p": p32},
    random.bernoulli(K2, np.asarray(p32, np.float32)))

rec("permutation 10", "permutation", [KEY], {"x": 10}, random.permutation(K, 10))
x34 = np.arange(12).reshape(3, 4)
rec("permutation (3,4) axis=1", "permutation_arr", [KEY2], {"x": x34.tolist(), "axis": 1},
    random.permutation(K2, x34, axis=1))
rec("permutation (3,4) axis=0 independent", "permutation_arr", [KEY2],
    {"x": x34.tolist(), "axis": 0, "independent": True},
    random.permutation(K2, x34, axis=0, independent=True))
rec("permutation 1700 (two rounds)", "permutation", [KEY], {"x": 1700}, random.permutation(K, 1700))
rec("choice 10 (6,) replace", "choice", [KEY], {"a": 10, "shape": [6]}, random.choice(K, 10, (6,)))
rec("choice 10 (4,) no replace", "choice", [KEY], {"a": 10, "shape": [4], "replace": False},
    random.choice(K, 10, (4,), replace=False))

# Distributions: compared with a tolerance (transcendental functions differ by an ulp or so).
for dt in ["float32", "float64"]:
    approx = [
        ("normal", {"shape": [16], "dtype": dt}, random.normal(K, (16,), dt)),
        ("exponential", {"shape": [8], "dtype": dt}, random.exponential(K, (8,), dt)),
        ("laplace", {"shape": [8], "dtype": dt}, random.laplace(K, (8,), dt)),
        ("logistic", {"shape": [8], "dtype": dt}, random.logistic(K, (8,), dt)),
        ("gumbel", {"shape": [8], "dtype": dt}, random.gumbel(K, (8,), dt)),
        ("truncated_normal", {"lower": -1.0, "upper": 2.0, "shape": [8], "dtype": dt},
         random.truncated_normal(K, -1.0, 2.0, (8,), dt)),
        ("gamma", {"a": [0.3, 1.0, 2.5, 7.0, 0.9], "dtype": dt},
         random.gamma(K, np.array([0.3, 1.0, 2.5, 7.0, 0.9]), dtype=dt)),
        ("beta", {"a": 2.0, "b": 3.0, "shape": [6], "dtype": dt}, random.beta(K, 2.0, 3.0, (6,), dt)),
        ("dirichlet", {"alpha": [0.5, 1.0, 3.0], "shape": [2], "dtype": dt},
         random.dirichlet(K, np.array([0.5, 1.0, 3.0]), (2,), dt)),
    ]
    for fn, kw, val in approx:
        rec(f"{fn} {dt}", fn, [KEY], kw, val, exact=False)
rec("poisson lam=3 (8,)", "poisson", [KEY], {"lam": 3.0, "shape": [8]}, random.poisson(K, 3.0, (8,)), exact=False)
rec("poisson lam=[1,25,300]", "poisson", [KEY2], {"lam": [1.0, 25.0, 300.0]},
    random.poisson(K2, np.array([1.0, 25.0, 300.0])), exact=False)
rec("categorical (10,)", "categorical", [KEY], {"logits": [0.1, 1.0, -0.5, 2.0], "shape": [10]},
    random.categorical(K, np.array([0.1, 1.0, -0.5, 2.0]), shape=(10,)), exact=False)

out = {
    "jax_version": jax.__version__,
    "jax_threefry_partitionable": bool(jax.config.jax_threefry_partitionable),
    "jax_enable_x64": True,
    "cases": CASES,
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_random_golden.json")
with open(path, "w") as f:
    json.dump(out, f, indent=None, separators=(",", ":"))
    f.write("\n")
print(f"wrote {len(CASES)} cases to {path}")
