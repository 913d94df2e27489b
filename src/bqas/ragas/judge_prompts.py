"""Chinese judge prompts for RAGAS metrics (judge_language: zh): the cache files and the runtime localizer.

The Chinese prompts are built once by ``scripts/build_judge_prompt_cache.py`` (ragas's own
``BasePrompt.adapt``) and committed as ``configs/judge_prompts/<lang>/<metric>__<attr>.json``. At run
time :func:`localize_pipeline_prompts` overrides ``instruction``, ``examples`` and ``language`` of the
live prompt instances of freshly built metrics: deterministic, no LLM call, no extra latency. Parsed
files are cached in memory per language, so a high-rate score API reads the disk once per process.

Failure never stops scoring: a missing, broken or outdated file keeps that prompt in English with a
warning (see :class:`LocalizationReport`). This module does not import ragas; it works on any object
that has ragas's prompt attributes.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bqas.logs import get_logger

logger = get_logger(__name__)

#: Which prompt attributes of each metric carry a judge prompt (Chinese judge-prompt design §2, checked against ragas 0.4.3).
METRIC_PROMPT_ATTRS: dict[str, tuple[str, ...]] = {
    "faithfulness": ("statement_generator_prompt", "nli_statement_prompt"),
    "answer_relevancy": ("prompt",),
    "context_recall": ("prompt",),
    "context_precision": ("prompt",),
    "noise_sensitivity": ("statement_prompt", "faithfulness_prompt"),
    "factual_correctness": ("prompt", "nli_prompt"),
}

#: Metrics whose prompts cannot be localized, with the reason (reported as skipped, never an error).
SKIPPED_METRICS: dict[str, str] = {
    "noise_sensitivity": (
        "its prompts render a fixed English text in to_string() and have no instruction/examples, "
        "so BasePrompt.adapt() cannot localize them"
    ),
}

#: Judge languages and the ragas language name written into the cache files and ``prompt.language``.
LANGUAGE_NAMES: dict[str, str] = {"en": "english", "zh": "chinese"}

#: Environment variable naming a folder that replaces the built-in cache folders.
PROMPTS_DIR_ENV = "BQAS_JUDGE_PROMPTS_DIR"

#: Input fields whose values are control codes, not language (ClaimDecompositionInput): never translated.
CONTROL_FIELDS: frozenset[str] = frozenset({"atomicity", "coverage"})

_PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # .../bqas
_CHECKOUT_ROOT = Path(__file__).resolve().parents[3]  # the repository root when running from a checkout


@dataclass
class LocalizationReport:
    """What :func:`localize_pipeline_prompts` did: applied and skipped ``metric.attr`` names, warnings."""

    language: str
    applied: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    source: Path | None = None

    def counts(self) -> dict[str, int]:
        """Counts for logs: applied / skipped / warnings."""
        return {"applied": len(self.applied), "skipped": len(self.skipped), "warnings": len(self.warnings)}

    def metric_language(self, metric: str) -> str | None:
        """The language of ``metric``'s prompts after localization: the language, "en", "mixed" or None."""
        attrs = METRIC_PROMPT_ATTRS.get(metric)
        if attrs is None:
            return None
        done = sum(f"{metric}.{attr}" in self.applied for attr in attrs)
        if done == 0:
            return "en"
        return self.language if done == len(attrs) else "mixed"

    def metric_warnings(self, metric: str) -> list[str]:
        """The warnings that concern ``metric`` (and those about the whole cache)."""
        return [w for w in self.warnings if w.startswith(f"{metric}.") or not _names_metric(w)]


def _names_metric(warning: str) -> bool:
    return any(warning.startswith(f"{m}.") for m in METRIC_PROMPT_ATTRS)


# --------------------------------------------------------------------------------------------------
# English source and its hash
# --------------------------------------------------------------------------------------------------


def prompt_examples(prompt: Any) -> list[tuple[Any, Any]]:
    """All (input, output) examples of a prompt, including every example set of ``_all_examples``.

    ragas's ``ClaimDecompositionPrompt`` (factual_correctness) keeps one example set per
    (atomicity, coverage) in ``_all_examples`` and renders from that table, not from ``examples``.
    """
    table = getattr(prompt, "_all_examples", None)
    if isinstance(table, Mapping):
        return [pair for pairs in table.values() for pair in pairs]
    return list(getattr(prompt, "examples", None) or [])


def serialize_examples(examples: list[tuple[Any, Any]]) -> list[dict[str, Any]]:
    """Examples as cache-file JSON: ``[{"input": {...}, "output": {...}}, ...]``."""
    return [{"input": i.model_dump(mode="json"), "output": o.model_dump(mode="json")} for i, o in examples]


def source_hash(instruction: str, examples: list[dict[str, Any]]) -> str:
    """sha256 of the English instruction plus its serialized examples (compact, sorted-key JSON)."""
    blob = json.dumps(examples, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256((instruction + "\n" + blob).encode("utf-8")).hexdigest()


def prompt_source_hash(prompt: Any) -> str:
    """The ``source_hash`` of a live (English) prompt instance."""
    return source_hash(str(prompt.instruction), serialize_examples(prompt_examples(prompt)))


def is_localizable(prompt: Any) -> bool:
    """Does the prompt have an instruction and examples that ``adapt()`` can translate?"""
    return isinstance(getattr(prompt, "instruction", None), str) and hasattr(prompt, "examples")


# --------------------------------------------------------------------------------------------------
# Cache folders and files
# --------------------------------------------------------------------------------------------------


def cache_dir_candidates() -> list[Path]:
    """Where the cache is looked up, in order.

    ``$BQAS_JUDGE_PROMPTS_DIR`` when set (then it is the only place: an explicit choice is not silently
    replaced), else the repository's ``configs/judge_prompts`` when running from a checkout, else the copy
    shipped in the wheel (``bqas/configs/judge_prompts``).
    """
    explicit = os.environ.get(PROMPTS_DIR_ENV, "").strip()
    if explicit:
        return [Path(explicit)]
    candidates = []
    if (_CHECKOUT_ROOT / "pyproject.toml").is_file() and _PACKAGE_ROOT == _CHECKOUT_ROOT / "src" / "bqas":
        candidates.append(_CHECKOUT_ROOT / "configs" / "judge_prompts")
    candidates.append(_PACKAGE_ROOT / "configs" / "judge_prompts")
    return candidates


def resolve_language_dir(language: str) -> Path | None:
    """The first ``<candidate>/<language>`` folder that exists, or None."""
    for root in cache_dir_candidates():
        folder = root / language
        if folder.is_dir():
            return folder
    return None


def cache_file_name(metric: str, attr: str) -> str:
    return f"{metric}__{attr}.json"


def _read_file(path: Path) -> str:
    """Read one cache file (a seam for tests that count disk reads)."""
    return path.read_text(encoding="utf-8")


@dataclass(frozen=True)
class _Loaded:
    folder: Path | None
    entries: dict[tuple[str, str], dict[str, Any]]
    errors: dict[tuple[str, str], str]


_MEMORY: dict[tuple[str, str], _Loaded] = {}
_MEMORY_LOCK = threading.Lock()
_LOGGED: set[str] = set()


def clear_cache() -> None:
    """Forget parsed cache files (the next call reads the disk again)."""
    with _MEMORY_LOCK:
        _MEMORY.clear()
        _LOGGED.clear()


def _load_language(language: str) -> _Loaded:
    """Parse every cache file of ``language`` once per process (per lookup folder)."""
    key = (language, os.pathsep.join(str(p) for p in cache_dir_candidates()))
    with _MEMORY_LOCK:
        hit = _MEMORY.get(key)
        if hit is not None:
            return hit
        folder = resolve_language_dir(language)
        entries: dict[tuple[str, str], dict[str, Any]] = {}
        errors: dict[tuple[str, str], str] = {}
        if folder is not None:
            for metric, attrs in METRIC_PROMPT_ATTRS.items():
                for attr in attrs:
                    path = folder / cache_file_name(metric, attr)
                    if not path.is_file():
                        continue
                    try:
                        data = json.loads(_read_file(path))
                    except (OSError, UnicodeDecodeError, ValueError) as exc:
                        errors[(metric, attr)] = f"{path}: unreadable: {exc}"
                        continue
                    problem = _check_entry(data, metric, attr)
                    if problem:
                        errors[(metric, attr)] = f"{path}: {problem}"
                    else:
                        entries[(metric, attr)] = data
        loaded = _Loaded(folder, entries, errors)
        _MEMORY[key] = loaded
        return loaded


def _check_entry(data: Any, metric: str, attr: str) -> str | None:
    if not isinstance(data, dict):
        return "not a JSON object"
    for name, kind in (("instruction", str), ("examples", list), ("source_hash", str), ("language", str)):
        if not isinstance(data.get(name), kind):
            return f"field {name!r} missing or not a {kind.__name__}"
    if not data["instruction"].strip():
        return "field 'instruction' is empty"
    if data.get("metric") != metric or data.get("prompt_attr") != attr:
        return f"file is for {data.get('metric')}.{data.get('prompt_attr')}, expected {metric}.{attr}"
    for i, example in enumerate(data["examples"]):
        if not isinstance(example, dict) or not isinstance(example.get("input"), dict):
            return f"examples[{i}]: expected an object with 'input' and 'output' objects"
        if not isinstance(example.get("output"), dict):
            return f"examples[{i}]: expected an object with 'input' and 'output' objects"
    return None


def _warn_once(report: LocalizationReport, message: str, *, loud: bool = False) -> None:
    """Add a warning to the report; log it once per process (the score API calls this per request)."""
    report.warnings.append(message)
    with _MEMORY_LOCK:
        if message in _LOGGED:
            return
        _LOGGED.add(message)
    logger.warning("%s%s", "!!! " if loud else "", message)


# --------------------------------------------------------------------------------------------------
# Applying a cache entry to a live prompt
# --------------------------------------------------------------------------------------------------


def rebuild_examples(prompt: Any, examples: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    """Examples rebuilt with the live prompt's ``input_model`` / ``output_model`` (raises when invalid)."""
    return [
        (prompt.input_model.model_validate(e["input"]), prompt.output_model.model_validate(e["output"]))
        for e in examples
    ]


def _apply(prompt: Any, entry: Mapping[str, Any]) -> None:
    """Override instruction, examples and language; raises (changing nothing) when the entry does not fit."""
    examples = rebuild_examples(prompt, list(entry["examples"]))
    if not examples:
        raise ValueError("no examples")
    table = getattr(prompt, "_all_examples", None)
    new_table: dict[tuple[str, str], list[tuple[Any, Any]]] | None = None
    if isinstance(table, Mapping):
        # factual_correctness: regroup by (atomicity, coverage) so that to_string() renders these examples.
        new_table = {}
        for pair in examples:
            group = (str(getattr(pair[0], "atomicity", "")), str(getattr(pair[0], "coverage", "")))
            new_table.setdefault(group, []).append(pair)
        if set(new_table) != set(table):
            raise ValueError(f"example sets {sorted(new_table)} do not match the prompt's {sorted(table)}")
    # Instance attributes only: the ragas classes keep their English defaults for other instances.
    if new_table is not None:
        prompt._all_examples = new_table
        prompt.examples = new_table.get(("low", "low"), examples)
    else:
        prompt.examples = examples
    prompt.instruction = str(entry["instruction"])
    prompt.language = str(entry["language"])


def localize_pipeline_prompts(registry: Mapping[str, Any], language: str) -> LocalizationReport:
    """Switch the judge prompts of the metrics in ``registry`` (name -> metric) to ``language``.

    ``en`` or empty: nothing is touched. Otherwise each (metric, prompt attribute) of
    :data:`METRIC_PROMPT_ATTRS` gets the cached instruction and examples, the examples rebuilt with the
    live prompt's models. Never raises for a cache problem: a missing folder gives one warning and English;
    a missing or invalid file keeps that prompt in English; a stale ``source_hash`` (ragas's English prompt
    changed since the cache was built) applies the translation with a loud warning to rebuild the cache.

        registry = {"faithfulness": Faithfulness(llm=llm)}
        report = localize_pipeline_prompts(registry, "zh")   # report.applied, .skipped, .warnings
    """
    lang = (language or "en").strip().lower()
    report = LocalizationReport(language=lang)
    if lang in ("", "en"):
        return report
    targets = [name for name in registry if name in METRIC_PROMPT_ATTRS]
    if lang not in LANGUAGE_NAMES:
        _warn_once(report, f"judge language {language!r} is not supported ({', '.join(LANGUAGE_NAMES)}); English kept")
        return report
    if not targets:
        return report
    loaded = _load_language(lang)
    report.source = loaded.folder
    if loaded.folder is None:
        places = ", ".join(str(p / lang) for p in cache_dir_candidates())
        _warn_once(report, f"no judge-prompt cache for {lang!r} (looked in {places}); all prompts stay English")
        return report
    for name in targets:
        metric = registry[name]
        if name in SKIPPED_METRICS:
            for attr in METRIC_PROMPT_ATTRS[name]:
                report.skipped[f"{name}.{attr}"] = SKIPPED_METRICS[name]
            continue
        for attr in METRIC_PROMPT_ATTRS[name]:
            _localize_one(report, loaded, name, attr, getattr(metric, attr, None))
    logger.debug("judge prompts localized to %s: %s", lang, report.counts())
    return report


def _localize_one(report: LocalizationReport, loaded: _Loaded, metric: str, attr: str, prompt: Any) -> None:
    label = f"{metric}.{attr}"
    if prompt is None:
        _warn_once(report, f"{label}: the metric has no prompt attribute {attr!r} (ragas changed?); English kept")
        return
    if not is_localizable(prompt):
        report.skipped[label] = "prompt has no instruction/examples (functional to_string())"
        return
    current = str(getattr(prompt, "language", "english"))
    if current != "english":
        report.skipped[label] = f"already localized ({current})"
        return
    entry = loaded.entries.get((metric, attr))
    if entry is None:
        reason = loaded.errors.get((metric, attr)) or f"{loaded.folder}/{cache_file_name(metric, attr)} not found"
        _warn_once(report, f"{label}: {reason}; English kept")
        return
    stale = entry["source_hash"] != prompt_source_hash(prompt)
    try:
        _apply(prompt, entry)
    except Exception as exc:  # a schema that no longer fits: English, never a failed score
        _warn_once(
            report,
            f"{label}: cached examples no longer fit the prompt's models ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0]}); English kept. Rebuild: scripts/build_judge_prompt_cache.py "
            f"--language {report.language}",
        )
        return
    report.applied.append(label)
    if stale:
        _warn_once(
            report,
            f"{label}: STALE judge-prompt cache: ragas's English prompt changed since the cache was built "
            f"(source_hash mismatch); the cached translation is applied anyway. Rebuild it: "
            f"scripts/build_judge_prompt_cache.py --language {report.language}",
            loud=True,
        )
