import numpy as np

import tracejit


def test_relu_program_text():
    relu = lambda x: np.maximum(x, 0)  # noqa: E731
    text = str(tracejit.make_jaxpr(relu)(np.array([-1., 0., 1.])))
    assert text == "{ lambda ; a:f64[3]. let b:f64[3] = max a 0.0 in (b,) }"
    text32 = str(tracejit.make_jaxpr(relu)(np.array([-1., 0., 1.], np.float32)))
    assert text32 == "{ lambda ; a:f32[3]. let b:f32[3] = max a 0.0 in (b,) }"


def test_jit_matches_numpy():
    def g(x):
        y = x * 2 + np.sin(x)
        return np.exp(y * 2 + np.sin(y)) - x
    x = np.linspace(-1, 1, 101, dtype=np.float32)
    np.testing.assert_allclose(tracejit.jit(g)(x), g(x), rtol=1e-6)
