"""``bqas run --dry-run``: print what the run would send (samples, LLM calls, tokens, cost); send nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from bqas.judging.factory import LLMOverrides


def dry_run(
    scenario_path: Path | None,
    resume: str | None,
    backend: str | None,
    language: str | None,
    overrides: LLMOverrides,
    as_json: bool,
    repeats: int | None = None,
    target: str | None = None,
    allow_dataset_outside: bool = False,
) -> None:
    """Count a scenario's samples, LLM calls and prompt tokens and price them; nothing is stored or sent."""
    from bqas.judging.factory import build_engine, llm_model_name, local_model
    from bqas.runner.dry_run import LLMPlan, estimate_run
    from bqas.runner.request import RunRequest, llm_overrides
    from bqas.runner.scenario import ScenarioError, load_scenario
    from bqas.settings import get_settings

    if resume is not None or scenario_path is None:
        typer.echo("error: --dry-run: give a scenario file (a resumed run is not estimated)", err=True)
        raise typer.Exit(2)
    if backend is not None and backend not in ("auto", "llm", "offline"):
        typer.echo(f"error: --backend: expected auto, llm or offline, got {backend!r}", err=True)
        raise typer.Exit(2)
    settings = get_settings()
    try:
        scenario = load_scenario(
            scenario_path, allow_dataset_outside=allow_dataset_outside or settings.allow_dataset_outside
        )
        if repeats is not None:
            if repeats < 1:
                raise ScenarioError(f"--repeats: expected at least 1, got {repeats}")
            scenario.repeats = repeats
        request = RunRequest(scenario_path=scenario_path, backend=backend, language=language, overrides=overrides)
        # Nothing is sent, so no LLM needs to be reachable, or even configured: the prompts are rendered
        # and counted as the run would send them (a local model is named, not started).
        run_llm = llm_overrides(scenario, request)
        chosen = backend or scenario.backend
        configured = local_model(settings, run_llm) is not None or bool(run_llm.base_url or settings.llm_base_url)
        plan = LLMPlan(
            use=chosen == "llm" or (chosen == "auto" and configured),
            model=llm_model_name(settings, run_llm) if configured else None,
            max_tokens=run_llm.max_tokens or settings.llm_max_tokens,
        )
        engine = build_engine(settings, backend="offline", language=request.language or scenario.language)
        llm = scenario.llm
        prices = (
            llm.price_prompt_per_mtok if llm.price_prompt_per_mtok is not None else settings.price_prompt_per_mtok,
            llm.price_completion_per_mtok
            if llm.price_completion_per_mtok is not None
            else settings.price_completion_per_mtok,
        )
        if target is not None:
            from bqas.targets.config import load_target_option

            scenario.target = load_target_option(target)
        if scenario.target is not None:
            from bqas.targets.config import check_environment

            check_environment(scenario.target)  # an unset ${VAR} fails the real run before any call
            if scenario.target.type == "python":  # as does a function that cannot be imported
                from bqas.targets.kinds import load_function

                load_function(scenario.target.function)
        est = estimate_run(engine, scenario, prices, chosen, language, plan)
        refused = _refusals(engine, scenario, est, chosen == "llm" and not configured)
    except (ScenarioError, ValueError, KeyError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps({**est.as_dict(), "refused": refused}, ensure_ascii=False, indent=2))
        _refuse(refused)
        return
    from bqas.textsafe import console_text

    data = est.as_dict()
    typer.echo(console_text(f"dry run of {est.scenario} (nothing sent, nothing stored)"))
    typer.echo(f"backend {est.backend} · model {est.model or '–'}")
    typer.echo(f"samples {est.samples} · judgments {est.work_items} · invalid {est.invalid}")
    if est.target_type is not None:
        typer.echo(
            f"target calls {est.target_calls} ({est.target_type}; at least: a retry adds one; "
            f"prompt tokens below count the answers as empty)"
        )
    typer.echo(f"LLM calls {est.llm_calls} (at least; a retry after an invalid reply adds one)")
    typer.echo(f"prompt tokens ~{est.prompt_tokens} ({data['tokenizer']})")
    for judge, row in est.by_judge.items():
        typer.echo(
            f"  {judge}: {row['items']} judgments, {row['llm_calls']} LLM calls, ~{row['prompt_tokens']} prompt tokens"
        )
    if est.ragas_items:
        typer.echo(
            f"RAGAS: {est.ragas_items} samples × {len(scenario.metrics)} metrics; their LLM calls are not estimated"
        )
    if est.max_completion_tokens is not None and est.llm_calls:
        typer.echo(f"completion tokens at most {est.max_completion_tokens} (the judges' max_tokens)")
    if est.prompt_cost_usd is None:
        typer.echo("cost: n/a (no price configured: price_prompt_per_mtok / BQAS_PRICE_PROMPT_PER_MTOK)")
    else:
        upper = f", at most ${est.max_cost_usd:.4f} with completions" if est.max_cost_usd is not None else ""
        typer.echo(f"cost: prompts ~${est.prompt_cost_usd:.4f}{upper}")
    for error in est.errors:
        typer.echo(console_text(f"invalid: {error}"))
    _refuse(refused)


def _refusals(engine: Any, scenario: Any, est: Any, llm_missing: bool) -> list[str]:
    """What the real run would refuse or fail on before judging anything (exit 2 for a dry run too): no
    LLM for the llm backend, judge fields the target cannot give, more invalid samples than allowed."""
    refused: list[str] = []
    if scenario.target is not None and scenario.ray is not None:
        refused.append("ray: a run with a target asks the assistant from this process; run it without Ray")
    if llm_missing:
        refused.append(
            "backend llm needs an LLM: set BQAS_LLM_BASE_URL and BQAS_JUDGE_MODEL "
            "(or --base-url/--model, or a local model with --llm-gguf)"
        )
    if scenario.target is not None:
        from bqas.runner.execute import work_items
        from bqas.targets.preflight import unmappable_fields

        refused += unmappable_fields(engine, work_items(scenario), scenario.target)
    allowed = scenario.thresholds.max_invalid or 0
    if est.invalid > allowed:
        refused.append(
            f"{est.invalid} invalid samples, thresholds.max_invalid allows {allowed} (the run would miss its gate)"
        )
    return refused


def _refuse(refused: list[str]) -> None:
    """Exit 2 naming each refusal (the estimate is printed first)."""
    for reason in refused:
        typer.echo(f"error: {reason}", err=True)
    if refused:
        raise typer.Exit(2)
