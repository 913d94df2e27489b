"""Every BQAS judge exists in German, English and Chinese, and the translations cannot drift.

The German templates (``prompt.de.txt``) are the verbatim originals of the spec; ``prompt.en.txt`` and
``prompt.zh.txt`` are our translations. These tests pin what must be identical in every language:

* the ``{placeholders}`` (and they equal the ``inputs`` of ``judge.yaml``),
* the JSON keys and the shape of the answer format,
* every number of the rubric (criteria numbering, ranges such as ``0-100`` and bands such as ``80-99``),
* the enum values of the output schema (``pass``/``fail``, intent names), which stay English,
* the keys and placeholders of the frame files (``_frame/frame.<lang>.yaml``).

The mutation tests at the end prove that the checkers catch a drifted copy.
"""

from __future__ import annotations

import functools
import json
import re
import string
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

JUDGES_DIR = Path(__file__).resolve().parents[1] / "src" / "bqas" / "judges"
FRAME_DIR = JUDGES_DIR / "_frame"
LANGUAGES: tuple[str, ...] = ("de", "en", "zh")
SOURCE_LANGUAGE = "de"
EXPECTED_JUDGES = frozenset(
    {
        "voice",
        "intent",
        "synthetic",
        "rag_retrieval",
        "rag_operator",
        "rag_hallucination",
        "rag_privacy",
        "rag_namespace",
    }
)

# A number or a range of numbers. Dash variants (hyphen, en/em dash, tilde) and spaces around the dash
# are one notation; full-width digits are folded by NFKC before matching.
_NUMBER_RE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)(?:\s*[-\u2010\u2011\u2012\u2013\u2014\u2212~]\s*(\d+(?:\.\d+)?))?")
_JSON_KEY_RE = re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:')
_JSON_STRING_RE = re.compile(r'"[^"\n]*"(\s*:)?')
_PLACEHOLDER_VALUE_RE = re.compile(r'"\{[A-Za-z_][A-Za-z0-9_]*\}"')
_LIST_LABEL_RE = re.compile(r"^\s*-\s*([A-Za-z_][A-Za-z0-9_]*)\s*[:：]", re.MULTILINE)
_ANSWER_START_RE = re.compile(r"^(?:\{\{|\[)", re.MULTILINE)


# --------------------------------------------------------------------------------------------- loading


def judge_names() -> list[str]:
    """Every judge directory (names starting with ``_`` or ``.`` are infrastructure, not judges)."""
    return sorted(p.name for p in JUDGES_DIR.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def prompt_path(judge: str, language: str) -> Path:
    return JUDGES_DIR / judge / f"prompt.{language}.txt"


def load_prompts(judge: str) -> dict[str, str]:
    return {lang: prompt_path(judge, lang).read_text(encoding="utf-8") for lang in LANGUAGES}


def load_inputs(judge: str) -> set[str]:
    config = yaml.safe_load((JUDGES_DIR / judge / "judge.yaml").read_text(encoding="utf-8"))
    assert isinstance(config, dict), f"{judge}/judge.yaml is not a mapping"
    inputs = config.get("inputs")
    assert isinstance(inputs, dict) and inputs, f"{judge}/judge.yaml has no inputs"
    return {str(key) for key in inputs}


def load_schema(judge: str) -> dict[str, Any]:
    schema = json.loads((JUDGES_DIR / judge / "schema.json").read_text(encoding="utf-8"))
    assert isinstance(schema, dict)
    return schema


# ------------------------------------------------------------------------------------------ extraction


def placeholders(template: str) -> list[str]:
    """The ``{field}`` names of a ``str.format`` template, in order (raises on malformed braces)."""
    fields: list[str] = []
    for _, field, spec, conversion in string.Formatter().parse(template):
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            raise ValueError(f"placeholder {{{field}}} must be a plain name without spec or conversion")
        fields.append(field)
    return fields


def literal_text(template: str) -> str:
    """The template with ``{{``/``}}`` un-escaped and every placeholder replaced by a space."""
    return " ".join(literal for literal, _, _, _ in string.Formatter().parse(template))


def json_keys(template: str) -> list[str]:
    """The ``"key":`` tokens of the template, in order."""
    return _JSON_KEY_RE.findall(literal_text(template))


def answer_format(template: str) -> str:
    """The answer-format block (from the first line starting with ``{{`` or ``[``) with every string
    value blanked and whitespace collapsed, so that only its structure, keys and placeholders remain."""
    match = _ANSWER_START_RE.search(template)
    if match is None:
        return ""
    block = _JSON_STRING_RE.sub(
        # keys and "{placeholder}" values stay, other string values are blanked
        lambda m: m.group() if m.group(1) or _PLACEHOLDER_VALUE_RE.fullmatch(m.group()) else '""',
        template[match.start() :],
    )
    return " ".join(block.split())


def rubric_numbers(template: str) -> list[str]:
    """Every number and range of the template's text, in order, normalised to ``a`` or ``a-b``."""
    text = unicodedata.normalize("NFKC", literal_text(template))
    return [f"{low}-{high}" if high else low for low, high in _NUMBER_RE.findall(text)]


def enum_values(schema: Any) -> set[str]:
    """All string enum values anywhere in a JSON schema."""
    found: set[str] = set()
    if isinstance(schema, dict):
        enum = schema.get("enum")
        if isinstance(enum, list):
            found.update(value for value in enum if isinstance(value, str))
        for value in schema.values():
            found |= enum_values(value)
    elif isinstance(schema, list):
        for value in schema:
            found |= enum_values(value)
    return found


def required_keys(schema: Any) -> set[str]:
    """``required`` of the schema's top object, or of its items for an array schema."""
    if isinstance(schema, dict) and schema.get("type") == "array":
        return required_keys(schema.get("items", {}))
    if isinstance(schema, dict):
        return {str(key) for key in schema.get("required", [])}
    return set()


def word_count(text: str, word: str) -> int:
    """Occurrences of an ASCII word, not as part of a longer identifier (``pass`` is not ``passage``)."""
    return len(re.findall(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", text))


def _count_of(word: str, text: str) -> int:
    return word_count(text, word)


def enum_labels(template: str, enums: set[str]) -> list[str]:
    """The list items that start with an enum value (``- pass:``, ``- reminder:``), in order."""
    return [label for label in _LIST_LABEL_RE.findall(template) if label in enums]


# -------------------------------------------------------------------------------------------- checkers


def drift(texts: Mapping[str, str], extract: Callable[[str], Any], what: str) -> list[str]:
    """Compare ``extract(text)`` of every language with the source language; one message per drift."""
    problems: list[str] = []
    try:
        reference = extract(texts[SOURCE_LANGUAGE])
    except ValueError as exc:
        return [f"{what}: '{SOURCE_LANGUAGE}' cannot be parsed: {exc}"]
    for lang, text in texts.items():
        try:
            value = extract(text)
        except ValueError as exc:
            problems.append(f"{what}: '{lang}' cannot be parsed: {exc}")
            continue
        if value != reference:
            problems.append(f"{what} of '{lang}' differ from '{SOURCE_LANGUAGE}': {value!r} != {reference!r}")
    return problems


def rubric_problems(texts: Mapping[str, str]) -> list[str]:
    return drift(texts, rubric_numbers, "rubric numbers")


def placeholder_problems(texts: Mapping[str, str], inputs: set[str]) -> list[str]:
    problems: list[str] = []
    for lang, text in texts.items():
        try:
            fields = set(placeholders(text))
        except ValueError as exc:
            problems.append(f"'{lang}': malformed template: {exc}")
            continue
        if fields != inputs:
            problems.append(f"'{lang}': placeholders {sorted(fields)} != judge.yaml inputs {sorted(inputs)}")
    return problems


def json_problems(texts: Mapping[str, str], schema: Mapping[str, Any]) -> list[str]:
    problems = drift(texts, json_keys, "JSON keys") + drift(texts, answer_format, "answer formats")
    for lang, text in texts.items():
        try:
            missing = required_keys(schema) - set(json_keys(text))
        except ValueError:
            continue  # already reported by drift()
        if missing:
            problems.append(f"'{lang}': answer format lacks required schema keys {sorted(missing)}")
    return problems


def enum_problems(texts: Mapping[str, str], schema: Mapping[str, Any]) -> list[str]:
    enums = enum_values(schema)
    problems = drift(texts, lambda text: enum_labels(text, enums), "enum list items")
    for lang, text in texts.items():
        problems.extend(f"'{lang}': enum value {v!r} is missing" for v in sorted(enums) if not word_count(text, v))
    for word in sorted({"pass", "fail"} & enums):
        problems += drift(texts, functools.partial(_count_of, word), f"counts of {word!r}")
    return problems


def translation_problems(texts: Mapping[str, str], inputs: set[str], schema: Mapping[str, Any]) -> list[str]:
    """Everything that must not differ between the languages of one judge."""
    return (
        placeholder_problems(texts, inputs)
        + json_problems(texts, schema)
        + rubric_problems(texts)
        + enum_problems(texts, schema)
    )


# ------------------------------------------------------------------------------------- the real files

JUDGES = judge_names()


def test_every_expected_judge_is_present() -> None:
    assert set(JUDGES) >= EXPECTED_JUDGES, f"missing judges: {sorted(EXPECTED_JUDGES - set(JUDGES))}"


@pytest.mark.parametrize("judge", JUDGES)
@pytest.mark.parametrize("language", LANGUAGES)
def test_language_file_exists(judge: str, language: str) -> None:
    path = prompt_path(judge, language)
    assert path.is_file(), f"{path} is missing"
    text = path.read_text(encoding="utf-8")  # strict UTF-8
    assert text.strip(), f"{path} is empty"
    assert "\ufffd" not in text and "\r" not in text, f"{path} has a broken character or CR line ends"


@pytest.mark.parametrize("judge", JUDGES)
def test_placeholders_equal_inputs(judge: str) -> None:
    texts = load_prompts(judge)
    assert placeholder_problems(texts, load_inputs(judge)) == []
    for lang, text in texts.items():
        rendered = text.format(**{field: f"<<{field}>>" for field in load_inputs(judge)})
        for field in load_inputs(judge):
            assert f"<<{field}>>" in rendered, f"'{lang}': {{{field}}} is not rendered"


@pytest.mark.parametrize("judge", JUDGES)
def test_json_answer_format_identical(judge: str) -> None:
    texts = load_prompts(judge)
    assert json_keys(texts[SOURCE_LANGUAGE]), "the German original shows no JSON keys"
    assert json_problems(texts, load_schema(judge)) == []


@pytest.mark.parametrize("judge", JUDGES)
def test_rubric_numbers_identical(judge: str) -> None:
    assert rubric_problems(load_prompts(judge)) == []


@pytest.mark.parametrize("judge", JUDGES)
def test_enum_values_in_every_language(judge: str) -> None:
    assert enum_problems(load_prompts(judge), load_schema(judge)) == []


@pytest.mark.parametrize("judge", [j for j in JUDGES if {"pass", "fail"} <= enum_values(load_schema(j))])
def test_pass_fail_in_every_language(judge: str) -> None:
    for lang, text in load_prompts(judge).items():
        assert word_count(text, "pass") > 0 and word_count(text, "fail") > 0, f"'{lang}' lacks pass/fail"


def test_frame_files_have_same_keys_and_placeholders() -> None:
    frames: dict[str, dict[str, Any]] = {}
    for lang in LANGUAGES:
        path = FRAME_DIR / f"frame.{lang}.yaml"
        assert path.is_file(), f"{path} is missing"
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert isinstance(data, dict) and data, f"{path} is not a non-empty mapping"
        frames[lang] = data
    reference = frames[SOURCE_LANGUAGE]
    for lang, frame in frames.items():
        assert set(frame) == set(reference), f"frame '{lang}' keys differ"
        for key, value in frame.items():
            assert isinstance(value, str) and value.strip(), f"frame '{lang}'.{key} is empty"
            assert set(placeholders(value)) == set(placeholders(reference[key])), (
                f"frame '{lang}'.{key}: placeholders differ from '{SOURCE_LANGUAGE}'"
            )


# ------------------------------------------------------------------------ the checkers catch mutations


def test_extraction_of_the_german_voice_rubric() -> None:
    numbers = rubric_numbers(prompt_path("voice", "de").read_text(encoding="utf-8"))
    assert numbers[:6] == ["1", "0-100", "100", "80-99", "50-79", "0-49"]
    assert numbers[6:13] == ["2", "1-5", "5", "4", "3", "2", "1"]
    assert numbers[-5:] == ["5", "0-100", "1-5", "1-5", "1-5"]  # "5. Safety", then the answer format


def test_extraction_of_the_intent_confidence_range() -> None:
    assert rubric_numbers(prompt_path("intent", "de").read_text(encoding="utf-8")) == ["0.0-1.0"]


def test_rubric_checker_catches_a_changed_band() -> None:
    texts = load_prompts("voice")
    assert texts["en"].count("80-99") == 1
    mutated = {**texts, "en": texts["en"].replace("80-99", "80-98")}
    problems = rubric_problems(mutated)
    assert len(problems) == 1
    assert "'en'" in problems[0] and "80-98" in problems[0]


def test_rubric_checker_tolerates_notation_variants() -> None:
    texts = load_prompts("voice")
    variants = [
        ("en dash", "en", texts["en"].replace("80-99", "80\u201399")),
        ("spaces", "en", texts["en"].replace("50-79", "50 - 79")),
        ("full-width digits", "zh", texts["zh"].replace("80-99", "\uff18\uff10\uff0d\uff19\uff19")),
        ("wave dash", "zh", texts["zh"].replace("0-49", "0\uff5e49")),
    ]
    for name, lang, variant in variants:
        assert variant != texts[lang], name
        assert rubric_problems({**texts, lang: variant}) == [], name


def _number_mutations(template: str) -> Iterator[tuple[str, str]]:
    """Every single-number change of the template, every deletion of a line with a number, and one
    inserted number."""
    for match in re.finditer(r"\d+", template):
        bumped = str(int(match.group()) + 1)
        mutated = template[: match.start()] + bumped + template[match.end() :]
        yield f"{match.group()}->{bumped} at {match.start()}", mutated
    lines = template.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if re.search(r"\d", line):
            yield f"drop line {index + 1}", "".join(lines[:index] + lines[index + 1 :])
    yield "insert a band", template + "\n   - 3\n"


@pytest.mark.parametrize("judge", JUDGES)
@pytest.mark.parametrize("language", [lang for lang in LANGUAGES if lang != SOURCE_LANGUAGE])
def test_rubric_checker_catches_every_number_mutation(judge: str, language: str) -> None:
    texts = load_prompts(judge)
    mutations = list(_number_mutations(texts[language]))
    assert mutations
    missed = [name for name, mutated in mutations if not rubric_problems({**texts, language: mutated})]
    assert missed == [], f"{judge}/{language}: undetected number drift: {missed}"


def test_checkers_catch_renamed_placeholder_key_and_enum() -> None:
    texts = load_prompts("voice")
    inputs = load_inputs("voice")
    schema = load_schema("voice")
    assert translation_problems(texts, inputs, schema) == []
    zh = texts["zh"]
    mutations = {
        "placeholder": zh.replace("{response}", "{answer}"),
        "stray brace": zh.replace("{{\n", "{\n", 1),
        "json key": zh.replace('"coherence":', '"kohaerenz":'),
        "extra enum word": zh.replace('"safety": ""', '"safety": "pass"'),
        "enum word": zh.replace("- fail：", "- 不通过："),
        "dropped enum item": zh.replace("   - pass：没有明文敏感数据\n", ""),
    }
    for name, mutated in mutations.items():
        assert mutated != zh, name
        assert translation_problems({**texts, "zh": mutated}, inputs, schema), name


def test_checkers_catch_reordered_intent_list() -> None:
    texts = load_prompts("intent")
    schema = load_schema("intent")
    en = texts["en"]
    swapped = en.replace("- reminder:", "- @@:").replace("- unknown:", "- reminder:").replace("- @@:", "- unknown:")
    assert swapped != en
    assert enum_problems({**texts, "en": swapped}, schema)
    assert enum_problems({**texts, "en": en.replace("- quiz_generate: Create a quiz\n", "")}, schema)


def test_answer_format_checker_catches_a_lost_placeholder_value() -> None:
    texts = load_prompts("synthetic")
    zh = texts["zh"]
    mutated = zh.replace('"expected_intent": "{intent}"', '"expected_intent": "intent"')
    assert mutated != zh
    assert set(placeholders(mutated)) == set(placeholders(zh))  # {intent} is still used in the first line
    assert json_problems({**texts, "zh": mutated}, load_schema("synthetic"))
