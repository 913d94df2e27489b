"""``bqas`` — the command line of BQAS.

Every command imports what it needs inside its function, and the group builds a command only when it
is used (:mod:`bqas.cli.lazy`), so ``bqas --help`` loads and builds nothing.
Exit codes: 0 success, 1 thresholds or targets missed, 2 usage, input or configuration error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from bqas.cli.lazy import LazyGroup, new_typer


def _plain_usage_names() -> None:
    """Usage lines name arguments as ``SOURCE`` / ``[SCENARIO]`` (POSIX style).

    Typer 0.29 writes required arguments as ``{source}``, which reads like a template placeholder;
    the commands give each argument an upper-case ``metavar`` and this keeps the brackets conventional.
    """
    from typer.core import TyperArgument

    def usage_name(self: TyperArgument) -> str:
        name = self.display_name_raw
        if not self.required:
            name = f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    if hasattr(TyperArgument, "_usage_display_name"):
        TyperArgument._usage_display_name = usage_name  # type: ignore[method-assign]


_plain_usage_names()

app = new_typer(
    cls=LazyGroup,
    name="bqas",
    help=(
        "BQAS — quality assurance for AI assistants.\n\n"
        "Grade responses with judges (offline by default, or any OpenAI-compatible LLM), run YAML test "
        "scenarios with reports and CI gates, and calibrate judges against human labels."
    ),
    no_args_is_help=True,
)


@app.callback()
def _group() -> None:
    # No options of its own; Typer builds a group (not a single command) only for an app with a callback.
    # Every command may write to the store or the logs: with BQAS_REDACT_PII on they mask PII with the
    # masker bqas.privacy installs (bqas.redaction; the store never imports the PII detector itself).
    from bqas.privacy import install

    install()


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
GgufOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--llm-gguf",
        metavar="PATH",
        help="Judge with this local GGUF model in an embedded llama.cpp engine on 127.0.0.1 instead of a "
        "server (pip install 'bqas[local]'; env BQAS_LLM_GGUF; see docs/llm.md).",
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


def score_cmd(
    source: Annotated[
        str,
        typer.Argument(
            metavar="SOURCE",
            help="A JSON file (one object, or JSON Lines), a .csv file (header row; JSON cells for lists), or - for stdin (JSON).",
        ),
    ],
    judge: Annotated[
        str, typer.Option("--judge", "-j", help="Judge to apply, e.g. voice (see `bqas judges`).")
    ] = "voice",
    backend: BackendOpt = "auto",
    language: LanguageOpt = None,
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    structured_output: StructuredOpt = None,
    llm_gguf: GgufOpt = None,
    no_cache: NoCacheOpt = False,
    policy: PolicyOpt = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Samples judged at once (at least 1).")] = 8,
    max_unscored: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option("--max-unscored", help="Unscored results allowed: a count, or a share below 1 (default 0)."),
    ] = None,
) -> None:
    """Score one sample or a JSON Lines file and print one result JSON per line.

    Example: echo '{"user_input": "Erinnere mich morgen an die Konferenz", "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen um 8 Uhr.", "expected_intent": "reminder"}' | bqas score -j voice -

    Exit 0 when every sample was scored, 1 when more results are unscored than --max-unscored allows
    (default 0), 2 on a usage error or bad input (the message names line and field). The same rule as
    `bqas run` (thresholds) and `bqas calibrate` (targets).
    """
    from bqas.cli.score import run_score

    run_score(
        source,
        judge,
        backend,
        language,
        base_url,
        model,
        structured_output,
        no_cache,
        policy,
        concurrency,
        max_unscored,
        llm_gguf=llm_gguf,
    )


def run_cmd(
    scenario: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Argument(metavar="SCENARIO", help="Scenario YAML file (omit with --resume)."),
    ] = None,
    out: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--out", "-o", help="Folder for results.jsonl, junit.xml, report.html (default runs/<run id>/)."),
    ] = None,
    resume: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--resume", help="Continue a run that was stopped or killed; finished samples are kept."),
    ] = None,
    retry_target_errors: Annotated[
        bool,
        typer.Option(
            "--retry-target-errors",
            help="With --resume: ask the target again for the samples (conversation turns) whose result is a "
            "target_error, and replace those results; other results are kept (without it target errors count as done).",
        ),
    ] = False,
    backend: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--backend", help="Override the scenario's backend: offline, llm or auto."),
    ] = None,
    language: LanguageOpt = None,
    concurrency: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--concurrency", "-c", help="Samples judged at once, at least 1 (default: the scenario's)."),
    ] = None,
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    structured_output: StructuredOpt = None,
    llm_gguf: GgufOpt = None,
    no_cache: NoCacheOpt = False,
    baseline: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--baseline", help="Run id to compare against in the HTML report."),
    ] = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show the progress bar.")] = True,
    profile: Annotated[
        Optional[list[Path]],  # noqa: UP045
        typer.Option(
            "--profile",
            help="Calibration profile (bqas calibrate fit) of a judge: decide or escalate each result (repeatable).",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help=(
                "Count samples, LLM calls, prompt tokens (estimated) and cost; send and store nothing. "
                "Exit 2 on what the real run would refuse (a pre-flight check for CI)."
            ),
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="With --dry-run: print the estimate as JSON.")] = False,
    ray: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--ray",
            metavar="auto|local|ADDRESS",
            help="Judge on a Ray cluster (pip install 'bqas[ray]'): auto joins RAY_ADDRESS or a `ray start` "
            "cluster of this host (else starts one), local starts one here, ADDRESS joins that cluster.",
        ),
    ] = None,
    ray_workers: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--ray-workers", help="Judge actors on the cluster (default: its CPUs, at most --concurrency)."),
    ] = None,
    ray_placement_timeout: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--ray-placement-timeout",
            metavar="SECONDS",
            help="How long a judge actor may wait for a free CPU on the cluster (a replacement for one on a "
            "lost node too); then the run goes on without it (default: the scenario's ray.placement_timeout, 60).",
        ),
    ] = None,
    repeats: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--repeats",
            help="Judge each sample N times (default: the scenario's `repeats`, 1): majority verdict, spread, "
            "flaky samples flagged.",
        ),
    ] = None,
    target: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--target",
            metavar="FILE|YAML",
            help="The assistant under test, instead of the scenario's target: a YAML file with a target: block, "
            "or inline YAML such as '{type: openai, base_url: http://127.0.0.1:8000/v1, model: m}' (docs/targets.md).",
        ),
    ] = None,
    reuse_target_replies: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--reuse-target-replies",
            metavar="RUN_ID",
            help="Judge the assistant's stored replies of that run again (new judges or profile) without asking it.",
        ),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option("--verbose", "-v", help="List each new error category of the review loop, not only their count."),
    ] = False,
    allow_dataset_outside: Annotated[
        bool,
        typer.Option(
            "--allow-dataset-outside",
            help="Read a dataset that lies (symlinks followed) outside the scenario's folder and the working "
            "directory; refused by default, since scenarios may come from pull requests "
            "(env BQAS_ALLOW_DATASET_OUTSIDE).",
        ),
    ] = False,
    accept_unfit_judge: Annotated[
        bool,
        typer.Option(
            "--accept-unfit-judge",
            help="Run even when the LLM judge fails its known-answer check (`bqas judge-check`); refused by default.",
        ),
    ] = False,
) -> None:
    """Run a scenario: grade every sample, store results, print a summary, write reports.

    With a target (the scenario's target: or --target) every sample without a stored answer is first sent
    to the assistant under test, and its reply is judged (docs/targets.md).

    Example: bqas run scenarios/voice_de.yaml --out runs/today

    Exit 0 when all thresholds are met, 1 when one is missed (an unscored result misses max_unscored,
    an invalid sample max_invalid, a target error max_target_errors, a judge error (a lost Ray node)
    max_judge_errors, all default 0), 2 on a usage, configuration or input error (also: no valid sample,
    the run failed, or an LLM judge unfit on its known-answer check: docs/judge-check.md), 4 when the store or the disk cannot be written (resume the run when fixed).
    A run that dies can be continued: bqas run --resume RUN_ID
    (add --retry-target-errors to ask the assistant again where it gave no usable answer).
    """
    if retry_target_errors and resume is None:
        typer.echo(
            "error: --retry-target-errors: give --resume RUN_ID (the run whose target errors to retry)", err=True
        )
        raise typer.Exit(2)
    if dry_run:
        from bqas.cli.dry_run import dry_run as estimate
        from bqas.judging.factory import LLMOverrides

        overrides = LLMOverrides(
            base_url=base_url, model=model, structured_output=structured_output, cache=False, gguf=llm_gguf
        )
        estimate(scenario, resume, backend, language, overrides, as_json, repeats, target, allow_dataset_outside)
        return
    from bqas.cli.run import run_scenario

    run_scenario(
        scenario,
        out,
        resume,
        backend,
        language,
        concurrency,
        base_url,
        model,
        structured_output,
        no_cache,
        baseline,
        progress,
        profile or [],
        ray=ray,
        ray_workers=ray_workers,
        ray_placement_timeout=ray_placement_timeout,
        repeats=repeats,
        llm_gguf=llm_gguf,
        target=target,
        reuse_target_replies=reuse_target_replies,
        verbose=verbose,
        accept_unfit_judge=accept_unfit_judge,
        allow_dataset_outside=allow_dataset_outside,
        retry_target_errors=retry_target_errors,
    )


def runs_cmd(
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many runs to list.")] = 30,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="List the new error categories of these runs one by one.")
    ] = False,
) -> None:
    """List stored runs, newest first.

    Samples, pass rate, whether the gates were met, when.

    Fits 80 columns; a wider terminal also shows the verdict counts (`bqas show RUN` has everything)."""
    from bqas.cli.runs import list_runs

    list_runs(limit, as_json, verbose)


def show_cmd(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="Run id (or a unique prefix).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    errors: Annotated[
        bool,
        typer.Option(
            "--errors",
            help="Also list every target error, unscored result, judging error and invalid sample with its reason.",
        ),
    ] = False,
) -> None:
    """Print the summary of one stored run."""
    from bqas.cli.show import show_run

    show_run(run_id, as_json, errors)


def compare_cmd(
    run_a: Annotated[str, typer.Argument(metavar="RUN_A", help="Baseline run id.")],
    run_b: Annotated[str, typer.Argument(metavar="RUN_B", help="Candidate run id.")],
    max_drop: Annotated[
        float, typer.Option("--max-drop", help="Fail (exit 1) when the mean composite drops by more than this.")
    ] = 2.0,
    max_worse: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--max-worse", help="Fail when more samples than this get a worse verdict."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Exit 2 when the runs judged different data or with different prompts."),
    ] = False,
) -> None:
    """Compare two runs: per-dimension mean differences with bootstrap CIs and changed verdicts.

    Warns when the runs did not judge the same data or the same judge configuration (content hashes);
    with --strict that is an error (exit 2). Runs with no sample in common (by sample id and judge) are
    a usage error (exit 2): there is nothing to compare.

    Example: bqas compare r-20261128-0900-ab12 r-20261129-0900-cd34 --max-drop 1.5
    """
    from bqas.cli.compare import compare

    compare(run_a, run_b, max_drop, max_worse, as_json, strict)


def register(app: typer.Typer) -> None:
    """Add ``judges``, ``score``, ``run``, ``runs``, ``show`` and ``compare`` to the app.

    The other commands live in their own modules, each with its ``register(app)``; the ``bqas`` group
    (:mod:`bqas.cli.lazy`) imports a module and builds a command only when that command is used."""
    app.command("judges")(judges_cmd)
    app.command("score")(score_cmd)
    app.command("run")(run_cmd)
    app.command("runs")(runs_cmd)
    app.command("show")(show_cmd)
    app.command("compare")(compare_cmd)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
