"""The BQAS pytest plugin: judge inside your own tests, one BQAS run per pytest session.

    def test_reminder(bqas_judge):
        sample = {"user_input": "Erinnere mich morgen an die Konferenz", "detected_intent": "reminder",
                  "response": "Ich erinnere dich morgen um 8 Uhr.", "expected_intent": "reminder"}
        assert bqas_judge("voice", sample).verdict == "production_ready"

    def test_batch(bqas_judge):
        bqas_judge.batch("voice", samples).assert_thresholds(min_pass_rate=0.9, max_failed=0)

Installed with BQAS (entry point ``pytest11``), no wrapper command: plain ``pytest``. Every judgment of the
session is stored as one BQAS run (kind ``scenario``, scenario ``pytest``), so ``bqas show`` and ``bqas
compare`` work on it; ``--bqas-report DIR`` writes its results.jsonl, junit.xml and report.html.
``--bqas-backend`` picks offline, llm or auto (the LLM from ``BQAS_LLM_BASE_URL`` / ``BQAS_JUDGE_MODEL``).

Under pytest-xdist each worker judges in its own process and hands its records to the controller, which
stores the one run. The module imports nothing of BQAS at load time: a session that uses no fixture of
it judges, stores and writes nothing.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from bqas.judging.engine import BackendChoice
    from bqas.runner.summary import RunSummary

_RECORDS_KEY = "bqas_records"  # xdist workeroutput: the worker's records as JSON lines


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bqas", "BQAS judges (bqas_judge fixture)")
    group.addoption(
        "--bqas-backend",
        default=None,
        choices=("offline", "llm", "auto"),
        help="Who judges in bqas_judge: offline, llm or auto (default: auto, offline when no LLM is configured).",
    )
    group.addoption(
        "--bqas-report",
        default=None,
        metavar="DIR",
        help="Write the session's BQAS run to DIR: results.jsonl, junit.xml, report.html.",
    )
    group.addoption("--bqas-language", default=None, help="Prompt language of bqas_judge: de, en or zh.")
    group.addoption(
        "--bqas-target",
        default=None,
        metavar="FILE|YAML",
        help="The assistant under test (a YAML file with a target: block, or inline YAML; docs/targets.md): "
        "bqas_judge sends it every sample without a response and judges its answer.",
    )


@dataclass
class Judgment:
    """One judgment: the stored record's main fields as attributes, the whole record in ``record``."""

    record: dict[str, Any]

    @property
    def verdict(self) -> str | None:
        return self.record.get("verdict")

    @property
    def status(self) -> str | None:
        return self.record.get("status")

    @property
    def composite_score(self) -> float | None:
        return self.record.get("composite_score")

    @property
    def escalation(self) -> str | None:
        return self.record.get("escalation")

    @property
    def unscored_reason(self) -> str | None:
        return self.record.get("unscored_reason")

    @property
    def dimensions(self) -> dict[str, Any]:
        """Dimension name -> value (``None`` where not measured)."""
        dims = self.record.get("dimensions") or {}
        return {name: d.get("value") if d.get("measured", True) else None for name, d in dims.items()}

    @property
    def failed_gates(self) -> list[str]:
        """The pass/fail dimensions that failed (a failed gate fails the verdict whatever the composite)."""
        dims = self.record.get("dimensions") or {}
        return [name for name, d in dims.items() if isinstance(d, Mapping) and d.get("value") == "fail"]

    def __repr__(self) -> str:
        # pytest cuts an assert message's repr at 240 characters: the verdict and the failed gates first, a
        # short reason; the whole judgment is the "BQAS judgments" section of the failure (explain()).
        reason = str(self.unscored_reason or self.record.get("reasoning") or "")
        if len(reason) > 100:
            reason = reason[:99] + "…"
        return (
            f"Judgment(verdict={self.verdict!r}, composite={self.composite_score!r}, "
            f"failed_gates={self.failed_gates!r}, reason={reason!r})"
        )

    def explain(self) -> str:
        """The judgment in full for a person: verdict, failed gates with their notes, every dimension,
        escalation and the judge's reasoning (what a failing test shows under "BQAS judgments")."""
        r = self.record
        composite = r.get("composite_score")
        head = (
            f"{r.get('sample_id') or r.get('response_id')} · judge {r.get('judge')}: {self.verdict or r.get('status')}"
        )
        if composite is not None:
            head += f" (composite {composite:g})" if isinstance(composite, int | float) else f" (composite {composite})"
        lines = [head]
        dims = r.get("dimensions") or {}
        for name in self.failed_gates:
            note = dims[name].get("note")
            lines.append(f"  failed gate: {name}" + (f" — {note}" if note else ""))
        shown = []
        for name, d in dims.items():
            if not isinstance(d, Mapping):
                continue
            value = d.get("value")
            if not d.get("measured", True) or value is None:
                shown.append(f"{name} not measured")
            else:
                shown.append(f"{name} {value:g}" if isinstance(value, float) else f"{name} {value}")
        if shown:
            lines.append("  dimensions: " + " · ".join(shown))
        if r.get("escalation"):
            why = "; ".join(str(x) for x in r.get("escalation_reasons") or [])
            lines.append(f"  escalation: {r['escalation']}" + (f" ({why})" if why else ""))
        if self.unscored_reason:
            lines.append(f"  unscored: {self.unscored_reason}")
        if r.get("reasoning"):
            lines.append(f"  reasoning: {r['reasoning']}")
        for error in r.get("errors") or []:
            lines.append(f"  error: {error}")
        return "\n".join(lines)


@dataclass
class Batch:
    """The judgments of one batch and their run-level figures."""

    judgments: list[Judgment]

    @property
    def summary(self) -> dict[str, Any]:
        return self._summary().as_dict()

    @property
    def pass_rate(self) -> float | None:
        return self._summary().pass_rate

    def _summary(self) -> RunSummary:
        from bqas.runner.summary import summarize

        return summarize(j.record for j in self.judgments)

    def check_thresholds(self, **gates: Any) -> list[dict[str, Any]]:
        """The gates of a scenario's ``thresholds:`` (min_pass_rate, min_mean_composite, max_failed,
        max_unscored, max_invalid, dimensions) checked on this batch, each with its actual value."""
        from bqas.runner.scenario import Thresholds
        from bqas.runner.summary import check_thresholds

        return [t.as_dict() for t in check_thresholds(self._summary(), Thresholds.model_validate(gates))]

    def assert_thresholds(self, **gates: Any) -> None:
        """Fail the test, naming each missed gate with its actual value, unless every gate is met."""
        __tracebackhide__ = True
        missed = [t for t in self.check_thresholds(**gates) if not t["passed"]]
        if missed:
            lines = [f"{t['name']}: expected {t['expected']}, got {t['actual']}" for t in missed]
            pytest.fail("BQAS thresholds missed: " + "; ".join(lines), pytrace=False)


@dataclass
class _Session:
    """The judging state of one pytest process: engine, event loop thread, collected records."""

    config: pytest.Config
    records: list[dict[str, Any]] = field(default_factory=list)
    by_test: dict[str, list[Judgment]] = field(default_factory=dict)  # shown when that test fails
    _engine: Any = None
    _targets: Any = None
    _loop: Any = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run_id(self) -> str:
        return str(self.config.stash[_RUN_ID])

    def engine(self) -> Any:
        if self._engine is None:
            from bqas.judging.factory import build_engine
            from bqas.settings import get_settings

            backend: BackendChoice = self.config.getoption("--bqas-backend") or "auto"  # the option's choices
            self._engine = build_engine(
                get_settings(), backend=backend, language=self.config.getoption("--bqas-language")
            )
        return self._engine

    def call(self, coro: Any) -> Any:
        """Run ``coro`` on the session's own event loop (its thread), so that sync and async tests alike can
        judge and the LLM client keeps one connection pool for the session."""
        import asyncio

        with self._lock:
            if self._loop is None:
                from bqas.runner.loop import new_event_loop

                self._loop = new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="bqas-judge", daemon=True)
                self._thread.start()
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def judge(self, judge: str, samples: list[Mapping[str, Any]], nodeid: str, language: str | None) -> list[Judgment]:
        __tracebackhide__ = True  # a failure points at the test's line, not into the plugin
        from bqas.judgment.work import DatasetItem, WorkItem
        from bqas.runner.execute import judge_one
        from bqas.runner.scenario import Scenario

        engine = self.engine()
        scenario = Scenario.model_validate(
            {"name": "pytest", "judges": [judge], "samples": [dict(s) for s in samples], "language": language}
        )
        start = len(self.records)
        works = []
        for i, sample in enumerate(samples):
            sample_id = str(sample.get("id") or (nodeid if len(samples) == 1 else f"{nodeid}[{i}]"))
            works.append(
                WorkItem(f"{sample_id}::{judge}", start + i, judge, DatasetItem(i + 1, sample_id, dict(sample)))
            )

        async def all_of() -> list[dict[str, Any]]:
            import asyncio

            targets = self.targets()
            if targets is None:
                return list(await asyncio.gather(*(judge_one(engine, scenario, self.run_id(), w) for w in works)))
            return [
                r
                for rs in await asyncio.gather(*(self._asked(targets, engine, scenario, w) for w in works))
                for r in rs
            ]

        records = self.call(all_of())
        if len(records) != len(works):  # a conversation (turns:) is judged turn by turn
            works = [
                WorkItem(str(r.get("response_id")), start + i, judge, works[0].item) for i, r in enumerate(records)
            ]
        for work, record in zip(works, records, strict=True):
            record["test"] = nodeid
            record["pytest_worker"] = os.environ.get("PYTEST_XDIST_WORKER")  # gw0, gw1 … under xdist
            record["_key"] = f"{nodeid}::{work.key}::{work.seq}"
        self.records.extend(records)
        invalid = [r for r in records if r.get("status") == "invalid"]
        if invalid:
            raise ValueError("bqas_judge: invalid sample: " + "; ".join("; ".join(r["errors"]) for r in invalid))
        failed = [r for r in records if r.get("status") == "target_error"]
        if failed:
            pytest.fail(
                "bqas_judge: the assistant gave no usable answer: " + "; ".join(r["target_error"] for r in failed)
            )
        judgments = [Judgment(r) for r in records]
        self.by_test.setdefault(nodeid, []).extend(judgments)
        return judgments

    def targets(self) -> Any:
        """The target stage of ``--bqas-target`` (None without one); nothing of it is stored but the records."""
        option = self.config.getoption("--bqas-target")
        if option is None:
            return None
        if self._targets is None:
            from bqas.settings import get_settings
            from bqas.targets.config import check_environment, load_target_option
            from bqas.targets.stage import TargetStage

            target = load_target_option(str(option))
            check_environment(target)
            self._targets = TargetStage(
                None, self.run_id(), target, max_reply_bytes=get_settings().target_max_reply_bytes
            )
        return self._targets

    async def _asked(self, targets: Any, engine: Any, scenario: Any, work: Any) -> list[dict[str, Any]]:
        """One sample: the target's answer for it (turn by turn for ``turns:``), then its judgment(s)."""
        from dataclasses import replace

        from bqas.runner.execute import invalid_record, judge_one, target_error_record
        from bqas.targets.conversation import turn_items
        from bqas.targets.preflight import unjudgeable
        from bqas.targets.stage import Answered

        turns = turn_items(work.item)
        group = [work] if turns is None else [replace(work, key=f"{t.sample_id}::{work.judge}", item=t) for t in turns]
        doomed = unjudgeable(engine, targets.target, group)  # invalid whatever the answer: not sent
        answered = Answered([], [(w, r, False) for w, r in doomed], []) if doomed else await targets.answer(group)
        language = work.item.data.get("language") or scenario.language
        out = [await judge_one(engine, scenario, self.run_id(), w) for w in answered.judge]
        for failed, reason, is_target_error in answered.failed:
            make = target_error_record if is_target_error else None
            out.append(
                make(self.run_id(), failed, reason, language)
                if make
                else invalid_record(self.run_id(), failed, reason, language, {})
            )
        return out

    def close(self) -> None:
        if self._loop is None:
            return
        engine = self._engine
        if engine is not None and engine.llm is not None:
            self.call(engine.llm.aclose())
        if self._targets is not None:
            self.call(self._targets.aclose())
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._loop.close()


_RUN_ID = pytest.StashKey[str]()
_SESSION = pytest.StashKey[_Session]()


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    if _is_worker(config):
        run_id = config.workerinput.get("bqas_run_id")  # type: ignore[attr-defined]
    else:
        from datetime import UTC, datetime
        from secrets import token_hex

        # As bqas.runner.execute.new_run_id, without importing BQAS into every pytest session.
        run_id = f"r-{datetime.now(UTC):%Y%m%d-%H%M%S}-{token_hex(2)}"
    config.stash[_RUN_ID] = str(run_id)
    config.stash[_SESSION] = _Session(config)
    # By the plugin's name: "xdist" when autoloaded, "xdist.plugin" with -p xdist.plugin.
    if config.pluginmanager.hasplugin("xdist") or config.pluginmanager.hasplugin("xdist.plugin"):
        config.pluginmanager.register(_XdistHooks(), "bqas-xdist")


class _XdistHooks:
    """Registered only when pytest-xdist is there (its hooks are unknown to pytest otherwise)."""

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["bqas_run_id"] = node.config.stash[_RUN_ID]

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        lines = getattr(node, "workeroutput", {}).get(_RECORDS_KEY, "")
        records = node.config.stash[_SESSION].records
        records.extend(json.loads(line) for line in lines.splitlines() if line)


@pytest.fixture(scope="session")
def _bqas_session(request: pytest.FixtureRequest) -> Iterator[_Session]:
    session = request.config.stash[_SESSION]
    yield session
    session.close()


class _Judge:
    """``bqas_judge(judge, sample)`` -> :class:`Judgment`; ``bqas_judge.batch(judge, samples)`` -> :class:`Batch`."""

    def __init__(self, session: _Session, nodeid: str):
        self._session = session
        self._nodeid = nodeid

    def __call__(self, judge: str, sample: Mapping[str, Any], *, language: str | None = None) -> Judgment:
        __tracebackhide__ = True
        return self._session.judge(judge, [sample], self._nodeid, language)[0]

    def batch(self, judge: str, samples: Iterable[Mapping[str, Any]], *, language: str | None = None) -> Batch:
        __tracebackhide__ = True
        items = list(samples)
        if not items:
            raise ValueError("bqas_judge.batch: no samples")
        return Batch(self._session.judge(judge, items, self._nodeid, language))


@pytest.fixture
def bqas_judge(_bqas_session: _Session, request: pytest.FixtureRequest) -> _Judge:
    """Judge samples with BQAS inside a test; every judgment joins the session's BQAS run."""
    return _Judge(_bqas_session, request.node.nodeid)


#: Judgments of a failed test shown in full; a batch's worst first, then the rest counted.
_SHOWN_JUDGMENTS = 10
_VERDICT_ORDER = {"failed": 0, "unscored": 1, "invalid": 1, "needs_review": 2, "production_ready": 3}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test that judged something gets a "BQAS judgments" section: each judgment's verdict,
    failed gates, dimensions and reasoning, whatever the assert looked at."""
    report = yield
    if report.when == "call" and report.failed:
        state = item.config.stash.get(_SESSION, None)
        judgments = state.by_test.pop(item.nodeid, []) if state is not None else []
        if judgments:
            worst = sorted(judgments, key=lambda j: _VERDICT_ORDER.get(str(j.verdict or j.status), 4))
            text = "\n".join(j.explain() for j in worst[:_SHOWN_JUDGMENTS])
            if len(worst) > _SHOWN_JUDGMENTS:
                text += f"\n… and {len(worst) - _SHOWN_JUDGMENTS} more judgments of this test (bqas show RUN)"
            report.sections.append(("BQAS judgments", text))
    elif report.when == "teardown":
        state = item.config.stash.get(_SESSION, None)
        if state is not None:
            state.by_test.pop(item.nodeid, None)
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = config.stash.get(_SESSION, None)
    if state is None:
        return
    if _is_worker(config):
        config.workeroutput[_RECORDS_KEY] = "\n".join(  # type: ignore[attr-defined]
            json.dumps(r, ensure_ascii=False) for r in state.records
        )
        return
    if state.records:
        _store_run(config, state.records)


def _store_run(config: pytest.Config, records: list[dict[str, Any]]) -> None:
    """The session's judgments as one stored run, as ``bqas run`` stores a scenario's."""
    import os
    from datetime import UTC, datetime

    from bqas.privacy import install
    from bqas.runner.run import write_outputs
    from bqas.runner.summary import summarize
    from bqas.settings import find_home, get_settings
    from bqas.store.db import open_store

    install()  # the run is stored: with BQAS_REDACT_PII on it is masked (bqas.redaction)

    run_id = config.stash[_RUN_ID]
    settings = get_settings()
    if not os.environ.get("BQAS_HOME"):
        # The project's store, found from pytest's root folder: a test that changed its working folder
        # (a temporary one) must not leave a store there.
        settings = settings.model_copy(update={"home": find_home(config.rootpath)})
    store = open_store(settings.resolved_database_url())
    judges = sorted({str(r.get("judge")) for r in records if r.get("judge")})
    report = config.getoption("--bqas-report")
    out_dir = Path(report) if report else None
    store.create_run(
        run_id,
        "pytest",
        {
            "description": f"pytest session in {config.rootpath}",
            "backend": config.getoption("--bqas-backend") or "auto",
            "model": next((r.get("model") for r in records if r.get("model")), None),
            "language": config.getoption("--bqas-language"),
            "judges": judges,
            "thresholds": {},
            "samples": len(records),
            "source": "pytest",
            "out_dir": str(out_dir.resolve()) if out_dir else None,
        },
        total=len(records),
    )
    # Ordered by test id, so that a run under xdist stores its results in the same order as without.
    records.sort(key=lambda r: str(r.get("_key")))
    store.add_results(run_id, [(str(r.pop("_key")), i, r) for i, r in enumerate(records)])
    summary = summarize(store.iter_records(run_id))
    store.update_run(run_id, status="done", finished_at=datetime.now(UTC), summary=summary.as_dict(None))
    if out_dir is not None:
        from bqas.runner.run import _run_meta

        write_outputs(store, run_id, out_dir, _run_meta(store, run_id, summary, [], None))
    config.stash[_STORED] = f"{run_id}: {summary.samples} judgments" + (f", report {out_dir}" if out_dir else "")


_STORED = pytest.StashKey[str]()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    stored = config.stash.get(_STORED, None)
    if stored:
        terminalreporter.write_sep("-", "BQAS")
        terminalreporter.write_line(f"bqas run {stored} (bqas show / bqas compare)")
