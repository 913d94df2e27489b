"""``bqas show``: the summary of one stored run, as tables or JSON."""

from __future__ import annotations

import json

import typer

from bqas.cli.run_store import _store
from bqas.cli.run_summary import print_summary


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
