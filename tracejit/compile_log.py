"""One log line per compile, and explanations of why a function recompiled.

``tracejit.api`` calls :func:`record_compile` after every compile, so this
module sits below the API and imports only the configuration; the
diagnostics (``tracejit.diagnostics.advisor``) read compiles through
:func:`collect_compiles`.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings

from tracejit.config import config

logger = logging.getLogger("tracejit")


def _sig_text(sig) -> str:
    inner = ", ".join(a.str_short() for a in sig.avals)
    return f"({inner})" + (f" static={dict(sig.statics)}" if sig.statics else "")


def explain_miss(jitted, sig) -> str | None:
    """Why ``sig`` missed the cache of ``jitted``, compared with the closest earlier signature."""
    previous = jitted.signatures_compiled
    if not previous:
        return None
    names = _leaf_names(jitted, sig)
    best = None
    for old in previous:
        reasons = []
        if old.treedef != sig.treedef:
            reasons.append(f"the argument structure changed {old.treedef} -> {sig.treedef}")
        else:
            for name, a, b in zip(names, old.avals, sig.avals):
                if a.shape != b.shape or a.dtype != b.dtype:
                    reasons.append(f"argument {name} changed {a.str_short()} -> {b.str_short()}")
                elif a.weak_type != b.weak_type:
                    reasons.append(f"argument {name} changed weak type {a.weak_type} -> {b.weak_type} "
                                   "(a Python scalar vs an array)")
        if old.statics != sig.statics:
            for (k, v_old), (_, v_new) in zip(old.statics, sig.statics):
                if v_old != v_new:
                    reasons.append(f"static argument {k} changed {v_old!r} -> {v_new!r}")
        if best is None or len(reasons) < len(best):
            best = reasons
    return "; ".join(best) if best else None


def _leaf_names(jitted, sig):
    params = jitted._param_names()
    dyn = [p for i, p in enumerate(params) if i not in jitted._static_argnums]
    names = []
    args_def, kwargs_def = sig.treedef.children
    for i, child in enumerate(args_def.children):
        base = dyn[i] if i < len(dyn) else f"#{i}"
        names.extend([base] if child.num_leaves == 1 else [f"{base}[{j}]" for j in range(child.num_leaves)])
    for key, child in zip(kwargs_def.aux or (), kwargs_def.children):
        names.extend([key] * child.num_leaves)
    return names


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))     # tracejit/


def _user_stacklevel() -> int:
    """warnings.warn stacklevel of the first frame outside tracejit (the user's call)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR + os.sep):
        frame, level = frame.f_back, level + 1
    return level


_listeners: list = []


@contextlib.contextmanager
def collect_compiles():
    """Collect ``(jitted, sig, entry)`` for every compile inside the block (used by the advisor).

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> with collect_compiles() as seen:
    ...     _ = tracejit.jit(lambda x: x + 1)(np.zeros(2))
    >>> len(seen)
    1
    """
    seen: list = []
    _listeners.append(seen.append)
    try:
        yield seen
    finally:
        _listeners.remove(seen.append)


_OUTCOMES = {"persistent-hit": "persistent-cache hit", "compiled": "compiled"}


def compile_line(jitted, sig, entry) -> str:
    """The one-line compile summary: function, location, signature, timings, kernels, cache outcome."""
    t = entry.timings
    kernels = len(getattr(entry.executable, "kernels", []) or [])
    parts = ", ".join(f"{label} {t[k]:.1f} ms" for k, label in
                      (("trace_ms", "trace"), ("passes_ms", "passes"), ("codegen_ms", "codegen"),
                       ("llvm_ms", "LLVM"), ("compile_ms", "compile")) if isinstance(t.get(k), (int, float)))
    if t.get("warmup_wait_ms", 0.0) >= 0.1:    # the first compile can wait for the backend's start-up
        parts += f", waited {t['warmup_wait_ms']:.1f} ms for start-up"
    outcome = t.get("cache", "compiled")
    return (f"compiled {jitted._name} at {jitted._location} for {_sig_text(sig)}: {parts}; "
            f"{kernels} kernel{'s' if kernels != 1 else ''}{_loops_text(entry.executable)}; "
            f"{_OUTCOMES.get(outcome, outcome)}")


def _loops_text(executable) -> str:
    """``; native loops: scan; host loops: while (reason)`` for the plan's top-level control flow."""
    steps = getattr(getattr(executable, "plan", None), "steps", None) or []
    loops = [(s.eqn.primitive.name, s.loop, getattr(s, "host_reason", None))
             for s in steps if getattr(s, "loop", None) is not None]
    native = [name for name, loop, _ in loops if loop.native]
    host = [f"{name} ({why})" if why else name for name, loop, why in loops if not loop.native]
    return "".join(f"; {label}: {', '.join(items)}" for label, items in
                   (("native loops", native), ("host loops", host)) if items)


def varying_arguments(jitted, sigs=None) -> list:
    """``(argument name, dim or None, sorted distinct values)`` for leaves that differ across signatures.

    ``dim`` is the axis whose size varies (None when the dtype, weak type or
    rank varies); for static arguments the values are their distinct values.
    """
    sigs = list(jitted.signatures_compiled if sigs is None else sigs)
    if len(sigs) < 2:
        return []
    out = []
    same_tree = all(s.treedef == sigs[0].treedef for s in sigs)
    if same_tree:
        names = _leaf_names(jitted, sigs[0])
        for i, name in enumerate(names):
            avals = [s.avals[i] for s in sigs]
            if len({(a.dtype, a.weak_type, len(a.shape)) for a in avals}) > 1:
                out.append((name, None, sorted({a.str_short() for a in avals})))
                continue
            for d in range(len(avals[0].shape)):
                sizes = sorted({a.shape[d] for a in avals})
                if len(sizes) > 1:
                    out.append((name, d, sizes))
    keys = {k for s in sigs for k, _ in s.statics}
    for k in sorted(keys, key=str):
        vals = {repr(dict(s.statics).get(k)) for s in sigs}
        if len(vals) > 1:
            out.append((f"static argument {k}", None, sorted(vals)))
    if not same_tree:
        out.append(("the argument structure", None, sorted({str(s.treedef) for s in sigs})))
    return out


def _suggest_buckets(sizes) -> tuple:
    top = max(sizes)
    b, out = 1, []
    while b < top:
        b *= 2
        if b >= min(sizes):
            out.append(b)
    return tuple(out or [top])


def recompile_warning(jitted, sigs) -> str:
    """The advice shown when one function compiled too many signatures."""
    n = len(sigs)
    varying = varying_arguments(jitted, sigs)
    dims = [(name, d, sizes) for name, d, sizes in varying if d is not None]
    if dims:
        name, d, sizes = dims[0]
        seen = ", ".join(map(str, sizes[:6])) + (", ..." if len(sizes) > 6 else "")
        what = "; ".join(f"argument {nm} varies in dim {dd} ({len(sz)} sizes)" for nm, dd, sz in dims)
        base = name.split("[")[0]
        return (f"{jitted._name} at {jitted._location} has compiled {n} distinct signatures: {what} "
                f"(sizes seen for {name}: {seen}). If a dimension varies with the data, pad it to a few "
                f"bucket sizes so it compiles once per bucket: tracejit.pad_to_bucket(x, axis={d}, "
                f"buckets={_suggest_buckets(sizes)}) with a mask, or "
                f"jit(..., buckets={{{base!r}: ({d}, {_suggest_buckets(sizes)})}}).")
    what = "; ".join(f"{nm} takes {len(v)} values ({', '.join(map(str, v[:4]))})" for nm, _, v in varying)
    return (f"{jitted._name} at {jitted._location} has compiled {n} distinct signatures"
            f"{': ' + what if what else ''}. Each new signature traces and compiles again; keep "
            "dtypes and static arguments fixed, or pad varying sizes to a few buckets "
            "(tracejit.pad_to_bucket or jit(..., buckets=...)).")


def record_compile(jitted, sig, entry) -> None:
    """Log the compile and explain/warn about recompiles, as configured."""
    for listener in list(_listeners):
        listener((jitted, sig, entry))
    if config.explain_cache_misses:
        reason = explain_miss(jitted, sig)
        if reason:
            msg = f"recompiling {jitted._name} at {jitted._location} because {reason}"
            logger.warning(msg)
            warnings.warn(msg, stacklevel=_user_stacklevel())
    if config.log_compiles:
        logger.warning(compile_line(jitted, sig, entry))
    n = len(jitted.signatures_compiled) + 1
    if n == config.recompile_warning_threshold + 1:
        warnings.warn(recompile_warning(jitted, [*jitted.signatures_compiled, sig]), stacklevel=_user_stacklevel())
