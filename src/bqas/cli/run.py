"""``bqas run``, ``bqas runs``, ``bqas show`` and ``bqas compare``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from bqas.judging.factory import LLMOverrides
from bqas.runner.scenario import ScenarioError

if TYPE_CHECKING:
    from bqas.store.db import Store


def _store() -> Any:
    from bqas.settings import get_settings
    from bqas.store.db import open_store

    return open_store(get_settings().resolved_database_url())


def print_summary(
    summary: dict[str, Any],
    thresholds: list[dict[str, Any]],
    title: str,
    profiles: list[dict[str, Any]] | None = None,
) -> None:
    """The summary table of a run (verdicts, dimensions, totals, thresholds; trust-or-escalate coverage)."""
    from rich.table import Table

    from bqas.textsafe import console_text

    console = summary_console()
    table = Table(title=console_text(title))  # the scenario name is the user's text
    table.add_column("verdict")
    table.add_column("count", justify="right")
    for verdict in ("production_ready", "needs_review", "failed", "unscored"):
        table.add_row(verdict, str(summary["verdicts"].get(verdict, 0)))
    table.add_row("invalid samples", str(summary["invalid"]))
    if summary.get("judge_errors"):
        table.add_row("judging errors (--resume retries)", str(summary["judge_errors"]))
    if "target_errors" in summary:
        table.add_row("target errors", str(summary["target_errors"]))
    table.add_row("escalations", str(summary["escalations"]))
    console.print(table)
    console.print(dimensions_table(summary, console.width))
    cost = summary.get("cost_usd")
    console.print(
        f"LLM calls {summary['llm_calls']} · prompt tokens {summary['prompt_tokens']} · completion tokens "
        f"{summary['completion_tokens']} · cache hits {summary['cache_hits']} · cost "
        + (f"${cost:.4f}" if cost is not None else "n/a (no price configured)")
    )
    from bqas.runner.summary import gate_result_text, timing_text, unscored_lines

    for line in unscored_lines(summary.get("unscored_reasons") or []):
        console.print(line, markup=False)
    timing = timing_text(summary)
    if timing:
        console.print(timing, markup=False)
    if summary.get("target"):
        console.print(target_line(summary["target"]), markup=False)
    if thresholds:
        th = Table(title="thresholds")
        for col in ("gate", "expected", "actual", "result"):
            th.add_column(col)
        for t in thresholds:
            result = "[green]met[/]" if t["passed"] else f"[red]{gate_result_text(t)}[/]"
            th.add_row(t["name"], str(t["expected"]), "–" if t["actual"] is None else str(t["actual"]), result)
        console.print(th)
    if summary.get("trust"):
        _print_trust(console, summary["trust"], profiles or [])
    if summary.get("repeats"):
        _print_repeats(console, summary["repeats"])


def target_line(target: dict[str, Any]) -> str:
    """The assistant's own figures in one line: answers, errors, latency, tokens per answer."""
    lat = target["latency_ms"]
    line = (
        f"assistant: {target['answers']} answers · {target['errors']} target errors · latency p50 {_f(lat['p50'])} "
        f"/ p95 {_f(lat['p95'])} / max {_f(lat['max'])} ms"
    )
    ttft = target.get("ttft_ms") or {}
    if ttft.get("n"):
        line += f" · time to first token p50 {_f(ttft['p50'])} / p95 {_f(ttft['p95'])} / max {_f(ttft['max'])} ms"
    tokens = target.get("tokens") or {}
    if tokens:
        line += " · tokens per answer " + ", ".join(
            f"{name.removesuffix('_tokens')} {t['per_answer']:g}" for name, t in tokens.items()
        )
    if target.get("reused"):
        line += f" · {target['reused']} replies reused from an earlier run (their latency is that run's)"
    return line


#: Below this width the dimension table groups dimensions under their judge and leaves out std, min
#: and max (`bqas show RUN --json` has them), so that it fits an 80-column terminal.
_DIMENSIONS_FULL_WIDTH = 120


def plain_console() -> Any:
    """A console of the terminal's width; in a pipe or a CI log 80 columns unless COLUMNS says otherwise
    (the tables are laid out to fit 80)."""
    import os

    from rich.console import Console

    console = Console()
    if not console.is_terminal and not os.environ.get("COLUMNS", "").isdigit():
        console = Console(width=80)
    return console


def summary_console() -> Any:
    """The console of a run's summary (see plain_console)."""
    return plain_console()


def dimensions_table(summary: dict[str, Any], width: int) -> Any:
    """Composite and dimension statistics; grouped by judge and without std/min/max below
    ``_DIMENSIONS_FULL_WIDTH`` columns."""
    from rich import box
    from rich.table import Table

    full = width >= _DIMENSIONS_FULL_WIDTH
    cols: tuple[str, ...] = ("dimension", "n", "mean", "std", "min", "max", "pass/fail", "not measured", "backend")
    if not full:
        cols = ("dimension", "n", "mean", "pass/fail", "not meas.", "backend")
    dims = Table(title="dimensions", box=box.HEAVY_HEAD if full else box.SIMPLE_HEAD)
    for col in cols:
        dims.add_column(col, justify="right" if col not in ("dimension", "backend") else "left")

    def row(name: str, d: dict[str, Any], gates: str, not_measured: str, backends: str) -> None:
        stats = [_f(d["mean"]), _f(d["std"]), _f(d["min"]), _f(d["max"])] if full else [_f(d["mean"])]
        dims.add_row(console_text(name), str(d["n"]), *stats, gates, not_measured, backends)

    from bqas.textsafe import console_text

    row("composite", summary["composite"], "", str(summary["partial"]) + " partial", "")
    judge = None
    for name, d in summary["dimensions"].items():
        gates = f"{d['pass']}/{d['fail']}" if d["pass"] or d["fail"] else ""
        shown = name
        if not full and "." in name:
            owner, shown = name.split(".", 1)
            if owner != judge:
                judge = owner
                dims.add_row(f"[bold]{console_text(owner)}[/]")
            shown = "  " + shown
        row(shown, d, gates, str(d["not_measured"]), ", ".join(d["backends"]))
    return dims


def _print_repeats(console: Any, repeats: dict[str, Any]) -> None:
    """Run-level figures over the repeats (mean ± std, min–max) and the samples whose verdicts straddle."""
    from rich.table import Table

    table = Table(title=f"{repeats['n']} repeats: figures per repeat (canonical verdict: {repeats['rule']})")
    for col in ("figure", "mean", "std", "min", "max", "per repeat"):
        table.add_column(col, justify="left" if col == "figure" else "right")
    for name, f in repeats["figures"].items():
        values = " ".join(_f(v) for v in f["values"])
        table.add_row(name, _f(f["mean"]), _f(f["std"]), _f(f["min"]), _f(f["max"]), values)
    console.print(table)
    for name, gate in repeats["gates"].items():
        if gate["straddles"]:
            console.print(f"gate {name} straddles: met in {gate['met']} of {repeats['n']} repeats", markup=False)
    console.print(
        f"samples whose repeats straddle a verdict threshold: {repeats['straddling_samples']} "
        f"({repeats['ties_escalated']} ties escalated to a human)",
        markup=False,
    )
    if repeats.get("note"):
        console.print(f"note: {repeats['note']}", markup=False)


def _print_trust(console: Any, trust: dict[str, Any], profiles: list[dict[str, Any]]) -> None:
    """Who decided (per tier, per language) and the guaranteed bounds of the profiles in use."""
    from rich.table import Table

    table = Table(title="trust or escalate: decided by")
    for col in ("", "n", "offline", "llm", "human (escalated)"):
        table.add_column(col, justify="right" if col else "left")
    rows = [("all", trust["coverage"])] + [(f"language {k}", v) for k, v in trust["by_language"].items()]
    for name, c in rows:
        table.add_row(name, str(c["n"]), f"{c['offline']:.1%}", f"{c['llm']:.1%}", f"{c['human']:.1%}")
    console.print(table)
    from bqas.cli.calibrate_fit import precision_line
    from bqas.trust.summary import side_statement

    for side, row in (trust.get("agreement") or {}).items():
        if row.get("decided"):
            console.print(f"this run, samples with labels: {precision_line(side, row)}", markup=False)
    for p in profiles:
        for t in p["tiers"]:
            console.print(
                f"profile {p['id']} · {t['tier']} (each bound with probability >= {1 - t['delta']:g}, n={p['n']}):",
                markup=False,
            )
            for side in ("accept", "reject"):
                console.print(f"  {side_statement(t, side)}", markup=False)


def _f(value: Any) -> str:
    return "–" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


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
        overrides=LLMOverrides(
            base_url=base_url,
            model=model,
            structured_output=structured_output,
            cache=False if no_cache else None,
            gguf=llm_gguf,
        ),
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

        line = CheckResult(**{k: v for k, v in check.items() if k != "accepted_unfit"}).summary()
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


#: Below this console width `bqas runs` leaves out the verdict counts (`bqas show RUN` has them).
_RUNS_VERDICTS_WIDTH = 110
_VERDICT_SHORT = {"production_ready": "ready", "needs_review": "review", "failed": "failed", "unscored": "unscored"}


def list_runs(limit: int, as_json: bool, verbose: bool = False) -> None:
    from rich import box
    from rich.table import Table

    from bqas.review.categories import new_categories
    from bqas.runner.lease import display_status
    from bqas.runner.summary import gate_state
    from bqas.textsafe import console_text

    store = _store()
    runs = store.list_runs(limit)
    oldest = min((r.started_at for r in runs if r.started_at), default=None)
    categories = new_categories(store, since=oldest, limit=200 if verbose else 1000) if oldest else []
    rows = [
        {
            "id": r.id,
            "kind": r.kind,
            "scenario": r.scenario,
            "status": display_status(r),
            "total": r.total,
            "started_at": r.started_at.isoformat() if r.started_at else None,
            "verdicts": (r.summary or {}).get("verdicts", {}),
            "pass_rate": (r.summary or {}).get("pass_rate"),
            "gate": gate_state(r.summary),
        }
        for r in runs
    ]
    for row in rows:
        if row["status"] == "interrupted" and row["kind"] == "scenario":
            row["resume"] = f"bqas run --resume {row['id']}"
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    console = plain_console()
    wide = console.width >= _RUNS_VERDICTS_WIDTH
    cells_of: list[dict[str, str]] = []
    for row in rows:
        cells = {
            "id": console_text(row["id"]),  # names are data: no markup, no control characters
            "scenario": console_text(row["scenario"]),
            "status": console_text(row["status"]),
            "n": str(row["total"]),
            "pass": "–" if row["pass_rate"] is None else f"{100 * row['pass_rate']:.0f} %",
            "gate": row["gate"],
            "verdicts": console_text(" ".join(f"{_VERDICT_SHORT.get(k, k)} {v}" for k, v in row["verdicts"].items())),
            "started": str(row["started_at"])[5:16].replace("T", " ") if row["started_at"] else "–",
        }
        cells_of.append(cells)
    names = ["id", "scenario", "status", "n", "pass", "gate", *(["verdicts"] if wide else []), "started"]
    widths = {n: max([len(n), *(len(c[n]) for c in cells_of)]) for n in names}
    # No vertical rules and no edge, two spaces between columns: the columns fit 80 characters. Ids stay
    # whole (people copy them), and so does the start time; where the scenario names do not fit, the
    # least useful columns go first (the sample count, then the pass rate: `bqas show` has both), else
    # the scenario name is shortened with "…".
    gap = 2

    def room(columns: list[str]) -> int:
        return int(console.width) - sum(widths[n] for n in columns if n != "scenario") - gap * (len(columns) - 1)

    # Only where that lets the names fit whole; else every column stays and the names are shortened.
    for dropped in (["n"], ["n", "pass"]):
        fewer = [n for n in names if n not in dropped]
        if room(names) < widths["scenario"] <= room(fewer):
            names = fewer
            break
    table = Table(
        # SIMPLE_HEAD draws a blank between columns: with one space of padding that is the gap of two.
        title="runs",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, gap - 1, 0, 0),
    )
    left = room(names)
    for name in names:
        if name == "scenario":
            table.add_column(name, no_wrap=True, overflow="ellipsis", max_width=max(8, left))
        else:
            table.add_column(
                name, no_wrap=True, min_width=widths[name], justify="right" if name in ("n", "pass") else "left"
            )
    colour = {"met": "[green]met[/]", "missed": "[red]missed[/]"}
    for cells in cells_of:
        table.add_row(*(colour.get(cells[n], cells[n]) if n == "gate" else cells[n] for n in names))
    console.print(table)
    console.print(_store_line(), soft_wrap=True, markup=False)
    for row in rows:
        if "resume" in row:
            console.print(f"interrupted: {row['id']} — resume with `{row['resume']}`", soft_wrap=True, markup=False)
    if categories and not verbose:
        console.print(
            f"{len(categories)} new error categor{'y' if len(categories) == 1 else 'ies'} first seen during these "
            "runs: `bqas runs --verbose` lists them, `bqas review` shows the cases",
            markup=False,
        )
    elif categories:
        # New error categories of the review loop (judge policy: "Neue Fehlerkategorien: Feedback an Entwicklung").
        console.print("[bold]new error categories[/] (first seen during these runs):")
        for cat in categories:
            line = f"  {cat.first_seen[:19]}  {cat.tenant}/{cat.judge}: {cat.category}  (e.g. {cat.response_id})"
            console.print(console_text(line))  # ids are untrusted text


def _store_line() -> str:
    """Which store a listing reads, and why that one (BQAS_HOME, the project's .bqas/, the user's)."""
    from bqas.settings import get_settings, home_origin
    from bqas.store.db import store_name
    from bqas.textsafe import printable

    settings = get_settings()
    return f"store: {printable(store_name(settings.resolved_database_url()))} ({home_origin(settings)})"


def show_run(run_id: str, as_json: bool, errors: bool = False) -> None:
    from bqas.runner.lease import display_status
    from bqas.runner.run import settled_records
    from bqas.runner.scenario import Thresholds
    from bqas.runner.summary import check_thresholds, summarize
    from bqas.textsafe import printable

    store = _store()
    run = store.find_run(run_id)
    if run is None:
        typer.echo(f"error: {store.missing_run(run_id)}", err=True)
        raise typer.Exit(2)
    if run.kind == "redteam":
        from bqas.redteam.run import show_redteam

        typer.echo(show_redteam(store, run, as_json))
        return
    summary = summarize(settled_records(store, run.id))
    thresholds = check_thresholds(summary, Thresholds.model_validate(run.config.get("thresholds") or {}))
    data = summary.as_dict((run.summary or {}).get("cost_usd"))
    if (run.summary or {}).get("repeats"):
        data["repeats"] = run.summary["repeats"]
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "run_id": run.id,
                    "scenario": run.scenario,
                    "status": display_status(run),
                    "summary": data,
                    "thresholds": [t.as_dict() for t in thresholds],
                },
                indent=2,
            )
        )
        return
    done = store.count_results(run.id)
    print_summary(
        data,
        [t.as_dict() for t in thresholds],
        f"run {run.id} — {run.scenario} ({display_status(run)}, {done}/{run.total})",
    )
    if errors:
        from bqas.cli.problems import problem_lines

        lines = problem_lines(settled_records(store, run.id), run.id, limit=None)
        for line in lines or ["no target error, unscored result, judging error or invalid sample"]:
            typer.echo(printable(line))  # sample ids and reasons are data
    if display_status(run) == "interrupted":
        typer.echo(f"interrupted: resume with `bqas run --resume {run.id}`")


def _interrupted_line(store: Any, run_id: str) -> str:
    try:
        run = store.get_run(run_id)
        stored = f"{store.count_results(run_id)} of {run.total} results stored; " if run is not None else ""
    except Exception:  # the store's trouble is not what is reported here
        stored = ""
    return f"interrupted: {stored}resume with `bqas run --resume {run_id}`"


def compare(
    run_a: str, run_b: str, max_drop: float, max_worse: int | None, as_json: bool, strict: bool = False
) -> None:
    """Implementation of ``bqas compare``: warns (``--strict``: exit 2) when the runs judged different data
    or with different prompts, policy, backend or model."""
    from rich.console import Console
    from rich.table import Table

    from bqas.runner.compare import compare_runs
    from bqas.runner.hashes import hash_differences
    from bqas.runner.run import settled_records
    from bqas.textsafe import console_text

    store = _store()
    a, b = store.find_run(run_a), store.find_run(run_b)
    for given, run in ((run_a, a), (run_b, b)):
        if run is None:
            typer.echo(f"error: {store.missing_run(given)}", err=True)
            raise typer.Exit(2)
    assert a is not None and b is not None
    mismatch = hash_differences(a.config, b.config)
    for line in mismatch if strict or not as_json else ():  # --json carries them under "warnings"
        typer.echo(f"{'error' if strict else 'warning'}: {line}", err=True)
    if mismatch and strict:
        typer.echo("error: --strict: the runs are not comparable", err=True)
        raise typer.Exit(2)
    result = compare_runs(settled_records(store, a.id), settled_records(store, b.id))
    if result.matched == 0:
        # Nothing to pair: no difference and no regression can be measured, which is no pass.
        typer.echo(
            f"error: {a.id} and {b.id} have no sample in common (by sample id and judge; only in A: "
            f"{result.only_a}, only in B: {result.only_b}): compare two runs of the same dataset",
            err=True,
        )
        raise typer.Exit(2)
    regressed = result.regressions(max_drop, max_worse)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "a": a.id,
                    "b": b.id,
                    "matched": result.matched,
                    "only_a": result.only_a,
                    "only_b": result.only_b,
                    "removed_samples": result.removed,
                    "dimensions": [d.__dict__ for d in result.dimensions],
                    "changes": result.changes,
                    "regressions": regressed,
                    "warnings": mismatch,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        console = Console()
        table = Table(title=f"{b.id} vs {a.id} (B − A, paired over {result.matched} samples; 95 % bootstrap CI)")
        for col in ("dimension", "n", "mean A", "mean B", "Δ", "CI low", "CI high"):
            table.add_column(col)
        for d in result.dimensions:
            table.add_row(
                d.name, str(d.n), f"{d.mean_a:.2f}", f"{d.mean_b:.2f}", f"{d.diff:+.2f}", _f(d.ci_low), _f(d.ci_high)
            )
        console.print(table)
        console.print(
            f"verdict changes: {len(result.changes)} ({len(result.worse)} worse); "
            f"only in A: {result.only_a}, only in B: {result.only_b}; samples removed: {len(result.removed)}"
        )
        for change in result.changes[:50]:
            console.print(console_text(f"  {change['key']}: {change['from']} → {change['to']} ({change['direction']})"))
        for line in regressed:
            console.print(f"[red]regression:[/] {line}")
    if regressed:
        raise typer.Exit(1)
