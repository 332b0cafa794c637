"""Kernel merging and buffers written through views (compiler/fusion.py merge_kernels).

An output that is a reshape of a computed value is stored through an alias buffer (the reshape
view of the output's own memory). Merging once tracked only the alias as written, so a kernel
reading the output itself could join a sibling kernel that ran *before* the one writing it: the
differential fuzzer's seed 30123583 (a roll of a tiled, reshaped output) read garbage. The same
class in memory planning (compiler/memory.py in_place_pairs): a kernel wrote one output over a
temporary it read for the last time while another output of the same kernel read that temporary
through its reshape view (seed 422575). The class: random programs of reshapes, slices, tiles,
rolls, concatenations, broadcasts and elementwise steps over earlier values, whose intermediate
values are outputs, compiled with the plan checker on, against NumPy.
"""
import warnings

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp


def test_a_reader_of_an_output_written_through_its_view_runs_after_the_writer():
    def f(xp, a0):
        v1 = xp.reshape(xp.ravel(a0)[:2], (2,))
        v2 = xp.reshape(xp.ravel(a0)[:3], (3,))
        v6 = xp.reshape(xp.tile(xp.ravel(v1), 2)[:4], (4,))
        return v2, v6, xp.roll(v6, -3, axis=0)
    a0 = np.array([False, True, True, True]).reshape(1, 2, 2)
    with tracejit.enable_checks(True):
        got = tracejit.jit(lambda a: f(jnp, a))(a0)
    for g, w in zip(got, f(np, a0)):
        np.testing.assert_array_equal(np.asarray(g), w)


def test_an_output_is_not_written_over_a_temporary_another_output_reads_through_its_view():
    # Seed 422575: t = roll(a0) is written in two slabs; one kernel computes where(isnan(t), ...)
    # (a temporary, written in place over t, read for the last time there) and copies
    # reshape(t) to an output, which read t's memory after the first store overwrote it.
    def f(xp, a0):
        v2 = xp.any(a0.astype(np.float16))
        v3 = xp.roll(a0, -1, axis=-1)
        v5 = xp.minimum(1e-05, v3) != 1
        v8 = xp.where(xp.isnan(v3), v2, 127)
        v9 = v5[:, None]
        v12 = xp.maximum(v8 ** 1, v9)
        return xp.reshape(v3, (-1, 2, 1)), xp.tile(v12, (1, 1)), xp.where(v5, v9, v8)
    a0 = (np.array([-0.14, 0.58, -1.25, -0.24]) + 1j * np.array([-0.3, 0.19, 0.38, 1.45])).astype(np.complex64)
    with tracejit.enable_checks(True), np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)      # the float16 cast drops .imag
        got = tracejit.jit(lambda a: f(jnp, a))(a0)
        want = f(np, a0)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w)


def _random_chain(rng):
    """A random program of view-like and elementwise steps returning several of its values."""
    steps = []
    for _ in range(int(rng.integers(3, 8))):
        kind = rng.choice(["reshape", "slice", "tile", "roll", "concat", "add", "neg", "flip", "pick", "outer"])
        steps.append((str(kind), int(rng.integers(0, 1 << 30))))
    outputs = sorted(set(int(i) for i in rng.integers(0, len(steps), int(rng.integers(1, 4)))))

    def program(xp, x):
        values = [x]
        for kind, r in steps:
            v = values[-1]
            flat = xp.ravel(v)
            n = flat.shape[0]
            other = values[r % len(values)]
            if kind == "reshape":
                shapes = [(n,), (1, n)] + ([(2, n // 2)] if n % 2 == 0 else []) + ([(n // 3, 3)] if n % 3 == 0 else [])
                v = xp.reshape(v, shapes[r % len(shapes)])
            elif kind == "slice":
                v = flat[: max(1, n - r % 3)]
            elif kind == "tile":
                v = xp.tile(flat, 2)[: n + r % 3]
            elif kind == "roll":
                v = xp.roll(flat, r % 5 - 2, axis=0)
            elif kind == "concat":
                v = xp.concatenate([flat, xp.ravel(other)[: 1 + r % 3]])
            elif kind == "add":
                v = v + xp.ones_like(v)
            elif kind == "neg":
                v = xp.logical_not(v) if v.dtype == np.bool_ else -v
            elif kind == "pick":        # an earlier value again: siblings over one space merge
                v = xp.reshape(other, (-1,)) if r % 2 else other
            elif kind == "outer":       # a broadcast reader materializes its operand
                head = flat[: 1 + r % 4]
                v = xp.ravel((head[:, None] & head[None, :]) if v.dtype == np.bool_ else head[:, None] * head[None, :])
            else:
                v = flat[::-1]
            values.append(v)
        return tuple(values[i + 1] for i in outputs)
    return program


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float32])
def test_random_view_chains_match_numpy(dtype):
    # The class fuzzer; MERGE_VIEWS_FUZZ_SEEDS=3000 runs a campaign.
    import os
    seeds = int(os.environ.get("MERGE_VIEWS_FUZZ_SEEDS", "60"))
    for seed in range(seeds):
        rng = np.random.default_rng([31, seed])
        program = _random_chain(rng)
        shape = [(4,), (1, 2, 2), (2, 3), (6,), (3, 1, 3)][seed % 5]
        x = (rng.integers(0, 2, shape) if dtype == np.bool_ else rng.integers(-5, 6, shape)).astype(dtype)
        want = program(np, x)
        with tracejit.enable_checks(True):
            got = tracejit.jit(lambda a: program(jnp, a))(x)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w, err_msg=f"seed {seed}")
