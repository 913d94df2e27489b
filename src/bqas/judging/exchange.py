"""What a judgment keeps of its LLM exchange, for the viewer's sample page (``bqas view``).

The rendered prompt is not stored: rendering is deterministic, so the page renders it again from the
stored inputs and checks the template by the stored prompt hash. What cannot be rendered again is kept per
attempt: the reply text (bounded, with a visible truncation marker), its finish reason, structured-output
mode, calls, tokens, latency, whether it came from the cache, and the validation errors that made the
judge ask again (the retry message is rendered from them). The request parameters that are the same for
every judgment (model, temperature, token limit) are stored once per run (:func:`request_snapshot`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bqas.llm.client import Completion, LLMClient

REPLY_LIMIT = 16_000  # characters of one reply kept; a judge's JSON answer is well under 2,000
EXAMPLES_LIMIT = 8_000
_MARKER = "\n… [truncated: {n} more characters not stored]"


def bounded(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a marker that says how much was left out."""
    return text if len(text) <= limit else text[:limit] + _MARKER.format(n=len(text) - limit)


def attempt_entry(completion: Completion, latency_ms: float, errors: list[str] | None = None) -> dict[str, Any]:
    """One answered attempt: the bounded reply and what it cost."""
    return {
        "reply": bounded(completion.text, REPLY_LIMIT),
        "reply_chars": len(completion.text),
        "finish_reason": completion.finish_reason,
        "mode": completion.mode,
        "calls": completion.calls,
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "latency_ms": round(latency_ms, 3),
        "cache_hit": completion.cache_hit,
        "logprobs": completion.logprobs is not None,
        "errors": errors or [],
    }


def failed_entry(
    error: str, calls: int, prompt_tokens: int, completion_tokens: int, latency_ms: float
) -> dict[str, Any]:
    """An attempt that got no usable answer from the server (timeout, refusal, runaway reply)."""
    return {
        "reply": None,
        "error": bounded(error, 2_000),
        "calls": calls,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "latency_ms": round(latency_ms, 3),
        "cache_hit": False,
        "errors": [],
    }


def request_snapshot(llm: LLMClient | None, *, max_field_chars: int, top_logprobs: int | None) -> dict[str, Any] | None:
    """The request parameters every judgment of a run shares (the API key never; the URL without query)."""
    if llm is None:
        return None
    from bqas.redaction import redaction_enabled

    config = llm.config
    return {
        "base_url": config.base_url.split("?", 1)[0],
        "model": config.model,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "structured_output": config.structured_output,
        "top_logprobs": top_logprobs,
        "max_field_chars": max_field_chars,
        "cache": config.cache_path is not None,
        "redacted": redaction_enabled(),  # inputs are stored masked: the page's prompt shows the masks
    }
