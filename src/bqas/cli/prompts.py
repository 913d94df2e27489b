"""``bqas prompts …`` — the RAGAS judge-prompt cache (judge_language: zh): build it, see where it is and if it is current."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

prompts_app = typer.Typer(
    name="prompts",
    help="RAGAS judge prompts in other languages (configs/judge_prompts/<lang>/).",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


def register(app: typer.Typer) -> None:
    """Add the ``prompts`` command group to the ``bqas`` app."""
    app.add_typer(prompts_app, name="prompts")


def default_out_root() -> Path:
    """The cache root to write: the repository's configs/judge_prompts in a checkout, else ./configs/judge_prompts."""
    from bqas.ragas.judge_prompts import cache_dir_candidates

    return cache_dir_candidates()[0]


@prompts_app.command("build-cache")
def build_cache_cmd(
    language: Annotated[str, typer.Option("--language", help="Target judge language (zh).")] = "zh",
    judge_model: Annotated[
        Optional[str],  # noqa: UP045 - typer needs Optional on 3.11
        typer.Option("--judge-model", help="Model that translates (default: BQAS_JUDGE_MODEL)."),
    ] = None,
    base_url: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--base-url", help="OpenAI-compatible endpoint (default: BQAS_LLM_BASE_URL)."),
    ] = None,
    out: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--out", help="Cache root; files go to OUT/<language>/ (default: configs/judge_prompts)."),
    ] = None,
    retries: Annotated[int, typer.Option("--retries", min=1, help="Attempts per prompt before giving up.")] = 3,
) -> None:
    """Translate RAGAS's judge prompts with ragas's adapt() and write the cache (all or nothing).

    Example: bqas prompts build-cache --language zh --judge-model qwen2.5-72b-instruct
    Exit codes: 0 written, 1 a prompt failed after retries (old cache untouched), 2 usage error.
    """
    raise typer.Exit(run_build(language, judge_model, base_url, out, retries))


def run_build(language: str, judge_model: str | None, base_url: str | None, out: Path | None, retries: int) -> int:
    """Shared by the CLI and scripts/build_judge_prompt_cache.py; returns the exit code."""
    import asyncio

    from bqas.judging.factory import LLMOverrides, llm_config
    from bqas.llm.client import LLMClient
    from bqas.ragas.api import INSTALL_HINT, available
    from bqas.ragas.judge_prompts import LANGUAGE_NAMES
    from bqas.settings import get_settings

    if language not in LANGUAGE_NAMES or language == "en":
        typer.echo(f"error: --language: expected zh, got {language!r}", err=True)
        return 2
    if not available():
        typer.echo(f"error: {INSTALL_HINT}", err=True)
        return 2
    # No response cache: a retry after a bad translation must ask the LLM again, not replay the reply.
    config = llm_config(get_settings(), LLMOverrides(base_url=base_url, model=judge_model, cache=False))
    if config is None:
        typer.echo(
            "error: no LLM: pass --base-url and --judge-model or set BQAS_LLM_BASE_URL/BQAS_JUDGE_MODEL", err=True
        )
        return 2
    from bqas.ragas.build_cache import BuildError, build_cache

    root = out or default_out_root()

    async def _run() -> list[Path]:
        async with LLMClient(config) as client:
            return await build_cache(language, client, root, retries=retries, progress=typer.echo)

    try:
        paths = asyncio.run(_run())
    except BuildError as exc:
        typer.echo(f"error: {exc}", err=True)
        return 1
    typer.echo(f"wrote {len(paths)} files to {root / language}")
    return 0


@prompts_app.command("check")
def check_cmd(language: Annotated[str, typer.Option("--language", help="Judge language to check.")] = "zh") -> None:
    """Show which cache folder is used and whether each file still matches the installed ragas prompts.

    Example: bqas prompts check --language zh
    Exit codes: 0 all current, 1 a file is missing or stale, 2 usage error.
    """
    from bqas.cli.steps import step
    from bqas.ragas.api import INSTALL_HINT, available

    if not available():
        typer.echo(f"error: {INSTALL_HINT}", err=True)
        raise typer.Exit(2)
    with step("loading ragas and building its metrics"):
        from bqas.llm.client import LLMClient, LLMConfig
        from bqas.ragas.adapters import SeamEmbedding, SeamLLM
        from bqas.ragas.factory import build_metric
        from bqas.ragas.judge_prompts import clear_cache, localize_pipeline_prompts
        from bqas.ragas.metrics import LLM_METRICS

        llm = SeamLLM(LLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="unused")))
        registry = {m: build_metric(m, llm, SeamEmbedding()) for m in LLM_METRICS}
    with step(f"checking the {language} prompt files against the installed ragas prompts"):
        clear_cache()
        report = localize_pipeline_prompts(registry, language)
    typer.echo(f"cache folder: {report.source}")
    for name in report.applied:
        typer.echo(f"applied  {name}")
    for name, why in report.skipped.items():
        typer.echo(f"skipped  {name}: {why}")
    for warning in report.warnings:
        typer.echo(f"warning  {warning}")
    raise typer.Exit(1 if report.warnings else 0)
