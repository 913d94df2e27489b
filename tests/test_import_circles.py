"""No two modules of bqas import each other, directly or round a longer circle.

A circle means neither module can be read (or tested, or moved) without the other, and a lazy import
inside a function hides it from the interpreter but not from the reader: every ``import`` statement counts,
at module level or inside a function or method. Only imports under ``if TYPE_CHECKING:`` are left out:
they never run and name types for annotations. An import names the module it loads (``from bqas.a import
b`` is ``bqas.a.b`` when that is a module, else ``bqas.a``); the package ``__init__`` a submodule import
also runs is not counted, nor ``importlib.import_module`` calls with computed names.
"""

from __future__ import annotations

import ast
import graphlib
import itertools
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _module_names(src: Path) -> dict[str, Path]:
    names = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(name: str, path: Path, modules: dict[str, Path]) -> dict[str, int]:
    """The modules of ``modules`` that ``name`` imports anywhere, each with the line of its first import."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        if target != name:
            found.setdefault(target, line)

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name in modules:
                        add(alias.name, child.lineno)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - child.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                for alias in child.names:
                    if f"{base}.{alias.name}" in modules:
                        add(f"{base}.{alias.name}", child.lineno)
                    elif base in modules:
                        add(base, child.lineno)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return found


def import_circle(src: Path) -> list[str] | None:
    """One circle of imports among the modules under ``src`` as ``module:line -> module`` steps, or None."""
    modules = _module_names(src)
    edges = {name: _imports(name, path, modules) for name, path in modules.items()}
    try:
        graphlib.TopologicalSorter({name: set(targets) for name, targets in edges.items()}).prepare()
    except graphlib.CycleError as exc:
        cycle: list[str] = exc.args[1]
        # graphlib lists the circle against the edges' direction (a node after the nodes it depends on).
        cycle = cycle[::-1]
        return [f"{a}:{edges[a][b]} -> {b}" for a, b in itertools.pairwise(cycle)]
    return None


def test_no_import_circle_among_bqas_modules() -> None:
    circle = import_circle(SRC)
    assert circle is None, "import circle (put what both sides need in a module below them):\n" + "\n".join(circle)


def test_a_lazy_circle_counts_and_a_type_checking_import_does_not(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import g\n\ndef f():\n    return g()\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pkg import a\n\ndef g():\n    return 1\n"
    )
    assert import_circle(tmp_path) is None

    (package / "b.py").write_text("def g():\n    from pkg.a import f\n    return f\n")
    circle = import_circle(tmp_path)
    assert circle in (["pkg.a:1 -> pkg.b", "pkg.b:2 -> pkg.a"], ["pkg.b:2 -> pkg.a", "pkg.a:1 -> pkg.b"])
