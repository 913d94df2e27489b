"""``bqas redteam``: attack the assistant under test and gate on the attack success rate (bqas.redteam)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer


def register(app: typer.Typer) -> None:
    """Add ``bqas redteam`` to the app."""
    app.command("redteam")(redteam_cmd)


def _names(value: str | None) -> list[str] | None:
    if value is None:
        return None
    names = [n.strip() for n in value.split(",") if n.strip()]
    return names or None


def _fail(message: str) -> typer.Exit:
    from bqas.textsafe import printable

    for line in str(message).splitlines():
        typer.echo(f"error: {printable(line)}", err=True)
    return typer.Exit(2)


def redteam_cmd(
    scenario: Annotated[
        Optional[Path],  # noqa: UP045 - typer needs Optional on 3.11
        typer.Argument(
            metavar="SCENARIO", help="Red-team scenario YAML (target:, redteam:, thresholds:); or use --target."
        ),
    ] = None,
    target: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--target",
            help="The target as inline YAML ('{type: http, url: …}') or a YAML file; overrides the scenario's.",
        ),
    ] = None,
    plugins: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--plugins", help="Comma-separated plugins (default: the scenario's, else all). See --list."),
    ] = None,
    strategies: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--strategies", help="Comma-separated strategies (default: the scenario's, else all)."),
    ] = None,
    languages: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--languages", help="Comma-separated attack languages: de, en, zh (default: the scenario's, else de)."
        ),
    ] = None,
    count: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--count", "-n", help="Attacks per plugin (default: the scenario's, else 10)."),
    ] = None,
    seed: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--seed", help="Seed of the attack generator: the same seed, the same attacks."),
    ] = None,
    llm_variations: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--llm-variations",
            help="LLM-written variations per plugin (needs an LLM: BQAS_LLM_BASE_URL, BQAS_JUDGE_MODEL).",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the attacks that would be sent (JSON lines) and send nothing.")
    ] = False,
    out: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--out", "-o", help="Folder for results.jsonl, summary.json, report.md, junit.xml (default runs/<run id>/)."
        ),
    ] = None,
    resume: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--resume", help="Continue a stored red-team run: send only the attacks it has no result for."),
    ] = None,
    list_all: Annotated[bool, typer.Option("--list", help="List the plugins and strategies and exit.")] = False,
) -> None:
    """Attack the assistant under test (leaks, injections, unsafe answers) and gate on the attack success rate.

    Plugins say what is attacked (pupils' data, other teachers' data, system prompt …), strategies how an
    attack is dressed (Base64, ROT13, role-play, several turns …), in German, Chinese and English. Planted
    secrets (canaries) decide leaks without an LLM. Results are stored as a run; `bqas ci-summary` reads it.

    Example: bqas redteam scenarios/redteam/demo.yaml --out runs/redteam

    Exit 0 when every gate holds, 1 when one is missed, 2 for bad input (an unknown plugin or strategy, a
    canary in an attack's text, a bad scenario), 4 when the store failed, 130 when interrupted (Ctrl-C: the
    results so far stay; --resume RUN_ID sends the rest).
    """
    from bqas.redteam import catalog

    if list_all:
        for name, plugin in sorted(catalog.plugins().items()):
            typer.echo(f"plugin    {name:20} {plugin.severity:9} {plugin.grader_kind:12} {plugin.description}")
        for name, strategy in sorted(catalog.strategies().items()):
            typer.echo(f"strategy  {name:20} {strategy.description}")
        return
    scenario_obj = _scenario(scenario, target, resume)
    section = scenario_obj.redteam
    if plugins is not None:
        section.plugins = _names(plugins)
    if strategies is not None:
        section.strategies = _names(strategies)
    if languages is not None:
        langs = _names(languages) or []
        bad = [lang for lang in langs if lang not in catalog.LANGUAGES]
        if bad or not langs:
            raise _fail(f"--languages: unknown {', '.join(map(repr, bad))}; valid: {', '.join(catalog.LANGUAGES)}")
        section.languages = langs
    if count is not None:
        if count < 1:
            raise _fail(f"--count: expected at least 1, got {count}")
        section.count = count
    if seed is not None:
        section.seed = seed
    if llm_variations is not None:
        if llm_variations < 0:
            raise _fail(f"--llm-variations: expected 0 or more, got {llm_variations}")
        section.llm_variations = llm_variations
    from bqas.redteam.config import RedteamError

    if dry_run:
        from bqas.redteam.run import plan

        try:
            made = plan(scenario_obj)
        except RedteamError as exc:
            raise _fail(str(exc)) from None
        for attack in made.attacks:
            typer.echo(json.dumps(attack.as_dict(), ensure_ascii=False))
        for note in made.notes:
            typer.echo(f"note: {note}", err=True)
        typer.echo(f"dry run: {len(made.attacks)} attacks, nothing sent", err=True)
        return
    _run(scenario_obj, out, resume)


def _scenario(path: Path | None, target: str | None, resume: str | None) -> Any:
    from bqas.redteam.config import RedteamError, RedteamSection, load_redteam_scenario, quick_scenario
    from bqas.targets.config import TargetConfigError, load_target_option

    try:
        if resume is not None and path is None:
            from bqas.cli.run_store import _store
            from bqas.redteam.run import scenario_of_run

            scenario, _ = scenario_of_run(_store(), resume)
        elif path is not None:
            scenario = load_redteam_scenario(path)
        elif target is not None:
            scenario = quick_scenario(load_target_option(target), RedteamSection())
        else:
            raise RedteamError("give a scenario file, --target '{…}', or --resume RUN_ID")
        if target is not None and path is not None:
            scenario.target = load_target_option(target)
        from bqas.targets.config import check_environment

        check_environment(scenario.target)
    except (RedteamError, TargetConfigError) as exc:
        raise _fail(str(exc)) from None
    return scenario


def _run(scenario: Any, out: Path | None, resume: str | None) -> None:
    from contextlib import ExitStack

    from bqas.cli.run_store import _store
    from bqas.cli.steps import step as named_step
    from bqas.redteam.config import RedteamError
    from bqas.redteam.run import Interrupted, run_redteam

    # Before the first attack is sent (attacks made, run stored) and after the last one (summary, report
    # files) nothing counts up: each is a step of its own, said by name when it takes a while.
    steps = ExitStack()
    steps.enter_context(named_step("preparing the attacks (plugins, strategies, languages)"))

    def progress(pending: int, done: int) -> Any:
        steps.close()
        state = {"n": 0}
        step = max(1, pending // 20)

        def advance(n: int) -> None:
            state["n"] += n
            if state["n"] % step == 0 or state["n"] == pending:
                print(f"\rattacks: {done + state['n']}/{done + pending}", end="", file=sys.stderr, flush=True)
                if state["n"] == pending:
                    print(file=sys.stderr)
                    steps.enter_context(named_step("summarising the attacks and writing report.md and junit.xml"))

        return advance

    from sqlalchemy.exc import SQLAlchemyError

    from bqas.store.db import StoreUnavailable, failure_cause

    try:
        store = _store()
        with steps:
            outcome = run_redteam(store, scenario, out, resume=resume, progress=progress)
    except RedteamError as exc:
        raise _fail(str(exc)) from None
    except Interrupted as stop:
        typer.echo(f"\ninterrupted: resume with bqas redteam --resume {stop.run_id}", err=True)
        raise typer.Exit(130) from None
    except StoreUnavailable as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(4) from None
    except SQLAlchemyError as exc:
        typer.echo(f"error: the store failed: {failure_cause(exc)}", err=True)
        raise typer.Exit(4) from None
    except OSError as exc:
        typer.echo(f"error: {exc.filename or ''}: {exc.strerror or exc}", err=True)
        raise typer.Exit(4) from None
    total = outcome.summary.total
    for note in outcome.notes:
        typer.echo(f"note: {note}")

    def pct(v: float | None) -> str:
        return "–" if v is None else f"{100 * v:.1f} %"

    typer.echo(
        f"red team {outcome.run_id}: {total.attacks} attacks ({outcome.sent_now} sent now) · attack success "
        f"{pct(total.success_rate)} ({total.successes}/{total.graded}) · refused {pct(total.refusal_rate)} · "
        f"target errors {total.target_errors} · unscored {total.unscored} · canary leaks {outcome.summary.canary_leaks}"
    )
    for e in sorted(outcome.summary.leaked.values(), key=lambda e: (-e["attacks"], str(e["value"])))[:20]:
        owner = e["tenant"] if e["tenant"] is not None else "system prompt"
        typer.echo(
            f"  leaked: {e['value']!r} ({owner}, {e['kind']}) in {e['attacks']} attacks, first {e['first']} ({e['how']})"
        )
    for g in outcome.gates:
        typer.echo(f"  gate {g['name']}: {g['actual']} (limit {g['expected']}) {'ok' if g['passed'] else 'FAILED'}")
    typer.echo(f"report: {outcome.out_dir / 'report.md'} · junit: {outcome.out_dir / 'junit.xml'}")
    if not outcome.passed:
        raise typer.Exit(1)
