"""``bqas redteam``: a red-team scenario from start (or resume) to gates and report files."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bqas.redteam import catalog
from bqas.redteam.config import RedteamError, RedteamScenario, checked_index, fingerprint
from bqas.redteam.generate import Attack, generate
from bqas.redteam.summary import RedteamSummary, check_gates, summarize

if TYPE_CHECKING:
    from bqas.store.db import Store

KIND = "redteam"


class Interrupted(KeyboardInterrupt):
    """The run was stopped (Ctrl-C); its stored results stay for ``--resume``."""

    def __init__(self, run_id: str):
        super().__init__(run_id)
        self.run_id = run_id


@dataclass
class Plan:
    """What a red-team run sends: the attacks, the plugins they come from, and generation notes."""

    scenario: RedteamScenario
    attacks: list[Attack]
    plugins: dict[str, catalog.Plugin]
    strategies: list[str]
    index: Any
    notes: list[str] = field(default_factory=list)


@dataclass
class RedteamOutcome:
    run_id: str
    summary: RedteamSummary
    gates: list[dict[str, Any]]
    out_dir: Path
    sent_now: int
    notes: list[str]

    @property
    def passed(self) -> bool:
        return all(g["passed"] for g in self.gates)


def plan(scenario: RedteamScenario) -> Plan:
    """Check names and canaries and make the attacks (nothing is sent)."""
    section = scenario.redteam
    try:
        plugin_names = catalog.pick(section.plugins, catalog.plugins(), "plugin")
        strategy_names = catalog.pick(section.strategies, catalog.strategies(), "strategy")
    except catalog.CatalogError as exc:
        raise RedteamError(str(exc)) from None
    rates = scenario.thresholds.max_attack_success
    if isinstance(rates, dict):
        unknown = [k for k in rates if k != "overall" and k not in catalog.plugins()]
        if unknown:
            raise RedteamError(
                f"thresholds.max_attack_success: unknown plugin {', '.join(map(repr, unknown))}; "
                f"valid: overall, {', '.join(sorted(catalog.plugins()))}"
            )
    index = checked_index(scenario)
    plugins = {name: catalog.plugins()[name] for name in plugin_names}
    strategies = [catalog.strategies()[name] for name in strategy_names]
    attacks, notes = generate(scenario, list(plugins.values()), strategies, index)
    if section.llm_variations:
        from bqas.judging.factory import llm_config
        from bqas.redteam.variations import run_vary
        from bqas.settings import get_settings

        config = llm_config(get_settings())
        if config is None:
            raise RedteamError(
                "redteam.llm_variations: no LLM is configured (BQAS_LLM_BASE_URL and BQAS_JUDGE_MODEL, or BQAS_LLM_GGUF)"
            )
        made, more = run_vary(config, attacks, plugins, section.llm_variations, index, section.seed)
        attacks += made
        notes += more
    return Plan(scenario, attacks, plugins, strategy_names, index, notes)


def _config(scenario: RedteamScenario, made: Plan) -> dict[str, Any]:
    return {
        "kind": KIND,
        "scenario": scenario.model_dump(mode="json", exclude={"path"}),
        # Not under "thresholds": that key holds a scenario run's gates, which other commands read.
        "redteam_thresholds": scenario.thresholds.model_dump(mode="json"),
        "fingerprint": fingerprint(scenario),
        "plugins": sorted(made.plugins),
        "strategies": made.strategies,
        "canaries": bool(made.index),
        "attacks": len(made.attacks),
        "notes": made.notes,
    }


def scenario_of_run(store: Store, run_id: str) -> tuple[RedteamScenario, str]:
    """The stored scenario of a red-team run (``--resume``), as it started."""
    run = store.find_run(run_id)
    if run is None:
        raise RedteamError(f"--resume: {store.missing_run(run_id)}")
    if run.kind != KIND:
        raise RedteamError(f"--resume: run {run.id} is a {run.kind} run, not a red-team run")
    scenario = RedteamScenario.model_validate(run.config["scenario"])
    return scenario, str(run.id)


def gates_of(summary: RedteamSummary, config: dict[str, Any]) -> list[dict[str, Any]]:
    return check_gates(summary, config.get("redteam_thresholds") or {}, canaries=bool(config.get("canaries")))


def run_redteam(
    store: Store,
    scenario: RedteamScenario,
    out_dir: Path | None,
    *,
    resume: str | None = None,
    progress: Callable[[int, int], Any] | None = None,
) -> RedteamOutcome:
    """Send the attacks the run has no result for, then summarise, gate and write the report files (in
    ``out_dir``, default ``runs/<run id>``)."""
    from bqas.runner.execute import new_run_id

    made = plan(scenario)
    config = _config(scenario, made)
    if resume is not None:
        run = store.find_run(resume)
        if run is None:
            raise RedteamError(f"--resume: {store.missing_run(resume)}")
        if run.kind != KIND:
            raise RedteamError(f"--resume: run {run.id} is a {run.kind} run, not a red-team run")
        if run.config.get("fingerprint") != config["fingerprint"]:
            raise RedteamError(f"--resume: the scenario changed since run {run.id} started; start a new run")
        run_id = str(run.id)
        done = store.done_keys(run_id)
        store.update_run(run_id, status="running")
    else:
        run_id = new_run_id()
        path = str(scenario.path) if scenario.path is not None else None
        store.create_run(run_id, scenario.name, config, kind=KIND, scenario_path=path, total=len(made.attacks))
        done = set()
    out_dir = out_dir if out_dir is not None else Path("runs") / run_id
    pending = [a for a in made.attacks if a.id not in done]
    seq_of = {a.id: i for i, a in enumerate(made.attacks)}
    advance = progress(len(pending), len(made.attacks) - len(pending)) if progress is not None else None
    from bqas.redteam.execute import attack_all
    from bqas.redteam.graders import needs_judge
    from bqas.runner.loop import new_event_loop

    engine = None
    if pending and any(needs_judge(p, made.index) for p in made.plugins.values()):
        from bqas.judging.factory import build_engine
        from bqas.settings import get_settings

        # No canaries: the privacy and namespace judges grade, offline first and the LLM where configured.
        engine = build_engine(get_settings(), backend="auto", language=scenario.redteam.languages[0])

    async def main() -> None:
        try:
            await attack_all(
                store,
                run_id,
                scenario.target,
                pending,
                made.plugins,
                made.index,
                tenant_field=scenario.redteam.tenant_field,
                seq_of=seq_of,
                advance=advance,
                engine=engine,
            )
        finally:
            if engine is not None and engine.llm is not None:
                await engine.llm.aclose()

    loop = new_event_loop()
    try:
        loop.run_until_complete(main())
    except KeyboardInterrupt:
        # What was stored stays; `--resume` sends the rest (a batch not yet written is sent again).
        store.update_run(run_id, status="interrupted")
        raise Interrupted(run_id) from None
    finally:
        loop.close()
    summary = summarize(store.iter_records(run_id))
    gates = gates_of(summary, config)
    write_reports(out_dir, run_id, scenario.name, summary, gates, store.iter_records(run_id))
    from bqas.store.db import now

    store.update_run(
        run_id, status="finished", finished_at=now(), summary={"redteam": summary.as_dict(), "gates": gates}
    )
    return RedteamOutcome(run_id, summary, gates, out_dir, len(pending), made.notes)


def write_reports(
    out_dir: Path,
    run_id: str,
    scenario: str,
    summary: RedteamSummary,
    gates: list[dict[str, Any]],
    records: Iterator[dict[str, Any]],
) -> None:
    """results.jsonl, summary.json, report.md and junit.xml in ``out_dir``."""
    import json

    from bqas.redteam.report import redteam_markdown, write_junit

    out_dir.mkdir(parents=True, exist_ok=True)
    kept: list[dict[str, Any]] = []
    with (out_dir / "results.jsonl").open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            kept.append(record)
    doc = {"run_id": run_id, "scenario": scenario, **summary.as_dict(), "gates": gates,
           "passed": all(g["passed"] for g in gates)}  # fmt: skip
    (out_dir / "summary.json").write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    meta = {"id": run_id, "scenario": scenario}
    (out_dir / "report.md").write_text(redteam_markdown(meta, summary, gates), encoding="utf-8")
    write_junit(out_dir / "junit.xml", scenario, kept, gates)


def redteam_ci_summary(store: Store, run: Any) -> tuple[str, int]:
    """``bqas ci-summary`` of a red-team run: its Markdown report and exit code (1 when a gate is missed)."""
    from bqas.redteam.report import redteam_markdown

    summary = summarize(store.iter_records(run.id))
    gates = gates_of(summary, run.config)
    text = redteam_markdown({"id": run.id, "scenario": run.scenario}, summary, gates)
    return text, 0 if all(g["passed"] for g in gates) else 1


def show_redteam(store: Store, run: Any, as_json: bool) -> str:
    """``bqas show`` of a red-team run: its report, or its figures and gates as JSON."""
    import json

    summary = summarize(store.iter_records(run.id))
    gates = gates_of(summary, run.config)
    if as_json:
        doc = {"run_id": run.id, "scenario": run.scenario, "kind": KIND, "status": run.status,
               "summary": summary.as_dict(), "gates": gates}  # fmt: skip
        return json.dumps(doc, ensure_ascii=False, indent=2)
    return redteam_ci_summary(store, run)[0]
