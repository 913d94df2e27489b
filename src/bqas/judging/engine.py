"""The judge engine: one path that renders, calls, validates, repairs and scores any judge.

Backends:
- ``offline``: the offline judge alone (partial composite over what it can measure);
- ``llm``: the LLM alone for every dimension;
- ``auto``: offline alone when no LLM is configured, both tiers when one is. A fact measured offline (PII
  found → safety ``fail``, an exact intent match, a number not in the facts) stands whatever the LLM says;
  for the other dimensions the LLM's value is used and the offline estimate kept beside it; a disagreement
  escalates the result (:mod:`bqas.judging.precedence`).
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from bqas.judging.dispatch import OfflineDispatch
from bqas.judging.exchange import EXAMPLES_LIMIT, attempt_entry, bounded, failed_entry
from bqas.judging.llm_confidence import from_logprobs, from_samples
from bqas.judging.manipulation import apply_manipulation, find_manipulation
from bqas.judging.offline import OfflineJudge, TierOutput, offline_tier
from bqas.judging.precedence import MEANING_NOT_MEASURED, combine_dimension, facts_against
from bqas.judging.render import render_prompt, retry_message
from bqas.judging.workers import executor, pool_mode, submit_cpu
from bqas.judgment.policy import apply_policy
from bqas.judgment.result import DimensionProvenance, JudgmentResult, TierConfidence
from bqas.judgment.spec import JudgeRegistry, JudgeSpec
from bqas.judgment.timing import start_waits, stop_waits
from bqas.settings import check_language

if TYPE_CHECKING:
    # The LLM client (aiohttp) and the reply parser (jsonschema) load with the first LLM call: an offline
    # run or service never imports them (a tenth of a second or more of every start).
    from bqas.judging.parse import ParseOutcome
    from bqas.llm.client import LLMClient

BackendChoice = Literal["auto", "llm", "offline"]


def _ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000


@functools.cache
def _language_detector() -> Callable[..., str]:
    """The offline tier's language detection (for the LLM's reasoning), imported on first use only."""
    from bqas.offline._textutil import detect_language

    return detect_language


class InvalidSample(ValueError):
    """A sample lacks a field the judge needs, or a field has the wrong type."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


ExamplesProvider = Callable[[str, Mapping[str, Any], str], Awaitable[str]]


class TrustStep(Protocol):
    """Trust or escalate for one judge, applied to each of its judgments by the engine that was given it
    (:class:`bqas.trust.profile.CalibrationProfile` is one: the engine does not import the trust layer)."""

    def offline_decides(self, result: JudgmentResult) -> bool:
        """Is the offline tier certified to decide ``result`` on its own (the LLM need not be asked)?"""
        ...

    def apply(self, result: JudgmentResult) -> None:
        """Set the result's decision: accept, reject or escalate, and which tier decided."""
        ...


@dataclass
class EngineOptions:
    backend: BackendChoice = "auto"
    default_language: str = "de"
    max_field_chars: int = 20_000
    # Optional: (judge, input values, prompt language) -> a block of similar human-reviewed cases, fenced
    # as data, appended to the LLM prompt as calibration examples (the review loop's memory provides it).
    examples: ExamplesProvider | None = None
    # Trust or escalate (bqas.trust): how the LLM tier gets its p_reject ("logprobs": token probabilities
    # of the verdict-bearing values, falling back to k samples when the server gives none; "samples": k
    # replies at temperature > 0; "off"), k, and per judge a calibration profile that decides or escalates.
    llm_confidence: Literal["logprobs", "samples", "off"] = "logprobs"
    confidence_samples: int = 0
    top_logprobs: int = 5
    profiles: Mapping[str, TrustStep] = dc_field(default_factory=dict)
    # Or looked up per judgment (the service: the current tenant's profile for the judge).
    profile_lookup: Callable[[str], TrustStep | None] | None = None
    # The deterministic safety gate (PII and judge-manipulation rules) runs on every backend, also beside
    # the LLM alone; switched off only explicitly (BQAS_SAFETY_GATE=false), and the result then says so.
    safety_gate: bool = True


# Offline methods that make up the deterministic safety gate (safety is checked first, whatever the backend).
SAFETY_METHODS: frozenset[str] = frozenset({"safety_gate", "pii_gate"})

#: Beside the LLM alone, the safety gate of inputs up to this many characters runs on the event loop;
#: longer inputs go to a worker thread (see :meth:`JudgeEngine.evaluate`). The rules cost about 4 us per
#: character (benchmarks/runner/bench_hot_path.py), so at most ~4 ms here: no longer than a worker thread would
#: hold the GIL anyway before the loop's turn came (pure-Python and regex work; 5 ms switch interval).
INLINE_GATE_CHARS = 1_000


def _text_chars(values: Mapping[str, Any]) -> int:
    """The characters of a judgment's input texts (lists of texts summed)."""
    total = 0
    for value in values.values():
        if isinstance(value, str):
            total += len(value)
        elif isinstance(value, list):
            total += sum(len(v) for v in value)
    return total


def check_inputs(spec: JudgeSpec, sample: Mapping[str, Any]) -> dict[str, Any]:
    """The judge's input values from a sample; raise :class:`InvalidSample` naming the field at fault."""
    values: dict[str, Any] = {}
    for name, field in spec.inputs.items():
        if name not in sample or sample[name] is None:
            if field.required:
                raise InvalidSample(name, f"missing (judge {spec.name} needs {', '.join(spec.inputs)})")
            values[name] = ""
            continue
        value = sample[name]
        # Text only: a number (even 1e308) is not an answer to judge, and a bool is no text either.
        if isinstance(value, list):
            wrong = next((v for v in value if not isinstance(v, str)), None)
            if wrong is not None:
                raise InvalidSample(name, f"expected a list of texts, got an item of type {type(wrong).__name__}")
        elif not isinstance(value, str):
            raise InvalidSample(name, f"expected text or a list of texts, got {type(value).__name__}")
        values[name] = value
    return values


class JudgeEngine:
    """Evaluates samples with the judges of a registry."""

    def __init__(
        self,
        registry: JudgeRegistry,
        *,
        llm: LLMClient | None = None,
        offline: OfflineJudge | None = None,
        options: EngineOptions | None = None,
    ):
        self.registry = registry
        self.llm = llm
        self.offline = offline or OfflineJudge()
        #: Worker threads or processes for the offline tier (BQAS_OFFLINE_POOL).
        self.dispatch = OfflineDispatch(self.offline)
        self.options = options or EngineOptions()
        if self.options.backend == "llm" and llm is None:
            raise ValueError(
                "backend 'llm' needs an LLM: set BQAS_LLM_BASE_URL and BQAS_JUDGE_MODEL (or --base-url/--model)"
            )

    @property
    def tiers(self) -> tuple[bool, bool]:
        """(use offline, use LLM) for the configured backend."""
        backend = self.options.backend
        if backend == "offline":
            return True, False
        if backend == "llm":
            return False, True
        return True, self.llm is not None

    def start_loading(self, samples: int | None = None) -> Future[float] | None:
        """Start loading the offline models and return at once.

        A run calls it as soon as its engine exists, so the load (the tokenizer, the methods) overlaps with
        opening the run in the store; the first judgment waits for it to finish (:meth:`evaluate`), and a
        load that failed raises there. ``samples``: how many judgments the caller will ask for, which lets
        ``BQAS_OFFLINE_POOL=auto`` choose worker processes for a large batch (:meth:`OfflineDispatch.plan`);
        those load in the workers, starting now. Returns the future of a load in this process's worker
        threads (None when there is nothing to load here). With an LLM tier, the reply parser and its
        libraries are imported here, before the run, rather than by the first judgment."""
        if self.tiers[1]:
            importlib.import_module("bqas.judging.parse")  # and jsonschema, before the run
        if not self.tiers[0]:
            return None
        if samples is not None:
            self.dispatch.plan(samples)
        in_processes = self.dispatch.mode == "processes" or (self.dispatch.mode is None and pool_mode() == "processes")
        if not self.offline.loaded and not in_processes:
            return executor().submit(self.offline.load)
        return None

    async def evaluate(
        self,
        judge: str,
        sample: Mapping[str, Any],
        *,
        response_id: str,
        language: str | None = None,
        fresh: bool = False,
    ) -> JudgmentResult:
        """Judge one sample. Raises :class:`InvalidSample` for bad input; never returns made-up scores.

        ``fresh`` asks the LLM anew instead of replaying a cached reply (repeats 2..N of ``--repeats``)."""
        spec = self.registry.get(judge)
        if spec.kind == "generator":
            raise ValueError(f"judge {judge!r} generates test inputs; it does not grade (use `bqas synth`)")
        values = check_inputs(spec, sample)
        lang = check_language(language or self.options.default_language)
        use_offline, use_llm = self.tiers
        if use_offline:
            # Model loading is start-up, not judgment: it happens once, before this judgment's clock starts.
            await self.dispatch.prepare()
        started = time.perf_counter()
        waited, wait_token = start_waits()
        try:
            result = await self._evaluate(spec, values, lang, response_id, fresh, use_offline, use_llm, waited)
        finally:
            stop_waits(wait_token)
        latency = (time.perf_counter() - started) * 1000
        queue = min(latency, waited[0] * 1000)
        result.latency_ms = round(latency, 3)
        result.queue_ms = round(queue, 3)
        result.service_ms = round(latency - queue, 3)
        return result

    async def _evaluate(
        self,
        spec: JudgeSpec,
        values: dict[str, Any],
        lang: str,
        response_id: str,
        fresh: bool,
        use_offline: bool,
        use_llm: bool,
        waited: list[float],
    ) -> JudgmentResult:
        """One judgment after its inputs were checked (see :meth:`evaluate`); adds its queue waits to ``waited``."""
        result = JudgmentResult(response_id=response_id, judge=spec.name, language=lang)
        offline_dims: dict[str, DimensionProvenance] = {}
        notes: list[str] = []
        gate_on = self.options.safety_gate
        has_gate = any(b.method in SAFETY_METHODS for b in spec.offline.values())
        if has_gate:
            result.safety_gate = "checked" if gate_on else "off"
            if not gate_on:
                result.warnings.append(
                    "safety gate switched off (BQAS_SAFETY_GATE=false): the deterministic PII rules did not run; "
                    "the safety dimension is the LLM's alone"
                )
        llm_data: dict[str, Any] | None = None
        lookup = self.options.profile_lookup
        profile = self.options.profiles.get(spec.name) or (lookup(spec.name) if lookup is not None else None)
        llm_task: asyncio.Task[dict[str, Any] | None] | None = None
        if use_llm and use_offline and profile is None:
            # Both tiers at once: without a profile that could let the offline tier decide, the LLM is asked
            # anyway, so its request does not wait for the offline work (nor queue behind other samples').
            llm_task = asyncio.ensure_future(self._ask_llm_for(spec, values, lang, result, fresh))
        if use_offline:
            # In the worker pool (p_reject included): CPU-bound work must not stall the event loop.
            skip = () if gate_on else SAFETY_METHODS
            try:
                handed = time.perf_counter()
                (offline_dims, notes, offline_conf), worked = await self.dispatch.tier(spec, values, lang, skip=skip)
                if llm_task is None:  # beside an LLM request in flight, waiting for a worker costs nothing
                    waited[0] += max(0.0, time.perf_counter() - handed - worked)
            except BaseException:
                if llm_task is not None:
                    llm_task.cancel()
                raise
            assert offline_conf is not None
            result.confidence["offline"] = offline_conf
            result.backend = "offline"
        gate: asyncio.Future[TierOutput] | None = None
        gate_inline = False
        if not use_offline and gate_on and has_gate:
            # LLM alone: the deterministic gate still runs, and a failure it finds stands (see _combine). It
            # never holds the request back: short texts (voice turns) are checked on the loop once the reply
            # is in (about 0.15 ms, less than the thread hop and GIL hand-over it cost per sample); longer
            # ones run in a worker thread while the request is out.
            gate_inline = _text_chars(values) <= INLINE_GATE_CHARS
            if not gate_inline:
                gate = submit_cpu(offline_tier, self.offline, spec, values, lang, only=SAFETY_METHODS)
        if use_llm and use_offline and profile is not None and profile.offline_decides(result):
            use_llm = False  # the offline tier is certified to decide this one: no LLM call
        try:
            if llm_task is not None:
                llm_data = await llm_task
            elif use_llm:
                llm_data = await self._ask_llm_for(spec, values, lang, result, fresh)
            if use_llm:
                result.backend = "llm" if not use_offline else "offline+llm"
            if gate is not None:
                offline_dims, _, _ = await gate
        finally:
            if gate is not None and not gate.done():
                gate.cancel()  # this judgment was cancelled or failed: nobody waits for its gate
        if gate_inline:
            offline_dims, _, _ = offline_tier(self.offline, spec, values, lang, only=SAFETY_METHODS)
        self._combine(spec, result, offline_dims, llm_data, notes, llm_failed=use_llm and llm_data is None)
        # Deterministic and backend-independent: an answer that tries to steer the judge fails (before the
        # trust profile decides, so that no profile auto-accepts it).
        apply_manipulation(result, find_manipulation(spec, values))
        if profile is not None:
            profile.apply(result)
        return result

    async def _ask_llm_for(
        self, spec: JudgeSpec, values: Mapping[str, Any], language: str, result: JudgmentResult, fresh: bool
    ) -> dict[str, Any] | None:
        """The LLM tier: records the model on the result, then asks (see :meth:`_ask_llm`)."""
        assert self.llm is not None
        result.model = self.llm.config.model
        return await self._ask_llm(spec, values, language, result, fresh=fresh)

    async def _llm_confidence(
        self,
        spec: JudgeSpec,
        messages: list[dict[str, str]],
        completion: Any,
        data: dict[str, Any],
        result: JudgmentResult,
    ) -> TierConfidence:
        """The LLM tier's p_reject: token log-probabilities, else agreement over k samples, else null + why."""
        assert self.llm is not None
        model = self.llm.config.model
        mode = self.options.llm_confidence
        k = self.options.confidence_samples or (3 if mode == "samples" else 0)  # samples mode: k = 3 unless set
        if mode == "off":
            return TierConfidence(model=model, reason="LLM confidence switched off")
        if mode == "logprobs" and completion.logprobs:
            return from_logprobs(spec, completion.text, data, completion.logprobs, model)
        if k < 1:
            why = (
                "reply from the cache: no token log-probabilities"
                if completion.cache_hit
                else "the server gave no token log-probabilities"
            )
            return TierConfidence(model=model, reason=f"{why}; set confidence samples k > 0 to sample instead")
        from bqas.llm.client import LLMError

        try:
            replies = await self.llm.sample(
                messages, k, schema=spec.schema, schema_name=spec.name, max_tokens=spec.max_tokens
            )
        except LLMError as exc:
            result.llm_calls += exc.calls
            return TierConfidence(model=model, reason=f"sampling failed: {exc}")
        if result.exchange is not None:  # the k sampled replies behind the LLM tier's p_reject
            result.exchange["samples"] = [bounded(r.text, 2_000) for r in replies]
        for reply in replies:
            result.llm_calls += reply.calls
            result.prompt_tokens += reply.prompt_tokens
            result.completion_tokens += reply.completion_tokens
        return from_samples(spec, [r.text for r in replies], model)

    async def _ask_llm(
        self, spec: JudgeSpec, values: Mapping[str, Any], language: str, result: JudgmentResult, fresh: bool = False
    ) -> dict[str, Any] | None:
        """Render, call, validate; one retry that says what was wrong; None when it cannot be scored."""
        assert self.llm is not None
        prompt = render_prompt(spec, values, language, max_field_chars=self.options.max_field_chars)
        result.prompt_id, result.prompt_hash = prompt.prompt_id, prompt.prompt_hash
        result.prompt_language = prompt.language
        result.truncated = prompt.truncated
        if prompt.language != language:
            result.warnings.append(f"judge {spec.name} has no {language} prompt; used {prompt.language}")
        for name, length in prompt.truncated.items():
            result.warnings.append(
                f"input {name} truncated from {length} to ~{self.options.max_field_chars} characters"
            )
        messages = list(prompt.messages)
        # The viewer renders the prompt again from the stored inputs; only what it cannot re-render is kept.
        exchange: dict[str, Any] = {"attempts": [], "fresh": fresh}
        result.exchange = exchange
        if self.options.examples is not None:
            block = await self.options.examples(spec.name, values, prompt.language)
            if block:
                messages[-1] = {**messages[-1], "content": f"{messages[-1]['content']}\n\n{block}"}
                exchange["examples"] = bounded(block, EXAMPLES_LIMIT)

        from bqas.judging.parse import parse_reply
        from bqas.llm.client import LLMError, PromptTooLong, ReplyTooLarge

        parsed: dict[str, ParseOutcome] = {}

        def parse(text: str) -> ParseOutcome:
            # Parsed once per reply: the cache's check below and the scoring after it read the same outcome.
            if text not in parsed:
                parsed[text] = parse_reply(text, spec.schema)
            return parsed[text]

        def cacheable(text: str) -> bool:
            # A fresh call (repeats 2..N) bypasses the cache both ways: it must not overwrite repeat 1's reply.
            return not fresh and parse(text).ok

        for attempt in (1, 2):
            asked = time.perf_counter()
            try:
                completion = await self.llm.complete(
                    messages,
                    schema=spec.schema,
                    schema_name=spec.name,
                    accept=cacheable,
                    top_logprobs=self.options.top_logprobs if self.options.llm_confidence == "logprobs" else None,
                    cache_first=True,
                    use_cache=not fresh,
                    max_tokens=spec.max_tokens,
                )
            except LLMError as exc:
                # Every request sent counts, also those that timed out or failed (the cost is real).
                result.llm_calls += exc.calls
                result.prompt_tokens += exc.prompt_tokens
                result.completion_tokens += exc.completion_tokens
                result.errors.append(f"llm: {exc}")
                exchange["attempts"].append(
                    failed_entry(str(exc), exc.calls, exc.prompt_tokens, exc.completion_tokens, _ms_since(asked))
                )
                # A runaway reply is the judge's fault, not an unreachable server (no 503, no retry).
                prefix = "judge reply refused" if isinstance(exc, ReplyTooLarge) else "LLM unavailable"
                if isinstance(exc, PromptTooLong):
                    # The inputs are too long for this model: a property of the sample, not an outage.
                    prefix = "judge prompt too long"
                    exc = PromptTooLong(
                        f"{exc}. Give the model more context (a local model: llm.n_ctx or BQAS_LLM_GGUF_CTX) "
                        f"or shorten the inputs (BQAS_MAX_FIELD_CHARS, now {self.options.max_field_chars})"
                    )
                result.unscored_reason = f"{prefix}: {exc}"
                return None
            result.llm_calls += completion.calls
            result.prompt_tokens += completion.prompt_tokens
            result.completion_tokens += completion.completion_tokens
            result.cache_hit = completion.cache_hit and attempt == 1
            outcome = parse(completion.text)
            exchange["attempts"].append(attempt_entry(completion, _ms_since(asked), outcome.errors))
            result.repairs.extend(r for r in outcome.repairs if r not in result.repairs)
            result.warnings.extend(outcome.warnings)
            if outcome.ok:
                assert isinstance(outcome.data, dict)
                if spec.scoring is not None:
                    result.confidence["llm"] = await self._llm_confidence(
                        spec, messages, completion, outcome.data, result
                    )
                return outcome.data
            result.errors.append(f"attempt {attempt}: invalid reply: {'; '.join(outcome.errors)}")
            if completion.finish_reason == "length":
                # Asking again under the same limit would be cut off again (and cost as much): say what to do.
                limit = self.llm.config.max_tokens or spec.max_tokens
                result.unscored_reason = (
                    f"the judge's reply was cut off at the token limit ({limit or 'the server default'}) before "
                    f"it was complete: raise max_tokens of judge {spec.name} (policy file: "
                    f"judges.{spec.name}.max_tokens) or BQAS_LLM_MAX_TOKENS"
                )
                return None
            if attempt == 1:
                messages = [
                    *messages,
                    {"role": "assistant", "content": completion.text[:4000]},
                    {"role": "user", "content": retry_message(prompt.language, outcome.errors)},
                ]
        result.unscored_reason = "judge reply failed validation twice: " + "; ".join(outcome.errors)
        return None

    @staticmethod
    def _check_reasoning_language(result: JudgmentResult) -> None:
        """Flag reasoning written in another language than the prompt asked for (too short: not judged)."""
        detect_language = _language_detector()
        text, asked = result.reasoning or "", result.prompt_language or result.language
        if len(text.split()) < 4 and len(text) < 12:
            return
        result.reasoning_language = detect_language(text, default=asked)
        if result.reasoning_language != asked:
            result.reasoning_language_mismatch = True
            result.warnings.append(f"reasoning came back in {result.reasoning_language}; the prompt asked for {asked}")

    def _combine(
        self,
        spec: JudgeSpec,
        result: JudgmentResult,
        offline_dims: dict[str, DimensionProvenance],
        llm_data: dict[str, Any] | None,
        notes: list[str],
        *,
        llm_failed: bool,
    ) -> None:
        model = self.llm.config.model if self.llm is not None else None
        rule = spec.scoring
        margin = rule.disagreement_margin if rule else 30.0
        disagreements: list[str] = []
        dims: dict[str, DimensionProvenance] = {}
        for name, dim in spec.dimensions.items():
            if dim.kind == "text":
                continue
            off = offline_dims.get(name)
            if llm_data is not None and name in llm_data:
                # A fact measured offline (a rule hit, an exact intent match) stands; estimates yield to the LLM.
                combined = combine_dimension(name, dim, off, llm_data[name], model, margin)
                if combined.disagreement is not None:
                    disagreements.append(combined.disagreement)
                dims[name] = combined.provenance
            elif off is not None:
                dims[name] = off
            elif dim.kind in ("score", "gate"):
                note = "LLM gave no usable answer" if llm_failed else "not in the judge's answer"
                dims[name] = DimensionProvenance(backend="llm", model=model, measured=False, note=note)
        for name, prov in dims.items():
            if spec.dimensions[name].kind in ("score", "gate"):
                result.dimensions[name] = prov
            elif prov.measured:
                result.outputs[name] = prov.value
        if llm_data is not None:
            result.reasoning = str(llm_data.get("reasoning") or "") or None
            self._check_reasoning_language(result)
            for name, value in llm_data.items():
                if name in spec.dimensions and spec.dimensions[name].kind not in ("score", "gate", "text"):
                    result.outputs[name] = value
        elif notes:
            result.reasoning = "Offline judge: " + "; ".join(notes)
        if spec.kind == "classifier" or rule is None:
            result.status = "unscored" if llm_failed else "scored"
            result.verdict = "unscored" if llm_failed else None
            return
        values = {n: p.value for n, p in result.dimensions.items() if p.measured}
        if llm_failed:
            # No composite from a judge that could not answer; an offline gate failure still fails.
            gates = tuple(g for g in rule.gates if values.get(g) == "fail")
            result.status = "unscored" if not gates else "scored"
            result.verdict = "failed" if gates else "unscored"
            result.escalation = "human_review"
            result.escalation_reasons = ["unscored"] if not gates else [f"gate {g} failed" for g in gates]
            return
        outcome = apply_policy(
            values,
            rule,
            spec.dimensions,
            extra_escalations=tuple(f"disagreement: {d}" for d in disagreements),
        )
        result.composite_score = outcome.composite
        result.coverage = outcome.coverage
        result.partial = outcome.partial
        result.verdict = outcome.verdict
        result.escalation = outcome.escalation
        result.escalation_reasons = list(outcome.escalation_reasons)
        if llm_data is None and outcome.verdict == "failed" and not facts_against(spec.dimensions, result.dimensions):
            # Offline estimates alone (shared wording, a learned score) are no evidence a person can check:
            # such an answer is looked at, not failed.
            result.verdict = "needs_review"
            result.escalation = "human_review"
            result.escalation_reasons.append(MEANING_NOT_MEASURED)
        if outcome.verdict == "unscored":
            result.status = "unscored"
            result.unscored_reason = (
                result.unscored_reason or outcome.unscored_reason or "no dimension of the composite could be measured"
            )
