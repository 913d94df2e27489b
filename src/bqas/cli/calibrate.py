"""``bqas calibrate``: measure a judge against human labels, or two judge configurations against each other.

Heavy imports (the engine, scikit-learn, scipy, the store) happen inside the command, so that
``bqas --help`` stays fast.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

if TYPE_CHECKING:
    from bqas.calibration.gold import GoldSet
    from bqas.calibration.targets import TargetResult


def register(app: typer.Typer) -> None:
    """Add ``bqas calibrate`` (measure; ``--profile`` checks a profile) and ``bqas calibrate fit`` to the app."""
    from bqas.cli.calibrate_fit import fit_cmd

    group = typer.Typer(no_args_is_help=False)
    group.callback(invoke_without_command=True)(calibrate_cmd)
    group.command("fit")(fit_cmd)
    app.add_typer(group, name="calibrate")


def calibrate_cmd(
    ctx: typer.Context,
    gold: Annotated[
        Optional[Path],  # noqa: UP045 - optional here so that `bqas calibrate fit` needs no --gold of its own
        typer.Option(
            "--gold",
            "-g",
            help="Gold JSON Lines (samples with human labels in 'expected'), or store:TENANT for the "
            "tenant's reviewed items in the store.",
        ),
    ] = None,
    judge: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--judge", "-j", help="Judge to calibrate, e.g. rag_hallucination."),
    ] = None,
    backend: Annotated[
        str, typer.Option("--backend", help="offline, llm or auto (auto: offline when no LLM is configured).")
    ] = "auto",
    language: Annotated[
        Optional[str],  # noqa: UP045 - typer needs Optional on 3.11
        typer.Option("--language", "-l", help="Language of samples without one: de, en or zh (default BQAS_LANGUAGE)."),
    ] = None,
    maps: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--map",
            help="Copy a gold column onto an input field or a label: SRC=DST, e.g. question=query or "
            "human_score=expected.grounding_score (repeatable; SRC may be a dotted path).",
        ),
    ] = None,
    targets_file: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--targets", help="YAML overriding the targets (fpr_max, fnr_max, agreement_min, ...)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the calibration as JSON.")] = False,
    out: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--out", "-o", help="Folder for calibration.json and calibration.html."),
    ] = None,
    limit: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--limit", "-n", min=1, help="Use only the first N usable samples."),
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Samples judged at once.")] = 8,
    compare: Annotated[
        Optional[tuple[str, str]],  # noqa: UP045
        typer.Option(
            "--compare",
            help="Two configurations to compare: offline, llm, auto, llm:MODEL or prompt:DIR (a judges folder).",
        ),
    ] = None,
    base_url: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--base-url", help="OpenAI-compatible endpoint (env BQAS_LLM_BASE_URL)."),
    ] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="Judge model (env BQAS_JUDGE_MODEL).")] = None,  # noqa: UP045
    structured_output: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--structured-output", help="auto | json_schema | json_object | prompt."),
    ] = None,
    llm_gguf: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--llm-gguf",
            metavar="PATH",
            help="Judge with this local GGUF model in an embedded llama.cpp engine (pip install 'bqas[local]'; "
            "env BQAS_LLM_GGUF).",
        ),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")] = False,
    policy: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--policy", help="YAML file overriding weights and thresholds."),
    ] = None,
    profile: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--profile", help="Check this calibration profile on the gold labels (realised FNR/FPR)."),
    ] = None,
    allow_undecided: Annotated[
        bool,
        typer.Option(
            "--allow-not-enough-evidence",
            help="Exit 0 when no target is missed but some lack evidence (default: exit 3, which fails a CI gate).",
        ),
    ] = False,
) -> None:
    """Run a judge on a gold-labelled JSONL and report how well it agrees with people.

    Example: bqas calibrate --gold gold.jsonl --judge rag_hallucination --backend offline --out calib/
    (or --gold store:acme: the reviewed items of tenant acme, straight from the store)

    Reports the verdict confusion matrix, FPR and FNR (positive = people reject the response), accuracy,
    agreement, Cohen's κ, Spearman/Pearson per numeric dimension, gate agreement, abstention and latency,
    overall and per language. With --compare A B it measures inter-judge agreement (agreement, κ,
    Krippendorff's α) between two configurations, e.g. --compare offline llm:qwen2.5-7b-instruct.

    With --profile P it checks a calibration profile on these labels instead: realised FNR/FPR on the
    decided items, coverage per tier, and whether each bound held, judged on 90 % Clopper-Pearson
    intervals (held / not held / not enough evidence). `bqas calibrate fit` fits a profile.

    Every target is judged on its figure's 95 % confidence interval: met (the whole interval meets it),
    missed (the whole interval misses it) or not enough evidence (it straddles the target; the output says
    about how many more labelled samples would decide it).

    Exit 0 when every target is met, 1 when one is missed (abstention_max defaults to 0: an unscored
    sample misses it, as in `bqas score` and `bqas run`), 3 when none is missed but some lack evidence
    (0 with --allow-not-enough-evidence), 2 on a usage or input error.
    """
    from bqas.cli.llm_options import llm_overrides

    if ctx.invoked_subcommand is not None:
        return
    if gold is None or judge is None:
        raise _fail("--gold and --judge are needed (or a subcommand: bqas calibrate fit --help)")
    overrides = llm_overrides(base_url, model, structured_output, no_cache, llm_gguf)
    if profile is not None:
        from bqas.cli.calibrate_fit import check_profile_run

        check_profile_run(
            profile, gold, judge, backend, language, maps, limit, concurrency, overrides, as_json, allow_undecided
        )
        return
    pair = tuple(compare) if compare and all(compare) else None
    run_calibration(
        gold,
        judge,
        backend,
        language,
        maps,
        targets_file,
        as_json,
        out,
        limit,
        concurrency,
        pair,
        overrides,
        policy,
        allow_undecided,
    )


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def run_calibration(
    gold_path: Path,
    judge: str,
    backend: str,
    language: str | None,
    maps: list[str] | None,
    targets_file: Path | None,
    as_json: bool,
    out: Path | None,
    limit: int | None,
    concurrency: int,
    compare: tuple[str, ...] | None,
    overrides: Any,
    policy: Path | None,
    allow_undecided: bool = False,
) -> None:
    """Implementation of ``bqas calibrate``."""
    from bqas.calibration.evaluate import EngineRequest, JudgeConfig, run_config
    from bqas.calibration.gold import GoldProblem, parse_maps
    from bqas.calibration.report import DEFINITION, calibration_report, compare_report
    from bqas.calibration.targets import MISSED, UNDECIDED, check_agreement, check_judge, load_targets, outcome
    from bqas.cli.calibrate_fit import load_gold_any
    from bqas.cli.steps import step
    from bqas.judgment.spec import JudgeFileError, JudgeRegistry, default_registry
    from bqas.settings import check_language, get_settings

    settings = get_settings()
    if backend not in ("auto", "llm", "offline"):
        raise _fail(f"--backend: expected auto, llm or offline, got {backend!r}")
    try:
        default_language = check_language(language or settings.language, field="--language")
        targets = load_targets(targets_file)
        parse_maps(maps)  # a bad --map is a usage error before anything else is read
        registry = JudgeRegistry.load(None, policy) if policy else default_registry()
        spec = registry.get(judge)
        configs = (
            [JudgeConfig.parse(compare[0], backend), JudgeConfig.parse(compare[1], backend)]
            if compare
            else [JudgeConfig(backend, backend)]
        )
    except (ValueError, KeyError, JudgeFileError) as exc:
        raise _fail(str(exc).strip('"')) from None
    if spec.kind != "grader" or spec.scoring is None:
        raise _fail(f"judge {judge!r} is a {spec.kind}; calibrate needs a grader with a verdict")
    with step(f"reading the gold file {gold_path.name}"):
        gold = load_gold_any(gold_path, spec, maps, default_language, limit)

    request = EngineRequest(settings=settings, language=default_language, overrides=overrides, policy_file=policy)
    names = ["A", "B"] if compare else ["judge"]
    results = []
    for name, config in zip(names, configs, strict=True):
        try:
            with step(f"judging {len(gold.samples)} gold samples with {judge} ({config.label})"):
                outcomes, refused, model, wall = run_config(config, request, judge, gold.samples, concurrency)
        except (ValueError, KeyError, JudgeFileError) as exc:
            raise _fail(f"{config.label}: {str(exc).strip(chr(34))}") from None
        for line, message in refused:
            if all(p.line != line for p in gold.problems):
                gold.problems.append(GoldProblem(line, message))
        results.append((name, config, outcomes, model, wall))

    configs_out: list[dict[str, Any]] = []
    checks: list[TargetResult] = []
    for name, config, outcomes, model, wall in results:
        with step(f"measuring agreement with the gold labels ({config.label}: bootstrap intervals)"):
            report = calibration_report(spec, outcomes, wall)
        prefix = f"{name}." if compare else ""
        checks += check_judge(targets, report["overall"], prefix)
        if not compare:
            verdicts = report["overall"]["verdicts"]
            checks += check_agreement(targets, verdicts["agreement"], verdicts["kappa"])
        configs_out.append(
            {
                "name": name,
                "spec": config.label,
                "backend": config.backend,
                "model": model,
                "judges_dir": str(config.judges_dir) if config.judges_dir else None,
                "calibration": report,
            }
        )
    comparison = None
    if compare:
        with step("comparing the two judges"):
            comparison = compare_report(spec, results[0][2], results[1][2])
        verdict = comparison["overall"]["verdict"]
        checks += check_agreement(targets, verdict["agreement"], verdict["kappa"], "A-B.")

    doc: dict[str, Any] = {
        "kind": "comparison" if compare else "calibration",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "judge": judge,
        "definition": DEFINITION,
        "gold": gold.as_dict(),
        "configs": configs_out,
        "compare": comparison,
        "targets_config": targets.model_dump(),
        "targets": [c.as_dict() for c in checks],
        "passed": all(c.passed for c in checks),
        "outcome": outcome(checks),
        "allow_not_enough_evidence": allow_undecided,
    }
    with step("storing the calibration" + (f" and writing its report to {out}" if out is not None else "")):
        _store(doc, results, gold, judge)
        if out is not None:
            from bqas.calibration.html import write_html

            out.mkdir(parents=True, exist_ok=True)
            text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
            (out / "calibration.json").write_text(text, encoding="utf-8")
            write_html(out / "calibration.html", doc)
    if as_json:
        typer.echo(json.dumps(doc, ensure_ascii=False, indent=2))
    else:
        from bqas.calibration.console import print_calibration

        print_calibration(doc)
        if out is not None:
            typer.echo(f"written: {out / 'calibration.json'}, {out / 'calibration.html'}")
    if doc["outcome"] == MISSED:
        typer.echo("calibration targets missed", err=True)
        raise typer.Exit(1)
    if doc["outcome"] == UNDECIDED:
        undecided = [c.name for c in checks if c.status == UNDECIDED]
        typer.echo(
            f"not enough evidence for {', '.join(undecided)} (no target missed)"
            + ("" if allow_undecided else "; exit 3 (--allow-not-enough-evidence: exit 0)"),
            err=True,
        )
        if not allow_undecided:
            raise typer.Exit(3)


def _store(doc: dict[str, Any], results: list[Any], gold: GoldSet, judge: str) -> None:
    """One stored run of kind ``calibration`` per configuration; their ids go into ``doc``."""
    from bqas.calibration.persist import store_calibration
    from bqas.store.db import open_store

    store = open_store()
    for entry, (name, config, outcomes, model, _wall) in zip(doc["configs"], results, strict=True):
        config_data = {
            "gold": str(gold.path),
            "judge": judge,
            "spec": config.label,
            "backend": config.backend,
            "model": model,
            "targets": doc["targets_config"],
            "compare_role": name if doc["kind"] == "comparison" else None,
        }
        summary = {
            "figures": entry["calibration"]["overall"],
            "targets": doc["targets"],
            "passed": doc["passed"],
            "outcome": doc["outcome"],
        }
        run_name = f"calibrate {judge} {gold.path.name} [{config.label}]"
        entry["run_id"] = store_calibration(store, run_name, config_data, outcomes, summary)
    doc["run_id"] = ", ".join(e["run_id"] for e in doc["configs"])
