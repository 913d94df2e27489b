"""``bqas judge-check``: measure the configured judge on its known-answer set before trusting it."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any, Optional

import typer

from bqas.cli.main import BackendOpt, BaseUrlOpt, GgufOpt, LanguageOpt, ModelOpt, NoCacheOpt, StructuredOpt


def register(app: typer.Typer) -> None:
    """Add ``bqas judge-check`` to the app."""
    app.command("judge-check")(judge_check_cmd)


def judge_check_cmd(
    judge: Annotated[
        Optional[list[str]],  # noqa: UP045 - typer needs Optional on 3.11
        typer.Option(
            "--judge", "-j", help="Judge to check (repeatable; default: every judge with a known-answer set)."
        ),
    ] = None,
    backend: BackendOpt = "auto",
    language: LanguageOpt = None,
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    structured_output: StructuredOpt = None,
    llm_gguf: GgufOpt = None,
    no_cache: NoCacheOpt = False,
    limit: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--limit", help="Check only the first N pairs of each set (a quicker, rougher check)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per judge instead of lines.")] = False,
    list_sets: Annotated[
        bool, typer.Option("--list", help="List the judges with a known-answer set and their languages, and exit.")
    ] = False,
    as_configured: Annotated[
        bool,
        typer.Option(
            "--as-configured",
            help="Check an LLM judge as a run uses it, with the PII gate and (in auto) the offline facts beside "
            "the LLM, instead of the LLM tier alone (the default). Those deterministic tiers are never overruled, "
            "so on the pairs they decide this measures them, not the LLM.",
        ),
    ] = False,
) -> None:
    """Run the judge on clear known-answer pairs and say whether it is fit to be trusted.

    Each judge and language has a built-in set of about 20 clear pairs written for BQAS (right vs wrong
    intent, grounded vs invented number ...). The configured judge (any backend, any LLM, the embedded
    engine) grades both answers of every pair. Printed: pairs ranked right, verdict agreement, parse
    failures, latency, LLM calls and tokens. Below the floors (80 % of pairs ranked right, 70 % verdict
    agreement, at most 10 % unparsed) the judge is UNFIT. Results are cached per model, judge, language
    and prompt-template hash (--no-cache measures again).

    An LLM judge (--backend llm, or auto with an LLM) is checked as the LLM tier alone: every pair gets the
    LLM's own answer, without the PII gate or the offline facts, which would decide the clear pairs for it
    (--as-configured checks it with them). --backend offline, or auto without an LLM, checks the offline tier.

    Sets (--list): voice, rag_hallucination, rag_privacy, rag_namespace and rag_retrieval in de, en and zh;
    rag_operator in de (its operator table is the German Abitur's). The intent classifier and the RAGAS
    metrics have none.

    Example: bqas judge-check --judge voice --backend offline

    Exit 0 when every checked judge is fit, 1 when one is unfit, 2 on a usage or configuration error.
    """
    from bqas.cli.llm_options import llm_overrides
    from bqas.cli.steps import step
    from bqas.judging.check import available_sets, run_check
    from bqas.judging.check_engine import backend_label, check_engine
    from bqas.settings import check_language, get_settings

    if list_sets:
        languages: dict[str, list[str]] = {}
        for name, set_language in available_sets():
            languages.setdefault(name, []).append(set_language)
        for name, langs in sorted(languages.items()):
            typer.echo(f"{name}: {', '.join(sorted(langs))}")
        return
    if backend not in ("auto", "llm", "offline"):
        raise typer.BadParameter(f"expected auto, llm or offline, got {backend!r}", param_hint="--backend")
    if limit is not None and limit < 1:
        raise typer.BadParameter(f"expected at least 1, got {limit}", param_hint="--limit")
    settings = get_settings()
    try:
        lang = check_language(language or settings.language)
        overrides = llm_overrides(base_url, model, structured_output, no_cache, llm_gguf)
        from bqas.runner.request import loading_step

        with step(loading_step(settings, backend, overrides)):
            engine, measured = check_engine(
                settings,
                backend=backend,  # type: ignore[arg-type]
                language=lang,
                overrides=overrides,
                as_configured=as_configured,
            )
        names = judge or sorted({j for j, set_lang in available_sets() if set_lang == lang})
        specs = [engine.registry.get(name) for name in names]
    except (ValueError, KeyError) as exc:
        typer.echo(f"error: {str(exc).strip(chr(34))}", err=True)
        raise typer.Exit(2) from None
    used = backend_label(engine)
    model_name = engine.llm.config.model if engine.llm is not None and engine.tiers[1] else None
    cache_dir = None if no_cache else settings.cache_dir / "judge-check"

    async def evaluate(name: str, sample: dict[str, Any], response_id: str, language: str) -> Any:
        return await engine.evaluate(name, sample, response_id=response_id, language=language)

    def progress(done: int, total: int) -> None:
        typer.echo(f"  {done}/{total} pairs", err=True)

    async def check_all() -> list[Any]:
        try:
            return [
                await run_check(
                    spec,
                    lang,
                    evaluate,
                    model=model_name,
                    backend=used,
                    limit=limit,
                    cache_dir=cache_dir,
                    progress=progress,
                    safety_gate=engine.options.safety_gate,
                    measured=measured,
                )
                for spec in specs
            ]
        finally:
            if engine.llm is not None:
                await engine.llm.aclose()

    try:
        with step(f"checking {', '.join(names)} on the known-answer set(s) (the first pair loads the models)"):
            results = asyncio.run(check_all())
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    for result in results:
        if as_json:
            typer.echo(json.dumps(result.to_json(), ensure_ascii=False))
        else:
            typer.echo(result.summary() + (" (cached)" if result.cached else ""))
    if any(not r.fit for r in results):
        raise typer.Exit(1)
