"""The import graph runs one way (docs/ARCHITECTURE.md, "Layers"): every import of a module of
``Deeploy/`` (deferred imports in functions and ``TYPE_CHECKING`` ones included) goes to its own
layer or a lower one, and no modules import each other in a circle; the test generators too."""

from __future__ import annotations

import ast
from pathlib import Path

from DeeployTest.test_suite.conftest import REPO

# lowest first; a module belongs to the layer of its longest listed prefix (relative to the package)
LAYERS: tuple[tuple[str, ...], ...] = (
    ("", "errors", "elf", "resources", "manifest", "runtime"),
    ("ir",),
    ("ops", "reference"),
    ("frontend",),
    ("passes",),
    ("binding", "signature"),   # generic layers: no import of the targets
    ("memory",),
    ("tiling",),
    ("analysis",),
    ("platform",),              # the interface a target fills in
    ("codegen",),
    ("targets",),               # the target packages and their registry
    ("compiler",),
    ("run", "analyze", "validate"),
    ("arguments", "sweep"),     # the command lines of the CLI and the runners; design-space sweeps
    ("cli",),
)


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Every module of ``root/package`` -> the modules of that package it imports."""
    files = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in files.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[:len(here) - node.level + 1] + [node.module or ""]).strip(".") \
                    if node.level else node.module
                subs = {f"{base}.{alias.name}" for alias in node.names} & files.keys()
                # ``from pkg import module`` imports the module (its package runs first in any case)
                found.update(subs if len(subs) == len(node.names) else subs | {base})
        graph[name] = {m for m in found if m in files and m != name}
    return graph


def layer_of(module: str, package: str, layers=LAYERS) -> int:
    """The index of ``module``'s layer (its longest listed prefix); an unlisted module is an error."""
    rel = module[len(package):].lstrip(".")
    best = None
    for index, names in enumerate(layers):
        for prefix in names:
            if rel == prefix or rel.startswith(prefix + ".") or prefix == "" and rel == "":
                if best is None or len(prefix) > best[1]:
                    best = (index, len(prefix))
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS")
    return best[0]


def back_arrows(graph: dict[str, set[str]], package: str, layers=LAYERS) -> list[str]:
    """Imports from a module into a higher layer."""
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  if layer_of(b, package, layers) > layer_of(a, package, layers))


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: every strongly connected set of two or more modules (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                found.append(sorted(scc))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_deeploy_imports_run_one_way():
    graph = import_graph(REPO, "Deeploy")
    assert back_arrows(graph, "Deeploy") == []
    assert circles(graph) == []


def test_generic_layers_never_import_a_target():
    graph = import_graph(REPO, "Deeploy")
    targets = layer_of("Deeploy.targets", "Deeploy")
    assert [f"{a} -> {b}" for a, bs in sorted(graph.items()) for b in sorted(bs)
            if layer_of(a, "Deeploy") < targets and b.startswith("Deeploy.targets")] == []


def test_test_generators_import_no_circle():
    assert circles({m: ts for m, ts in import_graph(REPO, "DeeployTest").items()
                    if m.startswith("DeeployTest.generators")}) == []


def _package(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    for rel, text in files.items():
        path = tmp_path / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return import_graph(tmp_path, "pkg")


def test_checker_reports_a_back_arrow_and_a_circle(tmp_path):
    """A deferred import from a low layer into a high one, and two modules importing each other."""
    graph = _package(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "def f():\n    from pkg.high import b\n",
        "low/c.py": "from . import d\n",
        "low/d.py": "from pkg.low.c import x\n",
        "high.py": "from pkg.low import c\n",
    })
    layers = (("",), ("low",), ("high",))
    assert graph["pkg.low.a"] == {"pkg.high"}
    assert back_arrows(graph, "pkg", layers) == ["pkg.low.a -> pkg.high"]
    assert circles(graph) == [["pkg.low.c", "pkg.low.d"]]


def test_fused_ops_are_recognised_by_the_registry():
    """``is_fused`` is the one test for a fused op: no code matches the ``Requantized`` prefix."""
    from Deeploy.ops.fused import FUSABLE, fused_name, is_fused
    assert all(is_fused(fused_name(op)) for op in FUSABLE) and not is_fused("RequantShift")
    sources = [p for d in ("Deeploy", "DeeployTest") for p in (REPO / d).rglob("*.py")]
    needle = 'startswith("' + 'Requantized")'
    assert not [str(p) for p in sources if needle in p.read_text()]
