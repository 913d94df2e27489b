"""No two modules of bqas import each other, directly or round a longer circle.

A circle means neither module can be read (or tested, or moved) without the other, and a lazy import
inside a function hides it from the interpreter but not from the reader: every ``import`` statement counts,
at module level or inside a function or method. Only imports under ``if TYPE_CHECKING:`` are left out:
they never run and name types for annotations. The import graph is grimp's, the one ``lint-imports``
checks the layer contracts on (pyproject.toml, docs/architecture.md); the contracts order packages, and
this test adds what they cannot say: no circle among the modules inside one layer or one package.
"""

from __future__ import annotations

import graphlib
import itertools
import re
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


def import_circle(package: str) -> list[str] | None:
    """One circle of imports among the modules of ``package`` as ``module:line -> module`` steps, or None."""
    graph = grimp.build_graph(package, exclude_type_checking_imports=True, cache_dir=None)
    edges = {name: graph.find_modules_directly_imported_by(name) for name in graph.modules}
    try:
        graphlib.TopologicalSorter(edges).prepare()
    except graphlib.CycleError as exc:
        cycle: list[str] = exc.args[1]
        # graphlib lists the circle against the edges' direction (a node after the nodes it depends on).
        cycle = cycle[::-1]
        return [
            f"{a}:{graph.get_import_details(importer=a, imported=b)[0]['line_number']} -> {b}"
            for a, b in itertools.pairwise(cycle)
        ]
    return None


def test_no_import_circle_among_bqas_modules() -> None:
    circle = import_circle("bqas")
    assert circle is None, "import circle (put what both sides need in a module below them):\n" + "\n".join(circle)


def test_a_lazy_circle_counts_and_a_type_checking_import_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "circle_probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from circle_probe.b import g\n\ndef f():\n    return g()\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from circle_probe import a\n\ndef g():\n    return 1\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_circle("circle_probe") is None

    (package / "b.py").write_text("def g():\n    from circle_probe.a import f\n    return f\n")
    circle = import_circle("circle_probe")
    assert circle in (
        ["circle_probe.a:1 -> circle_probe.b", "circle_probe.b:2 -> circle_probe.a"],
        ["circle_probe.b:2 -> circle_probe.a", "circle_probe.a:1 -> circle_probe.b"],
    )


def test_every_top_level_module_of_bqas_is_in_a_layer() -> None:
    """A module left out of the layers contract is held to nothing: lint-imports checks only the layers named."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    named = {name.strip().strip("()") for layer in layers for name in re.split(r"[|:]", layer)}
    src = ROOT / "src" / "bqas"
    modules = {f"bqas.{p.stem}" for p in src.glob("*.py") if p.stem != "__init__"}
    modules |= {f"bqas.{p.parent.name}" for p in src.glob("*/__init__.py")}
    assert modules - named == set(), "add these to a layer of [tool.importlinter] (docs/architecture.md)"
