"""Cumulative ops, argmax/argmin and short sorts as native serial loops along an axis
(``compiler/fusion.py`` window kind "axis", ``backends/cpu/window.py`` ``_axis``), compared
bit for bit with NumPy, and what they let loop bodies do natively."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import lax

DTYPES = [np.float64, np.float32, np.int8, np.int32, np.int64, np.uint8, np.uint64]
SHAPES = [(7,), (3, 5), (2, 1, 4), (4, 3, 2), (0, 3), (1,)]
SPECIAL = np.array([0.0, -0.0, np.nan, -np.nan, 1.5, -2.0, np.inf, -np.inf, 3.0])


def _values(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.choice(SPECIAL, shape).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(0, 120, shape).astype(dtype)


OPS = {
    "cumsum": (lambda a, ax: jnp.cumsum(a, axis=ax), lambda a, ax: np.cumsum(a, axis=ax)),
    "cumprod": (lambda a, ax: jnp.cumprod(a, axis=ax), lambda a, ax: np.cumprod(a, axis=ax)),
    "cummax": (lambda a, ax: lax.cummax(a, axis=ax), lambda a, ax: np.maximum.accumulate(a, axis=ax)),
    "cummin_reverse": (lambda a, ax: lax.cummin(a, axis=ax, reverse=True),
                       lambda a, ax: np.flip(np.minimum.accumulate(np.flip(a, ax), axis=ax), ax)),
    "argmax": (lambda a, ax: jnp.argmax(a, axis=ax), lambda a, ax: np.argmax(a, axis=ax)),
    "argmin": (lambda a, ax: jnp.argmin(a, axis=ax), lambda a, ax: np.argmin(a, axis=ax)),
    "sort": (lambda a, ax: jnp.sort(a, axis=ax), lambda a, ax: np.sort(a, axis=ax, kind="stable")),
}


# (bool cumulative ops and sorts take NumPy steps: jnp promotes bool sums, and sorts are rare)
@pytest.mark.parametrize("op,dtype", [(op, d) for op in OPS for d in DTYPES]
                         + [(op, np.bool_) for op in ("argmax", "argmin")])
def test_axis_ops_are_native_and_bitwise_numpy(op, dtype):
    ours, numpy = OPS[op]
    for seed, shape in enumerate(SHAPES):
        x = _values(shape, dtype, seed)
        for ax in range(len(shape)):
            if op.startswith("arg") and shape[ax] == 0:
                continue
            for view in (x, np.flip(x, ax)):            # also a negative-stride view
                with np.errstate(all="ignore"):
                    want = np.asarray(numpy(view, ax))
                got = np.asarray(tracejit.jit(lambda a: ours(a, ax))(view))
                assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (shape, ax, got, want)
    text = tracejit.jit(lambda a: ours(a, 1)).lower(_values((3, 4), dtype, 0)).compile().as_text()
    assert "window" in text and "numpy" not in text


def test_large_sorts_stay_numpy_steps():
    # NumPy's sort is faster on large arrays; loop bodies sort short lines.
    text = tracejit.jit(lambda a: jnp.sort(a, axis=1)).lower(np.ones((3, 400))).compile().as_text()
    assert "numpy sort" in text


@pytest.mark.parametrize("body", ["cumsum", "argmax", "sort", "cummax"])
def test_loop_bodies_with_axis_ops_are_native(body):
    x = np.random.default_rng(3).standard_normal((4, 6))
    bodies = {
        "cumsum": lambda c: jnp.cumsum(c, axis=1) * 0.5,
        "argmax": lambda c: c + jnp.argmax(c, axis=1)[:, None],
        "sort": lambda c: jnp.sort(c[:, ::-1] - 1.0, axis=1),
        "cummax": lambda c: lax.cummax(c, axis=0) - 0.25,
    }
    f = lambda x: lax.fori_loop(0, 5, lambda i, c: bodies[body](c).astype(c.dtype), x)   # noqa: E731
    text = tracejit.jit(f).lower(x).compile().as_text()
    assert text.startswith("native loop"), text
    np.testing.assert_array_equal(tracejit.jit(f)(x), tracejit.jit(f, backend="reference")(x))
