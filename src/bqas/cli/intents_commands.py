"""Implementation of ``bqas classify`` and ``bqas eval-intents`` (Typer commands in ``bqas.cli.synth``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from bqas.intents.examples import DataError, Labelled, default_examples_path, load_label_list, load_labelled
from bqas.jsonl import iter_json_objects

if TYPE_CHECKING:
    from bqas.cli.steps import StepHook


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def _offline_classifier(
    examples: Path | None,
    intents: Path | None,
    method: str,
    k: int,
    char_weight: float,
    on_progress: StepHook | None = None,
) -> Any:
    from bqas.intents.classifier import EmbeddingIntentClassifier

    source = examples or default_examples_path()
    labelled = load_labelled(source)
    labels = load_label_list(intents) if intents is not None else None
    try:
        from bqas.settings import get_settings

        return EmbeddingIntentClassifier(
            labelled,
            method=method,  # type: ignore[arg-type]
            k=k,
            char_weight=char_weight,
            labels=labels,
            cache_dir=get_settings().cache_dir,
            on_progress=on_progress,
        )
    except ValueError as exc:
        raise DataError(f"{source}: {exc}") from None


def _predict(
    texts: list[str],
    backend: str,
    examples: Path | None,
    intents: Path | None,
    method: str,
    k: int,
    char_weight: float,
    base_url: str | None,
    model: str | None,
    language: str | None,
) -> list[dict[str, Any]]:
    """Predictions as dicts: intent (None when unscored), score or confidence, backend, reason."""
    if backend == "offline":
        from bqas.cli.steps import step_progress

        # Bars on a terminal; in a pipe or a CI log each step that takes a while names itself on one line.
        with step_progress() as on_progress:
            clf = _offline_classifier(examples, intents, method, k, char_weight, on_progress)
            predictions = clf.predict(texts, on_progress)
        return [
            {"intent": p.label, "score": round(p.score, 4), "nearest": round(p.nearest, 4), "backend": "offline"}
            for p in predictions
        ]
    if backend != "llm":
        raise DataError(f"--backend: expected offline or llm, got {backend!r}")
    if examples is not None or intents is not None:
        raise DataError("--examples/--intents apply to the offline classifier; the LLM judge has the 19 intents")
    from bqas.cli.steps import step_progress
    from bqas.intents.llm import classify_with_judge
    from bqas.judging.factory import LLMOverrides, build_engine
    from bqas.settings import get_settings

    engine = build_engine(get_settings(), backend="llm", language=language, overrides=LLMOverrides(base_url, model))
    with step_progress() as on_progress:
        preds = asyncio.run(classify_with_judge(engine, texts, language=language, on_progress=on_progress))
    return [
        {"intent": p.label, "confidence": p.confidence, "backend": "llm"}
        | ({"unscored": p.reason} if p.label is None else {})
        for p in preds
    ]


def run_classify(
    text: str | None,
    file: Path | None,
    text_field: str,
    backend: str,
    examples: Path | None,
    intents: Path | None,
    method: str,
    k: int,
    char_weight: float,
    base_url: str | None,
    model: str | None,
    language: str | None,
) -> None:
    """Print one JSON line per text with the predicted intent."""
    if (text is None) == (file is None):
        raise _fail("give either TEXT or --file JSONL (not both)")
    try:
        if file is not None:
            rows = _read_texts(file, text_field)
        else:
            assert text is not None
            from bqas.untrusted import surrogate_problem

            problem = surrogate_problem(text)
            if problem is not None:  # e.g. bytes of the command line that are not UTF-8
                raise DataError(f"TEXT: {problem}")
            rows = [{"text": text}]
        preds = _predict(
            [r["text"] for r in rows], backend, examples, intents, method, k, char_weight, base_url, model, language
        )
    except (DataError, ValueError) as exc:
        raise _fail(str(exc)) from None
    for row, pred in zip(rows, preds, strict=True):
        typer.echo(json.dumps({**row, **pred}, ensure_ascii=False))


def _read_texts(path: Path, text_field: str) -> list[dict[str, Any]]:
    """Texts (with id when present) from JSON Lines; ``user_input`` is accepted when ``text`` is absent."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror}") from None
    rows: list[dict[str, Any]] = []
    for line in iter_json_objects(lines):
        if line.value is None:
            raise DataError(line.error(str(path)))
        obj = line.value
        value = obj.get(text_field, obj.get("user_input") if text_field == "text" else None)
        if not isinstance(value, str) or not value.strip():
            raise DataError(f"{path}:{line.line}: field {text_field!r}: missing or empty text")
        row: dict[str, Any] = {"text": value}
        if obj.get("id") is not None:
            row = {"id": obj["id"], **row}
        rows.append(row)
    if not rows:
        raise DataError(f"{path}: no texts")
    return rows


def run_eval(
    dataset: Path,
    text_field: str,
    label_field: str,
    examples: Path | None,
    intents: Path | None,
    backend: str,
    method: str,
    k: int,
    char_weight: float,
    html: Path | None,
    as_json: bool,
    min_accuracy: float | None,
    min_macro_f1: float | None,
    base_url: str | None,
    model: str | None,
    language: str | None,
) -> None:
    """Classify a labelled dataset and report the metrics; exit 1 when a minimum is missed."""
    from bqas.intents.evaluate import evaluate_predictions, format_text
    from bqas.intents.html import render_html

    try:
        data: list[Labelled] = load_labelled(dataset, text_field=text_field, label_field=label_field)
        preds = _predict(
            [d.text for d in data], backend, examples, intents, method, k, char_weight, base_url, model, language
        )
        pairs = [(d.label, p["intent"]) for d, p in zip(data, preds, strict=True) if p["intent"] is not None]
        unscored = len(data) - len(pairs)
        ev = evaluate_predictions([t for t, _ in pairs], [p for _, p in pairs], unscored=unscored)
    except (DataError, ValueError) as exc:
        raise _fail(str(exc)) from None
    ev.meta = {
        "dataset": str(dataset),
        "backend": backend,
        **(
            {"examples": str(examples or default_examples_path()), "method": method, "k": k, "char_weight": char_weight}
            if backend == "offline"
            else {}
        ),
    }
    if html is not None:
        html.parent.mkdir(parents=True, exist_ok=True)
        html.write_text(render_html(ev, title=f"Intent classification: {dataset.name}"), encoding="utf-8")
    typer.echo(json.dumps(ev.to_dict(), ensure_ascii=False) if as_json else format_text(ev))
    missed = [
        f"{name} {value:.3f} < {limit}"
        for name, value, limit in (("accuracy", ev.accuracy, min_accuracy), ("macro-F1", ev.macro_f1, min_macro_f1))
        if limit is not None and value < limit
    ]
    if missed:
        typer.echo("target missed: " + "; ".join(missed), err=True)
        raise typer.Exit(1)
