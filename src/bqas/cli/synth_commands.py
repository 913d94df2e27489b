"""Implementation of ``bqas synth`` (the Typer command lives in ``bqas.cli.synth``)."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import replace
from pathlib import Path

import typer

from bqas.synth.generate import SynthReport, SynthRequest, generate_llm, generate_offline
from bqas.synth.items import DROP_REASONS
from bqas.synth.patterns import PatternFileError


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def _summary(report: SynthReport) -> str:
    lines = [f"kept {report.kept} of {report.requested} requested ({report.backend}, {report.rounds} round(s))"]
    discarded = sum(report.dropped.values())
    if discarded:
        # Extra candidates the generator made and threw away: none of them is missing from the file.
        lines.append(f"  {discarded} more candidate(s) generated and discarded:")
    for reason, n in sorted(report.dropped.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {n:6d} {reason}: {DROP_REASONS.get(reason, reason)}")
    if report.broken_replies:
        lines.append(
            f"  {len(report.broken_replies)} LLM repl(y/ies) with a broken array "
            f"({report.salvaged} complete item(s) salvaged): {report.broken_replies[0]}"
        )
    if report.error:
        lines.append(f"  stopped: {report.error}")
    if not report.complete and not report.error:
        lines.append("  retry limit reached before the count (raise --max-rounds or lower --threshold)")
    return "\n".join(lines)


def run_synth(
    request: SynthRequest,
    *,
    backend: str,
    out: Path,
    base_url: str | None,
    model: str | None,
    no_cache: bool,
    temperature: float,
    progress: bool,
    as_json: bool,
) -> None:
    """Generate, write JSONL to ``out``, print what was kept and dropped; exit 1 when short of ``count``."""
    from bqas.judging.factory import LLMOverrides, llm_config
    from bqas.settings import check_language, get_settings

    if request.count < 1:
        raise _fail("--count must be at least 1")
    if not 0.0 < request.threshold <= 1.0:
        raise _fail("--threshold must be in (0, 1]")
    if backend not in ("auto", "llm", "offline"):
        raise _fail(f"--backend: expected llm, offline or auto, got {backend!r}")
    settings = get_settings()
    try:
        request = replace(request, language=check_language(request.language or settings.language))
    except ValueError as exc:
        raise _fail(f"--language: {exc}") from None
    config = None
    if backend != "offline":
        config = llm_config(settings, LLMOverrides(base_url=base_url, model=model, cache=False if no_cache else None))
        if config is None and backend == "llm":
            raise _fail(
                "backend llm needs an LLM: set BQAS_LLM_BASE_URL and BQAS_JUDGE_MODEL or pass --base-url/--model"
            )
    try:
        from bqas.synth.generate import prepare

        prepare(request)
    except (PatternFileError, ValueError) as exc:
        raise _fail(str(exc)) from None
    except KeyError:
        raise _fail(
            f"--intent: no base patterns for {request.intent!r}; add some with --patterns FILE "
            "(YAML like src/bqas/data/synth/patterns_de.yaml, or one pattern per line)"
        ) from None

    from bqas.offline.embeddings import default_embedder

    embedder = default_embedder()
    report = _with_progress(request, config, temperature, embedder, progress)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for record in report.records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "out": str(out),
                    "backend": report.backend,
                    "requested": report.requested,
                    "kept": report.kept,
                    "dropped": report.dropped,
                    "rounds": report.rounds,
                    "broken_replies": report.broken_replies,
                    "salvaged": report.salvaged,
                    "error": report.error,
                },
                ensure_ascii=False,
            )
        )
    else:
        typer.echo(_summary(report) + f"\nwrote {out}")
    if not report.complete:
        raise typer.Exit(1)


def _with_progress(
    request: SynthRequest, config: object, temperature: float, embedder: object, progress: bool
) -> SynthReport:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from bqas.llm.client import LLMClient, LLMConfig
    from bqas.offline.embeddings import Embedder

    assert isinstance(embedder, Embedder)
    show = progress and sys.stderr.isatty()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, transient=True, disable=not show) as bar:
        task = bar.add_task(f"synth {request.intent}", total=request.count)

        def advance(n: int) -> None:
            bar.advance(task, n)

        if config is None:
            return generate_offline(request, embedder, on_keep=advance)
        assert isinstance(config, LLMConfig)
        config.temperature = temperature
        client = LLMClient(config)
        from bqas.judgment.spec import default_registry

        spec = default_registry().get("synthetic")

        async def go() -> SynthReport:
            try:
                return await generate_llm(request, spec, client, embedder, on_keep=advance)
            finally:
                await client.aclose()

        return asyncio.run(go())
