"""``bqas run``: runs a scenario, prints its summary and where its outputs went, and turns failures of
the input, the store or the disk into one line and an exit code."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from bqas.cli.llm_options import llm_overrides
from bqas.cli.run_store import _store
from bqas.cli.run_summary import print_summary
from bqas.runner.scenario import ScenarioError

if TYPE_CHECKING:
    from bqas.store.db import Store


def run_scenario(
    scenario: Path | None,
    out: Path | None,
    resume: str | None,
    backend: str | None,
    language: str | None,
    concurrency: int | None,
    base_url: str | None,
    model: str | None,
    structured_output: str | None,
    no_cache: bool,
    baseline: str | None,
    progress: bool,
    profiles: list[Path] | None = None,
    ray: str | None = None,
    ray_workers: int | None = None,
    ray_placement_timeout: float | None = None,
    repeats: int | None = None,
    llm_gguf: Path | None = None,
    target: str | None = None,
    reuse_target_replies: str | None = None,
    verbose: bool = False,
    allow_dataset_outside: bool = False,
    accept_unfit_judge: bool = False,
    retry_target_errors: bool = False,
) -> None:
    """Implementation of ``bqas run``."""
    from bqas.cli.steps import steps
    from bqas.runner.request import RunRequest
    from bqas.runner.run import execute
    from bqas.settings import get_settings

    if backend is not None and backend not in ("auto", "llm", "offline"):
        typer.echo(f"error: --backend: expected auto, llm or offline, got {backend!r}", err=True)
        raise typer.Exit(2)
    if concurrency is not None and concurrency < 1:
        typer.echo(f"error: --concurrency: expected at least 1, got {concurrency}", err=True)
        raise typer.Exit(2)
    if ray_placement_timeout is not None and not 1 <= ray_placement_timeout <= 86_400:
        typer.echo(
            f"error: --ray-placement-timeout: expected 1 to 86400 seconds, got {ray_placement_timeout:g}", err=True
        )
        raise typer.Exit(2)
    if ray_workers is not None and ray_workers < 1:
        typer.echo(f"error: --ray-workers: expected at least 1, got {ray_workers}", err=True)
        raise typer.Exit(2)
    started: list[str] = []

    def announce(run_id: str, out_dir: Path, resuming: bool) -> None:
        # First line of the run (before the progress bar): the id to resume with if it is killed.
        started.append(run_id)
        typer.echo(f"{'resuming' if resuming else 'run'} {run_id} · outputs: {out_dir}")
        import sys

        if "bqas.llm.local" in sys.modules:  # a local model: say what its engine cost to start
            from bqas.llm.local import started_engines

            for info in started_engines():
                typer.echo(
                    f"embedded llama.cpp engine: {info['model']} started in {info['start_seconds']:.1f} s"
                    f" ({info['threads']} threads, {info['slots']} slots, n_ctx {info['n_ctx']})",
                    err=True,
                )

    request = RunRequest(
        scenario_path=scenario,
        resume=resume,
        out_dir=out,
        backend=backend,
        language=language,
        concurrency=concurrency,
        baseline=baseline,
        progress=progress,
        on_start=announce,
        on_step=steps(progress),
        profiles=list(profiles or []),
        ray=ray,
        ray_workers=ray_workers,
        ray_placement_timeout=ray_placement_timeout,
        repeats=repeats,
        target=target,
        reuse_target_replies=reuse_target_replies,
        allow_dataset_outside=allow_dataset_outside or get_settings().allow_dataset_outside,
        accept_unfit_judge=accept_unfit_judge,
        retry_target_errors=retry_target_errors,
        overrides=llm_overrides(base_url, model, structured_output, no_cache, llm_gguf),
    )
    from bqas.cli.review_notes import ReviewNotes, held_review_notes, print_review_notes
    from bqas.runner.execute import RunFailed
    from bqas.runner.interrupt import exit_code_of, sigterm_as_interrupt

    notes = ReviewNotes()  # the review loop's categories and alerts: summarised after the run
    try:
        store = _store()
        with sigterm_as_interrupt(), held_review_notes(notes):
            try:
                outcome = execute(request, get_settings(), store)
            finally:
                from bqas.review.alerts import flush_alerts

                flush_alerts()  # webhooks of the review loop still in flight
    except RunFailed as exc:
        print_review_notes(notes)
        if _store_or_disk_failure(exc) is not None:
            _stopped_by_the_store(exc, started)
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except (ScenarioError, ValueError, KeyError) as exc:
        print_review_notes(notes)
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt as stop:
        # One line (no traceback): what was stored and the exact command that goes on from there.
        if started:
            typer.echo(_interrupted_line(store, started[0]), err=True)
        else:
            typer.echo("interrupted before the run started: nothing was stored", err=True)
        raise typer.Exit(exit_code_of(stop)) from None
    except Exception as exc:  # the store or the output files, outside the results writer
        if _store_or_disk_failure(exc) is None:
            raise
        print_review_notes(notes)
        _stopped_by_the_store(exc, started)
    run = store.get_run(outcome.run_id)
    print_summary(
        run.summary,
        [t.as_dict() for t in outcome.thresholds],
        f"run {outcome.run_id} — {run.scenario}",
        run.config.get("profile_briefs"),
    )
    for check in run.config.get("judge_check") or []:
        from bqas.judging.check import CheckResult

        line = CheckResult(**{k: v for k, v in check.items() if k not in ("accepted_unfit", "resumed")}).summary()
        typer.echo(line + (" — run anyway (--accept-unfit-judge)" if check.get("accepted_unfit") else ""))
    if outcome.retried is not None:
        errors, calls = outcome.retried
        typer.echo(f"target errors retried: {errors} samples or turns asked again ({calls} calls to the target)")
    typer.echo(f"judged now: {outcome.judged_now} · results: {outcome.out_dir / 'results.jsonl'}")
    typer.echo(f"junit: {outcome.out_dir / 'junit.xml'}")
    typer.echo(f"report: {outcome.out_dir / 'report.html'}")
    _say_where_escalations_went(store, outcome.run_id)
    print_review_notes(notes, verbose)
    summary = outcome.summary
    if summary.target_error_results or summary.unscored or summary.judge_errors:
        from bqas.cli.problems import print_problems

        print_problems(store, outcome.run_id, kinds=("target_error", "unscored", "judge_error"))
    if summary.invalid:
        _print_invalid(summary, outcome.source, outcome.out_dir / "results.jsonl")
    if summary.invalid == summary.samples:
        # Nothing could be judged: an input problem, not a quality result (exit 2, as for bad input).
        typer.echo(
            f"error: no valid sample: {summary.invalid} of {summary.samples} are invalid (see {outcome.out_dir / 'results.jsonl'})",
            err=True,
        )
        raise typer.Exit(2)
    if not outcome.passed:
        typer.echo("thresholds missed", err=True)
        raise typer.Exit(1)


def _store_or_disk_failure(exc: BaseException) -> BaseException | None:
    """The store error (SQLAlchemy) or file error (OSError) behind ``exc``, following its causes."""
    errors = sys.modules.get("sqlalchemy.exc")
    kinds: tuple[type[BaseException], ...] = (OSError,) if errors is None else (OSError, errors.SQLAlchemyError)
    seen: BaseException | None = exc
    while seen is not None and not isinstance(seen, kinds):
        seen = seen.__cause__ or seen.__context__
    return seen


def _stopped_by_the_store(exc: BaseException, started: list[str]) -> NoReturn:
    """One line for a run the store or the disk stopped, and exit 4 (README: exit codes)."""
    from bqas.settings import get_settings
    from bqas.store.db import STORE_FAILED, failure_cause, store_name
    from bqas.textsafe import printable

    failure = _store_or_disk_failure(exc)
    assert failure is not None
    cause = failure_cause(failure)
    if isinstance(failure, OSError) and failure.filename is not None:  # results.jsonl, junit.xml, report.html
        where = f"a file could not be written: {cause}"
    else:
        where = f"the store {store_name(get_settings().resolved_database_url())} cannot be written: {cause}"
    run = started[0] if started else None
    then = (
        f"; what was stored is kept, and once that is fixed `bqas run --resume {run}` completes the run"
        if run
        else "; nothing was started"
    )
    typer.echo(f"error: {'run ' + run + ' stopped: ' if run else ''}{printable(where)}{then}", err=True)
    raise typer.Exit(STORE_FAILED)


def _print_invalid(summary: Any, source: str, results: Path) -> None:
    """The first invalid samples, each as ``file:line: field …``, so a user need not open results.jsonl."""
    from bqas.runner.summary import invalid_lines
    from bqas.textsafe import printable

    shown = summary.invalid_examples
    more = f" (the first {len(shown)})" if summary.invalid > len(shown) else ""
    typer.echo(f"invalid samples: {summary.invalid}{more}", err=True)
    for line in invalid_lines(shown, source):
        typer.echo(f"  {printable(line)}", err=True)  # the dataset's text: no terminal escapes
    if summary.invalid > len(shown):
        typer.echo(f"  all of them: {results} (status invalid)", err=True)


def _say_where_escalations_went(store: Store, run_id: str) -> None:
    """Tell the user where this run's escalations are and how to look at them."""
    from bqas.cli.review_notes import in_ci
    from bqas.review.queue import open_count, source_counts
    from bqas.review.settings import get_review_settings

    review = get_review_settings()
    if not review.review or in_ci():
        return
    counts = source_counts(store, review.local_tenant, run_id)
    mine, again = counts["open"], counts["duplicate"]
    if not mine and not again:
        return
    total = open_count(store, review.local_tenant)
    if mine:
        where = f"review: {mine} escalation(s) of this run in the local review queue"
    else:
        where = "review: no new escalation in the local review queue"
    if again:
        # The same sample, judge and answer escalated by an earlier run is one decision, not a second item.
        where += f"; {again} already there from an earlier run (not queued again)"
    typer.echo(
        f"{where}; {total} open in all: `bqas review` opens it, `bqas gold export --tenant {review.local_tenant}`"
    )


def _interrupted_line(store: Any, run_id: str) -> str:
    try:
        run = store.get_run(run_id)
        stored = f"{store.count_results(run_id)} of {run.total} results stored; " if run is not None else ""
    except Exception:  # the store's trouble is not what is reported here
        stored = ""
    return f"interrupted: {stored}resume with `bqas run --resume {run_id}`"
