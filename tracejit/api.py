"""The user API: ``jit``, ``make_jaxpr``, ``eval_shape`` and the AOT stages."""
from __future__ import annotations

import functools
import inspect
import threading
import time
from typing import Callable, NamedTuple

import numpy as np

from tracejit import config_flags, jit_cache
from tracejit.autograph import convert as autograph_convert
from tracejit.array import Array, as_array_result
from tracejit.backends import get_backend
from tracejit.compile_log import record_compile
from tracejit.compiler import driver
from tracejit.config import config
from tracejit.core import dtypes, errors
from tracejit.core.avals import ShapedArray
from tracejit.core.check import check_program
from tracejit.core.interpret import eval_program
from tracejit.core.ir import Program
from tracejit.core.pytree import LEAF, PyTreeDef, tree_flatten, tree_unflatten
from tracejit.core.trace import EVAL_TRACE, current_trace, trace_flat
from tracejit.core.tracer import Tracer
from tracejit.core.values import ShapeDtypeStruct, leaf_aval
from tracejit.ops.call import call_p
from tracejit import functionalize   # issue 16: NumPy arguments written in place


# ----------------------------------------------------------------- issue 16: mutated arguments
# np.ndarray arguments follow NumPy semantics under jit (tracejit/functionalize): the final values
# of those the function writes are extra outputs of the program, copied back into the caller's
# arrays after each call (np.copyto: one copy per mutated argument -- a first stage; the goal is
# the argument's own buffer as the executable's output).
def _mutation_info(jitted, sig):
    return jitted._mutations.get(sig, ((), False, True))[:2]


def _without_provenance(sig):
    """The signature with every leaf's semantics forgotten: the key under which an entry whose
    trace wrote nothing in place serves NumPy and JAX arguments alike."""
    return sig._replace(numpy_leaves=None)


def _run_entry(entry, leaves, arrays):
    """Run ``entry``'s executable; write mutated arguments back; return the function's outputs."""
    if not entry.mutated:
        return entry.executable(*arrays)
    functionalize.check_call(leaves, entry.mutated, entry.layout_sensitive)
    outs = entry.executable(*arrays)
    n = len(outs) - len(entry.mutated)
    functionalize.write_back(leaves, entry.mutated, outs[n:])
    return outs[:n]


def _mutated_text(entry_or_mutated, sig) -> str:
    mutated = getattr(entry_or_mutated, "mutated", entry_or_mutated)
    if not mutated:
        return ""
    names = ", ".join(f"leaf {i} ({sig.avals[i].str_short()})" for i in mutated)
    return f"mutated arguments (written back after each call): {names}\n"
# ----------------------------------------------------------------- end issue 16


# --------------------------------------------------------------------------- argument handling

def _as_array(leaf, aval: ShapedArray) -> np.ndarray:
    if isinstance(leaf, np.ndarray) and leaf.dtype == aval.dtype:
        return leaf
    return np.asarray(leaf, dtype=aval.dtype)


class _Signature(NamedTuple):
    treedef: PyTreeDef
    avals: tuple
    statics: tuple
    numpy_leaves: tuple = ()   # leaves with NumPy semantics (np.ndarray arguments; issue 16)


def _hashable_static(value, name):
    try:
        hash(value)
    except TypeError as e:
        raise ValueError(f"Non-hashable static arguments are not supported: static argument {name} "
                         f"is a {type(value).__name__} ({value!r:.60}) and hashing it failed: {e}. "
                         "Use a tuple instead of a list, or make the object hashable.") from None
    return value


def _check_python_ints(ranges, leaves) -> None:
    """NumPy raises when a Python int operand does not fit the array dtype it is cast to
    (``uint8_array // -3``); a traced Python int argument is checked here, at the call."""
    for i, targets in ranges.items():
        v = leaves[i]
        if type(v) is not int:
            continue
        for d in targets:
            info = np.iinfo(d)
            if not info.min <= v <= info.max:
                raise OverflowError(f"Python integer {v} out of bounds for {d.name}")


class CacheEntry:
    """What one signature compiled to."""

    # used: set by calls, cleared by the in-process cache's eviction (tracejit/jit_cache.py).
    __slots__ = ("program", "executable", "out_tree", "timings", "in_avals", "used", "nbytes",
                 "mutated", "layout_sensitive", "__weakref__")

    def __init__(self, program, executable, out_tree, timings, in_avals):
        self.program = program
        self.executable = executable
        self.out_tree = out_tree
        self.timings = timings
        self.in_avals = in_avals
        self.used = True
        self.nbytes = 0
        self.mutated = ()                 # leaves the function writes: extra outputs (issue 16)
        self.layout_sensitive = False


def _source_location(fun) -> str:
    code = getattr(fun, "__code__", None)
    if code is None:
        return "<unknown>"
    return f"{code.co_filename}:{code.co_firstlineno}"


# --------------------------------------------------------------------------- jit

class Jitted:
    """A function compiled on first call per input signature (see :func:`jit`)."""

    def __init__(self, fun: Callable, static_argnums=(), static_argnames=(), donate_argnums=(),
                 donate_argnames=(), inline: bool = True, backend: str | None = None,
                 autograph: bool | None = None, **options):
        if not callable(fun):
            raise TypeError(f"jit expects a callable, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._name = getattr(fun, "__name__", "function")
        self._location = _source_location(fun)
        self._inline = inline
        self._backend = backend
        self._autograph = autograph     # None: config.autograph at trace time
        self._options = options
        try:
            self._signature = inspect.signature(fun)
        except (TypeError, ValueError):
            self._signature = None
        self._static_argnums, self._static_argnames = self._resolve_statics(static_argnums, static_argnames)
        self._donate_argnums = self._resolve_donation(donate_argnums, donate_argnames)
        self._cache: dict = {}
        self._fast_cache: dict = {}
        self._mutations: dict = {}        # signature -> (mutated leaves, layout_sensitive): issue 16
        self._lock = threading.RLock()
        self.signatures_compiled: list[_Signature] = []
        jit_cache.register(self)

    # ------------------------------------------------------------------ setup
    def _param_names(self):
        if self._signature is None:
            return []
        return [p.name for p in self._signature.parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    def _resolve_statics(self, nums, names):
        nums = (nums,) if isinstance(nums, int) else tuple(nums)
        names = (names,) if isinstance(names, str) else tuple(names)
        params = self._param_names()
        n = len(params)
        nums = tuple(sorted({i % n if i < 0 and n else i for i in nums}))
        names = set(names)
        for i in nums:
            if i < n:
                names.add(params[i])
        nums = set(nums)
        for name in names:
            if name in params:
                nums.add(params.index(name))
        return tuple(sorted(nums)), frozenset(names)

    def _resolve_donation(self, nums, names):
        nums = (nums,) if isinstance(nums, int) else tuple(nums)
        names = (names,) if isinstance(names, str) else tuple(names)
        params = self._param_names()
        out = set(nums)
        for name in names:
            if name not in params:
                raise ValueError(f"donate_argnames {name!r} is not a parameter of {self._name}")
            out.add(params.index(name))
        return tuple(sorted(out))

    # ------------------------------------------------------------------ signatures
    def _split(self, args, kwargs):
        statics = []
        dynamic_args = []
        for i, a in enumerate(args):
            if i in self._static_argnums:
                statics.append((i, _hashable_static(a, f"{i} of {self._name}")))
            else:
                dynamic_args.append(a)
        dynamic_kwargs = {}
        for k in sorted(kwargs):
            if k in self._static_argnames:
                statics.append((k, _hashable_static(kwargs[k], f"{k!r} of {self._name}")))
            else:
                dynamic_kwargs[k] = kwargs[k]
        return tuple(statics), dynamic_args, dynamic_kwargs

    def _signature_of(self, args, kwargs):
        statics, dyn_args, dyn_kwargs = self._split(args, kwargs)
        leaves, treedef = tree_flatten((tuple(dyn_args), dyn_kwargs))
        avals = tuple(leaf_aval(leaf, f"argument {i} of {self._name}") for i, leaf in enumerate(leaves))
        numpy_leaves = tuple(i for i, leaf in enumerate(leaves) if functionalize.is_numpy_leaf(leaf))
        return _Signature(treedef, avals, statics, numpy_leaves), leaves

    def _rebuild_call(self, statics, treedef, leaves):
        dyn_args, dyn_kwargs = tree_unflatten(treedef, leaves)
        args = list(dyn_args)
        kwargs = dict(dyn_kwargs)
        for key, value in statics:
            if isinstance(key, int):
                args.insert(key, value)
            else:
                kwargs[key] = value
        return args, kwargs

    # ------------------------------------------------------------------ tracing and compiling
    def trace(self, sig: _Signature):
        """Trace to a Program for ``sig``; returns ``(program, out_tree)``."""
        if config.no_tracing:
            raise RuntimeError(f"re-tracing function {self._name} at {self._location} for `jit`, but "
                               "'no_tracing' is set")
        out_tree_box = []
        # Autograph: Python loops/ifs over traced values become lax control flow (tracejit/autograph).
        use_ag = config.autograph if self._autograph is None else self._autograph
        fun = autograph_convert(self._fun) if use_ag else self._fun

        writes_before = functionalize.writes()

        def flat_fun(*tracers):
            tracers, session = functionalize.box_arguments(tracers, sig.numpy_leaves)   # issue 16
            args, kwargs = self._rebuild_call(sig.statics, sig.treedef, tracers)
            out = fun(*args, **kwargs)
            flat, out_tree = tree_flatten(out)
            out_tree_box.append(out_tree)
            mutated, values = functionalize.mutated(session)    # issue 16: extra outputs
            self._mutations[sig] = (mutated, session.layout_sensitive, functionalize.writes() == writes_before)
            return list(flat) + values

        program = trace_flat(flat_fun, sig.avals, self._name)
        if config.enable_checks:
            check_program(program)
        return program, out_tree_box[0]

    def _compile(self, sig: _Signature, traced=None) -> CacheEntry:
        t0 = time.perf_counter()
        # `traced` is a (program, out_tree) that lower() already made: reuse it, never retrace.
        program, out_tree = traced if traced is not None else self.trace(sig)
        t1 = time.perf_counter()
        # trace -> compile driver (every stage, loop bodies too) -> the backend builds an executable.
        target = get_backend(self._backend or config.backend)
        optimized = driver.optimize(program, target, donate_argnums=self._donated_leaves(sig))
        t2 = time.perf_counter()
        executable = target.build(optimized, name=self._name)
        timings = {"trace_ms": (t1 - t0) * 1e3, **optimized.timing_summary(),
                   **(getattr(executable, "timings", None) or {"build_ms": (time.perf_counter() - t2) * 1e3})}
        entry = CacheEntry(program, executable, out_tree, timings, sig.avals)
        entry.mutated, entry.layout_sensitive = _mutation_info(self, sig)
        record_compile(self, sig, entry)
        return entry

    def _donated_leaves(self, sig):
        if not self._donate_argnums:
            return ()
        # Leaves of donated positional arguments, counted in flattening order.
        dyn_positions = [i for i in range(len(sig.treedef.children[0].children) + len(sig.statics))
                         if i not in self._static_argnums]
        out, offset = [], 0
        for pos, child in zip(dyn_positions, sig.treedef.children[0].children):
            if pos in self._donate_argnums:
                out.extend(range(offset, offset + child.num_leaves))
            offset += child.num_leaves
        return tuple(out)

    def _entry_for(self, sig: _Signature, traced=None) -> CacheEntry:
        # Config options that change the executable (backend, threading) are part of the key.
        key = (sig, config.compile_key())
        entry = self._cache.get(key)
        if entry is None:
            with self._lock:
                entry = self._cache.get(key)
                shared = (_without_provenance(sig), key[1])
                if entry is None:
                    # A program that wrote nothing in place is the same for NumPy and JAX arguments
                    # (issue 16): f(np_array) then f(f(np_array)) compiles once.
                    entry = self._cache.get(shared)
                    if entry is not None:
                        self._cache[key] = entry
                        entry.used = True
                        return entry
                    entry = self._compile(sig, traced)
                    self._cache[key] = entry
                    if self._mutations.get(sig, ((), False, False))[2]:
                        self._cache[shared] = entry
                    if sig not in self.signatures_compiled:   # (again after an eviction)
                        self.signatures_compiled.append(sig)
                    jit_cache.added(self, key, entry)
        entry.used = True
        return entry

    def _forget(self, key, entry) -> None:
        """Drop ``entry`` (evicted by the in-process cache's budget) if it is still cached under ``key``."""
        if self._cache.get(key) is entry:
            # Also the other keys that share it (NumPy and JAX arguments of a program that writes
            # nothing in place: _entry_for).
            for k in [k for k, e in list(self._cache.items()) if e is entry]:   # (a snapshot: no lock)
                self._cache.pop(k, None)
        for fast, hit in list(self._fast_cache.items()):
            if hit is entry:
                self._fast_cache.pop(fast, None)

    # ------------------------------------------------------------------ calling
    def _fast_key(self, args, kwargs):
        """``(key, arrays)`` for plain ndarray (or NumPy scalar: a strong 0-d value) positional
        arguments -- a key without building avals or pytrees, and the arguments with scalars as 0-d
        arrays (``args`` itself when there are none) -- else ``(None, args)``."""
        if kwargs or self._static_argnums:
            return None, args
        key = [config.compile_key()]
        scalars = False
        for a in args:
            t = type(a)
            if t is np.ndarray or t is Array:
                key.append(a.shape)
                key.append(t)            # NumPy or JAX semantics (issue 16)
            elif isinstance(a, np.generic):
                key.append(t)
                scalars = True
            else:
                return None, args
            key.append(a.dtype)
        if scalars:
            args = tuple(np.asarray(a) if isinstance(a, np.generic) else a for a in args)
        return tuple(key), args

    def __call__(self, *args, **kwargs):
        if config._jit_hooks:   # disable_jit, debug_nans/infs, no_execution: tracejit/config_flags.py
            return config_flags.flagged_call(self, self._call, args, kwargs)
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        if current_trace() is not EVAL_TRACE:
            return self._call_traced(args, kwargs)
        fast, arrays = self._fast_key(args, kwargs)
        if fast is not None:
            hit = self._fast_cache.get(fast)
            if hit is not None:
                hit.used = True
                outs = _run_entry(hit, arrays, arrays)
                if hit.out_tree is LEAF:
                    return as_array_result(outs[0])
                return tree_unflatten(hit.out_tree, [as_array_result(o) for o in outs])
        sig, leaves = self._signature_of(args, kwargs)
        for leaf in leaves:
            if isinstance(leaf, Tracer):
                raise errors.UnexpectedTracerError(errors.escaped_tracer_message(leaf))
        entry = self._entry_for(sig)
        if fast is not None and not dtypes.x64_off():   # (x64 off: 64-bit arguments are converted)
            self._fast_cache[fast] = entry
        if entry.program.python_int_ranges:
            _check_python_ints(entry.program.python_int_ranges, leaves)
        arrays = [_as_array(leaf, aval) for leaf, aval in zip(leaves, sig.avals)]
        return tree_unflatten(entry.out_tree, [as_array_result(o) for o in _run_entry(entry, leaves, arrays)])

    def _call_traced(self, args, kwargs):
        sig, leaves = self._signature_of(args, kwargs)
        with self._lock:
            key = ("traced", sig)
            cached = self._cache.get(key)
            if cached is None:
                cached = self.trace(sig)
                self._cache[key] = cached
        program, out_tree = cached
        if self._inline:
            outs = eval_program(program, program.const_values, leaves)
        else:
            outs = call_p.bind(*program.const_values, *leaves, program=program, name=self._name)
        mutated = _mutation_info(self, sig)[0]
        if mutated:      # issue 16: the caller's NumPy arrays take the written values
            n = len(outs) - len(mutated)
            functionalize.write_back(leaves, mutated, outs[n:])
            outs = outs[:n]
        return tree_unflatten(out_tree, outs)

    # ------------------------------------------------------------------ AOT
    def lower(self, *args, **kwargs) -> "Lowered":
        """Trace and optimize for these arguments (arrays or ShapeDtypeStructs)."""
        sig, _ = self._signature_of(args, kwargs)
        t0 = time.perf_counter()
        program, out_tree = self.trace(sig)
        trace_ms = (time.perf_counter() - t0) * 1e3
        return Lowered(self, sig, program, out_tree, trace_ms)

    def eval_shape(self, *args, **kwargs):
        """Output shapes and dtypes as ShapeDtypeStructs, without computing."""
        sig, _ = self._signature_of(args, kwargs)
        program, out_tree = self.trace(sig)
        n = out_tree.num_leaves
        return tree_unflatten(out_tree, [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
                                         for a in program.out_avals[:n]])

    def clear_cache(self):
        """Forget every compiled signature."""
        with self._lock:
            entries = [e for e in self._cache.values() if isinstance(e, CacheEntry)]
            self._cache.clear()
            self._fast_cache.clear()
            self.signatures_compiled.clear()
        jit_cache.removed(entries)

    def __get__(self, obj, objtype=None):
        # Jitted methods bind `self` like plain functions do.
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self):
        return f"<tracejit.jit of {self._name} at {self._location}>"


class Lowered:
    """A traced program for one signature (``jit(f).lower(x)``); ``compile()`` it."""

    def __init__(self, jitted: Jitted, sig: _Signature, program: Program, out_tree, trace_ms: float):
        self._jitted = jitted
        self._sig = sig
        self.program = program
        self.out_tree = out_tree
        self.trace_ms = trace_ms

    @property
    def in_avals(self):
        return list(self._sig.avals)

    def as_text(self) -> str:
        """The program after the compiler's passes, with kernel boundaries marked."""
        target = get_backend(self._jitted._backend or config.backend)
        return (_mutated_text(_mutation_info(self._jitted, self._sig)[0], self._sig)
                + driver.optimize(self.program, target).describe())

    def compile(self) -> "Compiled":
        """Compile to native code; the result is also cached in the jitted function."""
        entry = self._jitted._entry_for(self._sig, (self.program, self.out_tree))
        return Compiled(self._jitted, self._sig, entry, self._jitted._name)


class Compiled:
    """An executable for exactly one input signature."""

    def __init__(self, jitted: "Jitted", sig: _Signature, entry: CacheEntry, name: str):
        self._jitted = jitted
        self._sig = sig
        self._entry = entry
        self._name = name

    @property
    def executable(self):
        return self._entry.executable

    @property
    def kernels(self):
        return list(getattr(self._entry.executable, "kernels", []))

    @property
    def timings(self) -> dict:
        return dict(self._entry.timings)

    def as_text(self, llvm_ir: bool = False) -> str:
        """Kernels and steps of the executable; with ``llvm_ir`` also the LLVM IR."""
        describe = getattr(self._entry.executable, "as_text", None)
        return _mutated_text(self._entry, self._sig) + (describe(llvm_ir=llvm_ir) if describe
                                                          else str(self._entry.program))

    def cost_analysis(self) -> dict:
        """Flops, transcendental calls and bytes accessed per call (estimates)."""
        from tracejit.compiler.analysis import cost_analysis
        return cost_analysis(self._entry.program, self._entry.executable)

    def memory_analysis(self) -> dict:
        """Argument, output and temporary bytes, and allocations per call."""
        from tracejit.compiler.analysis import memory_analysis
        return memory_analysis(self._entry.program, self._entry.executable)

    def __call__(self, *args, **kwargs):
        sig, leaves = self._jitted._signature_of(args, kwargs)
        if sig[:3] != self._sig[:3]:   # (NumPy-ness of leaves: the compiled semantics hold; issue 16)
            raise TypeError(f"Compiled function {self._name} was compiled for input signature "
                            f"{_sig_text(self._sig)} but was called with {_sig_text(sig)}; "
                            "call jit(f) (which compiles per signature) or lower() again")
        if config._jit_hooks:
            config_flags.check_execution(self._name)
        arrays = [_as_array(leaf, aval) for leaf, aval in zip(leaves, sig.avals)]
        out = tree_unflatten(self._entry.out_tree, [as_array_result(o) for o in _run_entry(self._entry, leaves, arrays)])
        if config._jit_hooks:
            config_flags.check_results(self._jitted, args, kwargs, out)
        return out


def _sig_text(sig: _Signature) -> str:
    inner = ", ".join(a.str_short() for a in sig.avals)
    statics = f" static={dict(sig.statics)}" if sig.statics else ""
    return f"({inner}){statics}"


def jit(fun: Callable | None = None, *, static_argnums=(), static_argnames=(), donate_argnums=(),
        donate_argnames=(), inline: bool = True, backend: str | None = None, keep_unused: bool = False,
        autograph: bool | None = None, **unsupported):
    """Compile ``fun`` on first call per input signature; later calls reuse it.

    The package's ``tracejit.jit`` is :func:`tracejit.buckets.jit`: this
    function, plus ``buckets=`` (padding arguments to bucket sizes), which
    lives above the API so that the API does not import the padding code.

    Parameters
    ----------
    fun : callable
        A function of arrays (and pytrees of arrays) returning arrays.
    static_argnums, static_argnames : int/str or sequence
        Arguments whose *values* select the program (they must be hashable);
        a new value traces and compiles again.
    donate_argnums, donate_argnames : int/str or sequence
        Arguments whose buffers the executable may reuse for outputs.
    inline : bool
        When called inside another traced function, copy this function's
        program into the caller (default). ``False`` keeps a ``call``.
    backend : str, optional
        ``"cpu"`` (LLVM, default) or ``"reference"`` (NumPy interpreter).
    autograph : bool, optional
        Convert Python loops and ``if`` statements over traced values into
        ``lax`` control flow (``docs/autograph.md``); default ``config.autograph``.

    Returns
    -------
    Jitted
        A callable with ``lower``, ``eval_shape`` and ``clear_cache``.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> @tracejit.jit
    ... def relu(x):
    ...     return np.maximum(x, 0)
    >>> relu(np.array([-1.0, 2.0]))
    Array([0., 2.])
    """
    for name in unsupported:
        if name not in ("in_shardings", "out_shardings", "device", "compiler_options", "abstracted_axes"):
            raise TypeError(f"jit() got an unexpected keyword argument {name!r}")
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums, static_argnames=static_argnames,
                                 donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                                 inline=inline, backend=backend, autograph=autograph)
    return Jitted(fun, static_argnums, static_argnames, donate_argnums, donate_argnames, inline, backend,
                  autograph=autograph)


def make_jaxpr(fun: Callable, static_argnums=(), return_shape: bool = False):
    """Return a function that traces ``fun`` and returns its Program.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> print(tracejit.make_jaxpr(lambda x: np.maximum(x, 0))(np.array([-1., 0., 1.])))
    { lambda ; a:f64[3]. let b:f64[3] = max a 0.0 in (b,) }
    """
    jitted = Jitted(fun, static_argnums=static_argnums)

    @functools.wraps(fun)
    def make(*args, **kwargs):
        sig, _ = jitted._signature_of(args, kwargs)
        program, out_tree = jitted.trace(sig)
        if return_shape:
            shapes = tree_unflatten(out_tree, [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
                                               for a in program.out_avals[:out_tree.num_leaves]])
            return program, shapes
        return program
    return make


def eval_shape(fun: Callable, *args, **kwargs):
    """Shapes and dtypes of ``fun``'s outputs, without computing anything.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> tracejit.eval_shape(lambda x: x.sum(0), tracejit.ShapeDtypeStruct((3, 4), np.float32))
    ShapeDtypeStruct(shape=(4,), dtype=float32)
    """
    return Jitted(fun).eval_shape(*args, **kwargs)


def block_until_ready(x):
    """Wait for ``x`` to be computed (results are synchronous here; returns ``x``).

    Examples
    --------
    >>> block_until_ready(np.ones(2))
    array([1., 1.])
    """
    return x

