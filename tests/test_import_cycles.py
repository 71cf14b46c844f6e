"""Import circles in gradcli, counting the imports made inside functions: a function-local import that closes
a circle hides it from the start-up order but not from the design. The circles fixed so far stay fixed."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gradcli"


def module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """{module: the gradcli modules it imports anywhere in its source (module level or in a function)}."""
    modules = {module_name(p, package): p for p in package.rglob("*.py")}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - node.level + 1]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                # from package import module: the module; from module import name: the module
                targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in modules else stem for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges)))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def test_the_finder_sees_a_circle_closed_inside_a_function(tmp_path):
    package = tmp_path / "gradcli"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from gradcli.b import g\n")
    (package / "b.py").write_text("def g():\n    from gradcli import a\n")
    (package / "c.py").write_text("from . import a\n")
    assert cycles(import_graph(package)) == [["gradcli.a", "gradcli.b"]]


@pytest.mark.parametrize("pair", [
    ("gradcli.methods.symbolic", "gradcli.methods.symbolic_values"),
    ("gradcli.render.common", "gradcli.render.layout"),
    ("gradcli.expression.evaluate", "gradcli.methods.tf_runtime"),
    ("gradcli.render.batch", "gradcli.render.descend_batch"),
    ("gradcli.render.descend_batch", "gradcli.render.descend_pictures"),
    ("gradcli.compute.hvp", "gradcli.compute.hvp_batch"),
    ("gradcli.compute.steps", "gradcli.compute.steps_eval"),
    ("gradcli.compute.nan_origin", "gradcli.compute.trace"),
])
def test_a_fixed_circle_stays_open(pair):
    together = [c for c in cycles(import_graph()) if set(pair) <= set(c)]
    assert not together, f"{pair[0]} and {pair[1]} import each other again (through {together[0]})"


def test_the_expression_language_does_not_import_the_methods():
    """The language (parse, evaluate) sits below the methods: the TensorFlow backend plugs into it
    (Backend.rule_call), not the other way round."""
    edges = import_graph()
    up = {(m, t) for m, ts in edges.items() if m.startswith("gradcli.expression.evaluate")
          for t in ts if t.startswith("gradcli.methods")}
    assert not up


def test_no_module_imports_itself_through_others():
    """No circle at all, the function-local imports counted: each seam runs one way."""
    assert cycles(import_graph()) == []


def test_no_module_imports_a_private_name_of_another():
    """A name with a leading underscore is its module's own: imported elsewhere, it is a seam in the wrong
    place (make it public where it is shared, or move it to where it is used)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gradcli"):
                found += [f"{path.relative_to(PACKAGE.parent)}: {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert not found, found
