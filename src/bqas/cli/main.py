"""``bqas`` — the command line of BQAS.

Every command imports what it needs inside its function, so ``bqas --help`` loads nothing heavy.
Exit codes: 0 success, 1 thresholds or targets missed, 2 usage, input or configuration error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(
    name="bqas",
    help=(
        "BQAS — quality assurance for AI assistants.\n\n"
        "Grade responses with judges (offline by default, or any OpenAI-compatible LLM), run YAML test "
        "scenarios with reports and CI gates, and calibrate judges against human labels."
    ),
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)

BackendOpt = Annotated[
    str,
    typer.Option(
        "--backend",
        help="Who judges: 'offline' (rules + embeddings, no LLM), 'llm' (the LLM for every dimension), "
        "'auto' (offline when no LLM is configured, both tiers when one is).",
    ),
]
LanguageOpt = Annotated[
    Optional[str],  # noqa: UP045 - typer needs Optional on 3.11
    typer.Option("--language", "-l", help="Prompt language: de, en or zh (default: BQAS_LANGUAGE or de)."),
]
BaseUrlOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--base-url",
        help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (env BQAS_LLM_BASE_URL).",
    ),
]
ModelOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--model", help="Judge model name (env BQAS_JUDGE_MODEL)."),
]
StructuredOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--structured-output",
        help="auto | json_schema | json_object | prompt (env BQAS_STRUCTURED_OUTPUT; auto tries them in order).",
    ),
]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")]
PolicyOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--policy", help="YAML file overriding weights and thresholds (see bqas/config/policy.yaml)."),
]


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print an error to stderr and return the Exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


@app.command("judges")
def judges_cmd(
    language: LanguageOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    show_prompt: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--prompt", help="Print the prompt template of this judge in the chosen language."),
    ] = None,
) -> None:
    """List the judges with their input fields and output dimensions.

    Example: bqas judges --language zh
    """
    from bqas.cli.judges import list_judges

    list_judges(language, as_json, show_prompt)


@app.command("score")
def score_cmd(
    source: Annotated[str, typer.Argument(help="A JSON file (one object, or JSON Lines), or - for stdin.")],
    judge: Annotated[
        str, typer.Option("--judge", "-j", help="Judge to apply, e.g. voice (see `bqas judges`).")
    ] = "voice",
    backend: BackendOpt = "auto",
    language: LanguageOpt = None,
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    structured_output: StructuredOpt = None,
    no_cache: NoCacheOpt = False,
    policy: PolicyOpt = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Samples judged at once.")] = 8,
) -> None:
    """Score one sample or a JSON Lines file and print one result JSON per line.

    Example: echo '{"user_input": "Erinnere mich morgen an die Konferenz", "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen um 8 Uhr.", "expected_intent": "reminder"}' | bqas score -j voice -

    Exit 0 when every sample was judged, 2 on bad input (the message names line and field).
    """
    from bqas.cli.score import run_score

    run_score(source, judge, backend, language, base_url, model, structured_output, no_cache, policy, concurrency)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
