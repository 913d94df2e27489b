"""The LLM options that several commands share (``--base-url``, ``--model``, ``--structured-output``,
``--no-cache``, ``--llm-gguf``), turned into the overrides the judging factory reads."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bqas.judging.factory import LLMOverrides


def llm_overrides(
    base_url: str | None, model: str | None, structured_output: str | None, no_cache: bool, gguf: Path | None
) -> LLMOverrides:
    """Overrides from the command line; an option not given stays None ("use the setting"), and ``--no-cache``
    turns the cache off rather than on (without it the setting decides)."""
    from bqas.judging.factory import LLMOverrides

    return LLMOverrides(
        base_url=base_url,
        model=model,
        structured_output=structured_output,
        cache=False if no_cache else None,
        gguf=gguf,
    )
