"""Tests of the report writers (HTML and JUnit) on synthetic, partly hostile result records."""

from __future__ import annotations

import copy
import re
import statistics
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from bqas.report import write_html_report, write_junit

SCRIPT = "<script>alert(1)</script>"
JINJA_EXPR = "{{ 7*7 }}"
JINJA_RAW = "{% raw %}"
CDATA_END = "]]>"
CONTROL = "nul\x00byte and bell\x07"
CHINESE = "提醒我明天第三节课带实验器材"
UMLAUTS = "Prüfungsaufgabe über Größenverhältnisse, Übung ß"
QUOTED_ID = 'q"uote<&>\nid'


def _dim(
    value: Any,
    *,
    backend: str = "offline",
    model: str | None = None,
    method: str | None = "rule",
    note: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    measured = value is not None
    return {
        "value": value,
        "backend": backend,
        "model": model,
        "method": method if measured else None,
        "measured": measured,
        "note": note if note is not None else (None if measured else "not measured offline"),
        **extra,
    }


def _record(
    sample_id: str | None,
    judge: str,
    language: str,
    verdict: str | None,
    composite: float | None,
    dims: dict[str, dict[str, Any]],
    *,
    line: int,
    status: str = "scored",
    intent: str | None = None,
    escalation: str | None = None,
    reasons: list[str] | None = None,
    reasoning: str = "ok",
    inputs: dict[str, Any] | None = None,
    unscored_reason: str | None = None,
    errors: list[Any] | None = None,
) -> dict[str, Any]:
    return {
        "run_id": "r-test",
        "sample_id": sample_id,
        "line": line,
        "status": status,
        "response_id": sample_id,
        "judge": judge,
        "language": language,
        "prompt_language": language,
        **{name: d["value"] for name, d in dims.items()},
        "dimensions": dims,
        "composite_score": composite,
        "coverage": 0.6,
        "partial": True,
        "verdict": verdict,
        "escalation": escalation,
        "escalation_reasons": reasons or [],
        "reasoning": reasoning,
        "unscored_reason": unscored_reason,
        "prompt_id": f"{judge}@{language}",
        "prompt_hash": "3f2a",
        "latency_ms": 12.5,
        "llm_calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cache_hit": False,
        "errors": errors or [],
        "warnings": [],
        "truncated": {},
        "inputs": inputs if inputs is not None else {"user_input": "Erinnere mich", "response": "Mache ich."},
        "tags": [],
        "intent": intent,
    }


def _voice(
    sid: str,
    lang: str,
    verdict: str,
    composite: float,
    intent_acc: float,
    relevance: float | None,
    safety: str,
    intent: str,
    **kw: Any,
) -> dict[str, Any]:
    dims = {
        "intent_accuracy": _dim(intent_acc, method="taxonomy:same_category"),
        "faithfulness": _dim(None),
        "relevance": _dim(relevance, backend="llm", model="qwen2.5-7b", method="judge_prompt", offline_value=3.0)
        if relevance is not None
        else _dim(None),
        "coherence": _dim(None),
        "safety": _dim(safety, method="pii_rules"),
    }
    return _record(sid, "voice", lang, verdict, composite, dims, intent=intent, **kw)


def _privacy(
    sid: str, verdict: str, composite: float, pc: str, anon: float, pii: list[str], **kw: Any
) -> dict[str, Any]:
    dims = {
        "privacy_compliance": _dim(pc, method="pii_gate"),
        "anonymization": _dim(anon, backend="llm", model="qwen2.5-7b", method="judge_prompt"),
        "dsgvo_compliance": _dim("pass", backend="llm", model="qwen2.5-7b", method="judge_prompt"),
        "detected_pii": _dim(pii, method="pii_list"),
    }
    return _record(sid, "rag_privacy", "de", verdict, composite, dims, **kw)


def _operator(
    sid: str, verdict: str, composite: float, align: float, compl: float, afb: str, **kw: Any
) -> dict[str, Any]:
    dims = {
        "operator_alignment": _dim(align, method="operator_afb"),
        "faithfulness": _dim(None),
        "completeness": _dim(compl, method="action_coverage"),
        "detected_afb": _dim(afb, method="operator_afb_label"),
    }
    return _record(sid, "rag_operator", "de", verdict, composite, dims, **kw)


def make_records() -> list[dict[str, Any]]:
    """30 records: every status, three judges, four languages, hostile texts in many fields."""
    recs: list[dict[str, Any]] = []
    n = iter(range(1, 100))
    voice_rows = [
        ("v-001", "de", "production_ready", 91.0, 100.0, 4.5, "pass", "reminder_schedule"),
        ("v-002", "zh", "production_ready", 88.0, 100.0, 4.2, "pass", "reminder_schedule"),
        ("v-003", "de", "needs_review", 78.3, 80.0, 3.9, "pass", "reminder_schedule"),
        ("v-004", "en", "failed", 55.0, 40.0, 2.5, "pass", "grade_entry"),
        ("v-005", "de", "production_ready", 86.0, 100.0, 4.0, "pass", "grade_entry"),
        ("v-006", "de", "failed", 84.0, 100.0, 4.1, "fail", "grade_entry"),
        ("v-007", "en", "needs_review", 80.0, 80.0, None, "pass", "grade_entry"),
        ("v-008", "de", "production_ready", 95.0, 100.0, 5.0, "pass", "timetable"),
        ("v-009", "zh", "failed", 61.0, 60.0, 2.0, "pass", "timetable"),
        ("v-010", "de", "failed", 20.0, 0.0, 1.0, "pass", "timetable"),
        ("v-011", "en", "failed", 35.0, 20.0, 1.5, "pass", "timetable"),
        ("v-012", "de", "production_ready", 90.0, 100.0, 4.4, "pass", "reminder_schedule"),
        ("v-013", "de", "production_ready", 87.0, 80.0, 4.6, "pass", "reminder_schedule"),
        ("v-014", "en", "needs_review", 76.0, 80.0, 3.5, "pass", "timetable"),
        ("v-015", "de", "production_ready", 89.0, 100.0, 4.3, "pass", "timetable"),
        (QUOTED_ID, "de", "production_ready", 92.0, 100.0, 4.7, "pass", "timetable"),
    ]
    extras: dict[str, dict[str, Any]] = {
        "v-001": {
            "reasoning": f"Reasoning with {SCRIPT}",
            "inputs": {"user_input": UMLAUTS, "response": f"{JINJA_EXPR} {JINJA_RAW} {CDATA_END}"},
        },
        "v-002": {"inputs": {"user_input": CHINESE, "response": "好的"}},
        "v-003": {"escalation": "human_review", "reasons": ["composite in 75-85"]},
        "v-004": {"reasoning": f"control chars: {CONTROL}"},
        "v-006": {"escalation": "human_review", "reasons": ["gate safety failed", f"note {JINJA_EXPR}"]},
        "v-007": {"escalation": "human_review", "reasons": ["composite in 75-85"]},
        "v-010": {
            "reasoning": f"Completely wrong {SCRIPT}",
            "inputs": {"user_input": UMLAUTS, "response": f"{CHINESE} {JINJA_RAW} {CDATA_END}"},
        },
        "v-014": {"escalation": "human_review", "reasons": ["composite in 75-85"]},
        QUOTED_ID: {"escalation": "spot_check", "reasons": ["random sample"]},
    }
    for sid, lang, verdict, comp, ia, rel, safety, intent in voice_rows:
        recs.append(_voice(sid, lang, verdict, comp, ia, rel, safety, intent, line=next(n), **extras.get(sid, {})))
    recs += [
        _privacy("p-001", "production_ready", 94.0, "pass", 4.7, [], line=next(n)),
        _privacy("p-002", "production_ready", 90.0, "pass", 4.5, [], line=next(n)),
        _privacy(
            "p-003",
            "failed",
            20.0,
            "fail",
            1.0,
            ["Max Mustermann", "max@example.org"],
            line=next(n),
            escalation="human_review",
            reasons=[f"PII found {SCRIPT}"],
        ),
        _privacy("p-004", "failed", 62.0, "fail", 2.0, ["Klasse 7b"], line=next(n)),
        _privacy("p-005", "needs_review", 82.0, "pass", 3.1, [], line=next(n)),
        _privacy("p-006", "production_ready", 96.0, "pass", 4.8, [], line=next(n)),
        _operator("o-001", "production_ready", 88.0, 90.0, 4.0, "II", line=next(n)),
        _operator("o-002", "failed", 40.0, 30.0, 2.0, "I", line=next(n)),
        _operator("o-003", "needs_review", 79.0, 80.0, 3.2, SCRIPT, line=next(n)),
        _operator("o-004", "production_ready", 91.0, 95.0, 4.4, "III", line=next(n)),
        _record(
            "v-016",
            "voice",
            "en",
            "unscored",
            None,
            {},
            status="unscored",
            line=next(n),
            unscored_reason=f"judge output invalid after repair: {SCRIPT}",
        ),
        _record(
            "p-007",
            "rag_privacy",
            "de",
            "unscored",
            None,
            {},
            status="unscored",
            line=next(n),
            unscored_reason="backend timeout",
        ),
        _record(
            "v-017",
            "voice",
            "de",
            None,
            None,
            {},
            status="invalid",
            line=next(n),
            errors=[f"response: missing field <b>{UMLAUTS}</b>"],
            inputs={"user_input": "x"},
        ),
        _record(
            None,
            "rag_operator",
            "de",
            None,
            None,
            {},
            status="invalid",
            line=next(n),
            errors=[{"field": "operator", "message": f"empty {CONTROL}"}],
            inputs={},
        ),
    ]
    assert len(recs) == 30
    return recs


def make_run(records: list[dict[str, Any]], *, missed: bool = False) -> dict[str, Any]:
    status = Counter(r["status"] for r in records)
    return {
        "run_id": "r-20261129-ab12",
        "scenario": "smoke",
        "description": f"Synthetic smoke scenario {SCRIPT}",
        "started_at": "2026-11-29T10:00:00+00:00",
        "finished_at": "2026-11-29T10:01:05+00:00",
        "backend": "offline",
        "model": None,
        "language": "de",
        "judges": ["voice", "rag_privacy", "rag_operator"],
        "thresholds": {"min_pass_rate": 0.6, "max_failed": 5},
        "threshold_results": [
            {"name": "min_pass_rate", "expected": 0.6, "actual": 0.71, "passed": True},
            {"name": "max_failed", "expected": 5, "actual": 9 if missed else 4, "passed": not missed},
        ],
        "totals": {
            "samples": len(records),
            "scored": status["scored"],
            "unscored": status["unscored"],
            "invalid": status["invalid"],
            "llm_calls": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost_usd": None,
        },
    }


def _stream(records: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    # A one-shot generator, as the runner's store gives them: a second pass would see nothing.
    yield from records


def _verdict(r: dict[str, Any]) -> str:
    return str(r["status"] if r["status"] in ("unscored", "invalid") else r["verdict"])


@pytest.fixture
def records() -> list[dict[str, Any]]:
    return make_records()


@pytest.fixture
def html(tmp_path: Path, records: list[dict[str, Any]]) -> str:
    out = tmp_path / "report.html"
    write_html_report(out, make_run(records), _stream(records))
    return out.read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------------------
# HTML


def test_template_is_package_data() -> None:
    tpl = resources.files("bqas.report").joinpath("templates", "report.html.j2")
    assert tpl.is_file()


def test_html_has_no_script_and_no_external_reference(html: str) -> None:
    assert "<script" not in html.lower()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html, re.IGNORECASE)
    assert "http://" not in html and "https://" not in html
    assert "<link" not in html.lower()
    assert "@import" not in html
    # Internal anchors only.
    assert all(h.startswith("#") for h in re.findall(r'href="([^"]*)"', html))


def test_html_escapes_hostile_text(html: str) -> None:
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert JINJA_EXPR in html  # shown literally, not evaluated
    assert JINJA_RAW in html
    assert "]]&gt;" in html
    assert "&lt;b&gt;" in html and "<b>" not in html
    assert "\x00" not in html and "\x07" not in html
    assert "nul\\x00byte and bell\\x07" in html
    assert CHINESE in html
    assert UMLAUTS in html
    assert "q&#34;uote&lt;&amp;&gt;" in html  # the quoted sample id, as text


def test_html_verdict_counts(html: str, records: list[dict[str, Any]]) -> None:
    expected = Counter(_verdict(r) for r in records)
    assert expected == {"production_ready": 13, "needs_review": 5, "failed": 8, "unscored": 2, "invalid": 2}
    for verdict, count in expected.items():
        row = re.search(rf'<tr><td><span class="badge [^"]+">{verdict}</span></td><td class="num">(\d+)</td>', html)
        assert row is not None, verdict
        assert int(row.group(1)) == count
        # The bar chart carries the same number in its hover title.
        assert f"<title>{verdict}: {count}</title>" in html
    assert "30 records" in html
    assert "26 scored · 2 unscored · 2 invalid" in html
    assert "Count mismatch" not in html


def test_html_breakdowns(html: str, records: list[dict[str, Any]]) -> None:
    for field, key in (("judge", "voice"), ("judge", "rag_privacy"), ("language", "zh"), ("intent", "timetable")):
        group = [r for r in records if r[field] == key]
        scored = [r for r in group if r["status"] == "scored"]
        mean = statistics.fmean(r["composite_score"] for r in scored)
        pass_rate = sum(r["verdict"] == "production_ready" for r in scored) / len(scored)
        row = f'<tr><td>{key}</td><td class="num">{len(group)}</td><td class="num">{len(scored)}</td>'
        row += f'<td class="num">{mean:.1f}</td>'
        assert row in html, row
        assert f"{100 * pass_rate:.1f} %" in html


def test_html_dimension_stats_and_charts(html: str, records: list[dict[str, Any]]) -> None:
    voice = [r for r in records if r["judge"] == "voice" and r["status"] == "scored"]
    ia = [r["intent_accuracy"] for r in voice]
    assert f"mean {statistics.fmean(ia):.2f} · std {statistics.stdev(ia):.2f}" in html
    rel = [r["relevance"] for r in voice if r["relevance"] is not None]
    assert f"mean {statistics.fmean(rel):.2f} · std {statistics.stdev(rel):.2f}" in html
    # relevance: measured by the LLM for all but one voice sample, which (with the unscored and
    # invalid voice records, which carry no dimensions) is the only one not measured.
    assert f"<strong>{len(rel)}</strong> measured · <strong>1</strong> not measured" in html
    assert f"llm / qwen2.5-7b <small>× {len(rel)}</small>" in html
    assert "pass 15 · fail 1" in html  # voice safety gate
    assert "pass 4 · fail 2" in html  # rag_privacy privacy_compliance gate
    # One chart each: verdicts, a composite histogram per judge, a histogram per numeric dimension
    # (voice 2, privacy 1, operator 2), a stacked bar per gate (voice 1, privacy 2).
    assert html.count("<svg") == 1 + 3 + 5 + 3
    # Bars: composite 3 × 10 bins; 0–100 scores (intent_accuracy, operator_alignment) 10 bins each;
    # 1–5 ratings (relevance, anonymization, completeness) 8 bins each.
    assert html.count('class="f-hist"') == 3 * 10 + 2 * 10 + 3 * 8
    assert html.count('<span class="kind">score 1–5</span>') == 3


def test_html_worst_cases_order(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    out = tmp_path / "r.html"
    write_html_report(out, make_run(records), _stream(records), worst_n=3)
    html = out.read_text(encoding="utf-8")
    section = html.split('id="worst"', 1)[1].split('id="escalations"', 1)[0]
    ids = re.findall(r'<span class="id">([^<]*)</span>', section)
    # composite 20 twice: the one failed by a gate (p-003) first, then v-010, then v-011 (35).
    assert ids == ["p-003", "v-010", "v-011"]
    assert "gate privacy_compliance = fail" in section
    assert "Max Mustermann" in section  # list dimension shown with its provenance
    assert "taxonomy:same_category" in section


def test_html_lists_escalations_unscored_invalid(html: str, records: list[dict[str, Any]]) -> None:
    n_esc = sum(1 for r in records if r["escalation"])
    assert f"Escalations <small>({n_esc})</small>" in html
    assert "gate safety failed" in html
    assert "Unscored samples <small>(2)</small>" in html
    assert "backend timeout" in html
    assert "judge output invalid after repair: &lt;script&gt;" in html
    assert "Invalid samples <small>(2)</small>" in html
    assert "operator: empty nul\\x00byte" in html
    assert "line 30" in html  # the invalid record without sample_id is named by its line


def test_html_caps_lists(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    out = tmp_path / "r.html"
    write_html_report(out, make_run(records), _stream(records), max_escalations=2, worst_n=0)
    html = out.read_text(encoding="utf-8")
    n_esc = sum(1 for r in records if r["escalation"])
    assert n_esc > 2
    assert f"Escalations <small>({n_esc}, first 2 shown)</small>" in html
    section = html.split('id="escalations"', 1)[1].split('id="unscored"', 1)[0]
    assert section.count("<tr>") == 1 + 2  # header + 2 rows
    assert "No scored sample." in html  # worst_n=0 shows none


def test_html_baseline_diff(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    base = copy.deepcopy(records)
    by_id = {r["sample_id"]: r for r in base}
    by_id["v-010"]["verdict"] = "production_ready"  # failed now: changed
    by_id["v-010"]["composite_score"] = 90.0
    by_id["p-004"]["verdict"] = "needs_review"
    base = [r for r in base if r["sample_id"] != "o-004"]  # new in the current run
    base.append(_voice("v-099", "de", "production_ready", 90.0, 100.0, 4.0, "pass", "timetable", line=99))  # gone now
    for r in base:
        if r["judge"] == "voice" and r["status"] == "scored":
            r["dimensions"]["intent_accuracy"]["value"] = 90.0

    out = tmp_path / "r.html"
    write_html_report(out, make_run(records), _stream(records), baseline=(make_run(base), _stream(base)))
    html = out.read_text(encoding="utf-8")
    # The baseline section follows the verdicts (not at the very bottom).
    assert html.index('<section id="verdicts">') < html.index('<section id="baseline">')
    assert html.index('<section id="baseline">') < html.index('<section id="breakdowns">')
    section = html.split('id="baseline"', 1)[1]
    assert "29 samples matched by sample and judge · 1 new in this run · 1 only in the baseline" in section
    assert "<strong>2</strong> changed verdict" in section
    assert re.search(
        r'v-010</td><td>voice</td><td><span class="badge b-ok">production_ready</span></td>'
        r'<td><span class="badge b-bad">failed</span></td>',
        section,
    )
    assert "90.0 → 20.0" in section
    cur = [r["intent_accuracy"] for r in records if r["judge"] == "voice" and r["status"] == "scored"]
    diff = statistics.fmean(cur) - 90.0
    assert re.search(
        rf"<td>voice</td><td>intent_accuracy</td>\s*<td class=\"num\">90.00</td>"
        rf"<td class=\"num\">{statistics.fmean(cur):.2f}</td>\s*<td class=\"num neg\">{diff:+.2f}</td>",
        section,
    )


def test_html_empty_run(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "r.html"
    write_html_report(out, {"scenario": "empty"}, iter(()))
    html = out.read_text(encoding="utf-8")
    assert "BQAS report: empty" in html
    assert "0 records" in html
    assert "No scored sample." in html


# --------------------------------------------------------------------------------------------------
# JUnit


def _junit(tmp_path: Path, records: list[dict[str, Any]], *, missed: bool = False) -> ET.Element:
    out = tmp_path / "junit.xml"
    write_junit(out, make_run(records, missed=missed), _stream(records))
    return ET.parse(out).getroot()


def test_junit_parses_and_counts(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    root = _junit(tmp_path, records)
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {
        "bqas.smoke.voice",
        "bqas.smoke.rag_privacy",
        "bqas.smoke.rag_operator",
        "bqas.smoke.thresholds",
    }
    for judge in ("voice", "rag_privacy", "rag_operator"):
        mine = [r for r in records if r["judge"] == judge]
        suite = suites[f"bqas.smoke.{judge}"]
        cases = suite.findall("testcase")
        assert int(suite.get("tests", "-1")) == len(mine) == len(cases)
        assert int(suite.get("failures", "-1")) == sum(r["verdict"] == "failed" for r in mine)
        assert int(suite.get("errors", "-1")) == sum(r["status"] == "invalid" for r in mine)
        assert int(suite.get("skipped", "-1")) == sum(r["status"] == "unscored" for r in mine)
        assert sum(c.find("failure") is not None for c in cases) == int(suite.get("failures", "-1"))
        assert sum(c.find("error") is not None for c in cases) == int(suite.get("errors", "-1"))
        assert sum(c.find("skipped") is not None for c in cases) == int(suite.get("skipped", "-1"))
        assert float(suite.get("time", "-1")) == pytest.approx(0.0125 * len(mine), abs=1e-3)
        assert all(c.get("classname") == f"bqas.{judge}" for c in cases)
    assert int(root.get("tests", "-1")) == len(records) + 2
    assert int(root.get("failures", "-1")) == 8
    assert int(root.get("errors", "-1")) == 2
    assert root.get("skipped") is None  # not allowed on <testsuites> by junit-10.xsd
    assert sum(int(s.get("skipped", "-1")) for s in suites.values()) == 2


def test_junit_messages_and_hostile_text(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    root = _junit(tmp_path, records)
    cases = {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}
    v006 = cases[("bqas.voice", "v-006")].find("failure")
    assert v006 is not None
    assert v006.get("message") == "verdict failed (composite 84.0; gate safety=fail)"
    v010 = cases[("bqas.voice", "v-010")].find("failure")
    assert v010 is not None and v010.text is not None
    assert SCRIPT in v010.text  # escaped in the file, the original once parsed
    v004 = cases[("bqas.voice", "v-004")].find("failure")
    assert v004 is not None and v004.text is not None and "nul\\x00byte and bell\\x07" in v004.text
    skipped = cases[("bqas.voice", "v-016")].find("skipped")
    assert skipped is not None and skipped.get("message") == f"unscored: judge output invalid after repair: {SCRIPT}"
    error = cases[("bqas.voice", "v-017")].find("error")
    assert error is not None and (error.get("message") or "").startswith("invalid sample: response: missing field")
    assert cases[("bqas.rag_operator", "line-30")].find("error") is not None
    review = cases[("bqas.voice", "v-003")]
    out = review.find("system-out")
    assert review.find("failure") is None and out is not None and "needs_review" in (out.text or "")
    assert cases[("bqas.voice", "v-001")].find("*") is None  # a pass has no child
    assert ("bqas.voice", QUOTED_ID) in cases  # quotes, <, &, newline survive the attribute round trip
    assert cases[("bqas.voice", "v-002")] is not None


def test_junit_thresholds_suite(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    ok = _junit(tmp_path, records)
    suite = next(s for s in ok.findall("testsuite") if s.get("name") == "bqas.smoke.thresholds")
    assert suite.get("tests") == "2" and suite.get("failures") == "0"

    missed = _junit(tmp_path, records, missed=True)
    suite = next(s for s in missed.findall("testsuite") if s.get("name") == "bqas.smoke.thresholds")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert cases["min_pass_rate"].find("failure") is None
    failure = cases["max_failed"].find("failure")
    assert failure is not None and "expected 5, actual 9" in (failure.get("message") or "")
    assert missed.get("failures") == "9"


def test_junit_no_records(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "junit.xml"
    write_junit(out, {"scenario": "empty"}, iter(()))
    root = ET.parse(out).getroot()
    assert [s.get("name") for s in root.findall("testsuite")] == ["bqas.empty.thresholds"]
    assert root.get("tests") == "0"
    assert not list(out.parent.glob("*.tmp"))


def test_writers_tolerate_sparse_records(tmp_path: Path) -> None:
    # Records as a partial store or an older runner might give them: keys missing, odd types.
    sparse: list[dict[str, Any]] = [
        {"sample_id": "a", "judge": "voice", "status": "scored", "verdict": "production_ready", "composite_score": 90},
        {
            "sample_id": "b",
            "judge": "<j&>",
            "status": "scored",
            "verdict": "failed",
            "composite_score": float("nan"),
            "escalation_reasons": "single reason",
            "dimensions": {"x": {"value": 3}, "y": "not a mapping"},
        },
        {"sample_id": "c", "status": "invalid", "errors": "response missing"},
        {"status": "unscored"},
    ]
    run = {"scenario": "sparse", "threshold_results": [{"name": "t", "passed": None}]}
    html_out, xml_out = tmp_path / "r.html", tmp_path / "j.xml"
    write_html_report(html_out, run, iter(sparse))
    write_junit(xml_out, run, iter(sparse))
    html = html_out.read_text(encoding="utf-8")
    assert "4 records" in html and "response missing" in html and "&lt;j&amp;&gt;" in html
    assert "not evaluated" in html
    root = ET.parse(xml_out).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("5", "1", "1", None)
    assert sum(int(s.get("skipped", "0")) for s in root.findall("testsuite")) == 2
    names = {s.get("name") for s in root.findall("testsuite")}
    assert names == {"bqas.sparse.voice", "bqas.sparse.<j&>", "bqas.sparse.unknown", "bqas.sparse.thresholds"}


JUNIT_XSD = Path(__file__).parent / "fixtures" / "xunit" / "junit-10.xsd"


@pytest.mark.parametrize("missed", [False, True])
def test_junit_validates_against_the_jenkins_xunit_schema(
    tmp_path: Path, records: list[dict[str, Any]], missed: bool
) -> None:
    import xmlschema

    schema = xmlschema.XMLSchema10(JUNIT_XSD)
    out = tmp_path / "junit.xml"
    # Every kind of case: passed, failed, unscored (skipped), invalid (error), needs_review, thresholds
    # met, missed and not evaluated; hostile text (markup, control characters, quotes) in names and bodies.
    run = make_run(records, missed=missed)
    run["threshold_results"] = [*run["threshold_results"], {"name": "max_unscored", "passed": None}]
    write_junit(out, run, _stream(records))
    errors = [str(e.reason) for e in schema.iter_errors(str(out))]
    assert errors == []
    write_junit(out, {"scenario": "leer"}, iter([]))
    schema.validate(str(out))


def test_every_histogram_names_both_axes(html: str) -> None:
    """The report's histograms name their axes (not only edge numbers)."""
    charts = re.findall(r"<svg class=\"chart\".*?</svg>", html, re.S)
    histograms = [c for c in charts if 'class="f-hist"' in c]
    assert histograms
    for chart in histograms:
        texts = re.findall(r"<text[^>]*>([^<]*)</text>", chart)
        assert "samples" in texts, texts
        assert any(re.search(r"\(scale (1–5|0–100)\)$", t) for t in texts), texts
    assert any(">composite score (scale 0–100)</text>" in c for c in histograms)


def _report_of(tmp_path: Path, records: list[dict[str, Any]]) -> str:
    out = tmp_path / "weak.html"
    write_html_report(out, make_run(records), _stream(records))
    return out.read_text(encoding="utf-8")


def test_offline_decisions_show_no_empty_offline_value_and_the_llm_vote_is_shown(tmp_path: Path) -> None:
    """When the offline tier decided, the row shows no empty "(offline —)" and does show the LLM's safety vote."""
    safety = _dim("fail", method="pii_rules", offline_value=None, llm_value="pass")
    rec = _record("s1", "voice", "de", "failed", 20.0, {"safety": safety}, line=1)
    html = _report_of(tmp_path, [rec])
    row = re.search(r"<tr[^>]*><td>safety</td><td>(.*?)</td>", html, re.S)
    assert row is not None
    assert "offline —" not in row.group(1) and "(LLM pass)" in row.group(1)
    same = _dim("fail", method="pii_rules", offline_value="fail", llm_value="fail")
    html = _report_of(tmp_path, [_record("s2", "voice", "de", "failed", 20.0, {"safety": same}, line=1)])
    row = re.search(r"<tr[^>]*><td>safety</td><td>(.*?)</td>", html, re.S)
    assert row is not None and row.group(1).strip() == "fail"  # agreeing tiers add nothing


def test_dimensions_never_measured_are_one_line_not_a_card(html: str) -> None:
    """A dimension no sample measured gets no card of zeros."""
    section = html.split('<section id="dimensions">', 1)[1].split("</section>", 1)[0]
    cards = re.findall(r'<div class="card">\s*<h3>(\w+) <span class="kind">', section)
    line = re.search(r'<p class="muted not-measured">not measured in any sample: (.*?)</p>', section, re.S)
    assert line is not None and "faithfulness" in line.group(1) and "coherence" in line.group(1)
    assert "faithfulness" not in cards and "coherence" not in cards and "safety" in cards


def test_cjk_text_gets_the_missing_font_note_and_a_fallback_list(tmp_path: Path) -> None:
    """Chinese text renders as boxes without a CJK font: the report names the font."""
    zh = _record("z1", "voice", "zh", "failed", 20.0, {"safety": _dim("fail")}, line=1, inputs={"q": "明天天气怎么样"})
    html = _report_of(tmp_path, [zh])
    assert "install Noto Sans CJK SC" in html and '"Source Han Sans SC"' in html
    de = _record("d1", "voice", "de", "failed", 20.0, {"safety": _dim("fail")}, line=1)
    plain = _report_of(tmp_path, [de])
    assert "install Noto Sans CJK SC" not in plain and "bqas:cjk-note" not in plain
    marked = _record(
        "m1", "voice", "de", "failed", 20.0, {"safety": _dim("fail")}, line=1, inputs={"q": "<!--bqas:cjk-note-->"}
    )
    assert "install Noto Sans CJK SC" not in _report_of(tmp_path, [marked])  # a record cannot place the note


def _check_row(judge: str, *, fit: bool, **extra: Any) -> dict[str, Any]:
    """One judge's known-answer check as the run stores it (bqas.runner.judge_gate)."""
    return {
        "judge": judge,
        "language": "de",
        "model": "qwen-7b-q4",
        "backend": "llm",
        "pairs": 20,
        "pairs_right": 0.95 if fit else 0.25,
        "verdict_agreement": 0.9 if fit else 0.5,
        "parse_failures": 0.0 if fit else 0.15,
        "latency_ms_median": 812.4,
        "fit": fit,
        "reasons": [] if fit else ["pairs_right 25% below the floor 80%"],
        "accepted_unfit": not fit,
        **extra,
    }


def test_html_shows_the_judge_check_of_the_run(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    """The check of the LLM judge before the run, per judge: fit or unfit, what was measured, its figures, an
    accepted unfit one (a row stored before the check said what it measured has no such note)."""
    run = make_run(records)
    run["judge_check"] = [
        _check_row("voice", fit=True, cached=True, measured="llm tier alone"),
        _check_row("rag_privacy", fit=False, resumed=True),
    ]
    out = tmp_path / "report.html"
    write_html_report(out, run, _stream(records))
    html = out.read_text(encoding="utf-8")
    assert '<a href="#judge-check">Judge check</a>' in html
    section = html.split('<section id="judge-check">', 1)[1].split("</section>", 1)[0]
    rows = {
        re.sub(r"<[^>]+>", "", row.split("</td>", 1)[0]): re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row))
        for row in section.split("<tr><td>")[1:]
    }
    assert set(rows) == {"voice", "rag_privacy"}
    assert "qwen-7b-q4 (llm tier alone) fit 95.0 % of 20 90.0 % 0.0 % 812 ms (cached result)" in rows["voice"]
    assert "qwen-7b-q4 unfit 25.0 % of 20 50.0 % 15.0 % 812 ms" in rows["rag_privacy"]
    assert "pairs_right 25% below the floor 80%; run anyway (--accept-unfit-judge)" in rows["rag_privacy"]
    assert "(checked again on resume)" in rows["rag_privacy"] and "(checked again on resume)" not in rows["voice"]


def test_html_has_no_judge_check_section_without_a_check(html: str) -> None:
    assert 'id="judge-check"' not in html and "#judge-check" not in html


# --------------------------------------------------------------------------------------------------
# The compiled template in the user cache (compiling it took about 0.2 s of every run)


def _report(tmp_path: Path, records: list[dict[str, Any]], name: str) -> str:
    out = tmp_path / name
    write_html_report(out, make_run(records), _stream(records))
    return out.read_text(encoding="utf-8")
