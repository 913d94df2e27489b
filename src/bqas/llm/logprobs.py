"""Token log-probabilities of a chat completion, aligned to the reply text.

OpenAI, vLLM and llama.cpp server return them in the same shape when asked (``logprobs: true``,
``top_logprobs: k``)::

    "logprobs": {"content": [{"token": "pass", "logprob": -0.02, "bytes": [112, 97, 115, 115],
                              "top_logprobs": [{"token": "pass", "logprob": -0.02}, ...]}, ...]}

:func:`parse_logprobs` turns that into :class:`TokenLogprob` entries with the character offset of each
token in the reply text, so a caller can pick the tokens that carry a verdict (a ``pass``/``fail`` value,
a score) with :func:`tokens_in_span`. The server's reply is untrusted: anything malformed gives ``None``
(no log-probabilities), never a made-up number.
"""

from __future__ import annotations

import codecs
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# A reply of a few thousand tokens is the most a judge asks for; more entries than this are not a reply.
MAX_TOKENS = 20_000
MAX_TOP = 20


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token: its text, log-probability, the most likely alternatives, and where it sits.

    ``offset``/``end`` delimit the token's characters in the reply text, ``text[offset:end]`` (both
    ``None`` when the server's tokens do not spell the reply, so no offsets can be trusted). ``top`` holds
    ``(token, logprob)`` pairs as the server ranked them (most likely first, usually including the
    chosen token).
    """

    token: str
    logprob: float
    offset: int | None
    end: int | None
    top: tuple[tuple[str, float], ...] = ()


def _logprob(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    # A log-probability is finite and at most 0 (tiny positive rounding noise is clipped to 0).
    if not math.isfinite(number) or number > 1e-6:
        return None
    return min(number, 0.0)


def _token_bytes(entry: dict[str, Any], token: str) -> bytes:
    raw = entry.get("bytes")
    if isinstance(raw, list):
        try:
            return bytes(raw)  # ints in 0..255, else TypeError/ValueError
        except (TypeError, ValueError):
            pass
    return token.encode("utf-8", errors="surrogatepass")


def _alternatives(raw_top: Any) -> tuple[tuple[str, float], ...]:
    if not isinstance(raw_top, list):
        return ()
    top: list[tuple[str, float]] = []
    for alt in raw_top[:MAX_TOP]:
        if isinstance(alt, dict) and isinstance(alt.get("token"), str):
            alt_lp = _logprob(alt.get("logprob"))
            if alt_lp is not None:
                top.append((alt["token"], alt_lp))
    return tuple(top)


def parse_logprobs(raw: Any, text: str) -> list[TokenLogprob] | None:
    """The tokens of ``raw`` (a choice's ``logprobs`` object) with offsets into ``text``; ``None`` if unusable."""
    if not isinstance(raw, dict):
        return None
    content = raw.get("content")
    if not isinstance(content, list) or not content or len(content) > MAX_TOKENS:
        return None
    parsed: list[tuple[str, float, tuple[tuple[str, float], ...]]] = []
    for entry in content:
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            return None
        logprob = _logprob(entry.get("logprob"))
        if logprob is None:
            return None
        parsed.append((entry["token"], logprob, _alternatives(entry.get("top_logprobs"))))
    bounds = _bounds([p[0] for p in parsed], content, text)
    tokens: list[TokenLogprob] = []
    for i, (token, logprob, alternatives) in enumerate(parsed):
        offset, end = bounds[i] if bounds else (None, None)
        tokens.append(TokenLogprob(token, logprob, offset, end, alternatives))
    return tokens


def _bounds(
    strings: Sequence[str], content: Sequence[dict[str, Any]], text: str
) -> list[tuple[int | None, int | None]] | None:
    """``(offset, end)`` of each token in ``text``; ``None`` unless the tokens spell ``text``.

    Usually the token strings do (then their lengths are the bounds). Byte-level tokenizers may split one
    character over two tokens, whose strings then hold replacement characters: their ``bytes`` spell the
    text, and a token's bounds count only the characters completed by the bytes up to and including it,
    so such a token may be empty (offset == end) and the next one holds the character.

    A server may also hand back less than it generated: llama.cpp's JSON grammar lets the model wrap the
    object in a Markdown code fence, and the reply's ``content`` is the object without it, while the
    log-probabilities list every generated token. When the reply occurs exactly once in what the tokens
    spell, the bounds are counted from there; tokens wholly outside the reply get ``(None, None)``.
    """
    spelled = "".join(strings)
    if spelled != text:
        pieces = [_token_bytes(entry, token) for entry, token in zip(content, strings, strict=True)]
        try:
            spelled = b"".join(pieces).decode("utf-8")
        except UnicodeDecodeError:
            return None
        decoder = codecs.getincrementaldecoder("utf-8")()
        lengths = [len(decoder.decode(piece)) for piece in pieces]
    else:
        lengths = [len(token) for token in strings]
    if spelled == text:
        shift = 0
    else:
        shift = spelled.find(text) if text else -1
        if shift < 0 or spelled.find(text, shift + 1) >= 0:
            return None
    stop = shift + len(text)
    bounds: list[tuple[int | None, int | None]] = []
    start = 0
    for length in lengths:
        end = start + length
        inside = start < stop and (end > shift if length else start >= shift)
        if spelled == text or inside:
            bounds.append((max(start, shift) - shift, min(end, stop) - shift))
        else:
            bounds.append((None, None))  # generated, but not part of the reply
        start = end
    return bounds


def tokens_in_span(tokens: Sequence[TokenLogprob], start: int, end: int) -> list[TokenLogprob]:
    """The aligned tokens that overlap the characters ``text[start:end]`` (e.g. a verdict value)."""
    return [t for t in tokens if t.offset is not None and t.end is not None and t.offset < end and t.end > start]
