"""Build the judge-prompt cache ``configs/judge_prompts/<lang>/<metric>__<attr>.json`` (Chinese judge-prompt design, §4.1).

For every (metric, prompt attribute) of :data:`METRIC_PROMPT_ATTRS` that can be localized, the live
English prompt is translated by ragas's own ``adapt(<language name>, llm, adapt_instruction=True)``
through BQAS's LLM seam, with retries. The write is all-or-nothing: every file is written to a temporary
folder beside the target, checked by loading it back onto a fresh prompt, and only then swapped in. A
failure leaves the existing cache untouched.
"""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bqas.llm.client import LLMClient
from bqas.logs import get_logger
from bqas.ragas.adapters import SeamEmbedding, SeamLLM
from bqas.ragas.judge_prompts import (
    CONTROL_FIELDS,
    LANGUAGE_NAMES,
    METRIC_PROMPT_ATTRS,
    SKIPPED_METRICS,
    cache_file_name,
    prompt_examples,
    prompt_source_hash,
    rebuild_examples,
    serialize_examples,
)

logger = get_logger(__name__)


class BuildError(RuntimeError):
    """The cache could not be built; nothing was written."""


def targets() -> list[tuple[str, str]]:
    """The (metric, prompt attribute) pairs that get a cache file."""
    return [(m, a) for m, attrs in METRIC_PROMPT_ATTRS.items() if m not in SKIPPED_METRICS for a in attrs]


def _restore_control_fields(source: list[dict[str, Any]], adapted: list[dict[str, Any]]) -> None:
    """adapt() translates every string, control codes too ("low" -> "低"); put the codes back."""
    for src, new in zip(source, adapted, strict=True):
        for key in CONTROL_FIELDS & set(src["input"]):
            new["input"][key] = src["input"][key]


async def build_entry(metric_name: str, attr: str, prompt: Any, language: str, llm: SeamLLM) -> dict[str, Any]:
    """Translate one live prompt with ``adapt()`` and return its cache-file JSON."""
    from bqas.ragas.lib import RAGAS_VERSION

    source_examples = serialize_examples(prompt_examples(prompt))
    adapted = await prompt.adapt(LANGUAGE_NAMES[language], llm, adapt_instruction=True)
    examples = serialize_examples(prompt_examples(adapted))
    if len(examples) != len(source_examples):
        raise ValueError(f"adapt() returned {len(examples)} examples, expected {len(source_examples)}")
    _restore_control_fields(source_examples, examples)
    instruction = str(adapted.instruction).strip()
    if not instruction:
        raise ValueError("adapt() returned an empty instruction")
    return {
        "metric": metric_name,
        "prompt_attr": attr,
        "language": LANGUAGE_NAMES[language],
        "ragas_version": RAGAS_VERSION,
        "source_hash": prompt_source_hash(prompt),
        "instruction": instruction,
        "examples": examples,
    }


def _check_roundtrip(entry: dict[str, Any], prompt: Any) -> None:
    """The entry must load back onto a fresh copy of the live prompt (same check as at run time)."""
    from bqas.ragas.judge_prompts import _apply

    _apply(copy.deepcopy(prompt), entry)
    rebuild_examples(prompt, entry["examples"])


async def build_cache(
    language: str,
    client: LLMClient,
    out_root: Path,
    *,
    retries: int = 3,
    progress: Callable[[str], None] | None = None,
) -> list[Path]:
    """Translate every localizable prompt into ``language`` and write ``out_root/<language>/`` atomically.

    Raises :class:`BuildError` (writing nothing) when any prompt still fails after ``retries`` attempts.
    """
    if language not in LANGUAGE_NAMES or language == "en":
        raise BuildError(f"language: expected one of {[k for k in LANGUAGE_NAMES if k != 'en']}, got {language!r}")
    from bqas.ragas.factory import build_metric

    llm = SeamLLM(client)
    embeddings = SeamEmbedding()
    entries: dict[str, dict[str, Any]] = {}
    for metric_name, attr in targets():
        prompt = getattr(build_metric(metric_name, llm, embeddings), attr)
        last: Exception | None = None
        for attempt in range(1, retries + 1):
            try:
                entry = await build_entry(metric_name, attr, prompt, language, llm)
                _check_roundtrip(entry, prompt)
            except Exception as exc:  # LLM errors, wrong statement counts, examples that do not validate
                last = exc
                logger.warning("%s.%s: attempt %d/%d failed: %s", metric_name, attr, attempt, retries, exc)
                continue
            entries[cache_file_name(metric_name, attr)] = entry
            if progress is not None:
                progress(f"{metric_name}.{attr}: ok")
            break
        else:
            raise BuildError(f"{metric_name}.{attr}: adapt() failed {retries} times: {last}; nothing written")
    return write_atomically(out_root, language, entries)


def write_atomically(out_root: Path, language: str, entries: dict[str, dict[str, Any]]) -> list[Path]:
    """Write ``entries`` (file name -> JSON) as ``out_root/language/`` in one swap."""
    out_root.mkdir(parents=True, exist_ok=True)
    target = out_root / language
    tmp = Path(tempfile.mkdtemp(prefix=f".{language}.new-", dir=out_root))
    old: Path | None = None
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; the cache is a readable, committed asset
        for name, entry in sorted(entries.items()):
            text = json.dumps(entry, ensure_ascii=False, indent=2) + "\n"
            (tmp / name).write_text(text, encoding="utf-8")
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{language}.old-", dir=out_root))
            old.rmdir()
            target.rename(old)
        tmp.rename(target)
    except BaseException:
        if old is not None and not target.exists():
            old.rename(target)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return [target / name for name in sorted(entries)]
