"""The tracejit showcase: the seed examples end to end."""
import numpy as np

import tracejit
import tracejit.numpy as jnp


def relu(x):
    return np.maximum(x, 0)


def f(x):
    return x * 2 + np.sin(x)


def g(x):
    return np.exp(f(f(x))) - x


def main():
    print("1. relu traced to a program:")
    print("  ", tracejit.make_jaxpr(relu)(np.array([-1., 0., 1.], np.float32)))
    x = np.linspace(-1, 1, 1_000_000, dtype=np.float32)
    jg = tracejit.jit(g)
    np.testing.assert_allclose(jg(x), g(x), rtol=1e-5)
    print("2. jit(g) matches NumPy on 1M float32 values")
    try:
        tracejit.jit(lambda x: x if x.sum() > 0 else -x)(x)
    except tracejit.ConcretizationTypeError as e:
        print("3. Python control flow on a traced value raises:", type(e).__name__)
    print("   fix with jnp.where:", tracejit.jit(lambda x: jnp.where(x.sum() > 0, x, -x))(x)[:3])


if __name__ == "__main__":
    main()
