"""Implementation of ``bqas synth-rag`` (the Typer command lives in ``bqas.cli.synth_rag``)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from bqas.ragsynth.generate import NoMaterialError, SynthRagReport, SynthRagRequest
from bqas.ragsynth.items import DROP_REASONS
from bqas.ragsynth.kinds import KINDS

#: More than this is a usage error: the offline generator keeps one item per source sentence.
MAX_COUNT = 100_000


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def parse_kinds(value: str | None) -> tuple[str, ...]:
    """``--kinds`` as a tuple (all kinds when empty); ValueError naming the unknown ones."""
    if not value:
        return KINDS
    names = tuple(dict.fromkeys(k.strip() for k in value.split(",") if k.strip()))
    unknown = [k for k in names if k not in KINDS]
    if unknown or not names:
        raise ValueError(f"unknown kind(s) {', '.join(unknown) or '(none)'}; known: {', '.join(KINDS)}")
    return names


def write_atomic(out: Path, records: list[dict[str, Any]]) -> None:
    """Write JSONL to a temporary file beside ``out`` and rename it: never a half-written set."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for record in records:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def summary_json(report: SynthRagReport, out: Path) -> dict[str, Any]:
    """The ``--json`` summary: kept per kind, dropped per reason, what was read and what was not."""
    return {
        "out": str(out),
        "backend": report.backend,
        "requested": report.requested,
        "kept": report.kept,
        "kept_per_kind": report.kept_per_kind,
        "dropped": report.dropped,
        "candidates": report.candidates,
        "documents": len(report.documents),
        "passages": report.passages,
        "unreadable": [{"file": u.source, "reason": u.reason} for u in report.unreadable],
        "other_language": report.other_language,
        "llm_calls": report.llm_calls,
        "error": report.error,
    }


def summary_text(report: SynthRagReport, out: Path) -> str:
    """The human summary: kept per kind, dropped per reason, files left out, and why a set is short."""
    lines = [
        f"kept {report.kept} of {report.requested} requested ({report.backend}; "
        f"{len(report.documents)} document(s), {report.passages} passage(s))"
    ]
    for kind, n in sorted(report.kept_per_kind.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {n:6d} {kind}")
    if report.dropped:
        lines.append(f"  {sum(report.dropped.values())} candidate(s) dropped by the quality filters:")
        for reason, n in sorted(report.dropped.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {n:6d} {reason}: {DROP_REASONS.get(reason, reason)}")
    for u in report.unreadable:
        lines.append(f"  skipped {u.source}: {u.reason}")
    for src, lang in sorted(report.other_language.items()):
        lines.append(f"  skipped {src}: written in {lang}, not in the requested language")
    if report.error:
        lines.append(f"  stopped: {report.error}")
    if report.llm_calls:
        lines.append(f"  {report.llm_calls} LLM call(s)")
    if not report.complete and not report.error:
        per_kind = ", ".join(f"{k} {n}" for k, n in report.candidates.items())
        lines.append(
            f"  short by {report.requested - report.kept}: the documents support no more items after the "
            f"filters (candidates per kind: {per_kind}); add documents or lower --count"
        )
    lines.append(f"wrote {out}")
    return "\n".join(lines)


@dataclass
class LLMChoice:
    """``--backend`` and the LLM options of the command."""

    backend: str = "offline"
    base_url: str | None = None
    model: str | None = None
    no_cache: bool = False
    temperature: float = 0.7
    max_rounds: int = 20


def run_synth_rag(
    request: SynthRagRequest, *, out: Path, progress: bool, as_json: bool, llm: LLMChoice | None = None
) -> None:
    """Generate, write ``out`` atomically, print the summary; exit 1 when short of ``count``, 2 on bad input."""
    from bqas.judging.factory import LLMOverrides, llm_config
    from bqas.settings import check_language, get_settings

    llm = llm or LLMChoice()
    if llm.backend not in ("auto", "llm", "offline"):
        raise _fail(f"--backend: expected llm, offline or auto, got {llm.backend!r}")
    if llm.max_rounds < 1:
        raise _fail("--max-rounds must be at least 1")

    if not 1 <= request.count <= MAX_COUNT:
        raise _fail(f"--count must be between 1 and {MAX_COUNT}, got {request.count}")
    if not 0.0 < request.max_overlap <= 1.0:
        raise _fail("--max-overlap must be in (0, 1]")
    if not 0.0 < request.dedup_threshold <= 1.0:
        raise _fail("--threshold must be in (0, 1]")
    if request.max_bytes < 1:
        raise _fail("--max-file-mb must be positive")
    if request.persona is not None:
        from bqas.ragsynth.kinds import load_kinds

        known = sorted(load_kinds()["paraphrase"].personas or {})
        if request.persona not in known:
            raise _fail(f"--persona: unknown persona {request.persona!r}; known: {', '.join(known)}")
    if not request.docs:
        raise _fail("--docs: name a folder or files")
    missing = [str(p) for p in request.docs if not p.exists()]
    if missing:
        raise _fail(f"--docs: no such file or folder: {', '.join(missing)}")
    try:
        request.language = check_language(request.language or get_settings().language)
    except ValueError as exc:
        raise _fail(f"--language: {exc}") from None
    if out.exists() and out.is_dir():
        raise _fail(f"--out: {out} is a folder")
    config = None
    if llm.backend != "offline":
        overrides = LLMOverrides(base_url=llm.base_url, model=llm.model, cache=False if llm.no_cache else None)
        config = llm_config(get_settings(), overrides)
        if config is None and llm.backend == "llm":
            raise _fail(
                "backend llm needs an LLM: set BQAS_LLM_BASE_URL and BQAS_JUDGE_MODEL or pass --base-url/--model"
            )

    from bqas.offline.embeddings import default_embedder

    try:
        report = _with_progress(request, default_embedder(), progress, config, llm)
    except NoMaterialError as exc:
        raise _fail(str(exc)) from None
    write_atomic(out, report.records)
    if as_json:
        typer.echo(json.dumps(summary_json(report, out), ensure_ascii=False))
    else:
        typer.echo(summary_text(report, out))
    if not report.complete:
        raise typer.Exit(1)


def _with_progress(
    request: SynthRagRequest, embedder: Any, progress: bool, config: Any, llm: LLMChoice
) -> SynthRagReport:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from bqas.ragsynth.generate import synth_rag

    show = progress and sys.stderr.isatty()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, transient=True, disable=not show) as bar:
        task = bar.add_task("synth-rag", total=request.count)

        def advance(n: int) -> None:
            bar.advance(task, n)

        if config is None:
            return synth_rag(request, embedder, on_keep=advance)
        import asyncio

        from bqas.llm.client import LLMClient
        from bqas.ragsynth.llm_generator import synth_rag_llm

        config.temperature = llm.temperature
        client = LLMClient(config)

        async def go() -> SynthRagReport:
            try:
                return await synth_rag_llm(request, client, embedder, advance, max_rounds=llm.max_rounds)
            finally:
                await client.aclose()

        return asyncio.run(go())
