"""A self-contained HTML compile report: programs, fusion graph, timings, analyses, generated code.

``tracejit.report(f, x, path="f.html")`` writes one HTML file (inline CSS and
SVG, no scripts, no external resources) that any browser opens offline.
"""
from __future__ import annotations

import html
import math
import re
import time
from typing import Callable

from tracejit.api import Jitted
from tracejit.config import config
from tracejit.core.avals import ShapedArray
from tracejit.core.pytree import tree_map
from tracejit.diagnostics import persistent_cache
from tracejit.diagnostics.advisor import parse_aval

__all__ = ["report", "fusion_graph_svg", "kernel_functions"]

_CHAR_W = 7.2     # px per character of the 12px monospace font
_LINE_H = 15
_PAD = 8
_COL_GAP = 70
_ROW_GAP = 18


def _esc(x) -> str:
    return html.escape(str(x), quote=True)


def _nbytes_text(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _wrap(items, width: int, max_lines: int) -> list:
    lines, cur = [], ""
    for i, it in enumerate(items):
        piece = it + ("," if i < len(items) - 1 else "")
        if cur and len(cur) + 1 + len(piece) > width:
            lines.append(cur)
            cur = piece
        else:
            cur = f"{cur} {piece}" if cur else piece
    if cur:
        lines.append(cur)
    if len(lines) > max_lines:
        rest = sum(len(l.split(",")) for l in lines[max_lines - 1:])
        lines = lines[:max_lines - 1] + [f"... (+{rest} more ops)"]
    return lines


# --------------------------------------------------------------------------- fusion graph

def _graph(plan):
    """Nodes (id -> dict) and edges (src, dst, kind) of a plan."""
    from tracejit.compiler.plan import DotStep
    from tracejit.compiler.kernel_ir import Kernel
    from tracejit.compiler.plan import step_reads, step_writes
    nodes, edges = {}, []
    used = set()
    kernel_index = 0
    for i, step in enumerate(plan.steps):
        reads, writes = step_reads(step), step_writes(step)
        used.update(reads)
        used.update(writes)
        if isinstance(step, Kernel):
            kind = "row kernel" if step.is_row_kernel else "loop kernel"
            title = f"{kind} k{kernel_index} {list(step.shape)}"
            lines = [title] + _wrap(list(step.eqn_names), 34, 8)
            cls = "kernel"
            kernel_index += 1
        elif isinstance(step, DotStep):
            lines, cls = ["BLAS dot_general", f"dims {step.dimension_numbers}"], "dot"
        else:
            lines, cls = [f"numpy {step.eqn.primitive.name}"], "numpy"
        nodes[f"step-{i}"] = {"lines": lines, "cls": cls, "order": i}
        edges += [(f"buf-{b}", f"step-{i}", "read") for b in reads]
        edges += [(f"step-{i}", f"buf-{b}", "write") for b in writes]
    used.update(b for b in plan.inputs + plan.consts if isinstance(b, int))
    used.update(b for b in plan.outputs if isinstance(b, int))
    by_id = {b.id: b for b in plan.buffers}
    for b in list(used):
        buf = by_id[b]
        while buf.kind == "alias" and buf.alias_of >= 0:
            used.add(buf.alias_of)
            edges.append((f"buf-{buf.alias_of}", f"buf-{buf.id}", "alias"))
            buf = by_id[buf.alias_of]
    outputs = {b for b in plan.outputs if isinstance(b, int)}
    for b in sorted(used):
        buf = by_id[b]
        aval = ShapedArray(tuple(buf.shape), buf.dtype).str_short()
        kind = buf.kind + (" -> output" if b in outputs and buf.kind != "output" else "")
        nodes[f"buf-{b}"] = {"lines": [f"b{b} {aval}", f"{kind}, {_nbytes_text(buf.nbytes)}"],
                             "cls": f"buffer {buf.kind}", "order": -1 if buf.kind in ("input", "const") else b}
    return nodes, list(dict.fromkeys(edges))


def _layers(nodes, edges) -> dict:
    layer = {n: 0 for n in nodes}
    for _ in range(len(nodes) + 1):   # longest-path layering of a DAG
        changed = False
        for u, v, _ in edges:
            if layer[v] < layer[u] + 1:
                layer[v] = layer[u] + 1
                changed = True
        if not changed:
            break
    return layer


def fusion_graph_svg(plan) -> str:
    """An inline SVG of a plan: kernels/steps as boxes listing their ops, buffers with shapes and
    sizes, arrows for data flow (dashed: a reshape alias of a buffer). Left to right in dependency order.

    Every step is a ``<g id="step-N">`` and every buffer a ``<g id="buf-N">``.
    """
    nodes, edges = _graph(plan)
    if not nodes:
        return '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="40" class="fusion-graph">' \
               '<text x="10" y="25">(no steps: the program only forwards inputs or constants)</text></svg>'
    layer = _layers(nodes, edges)
    for n, d in nodes.items():
        d["w"] = max(len(l) for l in d["lines"]) * _CHAR_W + 2 * _PAD
        d["h"] = len(d["lines"]) * _LINE_H + 2 * _PAD - 2
    columns: dict = {}
    for n in sorted(nodes, key=lambda n: (layer[n], nodes[n]["order"], n)):
        columns.setdefault(layer[n], []).append(n)
    x = 20.0
    height = 0.0
    for col in sorted(columns):
        width = max(nodes[n]["w"] for n in columns[col])
        y = 20.0
        for n in columns[col]:
            d = nodes[n]
            d["x"], d["y"] = x + (width - d["w"]) / 2, y
            y += d["h"] + _ROW_GAP
        height = max(height, y)
        x += width + _COL_GAP
    total_w, total_h = math.ceil(x - _COL_GAP + 20), math.ceil(height + 10)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="fusion-graph" width="{total_w}" height="{total_h}" '
           f'viewBox="0 0 {total_w} {total_h}" font-family="monospace" font-size="12">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>']
    for u, v, kind in edges:
        a, b = nodes[u], nodes[v]
        x1, y1 = a["x"] + a["w"], a["y"] + a["h"] / 2
        x2, y2 = b["x"], b["y"] + b["h"] / 2
        mid = (x1 + x2) / 2
        dash = ' stroke-dasharray="5,4"' if kind == "alias" else ""
        out.append(f'<path class="edge {kind}" data-from="{u}" data-to="{v}" d="M {x1:.1f} {y1:.1f} C {mid:.1f} '
                   f'{y1:.1f}, {mid:.1f} {y2:.1f}, {x2:.1f} {y2:.1f}" fill="none" stroke="#555" stroke-width="1.3"'
                   f'{dash} marker-end="url(#arrow)"/>')
    fills = {"kernel": ("#dbeafe", "#1d4ed8"), "dot": ("#fde68a", "#b45309"), "numpy": ("#fecaca", "#b91c1c")}
    for n, d in nodes.items():
        cls = d["cls"]
        if cls.startswith("buffer"):
            fill, stroke = {"input": ("#dcfce7", "#15803d"), "output": ("#f3e8ff", "#7e22ce"),
                            "const": ("#e5e7eb", "#374151")}.get(cls.split()[1], ("#ffffff", "#6b7280"))
            rx = 12
        else:
            fill, stroke = fills.get(cls, ("#ffffff", "#333"))
            rx = 3
        out.append(f'<g id="{n}" class="node {cls}"><title>{_esc(" / ".join(d["lines"]))}</title>'
                   f'<rect x="{d["x"]:.1f}" y="{d["y"]:.1f}" width="{d["w"]:.1f}" height="{d["h"]:.1f}" rx="{rx}" '
                   f'fill="{fill}" stroke="{stroke}" stroke-width="1.5"/>')
        for k, line in enumerate(d["lines"]):
            weight = ' font-weight="bold"' if k == 0 else ""
            out.append(f'<text x="{d["x"] + _PAD:.1f}" y="{d["y"] + _PAD + 10 + k * _LINE_H:.1f}"{weight}>'
                       f'{_esc(line)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


# --------------------------------------------------------------------------- generated code

_DEFINE = re.compile(r'^define [^@]*@"?([\w.$]+)"?\(', re.M)


def kernel_functions(module_ir: str) -> dict:
    """``{function name: its LLVM IR text}`` for every function defined in a module's IR."""
    out = {}
    for m in _DEFINE.finditer(module_ir or ""):
        end = module_ir.find("\n}", m.start())
        out[m.group(1)] = module_ir[m.start():(end + 2 if end >= 0 else len(module_ir))]
    return out


# --------------------------------------------------------------------------- the page

_CSS = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #111; background: #fff; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; }
pre { background: #f6f8fa; padding: 10px; overflow-x: auto; font-size: 12px; line-height: 1.35; }
table { border-collapse: collapse; font-size: 13px; } td, th { border: 1px solid #ddd; padding: 3px 10px; }
td.num { text-align: right; font-family: monospace; } th { background: #f3f4f6; text-align: left; }
.graph { overflow-x: auto; border: 1px solid #ddd; padding: 6px; }
details { margin: 6px 0; } summary { cursor: pointer; font-family: monospace; }
.legend span { display: inline-block; padding: 1px 8px; margin-right: 8px; border: 1px solid #999; font-size: 12px; }
"""


def _table(rows, head=("", "")) -> str:
    body = "".join(f"<tr><td>{_esc(k)}</td><td class='num'>{_esc(v)}</td></tr>" for k, v in rows)
    return f"<table><tr><th>{_esc(head[0])}</th><th>{_esc(head[1])}</th></tr>{body}</table>"


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:,.3f}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _timing_rows(timings: dict, trace_ms: float):
    rows = [("trace", f"{trace_ms:.3f} ms")]
    for k, v in timings.items():
        if k == "trace_ms" or not isinstance(v, (int, float)):
            continue
        label = k[:-3] if k.endswith("_ms") else k
        label = label.replace("pass_", "pass: ").replace("llvm_", "LLVM: ")
        rows.append((label, f"{v:.3f} ms"))
    if "cache" in timings:
        rows.append(("cache outcome", timings["cache"]))
    return rows


def _code_sections(compiled, plan) -> str:
    from tracejit.compiler.kernel_ir import Kernel
    text = compiled.as_text(llvm_ir=True)
    functions = kernel_functions(text)
    kernels = [s for s in plan.steps if isinstance(s, Kernel)]
    parts = []
    claimed = set()
    for i, k in enumerate(kernels):
        names = [n for n in functions if n.endswith(f"_k{i}")]
        claimed.update(names)
        ir_text = "\n\n".join(functions[n] for n in names) or "(LLVM IR not available for this kernel)"
        parts.append(f"<details{' open' if i == 0 else ''}><summary>kernel k{i} over {_esc(list(k.shape))}: "
                     f"{_esc(', '.join(k.eqn_names[:12]))}{' ...' if len(k.eqn_names) > 12 else ''}</summary>"
                     f"<pre>{_esc(k.describe())}</pre><pre class='llvm-ir'>{_esc(ir_text)}</pre></details>")
    others = [n for n in functions if n not in claimed]
    if others:
        parts.append(f"<details><summary>other functions ({len(others)})</summary><pre>"
                     f"{_esc(chr(10).join(functions[n] for n in others))}</pre></details>")
    if not kernels:
        parts.append("<p>No fused kernels (every step runs through BLAS or NumPy).</p>")
    return "\n".join(parts)


def render_html(fn_name: str, location: str, signature: str, lowered, compiled, optimized_text: str) -> str:
    """The report page for one lowered and compiled function."""
    plan = compiled.executable.plan
    timings = compiled.timings
    try:
        cost = compiled.cost_analysis()
    except Exception as e:  # noqa: BLE001 - a report shows what it can
        cost = {"error": repr(e)}
    try:
        memory = compiled.memory_analysis()
    except Exception as e:  # noqa: BLE001
        memory = {"error": repr(e)}
    n_steps = len(plan.steps)
    n_kernels = len(compiled.kernels)
    compile_ms = sum(timings.get(k, 0.0) for k in ("passes_ms", "codegen_ms", "llvm_ms"))
    legend = ("<p class='legend'><span style='background:#dbeafe'>fused kernel</span>"
              "<span style='background:#fde68a'>BLAS</span><span style='background:#fecaca'>NumPy step</span>"
              "<span style='background:#dcfce7'>input</span><span style='background:#f3e8ff'>output</span>"
              "<span style='background:#fff'>temporary</span> dashed arrow: reshape alias (no copy)</p>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tracejit report: {_esc(fn_name)}</title>
<style>{_CSS}</style></head><body>
<h1>tracejit compile report: <code>{_esc(fn_name)}{_esc(signature)}</code></h1>
<p>Defined at <code>{_esc(location)}</code>. {n_steps} steps, {n_kernels} fused kernels;
trace {lowered.trace_ms:.1f} ms, compile {compile_ms:.1f} ms. Generated {_esc(time.strftime('%Y-%m-%d %H:%M:%S'))}.</p>
<h2 id="fusion-graph">Fusion graph</h2>{legend}
<div class="graph">{fusion_graph_svg(plan)}</div>
<h2 id="traced">Traced program</h2><pre>{_esc(lowered.program)}</pre>
<h2 id="optimized">Optimized program and kernels</h2><pre>{_esc(optimized_text)}</pre>
<h2 id="timings">Timings</h2>{_table(_timing_rows(timings, lowered.trace_ms), ("stage", "time"))}
<h2 id="cost">Cost analysis (per call)</h2>{_table([(k, _fmt(v)) for k, v in cost.items()], ("quantity", "value"))}
<h2 id="memory">Memory analysis (per call)</h2>{_table([(k, _fmt(v)) for k, v in memory.items()], ("quantity", "value"))}
<h2 id="code">Generated code per kernel (optimized LLVM IR)</h2>
{_code_sections(compiled, plan)}
</body></html>
"""


def report(fn: Callable, *args, path: str | None = None, static_argnums=(), static_argnames=(), **kwargs) -> str:
    """Compile ``fn`` for these arguments and write a self-contained HTML report.

    Parameters
    ----------
    fn : callable
        The function (plain or jitted).
    *args, **kwargs
        Its arguments: arrays, ShapeDtypeStructs, or ``'f32[3,4]'`` strings.
    path : str, optional
        Where to write the HTML; ``None`` only returns it.
    static_argnums, static_argnames
        As for :func:`tracejit.jit`.

    Returns
    -------
    str
        The HTML text.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> page = report(lambda x: np.exp(x).sum(), "f32[64,64]")
    >>> "<svg" in page and "Fusion graph" in page
    True
    """
    if isinstance(fn, Jitted):
        fn = fn._fun
    args = tree_map(lambda a: parse_aval(a) if isinstance(a, str) else a, list(args),
                    is_leaf=lambda a: isinstance(a, str))
    kwargs = {k: parse_aval(v) if isinstance(v, str) else v for k, v in kwargs.items()}
    jitted = Jitted(fn, static_argnums=static_argnums, static_argnames=static_argnames)
    # A compile loaded from the persistent cache has no IR text to show: compile afresh.
    with persistent_cache.disabled():
        lowered = jitted.lower(*args, **kwargs)
        optimized = lowered.as_text()
        compiled = lowered.compile()
    if getattr(compiled.executable, "plan", None) is None:
        raise ValueError(f"report: {jitted._name} was compiled by the {config.backend!r} backend, which has no "
                         "kernel plan to show; use the default backend (tracejit.config.update('backend', 'cpu'))")
    sig = "(" + ", ".join(a.str_short() for a in lowered.in_avals) + ")"
    page = render_html(jitted._name, jitted._location, sig, lowered, compiled, optimized)
    if path is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
    return page

