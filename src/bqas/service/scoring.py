"""Scoring for the service: check a request against the judges, run judges and RAGAS metrics, aggregate.

One :class:`Scorer` per process holds one engine per backend (and so one LLM client with its connection
pool and cache). RAGAS metrics come from ``bqas.ragas.api.score_sample`` when that module is importable.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from bqas.judging.engine import InvalidSample, JudgeEngine, check_inputs
from bqas.judging.factory import build_engine
from bqas.service.config import ServiceSettings
from bqas.service.metrics import ServiceMetrics
from bqas.settings import Settings
from bqas.store.db import Store

UNAVAILABLE = "LLM unavailable"
# Worst first; "unscored" (needs a person) ranks between failed and needs_review.
VERDICT_RANK: dict[str, int] = {"failed": 0, "unscored": 1, "needs_review": 2, "production_ready": 3}


class RequestProblem(ValueError):
    """A request that cannot be scored; ``loc`` is the field path (as in FastAPI's 422 answers)."""

    def __init__(self, loc: Sequence[str | int], message: str):
        super().__init__(message)
        self.loc = tuple(loc)
        self.message = message


class LLMUnavailable(RuntimeError):
    """The LLM could not be reached for at least one judgment (the engine returned an unscored result)."""

    def __init__(self, reason: str, records: list[dict[str, Any]]):
        super().__init__(reason)
        self.reason = reason
        self.records = records


@dataclass
class ScoreCall:
    """Everything one scoring call needs (one sample or one turn)."""

    fields: dict[str, Any]
    judges: list[str]
    metrics: list[str]
    language: str | None
    judge_language: str
    response_id: str
    backend: str
    extra: dict[str, Any] = field(default_factory=dict)


def llm_unavailable(record: Mapping[str, Any]) -> bool:
    """Was the record left unscored because the LLM could not be reached (BQAS judge or RAGAS metric)?"""
    reason = str(record.get("unscored_reason") or "")
    # The engine says "LLM unavailable: …"; bqas.ragas reports the client's exception as "LLMError: …".
    return record.get("status") != "scored" and reason.startswith((UNAVAILABLE, "LLMError:"))


def ragas_api() -> ModuleType | None:
    """The RAGAS scoring module, or None when it (or RAGAS itself) is not installed."""
    try:
        return importlib.import_module("bqas.ragas.api")
    except ImportError:
        return None


# Whose request is being scored (set by the endpoint or the job worker; engines are shared by tenants).
CURRENT_TENANT: ContextVar[tuple[Store, str] | None] = ContextVar("bqas_current_tenant", default=None)


def bind_tenant(store: Store, tenant: str) -> None:
    """Score the rest of this task for ``tenant``: its reviewed cases calibrate the LLM judge and its LLM
    cache entries are its own (no cache hit reveals what another tenant sent)."""
    from bqas.llm.cache import CACHE_SCOPE

    CURRENT_TENANT.set((store, tenant))
    CACHE_SCOPE.set("tenant:" + tenant)


async def _memory_examples(judge: str, values: Mapping[str, Any], language: str) -> str:
    """Similar cases the current tenant's reviewers decided, fenced as data, for the LLM judge."""
    current = CURRENT_TENANT.get()
    if current is None:
        return ""
    from bqas.review.memory import calibration_examples
    from bqas.review.settings import get_review_settings

    store, tenant = current
    k = get_review_settings().memory_examples_k
    return await asyncio.to_thread(calibration_examples, store, tenant, judge, values, k, language=language)


class Scorer:
    """Judges samples for the API and the job workers."""

    def __init__(self, settings: Settings, service: ServiceSettings, metrics: ServiceMetrics | None = None):
        self.settings = settings
        self.service = service
        self.metrics = metrics
        self._engines: dict[str, JudgeEngine] = {}

    def engine(self, backend: str) -> JudgeEngine:
        """The engine for ``backend`` (built once); RequestProblem when the server cannot provide it."""
        engine = self._engines.get(backend)
        if engine is None:
            try:
                engine = build_engine(self.settings, backend=backend)  # type: ignore[arg-type]
            except ValueError as exc:
                raise RequestProblem(("body", "backend"), f"backend {backend!r} is not available here: {exc}") from None
            from bqas.review.settings import get_review_settings

            review = get_review_settings()
            if review.review and review.memory_examples and engine.llm is not None:
                engine.options.examples = _memory_examples
            if self.service.profiles_dir is not None:
                engine.options.profile_lookup = self._profile_lookup(engine)
            self._engines[backend] = engine
        return engine

    def _profile_lookup(self, engine: JudgeEngine) -> Callable[[str], Any]:
        """judge -> the current tenant's calibration profile (loaded and checked once per tenant and engine)."""
        cache: dict[str, dict[str, Any]] = {}
        root = self.service.profiles_dir
        assert root is not None

        def lookup(judge: str) -> Any:
            current = CURRENT_TENANT.get()
            if current is None:
                return None
            tenant = current[1]
            if tenant not in cache:
                from bqas.trust.load import load_profiles
                from bqas.trust.profile import ProfileError

                folder = root / tenant
                paths = (
                    sorted(p for p in folder.glob("*") if p.suffix in (".yaml", ".yml", ".json"))
                    if folder.is_dir()
                    else []
                )
                try:
                    cache[tenant] = load_profiles(paths, engine)
                except ProfileError as exc:
                    raise RequestProblem(("body", "judges"), f"calibration profile of tenant {tenant}: {exc}") from None
                if self.metrics is not None:
                    self.metrics.observe_profiles(cache[tenant].values())
            return cache[tenant].get(judge)

        return lookup

    async def aclose(self) -> None:
        for engine in self._engines.values():
            if engine.llm is not None:
                await engine.llm.aclose()
        self._engines.clear()

    def check(
        self,
        fields: Mapping[str, Any],
        judges: Sequence[str],
        metrics: Sequence[str],
        backend: str,
        loc: Sequence[str | int] = ("body",),
    ) -> None:
        """Raise RequestProblem (with the field path) unless every judge and metric can score ``fields``."""
        engine = self.engine(backend)
        for i, name in enumerate(judges):
            try:
                spec = engine.registry.get(name)
            except KeyError as exc:
                raise RequestProblem(("body", "judges", i), str(exc).strip('"')) from None
            if spec.kind == "generator":
                raise RequestProblem(("body", "judges", i), f"judge {name!r} generates test inputs; it does not grade")
            try:
                check_inputs(spec, fields)
            except InvalidSample as exc:
                raise RequestProblem((*loc, "sample", exc.field), str(exc)) from None
        if not metrics:
            return
        api = ragas_api()
        if api is None:
            raise RequestProblem(
                ("body", "metrics"),
                "RAGAS metrics are not available on this server (module bqas.ragas.api cannot be imported; "
                "install the ragas extra). Use BQAS judges in 'judges' instead.",
            )
        known = getattr(api, "METRICS", None)
        for i, metric in enumerate(metrics):
            if known is not None and metric not in known:
                raise RequestProblem(
                    ("body", "metrics", i), f"unknown RAGAS metric {metric!r}; known: {', '.join(known)}"
                )

    async def score(self, call: ScoreCall) -> list[dict[str, Any]]:
        """Result records, one per judge then one per metric. Raises LLMUnavailable, RequestProblem."""
        engine = self.engine(call.backend)
        try:
            results = await asyncio.gather(
                *(
                    engine.evaluate(judge, call.fields, response_id=call.response_id, language=call.language)
                    for judge in call.judges
                )
            )
        except InvalidSample as exc:
            raise RequestProblem(("body", "sample", exc.field), str(exc)) from None
        records = [r.to_record() for r in results]
        if call.metrics:
            records.extend(await self._ragas(engine, call))
        if self.metrics is not None:
            self.metrics.observe_records(records)
        reasons = [str(r["unscored_reason"]) for r in records if llm_unavailable(r)]
        if reasons:
            raise LLMUnavailable(reasons[0], records)
        return records

    async def _ragas(self, engine: JudgeEngine, call: ScoreCall) -> list[dict[str, Any]]:
        api = ragas_api()
        if api is None:
            raise RequestProblem(("body", "metrics"), "RAGAS metrics are not available on this server")
        try:
            out = api.score_sample(call.fields, list(call.metrics), llm=engine.llm, judge_language=call.judge_language)
            if inspect.isawaitable(out):
                out = await out
        except ValueError as exc:  # score_sample's usage errors (unknown metric, judge language)
            raise RequestProblem(("body", "metrics"), str(exc)) from None
        records: list[dict[str, Any]] = []
        for item in out or []:
            if hasattr(item, "to_record"):
                records.append(item.to_record())
            elif isinstance(item, Mapping):
                records.append(dict(item))
            else:
                raise TypeError(f"bqas.ragas.api.score_sample returned {type(item).__name__}, expected records")
        for record in records:
            record.setdefault("response_id", call.response_id)
        return records


def aggregate(turns: Sequence[Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Session summary: mean composite over scored results, worst verdict, number of escalations."""
    composites: list[float] = []
    per_turn: list[float | None] = []
    verdicts: list[str] = []
    escalations = scored = unscored = results = 0
    for records in turns:
        values = [float(r["composite_score"]) for r in records if r.get("composite_score") is not None]
        per_turn.append(round(sum(values) / len(values), 2) if values else None)
        composites.extend(values)
        for r in records:
            results += 1
            if r.get("status") == "scored":
                scored += 1
            else:
                unscored += 1
            verdict = r.get("verdict")
            if isinstance(verdict, str) and verdict in VERDICT_RANK:
                verdicts.append(verdict)
            if r.get("escalation"):
                escalations += 1
    return {
        "turns": len(turns),
        "results": results,
        "scored": scored,
        "unscored": unscored,
        "mean_composite": round(sum(composites) / len(composites), 2) if composites else None,
        "worst_verdict": min(verdicts, key=VERDICT_RANK.__getitem__) if verdicts else None,
        "escalations": escalations,
        "per_turn_composite": per_turn,
    }


def redact(value: Any, language: str = "de") -> Any:
    """``value`` with PII masked in every string and dict key (see :func:`bqas.privacy.redact`)."""
    from bqas.privacy import redact as redact_all

    return redact_all(value)
