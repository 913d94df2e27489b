"""The judge measured before it is trusted: a known-answer check per judge and language.

Each built-in set (``bqas/data/judge_check/<judge>.<language>.jsonl``, written for BQAS) holds clear pairs:
the same question answered well (``good``: the right intent, the facts' number) and badly (``bad``: a wrong
intent, an invented number, a contradicted fact). The configured judge grades both answers of every pair;
the figures say whether it can tell them apart:

* ``pairs_right``: share of pairs where the good answer is ranked above the bad one (verdict first, then
  the composite); a pair with an unscored answer counts as wrong;
* ``verdict_agreement``: share of answers whose verdict agrees with the known one (a good answer not
  ``failed``, a bad one not ``production_ready``);
* ``parse_failures``: share of answers left ``unscored`` (the judge's reply unusable or absent);
* latency (median and largest ``latency_ms``), LLM calls and tokens.

A judge below any floor (:data:`FLOORS`) is *unfit*: its verdicts are noise, whatever they look like.
A check result is cached per model, judge, language, what was measured and the hash of the judge's prompt
template, schema and known-answer set (:func:`check_key`), so that it is paid once.

What is measured (``measured``): an LLM judge is checked as the LLM tier alone by default (:data:`LLM_ALONE`,
see :mod:`bqas.judging.check_engine`): the deterministic tiers (the PII gate, the offline facts of ``auto``)
are never overruled, so where they answer a pair the check would measure them, not the LLM.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from bqas.judgment.result import JudgmentResult
from bqas.judgment.spec import JudgeSpec

#: The least a judge must reach to be trusted (fractions of pairs / answers).
FLOORS: dict[str, float] = {"pairs_right": 0.80, "verdict_agreement": 0.70}
#: The most answers it may leave unscored.
MAX_PARSE_FAILURES = 0.10
FOLDER = "judge_check"
#: What a check measured: the LLM's own answer to every pair (no PII gate, no offline facts beside it) ...
LLM_ALONE = "llm tier alone"
#: ... the offline tier (no LLM configured, or ``--backend offline``), the safety gate as configured ...
OFFLINE_TIER = "offline tier"
#: ... or the judge exactly as a run uses it (``--as-configured``): the deterministic tiers answer where they can.
AS_CONFIGURED = "as configured"


@dataclass(frozen=True)
class KnownPair:
    """One clear pair: the same input answered well and badly."""

    id: str
    what: str
    good: dict[str, Any]
    bad: dict[str, Any]


@dataclass
class CheckResult:
    """The figures of one judge on one known-answer set, and whether it is fit to be trusted."""

    judge: str
    language: str
    model: str | None
    backend: str
    key: str
    pairs: int
    pairs_right: float
    verdict_agreement: float
    parse_failures: float
    latency_ms_median: float
    latency_ms_max: float
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    fit: bool
    reasons: list[str] = field(default_factory=list)
    wrong_pairs: list[str] = field(default_factory=list)
    cached: bool = False
    #: Whether the deterministic PII gate ran beside the judge (BQAS_SAFETY_GATE): it runs on every backend,
    #: and its rule hits stand, so on PII pairs it, not the LLM, decides the bad answers.
    safety_gate: bool = True
    #: What was measured: :data:`LLM_ALONE`, :data:`OFFLINE_TIER` or :data:`AS_CONFIGURED` (a result stored
    #: before the field existed measured the judge as configured).
    measured: str = AS_CONFIGURED

    def summary(self) -> str:
        """One line for a console: the verdict and the figures behind it."""
        state = "fit" if self.fit else "UNFIT"
        what = [self.language, *([self.model] if self.model else [])]
        what.append(f"{AS_CONFIGURED}: {self.backend}" if self.measured == AS_CONFIGURED else self.measured)
        if not self.safety_gate and self.measured != LLM_ALONE:
            what.append("PII gate off")
        return (
            f"judge-check {self.judge} ({', '.join(what)}): {state} - "
            f"{self.pairs_right:.0%} of {self.pairs} clear pairs ranked right, verdicts agree "
            f"{self.verdict_agreement:.0%}, unparsed {self.parse_failures:.0%}, "
            f"median {self.latency_ms_median:.0f} ms" + (f"; {'; '.join(self.reasons)}" if self.reasons else "")
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def set_path(judge: str, language: str) -> Path | None:
    """The packaged known-answer set of ``judge`` in ``language`` (None when there is none)."""
    ref = resources.files("bqas").joinpath("data", FOLDER, f"{judge}.{language}.jsonl")
    return Path(str(ref)) if ref.is_file() else None


def available_sets() -> list[tuple[str, str]]:
    """(judge, language) of every packaged known-answer set."""
    folder = resources.files("bqas").joinpath("data", FOLDER)
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".jsonl"))
    return [(n.split(".")[0], n.split(".")[1]) for n in names]


def load_pairs(path: Path) -> list[KnownPair]:
    """The pairs of a known-answer file; a malformed line raises ValueError naming the file, line and field."""
    pairs: list[KnownPair] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not JSON ({exc.msg})") from None
        for key in ("id", "good", "bad"):
            if key not in row:
                raise ValueError(f"{path}:{n}: field {key!r} missing")
        for key in ("good", "bad"):
            if not isinstance(row[key], dict):
                raise ValueError(f"{path}:{n}: field {key!r} must be an object (a sample)")
        pairs.append(KnownPair(str(row["id"]), str(row.get("what", "")), row["good"], row["bad"]))
    return pairs


def check_key(
    spec: JudgeSpec, language: str, model: str | None, backend: str, pairs_file: Path, measured: str = AS_CONFIGURED
) -> str:
    """The cache key: model, backend, what was measured, judge, language, the prompt template, the schema and
    the pairs."""
    template, _ = spec.template_for(language)
    h = hashlib.sha256()
    for part in (
        model or "",
        backend,
        measured,
        spec.name,
        language,
        template,
        json.dumps(spec.schema, sort_keys=True),
        pairs_file.read_text(encoding="utf-8"),
    ):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:24]


def _rank(result: JudgmentResult) -> tuple[int, float] | None:
    """Higher is better: the verdict (production_ready > needs_review > failed), then the composite."""
    if result.status != "scored" or result.verdict in (None, "unscored"):
        return None
    order = {"production_ready": 2, "needs_review": 1, "failed": 0}
    verdict = order.get(str(result.verdict), 0)
    return verdict, result.composite_score if result.composite_score is not None else 0.0


def figures(
    judge: str,
    language: str,
    model: str | None,
    backend: str,
    key: str,
    graded: list[tuple[KnownPair, JudgmentResult, JudgmentResult]],
) -> CheckResult:
    """The check's figures from each pair's two judgments, measured against :data:`FLOORS`."""
    right, agree, unparsed, latencies = 0, 0, 0, []
    calls = prompt = completion = 0
    wrong: list[str] = []
    for pair, good, bad in graded:
        g, b = _rank(good), _rank(bad)
        if g is not None and b is not None and g > b:
            right += 1
        else:
            wrong.append(pair.id)
        agree += int(g is not None and good.verdict != "failed")
        agree += int(b is not None and bad.verdict != "production_ready")
        for r in (good, bad):
            unparsed += int(r.status != "scored")
            latencies.append(r.latency_ms)
            calls += r.llm_calls
            prompt += r.prompt_tokens
            completion += r.completion_tokens
    n = len(graded)
    result = CheckResult(
        judge=judge,
        language=language,
        model=model,
        backend=backend,
        key=key,
        pairs=n,
        pairs_right=right / n if n else 0.0,
        verdict_agreement=agree / (2 * n) if n else 0.0,
        parse_failures=unparsed / (2 * n) if n else 1.0,
        latency_ms_median=round(statistics.median(latencies), 1) if latencies else 0.0,
        latency_ms_max=round(max(latencies), 1) if latencies else 0.0,
        llm_calls=calls,
        prompt_tokens=prompt,
        completion_tokens=completion,
        fit=False,
        wrong_pairs=wrong,
    )
    for name, floor in FLOORS.items():
        value = getattr(result, name)
        if value < floor:
            result.reasons.append(f"{name} {value:.0%} below the floor {floor:.0%}")
    if result.parse_failures > MAX_PARSE_FAILURES:
        result.reasons.append(f"parse_failures {result.parse_failures:.0%} above {MAX_PARSE_FAILURES:.0%}")
    result.fit = n > 0 and not result.reasons
    return result


Evaluate = Callable[[str, dict[str, Any], str, str], Awaitable[JudgmentResult]]


async def run_check(
    spec: JudgeSpec,
    language: str,
    evaluate: Evaluate,
    *,
    model: str | None,
    backend: str,
    limit: int | None = None,
    cache_dir: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    safety_gate: bool = True,
    measured: str = AS_CONFIGURED,
) -> CheckResult:
    """Grade every pair of the packaged set with ``evaluate(judge, sample, response_id, language)``.

    With ``cache_dir`` a result for the same :func:`check_key` is read from there instead of asked again,
    and a new one written there. ``safety_gate`` says whether ``evaluate`` runs the deterministic PII gate;
    a check without it is a different measurement, cached under its own key; so is ``measured``, what
    ``evaluate`` lets answer (:data:`LLM_ALONE`, :data:`OFFLINE_TIER`, :data:`AS_CONFIGURED`)."""
    path = set_path(spec.name, language)
    if path is None:
        known = ", ".join(f"{j}.{lang}" for j, lang in available_sets())
        raise ValueError(f"no known-answer set for judge {spec.name} in {language} (there are: {known})")
    pairs = load_pairs(path)[:limit] if limit else load_pairs(path)
    key = (
        check_key(spec, language, model, backend, path, measured)
        + ("" if safety_gate else "-nogate")
        + (f"-first{limit}" if limit else "")
    )
    cached = cache_dir / f"{key}.json" if cache_dir is not None else None
    if cached is not None and cached.is_file():
        try:
            data = json.loads(cached.read_text(encoding="utf-8"))
            return CheckResult(**{**data, "cached": True})
        except (ValueError, TypeError):
            pass  # an unreadable cache entry is measured again
    graded: list[tuple[KnownPair, JudgmentResult, JudgmentResult]] = []
    for i, pair in enumerate(pairs, 1):
        good = await evaluate(spec.name, pair.good, f"{pair.id}/good", language)
        bad = await evaluate(spec.name, pair.bad, f"{pair.id}/bad", language)
        graded.append((pair, good, bad))
        if progress is not None:
            progress(i, len(pairs))
    result = figures(spec.name, language, model, backend, key, graded)
    result.safety_gate = safety_gate
    result.measured = measured
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(result.to_json(), ensure_ascii=False), encoding="utf-8")
    return result
