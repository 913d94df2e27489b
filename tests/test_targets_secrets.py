"""The target scrubber (bqas.targets.secrets): a secret in each form an echo commonly takes is replaced;
ordinary text and short values are left alone."""

from __future__ import annotations

import base64
import html
import json
import re
from urllib.parse import quote, quote_plus

import pytest

from bqas.targets.config import env_names
from bqas.targets.secrets import Scrubber

KEY = "sk/ä<&>+9z=Q7 abc"  # "/", non-ASCII, HTML's and URLs' special characters, a space

FORMS = {
    "as is": KEY,
    "JSON": json.dumps(KEY)[1:-1],
    "JSON, raw UTF-8": json.dumps(KEY, ensure_ascii=False)[1:-1],
    "JSON with \\/": json.dumps(KEY)[1:-1].replace("/", "\\/"),
    "JSON as Go writes it": json.dumps(KEY, ensure_ascii=False)[1:-1]
    .replace("<", "\\u003c")
    .replace(">", "\\u003e")
    .replace("&", "\\u0026"),
    "percent-encoded": quote(KEY, safe=""),
    "percent-encoded, lower-case hex": re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), quote(KEY, safe="")),
    "percent-encoded path": quote(KEY),
    "form-encoded": quote_plus(KEY, safe=""),
    "HTML": html.escape(KEY),
    "Base64": base64.b64encode(KEY.encode()).decode(),
    "Base64 without padding": base64.b64encode(KEY.encode()).decode().rstrip("="),
    "URL-safe Base64": base64.urlsafe_b64encode(KEY.encode()).decode(),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_form_of_a_secret_is_replaced(form: str) -> None:
    echoed = FORMS[form]
    scrubber = Scrubber({"ASSISTANT_KEY": KEY})
    text = f"vorher {echoed} nachher"
    assert scrubber.text(text) == "vorher [secret ASSISTANT_KEY] nachher"
    assert scrubber.bytes(text.encode()) == b"vorher [secret ASSISTANT_KEY] nachher"


def test_nested_values_and_keys_are_scrubbed_and_short_values_are_not_secrets() -> None:
    scrubber = Scrubber({"A": KEY, "SHORT": "abc"})
    value = {"answer": [f"x {KEY}", {KEY: 1}], "n": 3, "abc": "abc"}
    assert scrubber.value(value) == {"answer": ["x [secret A]", {"[secret A]": 1}], "n": 3, "abc": "abc"}
    assert not Scrubber({"SHORT": "abc", "EMPTY": ""})


def test_defaulted_variables_count_as_secrets_but_not_as_required() -> None:
    config = {"url": "http://h/${HOST:-localhost}/x", "headers": {"X-Api-Key": "${KEY:-none}", "T": "${TOKEN}"}}
    assert env_names(config) == {"TOKEN"}  # an unset one of these fails the run before any sample
    assert env_names(config, with_defaults=True) == {"HOST", "KEY", "TOKEN"}  # these are scrubbed
