"""The date extractor's pre-filter (patterns whose required literals are absent do not run) gives exactly
the dates and the blanked text of running every pattern (less of the RAG judge's CPU)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bqas.offline import grounding
from bqas.offline.grounding import extract_dates

MONTHS = ["Januar", "MÄRZ", "märz", "Sept.", "sept", "October", "oct", "Dez", "DECEMBER", "Mai", "may", "Juli"]
PIECES = [
    *MONTHS,
    *(str(n) for n in (1, 3, 12, 31, 32, 2023, 2024, 99)),
    *("-", ".", "/", ". ", " ", "  ", ",", "st", "nd", "th", "of", "年", "月", "日", "号", "\u00a0", "\n"),
    *("{x}", "<b>", "\x00", "\ud800", "ſ", "K", "١٢"),  # braces, markup, a control, a lone surrogate
    # one whole date of each pattern's shape, so that every pattern matches often
    *("3.12.2024", "3. 12. 24", "2024-05-01", "5/6/2023", "2023年5月1日", "2024年3月", "6月2号"),
    *("1st of October, 2023", "12. dez 2020", "December 5, 2022", "Sept. 2021", "MÄRZ 2024"),
]
TEXTS = st.lists(st.sampled_from(PIECES), max_size=24).map("".join)

SAMPLES = [
    "Am 3. März 2024 und am 2024-05-01 sowie 5/6/2023.",
    "2023年5月1日发布，6月2号更新，2024年3月。",
    "On 1st of October, 2023 and December 5, 2022; also Sept. 2021.",
    "Kein Datum hier, nur 42 Zahlen und 3.5 Prozent; Abgabe am 3.12.2024 oder 4. 1. 25.",
    "MÄRZ 2024 / märz 2025 / 12. dez 2020",
]


def _kinds(text: str) -> list[str]:
    return [grounding._DATE_PATTERNS[i][1] for i in grounding._date_prefilter().candidates(lambda _form: text)]


def test_the_samples_give_the_same_dates_and_blanked_text_either_way() -> None:
    for text in SAMPLES:
        assert extract_dates(text) == extract_dates(text, prefilter=False)
    dates, _ = extract_dates(SAMPLES[0])
    assert [(d.year, d.month, d.day) for d in dates] == [(2024, 5, 1), (2023, 5, 6), (2024, 3, 3)]
    dates, _ = extract_dates(SAMPLES[3])
    assert [(d.year, d.month, d.day) for d in dates] == [(2024, 12, 3), (2025, 1, 4)]


def test_only_the_patterns_whose_literals_occur_run() -> None:
    assert _kinds("Kein Datum hier, nur 42 Zahlen") == []  # no separator, 年/月 or month name
    assert _kinds("am 3. märz") == ["dmy", "dMy", "Mdy", "My"]
    assert _kinds("2023年5月1日") == ["ymd", "ym", "md"]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXTS)
def test_prefiltered_extraction_equals_running_every_pattern(text: str) -> None:
    assert extract_dates(text) == extract_dates(text, prefilter=False)
