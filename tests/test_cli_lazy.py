"""The lazily built ``bqas`` group (bqas.cli.lazy): the same commands, help and behaviour as building every
command up front, without building them."""

from __future__ import annotations

from importlib import import_module

import pytest
import typer
from typer.testing import CliRunner

from bqas.cli.lazy import COMMANDS, LazyGroup, new_typer
from bqas.cli.main import app

# The order in which bqas.cli.main registered its command modules before the group was lazy.
EAGER_ORDER = (
    "bqas.cli.main",
    "bqas.cli.calibrate",
    "bqas.cli.synth",
    "bqas.cli.synth_rag",
    "bqas.cli.serve",
    "bqas.cli.prompts",
    "bqas.cli.review",
    "bqas.cli.local_review",
    "bqas.cli.grounding",
    "bqas.cli.ci",
    "bqas.cli.demo",
    "bqas.cli.redteam",
    "bqas.cli.judge_check",
)


def _eager() -> typer.Typer:
    """The app as it was before: every command module registered on one Typer."""
    eager = new_typer(name="bqas", help=app.info.help, no_args_is_help=True)
    assert set(EAGER_ORDER) == {module for _, module, _ in COMMANDS}
    for module in EAGER_ORDER:
        import_module(module).register(eager)
    return eager


def _first_paragraph(text: str | None) -> str:
    return " ".join((text or "").split("\n\n")[0].split())


def test_summaries_and_order_match_the_commands() -> None:
    built = typer.main.get_group(_eager())
    assert list(built.commands) == [name for name, _, _ in COMMANDS]
    for name, _, summary in COMMANDS:
        assert _first_paragraph(built.commands[name].help) == summary, name


def test_help_is_the_same_as_with_every_command_built() -> None:
    runner = CliRunner()
    lazy, eager = runner.invoke(app, ["--help"]), runner.invoke(_eager(), ["--help"])
    assert lazy.exit_code == eager.exit_code == 0
    assert lazy.output == eager.output and "grounding-model" in lazy.output
    assert runner.invoke(app, []).output == runner.invoke(_eager(), []).output  # no arguments: the help


def test_help_builds_no_command_and_a_command_builds_only_itself(capsys: pytest.CaptureFixture[str]) -> None:
    group = typer.main.get_command(app)
    assert isinstance(group, LazyGroup)
    group.main(["--help"], prog_name="bqas", standalone_mode=False)
    assert "grounding-model" in capsys.readouterr().out
    assert group.commands._built == {}  # type: ignore[attr-defined]
    group.main(["runs", "--help"], prog_name="bqas", standalone_mode=False)
    assert "List stored runs" in capsys.readouterr().out
    assert list(group.commands._built) == ["runs"]  # type: ignore[attr-defined]


def test_unknown_command_is_a_usage_error_with_a_suggestion() -> None:
    result = CliRunner().invoke(app, ["rnu"])
    assert result.exit_code == 2
    assert "No such command 'rnu'" in result.output and "Did you mean 'run'" in result.output
