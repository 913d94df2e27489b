"""CLI output as users read it: usage lines and the judges table at 80 columns."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.judgment.spec import default_registry


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        (["score"], "Usage: bqas score [OPTIONS] SOURCE"),
        (["run"], "Usage: bqas run [OPTIONS] [SCENARIO]"),
        (["show"], "Usage: bqas show [OPTIONS] RUN_ID"),
        (["compare"], "Usage: bqas compare [OPTIONS] RUN_A RUN_B"),
        (["classify"], "Usage: bqas classify [OPTIONS] [TEXT]"),
        (["eval-intents"], "Usage: bqas eval-intents [OPTIONS] DATASET"),
        (["keys", "create"], "Usage: bqas keys create [OPTIONS] TENANT"),
        (["keys", "revoke"], "Usage: bqas keys revoke [OPTIONS] PREFIX"),
    ],
)
def test_usage_lines_name_arguments_without_template_braces(command: list[str], usage: str) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    first = next(line for line in result.output.splitlines() if line.startswith("Usage:"))
    assert first.strip() == usage and "{" not in first


def test_judges_table_never_cuts_judge_or_input_names_at_80_columns() -> None:
    result = CliRunner().invoke(app, ["judges"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert all(len(line) <= 80 for line in result.output.splitlines())
    assert "…" not in result.output
    cells = {part.strip() for line in result.output.splitlines() for part in line.split("│")}
    for spec in default_registry():
        assert spec.name in cells
        for name in spec.inputs:
            assert name in cells, name


def test_docs_and_cli_strings_name_the_policy_not_the_internal_seed_document() -> None:
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    files = [root / "README.md", *sorted((root / "docs").glob("*.md")), *sorted((root / "src" / "bqas").rglob("*.py"))]
    hits = [
        f"{path.relative_to(root)}:{n}"
        for path in files
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"\bseed[ -]00\d", line, re.IGNORECASE)
    ]
    assert hits == []
