"""Differential fuzzing of bfloat16 storage: random programs over bfloat16 arrays, eagerly vs under jit.

bfloat16 computes in float32 and rounds each result once (core/storage_dtypes.py). Eagerly every
primitive runs its NumPy rule on the widened values and ml_dtypes rounds; under ``jit`` the
kernels load 16-bit patterns, convert, fuse and round natively (backends/cpu/lowering.py). Every
operation generated here is correctly rounded in float32 (arithmetic, division, square root,
comparisons, selects, conversions, data movement, max/min reductions, sums and products of small
integers, which are exact), so the two must agree bit for bit, zero signs included (NaNs compare
equal whatever their sign and payload).

Run a campaign::

    python -m tests.fuzz.bf16_check --start 0 --count 2000
"""
from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np

import tracejit
import tracejit.numpy as jnp
from tracejit import lax

BF16 = np.dtype(jnp.bfloat16)
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 1e-39, -9.2e-41, 3.3e38, -2.5, 255.0, 1.00390625]


def _input(rng, shape):
    kind = rng.integers(4)
    if kind == 0:     # small integers: sums and products stay exact
        x = rng.integers(-8, 9, shape).astype(np.float32)
    else:
        x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4)).astype(np.float32)
    if rng.random() < 0.5 and x.size:
        flat = x.reshape(-1)
        picks = rng.integers(0, flat.size, max(1, flat.size // 4))
        flat[picks] = rng.choice(SPECIAL, picks.size)
    return x.astype(BF16)


UNARY = {
    "neg": lambda x: -x, "abs": jnp.abs, "sqrt": lambda x: jnp.sqrt(jnp.abs(x)), "square": jnp.square,
    "floor": jnp.floor, "ceil": jnp.ceil, "rint": jnp.rint, "sign": jnp.sign, "recip": lambda x: 1 / x,
    "half": lambda x: x * 0.5, "plus1": lambda x: x + 1, "to_f32_and_back": lambda x: (x.astype(jnp.float32) * 3).astype(x.dtype),
    "via_f64": lambda x: x.astype(jnp.float64).astype(x.dtype), "via_f16": lambda x: x.astype(jnp.float16).astype(x.dtype),
    "via_i32": lambda x: jnp.clip(x, -1e6, 1e6).astype(jnp.int32).astype(x.dtype),
    "nan_to_zero": lambda x: jnp.where(jnp.isnan(x), 0, x),
    "rev": lambda x: x[::-1], "roll": lambda x: jnp.roll(x, 1, axis=0),
    "T": lambda x: x.T, "pad": lambda x: jnp.pad(x, 1, constant_values=-1.5),
    "max0": lambda x: jnp.max(x, axis=0, keepdims=True) + x, "min1": lambda x: jnp.min(x, axis=-1, keepdims=True) * x,
    "sum_int": lambda x: jnp.sum(jnp.clip(jnp.nan_to_num(jnp.floor(x)), -8, 8), axis=0, keepdims=True) + x,
    "cumsum_int": lambda x: jnp.cumsum(jnp.clip(jnp.nan_to_num(jnp.rint(x)), -4, 4), axis=0),
    "sort": lambda x: jnp.sort(x, axis=-1), "take": lambda x: x[jnp.array([0, 0])],
    "dyn": lambda x: lax.dynamic_update_slice(x, x[:1], (x.shape[0] - 1,) + (0,) * (x.ndim - 1)),
}
BINARY = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y, "div": lambda x, y: x / y,
    "max": jnp.maximum, "min": jnp.minimum, "where": lambda x, y: jnp.where(x > y, x, y),
    "copysign": jnp.copysign, "ge": lambda x, y: jnp.where(x >= y, 1.0, -0.0).astype(x.dtype),
    "concat": lambda x, y: jnp.concatenate([x, y], axis=0)[: x.shape[0]],
    "mixed_f32": lambda x, y: (x.astype(jnp.float32) + y.astype(jnp.float32)).astype(x.dtype),
    "matmul_int": lambda x, y: jnp.clip(jnp.nan_to_num(jnp.floor(x)), -8, 8)
    @ jnp.clip(jnp.nan_to_num(jnp.floor(y)), -8, 8).T[:, :1] + x[:, :1],
}


def generate(seed: int):
    """(function, inputs, description) of program ``seed``."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(1, 9, rng.integers(1, 3)))
    if len(shape) == 1:
        shape = shape + (1,) if rng.random() < 0.3 else (shape[0], int(rng.integers(1, 5)))
    inputs = [_input(rng, shape) for _ in range(int(rng.integers(1, 4)))]
    if rng.random() < 0.3:
        inputs[0] = np.ascontiguousarray(_input(rng, (shape[0] * 2,) + shape[1:]))[::-2]   # a strided view
    steps = []
    for _ in range(int(rng.integers(1, 9))):
        if rng.random() < 0.55:
            name = str(rng.choice(sorted(UNARY)))
            steps.append((name, int(rng.integers(0, 1 << 30))))
        else:
            name = str(rng.choice(sorted(BINARY)))
            steps.append((name, int(rng.integers(0, 1 << 30))))

    def program(*xs):
        vals = list(xs)
        for name, pick in steps:
            a = vals[pick % len(vals)]
            if name in UNARY:
                out = UNARY[name](a)
            else:
                b = vals[(pick // 7) % len(vals)]
                if b.shape != a.shape:
                    b = jnp.broadcast_to(b.reshape(-1)[:1].reshape((1,) * a.ndim), a.shape)
                out = BINARY[name](a, b)
            vals.append(out)
        return tuple(vals[len(xs):])
    return program, inputs, " -> ".join(n for n, _ in steps)


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype != BF16:
        return np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    nan = np.isnan(fa)
    return np.array_equal(nan, np.isnan(fb)) and np.array_equal(a.view(np.uint16)[~nan], b.view(np.uint16)[~nan])


def check(seed: int) -> str | None:
    """None when program ``seed`` agrees eagerly and under jit, else a description."""
    program, inputs, what = generate(seed)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        eager = program(*inputs)
        jitted = tracejit.jit(program)(*inputs)
    for i, (e, j) in enumerate(zip(eager, jitted)):
        if not _same(e, j):
            return f"seed {seed} ({what}) output {i}: eager {np.asarray(e)!r} jit {np.asarray(j)!r}"
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--count", type=int, default=500)
    args = ap.parse_args(argv)
    bad = [r for r in (check(s) for s in range(args.start, args.start + args.count)) if r]
    for r in bad:
        print(r)
    print(f"{args.count} programs from seed {args.start}: {len(bad)} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
