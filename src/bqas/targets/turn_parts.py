"""What every kind of target client shares: the user's message of a turn, the bearer header, a reply's JSON
and token counts, and mapped values as judge inputs. Below :mod:`bqas.targets.kinds` and the kind modules
beside it (:mod:`bqas.targets.dify`), which all import it."""

from __future__ import annotations

import os
from typing import Any

import orjson

from bqas.targets.config import DEFAULT_INPUTS, TOKEN_FIELDS, Target, TargetConfigError
from bqas.targets.mapping import UnmappableReply, as_judge_text
from bqas.targets.reply import TargetReply, excerpt


class SampleProblem(ValueError):
    """The sample cannot be sent (no user message, a template field it lacks): an ``invalid`` result."""


def user_message(target: Target, data: dict[str, Any]) -> str:
    """The user's message of a turn: ``target.input``, else user_input, query or question."""
    names = (target.input,) if target.input else DEFAULT_INPUTS
    for name in names:
        value = data.get(name)
        if isinstance(value, str) and value:
            return value
    raise SampleProblem(f"field {' / '.join(names)}: missing (the user's message for the target; target.input)")


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        return None
    return int(min(value, 2**31))


def count_tokens(reply: TargetReply, usage: Any) -> None:
    if isinstance(usage, dict):
        reply.prompt_tokens = _count(usage.get("prompt_tokens"))
        reply.completion_tokens = _count(usage.get("completion_tokens"))
        total = _count(usage.get("total_tokens"))
        if total is None and reply.prompt_tokens is not None and reply.completion_tokens is not None:
            total = reply.prompt_tokens + reply.completion_tokens
        reply.total_tokens = total


def reply_json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise UnmappableReply(f"the reply is not JSON: {excerpt(raw)}") from None


def as_judge_fields(mapped: dict[str, Any], required: tuple[str, ...], outputs: dict[str, str]) -> dict[str, Any]:
    """Mapped values as judge inputs (text or lists of texts); a required one that is missing raises."""
    missing = [name for name in required if name not in mapped]
    if missing:
        where = ", ".join(f"{name} ({outputs.get(name, '?')})" for name in missing)
        raise UnmappableReply(f"unmappable reply: nothing at {where}")
    return {
        name: value if name == "conversation_id" else as_judge_text(name, value)
        for name, value in mapped.items()
        if name not in TOKEN_FIELDS
    }


def bearer_header(env: str | None, where: str) -> dict[str, str]:
    if not env:
        return {}
    key = os.environ.get(env)
    if key is None:
        raise TargetConfigError(f"{where}: environment variable {env} is not set")
    return {"Authorization": f"Bearer {key}"}
