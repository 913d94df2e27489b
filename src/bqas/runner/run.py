"""``bqas run``: a scenario from start (or resume) to summary, report files and CI exit code."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bqas.judging.engine import JudgeEngine
from bqas.review.settings import get_review_settings
from bqas.runner.dataset import count_items
from bqas.runner.execute import RunFailed, execute_run, new_run_id, repeat_count, work_items
from bqas.runner.gc_tuning import fewer_collections
from bqas.runner.interrupt import run_until_stopped
from bqas.runner.lease import RunLease
from bqas.runner.loop import new_event_loop, progress_bar
from bqas.runner.request import RunRequest, engine_for, llm_overrides, loading_step, memory_examples
from bqas.runner.scenario import Scenario, ScenarioError, load_scenario, scenario_fingerprint
from bqas.runner.summary import RunSummary, ThresholdResult, check_thresholds, cost_estimate, summarize
from bqas.settings import Settings
from bqas.store.db import Store

if TYPE_CHECKING:
    from bqas.targets.config import Target
    from bqas.targets.stage import TargetStage


@dataclass
class RunOutcome:
    run_id: str
    summary: RunSummary
    thresholds: list[ThresholdResult]
    out_dir: Path
    judged_now: int
    cost_usd: float | None
    # Where the samples came from, as invalid samples are named: the dataset file's name, or "samples".
    source: str = "samples"
    # --retry-target-errors: the samples (turns) whose target error was retried, and the calls that made.
    retried: tuple[int, int] | None = None

    @property
    def passed(self) -> bool:
        return all(t.passed for t in self.thresholds)


def _scenario_for(request: RunRequest, store: Store) -> tuple[Scenario, str, bool]:
    """The scenario and run id: a new run, or the stored one for ``--resume``."""
    if request.resume:
        run = store.find_run(request.resume)
        if run is None:
            raise ScenarioError(f"--resume: {store.missing_run(request.resume)}")
        if run.kind != "scenario":
            raise ScenarioError(f"--resume: run {run.id} is a {run.kind} run, not a scenario run")
        path = Path(run.scenario_path or "")
        if request.scenario_path is not None and request.scenario_path.resolve() != path.resolve():
            raise ScenarioError(f"--resume: run {run.id} belongs to {path}, not {request.scenario_path}")
        # Its scenario and dataset were accepted when it started (the fingerprint below says they are unchanged).
        scenario = load_scenario(path, allow_dataset_outside=True)
        stored_repeats = int(run.config.get("repeats") or 1)
        if request.repeats is not None and request.repeats != stored_repeats:
            raise ScenarioError(f"--repeats: run {run.id} was started with {stored_repeats} repeats; start a new run")
        scenario.repeats = stored_repeats  # as it started (--repeats may have overridden the file)
        if run.config.get("fingerprint") != scenario_fingerprint(scenario):
            raise ScenarioError(
                f"--resume: the scenario or its dataset changed since run {run.id} started; start a new run"
            )
        return scenario, run.id, True
    if request.scenario_path is None:
        raise ScenarioError("give a scenario file, or --resume RUN_ID")
    scenario = load_scenario(request.scenario_path, allow_dataset_outside=request.allow_dataset_outside)
    if request.repeats is not None:
        if request.repeats < 1:
            raise ScenarioError(f"--repeats: expected at least 1, got {request.repeats}")
        scenario.repeats = request.repeats
    return scenario, new_run_id(), False


def _briefs(engine: JudgeEngine) -> list[dict[str, Any]]:
    from bqas.trust.profile import CalibrationProfile
    from bqas.trust.summary import profile_brief

    return [profile_brief(p) for p in engine.options.profiles.values() if isinstance(p, CalibrationProfile)]


def _run_meta(
    store: Store, run_id: str, summary: RunSummary, thresholds: list[ThresholdResult], cost: float | None
) -> dict[str, Any]:
    run = store.get_run(run_id)
    assert run is not None
    config = run.config
    return {
        "run_id": run_id,
        "scenario": run.scenario,
        "description": config.get("description", ""),
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "backend": config.get("backend"),
        "model": config.get("model"),
        "llm_engine": config.get("llm_engine"),
        "language": config.get("language"),
        "judges": config.get("judges", []),
        "thresholds": config.get("thresholds", {}),
        "threshold_results": [t.as_dict() for t in thresholds],
        "profiles": config.get("profile_briefs", []),
        "dataset_hash": config.get("dataset_hash"),
        "judge_config_hash": config.get("judge_config_hash"),
        "judge_check": config.get("judge_check") or [],
        "repeats": (run.summary or {}).get("repeats"),
        "target_figures": summary.target.as_dict() if summary.target.asked else None,
        "totals": {
            "samples": summary.samples,
            "scored": summary.scored,
            "unscored": summary.unscored,
            "invalid": summary.invalid,
            "judge_errors": summary.judge_errors,
            "target_errors": summary.target_error_results,
            "llm_calls": summary.llm_calls,
            "prompt_tokens": summary.prompt_tokens,
            "completion_tokens": summary.completion_tokens,
            "cost_usd": cost,
        },
    }


def write_outputs(store: Store, run_id: str, out_dir: Path, meta: dict[str, Any], baseline: str | None = None) -> None:
    """results.jsonl, junit.xml and report.html, each streamed from the store."""
    from bqas.report.html import write_html_report
    from bqas.report.junit import write_junit

    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "results.jsonl").open("wb") as fh:
        for record in settled_records(store, run_id):
            fh.write(jsonl_line(record))
    write_junit(out_dir / "junit.xml", meta, settled_records(store, run_id))
    base: tuple[dict[str, Any], Iterator[dict[str, Any]]] | None = None
    comparison = None
    if baseline:
        from bqas.runner.compare import compare_runs

        base_run = store.find_run(baseline)
        if base_run is None:
            raise ScenarioError(f"--baseline: {store.missing_run(baseline)}")
        base_summary = summarize(settled_records(store, base_run.id))
        base_meta = _run_meta(store, base_run.id, base_summary, [], None)
        base = (base_meta, settled_records(store, base_run.id))
        # The paired differences and bootstrap intervals of `bqas compare` (the same function).
        comparison = compare_runs(settled_records(store, base_run.id), settled_records(store, run_id))
    write_html_report(
        out_dir / "report.html", meta, settled_records(store, run_id), baseline=base, comparison=comparison
    )


def jsonl_line(record: dict[str, Any]) -> bytes:
    """One results.jsonl line (UTF-8, newline-terminated): orjson, several times faster than json; a value
    orjson refuses (an integer beyond 64 bits) is written by json as before."""
    import orjson

    try:
        return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # orjson.JSONEncodeError
        return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", errors="surrogateescape")


def settled_records(store: Store, run_id: str) -> Iterator[dict[str, Any]]:
    """The run's records, one canonical record per (sample, judge) when it was judged repeatedly."""
    from bqas.runner.repeats import settle

    return settle(store.iter_records(run_id))


TEMPERATURE_ZERO_NOTE = (
    "repeats at temperature 0 measure only server nondeterminism (batching, GPU kernels), not sampling "
    "variance; set llm.temperature to measure how a sampled judge varies"
)


def _repeats_summary(
    store: Store, run_id: str, scenario: Scenario, engine: JudgeEngine, summary: RunSummary
) -> dict[str, Any] | None:
    """Spread of the run-level figures over the repeats, flaky-sample counts and the temperature note."""
    if scenario.repeats < 2:
        return None
    from bqas.runner.repeats import flaky_count, repeat_figures

    figures = repeat_figures(store.iter_records(run_id), scenario.thresholds, scenario.repeats)
    straddles, ties = flaky_count(settled_records(store, run_id))
    figures.update(straddling_samples=straddles, ties_escalated=ties, rule="majority; ties escalated")
    if engine.llm is not None and engine.options.backend != "offline" and engine.llm.config.temperature == 0:
        figures["note"] = TEMPERATURE_ZERO_NOTE
    elif engine.llm is None or engine.options.backend == "offline":
        figures["note"] = "offline judges are deterministic: repeats without an LLM agree by construction"
    return figures


def execute(request: RunRequest, settings: Settings, store: Store) -> RunOutcome:
    """Run (or resume) a scenario to completion and write its outputs."""
    # The summary and the report files read every record back: fewer GC passes there too (gc_tuning).
    with fewer_collections():
        return _execute(request, settings, store)


def _target_for(
    request: RunRequest, scenario: Scenario, store: Store, stored: Mapping[str, Any] | None
) -> tuple[Target | None, str | None]:
    """The assistant under test (``--target``, else the scenario's ``target:``; on resume as the run
    started) and the run whose replies ``--reuse-target-replies`` reuses. Unset variables fail here."""
    from bqas.targets.config import check_environment, load_target_option

    if stored is not None:
        override = stored.get("target_override")
        reuse = stored.get("reuse_target_replies")
        if request.target is not None or request.reuse_target_replies is not None:
            raise ScenarioError("--resume: a run keeps the target it started with; start a new run to change it")
    else:
        override, reuse = request.target, None
        if request.reuse_target_replies is not None:
            source = store.find_run(request.reuse_target_replies)
            if source is None:
                raise ScenarioError(f"--reuse-target-replies: {store.missing_run(request.reuse_target_replies)}")
            reuse = source.id
    target = load_target_option(str(override)) if override is not None else scenario.target
    if target is not None and reuse is None:
        check_environment(target)
        if target.type == "python":  # a function that cannot be imported fails now, before a run is created
            from bqas.targets.kinds import load_function

            load_function(target.function)
    if request.retry_target_errors and stored is None:
        raise ScenarioError("--retry-target-errors: give --resume RUN_ID (the run whose target errors to retry)")
    if request.retry_target_errors and (target is None or reuse is not None):
        what = f"judges the stored replies of run {reuse}" if reuse is not None else "has no target"
        raise ScenarioError(f"--retry-target-errors: the run {what}; there is no target to ask again")
    if (target is not None or reuse is not None) and (request.ray or scenario.ray is not None):
        raise ScenarioError("--ray: a run with a target asks the assistant from this process; run it without --ray")
    return target, reuse


def _execute(request: RunRequest, settings: Settings, store: Store) -> RunOutcome:
    scenario, run_id, resuming = _scenario_for(request, store)
    stored = store.get_run(run_id).config if resuming else None  # type: ignore[union-attr]
    target, reuse = _target_for(request, scenario, store, stored)
    if request.ray or scenario.ray is not None:  # a bad cluster address fails now, before a run is created
        from bqas.runner.ray_run import check_cluster

        with request.step("reaching the Ray cluster"):
            check_cluster(request, scenario)
    backend = (stored or {}).get("backend") or request.backend or scenario.backend
    with request.step(loading_step(settings, backend, llm_overrides(scenario, request))):
        engine = engine_for(scenario, request, settings, stored)
    if target is not None and reuse is None:  # no call whose answer the judges could not use
        from bqas.targets.preflight import unmappable_fields

        problems = unmappable_fields(engine, work_items(scenario), target)
        if problems:
            raise ScenarioError("\n".join(problems))
    # An LLM judge is measured on its known-answer set before the run trusts it (cached: paid once). A resumed
    # run is checked again: its LLM comes from this command line, which may name another server or model.
    from bqas.runner.judge_gate import accepted_unfit, check_judges

    checking = "checking the LLM judge on its known-answer set (bqas judge-check)"
    with request.step(checking) if engine.tiers[1] else nullcontext():
        checks = check_judges(
            engine,
            scenario.judges,
            request.language or scenario.language or settings.language,
            settings,
            llm_overrides(scenario, request),
            accept_unfit=request.accept_unfit_judge or accepted_unfit(stored),
            resumed=resuming,
        )
    total = sum(repeat_count(w, scenario) for w in work_items(scenario))
    loading = None
    if not (request.ray or scenario.ray is not None):  # on Ray the actors judge, not this process
        loading = engine.start_loading(samples=total)  # a large run gets worker processes (BQAS_OFFLINE_POOL=auto)
    out_dir = _out_dir(request, run_id, stored)
    if not resuming:
        from bqas.judging.exchange import request_snapshot
        from bqas.runner.hashes import dataset_hash, judge_config

        judging = judge_config(scenario, engine, request.backend or scenario.backend)
        config = {
            "description": scenario.description,
            "fingerprint": scenario_fingerprint(scenario),
            "backend": request.backend or scenario.backend,
            # Where this process's offline tier judges: threads, processes (BQAS_OFFLINE_POOL), None (none here).
            "offline_pool": engine.dispatch.mode,
            "model": engine.llm.config.model if engine.llm else None,
            # The embedded engine of a local GGUF model: file, threads, slots, start-up seconds.
            "llm_engine": engine.llm.config.engine if engine.llm else None,
            "language": request.language or scenario.language,
            "judge_language": scenario.judge_language,
            "judges": scenario.judges,
            "thresholds": scenario.thresholds.model_dump(),
            "samples": count_items(scenario),
            "profiles": [str(p.resolve()) for p in [*scenario.profile_paths(), *request.profiles]],
            "profile_briefs": _briefs(engine),
            "out_dir": str(out_dir.resolve()),  # --resume writes here again
            "repeats": scenario.repeats,
            "dataset_hash": dataset_hash(scenario),
            "judge_config_hash": judging["hash"],
            "judge_config": judging,
            # The LLM judge's known-answer check (bqas.runner.judge_gate): figures, and whether it was unfit.
            "judge_check": checks,
            # The assistant under test as configured (secrets stay in the environment: ${VAR}, api_key_env).
            "target": target.model_dump(mode="json") if target is not None else None,
            "target_override": request.target,
            "reuse_target_replies": reuse,
            # Shared by every judgment's LLM request: the viewer's sample page rebuilds the request from it.
            "llm_request": request_snapshot(
                engine.llm if engine.options.backend != "offline" else None,
                max_field_chars=engine.options.max_field_chars,
                top_logprobs=engine.options.top_logprobs if engine.options.llm_confidence == "logprobs" else None,
            ),
        }
        store.create_run(
            run_id,
            scenario.name,
            config,
            scenario_path=str(scenario.path.resolve()) if scenario.path else None,
            total=total,
        )
    lease = RunLease.acquire(store, run_id)  # a second resume of the same run refuses here
    try:
        if resuming and stored is not None:
            store.update_run(run_id, status="running")
            config = dict(stored)
            if request.out_dir is not None:
                config["out_dir"] = str(out_dir.resolve())
            if checks:  # the check of this resume replaces the one of the start in the report and junit.xml
                config["judge_check"] = checks
            if config != stored:
                store.update_run(run_id, config=config)
        if request.on_start is not None:
            request.on_start(run_id, out_dir, resuming)
        retry = request.retry_target_errors
        done, done_repeats = _done_keys(store, run_id, scenario.repeats, retry)
        concurrency = request.concurrency or scenario.concurrency
        review = get_review_settings()
        tenant = review.local_tenant if review.review else None
        if tenant is not None and review.memory_examples and engine.llm is not None:
            engine.options.examples = memory_examples(store, tenant, review.memory_examples_k)

        def judge_here(done: set[str], done_repeats: Mapping[int, set[str]], stage: TargetStage | None = None) -> int:
            return _run_with_progress(
                engine, scenario, store, run_id, done, total, concurrency, request.progress, tenant, done_repeats, stage
            )

        retried: tuple[int, int] | None = None
        try:
            if request.ray or scenario.ray is not None:
                from bqas.runner.ray_pool import ClusterLost
                from bqas.runner.ray_run import notice, run_on_ray

                try:
                    judged = run_on_ray(
                        request, scenario, settings, store, run_id, done, total, concurrency, tenant, done_repeats
                    )
                except ClusterLost as lost:
                    # The cluster cannot judge any more: the rest is judged here, as a local run would.
                    notice(f"{lost}; judging the remaining samples in this process")
                    judged = lost.judged + judge_here(*_done_keys(store, run_id, scenario.repeats, retry))
            else:
                stage = None
                failed = store.target_error_samples(run_id) if retry else None
                if target is not None or reuse is not None:
                    from bqas.targets.stage import TargetStage

                    stage = TargetStage(
                        store,
                        run_id,
                        target,
                        reuse_from=reuse,
                        max_reply_bytes=settings.target_max_reply_bytes,
                        retry=failed,
                    )
                if stage is None and loading is not None:
                    # Judging waits for the models anyway; without a target to ask meanwhile the wait is a
                    # step of its own (a load that failed raises at the first judgment, as before).
                    from concurrent.futures import wait

                    with request.step("loading the offline models"):
                        wait([loading])
                with request.step(f"judging {total} samples", bar=request.progress):
                    judged = judge_here(done, done_repeats, stage)
                if stage is not None and failed is not None:
                    retried = (len(failed), stage.asked_again)
        except RunFailed as exc:
            # Loud, never a hang: the run is stored as failed with the reason, and the CLI exits non-zero.
            store.update_run(run_id, status="failed", finished_at=datetime.now(UTC), summary={"error": str(exc)})
            raise RunFailed(f"run {run_id} failed: {exc}") from exc
        with request.step("summarising the results"):
            summary = summarize(settled_records(store, run_id))
        repeats = _repeats_summary(store, run_id, scenario, engine, summary)
        if scenario.repeats > 1:  # the viewer lists, filters and pages a repeated run per sample
            from bqas.runner.settled import write_settled

            write_settled(store, run_id)
        llm = scenario.llm
        cost = cost_estimate(
            summary,
            llm.price_prompt_per_mtok if llm.price_prompt_per_mtok is not None else settings.price_prompt_per_mtok,
            llm.price_completion_per_mtok
            if llm.price_completion_per_mtok is not None
            else settings.price_completion_per_mtok,
        )
        thresholds = check_thresholds(summary, scenario.thresholds)
        summary_data = summary.as_dict(cost)
        # The gates as they were checked at the end of the run (what `bqas runs` and the viewer list).
        summary_data["gates"] = [t.as_dict() for t in thresholds]
        if repeats is not None:
            summary_data["repeats"] = repeats
        store.update_run(run_id, status="done", finished_at=datetime.now(UTC), summary=summary_data)
        with request.step(f"writing results.jsonl, junit.xml and report.html to {out_dir}"):
            meta = _run_meta(store, run_id, summary, thresholds, cost)
            write_outputs(store, run_id, out_dir, meta, request.baseline)
    finally:
        lease.release()  # held until the outputs are written, so a resume cannot overwrite them meanwhile
    dataset = scenario.dataset_path()
    source = dataset.name if dataset is not None else "samples"
    return RunOutcome(run_id, summary, thresholds, out_dir, judged, cost, source, retried)


def _out_dir(request: RunRequest, run_id: str, stored: Mapping[str, Any] | None) -> Path:
    """``--out``, else the folder the run was started with (on resume), else ``runs/<id>``."""
    if request.out_dir is not None:
        return request.out_dir
    if stored and stored.get("out_dir"):
        return Path(str(stored["out_dir"]))
    return Path("runs") / run_id


def _done_keys(
    store: Store, run_id: str, repeats: int, retry_target_errors: bool = False
) -> tuple[set[str], dict[int, set[str]]]:
    """The samples the run has results for: its first judgments, and those of each further repeat (a
    target error counts as none with ``retry_target_errors``)."""
    retry = retry_target_errors
    return store.done_keys(run_id, retry_target_errors=retry), {
        r: store.done_keys(run_id, r, retry_target_errors=retry) for r in range(2, repeats + 1)
    }


def _run_with_progress(
    engine: JudgeEngine,
    scenario: Scenario,
    store: Store,
    run_id: str,
    done: set[str],
    total: int,
    concurrency: int,
    show: bool,
    review_tenant: str | None = None,
    done_repeats: Mapping[int, set[str]] | None = None,
    targets: TargetStage | None = None,
) -> int:
    async def main() -> int:
        try:
            if not show:
                return await execute_run(
                    engine,
                    scenario,
                    store,
                    run_id,
                    concurrency=concurrency,
                    skip=done,
                    review_tenant=review_tenant,
                    done_repeats=done_repeats,
                    targets=targets,
                )
            finished = len(done) + sum(len(keys) for keys in (done_repeats or {}).values())
            with progress_bar(scenario.name, total, finished) as advance:
                return await execute_run(
                    engine,
                    scenario,
                    store,
                    run_id,
                    concurrency=concurrency,
                    skip=done,
                    on_progress=advance,
                    review_tenant=review_tenant,
                    done_repeats=done_repeats,
                    targets=targets,
                )
        finally:
            if engine.llm is not None:
                await engine.llm.aclose()
            if targets is not None:
                await targets.aclose()

    try:
        return run_until_stopped(new_event_loop(), main())
    except KeyboardInterrupt:
        store.update_run(run_id, status="interrupted")
        raise
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
