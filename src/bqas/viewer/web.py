"""The results viewer's pages: a FastAPI router with server-rendered HTML, behind the review login.

Mounted under the review path (``/review/runs``) so the review session cookie, whose path is the review
path, covers it: ``bqas view`` serves it for local runs (tenant ``@local``), ``bqas serve`` for each
tenant's own runs (a run's ``config.tenant``; CLI runs belong to ``@local``). Pages:
``/review/runs`` (the runs), ``/review/runs/{run}`` (every sample: search, filters, sort, paging, the
composite histogram, per-tag breakdown, risk–coverage of the run's calibration profiles),
``/review/runs/{run}/results/{id}`` (one sample), ``/review/runs/compare?a=A&b=B`` (two runs).
All paging and filtering happens in SQL; the templates autoescape every stored text.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from bqas.auth.keys import Authenticator
from bqas.review.sessions import SessionManager, SessionView, cookie_name
from bqas.review.settings import ReviewSettings, get_review_settings
from bqas.review.web import _num, _pretty, _secure, parse_page
from bqas.store.db import Store
from bqas.store.models import ResultRow, Run, SettledRow
from bqas.tenants import LOCAL_TENANT
from bqas.textsafe import form_value, html_value
from bqas.viewer import query

if TYPE_CHECKING:
    import jinja2

    from bqas.runner.compare import Comparison

MAX_ID = 2**63 - 1
_TEXT_LIMIT = 20_000  # one runaway input is clipped on the page (the store keeps it whole)


@cache
def _templates() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        # The viewer's pages extend the review page's base.html (same look, header and keyboard script).
        loader=jinja2.ChoiceLoader(
            [jinja2.PackageLoader("bqas.viewer", "templates"), jinja2.PackageLoader("bqas.review", "templates")]
        ),
        autoescape=True,
        # Characters HTML cannot carry (control characters, lone surrogates) become visible \\xNN escapes,
        # bidi controls are shown and right-to-left text isolated; markup (macro output) passes as it is.
        finalize=html_value,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pretty"] = lambda v: _clip(_pretty(v))
    env.filters["form_value"] = form_value
    env.filters["num"] = _num
    return env


def _clip(text: str) -> str:
    return text if len(text) <= _TEXT_LIMIT else text[:_TEXT_LIMIT] + f" … ({len(text) - _TEXT_LIMIT} more characters)"


def table_for(store: Store, run: Run) -> query.Table:
    """What the run table lists: a finished run judged with ``--repeats`` its settled samples (one row per
    sample, written at the end of the run; here once for a run finished before they were), else results."""
    config = run.config if isinstance(run.config, Mapping) else {}
    if int(config.get("repeats") or 1) < 2:
        return ResultRow
    if not store.has_settled(run.id) and run.status != "running":
        from bqas.runner.settled import write_settled

        write_settled(store, run.id)
    return SettledRow if store.has_settled(run.id) else ResultRow


def run_tenant(run: Run) -> str:
    """Whose run this is: ``config.tenant`` where a service wrote it, else the local CLI tenant."""
    config = run.config if isinstance(run.config, Mapping) else {}
    tenant = config.get("tenant")
    return tenant if isinstance(tenant, str) and tenant else LOCAL_TENANT


class _CompareCache:
    """The bootstrap comparison of two runs, computed in a background thread (it streams both runs and
    resamples every dimension: about a minute for 100,000 samples) and kept while both runs are final."""

    def __init__(self, size: int = 8, wait: float = 3.0) -> None:
        self.size = size
        self.wait = wait  # small runs finish within this; the page says "computing" for larger ones
        self._items: dict[tuple[str, str, str, str], Comparison] = {}
        self._running: dict[tuple[str, str, str, str], threading.Event] = {}
        self._lock = threading.Lock()

    def get(self, store: Store, a: Run, b: Run) -> Comparison | None:
        """The comparison, or None while it is still being computed."""
        key = (a.id, b.id, _version(store, a), _version(store, b))
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                return hit
            done = self._running.get(key)
            if done is None:
                done = self._running[key] = threading.Event()
                threading.Thread(target=self._compute, args=(store, key, done), daemon=True).start()
        done.wait(self.wait)
        with self._lock:
            return self._items.get(key)

    def _compute(self, store: Store, key: tuple[str, str, str, str], done: threading.Event) -> None:
        from bqas.runner.compare import compare_runs
        from bqas.runner.run import settled_records

        try:  # canonical records: a run with --repeats pairs once per sample
            result = compare_runs(settled_records(store, key[0]), settled_records(store, key[1]))
            with self._lock:
                if len(self._items) >= self.size:
                    self._items.pop(next(iter(self._items)))
                self._items[key] = result
        finally:
            with self._lock:
                self._running.pop(key, None)
            done.set()


def _version(store: Store, run: Run) -> str:
    """What changes when a run's results may have changed (a resumed run is running again)."""
    if run.status == "running":
        return f"running:{store.count_results(run.id)}"  # results are only ever added
    return f"{run.status}:{run.finished_at}"


class _Aggregates:
    """Per-run facets, intents, tags and histogram (full scans of the run), kept per run version."""

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._items: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, store: Store, run: Run, table: query.Table = ResultRow) -> dict[str, Any]:
        key = (run.id, _version(store, run), table.__tablename__)
        with self._lock:
            hit = self._items.get(key)
        if hit is not None:
            return hit
        value = {
            "facets": query.run_facets(store, run.id, table),
            "intents": query.distinct_values(store, run.id, "intent", table=table),
            "tags": query.tag_breakdown(store, run.id, table=table),
            "histogram": query.composite_histogram(store, run.id, table=table),
        }
        if run.status != "running":
            with self._lock:
                if len(self._items) >= self.size:
                    self._items.pop(next(iter(self._items)))
                self._items[key] = value
        return value


def _query(values: Mapping[str, str], **extra: str) -> str:
    merged = {**values, **extra}
    return urlencode({k: v for k, v in merged.items() if v and not (k == "sort" and v == "seq")})


def _redteam(run: Run) -> dict[str, Any] | None:
    """The attack-success table of a red-team run (bqas redteam), else None."""
    if run.kind != "redteam":
        return None
    from bqas.redteam.viewer import redteam_view

    return redteam_view(run)


def _risk_charts(run: Run) -> list[dict[str, Any]]:
    from bqas.report.charts import risk_coverage_chart

    config = run.config if isinstance(run.config, Mapping) else {}
    charts = []
    for brief in config.get("profile_briefs") or []:
        if not isinstance(brief, Mapping):
            continue
        for tier in brief.get("tiers") or []:
            if isinstance(tier, Mapping):
                judge = str(brief.get("judge"))
                charts.append({"judge": judge, "tier": tier.get("tier"), "chart": risk_coverage_chart(judge, tier)})
    return charts


def _guarantees(run: Run) -> dict[str, Any]:
    """What the run's calibration profiles guarantee, one line per tier and side, and how many of the run's
    automatic decisions on labelled samples people agree with (the run summary's trust figures)."""
    from bqas.trust.summary import precision_line, side_statement

    config = run.config if isinstance(run.config, Mapping) else {}
    rows = []
    for brief in config.get("profile_briefs") or []:
        if not isinstance(brief, Mapping):
            continue
        for tier in brief.get("tiers") or []:
            if isinstance(tier, Mapping):
                rows.append(
                    {
                        "judge": str(brief.get("judge")),
                        "profile": str(brief.get("id")),
                        "tier": str(tier.get("tier")),
                        "accept": side_statement(tier, "accept"),
                        "reject": side_statement(tier, "reject"),
                    }
                )
    summary = run.summary if isinstance(run.summary, Mapping) else {}
    trust = summary.get("trust")
    if not isinstance(trust, Mapping):
        trust = {}
    agreement = [
        precision_line(side, row)
        for side, row in (trust.get("agreement") or {}).items()
        if isinstance(row, Mapping) and row.get("decided")
    ]
    return {"tiers": rows, "agreement": agreement}


def _dimension_rows(record: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Measured dimensions with their tier values; the names of those not measured (shown as one line)."""
    rows, not_measured = [], []
    dims = record.get("dimensions")
    for name, prov in dims.items() if isinstance(dims, Mapping) else []:
        if not isinstance(prov, Mapping):
            continue
        if prov.get("measured", True) is False:
            not_measured.append(str(name))
            continue
        rows.append({"name": str(name), **{k: prov.get(k) for k in ("value", "backend", "method", "model", "note")}})
        rows[-1]["offline"] = prov.get("offline_value")
        rows[-1]["llm"] = prov.get("llm_value")
    return rows, not_measured


def _target_view(store: Store, run_id: str, record: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the assistant under test answered for this result: the record's figures and the stored raw reply."""
    brief = record.get("target")
    if not isinstance(brief, Mapping):
        return None
    raw: str | None = None
    truncated = False
    sample, turn = brief.get("sample_id"), brief.get("turn")
    if isinstance(sample, str) and isinstance(turn, int):
        stored = store.target_replies(run_id, sample).get(turn)
        if stored is not None:
            raw, truncated = str(stored.get("raw") or ""), bool(stored.get("raw_truncated"))
    return {"brief": brief, "raw": raw, "truncated": truncated}


def viewer_router(
    store: Store,
    auth: Authenticator,
    *,
    settings: ReviewSettings | None = None,
    cookie_per_port: bool = False,
) -> APIRouter:
    """The viewer's router, at ``BQAS_REVIEW_PATH``/runs (the review session's cookie path covers it;
    ``cookie_per_port`` as for the review router)."""
    settings = settings or get_review_settings()
    review = settings.review_path.rstrip("/")
    base = f"{review}/runs"
    sessions = SessionManager(store, auth, hours=settings.review_session_hours)
    comparisons = _CompareCache()
    aggregates = _Aggregates()
    router = APIRouter(prefix=base, include_in_schema=False)

    def render(name: str, session: SessionView, status: int = 200, **context: Any) -> Response:
        # ``base`` is the review path for the shared header and script; ``vbase`` the viewer's own.
        html = _templates().get_template(name).render(base=review, vbase=base, session=session, **context)
        return _secure(HTMLResponse(html, status_code=status))

    def error(session: SessionView, status: int, title: str, message: str) -> Response:
        return render("view_error.html", session, status, title=title, message=message)

    def current(request: Request) -> SessionView | None:
        return sessions.resolve(request.cookies.get(cookie_name(request, per_port=cookie_per_port)))

    def to_login() -> Response:
        return _secure(RedirectResponse(f"{review}/login", status_code=303))

    def visible_run(session: SessionView, run_id: str) -> Run | None:
        run = store.get_run(run_id) if 0 < len(run_id) <= 64 else None
        return run if run is not None and run_tenant(run) == session.tenant else None

    @router.get("")
    @router.get("/")
    def runs_page(request: Request) -> Response:
        session = current(request)
        if session is None:
            return to_login()
        from bqas.runner.summary import gate_state

        runs = [r for r in store.list_runs(limit=500) if run_tenant(r) == session.tenant][:100]
        gates = {r.id: gate_state(r.summary if isinstance(r.summary, Mapping) else None) for r in runs}
        # The compare form starts on the newest run that has an earlier run of the same scenario, and that
        # earlier run (two runs of one scenario are what a comparison is for); else the newest two.
        pair = next(
            (
                (older, newer)
                for i, newer in enumerate(runs)
                for older in runs[i + 1 :]
                if older.scenario == newer.scenario
            ),
            (runs[1] if len(runs) > 1 else None, runs[0] if runs else None),
        )
        default_a, default_b = pair
        return render(
            "runs.html",
            session,
            runs=runs,
            gates=gates,
            default_a=default_a.id if default_a else None,
            default_b=default_b.id if default_b else None,
        )

    @router.get("/compare")
    def compare_page(request: Request) -> Response:
        session = current(request)
        if session is None:
            return to_login()
        a_id, b_id = request.query_params.get("a") or "", request.query_params.get("b") or ""
        run_a, run_b = visible_run(session, a_id), visible_run(session, b_id)
        if run_a is None or run_b is None:
            missing = "a" if run_a is None else "b"
            return error(session, 404, "No such run", f"{missing}: no run with that id")
        try:
            page = parse_page(request.query_params.get("page"))
        except ValueError as exc:
            return error(session, 400, "Bad page", str(exc))
        changed_only = request.query_params.get("changed") == "1"
        tables = (table_for(store, run_a), table_for(store, run_b))
        pairs, total = query.paired_results(
            store, run_a.id, run_b.id, page=page, changed_only=changed_only, tables=tables
        )
        result = comparisons.get(store, run_a, run_b)
        return render(
            "compare.html",
            session,
            a=run_a,
            b=run_b,
            pairs=pairs,
            total=total,
            page=page,
            pages=max(1, -(-total // query.PAGE_SIZE)),
            changed_only=changed_only,
            comparison=result,
            worse=len(result.worse) if result is not None else 0,
            query=urlencode({"a": run_a.id, "b": run_b.id, **({"changed": "1"} if changed_only else {})}),
        )

    @router.get("/{run_id}")
    def run_page(request: Request, run_id: str) -> Response:
        session = current(request)
        if session is None:
            return to_login()
        run = visible_run(session, run_id)
        if run is None:
            return error(session, 404, "No such run", f"No run with id {run_id[:80]!r}.")
        try:
            flt, values = query.parse_run_filter(request.query_params)
            page = parse_page(request.query_params.get("page"))
        except ValueError as exc:
            return error(session, 400, "Bad filter", str(exc))
        if flt.baseline and visible_run(session, flt.baseline) is None:
            return error(session, 400, "Bad filter", f"baseline: no run with id {flt.baseline!r}")
        from bqas.report.charts import SCALE_100, histogram_chart
        from bqas.runner.summary import timing_text

        table = table_for(store, run)
        base_run = store.get_run(flt.baseline) if flt.baseline else None
        base_table = table_for(store, base_run) if base_run is not None else ResultRow
        rows, total = query.list_results(store, run.id, flt, page=page, table=table, base_table=base_table)
        agg = aggregates.get(store, run, table)
        repeats = int((run.config if isinstance(run.config, Mapping) else {}).get("repeats") or 1)
        others = [r for r in store.list_runs(limit=100) if r.id != run.id and run_tenant(r) == session.tenant]
        return render(
            "run.html",
            session,
            run=run,
            rows=rows,
            total=total,
            page=page,
            pages=max(1, -(-total // query.PAGE_SIZE)),
            filters=values,
            query=_query(values),
            sorts=list(query.SORTS),
            decisions=query.DECISIONS,
            facets=agg["facets"],
            intents=agg["intents"],
            tags=agg["tags"],
            # The histogram of what the filter shows (the whole run's without a filter, from the cache).
            histogram=histogram_chart(
                query.filtered_histogram(store, run.id, flt, table=table, base_table=base_table)
                if any(v for k, v in values.items() if k not in ("sort", "page"))
                else agg["histogram"],
                SCALE_100,
                "composite score",
                x_title="composite score",
            ),
            filtered=any(v for k, v in values.items() if k not in ("sort", "page")),
            risk_charts=_risk_charts(run),
            redteam=_redteam(run),
            guarantees=_guarantees(run),
            timing=timing_text(run.summary) if isinstance(run.summary, Mapping) else None,
            others=others[:50],
            sort_links={s: _query(values, sort=s) for s in query.SORTS},
            settled=table is SettledRow,
            repeats=repeats,
        )

    @router.get("/{run_id}/results/{ref:path}")
    def result_page(request: Request, run_id: str, ref: str) -> Response:
        session = current(request)
        if session is None:
            return to_login()
        run = visible_run(session, run_id)
        # A sample's address is its sample id (with ?judge= where several judges graded it); the result's
        # number, the address before, still works.
        result_id = None
        if run is not None and ref.isdigit() and 1 <= int(ref) <= MAX_ID:
            result_id = int(ref)
        elif run is not None and 0 < len(ref) <= 300:
            result_id = query.result_id_of_sample(
                store, run.id, ref, request.query_params.get("judge") or None, table_for(store, run)
            )
        record = query.get_result(store, run.id, result_id) if run is not None and result_id is not None else None
        if run is None or record is None or result_id is None:
            return error(session, 404, "Not found", f"No sample {ref[:80]!r} in this run.")
        dims, not_measured = _dimension_rows(record)
        baseline = request.query_params.get("baseline") or ""
        other = None
        if baseline:
            base_run = visible_run(session, baseline)
            found = (
                query.record_by_key(store, base_run.id, str(record["_key"]), table_for(store, base_run))
                if base_run
                else None
            )
            if found is not None:
                other = {"run": baseline, "id": found[0], "verdict": found[1].get("verdict")}
        from bqas.report.cjk import CJK_RE
        from bqas.viewer.exchange import exchange_view

        config = run.config if isinstance(run.config, Mapping) else {}
        llm = exchange_view(record, query.get_exchange(store, run.id, result_id), config)
        repeated = int(config.get("repeats") or 1) > 1
        repeats = query.repeats_of(store, run.id, str(record["_key"])) if repeated else []
        settled = query.settled_of(store, run.id, str(record["_key"])) if repeated else None
        cjk = bool(CJK_RE.search(json.dumps(record.get("inputs"), ensure_ascii=False)))
        confidence = record.get("confidence") if isinstance(record.get("confidence"), Mapping) else {}
        return render(
            "result.html",
            session,
            run=run,
            rec=record,
            target=_target_view(store, run.id, record),
            dims=dims,
            not_measured=not_measured,
            confidence=confidence,
            expected=record.get("expected") if isinstance(record.get("expected"), Mapping) else None,
            inputs=record.get("inputs") if isinstance(record.get("inputs"), Mapping) else {},
            earlier=query.earlier_turns(store, run.id, str(record.get("sample_id") or "")),
            other=other,
            cjk=cjk,
            llm=llm,
            repeats=repeats,
            settled=settled,
            review_link=f"{review}/queue?" + urlencode({"run": run.id, "status": "any"}),
        )

    return router
