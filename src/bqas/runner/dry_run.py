"""``bqas run --dry-run``: what a run would send to the LLM, counted before anything is sent.

Nothing is stored and no request leaves the process: the prompts are rendered exactly as the engine
renders them (the same templates, fences and truncation), then counted.

Token counts are an estimate, not any model's tokenizer: tiktoken's encodings are downloaded from the
internet on first use (and match only OpenAI's models), and the judge model's own tokenizer is unknown
here. The rule (:func:`estimate_tokens`): a CJK character (Han, kana, Hangul, CJK and full-width
punctuation) counts one token; any other text one token per 4 characters (OpenAI's rule of thumb for
English; German runs a little longer per token); 4 tokens of chat framing per message. The real counts
come back from the server in each result's ``prompt_tokens``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bqas.judging.engine import InvalidSample, JudgeEngine, check_inputs
from bqas.judging.render import render_prompt
from bqas.runner.execute import RAGAS, work_items
from bqas.runner.scenario import Scenario

CHARS_PER_TOKEN = 4.0  # non-CJK text
MESSAGE_OVERHEAD_TOKENS = 4  # role and separators of one chat message
_CJK = re.compile(r"[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: one per CJK character, one per 4 other characters (rounded up)."""
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / CHARS_PER_TOKEN)


def estimate_messages(messages: list[dict[str, str]]) -> int:
    """Estimated prompt tokens of a chat request."""
    return sum(MESSAGE_OVERHEAD_TOKENS + estimate_tokens(m.get("content", "")) for m in messages)


@dataclass
class DryRunEstimate:
    """Counts of a run that has not happened."""

    scenario: str
    backend: str
    model: str | None
    samples: int = 0  # dataset lines
    work_items: int = 0  # (sample, judge) pairs
    invalid: int = 0
    llm_items: int = 0  # work items that would ask the LLM
    llm_calls: int = 0  # at least: one per LLM item (plus k confidence samples where configured)
    prompt_tokens: int = 0
    max_completion_tokens: int | None = 0  # upper bound when every judge has max_tokens, else None
    ragas_items: int = 0  # samples with RAGAS metrics: their LLM calls are not estimated
    by_judge: dict[str, dict[str, int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # the first invalid samples, line and field named
    prompt_price_per_mtok: float | None = None
    completion_price_per_mtok: float | None = None
    target_type: str | None = None  # the assistant under test's kind (None: no target)
    target_calls: int = 0  # turns sent to it (samples without a stored answer, history turns included)

    @property
    def prompt_cost_usd(self) -> float | None:
        if self.prompt_price_per_mtok is None:
            return None
        return round(self.prompt_tokens / 1e6 * self.prompt_price_per_mtok, 6)

    @property
    def max_cost_usd(self) -> float | None:
        """Prompt cost plus completions at their token limit; None without both prices or a limit."""
        prompt = self.prompt_cost_usd
        if prompt is None or self.completion_price_per_mtok is None or self.max_completion_tokens is None:
            return None
        return round(prompt + self.max_completion_tokens / 1e6 * self.completion_price_per_mtok, 6)

    def as_dict(self) -> dict[str, Any]:
        return {
            "dry_run": True,
            "scenario": self.scenario,
            "backend": self.backend,
            "model": self.model,
            "samples": self.samples,
            "work_items": self.work_items,
            "invalid": self.invalid,
            "llm_items": self.llm_items,
            "llm_calls": self.llm_calls,
            "prompt_tokens": self.prompt_tokens,
            "max_completion_tokens": self.max_completion_tokens,
            "ragas_items": self.ragas_items,
            "by_judge": self.by_judge,
            "errors": self.errors,
            "target": self.target_type,
            "target_calls": self.target_calls,
            "prompt_price_per_mtok": self.prompt_price_per_mtok,
            "completion_price_per_mtok": self.completion_price_per_mtok,
            "prompt_cost_usd": self.prompt_cost_usd,
            "max_cost_usd": self.max_cost_usd,
            "tokenizer": "estimate: 1 token per CJK character, 1 per 4 other characters, 4 per message",
        }


@dataclass
class LLMPlan:
    """What the run's LLM tier would be, known without an LLM: whether it is asked, the model's name (if
    configured) and the configured reply limit (``BQAS_LLM_MAX_TOKENS``, else each judge's)."""

    use: bool
    model: str | None = None
    max_tokens: int | None = None


def estimate_run(
    engine: JudgeEngine,
    scenario: Scenario,
    prices: tuple[float | None, float | None],
    backend: str,
    language: str | None = None,
    plan: LLMPlan | None = None,
) -> DryRunEstimate:
    """Walk the scenario's work items as a run would and count what the LLM tier would be sent.

    ``plan`` describes the LLM tier when the engine has none (a dry run needs no LLM to be reachable or
    even configured); without it, the engine's own LLM client is the plan."""
    if plan is None:
        config = engine.llm.config if engine.llm is not None else None
        plan = LLMPlan(engine.tiers[1], config.model if config else None, config.max_tokens if config else None)
    use_llm = plan.use
    est = DryRunEstimate(
        scenario=scenario.name,
        backend=backend,
        model=plan.model,
        prompt_price_per_mtok=prices[0],
        completion_price_per_mtok=prices[1],
    )
    options = engine.options
    extra = options.confidence_samples or (3 if options.llm_confidence == "samples" else 0)
    lines: set[int] = set()
    target = scenario.target
    provided: tuple[str, ...] = ()
    needed: tuple[str, ...] = ()
    asked: set[str] = set()
    doomed: set[str] = set()  # samples the run reports invalid without asking the target
    if target is not None:
        from bqas.targets.config import answer_fields, provided_fields
        from bqas.targets.conversation import prior_turns

        est.target_type = target.type
        needed = answer_fields(target)
        provided = provided_fields(target)
        doomed = _not_sent(engine, scenario, target)
    for work in work_items(scenario):
        lines.add(work.item.line)
        data: Mapping[str, Any] = work.item.data
        if target is not None and not work.error and any(data.get(f) in (None, "") for f in needed):
            # The target fills these in: count its call once per turn, judge the fields as empty answers.
            if work.item.sample_id not in asked and work.item.sample_id not in doomed:
                asked.add(work.item.sample_id)
                parent = work.item.parent or work.item
                first_turn = work.item.turn in (None, 0)
                est.target_calls += 1 + (len(prior_turns(parent.data)) if first_turn else 0)
            data = {**{f: "" for f in provided}, **{k: v for k, v in data.items() if v not in (None, "")}}
        est.work_items += 1
        if work.error or work.judge is None:
            est.invalid += 1
            _note(est, work.error or "no judge")
            continue
        if work.judge == RAGAS:
            est.ragas_items += 1
            continue
        spec = engine.registry.get(work.judge)
        row = est.by_judge.setdefault(spec.name, {"items": 0, "llm_calls": 0, "prompt_tokens": 0})
        row["items"] += 1
        try:
            values = check_inputs(spec, data)
        except InvalidSample as exc:
            est.invalid += 1
            _note(est, f"line {work.item.line}: field {exc}")
            continue
        if not use_llm or spec.kind == "generator":
            continue
        lang = str(data.get("language") or language or scenario.language or options.default_language)
        prompt = render_prompt(spec, values, lang, max_field_chars=options.max_field_chars)
        tokens = estimate_messages(list(prompt.messages))
        # Every repeat of --repeats is a call of its own (repeats 2..N bypass the cache).
        calls = (1 + (extra if spec.scoring is not None else 0)) * scenario.repeats
        est.llm_items += 1
        est.llm_calls += calls
        est.prompt_tokens += tokens * calls
        row["llm_calls"] += calls
        row["prompt_tokens"] += tokens * calls
        limit = plan.max_tokens or spec.max_tokens
        if limit is None or est.max_completion_tokens is None:
            est.max_completion_tokens = None
        else:
            est.max_completion_tokens += limit * calls
    est.samples = len(lines)
    return est


def _not_sent(engine: JudgeEngine, scenario: Scenario, target: Any) -> set[str]:
    """The samples a run does not send (every judgment of theirs would be invalid whatever the answer)."""
    from bqas.targets.preflight import unjudgeable
    from bqas.targets.stage import group_by_sample

    return {
        group[0].item.sample_id for group in group_by_sample(work_items(scenario)) if unjudgeable(engine, target, group)
    }


def _note(est: DryRunEstimate, message: str) -> None:
    if len(est.errors) < 20:
        est.errors.append(message)
