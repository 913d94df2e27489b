"""``bqas score``: judge samples from a file or stdin and print result records as JSON Lines."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import typer

from bqas.cli.llm_options import llm_overrides
from bqas.jsonl import iter_json_objects
from bqas.judging.engine import InvalidSample, JudgeEngine
from bqas.judging.factory import build_engine
from bqas.settings import get_settings
from bqas.untrusted import FILE_ERRORS, UntrustedValueError, loads


def read_samples(source: str) -> list[tuple[int, dict[str, Any]]]:
    """Samples with their line numbers from a JSON object, JSON Lines or (a ``.csv`` file) CSV, read as a
    scenario's dataset is; ValueError names the line (and field)."""
    name = "<stdin>" if source == "-" else source
    if source != "-" and source.lower().endswith(".csv"):
        return _read_csv(Path(source))
    try:
        # Bytes that are not UTF-8 are kept as lone surrogates, which bqas.untrusted then reports
        # with their line and field (rather than a decode error for the whole input).
        raw = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as exc:
        raise ValueError(f"{name}: cannot read: {exc.strerror}") from None
    text = raw.decode("utf-8-sig", errors=FILE_ERRORS)
    stripped = text.strip()
    if not stripped:
        raise ValueError(f"{name}: empty input")
    try:
        # One object (possibly over several lines) is sample 1. When the text is JSON Lines, parsing
        # stops at the second line with "Extra data" and the line reader below names the bad line.
        whole = loads(stripped)
    except json.JSONDecodeError:
        whole = None
    except UntrustedValueError as exc:  # in the first (or only) object: line 1
        raise ValueError(f"{name}:1: {exc}") from None
    if isinstance(whole, dict):
        return [(1, whole)]
    if isinstance(whole, list):
        raise ValueError(f"{name}: a JSON array is not accepted; give one object or JSON Lines")
    samples = []
    # Split on \n only: U+2028, U+0085 and other line breaks str.splitlines() knows are data in JSON.
    for row in iter_json_objects(text.split("\n")):
        if row.value is None:
            raise ValueError(row.error(name))
        samples.append((row.line, row.value))
    return samples


def _read_csv(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """A CSV file's rows (header on line 1, delimiter detected, JSON cells parsed) as for ``bqas run``;
    the first bad row is a ValueError naming its line."""
    from bqas.runner.dataset import iter_csv

    if not path.is_file():
        raise ValueError(f"{path}: cannot read: no such file")
    samples = []
    for item in iter_csv(path):
        if item.error is not None:
            raise ValueError(item.error)
        samples.append((item.line, item.data))
    if not samples:
        raise ValueError(f"{path}: no rows below the header")
    return samples


async def _score_all(
    engine: JudgeEngine, judge: str, samples: list[tuple[int, dict[str, Any]]], concurrency: int, name: str
) -> list[dict[str, Any]]:
    sem = asyncio.Semaphore(max(1, concurrency))

    async def one(lineno: int, sample: dict[str, Any]) -> dict[str, Any]:
        async with sem:
            rid = str(sample.get("response_id") or sample.get("id") or f"line-{lineno}")
            try:
                result = await engine.evaluate(judge, sample, response_id=rid, language=sample.get("language"))
            except InvalidSample as exc:
                raise ValueError(f"{name}:{lineno}: field {exc}") from None
            return result.to_record()

    try:
        return list(await asyncio.gather(*(one(n, s) for n, s in samples)))
    finally:
        if engine.llm is not None:
            await engine.llm.aclose()


def run_score(
    source: str,
    judge: str,
    backend: str,
    language: str | None,
    base_url: str | None,
    model: str | None,
    structured_output: str | None,
    no_cache: bool,
    policy: Path | None,
    concurrency: int,
    max_unscored: float | None = None,
    llm_gguf: Path | None = None,
) -> None:
    """Implementation of ``bqas score`` (exit codes: see :func:`bqas.runner.summary.unscored_gate`)."""
    if backend not in ("auto", "llm", "offline"):
        typer.echo(f"error: --backend: expected auto, llm or offline, got {backend!r}", err=True)
        raise typer.Exit(2)
    if concurrency < 1:
        typer.echo(f"error: --concurrency: expected at least 1, got {concurrency}", err=True)
        raise typer.Exit(2)
    if max_unscored is not None and (max_unscored < 0 or (max_unscored >= 1 and not max_unscored.is_integer())):
        typer.echo(f"error: --max-unscored: expected a count or a share below 1, got {max_unscored:g}", err=True)
        raise typer.Exit(2)
    name = "<stdin>" if source == "-" else source
    try:
        samples = read_samples(source)
        from bqas.cli.steps import slow_step
        from bqas.runner.request import loading_step

        overrides = llm_overrides(base_url, model, structured_output, no_cache, llm_gguf)
        with slow_step(loading_step(get_settings(), backend, overrides)):
            engine = build_engine(
                get_settings(),
                backend=backend,  # type: ignore[arg-type]
                language=language,
                overrides=overrides,
                policy_file=policy,
            )
        engine.registry.get(judge)
        engine.start_loading(samples=len(samples))  # many samples: worker processes (BQAS_OFFLINE_POOL=auto)

        with slow_step(f"judging {len(samples)} sample(s) with {judge}"):
            records = asyncio.run(_score_all(engine, judge, samples, concurrency, name))
    except (ValueError, KeyError) as exc:
        typer.echo(f"error: {str(exc).strip(chr(34))}", err=True)
        raise typer.Exit(2) from None
    if engine.offline.loaded:
        typer.echo(
            f"loaded the offline models in {engine.offline.load_seconds:.1f} s before judging"
            " (not counted in latency_ms)",
            err=True,
        )
    local = engine.llm.config.engine if engine.llm is not None else None
    if local is not None:
        typer.echo(
            f"embedded llama.cpp engine: {local['model']} started in {local['start_seconds']:.1f} s"
            f" ({local['threads']} threads, {local['slots']} slots, n_ctx {local['n_ctx']})",
            err=True,
        )
    for record in records:
        typer.echo(json.dumps(record, ensure_ascii=False))
    from bqas.runner.summary import unscored_gate

    unscored = sum(1 for r in records if r.get("status") != "scored")
    gate = unscored_gate(unscored, len(records), max_unscored)
    if not gate.passed:
        typer.echo(
            f"{unscored} of {len(records)} results unscored (allowed: {gate.expected:g}; see --max-unscored)", err=True
        )
        raise typer.Exit(1)
