"""The one scrubber for what a target sends back: every value of an environment variable the target reads
(``api_key_env``, ``${VAR}``, ``${VAR:-default}``) is replaced by ``[secret NAME]``, also in the forms an
echo commonly takes — JSON-escaped (``\\/``, ``\\uXXXX``), percent-encoded, HTML-escaped and Base64 of the
whole value.

It is applied to a reply's whole body as soon as it is read, before anything is cut from it or quoted in
a reason, and again to every field that is stored or shown (mapped fields, conversation ids, errors):
parsing JSON may undo an escaping the body held.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
from typing import Any
from urllib.parse import quote, quote_plus

# Shorter values are not treated as secrets: replacing them would mangle ordinary text.
MIN_SECRET_CHARS = 4


def _forms(value: str) -> set[str]:
    """The value and the forms it takes when echoed through JSON, a URL, HTML or Base64."""
    forms = {value, html.escape(value), html.escape(value, quote=False)}
    for ascii_only in (True, False):
        escaped = json.dumps(value, ensure_ascii=ascii_only)[1:-1]
        # "\/" (PHP, many frameworks) and "\u003c" for <, > and & (Go's encoding/json).
        html_safe = escaped.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        forms |= {escaped, escaped.replace("/", "\\/"), html_safe, html_safe.replace("/", "\\/")}
    for encoded in (quote(value, safe=""), quote(value), quote_plus(value, safe="")):
        forms |= {encoded, re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), encoded)}
    data = value.encode("utf-8", errors="surrogatepass")
    for b64 in (base64.b64encode(data), base64.urlsafe_b64encode(data)):
        text = b64.decode("ascii")
        forms |= {text, text.rstrip("=")}
    return {f for f in forms if len(f) >= MIN_SECRET_CHARS}


class Scrubber:
    """Replaces secret values (by variable name) in bytes, text and nested values."""

    def __init__(self, secrets: dict[str, str]):
        pairs = [
            (form, f"[secret {name}]")
            for name, value in secrets.items()
            if len(value) >= MIN_SECRET_CHARS
            for form in _forms(value)
        ]
        # Longest first: a form that contains another (the JSON escaping of a value with "/") goes whole.
        pairs.sort(key=lambda pair: len(pair[0]), reverse=True)
        self._text = pairs
        self._bytes = [(a.encode("utf-8", errors="surrogatepass"), b.encode()) for a, b in pairs]

    @classmethod
    def from_environment(cls, names: set[str]) -> Scrubber:
        """The scrubber of the variables ``names`` as they are set now."""
        return cls({name: os.environ.get(name, "") for name in sorted(names)})

    def __bool__(self) -> bool:
        return bool(self._text)

    def bytes(self, data: bytes) -> bytes:
        for form, mark in self._bytes:
            if form in data:
                data = data.replace(form, mark)
        return data

    def text(self, text: str) -> str:
        for form, mark in self._text:
            if form in text:
                text = text.replace(form, mark)
        return text

    def value(self, value: Any) -> Any:
        """Strings anywhere in lists and mappings scrubbed (keys too); other values as they are. Mapped
        values are depth-limited before they get here, so the recursion is bounded."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.value(v) for k, v in value.items()}
        return value
