"""The offline method ``input_specifics``: does a voice answer invent specifics the user never said?

A voice assistant's answer confirms what the teacher asked for ("Erinnere mich morgen an die
Konferenz" -> "Ich erinnere dich morgen an die Konferenz."). A time, a date, a number, a name or a
place in the answer that is not in the teacher's words is made up ("… morgen um 8 Uhr" when no time was
said): the reminder, the letter or the message would carry it. This method finds such specifics in the
answer and checks each against the user's input:

* times: "8 Uhr", "8:30", "um 8", "8 pm", "at 8", "8点", "下午3点" (hour and minutes);
* dates: written dates (``bqas.offline.grounding.extract_dates``), weekdays and day words ("morgen",
  "übermorgen", "tomorrow", "明天", "周五");
* numbers: the rest of the digits (rooms, counts, grades), after dates and times are masked out;
* names: persons the PII rules find (``bqas.offline.pii``), titled names ("Frau Weber"), acronyms and
  codes ("AG", "7b"); in English and Chinese also capitalised phrases;
* places: cities of the gazetteer (``bqas.offline.pii_places``, GeoNames) after a locative word
  ("in Berlin", "nach Köln", "to Munich"), or cities of a million people or more anywhere.

The answers of intents that bring content of their own (a worksheet, a quiz, the marking scheme, the task
list: ``content_intents`` of the intent taxonomy) are not checked: the input cannot confirm their material.

A specific is supported when the input holds it: the same time (the hour said as a number or a number
word counts: "um acht" supports "8 Uhr"), date, number (``number_supported``), day word or name/place
(normalised text). The voice judge's ``faithfulness`` (1-5) from it: **5** when the answer has
specifics and all are in the input, **2** when only numbers are not, **1** when a time, a date, a name
or a place is not (a made-up slot value is fundamentally wrong for the command), and not measured when
the answer names no specific at all (nothing to check). It checks only that: whether the rest of the
answer is correct is for the LLM tier.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from bqas.offline.methods import FACT_KEY, MethodResult, OfflineContext, offline_method
from bqas.offline.text.day_words import day_words
from bqas.offline.text.inputs import as_text
from bqas.offline.text.normalize import fold

METHOD = "specifics:input"
CRITICAL = ("time", "date", "name", "place")

_ZH_DIGIT = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}

# Hour [and minutes] with a clock word or an "at"; the groups are (hour, minutes).
_TIME_PATTERNS = (
    re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(?:a\.?m\.?|p\.?m\.?)(?!\w)", re.I),
    re.compile(r"\b(\d{1,2})(?:[:.](\d{2}))?\s*(?:Uhr|h)\b", re.I),
    re.compile(r"\b(\d{1,2}):(\d{2})\b"),
    re.compile(r"\b(?:um|gegen|ab|bis|at|by|until|from)\s+(\d{1,2})(?:[:.](\d{2}))?\b(?!\s*(?:%|[.,]\d))", re.I),
    re.compile(r"(\d{1,2}|[零〇一二两三四五六七八九十]{1,3})\s*[点點](?:\s*(\d{1,2})\s*分|半)?"),
)
_PM_RE = re.compile(r"p\.?m\.?|下午|晚上|abends|nachmittags", re.I)
_LOCATIVE_RE = re.compile(r"\b(?:in|nach|aus|bei|von|to|at|from|near)\s+$", re.I)
_CAPWORD_RE = re.compile(r"(?<![\w-])[A-ZÄÖÜ][\w'’-]+(?:\s+[A-ZÄÖÜ][\w'’-]+)?")


@dataclass(frozen=True)
class Specific:
    kind: str  # time, date, number, name, place
    text: str
    supported: bool

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "supported": self.supported}


def _hour(raw: str) -> int | None:
    if raw.isdigit():
        return int(raw)
    if raw in _ZH_DIGIT:
        return _ZH_DIGIT[raw]
    if raw.startswith("十"):
        return 10 + (_ZH_DIGIT.get(raw[1:], 0) if raw[1:] else 0)
    if raw.endswith("十"):
        return _ZH_DIGIT.get(raw[:-1], 0) * 10
    if "十" in raw:
        tens, ones = raw.split("十", 1)
        return _ZH_DIGIT.get(tens, 0) * 10 + _ZH_DIGIT.get(ones, 0)
    return None


def _times(text: str) -> tuple[list[tuple[str, int, int | None]], str]:
    """(text, hour, minutes) of the clock times in ``text``, and the text with them blanked out."""
    found: list[tuple[str, int, int | None]] = []
    chars = list(text)
    for pattern in _TIME_PATTERNS:
        for m in pattern.finditer("".join(chars)):
            hour = _hour(m.group(1))
            if hour is None or hour > 24:
                continue
            minutes = int(m.group(2)) if m.lastindex and m.lastindex >= 2 and m.group(2) else None
            if minutes is None and m.group(0).endswith("半"):
                minutes = 30
            if minutes is not None and minutes > 59:
                continue
            before = text[max(0, m.start() - 4) : m.start()]
            if hour < 12 and _PM_RE.search(m.group(0) + before):
                hour += 12
            found.append((m.group(0).strip(), hour, minutes))
            for i in range(m.start(), m.end()):
                chars[i] = " "
    return found, "".join(chars)


def _time_supported(
    hour: int, minutes: int | None, said: list[tuple[str, int, int | None]], numbers: set[float]
) -> bool:
    for _, h, mi in said:
        if h % 12 == hour % 12 and (minutes in (None, 0) or mi == minutes):
            return True
    # "um acht" / "um 8" said as a bare number: the hour (12-hour reading too) without other minutes.
    return minutes in (None, 0) and bool({float(hour), float(hour % 12 or 12)} & numbers)


@cache
def _big_places() -> dict[str, int]:
    from bqas.offline.pii_places import places

    return {name: pop for name, pop in places().items() if pop >= 100_000 and len(name) >= 4}


def _places(text: str) -> list[str]:
    cities = _big_places()
    out: list[str] = []
    for m in _CAPWORD_RE.finditer(text):
        for cand in (m.group(0), m.group(0).split()[0]):
            pop = cities.get(cand)
            if pop is None:
                continue
            if pop >= 1_000_000 or _LOCATIVE_RE.search(text[: m.start()]):
                out.append(cand)
            break
    return list(dict.fromkeys(out))


def find_specifics(answer: str, source: str, language: str) -> list[Specific]:
    """The specifics of ``answer``, each marked supported when ``source`` (the user's input) holds it."""
    from bqas.offline.grounding import (
        date_supported,
        extract_dates,
        extract_entities,
        extract_numbers,
        number_supported,
        text_supported,
    )
    from bqas.offline.safety import GATE_MIN_CONFIDENCE, _detect
    from bqas.offline.zh_ner import enabled

    lang = language.split("-")[0].split("_")[0]
    src_dates, src_masked = extract_dates(source)
    src_times, src_masked = _times(src_masked)
    src_numbers = extract_numbers(src_masked, context=True)
    said_numbers = {v for n in extract_numbers(source, context=True) for v in n.bases()}
    src_norm = " ".join(re.findall(r"\w+", fold(source)))
    src_words = set(src_norm.split())
    out: list[Specific] = []

    findings = _detect(answer, language, enabled())
    # Contact data (an e-mail address, a phone number, an IBAN …) is one specific, shown by its kind: its
    # digits are no number claims, and its text must not reach the note that results keep (the PII gate
    # reports it, masked where the store masks).
    contacts = [f for f in findings if f.kind != "person"]
    if contacts:
        from bqas.offline.pii import mask_pii

        for f in contacts:
            out.append(Specific("number", f"[{f.kind.upper()}]", f.text in source))
        placeholders = {f"[{f.kind.upper()}]" for f in contacts}
        answer = mask_pii(answer, contacts)
        for placeholder in placeholders:
            answer = answer.replace(placeholder, " ")

    dates, masked = extract_dates(answer)
    for d in dates:
        out.append(Specific("date", d.text, date_supported(d, src_dates)))
    times, masked = _times(masked)
    for text, hour, minutes in times:
        out.append(Specific("time", text, _time_supported(hour, minutes, src_times, said_numbers)))
    src_days = {canon for _, canon in day_words(source)}
    days = day_words(masked)
    for written, canon in days:
        out.append(Specific("date", written, canon in src_days))
    places = _places(masked)
    for p in places:
        out.append(Specific("place", p, text_supported(p, src_norm, src_words)))
    names: list[str] = []
    for f in findings:
        if f.kind == "person" and f.confidence >= GATE_MIN_CONFIDENCE:
            names.append(f.text)
    for e in extract_entities(masked, lang):
        if e not in places and not any(e in n or n in e for n in names) and not any(e == w for w, _ in days):
            names.append(e)
    for n in dict.fromkeys(names):
        out.append(Specific("name", n, text_supported(n, src_norm, src_words)))
    for num in extract_numbers(masked):
        out.append(Specific("number", num.text, number_supported(num, src_numbers)))
    return out


def faithfulness_from(specifics: list[Specific]) -> tuple[float | None, str]:
    """The 1-5 score and a note (see the module docstring)."""
    if not specifics:
        return None, "no time, date, number, name or place in the answer to check against the user's input"
    missing = [s for s in specifics if not s.supported]
    if not missing:
        return 5.0, f"all {len(specifics)} specifics of the answer are in the user's input"
    listed = ", ".join(f"{s.kind} {s.text!r}" for s in missing[:5])
    critical = any(s.kind in CRITICAL for s in missing)
    return (1.0 if critical else 2.0), f"not in the user's input: {listed}"


@offline_method("input_specifics")
def input_specifics(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """faithfulness 1-5: the answer's times, dates, numbers, names and places against the user's input.

    ``intent`` (the expected intent, else ``detected``): an intent the taxonomy lists under
    ``content_intents`` answers with material of its own, which the input cannot confirm: not measured."""
    from bqas.offline.taxonomy import clean_intent, load_taxonomy

    answer = as_text(inputs.get("answer"))
    source = as_text(inputs.get("source"))
    if not answer.strip():
        return MethodResult(None, METHOD, note="empty answer")
    intent = clean_intent(inputs.get("intent")) or clean_intent(inputs.get("detected"))
    taxonomy = ctx.resources.get("intent_taxonomy") or load_taxonomy()
    if intent and intent in getattr(taxonomy, "content_intents", frozenset()):
        return MethodResult(
            None,
            METHOD,
            note=f"intent {intent} answers with content of its own: its specifics cannot be checked against the input",
        )
    specifics = find_specifics(answer, source, ctx.language)
    value, note = faithfulness_from(specifics)
    details: dict[str, Any] = {"specifics": [s.as_dict() for s in specifics]}
    if any(not s.supported for s in specifics):
        # A time, date, number or name of the answer that the user's words do not contain: checkable.
        details[FACT_KEY] = note
    return MethodResult(value, METHOD, note=note, details=details)
