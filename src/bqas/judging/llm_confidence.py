"""The LLM tier's ``p_reject``: from the token log-probabilities of the verdict-bearing values, or from
agreement over k sampled replies.

Log-probabilities: for each graded dimension in the reply (a gate's ``"pass"``/``"fail"``, a score's
number) the first token of its value carries the model's uncertainty; its top alternatives (renormalised)
give a small distribution over that dimension's value. Enumerating the combinations of those values
through the judge's own policy (composite, gates, thresholds) gives P(verdict = failed): the model's own
probability that the response fails. It is not calibrated to people; the calibration profile's
thresholds give the guarantee. Values without aligned tokens count as certain; when no token lines up
with the reply at all there is no p_reject (and a reason), never a certainty the model did not express.

Samples: the share of k replies (temperature > 0) whose verdict is ``failed``.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bqas.judgment.policy import apply_policy
from bqas.judgment.result import TierConfidence

if TYPE_CHECKING:
    from bqas.judgment.spec import JudgeSpec
    from bqas.llm.logprobs import TokenLogprob

MAX_COMBINATIONS = 4096


def _value_span(text: str, name: str) -> tuple[int, int] | None:
    """Character span of the value of key ``name`` in a JSON reply (first occurrence)."""
    m = re.search(r'"' + re.escape(name) + r'"\s*:\s*("?)', text)
    if m is None:
        return None
    start = m.end()
    end = start
    while end < len(text) and text[end] not in ',}"\n':
        end += 1
    return (start, end) if end > start else None


def _alternatives(
    spec: JudgeSpec, name: str, value: Any, text: str, tokens: Sequence[TokenLogprob]
) -> list[tuple[Any, float]]:
    """(value, probability) alternatives of one dimension from its first value token; [(value, 1)] if unknown."""
    from bqas.llm.logprobs import tokens_in_span

    dim = spec.dimensions[name]
    span = _value_span(text, name)
    toks = tokens_in_span(tokens, *span) if span else []
    toks = [t for t in toks if t.token.strip().strip('"')]
    if not toks:
        return [(value, 1.0)]
    first = toks[0]
    top = list(first.top) or [(first.token, first.logprob)]
    raw = str(value)
    out: dict[Any, float] = {}
    for token, logprob in top:
        piece = token.strip().strip('"').lower()
        if not piece:
            continue
        alt: Any
        if dim.kind == "gate":
            alt = "fail" if "fail".startswith(piece) else "pass" if "pass".startswith(piece) else None
        else:
            digits = re.match(r"\d+", piece)
            if digits is None:
                alt = None
            else:
                # The first token holds the leading digits; the rest of the number keeps its length.
                rest = max(0, len(raw.split(".")[0]) - len(first.token.strip().strip('"')))
                alt = float(digits.group()) * 10**rest
                lo, hi = dim.minimum, dim.maximum
                if lo is not None and hi is not None and not lo <= alt <= hi:
                    alt = None
        if alt is not None:
            out[alt] = out.get(alt, 0.0) + math.exp(logprob)
    total = sum(out.values())
    if total <= 0:
        return [(value, 1.0)]
    return [(v, p / total) for v, p in sorted(out.items(), key=lambda kv: -kv[1])]


def _failed(spec: JudgeSpec, values: Mapping[str, Any]) -> bool:
    assert spec.scoring is not None
    return apply_policy(values, spec.scoring, spec.dimensions).verdict == "failed"


def from_logprobs(
    spec: JudgeSpec, text: str, data: Mapping[str, Any], tokens: Sequence[TokenLogprob] | None, model: str | None
) -> TierConfidence:
    """P(verdict failed) under the model's own token probabilities for the verdict-bearing values."""
    if spec.scoring is None:
        return TierConfidence(model=model, reason=f"judge {spec.name} has no verdict")
    if not tokens:
        return TierConfidence(model=model, reason="the server gave no token log-probabilities")
    if all(t.offset is None for t in tokens):
        # Without offsets no value can be found among the tokens, and counting every value as certain would
        # report a p_reject of exactly 0 or 1 that the model never expressed.
        return TierConfidence(
            model=model, reason="the server's token log-probabilities do not spell the reply; none could be used"
        )
    graded = [n for n in spec.graded_dimensions if data.get(n) is not None]
    if not graded:
        return TierConfidence(model=model, reason="no graded value in the reply")
    options = [_alternatives(spec, n, data[n], text, tokens) for n in graded]
    while math.prod(len(o) for o in options) > MAX_COMBINATIONS:
        widest = max(range(len(options)), key=lambda i: len(options[i]))
        options[widest] = options[widest][:-1]
    p_fail = 0.0
    total = 0.0
    for combo in itertools.product(*options):
        prob = math.prod(p for _, p in combo)
        total += prob
        if _failed(spec, {n: v for n, (v, _) in zip(graded, combo, strict=True)}):
            p_fail += prob
    p = p_fail / total if total > 0 else None
    return TierConfidence(
        p_reject=None if p is None else round(min(1.0, max(0.0, p)), 6), method="logprobs", model=model
    )


def from_samples(spec: JudgeSpec, replies: Sequence[str], model: str | None) -> TierConfidence:
    """The share of sampled replies whose verdict is ``failed`` (unparseable replies are left out)."""
    from bqas.judging.parse import parse_reply

    verdicts: list[bool] = []
    for text in replies:
        outcome = parse_reply(text, spec.schema)
        if outcome.ok and isinstance(outcome.data, dict):
            values = {n: outcome.data.get(n) for n in spec.graded_dimensions if outcome.data.get(n) is not None}
            verdicts.append(_failed(spec, values))
    if not verdicts:
        return TierConfidence(model=model, reason=f"none of {len(replies)} sampled replies was valid")
    return TierConfidence(
        p_reject=round(sum(verdicts) / len(verdicts), 6), method=f"agreement:{len(verdicts)}", model=model
    )
