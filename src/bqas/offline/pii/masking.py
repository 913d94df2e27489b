"""Personal data replaced by a placeholder of its kind (``[EMAIL]``, ``[PERSON]`` ...), for text that is
kept or shown without it."""

from __future__ import annotations

from collections.abc import Sequence

from bqas.offline.pii.merge import _resolve_overlaps
from bqas.offline.pii_types import PiiFinding


def mask_pii(text: str, findings: Sequence[PiiFinding]) -> str:
    """Replace each finding in ``text`` by a placeholder such as ``[EMAIL]`` or ``[PERSON]``.

    ``findings`` must come from :func:`detect_pii` on the same text; overlapping findings are resolved
    first, so masking never garbles the text.
    """
    parts: list[str] = []
    pos = 0
    for finding in _resolve_overlaps(list(findings)):
        if finding.start < pos or finding.end > len(text):
            continue
        parts.append(text[pos : finding.start])
        parts.append(f"[{finding.kind.upper()}]")
        pos = finding.end
    parts.append(text[pos:])
    return "".join(parts)
