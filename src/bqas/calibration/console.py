"""Rich tables for ``bqas calibrate`` (the same figures as ``calibration.json``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bqas.calibration.figure_text import figure_text, language_figures


def _fig(data: Mapping[str, Any] | None, percent: bool = False) -> str:
    """``12.5 % [8.1–18.2] (n=120)``: the figure, its 95 % interval where it has one, and its n."""
    return figure_text(data, percent).plain()


def target_result(x: dict[str, Any]) -> str:
    """met / MISSED / not enough evidence (rich markup)."""
    status = x.get("status") or ("met" if x["passed"] else "missed")
    return {"met": "[green]met[/]", "missed": "[red]MISSED[/]"}.get(status, "[yellow]not enough evidence[/]")


def interval_text(x: dict[str, Any]) -> str:
    interval = x.get("interval")
    return "–" if not interval else f"{interval[0]:.4g}–{interval[1]:.4g}"


def _latency(lat: dict[str, Any]) -> str:
    if not lat.get("n"):
        return "undefined (no judged sample)"
    interval = lat.get("mean_interval")
    span = f" [{interval[0]:.1f}–{interval[1]:.1f}]" if interval else ""
    return f"mean {lat['mean']:.1f}{span} · p50 {lat['p50']:.1f} · p95 {lat['p95']:.1f} ms"


def _timing_rows(block: dict[str, Any]) -> list[tuple[str, str]]:
    """Service time (the judgment's own work: what the time target is judged on), the queue wait beside it,
    end to end, and the throughput time (wall / N)."""
    rows = [("time: service (own work)", _latency(block.get("service_ms") or block["latency_ms"]))]
    if block.get("queue_ms"):
        rows.append(("time: queue wait (worker, LLM slot)", _latency(block["queue_ms"])))
    rows.append(("time: end to end (service + queue)", _latency(block["latency_ms"])))
    if block.get("throughput_ms"):
        t = block["throughput_ms"]
        rows.append(("time: throughput (wall / N)", f"{t['per_sample']:.1f} ms ({t['wall_s']:.1f} s in all)"))
    return rows


def _block_tables(console: Console, title: str, block: dict[str, Any]) -> None:
    r = block["reject"]
    t = Table(title=escape(title))
    t.add_column("figure")
    t.add_column("value", justify="right")
    rows = [
        ("samples judged", str(block["samples"])),
        ("abstention (unscored)", _fig(block["abstention_rate"], True)),
        ("FPR", _fig(r["fpr"], True)),
        ("FNR", _fig(r["fnr"], True)),
        ("accuracy (accept/reject)", _fig(r["accuracy"], True)),
        ("Cohen's κ (accept/reject)", _fig(r["kappa"])),
        ("verdict agreement", _fig(block["verdicts"]["agreement"], True)),
        ("Cohen's κ (verdict)", _fig(block["verdicts"]["kappa"])),
        *_timing_rows(block),
    ]
    for k, v in rows:
        t.add_row(k, escape(v))
    console.print(t)
    from bqas.runner.summary import unscored_lines

    for line in unscored_lines(block.get("unscored_reasons") or []):
        console.print(escape(line))
    console.print(
        f"accept/reject counts: people reject & judge rejects {r['tp']} · people accept & judge rejects {r['fp']} · "
        f"people reject & judge accepts {r['fn']} · people accept & judge accepts {r['tn']} · "
        f"labelled but unscored {r['abstained']} · scored without a label {r['no_human_label']}"
    )
    m = Table(title="verdicts (rows: people, columns: judge)")
    m.add_column("human \\ judge")
    for col in block["verdicts"]["columns"]:
        m.add_column(col, justify="right")
    for row, cells in zip(block["verdicts"]["rows"], block["verdicts"]["matrix"], strict=True):
        m.add_row(row, *(str(c) for c in cells))
    console.print(m)
    dims = block.get("dimensions") or {}
    if dims:
        d = Table(title="dimensions (judge vs people)")
        for col in ("dimension", "kind", "pairs", "not measured", "agreement / Spearman", "κ / Pearson", "more"):
            d.add_column(col)
        for name, x in dims.items():
            if x["kind"] == "gate":
                rest = [
                    _fig(x["agreement"], True),
                    _fig(x["kappa"]),
                    f"FPR {_fig(x['fpr'], True)}, FNR {_fig(x['fnr'], True)}",
                ]
            else:
                rest = [_fig(x["spearman"]), _fig(x["pearson"]), f"MAE {_fig(x['mean_abs_diff'])}"]
            d.add_row(name, x["kind"], str(x["n"]), str(x["not_measured"]), *(escape(s) for s in rest))
        console.print(d)


def _languages(console: Console, by_language: dict[str, Any]) -> None:
    if len(by_language) < 2:
        return
    t = Table(title="by language")
    for col in (
        "language",
        "n",
        "FPR",
        "FNR",
        "accuracy",
        "verdict agreement",
        "κ (verdict)",
        "abstention",
        "service time",
    ):
        t.add_column(col)
    for lang, b in by_language.items():
        t.add_row(
            lang,
            str(b["samples"]),
            *(escape(_fig(d, percent)) for d, percent in language_figures(b)),
            escape(_latency(b.get("service_ms") or b["latency_ms"])),
        )
    console.print(t)


def _compare(console: Console, cmp: dict[str, Any]) -> None:
    o = cmp["overall"]
    t = Table(title=f"inter-judge agreement A vs B ({o['samples']} samples, both scored {o['both_scored']})")
    for col in ("dimension", "kind", "n", "agreement", "Cohen's κ", "Krippendorff's α"):
        t.add_column(col)
    v = o["verdict"]
    t.add_row(
        "verdict",
        "nominal",
        str(v["agreement"]["n"]),
        *(escape(s) for s in (_fig(v["agreement"], True), _fig(v["kappa"]), _fig(v["alpha_nominal"]))),
    )
    for name, d in o["dimensions"].items():
        t.add_row(
            name,
            f"{d['kind']} ({d['alpha_level']})",
            str(d["n"]),
            *(escape(s) for s in (_fig(d["agreement"], True), _fig(d.get("kappa")), _fig(d["alpha"]))),
        )
    console.print(t)
    console.print(f"unscored: A {o['unscored_a']}, B {o['unscored_b']} (left out of agreement, κ and α)")


def print_calibration(doc: dict[str, Any]) -> None:
    """Print a calibration document."""
    console = Console()
    gold = doc["gold"]
    console.print(
        escape(
            f"gold {gold['path']}: {gold['samples']} samples used, {gold['bad_lines']} bad lines skipped, "
            f"{gold['other_judge']} lines for other judges" + (" (stopped at --limit)" if gold["limited"] else "")
        )
    )
    if gold["labels_not_compared"]:
        listed = ", ".join(f"{k} ({v})" for k, v in gold["labels_not_compared"].items())
        console.print(escape(f"labels not compared (not a graded dimension of judge {doc['judge']}): {listed}"))
    console.print(escape(doc["definition"]), style="dim")
    if doc.get("compare"):
        _compare(console, doc["compare"])
    for c in doc["configs"]:
        cal = c["calibration"]
        title = f"{c['name']}: judge {doc['judge']} · {c['spec']} · model {c['model'] or '–'} vs people"
        _block_tables(console, title, cal["overall"])
        _languages(console, cal["by_language"])
    t = Table(title="targets (judge policy defaults unless --targets), judged on 95 % intervals")
    for col in ("target", "expected", "actual", "95 % interval", "result", "note"):
        t.add_column(col)
    for x in doc["targets"]:
        actual = "undefined" if x["actual"] is None else f"{x['actual']:.4g}"
        t.add_row(x["name"], x["expected"], actual, interval_text(x), target_result(x), escape(x["note"] or ""))
    console.print(t)
    console.print(f"stored as run {doc.get('run_id')} (see `bqas runs`)")
