"""Shared test helpers: run a function through NumPy, tracejit.numpy (eager)
and tracejit.jit, and compare values, dtypes and shapes.

Functions under test take the array module as their first argument, so one
definition serves all three paths::

    check_against_numpy(lambda xp, x: xp.sin(x) + 1, x, transcendental=True)

runs ``fn(np, x)`` (the oracle), ``fn(tracejit.numpy, x)`` eagerly,
``jit(lambda x: fn(tracejit.numpy, x))(x)`` and, with ``np_protocol``
(default), ``jit(lambda x: fn(np, x))(x)`` — plain NumPy calls on tracers
that dispatch through ``__array_ufunc__`` / ``__array_function__``.
"""
from __future__ import annotations

import ctypes
import mmap
import warnings

import numpy as np

import tracejit
import tracejit.numpy as jnp

# A few ULP for transcendental functions on the compiled backend.
TRANSCENDENTAL_RTOL = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-14}
# Reassociated sums (matmul, einsum, reductions in another order), relative to the largest |value|.
REASSOC_TOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}

FLOAT_DTYPES = [np.float32, np.float64]
INT_DTYPES = [np.int32, np.int64]
COMPLEX_DTYPES = [np.complex64, np.complex128]
ALL_DTYPES = [np.bool_] + INT_DTYPES + FLOAT_DTYPES + COMPLEX_DTYPES
# NEP 50 promotion matrix dtypes.
PROMOTION_DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.uint8, np.uint32, np.float16, np.float32,
                    np.float64, np.complex64, np.complex128]

SPECIAL_F = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, np.nan, np.inf, -np.inf, 1e-310, -1e-310, 1e300, -1e300,
             1e-30, 7.25, 100.0]


def special_values(dtype) -> np.ndarray:
    """NaN, ±inf, ±0, denormals, large and tiny values (cast to ``dtype``)."""
    d = np.dtype(dtype)
    with np.errstate(all="ignore"):
        if d.kind == "f":
            vals = list(SPECIAL_F) + [float(np.finfo(d).smallest_subnormal), float(np.finfo(d).max),
                                      float(np.finfo(d).tiny)]
            return np.array(vals, dtype=d)
        if d.kind == "c":
            re = np.array([0.0, -0.0, 1.5, np.nan, np.inf, -2.0, 1e-30], dtype=np.float64)
            im = np.array([0.0, 1.0, -0.0, 1.0, 0.0, np.nan, -3.0], dtype=np.float64)
            return (re + 1j * im).astype(d)
        if d.kind == "b":
            return np.array([True, False, True, True, False])
        info = np.iinfo(d)
        return np.array([0, 1, -1 if d.kind == "i" else 2, 7, -8 if d.kind == "i" else 9, 100,
                         info.max, info.min, info.max // 3], dtype=d)


def assert_close(got, want, rtol=1e-6, atol=0.0):
    """Same structure, shapes and dtypes; floats/complex within tolerance (NaNs equal), others exact."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            assert_close(g, w, rtol, atol)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def normal_sample(shape, dtype, rng, int_range=(-5, 6)) -> np.ndarray:
    """Random array from ``rng``: standard normal floats/complex, integers in ``int_range``."""
    d = np.dtype(dtype)
    if d == np.bool_:
        return rng.random(shape) > 0.5
    if d.kind in "iu":
        return rng.integers(*int_range, size=shape).astype(d)
    if d.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(d)
    return rng.standard_normal(shape).astype(d)


def sample(shape, dtype, seed=0, low=-5, high=5) -> np.ndarray:
    """Deterministic random array of ``shape`` and ``dtype``."""
    rng = np.random.default_rng(seed)
    d = np.dtype(dtype)
    if d.kind == "b":
        return rng.random(shape) > 0.5
    if d.kind in "iu":
        lo = 0 if d.kind == "u" else low
        return rng.integers(lo, high, size=shape).astype(d)
    if d.kind == "c":
        return (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(d)
    return rng.uniform(low, high, shape).astype(d)


def _tolerance(dtype, transcendental, backend: str, reassoc: bool = False, scale: float = 1.0):
    """(rtol, atol) for comparing with NumPy: exact, except transcendental results of a compiled
    backend (a few ULP) and reassociated sums on any backend (relative to ``scale``)."""
    d = np.dtype(dtype)
    real = np.dtype(d.char.lower()) if d.kind == "c" else d
    if reassoc and real in REASSOC_TOL:
        tol = REASSOC_TOL[real]
        return tol, tol * scale
    # transcendental="always": a composite formula that differs from NumPy's loop on every backend.
    if not transcendental or (backend == "reference" and transcendental != "always"):
        return 0.0, 0.0
    rtol = TRANSCENDENTAL_RTOL.get(real, 0.0)
    atol = 4 * float(np.finfo(real).eps) if real.kind == "f" else 0.0
    return rtol, atol


def current_backend(backend=None) -> str:
    return backend or tracejit.config.backend


def assert_same(actual, expected, *, transcendental=False, backend=None, what="result", check_zero_sign=True,
                reassoc=False):
    """Equal values (NaNs equal), dtype and shape; ULP tolerance only for
    transcendental results of a compiled backend. Pytrees compare leafwise."""
    a_leaves, a_def = tracejit.tree_flatten(actual)
    e_leaves, e_def = tracejit.tree_flatten(expected)
    assert a_def == e_def, f"{what}: structure {a_def} != expected {e_def}"
    for i, (a, e) in enumerate(zip(a_leaves, e_leaves)):
        where = f"{what} leaf {i}" if len(a_leaves) > 1 else what
        a_arr, e_arr = np.asarray(a), np.asarray(e)
        assert a_arr.shape == e_arr.shape, f"{where}: shape {a_arr.shape} != expected {e_arr.shape}"
        assert a_arr.dtype == e_arr.dtype, f"{where}: dtype {a_arr.dtype} != expected {e_arr.dtype}"
        finite = np.abs(e_arr[np.isfinite(e_arr)]) if e_arr.dtype.kind in "fc" else np.zeros(0)
        scale = float(finite.max()) if finite.size else 1.0
        rtol, atol = _tolerance(e_arr.dtype, transcendental, current_backend(backend), reassoc, scale)
        if rtol == 0 and atol == 0:
            np.testing.assert_array_equal(a_arr, e_arr, err_msg=where, strict=True)
            if check_zero_sign and e_arr.dtype.kind in "fc":
                _assert_zero_signs(a_arr, e_arr, where)
        else:
            np.testing.assert_allclose(a_arr, e_arr, rtol=rtol, atol=atol, equal_nan=True, err_msg=where)


def _assert_zero_signs(a, e, where):
    parts = [(a.real, e.real), (a.imag, e.imag)] if e.dtype.kind == "c" else [(a, e)]
    for ap, ep in parts:
        zeros = ep == 0
        if np.any(zeros):
            np.testing.assert_array_equal(np.signbit(ap[zeros]), np.signbit(ep[zeros]),
                                          err_msg=f"{where}: sign of zero differs")


def _numpy_reference(fn, args, kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(np, *args, **kwargs)


def check_against_numpy(fn, *args, transcendental=False, backend=None, np_protocol=True, eager=True,
                        static_argnums=(), check_zero_sign=True, reassoc=False, **kwargs):
    """Compare ``fn(xp, *args)`` across NumPy, eager tracejit.numpy and jit.

    ``transcendental``: a few ULP on compiled backends; ``reassoc``: sums that may be reassociated
    (matmul, einsum, float reductions) compare relative to the largest value, on every backend.
    Returns the NumPy result. ``static_argnums`` counts positions in ``args``.
    """
    expected = _numpy_reference(fn, args, kwargs)
    opts = dict(transcendental=transcendental, backend=backend, check_zero_sign=check_zero_sign, reassoc=reassoc)
    if eager:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = fn(jnp, *args, **kwargs)
        assert_same(got, expected, what="eager tracejit.numpy", **dict(opts, transcendental=False, reassoc=False))
    modules = [("tracejit.numpy", jnp)] + ([("numpy protocol", np)] if np_protocol else [])
    programs = []
    for label, xp in modules:
        jitted = tracejit.jit(lambda *a, xp=xp, **k: fn(xp, *a, **k), static_argnums=static_argnums,
                              backend=backend)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if programs and not kwargs and _same_program(programs[0], jitted.lower(*args)):
                continue  # plain NumPy traced to the very same program: compiling it again proves nothing
            got = jitted(*args, **kwargs)
            if not kwargs:
                programs.append(jitted.lower(*args))
        assert_same(got, expected, what=f"jit ({label})", **opts)
    return expected


def _same_program(a, b) -> bool:
    """Same text, same constants and same output structure (so the same executable)."""
    if str(a.program) != str(b.program) or a.out_tree != b.out_tree:
        return False
    return all(np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True) and np.asarray(x).dtype ==
               np.asarray(y).dtype for x, y in zip(a.program.const_values, b.program.const_values))


def count_traces(fun):
    """Wrap ``fun`` so each trace bumps ``wrapper.count`` (a Python side effect)."""
    def wrapper(*args, **kwargs):
        wrapper.count += 1
        return fun(*args, **kwargs)
    wrapper.count = 0
    wrapper.__name__ = getattr(fun, "__name__", "counted")
    return wrapper


def views(x: np.ndarray):
    """Non-contiguous and negative-stride views of a 2-D array ``x`` with their names."""
    return {"step2": x[::2], "transposed": x.T, "reversed": x[::-1, ::-1], "col_step": x[:, ::-2]}


def control_flow_steps(compiled) -> list:
    """The top-level ``while``/``scan``/``cond`` steps of a ``Compiled``'s plan (``step.loop`` is the
    backend's choice: ``.native`` says whether it runs as one native function)."""
    from tracejit.compiler.plan import CONTROL_FLOW, NumpyStep
    return [s for s in compiled.executable.plan.steps
            if isinstance(s, NumpyStep) and s.eqn.primitive.name in CONTROL_FLOW]


def central_difference(f, x, eps=1e-6) -> np.ndarray:
    """The gradient of the scalar function ``f`` at ``x`` (float64) by central differences, element by element."""
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        out[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return out


def at_page_end(a, keep: list) -> np.ndarray:
    """A C-contiguous copy of ``a`` whose last byte is the last before a page that cannot be read
    (``mprotect`` ``PROT_NONE``): native code reading one element past its end kills the process
    (run such a test in a child). ``keep`` receives the mapping, which must outlive the copy."""
    a = np.asarray(a)
    page = mmap.PAGESIZE
    total = -(-a.nbytes // page) * page + page
    area = mmap.mmap(-1, total)
    keep.append(area)
    start = ctypes.addressof(ctypes.c_char.from_buffer(area))
    libc = ctypes.CDLL(None)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    assert libc.mprotect(start + total - page, page, 0) == 0
    out = np.frombuffer(area, a.dtype, count=a.size, offset=total - page - a.nbytes).reshape(a.shape)
    out[...] = a
    return out
