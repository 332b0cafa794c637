"""``einsum`` with a letter repeated within an operand (a diagonal: ``'ii->'``, ``'iji->j'``) on
traced arrays, as NumPy computes it; it raised NotImplementedError under jit and autodiff."""
import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp

rng = np.random.default_rng(0)
A, B, C, V = (rng.standard_normal(s) for s in ((3, 3), (3, 4, 3), (2, 2, 2), (3,)))
CASES = [("ii->", A), ("ii->i", A), ("ii", A), ("iji->j", B), ("iji->ij", B), ("iji->ji", B), ("iii->i", C),
         ("iii", C), ("ii,i->", A, V), ("ij,ii->j", A, A), ("...ii->...i", rng.standard_normal((2, 3, 3))),
         ("ii->", np.zeros((0, 0))), ("ii->i", A[::-1, ::-2][:2, :2])]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_einsum_diagonal_matches_numpy(case):
    sub, *ops = case
    want = np.einsum(sub, *ops)
    for f in (lambda *o: jnp.einsum(sub, *o), tracejit.jit(lambda *o: jnp.einsum(sub, *o))):
        got = np.asarray(f(*ops))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_einsum_diagonal_gradients_and_integer_dtype():
    np.testing.assert_array_equal(np.asarray(tracejit.grad(lambda x: jnp.einsum("ii->", x))(A)), np.eye(3))
    g = tracejit.jit(tracejit.grad(lambda x: jnp.einsum("iji->", x * x)))(B)
    want = np.zeros_like(B)
    for i in range(3):
        want[i, :, i] = 2 * B[i, :, i]
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-12)
    ints = np.arange(9, dtype=np.int32).reshape(3, 3)
    got = tracejit.jit(lambda x: jnp.einsum("ii->i", x))(ints)
    assert np.asarray(got).dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), np.einsum("ii->i", ints))


def test_einsum_diagonal_of_unequal_dimensions_raises_as_numpy():
    x = rng.standard_normal((2, 3))
    with pytest.raises(ValueError):
        np.einsum("ij,ii->j", x, x)
    with pytest.raises(ValueError, match="collapsing index"):
        tracejit.jit(lambda a: jnp.einsum("ij,ii->j", a, a))(x)
