"""Issue 14's top-level JAX names: devices, config flags, small functions, and the
errors / dtypes / typing / stages modules (checked against JAX 0.10 where it is installed)."""
import doctest
import importlib
import json
import pathlib
import threading

import numpy as np
import pytest

import tracejit
import tracejit.numpy as jnp
from tracejit import config_flags
from tracejit.config import config
from tracejit.core.tracer import Tracer

NAMES = json.loads((pathlib.Path(__file__).parent / "data" / "jax_0_10_public_names.json").read_text())

IMPLEMENTED = [
    "Device", "devices", "local_devices", "device_count", "local_device_count", "default_backend",
    "default_device", "device_put", "device_get", "process_count", "process_index", "process_indices",
    "disable_jit", "enable_x64", "numpy_dtype_promotion", "numpy_rank_promotion", "debug_nans", "debug_infs",
    "log_compiles", "enable_checks", "check_tracer_leaks", "checking_leaks", "default_prng_impl",
    "explain_cache_misses", "legacy_prng_key", "enable_custom_prng", "debug_key_reuse", "no_tracing",
    "no_execution", "thread_guard", "make_user_context", "typeof", "named_call", "named_scope",
    "ensure_compile_time_eval", "custom_gradient", "closure_convert", "effects_barrier",
    "print_environment_info",
]


def jax_or_skip():
    jax = pytest.importorskip("jax")
    return jax


# --------------------------------------------------------------------------- names

def test_names_are_jax_names_and_present():
    jax_names = set(NAMES["modules"]["jax"]["names"])
    for name in IMPLEMENTED:
        assert name in jax_names, name
        assert hasattr(tracejit, name), name
        assert name in tracejit.__all__, name
    submodules = set(NAMES["modules"]["jax"]["submodules"])
    for mod in ("errors", "dtypes", "typing", "stages", "version"):
        assert mod in submodules
        assert importlib.import_module(f"tracejit.{mod}") is getattr(tracejit, mod)


def test_module_names_match_jax():
    jax = jax_or_skip()
    import jax.dtypes, jax.errors, jax.stages, jax.typing  # noqa: F401
    skipped = {"dtypes": set(), "errors": {"InconclusiveDimensionOperation"},
               "stages": {"ArgInfo", "CompilerOptions", "Traced"}, "typing": set()}
    for mod, skip in skipped.items():
        theirs = {n for n in dir(getattr(jax, mod)) if not n.startswith("_")}
        ours = {n for n in dir(getattr(tracejit, mod)) if not n.startswith("_")}
        missing = theirs - ours - skip
        assert not missing, (mod, missing)


def test_docstring_examples_run():
    for name in ("config_flags", "device_api", "device_types", "api_misc", "errors", "dtypes", "typing", "stages",
                 "version", "config", "core.values", "ops.operands", "ops.composites", "ops.convolution",
                 "ops.control_flow_functions", "transforms.api_ad", "transforms.api_vmap", "numpy.array_methods",
                 "compile_log", "buckets"):
        mod = importlib.import_module(f"tracejit.{name}")
        assert doctest.testmod(mod, optionflags=doctest.ELLIPSIS).failed == 0, name
    # The flags are State instances: doctest.testmod does not collect their docstrings.
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for name in config_flags.__all__:
        obj = getattr(config_flags, name)
        if isinstance(obj, config_flags.State):
            assert "Examples" in obj.__doc__, name
            test = parser.get_doctest(obj.__doc__, {}, name, None, 0)
            assert test.examples, name
            assert runner.run(test).failed == 0, name


# --------------------------------------------------------------------------- devices

def test_device_attributes_and_listing():
    (d,) = tracejit.devices()
    assert isinstance(d, tracejit.Device) and d is tracejit.Device()
    assert (d.id, d.platform, d.device_kind, d.process_index, d.host_id) == (0, "cpu", "cpu", 0, 0)
    assert repr(d) == "CpuDevice(id=0)" and str(d) == "cpu:0"
    assert d.memory_stats() is None
    assert tracejit.local_devices() == [d] == tracejit.local_devices(process_index=0, backend="cpu")
    assert tracejit.device_count() == tracejit.local_device_count() == 1
    assert tracejit.default_backend() == "cpu"
    assert (tracejit.process_count(), tracejit.process_index(), tracejit.process_indices()) == (1, 0, [0])
    with pytest.raises(RuntimeError, match="Unknown backend"):
        tracejit.devices("gpu")
    with pytest.raises(ValueError, match="process_index 1"):
        tracejit.local_devices(process_index=1)


def test_device_matches_jax():
    jax = jax_or_skip()
    theirs, ours = jax.devices()[0], tracejit.devices()[0]
    for attr in ("id", "platform", "device_kind", "process_index", "host_id", "task_id", "local_hardware_id"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
    with pytest.raises(RuntimeError) as e_theirs:
        jax.devices("gpu")
    with pytest.raises(RuntimeError) as e_ours:
        tracejit.devices("gpu")
    assert str(e_ours.value).startswith(str(e_theirs.value).split(" present.")[0])


def test_device_put_copies_pytrees_and_is_identity_under_jit():
    x = np.arange(3.0)
    out = tracejit.device_put({"a": x, "b": (1.0, [2, np.float32(3)])}, tracejit.devices()[0])
    assert type(out["a"]) is tracejit.Array and not np.shares_memory(out["a"], x)
    x[0] = 10.0
    assert out["a"][0] == 0.0          # JAX arrays are immutable: a later write does not show
    assert out["b"][0].dtype == np.float64 and out["b"][1][0].dtype == np.int64
    assert out["b"][1][1].dtype == np.float32
    for aliased in (tracejit.device_put(x, may_alias=True), tracejit.device_put(x, donate=True)):
        assert type(aliased) is tracejit.Array and np.shares_memory(aliased, x)
    assert tracejit.device_put(out["a"]) is out["a"]       # an Array is immutable: no copy
    seen = []

    @tracejit.jit
    def f(v):
        w = tracejit.device_put(v, src=tracejit.devices()[0])
        seen.append(isinstance(w, Tracer) and w._var is v._var and w._np is None)   # the value, a JAX array
        return w * 2
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])
    assert seen == [True]
    with pytest.raises(TypeError, match="issue 17"):
        tracejit.device_put(x, "a sharding")
    assert tracejit.device_put(x, "cpu")[1] == 1.0


def test_device_get():
    arr = np.ones(2)
    got = tracejit.device_get({"a": arr, "s": 2.0, "n": np.int32(4), "none": None})
    assert got["a"] is arr and got["s"] == 2.0 and type(got["s"]) is float
    assert isinstance(got["n"], np.ndarray) and got["n"].dtype == np.int32
    assert got["none"] is None
    jax = jax_or_skip()
    theirs = jax.device_get([1, 2.0, np.ones(2)])
    ours = tracejit.device_get([1, 2.0, np.ones(2)])
    assert [type(t) for t in theirs] == [type(o) for o in ours]


# --------------------------------------------------------------------------- config flags

def test_disable_jit_runs_python_eagerly_nested_and_restores():
    seen = []

    @tracejit.jit
    def f(x):
        seen.append(type(x))
        return x * 2

    x = np.ones(2)
    f(x)
    assert seen == [Tracer]
    with tracejit.disable_jit():
        assert config.disable_jit
        np.testing.assert_array_equal(f(x), [2.0, 2.0])
        f(x)
        assert seen == [Tracer, np.ndarray, np.ndarray]
        with tracejit.disable_jit(False):
            f(np.ones(3))          # a new signature: traced again
            assert seen[-1] is Tracer
        f(x)
        assert seen[-1] is np.ndarray
    assert not config.disable_jit and not config._jit_hooks
    f(x)
    assert len(seen) == 5          # cached again: no Python call


def test_disable_jit_is_per_thread_and_global_update_works():
    f = tracejit.jit(lambda x: (seen.append(type(x).__name__), x + 1)[1])
    seen = []
    barrier = threading.Barrier(2)

    def other():
        barrier.wait()
        f(np.ones(4))      # jit stays on in this thread
        barrier.wait()

    t = threading.Thread(target=other)
    t.start()
    with tracejit.disable_jit():
        barrier.wait()
        barrier.wait()
        f(np.ones(4))
    t.join()
    assert seen == ["Tracer", "ndarray"]
    config.update("jax_disable_jit", True)
    try:
        f(np.ones(4))
        assert seen[-1] == "ndarray"
    finally:
        config.update("jax_disable_jit", False)
    assert not config._jit_hooks


def test_disable_jit_with_static_args_and_inside_grad():
    f = tracejit.jit(lambda x, n: x ** n, static_argnums=1)
    with tracejit.disable_jit():
        assert f(np.float64(3.0), 2) == 9.0
        assert float(tracejit.grad(lambda x: f(x, 3))(2.0)) == 12.0


def test_flag_context_managers_decorators_and_jax_prefix():
    for flag, value in [(tracejit.log_compiles, True), (tracejit.enable_checks, True),
                        (tracejit.explain_cache_misses, True), (tracejit.check_tracer_leaks, True),
                        (tracejit.numpy_rank_promotion, "raise"), (tracejit.legacy_prng_key, "error"),
                        (tracejit.default_prng_impl, "threefry2x32"), (tracejit.thread_guard, True),
                        (tracejit.enable_custom_prng, True), (tracejit.no_tracing, True),
                        (tracejit.default_device, "cpu")]:
        before = flag.value
        with flag(value):
            assert flag.value == value == getattr(config, flag.name)
            with flag(before):
                assert flag.value == before
            assert flag.value == value
        assert flag.value == before and flag.get_global() == before
    with tracejit.checking_leaks():
        assert config.jax_check_tracer_leaks
    assert tracejit.debug_nans(True)(lambda: config.debug_nans)() is True
    assert config.debug_nans is False
    with pytest.raises(TypeError, match="bool"):
        bool(tracejit.debug_nans)
    with pytest.raises(TypeError, match="requires an argument"):
        tracejit.numpy_rank_promotion()
    with pytest.raises(ValueError, match="allow"):
        tracejit.numpy_rank_promotion("bogus")
    with pytest.raises(ValueError, match="allow"):
        config.update("jax_numpy_rank_promotion", "bogus")
    with pytest.raises(AttributeError, match="no option"):
        config.update("jax_no_such_flag", 1)


def test_strict_promotion_and_prng_impls_are_refused_not_ignored():
    # (enable_x64(False) works: tests/test_x64_off.py)
    assert config.enable_x64 is True and config.x64_enabled is True
    with tracejit.enable_x64(True):
        assert jnp.ones(2).dtype == np.float64
    config.update("jax_enable_x64", True)
    with pytest.raises(NotImplementedError, match="strict"):
        tracejit.numpy_dtype_promotion("strict")
    with pytest.raises(NotImplementedError, match="threefry2x32"):
        config.update("jax_default_prng_impl", "rbg")
    with pytest.raises(RuntimeError, match="Unknown backend"):
        config.update("jax_platforms", "gpu")
    config.update("jax_platform_name", "cpu")
    with pytest.raises(RuntimeError, match="Unknown backend"):
        tracejit.default_device("gpu")
    with pytest.raises(ValueError, match="default_device"):
        tracejit.default_device(3)
    assert config.enable_x64 is True


def test_flag_signatures_match_jax():
    jax = jax_or_skip()
    import inspect
    for name in IMPLEMENTED:
        theirs, ours = getattr(jax, name), getattr(tracejit, name)
        if isinstance(ours, config_flags.State):
            assert type(theirs).__name__ == "State", name
            assert ours.name == theirs.name, name
            if name not in ("enable_x64", "enable_checks", "log_compiles", "explain_cache_misses"):
                assert ours.value == theirs.value, name      # the same defaults (the others: env / x64)
            continue
        if not callable(theirs) or isinstance(theirs, type):
            continue
        p_theirs = [p for p in inspect.signature(theirs).parameters if p != "host_id"]
        p_ours = [p for p in inspect.signature(ours).parameters if p != "host_id"]
        assert p_ours == p_theirs, (name, p_ours, p_theirs)


def test_debug_nans_and_infs():
    f = tracejit.jit(lambda x: jnp.log(x) * 2)
    assert np.isnan(f(np.array([-1.0])))[0]           # off: no error
    with tracejit.debug_nans(True):
        f(np.array([1.0]))
        with pytest.raises(FloatingPointError, match="invalid value encountered in log"):
            f(np.array([-1.0]))
        # integer results are never NaN; NaN from an input is reported on the jitted function
        assert tracejit.jit(lambda x: x + 1)(np.arange(2))[1] == 2
        with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in jit\(<lambda>\)"):
            tracejit.jit(lambda x: x + 1)(np.array([np.nan]))
        # AOT-compiled calls are checked too
        compiled = f.lower(np.array([1.0])).compile()
        with pytest.raises(FloatingPointError):
            compiled(np.array([-1.0]))
        assert np.isinf(f(np.array([0.0])))[0]        # debug_nans does not report inf
    with tracejit.debug_infs(True):
        with pytest.raises(FloatingPointError, match="divide by zero"):
            f(np.array([0.0]))
    config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError):
            f(np.array([-1.0]))
    finally:
        config.update("jax_debug_nans", False)
    assert not config._jit_hooks


def test_debug_nans_matches_jax_exception_type():
    jax = jax_or_skip()
    with jax.debug_nans(True):
        with pytest.raises(FloatingPointError) as theirs:
            jax.jit(jax.numpy.log)(-1.0)
    with tracejit.debug_nans(True):
        with pytest.raises(FloatingPointError) as ours:
            tracejit.jit(jnp.log)(np.float64(-1.0))
    assert "invalid value" in str(theirs.value) and "invalid value" in str(ours.value)
    assert "log" in str(theirs.value) and "log" in str(ours.value)


def test_no_tracing_and_no_execution():
    f = tracejit.jit(lambda x: x * 3)
    f(np.ones(2))
    with tracejit.no_tracing(True):
        np.testing.assert_array_equal(f(np.ones(2)), [3.0, 3.0])     # cached: fine
        with pytest.raises(RuntimeError, match="no_tracing"):
            f(np.ones(5))
        with pytest.raises(RuntimeError, match="no_tracing"):
            tracejit.make_jaxpr(lambda x: x + 1)(1.0)
    with tracejit.no_execution(True):
        with pytest.raises(RuntimeError, match="no_execution"):
            f(np.ones(2))
        assert jnp.ones(2).sum() == 2.0     # eager NumPy still runs
        with pytest.raises(RuntimeError, match="no_execution"):
            f.lower(np.ones(2)).compile()(np.ones(2))
    np.testing.assert_array_equal(f(np.ones(2)), [3.0, 3.0])


def test_debug_key_reuse_makes_reuse_an_error():
    key = tracejit.random.key(0)

    def twice(k):
        return tracejit.random.normal(k, (2,)) + tracejit.random.normal(k, (2,))

    with tracejit.debug_key_reuse(True):
        assert config.key_reuse == "error"
        with pytest.raises(tracejit.errors.KeyReuseError):
            tracejit.jit(twice)(key)
    assert config.key_reuse == "warn"


def test_make_user_context_retraces():
    ctx = tracejit.make_user_context(default_value=1)
    traces = []

    @tracejit.jit
    def f(x):
        traces.append(ctx.value)
        return x * ctx.value

    np.testing.assert_array_equal(f(np.ones(2)), [1.0, 1.0])
    with ctx(5):
        np.testing.assert_array_equal(f(np.ones(2)), [5.0, 5.0])
    np.testing.assert_array_equal(f(np.ones(2)), [1.0, 1.0])
    assert traces == [1, 5]
    ctx.set_global(2)
    assert f(np.ones(1))[0] == 2.0 and ctx.get_global() == 2
    with pytest.raises(TypeError, match="hashable"):
        ctx([1])
    ctx.set_global(1)


# --------------------------------------------------------------------------- small functions

def test_typeof():
    assert tracejit.typeof(np.ones((2, 3), np.float32)) == tracejit.ShapedArray((2, 3), np.float32)
    assert tracejit.typeof(1.0).weak_type and tracejit.typeof(np.float64(1.0)).weak_type is False
    seen = []
    tracejit.jit(lambda x: seen.append(tracejit.typeof(x)) or x)(np.zeros(3, np.int32))
    assert seen == [tracejit.ShapedArray((3,), np.int32)]
    jax = jax_or_skip()
    with jax.enable_x64(True):
        # (a Python bool is weakly typed in tracejit, strongly in JAX: left out)
        for v in (np.ones((2, 3), np.float32), np.int32(4), 2.5, 3):
            t, o = jax.typeof(v), tracejit.typeof(v)
            assert (t.shape, np.dtype(t.dtype), t.weak_type) == (o.shape, o.dtype, o.weak_type), v


def test_named_call_and_scope():
    g = tracejit.named_call(lambda x: x + 1, name="inc")
    assert tracejit.jit(g)(np.ones(1))[0] == 2.0
    with tracejit.named_scope("outer"):
        assert g(1.0) == 2.0
    with pytest.raises(TypeError, match="must be a string"):
        with tracejit.named_scope(3):
            pass


def test_ensure_compile_time_eval_under_jit_and_grad():
    kinds = []

    @tracejit.jit
    def f(x):
        with tracejit.ensure_compile_time_eval():
            n = jnp.arange(5).sum()
            m = jnp.sin(np.float64(0.5))
            kinds.append((type(n), type(m)))
            y = x * n                 # traced value: still recorded
            kinds.append(type(y))
        if n > 5:                     # Python control flow on a concrete value
            return y + m
        return y

    np.testing.assert_allclose(f(np.ones(2)), 10.0 + np.sin(0.5))
    assert not issubclass(kinds[0][0], Tracer) and not issubclass(kinds[0][1], Tracer)
    assert issubclass(kinds[1], Tracer)
    # without the context manager the same values are traced
    seen = []
    tracejit.jit(lambda x: seen.append(type(jnp.arange(5).sum())) or x)(np.ones(1))
    assert issubclass(seen[0], Tracer)

    def loss(w):
        with tracejit.ensure_compile_time_eval():
            scale = float(jnp.sqrt(np.float64(4.0)))
        return (w * scale) ** 2
    assert float(tracejit.jit(tracejit.grad(loss))(3.0)) == 24.0
    with tracejit.ensure_compile_time_eval():     # outside jit: a no-op
        assert jnp.ones(2).sum() == 2.0


def test_custom_gradient():
    @tracejit.custom_gradient
    def clip_grad(x):
        return x, lambda g: (np.clip(g, -1.0, 1.0),)

    loss = lambda x: 10.0 * clip_grad(x)                        # noqa: E731
    assert float(tracejit.grad(loss)(2.0)) == 1.0
    assert float(tracejit.jit(tracejit.grad(loss))(2.0)) == 1.0
    np.testing.assert_array_equal(tracejit.vmap(tracejit.grad(loss))(np.array([1.0, -2.0])), [1.0, 1.0])
    # d/dx x * clip_grad(x) = x + clip(x, -1, 1): the cotangent reaching vjp_fn is x
    np.testing.assert_array_equal(tracejit.vmap(tracejit.grad(lambda x: x * clip_grad(x)))(np.array([0.5, -2.0])),
                                  [1.0, -3.0])

    @tracejit.custom_gradient
    def mul(x, y):
        return x * y, lambda g: (g * y * 100, g * x)        # a single-array vjp for x is scaled
    gx, gy = tracejit.grad(mul, argnums=(0, 1))(2.0, 3.0)
    assert (float(gx), float(gy)) == (300.0, 2.0)
    assert mul(2.0, 3.0) == 6.0

    @tracejit.custom_gradient
    def single(x):
        return np.sin(x), lambda g: g * 7.0                   # not a tuple: one argument
    assert float(tracejit.grad(single)(0.3)) == 7.0


def test_custom_gradient_matches_jax():
    jax = jax_or_skip()

    def make(lib_np):
        def f(x):
            y = lib_np.exp(x)
            return y, lambda g: (g * y * 3.0,)
        return f
    theirs = jax.grad(jax.custom_gradient(make(jax.numpy)))(0.5)
    ours = tracejit.grad(tracejit.custom_gradient(make(np)))(0.5)
    np.testing.assert_allclose(float(ours), float(theirs), rtol=1e-6)


def test_closure_convert():
    g, consts = tracejit.closure_convert(lambda x: x + np.ones(2), np.zeros(2))
    assert consts == []
    np.testing.assert_array_equal(g(np.ones(2)), [2.0, 2.0])

    hoisted = []

    def outer(c):
        h, cs = tracejit.closure_convert(lambda x: x * c, 1.0)
        hoisted.append(len(cs))
        return h(2.0, *cs)
    assert float(tracejit.grad(outer)(3.0)) == 2.0
    assert hoisted == [1]

    # the JAX use case: a custom_vjp that must not close over a differentiated value
    @tracejit.custom_vjp
    def apply(f_conv, x, *consts):
        return f_conv(x, *consts)

    def apply_fwd(f_conv, x, *consts):
        return f_conv(x, *consts), (x, consts)

    def apply_bwd(f_conv, res, g):
        x, consts = res
        _, vjp = tracejit.vjp(f_conv, x, *consts)
        return vjp(g)
    apply = tracejit.custom_vjp(apply.__wrapped__, nondiff_argnums=(0,))
    apply.defvjp(apply_fwd, apply_bwd)

    def loss(c):
        f_conv, cs = tracejit.closure_convert(lambda x: np.sin(x * c), 0.5)
        return apply(f_conv, 0.5, *cs)
    np.testing.assert_allclose(float(tracejit.grad(loss)(2.0)), 0.5 * np.cos(1.0), rtol=1e-12)
    with pytest.raises(TypeError, match="traced for arguments"):
        g((np.ones(2),))


def test_effects_barrier_environment_and_version():
    assert tracejit.effects_barrier() is None
    text = tracejit.print_environment_info(return_string=True)
    assert text.startswith(f"tracejit: {tracejit.__version__}\n")
    assert "numpy:" in text and "device info: cpu-1, 1 local devices" in text and "process_count: 1" in text
    assert tracejit.version.__version__ == tracejit.__version__
    assert tracejit.__version_info__ == tuple(int(p) for p in tracejit.__version__.split("."))
    import re
    pyproject = (pathlib.Path(__file__).parents[1] / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1) == tracejit.__version__


# --------------------------------------------------------------------------- errors

ERROR_NAMES = ["ConcretizationTypeError", "TracerArrayConversionError", "TracerBoolConversionError",
               "TracerIntegerConversionError", "UnexpectedTracerError", "KeyReuseError", "JaxRuntimeError",
               "NonConcreteBooleanIndexError", "JAXTypeError", "JAXIndexError", "JaxprTypeError"]
BUILTIN_BASES = (TypeError, IndexError, RuntimeError, ValueError, ArithmeticError)


def test_errors_module_reexports_the_raised_classes():
    assert tracejit.errors.ConcretizationTypeError is tracejit.ConcretizationTypeError
    assert tracejit.errors.UnexpectedTracerError is tracejit.UnexpectedTracerError
    assert tracejit.errors.KeyReuseError is tracejit.random.KeyReuseError
    assert issubclass(tracejit.errors.UnexpectedTracerError, TypeError)
    leaked = []
    tracejit.jit(lambda x: leaked.append(x) or x)(1.0)
    with pytest.raises(TypeError, match="unexpected tracer"):      # an `except TypeError` catches it, as in JAX
        tracejit.jit(lambda y: y + leaked[0])(1.0)


@pytest.mark.parametrize("name", ERROR_NAMES)
def test_error_builtin_bases_match_jax(name):
    jax = jax_or_skip()
    import jax.errors  # noqa: F401
    theirs, ours = getattr(jax.errors, name), getattr(tracejit.errors, name)
    for base in BUILTIN_BASES:
        assert issubclass(ours, base) == issubclass(theirs, base), (name, base)
    for other in ERROR_NAMES:
        # JAX's subclass relations hold in tracejit (tracejit may add one: see the next test)
        if issubclass(theirs, getattr(jax.errors, other)):
            assert issubclass(ours, getattr(tracejit.errors, other)), (name, other)


def test_error_relations_that_differ_from_jax_are_the_documented_ones():
    # int(tracer) raises TracerIntegerConversionError in tracejit, so it stays a ConcretizationTypeError.
    assert issubclass(tracejit.errors.TracerIntegerConversionError, tracejit.errors.ConcretizationTypeError)


def test_key_reuse_error_is_a_type_error_as_in_jax():
    assert issubclass(tracejit.errors.KeyReuseError, TypeError)
    assert issubclass(tracejit.errors.KeyReuseError, tracejit.errors.JAXTypeError)


# --------------------------------------------------------------------------- dtypes, typing, stages

def test_dtypes_against_jax():
    jax = jax_or_skip()
    jax.config.update("jax_enable_x64", True)
    try:
        import jax.dtypes as jd
        td = tracejit.dtypes
        for d in (np.float32, np.float64, np.int8, np.uint32, np.bool_, np.complex64, float, int, complex, bool):
            assert td.canonicalize_dtype(d) == jd.canonicalize_dtype(d), d
            assert td.itemsize_bits(d) == jd.itemsize_bits(d), d
            assert td.scalar_type_of(np.zeros((), d)) is jd.scalar_type_of(np.zeros((), d)), d
        for a, b in [(np.float32, np.floating), (np.int8, np.signedinteger), (np.uint8, np.signedinteger),
                     (np.complex64, np.inexact), (np.bool_, np.number), (td.float0, np.floating)]:
            assert td.issubdtype(a, b) == jd.issubdtype(a, b), (a, b)
        assert not td.issubdtype(np.uint32, td.prng_key) and not jd.issubdtype(np.uint32, jd.prng_key)
        # Where JAX's promotion lattice and NumPy's differ, tracejit follows NumPy: int32 with float32 is
        # float64 (JAX: float32), and (int array, Python float) is a strong float64 (JAX: weak; likewise
        # bool with a Python int).
        cases = [(np.float32, 1.0), (np.int32, np.int64), (np.ones(2, np.float32), 2),
                 (1, 2.0), (np.uint8, np.int8), (np.int16, 3), (1j, np.float32)]
        for args in cases:
            assert td.result_type(*args, return_weak_type_flag=True) == \
                jd.result_type(*args, return_weak_type_flag=True), args
        assert td.result_type(np.int32, np.float32) == np.result_type(np.int32, np.float32) == np.float64
        assert td.result_type(1.0, np.int32, return_weak_type_flag=True) == (np.float64, False)
        assert td.float0 == jd.float0
        assert issubclass(td.TypePromotionError, ValueError) and issubclass(jd.TypePromotionError, ValueError)
        assert td.finfo(np.float32).eps == jd.finfo(np.float32).eps
        assert td.iinfo(np.int16).min == jd.iinfo(np.int16).min
    finally:
        jax.config.update("jax_enable_x64", False)


def test_dtypes_errors():
    with pytest.raises(TypeError, match="does not support"):
        tracejit.dtypes.canonicalize_dtype(np.str_)
    with pytest.raises(TypeError):
        tracejit.dtypes.scalar_type_of(np.array(["a"]))
    assert tracejit.dtypes.float0 is tracejit.float0


def test_typing_and_stages():
    from tracejit import stages, typing
    assert typing.Array is tracejit.Array and issubclass(tracejit.Array, np.ndarray)
    assert typing.ArrayLike is not None and typing.DTypeLike is not None
    f = tracejit.jit(lambda x: x + 1)
    assert isinstance(f, stages.Wrapped)
    lowered = f.lower(np.ones(2))
    assert isinstance(lowered, stages.Lowered) and stages.Lowered is tracejit.Lowered
    assert isinstance(lowered.compile(), stages.Compiled)
