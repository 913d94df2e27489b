"""``bqas ci-summary``: the Markdown of a run (or a calibration) for a CI job summary, with the CI exit code.

The GitHub Action (``action.yml``) calls it; it runs the same anywhere, so the action's logic is tested
locally: ``bqas ci-summary runs/ci --baseline runs/base --out "$GITHUB_STEP_SUMMARY"``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer


def register(app: typer.Typer) -> None:
    """Add ``bqas ci-summary`` to the app."""
    app.command("ci-summary")(ci_summary_cmd)


def ci_summary_cmd(
    source: Annotated[
        str,
        typer.Argument(
            metavar="SOURCE",
            help="A run id (or unique prefix), the --out folder of `bqas run`, or of `bqas calibrate`.",
        ),
    ],
    baseline: Annotated[
        Optional[str],  # noqa: UP045 - typer needs Optional on 3.11
        typer.Option("--baseline", help="Run id or `bqas run` folder to compare against (e.g. the base branch's)."),
    ] = None,
    max_drop: Annotated[
        float, typer.Option("--max-drop", help="With --baseline: fail when the mean composite drops by more.")
    ] = 2.0,
    max_worse: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--max-worse", help="With --baseline: fail when more samples get a worse verdict."),
    ] = None,
    max_removed: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--max-removed",
            min=0,
            help="With --baseline: fail when more of the baseline's samples are missing from this run "
            "(default: the scenario's thresholds.max_removed_samples, else 0; allow_removed_samples are not counted).",
        ),
    ] = None,
    out: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--out", "-o", help="Append the Markdown to this file (e.g. $GITHUB_STEP_SUMMARY); default stdout."
        ),
    ] = None,
) -> None:
    """Write a Markdown summary of a run for CI and exit with its gate.

    Example: bqas ci-summary runs/pr --baseline runs/base --out "$GITHUB_STEP_SUMMARY"

    Exit 0 when the thresholds (calibration: targets) are met and, with --baseline, nothing regressed;
    1 when a threshold, a target or the comparison gate is missed (a sample of the baseline that this run
    no longer has counts: deleting failing samples does not pass); 3 when a calibration missed nothing
    but lacks the evidence to decide a target (as `bqas calibrate`; 0 when it ran with
    --allow-not-enough-evidence); 2 when the run or folder is not found or unreadable.
    """
    text, code = _render(source, baseline, max_drop, max_worse, max_removed)
    if out is None:
        typer.echo(text)
    else:
        try:
            with out.open("a", encoding="utf-8") as fh:
                fh.write(text + "\n")
        except OSError as exc:
            typer.echo(f"error: --out {out}: {exc.strerror or exc}", err=True)
            raise typer.Exit(2) from None
    if code:
        raise typer.Exit(code)


def _fail(message: str) -> typer.Exit:
    from bqas.textsafe import printable

    typer.echo(f"error: {printable(message)}", err=True)  # paths and ids are the user's text
    return typer.Exit(2)


def _render(
    source: str, baseline: str | None, max_drop: float, max_worse: int | None, max_removed: int | None = None
) -> tuple[str, int]:
    folder = Path(source)
    if folder.is_dir() and (folder / "calibration.json").is_file():
        from bqas.report.markdown import calibration_markdown

        path = folder / "calibration.json"
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise _fail(f"{path}: not a calibration result: {exc}") from None
        if not isinstance(doc, dict) or "targets" not in doc:
            raise _fail(f"{path}: not a calibration result (no 'targets')")
        return calibration_markdown(doc), _calibration_code(doc)
    from bqas.cli.run_store import _store
    from bqas.report.markdown import run_markdown
    from bqas.runner.compare import compare_runs
    from bqas.runner.run import settled_records
    from bqas.runner.scenario import Thresholds
    from bqas.runner.summary import check_thresholds, summarize

    store = _store()
    run_id = _run_id(source, store, "SOURCE")
    run = store.get_run(run_id)
    assert run is not None
    if run.kind == "redteam":
        from bqas.redteam.run import redteam_ci_summary

        if baseline is not None:
            raise _fail(
                f"--baseline: run {run.id} is a red-team run, gated by its own thresholds; compare scenario runs"
            )

        return redteam_ci_summary(store, run)
    summary = summarize(settled_records(store, run.id))  # one record per sample, also with --repeats
    gates = Thresholds.model_validate(run.config.get("thresholds") or {})
    thresholds = [t.as_dict() for t in check_thresholds(summary, gates)]
    comparison = None
    if baseline is not None:
        base_id = _run_id(baseline, store, "--baseline")
        result = compare_runs(settled_records(store, base_id), settled_records(store, run.id))
        allowed_removed = max_removed if max_removed is not None else (gates.max_removed_samples or 0)
        regressions = result.regressions(
            max_drop, max_worse, max_removed=allowed_removed, allow_removed=gates.allow_removed_samples
        )
        comparison = (base_id, result, regressions)
    meta: dict[str, Any] = {
        "id": run.id,
        "scenario": run.scenario,
        "backend": run.config.get("backend"),
        "model": run.config.get("model"),
        "llm_engine": run.config.get("llm_engine"),
    }
    text = run_markdown(
        meta,
        summary.as_dict((run.summary or {}).get("cost_usd")),
        thresholds,
        settled_records(store, run.id),
        comparison=comparison,
    )
    passed = all(t["passed"] for t in thresholds) and not (comparison and comparison[2])
    return text, 0 if passed else 1


def _calibration_code(doc: dict[str, Any]) -> int:
    """The exit code of a calibration document, as `bqas calibrate` gave it (older ones: passed or not)."""
    outcome = doc.get("outcome")
    if outcome is None:
        return 0 if doc.get("passed") else 1
    if outcome == "missed":
        return 1
    if outcome == "not enough evidence":
        return 0 if doc.get("allow_not_enough_evidence") else 3
    return 0


def _run_id(given: str, store: Any, what: str) -> str:
    """A stored run's id from an id, a prefix, or a `bqas run` output folder (its results.jsonl)."""
    folder = Path(given)
    if folder.is_dir():
        results = folder / "results.jsonl"
        try:
            with results.open(encoding="utf-8") as fh:
                first = fh.readline()
        except (OSError, UnicodeDecodeError) as exc:
            raise _fail(f"{what}: {results}: {getattr(exc, 'strerror', None) or exc}") from None
        try:
            record = json.loads(first) if first.strip() else None
        except ValueError as exc:
            raise _fail(f"{what}: {results}:1: not JSON: {exc}") from None
        if not isinstance(record, dict) or not isinstance(record.get("run_id"), str):
            raise _fail(f"{what}: {results}:1: field run_id: missing (is this the --out folder of `bqas run`?)")
        given = record["run_id"]
    run = store.find_run(given)
    if run is None:
        raise _fail(f"{what}: {store.missing_run(given)}")
    return str(run.id)
