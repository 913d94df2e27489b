"""Every package that src/bqas imports is declared in pyproject.toml (main dependencies or an extra), not
only present because another package pulled it in: a dependency's own requirements may change."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Imported but deliberately not declared, with the reason.
UNDECLARED = {
    # The verifier's training only (bqas grounding-model train-verifier): the PyPI Linux wheel pulls GBs of
    # CUDA libraries; scripts/bootstrap.sh --dev installs the CPU build (README, Development).
    "torch": "installed by scripts/bootstrap.sh --dev from a local CPU wheel",
}


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {_name(r) for r in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        names |= {_name(r) for r in extra}
    return names


def _imported_roots() -> dict[str, str]:
    """Top-level module -> one file importing it (absolute imports anywhere in src/bqas, lazy ones too)."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "src" / "bqas").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                roots = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots = [node.module.split(".")[0]]
            else:
                continue
            for root in roots:
                found.setdefault(root, str(path.relative_to(ROOT)))
    return found


def test_every_imported_package_is_declared() -> None:
    declared = _declared()
    distributions = packages_distributions()
    missing = []
    for root, where in _imported_roots().items():
        if root == "bqas" or root in sys.stdlib_module_names or root in UNDECLARED:
            continue
        dists = {d.lower().replace("_", "-") for d in distributions.get(root, [])}
        assert dists, f"{root} (imported in {where}) belongs to no installed distribution"
        if not dists & declared:
            missing.append(f"{root} ({', '.join(sorted(dists))}; imported in {where})")
    assert missing == [], "imported but not declared in pyproject.toml: " + "; ".join(missing)
