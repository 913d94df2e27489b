"""The ``bqas`` command group, built on first use: ``bqas --help`` lists the commands from
:data:`COMMANDS` and builds none of them, ``bqas run`` imports and builds ``run`` only.

Building a Typer command reads every parameter annotation of its function; for all 19 commands that was
more than half of a ``bqas --help`` (plus importing each command module). The summaries below are what
``--help`` prints; ``tests/test_cli_lazy.py`` checks that they match the commands' own docstrings, so
the list cannot drift from the commands.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, MutableMapping
from importlib import import_module
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

if TYPE_CHECKING:
    from typer import _click

# (command name, module whose register(app) adds it, the first paragraph of its help), in --help order.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("judges", "bqas.cli.main", "List the judges with their input fields and output dimensions."),
    ("score", "bqas.cli.main", "Score one sample or a JSON Lines file and print one result JSON per line."),
    ("run", "bqas.cli.main", "Run a scenario: grade every sample, store results, print a summary, write reports."),
    ("runs", "bqas.cli.main", "List stored runs, newest first."),
    ("show", "bqas.cli.main", "Print the summary of one stored run."),
    (
        "compare",
        "bqas.cli.main",
        "Compare two runs: per-dimension mean differences with bootstrap CIs and changed verdicts.",
    ),
    (
        "synth",
        "bqas.cli.synth",
        "Generate realistic test inputs for one intent (LLM or offline), validated and deduplicated.",
    ),
    ("classify", "bqas.cli.synth", "Classify texts into intents; prints one JSON line per text."),
    (
        "eval-intents",
        "bqas.cli.synth",
        "Evaluate intent classification on a labelled set: accuracy, macro-F1, per intent, confusion matrix.",
    ),
    (
        "synth-rag",
        "bqas.cli.synth_rag",
        "Generate a RAG test set with ground truth from documents (offline, extractive, filtered).",
    ),
    (
        "rag-diagnosis",
        "bqas.cli.synth_rag",
        "Context recall per question kind of a run over a synth-rag set (retrieval vs answer failures).",
    ),
    ("serve", "bqas.cli.serve", "Start the scoring service (FastAPI under uvicorn) with an in-process job worker."),
    (
        "worker",
        "bqas.cli.serve",
        "Run job workers without HTTP, against the store of BQAS_DATABASE_URL (several may share PostgreSQL).",
    ),
    (
        "review",
        "bqas.cli.local_review",
        "Serve the review page for the escalations of `bqas run` (tenant @local) on 127.0.0.1.",
    ),
    (
        "view",
        "bqas.cli.local_review",
        "Open the results viewer over the stored runs on 127.0.0.1: every sample with search, filters and sort.",
    ),
    ("ci-summary", "bqas.cli.ci", "Write a Markdown summary of a run for CI and exit with its gate."),
    (
        "demo-assistant",
        "bqas.cli.demo",
        "Serve a tiny rule-based German assistant on 127.0.0.1 to run target scenarios against.",
    ),
    (
        "redteam",
        "bqas.cli.redteam",
        "Attack the assistant under test (leaks, injections, unsafe answers) and gate on the attack success rate.",
    ),
    (
        "judge-check",
        "bqas.cli.judge_check",
        "Run the judge on clear known-answer pairs and say whether it is fit to be trusted.",
    ),
    (
        "calibrate",
        "bqas.cli.calibrate",
        "Run a judge on a gold-labelled JSONL and report how well it agrees with people.",
    ),
    ("keys", "bqas.cli.serve", "API keys of tenants (stored hashed in the BQAS store)."),
    ("prompts", "bqas.cli.prompts", "RAGAS judge prompts in other languages (configs/judge_prompts/<lang>/)."),
    ("gold", "bqas.cli.review", "Gold labels from the review queue (human decisions)."),
    ("grounding-model", "bqas.cli.grounding", "The learned grounding scorer (offline rag_hallucination)."),
)
_MODULE = {name: module for name, module, _ in COMMANDS}
_SUMMARY = {name: summary for name, _, summary in COMMANDS}


def new_typer(**kwargs: Any) -> typer.Typer:
    """A Typer with the settings of the ``bqas`` app (plain help, no completion, plain tracebacks)."""
    return typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False, **kwargs)


def build_command(name: str) -> _click.Command:
    """The click command ``name``: its module's ``register(app)`` on a scratch app, only ``name`` built."""
    scratch = new_typer()
    import_module(_MODULE[name]).register(scratch)
    scratch.registered_commands = [c for c in scratch.registered_commands if c.name == name]
    scratch.registered_groups = [g for g in scratch.registered_groups if g.name == name]
    group = typer.main.get_group(scratch)
    return group.commands[name]


class _Commands(MutableMapping[str, "_click.Command"]):
    """Name -> command; a listed command is built when it is first looked up."""

    def __init__(self, build: Callable[[str], _click.Command]) -> None:
        self._build = build
        self._built: dict[str, _click.Command] = {}
        self._names = [name for name, _, _ in COMMANDS]

    def __getitem__(self, name: str) -> _click.Command:
        if name not in self._built:
            if name not in _MODULE:
                raise KeyError(name)
            self._built[name] = self._build(name)
        return self._built[name]

    def __setitem__(self, name: str, command: _click.Command) -> None:
        if name not in self._names:
            self._names.append(name)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names


class LazyGroup(TyperGroup):
    """The ``bqas`` group: commands from :data:`COMMANDS`, each built when it is run or asked for help."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        commands = _Commands(build_command)
        for name, command in self.commands.items():  # commands registered on the app itself, if any
            commands[name] = command
        self.commands = commands

    def invoke(self, ctx: _click.Context) -> Any:
        """Run the command; a store that cannot be opened or written ends it with one line and exit 4."""
        try:
            return super().invoke(ctx)
        except Exception as exc:
            # Only a command that opened the store can meet its failure: no import for the others.
            db = sys.modules.get("bqas.store.db")
            if db is None or not isinstance(exc, db.StoreUnavailable):
                raise
            from bqas.textsafe import printable

            typer.echo(f"error: {printable(exc)}", err=True)
            raise typer.Exit(db.STORE_FAILED) from None

    def format_commands(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        """The command list of ``bqas --help`` from the summaries, as click writes it, building nothing."""
        from typer._click.utils import make_default_short_help

        names = list(self.commands)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in _SUMMARY and name not in self.commands._built:  # type: ignore[attr-defined]
                rows.append((name, make_default_short_help(_SUMMARY[name], limit)))
            else:
                command = self.commands[name]
                if not command.hidden:
                    rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)
