"""One answer of the assistant under test (or why there is none), as stored and as results carry it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# Bytes of the raw reply kept in the store (the mapped fields are kept whole); a larger reply is cut.
RAW_KEEP_BYTES = 16 * 1024
# Bytes of the reply quoted in a target error's reason.
ERROR_EXCERPT_BYTES = 300


def excerpt(raw: bytes | str, limit: int = ERROR_EXCERPT_BYTES) -> str:
    """The first ``limit`` bytes of a reply as text (bytes that are not UTF-8 become U+FFFD)."""
    data = raw.encode("utf-8", errors="replace") if isinstance(raw, str) else raw
    text = data[:limit].decode("utf-8", errors="replace")
    return text + ("…" if len(data) > limit else "")


@dataclass
class TargetReply:
    """What the target answered to one turn: the judge inputs mapped from it and the assistant's own
    figures; ``error`` (a target error) when there is no usable answer."""

    turn: int
    fields: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    status: int | None = None  # HTTP status of the last attempt (None for a python target or no answer)
    latency_ms: float | None = None  # the answering attempt's time, request sent to reply read
    attempts: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    conversation_id: str | None = None
    raw: str = ""  # the first RAW_KEEP_BYTES of the reply
    raw_bytes: int = 0
    raw_truncated: bool = False
    kind: str = ""  # the target's type
    # The assistant's whole message where the judged fields are only part of it (an openai target with
    # ``outputs``): the next turn's history must repeat what it said, and ``raw`` may be cut.
    message: str | None = None
    reused_from: str | None = None  # --reuse-target-replies: the run that asked

    def keep_raw(self, raw: bytes | str) -> None:
        """Keep the first :data:`RAW_KEEP_BYTES` of the reply (and its size)."""
        data = raw.encode("utf-8", errors="replace") if isinstance(raw, str) else raw
        self.raw_bytes = len(data)
        self.raw_truncated = len(data) > RAW_KEEP_BYTES
        self.raw = data[:RAW_KEEP_BYTES].decode("utf-8", errors="replace")

    def stored(self) -> dict[str, Any]:
        """The form kept in the store (``target_replies``)."""
        return asdict(self)

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> TargetReply:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def brief(self) -> dict[str, Any]:
        """What each result record carries under ``target`` (the raw reply stays in the store)."""
        out: dict[str, Any] = {
            "type": self.kind,
            "turn": self.turn,
            "status": self.status,
            "latency_ms": self.latency_ms,
            "attempts": self.attempts,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "raw_bytes": self.raw_bytes,
        }
        if self.conversation_id is not None:
            out["conversation_id"] = self.conversation_id
        if self.reused_from is not None:
            out["reused_from"] = self.reused_from
        if self.error is not None:
            out["error"] = self.error
            out["reply_excerpt"] = excerpt(self.raw)
        return out


class TargetFailure(Exception):
    """A call to the target gave no usable answer; carries what is known of the last attempt."""

    def __init__(
        self,
        reason: str,
        *,
        status: int | None = None,
        raw: bytes = b"",
        attempts: int = 0,
        latency_ms: float | None = None,
    ):
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.raw = raw
        self.attempts = attempts
        self.latency_ms = latency_ms
