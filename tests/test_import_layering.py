"""The package's layering: imports point down, and no cycle joins two top-level packages.

Every import counts, also one inside a function (an import there that only hides a cycle
is still a cycle), and so does ``import tracejit`` followed by ``tracejit.name`` at run time
(an edge to the package face, which imports everything). A node is a subpackage of
``tracejit`` (``numpy``, ``backends``...) or a top-level module (``api.py`` is ``api``).
"""
from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "tracejit"

# Lowest first; a node imports only nodes of earlier layers (the README's layout table).
LAYERS = [
    ["config", "version"],
    ["core"],
    ["ops"],
    ["device_types"],
    ["array"],
    ["transforms"],
    ["numpy"],
    ["scipy"],
    ["lax"],
    ["random"],
    ["nn"],
    ["example_libraries", "test_util"],
    ["functionalize"],
    ["autograph"],
    ["compiler"],
    ["backends"],
    ["config_flags", "jit_cache", "compile_log"],
    ["api"],
    ["stages"],
    ["buckets"],
    ["device_api"],
    ["distributed"],
    ["sharding"],
    ["shard_map"],
    ["api_misc", "api_callback", "debug", "fwd_and_bwd", "ref", "ad"],
    ["experimental"],
    ["diagnostics"],
    ["tree_util"],
    ["tree", "dtypes", "errors", "typing"],
    ["image", "custom_batching", "custom_derivatives", "dlpack", "ad_checkpoint"],   # jax submodules of issue 14
    ["__init__", "__main__"],
]
RANK = {node: i for i, layer in enumerate(LAYERS) for node in layer}


def _module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _node(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "tracejit":
        return None
    return "__init__" if len(parts) == 1 else parts[1]


def _imported_modules(path: pathlib.Path, tree: ast.AST):
    """(module, line) for every import in the file, relative imports resolved."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                yield a.name, n.lineno
        elif isinstance(n, ast.ImportFrom):
            if n.level:
                base = package.split(".")[: len(package.split(".")) - n.level + 1]
                module = ".".join(base + ([n.module] if n.module else []))
            else:
                module = n.module
            if n.module is None or module == "tracejit":
                for a in n.names:          # ``from tracejit import lax``: the submodule
                    yield f"{module}.{a.name}", n.lineno
            else:
                yield module, n.lineno


def import_edges():
    """{(from_node, to_node): [(file, line), ...]} over the whole package."""
    edges: dict = {}
    for path in sorted(ROOT.rglob("*.py")):
        src_node = _node(_module_name(path)) or "__init__"
        tree = ast.parse(path.read_text())
        for module, line in _imported_modules(path, tree):
            dst = _node(module)
            if dst is not None and dst != src_node:
                edges.setdefault((src_node, dst), []).append((str(path.relative_to(ROOT.parent)), line))
    return edges


def strongly_connected(nodes, edges):
    """Tarjan's strongly connected components of the node graph."""
    graph = {n: sorted({b for (a, b) in edges if a == n}) for n in nodes}
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


EDGES = import_edges()
NODES = sorted({n for edge in EDGES for n in edge})


def test_no_import_cycle_across_top_level_packages():
    cycles = [c for c in strongly_connected(NODES, EDGES) if len(c) > 1]
    detail = [f"{a} -> {b} at {sites[0][0]}:{sites[0][1]}" for (a, b), sites in sorted(EDGES.items())
              if any(a in c and b in c for c in cycles)]
    assert not cycles, f"import cycles {cycles}:\n" + "\n".join(detail)


def test_every_node_has_a_layer():
    assert sorted(set(NODES) - set(RANK)) == []


@pytest.mark.parametrize("edge", sorted(EDGES), ids=lambda e: f"{e[0]}->{e[1]}")
def test_imports_point_down(edge):
    a, b = edge
    if a in RANK and b in RANK:
        where = ", ".join(f"{f}:{line}" for f, line in EDGES[edge][:3])
        assert RANK[b] < RANK[a], f"{a} (layer {RANK[a]}) imports {b} (layer {RANK[b]}) at {where}"


def test_the_checker_sees_local_and_face_imports(tmp_path):
    # A function-local import and ``import tracejit`` are edges like any other.
    source = "import tracejit\n\ndef f():\n    from tracejit.numpy import sin\n    return tracejit.lax\n"
    tree = ast.parse(source)
    fake = ROOT / "core" / "fake_module.py"
    found = {m for m, _ in _imported_modules(fake, tree)}
    assert found == {"tracejit", "tracejit.numpy"}
    assert {_node(m) for m in found} == {"__init__", "numpy"}
    cyclic = strongly_connected(["core", "numpy"], {("core", "numpy"): [], ("numpy", "core"): []})
    assert cyclic == [["core", "numpy"]]
