"""``bqas synth``, ``bqas classify`` and ``bqas eval-intents``: synthetic test inputs and intent evaluation.

Only typer and the standard library are imported here; the work happens in ``bqas.cli.synth_commands`` and
``bqas.cli.intents_commands``, imported inside the commands so that ``bqas --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

_BASE_URL = typer.Option("--base-url", help="OpenAI-compatible endpoint (env BQAS_LLM_BASE_URL).")
_MODEL = typer.Option("--model", help="Model name (env BQAS_JUDGE_MODEL).")
_LANGUAGE = typer.Option("--language", "-l", help="Prompt language: de, en or zh (default: BQAS_LANGUAGE or de).")
_EXAMPLES = typer.Option(
    "--examples", help="Labelled examples (JSONL with text and intent); default: the shipped 19 teacher intents."
)
_INTENTS = typer.Option("--intents", help="Restrict to these intents (YAML list or one name per line).")
_METHOD = typer.Option("--method", help="Offline classifier: logreg (default), centroid or knn.")
_K = typer.Option("--k", help="Neighbours that vote in the k-NN classifier.")
_CHAR_WEIGHT = typer.Option(
    "--char-weight",
    help="logreg: weight of the character n-gram model beside the embeddings (0: embeddings only; "
    "use 0 when the examples are in another language than the texts).",
)


def synth_cmd(
    intent: Annotated[str, typer.Option("--intent", "-i", help="Intent to generate inputs for, e.g. reminder.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to write.")],
    count: Annotated[int, typer.Option("--count", "-n", help="How many distinct inputs to keep.")] = 50,
    typos: Annotated[bool, typer.Option("--typos", help="Put realistic typing errors into the inputs.")] = False,
    dialect: Annotated[
        Optional[str],  # noqa: UP045 - typer needs Optional on 3.11
        typer.Option("--dialect", help="Regional forms: de-AT, de-CH or bavarian."),
    ] = None,
    patterns: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--patterns", help="Extra patterns: YAML like the shipped file, or one pattern per line."),
    ] = None,
    seed: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--seed", help="Random seed (the offline generator is deterministic with it)."),
    ] = None,
    backend: Annotated[
        str, typer.Option("--backend", help="llm, offline or auto (auto: the LLM when one is configured).")
    ] = "auto",
    threshold: Annotated[
        float, typer.Option("--threshold", help="Embedding cosine at or above which an input is a near-duplicate.")
    ] = 0.92,
    max_rounds: Annotated[
        int, typer.Option("--max-rounds", help="LLM requests at most (offline: ten times as many batches).")
    ] = 5,
    temperature: Annotated[float, typer.Option("--temperature", help="LLM sampling temperature.")] = 0.8,
    language: Annotated[Optional[str], _LANGUAGE] = None,  # noqa: UP045
    base_url: Annotated[Optional[str], _BASE_URL] = None,  # noqa: UP045
    model: Annotated[Optional[str], _MODEL] = None,  # noqa: UP045
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM cache.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show the progress bar.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Generate realistic test inputs for one intent (LLM or offline), validated and deduplicated.

    Example: bqas synth --intent reminder --count 50 --typos --dialect de-AT --seed 7 --backend offline
    --out synth/reminder_at.jsonl

    Exit 0 when COUNT inputs were kept, 1 when fewer (the file holds what was kept), 2 on a usage error.
    """
    from bqas.cli.synth_commands import run_synth
    from bqas.synth.generate import SynthRequest

    request = SynthRequest(
        intent=intent,
        count=count,
        typos=typos,
        dialect=dialect,
        patterns_file=patterns,
        seed=seed,
        threshold=threshold,
        max_rounds=max_rounds,
        language=language or "",
    )
    from bqas.cli.steps import steps

    # The bar counts kept inputs on a terminal; in a pipe or a CI log the step says its name instead.
    with steps(progress)(f"generating {count} inputs for intent {intent} ({backend})", bar=True):
        run_synth(
            request,
            backend=backend,
            out=out,
            base_url=base_url,
            model=model,
            no_cache=no_cache,
            temperature=temperature,
            progress=progress,
            as_json=as_json,
        )


def classify_cmd(
    text: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(metavar="TEXT", help="The text to classify (or use --file)."),
    ] = None,
    file: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--file", "-f", help="JSONL with one text per line (field --text-field, or user_input)."),
    ] = None,
    text_field: Annotated[str, typer.Option("--text-field", help="Field holding the text.")] = "text",
    backend: Annotated[
        str, typer.Option("--backend", help="offline (embeddings + examples) or llm (the intent judge).")
    ] = "offline",
    examples: Annotated[Optional[Path], _EXAMPLES] = None,  # noqa: UP045
    intents: Annotated[Optional[Path], _INTENTS] = None,  # noqa: UP045
    method: Annotated[str, _METHOD] = "logreg",
    k: Annotated[int, _K] = 5,
    char_weight: Annotated[float, _CHAR_WEIGHT] = 1.0,
    base_url: Annotated[Optional[str], _BASE_URL] = None,  # noqa: UP045
    model: Annotated[Optional[str], _MODEL] = None,  # noqa: UP045
    language: Annotated[Optional[str], _LANGUAGE] = None,  # noqa: UP045
) -> None:
    """Classify texts into intents; prints one JSON line per text.

    Example: bqas classify "Erinnere mich morgen an die Notenabgabe"

    Exit 0 on success, 2 on a usage or input error.
    """
    from bqas.cli.intents_commands import run_classify

    run_classify(text, file, text_field, backend, examples, intents, method, k, char_weight, base_url, model, language)


def eval_intents_cmd(
    dataset: Annotated[Path, typer.Argument(metavar="DATASET", help="Labelled JSONL (text and intent fields).")],
    text_field: Annotated[str, typer.Option("--text-field", help="Field holding the text.")] = "text",
    label_field: Annotated[str, typer.Option("--label-field", help="Field holding the true intent.")] = "intent",
    examples: Annotated[Optional[Path], _EXAMPLES] = None,  # noqa: UP045
    intents: Annotated[Optional[Path], _INTENTS] = None,  # noqa: UP045
    backend: Annotated[
        str, typer.Option("--backend", help="offline (embeddings + examples) or llm (the intent judge).")
    ] = "offline",
    method: Annotated[str, _METHOD] = "logreg",
    k: Annotated[int, _K] = 5,
    char_weight: Annotated[float, _CHAR_WEIGHT] = 1.0,
    html: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--html", help="Write a self-contained HTML report (no scripts, no network)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
    min_accuracy: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option("--min-accuracy", help="Exit 1 when accuracy is below this."),
    ] = None,
    min_macro_f1: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option("--min-macro-f1", help="Exit 1 when macro-F1 is below this."),
    ] = None,
    base_url: Annotated[Optional[str], _BASE_URL] = None,  # noqa: UP045
    model: Annotated[Optional[str], _MODEL] = None,  # noqa: UP045
    language: Annotated[Optional[str], _LANGUAGE] = None,  # noqa: UP045
) -> None:
    """Evaluate intent classification on a labelled set: accuracy, macro-F1, per intent, confusion matrix.

    Example: bqas eval-intents synth/reminder_at.jsonl --label-field expected_intent --html intents.html

    Exit 0 on success, 1 when --min-accuracy or --min-macro-f1 is missed, 2 on a usage or input error.
    """
    from bqas.cli.intents_commands import run_eval

    run_eval(
        dataset,
        text_field,
        label_field,
        examples,
        intents,
        backend,
        method,
        k,
        char_weight,
        html,
        as_json,
        min_accuracy,
        min_macro_f1,
        base_url,
        model,
        language,
    )


def register(app: typer.Typer) -> None:
    """Add ``synth``, ``classify`` and ``eval-intents`` to the ``bqas`` app."""
    app.command("synth")(synth_cmd)
    app.command("classify")(classify_cmd)
    app.command("eval-intents")(eval_intents_cmd)
