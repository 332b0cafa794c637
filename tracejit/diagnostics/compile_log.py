"""One log line per compile, and explanations of why a function recompiled."""
from __future__ import annotations

import logging
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


def record_compile(jitted, sig, entry) -> None:
    """Log the compile and explain/warn about recompiles, as configured."""
    reason = explain_miss(jitted, sig) if (config.explain_cache_misses or config.log_compiles) else None
    if config.explain_cache_misses and reason:
        msg = f"recompiling {jitted._name} at {jitted._location} because {reason}"
        logger.warning(msg)
        warnings.warn(msg, stacklevel=4)
    if config.log_compiles:
        t = entry.timings
        kernels = len(getattr(entry.executable, "kernels", []) or [])
        parts = ", ".join(f"{k[:-3]} {v:.1f} ms" for k, v in t.items() if k.endswith("_ms"))
        outcome = t.get("cache", "compiled")
        line = (f"compiled {jitted._name} at {jitted._location} for {_sig_text(sig)}: {parts}; "
                f"{kernels} kernels; {outcome}")
        logger.warning(line)
        print("tracejit:", line)
    n = len(jitted.signatures_compiled) + 1
    if n == config.recompile_warning_threshold + 1:
        varying = explain_miss(jitted, sig) or "its arguments"
        warnings.warn(f"{jitted._name} has compiled {n} distinct signatures (latest: {varying}). If a "
                      "dimension varies with the data, pad it to a few bucket sizes (tracejit.pad_to_bucket "
                      "or jit(..., buckets=...)) so it compiles once per bucket.", stacklevel=4)
